//! Unit tests of the binary parser and encoders.

use super::*;

fn request(opcode: u8, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
    let header = RequestHeader {
        magic: REQUEST_MAGIC,
        opcode,
        key_len: key.len() as u16,
        extras_len: extras.len() as u8,
        data_type: 0,
        vbucket: 0,
        body_len: (extras.len() + key.len() + value.len()) as u32,
        opaque: 0xdead_beef,
        cas: 0,
    };
    let mut out = Vec::new();
    header.encode(&mut out);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

fn command(buf: &[u8]) -> (BinaryCommand<'_>, usize) {
    match parse_binary(buf, 1 << 20) {
        BinaryFrame::Request { request, consumed } => (request.command, consumed),
        other => panic!("not a request: {other:?}"),
    }
}

fn error(buf: &[u8]) -> (Option<Status>, bool, usize, usize) {
    match parse_binary(buf, 1 << 20) {
        BinaryFrame::Error {
            error,
            consumed,
            swallow,
        } => (error.status, error.close, consumed, swallow),
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn opcodes_and_quiet_forms() {
    for byte in 0..=0x30u8 {
        if let Some(op) = Opcode::from_u8(byte) {
            assert_eq!(op as u8, byte);
        }
    }
    let buf = request(0x09, &[], b"k", &[]);
    assert_eq!(
        command(&buf),
        (
            BinaryCommand::Get {
                key: b"k",
                return_key: false,
                quiet: true
            },
            25
        )
    );
    let buf = request(0x0d, &[], b"k", &[]);
    assert_eq!(
        command(&buf).0,
        BinaryCommand::Get {
            key: b"k",
            return_key: true,
            quiet: true
        }
    );
    let mut extras = 5u32.to_be_bytes().to_vec();
    extras.extend_from_slice(&60u32.to_be_bytes());
    let buf = request(0x11, &extras, b"k", b"val");
    assert_eq!(
        command(&buf),
        (
            BinaryCommand::Store {
                mode: BinaryStore::Set,
                key: b"k",
                client_flags: 5,
                exptime: 60,
                value: b"val",
                quiet: true
            },
            24 + 8 + 1 + 3
        )
    );
    let mut extras = 7u64.to_be_bytes().to_vec();
    extras.extend_from_slice(&1u64.to_be_bytes());
    extras.extend_from_slice(&u32::MAX.to_be_bytes());
    let buf = request(0x06, &extras, b"n", &[]);
    assert_eq!(
        command(&buf).0,
        BinaryCommand::Arithmetic {
            key: b"n",
            increment: false,
            delta: 7,
            initial: 1,
            exptime: u32::MAX,
            quiet: false
        }
    );
    let buf = request(0x21, &[], b"PLAIN", b"\0user\0pass");
    assert_eq!(
        command(&buf).0,
        BinaryCommand::SaslAuth {
            mechanism: b"PLAIN",
            data: b"\0user\0pass"
        }
    );
    assert_eq!(
        command(&request(0x20, &[], &[], &[])).0,
        BinaryCommand::SaslListMechs
    );
    assert_eq!(
        command(&request(0x0a, &[], &[], &[])).0,
        BinaryCommand::Noop
    );
    assert_eq!(
        command(&request(0x18, &[0, 0, 0, 9], &[], &[])).0,
        BinaryCommand::Flush {
            delay: 9,
            quiet: true
        }
    );
    assert_eq!(
        command(&request(0x10, &[], b"items", &[])).0,
        BinaryCommand::Stat { group: b"items" }
    );
    assert_eq!(
        command(&request(0x1e, &[0, 0, 0, 1], b"k", &[])).0,
        BinaryCommand::GetAndTouch {
            key: b"k",
            exptime: 1,
            return_key: false,
            quiet: true
        }
    );
}

#[test]
fn incomplete_until_the_value_is_in() {
    let buf = request(0x01, &[0; 8], b"k", b"value");
    for cut in 0..buf.len() {
        assert_eq!(
            parse_binary(&buf[..cut], 1 << 20),
            BinaryFrame::Incomplete,
            "{cut}"
        );
    }
}

#[test]
fn errors_as_memcached() {
    let mut bad_magic = request(0x00, &[], b"k", &[]);
    bad_magic[0] = 0x81;
    assert_eq!(error(&bad_magic).0, None);
    assert!(error(&bad_magic).1);
    // Unknown opcode: answered, body skipped, connection kept.
    let buf = request(0x40, &[], b"k", b"xyz");
    assert_eq!(error(&buf), (Some(Status::UnknownCommand), false, 25, 3));
    // Verbosity is unknown to memcached 1.6 as well.
    assert_eq!(
        error(&request(0x1b, &[0; 4], &[], &[])).0,
        Some(Status::UnknownCommand)
    );
    // Key longer than the body: closes.
    let mut buf = request(0x00, &[], b"k", &[]);
    buf[11] = 0;
    assert_eq!(error(&buf), (Some(Status::UnknownCommand), true, 25, 0));
    // Wrong shapes close.
    assert_eq!(
        error(&request(0x0b, &[], b"k", &[])).0,
        Some(Status::InvalidArguments)
    );
    assert!(error(&request(0x00, &[], &[], &[])).1);
    assert_eq!(
        error(&request(0x01, &[0; 4], b"k", b"v")).0,
        Some(Status::InvalidArguments)
    );
    assert_eq!(
        error(&request(0x05, &[0; 8], b"k", &[])).0,
        Some(Status::InvalidArguments)
    );
    let long_key = vec![b'k'; 251];
    assert_eq!(
        error(&request(0x00, &[], &long_key, &[])),
        (Some(Status::InvalidArguments), true, 24 + 251, 0)
    );
    // Too large: answered, value skipped, connection kept.
    let header_only = request(0x01, &[0; 8], b"k", &[]);
    let mut big = header_only.clone();
    big[8..12].copy_from_slice(&(9 + (2u32 << 20)).to_be_bytes());
    assert_eq!(error(&big), (Some(Status::TooLarge), false, 33, 2 << 20));
}

#[test]
fn responses() {
    let mut out = Vec::new();
    write_error(&mut out, 0x09, 7, Status::KeyNotFound);
    assert_eq!(out[0], RESPONSE_MAGIC);
    assert_eq!(out[1], 0x09);
    assert_eq!(&out[6..8], &[0, 1]);
    assert_eq!(&out[8..12], &9u32.to_be_bytes());
    assert_eq!(&out[12..16], &7u32.to_be_bytes());
    assert_eq!(&out[24..], b"Not found");
    let header = RequestHeader::parse(&request(0x0c, &[], b"key", &[])).unwrap();
    out.clear();
    write_get_hit(&mut out, &header, 99, 5, b"key", b"val");
    assert_eq!(&out[2..4], &3u16.to_be_bytes());
    assert_eq!(out[4], 4);
    assert_eq!(&out[8..12], &10u32.to_be_bytes());
    assert_eq!(&out[16..24], &99u64.to_be_bytes());
    assert_eq!(&out[24..], b"\0\0\0\x05keyval");
    out.clear();
    write_counter(&mut out, &header, 1, 42);
    assert_eq!(&out[24..], &42u64.to_be_bytes());
    out.clear();
    write_stat(&mut out, &header, "pid", 12);
    assert_eq!(&out[24..], b"pid12");
    let get_q = BinaryCommand::Get {
        key: b"k",
        return_key: false,
        quiet: true,
    };
    assert!(suppressed(&get_q, Status::KeyNotFound));
    assert!(!suppressed(&get_q, Status::NoError));
    let set_q = BinaryCommand::Delete {
        key: b"k",
        quiet: true,
    };
    assert!(suppressed(&set_q, Status::NoError));
    assert!(!suppressed(&set_q, Status::KeyNotFound));
}

#[test]
fn decoder_skips_a_refused_body_across_reads() {
    let mut decoder = BinaryDecoder::new(4);
    let mut big = request(0x01, &[0; 8], b"k", b"0123456789");
    big.extend(request(0x0a, &[], &[], &[]));
    match decoder.decode(&big[..40]) {
        BinaryDecoded::Error { error, consumed } => {
            assert_eq!(
                (error.status, error.close, consumed),
                (Some(Status::TooLarge), false, 33)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(decoder.swallowing(), 10);
    assert_eq!(decoder.decode(&big[33..40]), BinaryDecoded::Skipped(7));
    assert_eq!(decoder.decode(&[]), BinaryDecoded::Incomplete);
    assert_eq!(decoder.decode(&big[40..]), BinaryDecoded::Skipped(3));
    match decoder.decode(&big[43..]) {
        BinaryDecoded::Request { request, consumed } => {
            assert_eq!((request.command, consumed), (BinaryCommand::Noop, 24));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn before_auth_only_sasl_and_version_run() {
    fn gated(buf: &[u8]) -> Result<BinaryCommand<'_>, (Option<Status>, bool, usize)> {
        match parse_binary_gated(buf, 1 << 20, true) {
            BinaryFrame::Error {
                error, consumed, ..
            } => Err((error.status, error.close, consumed)),
            BinaryFrame::Request { request, .. } => Ok(request.command),
            BinaryFrame::Incomplete => panic!("incomplete"),
        }
    }
    let auth = request(0x21, &[], b"PLAIN", b"\0u\0p");
    assert_eq!(
        gated(&auth),
        Ok(BinaryCommand::SaslAuth {
            mechanism: b"PLAIN",
            data: b"\0u\0p"
        })
    );
    assert_eq!(
        gated(&request(0x20, &[], &[], &[])),
        Ok(BinaryCommand::SaslListMechs)
    );
    assert_eq!(
        gated(&request(0x0b, &[], &[], &[])),
        Ok(BinaryCommand::Version)
    );
    // Everything else, known or not, of any shape: Auth failure, close,
    // once the extras and key are in (memcached -S, 1.6.18).
    for (buf, head) in [
        (request(0x00, &[], b"k", &[]), 25),
        (request(0x0a, &[], &[], &[]), 24),
        (request(0x07, &[], &[], &[]), 24),
        (request(0x55, &[], &[], &[]), 24),
        (request(0x00, &[], &[b'k'; 300], &[]), 324),
        (request(0x01, &[0; 8], b"k", &[b'v'; 10]), 33),
    ] {
        assert_eq!(
            gated(&buf),
            Err((Some(Status::AuthError), true, head)),
            "{:#x}",
            buf[1]
        );
    }
    // The SASL opcodes keep their shape checks; a key longer than the body
    // is refused before the gate, as in memcached.
    assert_eq!(
        gated(&request(0x21, &[0; 4], b"PLAIN", &[])),
        Err((Some(Status::InvalidArguments), true, 33))
    );
    let mut buf = request(0x00, &[], b"k", &[]);
    buf[11] = 0;
    assert_eq!(gated(&buf), Err((Some(Status::UnknownCommand), true, 25)));
}
