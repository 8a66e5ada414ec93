//! The request_path target: hsd's whole request path without the network.
//! The input is one client connection: its first byte picks the port (bit
//! 0: write port, bit 1: a secret is set, bit 2: a 1 KiB line limit; bit 3
//! once chose inline reads, which are now always inline on the embedded
//! store, and is ignored) and the rest is what the client sends. The bytes
//! go through hsd's own `connection::serve` (framing) over an in-memory
//! duplex stream, then its session, dispatcher, executor, group committer
//! and SQLite backend on a real store, all on one event loop as in hsd.
//!
//! Checks: nothing panics; every LF-terminated line gets exactly one
//! well-formed response line (fewer only when the line limit closed the
//! connection, and only then); the read port, and a secret-protected port
//! that was never given the secret, change no data.

use crate::assert_response_shape;
use crate::store::Store;
use hs_proto::{parse_request, Request};
use hsd::harness::{Close, Harness, PortSetup, MAX_AUTH_FAILURES};
use std::cell::RefCell;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &[u8] = b"s3cret";
const SMALL_LINE_LIMIT: usize = 1024;

/// A store and one event loop, made once per thread.
struct World {
    runtime: tokio::runtime::Runtime,
    local: tokio::task::LocalSet,
    harness: Harness,
    store: RefCell<Store>,
    _dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::create(dir.path());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        // The dispatchers start their tasks on the loop, so build them there.
        let harness = local
            .block_on(&runtime, async { Harness::new(dir.path()) })
            .expect("harness");
        World {
            runtime,
            local,
            harness,
            store: RefCell::new(store),
            _dir: dir,
        }
    }
}

thread_local! {
    static WORLD: World = World::new();
}

/// Checks one input; panics on any broken invariant.
pub fn run(data: &[u8]) {
    let Some((&flags, input)) = data.split_first() else {
        return;
    };
    WORLD.with(|w| {
        let version_before = w.store.borrow().data_version();
        let setup = PortSetup {
            write: flags & 1 != 0,
            secret: (flags & 2 != 0).then_some(SECRET),
            max_line: if flags & 4 != 0 {
                SMALL_LINE_LIMIT
            } else {
                1 << 20
            },
        };
        let (out, close) = w
            .local
            .block_on(&w.runtime, one_connection(&w.harness, setup, input));
        check_responses(input, &out, close, setup.max_line);

        let wrote = w.store.borrow().data_version() != version_before;
        if wrote {
            let may_write = setup.write && (setup.secret.is_none() || sends_secret(input));
            assert!(may_write, "data changed through a port that may not write");
            w.store.borrow_mut().reset();
        }
    });
}

/// Runs hsd's connection loop on `input` as one client; returns everything
/// hsd sent back and why the connection ended.
async fn one_connection(harness: &Harness, setup: PortSetup<'_>, input: &[u8]) -> (Vec<u8>, Close) {
    let (client, server) = tokio::io::duplex(16 * 1024);
    let (mut rd, mut wr) = tokio::io::split(client);
    let serve = harness.serve(server, setup);
    let send = async {
        let _ = wr.write_all(input).await;
        let _ = wr.shutdown().await;
    };
    let receive = async {
        let mut out = Vec::new();
        let _ = rd.read_to_end(&mut out).await;
        out
    };
    let ((), out, close) = tokio::join!(send, receive, serve);
    (out, close)
}

fn check_responses(input: &[u8], out: &[u8], close: Close, max_line: usize) {
    let requests = memchr::memchr_iter(b'\n', input).count();
    let responses = memchr::memchr_iter(b'\n', out).count();
    assert!(
        out.is_empty() || out.ends_with(b"\n"),
        "unterminated response"
    );
    let longest = input
        .split(|&b| b == b'\n')
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0);
    match close {
        Close::PeerClosed => assert_eq!(
            responses, requests,
            "{requests} request lines got {responses} responses"
        ),
        Close::LineTooLong => {
            assert!(longest > max_line, "closed for a line within the limit");
            assert!(responses <= requests);
        }
        Close::AuthFailures => {
            // Closed after answering the last of too many failed `A`.
            let unauth = out
                .split(|&b| b == b'\n')
                .filter(|l| *l == b"3\t1\tunauth")
                .count();
            assert!(unauth >= MAX_AUTH_FAILURES as usize);
            assert!(responses <= requests);
        }
        other => panic!("connection ended with {other:?}"),
    }
    for line in out.split(|&b| b == b'\n').take(responses) {
        assert_response_shape(line);
    }
}

/// Whether any line of the input is `A 1 <the secret>` (in any encoding).
fn sends_secret(input: &[u8]) -> bool {
    input.split(|&b| b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        matches!(parse_request(line), Ok(Request::Auth(a)) if a.auth_type == b"1" && a.secret == SECRET)
    })
}
