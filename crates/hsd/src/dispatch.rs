//! Where every request runs: the one place that decides it.
//!
//! # The thread map
//!
//! ```text
//! hsd          the process's first thread: signals, the accept loops of
//!              every port, the admin endpoint. Hands each accepted socket
//!              to the event loop with the fewest connections of its port
//!              (once per connection).
//! hsd-read-N   --threads event loops for the read port.
//! hsd-write-N  --threads-wr event loops for the write port.
//! hsd-mc-N     with --memcached-address: --threads event loops for the
//!              memcached port (`memcached`).
//! hsd-scan-N   embedded store: long finds, shared by every loop
//!              (`read_threads`).
//! hsd-sync     embedded store: the sync step of large write groups
//!              (`group_commit`).
//! hsd-checkpoint  embedded store: WAL checkpoints, one connection per db
//!              (`hsd_sqlite::wal_sync`).
//! hsd-topology MySQL with --replica: polls every server's role and
//!              position (`hsd_mysql::topology`).
//! hsd-binlog   MySQL with --row-cache-mib: the change feed (the binary log
//!              reader, the events applied to the cache, the position
//!              asker, the verifier, the follower of the primary;
//!              `hsd_mysql::cache`).
//! ```
//!
//! An event loop is a thread with its own single-threaded runtime. It owns
//! its client connections and its storage connections, and runs everything
//! of theirs itself, so a lookup never changes threads on its way through
//! hsd:
//!
//! - `P` and short finds (`exec::is_short`: a lookup by a whole unique key,
//!   a scan of a few rows without filters): through the loop's read
//!   batcher. Each of its `links` tasks owns a storage connection and,
//!   whenever it is free, takes everything the loop's connections queued
//!   meanwhile and runs it as one batch, as the original's loop runs every
//!   ready connection's requests in one pass: on MySQL grouped lookups in
//!   one round trip, on the embedded store one read transaction and one
//!   pass for all. A lone request runs at once: nothing waits for company.
//! - Long finds (filters, IN lists and ranges that may walk many rows): on
//!   MySQL, through a second batcher on links of their own, one client
//!   batch at a time; on the embedded store, on the `hsd-scan-N` threads
//!   that every loop shares (`read_threads`), so that a scan never holds a
//!   loop's thread. Either way they never share a batch with lookups.
//! - Writes (write loops only): through the loop's group committer, one task
//!   owning one storage connection, which runs every write queued meanwhile
//!   in one transaction, commits once, and only then answers; on MySQL
//!   `--write-groups` such tasks, one running its group's statements while
//!   the others wait on their COMMIT (`group_commit`).
//! - Where a batcher's finds run is its backend's read router's to say
//!   (`hsd_storage::ReadRouter`), asked once per batch: for the read port's
//!   finds (`ReadSide::Reads`) it may send them to any place that has seen
//!   every write hsd acknowledged before they arrived (with MySQL and
//!   `--read-from replicas`: a replica, else after `--replica-wait` the
//!   primary); the write port's run where writes go. Finds a place failed
//!   for being unreachable run again elsewhere (`read_batch`). With several
//!   MySQL servers the write port's connections follow the one that takes
//!   writes (between groups, `hsd_mysql::topology`).
//!
//! Work for storage yields to the loop's other connections: the batchers
//! and the committer take bounded batches, and a modify walk or an embedded
//! store scan hands the thread back every couple of milliseconds.

use crate::exec::{self, failure, Answer, ReadTask, WriteTask};
use crate::group_commit::GroupCommitter;
use crate::metrics::Metrics;
use crate::port::PortKind;
use crate::read_batch::{BatchOf, ReadBatcher};
use crate::read_threads::ReadThreads;
use crate::shared::Shared;
use hs_proto::{ErrorKind, OpenIndexRequest};
use hsd_storage::{Backend, LongReads, OpenedIndex, ReadSide};
use std::sync::Arc;

/// One event loop's way to storage.
pub(crate) struct Dispatcher<B: Backend, A: Answer> {
    shared: Shared<B>,
    short_reads: ReadBatcher<B, A>,
    long_reads: LongReadPath<B, A>,
    writes: Option<GroupCommitter<A>>,
}

enum LongReadPath<B: Backend, A: Answer> {
    Links(ReadBatcher<B, A>),
    Threads(Arc<ReadThreads<B>>),
}

impl<B: Backend, A: Answer> Dispatcher<B, A> {
    /// Builds the loop's storage side; must run inside the loop's `LocalSet`
    /// (it starts the batchers' and the committer's tasks there).
    pub(crate) fn new(kind: PortKind, shared: Shared<B>) -> Dispatcher<B, A> {
        let placement = shared.backend.read_placement();
        // The backend routes the read port's finds as it was told to
        // (`--read-from`); the write port's run where its writes go.
        let side = match kind {
            PortKind::Read | PortKind::Memcached => ReadSide::Reads,
            PortKind::Write => ReadSide::Writes,
        };
        let router = shared.backend.read_router(side);
        let batcher = |links: usize, batch: BatchOf| {
            ReadBatcher::start(shared.clone(), links, batch, router.clone())
        };
        let short_reads = batcher(placement.links, BatchOf::Many);
        let long_reads = match (placement.long_reads, &shared.read_threads) {
            (LongReads::Threads(_), Some(threads)) => LongReadPath::Threads(threads.clone()),
            (LongReads::Links(links), _) | (LongReads::Threads(links), None) => {
                LongReadPath::Links(batcher(links, BatchOf::One))
            }
        };
        let writes = (kind != PortKind::Read).then(|| GroupCommitter::start(shared.clone()));
        Dispatcher {
            shared,
            short_reads,
            long_reads,
            writes,
        }
    }

    /// Resolves a `P`.
    pub(crate) async fn open(&self, req: OpenIndexRequest) -> Result<Arc<OpenedIndex>, ErrorKind> {
        self.short_reads.open(req).await
    }

    /// Runs finds that arrived together on one client connection; returns
    /// their answers, in order. They go where the longest of them belongs.
    pub(crate) async fn reads(&self, tasks: Vec<ReadTask<A>>) -> Vec<A> {
        if tasks.iter().all(exec::is_short) {
            return self.short_reads.reads(tasks).await;
        }
        match &self.long_reads {
            LongReadPath::Links(batcher) => batcher.reads(tasks).await,
            LongReadPath::Threads(threads) => threads.reads(tasks).await,
        }
    }

    /// Runs writes that arrived together on one client connection; returns
    /// their answers once committed. A read loop has no committer: the
    /// session refuses writes on the read port before they get here, and
    /// any that did would be refused the same way.
    pub(crate) async fn writes(&self, tasks: Vec<WriteTask>) -> Vec<A> {
        match &self.writes {
            Some(committer) => committer.run(tasks).await,
            None => tasks.iter().map(|_| failure(ErrorKind::ReadOnly)).collect(),
        }
    }

    /// What every loop shares: the metrics live there.
    pub(crate) fn metrics(&self) -> &Arc<Metrics> {
        &self.shared.metrics
    }

    /// Finishes queued work: the batchers and the committer run what they
    /// hold, commit, and stop. (The shared scan threads stop with the
    /// server.)
    pub(crate) async fn shut_down(&self) {
        self.short_reads.shut_down().await;
        if let LongReadPath::Links(batcher) = &self.long_reads {
            batcher.shut_down().await;
        }
        if let Some(c) = &self.writes {
            c.shut_down().await;
        }
    }
}
