//! What one poll learns about a server, and the statements that ask it.
//!
//! The statements are chosen so that one poll is one round trip and never
//! fails on a server that lacks a feature: `SHOW GLOBAL VARIABLES/STATUS
//! WHERE Variable_name IN (...)` answer only the names that exist, where
//! `SELECT @@name` would refuse the whole statement.

use crate::link::TextTable;
use mysql_wire::{Flavor, GtidSet};

/// First statement on a new poll connection: which family and version.
pub(crate) const FLAVOR_SQL: &str =
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'version_comment')";

/// The poll's statements for a server of this family, in order: its
/// variables, its replication threads, and (MariaDB) its Galera state.
pub(crate) fn poll_statements(flavor: Flavor) -> &'static [&'static str] {
    match flavor {
        Flavor::MariaDb => &[
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
             ('read_only', 'log_bin', 'gtid_slave_pos', 'gtid_binlog_pos', 'wsrep_on', \
             'hostname', 'port', 'datadir', 'server_id')",
            "SHOW ALL SLAVES STATUS",
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', \
             'wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_cluster_state_uuid', \
             'wsrep_local_recv_queue')",
        ],
        // SHOW REPLICA STATUS is MySQL 8.0.22's name; the poller falls back
        // to SHOW SLAVE STATUS when a server refuses it.
        Flavor::MySql | Flavor::Vitess => &[
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
             ('read_only', 'super_read_only', 'log_bin', 'gtid_mode', 'gtid_executed', \
             'server_uuid', 'hostname', 'port', 'datadir', 'server_id')",
            "SHOW REPLICA STATUS",
        ],
    }
}

/// The older name of MySQL's replica status statement.
pub(crate) const MYSQL_OLD_REPLICA_STATUS_SQL: &str = "SHOW SLAVE STATUS";

/// The family, from `FLAVOR_SQL`'s answer.
pub(crate) fn flavor(vars: &TextTable) -> Flavor {
    let version = vars.value_of("version").unwrap_or_default();
    let comment = vars.value_of("version_comment").unwrap_or_default();
    if version.contains("MariaDB") || comment.contains("MariaDB") {
        Flavor::MariaDb
    } else {
        Flavor::MySql
    }
}

/// A server's replication threads (from `SHOW ALL SLAVES STATUS` /
/// `SHOW REPLICA STATUS`; several rows with multi-source replication).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replication {
    /// Every channel's SQL (applier) thread runs.
    pub(crate) sql_running: bool,
    /// Every channel's I/O (receiver) thread is connected.
    pub(crate) io_running: bool,
    /// The largest `Seconds_Behind_Master` of the channels (`None`: NULL,
    /// which a stopped thread shows).
    pub(crate) seconds_behind: Option<u64>,
    /// The first non-empty `Last_SQL_Error`, for logs.
    pub(crate) last_error: String,
    /// A channel's I/O thread stopped because its source refused the
    /// position it asked for (1236; MySQL 8 also 13114): the replica holds
    /// transactions the source does not (it was ahead of a promoted
    /// server, or the source's history was reset). Its position then says
    /// nothing about what it shares with the writer.
    pub(crate) diverged: Option<String>,
    /// The `server_id` of every channel's source (`Master_Server_Id`;
    /// 0 while it never connected), when there is one channel.
    pub(crate) source_server_id: Option<u64>,
    /// Replica-side filters (`Replicate_Do_DB`, `Replicate_Wild_Ignore_Table`
    /// and kin) that are set: the replica may skip a table's changes while
    /// its position moves past them.
    pub(crate) filters: Vec<String>,
}

/// The replica status columns that show replica-side filters.
const FILTER_COLUMNS: [&str; 6] = [
    "Replicate_Do_DB",
    "Replicate_Ignore_DB",
    "Replicate_Do_Table",
    "Replicate_Ignore_Table",
    "Replicate_Wild_Do_Table",
    "Replicate_Wild_Ignore_Table",
];

