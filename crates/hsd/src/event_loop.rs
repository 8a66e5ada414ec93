//! Event loops: threads that each own their client connections and the
//! storage connections serving them (the thread map is in `dispatch`).
//!
//! The main thread accepts and hands each socket to a loop; from then on
//! everything about that connection happens on the loop's thread. On
//! shutdown a loop lets its connections finish the requests they read, up
//! to the drain timeout, closes whatever is left, then lets its committer
//! commit what it holds (for at most `SHUTDOWN_GRACE`).

use crate::admission::Place;
use crate::connection::{self, Close};
use crate::dispatch::Dispatcher;
use crate::exec::Answer;
use crate::port::Port;
use crate::session::Session;
use crate::shared::Shared;
use crate::shutdown::Shutdown;
use hs_proto::ResponseWriter;
use hsd_storage::Backend;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// How long queued writes may take to finish after the drain.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// How long a client may take to complete its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// An accepted connection on its way to a loop.
pub(crate) struct Incoming {
    pub(crate) stream: std::net::TcpStream,
    pub(crate) peer: SocketAddr,
    /// Its place among newcomers, later its seat (see `admission`).
    pub(crate) place: Place,
}

/// A protocol front: what a loop's connections speak, served over a
/// stream (plain TCP or TLS) until it closes. HandlerSocket's is
/// `HandlerSocket`; memcached's is `memcached::Memcached`.
#[allow(async_fn_in_trait)]
pub(crate) trait Front<B: Backend>: Send + 'static {
    /// The answers its requests get from the executor.
    type Answer: Answer;

    /// Serves one connection, from `peer`, to its end.
    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
        peer: SocketAddr,
        port: &Rc<Port>,
        dispatcher: Rc<Dispatcher<B, Self::Answer>>,
        place: Place,
        shutdown: Shutdown,
    ) -> Close;

    /// Work of the front's own that runs on the loop beside its
    /// connections, until shutdown (memcached's sweep of expired rows);
    /// none unless a front has some.
    async fn beside(&self, _dispatcher: Rc<Dispatcher<B, Self::Answer>>, _shutdown: Shutdown) {}
}

/// HandlerSocket's front: lines framed by `connection`, run by `Session`.
pub(crate) struct HandlerSocket;

impl<B: Backend> Front<B> for HandlerSocket {
    type Answer = ResponseWriter;

    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
        _peer: SocketAddr,
        port: &Rc<Port>,
        dispatcher: Rc<Dispatcher<B, ResponseWriter>>,
        place: Place,
        shutdown: Shutdown,
    ) -> Close {
        let session = Session::new(port.clone(), dispatcher);
        connection::serve(stream, session, port.limits.clone(), place, shutdown).await
    }
}

