//! The meta commands' flags (`mg`, `ms`, `md`, `ma`, `me`, `mn`).
//!
//! A meta command is `<cm> <key> [<datalen>] <flag>*`, each flag one byte
//! with an optional token glued to it (`T30`, `Oabc`). memcached reads every
//! flag of every meta command with one routine, so one flag set is shared
//! by all commands and a command ignores the flags that do not concern it.
//! That routine's rules are kept: a repeated flag or a byte above 126 is
//! "duplicate flag", an unknown letter is "invalid flag" (both stop at
//! once), a bad token records its message and parsing goes on, so a later
//! unknown letter still wins. The order of the flags is kept because the
//! answer echoes the requested return flags in that order.

use std::borrow::Cow;

use base64::Engine;

use crate::number::{parse_i32, parse_u32, parse_u64};

/// The longest opaque token, `O` included (memcached's limit).
pub const MAX_OPAQUE_TOKEN: usize = 32;

/// The most tokens a meta command may have, command, key and memcached's
/// terminal token counted (memcached's `MFLAG_MAX_OPT_LENGTH`).
pub(crate) const MAX_META_TOKENS: usize = 20;

/// The flag letters of one request, in request order (at most 23 fit a
/// line memcached accepts, so a fixed array holds them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlagOrder {
    letters: [u8; 24],
    len: u8,
}

impl FlagOrder {
    fn push(&mut self, letter: u8) {
        if usize::from(self.len) < self.letters.len() {
            self.letters[usize::from(self.len)] = letter;
            self.len += 1;
        }
    }

    /// The letters, first flag first.
    pub fn letters(&self) -> &[u8] {
        &self.letters[..usize::from(self.len)]
    }
}

/// The parsed flags of one meta command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaFlags<'a> {
    /// Every flag letter in request order.
    pub order: FlagOrder,
    /// `b`: the key was sent base64-encoded.
    pub base64_key: bool,
    /// `q`: quiet mode (the nominal answer is not sent; see `response`).
    pub quiet: bool,
    /// `v`: return the value.
    pub return_value: bool,
    /// `k`: return the key.
    pub return_key: bool,
    /// `c`: return the cas value.
    pub return_cas: bool,
    /// `f`: return the client flags.
    pub return_client_flags: bool,
    /// `s`: return the value's size.
    pub return_size: bool,
    /// `t`: return the remaining time to live.
    pub return_ttl: bool,
    /// `h`: return whether the item was fetched before.
    pub return_hit: bool,
    /// `l`: return the seconds since the last access.
    pub return_last_access: bool,
    /// `u`: do not bump the item in the LRU.
    pub no_bump: bool,
    /// `I`: invalidate (mark stale) instead of removing / accept a lower cas.
    pub invalidate: bool,
    /// `O<token>`: opaque token echoed in the answer (without the `O`).
    pub opaque: Option<&'a [u8]>,
    /// `N<ttl>`: create on miss with this time to live.
    pub vivify_ttl: Option<i32>,
    /// `R<ttl>`: win the recache when the remaining ttl is below this.
    pub recache_ttl: Option<i32>,
    /// `T<ttl>`: set the time to live.
    pub ttl: Option<i32>,
    /// `C<cas>`: compare this cas value.
    pub compare_cas: Option<u64>,
    /// `F<flags>`: client flags to store.
    pub client_flags: Option<u32>,
    /// `M<c>`: mode switch (one byte; its meaning depends on the command).
    pub mode: Option<u8>,
    /// `J<n>`: initial value for `ma` auto-creation.
    pub initial: Option<u64>,
    /// `D<n>`: delta for `ma`.
    pub delta: Option<u64>,
}

/// A meta command's key: the bytes to look up, and whether it came in
/// base64 (the answer's `k` flag then returns it encoded, followed by `b`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaKey<'a> {
    pub bytes: Cow<'a, [u8]>,
    pub base64: bool,
}

