//! The topology of a replicated MySQL/MariaDB: which configured server takes
//! writes now, how far each has applied, which may serve reads. It answers
//! the two questions routing asks, and nothing else decides routes:
//!
//! - `writer()`: which server takes writes now (exactly one writable
//!   server; none or two refuse writes with the reason).
//! - `route_read(frontier)`: where may a read run so that it sees every
//!   write hsd acknowledged before it arrived. `frontier()` is the position
//!   of those writes: each commit's GTID is recorded (`note_commit`) before
//!   the commit is answered, so a snapshot taken when a read arrives covers
//!   every write answered before.
//!
//! A thread of its own (`hsd-topology`, see `poll`) polls every server each
//! `--topology-interval` and, while reads wait for a replica, asks that
//! replica to report as soon as it has applied what they need
//! (`MASTER_GTID_WAIT`). Its findings land here, under one lock; the
//! decisions themselves are pure functions (`decide`). Reads are routed in
//! `route`; the metric families are registered in `metrics`; `strict`
//! asks the writer's position for `--read-consistency strict`.
//!
//! Servers are numbered as configured: 0 is `--backend`, then each
//! `--replica` in order.

pub(crate) mod decide;
mod metrics;
pub(crate) mod observe;
mod poll;
mod route;
mod strict;

pub(crate) use self::route::ReadRoute;
pub(crate) use self::strict::WriterPositions;

use self::decide::{Health, Role, Writer};
use self::metrics::{role_index, ServerMetrics, TopologyMetrics};
use super::link::LinkSettings;
use hsd_storage::StorageError;
use mysql_wire::Flavor;
use mysql_wire::GtidSet;
use prometheus::Registry;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Past this many ranges the frontier is merged with the writer's position.
const MAX_FRONTIER_RANGES: usize = 64;

/// Where the read port's finds run (`--read-from`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ReadFrom {
    Primary,
    Replicas,
}

/// One configured server.
#[derive(Clone)]
pub(crate) struct ServerSpec {
    /// How the poll and wait connections reach it (the URL's options:
    /// TLS, socket), made once by the backend, which connects the same way.
    pub(crate) link: LinkSettings,
    /// `host:port`, for logs and metrics (no password).
    pub(crate) name: String,
}

#[derive(Clone)]
pub(crate) struct TopologySettings {
    /// `--backend` first, then every `--replica`.
    pub(crate) servers: Vec<ServerSpec>,
    pub(crate) read_from: ReadFrom,
    /// `--topology-interval`.
    pub(crate) interval: Duration,
    /// `--replica-wait`.
    pub(crate) replica_wait: Duration,
    /// `--mysql-timeout`: the first poll's wait, and the poll's statements.
    pub(crate) timeout: Duration,
}

/// What a commit reported.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Commit<'a> {
    /// The GTID text the server reported for it.
    Gtid(&'a [u8]),
    /// The connection could not learn the GTID (no session tracking): the
    /// commit may hold anything, so replicas serve nothing until a poll of
    /// the writer that began after it.
    Untracked,
}

/// Per-server parts that are not behind the lock.
struct Server {
    spec: ServerSpec,
    in_flight: AtomicUsize,
    /// Wakes this server's waiter task: a read now waits for it.
    demand_added: Notify,
    metrics: ServerMetrics,
}

struct State {
    health: Vec<Health>,
    /// Best knowledge of each server's applied position: set by its polls,
    /// raised by its waits.
    known: Vec<GtidSet>,
    writer: Writer,
    /// The last server chosen as writer (`--backend` before any poll):
    /// reads with `--read-from primary`, and reads no replica may serve,
    /// go there while no writer is chosen.
    last_writer: usize,
    /// Since when `last_writer` is the writer.
    writer_since: Instant,
    roles: Vec<Role>,
    /// The position of every write hsd acknowledged.
    frontier: Arc<GtidSet>,
    /// A commit whose GTID is unknown happened at this time: until a poll
    /// of the writer that began later, no replica serves.
    untracked_since: Option<Instant>,
    /// What reads waiting for each server need (the union).
    demand: Vec<GtidSet>,
    /// Reads waiting for each server.
    waiting: Vec<usize>,
    /// Spreads reads over equally loaded servers.
    turn: usize,
    /// Servers whose positions say nothing since the writer's GTID
    /// history started again (`history_restarted`): no reads until a poll
    /// of the writer, begun after the server's last poll ended, shows the
    /// server's position within the writer's.
    unproven: Vec<bool>,
    /// When each server's last poll ended.
    polled: Vec<Option<Instant>>,
    /// The writer's logged position at its last poll, and which server.
    last_logged: Option<(usize, GtidSet)>,
    /// The GTIDs of the commits hsd noted (`GtidSet::commit_marks`: per
    /// MariaDB domain the latest, per MySQL source the highest number),
    /// apart from what polls merged into the frontier: a new commit's GTID
    /// that is not past what was noted before it was sent shows the
    /// writer's history started again.
    noted: GtidSet,
}

