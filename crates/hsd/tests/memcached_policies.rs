//! The containers' cache policies (`get_policy`, `set_policy`,
//! `delete_policy`, `flush_policy`) from the config file, on the embedded
//! store, MariaDB and MySQL 8: `cache_only` keeps items in bounded memory
//! and never in the table, `disabled` refuses, `caching` is refused at
//! start where no row cache can serve it and, with one, serves gets from
//! it while writes go to the table. (The plugin's `cache_policies` table
//! is read in tests/memcached_migration.rs.)

mod common;
mod memcached;

use common::blocking::metric;
use memcached::{Front, Store};
use std::time::{Duration, Instant};

/// One test per store: `name::sqlite`, `name::mariadb`, `name::mysql8`.
macro_rules! every_store {
    ($name:ident, $body:ident, $db:expr) => {
        mod $name {
            #[test]
            fn sqlite() {
                super::$body(super::Store::Sqlite, $db);
            }
            #[test]
            fn mariadb() {
                super::$body(super::Store::Mariadb, $db);
            }
            #[test]
            fn mysql8() {
                super::$body(super::Store::Mysql8, $db);
            }
        }
    };
}

/// A container over `items` with `policies` (config-file lines), named
/// `name`.
fn container(name: &str, table: &str, policies: &str) -> String {
    format!(
        r#"
[[memcached.containers]]
name = "{name}"
db_schema = "{{db}}"
db_table = "{table}"
key_columns = "c1"
value_columns = "c2"
flags = "c3"
cas_column = "c4"
expire_time_column = "c5"
unique_idx_name_on_key = "PRIMARY"
{policies}
"#
    )
}

const DEMO_SHAPE: &str = "(c1 VARCHAR(32) NOT NULL PRIMARY KEY, c2 VARCHAR(1024), c3 INT, \
                          c4 BIGINT UNSIGNED, c5 INT)";

fn rows_in(front: &Front, table: &str) -> String {
    front.server.sql(&format!("SELECT COUNT(*) FROM {table}"))[0][0]
        .clone()
        .unwrap_or_default()
}