/// The standard alphabet with padding, as memcached's decoder wants it.
pub fn decode_base64_key(token: &[u8]) -> Option<Vec<u8>> {
    match base64::engine::general_purpose::STANDARD.decode(token) {
        Ok(bytes) if !bytes.is_empty() => Some(bytes),
        _ => None,
    }
}

/// Appends `bytes` base64-encoded (the `k` flag of a binary key).
pub fn encode_base64_key(bytes: &[u8], out: &mut Vec<u8>) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    out.extend_from_slice(encoded.as_bytes());
}

const BAD_TOKEN: &str = "bad token in command line format";

/// Parses the flag tokens; `key` is replaced by its decoding when `b` is
/// among them. The error is memcached's message for the first failing rule
/// (the callers `md` and `ma` replace it with their own, as memcached does).
pub(crate) fn parse_meta_flags<'a>(
    tokens: &[&'a [u8]],
    key: &mut MetaKey<'a>,
) -> Result<MetaFlags<'a>, &'static str> {
    let mut flags = MetaFlags::default();
    let mut seen = [false; 127];
    // memcached keeps the last value error's message; `F` sets none, so the
    // default stays unless another flag set one.
    let mut error: Option<&'static str> = None;
    let mut has_error = false;
    let mut fail = |message: Option<&'static str>| {
        has_error = true;
        if let Some(message) = message {
            error = Some(message);
        }
    };
    for token in tokens {
        let Some(&letter) = token.first() else {
            continue;
        };
        if letter >= 127 || seen[usize::from(letter)] {
            return Err("duplicate flag");
        }
        seen[usize::from(letter)] = true;
        let argument = &token[1..];
        match letter {
            b'b' => {
                flags.base64_key = true;
                match decode_base64_key(&key.bytes) {
                    Some(decoded) => {
                        key.bytes = Cow::Owned(decoded);
                        key.base64 = true;
                    }
                    None => fail(Some("error decoding key")),
                }
            }
            b'N' => match parse_i32(argument) {
                Some(ttl) => flags.vivify_ttl = Some(ttl),
                None => fail(Some(BAD_TOKEN)),
            },
            b'T' => match parse_i32(argument) {
                Some(ttl) => flags.ttl = Some(ttl),
                None => fail(Some(BAD_TOKEN)),
            },
            b'R' => match parse_i32(argument) {
                Some(ttl) => flags.recache_ttl = Some(ttl),
                None => fail(Some(BAD_TOKEN)),
            },
            b'l' => flags.return_last_access = true,
            b'O' => flags.opaque = Some(argument),
            // Proxy hints, ignored by a server.
            b'P' | b'L' => {}
            b'k' => flags.return_key = true,
            b's' => flags.return_size = true,
            b't' => flags.return_ttl = true,
            b'c' => flags.return_cas = true,
            b'f' => flags.return_client_flags = true,
            b'v' => flags.return_value = true,
            b'h' => flags.return_hit = true,
            b'u' => flags.no_bump = true,
            b'q' => flags.quiet = true,
            b'F' => match parse_u32(argument) {
                Some(value) => flags.client_flags = Some(value),
                None => fail(None),
            },
            b'C' => match parse_u64(argument) {
                Some(cas) => flags.compare_cas = Some(cas),
                None => fail(Some(BAD_TOKEN)),
            },
            b'M' => {
                if token.len() != 2 {
                    fail(Some("incorrect length for M token"));
                } else {
                    flags.mode = Some(token[1]);
                }
            }
            b'J' => match parse_u64(argument) {
                Some(value) => flags.initial = Some(value),
                None => fail(Some("invalid numeric initial value")),
            },
            b'D' => match parse_u64(argument) {
                Some(value) => flags.delta = Some(value),
                None => fail(Some("invalid numeric delta value")),
            },
            b'I' => flags.invalidate = true,
            _ => return Err("invalid flag"),
        }
        flags.order.push(letter);
    }
    if has_error {
        return Err(error.unwrap_or("bad command line format"));
    }
    Ok(flags)
}

