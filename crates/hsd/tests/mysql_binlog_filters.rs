//! Binary log settings the row cache cannot be exact with, each on a
//! MariaDB of the test's own (the tests change what every session of the
//! server would see):
//!
//! - a binary log the server filters (`binlog-ignore-db`): changes to the
//!   databases it leaves out never reach the row cache, so `hsd serve`
//!   refuses `--row-cache-mib` and `hsd check` reports it, in the same
//!   words;
//! - a setting changed while hsd runs (`SET GLOBAL binlog_format`): the
//!   reader judges the settings again and the cache stops serving, in the
//!   same words, until they pass again.

mod common;
use common::blocking::*;
use common::{mysql_url, run_hsd, PrivateMariadb};
use std::time::{Duration, Instant};

#[test]
fn a_filtered_binary_log_refuses_the_row_cache_in_serve_and_check() {
    if mysql_url().is_none() {
        return;
    }
    let inst = PrivateMariadb::start_with(
        "mariadb-binlog-filter",
        &[("HSD_MARIADB_OPTIONS", "binlog-ignore-db=hsdt_secret")],
    );
    let mut sql = sql_conn(&inst.url);
    let status = rows(&mut sql, "SHOW MASTER STATUS");
    let ignored = status
        .first()
        .and_then(|r| r.get(3).cloned().flatten())
        .map(|v| String::from_utf8_lossy(&v).into_owned());
    assert_eq!(
        ignored.as_deref(),
        Some("hsdt_secret"),
        "the server's filter"
    );
    let words = "the binary log is filtered (binlog-ignore-db = hsdt_secret)";
    let serve = run_hsd(
        &[
            "serve",
            "--backend",
            &inst.url,
            "--port",
            "0",
            "--port-wr",
            "0",
            "--row-cache-mib",
            "8",
        ],
        &[],
    );
    assert_eq!(serve.code, Some(1), "{}", serve.stderr);
    assert!(serve.stderr.contains(words), "{}", serve.stderr);
    let check = run_hsd(
        &["check", "--backend", &inst.url, "--row-cache-mib", "8"],
        &[],
    );
    assert_eq!(check.code, Some(1), "{}", check.stdout);
    assert!(
        check.stdout.contains(words) || check.stderr.contains(words),
        "{}{}",
        check.stdout,
        check.stderr
    );
    // Without the cache, hsd serves this server as any other.
    let mut sql = fresh_db(&inst.url, "hsdt_filters");
    exec(&mut sql, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    let hsd = Hsd::start(&inst.url, &[]);
    let mut w = hsd.writer();
    assert_eq!(w.q("P|0|hsdt_filters|t|PRIMARY|id,v"), "0|1");
    assert_eq!(w.q("0|+|2|1|7"), "0|1");
}

/// Waits up to 30 s for `metric` on `admin` to read `wanted`.
fn until_metric(admin: &str, name: &str, wanted: f64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(admin, name) != wanted {
        assert!(Instant::now() < deadline, "{what}: {name} never {wanted}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `SET GLOBAL binlog_format = 'STATEMENT'` while hsd serves from the
/// cache: within the reader's recheck (5 s) the cache stops serving and
/// logs why in the words `hsd serve` refuses with at start (and `hsd
/// check` says at once); reads are
/// answered by the server meanwhile; once the setting is back, the cache
/// serves again (from an empty cache: what was logged meanwhile is not
/// trusted). Today's code went on serving.
#[test]
fn a_setting_changed_while_hsd_runs_stops_the_cache_until_it_passes_again() {
    if mysql_url().is_none() {
        return;
    }
    let inst = PrivateMariadb::start("mariadb-binlog-settings");
    let db = "hsdt_settings";
    let mut sql = fresh_db(&inst.url, db);
    exec(&mut sql, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    exec(&mut sql, "INSERT INTO t VALUES (1, 10)");
    let hsd = Hsd::start(
        &inst.url,
        &["--row-cache-mib", "8", "--admin-address", "127.0.0.1:0"],
    );
    let admin = hsd.admin.clone().expect("admin address");
    let mut r = hsd.reader();
    assert_eq!(r.q(&format!("P|0|{db}|t|PRIMARY|id,v")), "0|1");
    read_until_a_hit(&mut r, &admin, "0|=|1|1", "0|2|1|10", "before the change");
    until_metric(&admin, "hsd_row_cache_serving", 1.0, "before the change");

    exec(&mut sql, "SET GLOBAL binlog_format = 'STATEMENT'");
    until_metric(
        &admin,
        "hsd_row_cache_serving",
        0.0,
        "binlog_format STATEMENT",
    );
    // `hsd check` now refuses it as well, in the words the reader logs.
    let check = run_hsd(
        &["check", "--backend", &inst.url, "--row-cache-mib", "8"],
        &[],
    );
    assert_eq!(check.code, Some(1), "{}", check.stdout);
    assert!(
        check
            .stdout
            .contains("binlog_format is STATEMENT: the row cache needs ROW"),
        "{}{}",
        check.stdout,
        check.stderr
    );
    // Not served from the cache: a change is read at once.
    let hits = metric(&admin, "hsd_row_cache_hits_total");
    let mut writer = sql_conn(&inst.url);
    exec(
        &mut writer,
        &format!("UPDATE {db}.t SET v = 11 WHERE id = 1"),
    );
    for _ in 0..20 {
        assert_eq!(r.q("0|=|1|1"), "0|2|1|11", "while refused");
    }
    assert_eq!(
        metric(&admin, "hsd_row_cache_hits_total"),
        hits,
        "served from the cache while refused"
    );

    exec(&mut sql, "SET GLOBAL binlog_format = 'ROW'");
    until_metric(
        &admin,
        "hsd_row_cache_serving",
        1.0,
        "binlog_format ROW again",
    );
    read_until_a_hit(
        &mut r,
        &admin,
        "0|=|1|1",
        "0|2|1|11",
        "after the change back",
    );
    let mut writer = sql_conn(&inst.url);
    exec(
        &mut writer,
        &format!("UPDATE {db}.t SET v = 12 WHERE id = 1"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.q("0|=|1|1") != "0|2|1|12" {
        assert!(
            Instant::now() < deadline,
            "a change after the setting came back was not seen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
