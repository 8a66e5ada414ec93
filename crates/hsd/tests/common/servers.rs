//! The private servers the suites run against, with no hsd binary in it:
//! their URLs as `scripts/test.sh` exports them (in CI a missing one is a
//! failure, locally a recorded skip) and SQL beside them through the
//! `mysql` crate. hsd-mysql's own tests (the binary log reader) include
//! this file too.

use super::skips;
use mysql::prelude::Queryable;

/// The MariaDB URL the test script exports. In CI its absence is a failure:
/// the MariaDB half of the suite is never skipped there.
pub fn mysql_url() -> Option<String> {
    match std::env::var("HSD_TEST_MYSQL_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "HSD_TEST_MYSQL_URL is not set: CI must run the MariaDB tests (scripts/test.sh sets it)"
            );
            skips::skip(
                skips::Half::Mariadb,
                "HSD_TEST_MYSQL_URL not set: skipping the MariaDB half (run scripts/test.sh)",
            );
            None
        }
    }
}

/// The private MySQL 8 that `scripts/mysql8.sh` runs (the third backend).
/// In CI its absence is a failure, as for `mysql_url`.
pub fn mysql8_url() -> Option<String> {
    match std::env::var("HSD_TEST_MYSQL8_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "HSD_TEST_MYSQL8_URL is not set: CI must run the MySQL 8 tests (scripts/test.sh sets it)"
            );
            skips::skip(
                skips::Half::Mysql8,
                "HSD_TEST_MYSQL8_URL not set: skipping the MySQL 8 half (run scripts/test.sh)",
            );
            None
        }
    }
}

/// A connection to the server, with the test's session settings.
pub fn sql_conn(url: &str) -> mysql::Conn {
    let opts = mysql::OptsBuilder::from_opts(mysql::Opts::from_url(url).expect("mysql url"))
        .prefer_socket(false);
    let mut c = mysql::Conn::new(opts).expect("connect to MariaDB");
    c.query_drop("SET NAMES utf8mb4").expect("set names");
    c
}

/// Drops and creates database `db`; returns a connection using it.
pub fn fresh_db(url: &str, db: &str) -> mysql::Conn {
    let mut c = sql_conn(url);
    c.query_drop(format!("DROP DATABASE IF EXISTS `{db}`"))
        .expect("drop db");
    c.query_drop(format!("CREATE DATABASE `{db}` CHARACTER SET utf8mb4"))
        .expect("create db");
    c.query_drop(format!("USE `{db}`")).expect("use db");
    c
}

/// Runs statements (text protocol), panicking with the SQL on error.
pub fn exec(c: &mut mysql::Conn, sql: &str) {
    c.query_drop(sql)
        .unwrap_or_else(|e| panic!("SQL {sql:?} failed: {e}"));
}

/// Rows as the server's own text (text protocol), NULL as None.
pub fn rows(c: &mut mysql::Conn, sql: &str) -> Vec<Vec<Option<Vec<u8>>>> {
    let result: Vec<mysql::Row> = c
        .query(sql)
        .unwrap_or_else(|e| panic!("SQL {sql:?} failed: {e}"));
    result
        .into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    mysql::Value::NULL => None,
                    mysql::Value::Bytes(b) => Some(b),
                    other => Some(other.as_sql(true).into_bytes()),
                })
                .collect()
        })
        .collect()
}

/// The first column of the first row, as a string.
pub fn scalar(c: &mut mysql::Conn, sql: &str) -> String {
    let r = rows(c, sql);
    let v = r
        .first()
        .and_then(|row| row.first().cloned())
        .flatten()
        .unwrap_or_default();
    String::from_utf8_lossy(&v).into_owned()
}

/// A global status counter (e.g. `Com_stmt_execute`).
pub fn global_status(c: &mut mysql::Conn, name: &str) -> u64 {
    let r = rows(c, &format!("SHOW GLOBAL STATUS LIKE '{name}'"));
    r.first()
        .and_then(|row| row.get(1).cloned().flatten())
        .and_then(|v| String::from_utf8_lossy(&v).parse().ok())
        .unwrap_or_else(|| panic!("no status {name}"))
}
