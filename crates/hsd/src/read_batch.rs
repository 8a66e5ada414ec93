//! The read batcher of an event loop whose storage is across a network:
//! `links` tasks, each owning one storage connection. A free one takes
//! every job the loop's client connections queued meanwhile (up to a
//! bound) and runs their finds as one batch, so lookups from many clients
//! become few statements. Nobody waits for company: a lone job runs at once.
//!
//! New work wakes the runner that went idle last: under light load one
//! link (and one server thread) does everything while it is warm, instead
//! of the links taking turns.

use crate::backend::{Backend, OpenedIndex, StorageConn, ERR_UNAVAILABLE};
use crate::dispatch::Shared;
use crate::exec::{self, ReadTask};
use hs_proto::{ErrorKind, OpenIndexRequest, ResponseWriter};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::{oneshot, Notify};

/// Most finds one batch takes: bounds a batch's latency and memory, and
/// lets other links start on the rest.
const MAX_BATCH_FINDS: usize = 512;

enum Job {
    Open {
        req: OpenIndexRequest,
        reply: oneshot::Sender<Result<Arc<OpenedIndex>, ErrorKind>>,
    },
    Finds {
        tasks: Vec<ReadTask>,
        reply: oneshot::Sender<Vec<ResponseWriter>>,
    },
}

struct Queue {
    jobs: RefCell<VecDeque<Job>>,
    /// One wake-up per runner.
    wake: Vec<Notify>,
    /// Idle runners, the one that went idle last on top.
    idle: RefCell<Vec<usize>>,
    stopping: Cell<bool>,
    /// Runners still running; shutdown waits for zero.
    running: Cell<usize>,
    stopped: Notify,
}

pub struct ReadBatcher<C> {
    queue: Rc<Queue>,
    _conn: std::marker::PhantomData<C>,
}

impl<C: StorageConn + 'static> ReadBatcher<C> {
    /// Starts `links` runner tasks on the current `LocalSet`.
    pub fn start<B: Backend<Storage = C>>(shared: Shared<B>, links: usize) -> ReadBatcher<C> {
        let links = links.max(1);
        let queue = Rc::new(Queue {
            jobs: RefCell::new(VecDeque::new()),
            wake: (0..links).map(|_| Notify::new()).collect(),
            idle: RefCell::new(Vec::new()),
            stopping: Cell::new(false),
            running: Cell::new(links),
            stopped: Notify::new(),
        });
        for me in 0..links {
            tokio::task::spawn_local(run(shared.clone(), queue.clone(), me));
        }
        ReadBatcher {
            queue,
            _conn: std::marker::PhantomData,
        }
    }

    /// Runs the finds; returns their answers in order.
    pub async fn reads(&self, tasks: Vec<ReadTask>) -> Vec<ResponseWriter> {
        let n = tasks.len();
        if self.queue.stopping.get() {
            return unavailable(n);
        }
        let (reply, rx) = oneshot::channel();
        self.queue
            .jobs
            .borrow_mut()
            .push_back(Job::Finds { tasks, reply });
        self.queue.wake_one();
        rx.await.unwrap_or_else(|_| unavailable(n))
    }

    pub async fn open(&self, req: OpenIndexRequest) -> Result<Arc<OpenedIndex>, ErrorKind> {
        if self.queue.stopping.get() {
            return Err(ErrorKind::OpenTable);
        }
        let (reply, rx) = oneshot::channel();
        self.queue
            .jobs
            .borrow_mut()
            .push_back(Job::Open { req, reply });
        self.queue.wake_one();
        rx.await.unwrap_or(Err(ErrorKind::OpenTable))
    }

    /// Runs what is queued, then stops the runners.
    pub async fn shut_down(&self) {
        self.queue.stopping.set(true);
        while self.queue.running.get() > 0 {
            let stopped = self.queue.stopped.notified();
            if self.queue.running.get() == 0 {
                break;
            }
            for w in &self.queue.wake {
                w.notify_one();
            }
            stopped.await;
        }
    }
}

