//! The read batcher of an event loop whose storage is across a network:
//! `links` runner tasks, each owning its storage connections. A free runner
//! takes every job the loop's client connections queued meanwhile (up to a
//! bound, see `job_queue`) and runs their finds as one batch, so lookups
//! from many clients become few statements. A lone job runs at once.
//!
//! With several servers and `--read-from replicas` (`start_routed`), each
//! job carries the topology's frontier as it was when the job arrived
//! (every write hsd had acknowledged), and a runner asks the topology where
//! its whole batch may run: a replica that has applied the newest of its
//! jobs' frontiers, else (after `--replica-wait`) the primary. The runner
//! keeps a connection per server, made on first use. Routing whole batches
//! keeps them as large as on one server: each statement costs the server,
//! and halving batches across two replicas doubled the servers' CPU per
//! request (docs/benchmarks.md). Finds a server failed for being
//! unreachable (`1 1 2013`) run again elsewhere, once per server at most,
//! and the topology leaves that server out until a poll reaches it again:
//! a replica going down costs clients no error.

use crate::backend::mysql::topology::gtid::Position;
use crate::backend::mysql::topology::Topology;
use crate::backend::{Backend, OpenedIndex, StorageConn, StorageError, ERR_UNAVAILABLE};
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

/// How much of the queue one batch takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchOf {
    /// Every client's finds queued meanwhile, up to `MAX_BATCH_FINDS`.
    Many,
    /// One client's finds: long scans, whose answers may be big, are not
    /// joined (one's answer then never holds up another's, and what a
    /// batch holds is one client's answer).
    One,
}

enum Job {
    Open {
        req: OpenIndexRequest,
        reply: oneshot::Sender<Result<Arc<OpenedIndex>, ErrorKind>>,
    },
    Finds {
        tasks: Vec<ReadTask>,
        /// Routed: every write acknowledged before these finds arrived.
        frontier: Option<Arc<Position>>,
        reply: oneshot::Sender<Vec<ResponseWriter>>,
    },
}

pub(crate) struct ReadBatcher {
    queue: Rc<JobQueue<Job>>,
    topology: Option<Arc<Topology>>,
}

impl ReadBatcher {
    /// Starts `links` runner tasks on the current `LocalSet`; their
    /// connections are `Backend::connect`'s.
    pub(crate) fn start<B: Backend>(
        shared: Shared<B>,
        links: usize,
        batch: BatchOf,
    ) -> ReadBatcher {
        ReadBatcher::start_with(shared, links, batch, None)
    }

    /// Starts `links` runner tasks that run each batch where `topology`
    /// says (see the module's doc).
    pub(crate) fn start_routed<B: Backend>(
        shared: Shared<B>,
        links: usize,
        batch: BatchOf,
        topology: Arc<Topology>,
    ) -> ReadBatcher {
        ReadBatcher::start_with(shared, links, batch, Some(topology))
    }

    fn start_with<B: Backend>(
        shared: Shared<B>,
        links: usize,
        batch: BatchOf,
        topology: Option<Arc<Topology>>,
    ) -> ReadBatcher {
        let links = links.max(1);
        let queue = Rc::new(JobQueue::new(links));
        for me in 0..links {
            tokio::task::spawn_local(run(
                shared.clone(),
                queue.clone(),
                me,
                batch,
                topology.clone(),
            ));
        }
        ReadBatcher { queue, topology }
    }

    /// Runs the finds; returns their answers in order.
    pub(crate) async fn reads(&self, tasks: Vec<ReadTask>) -> Vec<ResponseWriter> {
        let n = tasks.len();
        // Taken now: the finds arrived before this point.
        let frontier = self.topology.as_ref().map(|t| t.frontier());
        let (reply, rx) = oneshot::channel();
        if self
            .queue
            .push(Job::Finds {
                tasks,
                frontier,
                reply,
            })
            .is_err()
        {
            return unavailable(n);
        }
        rx.await.unwrap_or_else(|_| unavailable(n))
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

/// A runner's storage connections: one, or one per server of a topology;
/// each made on first use.
struct Storages<B: Backend> {
    topology: Option<Arc<Topology>>,
    conns: Vec<Option<B::Storage>>,
}

impl<B: Backend> Storages<B> {
    /// Server `server`'s connection (without a topology: the one), made if
    /// needed; `None` when it cannot be made.
    async fn get(&mut self, shared: &Shared<B>, server: usize) -> Option<&mut B::Storage> {
        let slot = self.conns.get_mut(server)?;
        if slot.is_none() {
            let made = match &self.topology {
                Some(_) => shared.backend.connect_to(server).await,
                None => shared.backend.connect().await,
            };
            match made {
                Ok(c) => *slot = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, target = %shared.backend.describe_target(), "cannot connect to storage");
                }
            }
        }
        slot.as_mut()
    }

