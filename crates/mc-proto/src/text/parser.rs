//! The text parser proper: a line cut into memcached's tokens, each
//! command's checks in memcached's order, and the data blocks.

use std::borrow::Cow;

use super::{is_valid_key, Command, ErrorReply, StoreMode, TextError, TextFrame, TextLimits};
use crate::meta::{opaque_too_long, parse_meta_flags, MetaFlags, MetaKey, MAX_META_TOKENS};
use crate::number::{parse_i32, parse_u32, parse_u64};

/// memcached keeps at most 23 tokens of a line apart (24 with its terminal
/// token); a `get` reads its further keys from the rest of the line.
const MAX_TOKENS: usize = 23;

/// memcached refuses a length above `INT_MAX - 2` (the block's `\r\n`).
const MAX_DATA_LEN: i32 = i32::MAX - 2;

/// The first tokens of a line, split as memcached splits them.
struct Tokens<'a> {
    items: [&'a [u8]; MAX_TOKENS],
    count: usize,
    /// What follows the 23rd token (only `get` reads it).
    rest: &'a [u8],
}

impl<'a> Tokens<'a> {
    fn split(line: &'a [u8]) -> Self {
        let mut tokens = Tokens {
            items: [&[]; MAX_TOKENS],
            count: 0,
            rest: &[],
        };
        let mut at = 0;
        while at < line.len() {
            if line[at] == b' ' {
                at += 1;
                continue;
            }
            let end = memchr::memchr(b' ', &line[at..]).map_or(line.len(), |n| at + n);
            tokens.items[tokens.count] = &line[at..end];
            tokens.count += 1;
            at = end;
            if tokens.count == MAX_TOKENS {
                tokens.rest = line.get(end + 1..).unwrap_or(&[]);
                break;
            }
        }
        tokens
    }

    /// memcached's token count (its terminal token included).
    fn memcached_count(&self) -> usize {
        self.count + 1
    }

    fn get(&self, index: usize) -> &'a [u8] {
        self.items.get(index).copied().unwrap_or(&[])
    }

    fn first_tokens(&self) -> &[&'a [u8]] {
        &self.items[..self.count]
    }

    /// The last token memcached sees (where `noreply` goes).
    fn says_noreply(&self) -> bool {
        self.count > 0 && self.items[self.count - 1] == b"noreply"
    }
}

/// Parses the request at the start of `buf`.
pub fn parse_text<'a>(buf: &'a [u8], limits: &TextLimits) -> TextFrame<'a> {
    let Some(newline) = memchr::memchr(b'\n', buf) else {
        return unterminated(buf, limits);
    };
    let mut line = &buf[..newline];
    if let [head @ .., b'\r'] = line {
        line = head;
    }
    // memcached reads the line as a C string.
    if let Some(nul) = memchr::memchr(0, line) {
        line = &line[..nul];
    }
    let parser = LineParser {
        buf,
        line_end: newline + 1,
        limits,
    };
    parser.parse(line)
}

/// No newline yet: wait, unless more than a line's worth is buffered.
fn unterminated<'a>(buf: &'a [u8], limits: &TextLimits) -> TextFrame<'a> {
    if buf.len() <= limits.max_line_len {
        return TextFrame::Incomplete;
    }
    let spaces = buf.iter().take_while(|&&b| b == b' ').count();
    let rest = &buf[spaces..];
    let multiget = spaces <= 100 && (rest.starts_with(b"get ") || rest.starts_with(b"gets "));
    if multiget && buf.len() <= limits.max_multiget_line_len {
        return TextFrame::Incomplete;
    }
    TextFrame::Error {
        error: TextError {
            reply: ErrorReply::Nothing,
            noreply: false,
            close: true,
        },
        consumed: buf.len(),
        swallow: 0,
    }
}

const BAD_FORMAT: &str = "bad command line format";
const TOO_LARGE: &str = "object too large for cache";

struct LineParser<'a, 'l> {
    buf: &'a [u8],
    line_end: usize,
    limits: &'l TextLimits,
}

