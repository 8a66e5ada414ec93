//! Threads for the finds that may read many rows, on a store that computes
//! on the calling thread (the embedded store, `LongReads::Threads`): run
//! there, a scan that walks a million rows for one answer never holds up
//! the lookups of an event loop. Every loop shares them. Each thread owns
//! one storage connection, made on the thread, and runs one client batch
//! at a time; a thread with nothing to do gives back what its connection
//! must not hold idle (`StorageConn::idle_deadline`).

use crate::exec::{self, Answer, ReadTask};
use crate::job_queue::unavailable;
use hsd_storage::{Backend, StorageConn};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// One client batch of finds, run by a thread on its connection (`None`
/// when it has none) and runtime; it sends its answers itself, so that
/// the threads serve any protocol front's answers.
type Job<B> = Box<dyn FnOnce(Option<&mut <B as Backend>::Storage>, &Runtime) + Send>;

pub(crate) struct ReadThreads<B: Backend> {
    /// `None` once shut down.
    jobs: Mutex<Option<mpsc::Sender<Job<B>>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// What each client batch's answers may hold.
    max_bytes: usize,
}

impl<B: Backend> ReadThreads<B> {
    /// Starts `n` threads reading through connections of `backend`; each
    /// client batch's answers may hold `max_bytes`.
    pub(crate) fn start(
        backend: Arc<B>,
        n: usize,
        max_bytes: usize,
    ) -> std::io::Result<ReadThreads<B>> {
        let (tx, rx) = mpsc::channel::<Job<B>>();
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::new();
        for i in 0..n.max(1) {
            let (backend, rx) = (backend.clone(), rx.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("hsd-scan-{i}"))
                    .spawn(move || serve(&*backend, &rx))?,
            );
        }
        Ok(ReadThreads {
            jobs: Mutex::new(Some(tx)),
            threads: Mutex::new(threads),
            max_bytes,
        })
    }

    /// Runs one client batch of finds; its answers, in order.
    pub(crate) async fn reads<A: Answer>(&self, tasks: Vec<ReadTask<A>>) -> Vec<A> {
        let n = tasks.len();
        let max_bytes = self.max_bytes;
        let (reply, answers) = oneshot::channel();
        let job: Job<B> = Box::new(move |storage, runtime| {
            let answers = match storage {
                Some(c) => {
                    let mut tasks = tasks;
                    // One client's batch.
                    let clients = vec![0; tasks.len()];
                    runtime.block_on(exec::run_reads(c, &mut tasks, &clients, max_bytes));
                    tasks.into_iter().map(|t| t.out).collect()
                }
                None => unavailable(tasks.len()),
            };
            let _ = reply.send(answers);
        });
        let sent = {
            let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok())
        };
        if !sent {
            return unavailable(n);
        }
        answers.await.unwrap_or_else(|_| unavailable(n))
    }

    /// Lets the threads finish what is queued, then ends them.
    pub(crate) fn shut_down(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}

/// One thread: its own runtime (the executor's calls are `async`; on this
/// store they never wait on I/O) and its own storage connection.
fn serve<B: Backend>(backend: &B, jobs: &Mutex<mpsc::Receiver<Job<B>>>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start a scan thread's runtime");
            return;
        }
    };
    let mut storage: Option<B::Storage> = None;
    loop {
        let wait = storage
            .as_ref()
            .and_then(StorageConn::idle_deadline)
            .map(|at| at.saturating_duration_since(Instant::now()));
        let next = {
            let rx = jobs.lock().unwrap_or_else(|p| p.into_inner());
            match wait {
                Some(wait) => rx.recv_timeout(wait.max(Duration::from_millis(1))),
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            }
        };
        let job = match next {
            Ok(job) => job,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(c) = storage.as_mut() {
                    runtime.block_on(c.release_idle());
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if storage.is_none() {
            match runtime.block_on(backend.connect()) {
                Ok(c) => storage = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, target = %backend.describe_target(), "cannot connect to storage");
                }
            }
        }
        job(storage.as_mut(), &runtime);
    }
    if let Some(c) = storage.as_mut() {
        runtime.block_on(c.release_idle());
    }
}
