//! Unit tests of the text parser: every command, every refusal.

use std::borrow::Cow;

use super::*;
use crate::Decoded;

fn limits() -> TextLimits {
    TextLimits {
        max_item_size: 100,
        ..TextLimits::default()
    }
}

fn parse(buf: &[u8]) -> TextFrame<'_> {
    parse_text(buf, &limits())
}

fn command(buf: &[u8]) -> Command<'_> {
    match parse(buf) {
        TextFrame::Command { command, consumed } => {
            assert_eq!(consumed, buf.len(), "consumed all of {buf:?}");
            command
        }
        other => panic!("{buf:?}: not a command: {other:?}"),
    }
}

/// The error's answer bytes, what it consumed, what it swallows, whether it closes.
fn refusal(buf: &[u8]) -> (String, usize, usize, bool) {
    match parse(buf) {
        TextFrame::Error {
            error,
            consumed,
            swallow,
        } => {
            let mut out = Vec::new();
            error.encode(&mut out);
            (
                String::from_utf8_lossy(&out).into_owned(),
                consumed,
                swallow,
                error.close,
            )
        }
        other => panic!("{buf:?}: not an error: {other:?}"),
    }
}

fn answer(buf: &[u8]) -> String {
    refusal(buf).0
}

const BAD: &str = "CLIENT_ERROR bad command line format\r\n";