/// What a source answers when it cannot send the position a replica asked
/// for (MariaDB and MySQL's ER_MASTER_FATAL_ERROR_READING_BINLOG, MySQL 8's
/// ER_SERVER_SOURCE_FATAL_ERROR_READING_BINLOG).
const SOURCE_CANNOT_SEND: [&str; 2] = ["1236", "13114"];

/// A Galera node's state (MariaDB with wsrep_on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Galera {
    pub(crate) ready: bool,
    /// `wsrep_local_state_comment`: `Synced`, `Donor/Desynced`, `Joining`...
    pub(crate) state: String,
    /// In the primary component (`wsrep_cluster_status = Primary`).
    pub(crate) primary_component: bool,
    pub(crate) cluster_uuid: String,
    /// Write sets received and not applied yet.
    pub(crate) recv_queue: u64,
}

impl Galera {
    /// Whether the node may take writes or causal reads.
    pub(crate) fn usable(&self) -> bool {
        self.ready && self.primary_component && self.state == "Synced"
    }

    /// Why it may not (for logs), when it may not.
    pub(crate) fn why_unusable(&self) -> Option<String> {
        if !self.primary_component {
            Some("Galera node outside the primary component".into())
        } else if !self.ready {
            Some("Galera node not ready (wsrep_ready=OFF)".into())
        } else if self.state != "Synced" {
            Some(format!("Galera node {} (not Synced)", self.state))
        } else {
            None
        }
    }
}

/// What one poll learnt about a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Observation {
    pub(crate) flavor: Flavor,
    pub(crate) read_only: bool,
    /// It writes a binary log (a primary without one replicates nothing).
    pub(crate) log_bin: bool,
    /// What it has applied as a replica is asked (MariaDB
    /// `gtid_slave_pos`, the position `MASTER_GTID_WAIT` compares; MySQL
    /// `gtid_executed`).
    pub(crate) applied: GtidSet,
    /// What its binary log holds (MariaDB `gtid_binlog_pos`; MySQL
    /// `gtid_executed`): a primary's, to tell replicas' lag.
    pub(crate) logged: GtidSet,
    /// `None`: no replication configured (or not visible).
    pub(crate) replication: Option<Replication>,
    /// The replication status could be read (the account may lack the
    /// privilege: then a read-only server's threads are unknown).
    pub(crate) replication_visible: bool,
    /// `None`: not a Galera node.
    pub(crate) galera: Option<Galera>,
    /// Which server this is, whatever address reached it (`identity`):
    /// one server configured under two addresses is one server.
    pub(crate) identity: Option<String>,
    /// `server_id`: what a replica's status names its source by.
    pub(crate) server_id: Option<u64>,
}

/// A server's identity: MySQL's `server_uuid`; else (MariaDB has none)
/// its host name, port and data directory, which no two running servers
/// share. `None` when the account cannot see them.
fn identity(vars: &TextTable) -> Option<String> {
    if let Some(uuid) = vars.value_of("server_uuid").filter(|u| !u.is_empty()) {
        return Some(uuid.to_string());
    }
    let host = vars.value_of("hostname")?;
    let port = vars.value_of("port")?;
    let datadir = vars.value_of("datadir")?;
    Some(format!("{host}:{port}:{datadir}"))
}

fn on(v: Option<&str>) -> bool {
    matches!(v, Some(s) if s.eq_ignore_ascii_case("ON") || s == "1" || s.eq_ignore_ascii_case("YES"))
}

