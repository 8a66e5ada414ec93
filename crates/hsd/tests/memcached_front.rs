//! The memcached front against a real memcached (Debian's): every command
//! a table-backed server can answer alike is sent to both and the answers
//! compared (cas numbers aside); the differences the table model forces are
//! listed in `differences_from_memcached` and pinned there; and a row is
//! the same row through memcached, SQL and HandlerSocket. On the embedded
//! store, on MariaDB (`HSD_TEST_MYSQL_URL`) and on MySQL 8
//! (`HSD_TEST_MYSQL8_URL`).

mod common;
mod memcached;

use common::{q, t};
use memcached::{without_cas, Conn, Front, Reference, Store};

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
    (async $name:ident, $body:ident, $db:expr) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$body(super::Store::Sqlite, $db).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mariadb() {
                super::$body(super::Store::Mariadb, $db).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql8() {
                super::$body(super::Store::Mysql8, $db).await;
            }
        }
    };
}

/// Requests (one exchange each, in order, on one connection) whose answers
/// must be memcached's. Keys are unique per case.
const CASES: &[&[&str]] = &[
    // get, gets, multi-get with misses, flags kept
    &[
        "set a1 42 0 5\r\nhello\r\n",
        "get a1\r\n",
        "gets a1 nokey a1\r\n",
        "get nokey1 nokey2\r\n",
        "set a1 7 0 0\r\n\r\n",
        "get a1\r\n",
    ],
    // add, replace
    &[
        "add b1 0 0 1\r\nx\r\n",
        "add b1 0 0 1\r\ny\r\n",
        "get b1\r\n",
        "replace b2 0 0 1\r\nz\r\n",
        "replace b1 3 0 2\r\nzz\r\n",
        "get b1 b2\r\n",
    ],
    // append, prepend keep the flags
    &[
        "append c1 0 0 1\r\nx\r\n",
        "prepend c1 0 0 1\r\nx\r\n",
        "set c1 9 0 3\r\nmid\r\n",
        "append c1 0 0 4\r\n-end\r\n",
        "prepend c1 5 0 6\r\nstart-\r\n",
        "get c1\r\n",
    ],
    // cas
    &[
        "cas d1 0 0 1 1\r\nx\r\n",
        "set d1 0 0 2\r\nv1\r\n",
        "gets d1\r\n",
        "cas d1 0 0 2 {cas}\r\nv2\r\n",
        "get d1\r\n",
        "cas d1 0 0 2 1\r\nv3\r\n",
        "gets d1\r\n",
        "set d1 0 0 2\r\nv4\r\n",
        "cas d1 0 0 2 {cas}\r\nv5\r\n",
        "get d1\r\n",
    ],
    // delete
    &[
        "delete e1\r\n",
        "set e1 0 0 1\r\nx\r\n",
        "delete e1\r\n",
        "get e1\r\n",
        "set e1 0 0 1\r\nx\r\n",
        "delete e1 noreply\r\n",
        "get e1\r\n",
        "delete e1 0\r\n",
        "delete e1 5\r\n",
    ],
    // incr, decr
    &[
        "incr f1 1\r\n",
        "set f1 0 0 2\r\n10\r\n",
        "incr f1 5\r\n",
        "decr f1 3\r\n",
        "decr f1 100\r\n",
        "set f1 0 0 20\r\n18446744073709551615\r\n",
        "incr f1 2\r\n",
        "set f1 0 0 3\r\nabc\r\n",
        "incr f1 1\r\n",
        "incr f1 abc\r\n",
        "set f1 0 0 1\r\n5\r\n",
        "incr f1 1 noreply\r\n",
        "get f1\r\n",
    ],
    // touch, gat, gats, expiry
    &[
        "touch g1 10\r\n",
        "set g1 3 0 1\r\nx\r\n",
        "touch g1 100\r\n",
        "gat 100 g1 nokey\r\n",
        "gats 0 g1\r\n",
        "set g2 0 -1 1\r\nx\r\n",
        "get g2\r\n",
        "touch g1 -1\r\n",
        "get g1\r\n",
        "add g1 0 0 1\r\ny\r\n",
        "get g1\r\n",
    ],
    // noreply storage, errors that keep the connection
    &[
        "set h1 0 0 1 noreply\r\nx\r\n",
        "add h1 0 0 1 noreply\r\ny\r\n",
        "get h1\r\n",
        "bogus\r\n",
        "get\r\n",
        "set h2 0 0 3\r\nabcd\r\n",
        "get h2\r\n",
        "set h3 0 0 x\r\n",
        "get kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\r\n",
        "verbosity 1\r\n",
        "verbosity 1 noreply\r\n",
    ],
    // meta commands
    &[
        "mg m1 v\r\n",
        "mg m1 v k O123\r\n",
        "ms m1 2 F5 T0\r\nhi\r\n",
        "mg m1 v f k s t O9\r\n",
        "mg m1 c\r\n",
        "ms m1 2 MA\r\n!!\r\n",
        "mg m1 v\r\n",
        "ms m1 1 ME\r\nx\r\n",
        "ms m1 1 C1\r\nx\r\n",
        "md m1 q\r\n",
        "md m1\r\n",
        "mg m1 v q\r\n",
        "ma m2\r\n",
        "ms m2 1\r\n7\r\n",
        "ma m2 v D3\r\n",
        "ma m2 MD D100 v\r\n",
        "ms m3 1 q\r\nx\r\n",
        "mg m3 v\r\n",
        "ma m4 N0 J5 v\r\n",
        "ma m4 N0 J5 v\r\n",
        "mg m4 v\r\n",
    ],
    // `c` on ms and ma: the new item's cas (0 when nothing was stored)
    &[
        "ms mc1 1 c\r\nx\r\n",
        "ms mc1 1 c ME\r\ny\r\n",
        "ms mc1 1 c C1\r\nz\r\n",
        "ms mcnone 1 c C5\r\nz\r\n",
        "ma mcn N0 J5 c v\r\n",
        "ma mcn c\r\n",
        "ma mcnone c\r\n",
    ],
];

