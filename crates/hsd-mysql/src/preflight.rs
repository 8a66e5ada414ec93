//! The MySQL servers checked before serving: `hsd check` logs in to each
//! (`--backend` and every `--replica`), looks at what the account may do
//! for what the configuration asks (writes, the commit marker table, the
//! replicas' replication status) and reports one `Finding` per thing.
//! `MysqlBackend::start` and the connector report the same problems at
//! start through the same functions here, so both say the same words.

use super::gtid_tracking::tracking_off;
use super::in_doubt::{MarkerCheck, MarkerTable};
use super::link::{Answer, Discard, Link, LinkSettings, Replicated, TextTable};
use super::topology::decide::Role;
use super::topology::{ServerSpec, Topology, TopologySettings};
use super::MysqlSettings;
use hsd_storage::finding::Finding;
use hsd_storage::{StorageError, ERR_COMMIT_IN_DOUBT};
use mysql_wire::MysqlUrl;
use std::collections::BTreeSet;
use std::fmt::Display;
use std::time::Duration;

/// The privileges hsd's writes need on the tables clients write.
const WRITE_PRIVILEGES: [&str; 3] = ["INSERT", "UPDATE", "DELETE"];

/// Every privilege granted to the account (globally, on a db, a table or
/// a column) that information_schema shows to it.
const PRIVILEGES_SQL: &str = "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES \
     UNION SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES \
     UNION SELECT PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES \
     UNION SELECT PRIVILEGE_TYPE FROM information_schema.COLUMN_PRIVILEGES";

const READ_ONLY_SQL: &str =
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only')";

/// The URL's settings for its links; an unusable option (a CA file that
/// cannot be read...) stops the start.
pub(super) fn link_settings(
    url: &MysqlUrl,
    timeout: Duration,
    target: &str,
) -> Result<LinkSettings, Finding> {
    LinkSettings::new(url.clone(), timeout)
        .map_err(|e| Finding::error(format!("cannot use {target}: {e}")))
}

/// The first login to a server (`what` names its option). A refused login
/// is an error; a server that cannot be reached or takes no more
/// connections now is a warning: hsd starts and connects once it can.
pub(super) async fn login(base: &LinkSettings, target: &str, what: &str) -> Result<Link, Finding> {
    let endpoint = base.url.endpoint();
    match Link::connect(base).await {
        Ok(link) => Ok(link),
        Err(f) if f.is_connection_limit() => Err(Finding::warning(format!(
            "the MySQL server at {endpoint} takes no more connections from this account now \
             ({}); hsd starts anyway and connects once it does",
            f.error
        ))),
        Err(f) if f.link_lost && !matches!(f.error, StorageError::Refused { .. }) => {
            Err(Finding::warning(format!(
                "cannot reach the MySQL server at {endpoint} ({}); hsd starts anyway and connects \
                 once it is up: start that server, or fix the host and port in {what}",
                f.error
            )))
        }
        Err(f) => Err(Finding::error(format!("cannot use {target}: {}", f.error))),
    }
}

/// The commit marker table cannot be used (a warning: writes are served,
/// The words for a marker table that exists but cannot be trusted (`serve`
/// refuses writes with them and serves reads; `hsd check` warns with them).
pub(super) fn marker_untrusted(why: &str) -> String {
    format!(
        "writes refused: the commit marker table {why}; fix it or drop it (hsd makes it \
         anew), or name another with ?commit-marker=DB.TABLE in --backend"
    )
}

/// but a lost COMMIT answer is not resolved).
pub(super) fn marker_unusable(table_sql: &str, error: &dyn Display) -> String {
    format!(
        "cannot use the commit marker table {table_sql} ({error}): a COMMIT whose answer is \
         lost will be answered 1 1 {ERR_COMMIT_IN_DOUBT} (outcome unknown) instead of being \
         resolved; grant this account CREATE, SELECT, INSERT, UPDATE on it, or name another \
         table with ?commit-marker=DB.TABLE in --backend"
    )
}