/// Reads the answers of `poll_statements(flavor)`; `replicas` is `None`
/// when the server refused the replication status statement (a replica
/// whose threads cannot be seen is not used: see `decide`).
pub(crate) fn observation(
    flavor: Flavor,
    vars: &TextTable,
    replicas: Option<&TextTable>,
    wsrep: Option<&TextTable>,
) -> Result<Observation, String> {
    let read_only = on(vars.value_of("read_only")) || on(vars.value_of("super_read_only"));
    let log_bin = on(vars.value_of("log_bin"));
    let (applied, logged) = match flavor {
        Flavor::MariaDb => {
            let slave = vars.value_of("gtid_slave_pos").unwrap_or_default();
            let binlog = vars.value_of("gtid_binlog_pos").unwrap_or_default();
            (
                GtidSet::parse_mariadb(slave).map_err(|e| e.to_string())?,
                GtidSet::parse_mariadb(binlog).map_err(|e| e.to_string())?,
            )
        }
        Flavor::MySql | Flavor::Vitess => {
            let executed = GtidSet::parse_mysql(vars.value_of("gtid_executed").unwrap_or_default())
                .map_err(|e| e.to_string())?;
            (executed.clone(), executed)
        }
    };
    let replication = replicas.and_then(replication);
    let galera = if flavor == Flavor::MariaDb && on(vars.value_of("wsrep_on")) {
        let w = wsrep.ok_or("a Galera node (wsrep_on) whose wsrep status could not be read")?;
        Some(Galera {
            ready: on(w.value_of("wsrep_ready")),
            state: w
                .value_of("wsrep_local_state_comment")
                .unwrap_or_default()
                .to_string(),
            primary_component: w.value_of("wsrep_cluster_status") == Some("Primary"),
            cluster_uuid: w
                .value_of("wsrep_cluster_state_uuid")
                .unwrap_or_default()
                .to_string(),
            recv_queue: w
                .value_of("wsrep_local_recv_queue")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        })
    } else {
        None
    };
    Ok(Observation {
        flavor,
        read_only,
        log_bin,
        applied,
        logged,
        replication,
        replication_visible: replicas.is_some(),
        galera,
        identity: identity(vars),
        server_id: vars.value_of("server_id").and_then(|v| v.parse().ok()),
    })
}