impl Queue {
    /// Wakes the runner that went idle last, if any is idle (busy ones
    /// look at the queue when they finish).
    fn wake_one(&self) {
        if let Some(r) = self.idle.borrow_mut().pop() {
            self.wake[r].notify_one();
        }
    }
}

fn fail_all(tasks: &mut [ReadTask]) {
    for t in tasks {
        t.out.clear();
        t.out.error(ErrorKind::Storage(ERR_UNAVAILABLE));
    }
}

/// Answers for finds that could not run (shutting down).
pub fn unavailable(n: usize) -> Vec<ResponseWriter> {
    (0..n)
        .map(|_| {
            let mut w = ResponseWriter::new();
            w.error(ErrorKind::Storage(ERR_UNAVAILABLE));
            w
        })
        .collect()
}

/// Runner `me`: its own storage connection, made on first use.
async fn run<B: Backend>(shared: Shared<B>, queue: Rc<Queue>, me: usize) {
    let mut storage: Option<B::Storage> = None;
    loop {
        let (opens, finds) = take_batch(&queue);
        if opens.is_empty() && finds.is_empty() {
            if queue.stopping.get() {
                break;
            }
            let work = queue.wake[me].notified();
            queue.idle.borrow_mut().push(me);
            let deadline = storage.as_ref().and_then(StorageConn::idle_deadline);
            let woken = match deadline {
                Some(at) => {
                    tokio::select! {
                        _ = work => true,
                        _ = tokio::time::sleep_until(at.into()) => false,
                    }
                }
                None => {
                    work.await;
                    true
                }
            };
            if !woken {
                // Not picked: leave the idle stack while housekeeping.
                queue.idle.borrow_mut().retain(|&r| r != me);
                if let Some(c) = storage.as_mut() {
                    c.release_idle().await;
                }
            }
            continue;
        }
        if storage.is_none() {
            match shared.backend.connect().await {
                Ok(c) => storage = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, target = %shared.backend.describe_target(), "cannot connect to storage");
                }
            }
        }
        for (req, reply) in opens {
            let result = match storage.as_mut() {
                Some(c) => exec::open_index(c, &shared.catalog, &req).await,
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
        for (batch, (tasks, reply)) in finds.into_iter().enumerate() {
            // Each client's batch has its own answer bytes limit.
            all.extend(tasks.into_iter().map(|mut t| {
                t.batch = batch;
                t
            }));
            replies.push(reply);
        }
        match storage.as_mut() {
            Some(c) => exec::run_reads(c, &mut all, shared.max_response_bytes).await,
            None => fail_all(&mut all),
        }
        let mut rest = all.into_iter().map(|t| t.out);
        for (n, reply) in counts.into_iter().zip(replies) {
            let _ = reply.send(rest.by_ref().take(n).collect());
        }
    }
    if let Some(c) = storage.as_mut() {
        c.release_idle().await;
    }
    queue.running.set(queue.running.get() - 1);
    queue.stopped.notify_waiters();
}

type Finds = Vec<(Vec<ReadTask>, oneshot::Sender<Vec<ResponseWriter>>)>;
type Opens = Vec<(
    OpenIndexRequest,
    oneshot::Sender<Result<Arc<OpenedIndex>, ErrorKind>>,
)>;

/// Takes queued jobs, up to `MAX_BATCH_FINDS` finds (a job is never split).
fn take_batch(queue: &Queue) -> (Opens, Finds) {
    let mut jobs = queue.jobs.borrow_mut();
    let mut opens = Vec::new();
    let mut finds = Vec::new();
    let mut n = 0;
    while let Some(job) = jobs.front() {
        if let Job::Finds { tasks, .. } = job {
            if n > 0 && n + tasks.len() > MAX_BATCH_FINDS {
                break;
            }
        }
        match jobs.pop_front() {
            Some(Job::Open { req, reply }) => opens.push((req, reply)),
            Some(Job::Finds { tasks, reply }) => {
                n += tasks.len();
                finds.push((tasks, reply));
            }
            None => break,
        }
    }
    // Leave the rest to a free runner.
    if !jobs.is_empty() {
        drop(jobs);
        queue.wake_one();
    }
    (opens, finds)
}