fn compare_with_memcached(store: Store, db: &str) {
    let Some(front) = Front::start(store, db) else {
        return;
    };
    let reference = Reference::start();
    for (i, case) in CASES.iter().enumerate() {
        let mut ours = front.conn();
        let mut theirs = Conn::open(&reference.addr);
        for request in case.iter() {
            let got = ours.ask(request);
            let want = theirs.ask(request);
            assert_eq!(
                without_cas(&got),
                without_cas(&want),
                "case {i}, request {request:?}: hsd answered {got:?}, memcached {want:?}"
            );
        }
    }
}

every_store!(
    same_answers_as_memcached,
    compare_with_memcached,
    "hst_mc_same"
);

/// What hsd answers differently, and why (docs/memcached.md lists them).
fn differences(store: Store, db: &str) {
    let Some(front) = Front::start(store, db) else {
        return;
    };
    let reference = Reference::start();
    let mut ours = front.conn();
    let mut theirs = Conn::open(&reference.addr);
    // flush_all would empty tables: refused where no container's
    // flush_policy allows it (the config file's default), as memcached -F
    // refuses it.
    assert_eq!(theirs.ask("flush_all\r\n"), "OK\r\n");
    assert_eq!(
        ours.ask("flush_all\r\n"),
        "CLIENT_ERROR flush_all not allowed\r\n"
    );
    assert_eq!(ours.ask("flush_all noreply\r\n"), "");
    // stats: the general group only, with what applies to tables.
    let stats = ours.ask("stats\r\n");
    for name in [
        "pid",
        "uptime",
        "time",
        "version",
        "pointer_size",
        "containers",
    ] {
        assert!(
            stats.contains(&format!("STAT {name} ")),
            "stats lacks {name}: {stats}"
        );
    }
    assert!(stats.ends_with("END\r\n"));
    // Groups: settings with hsd's values; items, slabs and sizes as an
    // empty memcached answers them (no item is in memory); reset as
    // memcached; the rest unknown.
    let settings = ours.ask("stats settings\r\n");
    let port = front
        .server
        .memcached_addr
        .as_deref()
        .and_then(|a| a.rsplit(':').next());
    for line in [
        format!("STAT tcpport {}\r\n", port.expect("port")),
        "STAT item_size_max 1048576\r\n".into(),
        "STAT auth_enabled_sasl no\r\n".into(),
        "STAT flush_enabled no\r\n".into(),
        "STAT evictions off\r\n".into(),
    ] {
        assert!(settings.contains(&line), "{line:?} not in {settings}");
    }
    assert!(settings.ends_with("END\r\n"));
    assert_eq!(ours.ask("stats items\r\n"), "END\r\n");
    assert_eq!(
        ours.ask("stats slabs\r\n"),
        "STAT active_slabs 0\r\nSTAT total_malloced 0\r\nEND\r\n"
    );
    for group in [
        "stats sizes\r\n",
        "stats reset\r\n",
        "stats nosuchgroup\r\n",
    ] {
        assert_eq!(ours.ask(group), theirs.ask(group), "{group}");
    }
    assert_eq!(ours.ask("stats conns\r\n"), "ERROR\r\n");
    // me: the expiry, cas and value size a row has; a miss as memcached's.
    assert_eq!(ours.ask("me nokey\r\n"), theirs.ask("me nokey\r\n"));
    ours.ask("set dbg 0 0 5\r\nhello\r\n");
    let cas = ours.ask("gets dbg\r\n");
    let cas = cas
        .split("\r\n")
        .next()
        .and_then(|l| l.split(' ').nth(4))
        .expect("cas");
    assert_eq!(
        ours.ask("me dbg\r\n"),
        format!("ME dbg exp=-1 cas={cas} size=5\r\n")
    );
    ours.ask("touch dbg 100\r\n");
    let debug = ours.ask("me dbg\r\n");
    assert!(
        debug == format!("ME dbg exp=100 cas={cas} size=5\r\n")
            || debug == format!("ME dbg exp=99 cas={cas} size=5\r\n"),
        "{debug}"
    );
    // version: hsd's own.
    assert_eq!(
        ours.ask("version\r\n"),
        format!("VERSION 1.6.18-hsd-{}\r\n", env!("CARGO_PKG_VERSION"))
    );
    // A key with a control byte: memcached stores it, hsd refuses it as
    // the protocol text asks (docs/memcached.md, Differences).
    assert_eq!(theirs.ask("set c\x01k 0 0 1\r\nx\r\n"), "STORED\r\n");
    assert_eq!(
        ours.ask("set c\x01k 0 0 1\r\nx\r\n"),
        "CLIENT_ERROR bad command line format\r\nERROR\r\n"
    );
    // Counters as memcached keeps them: a shorter number padded with
    // spaces to the value's length (decr, and incr past 2^64 - 1), spaces
    // around a number read as the number.
    for request in [
        "set sh 0 0 3\r\n100\r\ndecr sh 1\r\nget sh\r\nincr sh 1\r\nget sh\r\n",
        "set sw 0 0 20\r\n18446744073709551615\r\nincr sw 1\r\nget sw\r\nincr sw 3\r\n",
        "set sp 0 0 3\r\n 12\r\nincr sp 1\r\nget sp\r\ndecr sp 2\r\n",
        "set sq 0 0 3\r\n1 2\r\nincr sq 1\r\nset sr 0 0 2\r\n  \r\nincr sr 1\r\n",
    ] {
        assert_eq!(ours.ask(request), theirs.ask(request), "{request:?}");
    }
    assert_eq!(
        ours.ask("get sh sw\r\n"),
        "VALUE sh 0 3\r\n100\r\nVALUE sw 0 20\r\n3                   \r\nEND\r\n"
    );
    // A value longer than its column (VARCHAR(1024)): the embedded store
    // keeps it whole; on MySQL and MariaDB, which would cut it to the
    // column (hsd's sessions use sql_mode '', as HandlerSocket's plugin
    // did), it is refused as memcached refuses an item too large, and the
    // row keeps what it held, whatever the command.
    let long = "v".repeat(2000);
    ours.ask("set long 0 0 3\r\nold\r\n");
    let stored = ours.ask(&format!("set long 0 0 2000\r\n{long}\r\n"));
    if store == Store::Sqlite {
        assert_eq!(stored, "STORED\r\n");
        assert_eq!(
            ours.ask("get long\r\n"),
            format!("VALUE long 0 2000\r\n{long}\r\nEND\r\n")
        );
    } else {
        assert_eq!(stored, "SERVER_ERROR object too large for cache\r\n");
        let append = ours.ask(&format!("append long 0 0 2000\r\n{long}\r\n"));
        assert_eq!(append, "SERVER_ERROR object too large for cache\r\n");
        // 1,024 characters of four bytes each fit a utf8mb4 VARCHAR(1024).
        let wide = "\u{1F600}".repeat(1024);
        let stored = ours.ask(&format!("set wide 0 0 {}\r\n{wide}\r\n", wide.len()));
        assert_eq!(stored, "STORED\r\n");
        assert_eq!(ours.ask("get long\r\n"), "VALUE long 0 3\r\nold\r\nEND\r\n");
    }
}