pub(crate) struct Topology {
    settings: TopologySettings,
    servers: Vec<Server>,
    state: Mutex<State>,
    /// Positions or roles changed: waiting reads look again.
    changed: Notify,
    stop: Notify,
    stopping: std::sync::atomic::AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The primary (`read_primary`) and how many times it changed: a
    /// follower of the primary's binlog (the row cache's reader) restarts
    /// on each change, and serves nothing until it has.
    primary: tokio::sync::watch::Sender<Primary>,
    /// `primary`'s count, read without a lock by every cached read.
    primary_changes: AtomicU64,
}

/// The server reads and writes go to, and the number of changes of it so
/// far (a change back to the same server counts: history may differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Primary {
    pub(crate) server: usize,
    pub(crate) changes: u64,
}

impl Topology {
    /// Starts the poll thread and waits (up to `--mysql-timeout`) for a
    /// first poll of every server, so that hsd starts with the roles the
    /// servers have. Unreachable servers are no error: they are polled
    /// again every interval.
    pub(crate) async fn start(
        settings: TopologySettings,
        registry: &Registry,
    ) -> anyhow::Result<Arc<Topology>> {
        let topology = Topology::new(settings, registry)?;
        let first_round = poll::spawn(topology.clone())?;
        let _ = tokio::time::timeout(topology.settings.timeout, first_round).await;
        Ok(topology)
    }

    /// The topology before any poll (the poll thread not started).
    fn new(settings: TopologySettings, registry: &Registry) -> anyhow::Result<Arc<Topology>> {
        anyhow::ensure!(!settings.servers.is_empty(), "no MySQL server configured");
        let metrics = TopologyMetrics::register(registry)?;
        let n = settings.servers.len();
        let mut servers = Vec::with_capacity(n);
        for spec in &settings.servers {
            servers.push(Server {
                metrics: metrics.for_server(&spec.name),
                spec: spec.clone(),
                in_flight: AtomicUsize::new(0),
                demand_added: Notify::new(),
            });
        }
        let now = Instant::now();
        let topology = Arc::new(Topology {
            servers,
            state: Mutex::new(State {
                health: vec![Health::Unknown; n],
                known: vec![GtidSet::default(); n],
                writer: Writer::One(0),
                last_writer: 0,
                writer_since: now,
                roles: vec![Role::Unusable("not polled yet".into()); n],
                frontier: Arc::new(GtidSet::default()),
                untracked_since: None,
                demand: vec![GtidSet::default(); n],
                waiting: vec![0; n],
                turn: 0,
                unproven: vec![false; n],
                polled: vec![None; n],
                last_logged: None,
                noted: GtidSet::default(),
            }),
            changed: Notify::new(),
            stop: Notify::new(),
            stopping: false.into(),
            thread: Mutex::new(None),
            primary: tokio::sync::watch::Sender::new(Primary {
                server: 0,
                changes: 0,
            }),
            primary_changes: AtomicU64::new(0),
            settings,
        });
        Ok(topology)
    }

