//! The group committer of a write event loop: one task owning one storage
//! connection. It takes every write the loop's client connections queued
//! meanwhile, runs them in one transaction, commits once, and only then
//! answers; a lone write runs at once.
//!
//! With `--write-groups N` (MySQL) the loop has N such tasks, each with its
//! own connection, and a baton (`Turn`) between them: a task takes the
//! queued writes and runs their statements only while it holds the baton,
//! and gives it back as its COMMIT goes out. So one group runs statements
//! while the others wait on their COMMITs, and the server's group commit
//! makes those durable together, where one task would wait out each fsync
//! before starting the next group. Groups are still cut only where a
//! COMMIT begins, so they do not shrink into many small ones. A client
//! connection has one batch in flight at a time (it waits for its answers),
//! so its writes keep their order: its next batch starts after its last one
//! committed. Writes of different connections in flight together have no
//! order among them, as on the original; two groups that touch one row
//! meet at the server's row lock, held until the first commits.
//!
//! A task that takes the baton while another group's COMMIT waits on its
//! fsync first gathers: it waits until as many client batches are queued
//! as its last group answered (those clients are sending their next
//! requests), or until that COMMIT returns, whichever comes first. Its
//! COMMIT could not be made durable before that fsync ends anyway (it
//! would wait for the next one), so the writes that arrive meanwhile join
//! its group at no cost, where taking the first one alone split the
//! clients' writes into groups of one or two, each paying an fsync.
//!
//! Writes to a db file another process holds locked are not waited for:
//! they stay queued (in order, behind nothing else) and are tried again
//! with each later group and after short pauses, while writes to other
//! files go on. After `BUSY_BUDGET` they are answered with the busy error.
//!
//! A modify walk that may read many rows runs a slice per group
//! (`exec::WALK_SLICE`) and goes on in the next group from where it
//! paused: the loop's other writes commit and are answered between its
//! slices instead of waiting for it (a walk bounded by
//! `--statement-timeout` held them that long). Its client's later writes
//! wait for its end, so they still see it; a group rolled back and run
//! again takes the walk back to where that group found it.
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

use crate::exec::{self, Answer, WalkProgress, WriteOutcome, WriteTask};
use crate::job_queue::{error_answer, unavailable, JobQueue};
use crate::shared::Shared;
use hsd_storage::{Backend, Committed, Durability, StorageConn, SyncStep, ERR_BUSY};
use std::cell::Cell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most writes in one group: bounds a group's latency and memory.
pub(crate) const MAX_GROUP_WRITES: usize = 1024;
/// How long writes wait for a db file another process keeps locked.
const BUSY_BUDGET: Duration = Duration::from_secs(10);
/// Pauses between tries on a locked file, growing to the last one.
const BUSY_PAUSES_MS: [u64; 6] = [1, 2, 5, 10, 20, 50];
/// How many times a group that deadlocked with another transaction is run.
const CONFLICT_ATTEMPTS: u32 = 4;
/// The longest a task gathers writes while another COMMIT waits: well
/// above an fsync here (about 0.4 ms), so that only a COMMIT held by
/// something else ends it.
const GATHER_AT_MOST: Duration = Duration::from_millis(3);
/// Groups of at least this many writes have their sync step run on the
/// sync thread, overlapping the next group.
const SYNC_BESIDE_FROM: usize = 32;

/// The writes of one client connection's batch.
struct WriteJob<A: Answer> {
    tasks: Vec<WriteTask>,
    /// Each task's answer, once it has one.
    answers: Vec<Option<A>>,
    /// Since when some task of this job finds its file locked.
    busy_since: Option<Instant>,
    /// The job's modify walk that paused (task, where it stands): it and
    /// the job's later tasks wait for it to end.
    walk: Option<(usize, WalkProgress)>,
    reply: oneshot::Sender<Vec<A>>,
}

pub(crate) struct GroupCommitter<A: Answer> {
    queue: Rc<JobQueue<WriteJob<A>>>,
}

impl<A: Answer> GroupCommitter<A> {
    /// Starts the committer task on the current `LocalSet`.
    pub(crate) fn start<B: Backend>(shared: Shared<B>) -> GroupCommitter<A> {
        GroupCommitter::gathering_for(shared, GATHER_AT_MOST)
    }

    /// `start`, a gathering task waiting at most `patience`.
    fn gathering_for<B: Backend>(shared: Shared<B>, patience: Duration) -> GroupCommitter<A> {
        let tasks = shared.write_groups.max(1);
        let queue = Rc::new(JobQueue::new(tasks));
        let baton = Rc::new(Baton::new());
        let commits = Rc::new(CommitsInFlight {
            patience,
            ..CommitsInFlight::default()
        });
        for me in 0..tasks {
            let (queue, baton, commits) = (queue.clone(), baton.clone(), commits.clone());
            tokio::task::spawn_local(run(shared.clone(), queue, me, baton, commits));
        }
        GroupCommitter { queue }
    }