every_store!(differences_from_memcached, differences, "hst_mc_diff");

/// The plugin's key syntax: `@@name.key`, `@@name` switching the default,
/// several value columns joined by the separator.
fn containers(store: Store, db: &str) {
    let Some(front) = Front::start(store, db) else {
        return;
    };
    let mut c = front.conn();
    assert_eq!(c.ask("set @@two.p1 0 0 7\r\nleft|ri\r\n"), "STORED\r\n");
    assert_eq!(
        c.ask("get @@two.p1 p1\r\n"),
        "VALUE @@two.p1 0 7\r\nleft|ri\r\nEND\r\n"
    );
    let rows = front.server.sql("SELECT k, a, b FROM pairs");
    assert_eq!(
        rows,
        vec![vec![
            Some("p1".into()),
            Some("left".into()),
            Some("ri".into())
        ]]
    );
    // A value with fewer parts leaves the other columns NULL; more parts
    // stay in the last column.
    c.ask("set @@two.p2 0 0 4\r\nonly\r\n");
    c.ask("set @@two.p3 0 0 5\r\na|b|c\r\n");
    let rows = front.server.sql("SELECT k, a, b FROM pairs ORDER BY k");
    assert_eq!(rows[1], vec![Some("p2".into()), Some("only".into()), None]);
    assert_eq!(
        rows[2],
        vec![Some("p3".into()), Some("a".into()), Some("b|c".into())]
    );
    // `@@two` alone makes it the connection's default.
    assert_eq!(c.ask("get @@two\r\n"), "END\r\n");
    assert_eq!(c.ask("get p1\r\n"), "VALUE p1 0 7\r\nleft|ri\r\nEND\r\n");
    assert_eq!(c.ask("get @@default.p1\r\n"), "END\r\n");
    // Another connection still starts on `default`.
    assert_eq!(front.conn().ask("get p1\r\n"), "END\r\n");
    // An unknown container stores nothing and finds nothing.
    assert_eq!(c.ask("set @@nope.k 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
    assert_eq!(c.ask("get @@nope.k\r\n"), "END\r\n");
}

every_store!(containers, containers, "hst_mc_containers");

/// The door's counters: `stats` answers memcached's general counters and
/// `/metrics` the same counts as `hsd_memcached_*` series, each listed in
/// docs/operations.md. Before, `stats` had no counter and no series
/// counted a memcached command.
fn counters(store: Store, db: &str) {
    let admin = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .to_string();
    let Some(front) = Front::start_with(store, db, &["--admin-address", &admin]) else {
        return;
    };
    let mut c = front.conn();
    c.ask("set k1 0 0 1\r\na\r\n");
    c.ask("add k1 0 0 1\r\nb\r\n");
    c.ask("get k1 nokey\r\n");
    c.ask("get k1\r\n");
    c.ask("delete k1\r\n");
    c.ask("delete k1\r\n");
    c.ask("incr nokey 1\r\n");
    let stats = c.ask("stats\r\n");
    let stat = |name: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("STAT {name} "))?.parse().ok())
            .unwrap_or_else(|| panic!("no STAT {name} in {stats}"))
    };
    assert_eq!(stat("cmd_get"), 3, "{stats}");
    assert_eq!(stat("get_hits"), 2, "{stats}");
    assert_eq!(stat("get_misses"), 1, "{stats}");
    assert_eq!(stat("cmd_set"), 2, "{stats}");
    assert_eq!(stat("delete_hits"), 1, "{stats}");
    assert_eq!(stat("delete_misses"), 1, "{stats}");
    assert_eq!(stat("incr_misses"), 1, "{stats}");
    assert_eq!(stat("curr_connections"), 1, "{stats}");
    assert!(stat("total_connections") >= 1, "{stats}");
    // The series, from the admin endpoint.
    let body = common::blocking::metrics_text(&admin);
    for line in [
        "hsd_memcached_commands_total{command=\"get\",result=\"hit\"} 2",
        "hsd_memcached_commands_total{command=\"get\",result=\"miss\"} 1",
        "hsd_memcached_commands_total{command=\"set\",result=\"stored\"} 1",
        "hsd_memcached_commands_total{command=\"add\",result=\"not_stored\"} 1",
        "hsd_memcached_commands_total{command=\"delete\",result=\"deleted\"} 1",
        "hsd_memcached_connections 1",
    ] {
        assert!(body.lines().any(|l| l == line), "{line} not in {body}");
    }
    let docs = include_str!("../../../docs/operations.md");
    for name in body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next())
        .filter(|n| n.starts_with("hsd_memcached"))
    {
        assert!(
            docs.contains(&format!("`{name}")),
            "docs/operations.md lacks {name}"
        );
    }
}

