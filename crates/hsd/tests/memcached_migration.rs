//! Moving from the InnoDB memcached plugin: the `innodb_memcache` schema
//! as the plugin's `innodb_memcached_config.sql` created it (its tables,
//! its example container `aaa` over `test.demo_test`, its `separator`
//! option, its example row), served unchanged by hsd started with only
//! `--memcached-address`, and its `cache_policies` row read as the
//! plugin read it. On MariaDB and MySQL 8.

mod common;
mod memcached;

use common::{Backend, TestServer};
use memcached::{Conn, PLUGIN_SETUP};
use mysql::prelude::Queryable;

fn admin(url: &str) -> mysql::Conn {
    mysql::Conn::new(mysql::Opts::from_url(url).expect("mysql url")).expect("connect")
}

#[test]
fn the_plugins_configuration_is_served_unchanged_mariadb() {
    if let Some(url) = common::mysql_url() {
        served_unchanged(&url);
    }
}

#[test]
fn the_plugins_configuration_is_served_unchanged_mysql8() {
    if let Some(url) = common::mysql8_url() {
        served_unchanged(&url);
    }
}

fn served_unchanged(url: &str) {
    let mut sql = admin(url);
    for stmt in PLUGIN_SETUP {
        sql.query_drop(stmt)
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    let server = TestServer::start_at(
        Backend::Mysql,
        Some(url.to_string()),
        "hst_mc_migration",
        &["--memcached-address", "127.0.0.1:0"],
    );
    let mut c = Conn::open(server.memcached_addr.as_deref().expect("memcached port"));
    // The example row, by plain key (`aaa` is the only, so the default,
    // container) and by `@@aaa.`.
    assert_eq!(
        c.ask("get AA @@aaa.AA\r\n"),
        "VALUE AA 8 12\r\nHELLO, HELLO\r\nVALUE @@aaa.AA 8 12\r\nHELLO, HELLO\r\nEND\r\n"
    );
    assert_eq!(c.ask("set BB 3 0 5\r\nworld\r\n"), "STORED\r\n");
    let row: Option<(String, String, u32, u64, i64)> = sql
        .query_first("SELECT c1, c2, c3, c4, C5 FROM test.demo_test WHERE c1 = 'BB'")
        .expect("select");
    let (key, value, flags, cas, expires) = row.expect("the row memcached stored");
    assert_eq!(
        (key.as_str(), value.as_str(), flags, expires),
        ("BB", "world", 3, 0)
    );
    assert_ne!(cas, 0, "the cas column holds a memcached write's number");
    assert_eq!(
        c.ask("incr AA 1\r\n"),
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    );
    assert_eq!(c.ask("delete AA\r\n"), "DELETED\r\n");
    let left: Vec<String> = sql
        .query("SELECT c1 FROM test.demo_test ORDER BY c1")
        .expect("select");
    assert_eq!(left, ["BB"]);
    // flush_all by cache_policies' flush_policy (`innodb_only`): the table
    // is emptied, as the plugin emptied it.
    assert!(c
        .ask("stats settings\r\n")
        .contains("STAT flush_enabled yes\r\n"));
    assert_eq!(c.ask("flush_all\r\n"), "OK\r\n");
    let left: Vec<String> = sql.query("SELECT c1 FROM test.demo_test").expect("select");
    assert!(left.is_empty(), "flush_all left {left:?}");
    drop(server);
    // `disabled`: refused, as memcached -F refuses it.
    sql.query_drop("UPDATE innodb_memcache.cache_policies SET flush_policy = 'disabled'")
        .expect("update");
    sql.query_drop("INSERT INTO test.demo_test VALUES ('CC', 'kept', 0, 0, 0)")
        .expect("insert");
    let server = TestServer::start_at(
        Backend::Mysql,
        Some(url.to_string()),
        "hst_mc_migration",
        &["--memcached-address", "127.0.0.1:0"],
    );
    let mut c = Conn::open(server.memcached_addr.as_deref().expect("memcached port"));
    assert_eq!(
        c.ask("flush_all\r\n"),
        "CLIENT_ERROR flush_all not allowed\r\n"
    );
    assert_eq!(c.ask("get CC\r\n"), "VALUE CC 0 4\r\nkept\r\nEND\r\n");
    drop(server);
    // get/set/delete_policy `cache_only`: memory only, the table untouched.
    sql.query_drop(
        "UPDATE innodb_memcache.cache_policies SET get_policy = 'cache_only', \
         set_policy = 'cache_only', delete_policy = 'cache_only'",
    )
    .expect("update");
    let server = TestServer::start_at(
        Backend::Mysql,
        Some(url.to_string()),
        "hst_mc_migration",
        &["--memcached-address", "127.0.0.1:0"],
    );
    let mut c = Conn::open(server.memcached_addr.as_deref().expect("memcached port"));
    assert_eq!(
        c.ask("get CC\r\n"),
        "END\r\n",
        "the table's row is not memory's"
    );
    assert_eq!(c.ask("set DD 0 0 3\r\nmem\r\n"), "STORED\r\n");
    assert_eq!(c.ask("get DD\r\n"), "VALUE DD 0 3\r\nmem\r\nEND\r\n");
    let left: Vec<String> = sql
        .query("SELECT c1 FROM test.demo_test ORDER BY c1")
        .expect("select");
    assert_eq!(left, ["CC"]);
    drop(server);
    // `disabled` gets miss, `disabled` sets are refused.
    sql.query_drop(
        "UPDATE innodb_memcache.cache_policies SET get_policy = 'disabled', \
         set_policy = 'disabled', delete_policy = 'innodb_only'",
    )
    .expect("update");
    let server = TestServer::start_at(
        Backend::Mysql,
        Some(url.to_string()),
        "hst_mc_migration",
        &["--memcached-address", "127.0.0.1:0"],
    );
    let mut c = Conn::open(server.memcached_addr.as_deref().expect("memcached port"));
    assert_eq!(c.ask("get CC\r\n"), "END\r\n");
    assert_eq!(
        c.ask("set CC 0 0 1\r\nx\r\n"),
        "SERVER_ERROR the container's set_policy is disabled\r\n"
    );
    assert_eq!(c.ask("delete CC\r\n"), "DELETED\r\n");
    let left: Vec<String> = sql.query("SELECT c1 FROM test.demo_test").expect("select");
    assert!(left.is_empty(), "delete (innodb_only) left {left:?}");
    drop(server);
    sql.query_drop("DROP DATABASE innodb_memcache")
        .expect("drop");
    sql.query_drop("DROP TABLE test.demo_test").expect("drop");
}
