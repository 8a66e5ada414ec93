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
//! - Several MySQL servers (`--replica`): the backend's topology
//!   (`backend::mysql::topology`) knows which server takes writes and how
//!   far each has applied. The write port's connections follow the writer
//!   (between groups). With `--read-from replicas`, a read loop's batcher
//!   asks the topology where each batch runs: a replica that has applied
//!   every write hsd acknowledged before the batch's finds arrived, else
//!   (after `--replica-wait`) the primary; finds a server failed for being
//!   unreachable run again elsewhere (`read_batch`).
//!
//! Work for storage yields to the loop's other connections: the read
//! batcher and committer take bounded batches, inline finds spend tokio's
//! cooperative budget, and an embedded-store scan hands the thread back
//! every couple of milliseconds.

use crate::backend::mysql::topology::ReadFrom;
use crate::backend::{Backend, OpenedIndex, ReadPlacement};
use crate::exec::{self, ReadTask, WriteTask};
use crate::group_commit::GroupCommitter;
use crate::job_queue::unavailable;
use crate::metrics::Metrics;
use crate::port::PortKind;
use crate::read_batch::ReadBatcher;
use crate::shared::Shared;
use crate::storage_pool::StoragePool;
use hs_proto::{ErrorKind, OpenIndexRequest, ResponseWriter};
use std::rc::Rc;
use std::sync::Arc;

/// One event loop's way to storage.
pub(crate) struct Dispatcher<B: Backend> {
    shared: Shared<B>,
    reads: ReadPath<B::Storage>,
    writes: Option<GroupCommitter>,
}

enum ReadPath<C> {
    Inline(Rc<StoragePool<C>>),
    Batched(ReadBatcher),
}

impl<B: Backend> Dispatcher<B> {
    /// Builds the loop's storage side; must run inside the loop's `LocalSet`
    /// (it starts the batcher and committer tasks there).
    pub(crate) fn new(kind: PortKind, shared: Shared<B>) -> Dispatcher<B> {
        let reads = match shared.backend.read_placement() {
            ReadPlacement::Inline => ReadPath::Inline(StoragePool::start()),
            ReadPlacement::Batched { links } => match shared.backend.topology() {
                Some(topology)
                    if kind == PortKind::Read && topology.read_from() == ReadFrom::Replicas =>
                {
                    ReadPath::Batched(ReadBatcher::start_routed(shared.clone(), links, topology))
                }
                _ => ReadPath::Batched(ReadBatcher::start(shared.clone(), links)),
            },
        };
        let writes = (kind == PortKind::Write).then(|| GroupCommitter::start(shared.clone()));
        Dispatcher {
            shared,
            reads,
            writes,
        }
    }

    /// Resolves a `P`.
    pub(crate) async fn open(&self, req: OpenIndexRequest) -> Result<Arc<OpenedIndex>, ErrorKind> {
        match &self.reads {
            ReadPath::Inline(pool) => {
                let Some((mut storage, _in_use)) = pool.checkout(&*self.shared.backend).await
                else {
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
    pub(crate) async fn reads(&self, mut tasks: Vec<ReadTask>) -> Vec<ResponseWriter> {
        match &self.reads {
            ReadPath::Inline(pool) => {
                // Give the loop's other connections a turn now and then.
                tokio::task::consume_budget().await;
                match pool.checkout(&*self.shared.backend).await {
                    Some((mut storage, _in_use)) => {
                        exec::run_reads(&mut storage, &mut tasks, self.shared.max_response_bytes)
                            .await;
                        pool.checkin(storage);
                    }
                    None => {
                        let answers = unavailable(tasks.len());
                        for (t, answer) in tasks.iter_mut().zip(answers) {
                            t.out = answer;
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
    pub(crate) async fn writes(&self, tasks: Vec<WriteTask>) -> Option<Vec<ResponseWriter>> {
        match &self.writes {
            Some(committer) => Some(committer.run(tasks).await),
            None => None,
        }
    }

    /// What every loop shares: the metrics live there.
    pub(crate) fn metrics(&self) -> &Arc<Metrics> {
        &self.shared.metrics
    }

    /// Finishes queued work: the batcher and committer run what they hold,
    /// commit, and stop.
    pub(crate) async fn shut_down(&self) {
        if let ReadPath::Batched(b) = &self.reads {
            b.shut_down().await;
        }
        if let Some(c) = &self.writes {
            c.shut_down().await;
        }
    }
}