every_store!(counted, counters, "hst_mc_counted");

/// One row through three doors: memcached, SQL, HandlerSocket.
async fn three_doors(store: Store, db: &str) {
    let Some(front) = Front::start(store, db) else {
        return;
    };
    let s = &front.server;
    let mut c = front.conn();
    assert_eq!(c.ask("set door 12 0 5\r\nfirst\r\n"), "STORED\r\n");
    let rows = s.sql("SELECT c1, c2, c3 FROM demo_test");
    assert_eq!(
        rows,
        vec![vec![
            Some("door".into()),
            Some("first".into()),
            Some("12".into())
        ]]
    );
    let mut hs = s.writer().await;
    assert_eq!(
        q(&mut hs, &format!("P|1|{db}|demo_test|PRIMARY|c1,c2,c3")).await,
        t("0|1")
    );
    assert_eq!(q(&mut hs, "1|=|1|door").await, t("0|3|door|first|12"));

    // A change by SQL is seen, and changes the cas a client holds.
    let before = c.ask("gets door\r\n");
    s.sql("UPDATE demo_test SET c2 = 'bysql' WHERE c1 = 'door'");
    let after = c.ask("gets door\r\n");
    assert!(after.starts_with("VALUE door 12 5 "), "{after}");
    assert!(after.contains("\r\nbysql\r\n"));
    assert_ne!(before, after);
    // So a cas taken before it fails, one taken after it succeeds.
    let stale = before
        .split("\r\n")
        .next()
        .and_then(|l| l.split(' ').nth(4))
        .unwrap_or("0")
        .to_string();
    assert_eq!(
        c.ask(&format!("cas door 0 0 1 {stale}\r\nx\r\n")),
        "EXISTS\r\n"
    );
    assert_eq!(c.ask("cas door 1 0 2 {cas}\r\nok\r\n"), "STORED\r\n");

    // A change by HandlerSocket, and an insert, are seen too.
    assert_eq!(q(&mut hs, "1|=|1|door|1|0|U|door|byhs|3").await, t("0|1|1"));
    assert_eq!(c.ask("get door\r\n"), "VALUE door 3 4\r\nbyhs\r\nEND\r\n");
    assert_eq!(q(&mut hs, "1|+|3|new|fromhs|0").await, t("0|1"));
    assert_eq!(
        c.ask("incr new 1\r\n"),
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    );
    assert_eq!(c.ask("get new\r\n"), "VALUE new 0 6\r\nfromhs\r\nEND\r\n");
    // A row with NULL flags, cas and expiry reads as flags 0, no expiry.
    s.sql("INSERT INTO demo_test (c1, c2) VALUES ('nulls', 'v')");
    assert_eq!(c.ask("get nulls\r\n"), "VALUE nulls 0 1\r\nv\r\nEND\r\n");
    // A delete by memcached is gone for SQL.
    assert_eq!(c.ask("delete new\r\n"), "DELETED\r\n");
    assert!(s
        .sql("SELECT c1 FROM demo_test WHERE c1 = 'new'")
        .is_empty());
    // An expired row is not returned; the read that comes upon it deletes
    // it (unless it changed meanwhile), as does a delete.
    s.sql("UPDATE demo_test SET c5 = 1 WHERE c1 = 'nulls'");
    assert_eq!(c.ask("get nulls\r\n"), "END\r\n");
    assert!(s
        .sql("SELECT c1 FROM demo_test WHERE c1 = 'nulls'")
        .is_empty());
    c.ask("set gone 0 0 1\r\nx\r\n");
    s.sql("UPDATE demo_test SET c5 = 1 WHERE c1 = 'gone'");
    assert_eq!(c.ask("delete gone\r\n"), "NOT_FOUND\r\n");
    assert!(s
        .sql("SELECT c1 FROM demo_test WHERE c1 = 'gone'")
        .is_empty());
}

