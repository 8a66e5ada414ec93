//! The threads where storage work runs, and the queues that feed them.
//!
//! Reads go to a pool of `threads` workers, each with its own database
//! connection. A worker takes every job already queued (from any number of
//! client connections) and runs their finds as one batch, so the backend can
//! group lookups. Writes go to the `GroupCommitter`: it takes every write job
//! already queued, runs them in one transaction, commits once, and only then
//! answers. Nobody waits for company: a lone job runs at once.

use crate::backend::{Backend, OpenedIndex, StorageConn, ERR_UNAVAILABLE};
use crate::exec::{self, Catalog, ReadTask, WriteTask};
use crate::metrics::Metrics;
use crossbeam_channel::{Receiver, Sender};
use hs_proto::{ErrorKind, OpenIndexRequest};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// Work for a read worker.
pub enum ReadJob {
    Open {
        req: OpenIndexRequest,
        reply: oneshot::Sender<Result<Arc<OpenedIndex>, ErrorKind>>,
    },
    Finds {
        tasks: Vec<ReadTask>,
        reply: oneshot::Sender<Vec<ReadTask>>,
    },
}

/// Writes from one connection that arrived together.
pub struct WriteJob {
    pub tasks: Vec<WriteTask>,
    pub reply: oneshot::Sender<Vec<WriteTask>>,
}

/// Most jobs one worker takes into a batch: bounds a batch's latency and memory.
const MAX_JOBS_PER_BATCH: usize = 256;

/// Handles to the worker threads; dropping the senders lets them drain and exit.
pub struct Workers {
    pub reads: Sender<ReadJob>,
    pub writes: Sender<WriteJob>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    pub fn start(
        backend: Arc<dyn Backend>,
        catalog: Arc<Catalog>,
        metrics: Arc<Metrics>,
        read_threads: usize,
        write_threads: usize,
    ) -> std::io::Result<Workers> {
        let (read_tx, read_rx) = crossbeam_channel::unbounded::<ReadJob>();
        let (write_tx, write_rx) = crossbeam_channel::unbounded::<WriteJob>();
        let mut threads = Vec::new();
        for i in 0..read_threads.max(1) {
            let (backend, catalog, rx) = (backend.clone(), catalog.clone(), read_rx.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hsd-read-{i}"))
                    .spawn(move || read_worker(backend, catalog, rx))?,
            );
        }
        for i in 0..write_threads.max(1) {
            let (backend, rx, metrics) = (backend.clone(), write_rx.clone(), metrics.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hsd-write-{i}"))
                    .spawn(move || GroupCommitter::new(backend, metrics).run(rx))?,
            );
        }
        Ok(Workers {
            reads: read_tx,
            writes: write_tx,
            threads,
        })
    }

    /// Closes the queues and waits until every queued job ran and committed.
    pub fn shutdown(self) {
        drop(self.reads);
        drop(self.writes);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// A connection made on first use and re-made after the database was down.
struct LazyConn {
    backend: Arc<dyn Backend>,
    conn: Option<Box<dyn StorageConn>>,
}

impl LazyConn {
    fn get(&mut self) -> Option<&mut Box<dyn StorageConn>> {
        if self.conn.is_none() {
            match self.backend.connect() {
                Ok(c) => self.conn = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, target = %self.backend.describe_target(), "cannot connect to storage");
                    return None;
                }
            }
        }
        self.conn.as_mut()
    }
}

fn read_worker(backend: Arc<dyn Backend>, catalog: Arc<Catalog>, rx: Receiver<ReadJob>) {
    let mut conn = LazyConn {
        backend,
        conn: None,
    };
    while let Ok(first) = rx.recv() {
        let mut opens = Vec::new();
        let mut finds: Vec<(Vec<ReadTask>, oneshot::Sender<Vec<ReadTask>>)> = Vec::new();
        let mut job = Some(first);
        while let Some(j) = job.take() {
            match j {
                ReadJob::Open { req, reply } => opens.push((req, reply)),
                ReadJob::Finds { tasks, reply } => finds.push((tasks, reply)),
            }
            if opens.len() + finds.len() < MAX_JOBS_PER_BATCH {
                job = rx.try_recv().ok();
            }
        }
        for (req, reply) in opens {
            let result = match conn.get() {
                Some(c) => exec::open_index(c.as_mut(), &catalog, &req),
                None => Err(ErrorKind::OpenTable),
            };
            let _ = reply.send(result);
        }
        if finds.is_empty() {
            continue;
        }
        let counts: Vec<usize> = finds.iter().map(|(t, _)| t.len()).collect();
        let mut all: Vec<ReadTask> = Vec::with_capacity(counts.iter().sum());
        let mut replies = Vec::with_capacity(finds.len());
        for (tasks, reply) in finds {
            all.extend(tasks);
            replies.push(reply);
        }
        match conn.get() {
            Some(c) => exec::run_reads(c.as_mut(), &mut all),
            None => {
                for t in &mut all {
                    t.out.error(ErrorKind::Storage(ERR_UNAVAILABLE));
                }
            }
        }
        let mut rest = all.into_iter();
        for (n, reply) in counts.into_iter().zip(replies) {
            let _ = reply.send(rest.by_ref().take(n).collect());
        }
    }
}