/// Why hsd keeps no commit marker behind vtgate (docs/vitess.md): a
/// group's marker row would land on one shard of the several its COMMIT
/// touches, and the resolver's `KILL` and process list reach vtgate's
/// session, not the shards' transactions.
pub(super) const VITESS_NO_MARKER: &str = "the backend is Vitess: hsd keeps no commit marker \
     there (a marker row lands on one shard of those a group touches, and a lost COMMIT \
     cannot be followed to the shards); a COMMIT whose answer is lost, or that vtgate \
     refuses, is answered 1 1 1180 (outcome unknown), never as failed";

/// Why --row-cache-mib is refused behind vtgate.
pub(super) const VITESS_NO_ROW_CACHE: &str = "--row-cache-mib cannot be used with a Vitess \
     --backend: the cache is kept exact by the server's binary log, and vtgate serves none \
     (each shard's primary has its own); leave it out";

/// Why --row-cache-mib is refused on a Galera cluster.
pub(super) const GALERA_NO_ROW_CACHE: &str = "--row-cache-mib cannot be used with a Galera \
     cluster: the other nodes' writes reach a node's binary log only through its appliers \
     (log_slave_updates), and nothing shows that the cache's locking fill is ordered against \
     them; leave it out, or use asynchronous replicas";

/// Why --replica is refused behind vtgate.
pub(super) const VITESS_NO_REPLICAS: &str = "--backend is Vitess (vtgate): --replica cannot \
     be used with it (vtgate routes to each shard's primary itself and reports no GTID of a \
     commit, so hsd could not tell when a replica has a write); give vtgate alone";

/// Everything `hsd check` looks at on the configured servers.
pub async fn check(settings: &MysqlSettings) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut all = vec![(settings.url.clone(), settings.target.clone())];
    all.extend(settings.replicas.iter().cloned());
    let single = all.len() == 1;
    // As `hsd serve` logs in: GTID tracking asked with replicas or the
    // row cache (and checked, `gtid_tracking`).
    let track_gtids = !single || settings.row_cache.is_some();
    let mut vitess = false;
    // Each server's one set of link settings, as `serve` resolves them;
    // `None` where its options are unusable (a finding says why).
    let mut bases = Vec::with_capacity(all.len());
    for (i, (url, target)) in all.iter().enumerate() {
        let what = if i == 0 { "--backend" } else { "--replica" };
        let base = match link_settings(url, settings.timeout, target) {
            Ok(base) => base.with_replicated(Replicated {
                track_gtids,
                causal_reads: false,
            }),
            Err(f) => {
                findings.push(f);
                bases.push(None);
                continue;
            }
        };
        bases.push(Some(base.clone()));
        match login(&base, target, what).await {
            Ok(link) if link.server.is_vitess() => {
                findings.push(Finding::ok(format!(
                    "{what} {target}: logged in to {}",
                    link.server
                )));
                // By design, not a fault: a note, and `hsd check` passes.
                findings.push(if single {
                    Finding::note(VITESS_NO_MARKER.to_string())
                } else {
                    Finding::error(VITESS_NO_REPLICAS.to_string())
                });
                if settings.row_cache.is_some() {
                    findings.push(Finding::error(VITESS_NO_ROW_CACHE.to_string()));
                }
                vitess = true;
                link.quit().await;
            }
            Ok(mut link) => {
                findings.push(Finding::ok(format!("{what} {target}: logged in")));
                if link.tracking_off() {
                    findings.push(Finding::warning(format!(
                        "{what} {target}: {}",
                        tracking_off(link.server.is_mariadb())
                    )));
                }
                match account(&mut link, url, target, single).await {
                    Ok(found) => findings.extend(found),
                    Err(e) => findings.push(Finding::warning(format!(
                        "{what} {target}: the connection failed while checking the account ({e})"
                    ))),
                }
                link.quit().await;
            }
            Err(f) => findings.push(f),
        }
    }
    let mut primary = Some(0);
    let mut galera = false;
    let Some(bases) = bases.into_iter().collect::<Option<Vec<_>>>() else {
        return findings;
    };
    if !single {
        let (found, p, g) = roles(settings, &bases).await;
        findings.extend(found);
        primary = p;
        galera = g;
    }
    if settings.row_cache.is_some() && galera {
        findings.push(Finding::error(GALERA_NO_ROW_CACHE.to_string()));
    } else if settings.row_cache.is_some() && !vitess {
        for (i, ((_, target), base)) in all.iter().zip(&bases).enumerate() {
            let on = if single {
                String::new()
            } else {
                format!("{target}: ")
            };
            findings.extend(row_cache(base, &on, primary == Some(i)).await);
        }
    }
    findings
}