    fn idle_deadline(&self) -> Option<std::time::Instant> {
        self.conns
            .iter()
            .flatten()
            .filter_map(StorageConn::idle_deadline)
            .min()
    }

    async fn release_idle(&mut self) {
        for c in self.conns.iter_mut().flatten() {
            c.release_idle().await;
        }
    }
}

/// Runner `me`.
async fn run<B: Backend>(
    shared: Shared<B>,
    queue: Rc<JobQueue<Job>>,
    me: usize,
    batch: BatchOf,
    topology: Option<Arc<Topology>>,
) {
    let servers = topology.as_ref().map_or(1, |t| t.server_count());
    let mut storages = Storages::<B> {
        topology,
        conns: (0..servers).map(|_| None).collect(),
    };
    loop {
        let jobs = take_batch(&queue, batch);
        if jobs.is_empty() {
            if queue.stopping() {
                break;
            }
            if !queue.idle(me, storages.idle_deadline()).await {
                storages.release_idle().await;
            }
            continue;
        }
        run_jobs(&shared, &mut storages, jobs).await;
    }
    storages.release_idle().await;
    queue.task_done();
}

/// Takes queued jobs, up to `MAX_BATCH_FINDS` finds, or one client's (a
/// job is never split).
fn take_batch(queue: &JobQueue<Job>, batch: BatchOf) -> Vec<Job> {
    let mut finds = 0;
    let mut jobs = 0;
    queue.take(|job| match job {
        Job::Open { .. } => true,
        Job::Finds { tasks, .. } => {
            let fits = match batch {
                BatchOf::Many => finds == 0 || finds + tasks.len() <= MAX_BATCH_FINDS,
                BatchOf::One => jobs == 0,
            };
            if fits {
                finds += tasks.len();
                jobs += 1;
            }
            fits
        }
    })
}

/// Runs the opens, then every find of the batch together; each job gets
/// its own answers. Each client's finds keep their own answer bytes limit.
async fn run_jobs<B: Backend>(shared: &Shared<B>, storages: &mut Storages<B>, jobs: Vec<Job>) {
    let mut all: Vec<ReadTask> = Vec::new();
    let mut replies: Vec<(usize, oneshot::Sender<Vec<ResponseWriter>>)> = Vec::new();
    // Jobs are taken in arrival order, and a later frontier holds every
    // earlier one: the last job's covers the batch.
    let mut frontier: Option<Arc<Position>> = None;
    for job in jobs {
        match job {
            Job::Open { req, reply } => {
                let _ = reply.send(open_index(shared, storages, &req).await);
            }
            Job::Finds {
                tasks,
                frontier: f,
                reply,
            } => {
                let batch = replies.len();
                replies.push((tasks.len(), reply));
                all.extend(tasks.into_iter().map(|mut t| {
                    t.batch = batch;
                    t
                }));
                if f.is_some() {
                    frontier = f;
                }
            }
        }
    }
    if replies.is_empty() {
        return;
    }
    let all = run_finds(shared, storages, frontier.as_deref(), all).await;
    let mut answers = all.into_iter().map(|t| t.out);
    for (n, reply) in replies {
        let _ = reply.send(answers.by_ref().take(n).collect());
    }
}

/// Resolves a `P`. Routed: on any usable server (metadata needs no
/// position), else on the primary when that one failed (perhaps it just
/// went away).
async fn open_index<B: Backend>(
    shared: &Shared<B>,
    storages: &mut Storages<B>,
    req: &OpenIndexRequest,
) -> Result<Arc<OpenedIndex>, ErrorKind> {
    let Some(topology) = storages.topology.clone() else {
        return match storages.get(shared, 0).await {
            Some(c) => exec::open_index(c, &shared.catalog, req).await,
            None => Err(ErrorKind::OpenTable),
        };
    };
    let at = topology.route_read(&Position::default(), 0).await.server;
    let result = match storages.get(shared, at).await {
        Some(c) => exec::open_index(c, &shared.catalog, req).await,
        None => Err(ErrorKind::OpenTable),
    };
    let primary = topology.read_primary();
    match result {
        Err(_) if primary != at => match storages.get(shared, primary).await {
            Some(c) => exec::open_index(c, &shared.catalog, req).await,
            None => Err(ErrorKind::OpenTable),
        },
        result => result,
    }
}

