//! A binary log the server filters (`binlog-ignore-db`): changes to the
//! databases it leaves out never reach the row cache, so `hsd serve`
//! refuses `--row-cache-mib` and `hsd check` reports it, in the same
//! words. A MariaDB of this test's own, started with the filter.

mod common;
use common::blocking::*;
use common::{mysql_url, run_hsd, PrivateMariadb};

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
