//! The SQL side of a target: creates and resets its copy of the tables, and
//! reads a table's rows back for the row-by-row comparison. MariaDB through
//! the `mysql` crate, hsd's embedded store through SQLite directly (its files
//! are ordinary SQLite databases, readable while hsd runs).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use mysql::prelude::Queryable;

use crate::schema::Table;
use crate::vschema;

/// One row: each value as the database's text form, NULL as None.
pub type Row = Vec<Option<Vec<u8>>>;

pub enum Store {
    Mysql {
        conn: Box<mysql::Conn>,
        db: String,
        /// Replicas of the server (MariaDB GTID replication) that hsd reads
        /// from: a reset is done once they have applied it, since hsd only
        /// promises its reads see hsd's own writes.
        replicas: Vec<mysql::Conn>,
        /// `db` is a sharded Vitess keyspace behind vtgate: each table is
        /// sharded by its primary key's first column, its AUTO_INCREMENT
        /// numbered by a sequence (`vschema`).
        sharded: bool,
        /// The vtgate URL and keyspace, naming the keyspace in `MADE`.
        at: String,
    },
    Sqlite {
        conn: rusqlite::Connection,
        path: PathBuf,
    },
}

impl Store {
    /// A database `db` on the MariaDB or MySQL server at `url` (created if
    /// missing). The session's settings are spelt out, not the server's
    /// defaults, which differ between MariaDB and MySQL 8: strict mode (a
    /// seed row that does not fit fails loudly) and utf8mb4_general_ci.
    pub fn mysql(url: &str, db: &str) -> Result<Store> {
        let opts = mysql::Opts::from_url(url).with_context(|| format!("bad MySQL URL {url}"))?;
        let mut conn = mysql::Conn::new(opts).with_context(|| format!("connect to {url}"))?;
        conn.query_drop(
            "SET SESSION lock_wait_timeout = 20, sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'",
        )
        .context("set the session")?;
        conn.query_drop("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
            .context("set names")?;
        conn.query_drop(format!(
            "CREATE DATABASE IF NOT EXISTS `{db}` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
        ))
        .with_context(|| format!("create database {db}"))?;
        Ok(Store::Mysql {
            conn: Box::new(conn),
            db: db.to_string(),
            replicas: Vec::new(),
            sharded: false,
            at: String::new(),
        })
    }

    /// The sharded keyspace `keyspace` behind vtgate at `url` (which makes
    /// no databases: the keyspace is there).
    pub fn vitess(url: &str, keyspace: &str) -> Result<Store> {
        let opts = mysql::Opts::from_url(url).with_context(|| format!("bad vtgate URL {url}"))?;
        let mut conn = mysql::Conn::new(opts).with_context(|| format!("connect to {url}"))?;
        conn.query_drop(
            "SET SESSION lock_wait_timeout = 20, sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'",
        )
        .context("set the session")?;
        conn.query_drop("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
            .context("set names")?;
        Ok(Store::Mysql {
            conn: Box::new(conn),
            db: keyspace.to_string(),
            replicas: Vec::new(),
            sharded: true,
            at: format!("{url} {keyspace}"),
        })
    }

    /// As `mysql`, on a primary whose replicas at `replica_urls` serve
    /// hsd's reads.
    pub fn mysql_replicated(url: &str, db: &str, replica_urls: &[String]) -> Result<Store> {
        let mut store = Store::mysql(url, db)?;
        if let Store::Mysql { replicas, .. } = &mut store {
            for r in replica_urls {
                let opts =
                    mysql::Opts::from_url(r).with_context(|| format!("bad MariaDB URL {r}"))?;
                replicas.push(mysql::Conn::new(opts).with_context(|| format!("connect to {r}"))?);
            }
        }
        Ok(store)
    }

    /// The SQLite file hsd's embedded store keeps for database `db` in `data_dir`.
    pub fn sqlite(data_dir: &std::path::Path, db: &str) -> Result<Store> {
        let path = data_dir.join(format!("{db}.sqlite"));
        let conn = rusqlite::Connection::open(&path)
            .with_context(|| format!("open {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(20))
            .context("set busy timeout")?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .context("WAL mode")?;
        Ok(Store::Sqlite { conn, path })
    }

    pub fn describe(&self) -> String {
        match self {
            Store::Mysql { db, sharded, .. } if *sharded => format!("Vitess keyspace {db}"),
            Store::Mysql { db, .. } => format!("MySQL/MariaDB database {db}"),
            Store::Sqlite { path, .. } => format!("SQLite file {}", path.display()),
        }
    }

    /// Recreates `table` (MariaDB: DROP and CREATE; SQLite: CREATE once, then
    /// DELETE and reset its auto-increment sequence) and inserts its seed rows.
    pub fn reset(&mut self, table: &Table) -> Result<()> {
        match self {
            Store::Mysql {
                conn,
                db,
                sharded: true,
                at,
                ..
            } => reset_sharded(conn, db, at, table),
            Store::Mysql {
                conn, db, replicas, ..
            } => {
                let name = table.name;
                conn.query_drop(format!("DROP TABLE IF EXISTS `{db}`.`{name}`"))
                    .with_context(|| format!("drop {db}.{name}"))?;
                conn.query_drop(format!("USE `{db}`"))
                    .with_context(|| format!("use {db}"))?;
                conn.query_drop(table.mysql_create())
                    .with_context(|| format!("create {db}.{name}"))?;
                conn.query_drop(mysql_insert(table, false))
                    .with_context(|| format!("seed {db}.{name}"))?;
                check_mysql_index_order(conn, db, table)?;
                if !replicas.is_empty() {
                    let pos: String = conn
                        .query_first("SELECT @@gtid_binlog_pos")
                        .context("primary's position")?
                        .unwrap_or_default();
                    for r in replicas.iter_mut() {
                        let done: Option<i64> = r
                            .query_first(format!("SELECT MASTER_GTID_WAIT('{pos}', 30)"))
                            .context("wait for a replica")?;
                        if done != Some(0) {
                            bail!("a replica did not apply the reset of {name} within 30 s");
                        }
                    }
                }
                Ok(())
            }
            Store::Sqlite { conn, .. } => {
                let name = table.name;
                let exists: bool = conn
                    .query_row(
                        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                        [name],
                        |r| r.get::<_, i64>(0),
                    )
                    .with_context(|| format!("look up {name}"))?
                    > 0;
                let tx = conn.transaction().context("begin")?;
                if !exists {
                    for stmt in table.sqlite_create() {
                        tx.execute(&stmt, [])
                            .with_context(|| format!("run {stmt}"))?;
                    }
                }
                tx.execute(&format!("DELETE FROM \"{name}\""), [])
                    .with_context(|| format!("empty {name}"))?;
                let has_seq: i64 = tx
                    .query_row(
                        "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'",
                        [],
                        |r| r.get(0),
                    )
                    .context("look up sqlite_sequence")?;
                if has_seq > 0 {
                    tx.execute("DELETE FROM sqlite_sequence WHERE name = ?1", [name])
                        .context("reset sequence")?;
                }
                let marks = vec!["?"; table.columns.len()].join(",");
                let sql = format!("INSERT INTO \"{name}\" VALUES ({marks})");
                for row in &table.seed_rows {
                    tx.execute(&sql, rusqlite::params_from_iter(row.iter()))
                        .with_context(|| format!("seed {name}"))?;
                }
                tx.commit().context("commit reset")
            }
        }
    }

    /// Every row of `table`, in primary-key order.
    pub fn rows(&mut self, table: &Table) -> Result<Vec<Row>> {
        let order = table
            .primary()
            .parts
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(",");
        let cols = table
            .columns
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect::<Vec<_>>()
            .join(",");
        match self {
            Store::Mysql { conn, db, .. } => {
                let sql = format!(
                    "SELECT {cols} FROM `{db}`.`{}` ORDER BY {order}",
                    table.name
                );
                let mut out = Vec::new();
                let mut result = conn.query_iter(&sql).with_context(|| sql.clone())?;
                while let Some(set) = result.iter() {
                    for row in set {
                        let row = row.with_context(|| format!("read a row of {sql}"))?;
                        out.push(row.unwrap().into_iter().map(mysql_text).collect());
                    }
                }
                Ok(out)
            }
            Store::Sqlite { conn, .. } => {
                let sql = format!(
                    "SELECT {} FROM \"{}\" ORDER BY {}",
                    cols.replace('`', "\""),
                    table.name,
                    order.replace('`', "\"")
                );
                let mut stmt = conn.prepare(&sql).with_context(|| sql.clone())?;
                let n = table.columns.len();
                let rows = stmt
                    .query_map([], |r| {
                        (0..n)
                            .map(|i| r.get_ref(i).map(sqlite_text))
                            .collect::<rusqlite::Result<Row>>()
                    })
                    .with_context(|| sql.clone())?;
                rows.collect::<rusqlite::Result<Vec<Row>>>()
                    .with_context(|| format!("read rows of {sql}"))
            }
        }
    }
}

/// The tables this process has made in a sharded keyspace (`vtgate-url
/// keyspace`, table): the suite's own definitions, which a later reset
/// only empties. Process-wide, so that the many short runs of one test
/// binary make each table once.
static MADE: std::sync::Mutex<BTreeSet<(String, &'static str)>> =
    std::sync::Mutex::new(BTreeSet::new());

/// Resets `table` in a sharded keyspace behind vtgate: made and sharded
/// at this process's first reset of it, emptied at later ones (DDL through
/// vtgate has every tablet reload its schema: several times slower than a
/// DELETE); its sequence set back only when it numbered rows since.
fn reset_sharded(conn: &mut mysql::Conn, keyspace: &str, at: &str, table: &Table) -> Result<()> {
    let name = table.name;
    conn.query_drop(format!("USE `{keyspace}`"))
        .with_context(|| format!("use {keyspace}"))?;
    let made = |add: bool| {
        let mut set = MADE.lock().unwrap_or_else(|p| p.into_inner());
        let key = (at.to_string(), name);
        if add {
            set.insert(key);
            true
        } else {
            set.contains(&key)
        }
    };
    let first = !made(false);
    if first {
        conn.query_drop(format!("DROP TABLE IF EXISTS `{name}`"))
            .with_context(|| format!("drop {keyspace}.{name}"))?;
        conn.query_drop(table.mysql_create())
            .with_context(|| format!("create {keyspace}.{name}"))?;
        // vschema entries outlive the table: a keyspace the suite ran on
        // before has them.
        for alter in vschema::shard_statements(keyspace, table)? {
            if let Err(e) = conn.query_drop(&alter) {
                if !vschema::already_there(&e.to_string()) {
                    return Err(e).with_context(|| format!("run {alter}"));
                }
            }
        }
    } else {
        conn.query_drop(format!("DELETE FROM `{name}`"))
            .with_context(|| format!("empty {keyspace}.{name}"))?;
    }
    let moved = match vschema::sequence_probe(table)? {
        Some((sql, start)) => {
            first
                || conn
                    .query_first::<u64, _>(&sql)
                    .with_context(|| sql.clone())?
                    != Some(start)
        }
        None => false,
    };
    if moved {
        for stmt in vschema::sequence_reset(table)? {
            conn.query_drop(&stmt)
                .with_context(|| format!("reset the sequence of {name}: {stmt}"))?;
        }
    }
    conn.query_drop(mysql_insert(table, true))
        .with_context(|| format!("seed {keyspace}.{name}"))?;
    if first {
        check_mysql_index_order(conn, keyspace, table)?;
        made(true);
    }
    Ok(())
}

/// The seed rows' INSERT; with the column list when `named` (vtgate takes
/// none without, unless its vschema lists the table's columns).
fn mysql_insert(table: &Table, named: bool) -> String {
    let rows: Vec<String> = table
        .seed_rows
        .iter()
        .map(|r| {
            let vals: Vec<String> = r
                .iter()
                .map(|v| match v {
                    None => "NULL".to_string(),
                    Some(s) => mysql::Value::Bytes(s.as_bytes().to_vec()).as_sql(false),
                })
                .collect();
            format!("({})", vals.join(","))
        })
        .collect();
    let columns = if named {
        let names: Vec<String> = table
            .columns
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect();
        format!(" ({})", names.join(","))
    } else {
        String::new()
    };
    format!(
        "INSERT INTO `{}`{columns} VALUES {}",
        table.name,
        rows.join(",")
    )
}

/// The generator numbers indexes as declared; MariaDB must agree, or numeric
/// index names in `P` would mean different indexes to it and to us.
fn check_mysql_index_order(conn: &mut mysql::Conn, db: &str, table: &Table) -> Result<()> {
    let sql = format!("SHOW INDEX FROM `{db}`.`{}`", table.name);
    let rows: Vec<mysql::Row> = conn.query(&sql).with_context(|| sql.clone())?;
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        let name: String = r
            .get_opt(2)
            .and_then(|v| v.ok())
            .context("SHOW INDEX without Key_name")?;
        if names.last() != Some(&name) {
            names.push(name);
        }
    }
    let want: Vec<&str> = table.indexes.iter().map(|i| i.name).collect();
    if names != want {
        bail!(
            "table {}: MariaDB orders its indexes {names:?}, the suite declares {want:?}",
            table.name
        );
    }
    Ok(())
}

fn mysql_text(v: mysql::Value) -> Option<Vec<u8>> {
    match v {
        mysql::Value::NULL => None,
        mysql::Value::Bytes(b) => Some(b),
        other => Some(other.as_sql(true).trim_matches('\'').as_bytes().to_vec()),
    }
}

fn sqlite_text(v: rusqlite::types::ValueRef<'_>) -> Option<Vec<u8>> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string().into_bytes()),
        ValueRef::Real(f) => Some(f.to_string().into_bytes()),
        ValueRef::Text(t) => Some(t.to_vec()),
        ValueRef::Blob(b) => Some(b.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::lite_tables;

    #[test]
    fn sqlite_reset_and_rows_roundtrip() {
        let dir = std::env::temp_dir().join(format!("hs-conformance-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut store = Store::sqlite(&dir, "unit").expect("open sqlite");
        for t in lite_tables() {
            store.reset(&t).expect("reset");
            store.reset(&t).expect("reset twice");
            // the seed rows are written in primary-key order
            let want: Vec<Row> = t
                .seed_rows
                .iter()
                .map(|r| r.iter().map(|v| v.map(|s| s.as_bytes().to_vec())).collect())
                .collect();
            assert_eq!(store.rows(&t).expect("rows"), want, "{}", t.name);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn mysql_insert_quotes_values() {
        let t = &lite_tables()[0];
        let sql = mysql_insert(t, false);
        assert!(
            sql.starts_with("INSERT INTO `lite_items` VALUES ('1','1','apple','10')"),
            "{sql}"
        );
        assert!(sql.contains("NULL"));
    }
}