/// Runs the batch's finds: on the one server, or where the topology says
/// for `frontier`, running those a server failed for being unreachable
/// again elsewhere.
async fn run_finds<B: Backend>(
    shared: &Shared<B>,
    storages: &mut Storages<B>,
    frontier: Option<&Position>,
    mut all: Vec<ReadTask>,
) -> Vec<ReadTask> {
    let max = shared.max_response_bytes;
    let Some(topology) = storages.topology.clone() else {
        run_on(storages.get(shared, 0).await, &mut all, max).await;
        return all;
    };
    let none = Position::default();
    let frontier = frontier.unwrap_or(&none);
    let route = topology.route_read(frontier, all.len()).await;
    run_on(storages.get(shared, route.server).await, &mut all, max).await;
    if !all.iter().any(|t| is_unreachable(&t.out)) {
        return all;
    }
    // Some failed for the server's sake: run them again elsewhere.
    let servers = topology.server_count();
    let mut failed_on = route.server;
    drop(route);
    let mut slots: Vec<Option<ReadTask>> = Vec::with_capacity(all.len());
    let mut pending: Vec<(usize, ReadTask)> = Vec::new();
    for (i, mut t) in all.into_iter().enumerate() {
        if is_unreachable(&t.out) {
            t.out.clear();
            pending.push((i, t));
            slots.push(None);
        } else {
            slots.push(Some(t));
        }
    }
    for attempt in 1..=servers {
        topology.note_unreachable(
            failed_on,
            &StorageError::Unavailable("finds failed with 2013".into()),
        );
        let route = topology.route_read(frontier, pending.len()).await;
        let (ids, mut batch): (Vec<usize>, Vec<ReadTask>) = pending.into_iter().unzip();
        run_on(storages.get(shared, route.server).await, &mut batch, max).await;
        pending = Vec::new();
        for (i, mut t) in ids.into_iter().zip(batch) {
            if is_unreachable(&t.out) && attempt < servers {
                t.out.clear();
                pending.push((i, t));
            } else {
                slots[i] = Some(t);
            }
        }
        if pending.is_empty() {
            break;
        }
        failed_on = route.server;
    }
    // Every slot is filled: the last attempt keeps whatever it answered.
    slots.into_iter().flatten().collect()
}

/// Runs finds on `storage`, or answers them unavailable without one.
async fn run_on<C: StorageConn>(storage: Option<&mut C>, tasks: &mut [ReadTask], max: usize) {
    match storage {
        Some(c) => exec::run_reads(c, tasks, max).await,
        None => {
            let answers = unavailable(tasks.len());
            for (t, answer) in tasks.iter_mut().zip(answers) {
                t.out = answer;
            }
        }
    }
}

/// An answer saying the server could not be reached (`1 1 2013`).
fn is_unreachable(answer: &ResponseWriter) -> bool {
    answer.is_error() && answer.as_bytes() == UNREACHABLE_ANSWER
}

const UNREACHABLE_ANSWER: &[u8] = b"1\t1\t2013\n";
const _: () = assert!(ERR_UNAVAILABLE == 2013);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::WriteBatching;
    use crate::exec::testing::{open, read_task, store};
    use crate::shared::testing::{local, shared, text};

    #[test]
    fn each_client_gets_its_own_answers_in_order() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[3], &[]);
        local(async {
            let batcher = Rc::new(ReadBatcher::start(shared(store.clone()), 1, BatchOf::Many));
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
            let batcher = Rc::new(ReadBatcher::start(shared(store.clone()), 1, BatchOf::Many));
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
            let batcher = ReadBatcher::start(shared(store), 2, BatchOf::Many);
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
            let batcher = ReadBatcher::start(shared(store.clone()), 1, BatchOf::Many);
            store.fail_at(1, crate::backend::memory::Fault::LostLink);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            assert_eq!(text(&answers), ["1\t1\t2013\n"]);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t3")]).await;
            assert_eq!(text(&answers), ["0\t1\ts3\n"]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn routed_finds_a_server_failed_run_again_elsewhere() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[3], &[]);
        let topology = crate::backend::mysql::topology::polled_for_tests(
            crate::backend::mysql::topology::ReadFrom::Replicas,
        );
        local(async {
            let batcher = ReadBatcher::start_routed(
                shared(store.clone()),
                1,
                BatchOf::Many,
                topology.clone(),
            );
            // The first server's link is lost: its grouped scan and the
            // scans of each find alone (exec's own second try) fail.
            for call in 1..=3 {
                store.fail_at(call, crate::backend::memory::Fault::LostLink);
            }
            let answers = batcher
                .reads(vec![
                    read_task(&index, "1\t=\t1\t2"),
                    read_task(&index, "1\t=\t1\t3"),
                ])
                .await;
            assert_eq!(text(&answers), ["0\t1\ts2\n", "0\t1\ts3\n"]);
            // That replica is left out until a poll reaches it.
            let unusable = topology
                .roles()
                .iter()
                .filter(|r| {
                    matches!(
                        r,
                        crate::backend::mysql::topology::decide::Role::Unusable(_)
                    )
                })
                .count();
            assert_eq!(unusable, 1, "{:?} {:?}", topology.roles(), store.log());
            batcher.shut_down().await;
        });
    }
}
