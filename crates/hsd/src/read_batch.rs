//! The read batcher of an event loop whose storage is across a network:
//! `links` runner tasks, each owning its storage connections. A free runner
//! takes every job the loop's client connections queued meanwhile (up to a
//! bound, see `job_queue`) and runs their finds as one batch, so lookups
//! from many clients become few statements. A lone job runs at once.
//!
//! Every batch runs where the backend's read router says
//! (`hsd_storage::ReadRouter`). With one place to read from that is always the
//! same connection. With several (`--read-from replicas`), each job carries
//! what its finds must see as it was when the job arrived (every write hsd
//! had acknowledged), and a runner asks the router where its whole batch
//! may run: a place that has seen the newest of its jobs' positions. The
//! runner keeps a connection per place, made on first use. Routing whole
//! batches keeps them as large as on one server: each statement costs the
//! server, and halving batches across two replicas doubled the servers' CPU
//! per request (docs/benchmarks.md). Finds a place failed for being
//! unreachable run again elsewhere, once per place at most, and the router
//! is told, so that it leaves that place out: a replica going down costs
//! clients no error.

use crate::exec::{self, Answer, ReadTask};
use crate::job_queue::{unavailable, JobQueue};
use crate::shared::Shared;
use hs_proto::{ErrorKind, OpenIndexRequest};
use hsd_storage::{Backend, OpenedIndex, ReadRouter, StorageConn, StorageError};
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

/// What a runner's batch must have seen, in the router's terms.
type MustSee<B> = Option<Arc<<<B as Backend>::Router as ReadRouter>::Position>>;

enum Job<B: Backend, A: Answer> {
    Open {
        req: OpenIndexRequest,
        reply: oneshot::Sender<Result<Arc<OpenedIndex>, ErrorKind>>,
    },
    Finds {
        tasks: Vec<ReadTask<A>>,
        /// What the router said these finds must see when they arrived.
        must_see: MustSee<B>,
        reply: oneshot::Sender<Vec<A>>,
    },
}

pub(crate) struct ReadBatcher<B: Backend, A: Answer> {
    queue: Rc<JobQueue<Job<B, A>>>,
    router: Arc<B::Router>,
}

impl<B: Backend, A: Answer> ReadBatcher<B, A> {
    /// Starts `links` runner tasks on the current `LocalSet`, which run
    /// each batch where `router` (one of the backend's) says.
    pub(crate) fn start(
        shared: Shared<B>,
        links: usize,
        batch: BatchOf,
        router: Arc<B::Router>,
    ) -> ReadBatcher<B, A> {
        let links = links.max(1);
        let queue = Rc::new(JobQueue::new(links));
        for me in 0..links {
            tokio::task::spawn_local(run::<B, A>(
                shared.clone(),
                queue.clone(),
                me,
                batch,
                router.clone(),
            ));
        }
        ReadBatcher { queue, router }
    }

