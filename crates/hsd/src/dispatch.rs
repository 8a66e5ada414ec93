//! Where every request runs: the one place that decides it.
//!
//! # The thread map
//!
//! ```text
//! hsd-main     signals, the accept loops of both ports, the admin endpoint.
//!              Hands each accepted socket to the event loop with the fewest
//!              connections of its port (once per connection).
//! hsd-read-N   --threads event loops for the read port.
//! hsd-write-N  --threads-wr event loops for the write port.
//! ```
//!
//! An event loop is a thread with its own single-threaded runtime. It owns
//! its client connections and its storage connections, and runs everything
//! of theirs itself, so a request never changes threads on its way through
//! hsd:
//!
//! - `P` and finds: on the embedded store, in the client connection's own
//!   task, at once, on a storage connection checked out of the loop's pool
//!   (finds a connection pipelined share one read transaction). On MySQL,
//!   through the loop's read batcher: each of its `links` tasks owns a
//!   server connection and, whenever it is free, takes everything the
//!   loop's connections queued meanwhile and runs it as one batch (grouped
//!   lookups, one round trip). A lone request runs at once.
//! - Writes (write loops only): through the loop's group committer, one task
//!   owning one storage connection, which runs every write queued meanwhile
//!   in one transaction, commits once, and only then answers.
//!
//! Work for storage yields to the loop's other connections: the read
//! batcher and committer take bounded batches, inline finds spend tokio's
//! cooperative budget, and an embedded-store scan hands the thread back
//! every couple of milliseconds.

use crate::backend::{Backend, OpenedIndex, ReadPlacement, StorageConn, ERR_UNAVAILABLE};
use crate::exec::{self, Catalog, ReadTask, WriteTask};
use crate::group_commit::GroupCommitter;
use crate::metrics::Metrics;
use crate::read_batch::ReadBatcher;
use hs_proto::{ErrorKind, OpenIndexRequest, ResponseWriter};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Which port an event loop serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// Finds only; writes answer `readonly`.
    Read,
    Write,
}

/// What every event loop shares.
pub struct Shared<B: Backend> {
    pub backend: Arc<B>,
    pub catalog: Arc<Catalog>,
    pub metrics: Arc<Metrics>,
    /// `--max-response-bytes`: what the answers of one client batch of
    /// finds may hold together.
    pub max_response_bytes: usize,
}

impl<B: Backend> Clone for Shared<B> {
    fn clone(&self) -> Self {
        Shared {
            backend: self.backend.clone(),
            catalog: self.catalog.clone(),
            metrics: self.metrics.clone(),
            max_response_bytes: self.max_response_bytes,
        }
    }
}

/// One event loop's way to storage.
pub struct Dispatcher<B: Backend> {
    shared: Shared<B>,
    reads: ReadPath<B::Storage>,
    writes: Option<GroupCommitter<B::Storage>>,
}

enum ReadPath<C> {
    Inline(Rc<StoragePool<C>>),
    Batched(ReadBatcher<C>),
}

/// Storage connections of the loop for inline work; one is checked out per
/// running request batch (usually just one exists). At most `POOL_MAX` are
/// in use at once: long scans hand the thread back mid-way, and without a
/// bound a thousand clients' scans would each hold a storage connection
/// (its page cache, its mapping of the file) and a half-built answer. A
/// keeper task gives back what an idle connection must not hold (see
/// `StorageConn::idle_deadline`).
struct StoragePool<C> {
    idle: RefCell<Vec<C>>,
    in_use: Arc<Semaphore>,
    keeper: Notify,
    /// The keeper sleeps until a deadline already (a checked-in connection
    /// then needs no wake-up: the keeper looks again when it wakes).
    keeper_armed: std::cell::Cell<bool>,
}

/// Most connections a pool has in use at once, and keeps idle.
const POOL_MAX: usize = 4;

impl<B: Backend> Dispatcher<B> {
    /// Builds the loop's storage side; must run inside the loop's `LocalSet`
    /// (it starts the batcher and committer tasks there).
    pub fn new(kind: PortKind, shared: Shared<B>) -> Dispatcher<B> {
        let reads = match shared.backend.read_placement() {
            ReadPlacement::Inline => {
                let pool = Rc::new(StoragePool {
                    idle: RefCell::new(Vec::new()),
                    in_use: Arc::new(Semaphore::new(POOL_MAX)),
                    keeper: Notify::new(),
                    keeper_armed: std::cell::Cell::new(false),
                });
                tokio::task::spawn_local(keep(pool.clone()));
                ReadPath::Inline(pool)
            }
            ReadPlacement::Batched { links } => {
                ReadPath::Batched(ReadBatcher::start(shared.clone(), links))
            }
        };
        let writes = (kind == PortKind::Write).then(|| GroupCommitter::start(shared.clone()));
        Dispatcher {
            shared,
            reads,
            writes,
        }
    }

