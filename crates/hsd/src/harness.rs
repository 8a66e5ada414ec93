//! hsd's request path in one process, without sockets, for the fuzz
//! targets: one event loop's read and write dispatchers over the embedded
//! store, and a client connection served on any byte stream exactly as the
//! server serves a socket (framing, session, dispatcher, executor, group
//! committer, SQLite).

use crate::admission::Admission;
use crate::dispatch::Dispatcher;
use crate::exec::Catalog;
use crate::limits::{ConnectionLimits, MemoryBudget};
use crate::metrics::Metrics;
use crate::port::{Port, PortKind};
use crate::session::Session;
use crate::shared::Shared;
use hs_proto::ResponseWriter;
use hsd_sqlite::{SqliteBackend, Synchronous};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

pub use crate::connection::Close;

pub use crate::session::MAX_AUTH_FAILURES;

/// Opens `<dir>/<db>.sqlite`, creating it, as hsd opens its files (WAL
/// mode): the fuzz targets' side connection to the store.
pub fn open_store_file(data_dir: &Path, db: &str) -> anyhow::Result<rusqlite::Connection> {
    hsd_sqlite::open_db(data_dir, db, true, Synchronous::Off)
        .map_err(|e| anyhow::anyhow!("opening {db} in {}: {e}", data_dir.display()))
}

/// One event loop's storage side over `<dir>/<db>.sqlite` files.
pub struct Harness {
    read: Rc<Dispatcher<SqliteBackend, ResponseWriter>>,
    write: Rc<Dispatcher<SqliteBackend, ResponseWriter>>,
}

/// How the port a connection comes in on is set up.
#[derive(Debug, Clone, Copy)]
pub struct PortSetup<'a> {
    pub write: bool,
    pub secret: Option<&'a [u8]>,
    pub max_line: usize,
}

impl Harness {
    /// Must be called inside a `LocalSet`: the dispatchers start the loop's
    /// tasks there.
    pub fn new(data_dir: &Path) -> anyhow::Result<Harness> {
        let shared = Shared {
            backend: Arc::new(SqliteBackend::new(data_dir, Synchronous::Off)),
            catalog: Arc::new(Catalog::default()),
            metrics: Metrics::new()?,
            max_response_bytes: 1 << 20,
            walk_time: Some(Duration::from_secs(5)),
            // Long scans on the loop's own links: one process, one thread.
            read_threads: None,
            write_groups: 1,
        };
        Ok(Harness {
            read: Rc::new(Dispatcher::new(PortKind::Read, shared.clone())),
            write: Rc::new(Dispatcher::new(PortKind::Write, shared)),
        })
    }

    /// Serves one client on `stream` until it closes; why it ended.
    pub async fn serve<S>(&self, stream: S, setup: PortSetup<'_>) -> Close
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let limits = ConnectionLimits {
            max_line: setup.max_line,
            idle_timeout: None,
            line_timeout: None,
            auth_timeout: None,
            input_budget: Arc::new(MemoryBudget::new(64 << 20)),
            output_budget: Arc::new(MemoryBudget::new(64 << 20)),
        };
        let (kind, dispatcher) = if setup.write {
            (PortKind::Write, self.write.clone())
        } else {
            (PortKind::Read, self.read.clone())
        };
        let port = Rc::new(Port::new(
            kind,
            setup.secret,
            limits.clone(),
            None,
            Duration::from_secs(1),
        ));
        let session = Session::new(port, dispatcher);
        let Ok(place) = Admission::new(1, None)
            .welcome(kind, std::net::Ipv4Addr::LOCALHOST.into())
            .await
        else {
            return Close::NoSeat;
        };
        // The trigger must outlive the connection: dropping it means shutdown.
        let (_trigger, shutdown) = crate::shutdown::channel();
        crate::connection::serve(stream, session, limits, place, shutdown).await
    }
}