    /// Runs the writes of one client connection's batch; returns their
    /// answers once committed.
    pub(crate) async fn run(&self, tasks: Vec<WriteTask>) -> Vec<A> {
        let n = tasks.len();
        let (reply, rx) = oneshot::channel();
        let job = WriteJob {
            answers: (0..n).map(|_| None).collect(),
            tasks,
            busy_since: None,
            walk: None,
            reply,
        };
        if self.queue.push(job).is_err() {
            return unavailable(n);
        }
        rx.await.unwrap_or_else(|_| unavailable(n))
    }

    /// Commits what is queued, then stops.
    pub(crate) async fn shut_down(&self) {
        self.queue.shut_down().await;
    }
}

/// The right to take queued writes and run a group's statements: one
/// committer task of a loop holds it at a time, from taking its jobs until
/// its COMMIT goes out.
struct Baton {
    turn: tokio::sync::Semaphore,
}

impl Baton {
    fn new() -> Baton {
        Baton {
            turn: tokio::sync::Semaphore::new(1),
        }
    }
}

/// One task's hold on the baton; given back when dropped.
struct Turn<'a> {
    baton: &'a Baton,
    held: bool,
}

impl<'a> Turn<'a> {
    fn new(baton: &'a Baton) -> Turn<'a> {
        Turn { baton, held: false }
    }

    /// Waits for the baton (the semaphore is never closed, so it comes).
    async fn take(&mut self) {
        if !self.held {
            if let Ok(permit) = self.baton.turn.acquire().await {
                permit.forget();
                self.held = true;
            }
        }
    }

    fn give(&mut self) {
        if self.held {
            self.baton.turn.add_permits(1);
            self.held = false;
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.give();
    }
}

/// The COMMITs of a loop's groups that wait for their answer (see the
/// module comment on gathering).
#[derive(Default)]
struct CommitsInFlight {
    count: Cell<usize>,
    returned: tokio::sync::Notify,
    /// The longest a task gathers (`GATHER_AT_MOST`).
    patience: Duration,
}

impl CommitsInFlight {
    /// Runs a group's COMMIT, counted while it waits.
    async fn commit<C: StorageConn>(&self, storage: &mut C) -> Committed {
        self.count.set(self.count.get() + 1);
        let committed = storage.commit().await;
        self.count.set(self.count.get().saturating_sub(1));
        self.returned.notify_waiters();
        committed
    }
}

/// Waits, holding the baton, while another group's COMMIT is in flight
/// and fewer than `expected` client batches are queued (module comment),
/// and not longer than `patience`: a COMMIT normally returns within an
/// fsync, but one resolved after a lost answer, or waiting on a slow disk
/// or a replica's acknowledgement, would otherwise hold this group too.
async fn gather<J>(queue: &JobQueue<J>, commits: &CommitsInFlight, expected: usize) {
    let give_up = tokio::time::Instant::now() + commits.patience;
    loop {
        if commits.count.get() == 0 || queue.len() >= expected.max(1) || queue.stopping() {
            return;
        }
        // Single-threaded: nothing runs between the test and these.
        let pushed = queue.next_push();
        let returned = commits.returned.notified();
        tokio::select! {
            _ = pushed => {}
            _ = returned => {}
            _ = tokio::time::sleep_until(give_up) => return,
        }
    }
}

async fn run<B: Backend, A: Answer>(
    shared: Shared<B>,
    queue: Rc<JobQueue<WriteJob<A>>>,
    me: usize,
    baton: Rc<Baton>,
    commits: Rc<CommitsInFlight>,
) {
    let mut storage: Option<B::Storage> = None;
    // Client batches this task's last group answered.
    let mut last_jobs = 0usize;
    // Jobs taken but not fully answered (some writes wait on a locked file).
    let mut active: Vec<WriteJob<A>> = Vec::new();
    let mut pause = 0usize;
    let mut sync_thread: Option<SyncThread<A>> = None;
    let mut turn = Turn::new(&baton);
    loop {
        turn.take().await;
        if active.is_empty() {
            gather(&queue, &commits, last_jobs).await;
        }
        take_jobs(&queue, &mut active);
        last_jobs = active.len();
        if active.is_empty() {
            turn.give();
            if queue.stopping() {
                break;
            }
            // An idle connection gives back what it must not hold idle
            // (HANDLER handles and their metadata locks, read leases; its
            // link while the server refuses connections).
            let deadline = storage.as_ref().and_then(StorageConn::idle_deadline);
            if !queue.idle(me, deadline).await {
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
                    for job in active.drain(..) {
                        let answers = (0..job.tasks.len())
                            .map(|_| error_answer(e.client_code()))
                            .collect();
                        let _ = job.reply.send(answers);
                    }
                    continue;
                }
            }
        }
        let Some(c) = storage.as_mut() else { continue };
        let (busy, writes, durability) =
            commit_group(c, &shared, &mut active, &mut turn, &commits).await;
        turn.give();
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
            queue.idle(me, Some(Instant::now() + wait)).await;
        } else {
            pause = 0;
        }
    }
    if let Some(t) = sync_thread {
        // Every answer it holds goes out before the loop ends.
        let _ = tokio::task::spawn_blocking(move || t.finish()).await;
    }
    queue.task_done();
}

