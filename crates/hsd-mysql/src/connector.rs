//! Makes server connections for every event loop, and keeps them from all
//! waiting on a server that cannot be reached: after a failed attempt the
//! others fail at once for a short pause while one caller probes.

use super::in_doubt::{MarkerCheck, MarkerTable};
use super::link::{Failure, Link, LinkSettings};
use hsd_storage::{StorageError, ERR_LOCK_WAIT_TIMEOUT};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::OwnedMutexGuard;

/// After the server could not be reached, how long other callers fail at
/// once instead of each waiting for their own connect attempt.
const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// After the server refused a connection for its limits, how long other
/// callers fail at once before one tries again.
const LIMIT_PAUSE: Duration = Duration::from_millis(200);
/// While refusals go on, how often they are logged.
const LIMIT_LOG_EVERY: Duration = Duration::from_secs(60);
/// How long after a refusal idle connections are given back.
const PRESSURE_WINDOW: Duration = Duration::from_secs(10);
/// How long a connection stays idle before it is given back then.
pub(super) const PRESSURE_IDLE: Duration = Duration::from_millis(500);

pub(super) struct Connector {
    pub(super) settings: LinkSettings,
    pub(super) target: String,
    /// Until when connect attempts fail at once (someone is probing, or the
    /// last attempt failed).
    paused_until: Mutex<Option<Instant>>,
    /// Per table without transactions (by its SQL name): held by the
    /// connection reading its rows to change them (`serialize_modifies`).
    modify_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Where write groups mark their commits (`in_doubt`), and whether it
    /// is there.
    marker: Option<MarkerTable>,
    marker_state: Mutex<MarkerState>,
    /// Why the marker table is not trusted, and when it was last looked at.
    marker_untrusted: Mutex<Option<(String, Instant)>>,
    /// The server rolls a whole transaction back when a lock wait times
    /// out (`innodb_rollback_on_timeout`, learnt at each login).
    rollback_on_timeout: AtomicBool,
    limits: Mutex<Limits>,
    /// The pause in `paused_until` follows a refusal for limits, not an
    /// unreachable server.
    limit_paused: AtomicBool,
    /// The last connect attempt's outcome and when it ended (`None`: none
    /// yet): what readiness probes answer while it is recent.
    last_attempt: Mutex<Option<(Instant, Result<(), String>)>>,
}

/// How long the last connect attempt's outcome answers a readiness probe;
/// older, the probe connects (and logs in) itself.
const REACHABILITY_FRESH: Duration = Duration::from_secs(5);

/// Connections the server refused for its connection limits (the
/// account's MAX_USER_CONNECTIONS, the server's max_connections).
#[derive(Debug, Default)]
struct Limits {
    /// The last refusal.
    last: Option<Instant>,
    /// Refusals since the last one logged, and when that was.
    unlogged: u64,
    logged_at: Option<Instant>,
    /// Refusals were logged and their end was not yet: a connection made
    /// `PRESSURE_WINDOW` after the last refusal ends them, with a log line.
    episode: bool,
}

/// Whether the commit marker table can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MarkerState {
    /// Not looked at yet (no connection made so far).
    Unchecked,
    /// A connection is making sure it exists.
    Checking,
    Ready,
    /// It could not be made: groups are not marked, and an unanswered
    /// COMMIT is answered as in doubt.
    Unusable,
    /// It exists but its rows could not be trusted (`in_doubt::marker_problem`):
    /// writes are refused until it is fixed or dropped (hsd then makes it).
    Untrusted,
}

/// How often a write looks again at a marker table found untrusted.
const MARKER_RECHECK: Duration = Duration::from_secs(1);

impl Connector {
    pub(super) fn new(settings: LinkSettings, target: String) -> Connector {
        Connector {
            paused_until: Mutex::new(None),
            modify_locks: Mutex::default(),
            marker: settings
                .url
                .options
                .commit_marker
                .as_ref()
                .map(|(db, table)| MarkerTable::new(db, table)),
            marker_state: Mutex::new(MarkerState::Unchecked),
            marker_untrusted: Mutex::new(None),
            rollback_on_timeout: AtomicBool::new(false),
            limits: Mutex::default(),
            limit_paused: AtomicBool::new(false),
            last_attempt: Mutex::new(None),
            settings,
            target,
        }
    }

