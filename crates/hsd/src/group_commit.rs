//! The group committer of a write event loop: one task owning one storage
//! connection. It takes every write the loop's client connections queued
//! meanwhile, runs them in one transaction, commits once, and only then
//! answers; a lone write runs at once.
//!
//! Writes to a db file another process holds locked are not waited for:
//! they stay queued (in order, behind nothing else) and are tried again
//! with each later group and after short pauses, while writes to other
//! files go on. After `BUSY_BUDGET` they are answered with the busy error.
//!
//! When a commit becomes durable only after a sync step (the embedded
//! store's WAL), the committer runs it before answering: itself for a small
//! group (a hand-off to another thread would cost more than the sync), on
//! its sync thread for a large one (whose sync, megabytes of WAL, then
//! overlaps the next group's work). While the sync thread holds anything,
//! every group's answers go through it, in order, so no answer overtakes a
//! sync it depends on. A sync that fails stops hsd: the writes are committed (others can see them) but may not
//! survive a crash, so neither answer would be true; the clients see their
//! connection end (outcome unknown) and SQLite recovers the file from what
//! reached the disk at the next start, as a database does after a failed
//! fsync.

use crate::backend::{Backend, Durability, StorageConn, SyncStep, ERR_BUSY, ERR_UNAVAILABLE};
use crate::dispatch::Shared;
use crate::exec::{self, WriteOutcome, WriteTask};
use hs_proto::{ErrorKind, ResponseWriter};
use std::cell::{Cell, RefCell};
use std::collections::{HashSet, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Notify};

/// Most writes in one group: bounds a group's latency and memory.
const MAX_GROUP_WRITES: usize = 1024;
/// How long writes wait for a db file another process keeps locked.
const BUSY_BUDGET: Duration = Duration::from_secs(10);
/// Pauses between tries on a locked file, growing to the last one.
const BUSY_PAUSES_MS: [u64; 6] = [1, 2, 5, 10, 20, 50];
/// How many times a group that deadlocked with another transaction is run.
const CONFLICT_ATTEMPTS: u32 = 4;
/// Groups of at least this many writes have their sync step run on the
/// sync thread, overlapping the next group.
const SYNC_BESIDE_FROM: usize = 32;

struct WriteJob {
    tasks: Vec<WriteTask>,
    /// Each task's answer, once it has one.
    answers: Vec<Option<ResponseWriter>>,
    /// Since when some task of this job finds its file locked.
    busy_since: Option<Instant>,
    reply: oneshot::Sender<Vec<ResponseWriter>>,
}

struct Queue {
    jobs: RefCell<VecDeque<WriteJob>>,
    work: Notify,
    stopping: Cell<bool>,
    running: Cell<bool>,
    stopped: Notify,
}

pub struct GroupCommitter<C> {
    queue: Rc<Queue>,
    _conn: std::marker::PhantomData<C>,
}

impl<C: StorageConn + 'static> GroupCommitter<C> {
    /// Starts the committer task on the current `LocalSet`.
    pub fn start<B: Backend<Storage = C>>(shared: Shared<B>) -> GroupCommitter<C> {
        let queue = Rc::new(Queue {
            jobs: RefCell::new(VecDeque::new()),
            work: Notify::new(),
            stopping: Cell::new(false),
            running: Cell::new(true),
            stopped: Notify::new(),
        });
        tokio::task::spawn_local(run(shared, queue.clone()));
        GroupCommitter {
            queue,
            _conn: std::marker::PhantomData,
        }
    }

    /// Runs the writes of one client connection's batch; returns their
    /// answers once committed.
    pub async fn run(&self, tasks: Vec<WriteTask>) -> Vec<ResponseWriter> {
        let n = tasks.len();
        if self.queue.stopping.get() {
            return failed(n, ERR_UNAVAILABLE);
        }
        let (reply, rx) = oneshot::channel();
        self.queue.jobs.borrow_mut().push_back(WriteJob {
            answers: (0..n).map(|_| None).collect(),
            tasks,
            busy_since: None,
            reply,
        });
        self.queue.work.notify_one();
        rx.await.unwrap_or_else(|_| failed(n, ERR_UNAVAILABLE))
    }

    /// Commits what is queued, then stops.
    pub async fn shut_down(&self) {
        self.queue.stopping.set(true);
        while self.queue.running.get() {
            let stopped = self.queue.stopped.notified();
            if !self.queue.running.get() {
                break;
            }
            self.queue.work.notify_one();
            stopped.await;
        }
    }
}

fn failed(n: usize, code: u32) -> Vec<ResponseWriter> {
    (0..n)
        .map(|_| {
            let mut w = ResponseWriter::new();
            w.error(ErrorKind::Storage(code));
            w
        })
        .collect()
}

