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
//!   (between groups). With `--read-from replicas`, a read loop has a read
//!   batcher per server, and each client batch of finds goes to the one the
//!   topology names for it: a replica that has applied every write hsd
//!   acknowledged before the batch arrived, else (after `--replica-wait`)
//!   the primary. Finds a server failed for being unreachable run again
//!   elsewhere, so a replica going down costs clients no error.
//!
//! Work for storage yields to the loop's other connections: the read
//! batcher and committer take bounded batches, inline finds spend tokio's
//! cooperative budget, and an embedded-store scan hands the thread back
//! every couple of milliseconds.

use crate::backend::mysql::topology::gtid::Position;
use crate::backend::mysql::topology::{ReadFrom, Topology};
use crate::backend::{Backend, OpenedIndex, ReadPlacement, StorageError, ERR_UNAVAILABLE};
use crate::exec::{self, ReadTask, WriteTask};
use crate::group_commit::GroupCommitter;
use crate::job_queue::{error_answer, unavailable};
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
    /// The read port with `--read-from replicas`: a batcher per server.
    Routed {
        topology: Arc<Topology>,
        batchers: Vec<ReadBatcher>,
    },
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
                    let batchers = (0..topology.server_count())
                        .map(|i| ReadBatcher::start_on(shared.clone(), links, Some(i)))
                        .collect();
                    ReadPath::Routed { topology, batchers }
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
            ReadPath::Routed { topology, batchers } => {
                // Metadata needs no particular position: any usable server.
                let route = topology.route_read(&Position::default(), 0).await;
                let at = route.server;
                match batchers[at].open(req.clone()).await {
                    Ok(index) => Ok(index),
                    // Perhaps the server went away: the primary decides.
                    Err(e) => {
                        drop(route);
                        let primary = topology.read_primary();
                        if primary == at {
                            return Err(e);
                        }
                        batchers[primary].open(req).await
                    }
                }
            }
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
            ReadPath::Routed { topology, batchers } => {
                routed_reads(topology, batchers, tasks).await
            }
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
        match &self.reads {
            ReadPath::Batched(b) => b.shut_down().await,
            ReadPath::Routed { batchers, .. } => {
                for b in batchers {
                    b.shut_down().await;
                }
            }
            ReadPath::Inline(_) => {}
        }
        if let Some(c) = &self.writes {
            c.shut_down().await;
        }
    }
}

/// Runs a client batch of finds where the topology says: on a server that
/// has applied every write hsd acknowledged before the batch arrived (the
/// frontier, taken now: the batch arrived before this point). Finds that a
/// server failed for being unreachable (`1 1 2013`) run again elsewhere, at
/// most once per server; the topology leaves that server out meanwhile.
async fn routed_reads(
    topology: &Arc<Topology>,
    batchers: &[ReadBatcher],
    tasks: Vec<ReadTask>,
) -> Vec<ResponseWriter> {
    let frontier = topology.frontier();
    let n = tasks.len();
    let mut answers: Vec<Option<ResponseWriter>> = (0..n).map(|_| None).collect();
    let mut pending: Vec<(usize, ReadTask)> = tasks.into_iter().enumerate().collect();
    for attempt in 0..=batchers.len() {
        let route = topology.route_read(&frontier, pending.len()).await;
        let (slots, batch): (Vec<usize>, Vec<ReadTask>) = pending.into_iter().unzip();
        let Some(done) = batchers[route.server].run(batch).await else {
            // Shutting down: nothing ran.
            break;
        };
        let mut again = Vec::new();
        for (slot, mut task) in slots.into_iter().zip(done) {
            if is_unreachable(&task.out) && attempt < batchers.len() {
                task.out.clear();
                again.push((slot, task));
            } else {
                answers[slot] = Some(task.out);
            }
        }
        if again.is_empty() {
            break;
        }
        topology.note_unreachable(
            route.server,
            &StorageError::Unavailable("finds failed with 2013".into()),
        );
        pending = again;
    }
    // Not run (shutting down): unavailable.
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| error_answer(ERR_UNAVAILABLE)))
        .collect()
}

/// An answer saying the server could not be reached (`1 1 2013`).
fn is_unreachable(answer: &ResponseWriter) -> bool {
    answer.is_error() && answer.as_bytes() == UNREACHABLE_ANSWER
}

const UNREACHABLE_ANSWER: &[u8] = b"1\t1\t2013\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unreachable_answer_is_the_unavailable_error() {
        assert_eq!(error_answer(ERR_UNAVAILABLE).as_bytes(), UNREACHABLE_ANSWER);
        assert!(is_unreachable(&error_answer(ERR_UNAVAILABLE)));
        assert!(!is_unreachable(&error_answer(1146)));
    }
}