/// With `--row-cache-mib`: what the binary log reader would refuse on one
/// server (`on` names it, with replicas). On the primary a refusal is an
/// error (hsd would not start); on a replica a warning: if it becomes the
/// primary, the cache serves nothing while it is.
async fn row_cache(base: &LinkSettings, on: &str, primary: bool) -> Vec<Finding> {
    let reader = super::binlog::ReaderSettings::on(base, 0);
    match super::binlog::BinlogReader::check(reader).await {
        Ok(refused) if refused.is_empty() => vec![Finding::ok(format!(
            "--row-cache-mib: {on}the binary log can be read as a replica reads it"
        ))],
        Ok(refused) => refused
            .into_iter()
            .map(|r| {
                if primary {
                    Finding::error(format!("--row-cache-mib: {on}{r}"))
                } else {
                    Finding::warning(format!(
                        "--row-cache-mib: {on}{r} (while this server is the primary, the cache \
                         serves nothing)"
                    ))
                }
            })
            .collect(),
        Err(e) => vec![Finding::warning(format!(
            "--row-cache-mib: {on}the binary log settings could not be read ({e})"
        ))],
    }
}

/// What the account may do on one server: on a writable one, write and
/// mark commits. With replicas, a read-only server is the topology's
/// business (`roles`).
async fn account(
    link: &mut Link,
    url: &MysqlUrl,
    target: &str,
    single: bool,
) -> Result<Vec<Finding>, StorageError> {
    let mut found = Vec::new();
    let vars = rows(link, READ_ONLY_SQL).await?.unwrap_or_default();
    let read_only = vars
        .iter()
        .any(|r| matches!(r.get(1).map(String::as_str), Some("ON" | "1")));
    if read_only {
        if single {
            found.push(Finding::warning(format!(
                "{target} is read-only (read_only or super_read_only is ON): every write is \
                 refused until it is writable"
            )));
        }
        return Ok(found);
    }
    let granted: BTreeSet<String> = match rows(link, PRIVILEGES_SQL).await? {
        Some(rows) => rows
            .into_iter()
            .filter_map(|r| r.into_iter().next())
            .map(|p| p.to_ascii_uppercase())
            .collect(),
        None => BTreeSet::new(),
    };
    let missing: Vec<&str> = WRITE_PRIVILEGES
        .iter()
        .copied()
        .filter(|p| !granted.contains(*p) && !granted.contains("ALL PRIVILEGES"))
        .collect();
    if missing.is_empty() {
        found.push(Finding::ok(format!(
            "{target}: the account may write ({})",
            WRITE_PRIVILEGES.join(", ")
        )));
    } else {
        found.push(Finding::warning(format!(
            "{target}: the account holds no {} privilege on any table (as information_schema \
             shows it; privileges of roles are not counted): the write port's writes that need \
             it are refused; grant it on the tables clients write",
            missing.join(" or ")
        )));
    }
    if let Some((db, table)) = &url.options.commit_marker {
        let marker = MarkerTable::new(db, table);
        found.push(match marker_writable(link, &marker).await? {
            MarkerFinding::Usable => Finding::ok(format!(
                "{target}: the commit marker table {} is usable",
                marker.table_sql
            )),
            MarkerFinding::Refused(e) => Finding::warning(marker_unusable(&marker.table_sql, &e)),
            MarkerFinding::Untrusted(why) => Finding::warning(marker_untrusted(&why)),
        });
    }
    Ok(found)
}

