//! MySQL backend: no request shape leaves a transaction, a HANDLER or a
//! metadata lock open on the server once its answers are sent. For each
//! shape (reads and writes pipelined in every order, errors in the middle,
//! a client that leaves before reading its answers) a fresh table is served,
//! one client sends the shape in one write on the write port and leaves,
//! and another client's DDL on the table must succeed at once. Then: hsd's
//! own statements wait for a table another client's DDL holds no longer
//! than a lock wait (`lock_wait_timeout`, set from --mysql-timeout), and
//! resume when it is released. Runs on MariaDB and on MySQL 8 (test.sh's
//! MySQL 8 half).

mod common;
use common::blocking::*;
use common::mysql_url;
use std::time::{Duration, Instant};

const DB: &str = "hsdt_mdl";

/// How each shape is sent.
#[derive(Clone, Copy, PartialEq)]
enum Leave {
    /// Reads every answer, then disconnects.
    AfterAnswers,
    /// Disconnects as soon as the requests are written.
    AtOnce,
}

/// Request shapes: (name, lines after the opening `P` of index 0 on
/// `t(id, v)` by PRIMARY, on the write port unless said).
fn shapes() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("find", vec!["0|=|1|1"]),
        ("delete", vec!["0|=|1|2|1|0|D"]),
        ("find, delete", vec!["0|=|1|1", "0|=|1|2|1|0|D"]),
        ("delete, find", vec!["0|=|1|2|1|0|D", "0|=|1|1"]),
        ("insert, find", vec!["0|+|2|100|x", "0|=|1|100"]),
        ("update, find", vec!["0|=|1|3|1|0|U|3|y", "0|=|1|3"]),
        (
            "insert, update, find, delete",
            vec![
                "0|+|2|101|a",
                "0|=|1|101|1|0|U|101|b",
                "0|=|1|101",
                "0|=|1|101|1|0|D",
            ],
        ),
        (
            "find, insert, range find, update, find",
            vec![
                "0|=|1|4",
                "0|+|2|102|c",
                "0|>=|1|1|5|0",
                "0|=|1|4|1|0|U|4|z",
                "0|=|1|102",
            ],
        ),
        (
            "duplicate insert (an error), find, insert",
            vec!["0|+|2|1|dup", "0|=|1|1", "0|+|2|103|d"],
        ),
        (
            "update, unknown index (an error), find",
            vec!["0|=|1|5|1|0|U|5|w", "9|=|1|1", "0|=|1|5"],
        ),
        (
            "update, find with a bad column count (an error), find",
            vec!["0|=|1|6|1|0|U|6", "0|=|1|6"],
        ),
        ("delete by range, find", vec!["0|>|1|7|2|0|D", "0|=|1|7"]),
    ]
}

fn fresh_table(sql: &mut mysql::Conn) {
    exec(sql, "DROP TABLE IF EXISTS t");
    exec(
        sql,
        "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v VARCHAR(20) NOT NULL) ENGINE=InnoDB",
    );
    let values: Vec<String> = (1..=20).map(|n| format!("({n}, 'v{n}')")).collect();
    exec(sql, &format!("INSERT INTO t VALUES {}", values.join(", ")));
}

/// Runs `stmt` on `sql` (whose lock_wait_timeout is 2 s); fails the test
/// with `what` when it waited for a lock.
fn ddl_at_once(sql: &mut mysql::Conn, stmt: &str, what: &str) {
    use mysql::prelude::Queryable;
    let t = Instant::now();
    if let Err(e) = sql.query_drop(stmt) {
        let locks: Vec<String> = rows(
            sql,
            &format!(
                "SELECT CONCAT(ID, ': ', COALESCE(STATE, ''), ': ', COALESCE(INFO, '')) \
                 FROM information_schema.PROCESSLIST WHERE DB = '{DB}'"
            ),
        )
        .into_iter()
        .map(|r| String::from_utf8_lossy(&r[0].clone().unwrap_or_default()).into_owned())
        .collect();
        panic!(
            "after `{what}`: {stmt} failed after {:?}: {e}; sessions on {DB}: {locks:?}",
            t.elapsed()
        );
    }
    let took = t.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "after `{what}`: {stmt} took {took:?}"
    );
}