#[test]
fn retrieval() {
    assert_eq!(
        command(b"get a b\r\n"),
        Command::Get {
            keys: vec![b"a", b"b"],
            return_cas: false,
            touch: None
        }
    );
    assert_eq!(
        command(b"  gets   a  \n"),
        Command::Get {
            keys: vec![b"a"],
            return_cas: true,
            touch: None
        }
    );
    assert_eq!(
        command(b"gat 10 a\r\n"),
        Command::Get {
            keys: vec![b"a"],
            return_cas: false,
            touch: Some(10)
        }
    );
    assert_eq!(
        command(b"gats -1 a b\r\n"),
        Command::Get {
            keys: vec![b"a", b"b"],
            return_cas: true,
            touch: Some(-1)
        }
    );
    // gat with no key answers END in memcached: an empty get.
    assert_eq!(
        command(b"gat 10\r\n"),
        Command::Get {
            keys: vec![],
            return_cas: false,
            touch: Some(10)
        }
    );
    assert_eq!(
        answer(b"gat x a\r\n"),
        "CLIENT_ERROR invalid exptime argument\r\n"
    );
    assert_eq!(answer(b"get\r\n"), "ERROR\r\n");
    assert_eq!(answer(b"get \r\n"), "ERROR\r\n");
    // Many keys: past memcached's 23 tokens the rest of the line is read too.
    let mut line = b"get".to_vec();
    for n in 0..40 {
        line.extend_from_slice(format!(" k{n}").as_bytes());
    }
    line.extend_from_slice(b"\r\n");
    match command(&line) {
        Command::Get { keys, .. } => {
            assert_eq!(keys.len(), 40);
            assert_eq!(keys[39], b"k39");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn keys_are_checked() {
    let long = "k".repeat(251);
    assert_eq!(answer(format!("get a {long}\r\n").as_bytes()), BAD);
    let longest = "k".repeat(250);
    assert!(matches!(
        command(format!("get {longest}\r\n").as_bytes()),
        Command::Get { .. }
    ));
    assert_eq!(answer(b"get a\tb\r\n"), BAD);
    assert_eq!(answer(b"get a\rb\r\n"), BAD);
    assert_eq!(answer(b"get a\x7f\r\n"), BAD);
    assert_eq!(answer(b"set a\x01 0 0 1\r\nx\r\n"), BAD);
    assert_eq!(answer(format!("delete {long}\r\n").as_bytes()), BAD);
    assert_eq!(answer(format!("incr {long} 1\r\n").as_bytes()), BAD);
    assert_eq!(answer(format!("touch {long} 1\r\n").as_bytes()), BAD);
    assert_eq!(answer(format!("mg {long} v\r\n").as_bytes()), BAD);
    assert!(is_valid_key(b"!~"));
    assert!(!is_valid_key(b""));
    // A NUL ends the line, as in memcached.
    assert_eq!(
        command(b"get a\0b\r\n"),
        Command::Get {
            keys: vec![b"a"],
            return_cas: false,
            touch: None
        }
    );
}

#[test]
fn storage() {
    assert_eq!(
        command(b"set k 5 60 3\r\nabc\r\n"),
        Command::Store {
            mode: StoreMode::Set,
            key: b"k",
            client_flags: 5,
            exptime: 60,
            data: b"abc",
            noreply: false
        }
    );
    for (name, mode) in [
        ("add", StoreMode::Add),
        ("replace", StoreMode::Replace),
        ("append", StoreMode::Append),
        ("prepend", StoreMode::Prepend),
    ] {
        let line = format!("{name} k 0 0 2 noreply\r\nhi\r\n");
        assert_eq!(
            command(line.as_bytes()),
            Command::Store {
                mode,
                key: b"k",
                client_flags: 0,
                exptime: 0,
                data: b"hi",
                noreply: true
            }
        );
    }
    assert_eq!(
        command(b"cas k 0 0 1 77\r\nx\r\n"),
        Command::Store {
            mode: StoreMode::Cas(77),
            key: b"k",
            client_flags: 0,
            exptime: 0,
            data: b"x",
            noreply: false
        }
    );
    // Data may hold \r\n; the length decides.
    assert!(matches!(
        command(b"set k 0 0 4\r\n\r\n\r\n\r\n"),
        Command::Store {
            data: b"\r\n\r\n",
            ..
        }
    ));
    // memcached's number rules: 32-bit truncation, + sign, -0.
    assert!(matches!(
        command(b"set k 4294967296 0 +1\r\nx\r\n"),
        Command::Store {
            client_flags: 0,
            ..
        }
    ));
    assert!(matches!(
        command(b"set k -0 0 0\r\n\r\n"),
        Command::Store { data: b"", .. }
    ));
    // An unknown sixth token is not noreply and is ignored.
    assert!(matches!(
        command(b"set k 0 0 1 norepl\r\nx\r\n"),
        Command::Store { noreply: false, .. }
    ));
}

#[test]
fn storage_waits_for_the_block() {
    let full = b"set k 0 0 5\r\nhello\r\n";
    for cut in 0..full.len() {
        assert_eq!(parse(&full[..cut]), TextFrame::Incomplete, "{cut}");
    }
}

#[test]
fn storage_refusals() {
    // Wrong token counts: ERROR, and the block is then read as a command.
    assert_eq!(
        refusal(b"set a 0 0\r\nabc\r\n"),
        ("ERROR\r\n".into(), 11, 0, false)
    );
    assert_eq!(answer(b"set a 0 0 3 4 5\r\n"), "ERROR\r\n");
    assert_eq!(answer(b"cas a 0 0 1\r\n"), "ERROR\r\n");
    // Bad numbers: CLIENT_ERROR, nothing swallowed.
    for line in [
        &b"set a 0 0 -1\r\n"[..],
        b"set a 0 0 x\r\n",
        b"set a 0 0 1x\r\n",
        b"set a -1 0 1\r\n",
        b"set a 0 x 1\r\n",
        b"set a 0 0 2147483646\r\n",
        b"cas a 0 0 1 x\r\n",
        b"cas a 0 0 1 -1\r\n",
    ] {
        assert_eq!(
            refusal(line),
            (BAD.into(), line.len(), 0, false),
            "{line:?}"
        );
    }
    // noreply hides the classic commands' own errors.
    assert_eq!(
        refusal(b"set a 0 0 x noreply\r\n"),
        (String::new(), 21, 0, false)
    );
    assert_eq!(answer(b"set a 0 0 noreply\r\n"), "");
    // Too large: SERVER_ERROR, and the block is swallowed.
    assert_eq!(
        refusal(b"set a 0 0 101\r\n"),
        (
            "SERVER_ERROR object too large for cache\r\n".into(),
            15,
            103,
            false
        )
    );
    assert_eq!(refusal(b"set a 0 0 101 noreply\r\n").0, "");
    // A bad terminator: the block is consumed whole.
    assert_eq!(
        refusal(b"set a 0 0 3\r\nabcde\r\n"),
        ("CLIENT_ERROR bad data chunk\r\n".into(), 18, 0, false)
    );
    assert_eq!(refusal(b"set a 0 0 3 noreply\r\nabcde\r\n").0, "");
    assert_eq!(refusal(b"set b 0 0 1\nx\nm").1, 15);
}

#[test]
fn delete_forms() {
    for (line, noreply) in [
        (&b"delete k\r\n"[..], false),
        (b"delete k 0\r\n", false),
        (b"delete k noreply\r\n", true),
        (b"delete k 0 noreply\r\n", true),
    ] {
        assert_eq!(
            command(line),
            Command::Delete { key: b"k", noreply },
            "{line:?}"
        );
    }
    assert_eq!(
        answer(b"delete k 1\r\n"),
        "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
    );
    assert_eq!(answer(b"delete k x noreply\r\n"), "");
    assert_eq!(answer(b"delete k 1 2 3\r\n"), "ERROR\r\n");
    assert_eq!(answer(b"delete\r\n"), "ERROR\r\n");
}

#[test]
fn arithmetic_and_touch() {
    assert_eq!(
        command(b"incr n 18446744073709551615\r\n"),
        Command::Arithmetic {
            key: b"n",
            delta: u64::MAX,
            increment: true,
            noreply: false
        }
    );
    assert_eq!(
        command(b"decr n +5 noreply\r\n"),
        Command::Arithmetic {
            key: b"n",
            delta: 5,
            increment: false,
            noreply: true
        }
    );
    for bad in [
        &b"incr n -1\r\n"[..],
        b"incr n 18446744073709551616\r\n",
        b"incr n 0x10\r\n",
    ] {
        assert_eq!(
            answer(bad),
            "CLIENT_ERROR invalid numeric delta argument\r\n"
        );
    }
    assert_eq!(answer(b"incr n abc noreply\r\n"), "");
    assert_eq!(answer(b"incr n\r\n"), "ERROR\r\n");
    assert_eq!(
        command(b"touch k 10\r\n"),
        Command::Touch {
            key: b"k",
            exptime: 10,
            noreply: false
        }
    );
    assert_eq!(
        answer(b"touch k x\r\n"),
        "CLIENT_ERROR invalid exptime argument\r\n"
    );
    assert_eq!(answer(b"touch k\r\n"), "ERROR\r\n");
}

#[test]
fn other_commands() {
    assert_eq!(command(b"version\r\n"), Command::Version);
    assert_eq!(command(b"version x y\r\n"), Command::Version);
    assert_eq!(command(b"quit\r\n"), Command::Quit);
    assert_eq!(command(b"stats\r\n"), Command::Stats { args: vec![] });
    assert_eq!(
        command(b"stats items x\r\n"),
        Command::Stats {
            args: vec![b"items", b"x"]
        }
    );
    assert_eq!(
        command(b"verbosity 1 noreply\r\n"),
        Command::Verbosity {
            level: 1,
            noreply: true
        }
    );
    assert_eq!(answer(b"verbosity x\r\n"), BAD);
    assert_eq!(answer(b"verbosity noreply\r\n"), "");
    assert_eq!(answer(b"verbosity\r\n"), "ERROR\r\n");
    assert_eq!(
        command(b"flush_all\r\n"),
        Command::FlushAll {
            delay: 0,
            noreply: false
        }
    );
    assert_eq!(
        command(b"flush_all 30 noreply\r\n"),
        Command::FlushAll {
            delay: 30,
            noreply: true
        }
    );
    assert_eq!(
        command(b"flush_all noreply\r\n"),
        Command::FlushAll {
            delay: 0,
            noreply: true
        }
    );
    assert_eq!(
        answer(b"flush_all x\r\n"),
        "CLIENT_ERROR invalid exptime argument\r\n"
    );
    assert_eq!(
        answer(b"flush_all noreply x\r\n"),
        "CLIENT_ERROR invalid exptime argument\r\n"
    );
    assert_eq!(answer(b"flush_all 1 2 3\r\n"), "ERROR\r\n");
    for unknown in [
        &b"GET a\r\n"[..],
        b"g\r\n",
        b"\r\n",
        b"\n",
        b"get\ta\r\n",
        b"shutdown\r\n",
        b"mx a\r\n",
    ] {
        assert_eq!(answer(unknown), "ERROR\r\n", "{unknown:?}");
    }
}

#[test]
fn request_length_bound() {
    let limits = TextLimits {
        max_item_size: 5000,
        max_line_len: 2048,
        max_multiget_line_len: 4000,
    };
    assert_eq!(limits.max_request_len(), 2048 + 5000 + 2);
    // The longest storage request within the bound parses.
    let key = "k".repeat(250);
    let mut request = format!("set {key} 0 0 5000").into_bytes();
    request.extend(std::iter::repeat_n(b' ', 2048 - request.len() - 2));
    request.extend_from_slice(b"\r\n");
    request.extend(std::iter::repeat_n(b'v', 5000));
    request.extend_from_slice(b"\r\n");
    assert_eq!(request.len(), limits.max_request_len());
    assert!(matches!(
        parse_text(&request, &limits),
        TextFrame::Command { command: Command::Store { .. }, consumed } if consumed == request.len()
    ));
    let multiget = TextLimits {
        max_multiget_line_len: 1 << 20,
        ..limits
    };
    assert_eq!(multiget.max_request_len(), 1 << 20);
}

#[test]
fn line_length() {
    assert_eq!(parse(&[b'x'; 2048]), TextFrame::Incomplete);
    assert_eq!(refusal(&[b'x'; 2049]), (String::new(), 2049, 0, true));
    let mut multiget = b"get ".to_vec();
    multiget.extend(std::iter::repeat_n(b'a', 4000));
    assert_eq!(parse(&multiget), TextFrame::Incomplete);
    let tight = TextLimits {
        max_multiget_line_len: 3000,
        ..limits()
    };
    assert!(matches!(
        parse_text(&multiget, &tight),
        TextFrame::Error {
            error: TextError { close: true, .. },
            ..
        }
    ));
    // A long line that did arrive whole is judged like any other.
    let mut long = vec![b'x'; 3000];
    long.extend_from_slice(b"\r\n");
    assert_eq!(answer(&long), "ERROR\r\n");
}

fn meta_key(bytes: &[u8]) -> crate::meta::MetaKey<'_> {
    crate::meta::MetaKey {
        bytes: Cow::Borrowed(bytes),
        base64: false,
    }
}

#[test]
fn meta_commands() {
    match command(b"mg k v t O1 q\r\n") {
        Command::MetaGet { key, flags } => {
            assert_eq!(key, meta_key(b"k"));
            assert!(flags.return_value && flags.return_ttl && flags.quiet);
            assert_eq!(flags.opaque, Some(&b"1"[..]));
        }
        other => panic!("{other:?}"),
    }
    match command(b"ms k 2 T30 F5 MA C9\r\nhi\r\n") {
        Command::MetaSet {
            key,
            flags,
            mode,
            data,
        } => {
            assert_eq!(key, meta_key(b"k"));
            assert_eq!((mode, data), (StoreMode::Append, &b"hi"[..]));
            assert_eq!(
                (flags.ttl, flags.client_flags, flags.compare_cas),
                (Some(30), Some(5), Some(9))
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        command(b"ms k 0\r\n\r\n"),
        Command::MetaSet {
            mode: StoreMode::Set,
            ..
        }
    ));
    assert!(matches!(
        command(b"md k q I T5\r\n"),
        Command::MetaDelete { .. }
    ));
    assert!(matches!(
        command(b"ma k MD D5 N0 J1 v\r\n"),
        Command::MetaArithmetic {
            increment: false,
            ..
        }
    ));
    assert!(matches!(
        command(b"ma k M+\r\n"),
        Command::MetaArithmetic {
            increment: true,
            ..
        }
    ));
    assert_eq!(command(b"mn\r\n"), Command::MetaNoop);
    assert_eq!(command(b"mn x\r\n"), Command::MetaNoop);
    match command(b"me YWJj b\r\n") {
        Command::MetaDebug { key } => assert_eq!((&*key.bytes, key.base64), (&b"abc"[..], true)),
        other => panic!("{other:?}"),
    }
    match command(b"mg YWJj b k\r\n") {
        Command::MetaGet { key, .. } => assert_eq!((&*key.bytes, key.base64), (&b"abc"[..], true)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn meta_refusals() {
    assert_eq!(answer(b"mg\r\n"), "ERROR\r\n");
    assert_eq!(answer(b"mg a z\r\n"), "CLIENT_ERROR invalid flag\r\n");
    assert_eq!(answer(b"mg a v v\r\n"), "CLIENT_ERROR duplicate flag\r\n");
    assert_eq!(
        answer(b"mg a Tx\r\n"),
        "CLIENT_ERROR bad token in command line format\r\n"
    );
    assert_eq!(
        answer(b"mg !!! b\r\n"),
        "CLIENT_ERROR error decoding key\r\n"
    );
    let opaque = format!("mg a O{}\r\n", "a".repeat(32));
    assert_eq!(
        answer(opaque.as_bytes()),
        "CLIENT_ERROR opaque token too long\r\n"
    );
    let many = b"mg a 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\r\n";
    assert_eq!(answer(many), "CLIENT_ERROR options flags are too long\r\n");
    // q never hides a meta error.
    assert_eq!(answer(b"mg a q z\r\n"), "CLIENT_ERROR invalid flag\r\n");

    // ms: errors before the length is known swallow nothing...
    assert_eq!(refusal(b"ms a\r\n"), (BAD.into(), 6, 0, false));
    assert_eq!(refusal(b"ms a x\r\n"), (BAD.into(), 8, 0, false));
    assert_eq!(refusal(b"ms a -1\r\n"), (BAD.into(), 9, 0, false));
    let many = b"ms a 2 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\r\n";
    assert_eq!(
        refusal(many),
        (
            "CLIENT_ERROR options flags too long\r\n".into(),
            many.len(),
            0,
            false
        )
    );
    // ...after it, the block is swallowed.
    assert_eq!(
        refusal(b"ms a 2 z\r\n"),
        ("CLIENT_ERROR invalid flag\r\n".into(), 10, 4, false)
    );
    assert_eq!(refusal(b"ms a 2 Fx\r\n").0, BAD);
    assert_eq!(
        refusal(b"ms a 2 MX\r\n").0,
        "CLIENT_ERROR invalid mode for ms M token\r\n"
    );
    assert_eq!(
        refusal(b"ms a 2 MEE\r\n").0,
        "CLIENT_ERROR incorrect length for M token\r\n"
    );
    assert_eq!(
        refusal(b"ms a 101 q\r\n"),
        (
            "SERVER_ERROR object too large for cache\r\n".into(),
            12,
            103,
            false
        )
    );
    // A bad chunk is reported even in quiet mode.
    assert_eq!(
        refusal(b"ms a 2 q\r\nhiya\r\n").0,
        "CLIENT_ERROR bad data chunk\r\n"
    );

    assert_eq!(
        answer(b"md a z\r\n"),
        "CLIENT_ERROR invalid or duplicate flag\r\n"
    );
    assert_eq!(
        answer(b"ma a Dx\r\n"),
        "CLIENT_ERROR invalid or duplicate flag\r\n"
    );
    assert_eq!(
        answer(b"ma a MX\r\n"),
        "CLIENT_ERROR invalid mode for ma M token\r\n"
    );
    assert_eq!(answer(b"md\r\n"), "ERROR\r\n");
    assert_eq!(answer(b"me\r\n"), BAD);
    assert_eq!(answer(b"me a b\r\n"), BAD);
}

#[test]
fn decoder_swallows_across_reads() {
    let mut decoder = TextDecoder::new(limits());
    let first = b"set a 0 0 200\r\n0123456789";
    match decoder.decode(first) {
        Decoded::Error { error, consumed } => {
            assert_eq!(consumed, 15);
            assert_eq!(
                error.reply,
                ErrorReply::ServerError("object too large for cache")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(decoder.decode(&first[15..]), Decoded::Skipped(10));
    assert_eq!(decoder.decode(b""), Decoded::Incomplete);
    let mut rest = vec![b'x'; 192];
    rest.extend_from_slice(b"mn\r\n");
    assert_eq!(decoder.decode(&rest), Decoded::Skipped(192));
    assert_eq!(
        decoder.decode(&rest[192..]),
        Decoded::Request {
            request: Command::MetaNoop,
            consumed: 4
        }
    );
}
