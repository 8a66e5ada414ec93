//! Text and meta answers, encoded into the connection's output buffer.
//!
//! Every function appends to a `Vec<u8>`, so one buffer collects all the
//! answers of one read and the connection writes them at once. The meta
//! answers echo the request's return flags in request order, each filled
//! from the facts the executor hands over (`MetaFacts`); `O` and `k` are
//! echoed on every code, as memcached does on a miss.

use std::io::Write;

use crate::meta::{encode_base64_key, MetaFlags, MetaKey};
use crate::text::ErrorReply;

/// A one-word answer of the classic commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Stored,
    NotStored,
    Exists,
    NotFound,
    Deleted,
    Touched,
    Ok,
    End,
    Reset,
}

impl Status {
    /// The line, `\r\n` included.
    pub fn line(self) -> &'static [u8] {
        match self {
            Status::Stored => b"STORED\r\n",
            Status::NotStored => b"NOT_STORED\r\n",
            Status::Exists => b"EXISTS\r\n",
            Status::NotFound => b"NOT_FOUND\r\n",
            Status::Deleted => b"DELETED\r\n",
            Status::Touched => b"TOUCHED\r\n",
            Status::Ok => b"OK\r\n",
            Status::End => b"END\r\n",
            Status::Reset => b"RESET\r\n",
        }
    }
}

pub fn write_status(out: &mut Vec<u8>, status: Status) {
    out.extend_from_slice(status.line());
}

/// One item of a `get` answer: `VALUE <key> <flags> <bytes> [<cas>]`, the
/// data and its `\r\n`. `write_status(End)` closes the answer.
pub fn write_value(
    out: &mut Vec<u8>,
    key: &[u8],
    client_flags: u32,
    data: &[u8],
    cas: Option<u64>,
) {
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    // Writing into a Vec cannot fail.
    let _ = write!(out, " {} {}", client_flags, data.len());
    if let Some(cas) = cas {
        let _ = write!(out, " {cas}");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The answer of `incr`/`decr`: the new value.
pub fn write_number(out: &mut Vec<u8>, value: u64) {
    let _ = write!(out, "{value}\r\n");
}

pub fn write_version(out: &mut Vec<u8>, version: &str) {
    let _ = write!(out, "VERSION {version}\r\n");
}

/// One `STAT <name> <value>` line; `write_status(End)` closes the list.
pub fn write_stat(out: &mut Vec<u8>, name: &str, value: impl std::fmt::Display) {
    let _ = write!(out, "STAT {name} {value}\r\n");
}

/// `ERROR`, `CLIENT_ERROR <message>` or `SERVER_ERROR <message>`.
pub fn write_error(out: &mut Vec<u8>, reply: ErrorReply) {
    match reply {
        ErrorReply::Error => out.extend_from_slice(b"ERROR\r\n"),
        ErrorReply::ClientError(message) => {
            let _ = write!(out, "CLIENT_ERROR {message}\r\n");
        }
        ErrorReply::ServerError(message) => {
            let _ = write!(out, "SERVER_ERROR {message}\r\n");
        }
        ErrorReply::Nothing => {}
    }
}

/// The meta return codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaCode {
    /// Success without a value (stored, deleted, hit without `v`).
    Hd,
    /// Success with a value of this many bytes.
    Va(usize),
    /// `mg` miss.
    En,
    /// Not stored.
    Ns,
    /// Cas mismatch.
    Ex,
    /// Not found.
    Nf,
    /// `mn`.
    Mn,
}

impl MetaCode {
    fn text(self) -> &'static str {
        match self {
            MetaCode::Hd => "HD",
            MetaCode::Va(_) => "VA",
            MetaCode::En => "EN",
            MetaCode::Ns => "NS",
            MetaCode::Ex => "EX",
            MetaCode::Nf => "NF",
            MetaCode::Mn => "MN",
        }
    }
}

/// Which meta command an answer belongs to (for the `q` rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaCommand {
    Get,
    Set,
    Delete,
    Arithmetic,
}

/// Whether `q` hides this answer: the nominal one only (a miss for `mg`;
/// `HD` for `ms` and `md`; a success for `ma`). Errors and other codes are
/// always sent.
pub fn quiet_hides(command: MetaCommand, code: MetaCode) -> bool {
    match command {
        MetaCommand::Get => code == MetaCode::En,
        MetaCommand::Set | MetaCommand::Delete => code == MetaCode::Hd,
        MetaCommand::Arithmetic => matches!(code, MetaCode::Hd | MetaCode::Va(_)),
    }
}

