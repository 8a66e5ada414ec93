//! What a request line does, as far as reconnecting cares: an `A` or `P` to
//! remember when it succeeds, a read that may be retried on a new connection,
//! or a write that must never be sent twice. Mirrors `hs_proto::parse_request`
//! token by token without allocating (a unit test checks they agree).

use hs_proto::{parse_number, parse_request, Request, MAX_INDEX_ID};

/// The retry/replay class of one request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `A ...`: remembered (the whole line) when it succeeds.
    Auth(Vec<u8>),
    /// `P <id> ...`: remembered by id when it succeeds.
    Open(u32, Vec<u8>),
    /// No side effect on the data (a find without modify, or a line the
    /// server rejects before touching anything): safe to retry.
    Read,
    /// Insert or find-and-modify: never retried.
    Write,
}

impl Kind {
    pub(crate) fn is_write(&self) -> bool {
        matches!(self, Kind::Write)
    }
}

/// Classifies a line (without LF; one trailing CR is ignored, as the server
/// drops it).
pub(crate) fn classify(line: &[u8]) -> Kind {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut tokens = line.split(|&b| b == b'\t').peekable();
    let first = tokens.next().unwrap_or(b"");
    match first {
        b"A" => Kind::Auth(line.to_vec()),
        b"P" => match parse_request(line) {
            Ok(Request::OpenIndex(open)) => Kind::Open(open.index_id, line.to_vec()),
            _ => Kind::Read,
        },
        [b'0'..=b'9', ..] if parse_number(first) <= u64::from(MAX_INDEX_ID) => {
            if exec_writes(&mut tokens) {
                Kind::Write
            } else {
                Kind::Read
            }
        }
        _ => Kind::Read,
    }
}

/// Whether the tokens after the index id form an insert or a find with a
/// valid `mop`, exactly as the parser would read them.
fn exec_writes<'a>(tokens: &mut std::iter::Peekable<impl Iterator<Item = &'a [u8]>>) -> bool {
    let mut next = || tokens.next().unwrap_or(b"");
    let op = next();
    let count = parse_number(next());
    if op == b"+" {
        return true;
    }
    if !matches!(op, b"=" | b">" | b">=" | b"<" | b"<=") || count == 0 {
        return false;
    }
    skip(tokens, count);
    if tokens.peek().is_none() {
        return false;
    }
    skip(tokens, 2); // limit, offset
    if tokens.peek() == Some(&&b"@"[..]) {
        skip(tokens, 2); // "@", icol
        let m = parse_number(tokens.next().unwrap_or(b""));
        if m == 0 {
            return false;
        }
        skip(tokens, m);
    }
    while let Some(&raw) = tokens.peek() {
        if !matches!(raw.first(), Some(b'F' | b'W')) {
            break;
        }
        if raw != b"F" && raw != b"W" {
            return false; // filtertype error
        }
        skip(tokens, 4);
    }
    matches!(
        tokens.next(),
        Some(b"U" | b"D" | b"+" | b"-" | b"U?" | b"D?" | b"+?" | b"-?")
    )
}

fn skip<'a>(tokens: &mut impl Iterator<Item = &'a [u8]>, n: u64) {
    for _ in 0..n {
        if tokens.next().is_none() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_proto::{ExecRequest, IndexOperation};

    fn parser_says_write(line: &[u8]) -> bool {
        matches!(
            parse_request(line),
            Ok(Request::Exec(ExecRequest {
                operation: Ok(IndexOperation::Insert(_)),
                ..
            }))
        ) || matches!(
            parse_request(line),
            Ok(Request::Exec(ExecRequest {
                operation: Ok(IndexOperation::Find(ref f)),
                ..
            })) if f.modify.is_some()
        )
    }

    #[test]
    fn examples() {
        assert_eq!(classify(b"0\t=\t1\t1"), Kind::Read);
        assert_eq!(classify(b"0\t=\t1\t1\t5\t0\tF\t=\t0\tx"), Kind::Read);
        assert_eq!(classify(b"0\t+\t1\tx"), Kind::Write);
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\tD"), Kind::Write);
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\tD\r"), Kind::Write);
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\tX"), Kind::Read);
        assert_eq!(
            classify(b"0\t=\t1\t1\t1\t0\t@\t0\t1\tq\tU?\tv"),
            Kind::Write
        );
        assert_eq!(classify(b"A\t1\ts"), Kind::Auth(b"A\t1\ts".to_vec()));
        assert_eq!(
            classify(b"P\t12\tdb\tt\tPRIMARY\tc"),
            Kind::Open(12, b"P\t12\tdb\tt\tPRIMARY\tc".to_vec())
        );
        assert_eq!(classify(b"P\tx\tdb"), Kind::Read);
        assert_eq!(classify(b""), Kind::Read);
        assert_eq!(classify(b"zz"), Kind::Read);
    }

    /// Random lines over an alphabet of meaningful tokens: the classifier must
    /// agree with the real parser on every one.
    #[test]
    fn agrees_with_the_parser() {
        const ALPHABET: &[&[u8]] = &[
            b"0",
            b"1",
            b"2",
            b"3",
            b"=",
            b">=",
            b"<",
            b"+",
            b"-",
            b"@",
            b"F",
            b"W",
            b"FF",
            b"U",
            b"U?",
            b"D",
            b"D?",
            b"+?",
            b"-?",
            b"x",
            b"",
            b"\x00",
            b"!=",
            b"99999999",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rand = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200_000 {
            let len = (rand() % 14) as usize;
            let mut line = Vec::new();
            for i in 0..len {
                if i > 0 {
                    line.push(b'\t');
                }
                let token = if i == 0 && rand() % 4 != 0 {
                    &b"0"[..]
                } else {
                    ALPHABET[(rand() % ALPHABET.len() as u64) as usize]
                };
                line.extend_from_slice(token);
            }
            let ours = classify(&line).is_write();
            assert_eq!(ours, parser_says_write(&line), "line {line:?}");
        }
    }
}
