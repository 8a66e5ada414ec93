//! The topology's own thread, `hsd-topology`: per configured server, a poll
//! task (every `--topology-interval`: role, position, replication threads,
//! Galera state; one round trip) and, with `--read-from replicas`, a wait
//! task that runs `MASTER_GTID_WAIT` / `WAIT_FOR_EXECUTED_GTID_SET` while
//! reads wait for that server, so they learn the moment it has applied
//! what they need instead of at the next poll.
//!
//! Each task owns its connection (made with the storage connections'
//! settings, so the same account and timeouts). The event loops never wait
//! for this thread: they read what it found under the topology's lock.

use super::super::link::{Answer, Link, LinkSettings, TextTable};
use super::decide::Health;
use super::observe;
use super::{lock, ReadFrom, Topology};
use mysql_wire::Flavor;
use mysql_wire::GtidSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// MySQL's error for a statement it does not know (SHOW REPLICA STATUS
/// before 8.0.22).
const ER_PARSE_ERROR: u16 = 1064;

/// After a failed wait, before the next try (the poll decides whether the
/// server is usable meanwhile).
const WAIT_RETRY_PAUSE: Duration = Duration::from_millis(200);

/// Starts the thread. The returned future finishes once every server was
/// polled once.
pub(super) fn spawn(t: Arc<Topology>) -> anyhow::Result<impl Future<Output = ()>> {
    let n = t.server_count();
    let (polled, mut polled_rx) = tokio::sync::watch::channel(0usize);
    let runner = t.clone();
    let handle = std::thread::Builder::new()
        .name("hsd-topology".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "cannot start the topology thread's runtime");
                    return;
                }
            };
            rt.block_on(run(runner, polled));
        })?;
    *lock(&t.thread) = Some(handle);
    Ok(async move {
        let _ = polled_rx.wait_for(|&done| done >= n).await;
    })
}

async fn run(t: Arc<Topology>, polled: tokio::sync::watch::Sender<usize>) {
    let polled = Arc::new(polled);
    let mut tasks = Vec::new();
    for i in 0..t.server_count() {
        tasks.push(tokio::spawn(poll_loop(t.clone(), i, polled.clone())));
        if t.settings.read_from == ReadFrom::Replicas {
            tasks.push(tokio::spawn(wait_loop(t.clone(), i)));
        }
    }
    stopped(&t).await;
    for task in tasks {
        task.abort();
    }
}

/// Finishes when the topology is shut down.
async fn stopped(t: &Topology) {
    loop {
        let stop = t.stop.notified();
        if t.is_stopping() {
            return;
        }
        stop.await;
    }
}

fn settings(t: &Topology, server: usize) -> LinkSettings {
    t.servers[server].spec.link.clone()
}

/// A poll connection and what it learnt once.
struct PollLink {
    link: Link,
    flavor: Flavor,
    /// MySQL before 8.0.22: SHOW SLAVE STATUS.
    old_replica_status: bool,
}

async fn poll_loop(
    t: Arc<Topology>,
    server: usize,
    polled: Arc<tokio::sync::watch::Sender<usize>>,
) {
    let settings = settings(&t, server);
    let mut conn: Option<PollLink> = None;
    let mut first = true;
    loop {
        let started = Instant::now();
        let frontier_then = t.frontier();
        // The statements' own time limits are inside --mysql-timeout; this
        // bounds a poll that would otherwise hang on a silent network.
        let health =
            match tokio::time::timeout(settings.timeout * 2, poll_once(&settings, &mut conn)).await
            {
                Ok(Ok(o)) => Health::Up(o),
                Ok(Err(e)) => {
                    conn = None;
                    Health::Down(e)
                }
                Err(_) => {
                    conn = None;
                    Health::Down("the poll timed out".into())
                }
            };
        t.apply_poll(server, started, &frontier_then, health);
        if first {
            first = false;
            polled.send_modify(|n| *n += 1);
        }
        tokio::select! {
            _ = tokio::time::sleep_until((started + t.settings.interval).into()) => {}
            _ = stopped(&t) => return,
        }
    }
}

