//! A server that stores names in lower case (`lower_case_table_names = 1`):
//! `P` opens `RT`.`T2` as the server resolves it (as the original plugin
//! does), and DDL that names tables in another case (`TRUNCATE TABLE
//! RT.T2`, a RENAME swap) evicts the cached rows of the tables it changes.
//! A MariaDB of this test's own, started with the setting.

mod common;
use common::blocking::*;
use common::{mysql_url, PrivateMariadb};
use std::time::{Duration, Instant};

/// Reads `query` until it is answered from the cache.
fn cached(r: &mut Hs, admin: &str, query: &str, expected: &str) {
    let before = metric(admin, "hsd_row_cache_hits_total");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert_eq!(r.q(query), expected);
        if metric(admin, "hsd_row_cache_hits_total") > before {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{query}: never served from the cache"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn names_in_another_case_open_and_evict_as_the_server_resolves_them() {
    if mysql_url().is_none() {
        return;
    }
    let inst = PrivateMariadb::start_with(
        "mariadb-lower-case",
        &[("HSD_MARIADB_OPTIONS", "lower_case_table_names=1")],
    );
    let mut sql = sql_conn(&inst.url);
    assert_eq!(scalar(&mut sql, "SELECT @@lower_case_table_names"), "1");
    exec(&mut sql, "DROP DATABASE IF EXISTS rt");
    exec(&mut sql, "CREATE DATABASE rt");
    exec(
        &mut sql,
        "CREATE TABLE rt.t2 (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
    );
    exec(
        &mut sql,
        "CREATE TABLE rt.t3 (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
    );
    exec(&mut sql, "INSERT INTO rt.t2 VALUES (1, 'two')");
    exec(&mut sql, "INSERT INTO rt.t3 VALUES (1, 'three')");
    let hsd = Hsd::start(
        &inst.url,
        &[
            "--row-cache-mib",
            "8",
            "--read-consistency",
            "strict",
            "--admin-address",
            "127.0.0.1:0",
        ],
    );
    let admin = hsd.admin.clone().expect("admin address");
    let mut r = hsd.reader();
    // Opened in the case the client types, as the original does.
    assert_eq!(r.q("P|0|RT|T2|PRIMARY|id,v"), "0|1");
    assert_eq!(r.q("P|1|rt|t3|PRIMARY|id,v"), "0|1");
    cached(&mut r, &admin, "0|=|1|1", "0|2|1|two");
    cached(&mut r, &admin, "1|=|1|1", "0|2|1|three");
    // A RENAME swap typed in upper case: each name now holds the other's rows.
    exec(
        &mut sql,
        "RENAME TABLE RT.T2 TO RT.TMP, RT.T3 TO RT.T2, RT.TMP TO RT.T3",
    );
    let mut r2 = hsd.reader();
    assert_eq!(r2.q("P|0|rt|t2|PRIMARY|id,v"), "0|1");
    assert_eq!(r2.q("P|1|RT|T3|PRIMARY|id,v"), "0|1");
    for _ in 0..10 {
        assert_eq!(r2.q("0|=|1|1"), "0|2|1|three", "t2 after the swap");
        assert_eq!(r2.q("1|=|1|1"), "0|2|1|two", "t3 after the swap");
    }
    cached(&mut r2, &admin, "0|=|1|1", "0|2|1|three");
    // TRUNCATE typed in upper case empties what the cache held.
    exec(&mut sql, "TRUNCATE TABLE RT.T2");
    for _ in 0..10 {
        assert_eq!(r2.q("0|=|1|1"), "0|2", "t2 after TRUNCATE: no row");
    }
}