/// The main thread's handle on a loop.
pub(crate) struct EventLoop {
    tx: mpsc::UnboundedSender<Incoming>,
    connections: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl EventLoop {
    pub(crate) fn spawn<B: Backend, F: Front<B>>(
        name: String,
        front: F,
        port: Port,
        shared: Shared<B>,
        shutdown: Shutdown,
    ) -> std::io::Result<EventLoop> {
        let (tx, rx) = mpsc::unbounded_channel();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        let thread = std::thread::Builder::new().name(name.clone()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, loop_name = %name, "cannot start an event loop");
                    return;
                }
            };
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, run_loop(front, port, shared, rx, count, shutdown));
        })?;
        Ok(EventLoop {
            tx,
            connections,
            thread: Some(thread),
        })
    }

    /// Client connections the loop holds now.
    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Gives the loop a new connection.
    pub(crate) fn hand(&self, incoming: Incoming) -> Result<(), Incoming> {
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.tx.send(incoming).map_err(|e| {
            self.connections.fetch_sub(1, Ordering::Relaxed);
            e.0
        })
    }

    /// Waits for the loop's thread to end (after shutdown).
    pub(crate) fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn run_loop<B: Backend, F: Front<B>>(
    front: F,
    port: Port,
    shared: Shared<B>,
    mut rx: mpsc::UnboundedReceiver<Incoming>,
    count: Arc<AtomicUsize>,
    mut shutdown: Shutdown,
) {
    let dispatcher = Rc::new(Dispatcher::new(port.kind, shared.clone()));
    let front = Rc::new(front);
    // The loop's own copy of the shutdown signal: its connections check it
    // on every request, and a channel of their own keeps those checks off
    // the cache lines every other loop's connections use.
    let (relay, local) = crate::shutdown::channel();
    let mut global = shutdown.clone();
    tokio::task::spawn_local(async move {
        global.recv().await;
        relay.trigger();
    });
    {
        let (front, dispatcher, local) = (front.clone(), dispatcher.clone(), local.clone());
        tokio::task::spawn_local(async move { front.beside(dispatcher, local).await });
    }
    let metrics = shared.metrics.clone();
    let drain = port.drain;
    let port = Rc::new(port);
    let mut clients = JoinSet::new();
    loop {
        tokio::select! {
            incoming = rx.recv() => match incoming {
                Some(incoming) => {
                    clients.spawn_local(serve_client(
                        front.clone(),
                        incoming,
                        port.clone(),
                        dispatcher.clone(),
                        metrics.clone(),
                        local.clone(),
                        count.clone(),
                    ));
                }
                None => break,
            },
            _ = shutdown.recv() => break,
            Some(_) = clients.join_next(), if !clients.is_empty() => {}
        }
    }
    // Connections see the shutdown too: each finishes what it read.
    let drained = tokio::time::timeout(drain, async {
        while clients.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            open = clients.len(),
            "connections still busy after the drain timeout; closing them"
        );
        clients.abort_all();
        while clients.join_next().await.is_some() {}
    }
    // What is queued still runs and commits; a write that would run on
    // (a walk within its budget, a stalled server) is dropped after a
    // moment, uncommitted and unanswered, so shutdown ends within the drain
    // timeout and this grace.
    if tokio::time::timeout(SHUTDOWN_GRACE, dispatcher.shut_down())
        .await
        .is_err()
    {
        tracing::warn!(
            "writes still running {SHUTDOWN_GRACE:?} after the drain; stopping them uncommitted"
        );
    }
}

async fn serve_client<B: Backend, F: Front<B>>(
    front: Rc<F>,
    incoming: Incoming,
    port: Rc<Port>,
    dispatcher: Rc<Dispatcher<B, F::Answer>>,
    metrics: Arc<crate::metrics::Metrics>,
    shutdown: Shutdown,
    count: Arc<AtomicUsize>,
) {
    let Incoming {
        stream,
        peer,
        place,
    } = incoming;
    // Counted until the task ends, even when shutdown aborts it.
    let _open = OpenConnection::new(metrics.clone(), count);
    let why = match stream
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpStream::from_std(stream))
    {
        Ok(stream) => {
            let _ = stream.set_nodelay(true);
            match port.tls.clone() {
                None => {
                    front
                        .serve(stream, peer, &port, dispatcher, place, shutdown)
                        .await
                }
                Some(acceptor) => {
                    // A newcomer still: it can be pushed out mid-handshake.
                    let handshake = tokio::select! {
                        r = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => r.ok(),
                        _ = place.pushed_out() => None,
                    };
                    match handshake {
                        Some(Ok(tls)) => {
                            front
                                .serve(tls, peer, &port, dispatcher, place, shutdown)
                                .await
                        }
                        _ => {
                            tracing::debug!(%peer, "TLS handshake failed or pushed out");
                            Close::Io
                        }
                    }
                }
            }
        }
        Err(e) => {
            tracing::debug!(%peer, error = %e, "cannot register the connection");
            Close::Io
        }
    };
    if why == Close::NoSeat {
        metrics.refused_connections.inc();
    }
    tracing::debug!(%peer, ?why, "connection closed");
}

/// A client connection's place in the counts, given back on drop.
struct OpenConnection {
    metrics: Arc<crate::metrics::Metrics>,
    count: Arc<AtomicUsize>,
}

impl OpenConnection {
    fn new(metrics: Arc<crate::metrics::Metrics>, count: Arc<AtomicUsize>) -> OpenConnection {
        metrics.open_connections.inc();
        OpenConnection { metrics, count }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.metrics.open_connections.dec();
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}