    /// The commit marker table, once it is known to be there.
    pub(super) fn marker(&self) -> Option<&MarkerTable> {
        let state = *self.marker_state.lock().unwrap_or_else(|p| p.into_inner());
        self.marker.as_ref().filter(|_| state == MarkerState::Ready)
    }

    /// Whether a lock wait that timed out ended the whole transaction
    /// (as the server said at the last login).
    pub(super) fn rollback_on_timeout(&self) -> bool {
        self.rollback_on_timeout.load(Ordering::Relaxed)
    }

    /// Why writes are refused now: the marker table exists but cannot be
    /// trusted, so neither a lost COMMIT nor (with a table of another
    /// engine) a rolled-back one could be told from a committed one.
    pub(super) fn writes_refused(&self) -> Option<StorageError> {
        let untrusted = self
            .marker_untrusted
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (why, _) = untrusted.as_ref()?;
        Some(StorageError::Unavailable(
            super::preflight::marker_untrusted(why),
        ))
    }

    /// The resolver found the marker table untrusted (changed since it
    /// was checked): writes are refused from now on, as at a check.
    pub(super) fn distrust_marker(&self, why: &str) {
        let mut held = self
            .marker_untrusted
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if held.is_none() {
            tracing::error!("{}", super::preflight::marker_untrusted(why));
        }
        *held = Some((why.to_string(), Instant::now()));
        *self.marker_state.lock().unwrap_or_else(|p| p.into_inner()) = MarkerState::Untrusted;
    }