/// What the executor knows of the item for the return flags; a flag whose
/// fact is `None` is left out of the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaFacts {
    /// `c`.
    pub cas: Option<u64>,
    /// `f`.
    pub client_flags: Option<u32>,
    /// `t`: seconds left, -1 for no expiry.
    pub ttl: Option<i64>,
    /// `s`.
    pub size: Option<usize>,
    /// `l`.
    pub last_access: Option<u64>,
    /// `h`.
    pub hit_before: Option<bool>,
    /// `W`: this client won the right to recache.
    pub won: bool,
    /// `X`: the item is stale.
    pub stale: bool,
    /// `Z`: another client already won.
    pub win_sent: bool,
}

/// A whole meta answer: the code, the return flags in request order, and
/// for `VA` the value and its `\r\n`. Writes nothing when `q` hides it.
pub fn write_meta(
    out: &mut Vec<u8>,
    command: MetaCommand,
    code: MetaCode,
    key: &MetaKey<'_>,
    flags: &MetaFlags<'_>,
    facts: &MetaFacts,
    value: &[u8],
) {
    if flags.quiet && quiet_hides(command, code) {
        return;
    }
    out.extend_from_slice(code.text().as_bytes());
    if let MetaCode::Va(len) = code {
        let _ = write!(out, " {len}");
    }
    for &letter in flags.order.letters() {
        match letter {
            b'O' => {
                out.extend_from_slice(b" O");
                out.extend_from_slice(flags.opaque.unwrap_or_default());
            }
            b'k' => {
                out.extend_from_slice(b" k");
                if key.base64 {
                    encode_base64_key(&key.bytes, out);
                    out.extend_from_slice(b" b");
                } else {
                    out.extend_from_slice(&key.bytes);
                }
            }
            b'c' => write_fact(out, 'c', facts.cas),
            b'f' => write_fact(out, 'f', facts.client_flags),
            b't' => write_fact(out, 't', facts.ttl),
            b's' => write_fact(out, 's', facts.size),
            b'l' => write_fact(out, 'l', facts.last_access),
            b'h' => write_fact(out, 'h', facts.hit_before.map(u8::from)),
            _ => {}
        }
    }
    if facts.win_sent {
        out.extend_from_slice(b" Z");
    }
    if facts.stale {
        out.extend_from_slice(b" X");
    }
    if facts.won {
        out.extend_from_slice(b" W");
    }
    out.extend_from_slice(b"\r\n");
    if let MetaCode::Va(_) = code {
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}

fn write_fact(out: &mut Vec<u8>, letter: char, fact: Option<impl std::fmt::Display>) {
    if let Some(value) = fact {
        let _ = write!(out, " {letter}{value}");
    }
}

/// `MN\r\n`.
pub fn write_meta_noop(out: &mut Vec<u8>) {
    out.extend_from_slice(b"MN\r\n");
}

/// The `me` answer: `ME <key> <name>=<value>...` (the key base64-encoded
/// when it was sent so).
pub fn write_meta_debug(out: &mut Vec<u8>, key: &MetaKey<'_>, fields: &[(&str, String)]) {
    out.extend_from_slice(b"ME ");
    if key.base64 {
        encode_base64_key(&key.bytes, out);
    } else {
        out.extend_from_slice(&key.bytes);
    }
    for (name, value) in fields {
        let _ = write!(out, " {name}={value}");
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::text::{parse_text, Command, TextFrame, TextLimits};

    fn meta_get(line: &[u8]) -> (MetaKey<'_>, MetaFlags<'_>) {
        match parse_text(line, &TextLimits::default()) {
            TextFrame::Command {
                command: Command::MetaGet { key, flags },
                ..
            } => (key, flags),
            other => panic!("not an mg: {other:?}"),
        }
    }

    #[test]
    fn classic_lines() {
        let mut out = Vec::new();
        write_value(&mut out, b"k", 5, b"ab\r\nc", None);
        write_value(&mut out, b"k", 0, b"", Some(9));
        write_status(&mut out, Status::End);
        write_number(&mut out, 42);
        write_version(&mut out, "1.6.18");
        write_stat(&mut out, "pid", 7);
        write_error(&mut out, ErrorReply::Error);
        write_error(&mut out, ErrorReply::ClientError("bad data chunk"));
        write_error(
            &mut out,
            ErrorReply::ServerError("object too large for cache"),
        );
        assert_eq!(
            out,
            b"VALUE k 5 5\r\nab\r\nc\r\nVALUE k 0 0 9\r\n\r\nEND\r\n42\r\nVERSION 1.6.18\r\nSTAT pid 7\r\n\
ERROR\r\nCLIENT_ERROR bad data chunk\r\nSERVER_ERROR object too large for cache\r\n"
        );
        for (status, line) in [
            (Status::Stored, "STORED"),
            (Status::NotStored, "NOT_STORED"),
            (Status::Exists, "EXISTS"),
            (Status::NotFound, "NOT_FOUND"),
            (Status::Deleted, "DELETED"),
            (Status::Touched, "TOUCHED"),
            (Status::Ok, "OK"),
            (Status::Reset, "RESET"),
        ] {
            assert_eq!(status.line(), format!("{line}\r\n").as_bytes());
        }
    }

    #[test]
    fn meta_flags_in_request_order() {
        let (key, flags) = meta_get(b"mg a v f c t s k O9 h l\r\n");
        let facts = MetaFacts {
            cas: Some(27),
            client_flags: Some(0),
            ttl: Some(-1),
            size: Some(1),
            last_access: Some(1),
            hit_before: Some(true),
            ..MetaFacts::default()
        };
        let mut out = Vec::new();
        write_meta(
            &mut out,
            MetaCommand::Get,
            MetaCode::Va(1),
            &key,
            &flags,
            &facts,
            b"x",
        );
        assert_eq!(out, b"VA 1 f0 c27 t-1 s1 ka O9 h1 l1\r\nx\r\n");
    }

    #[test]
    fn meta_miss_echoes_opaque_and_key_only() {
        let (key, flags) = meta_get(b"mg nokey k O123 v c\r\n");
        let mut out = Vec::new();
        write_meta(
            &mut out,
            MetaCommand::Get,
            MetaCode::En,
            &key,
            &flags,
            &MetaFacts::default(),
            b"",
        );
        assert_eq!(out, b"EN knokey O123\r\n");
    }

    #[test]
    fn quiet_mode() {
        let (key, flags) = meta_get(b"mg nokey q k\r\n");
        let mut out = Vec::new();
        write_meta(
            &mut out,
            MetaCommand::Get,
            MetaCode::En,
            &key,
            &flags,
            &MetaFacts::default(),
            b"",
        );
        assert!(out.is_empty());
        write_meta(
            &mut out,
            MetaCommand::Get,
            MetaCode::Hd,
            &key,
            &flags,
            &MetaFacts::default(),
            b"",
        );
        assert_eq!(out, b"HD knokey\r\n");
        assert!(quiet_hides(MetaCommand::Set, MetaCode::Hd));
        assert!(!quiet_hides(MetaCommand::Set, MetaCode::Ns));
        assert!(quiet_hides(MetaCommand::Delete, MetaCode::Hd));
        assert!(!quiet_hides(MetaCommand::Delete, MetaCode::Nf));
        assert!(quiet_hides(MetaCommand::Arithmetic, MetaCode::Va(1)));
        assert!(!quiet_hides(MetaCommand::Arithmetic, MetaCode::Nf));
    }

    #[test]
    fn binary_key_returned_encoded() {
        let (key, flags) = meta_get(b"mg YWJj b k c\r\n");
        let facts = MetaFacts {
            cas: Some(45),
            ..MetaFacts::default()
        };
        let mut out = Vec::new();
        write_meta(
            &mut out,
            MetaCommand::Set,
            MetaCode::Hd,
            &key,
            &flags,
            &facts,
            b"",
        );
        assert_eq!(out, b"HD kYWJj b c45\r\n");
        out.clear();
        write_meta_debug(
            &mut out,
            &MetaKey {
                bytes: Cow::Borrowed(b"abc"),
                base64: true,
            },
            &[("exp", "-1".to_string()), ("cas", "3".to_string())],
        );
        assert_eq!(out, b"ME YWJj exp=-1 cas=3\r\n");
        out.clear();
        write_meta_noop(&mut out);
        assert_eq!(out, b"MN\r\n");
        let mut waits = Vec::new();
        let facts = MetaFacts {
            won: true,
            stale: true,
            ..MetaFacts::default()
        };
        write_meta(
            &mut waits,
            MetaCommand::Get,
            MetaCode::Hd,
            &key,
            &flags,
            &facts,
            b"",
        );
        assert_eq!(waits, b"HD kYWJj b X W\r\n");
    }
}