impl<'a> LineParser<'a, '_> {
    fn command(&self, command: Command<'a>) -> TextFrame<'a> {
        TextFrame::Command {
            command,
            consumed: self.line_end,
        }
    }

    fn refuse(&self, reply: ErrorReply, noreply: bool) -> TextFrame<'a> {
        self.refuse_and_swallow(reply, noreply, 0)
    }

    fn refuse_and_swallow(
        &self,
        reply: ErrorReply,
        noreply: bool,
        swallow: usize,
    ) -> TextFrame<'a> {
        TextFrame::Error {
            error: TextError::answer(reply, noreply),
            consumed: self.line_end,
            swallow,
        }
    }

    fn unknown(&self) -> TextFrame<'a> {
        self.refuse(ErrorReply::Error, false)
    }

    fn client(&self, message: &'static str, noreply: bool) -> TextFrame<'a> {
        self.refuse(ErrorReply::ClientError(message), noreply)
    }

    /// The data block of `len` bytes after the line, then `\r\n`.
    /// `quiet_errors`: whether `noreply` hides the bad-chunk error (classic
    /// commands) or not (meta commands always answer errors).
    fn data_block(
        &self,
        len: usize,
        quiet_errors: bool,
        build: impl FnOnce(&'a [u8]) -> Command<'a>,
    ) -> TextFrame<'a> {
        let end = self.line_end + len + 2;
        if self.buf.len() < end {
            return TextFrame::Incomplete;
        }
        let block = &self.buf[self.line_end..end];
        if &block[len..] != b"\r\n" {
            return TextFrame::Error {
                error: TextError::answer(ErrorReply::ClientError("bad data chunk"), quiet_errors),
                consumed: end,
                swallow: 0,
            };
        }
        TextFrame::Command {
            command: build(&block[..len]),
            consumed: end,
        }
    }

    fn parse(&self, line: &'a [u8]) -> TextFrame<'a> {
        let tokens = Tokens::split(line);
        let count = tokens.memcached_count();
        let name = tokens.get(0);
        if tokens.count == 0 || name.len() < 2 {
            return self.unknown();
        }
        if name[0] == b'm' && name.len() == 2 {
            return match name[1] {
                b'g' => self.meta_get(&tokens),
                b's' => self.meta_set(&tokens),
                b'd' => self.meta_delete(&tokens),
                b'a' => self.meta_arithmetic(&tokens),
                b'n' => self.command(Command::MetaNoop),
                b'e' => self.meta_debug(&tokens),
                _ => self.unknown(),
            };
        }
        let wants = |allowed: &[usize]| allowed.contains(&count);
        match name {
            b"get" | b"gets" | b"gat" | b"gats" | b"bget" => {
                if count < 3 {
                    return self.unknown();
                }
                let return_cas = name == b"gets" || name == b"gats";
                let touch = name == b"gat" || name == b"gats";
                self.get(&tokens, return_cas, touch)
            }
            b"set" | b"add" | b"replace" | b"append" | b"prepend" => {
                if !wants(&[6, 7]) {
                    return self.unknown();
                }
                let mode = match name {
                    b"set" => StoreMode::Set,
                    b"add" => StoreMode::Add,
                    b"replace" => StoreMode::Replace,
                    b"append" => StoreMode::Append,
                    _ => StoreMode::Prepend,
                };
                self.store(&tokens, mode)
            }
            b"cas" => {
                if !wants(&[7, 8]) {
                    return self.unknown();
                }
                self.store(&tokens, StoreMode::Cas(0))
            }
            b"incr" | b"decr" => {
                if !wants(&[4, 5]) {
                    return self.unknown();
                }
                self.arithmetic(&tokens, name == b"incr")
            }
            b"delete" => {
                if !(3..=5).contains(&count) {
                    return self.unknown();
                }
                self.delete(&tokens)
            }
            b"touch" => {
                if !wants(&[4, 5]) {
                    return self.unknown();
                }
                self.touch(&tokens)
            }
            b"flush_all" => {
                if !(2..=4).contains(&count) {
                    return self.unknown();
                }
                self.flush_all(&tokens)
            }
            b"verbosity" => {
                if !wants(&[3, 4]) {
                    return self.unknown();
                }
                let noreply = tokens.says_noreply();
                match parse_u32(tokens.get(1)) {
                    Some(level) => self.command(Command::Verbosity { level, noreply }),
                    None => self.client(BAD_FORMAT, noreply),
                }
            }
            b"version" => self.command(Command::Version),
            b"quit" => self.command(Command::Quit),
            b"stats" => self.command(Command::Stats {
                args: tokens.first_tokens()[1..].to_vec(),
            }),
            _ => self.unknown(),
        }
    }

    fn get(&self, tokens: &Tokens<'a>, return_cas: bool, touch: bool) -> TextFrame<'a> {
        let mut first_key = 1;
        let mut exptime = None;
        if touch {
            match parse_i32(tokens.get(1)) {
                Some(t) => exptime = Some(t),
                None => return self.client("invalid exptime argument", false),
            }
            first_key = 2;
        }
        let mut keys: Vec<&'a [u8]> = tokens.first_tokens()[first_key.min(tokens.count)..].to_vec();
        keys.extend(tokens.rest.split(|&b| b == b' ').filter(|k| !k.is_empty()));
        if keys.iter().any(|key| !is_valid_key(key)) {
            return self.client(BAD_FORMAT, false);
        }
        self.command(Command::Get {
            keys,
            return_cas,
            touch: exptime,
        })
    }

    fn store(&self, tokens: &Tokens<'a>, mode: StoreMode) -> TextFrame<'a> {
        let noreply = tokens.says_noreply();
        let key = tokens.get(1);
        if !is_valid_key(key) {
            return self.client(BAD_FORMAT, noreply);
        }
        let (Some(client_flags), Some(exptime), Some(len)) = (
            parse_u32(tokens.get(2)),
            parse_i32(tokens.get(3)),
            parse_i32(tokens.get(4)),
        ) else {
            return self.client(BAD_FORMAT, noreply);
        };
        let mode = match mode {
            StoreMode::Cas(_) => match parse_u64(tokens.get(5)) {
                Some(unique) => StoreMode::Cas(unique),
                None => return self.client(BAD_FORMAT, noreply),
            },
            other => other,
        };
        if !(0..=MAX_DATA_LEN).contains(&len) {
            return self.client(BAD_FORMAT, noreply);
        }
        let len = len as usize;
        if len > self.limits.max_item_size {
            return self.refuse_and_swallow(ErrorReply::ServerError(TOO_LARGE), noreply, len + 2);
        }
        self.data_block(len, noreply, |data| Command::Store {
            mode,
            key,
            client_flags,
            exptime,
            data,
            noreply,
        })
    }

    fn arithmetic(&self, tokens: &Tokens<'a>, increment: bool) -> TextFrame<'a> {
        let noreply = tokens.says_noreply();
        let key = tokens.get(1);
        if !is_valid_key(key) {
            return self.client(BAD_FORMAT, noreply);
        }
        match parse_u64(tokens.get(2)) {
            Some(delta) => self.command(Command::Arithmetic {
                key,
                delta,
                increment,
                noreply,
            }),
            None => self.client("invalid numeric delta argument", noreply),
        }
    }

    fn delete(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let count = tokens.memcached_count();
        let mut noreply = false;
        if count > 3 {
            // `delete <key> 0` is an old form memcached still takes.
            let hold_is_zero = tokens.get(2) == b"0";
            noreply = tokens.says_noreply();
            let valid = (count == 4 && (hold_is_zero || noreply))
                || (count == 5 && hold_is_zero && noreply);
            if !valid {
                return self.client(
                    "bad command line format.  Usage: delete <key> [noreply]",
                    noreply,
                );
            }
        }
        let key = tokens.get(1);
        if !is_valid_key(key) {
            return self.client(BAD_FORMAT, noreply);
        }
        self.command(Command::Delete { key, noreply })
    }

    fn touch(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let noreply = tokens.says_noreply();
        let key = tokens.get(1);
        if !is_valid_key(key) {
            return self.client(BAD_FORMAT, noreply);
        }
        match parse_i32(tokens.get(2)) {
            Some(exptime) => self.command(Command::Touch {
                key,
                exptime,
                noreply,
            }),
            None => self.client("invalid exptime argument", noreply),
        }
    }

    fn flush_all(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let noreply = tokens.says_noreply();
        let bare = if noreply { 3 } else { 2 };
        let mut delay = 0;
        if tokens.memcached_count() != bare {
            match parse_i32(tokens.get(1)) {
                Some(d) => delay = d,
                None => return self.client("invalid exptime argument", noreply),
            }
        }
        self.command(Command::FlushAll { delay, noreply })
    }

    /// The key of a meta command, checked as memcached checks it (its
    /// encoded length when `b` follows).
    fn meta_key(tokens: &Tokens<'a>) -> Option<MetaKey<'a>> {
        let key = tokens.get(1);
        is_valid_key(key).then_some(MetaKey {
            bytes: Cow::Borrowed(key),
            base64: false,
        })
    }

    fn meta_get(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let count = tokens.memcached_count();
        if count < 3 {
            return self.unknown();
        }
        let Some(mut key) = Self::meta_key(tokens) else {
            return self.client(BAD_FORMAT, false);
        };
        if count > MAX_META_TOKENS {
            return self.client("options flags are too long", false);
        }
        let flags = match parse_meta_flags(&tokens.first_tokens()[2..], &mut key) {
            Ok(flags) => flags,
            Err(message) => return self.client(message, false),
        };
        if opaque_too_long(&flags) {
            return self.client("opaque token too long", false);
        }
        self.command(Command::MetaGet { key, flags })
    }

    fn meta_set(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let count = tokens.memcached_count();
        if count < 3 {
            return self.unknown();
        }
        let Some(mut key) = Self::meta_key(tokens) else {
            return self.client(BAD_FORMAT, false);
        };
        if count == 3 {
            return self.client(BAD_FORMAT, false);
        }
        if count > MAX_META_TOKENS {
            return self.client("options flags too long", false);
        }
        let len = match parse_i32(tokens.get(2)) {
            Some(len) if (0..=MAX_DATA_LEN).contains(&len) => len as usize,
            _ => return self.client(BAD_FORMAT, false),
        };
        // From here on memcached knows the length and swallows the block.
        let swallow = len + 2;
        let refuse =
            |message| self.refuse_and_swallow(ErrorReply::ClientError(message), false, swallow);
        let flags = match parse_meta_flags(&tokens.first_tokens()[3..], &mut key) {
            Ok(flags) => flags,
            Err(message) => return refuse(message),
        };
        if opaque_too_long(&flags) {
            return refuse("opaque token too long");
        }
        let mode = match flags.mode {
            None | Some(b'S') => StoreMode::Set,
            Some(b'E') => StoreMode::Add,
            Some(b'A') => StoreMode::Append,
            Some(b'P') => StoreMode::Prepend,
            Some(b'R') => StoreMode::Replace,
            Some(_) => return refuse("invalid mode for ms M token"),
        };
        if len > self.limits.max_item_size {
            return self.refuse_and_swallow(ErrorReply::ServerError(TOO_LARGE), false, swallow);
        }
        self.data_block(len, false, |data| Command::MetaSet {
            key,
            flags,
            mode,
            data,
        })
    }

    /// `md` and `ma` share their checks; memcached answers any flag error
    /// of theirs with one message.
    fn meta_key_and_flags(
        &self,
        tokens: &Tokens<'a>,
    ) -> Result<(MetaKey<'a>, MetaFlags<'a>), ErrorReply> {
        let count = tokens.memcached_count();
        if count < 3 {
            return Err(ErrorReply::Error);
        }
        let Some(mut key) = Self::meta_key(tokens) else {
            return Err(ErrorReply::ClientError(BAD_FORMAT));
        };
        if count > MAX_META_TOKENS {
            return Err(ErrorReply::ClientError("options flags too long"));
        }
        parse_meta_flags(&tokens.first_tokens()[2..], &mut key)
            .map(|flags| (key, flags))
            .map_err(|_| ErrorReply::ClientError("invalid or duplicate flag"))
    }

    fn meta_delete(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let (key, flags) = match self.meta_key_and_flags(tokens) {
            Ok(parsed) => parsed,
            Err(reply) => return self.refuse(reply, false),
        };
        if opaque_too_long(&flags) {
            return self.client("opaque token too long", false);
        }
        self.command(Command::MetaDelete { key, flags })
    }

    fn meta_arithmetic(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let (key, flags) = match self.meta_key_and_flags(tokens) {
            Ok(parsed) => parsed,
            Err(reply) => return self.refuse(reply, false),
        };
        let increment = match flags.mode {
            None | Some(b'I') | Some(b'+') => true,
            Some(b'D') | Some(b'-') => false,
            Some(_) => return self.client("invalid mode for ma M token", false),
        };
        if opaque_too_long(&flags) {
            return self.client("opaque token too long", false);
        }
        self.command(Command::MetaArithmetic {
            key,
            flags,
            increment,
        })
    }

    fn meta_debug(&self, tokens: &Tokens<'a>) -> TextFrame<'a> {
        let count = tokens.memcached_count();
        let Some(mut key) = (count >= 3).then(|| Self::meta_key(tokens)).flatten() else {
            return self.client(BAD_FORMAT, false);
        };
        if count >= 4 && tokens.get(2) == b"b" {
            match crate::meta::decode_base64_key(&key.bytes) {
                Some(decoded) => {
                    key = MetaKey {
                        bytes: Cow::Owned(decoded),
                        base64: true,
                    }
                }
                None => return self.client(BAD_FORMAT, false),
            }
        }
        self.command(Command::MetaDebug { key })
    }
}