/// `cache_only`: every command answers as memcached from memory, the
/// table is never read or written, memory is bounded (the least recently
/// used items go), and `flush_all` (flush_policy `cache_only`) drops the
/// items.
fn cache_only(store: Store, db: &str) {
    let config = format!(
        "[memcached]\ncache_only_mib = 1\n{}{}",
        container(
            "default",
            "items",
            "get_policy = \"cache_only\"\nset_policy = \"cache_only\"\n\
             delete_policy = \"cache_only\"\nflush_policy = \"cache_only\""
        ),
        container("table", "items", "")
    );
    let Some(front) = Front::start_containers(store, db, &config) else {
        return;
    };
    front
        .server
        .sql(&format!("CREATE TABLE items {DEMO_SHAPE}"));
    let mut c = front.conn();
    assert!(
        c.ask("stats settings\r\n")
            .contains("STAT evictions on\r\n"),
        "cache_only items are evicted"
    );
    assert_eq!(c.ask("set a 5 0 5\r\nhello\r\n"), "STORED\r\n");
    assert_eq!(c.ask("get a\r\n"), "VALUE a 5 5\r\nhello\r\nEND\r\n");
    assert_eq!(c.ask("add a 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
    assert_eq!(c.ask("append a 0 0 1\r\n!\r\n"), "STORED\r\n");
    assert_eq!(c.ask("get a\r\n"), "VALUE a 5 6\r\nhello!\r\nEND\r\n");
    assert_eq!(c.ask("set n 0 0 2\r\n41\r\n"), "STORED\r\n");
    assert_eq!(c.ask("incr n 1\r\n"), "42\r\n");
    assert_eq!(c.ask("gets n\r\n").lines().count(), 3);
    assert_eq!(c.ask("cas n 0 0 1 1\r\nx\r\n"), "EXISTS\r\n");
    assert_eq!(c.ask("delete n\r\n"), "DELETED\r\n");
    assert_eq!(c.ask("delete n\r\n"), "NOT_FOUND\r\n");
    assert_eq!(c.ask("set gone 0 -1 1\r\nx\r\n"), "STORED\r\n");
    assert_eq!(c.ask("get gone n\r\n"), "END\r\n");
    // A key longer than the key column: memory is not the column.
    let long = "k".repeat(200);
    assert_eq!(c.ask(&format!("set {long} 0 0 1\r\nx\r\n")), "STORED\r\n");
    // Never the table: no row was written, and a row put there is not seen.
    assert_eq!(rows_in(&front, "items"), "0");
    assert_eq!(c.ask("set @@table.t 0 0 3\r\nrow\r\n"), "STORED\r\n");
    assert_eq!(c.ask("get t\r\n"), "END\r\n");
    assert_eq!(rows_in(&front, "items"), "1");
    // Bounded: 3,000 items of 1,000 bytes in 1 MiB keep the latest few
    // hundred, not the first.
    let value = "v".repeat(1000);
    for i in 0..3000 {
        let answer = c.ask(&format!("set m{i} 0 0 1000 noreply\r\n{value}\r\n"));
        assert_eq!(answer, "", "set m{i}");
    }
    assert_eq!(
        c.ask("get m0\r\n"),
        "END\r\n",
        "the oldest item was evicted"
    );
    assert_eq!(
        c.ask("get m2999\r\n"),
        format!("VALUE m2999 0 1000\r\n{value}\r\nEND\r\n")
    );
    let kept = (0..3000)
        .filter(|i| c.ask(&format!("get m{i}\r\n")) != "END\r\n")
        .count();
    assert!(
        (500..=1100).contains(&kept),
        "{kept} of 3000 items of 1000 bytes kept in 1 MiB"
    );
    // flush_all drops the memory items and leaves the table (the table
    // container's flush_policy is the default, disabled).
    assert_eq!(c.ask("flush_all\r\n"), "OK\r\n");
    assert_eq!(c.ask("get m2999 a\r\n"), "END\r\n");
    assert_eq!(
        c.ask("get @@table.t\r\n"),
        "VALUE @@table.t 0 3\r\nrow\r\nEND\r\n"
    );
}

every_store!(cache_only_containers, cache_only, "hst_mc_cache_only");

/// `disabled`: a get is a miss (as the plugin answered it), a write or a
/// delete is refused and changes nothing (the plugin answered `STORED` and
/// `DELETED` and did nothing).
fn disabled(store: Store, db: &str) {
    let config = format!(
        "{}{}",
        container(
            "default",
            "items",
            "get_policy = \"disabled\"\nset_policy = \"disabled\"\ndelete_policy = \"disabled\""
        ),
        container("table", "items", "")
    );
    let Some(front) = Front::start_containers(store, db, &config) else {
        return;
    };
    front
        .server
        .sql(&format!("CREATE TABLE items {DEMO_SHAPE}"));
    let mut c = front.conn();
    assert_eq!(c.ask("set @@table.k 0 0 2\r\n10\r\n"), "STORED\r\n");
    assert_eq!(c.ask("get k\r\n"), "END\r\n");
    assert_eq!(c.ask("gets k @@table.k\r\n").matches("VALUE").count(), 1);
    for (request, policy) in [
        ("set k 0 0 1\r\nx\r\n", "set_policy"),
        ("add j 0 0 1\r\nx\r\n", "set_policy"),
        ("append k 0 0 1\r\nx\r\n", "set_policy"),
        ("incr k 1\r\n", "set_policy"),
        ("touch k 10\r\n", "set_policy"),
        ("delete k\r\n", "delete_policy"),
    ] {
        assert_eq!(
            c.ask(request),
            format!("SERVER_ERROR the container's {policy} is disabled\r\n"),
            "{request:?}"
        );
    }
    assert_eq!(
        c.ask("get @@table.k @@table.j\r\n"),
        "VALUE @@table.k 0 2\r\n10\r\nEND\r\n"
    );
    assert_eq!(rows_in(&front, "items"), "1");
}

every_store!(disabled_containers, disabled, "hst_mc_disabled");

/// Starts hsd (the embedded store, or `url`) with a `caching` container
/// and no row cache: it must refuse, in one line saying why.
fn refused_without_a_row_cache(url: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let config = dir.path().join("hsd.toml");
    std::fs::write(
        &config,
        container("default", "items", "get_policy = \"caching\"").replace("{db}", "hst_mc_caching"),
    )
    .expect("config");
    let (data, config) = (data.display().to_string(), config.display().to_string());
    let mut args = vec![
        "serve",
        "--port",
        "0",
        "--port-wr",
        "0",
        "--data-dir",
        &data,
        "--memcached-address",
        "127.0.0.1:0",
        "--config",
        &config,
    ];
    if let Some(url) = url {
        args.extend(["--backend", url]);
    }
    let run = common::run_hsd(&args, &[]);
    assert!(
        run.ready.is_none() && run.code.is_some_and(|c| c != 0),
        "hsd started with a caching container and no row cache"
    );
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("caching needs hsd's row cache"))
        .collect();
    assert_eq!(said.len(), 1, "{}", run.stderr);
    assert!(
        said[0].contains("memcached container \"default\": get_policy caching"),
        "{}",
        said[0]
    );
}

#[test]
fn caching_is_refused_without_a_row_cache_sqlite() {
    refused_without_a_row_cache(None);
}

#[test]
fn caching_is_refused_without_a_row_cache_mariadb() {
    if let Some(url) = common::mysql_url() {
        refused_without_a_row_cache(Some(&url));
    }
}

#[test]
fn caching_is_refused_without_a_row_cache_mysql8() {
    if let Some(url) = common::mysql8_url() {
        refused_without_a_row_cache(Some(&url));
    }
}

/// `caching` with the row cache (MySQL backends): gets of a container on a
/// VARBINARY key are served by the row cache, writes go to the table, a
/// change made by SQL is seen (the cache follows the binary log); a
/// container on a character key, which the row cache does not hold, is
/// refused when first used.
fn caching(url: Option<String>, db: &str) {
    let Some(url) = url else {
        return;
    };
    let config = format!(
        "{}{}",
        container(
            "default",
            "cached",
            "get_policy = \"caching\"\nset_policy = \"caching\"\ndelete_policy = \"caching\""
        )
        .replace("c1", "k"),
        container("chars", "items", "get_policy = \"caching\"")
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hsd.toml");
    std::fs::write(&path, config.replace("{db}", db)).expect("config");
    let path = path.display().to_string();
    let server = common::TestServer::start_at(
        common::Backend::Mysql,
        Some(url),
        db,
        &[
            "--memcached-address",
            "127.0.0.1:0",
            "--config",
            &path,
            "--row-cache-mib",
            "8",
            "--admin-address",
            "127.0.0.1:0",
        ],
    );
    server.sql(
        "CREATE TABLE cached (k VARBINARY(64) NOT NULL PRIMARY KEY, c2 VARCHAR(1024), c3 INT, \
         c4 BIGINT UNSIGNED, c5 INT)",
    );
    server.sql(&format!("CREATE TABLE items {DEMO_SHAPE}"));
    let admin = server.admin_addr.clone().expect("admin address");
    let mut c = memcached::Conn::open(server.memcached_addr.as_deref().expect("memcached"));
    assert_eq!(c.ask("set a 3 0 5\r\nhello\r\n"), "STORED\r\n");
    let row = server.sql("SELECT c2, c3 FROM cached WHERE k = 'a'");
    assert_eq!(
        row[0],
        [Some("hello".into()), Some("3".into())],
        "written through"
    );
    let hits_before = metric(&admin, "hsd_row_cache_hits_total");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert_eq!(c.ask("get a\r\n"), "VALUE a 3 5\r\nhello\r\nEND\r\n");
        if metric(&admin, "hsd_row_cache_hits_total") > hits_before {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no get was served by the row cache"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A change by SQL reaches the cache through the binary log.
    server.sql("UPDATE cached SET c2 = 'by sql' WHERE k = 'a'");
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.ask("get a\r\n") != "VALUE a 3 6\r\nby sql\r\nEND\r\n" {
        assert!(Instant::now() < deadline, "the SQL change was never seen");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.ask("delete a\r\n"), "DELETED\r\n");
    assert_eq!(c.ask("get a\r\n"), "END\r\n");
    assert!(server.sql("SELECT k FROM cached").is_empty());
    assert_eq!(
        c.ask("get @@chars.x\r\n"),
        "SERVER_ERROR the container's caching policy: the row cache does not hold its keys\r\n"
    );
}

#[test]
fn caching_with_the_row_cache_mariadb() {
    caching(common::mysql_url(), "hst_mc_caching");
}

#[test]
fn caching_with_the_row_cache_mysql8() {
    caching(common::mysql8_url(), "hst_mc_caching");
}
