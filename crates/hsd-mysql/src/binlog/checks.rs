//! The settings and grants without which a cache fed by the binlog cannot
//! be exact, read from the server at start (`observe`) and judged by a pure
//! function (`refusals`), one line per problem naming the setting.

use super::super::link::{Answer, Link, TextTable};
use mysql_wire::Flavor;

/// What the server says about its binary log and the account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObservedSettings {
    pub(crate) flavor: Flavor,
    /// `@@log_bin`: `1` or `0`.
    pub(crate) log_bin: String,
    pub(crate) binlog_format: String,
    pub(crate) binlog_row_image: String,
    /// `@@binlog_checksum`: `CRC32` or `NONE`.
    pub(crate) binlog_checksum: String,
    /// MariaDB's `log_bin_compress` or MySQL's
    /// `binlog_transaction_compression` (`1` or `0`).
    pub(crate) compression: String,
    /// The account's privileges on `*.*`, upper case, as SHOW GRANTS
    /// lists them (`ALL PRIVILEGES` included as such).
    pub(crate) global_privileges: Vec<String>,
    /// `SHOW MASTER STATUS`'s `Binlog_Do_DB` and `Binlog_Ignore_DB`: the
    /// databases the binary log keeps or leaves out (empty: none).
    pub(crate) binlog_do_db: String,
    pub(crate) binlog_ignore_db: String,
    /// Why `SHOW MASTER STATUS` could not be read, if so.
    pub(crate) status_unread: Option<String>,
    /// `@@log_slave_updates` (`log_replica_updates` on MySQL): `1` or `0`.
    pub(crate) log_replica_updates: String,
    /// Whether the server replicates from another: `Err` with why when it
    /// could not be asked.
    pub(crate) replica: Result<bool, String>,
    /// `@@lower_case_table_names`: 0 names as given, 1 stored and compared
    /// in lower case, 2 stored as given and compared in lower case.
    pub(crate) lower_case_table_names: String,
}

impl ObservedSettings {
    fn compression_setting(&self) -> &'static str {
        if self.flavor.is_mariadb() {
            "log_bin_compress"
        } else {
            "binlog_transaction_compression"
        }
    }

    fn has(&self, names: &[&str]) -> bool {
        self.global_privileges
            .iter()
            .any(|p| p == "ALL PRIVILEGES" || p == "ALL" || names.contains(&p.as_str()))
    }

    /// The server's checksums are CRC32 (else none).
    pub(super) fn checksums(&self) -> bool {
        self.binlog_checksum.eq_ignore_ascii_case("CRC32")
    }

    /// The server stores and compares table and database names in lower
    /// case (`lower_case_table_names = 1`): a statement's names are
    /// lowered before they are compared.
    pub(super) fn lower_case_names(&self) -> bool {
        self.lower_case_table_names == "1"
    }
}