    /// Runs the finds; returns their answers in order.
    pub(crate) async fn reads(&self, tasks: Vec<ReadTask<A>>) -> Vec<A> {
        let n = tasks.len();
        // Taken now: the finds arrived before this point.
        let must_see = self.router.must_see();
        let (reply, rx) = oneshot::channel();
        if self
            .queue
            .push(Job::Finds {
                tasks,
                must_see,
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

/// A runner's storage connections, one per place of its router, each
/// made on first use.
struct Storages<B: Backend> {
    router: Arc<B::Router>,
    conns: Vec<Option<B::Storage>>,
}

impl<B: Backend> Storages<B> {
    /// Place `place`'s connection, made if needed; `None` when it cannot
    /// be made.
    async fn get(&mut self, shared: &Shared<B>, place: usize) -> Option<&mut B::Storage> {
        let slot = self.conns.get_mut(place)?;
        if slot.is_none() {
            match shared.backend.connect_at(&self.router, place).await {
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
async fn run<B: Backend, A: Answer>(
    shared: Shared<B>,
    queue: Rc<JobQueue<Job<B, A>>>,
    me: usize,
    batch: BatchOf,
    router: Arc<B::Router>,
) {
    let places = router.places().max(1);
    let mut storages = Storages::<B> {
        router,
        conns: (0..places).map(|_| None).collect(),
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
fn take_batch<B: Backend, A: Answer>(
    queue: &JobQueue<Job<B, A>>,
    batch: BatchOf,
) -> Vec<Job<B, A>> {
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
async fn run_jobs<B: Backend, A: Answer>(
    shared: &Shared<B>,
    storages: &mut Storages<B>,
    jobs: Vec<Job<B, A>>,
) {
    let mut all: Vec<ReadTask<A>> = Vec::new();
    // The client batch of each find: each has its own answer bytes limit.
    let mut clients: Vec<usize> = Vec::new();
    let mut replies: Vec<(usize, oneshot::Sender<Vec<A>>)> = Vec::new();
    // Jobs are taken in arrival order, and a later position covers every
    // earlier one: the last job's covers the batch.
    let mut must_see: MustSee<B> = None;
    for job in jobs {
        match job {
            Job::Open { req, reply } => {
                let _ = reply.send(open_index(shared, storages, &req).await);
            }
            Job::Finds {
                tasks,
                must_see: m,
                reply,
            } => {
                clients.extend(std::iter::repeat_n(replies.len(), tasks.len()));
                replies.push((tasks.len(), reply));
                all.extend(tasks);
                if m.is_some() {
                    must_see = m;
                }
            }
        }
    }
    if replies.is_empty() {
        return;
    }
    let all = run_finds(shared, storages, must_see.as_deref(), all, &clients).await;
    let mut answers = all.into_iter().map(|t| t.out);
    for (n, reply) in replies {
        let _ = reply.send(answers.by_ref().take(n).collect());
    }
}

/// Resolves a `P` where the router sends a read that must see nothing,
/// else at its fallback when that one failed (perhaps it just went away).
async fn open_index<B: Backend>(
    shared: &Shared<B>,
    storages: &mut Storages<B>,
    req: &OpenIndexRequest,
) -> Result<Arc<OpenedIndex>, ErrorKind> {
    let router = storages.router.clone();
    let at = router.route(None, 0).await.place;
    let result = match storages.get(shared, at).await {
        Some(c) => exec::open_index(c, &shared.catalog, req).await,
        None => Err(ErrorKind::OpenTable),
    };
    let fallback = router.fallback();
    match result {
        Err(_) if fallback != at => match storages.get(shared, fallback).await {
            Some(c) => exec::open_index(c, &shared.catalog, req).await,
            None => Err(ErrorKind::OpenTable),
        },
        result => result,
    }
}

/// Runs the batch's finds (of the client batches `clients` numbers, see
/// `exec::run_reads`) where the router says for `must_see`; with several
/// places, runs those a place failed (`ReadRouter::place_failed`) again
/// elsewhere.
async fn run_finds<B: Backend, A: Answer>(
    shared: &Shared<B>,
    storages: &mut Storages<B>,
    must_see: Option<&<B::Router as ReadRouter>::Position>,
    mut all: Vec<ReadTask<A>>,
    clients: &[usize],
) -> Vec<ReadTask<A>> {
    let max = shared.max_response_bytes;
    let router = storages.router.clone();
    let places = router.places();
    let route = router.route(must_see, all.len()).await;
    run_on(
        storages.get(shared, route.place).await,
        &mut all,
        clients,
        max,
    )
    .await;
    let place_failed = |t: &ReadTask<A>| t.failed.as_ref().is_some_and(|e| router.place_failed(e));
    if places <= 1 || !all.iter().any(place_failed) {
        return all;
    }
    // Some failed for the place's sake: run them again elsewhere.
    let mut failed_on = route.place;
    drop(route);
    let mut slots: Vec<Option<ReadTask<A>>> = Vec::with_capacity(all.len());
    let mut pending: Vec<(usize, ReadTask<A>)> = Vec::new();
    let mut error: Option<StorageError> = None;
    for (i, t) in all.into_iter().enumerate() {
        if place_failed(&t) {
            pending.push((i, take_failure(t, &mut error)));
            slots.push(None);
        } else {
            slots.push(Some(t));
        }
    }
    for attempt in 1..=places {
        if let Some(e) = error.take() {
            router.unreachable(failed_on, &e);
        }
        let route = router.route(must_see, pending.len()).await;
        let (ids, mut batch): (Vec<usize>, Vec<ReadTask<A>>) = pending.into_iter().unzip();
        let batch_clients: Vec<usize> = ids.iter().map(|&i| clients[i]).collect();
        run_on(
            storages.get(shared, route.place).await,
            &mut batch,
            &batch_clients,
            max,
        )
        .await;
        pending = Vec::new();
        for (i, t) in ids.into_iter().zip(batch) {
            if place_failed(&t) && attempt < places {
                pending.push((i, take_failure(t, &mut error)));
            } else {
                slots[i] = Some(t);
            }
        }
        if pending.is_empty() {
            break;
        }
        failed_on = route.place;
    }
    // Every slot is filled: the last attempt keeps whatever it answered.
    slots.into_iter().flatten().collect()
}

/// Clears a failed find's answer to run it again; keeps the first failure
/// to tell the router.
fn take_failure<A: Answer>(mut task: ReadTask<A>, first: &mut Option<StorageError>) -> ReadTask<A> {
    task.out = A::with_capacity(0);
    if let Some(e) = task.failed.take() {
        first.get_or_insert(e);
    }
    task
}

/// Runs finds on `storage`, or answers them unavailable without one.
async fn run_on<C: StorageConn, A: Answer>(
    storage: Option<&mut C>,
    tasks: &mut [ReadTask<A>],
    clients: &[usize],
    max: usize,
) {
    match storage {
        Some(c) => exec::run_reads(c, tasks, clients, max).await,
        None => {
            let answers = unavailable(tasks.len());
            for (t, answer) in tasks.iter_mut().zip(answers) {
                t.out = answer;
                t.failed = Some(StorageError::Unavailable(
                    "no connection to the storage".into(),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::testing::{open, read_task, store};
    use crate::shared::testing::{local, shared, text};
    use hs_proto::ResponseWriter;
    use hsd_storage::memory::{Fault, MemoryStore};
    use hsd_storage::{ReadSide, WriteBatching};

    /// A batcher of the store's read side, with `links` runners.
    fn batcher(store: &MemoryStore, links: usize) -> ReadBatcher<MemoryStore, ResponseWriter> {
        let router = store.read_router(ReadSide::Reads);
        ReadBatcher::start(shared(store.clone()), links, BatchOf::Many, router)
    }

    #[test]
    fn each_client_gets_its_own_answers_in_order() {
        let (store, table) = store(WriteBatching::Batched);
        let index = open(&table, 1, 0, &[3], &[]);
        local(async {
            let batcher = Rc::new(batcher(&store, 1));
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
            let batcher = Rc::new(batcher(&store, 1));
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
            let batcher = batcher(&store, 2);
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
            let batcher = batcher(&store, 1);
            store.fail_at(1, Fault::LostLink);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            assert_eq!(text(&answers), ["1\t1\t2013\n"]);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t3")]).await;
            assert_eq!(text(&answers), ["0\t1\ts3\n"]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn finds_a_place_failed_run_again_elsewhere_and_the_router_is_told() {
        let (store, table) = store(WriteBatching::Batched);
        let store = store.with_places(3);
        let index = open(&table, 1, 0, &[3], &[]);
        store.make_unreachable(1);
        local(async {
            let batcher = batcher(&store, 1);
            let answers = batcher
                .reads(vec![
                    read_task(&index, "1\t=\t1\t2"),
                    read_task(&index, "1\t=\t1\t3"),
                ])
                .await;
            assert_eq!(text(&answers), ["0\t1\ts2\n", "0\t1\ts3\n"]);
            // Place 1 failed the grouped scan and each find alone (exec's
            // own second try); both ran again, together, on place 2.
            assert_eq!(
                store.log(),
                ["scan x2 @1", "scan x1 @1", "scan x1 @1", "scan x2 @2"]
            );
            assert_eq!(store.router().routes(), [1, 2]);
            assert_eq!(store.router().reported_unreachable(), [1]);
            // The router leaves place 1 out from now on.
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t4")]).await;
            assert_eq!(text(&answers), ["0\t1\ts4\n"]);
            assert_eq!(store.router().routes(), [1, 2, 2]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn a_batch_runs_where_what_its_finds_must_see_was_applied() {
        let (store, table) = store(WriteBatching::Batched);
        let store = store.with_places(3);
        let index = open(&table, 1, 0, &[3], &[]);
        let router = store.router().clone();
        local(async {
            let batcher = batcher(&store, 1);
            // A write answered: place 1 lags, place 2 has it.
            router.write();
            router.set_applied(2, 1);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            assert_eq!(text(&answers), ["0\t1\ts2\n"]);
            // Another: no place but the primary has it.
            router.write();
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t3")]).await;
            assert_eq!(text(&answers), ["0\t1\ts3\n"]);
            assert_eq!(router.routes(), [2, 0]);
            assert_eq!(store.log(), ["scan x1 @2", "scan x1"]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn finds_no_place_can_serve_answer_unavailable_after_each_place_was_tried() {
        let (store, table) = store(WriteBatching::Batched);
        let store = store.with_places(3);
        let index = open(&table, 1, 0, &[3], &[]);
        for place in 0..3 {
            store.make_unreachable(place);
        }
        local(async {
            let batcher = batcher(&store, 1);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            assert_eq!(text(&answers), ["1\t1\t2013\n"]);
            assert_eq!(store.router().reported_unreachable(), [1, 2, 0]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn an_open_its_place_failed_runs_on_the_fallback() {
        let (store, _table) = store(WriteBatching::Batched);
        let store = store.with_places(2);
        store.make_unreachable(1);
        local(async {
            let batcher = batcher(&store, 1);
            let Ok(hs_proto::Request::OpenIndex(req)) =
                hs_proto::parse_request(b"P\t1\tdb\tt\tPRIMARY\tid,s")
            else {
                panic!("not an open");
            };
            let opened = batcher.open(req).await.expect("opened on the primary");
            assert_eq!(opened.columns, [0, 3]);
            assert_eq!(store.log(), ["describe db.t @1", "describe db.t"]);
            batcher.shut_down().await;
        });
    }

    #[test]
    fn the_write_side_never_routes() {
        let (store, table) = store(WriteBatching::Batched);
        let store = store.with_places(3);
        let index = open(&table, 1, 0, &[3], &[]);
        store.make_unreachable(0);
        local(async {
            let router = store.read_router(ReadSide::Writes);
            let batcher = ReadBatcher::start(shared(store.clone()), 1, BatchOf::Many, router);
            let answers = batcher.reads(vec![read_task(&index, "1\t=\t1\t2")]).await;
            // Its one place failed: that is the answer.
            assert_eq!(text(&answers), ["1\t1\t2013\n"]);
            assert_eq!(store.log(), ["scan x1"]);
            assert!(store.router().routes().is_empty());
            batcher.shut_down().await;
        });
    }
}