    /// While writes are refused for the marker table: whether to look at
    /// it again now (at most every `MARKER_RECHECK`).
    pub(super) fn marker_recheck_due(&self) -> bool {
        let mut untrusted = self
            .marker_untrusted
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match untrusted.as_mut() {
            Some((_, at)) if at.elapsed() >= MARKER_RECHECK => {
                *at = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Looks at the marker table again on `link` (after `marker_recheck_due`).
    pub(super) async fn recheck_marker(&self, link: &mut Link) -> Result<(), Failure> {
        *self.marker_state.lock().unwrap_or_else(|p| p.into_inner()) = MarkerState::Unchecked;
        self.check_marker(link).await
    }

    /// On the first connection made: makes sure the marker table exists
    /// and can be trusted (once per process, and again while it cannot; a
    /// failure is logged with what to do).
    async fn check_marker(&self, link: &mut Link) -> Result<(), Failure> {
        self.rollback_on_timeout
            .store(link.rollback_on_timeout, Ordering::Relaxed);
        let Some(marker) = &self.marker else {
            return Ok(());
        };
        {
            let mut state = self.marker_state.lock().unwrap_or_else(|p| p.into_inner());
            if *state != MarkerState::Unchecked {
                return Ok(());
            }
            if link.server.is_vitess() {
                tracing::info!("{}", super::preflight::VITESS_NO_MARKER);
                *state = MarkerState::Unusable;
                return Ok(());
            }
            *state = MarkerState::Checking;
        }
        let check = marker.ensure(link).await;
        let mut untrusted = None;
        let next = match &check {
            MarkerCheck::Usable => MarkerState::Ready,
            // The link broke: the next connection looks again.
            MarkerCheck::Failed(StorageError::Unavailable(_)) => MarkerState::Unchecked,
            MarkerCheck::Failed(e) => {
                tracing::warn!(
                    "{}",
                    super::preflight::marker_unusable(&marker.table_sql, e)
                );
                MarkerState::Unusable
            }
            MarkerCheck::Untrusted(u) => {
                untrusted = Some(u.0.clone());
                MarkerState::Untrusted
            }
        };
        match untrusted {
            Some(why) => self.distrust_marker(&why),
            None => {
                if next == MarkerState::Ready {
                    let mut held = self
                        .marker_untrusted
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    if held.take().is_some() {
                        tracing::info!(table = %marker.table_sql, "the commit marker table can be trusted again; writes resume");
                    }
                }
                *self.marker_state.lock().unwrap_or_else(|p| p.into_inner()) = next;
            }
        }
        match check {
            MarkerCheck::Failed(StorageError::Unavailable(m)) => Err(Failure {
                error: StorageError::Unavailable(m),
                link_lost: true,
                retryable: false,
            }),
            _ => Ok(()),
        }
    }

    /// Takes the modify lock of table `table_sql` (see
    /// `StorageConn::serialize_modifies`), waiting at most the link timeout:
    /// beyond it the write is answered as a lock wait that timed out.
    pub(super) async fn serialize_modifies(
        &self,
        table_sql: &str,
    ) -> Result<OwnedMutexGuard<()>, StorageError> {
        let lock = {
            let mut locks = self.modify_locks.lock().unwrap_or_else(|p| p.into_inner());
            locks.entry(table_sql.to_string()).or_default().clone()
        };
        match tokio::time::timeout(self.settings.timeout, lock.lock_owned()).await {
            Ok(guard) => Ok(guard),
            Err(_) => Err(StorageError::Refused {
                code: ERR_LOCK_WAIT_TIMEOUT,
                message: format!(
                    "another write loop kept modifying {table_sql} (a table without \
                     transactions) for {:?}",
                    self.settings.timeout
                ),
            }),
        }
    }

    /// A new connection. While the server refuses connections for its
    /// limits, waits for one (retrying every `LIMIT_PAUSE`, while idle
    /// connections of other loops are given back) up to `--mysql-timeout`,
    /// rather than failing the request at once.
    pub(super) async fn open_link(&self) -> Result<Link, Failure> {
        let deadline = Instant::now() + self.settings.timeout;
        loop {
            let result = self.open_link_once().await;
            let limited = result.is_err() && self.limit_paused.load(Ordering::Relaxed);
            if !limited || Instant::now() + LIMIT_PAUSE >= deadline {
                return result;
            }
            tokio::time::sleep(LIMIT_PAUSE).await;
        }
    }

    async fn open_link_once(&self) -> Result<Link, Failure> {
        let now = Instant::now();
        {
            let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(until) = *paused {
                if now < until {
                    let why = if self.limit_paused.load(Ordering::Relaxed) {
                        "takes no more connections from this account now"
                    } else {
                        "is not reachable"
                    };
                    return Err(Failure {
                        error: StorageError::Unavailable(format!(
                            "{} {why}; retrying shortly",
                            self.target
                        )),
                        // No connection was lost here (and the pause must
                        // not be extended by the callers it turns away).
                        link_lost: false,
                        retryable: false,
                    });
                }
                // This caller probes; the others fail fast meanwhile.
                *paused = Some(now + self.settings.timeout + RETRY_PAUSE);
            }
        }
        let mut result = Link::connect(&self.settings).await;
        if let Ok(link) = result.as_mut() {
            if let Err(f) = self.check_marker(link).await {
                result = Err(f);
            }
        }
        if let Err(f) = &result {
            if f.is_connection_limit() {
                return Err(self.refused_for_limits(f));
            }
        }
        *self.last_attempt.lock().unwrap_or_else(|p| p.into_inner()) = Some((
            Instant::now(),
            result.as_ref().map(|_| ()).map_err(|f| why(&f.error)),
        ));
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        match &result {
            Ok(link) => {
                announce(link, &self.settings);
                let after_limits = self.limit_paused.swap(false, Ordering::Relaxed);
                if paused.is_some() && !after_limits {
                    tracing::info!(target = %self.target, "MySQL server reachable again");
                }
                *paused = None;
                drop(paused);
                self.end_limit_episode();
            }
            Err(f) if f.link_lost && !matches!(f.error, StorageError::Refused { .. }) => {
                self.limit_paused.store(false, Ordering::Relaxed);
                if paused.is_none() {
                    tracing::warn!(target = %self.target, error = %f.error, "cannot connect to MySQL server");
                } else {
                    tracing::debug!(target = %self.target, error = %f.error, "MySQL server still not reachable");
                }
                *paused = Some(Instant::now() + RETRY_PAUSE);
            }
            // The server answered (e.g. refused the login): it is up.
            Err(_) => *paused = None,
        }
        result
    }

    /// The server took no more connections (see `Limits`): logged once per
    /// episode (and every `LIMIT_LOG_EVERY` while it lasts), other callers
    /// wait `LIMIT_PAUSE` before trying again, and idle connections of
    /// this backend are given back meanwhile (`under_pressure`), so that
    /// every loop gets one as soon as the server allows.
    fn refused_for_limits(&self, f: &Failure) -> Failure {
        let now = Instant::now();
        let mut limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        limits.last = Some(now);
        limits.unlogged += 1;
        let due = limits
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= LIMIT_LOG_EVERY);
        if due {
            tracing::warn!(
                target = %self.target,
                error = %f.error,
                refusals = limits.unlogged,
                "the MySQL server refuses hsd another connection: requests of event loops \
                 without one answer 1 1 2013 until it takes one (every loop keeps trying; \
                 idle connections are given back meanwhile). Raise the account's \
                 MAX_USER_CONNECTIONS (or max_connections), or lower --threads, \
                 --threads-wr or --mysql-pool"
            );
            limits.logged_at = Some(now);
            limits.unlogged = 0;
            limits.episode = true;
        }
        drop(limits);
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        *paused = Some(now + LIMIT_PAUSE);
        self.limit_paused.store(true, Ordering::Relaxed);
        Failure {
            error: StorageError::Unavailable(format!(
                "{} takes no more connections from this account now ({}); retrying shortly",
                self.target, f.error
            )),
            // Nothing was lost, and the pause must not grow.
            link_lost: false,
            retryable: false,
        }
    }

    /// A connection was made: refusals, if some were logged, are over once
    /// none came for `PRESSURE_WINDOW`.
    fn end_limit_episode(&self) {
        let mut limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        let quiet = limits
            .last
            .is_some_and(|at| at.elapsed() >= PRESSURE_WINDOW);
        if limits.episode && quiet {
            limits.episode = false;
            limits.logged_at = None;
            tracing::info!(target = %self.target, "the MySQL server takes hsd's connections again");
        }
    }

    /// Whether the server refused a connection lately: connections idle
    /// for `PRESSURE_IDLE` are then given back (see `MysqlConn::release_idle`).
    pub(super) fn under_pressure(&self) -> bool {
        let limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        limits.last.is_some_and(|at| at.elapsed() < PRESSURE_WINDOW)
    }

    /// Whether the server ever refused a connection for its limits: idle
    /// connections then look now and then whether they should go.
    pub(super) fn ever_limited(&self) -> bool {
        self.limits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last
            .is_some()
    }

    /// Whether the server can be reached, for readiness probes: the last
    /// connect attempt's outcome while it is recent, else a new attempt
    /// (which fails at once while the server is known to be down, as every
    /// caller's does). A server that refuses more connections for its
    /// limits is up.
    pub(super) async fn reachable(&self) -> Result<(), String> {
        if let Some((at, outcome)) = &*self.last_attempt.lock().unwrap_or_else(|p| p.into_inner()) {
            if at.elapsed() < REACHABILITY_FRESH {
                return outcome.clone();
            }
        }
        match self.open_link_once().await {
            Ok(link) => {
                link.quit().await;
                Ok(())
            }
            Err(_) if self.limit_paused.load(Ordering::Relaxed) => Ok(()),
            Err(f) => Err(why(&f.error)),
        }
    }

    /// A live connection timed out: make the others fail fast for a while.
    pub(super) fn note_timeout(&self) {
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        *paused = Some(Instant::now() + RETRY_PAUSE);
    }
}

/// Why the server cannot be used, in words for a readiness probe.
pub(super) fn why(error: &StorageError) -> String {
    match error {
        StorageError::Unavailable(m) => m.clone(),
        other => other.to_string(),
    }
}

/// Logs, once per process, which server hsd serves and how the link runs.
pub(super) fn announce(link: &Link, settings: &LinkSettings) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        tracing::info!(
            server = %link.server,
            at = %settings.url.endpoint(),
            tls = link.tls,
            "MySQL backend: connected to {}", link.server
        );
    });
}
