//! The read batcher of an event loop whose storage is across a network:
//! `links` runner tasks, each owning one storage connection. A free runner
//! takes every job the loop's client connections queued meanwhile (up to a
//! bound, see `job_queue`) and runs their finds as one batch, so lookups
//! from many clients become few statements. A lone job runs at once.
//!
//! With several servers (`--replica`), the read port has one batcher per
//! server (`start_on`), and the dispatcher picks the batcher per client
//! batch; a batcher's connections all go to its server.

use crate::backend::{Backend, OpenedIndex, StorageConn};
use crate::exec::{self, ReadTask};
use crate::job_queue::{unavailable, JobQueue};
use crate::shared::Shared;
use hs_proto::{ErrorKind, OpenIndexRequest, ResponseWriter};
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Most finds one batch takes: bounds a batch's latency and memory, and
/// lets other runners start on the rest.
const MAX_BATCH_FINDS: usize = 512;

enum Job {
    Open {
        req: OpenIndexRequest,
        reply: oneshot::Sender<Result<Arc<OpenedIndex>, ErrorKind>>,
    },
    Finds {
        tasks: Vec<ReadTask>,
        /// The tasks back, each with its answer in `out`.
        reply: oneshot::Sender<Vec<ReadTask>>,
    },
}

pub(crate) struct ReadBatcher {
    queue: Rc<JobQueue<Job>>,
}

impl ReadBatcher {
    /// Starts `links` runner tasks on the current `LocalSet`.
    pub(crate) fn start<B: Backend>(shared: Shared<B>, links: usize) -> ReadBatcher {
        ReadBatcher::start_on(shared, links, None)
    }

    /// Starts `links` runner tasks whose connections go to `server` of a
    /// replicated set-up (`None`: `Backend::connect`'s).
    pub(crate) fn start_on<B: Backend>(
        shared: Shared<B>,
        links: usize,
        server: Option<usize>,
    ) -> ReadBatcher {
        let links = links.max(1);
        let queue = Rc::new(JobQueue::new(links));
        for me in 0..links {
            tokio::task::spawn_local(run(shared.clone(), queue.clone(), me, server));
        }
        ReadBatcher { queue }
    }

    /// Runs the finds; returns their answers in order.
    pub(crate) async fn reads(&self, tasks: Vec<ReadTask>) -> Vec<ResponseWriter> {
        let n = tasks.len();
        match self.run(tasks).await {
            Some(done) => done.into_iter().map(|t| t.out).collect(),
            None => unavailable(n),
        }
    }

    /// Runs the finds; returns them with their answers (in `out`), in
    /// order, so that a caller may run some again elsewhere. `None` when
    /// the batcher is stopping (nothing ran).
    pub(crate) async fn run(&self, tasks: Vec<ReadTask>) -> Option<Vec<ReadTask>> {
        let (reply, rx) = oneshot::channel();
        if self.queue.push(Job::Finds { tasks, reply }).is_err() {
            return None;
        }
        rx.await.ok()
    }

    pub(crate) async fn open(&self, req: OpenIndexRequest) -> Result<Arc<OpenedIndex>, ErrorKind> {
        let (reply, rx) = oneshot::channel();
        if self.queue.push(Job::Open { req, reply }).is_err() {
            return Err(ErrorKind::OpenTable);
        }
        rx.await.unwrap_or(Err(ErrorKind::OpenTable))
    }

    /// Runs what is queued, then stops the runners.
    pub(crate) async fn shut_down(&self) {
        self.queue.shut_down().await;
    }
}

/// Runner `me`: its own storage connection, made on first use.
async fn run<B: Backend>(
    shared: Shared<B>,
    queue: Rc<JobQueue<Job>>,
    me: usize,
    server: Option<usize>,
) {
    let mut storage: Option<B::Storage> = None;
    loop {
        let jobs = take_batch(&queue);
        if jobs.is_empty() {
            if queue.stopping() {
                break;
            }
            let deadline = storage.as_ref().and_then(StorageConn::idle_deadline);
            if !queue.idle(me, deadline).await {
                if let Some(c) = storage.as_mut() {
                    c.release_idle().await;
                }
            }
            continue;
        }
        if storage.is_none() {
            let made = match server {
                Some(i) => shared.backend.connect_to(i).await,
                None => shared.backend.connect().await,
            };
            match made {
                Ok(c) => storage = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, target = %shared.backend.describe_target(), "cannot connect to storage");
                }
            }
        }
        run_jobs(&shared, storage.as_mut(), jobs).await;
    }
    if let Some(c) = storage.as_mut() {
        c.release_idle().await;
    }
    queue.task_done();
}

/// Takes queued jobs, up to `MAX_BATCH_FINDS` finds (a job is never split).
fn take_batch(queue: &JobQueue<Job>) -> Vec<Job> {
    let mut finds = 0;
    queue.take(|job| match job {
        Job::Open { .. } => true,
        Job::Finds { tasks, .. } => {
            let fits = finds == 0 || finds + tasks.len() <= MAX_BATCH_FINDS;
            if fits {
                finds += tasks.len();
            }
            fits
        }
    })
}