every_store!(async three_doors, three_doors, "hst_mc_doors");

/// Read-modify-write commands from many connections at once lose nothing:
/// each guarded write changes the row only if it is still as read.
fn concurrent_counters(store: Store, db: &str) {
    let Some(front) = Front::start(store, db) else {
        return;
    };
    let mut c = front.conn();
    assert_eq!(c.ask("set n 0 0 1\r\n0\r\n"), "STORED\r\n");
    assert_eq!(c.ask("set s 0 0 0\r\n\r\n"), "STORED\r\n");
    let (clients, each) = (8, 25);
    std::thread::scope(|scope| {
        for _ in 0..clients {
            scope.spawn(|| {
                let mut c = front.conn();
                for _ in 0..each {
                    let answer = c.ask("incr n 1\r\n");
                    assert!(
                        answer.trim_end().parse::<u64>().is_ok(),
                        "incr answered {answer:?}"
                    );
                    assert_eq!(c.ask("append s 0 0 1\r\nx\r\n"), "STORED\r\n");
                }
            });
        }
    });
    let total = clients * each;
    assert_eq!(
        c.ask("get n\r\n"),
        format!("VALUE n 0 3\r\n{total}\r\nEND\r\n")
    );
    let appended = c.ask("get s\r\n");
    assert_eq!(
        appended,
        format!("VALUE s 0 {total}\r\n{}\r\nEND\r\n", "x".repeat(total))
    );
}