/// Why a binlog-fed cache cannot be exact on this server: one line per
/// setting, empty when it can.
pub(crate) fn refusals(s: &ObservedSettings) -> Vec<String> {
    let mut out = Vec::new();
    let on = |v: &str| v == "1" || v.eq_ignore_ascii_case("ON");
    if !on(&s.log_bin) {
        out.push(
            "log_bin is OFF: the row cache reads the binary log; start the server with log-bin"
                .to_string(),
        );
    }
    if !s.binlog_format.eq_ignore_ascii_case("ROW") {
        out.push(format!(
            "binlog_format is {}: the row cache needs ROW (changes logged as statements name no rows)",
            s.binlog_format
        ));
    }
    if !s.binlog_row_image.eq_ignore_ascii_case("FULL") {
        out.push(format!(
            "binlog_row_image is {}: the row cache needs FULL (every unique key in both images)",
            s.binlog_row_image
        ));
    }
    if !matches!(
        s.binlog_checksum.to_ascii_uppercase().as_str(),
        "CRC32" | "NONE"
    ) {
        out.push(format!(
            "binlog_checksum is {}: the binlog reader checks CRC32 or NONE",
            s.binlog_checksum
        ));
    }
    if on(&s.compression) {
        out.push(format!(
            "{} is ON: the binlog reader does not decode compressed events",
            s.compression_setting()
        ));
    }
    if !s.binlog_do_db.is_empty() || !s.binlog_ignore_db.is_empty() {
        let mut filters = Vec::new();
        if !s.binlog_do_db.is_empty() {
            filters.push(format!("binlog-do-db = {}", s.binlog_do_db));
        }
        if !s.binlog_ignore_db.is_empty() {
            filters.push(format!("binlog-ignore-db = {}", s.binlog_ignore_db));
        }
        out.push(format!(
            "the binary log is filtered ({}): changes it leaves out would never reach the \
             row cache; the row cache needs an unfiltered binary log",
            filters.join(", ")
        ));
    }
    let updates = if s.flavor.is_mariadb() {
        "log_slave_updates"
    } else {
        "log_replica_updates"
    };
    let monitor = if s.flavor.is_mariadb() {
        s.has(&["BINLOG MONITOR", "REPLICATION CLIENT"])
    } else {
        s.has(&["REPLICATION CLIENT"])
    };
    // An account refused the question lacks a privilege named below.
    if !on(&s.log_replica_updates) && (monitor || s.replica.is_ok()) {
        match &s.replica {
            Ok(false) => {}
            Ok(true) => out.push(format!(
                "{updates} is OFF on a replica: what its replication applies is not in its \
                 binary log, and the row cache would never see it; set {updates} = ON"
            )),
            Err(e) => out.push(format!(
                "{updates} is OFF and whether the server is a replica cannot be told ({e}): \
                 on a replica, what replication applies would never reach the row cache; set \
                 {updates} = ON, or grant the account the right to read its replica status"
            )),
        }
    }
    if s.lower_case_table_names == "2" {
        out.push(
            "lower_case_table_names is 2: names are stored as given and compared in lower case, \
             so the binary log's names cannot be matched to the cached tables exactly; the row \
             cache needs 0 or 1"
                .to_string(),
        );
    }
    if !s.has(&["REPLICATION SLAVE", "REPLICATION REPLICA"]) {
        out.push(
            "the account lacks the REPLICATION SLAVE privilege (GRANT REPLICATION SLAVE ON *.*): \
             the row cache reads the binlog as a replica"
                .to_string(),
        );
    }
    if s.flavor.is_mariadb() && !s.has(&["BINLOG MONITOR", "REPLICATION CLIENT"]) {
        out.push(
            "the account lacks the BINLOG MONITOR privilege (REPLICATION CLIENT before MariaDB \
             10.5; GRANT BINLOG MONITOR ON *.*): the row cache reads the binlog position"
                .to_string(),
        );
    }
    if let (Some(e), true) = (&s.status_unread, monitor) {
        out.push(format!(
            "SHOW MASTER STATUS could not be read ({e}): the row cache needs the binary log's \
             position and filters"
        ));
    }
    if !s.flavor.is_mariadb() && !s.has(&["REPLICATION CLIENT"]) {
        out.push(
            "the account lacks the REPLICATION CLIENT privilege (GRANT REPLICATION CLIENT ON *.*): \
             the row cache reads the binlog position"
                .to_string(),
        );
    }
    out
}

