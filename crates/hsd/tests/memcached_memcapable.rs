//! libmemcached's protocol conformance tests (`memcapable`, Debian's
//! `memccapable` in libmemcached-tools) against hsd's memcached port, as
//! Oracle ran them against the InnoDB memcached plugin: every ascii and
//! every binary test must pass, on the embedded store, on MariaDB
//! (`HSD_TEST_MYSQL_URL`) and on MySQL 8 (`HSD_TEST_MYSQL8_URL`).
//! memcapable flushes between tests: the containers' flush policy is
//! `innodb_only`.

mod common;
mod memcached;

use memcached::{Front, Store};
use std::process::Command;

/// Debian's name of libmemcached's memcapable.
const MEMCAPABLE: &str = "/usr/bin/memccapable";

/// Runs memcapable with `protocol` (`-a` or `-b`) against `addr`: how
/// many tests passed and failed, and its output.
fn run(addr: &str, protocol: &str) -> (usize, usize, String) {
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    let output = Command::new(MEMCAPABLE)
        .args(["-h", host, "-p", port, "-t", "5", protocol])
        .output()
        .expect("run memccapable");
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let passed = text.matches("[pass]").count();
    let failed = text.matches("[FAIL]").count();
    (passed, failed, text)
}

/// hsd serving memcapable's keys, and what keeps it running: on the
/// embedded store a config file's container (`flush_policy =
/// "innodb_only"`); on MariaDB and MySQL 8 the plugin's own
/// `innodb_memcache` tables as its script made them (`cache_policies` all
/// `innodb_only`, container `aaa` over `test.demo_test`), the table in
/// latin1 as MySQL 5.7, the plugin's last home, made it by default:
/// memcapable stores binary values, which a utf8mb4 column cannot keep as
/// given (hsd refuses them there).
fn start(store: Store, db: &str) -> Option<(String, Box<dyn std::any::Any>)> {
    use mysql::prelude::Queryable;
    let url = match store {
        Store::Sqlite => {
            let front = Front::start_flushable(store, db)?;
            let addr = front.server.memcached_addr.clone().expect("memcached port");
            return Some((addr, Box::new(front)));
        }
        Store::Mariadb => common::mysql_url()?,
        Store::Mysql8 => common::mysql8_url()?,
    };
    let mut sql =
        mysql::Conn::new(mysql::Opts::from_url(&url).expect("mysql url")).expect("connect");
    for stmt in memcached::PLUGIN_SETUP {
        sql.query_drop(stmt)
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    sql.query_drop("ALTER TABLE test.demo_test CONVERT TO CHARACTER SET latin1")
        .expect("latin1");
    let server = common::TestServer::start_at(
        common::Backend::Mysql,
        Some(url),
        db,
        &["--memcached-address", "127.0.0.1:0"],
    );
    let addr = server.memcached_addr.clone().expect("memcached port");
    Some((addr, Box::new(server)))
}

fn memcapable_passes(store: Store, db: &str) {
    assert!(
        std::path::Path::new(MEMCAPABLE).exists(),
        "memccapable is not installed: scripts/deps.sh installs libmemcached-tools"
    );
    let Some((addr, _running)) = start(store, db) else {
        return;
    };
    for protocol in ["-a", "-b"] {
        let (passed, failed, text) = run(&addr, protocol);
        eprintln!("{store:?} memcapable {protocol}: {passed} passed, {failed} failed");
        assert!(
            failed == 0 && passed == 27,
            "{store:?} memcapable {protocol}: {passed} passed, {failed} failed:\n{text}"
        );
    }
}

#[test]
fn memcapable_sqlite() {
    memcapable_passes(Store::Sqlite, "hst_mc_capable");
}

#[test]
fn memcapable_mariadb() {
    memcapable_passes(Store::Mariadb, "hst_mc_capable");
}

#[test]
fn memcapable_mysql8() {
    memcapable_passes(Store::Mysql8, "hst_mc_capable");
}