/// The committer's thread for the sync steps of large groups: runs them in
/// order and answers the writes that waited for each.
struct SyncThread<A: Answer> {
    tx: mpsc::Sender<(Option<SyncStep>, Vec<WriteJob<A>>)>,
    in_flight: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl<A: Answer> SyncThread<A> {
    fn start() -> std::io::Result<SyncThread<A>> {
        let (tx, rx) = mpsc::channel::<(Option<SyncStep>, Vec<WriteJob<A>>)>();
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

    fn send(&self, step: Option<SyncStep>, jobs: Vec<WriteJob<A>>) {
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
fn answer<A: Answer>(jobs: Vec<WriteJob<A>>) {
    for job in jobs {
        let answers = job
            .answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| A::with_capacity(0)))
            .collect();
        let _ = job.reply.send(answers);
    }
}

/// Moves queued jobs into `active`, up to `MAX_GROUP_WRITES` writes (a
/// job is never split).
fn take_jobs<A: Answer>(queue: &JobQueue<WriteJob<A>>, active: &mut Vec<WriteJob<A>>) {
    let mut n: usize = active.iter().map(|j| j.tasks.len()).sum();
    active.extend(queue.take(|job| {
        let fits = n == 0 || n + job.tasks.len() <= MAX_GROUP_WRITES;
        if fits {
            n += job.tasks.len();
        }
        fits
    }));
}

/// Runs every unanswered write of `active` in one transaction and commits.
/// Returns whether some write found its file locked, how many writes ran,
/// and how the committed writes become durable. A group that deadlocks with
/// another transaction, in a statement or at its commit (a Galera
/// certification conflict is found there), is rolled back and run again,
/// up to `CONFLICT_ATTEMPTS` times, before its writes are answered with the
/// error.
async fn commit_group<B: Backend, A: Answer>(
    storage: &mut B::Storage,
    shared: &Shared<B>,
    active: &mut [WriteJob<A>],
    turn: &mut Turn<'_>,
    commits: &CommitsInFlight,
) -> (bool, usize, Durability) {
    let started = Instant::now();
    let mut attempt = 0;
    let mut settled = 0;
    let (locked, ran, walked, committed) = loop {
        attempt += 1;
        // A group run again after a deadlock at its COMMIT waits its turn.
        turn.take().await;
        if let Err(e) = storage.begin().await {
            tracing::warn!(error = %e, "begin failed");
            for job in active.iter_mut() {
                for answer in job.answers.iter_mut().filter(|a| a.is_none()) {
                    *answer = Some(error_answer(e.client_code()));
                }
            }
            return (false, 0, Durability::Done);
        }
        let limits = shared.write_limits();
        // Where the paused walks stand before this run: a rollback takes
        // them back there.
        let walks_before: Vec<(usize, Option<(usize, WalkProgress)>)> = active
            .iter()
            .enumerate()
            .filter(|(_, job)| job.walk.is_some())
            .map(|(j, job)| (j, job.walk.clone()))
            .collect();
        let (locked, ran, conflict) = run_group(storage, active, &limits).await;
        settled += ran.settled;
        let walked = ran.walked;
        let ran = ran.in_transaction;
        let committed = if conflict {
            None
        } else {
            // The next group may run its statements while this COMMIT waits.
            turn.give();
            Some(commits.commit(storage).await)
        };
        let conflict = conflict
            || committed.as_ref().is_some_and(|c| {
                c.failure
                    .as_ref()
                    .is_some_and(|f| f.error.is_deadlock() && f.dbs.is_none())
            });
        if conflict && attempt < CONFLICT_ATTEMPTS {
            tracing::debug!(
                attempt,
                "write group deadlocked with another transaction; running it again"
            );
            shared.metrics.group_reruns.inc();
            storage.rollback().await;
            for &(j, i) in &ran {
                active[j].answers[i] = None;
            }
            for &(j, _) in &walked {
                active[j].walk = walks_before
                    .iter()
                    .find(|(k, _)| *k == j)
                    .and_then(|(_, w)| w.clone());
            }
            // A short, varying pause: the other transaction gets ahead.
            let pause = 1 + (started.elapsed().subsec_nanos() % 4) as u64 * attempt as u64;
            tokio::time::sleep(Duration::from_millis(pause)).await;
            continue;
        }
        let committed = match committed {
            Some(c) => c,
            // Out of attempts with a statement's deadlock: commit what
            // holds (the failed statements answered their error).
            None => {
                turn.give();
                commits.commit(storage).await
            }
        };
        break (locked, ran, walked, committed);
    };
    let writes = ran.len() + settled;
    shared.metrics.group_commit_size.observe(writes as f64);
    if let Some(failure) = committed.failure {
        tracing::warn!(error = %failure.error, dbs = ?failure.dbs, "group commit failed; the writes it rolled back are answered with the error");
        storage.rollback().await;
        let code = failure.error.client_code();
        for &(j, i) in ran.iter().chain(&walked) {
            if failure.lost(&active[j].tasks[i].index.table.db) {
                // A paused walk ends here: its slice is gone, its earlier
                // slices stay (as rows changed before any error do).
                active[j].answers[i] = Some(error_answer(code));
                if active[j].walk.as_ref().is_some_and(|(w, _)| *w == i) {
                    active[j].walk = None;
                }
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

/// The writes a run of a group made.
#[derive(Default)]
struct Ran {
    /// Those whose changes are the transaction's (job, task): rolled back
    /// and run again after a deadlock, failed when the commit fails.
    in_transaction: Vec<(usize, usize)>,
    /// How many were answered for good: writes to a table without
    /// transactions, whose changes stand whatever the transaction does.
    settled: usize,
    /// Walks of tables with transactions that paused in this run, or went
    /// on from an earlier pause (job, task): a rollback takes them back to
    /// where they stood before it.
    walked: Vec<(usize, usize)>,
}

/// Runs the group's unanswered writes inside the open transaction: the db
/// files found locked, the writes that ran, and whether one deadlocked with
/// another transaction.
async fn run_group<C: StorageConn, A: Answer>(
    storage: &mut C,
    active: &mut [WriteJob<A>],
    limits: &exec::WriteLimits,
) -> (HashSet<String>, Ran, bool) {
    let mut slots: Vec<(usize, usize)> = Vec::new();
    let mut tasks: Vec<&WriteTask> = Vec::new();
    let mut resume: Vec<(usize, WalkProgress)> = Vec::new();
    for (j, job) in active.iter().enumerate() {
        for (i, (t, answer)) in job.tasks.iter().zip(&job.answers).enumerate() {
            if answer.is_some() {
                continue;
            }
            if let Some((_, progress)) = job.walk.as_ref().filter(|(w, _)| *w == i) {
                resume.push((tasks.len(), progress.clone()));
            }
            slots.push((j, i));
            tasks.push(t);
            if exec::may_pause(t) {
                // The job's later writes must see the whole walk: they
                // wait for a group after it ended.
                break;
            }
        }
    }
    let resumed: Vec<usize> = resume.iter().map(|(t, _)| *t).collect();
    let outcomes = exec::run_writes_resuming(storage, &tasks, &mut resume, limits).await;
    drop(tasks);
    let mut locked: HashSet<String> = HashSet::new();
    let mut ran = Ran::default();
    let mut conflict = false;
    for (n, ((j, i), outcome)) in slots.into_iter().zip(outcomes).enumerate() {
        let transactional = active[j].tasks[i].index.table.transactional;
        let paused = matches!(outcome, WriteOutcome::Paused(_));
        if transactional && (paused || resumed.contains(&n)) {
            ran.walked.push((j, i));
        }
        let ended = !paused && !matches!(outcome, WriteOutcome::Busy);
        if ended && active[j].walk.as_ref().is_some_and(|(w, _)| *w == i) {
            active[j].walk = None;
        }
        match outcome {
            WriteOutcome::Paused(progress) => {
                active[j].walk = Some((i, progress));
            }
            WriteOutcome::Answered(out) => {
                active[j].answers[i] = Some(out);
                if active[j].tasks[i].index.table.transactional {
                    ran.in_transaction.push((j, i));
                } else {
                    ran.settled += 1;
                }
            }
            WriteOutcome::Conflict(out) => {
                // Nothing of it stands (a write to a table without
                // transactions only fails so when it was never sent).
                conflict = true;
                active[j].answers[i] = Some(out);
                ran.in_transaction.push((j, i));
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
fn take_finished<A: Answer>(active: &mut Vec<WriteJob<A>>) -> Vec<WriteJob<A>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::{open, store, write_task};
    use crate::shared::testing::{local, shared, text};
    use hs_proto::ResponseWriter;
    use hsd_storage::memory::{Fault, MemoryStore};
    use hsd_storage::{OpenedIndex, TableMeta, WriteBatching};

    /// Column `n` of row `id` as stored.
    fn n_of(store: &MemoryStore, id: &str) -> String {
        let rows = store.rows("db", "t");
        let row = rows
            .iter()
            .find(|r| r[0].as_deref() == Some(id.as_bytes()))
            .expect("row");
        String::from_utf8_lossy(row[2].as_deref().unwrap_or_default()).into_owned()
    }

    /// Clients that each send `lines` on index 1 (PRIMARY: n) at once;
    /// their answers.
    async fn clients(
        committer: &Rc<GroupCommitter<ResponseWriter>>,
        index: &Arc<hsd_storage::OpenedIndex>,
        jobs: Vec<Vec<String>>,
    ) -> Vec<Vec<String>> {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|lines| {
                let (committer, index) = (committer.clone(), index.clone());
                tokio::task::spawn_local(async move {
                    let tasks = lines.iter().map(|l| write_task(&index, l)).collect();
                    text(&committer.run(tasks).await)
                })
            })
            .collect();
        let mut answers = Vec::new();
        for h in handles {
            answers.push(h.await.expect("client"));
        }
        answers
    }

    #[test]
    fn writes_queued_together_share_one_commit_and_keep_their_order() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        local(async {
            let committer = Rc::new(GroupCommitter::start(shared(store.clone())));
            let jobs = (1..=4)
                .map(|c| {
                    vec![
                        format!("1\t=\t1\t{c}\t1\t0\t+?\t10"),
                        format!("1\t=\t1\t{c}\t1\t0\t+?\t1"),
                    ]
                })
                .collect();
            let answers = clients(&committer, &index, jobs).await;
            for (c, a) in (1..=4).zip(&answers) {
                let n0 = c % 3;
                assert_eq!(
                    a,
                    &[format!("0\t1\t{n0}\n"), format!("0\t1\t{}\n", n0 + 10)],
                    "client {c}"
                );
                assert_eq!(n_of(&store, &c.to_string()), (n0 + 11).to_string());
            }
            let commits = store.log().iter().filter(|l| *l == "commit").count();
            assert_eq!(commits, 1, "{:?}", store.log());
            committer.shut_down().await;
        });
    }

    #[test]
    fn finds_pipelined_with_writes_see_them_and_share_their_commit() {
        let (store, table) = store(WriteBatching::Batched);
        let rows = open(&table, 1, 0, &[0, 2], &[]);
        let n = open(&table, 2, 0, &[2], &[]);
        local(async {
            let committer = GroupCommitter::start(shared(store.clone()));
            let tasks = vec![
                write_task(&rows, "1\t+\t2\t40\t7"),
                write_task(&rows, "1\t=\t1\t40"),
                write_task(&n, "2\t=\t1\t40\t1\t0\t+\t1"),
                write_task(&rows, "1\t=\t1\t40"),
            ];
            let answers = text(&committer.run(tasks).await);
            assert_eq!(
                answers,
                ["0\t1\n", "0\t2\t40\t7\n", "0\t1\t1\n", "0\t2\t40\t8\n"]
            );
            let log = store.log();
            assert_eq!(log.iter().filter(|l| *l == "commit").count(), 1, "{log:?}");
            committer.shut_down().await;
        });
    }

    #[test]
    fn a_deadlocked_group_runs_again_and_applies_each_write_once() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        // Calls: 1 begin, 2-3 read and write of the first +, 4 the second
        // +'s read: the deadlock rolls the group back.
        store.fail_at(4, Fault::Deadlock);
        local(async {
            let committer = Rc::new(GroupCommitter::start(shared(store.clone())));
            let jobs = vec![
                vec!["1\t=\t1\t5\t1\t0\t+\t1".to_string()],
                vec!["1\t=\t1\t5\t1\t0\t+\t1".to_string()],
            ];
            let answers = clients(&committer, &index, jobs).await;
            assert_eq!(answers, [["0\t1\t1\n"], ["0\t1\t1\n"]]);
            // 5 % 3 = 2, plus two increments: each applied once.
            assert_eq!(n_of(&store, "5"), "4");
            let log = store.log();
            assert_eq!(
                log.iter().filter(|l| *l == "rollback").count(),
                1,
                "{log:?}"
            );
            assert_eq!(log.iter().filter(|l| *l == "commit").count(), 1, "{log:?}");
            committer.shut_down().await;
        });
    }

    /// Table `m`, a copy of `t` whose engine has no transactions, with one
    /// row keyed 5 whose column 2 is 0; opened as index 2 on that column.
    fn counter_without_transactions(
        store: &MemoryStore,
        table: &Arc<TableMeta>,
    ) -> Arc<OpenedIndex> {
        let mut meta = (**table).clone();
        meta.name = "m".into();
        meta.transactional = false;
        let rows: Vec<Vec<Option<&str>>> = vec![vec![Some("5"), None, Some("0"), None]];
        open(&store.add_table(meta, &rows), 2, 0, &[2], &[])
    }

    #[test]
    fn a_deadlock_reruns_no_write_to_a_table_without_transactions() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let counter = counter_without_transactions(&store, &table);
        let index = open(&table, 1, 0, &[2], &[]);
        // Calls: 1 begin, 2-3 read and write of m's +, 4 t's read: the
        // deadlock rolls the group back; m's change stands.
        store.fail_at(4, Fault::Deadlock);
        local(async {
            let committer = GroupCommitter::start(shared(store.clone()));
            let tasks = vec![
                write_task(&counter, "2\t=\t1\t5\t1\t0\t+?\t1"),
                write_task(&index, "1\t=\t1\t5\t1\t0\t+\t1"),
            ];
            let answers = text(&committer.run(tasks).await);
            assert_eq!(answers, ["0\t1\t0\n", "0\t1\t1\n"]);
            let m = store.rows("db", "m");
            assert_eq!(m[0][2].as_deref(), Some(&b"1"[..]), "m's + ran once: {m:?}");
            assert_eq!(n_of(&store, "5"), "3");
            let log = store.log();
            assert_eq!(
                log.iter().filter(|l| *l == "rollback").count(),
                1,
                "{log:?}"
            );
            committer.shut_down().await;
        });
    }

    #[test]
    fn a_group_whose_commit_deadlocks_runs_again_and_applies_each_write_once() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        // Calls: 1 begin, 2-3 read and write of the +, 4 the commit: a
        // deadlock there (as Galera reports a certification conflict).
        store.fail_at(4, Fault::Deadlock);
        local(async {
            let committer = Rc::new(GroupCommitter::start(shared(store.clone())));
            let jobs = vec![vec!["1\t=\t1\t5\t1\t0\t+\t1".to_string()]];
            let answers = clients(&committer, &index, jobs).await;
            assert_eq!(answers, [["0\t1\t1\n"]]);
            assert_eq!(n_of(&store, "5"), "3");
            let log = store.log();
            assert_eq!(log.iter().filter(|l| *l == "commit").count(), 2, "{log:?}");
            assert_eq!(
                log.iter().filter(|l| *l == "rollback").count(),
                1,
                "{log:?}"
            );
            committer.shut_down().await;
        });
    }

    #[test]
    fn a_failed_commit_keeps_the_answers_of_a_table_without_transactions() {
        let (store, table) = store(WriteBatching::Batched);
        let counter = counter_without_transactions(&store, &table);
        let index = open(&table, 1, 0, &[2], &[]);
        // Calls: 1 begin, 2-3 m's read and write, 4 t's read, 5 t's write,
        // 6 the commit: lost.
        store.fail_at(6, Fault::LostLink);
        local(async {
            let committer = GroupCommitter::start(shared(store.clone()));
            let tasks = vec![
                write_task(&counter, "2\t=\t1\t5\t1\t0\t+\t1"),
                write_task(&index, "1\t=\t1\t5\t1\t0\t+\t1"),
            ];
            let answers = text(&committer.run(tasks).await);
            assert_eq!(answers, ["0\t1\t1\n", "1\t1\t2013\n"], "{:?}", store.log());
            let m = store.rows("db", "m");
            assert_eq!(m[0][2].as_deref(), Some(&b"1"[..]), "{m:?}");
            assert_eq!(n_of(&store, "5"), "2");
            committer.shut_down().await;
        });
    }

    #[test]
    fn a_locked_file_is_tried_again_in_order() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        // Calls: 1 begin, 2 the first write's read: busy (nothing done).
        store.fail_at(2, Fault::Busy);
        local(async {
            let committer = Rc::new(GroupCommitter::start(shared(store.clone())));
            let jobs = vec![vec![
                "1\t=\t1\t2\t1\t0\tU?\t7".to_string(),
                "1\t=\t1\t2\t1\t0\tU?\t8".to_string(),
            ]];
            let answers = clients(&committer, &index, jobs).await;
            // The second write waited behind the first: it saw its change.
            assert_eq!(answers, [["0\t1\t2\n", "0\t1\t7\n"]]);
            assert_eq!(n_of(&store, "2"), "8");
            committer.shut_down().await;
        });
    }

    #[test]
    fn a_lost_link_answers_the_group_unavailable_and_keeps_nothing() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[2], &[]);
        // Calls: 1 begin, 2 the grouped read, 3 the grouped write: lost.
        store.fail_at(3, Fault::LostLink);
        local(async {
            let committer = Rc::new(GroupCommitter::start(shared(store.clone())));
            let jobs = vec![vec![
                "1\t=\t1\t1\t1\t0\t+\t5".to_string(),
                "1\t=\t1\t2\t1\t0\t+\t5".to_string(),
            ]];
            let answers = clients(&committer, &index, jobs).await;
            assert_eq!(answers, [["1\t1\t2013\n", "1\t1\t2013\n"]]);
            assert_eq!(
                (n_of(&store, "1"), n_of(&store, "2")),
                ("1".into(), "2".into())
            );
            committer.shut_down().await;
            // After shutdown, writes are refused at once.
            let refused = committer
                .run(vec![write_task(&index, "1\t=\t1\t1\t1\t0\t+\t5")])
                .await;
            assert_eq!(text(&refused), ["1\t1\t2013\n"]);
        });
    }

    /// How many calls of the store's log are `what`.
    fn calls_of(store: &MemoryStore, what: &str) -> usize {
        store.log().iter().filter(|l| *l == what).count()
    }

    /// One client's increment of row `id` by 10, started on its own task.
    fn increment(
        committer: &Rc<GroupCommitter<ResponseWriter>>,
        index: &Arc<OpenedIndex>,
        id: u32,
    ) -> tokio::task::JoinHandle<Vec<String>> {
        let (committer, index) = (committer.clone(), index.clone());
        tokio::task::spawn_local(async move {
            let task = write_task(&index, &format!("1\t=\t1\t{id}\t1\t0\t+\t10"));
            text(&committer.run(vec![task]).await)
        })
    }

    /// Lets the loop's tasks run as far as they can (here: until they wait
    /// on a held commit or for work).
    async fn let_run() {
        tokio::time::sleep(Duration::from_millis(30)).await;
    }

    /// A committer with `groups` write groups over `store`, whose commits
    /// are held, and clients incrementing rows `ids`, each sent once the
    /// one before it ran as far as it could: the committer, the commits'
    /// gate, the clients.
    async fn clients_behind_held_commits(
        store: &MemoryStore,
        index: &Arc<OpenedIndex>,
        groups: usize,
        ids: &[u32],
    ) -> (
        Rc<GroupCommitter<ResponseWriter>>,
        Arc<tokio::sync::Semaphore>,
        Vec<tokio::task::JoinHandle<Vec<String>>>,
    ) {
        let mut s = shared(store.clone());
        s.write_groups = groups;
        let committer = Rc::new(GroupCommitter::start(s));
        let gate = store.hold_commits();
        let mut sent = Vec::new();
        for &id in ids {
            sent.push(increment(&committer, index, id));
            let_run().await;
        }
        (committer, gate, sent)
    }

    #[test]
    fn with_two_write_groups_the_next_runs_while_a_commit_waits() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        local(async {
            // The first group's COMMIT waits; the second client's write
            // runs its statements and reaches its own COMMIT meanwhile.
            let (committer, gate, sent) =
                clients_behind_held_commits(&store, &index, 2, &[1, 2]).await;
            assert_eq!(calls_of(&store, "begin"), 2, "{:?}", store.log());
            assert_eq!(calls_of(&store, "commit"), 2, "{:?}", store.log());
            gate.add_permits(2);
            for client in sent {
                assert_eq!(client.await.expect("client"), ["0\t1\t1\n"]);
            }
            // Both commits applied their own row (1 % 3 + 10, 2 % 3 + 10).
            assert_eq!(n_of(&store, "1"), "11");
            assert_eq!(n_of(&store, "2"), "12");
            committer.shut_down().await;
        });
    }