/// Reads the settings and grants on `link`.
pub(super) async fn observe(link: &mut Link) -> Result<ObservedSettings, String> {
    let flavor = link.server.flavor;
    let compression = if flavor.is_mariadb() {
        "@@GLOBAL.log_bin_compress"
    } else {
        "@@GLOBAL.binlog_transaction_compression"
    };
    let sql = format!(
        "SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image, \
         @@GLOBAL.binlog_checksum, {compression}, @@GLOBAL.log_slave_updates, \
         @@lower_case_table_names"
    );
    let rows = query(link, &sql).await?;
    let row = rows.first().ok_or("the server answered no settings")?;
    let value = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let mut settings = ObservedSettings {
        flavor,
        log_bin: value(0),
        binlog_format: value(1),
        binlog_row_image: value(2),
        binlog_checksum: value(3),
        compression: value(4),
        global_privileges: Vec::new(),
        binlog_do_db: String::new(),
        binlog_ignore_db: String::new(),
        status_unread: None,
        log_replica_updates: value(5),
        replica: Ok(false),
        lower_case_table_names: value(6),
    };
    // File, BinlogPosition, Binlog_Do_DB, Binlog_Ignore_DB (, Executed_Gtid_Set).
    // An account refused it lacks the privilege the refusals name already.
    match query(link, "SHOW MASTER STATUS").await {
        Ok(rows) => {
            if let Some(status) = rows.first() {
                let column = |i: usize| status.get(i).cloned().flatten().unwrap_or_default();
                settings.binlog_do_db = column(2);
                settings.binlog_ignore_db = column(3);
            }
        }
        Err(e) => settings.status_unread = Some(e),
    }
    // Whether it replicates now: MariaDB's running replica threads (a
    // status anyone may read; SHOW ALL SLAVES STATUS needs SLAVE MONITOR,
    // which the cache does not otherwise need), MySQL's replica channels
    // (REPLICATION CLIENT, which it needs anyway).
    settings.replica = if flavor.is_mariadb() {
        query(
            link,
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
             WHERE VARIABLE_NAME = 'SLAVES_RUNNING'",
        )
        .await
        .map(|rows| {
            rows.first()
                .and_then(|r| r.first().cloned().flatten())
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|n| n > 0)
        })
    } else {
        query(link, "SHOW REPLICA STATUS")
            .await
            .map(|rows| !rows.is_empty())
    };
    for row in query(link, "SHOW GRANTS").await? {
        if let Some(Some(line)) = row.first() {
            settings.global_privileges.extend(global_privileges(line));
        }
    }
    Ok(settings)
}

/// The privileges a `GRANT ... ON *.* TO ...` line gives.
fn global_privileges(line: &str) -> Vec<String> {
    let upper = line.to_ascii_uppercase();
    let Some(rest) = upper.strip_prefix("GRANT ") else {
        return Vec::new();
    };
    let Some((privileges, _)) = rest.split_once(" ON *.* TO ") else {
        return Vec::new();
    };
    privileges
        .split(',')
        .map(|p| p.trim().to_string())
        .collect()
}