/// What `hsd check` found of the marker table.
enum MarkerFinding {
    Usable,
    /// The server refused making or writing it (privileges).
    Refused(String),
    /// It exists and its rows could not be trusted: writes are refused.
    Untrusted(String),
}

/// Makes the marker table as a start would and checks it, then marks a
/// commit in a transaction rolled back: nothing changes, and the
/// privileges a write group needs are tried.
async fn marker_writable(
    link: &mut Link,
    marker: &MarkerTable,
) -> Result<MarkerFinding, StorageError> {
    match marker.ensure(link).await {
        MarkerCheck::Usable => {}
        MarkerCheck::Failed(StorageError::Refused { message, .. }) => {
            return Ok(MarkerFinding::Refused(message))
        }
        MarkerCheck::Failed(e) => return Err(e),
        MarkerCheck::Untrusted(u) => return Ok(MarkerFinding::Untrusted(u.0)),
    }
    link.queue(|sql| sql.extend_from_slice(b"START TRANSACTION"));
    link.queue(|sql| marker.push_mark(sql, 0, 0));
    link.queue(|sql| sql.extend_from_slice(b"ROLLBACK"));
    let mut refused = None;
    for _ in 0..3 {
        if let Answer::Refused(e) = link.answer(&mut Discard).await.map_err(|f| f.error)? {
            refused.get_or_insert_with(|| e.to_string());
        }
    }
    Ok(refused.map_or(MarkerFinding::Usable, MarkerFinding::Refused))
}

/// With replicas: one look at every server, as serving starts with, and
/// the role each would have; a server hsd would not use is a warning
/// saying why.
/// The roles' findings, which server is the primary, and whether any is a
/// Galera node.
async fn roles(
    settings: &MysqlSettings,
    bases: &[LinkSettings],
) -> (Vec<Finding>, Option<usize>, bool) {
    let servers = bases
        .iter()
        .map(|link| ServerSpec {
            name: link.url.endpoint(),
            link: link.clone(),
        })
        .collect();
    let topology = Topology::start(
        TopologySettings {
            servers,
            read_from: settings.read_from,
            interval: settings.topology_interval,
            replica_wait: settings.replica_wait,
            timeout: settings.timeout,
        },
        // Its metrics are not served: a registry of its own.
        &prometheus::Registry::new(),
    )
    .await;
    let topology = match topology {
        Ok(t) => t,
        Err(e) => return (vec![Finding::error(format!("{e:#}"))], None, false),
    };
    let mut found = Vec::new();
    let roles = topology.roles();
    let primary = roles.iter().position(|r| *r == Role::Primary);
    let galera = (0..roles.len()).any(|i| topology.is_galera(i));
    for (i, role) in roles.iter().enumerate() {
        let name = topology.server_name(i);
        found.push(match role {
            Role::Primary => Finding::ok(format!("{name}: takes the writes (read_only = OFF)")),
            Role::Replica => Finding::ok(format!("{name}: a replica hsd may read from")),
            Role::GaleraPeer => Finding::ok(format!(
                "{name}: a Synced node of the writer's Galera cluster"
            )),
            Role::Unusable(why) => Finding::warning(format!("{name}: not used: {why}")),
        });
    }
    if !roles.contains(&Role::Primary) {
        found.push(Finding::warning(
            "no configured server takes writes (read_only = OFF on exactly one): the write \
             port's writes fail until one does",
        ));
    }
    // Joins its thread: the check is over.
    let _ = tokio::task::spawn_blocking(move || topology.shut_down()).await;
    (found, primary, galera)
}

/// A statement's rows as text; `None` when the server refused it.
async fn rows(link: &mut Link, sql: &str) -> Result<Option<Vec<Vec<String>>>, StorageError> {
    link.queue(|out| out.extend_from_slice(sql.as_bytes()));
    let mut sink = TextTable::default();
    match link.answer(&mut sink).await.map_err(|f| f.error)? {
        // NULL as the empty string: these answers are read as text.
        Answer::Done(_) => Ok(Some(
            sink.rows
                .into_iter()
                .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
                .collect(),
        )),
        Answer::Refused(_) => Ok(None),
    }
}