    #[test]
    fn groups_in_flight_are_bounded_by_write_groups() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        local(async {
            let (committer, gate, mut sent) =
                clients_behind_held_commits(&store, &index, 2, &[1, 2, 3]).await;
            // Two COMMITs wait: the third write waits for a connection.
            assert_eq!(calls_of(&store, "begin"), 2, "{:?}", store.log());
            gate.add_permits(1);
            let first = sent.remove(0);
            assert_eq!(first.await.expect("first"), ["0\t1\t1\n"]);
            let_run().await;
            assert_eq!(calls_of(&store, "begin"), 3, "{:?}", store.log());
            gate.add_permits(2);
            for client in sent {
                assert_eq!(client.await.expect("client"), ["0\t1\t1\n"]);
            }
            assert_eq!(n_of(&store, "3"), "10");
            committer.shut_down().await;
        });
    }

    /// Two write groups; clients 1-3 arrive together (one group, its
    /// COMMIT held), then client 4 (the second group, held too); the
    /// first COMMIT is let through, so the task that ran it (and answered
    /// three clients) takes the baton while the second waits: the
    /// committer, the gate, the clients still waiting.
    async fn a_task_gathering_after_three(
        store: &MemoryStore,
        index: &Arc<OpenedIndex>,
        patience: Duration,
    ) -> (
        Rc<GroupCommitter<ResponseWriter>>,
        Arc<tokio::sync::Semaphore>,
        tokio::task::JoinHandle<Vec<String>>,
    ) {
        let mut s = shared(store.clone());
        s.write_groups = 2;
        let committer = Rc::new(GroupCommitter::gathering_for(s, patience));
        let gate = store.hold_commits();
        let first: Vec<_> = (1..=3).map(|id| increment(&committer, index, id)).collect();
        let_run().await;
        let fourth = increment(&committer, index, 4);
        let_run().await;
        assert_eq!(calls_of(store, "begin"), 2, "{:?}", store.log());
        gate.add_permits(1);
        for client in first {
            assert_eq!(client.await.expect("client"), ["0\t1\t1\n"]);
        }
        (committer, gate, fourth)
    }

    #[test]
    fn a_group_gathers_as_many_clients_as_it_answered_while_another_commit_waits() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        local(async {
            let (committer, gate, fourth) =
                a_task_gathering_after_three(&store, &index, Duration::from_secs(60)).await;
            // One client back: not taken alone while the other COMMIT waits.
            let mut sent = vec![increment(&committer, &index, 5)];
            let_run().await;
            assert_eq!(calls_of(&store, "begin"), 2, "{:?}", store.log());
            // Three queued, as many as the task answered: one group.
            sent.push(increment(&committer, &index, 6));
            sent.push(increment(&committer, &index, 7));
            let_run().await;
            assert_eq!(calls_of(&store, "begin"), 3, "{:?}", store.log());
            gate.add_permits(2);
            for client in sent.into_iter().chain([fourth]) {
                assert_eq!(client.await.expect("client"), ["0\t1\t1\n"]);
            }
            assert_eq!(calls_of(&store, "commit"), 3, "{:?}", store.log());
            committer.shut_down().await;
        });
    }

    #[test]
    fn a_gathering_group_starts_when_the_other_commit_returns() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        local(async {
            let (committer, gate, fourth) =
                a_task_gathering_after_three(&store, &index, Duration::from_secs(60)).await;
            let fifth = increment(&committer, &index, 5);
            let_run().await;
            assert_eq!(calls_of(&store, "begin"), 2, "{:?}", store.log());
            // The other COMMIT returns: the wait ends with what is queued.
            gate.add_permits(1);
            assert_eq!(fourth.await.expect("fourth"), ["0\t1\t1\n"]);
            let_run().await;
            assert_eq!(calls_of(&store, "begin"), 3, "{:?}", store.log());
            gate.add_permits(1);
            assert_eq!(fifth.await.expect("fifth"), ["0\t1\t1\n"]);
            committer.shut_down().await;
        });
    }

    #[test]
    fn a_gathering_group_waits_no_longer_than_its_patience() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        local(async {
            let (committer, gate, fourth) =
                a_task_gathering_after_three(&store, &index, Duration::from_millis(5)).await;
            // The other COMMIT stays held: the write that came back alone
            // goes after 5 ms (with a minute's patience it waits: the test
            // above).
            let fifth = increment(&committer, &index, 5);
            let_run().await;
            assert_eq!(calls_of(&store, "begin"), 3, "{:?}", store.log());
            gate.add_permits(2);
            assert_eq!(fourth.await.expect("fourth"), ["0\t1\t1\n"]);
            assert_eq!(fifth.await.expect("fifth"), ["0\t1\t1\n"]);
            committer.shut_down().await;
        });
    }

    #[test]
    fn with_one_write_group_the_next_waits_for_the_commit() {
        let (store, table) = store(WriteBatching::OneAtATime);
        let index = open(&table, 1, 0, &[2], &[]);
        local(async {
            let (committer, gate, sent) =
                clients_behind_held_commits(&store, &index, 1, &[1, 2]).await;
            assert_eq!(calls_of(&store, "begin"), 1, "{:?}", store.log());
            gate.add_permits(2);
            for client in sent {
                assert_eq!(client.await.expect("client"), ["0\t1\t1\n"]);
            }
            assert_eq!(calls_of(&store, "commit"), 2, "{:?}", store.log());
            committer.shut_down().await;
        });
    }
}