/// One poll: the statements of the server's family in one round trip.
/// `Err` loses the connection (the next poll connects again).
async fn poll_once(
    settings: &LinkSettings,
    conn: &mut Option<PollLink>,
) -> Result<observe::Observation, String> {
    if conn.is_none() {
        let mut link = Link::connect(settings)
            .await
            .map_err(|f| f.error.to_string())?;
        let vars = query(&mut link, observe::FLAVOR_SQL)
            .await?
            .ok_or("the server refused SHOW GLOBAL VARIABLES")?;
        *conn = Some(PollLink {
            link,
            flavor: observe::flavor(&vars),
            old_replica_status: false,
        });
    }
    let Some(c) = conn.as_mut() else {
        return Err("no poll connection".into());
    };
    let mut statements: Vec<&str> = observe::poll_statements(c.flavor).to_vec();
    if c.old_replica_status && statements.len() > 1 {
        statements[1] = observe::MYSQL_OLD_REPLICA_STATUS_SQL;
    }
    for s in &statements {
        c.link.queue(|sql| sql.extend_from_slice(s.as_bytes()));
    }
    let mut answers = Vec::with_capacity(statements.len());
    for _ in &statements {
        let mut sink = TextTable::default();
        answers.push(match c.link.answer(&mut sink).await {
            Ok(Answer::Done(_)) => Ok(sink),
            Ok(Answer::Refused(e)) => Err(e),
            Err(f) => return Err(f.error.to_string()),
        });
    }
    let mut answers = answers.into_iter();
    let vars = match answers.next() {
        Some(Ok(t)) => t,
        Some(Err(e)) => return Err(format!("reading the server's variables: {e}")),
        None => return Err("no answer".into()),
    };
    let replicas = match answers.next() {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            if c.flavor == Flavor::MySql && e.code == ER_PARSE_ERROR && !c.old_replica_status {
                c.old_replica_status = true;
            }
            tracing::debug!(error = %e, "replication status not readable");
            None
        }
        None => None,
    };
    let wsrep = answers.next().and_then(Result::ok);
    observe::observation(c.flavor, &vars, replicas.as_ref(), wsrep.as_ref())
}

/// Runs one statement; `Ok(None)` when the server refused it.
async fn query(link: &mut Link, sql: &str) -> Result<Option<TextTable>, String> {
    link.queue(|b| b.extend_from_slice(sql.as_bytes()));
    let mut sink = TextTable::default();
    match link.answer(&mut sink).await {
        Ok(Answer::Done(_)) => Ok(Some(sink)),
        Ok(Answer::Refused(_)) => Ok(None),
        Err(f) => Err(f.error.to_string()),
    }
}

/// While reads wait for `server`, asks it to answer as soon as it has
/// applied what they need.
async fn wait_loop(t: Arc<Topology>, server: usize) {
    let settings = settings(&t, server);
    // The statement must end before the session's max_statement_time
    // (a quarter of --mysql-timeout, at most 0.5 s, inside it).
    let limit = settings
        .timeout
        .saturating_sub((settings.timeout / 4).min(Duration::from_millis(500)))
        .saturating_sub(Duration::from_millis(100));
    let secs = t.settings.replica_wait.min(limit).as_secs_f64().max(0.001);
    let mut link: Option<Link> = None;
    loop {
        // Until a read waits for this server and it is behind what it needs.
        let (want, flavor) = loop {
            let added = t.servers[server].demand_added.notified();
            {
                let st = lock(&t.state);
                let flavor = st.health[server].observation().map(|o| o.flavor);
                if let Some(flavor) = flavor {
                    if st.waiting[server] > 0 && !st.known[server].covers(&st.demand[server]) {
                        break (st.demand[server].clone(), flavor);
                    }
                }
            }
            tokio::select! {
                _ = added => {}
                _ = stopped(&t) => return,
            }
        };
        let sql = match flavor {
            Flavor::MariaDb => {
                format!("SELECT MASTER_GTID_WAIT('{want}', {secs:.3}), @@gtid_slave_pos")
            }
            Flavor::MySql | Flavor::Vitess => format!(
                "SELECT WAIT_FOR_EXECUTED_GTID_SET('{want}', {}), @@gtid_executed",
                secs.ceil().max(1.0)
            ),
        };
        let result = async {
            if link.is_none() {
                link = Some(Link::connect(&settings).await.map_err(|f| f.error)?);
            }
            let Some(l) = link.as_mut() else {
                return Err(hsd_storage::StorageError::Unavailable("no link".into()));
            };
            let table = query(l, &sql)
                .await
                .map_err(hsd_storage::StorageError::Unavailable)?;
            Ok(table)
        }
        .await;
        match result {
            Ok(Some(table)) => {
                let text = table
                    .rows
                    .first()
                    .and_then(|r| r.get(1)?.clone())
                    .unwrap_or_default();
                let parsed = match flavor {
                    Flavor::MariaDb => GtidSet::parse_mariadb(&text),
                    Flavor::MySql | Flavor::Vitess => GtidSet::parse_mysql(&text),
                };
                match parsed {
                    Ok(p) => t.apply_wait(server, &p),
                    Err(e) => {
                        tracing::warn!(server = %t.server_name(server), error = %e, "unreadable position after a wait");
                        tokio::time::sleep(WAIT_RETRY_PAUSE).await;
                    }
                }
            }
            Ok(None) => {
                tracing::debug!(server = %t.server_name(server), "the server refused a GTID wait");
                tokio::time::sleep(WAIT_RETRY_PAUSE).await;
            }
            Err(e) => {
                link = None;
                t.note_unreachable(server, &e);
                tokio::time::sleep(WAIT_RETRY_PAUSE).await;
            }
        }
    }
}