async fn run<B: Backend>(shared: Shared<B>, queue: Rc<Queue>) {
    let mut storage: Option<B::Storage> = None;
    // Jobs taken but not fully answered (some writes wait on a locked file).
    let mut active: Vec<WriteJob> = Vec::new();
    let mut pause = 0usize;
    let mut sync_thread: Option<SyncThread> = None;
    loop {
        let work = queue.work.notified();
        take_jobs(&queue, &mut active);
        if active.is_empty() {
            if queue.stopping.get() {
                break;
            }
            work.await;
            continue;
        }
        if storage.is_none() {
            match shared.backend.connect().await {
                Ok(c) => storage = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, target = %shared.backend.describe_target(), "cannot connect to storage");
                    for job in active.drain(..) {
                        let _ = job.reply.send(failed(job.tasks.len(), e.client_code()));
                    }
                    continue;
                }
            }
        }
        let Some(c) = storage.as_mut() else { continue };
        let (busy, writes, durability) = commit_group(c, &shared, &mut active).await;
        let finished = take_finished(&mut active);
        let step = match durability {
            Durability::Done => None,
            Durability::Sync(step) => Some(step),
        };
        let beside = sync_thread.as_ref().is_some_and(SyncThread::busy)
            || (step.is_some() && writes >= SYNC_BESIDE_FROM);
        if beside && sync_thread.is_none() {
            match SyncThread::start() {
                Ok(t) => sync_thread = Some(t),
                Err(e) => tracing::warn!(error = %e, "cannot start a sync thread; syncing inline"),
            }
        }
        match (&sync_thread, beside) {
            (Some(t), true) => t.send(step, finished),
            _ => {
                if let Some(step) = step {
                    run_sync(step);
                }
                answer(finished);
            }
        }
        if busy {
            // Some file is locked from outside: pause a little (or until
            // new writes come), then try again.
            let wait = Duration::from_millis(BUSY_PAUSES_MS[pause.min(BUSY_PAUSES_MS.len() - 1)]);
            pause += 1;
            tokio::select! {
                _ = work => {}
                _ = tokio::time::sleep(wait) => {}
            }
        } else {
            pause = 0;
        }
    }
    if let Some(t) = sync_thread {
        // Every answer it holds goes out before the loop ends.
        let _ = tokio::task::spawn_blocking(move || t.finish()).await;
    }
    queue.running.set(false);
    queue.stopped.notify_waiters();
}

/// The committer's thread for the sync steps of large groups: runs them in
/// order and answers the writes that waited for each.
struct SyncThread {
    tx: mpsc::Sender<(Option<SyncStep>, Vec<WriteJob>)>,
    in_flight: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl SyncThread {
    fn start() -> std::io::Result<SyncThread> {
        let (tx, rx) = mpsc::channel::<(Option<SyncStep>, Vec<WriteJob>)>();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let count = in_flight.clone();
        let thread = std::thread::Builder::new()
            .name("hsd-sync".into())
            .spawn(move || {
                while let Ok((step, jobs)) = rx.recv() {
                    if let Some(step) = step {
                        run_sync(step);
                    }
                    answer(jobs);
                    count.fetch_sub(1, Ordering::AcqRel);
                }
            })?;
        Ok(SyncThread {
            tx,
            in_flight,
            thread,
        })
    }

    /// Whether some answers still wait on this thread.
    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
    }

    fn send(&self, step: Option<SyncStep>, jobs: Vec<WriteJob>) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        if let Err(mpsc::SendError((step, jobs))) = self.tx.send((step, jobs)) {
            // The thread is gone (it panicked): do its work here.
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            if let Some(step) = step {
                run_sync(step);
            }
            answer(jobs);
        }
    }

    fn finish(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}

/// Runs a sync step; stops hsd when it fails (see the module comment).
fn run_sync(step: SyncStep) {
    if let Err(f) = step() {
        tracing::error!(
            error = %f.error,
            dbs = ?f.dbs,
            "making committed writes durable failed; hsd stops without answering them \
             (SQLite recovers the files at the next start)"
        );
        std::process::exit(70);
    }
}

/// Sends each finished job its answers.
fn answer(jobs: Vec<WriteJob>) {
    for job in jobs {
        let answers = job
            .answers
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect();
        let _ = job.reply.send(answers);
    }
}

/// An error answer.
fn error_answer(code: u32) -> ResponseWriter {
    let mut w = ResponseWriter::new();
    w.error(ErrorKind::Storage(code));
    w
}

/// Moves queued jobs into `active`, up to `MAX_GROUP_WRITES` writes.
fn take_jobs(queue: &Queue, active: &mut Vec<WriteJob>) {
    let mut jobs = queue.jobs.borrow_mut();
    let mut n: usize = active.iter().map(|j| j.tasks.len()).sum();
    while let Some(job) = jobs.front() {
        if n > 0 && n + job.tasks.len() > MAX_GROUP_WRITES {
            break;
        }
        n += job.tasks.len();
        if let Some(job) = jobs.pop_front() {
            active.push(job);
        }
    }
}