/// Runs one statement; its rows as text (None for NULL).
pub(crate) async fn query(link: &mut Link, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    link.queue(|out| out.extend_from_slice(sql.as_bytes()));
    let mut rows = TextTable::default();
    match link.answer(&mut rows).await {
        Ok(Answer::Done(_)) => Ok(rows.rows),
        Ok(Answer::Refused(e)) => Err(format!("{sql}: {e}")),
        Err(f) => Err(format!("{sql}: {}", f.error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good(flavor: Flavor) -> ObservedSettings {
        ObservedSettings {
            flavor,
            log_bin: "1".into(),
            binlog_format: "ROW".into(),
            binlog_row_image: "FULL".into(),
            binlog_checksum: "CRC32".into(),
            compression: "0".into(),
            global_privileges: global_privileges(
                "GRANT REPLICATION SLAVE, BINLOG MONITOR, REPLICATION CLIENT ON *.* TO `r`@`%`",
            ),
            binlog_do_db: String::new(),
            binlog_ignore_db: String::new(),
            status_unread: None,
            log_replica_updates: "0".into(),
            replica: Ok(false),
            lower_case_table_names: "0".into(),
        }
    }

    #[test]
    fn names_compared_apart_from_how_they_are_stored_are_refused() {
        let mut s = good(Flavor::MariaDb);
        s.lower_case_table_names = "1".into();
        assert!(refusals(&s).is_empty());
        s.lower_case_table_names = "2".into();
        assert!(refusals(&s)[0].starts_with("lower_case_table_names is 2"));
    }

    #[test]
    fn a_filtered_log_or_a_replica_that_does_not_log_what_it_applies_is_refused() {
        let mut s = good(Flavor::MariaDb);
        s.binlog_ignore_db = "secret".into();
        let r = refusals(&s);
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].contains("binlog-ignore-db = secret"), "{r:?}");
        let mut s = good(Flavor::MySql);
        s.binlog_do_db = "app".into();
        assert!(refusals(&s)[0].contains("binlog-do-db = app"));

        let mut s = good(Flavor::MariaDb);
        s.replica = Ok(true);
        let r = refusals(&s);
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(
            r[0].starts_with("log_slave_updates is OFF on a replica"),
            "{r:?}"
        );
        s.log_replica_updates = "1".into();
        assert!(refusals(&s).is_empty());
        let mut s = good(Flavor::MySql);
        s.replica = Err("access denied".into());
        let r = refusals(&s);
        assert!(
            r[0].starts_with("log_replica_updates is OFF and whether"),
            "{r:?}"
        );
        s.replica = Ok(false);
        assert!(refusals(&s).is_empty());
    }

    #[test]
    fn a_good_server_is_accepted() {
        assert_eq!(refusals(&good(Flavor::MariaDb)), Vec::<String>::new());
        assert_eq!(refusals(&good(Flavor::MySql)), Vec::<String>::new());
        let mut all = good(Flavor::MariaDb);
        all.global_privileges =
            global_privileges("GRANT ALL PRIVILEGES ON *.* TO `hsd`@`127.0.0.1` WITH GRANT OPTION");
        assert!(refusals(&all).is_empty());
    }

    #[test]
    fn each_problem_is_one_line_naming_its_setting() {
        type Change = fn(&mut ObservedSettings);
        let cases: [(&str, Change); 6] = [
            ("log_bin is OFF", |s| s.log_bin = "0".into()),
            ("binlog_format is STATEMENT", |s| {
                s.binlog_format = "STATEMENT".into()
            }),
            ("binlog_format is MIXED", |s| {
                s.binlog_format = "MIXED".into()
            }),
            ("binlog_row_image is MINIMAL", |s| {
                s.binlog_row_image = "MINIMAL".into()
            }),
            ("binlog_row_image is NOBLOB", |s| {
                s.binlog_row_image = "NOBLOB".into()
            }),
            ("log_bin_compress is ON", |s| s.compression = "1".into()),
        ];
        for (line, change) in cases {
            let mut s = good(Flavor::MariaDb);
            change(&mut s);
            let r = refusals(&s);
            assert_eq!(r.len(), 1, "{r:?}");
            assert!(r[0].starts_with(line), "{r:?}");
        }
        let mut s = good(Flavor::MySql);
        s.compression = "1".into();
        assert!(refusals(&s)[0].starts_with("binlog_transaction_compression is ON"));
    }

    #[test]
    fn missing_privileges_are_named() {
        let mut s = good(Flavor::MariaDb);
        s.global_privileges = global_privileges("GRANT SELECT, INSERT ON *.* TO `u`@`%`");
        let r = refusals(&s);
        assert_eq!(r.len(), 2);
        assert!(r[0].contains("REPLICATION SLAVE"));
        assert!(r[1].contains("BINLOG MONITOR"));
        s.flavor = Flavor::MySql;
        let r = refusals(&s);
        assert!(r[1].contains("REPLICATION CLIENT"));
        // Privileges on one database do not count.
        assert!(global_privileges("GRANT ALL PRIVILEGES ON `db`.* TO `u`@`%`").is_empty());
        // MariaDB before 10.5 named BINLOG MONITOR REPLICATION CLIENT.
        s.flavor = Flavor::MariaDb;
        s.global_privileges =
            global_privileges("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `u`@`%`");
        assert!(refusals(&s).is_empty());
    }
}