/// Most rows a batch may ask for and still run on a network thread; bigger
/// scans go to the read workers so they cannot stall other connections.
pub const INLINE_MAX_ROWS: u64 = 256;

thread_local! {
    /// This thread's connection for inline reads, tagged with its backend.
    static INLINE_CONN: std::cell::RefCell<Option<(usize, Box<dyn StorageConn>)>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs finds on the calling thread with a connection of its own. Returns
/// the tasks untouched (Err) when no connection could be made.
pub fn run_reads_inline(
    backend: &Arc<dyn Backend>,
    mut tasks: Vec<ReadTask>,
) -> Result<Vec<ReadTask>, Vec<ReadTask>> {
    let tag = Arc::as_ptr(backend) as *const () as usize;
    INLINE_CONN.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().map(|(t, _)| *t) != Some(tag) {
            match backend.connect() {
                Ok(c) => *slot = Some((tag, c)),
                Err(_) => return Err(tasks),
            }
        }
        match slot.as_mut() {
            Some((_, conn)) => {
                exec::run_reads(conn.as_mut(), &mut tasks);
                Ok(tasks)
            }
            None => Err(tasks),
        }
    })
}

/// Runs queued writes in shared transactions: one commit for many writes.
pub struct GroupCommitter {
    conn: LazyConn,
    metrics: Arc<Metrics>,
}

impl GroupCommitter {
    fn new(backend: Arc<dyn Backend>, metrics: Arc<Metrics>) -> Self {
        GroupCommitter {
            conn: LazyConn {
                backend,
                conn: None,
            },
            metrics,
        }
    }

    fn run(mut self, rx: Receiver<WriteJob>) {
        while let Ok(first) = rx.recv() {
            let mut jobs = vec![first];
            while jobs.len() < MAX_JOBS_PER_BATCH {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
            let n: usize = jobs.iter().map(|j| j.tasks.len()).sum();
            self.metrics.group_commit_size.observe(n as f64);
            self.commit_group(&mut jobs);
            for job in jobs {
                let _ = job.reply.send(job.tasks);
            }
        }
    }

    fn commit_group(&mut self, jobs: &mut [WriteJob]) {
        let fail_all = |jobs: &mut [WriteJob], code: u32| {
            for t in jobs.iter_mut().flat_map(|j| j.tasks.iter_mut()) {
                t.out.clear();
                t.out.error(ErrorKind::Storage(code));
            }
        };
        let Some(conn) = self.conn.get() else {
            fail_all(jobs, ERR_UNAVAILABLE);
            return;
        };
        if let Err(e) = conn.begin() {
            tracing::warn!(error = %e, "begin failed");
            fail_all(jobs, e.client_code());
            self.conn.conn = None;
            return;
        }
        for task in jobs.iter_mut().flat_map(|j| j.tasks.iter_mut()) {
            exec::run_write(conn.as_mut(), task);
        }
        if let Err(failure) = conn.commit() {
            tracing::warn!(error = %failure.error, dbs = ?failure.dbs, "group commit failed; the writes it rolled back are answered with the error");
            let _ = conn.rollback();
            let code = failure.error.client_code();
            for t in jobs.iter_mut().flat_map(|j| j.tasks.iter_mut()) {
                if failure.lost(&t.index.table.db) {
                    t.out.clear();
                    t.out.error(ErrorKind::Storage(code));
                }
            }
            if failure.dbs.is_none() {
                // A broken connection is rebuilt on the next group.
                self.conn.conn = None;
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
