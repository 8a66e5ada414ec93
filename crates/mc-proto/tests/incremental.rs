//! The parsers on generated inputs: they never panic, every answer uses
//! bytes that are there, and a request split across reads parses as it does
//! whole (every shorter prefix waits; more bytes after it change nothing).
//! The inputs come from a fixed-seed generator mixing command fragments,
//! numbers, flags, separators and raw bytes, so a failure is reproducible.

use mc_proto::binary::{parse_binary, BinaryFrame, RequestHeader, REQUEST_MAGIC};
use mc_proto::text::{parse_text, TextFrame, TextLimits};

/// xorshift64*: small, deterministic, good enough to mix fragments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a [u8]]) -> &'a [u8] {
        items[self.below(items.len())]
    }
}

const WORDS: &[&[u8]] = &[
    b"get",
    b"gets",
    b"gat",
    b"gats",
    b"set",
    b"add",
    b"replace",
    b"append",
    b"prepend",
    b"cas",
    b"delete",
    b"incr",
    b"decr",
    b"touch",
    b"version",
    b"verbosity",
    b"stats",
    b"quit",
    b"flush_all",
    b"mg",
    b"ms",
    b"md",
    b"ma",
    b"mn",
    b"me",
    b"noreply",
    b"k",
    b"key",
    b"YWJj",
    b"0",
    b"1",
    b"3",
    b"-1",
    b"+2",
    b"4294967296",
    b"18446744073709551616",
    b"v",
    b"b",
    b"q",
    b"T30",
    b"O123",
    b"C5",
    b"MS",
    b"ME",
    b"MD",
    b"D9",
    b"N0",
    b"J4",
    b"z",
    b"abc",
];
const GLUE: &[&[u8]] = &[b" ", b" ", b" ", b"  ", b"\r\n", b"\n", b"\t", b"\0", b"\r"];

fn text_input(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(12) + 1 {
        if rng.below(10) == 0 {
            out.push(rng.next() as u8);
        } else {
            out.extend_from_slice(rng.pick(WORDS));
        }
        out.extend_from_slice(rng.pick(GLUE));
    }
    out
}

/// Checks one input; returns what it parsed to (0 waits, 1 command, 2 error).
fn check_text(buf: &[u8], limits: &TextLimits) -> usize {
    let frame = parse_text(buf, limits);
    let (kind, consumed) = match &frame {
        TextFrame::Incomplete => return 0,
        TextFrame::Command { consumed, .. } => (1, *consumed),
        TextFrame::Error { consumed, .. } => (2, *consumed),
    };
    assert!(
        consumed > 0 && consumed <= buf.len(),
        "{buf:?}: consumed {consumed}"
    );
    if let TextFrame::Error { error, .. } = &frame {
        if error.close {
            return kind; // judged on the amount buffered, not on a request
        }
    }
    for cut in 0..consumed {
        assert_eq!(
            parse_text(&buf[..cut], limits),
            TextFrame::Incomplete,
            "{buf:?} cut at {cut}"
        );
    }
    let mut longer = buf.to_vec();
    longer.extend_from_slice(b"get more\r\n");
    assert_eq!(
        parse_text(&longer, limits),
        frame,
        "{buf:?} followed by more"
    );
    kind
}

#[test]
fn text_requests_split_anywhere() {
    let limits = TextLimits {
        max_item_size: 64,
        ..TextLimits::default()
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seen = [0usize; 3];
    for _ in 0..20_000 {
        let input = text_input(&mut rng);
        seen[check_text(&input, &limits)] += 1;
    }
    // The generator must reach all three answers often, or this checks little.
    assert!(
        seen.iter().all(|&n| n > 1000),
        "waits, commands, errors: {seen:?}"
    );
}

fn binary_input(rng: &mut Rng) -> Vec<u8> {
    let extras_len = [0u8, 0, 4, 8, 20, 3][rng.below(6)];
    let key_len = [0u16, 1, 3, 250, 251][rng.below(5)];
    let value_len = [0u32, 1, 5, 70][rng.below(4)];
    let skew = [0i64, 0, 0, -1, 1, -300][rng.below(6)];
    let body_len =
        (i64::from(extras_len) + i64::from(key_len) + i64::from(value_len) + skew).max(0) as u32;
    let header = RequestHeader {
        magic: if rng.below(20) == 0 {
            0x81
        } else {
            REQUEST_MAGIC
        },
        opcode: (rng.next() % 0x28) as u8,
        key_len,
        extras_len,
        data_type: 0,
        vbucket: 0,
        body_len,
        opaque: rng.next() as u32,
        cas: 0,
    };
    let mut out = Vec::new();
    header.encode(&mut out);
    let available = usize::from(extras_len) + usize::from(key_len) + value_len as usize;
    out.extend((0..available).map(|_| rng.next() as u8));
    out
}

#[test]
fn binary_requests_split_anywhere() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut seen = [0usize; 3];
    for _ in 0..20_000 {
        let buf = binary_input(&mut rng);
        let frame = parse_binary(&buf, 64);
        let consumed = match &frame {
            BinaryFrame::Incomplete => {
                seen[0] += 1;
                continue;
            }
            BinaryFrame::Request { consumed, .. } => {
                seen[1] += 1;
                *consumed
            }
            BinaryFrame::Error { consumed, .. } => {
                seen[2] += 1;
                *consumed
            }
        };
        assert!(
            consumed > 0 && consumed <= buf.len(),
            "{buf:?}: consumed {consumed}"
        );
        if matches!(&frame, BinaryFrame::Error { error, .. } if error.status.is_none()) {
            continue; // a wrong magic closes on the header alone
        }
        for cut in 0..consumed {
            assert_eq!(
                parse_binary(&buf[..cut], 64),
                BinaryFrame::Incomplete,
                "cut at {cut}"
            );
        }
        let mut longer = buf.clone();
        longer.extend_from_slice(&[0u8; 40]);
        assert_eq!(parse_binary(&longer, 64), frame);
    }
    assert!(
        seen[1] > 500 && seen[2] > 500,
        "requests and errors both common: {seen:?}"
    );
}
