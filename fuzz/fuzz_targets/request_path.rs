//! Fuzz target: the whole request path of hsd without the network. The input
//! is one client connection: its first byte picks the listener (bit 0: write
//! port, bit 1: a secret is set, bit 2: a 1 KiB line limit, bit 3: short
//! reads run inline on the connection's thread) and the rest is
//! what the client sends. The bytes go through hsd's own
//! `connection::serve` (framing) over an in-memory duplex stream, then its
//! session, worker threads, executor and SQLite backend on a real store.
//!
//! Checks: nothing panics (any thread); every LF-terminated line gets exactly
//! one well-formed response line (fewer only when the line limit closed the
//! connection, and only then); the read port, and a secret-protected port
//! that was never given the secret, change no data.
#![no_main]

use hs_proto::{parse_request, Request};
use hsd::backend::sqlite::{SqliteBackend, Synchronous};
use hsd::backend::Backend;
use hsd::connection::{self, Close, ConnectionLimits};
use hsd::exec::Catalog;
use hsd::metrics::Metrics;
use hsd::session::{ListenerContext, PortKind, Session};
use hsd::workers::Workers;
use hsd_fuzz::assert_response_shape;
use hsd_fuzz::store::Store;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &[u8] = b"s3cret";
const SMALL_LINE_LIMIT: usize = 1024;

struct World {
    rt: tokio::runtime::Runtime,
    /// Indexed by `context_index(flags)`.
    contexts: Vec<Arc<ListenerContext>>,
    store: Mutex<Store>,
    _workers: Workers,
    _dir: tempfile::TempDir,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::create(dir.path());
        let backend: Arc<dyn Backend> = Arc::new(SqliteBackend::new(dir.path(), Synchronous::Off));
        let metrics = Metrics::new().expect("metrics");
        let catalog = Arc::new(Catalog::default());
        let workers =
            Workers::start(backend.clone(), catalog, metrics.clone(), 1, 1).expect("workers");
        let contexts = [0u8, 1, 2, 3, 8, 9, 10, 11]
            .into_iter()
            .map(|flags| {
                Arc::new(ListenerContext {
                    kind: if flags & 1 != 0 {
                        PortKind::Write
                    } else {
                        PortKind::Read
                    },
                    secret: (flags & 2 != 0).then(|| SECRET.to_vec()),
                    reads: workers.reads.clone(),
                    writes: workers.writes.clone(),
                    metrics: metrics.clone(),
                    inline_reads: (flags & 8 != 0).then(|| backend.clone()),
                })
            })
            .collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        World {
            rt,
            contexts,
            store: Mutex::new(store),
            _workers: workers,
            _dir: dir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else {
        return;
    };
    let w = world();
    let mut store = w.store.lock().unwrap_or_else(|p| p.into_inner());
    let version_before = store.data_version();
    let ctx = w.contexts[usize::from(flags & 3 | (flags & 8) >> 1)].clone();
    let max_line = if flags & 4 != 0 {
        SMALL_LINE_LIMIT
    } else {
        1 << 20
    };
    let (out, close) = w.rt.block_on(one_connection(ctx.clone(), input, max_line));
    check_responses(input, &out, close, max_line);

    let wrote = store.data_version() != version_before;
    if wrote {
        let may_write =
            ctx.kind == PortKind::Write && (ctx.secret.is_none() || sends_secret(input));
        assert!(may_write, "data changed through a port that may not write");
        store.reset();
    }
});

/// Runs hsd's connection loop on `input` as one client; returns everything
/// hsd sent back and why the connection ended.
async fn one_connection(
    ctx: Arc<ListenerContext>,
    input: &[u8],
    max_line: usize,
) -> (Vec<u8>, Close) {
    let (client, server) = tokio::io::duplex(16 * 1024);
    let (mut rd, mut wr) = tokio::io::split(client);
    // The trigger must outlive the connection: dropping it means shutdown.
    let (trigger, shutdown) = hsd::shutdown::channel();
    let limits = ConnectionLimits {
        max_line,
        idle_timeout: None,
    };
    let serve = connection::serve(server, Session::new(ctx), limits, shutdown);
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
    drop(trigger);
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