every_store!(
    concurrent_read_modify_writes,
    concurrent_counters,
    "hst_mc_concurrent"
);

/// A container naming a column its table lacks stops the start, saying so.
#[test]
fn a_container_that_does_not_fit_its_table_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let data = data.display().to_string();
    let made = std::process::Command::new(common::hsd_bin())
        .args([
            "sql",
            "--data-dir",
            &data,
            "shop",
            "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)",
        ])
        .status()
        .expect("hsd sql");
    assert!(made.success());
    let config = dir.path().join("hsd.toml");
    std::fs::write(
        &config,
        "[[memcached.containers]]\nname = \"kv\"\ndb_schema = \"shop\"\ndb_table = \"kv\"\n\
         key_columns = \"k\"\nvalue_columns = \"value\"\n",
    )
    .expect("config");
    let run = common::run_hsd(
        &[
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
            &config.display().to_string(),
        ],
        &[],
    );
    assert!(
        run.ready.is_none() && run.code.is_some_and(|c| c != 0),
        "hsd started with a container its table does not fit"
    );
    assert!(
        run.stderr
            .contains("memcached container \"kv\": shop.kv has no column or index \"value\""),
        "{}",
        run.stderr
    );
}

/// The binary protocol: the same answers as memcached's (cas numbers
/// aside), quiet forms included.
fn binary_commands(store: Store, db: &str) {
    use memcached::{binary_request as req, BinaryConn};
    let Some(front) = Front::start(store, db) else {
        return;
    };
    let reference = Reference::start();
    let store_extras = |flags: u32, exptime: u32| {
        let mut e = flags.to_be_bytes().to_vec();
        e.extend_from_slice(&exptime.to_be_bytes());
        e
    };
    let counter = |delta: u64, initial: u64, exptime: u32| {
        let mut e = delta.to_be_bytes().to_vec();
        e.extend_from_slice(&initial.to_be_bytes());
        e.extend_from_slice(&exptime.to_be_bytes());
        e
    };
    let requests: Vec<Vec<u8>> = vec![
        req(0x01, b"bk", &store_extras(5, 0), b"value", 0), // Set
        req(0x00, b"bk", b"", b"", 0),                      // Get
        req(0x0c, b"bk", b"", b"", 0),                      // GetK
        req(0x02, b"bk", &store_extras(0, 0), b"x", 0),     // Add: exists
        req(0x03, b"nokey", &store_extras(0, 0), b"x", 0),  // Replace: missing
        req(0x0e, b"bk", b"", b"-end", 0),                  // Append
        req(0x0f, b"bk", b"", b"start-", 0),                // Prepend
        req(0x0e, b"nokey", b"", b"x", 0),                  // Append: missing
        req(0x00, b"bk", b"", b"", 0),
        req(0x09, b"nokey", b"", b"", 0), // GetQ: miss left out
        req(0x11, b"bq", &store_extras(1, 0), b"q", 0), // SetQ: success left out
        req(0x0d, b"bq", b"", b"", 0),    // GetKQ: hit shown
        req(0x04, b"bk", b"", b"", 0),    // Delete
        req(0x04, b"bk", b"", b"", 0),    // Delete: missing
        req(0x05, b"bn", &counter(1, 10, 0), b"", 0), // Increment: created
        req(0x05, b"bn", &counter(5, 10, 0), b"", 0), // Increment
        req(0x06, b"bn", &counter(100, 0, 0), b"", 0), // Decrement to 0
        req(0x05, b"bnone", &counter(1, 0, u32::MAX), b"", 0), // no create
        req(0x05, b"bq", &counter(1, 0, 0), b"", 0), // non-numeric
        req(0x1c, b"bq", &100u32.to_be_bytes(), b"", 0), // Touch
        req(0x1c, b"nokey", &100u32.to_be_bytes(), b"", 0), // Touch: missing
        req(0x1d, b"bq", &0u32.to_be_bytes(), b"", 0), // Gat
        req(0x23, b"bq", &0u32.to_be_bytes(), b"", 0), // GatK
        req(0x14, b"bq", b"", b"", 0),    // DeleteQ
        req(0x00, b"bq", b"", b"", 0),
    ];
    let mut ours = BinaryConn::open(front.server.memcached_addr.as_deref().expect("port"));
    let mut theirs = BinaryConn::open(&reference.addr);
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(
            ours.ask(request),
            theirs.ask(request),
            "binary request {i} (opcode {:#04x})",
            request[1]
        );
    }
    // Differences: Flush is refused as memcached -F refuses it (no
    // container's flush_policy allows it); SASL as an unknown command.
    let unknown = |opcode: u8| {
        let mut r = vec![0x81, opcode, 0, 0, 0, 0, 0, 0x81, 0, 0, 0, 15, 0, 0, 0, 7];
        r.extend_from_slice(&[0; 8]);
        r.extend_from_slice(b"Unknown command");
        vec![r]
    };
    let mut refused = vec![0x81, 0x08, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 13, 0, 0, 0, 7];
    refused.extend_from_slice(&[0; 8]);
    refused.extend_from_slice(b"Auth failure.");
    assert_eq!(ours.ask(&req(0x08, b"", b"", b"", 0)), vec![refused]);
    assert_eq!(ours.ask(&req(0x20, b"", b"", b"", 0)), unknown(0x20));
    // Stat groups: an unknown one as memcached's; slabs as an empty
    // memcached's (no item is in memory).
    for group in [&b"nosuchgroup"[..], b"reset", b"sizes"] {
        let stat = req(0x10, group, b"", b"", 0);
        assert_eq!(ours.ask(&stat), theirs.ask(&stat), "Stat {group:?}");
    }
    let slabs = ours.ask(&req(0x10, b"slabs", b"", b"", 0));
    let bodies: Vec<&[u8]> = slabs.iter().map(|r| &r[24..]).collect();
    assert_eq!(bodies, [&b"active_slabs0"[..], b"total_malloced0", b""]);
}