/// Checks the opaque token's length (memcached checks it when it builds the
/// answer, so after the flags parsed).
pub(crate) fn opaque_too_long(flags: &MetaFlags<'_>) -> bool {
    flags.opaque.is_some_and(|o| o.len() + 1 > MAX_OPAQUE_TOKEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(bytes: &[u8]) -> MetaKey<'_> {
        MetaKey {
            bytes: Cow::Borrowed(bytes),
            base64: false,
        }
    }

    fn parse<'a>(tokens: &[&'a [u8]], k: &mut MetaKey<'a>) -> Result<MetaFlags<'a>, &'static str> {
        parse_meta_flags(tokens, k)
    }

    #[test]
    fn flags_in_order_with_arguments() {
        let mut k = key(b"a");
        let flags = parse(&[b"v", b"T30", b"Oxy", b"k", b"C5", b"F7", b"MS"], &mut k).unwrap();
        assert_eq!(flags.order.letters(), b"vTOkCFM");
        assert!(flags.return_value && flags.return_key);
        assert_eq!(flags.ttl, Some(30));
        assert_eq!(flags.opaque, Some(&b"xy"[..]));
        assert_eq!(flags.compare_cas, Some(5));
        assert_eq!(flags.client_flags, Some(7));
        assert_eq!(flags.mode, Some(b'S'));
    }

    #[test]
    fn memcached_error_precedence() {
        let mut k = key(b"a");
        assert_eq!(parse(&[b"v", b"v"], &mut k), Err("duplicate flag"));
        assert_eq!(parse(&[b"\xc3"], &mut k), Err("duplicate flag"));
        assert_eq!(parse(&[b"z"], &mut k), Err("invalid flag"));
        assert_eq!(parse(&[b"E5"], &mut k), Err("invalid flag"));
        assert_eq!(parse(&[b"Tx", b"z"], &mut k), Err("invalid flag"));
        assert_eq!(parse(&[b"Tx", b"Rx"], &mut k), Err(BAD_TOKEN));
        assert_eq!(parse(&[b"Fx"], &mut k), Err("bad command line format"));
        assert_eq!(parse(&[b"Tx", b"Fx"], &mut k), Err(BAD_TOKEN));
        assert_eq!(
            parse(&[b"MEE"], &mut k),
            Err("incorrect length for M token")
        );
        assert_eq!(parse(&[b"M"], &mut k), Err("incorrect length for M token"));
        assert_eq!(
            parse(&[b"Jx"], &mut k),
            Err("invalid numeric initial value")
        );
        assert_eq!(parse(&[b"Dx"], &mut k), Err("invalid numeric delta value"));
        assert_eq!(parse(&[b"T"], &mut k), Err(BAD_TOKEN));
    }

    #[test]
    fn base64_key_decoded() {
        let mut k = key(b"YWJj");
        let flags = parse(&[b"b", b"k"], &mut k).unwrap();
        assert!(flags.base64_key);
        assert_eq!(&*k.bytes, b"abc");
        assert!(k.base64);
        for bad in [&b"YQ"[..], b"YQ=", b"Y", b"!!!!", b"a"] {
            let mut k = key(bad);
            assert_eq!(parse(&[b"b"], &mut k), Err("error decoding key"), "{bad:?}");
        }
        let mut out = Vec::new();
        encode_base64_key(b"abc", &mut out);
        assert_eq!(out, b"YWJj");
    }

    #[test]
    fn opaque_limit() {
        let mut k = key(b"a");
        let long = [b'O'; 33];
        let flags = parse(&[&long[..]], &mut k).unwrap();
        assert!(opaque_too_long(&flags));
        let ok = [b'O'; 32];
        let flags = parse(&[&ok[..]], &mut k).unwrap();
        assert!(!opaque_too_long(&flags));
    }
}