#[test]
fn no_request_shape_leaves_a_lock_behind() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, DB);
    exec(&mut sql, "SET SESSION lock_wait_timeout = 2");
    let hsd = Hsd::start(&url, &[]);
    for leave in [Leave::AfterAnswers, Leave::AtOnce] {
        for (name, lines) in shapes() {
            let what = format!(
                "{name}{}",
                if leave == Leave::AtOnce {
                    " (left before the answers)"
                } else {
                    ""
                }
            );
            fresh_table(&mut sql);
            {
                let mut w = hsd.writer();
                assert_eq!(w.q(&format!("P|0|{DB}|t|PRIMARY|id,v")), "0|1", "{what}");
                let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                match leave {
                    Leave::AfterAnswers => {
                        let got = w.pipeline(&lines);
                        assert_eq!(got.len(), lines.len(), "{what}: {got:?}");
                    }
                    Leave::AtOnce => {
                        let mut raw = Vec::new();
                        for l in &lines {
                            raw.extend(Hs::line(
                                &l.split('|').map(|t| Some(t.as_bytes())).collect::<Vec<_>>(),
                            ));
                        }
                        w.send_raw(&raw);
                    }
                }
            }
            if leave == Leave::AtOnce {
                // The group still runs: what it holds ends with its COMMIT.
                std::thread::sleep(Duration::from_millis(300));
            }
            ddl_at_once(&mut sql, "ALTER TABLE t ADD COLUMN extra INT", &what);
            ddl_at_once(&mut sql, "DROP TABLE t", &what);
        }
    }
    // The read port too, and an idle hsd after all of it holds nothing.
    fresh_table(&mut sql);
    let mut r = hsd.reader();
    assert_eq!(r.q(&format!("P|0|{DB}|t|PRIMARY|id,v")), "0|1");
    let got = r.pipeline(&["0|=|1|1".to_string(), "0|>=|1|1|5|0".to_string()]);
    assert_eq!(got[0], "0|2|1|v1");
    // A HANDLER handle of the read port may be open while the client is
    // connected; it is given back when its lease ends or a DDL waits.
    drop(r);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        use mysql::prelude::Queryable;
        match sql.query_drop("TRUNCATE TABLE t") {
            Ok(()) => break,
            Err(e) => assert!(
                Instant::now() < deadline,
                "the read port kept its lock on t: {e}"
            ),
        }
    }
}

/// Another client holds the table (`LOCK TABLES ... WRITE`, as a DDL's
/// exclusive lock does): hsd's reads and writes answer the lock wait error
/// within --mysql-timeout instead of waiting for a year, and work again
/// once the table is free.
#[test]
fn a_table_held_by_another_client_bounds_the_wait() {
    let Some(url) = mysql_url() else { return };
    let db = "hsdt_mdl_wait";
    let mut sql = fresh_db(&url, db);
    fresh_table(&mut sql);
    let hsd = Hsd::start(&url, &["--mysql-timeout", "3"]);
    let mut r = hsd.reader();
    let mut w = hsd.writer();
    assert_eq!(r.q(&format!("P|0|{db}|t|PRIMARY|id,v")), "0|1");
    assert_eq!(w.q(&format!("P|0|{db}|t|PRIMARY|id,v")), "0|1");
    assert_eq!(w.q("0|=|1|1|1|0|U|1|before"), "0|1|1");
    let mut holder = sql_conn(&url);
    exec(&mut holder, &format!("USE `{db}`"));
    exec(&mut holder, "LOCK TABLES t WRITE");
    for (port, line) in [("write", "0|=|1|1|1|0|U|1|during"), ("read", "0|=|1|2")] {
        let c = if port == "write" { &mut w } else { &mut r };
        let t = Instant::now();
        let got = c.q(line);
        let took = t.elapsed();
        assert!(
            got.starts_with("1|1|"),
            "{port} port: answered {got} while the table was held"
        );
        assert!(
            took < Duration::from_secs(3),
            "{port} port waited {took:?} for a table another client held"
        );
        eprintln!("{port} port: {got} after {took:?}");
    }
    // Both are refused for the lock wait itself (the original's answer to
    // a lock wait, 146), not for a lost connection or a statement time
    // bound: the session waits one lock wait, not until the link gives up.
    let got = w.q("0|=|1|3|1|0|U|3|during");
    assert_eq!(got, "1|1|146", "a write waiting for a held table");
    assert_eq!(r.q("0|=|1|3"), "1|1|146", "a read waiting for a held table");
    exec(&mut holder, "UNLOCK TABLES");
    assert_eq!(w.q("0|=|1|1|1|0|U|1|after"), "0|1|1");
    assert_eq!(r.q("0|=|1|1"), "0|2|1|after");
    assert_eq!(scalar(&mut sql, "SELECT v FROM t WHERE id = 3"), "v3");
}