/// Runs the opens, then every find of the batch together; each job gets
/// its own answers. Each client's finds keep their own answer bytes limit.
async fn run_jobs<B: Backend>(
    shared: &Shared<B>,
    mut storage: Option<&mut B::Storage>,
    jobs: Vec<Job>,
) {
    let mut all: Vec<ReadTask> = Vec::new();
    let mut replies: Vec<(usize, oneshot::Sender<Vec<ReadTask>>)> = Vec::new();
    for job in jobs {
        match job {
            Job::Open { req, reply } => {
                let result = match storage.as_deref_mut() {
                    Some(c) => exec::open_index(c, &shared.catalog, &req).await,
                    None => Err(ErrorKind::OpenTable),
                };
                let _ = reply.send(result);
            }
            Job::Finds { tasks, reply } => {
                let batch = replies.len();
                replies.push((tasks.len(), reply));
                all.extend(tasks.into_iter().map(|mut t| {
                    t.batch = batch;
                    t
                }));
            }
        }
    }
    if replies.is_empty() {
        return;
    }
    match storage {
        Some(c) => exec::run_reads(c, &mut all, shared.max_response_bytes).await,
        None => {
            let answers = unavailable(all.len());
            for (t, answer) in all.iter_mut().zip(answers) {
                t.out = answer;
            }
        }
    }
    let mut done = all.into_iter();
    for (n, reply) in replies {
        let _ = reply.send(done.by_ref().take(n).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::MemoryStore;
    use crate::backend::WriteBatching;
    use crate::exec::testing::{open, read_task, store};
    use crate::exec::Catalog;
    use crate::metrics::Metrics;

    fn shared(store: MemoryStore) -> Shared<MemoryStore> {
        Shared {
            backend: Arc::new(store),
            catalog: Arc::new(Catalog::default()),
            metrics: Metrics::new().expect("metrics"),
            max_response_bytes: 1 << 20,
        }
    }

    fn local<F: std::future::Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    fn text(answers: &[ResponseWriter]) -> Vec<String> {
        answers
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned())
            .collect()
    }

    #[test]
    fn each_client_gets_its_own_answers_in_order() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[3], &[]);
        local(async {
            let batcher = Rc::new(ReadBatcher::start(shared(store.clone()), 1));
            // Eight clients, each a batch of three lookups, all queued at once.
            let clients: Vec<_> = (0..8)
                .map(|c| {
                    let (batcher, index) = (batcher.clone(), index.clone());
                    tokio::task::spawn_local(async move {
                        let keys = [1 + c % 8, 1 + (c + 3) % 8, 1 + (c + 5) % 8];
                        let tasks = keys
                            .iter()
                            .map(|k| read_task(&index, &format!("1\t=\t1\t{k}")))
                            .collect();
                        (keys, batcher.reads(tasks).await)
                    })
                })
                .collect();
            for client in clients {
                let (keys, answers) = client.await.expect("client");
                let want: Vec<String> = keys.iter().map(|k| format!("0\t1\ts{k}\n")).collect();
                assert_eq!(text(&answers), want);
            }
            // All eight queued before the runner (woken by the first) had
            // its turn on the loop: one batch, one call.
            let scans: Vec<String> = store
                .log()
                .into_iter()
                .filter(|l| l.starts_with("scan"))
                .collect();
            assert_eq!(scans, ["scan x24"]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn a_batch_takes_at_most_its_bound_and_never_splits_a_job() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[3], &[]);
        local(async {
            let batcher = Rc::new(ReadBatcher::start(shared(store.clone()), 1));
            // 5 jobs of 200 finds each, all queued at once: 400, 400, 200.
            let jobs: Vec<_> = (0..5)
                .map(|_| {
                    let (batcher, index) = (batcher.clone(), index.clone());
                    tokio::task::spawn_local(async move {
                        let tasks = (0..200)
                            .map(|i| read_task(&index, &format!("1\t=\t1\t{}", 1 + i % 8)))
                            .collect();
                        batcher.reads(tasks).await
                    })
                })
                .collect();
            for job in jobs {
                let answers = job.await.expect("job");
                assert_eq!(answers.len(), 200);
                assert_eq!(text(&answers[..1]), ["0\t1\ts1\n"]);
            }
            let scans: Vec<String> = store
                .log()
                .into_iter()
                .filter(|l| l.starts_with("scan"))
                .collect();
            assert_eq!(scans, ["scan x400", "scan x400", "scan x200"]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn after_shutdown_finds_answer_unavailable() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[3], &[]);
        local(async {
            let batcher = ReadBatcher::start(shared(store), 2);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            assert_eq!(text(&answers), ["0\t1\ts2\n"]);
            batcher.shut_down().await;
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            assert_eq!(text(&answers), ["1\t1\t2013\n"]);
        });
    }

    #[test]
    fn a_lost_link_fails_only_its_batch() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[3], &[]);
        local(async {
            let batcher = ReadBatcher::start(shared(store.clone()), 1);
            store.fail_at(1, crate::backend::memory::Fault::LostLink);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            assert_eq!(text(&answers), ["1\t1\t2013\n"]);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t3")]).await;
            assert_eq!(text(&answers), ["0\t1\ts3\n"]);
            batcher.shut_down().await;
        });
    }
}
