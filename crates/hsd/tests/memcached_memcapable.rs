//! libmemcached's protocol conformance tests (`memcapable`, Debian's
//! `memccapable` in libmemcached-tools) against hsd's memcached port, as
//! Oracle ran them against the InnoDB memcached plugin: every ascii and
//! every binary test must pass, on the embedded store, on MariaDB
//! (`HSD_TEST_MYSQL_URL`) and on MySQL 8 (`HSD_TEST_MYSQL8_URL`). The
//! default container is the plugin's `demo_test` shape with
//! `flush_policy = "innodb_only"` (memcapable flushes between tests).

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

fn memcapable_passes(store: Store, db: &str) {
    assert!(
        std::path::Path::new(MEMCAPABLE).exists(),
        "memccapable is not installed: scripts/deps.sh installs libmemcached-tools"
    );
    let Some(front) = Front::start_flushable(store, db) else {
        return;
    };
    let addr = front.server.memcached_addr.clone().expect("memcached port");
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
