//! The queue between an event loop's client connections and the storage
//! tasks that serve them (the read batcher's runners, the group
//! committer). A connection pushes a job and awaits its reply; a task that
//! is free takes everything queued (up to a bound), so jobs that arrived
//! together run together. Nobody waits for company: a job pushed while a
//! task is idle wakes it at once.
//!
//! New work wakes the task that went idle last: under light load one task
//! (and one server connection) does everything while it is warm, instead
//! of the tasks taking turns.
//!
//! Stopping: once `shut_down` begins, new jobs are refused (their callers
//! answer "unavailable"), the tasks run what is queued, and `shut_down`
//! returns when every task has finished.

use crate::exec::{failure, Answer};
use hs_proto::ErrorKind;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::Notify;

use hsd_storage::ERR_UNAVAILABLE;

pub(crate) struct JobQueue<J> {
    jobs: RefCell<VecDeque<J>>,
    /// One wake-up per task.
    wake: Vec<Notify>,
    /// Idle tasks, the one that went idle last on top.
    idle: RefCell<Vec<usize>>,
    stopping: Cell<bool>,
    /// Tasks still running; `shut_down` waits for zero.
    running: Cell<usize>,
    stopped: Notify,
    /// Every push, for a busy task that waits for more company
    /// (`group_commit`'s gathering).
    pushed: Notify,
}

impl<J> JobQueue<J> {
    /// A queue served by `tasks` tasks, numbered from 0.
    pub(crate) fn new(tasks: usize) -> JobQueue<J> {
        JobQueue {
            jobs: RefCell::new(VecDeque::new()),
            wake: (0..tasks).map(|_| Notify::new()).collect(),
            idle: RefCell::new(Vec::new()),
            stopping: Cell::new(false),
            running: Cell::new(tasks),
            stopped: Notify::new(),
            pushed: Notify::new(),
        }
    }

    /// Queues a job and wakes an idle task; gives the job back once the
    /// queue is stopping.
    pub(crate) fn push(&self, job: J) -> Result<(), J> {
        if self.stopping.get() {
            return Err(job);
        }
        self.jobs.borrow_mut().push_back(job);
        self.wake_one();
        self.pushed.notify_waiters();
        Ok(())
    }

    /// How many jobs are queued.
    pub(crate) fn len(&self) -> usize {
        self.jobs.borrow().len()
    }

    /// Resolves at the next push after it was made (even if polled later).
    pub(crate) fn next_push(&self) -> tokio::sync::futures::Notified<'_> {
        self.pushed.notified()
    }

    /// Takes jobs from the front while `fits` accepts them (it sees each
    /// job before it is taken); wakes another task if some are left.
    pub(crate) fn take(&self, mut fits: impl FnMut(&J) -> bool) -> Vec<J> {
        let mut jobs = self.jobs.borrow_mut();
        let mut taken = Vec::new();
        while jobs.front().is_some_and(&mut fits) {
            taken.extend(jobs.pop_front());
        }
        let left = !jobs.is_empty();
        drop(jobs);
        if left {
            self.wake_one();
        }
        taken
    }

    /// Whether `shut_down` has begun.
    pub(crate) fn stopping(&self) -> bool {
        self.stopping.get()
    }

    /// Task `me` waits for work, or until `until`; whether work woke it.
    pub(crate) async fn idle(&self, me: usize, until: Option<Instant>) -> bool {
        let Some(wake) = self.wake.get(me) else {
            return false;
        };
        let woken = wake.notified();
        self.idle.borrow_mut().push(me);
        let work = match until {
            Some(at) => {
                tokio::select! {
                    _ = woken => true,
                    _ = tokio::time::sleep_until(at.into()) => false,
                }
            }
            None => {
                woken.await;
                true
            }
        };
        if !work {
            // Not picked: leave the idle stack.
            self.idle.borrow_mut().retain(|&t| t != me);
        }
        work
    }

    /// A task ends (after it saw `stopping` with nothing queued).
    pub(crate) fn task_done(&self) {
        self.running.set(self.running.get().saturating_sub(1));
        self.stopped.notify_waiters();
    }

    /// Refuses new jobs, lets the tasks run what is queued, and waits for
    /// every task to end.
    pub(crate) async fn shut_down(&self) {
        self.stopping.set(true);
        while self.running.get() > 0 {
            let stopped = self.stopped.notified();
            if self.running.get() == 0 {
                break;
            }
            for w in &self.wake {
                w.notify_one();
            }
            stopped.await;
        }
    }

    /// Wakes the task that went idle last, if any is idle (busy ones look
    /// at the queue when they finish).
    fn wake_one(&self) {
        if let Some(t) = self.idle.borrow_mut().pop() {
            self.wake[t].notify_one();
        }
    }
}

/// The answers of `n` requests that could not run: storage unavailable
/// (`1 1 2013`).
pub(crate) fn unavailable<A: Answer>(n: usize) -> Vec<A> {
    (0..n).map(|_| error_answer(ERR_UNAVAILABLE)).collect()
}

/// An answer that is the storage error `code` (`1 1 <code>`).
pub(crate) fn error_answer<A: Answer>(code: u32) -> A {
    failure(ErrorKind::Storage(code))
}