/// Runs every unanswered write of `active` in one transaction and commits.
/// Returns whether some write found its file locked, how many writes ran,
/// and how the committed writes become durable. A group that deadlocks with
/// another transaction is rolled back and run again, up to
/// `CONFLICT_ATTEMPTS` times, before its writes are answered with the error.
async fn commit_group<B: Backend>(
    storage: &mut B::Storage,
    shared: &Shared<B>,
    active: &mut [WriteJob],
) -> (bool, usize, Durability) {
    let started = Instant::now();
    let mut attempt = 0;
    let (locked, ran) = loop {
        attempt += 1;
        if let Err(e) = storage.begin().await {
            tracing::warn!(error = %e, "begin failed");
            for job in active.iter_mut() {
                for answer in job.answers.iter_mut().filter(|a| a.is_none()) {
                    *answer = Some(error_answer(e.client_code()));
                }
            }
            return (false, 0, Durability::Done);
        }
        let (locked, ran, conflict) = run_group(storage, active, shared.max_response_bytes).await;
        if conflict && attempt < CONFLICT_ATTEMPTS {
            tracing::debug!(
                attempt,
                "write group deadlocked with another transaction; running it again"
            );
            storage.rollback().await;
            for &(j, i) in &ran {
                active[j].answers[i] = None;
            }
            // A short, varying pause: the other transaction gets ahead.
            let pause = 1 + (started.elapsed().subsec_nanos() % 4) as u64 * attempt as u64;
            tokio::time::sleep(Duration::from_millis(pause)).await;
            continue;
        }
        break (locked, ran);
    };
    let writes = ran.len();
    shared.metrics.group_commit_size.observe(writes as f64);
    let committed = storage.commit().await;
    if let Some(failure) = committed.failure {
        tracing::warn!(error = %failure.error, dbs = ?failure.dbs, "group commit failed; the writes it rolled back are answered with the error");
        storage.rollback().await;
        let code = failure.error.client_code();
        for &(j, i) in &ran {
            if failure.lost(&active[j].tasks[i].index.table.db) {
                active[j].answers[i] = Some(error_answer(code));
            }
        }
    }
    tracing::trace!(writes, elapsed = ?started.elapsed(), "group committed");
    // Writes that waited too long on a locked file give up.
    for job in active.iter_mut() {
        if job.busy_since.is_some_and(|t| t.elapsed() >= BUSY_BUDGET) {
            for answer in job.answers.iter_mut().filter(|a| a.is_none()) {
                *answer = Some(error_answer(ERR_BUSY));
            }
        }
    }
    (!locked.is_empty(), writes, committed.durability)
}

/// Runs the group's unanswered writes inside the open transaction: the db
/// files found locked, the writes that ran (job, task), and whether one
/// deadlocked with another transaction.
async fn run_group<C: StorageConn>(
    storage: &mut C,
    active: &mut [WriteJob],
    max_answer: usize,
) -> (HashSet<String>, Vec<(usize, usize)>, bool) {
    let mut slots: Vec<(usize, usize)> = Vec::new();
    let mut tasks: Vec<&WriteTask> = Vec::new();
    for (j, job) in active.iter().enumerate() {
        for (i, (t, answer)) in job.tasks.iter().zip(&job.answers).enumerate() {
            if answer.is_none() {
                slots.push((j, i));
                tasks.push(t);
            }
        }
    }
    let outcomes = exec::run_writes(storage, &tasks, max_answer).await;
    drop(tasks);
    let mut locked: HashSet<String> = HashSet::new();
    let mut ran: Vec<(usize, usize)> = Vec::new();
    let mut conflict = false;
    for ((j, i), outcome) in slots.into_iter().zip(outcomes) {
        match outcome {
            WriteOutcome::Answered(out) => {
                active[j].answers[i] = Some(out);
                ran.push((j, i));
            }
            WriteOutcome::Conflict(out) => {
                conflict = true;
                active[j].answers[i] = Some(out);
                ran.push((j, i));
            }
            WriteOutcome::Busy => {
                locked.insert(active[j].tasks[i].index.table.db.clone());
                active[j].busy_since.get_or_insert_with(Instant::now);
            }
        }
    }
    (locked, ran, conflict)
}

/// Takes out the jobs whose every write has its answer.
fn take_finished(active: &mut Vec<WriteJob>) -> Vec<WriteJob> {
    let mut finished = Vec::new();
    let mut i = 0;
    while i < active.len() {
        if active[i].answers.iter().all(Option::is_some) {
            finished.push(active.remove(i));
        } else {
            i += 1;
        }
    }
    finished
}