    /// Stops the poll thread (and waits for it).
    pub(crate) fn shut_down(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.stop.notify_waiters();
        let handle = lock(&self.thread).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    pub(crate) fn server_count(&self) -> usize {
        self.servers.len()
    }

    pub(crate) fn server_name(&self, server: usize) -> &str {
        &self.servers[server].spec.name
    }

    /// The server's one set of link settings (the connector's, the
    /// poll's, the cache's reader and position asker's); `None` for a
    /// number the topology does not have.
    pub(crate) fn link(&self, server: usize) -> Option<&LinkSettings> {
        self.servers.get(server).map(|s| &s.spec.link)
    }

    pub(crate) fn read_from(&self) -> ReadFrom {
        self.settings.read_from
    }

    /// Where reads go that must run on the primary: the writer, or the
    /// last one while no server may take writes.
    pub(crate) fn read_primary(&self) -> usize {
        lock(&self.state).read_primary()
    }

    /// The primary now; `primary_changed` wakes on each change.
    pub(crate) fn primary(&self) -> Primary {
        *self.primary.borrow()
    }

    /// Changes of the primary so far (no lock: for every cached read).
    pub(crate) fn primary_changes(&self) -> u64 {
        self.primary_changes.load(Ordering::Acquire)
    }

    /// Follows the primary's changes.
    pub(crate) fn primary_changed(&self) -> tokio::sync::watch::Receiver<Primary> {
        self.primary.subscribe()
    }

    /// Whether the server is a Galera node (as last polled).
    pub(crate) fn is_galera(&self, server: usize) -> bool {
        lock(&self.state)
            .health
            .get(server)
            .and_then(Health::observation)
            .is_some_and(|o| o.galera.is_some())
    }

    /// The position of every write hsd acknowledged so far.
    pub(crate) fn frontier(&self) -> Arc<GtidSet> {
        lock(&self.state).frontier.clone()
    }

    /// The GTIDs of the commits noted so far: taken by a write
    /// connection before it sends a COMMIT, for `note_commit_since`.
    pub(crate) fn noted(&self) -> GtidSet {
        lock(&self.state).noted.clone()
    }

    /// Records a commit made on `server`, before it is answered, as the
    /// only commit in flight (tests).
    #[cfg(test)]
    pub(crate) fn note_commit(&self, server: usize, commit: Commit<'_>) {
        let before = self.noted();
        self.note_commit_since(server, commit, &before);
    }

    /// Records a commit made on `server`, before it is answered. `before`
    /// is what was noted when its COMMIT (or autocommitted write) was sent:
    /// its GTID, assigned after that, must be past it, or the writer's
    /// history started again. Commits in flight on other connections at the
    /// same time may be noted in either order (their answers race), so a
    /// GTID below one noted meanwhile proves nothing.
    pub(crate) fn note_commit_since(&self, server: usize, commit: Commit<'_>, before: &GtidSet) {
        let flavor = {
            let st = lock(&self.state);
            st.health
                .get(server)
                .and_then(Health::observation)
                .map(|o| o.flavor)
        };
        let parsed = match commit {
            Commit::Gtid(text) => {
                let text = String::from_utf8_lossy(text);
                let p = match flavor {
                    Some(Flavor::MySql | Flavor::Vitess) => GtidSet::parse_mysql(&text),
                    Some(Flavor::MariaDb) => GtidSet::parse_mariadb(&text),
                    // Not polled yet: a MariaDB GTID never parses as a
                    // MySQL set, and the other way round.
                    None => GtidSet::parse_mariadb(&text).or_else(|_| GtidSet::parse_mysql(&text)),
                };
                match p {
                    Ok(p) => Some(p),
                    Err(e) => {
                        tracing::warn!(server = %self.server_name(server), error = %e,
                            "a commit's GTID is unreadable; reads go to the primary until the next poll");
                        None
                    }
                }
            }
            Commit::Untracked => None,
        };
        let mut st = lock(&self.state);
        match parsed {
            Some(p) if before.reuses(&p) && st.writer == Writer::One(server) => {
                st.noted = p.commit_marks();
                self.history_restarted(&mut st, server, p, "a commit's GTID was not past the last");
            }
            Some(p) if !st.frontier.covers(&p) => {
                st.noted.merge(&p.commit_marks());
                let mut f = (*st.frontier).clone();
                f.merge(&p);
                st.frontier = Arc::new(f);
            }
            Some(p) => st.noted.merge(&p.commit_marks()),
            None => {
                // The latest such commit: a poll that began after an
                // earlier one may have read the writer's position before
                // this one, and must not let replicas serve.
                st.untracked_since = Some(Instant::now());
            }
        }
    }

    /// The server that takes writes now, or why none does.
    pub(crate) fn writer(&self) -> Result<usize, StorageError> {
        match &lock(&self.state).writer {
            Writer::One(w) => Ok(*w),
            Writer::None(why) => Err(StorageError::Unavailable(format!(
                "no server takes writes: {why}"
            ))),
            Writer::Conflict(servers) => Err(StorageError::Unavailable(format!(
                "writes refused: {} are all writable (read_only=OFF); set read_only=ON on \
                 all but one",
                self.names(servers)
            ))),
        }
    }

    /// A read on `server` failed because the server could not be reached:
    /// it serves no more reads until a poll reaches it again.
    pub(crate) fn note_unreachable(&self, server: usize, error: &StorageError) {
        let mut st = lock(&self.state);
        if matches!(st.health[server], Health::Down(_)) {
            return;
        }
        tracing::warn!(server = %self.server_name(server), %error,
            "server failed a read; its reads move elsewhere until a poll reaches it again");
        st.health[server] = Health::Down(error.to_string());
        self.decide(&mut st);
    }

    /// The roles as they stand.
    pub(crate) fn roles(&self) -> Vec<Role> {
        lock(&self.state).roles.clone()
    }

    fn names(&self, servers: &[usize]) -> String {
        servers
            .iter()
            .map(|&i| self.server_name(i))
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// A poll of `server` that began at `started` (when the frontier was
    /// `frontier_then`) finished.
    fn apply_poll(&self, server: usize, started: Instant, frontier_then: &GtidSet, health: Health) {
        let mut st = lock(&self.state);
        if let Health::Up(o) = &health {
            // A poll's position replaces what waits learnt: it is the
            // server's own word (a rebuilt replica may be behind what it
            // once reported).
            st.known[server] = o.applied.clone();
        }
        if let Health::Down(e) = &health {
            if !matches!(st.health[server], Health::Down(_)) {
                tracing::warn!(server = %self.server_name(server), error = %e, "cannot poll server");
            }
        }
        st.health[server] = health;
        st.polled[server] = Some(Instant::now());
        self.decide(&mut st);
        if st.writer == Writer::One(server) {
            self.check_history(&mut st, server, started);
            self.check_frontier(&mut st, server, started, frontier_then);
        }
        self.update_lag_metrics(&st);
        drop(st);
        self.changed.notify_waiters();
    }

    /// The writer's GTID history started again (`RESET MASTER`, a restored
    /// backup): its new GTIDs compare as older than what replicas applied
    /// before, so every other server's position proves nothing until a
    /// poll shows it within the writer's (`check_history`); the frontier
    /// starts again from `from`.
    fn history_restarted(&self, st: &mut State, w: usize, from: GtidSet, why: &str) {
        tracing::warn!(
            server = %self.server_name(w), %why, position = %from,
            "the writer's GTID history started again (RESET MASTER or a restored backup?): \
             replicas serve no reads until a poll shows each within the writer's history"
        );
        st.frontier = Arc::new(from);
        st.untracked_since = None;
        for (i, u) in st.unproven.iter_mut().enumerate() {
            *u = i != w;
        }
        self.decide(st);
    }

    /// After a poll of the writer that began at `started`: a logged position
    /// that went backwards restarts the history; servers whose last poll
    /// ended before `started` and whose position lies within the writer's
    /// are proven again.
    fn check_history(&self, st: &mut State, w: usize, started: Instant) {
        let Some(o) = st.health[w].observation() else {
            return;
        };
        if o.galera.is_some() {
            return;
        }
        let logged = o.logged.clone();
        let went_back =
            matches!(&st.last_logged, Some((was, prev)) if *was == w && !logged.covers(prev));
        st.last_logged = Some((w, logged.clone()));
        if went_back {
            st.noted = GtidSet::default();
            self.history_restarted(
                st,
                w,
                logged.clone(),
                "its binary log position went backwards",
            );
            return;
        }
        let mut proven = Vec::new();
        for i in 0..st.unproven.len() {
            if !st.unproven[i] || st.polled[i].is_none_or(|t| t > started) {
                continue;
            }
            let within = st.health[i]
                .observation()
                .is_some_and(|r| logged.covers(&r.applied));
            if within {
                st.unproven[i] = false;
                proven.push(i);
            }
        }
        if !proven.is_empty() {
            for &i in &proven {
                tracing::info!(server = %self.server_name(i), "its position lies within the writer's history again");
            }
            self.decide(st);
        }
    }

    /// After a poll of the writer: commits of unknown GTID are now in its
    /// position; writes it does not have, two intervals after it became
    /// the writer, were lost with an earlier primary (nobody can show them,
    /// and waiting for them would keep every read off the replicas).
    fn check_frontier(&self, st: &mut State, w: usize, started: Instant, frontier_then: &GtidSet) {
        let Some(o) = st.health[w].observation() else {
            return;
        };
        if o.galera.is_some() {
            return;
        }
        let logged = o.logged.clone();
        let mut f = (*st.frontier).clone();
        let mut changed = false;
        if st.untracked_since.is_some_and(|t| t <= started) {
            f.merge(&logged);
            st.untracked_since = None;
            changed = true;
        }
        if started >= st.writer_since + 2 * self.settings.interval && !logged.covers(frontier_then)
        {
            let lost = logged.missing(frontier_then);
            f = f.without_lost(frontier_then, &logged);
            tracing::warn!(
                server = %self.server_name(w), lost, writer_position = %logged,
                "the primary does not have {lost} transaction(s) hsd acknowledged (lost with an \
                 earlier primary); reads stop waiting for them"
            );
            changed = true;
        }
        // MySQL: hsd's own GTIDs interleave with other writers' and would
        // fragment the set; the writer's whole position is a superset
        // that replicas reach as well.
        if f.range_count() > MAX_FRONTIER_RANGES {
            f.merge(&logged);
            changed = true;
        }
        if changed {
            st.frontier = Arc::new(f);
        }
    }

    /// A wait on `server` learnt (at least) this position.
    fn apply_wait(&self, server: usize, applied: &GtidSet) {
        let mut st = lock(&self.state);
        st.known[server].merge(applied);
        drop(st);
        self.changed.notify_waiters();
    }

    /// Decides writer and roles again; logs what changed.
    fn decide(&self, st: &mut State) {
        let writer = decide::choose_writer(&st.health, Some(st.last_writer));
        if writer != st.writer {
            match &writer {
                Writer::One(w) => {
                    tracing::info!(server = %self.server_name(*w), "takes the writes")
                }
                Writer::None(why) => tracing::error!("no server takes writes: {why}"),
                Writer::Conflict(servers) => tracing::error!(
                    "{} are all writable (read_only=OFF): writes are refused until all but one \
                     are read-only",
                    self.names(servers)
                ),
            }
            if let Writer::One(w) = writer {
                if w != st.last_writer {
                    st.last_writer = w;
                    st.writer_since = Instant::now();
                    // Under the state lock, before any write can be sent
                    // to `w` (`writer()` takes the lock): a read that
                    // arrives after such a write sees the change.
                    let changes = self.primary_changes.fetch_add(1, Ordering::AcqRel) + 1;
                    self.primary.send_replace(Primary { server: w, changes });
                }
            }
            st.writer = writer;
        }
        let mut roles = decide::roles(&st.health, &st.writer);
        for (role, unproven) in roles.iter_mut().zip(&st.unproven) {
            if *unproven && *role == Role::Replica {
                *role = Role::Unusable(
                    "the writer's GTID history started again since its position was read; \
                     it serves again once a poll shows it within the writer's"
                        .into(),
                );
            }
        }
        for (i, (old, new)) in st.roles.iter().zip(&roles).enumerate() {
            if old != new {
                match new {
                    Role::Unusable(why) => {
                        tracing::warn!(server = %self.server_name(i), "not used: {why}")
                    }
                    r => tracing::info!(server = %self.server_name(i), role = r.label(), "in use"),
                }
                let m = &self.servers[i].metrics;
                m.roles[role_index(old)].set(0);
                m.roles[role_index(new)].set(1);
            }
        }
        st.roles = roles;
    }

    fn update_lag_metrics(&self, st: &State) {
        let primary = st.health[st.last_writer]
            .observation()
            .map(|o| o.logged.clone());
        for (i, h) in st.health.iter().enumerate() {
            let m = &self.servers[i].metrics;
            let Some(o) = h.observation() else {
                m.lag_seconds.set(-1);
                m.lag_transactions.set(-1);
                continue;
            };
            if let Some(g) = &o.galera {
                m.lag_seconds.set(0);
                m.lag_transactions
                    .set(i64::try_from(g.recv_queue).unwrap_or(i64::MAX));
                continue;
            }
            if i == st.last_writer {
                m.lag_seconds.set(0);
                m.lag_transactions.set(0);
                continue;
            }
            let secs = o
                .replication
                .as_ref()
                .and_then(|r| r.seconds_behind)
                .map_or(-1, |s| i64::try_from(s).unwrap_or(i64::MAX));
            m.lag_seconds.set(secs);
            let trx = primary.as_ref().map_or(-1, |p| {
                i64::try_from(st.known[i].missing(p)).unwrap_or(i64::MAX)
            });
            m.lag_transactions.set(trx);
        }
    }

    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

impl State {
    /// Where reads go that no replica serves.
    fn read_primary(&self) -> usize {
        match self.writer {
            Writer::One(w) => w,
            _ => self.last_writer,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A topology without servers for other modules' tests: three servers,
/// polled by hand (s1 the primary, s2 and s3 replicas at its position).
#[cfg(test)]
pub(crate) fn polled_for_tests(read_from: ReadFrom) -> Arc<Topology> {
    let t = tests::topology(read_from, 1000);
    tests::poll_all(&t, "0-1-10", "0-1-10", "0-1-10");
    t
}

#[cfg(test)]
mod tests {
    //! The topology's state without servers: polls and waits are fed by
    //! hand, as the poll thread would.
    use super::observe::{Observation, Replication};
    use super::*;
    use mysql_wire::MysqlUrl;

    pub(super) fn topology(read_from: ReadFrom, replica_wait_ms: u64) -> Arc<Topology> {
        let servers = (1..=3)
            .map(|i| ServerSpec {
                link: LinkSettings::new(
                    MysqlUrl::parse(&format!("mysql://u:p@127.0.0.1:{i}")).expect("url"),
                    Duration::from_secs(3),
                )
                .expect("link settings"),
                name: format!("s{i}"),
            })
            .collect();
        Topology::new(
            TopologySettings {
                servers,
                read_from,
                interval: Duration::from_millis(100),
                replica_wait: Duration::from_millis(replica_wait_ms),
                timeout: Duration::from_secs(3),
            },
            &Registry::new(),
        )
        .expect("topology")
    }

    /// A position in MariaDB's form, or MySQL's (`uuid:1-5`).
    pub(super) fn pos(s: &str) -> GtidSet {
        if s.contains(':') {
            GtidSet::parse_mysql(s).expect("position")
        } else {
            GtidSet::parse_mariadb(s).expect("position")
        }
    }

    fn up(read_only: bool, pos_text: &str, replicating: bool) -> Health {
        Health::Up(Observation {
            flavor: if pos_text.contains(':') {
                Flavor::MySql
            } else {
                Flavor::MariaDb
            },
            read_only,
            log_bin: true,
            applied: pos(if replicating { pos_text } else { "" }),
            logged: pos(pos_text),
            replication: replicating.then(|| Replication {
                sql_running: true,
                io_running: true,
                seconds_behind: Some(0),
                last_error: String::new(),
                diverged: None,
                source_server_id: None,
                filters: Vec::new(),
            }),
            identity: None,
            server_id: None,
            replication_visible: true,
            galera: None,
        })
    }

    /// s1 primary at `p1`, s2 and s3 replicas at `p2`, `p3`.
    pub(super) fn poll_all(t: &Topology, p1: &str, p2: &str, p3: &str) {
        let now = Instant::now();
        let f = t.frontier();
        t.apply_poll(0, now, &f, up(false, p1, false));
        t.apply_poll(1, now, &f, up(true, p2, true));
        t.apply_poll(2, now, &f, up(true, p3, true));
    }

    pub(super) fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn an_unknown_commit_holds_reads_on_the_primary_until_a_later_poll() {
        let t = topology(ReadFrom::Replicas, 1000);
        poll_all(&t, "0-1-10", "0-1-10", "0-1-10");
        let before = Instant::now();
        t.note_commit(0, Commit::Untracked);
        let rt = rt();
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
        // A poll that began before the commit proves nothing.
        t.apply_poll(0, before, &t.frontier(), up(false, "0-1-11", false));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
        // One that began after: its position holds the commit.
        t.apply_poll(0, Instant::now(), &t.frontier(), up(false, "0-1-11", false));
        assert_eq!(*t.frontier(), pos("0-1-11"));
        t.apply_poll(1, Instant::now(), &t.frontier(), up(true, "0-1-11", true));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 1);
    }

    /// Two commits of unknown GTID, and a poll of the writer that began
    /// between them (its position has the first, not the second): replicas
    /// still serve nothing until a poll that began after the second. Before,
    /// the first commit's time was kept and that poll let a replica without
    /// the second serve (1 of 40 reads stale in CI with the tracker off).
    #[test]
    fn a_poll_between_two_unknown_commits_proves_only_the_first() {
        let t = topology(ReadFrom::Replicas, 1000);
        poll_all(&t, "0-1-10", "0-1-10", "0-1-10");
        t.note_commit(0, Commit::Untracked);
        let between = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        t.note_commit(0, Commit::Untracked);
        let rt = rt();
        t.apply_poll(0, between, &t.frontier(), up(false, "0-1-11", false));
        t.apply_poll(1, Instant::now(), &t.frontier(), up(true, "0-1-11", true));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
        t.apply_poll(0, Instant::now(), &t.frontier(), up(false, "0-1-12", false));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
        t.apply_poll(1, Instant::now(), &t.frontier(), up(true, "0-1-12", true));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 1);
    }

    /// `RESET MASTER` on the writer: its next commit's GTID is not past the
    /// last one hsd noted, replicas whose old, larger positions would
    /// "cover" it serve nothing until a poll of the writer that began after
    /// theirs shows them within its new history.
    #[test]
    fn a_restarted_gtid_history_holds_reads_until_replicas_are_within_it() {
        let t = topology(ReadFrom::Replicas, 0);
        poll_all(&t, "0-1-300", "0-1-300", "0-1-300");
        t.note_commit(0, Commit::Gtid(b"0-1-300"));
        let rt = rt();
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 1);
        // After the reset.
        t.note_commit(0, Commit::Gtid(b"0-1-1"));
        assert_eq!(*t.frontier(), pos("0-1-1"));
        for _ in 0..4 {
            assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
        }
        // s2 still shows its old position: not within the writer's.
        t.apply_poll(1, Instant::now(), &t.frontier(), up(true, "0-1-300", true));
        t.apply_poll(0, Instant::now(), &t.frontier(), up(false, "0-1-1", false));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
        // s2 applied the new history; a writer poll begun later proves it.
        t.apply_poll(1, Instant::now(), &t.frontier(), up(true, "0-1-1", true));
        t.apply_poll(0, Instant::now(), &t.frontier(), up(false, "0-1-1", false));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 1);
        // The writer's logged position going backwards does the same.
        t.apply_poll(0, Instant::now(), &t.frontier(), up(false, "0-1-0", false));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
    }

    /// Two write connections' COMMITs in flight at once: their answers may
    /// be noted in either order, and the lower GTID noted second is no
    /// restarted history (it was not past what was noted before it was
    /// sent, only past what was noted meanwhile).
    #[test]
    fn commits_in_flight_together_may_be_noted_in_either_order() {
        let t = topology(ReadFrom::Replicas, 0);
        poll_all(&t, "0-1-10", "0-1-10", "0-1-10");
        let before = t.noted();
        t.note_commit_since(0, Commit::Gtid(b"0-1-12"), &before);
        t.note_commit_since(0, Commit::Gtid(b"0-1-11"), &before);
        assert_eq!(*t.frontier(), pos("0-1-12"));
        let rt = rt();
        t.apply_poll(1, Instant::now(), &t.frontier(), up(true, "0-1-12", true));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 1);
        // A commit sent after both were noted, with a GTID not past them:
        // the history started again.
        let after = t.noted();
        t.note_commit_since(0, Commit::Gtid(b"0-1-2"), &after);
        assert_eq!(*t.frontier(), pos("0-1-2"));
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
    }

    /// The same on MySQL: the writer numbers its own transactions upwards,
    /// so a commit numbered not past what was noted before it was sent
    /// shows a restarted history at once, and commits in flight together
    /// may be noted in either order.
    #[test]
    fn a_restarted_mysql_history_is_seen_at_the_commit() {
        const W: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        let t = topology(ReadFrom::Replicas, 0);
        let at = |n: &str| format!("{W}:{n}");
        poll_all(&t, &at("1-300"), &at("1-300"), &at("1-300"));
        let rt = rt();
        let before = t.noted();
        t.note_commit_since(0, Commit::Gtid(at("302").as_bytes()), &before);
        t.note_commit_since(0, Commit::Gtid(at("301").as_bytes()), &before);
        assert!(t.frontier().covers(&pos(&at("301-302"))));
        t.apply_poll(
            1,
            Instant::now(),
            &t.frontier(),
            up(true, &at("1-302"), true),
        );
        assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 1);
        // RESET MASTER: the writer numbers from 1 again.
        let before = t.noted();
        t.note_commit_since(0, Commit::Gtid(at("1").as_bytes()), &before);
        assert_eq!(*t.frontier(), pos(&at("1")));
        for _ in 0..4 {
            assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 0);
        }
    }

    #[test]
    fn writes_lost_with_an_old_primary_leave_the_frontier_after_two_intervals() {
        let t = topology(ReadFrom::Replicas, 1000);
        poll_all(&t, "0-1-12", "0-1-10", "0-1-10");
        t.note_commit(0, Commit::Gtid(b"0-1-12"));
        // s1 dies; s2 promoted with 0-1-10: two transactions lost.
        let f = t.frontier();
        t.apply_poll(0, Instant::now(), &f, Health::Down("refused".into()));
        t.apply_poll(1, Instant::now(), &f, up(false, "0-1-10", false));
        assert_eq!(t.writer().ok(), Some(1));
        // Right after the promotion the new writer may still be applying
        // what it received: nothing is cut yet.
        t.apply_poll(1, Instant::now(), &f, up(false, "0-1-10", false));
        assert_eq!(*t.frontier(), pos("0-1-12"));
        std::thread::sleep(Duration::from_millis(210));
        t.apply_poll(1, Instant::now(), &f, up(false, "0-1-10", false));
        assert_eq!(*t.frontier(), pos("0-1-10"));
    }

    #[test]
    fn an_unreachable_replica_is_left_out_until_a_poll_reaches_it() {
        let t = topology(ReadFrom::Replicas, 1000);
        poll_all(&t, "0-1-10", "0-1-10", "0-1-10");
        t.note_unreachable(1, &StorageError::Unavailable("reset".into()));
        let rt = rt();
        for _ in 0..4 {
            assert_eq!(rt.block_on(t.route_read(&t.frontier(), 1)).server, 2);
        }
        t.apply_poll(1, Instant::now(), &t.frontier(), up(true, "0-1-10", true));
        let servers: Vec<usize> = (0..4)
            .map(|_| rt.block_on(t.route_read(&t.frontier(), 1)).server)
            .collect();
        assert!(servers.contains(&1), "{servers:?}");
    }

    #[test]
    fn two_writable_servers_refuse_writes_naming_both() {
        let t = topology(ReadFrom::Primary, 1000);
        poll_all(&t, "0-1-10", "0-1-10", "0-1-10");
        t.apply_poll(2, Instant::now(), &t.frontier(), up(false, "0-1-10", true));
        let e = t.writer().expect_err("refused").to_string();
        assert!(e.contains("s1 and s3 are all writable"), "{e}");
        // Reads on the primary go on.
        assert_eq!(rt().block_on(t.route_read(&t.frontier(), 1)).server, 0);
        t.apply_poll(2, Instant::now(), &t.frontier(), up(true, "0-1-10", true));
        assert_eq!(t.writer().ok(), Some(0));
    }
}