/// The replication threads, from the status rows (none: not a replica).
fn replication(t: &TextTable) -> Option<Replication> {
    if t.rows.is_empty() {
        return None;
    }
    let mut r = Replication {
        sql_running: true,
        io_running: true,
        seconds_behind: Some(0),
        last_error: String::new(),
        diverged: None,
        source_server_id: None,
        filters: Vec::new(),
    };
    for i in 0..t.rows.len() {
        for column in FILTER_COLUMNS {
            if let Some(v) = t.get(i, column).filter(|v| !v.is_empty()) {
                let f = format!("{column}={v}");
                if !r.filters.contains(&f) {
                    r.filters.push(f);
                }
            }
        }
        let field = |a: &str, b: &str| t.get(i, a).or_else(|| t.get(i, b));
        r.sql_running &= on(field("Slave_SQL_Running", "Replica_SQL_Running"));
        r.io_running &= on(field("Slave_IO_Running", "Replica_IO_Running"));
        let behind = field("Seconds_Behind_Master", "Seconds_Behind_Source")
            .and_then(|v| v.parse::<u64>().ok());
        r.seconds_behind = match (r.seconds_behind, behind) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        if r.last_error.is_empty() {
            if let Some(e) = t.get(i, "Last_SQL_Error").filter(|e| !e.is_empty()) {
                r.last_error = e.to_string();
            }
        }
        let io = field("Slave_IO_Running", "Replica_IO_Running").unwrap_or_default();
        let io_errno = t.get(i, "Last_IO_Errno").unwrap_or_default();
        if r.diverged.is_none()
            && !io.eq_ignore_ascii_case("Yes")
            && SOURCE_CANNOT_SEND.contains(&io_errno)
        {
            r.diverged = Some(format!(
                "error {io_errno}: {}",
                t.get(i, "Last_IO_Error").unwrap_or_default()
            ));
        }
    }
    if t.rows.len() == 1 {
        r.source_server_id = t
            .get(0, "Master_Server_Id")
            .or_else(|| t.get(0, "Source_Server_Id"))
            .and_then(|v| v.parse().ok())
            .filter(|&id: &u64| id != 0);
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> TextTable {
        TextTable {
            columns: vec!["Variable_name".into(), "Value".into()],
            rows: pairs
                .iter()
                .map(|(n, v)| vec![Some(n.to_string()), Some(v.to_string())])
                .collect(),
        }
    }

    fn slaves(rows: &[&[(&str, Option<&str>)]]) -> TextTable {
        let mut t = TextTable::default();
        if let Some(first) = rows.first() {
            t.columns = first.iter().map(|(n, _)| n.to_string()).collect();
        }
        for r in rows {
            t.rows
                .push(r.iter().map(|(_, v)| v.map(str::to_string)).collect());
        }
        t
    }

    #[test]
    fn flavors() {
        assert_eq!(
            flavor(&vars(&[("version", "10.11.19-MariaDB-0+deb12u1")])),
            Flavor::MariaDb
        );
        assert_eq!(
            flavor(&vars(&[
                ("version", "8.0.31"),
                ("version_comment", "MySQL Community Server - GPL")
            ])),
            Flavor::MySql
        );
        assert_eq!(flavor(&TextTable::default()), Flavor::MySql);
    }

    #[test]
    fn mariadb_primary() {
        let v = vars(&[
            ("gtid_binlog_pos", "0-1-15"),
            ("gtid_slave_pos", ""),
            ("log_bin", "ON"),
            ("read_only", "OFF"),
            ("wsrep_on", "OFF"),
        ]);
        let o = observation(Flavor::MariaDb, &v, Some(&TextTable::default()), None).unwrap();
        assert!(o.replication_visible);
        assert!(!o.read_only && o.log_bin);
        assert_eq!(o.logged.to_string(), "0-1-15");
        assert!(o.applied.is_empty());
        assert_eq!(o.replication, None);
        assert_eq!(o.galera, None);
    }

    #[test]
    fn mariadb_replica_threads() {
        let v = vars(&[
            ("gtid_binlog_pos", "0-1-15"),
            ("gtid_slave_pos", "0-1-15"),
            ("log_bin", "ON"),
            ("read_only", "ON"),
        ]);
        let running = slaves(&[&[
            ("Connection_name", Some("")),
            ("Slave_IO_Running", Some("Yes")),
            ("Slave_SQL_Running", Some("Yes")),
            ("Seconds_Behind_Master", Some("3")),
            ("Last_SQL_Error", Some("")),
            ("Master_Server_Id", Some("1")),
        ]]);
        let o = observation(Flavor::MariaDb, &v, Some(&running), None).unwrap();
        assert!(o.read_only);
        assert_eq!(
            o.replication,
            Some(Replication {
                sql_running: true,
                io_running: true,
                seconds_behind: Some(3),
                last_error: String::new(),
                diverged: None,
                source_server_id: Some(1),
                filters: Vec::new(),
            })
        );
        let filtered = slaves(&[&[
            ("Slave_IO_Running", Some("Yes")),
            ("Slave_SQL_Running", Some("Yes")),
            ("Replicate_Do_DB", Some("")),
            ("Replicate_Wild_Ignore_Table", Some("hsdtest.t%")),
        ]]);
        let o = observation(Flavor::MariaDb, &v, Some(&filtered), None).unwrap();
        assert_eq!(
            o.replication.expect("replicating").filters,
            ["Replicate_Wild_Ignore_Table=hsdtest.t%"]
        );
        // Pointed at a promoted server that lacks what it applied: the I/O
        // thread stops with 1236 while the SQL thread runs.
        let ahead = slaves(&[&[
            ("Slave_IO_Running", Some("No")),
            ("Slave_SQL_Running", Some("Yes")),
            ("Last_IO_Errno", Some("1236")),
            ("Last_IO_Error", Some("the slave is ahead")),
            ("Master_Server_Id", Some("2")),
        ]]);
        let o = observation(Flavor::MariaDb, &v, Some(&ahead), None).unwrap();
        let r = o.replication.expect("replicating");
        assert!(r.sql_running);
        assert_eq!(
            r.diverged.as_deref(),
            Some("error 1236: the slave is ahead")
        );
        assert_eq!(r.source_server_id, Some(2));
        // A source that cannot be reached is no divergence.
        let unreachable = slaves(&[&[
            ("Slave_IO_Running", Some("Connecting")),
            ("Slave_SQL_Running", Some("Yes")),
            ("Last_IO_Errno", Some("2003")),
            ("Master_Server_Id", Some("0")),
        ]]);
        let o = observation(Flavor::MariaDb, &v, Some(&unreachable), None).unwrap();
        let r = o.replication.expect("replicating");
        assert_eq!((r.diverged, r.source_server_id), (None, None));
        // SQL thread stopped by an error; I/O thread reconnecting.
        let stopped = slaves(&[&[
            ("Slave_IO_Running", Some("Connecting")),
            ("Slave_SQL_Running", Some("No")),
            ("Seconds_Behind_Master", None),
            ("Last_SQL_Error", Some("Duplicate entry")),
        ]]);
        let o = observation(Flavor::MariaDb, &v, Some(&stopped), None).unwrap();
        let r = o.replication.unwrap();
        assert!(!r.sql_running && !r.io_running);
        assert_eq!(r.seconds_behind, None);
        assert_eq!(r.last_error, "Duplicate entry");
        // Two channels: one stopped SQL thread is enough.
        let two = slaves(&[
            &[
                ("Slave_IO_Running", Some("Yes")),
                ("Slave_SQL_Running", Some("Yes")),
            ],
            &[
                ("Slave_IO_Running", Some("Yes")),
                ("Slave_SQL_Running", Some("No")),
            ],
        ]);
        let o = observation(Flavor::MariaDb, &v, Some(&two), None).unwrap();
        assert!(!o.replication.unwrap().sql_running);
        // Status not readable (no privilege).
        let o = observation(Flavor::MariaDb, &v, None, None).unwrap();
        assert!(!o.replication_visible);
        assert_eq!(o.replication, None);
    }

    #[test]
    fn galera_node() {
        let v = vars(&[("read_only", "OFF"), ("log_bin", "OFF"), ("wsrep_on", "ON")]);
        let w = vars(&[
            ("wsrep_cluster_state_uuid", "a5b6"),
            ("wsrep_cluster_status", "Primary"),
            ("wsrep_local_recv_queue", "2"),
            ("wsrep_local_state_comment", "Synced"),
            ("wsrep_ready", "ON"),
        ]);
        let o = observation(Flavor::MariaDb, &v, Some(&TextTable::default()), Some(&w)).unwrap();
        let g = o.galera.unwrap();
        assert!(g.usable());
        assert_eq!(g.recv_queue, 2);
        assert_eq!(g.cluster_uuid, "a5b6");
        let mut d = g.clone();
        d.state = "Donor/Desynced".into();
        assert!(!d.usable());
        assert!(d.why_unusable().unwrap().contains("Donor/Desynced"));
        let mut n = g.clone();
        n.primary_component = false;
        assert!(!n.usable());
        let mut r = g;
        r.ready = false;
        assert!(!r.usable());
        assert!(observation(Flavor::MariaDb, &v, None, None).is_err());
    }

    #[test]
    fn mysql_replica() {
        let u = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        let v = vars(&[
            ("gtid_executed", &format!("{u}:1-20,\n{u}:22")),
            ("gtid_mode", "ON"),
            ("log_bin", "ON"),
            ("read_only", "OFF"),
            ("super_read_only", "ON"),
        ]);
        let r = slaves(&[&[
            ("Replica_IO_Running", Some("Yes")),
            ("Replica_SQL_Running", Some("Yes")),
            ("Seconds_Behind_Source", Some("0")),
        ]]);
        let o = observation(Flavor::MySql, &v, Some(&r), None).unwrap();
        assert!(o.read_only, "super_read_only counts");
        assert_eq!(o.applied, o.logged);
        assert_eq!(o.applied.to_string(), format!("{u}:1-20:22"));
        assert!(o.replication.unwrap().sql_running);
        let bad = vars(&[("gtid_executed", "junk:1")]);
        assert!(observation(Flavor::MySql, &bad, None, None).is_err());
    }
}