every_store!(binary_protocol, binary_commands, "hst_mc_binary");

/// A multi-get of many keys answers as memcached's, in batches; one whose
/// answer would pass --max-response-bytes answers memcached's out of memory
/// line and the connection goes on.
fn large_multi_gets(store: Store, db: &str) {
    let Some(front) = Front::start_with(store, db, &["--max-response-bytes", "65536"]) else {
        return;
    };
    let reference = Reference::start();
    let mut ours = front.conn();
    let mut theirs = Conn::open(&reference.addr);
    let mut sets = String::new();
    for i in (0..1000).step_by(3) {
        sets.push_str(&format!(
            "set k{i} {i} 0 {}\r\nv{i}\r\n",
            format!("v{i}").len()
        ));
    }
    let keys: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
    let get = format!("get {}\r\n", keys.join(" "));
    for c in [&mut ours, &mut theirs] {
        c.ask(&sets);
    }
    assert_eq!(ours.ask(&get), theirs.ask(&get));
    let big = "x".repeat(1000);
    for i in 0..100 {
        ours.ask(&format!("set big{i} 0 0 1000\r\n{big}\r\n"));
    }
    let all: Vec<String> = (0..100).map(|i| format!("big{i}")).collect();
    assert_eq!(
        ours.ask(&format!("get {}\r\n", all.join(" "))),
        "SERVER_ERROR out of memory writing get response\r\n"
    );
    assert_eq!(
        ours.ask("get big1\r\n"),
        format!("VALUE big1 0 1000\r\n{big}\r\nEND\r\n")
    );
}