    /// Resolves a `P`.
    pub async fn open(&self, req: OpenIndexRequest) -> Result<Arc<OpenedIndex>, ErrorKind> {
        match &self.reads {
            ReadPath::Inline(pool) => {
                let Some((mut storage, _in_use)) = pool.checkout(&self.shared).await else {
                    return Err(ErrorKind::OpenTable);
                };
                let result = exec::open_index(&mut storage, &self.shared.catalog, &req).await;
                pool.checkin(storage);
                result
            }
            ReadPath::Batched(batcher) => batcher.open(req).await,
        }
    }

    /// Runs finds that arrived together on one client connection; returns
    /// their answers, in order.
    pub async fn reads(&self, mut tasks: Vec<ReadTask>) -> Vec<ResponseWriter> {
        match &self.reads {
            ReadPath::Inline(pool) => {
                // Give the loop's other connections a turn now and then.
                tokio::task::consume_budget().await;
                match pool.checkout(&self.shared).await {
                    Some((mut storage, _in_use)) => {
                        exec::run_reads(&mut storage, &mut tasks, self.shared.max_response_bytes)
                            .await;
                        pool.checkin(storage);
                    }
                    None => {
                        for t in &mut tasks {
                            t.out.error(ErrorKind::Storage(ERR_UNAVAILABLE));
                        }
                    }
                }
                tasks.into_iter().map(|t| t.out).collect()
            }
            ReadPath::Batched(batcher) => batcher.reads(tasks).await,
        }
    }

    /// Runs writes that arrived together on one client connection; returns
    /// their answers once committed. `None` on a read loop.
    pub async fn writes(&self, tasks: Vec<WriteTask>) -> Option<Vec<ResponseWriter>> {
        match &self.writes {
            Some(committer) => Some(committer.run(tasks).await),
            None => None,
        }
    }

    /// Finishes queued work: the batcher and committer run what they hold,
    /// commit, and stop.
    pub async fn shut_down(&self) {
        if let ReadPath::Batched(b) = &self.reads {
            b.shut_down().await;
        }
        if let Some(c) = &self.writes {
            c.shut_down().await;
        }
    }
}

impl<C: StorageConn> StoragePool<C> {
    /// A connection and its place among those in use (hold it until the
    /// connection is checked in).
    async fn checkout<B: Backend<Storage = C>>(
        &self,
        shared: &Shared<B>,
    ) -> Option<(C, OwnedSemaphorePermit)> {
        let in_use = self.in_use.clone().acquire_owned().await.ok()?;
        let idle = self.idle.borrow_mut().pop();
        match idle {
            Some(c) => Some((c, in_use)),
            None => match shared.backend.connect().await {
                Ok(c) => Some((c, in_use)),
                Err(e) => {
                    tracing::warn!(error = %e, target = %shared.backend.describe_target(), "cannot connect to storage");
                    None
                }
            },
        }
    }

    fn checkin(&self, storage: C) {
        let holds = storage.idle_deadline().is_some();
        let mut idle = self.idle.borrow_mut();
        if idle.len() < POOL_MAX {
            idle.push(storage);
            if holds && !self.keeper_armed.get() {
                self.keeper.notify_one();
            }
        }
    }
}

/// The pool's keeper: at each idle connection's deadline, has it give back
/// what it holds. Lives as long as the event loop.
async fn keep<C: StorageConn>(pool: Rc<StoragePool<C>>) {
    loop {
        let woken = pool.keeper.notified();
        let next = pool
            .idle
            .borrow()
            .iter()
            .filter_map(StorageConn::idle_deadline)
            .min();
        match next {
            Some(at) => {
                pool.keeper_armed.set(true);
                tokio::select! {
                    _ = woken => {}
                    _ = tokio::time::sleep_until(at.into()) => {}
                }
                pool.keeper_armed.set(false);
            }
            None => woken.await,
        }
        let now = std::time::Instant::now();
        let due: Vec<C> = {
            let mut idle = pool.idle.borrow_mut();
            let (due, keep): (Vec<C>, Vec<C>) = idle
                .drain(..)
                .partition(|c| c.idle_deadline().is_some_and(|at| at <= now));
            *idle = keep;
            due
        };
        for mut c in due {
            c.release_idle().await;
            pool.idle.borrow_mut().push(c);
        }
    }
}