every_store!(large_multi_get, large_multi_gets, "hst_mc_multiget");

/// With --tls-cert the memcached port speaks TLS, as the HandlerSocket
/// ports do; a plaintext client gets no answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memcached_port_speaks_tls() {
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::{self, pki_types::ServerName, ClientConfig, RootCertStore};
    let dir = tempfile::tempdir().expect("tempdir");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.cert.pem()).expect("write cert");
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).expect("write key");
    let (cert_arg, key_arg) = (
        cert_path.display().to_string(),
        key_path.display().to_string(),
    );
    let front = Front::start_with(
        Store::Sqlite,
        "hst_mc_tls",
        &["--tls-cert", &cert_arg, "--tls-key", &key_arg],
    )
    .expect("hsd");
    let addr = front.server.memcached_addr.clone().expect("memcached port");

    let mut roots = RootCertStore::empty();
    roots.add(cert.cert.der().clone()).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    let mut tls = connector.connect(name, tcp).await.expect("TLS handshake");
    tls.write_all(b"set secure 0 0 2\r\nok\r\nget secure\r\n")
        .await
        .expect("send");
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.ends_with(b"END\r\n") {
        let n = tls.read(&mut buf).await.expect("read");
        assert!(n > 0, "closed after {answer:?}");
        answer.extend_from_slice(&buf[..n]);
    }
    assert_eq!(answer, b"STORED\r\nVALUE secure 0 2\r\nok\r\nEND\r\n");

    let mut plain = Conn::open(&addr);
    let (answer, _) = plain.until_closed(b"version\r\n");
    assert!(
        !answer.starts_with(b"VERSION"),
        "a plaintext client was answered: {answer:?}"
    );
}

/// What one connection may hold is bounded as on the HandlerSocket ports:
/// a request left unfinished past --line-timeout closes its connection, a
/// line longer than memcached allows closes it at once, and neither stops
/// the other connections.
#[test]
fn unfinished_and_overlong_requests_close_their_connection() {
    let front =
        Front::start_with(Store::Sqlite, "hst_mc_bounds", &["--line-timeout", "1"]).expect("hsd");
    let started = std::time::Instant::now();
    let mut slow = front.conn();
    let (answer, closed) = slow.until_closed(b"set k 0 0 100\r\nonly part");
    assert!(
        closed && answer.is_empty(),
        "unfinished store answered {answer:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let mut long = front.conn();
    let mut line = b"set ".to_vec();
    line.extend(std::iter::repeat_n(b'k', 4096));
    let (answer, closed) = long.until_closed(&line);
    assert!(
        closed,
        "a 4 KiB line without a newline kept its connection: {answer:?}"
    );
    assert_eq!(front.conn().ask("set k 0 0 1\r\nx\r\n"), "STORED\r\n");
}
