//! The binary log reader against the private MariaDB and MySQL 8 (both
//! started with a ROW/FULL binary log by their scripts): what each kind of
//! write and DDL becomes, the start-up refusals, and a stream killed and
//! resumed without losing an event. Other suites write to the same servers
//! at the same time, so each test waits for a marker row of its own and
//! looks only at its own database.

mod common;
use common::servers::*;
use hsd_mysql::binlog::{
    BinlogPosition, BinlogReader, BinlogSink, Cell, Change, ReaderSettings, RowChange, StreamEvent,
};
use std::sync::mpsc::{channel, Receiver};
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// The stream tests read the global binlog settings; the refusal test
/// changes binlog_row_image for a moment (and restores it): not at the
/// same time.
static GLOBALS: RwLock<()> = RwLock::new(());

fn settings(url: &str, server_id: u32) -> ReaderSettings {
    let url = mysql_wire::MysqlUrl::parse(url).expect("url");
    ReaderSettings::new(url, Duration::from_secs(5), server_id).expect("reader settings")
}

struct Follow {
    _reader: BinlogReader,
    events: Receiver<StreamEvent>,
    /// Runs the reader; dropped last.
    _rt: tokio::runtime::Runtime,
    marker: u32,
}

/// A sink that wants the row images of some tables only, as the row
/// cache's feed wants those of the tables it holds.
struct OnlyTables {
    events: std::sync::mpsc::Sender<StreamEvent>,
    tables: &'static [&'static str],
}

impl BinlogSink for OnlyTables {
    fn deliver(&mut self, event: StreamEvent) {
        let _ = self.events.send(event);
    }

    fn wants_rows(&self, _db: &str, table: &str) -> bool {
        self.tables.contains(&table)
    }
}

impl Follow {
    fn start(url: &str, server_id: u32) -> (Follow, u64) {
        Follow::start_with(url, server_id, None)
    }

    /// With `tables`, only their row images are wanted.
    fn start_with(
        url: &str,
        server_id: u32,
        tables: Option<&'static [&'static str]>,
    ) -> (Follow, u64) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let (tx, events) = channel();
        let reader = match tables {
            None => rt.block_on(BinlogReader::start(settings(url, server_id), tx)),
            Some(tables) => rt.block_on(BinlogReader::start(
                settings(url, server_id),
                OnlyTables { events: tx, tables },
            )),
        }
        .unwrap_or_else(|e| panic!("the reader did not start: {e}"));
        let connection = match events.recv_timeout(Duration::from_secs(10)) {
            Ok(StreamEvent::Started { connection_id, .. }) => connection_id,
            other => panic!("expected Started, got {other:?}"),
        };
        let follow = Follow {
            _reader: reader,
            events,
            _rt: rt,
            marker: 0,
        };
        (follow, connection)
    }

    /// Runs nothing itself: writes a marker row in `db` and returns every
    /// event up to the transaction that wrote it (the marker's own row
    /// left out), keeping only changes in `db` and stream events.
    fn through_marker(&mut self, sql: &mut mysql::Conn, db: &str) -> Vec<StreamEvent> {
        self.marker += 1;
        let m = self.marker;
        exec(sql, &format!("INSERT INTO `{db}`.marker VALUES ({m})"));
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut out = Vec::new();
        let mut seen_marker = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self
                .events
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no marker {m} in the stream; so far {out:#?}"));
            match &event {
                StreamEvent::Change(Change::Row(r)) if r.db == db && r.table == "marker" => {
                    seen_marker = r.after == Some(vec![text(&m.to_string())]);
                }
                StreamEvent::Applied { .. } if seen_marker => {
                    out.push(event);
                    return out;
                }
                StreamEvent::Change(Change::Row(r)) if r.db != db => {}
                StreamEvent::Change(Change::Table { db: d, .. }) if d != db => {}
                _ => out.push(event),
            }
        }
    }
}

fn text(s: &str) -> Cell {
    Cell::Text(s.as_bytes().to_vec())
}

fn rows_of(events: &[StreamEvent], table: &str) -> Vec<RowChange> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Change(Change::Row(r)) if r.table == table => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn tables_of(events: &[StreamEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Change(Change::Table { table, .. }) => Some(table.clone()),
            _ => None,
        })
        .collect()
}

fn everything(events: &[StreamEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, StreamEvent::Change(Change::Everything { .. })))
}

fn set_up(url: &str, db: &str) -> mysql::Conn {
    let mut sql = fresh_db(url, db);
    exec(
        &mut sql,
        "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, k VARCHAR(20) NOT NULL, \
         n INT UNSIGNED, c CHAR(5), d DATE, UNIQUE KEY uk (k)) ENGINE=InnoDB",
    );
    exec(
        &mut sql,
        "CREATE TABLE u (id BIGINT NOT NULL PRIMARY KEY, v VARBINARY(10)) ENGINE=InnoDB",
    );
    exec(
        &mut sql,
        "CREATE TABLE marker (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB",
    );
    sql
}

/// Every kind of write and DDL, as the reader reports it.
fn rows_and_ddl(url: &str, db: &str, server_id: u32, mariadb: bool) {
    let _g = GLOBALS.read().unwrap_or_else(|e| e.into_inner());
    let mut sql = set_up(url, db);
    let (mut f, _) = Follow::start(url, server_id);

    exec(
        &mut sql,
        "INSERT INTO t VALUES (1, 'a', 4294967295, 'x', '2024-02-09')",
    );
    let ev = f.through_marker(&mut sql, db);
    let r = rows_of(&ev, "t");
    assert_eq!(r.len(), 1, "{ev:#?}");
    assert_eq!(r[0].before, None);
    // MariaDB logs no signedness unless binlog_row_metadata says so: an
    // unsigned value with its top bit set cannot be read as text then.
    let big = if mariadb {
        Cell::Undecoded
    } else {
        text("4294967295")
    };
    assert_eq!(
        r[0].after,
        Some(vec![
            text("1"),
            text("a"),
            big,
            text("x"),
            text("2024-02-09")
        ])
    );
    let applied: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Applied {
                position,
                commit_time,
            } if *commit_time > 0 => Some(position.clone()),
            _ => None,
        })
        .collect();
    assert!(applied.len() >= 2, "{ev:#?}");
    assert!(applied
        .windows(2)
        .all(|w| w[0].file < w[1].file || (w[0].file == w[1].file && w[0].offset < w[1].offset)));
    if mariadb {
        assert!(applied[0].gtid.as_deref().is_some_and(|g| g.contains('-')));
    }

    exec(
        &mut sql,
        "INSERT INTO t VALUES (2, 'b', 7, 'y ', NULL), (3, 'c', NULL, NULL, NULL)",
    );
    let r = rows_of(&f.through_marker(&mut sql, db), "t");
    assert_eq!(r.len(), 2);
    assert_eq!(
        r[0].after,
        Some(vec![text("2"), text("b"), text("7"), text("y"), Cell::Null])
    );
    assert_eq!(
        r[1].after,
        Some(vec![
            text("3"),
            text("c"),
            Cell::Null,
            Cell::Null,
            Cell::Null
        ])
    );

    exec(&mut sql, "UPDATE t SET k = 'bb' WHERE id = 2");
    let r = rows_of(&f.through_marker(&mut sql, db), "t");
    assert_eq!(r.len(), 1);
    assert_eq!(
        r[0].before,
        Some(vec![text("2"), text("b"), text("7"), text("y"), Cell::Null])
    );
    assert_eq!(
        r[0].after,
        Some(vec![
            text("2"),
            text("bb"),
            text("7"),
            text("y"),
            Cell::Null
        ])
    );

    // REPLACE over an existing key: the old row's keys must be in a before
    // image, the new row's in an after image.
    exec(&mut sql, "REPLACE INTO t VALUES (3, 'cc', 1, NULL, NULL)");
    let r = rows_of(&f.through_marker(&mut sql, db), "t");
    assert!(
        r.iter()
            .any(|c| c.before.as_ref().is_some_and(|b| b[1] == text("c"))),
        "{r:#?}"
    );
    assert!(
        r.iter()
            .any(|c| c.after.as_ref().is_some_and(|a| a[1] == text("cc"))),
        "{r:#?}"
    );

    exec(&mut sql, "DELETE FROM t WHERE id = 1");
    let r = rows_of(&f.through_marker(&mut sql, db), "t");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].after, None);
    assert_eq!(r[0].before.as_ref().map(|b| b[1].clone()), Some(text("a")));

    exec(&mut sql, "INSERT INTO u VALUES (2, 'v2'), (3, 'v3')");
    f.through_marker(&mut sql, db);
    exec(
        &mut sql,
        "UPDATE t JOIN u ON t.id = u.id SET t.k = CONCAT(t.k, '+'), u.v = 'w'",
    );
    let ev = f.through_marker(&mut sql, db);
    let (t, u) = (rows_of(&ev, "t"), rows_of(&ev, "u"));
    assert_eq!(t.len(), 2, "{ev:#?}");
    assert_eq!(u.len(), 2, "{ev:#?}");
    assert!(t
        .iter()
        .any(|c| c.after.as_ref().is_some_and(|a| a[1] == text("bb+"))));
    assert!(u
        .iter()
        .any(|c| c.before.as_ref().is_some_and(|b| b[1] == text("v3"))
            && c.after.as_ref().is_some_and(|a| a[1] == text("w"))));

    exec(&mut sql, "TRUNCATE TABLE u");
    assert_eq!(tables_of(&f.through_marker(&mut sql, db)), ["u"]);
    exec(&mut sql, "ALTER TABLE t ADD COLUMN z INT");
    assert_eq!(tables_of(&f.through_marker(&mut sql, db)), ["t"]);
    exec(&mut sql, "RENAME TABLE u TO u2");
    assert_eq!(tables_of(&f.through_marker(&mut sql, db)), ["u", "u2"]);
    exec(&mut sql, "DROP TABLE u2");
    assert_eq!(tables_of(&f.through_marker(&mut sql, db)), ["u2"]);
    exec(&mut sql, "INSERT INTO t VALUES (9, 'n', 9, 'z', NULL, 99)");
    let r = rows_of(&f.through_marker(&mut sql, db), "t");
    assert_eq!(r[0].after.as_ref().map(Vec::len), Some(6));

    // A foreign key's cascade is applied by InnoDB below the binlog: only
    // the parent's row is logged (MariaDB 10.11 and MySQL 8.0 alike). A
    // cache must not keep rows of a table that a cascade can change.
    exec(
        &mut sql,
        "CREATE TABLE parent (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB",
    );
    exec(
        &mut sql,
        "CREATE TABLE child (id INT NOT NULL PRIMARY KEY, p INT, \
         FOREIGN KEY (p) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE SET NULL) \
         ENGINE=InnoDB",
    );
    exec(&mut sql, "INSERT INTO parent VALUES (1), (2)");
    exec(&mut sql, "INSERT INTO child VALUES (10, 1), (20, 2)");
    f.through_marker(&mut sql, db);
    exec(&mut sql, "DELETE FROM parent WHERE id = 1");
    exec(&mut sql, "UPDATE parent SET id = 3 WHERE id = 2");
    let ev = f.through_marker(&mut sql, db);
    assert_eq!(rows_of(&ev, "parent").len(), 2, "{ev:#?}");
    assert_eq!(rows_of(&ev, "child"), Vec::new(), "{ev:#?}");
    assert_eq!(
        rows(&mut sql, "SELECT id, p FROM child"),
        vec![vec![Some(b"20".to_vec()), None]]
    );

    // A session that logs its writes as statements or with partial images:
    // the reader cannot name the rows, and says so.
    exec(&mut sql, "SET SESSION binlog_format = 'STATEMENT'");
    exec(&mut sql, "UPDATE t SET n = n + 1 WHERE id = 9");
    exec(&mut sql, "SET SESSION binlog_format = 'ROW'");
    assert!(everything(&f.through_marker(&mut sql, db)));
    exec(&mut sql, "SET SESSION binlog_row_image = 'MINIMAL'");
    exec(&mut sql, "UPDATE t SET n = 20 WHERE id = 9");
    exec(&mut sql, "SET SESSION binlog_row_image = 'FULL'");
    let r = rows_of(&f.through_marker(&mut sql, db), "t");
    assert_eq!(r.len(), 1);
    assert!(r[0]
        .before
        .as_ref()
        .is_some_and(|b| b[0] == text("9") && b[1] == Cell::Absent));
}

#[test]
fn mariadb_rows_and_ddl() {
    let Some(url) = mysql_url() else { return };
    rows_and_ddl(&url, "hsdt_binlog_rows", 4101, true);
}

#[test]
fn mysql8_rows_and_ddl() {
    let Some(url) = mysql8_url() else { return };
    rows_and_ddl(&url, "hsdt_binlog_rows", 4201, false);
}

/// The reader's connection killed in the middle of a stream of writes:
/// it says the stream was lost, resumes from the last transaction it
/// delivered, and no write is missing.
/// Rows of tables the sink does not want are not delivered (nor decoded);
/// their DDL and every position still are.
fn unwanted_rows_are_skipped(url: &str, db: &str, server_id: u32) {
    let _g = GLOBALS.read().unwrap_or_else(|e| e.into_inner());
    let mut sql = set_up(url, db);
    let (mut f, _) = Follow::start_with(url, server_id, Some(&["t", "marker"]));
    exec(
        &mut sql,
        "INSERT INTO t VALUES (1, 'a', 1, 'x', '2024-02-09')",
    );
    exec(&mut sql, "INSERT INTO u VALUES (1, 'b'), (2, 'c')");
    exec(&mut sql, "UPDATE u SET v = 'd' WHERE id = 1");
    let ev = f.through_marker(&mut sql, db);
    assert_eq!(rows_of(&ev, "t").len(), 1, "{ev:#?}");
    assert!(rows_of(&ev, "u").is_empty(), "{ev:#?}");
    let applied = ev
        .iter()
        .filter(|e| matches!(e, StreamEvent::Applied { commit_time, .. } if *commit_time > 0))
        .count();
    assert!(applied >= 4, "one Applied per commit: {ev:#?}");
    exec(&mut sql, "ALTER TABLE u ADD COLUMN w INT");
    let ev = f.through_marker(&mut sql, db);
    assert!(tables_of(&ev).contains(&"u".to_string()), "{ev:#?}");
}

#[test]
fn mariadb_unwanted_rows_are_skipped() {
    let Some(url) = mysql_url() else { return };
    unwanted_rows_are_skipped(&url, "hsdt_binlog_skip", 4107);
}

#[test]
fn mysql8_unwanted_rows_are_skipped() {
    let Some(url) = mysql8_url() else { return };
    unwanted_rows_are_skipped(&url, "hsdt_binlog_skip", 4207);
}

fn killed_and_resumed(url: &str, db: &str, server_id: u32) {
    let _g = GLOBALS.read().unwrap_or_else(|e| e.into_inner());
    let mut sql = set_up(url, db);
    let (mut f, connection) = Follow::start(url, server_id);
    for id in 1..=60 {
        exec(
            &mut sql,
            &format!("INSERT INTO t (id, k) VALUES ({id}, 'k{id}')"),
        );
        if id == 20 {
            exec(&mut sql, &format!("KILL {connection}"));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let (mut lost, mut started) = (0, 0);
    // The marker of a resumed stream comes after every insert.
    for _ in 0..2 {
        for e in f.through_marker(&mut sql, db) {
            match e {
                StreamEvent::Lost { .. } => lost += 1,
                StreamEvent::Started { .. } => started += 1,
                StreamEvent::Change(Change::Row(r)) if r.table == "t" => {
                    if let Some(Cell::Text(id)) = r.after.and_then(|a| a.into_iter().next()) {
                        seen.insert(
                            String::from_utf8(id)
                                .expect("id")
                                .parse::<u32>()
                                .expect("id"),
                        );
                    }
                }
                _ => {}
            }
        }
        if lost > 0 && started > 0 {
            break;
        }
    }
    assert!(lost >= 1 && started >= 1, "lost {lost}, started {started}");
    let missing: Vec<u32> = (1..=60).filter(|id| !seen.contains(id)).collect();
    assert!(missing.is_empty(), "rows never reported: {missing:?}");
}

#[test]
fn mariadb_killed_and_resumed() {
    let Some(url) = mysql_url() else { return };
    killed_and_resumed(&url, "hsdt_binlog_kill", 4102);
}

#[test]
fn mysql8_killed_and_resumed() {
    let Some(url) = mysql8_url() else { return };
    killed_and_resumed(&url, "hsdt_binlog_kill", 4202);
}

/// Sets a global variable and puts the old value back when dropped.
struct GlobalSetting<'a> {
    sql: &'a mut mysql::Conn,
    name: &'static str,
    old: String,
}

impl<'a> GlobalSetting<'a> {
    fn set(sql: &'a mut mysql::Conn, name: &'static str, value: &str) -> GlobalSetting<'a> {
        let old = scalar(sql, &format!("SELECT @@GLOBAL.{name}"));
        exec(sql, &format!("SET GLOBAL {name} = '{value}'"));
        GlobalSetting { sql, name, old }
    }
}

impl Drop for GlobalSetting<'_> {
    fn drop(&mut self) {
        exec(
            self.sql,
            &format!("SET GLOBAL {} = '{}'", self.name, self.old),
        );
    }
}

fn refusals(url: &str, user: &str, mariadb: bool) {
    let check = |url: &str| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(BinlogReader::check(settings(url, 1)))
            .unwrap_or_else(|e| panic!("check: {e}"))
    };
    assert_eq!(
        check(url),
        Vec::<String>::new(),
        "the test server as set up"
    );

    let mut sql = sql_conn(url);
    let _ = sql_drop_user(&mut sql, user);
    let plugin = if mariadb {
        ""
    } else {
        "WITH mysql_native_password "
    };
    exec(
        &mut sql,
        &format!("CREATE USER '{user}'@'%' IDENTIFIED {plugin}BY 'pw'"),
    );
    exec(&mut sql, &format!("GRANT SELECT ON *.* TO '{user}'@'%'"));
    let at = url.rsplit_once('@').expect("url with user").1;
    let refused = check(&format!("mysql://{user}:pw@{at}"));
    sql_drop_user(&mut sql, user);
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0].contains("REPLICATION SLAVE"), "{refused:?}");
    let monitor = if mariadb {
        "BINLOG MONITOR"
    } else {
        "REPLICATION CLIENT"
    };
    assert!(refused[1].contains(monitor), "{refused:?}");

    let _g = GLOBALS.write().unwrap_or_else(|e| e.into_inner());
    // binlog_format is not changed here: sessions opened meanwhile by
    // other suites would keep STATEMENT, which InnoDB refuses to log under
    // their READ COMMITTED. The image is harmless to them (no other suite
    // reads this server's binlog); the pure refusals are unit-tested.
    {
        let _image = GlobalSetting::set(&mut sql, "binlog_row_image", "MINIMAL");
        let refused = check(url);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].starts_with("binlog_row_image is MINIMAL"),
            "{refused:?}"
        );
    }
    assert!(check(url).is_empty());
}

fn sql_drop_user(sql: &mut mysql::Conn, user: &str) -> bool {
    use mysql::prelude::Queryable;
    sql.query_drop(format!("DROP USER IF EXISTS '{user}'@'%'"))
        .is_ok()
}

#[test]
fn mariadb_refusals() {
    let Some(url) = mysql_url() else { return };
    refusals(&url, "hsdt_binlog_noprivs", true);
}

#[test]
fn mysql8_refusals() {
    let Some(url) = mysql8_url() else { return };
    refusals(&url, "hsdt_binlog_noprivs", false);
}

/// The reader catches up with the position the server reports, also after
/// a rotation to a new file with no transaction in it yet (what a reader
/// that must see every commit before answering waits for).
fn reaches_the_server_position(url: &str, db: &str, server_id: u32, mariadb: bool) {
    let _g = GLOBALS.read().unwrap_or_else(|e| e.into_inner());
    let mut sql = set_up(url, db);
    let (f, _) = Follow::start(url, server_id);
    exec(&mut sql, "INSERT INTO t (id, k) VALUES (1, 'a')");
    exec(&mut sql, "FLUSH BINARY LOGS");
    let status = rows(&mut sql, "SHOW MASTER STATUS");
    let cell = |i: usize| String::from_utf8(status[0][i].clone().expect("value")).expect("utf8");
    let target = BinlogPosition {
        file: cell(0),
        offset: cell(1).parse().expect("offset"),
        gtid: None,
    };
    let gtid_target = mariadb.then(|| scalar(&mut sql, "SELECT @@GLOBAL.gtid_binlog_pos"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match f.events.recv_timeout(left) {
            Ok(StreamEvent::Applied { position, .. }) => {
                if position.reached(&target) {
                    if let Some(g) = &gtid_target {
                        let seq = |s: &str, domain: &str| -> u64 {
                            s.split(',')
                                .filter_map(|d| {
                                    let mut p = d.trim().split('-');
                                    (p.next()? == domain).then(|| p.nth(1)?.parse().ok())?
                                })
                                .next()
                                .unwrap_or(0)
                        };
                        let state = position.gtid.as_deref().unwrap_or("");
                        assert!(seq(state, "0") >= seq(g, "0"), "{state} against {g}");
                    }
                    return;
                }
                last = Some(position);
            }
            Ok(_) => {}
            Err(_) => panic!("never reached {target}; last applied {last:?}"),
        }
    }
}

#[test]
fn mariadb_reaches_the_server_position() {
    let Some(url) = mysql_url() else { return };
    reaches_the_server_position(&url, "hsdt_binlog_reach", 4103, true);
}

#[test]
fn mysql8_reaches_the_server_position() {
    let Some(url) = mysql8_url() else { return };
    reaches_the_server_position(&url, "hsdt_binlog_reach", 4203, false);
}

/// An idle stream outlives the read timeout: the server sends heartbeats,
/// each an `Applied` with no commit time, and the link is never dropped.
fn idle_stream_stays_up(url: &str, server_id: u32) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let (tx, events) = channel();
    let short = settings(url, server_id).with_timeout(Duration::from_secs(2));
    let _reader = rt
        .block_on(BinlogReader::start(short, tx))
        .unwrap_or_else(|e| panic!("the reader did not start: {e}"));
    let start = Instant::now();
    let mut applied = 0;
    // Twice the read timeout: without heartbeats the link would time out.
    while start.elapsed() < Duration::from_secs(4) {
        match events.recv_timeout(Duration::from_millis(100)) {
            Ok(StreamEvent::Applied { .. }) => applied += 1,
            Ok(StreamEvent::Lost { reason, .. }) => panic!("stream lost while idle: {reason}"),
            _ => {}
        }
    }
    // Other suites may write meanwhile: their transactions count as well.
    assert!(applied >= 3, "{applied} Applied in 4 s");
}

#[test]
fn mariadb_idle_stream_stays_up() {
    let Some(url) = mysql_url() else { return };
    idle_stream_stays_up(&url, 4104);
}

#[test]
fn mysql8_idle_stream_stays_up() {
    let Some(url) = mysql8_url() else { return };
    idle_stream_stays_up(&url, 4204);
}

/// The integer column types, each signed and unsigned: (SQL type, bits).
const INTEGER_TYPES: [(&str, u32); 5] = [
    ("TINYINT", 8),
    ("SMALLINT", 16),
    ("MEDIUMINT", 24),
    ("INT", 32),
    ("BIGINT", 64),
];

/// The edges of a column's range, as decimal text: its least and greatest
/// values, their neighbours, and the values about zero and the sign bit.
fn integer_edges(bits: u32, unsigned: bool) -> Vec<String> {
    let (min, max): (i128, i128) = if unsigned {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    let half = 1i128 << (bits - 1);
    let mut v = vec![
        min,
        min + 1,
        -5,
        -1,
        0,
        1,
        5,
        half - 1,
        half,
        half + 1,
        max - 1,
        max,
    ];
    v.retain(|n| (min..=max).contains(n));
    v.iter().map(i128::to_string).collect()
}

/// Every integer type and width at its edges, signed and unsigned, under
/// each `binlog_row_metadata` the server has: the reader's text of each
/// value (inserted, then as the before image of a DELETE) is what SELECT
/// answers for it, or `Undecoded` where the server logged no signedness and
/// the top bit is set; never another number. A YEAR column stands first:
/// the server's signedness flags count it.
fn integers_read_as_select_reads_them(url: &str, db: &str, server_id: u32, mariadb: bool) {
    let _g = GLOBALS.write().unwrap_or_else(|e| e.into_inner());
    let mut sql = fresh_db(url, db);
    exec(
        &mut sql,
        "CREATE TABLE marker (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB",
    );
    let mut columns = Vec::new();
    for (ty, bits) in INTEGER_TYPES {
        for unsigned in [false, true] {
            columns.push((ty, bits, unsigned));
        }
    }
    let defs: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, (ty, _, unsigned))| {
            format!("c{i} {ty}{}", if *unsigned { " UNSIGNED" } else { "" })
        })
        .collect();
    exec(
        &mut sql,
        &format!(
            "CREATE TABLE ints (y YEAR, id INT NOT NULL PRIMARY KEY, {}) ENGINE=InnoDB",
            defs.join(", ")
        ),
    );
    let edges: Vec<Vec<String>> = columns
        .iter()
        .map(|(_, bits, unsigned)| integer_edges(*bits, *unsigned))
        .collect();
    let row_count = edges.iter().map(Vec::len).max().unwrap_or(0);
    // Row r holds each column's r-th edge (its last one once they run out).
    let value = |c: usize, r: usize| edges[c][r.min(edges[c].len() - 1)].clone();
    let levels: &[&str] = if mariadb {
        &["NO_LOG", "MINIMAL", "FULL"]
    } else {
        &["MINIMAL", "FULL"]
    };
    let mut checked = 0;
    for level in levels {
        let mut admin = sql_conn(url);
        let _metadata = GlobalSetting::set(&mut admin, "binlog_row_metadata", level);
        let logs_signedness = *level != "NO_LOG";
        let mut sql = sql_conn(url);
        exec(&mut sql, &format!("USE `{db}`"));
        exec(&mut sql, "DELETE FROM marker");
        let (mut f, _) = Follow::start(url, server_id);
        let inserts: Vec<String> = (0..row_count)
            .map(|r| {
                let values: Vec<String> = (0..columns.len()).map(|c| value(c, r)).collect();
                format!("(2024, {r}, {})", values.join(", "))
            })
            .collect();
        exec(
            &mut sql,
            &format!("INSERT INTO ints VALUES {}", inserts.join(", ")),
        );
        // What SELECT answers, by row number and column.
        let selected: Vec<Vec<String>> = rows(&mut sql, "SELECT * FROM ints ORDER BY id")
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .skip(2)
                    .map(|v| String::from_utf8_lossy(&v.unwrap_or_default()).into_owned())
                    .collect()
            })
            .collect();
        assert_eq!(selected.len(), row_count);
        exec(&mut sql, "DELETE FROM ints");
        let changes = rows_of(&f.through_marker(&mut sql, db), "ints");
        assert_eq!(changes.len(), 2 * row_count, "{level}: {changes:#?}");
        for change in &changes {
            let image = change
                .after
                .as_ref()
                .or(change.before.as_ref())
                .unwrap_or_else(|| panic!("{level}: a change with no image: {change:?}"));
            let Cell::Text(id) = &image[1] else {
                panic!("{level}: the key is not text: {image:?}")
            };
            let r: usize = String::from_utf8_lossy(id).parse().expect("row number");
            for (c, (ty, bits, unsigned)) in columns.iter().enumerate() {
                let want = &selected[r][c];
                assert_eq!(*want, value(c, r), "{level}: SELECT of {ty}, row {r}");
                let got = &image[2 + c];
                let sign = if *unsigned { "UNSIGNED" } else { "signed" };
                let n: i128 = want.parse().expect("an integer");
                let top_bit = if *unsigned {
                    n >= 1i128 << (bits - 1)
                } else {
                    n < 0
                };
                match got {
                    Cell::Text(t) => assert_eq!(
                        String::from_utf8_lossy(t),
                        *want,
                        "{level}: {ty} {sign}, row {r}"
                    ),
                    Cell::Undecoded => assert!(
                        !logs_signedness && top_bit,
                        "{level}: {ty} {sign} {want} undecoded (signedness logged: \
                         {logs_signedness})"
                    ),
                    other => panic!("{level}: {ty} {sign} {want} read as {other:?}"),
                }
                checked += 1;
            }
        }
    }
    eprintln!("{checked} integer values read back as SELECT answers them");
}

#[test]
fn mariadb_integers_read_as_select_reads_them() {
    let Some(url) = mysql_url() else { return };
    integers_read_as_select_reads_them(&url, "hsdt_binlog_ints", 4105, true);
}

#[test]
fn mysql8_integers_read_as_select_reads_them() {
    let Some(url) = mysql8_url() else { return };
    integers_read_as_select_reads_them(&url, "hsdt_binlog_ints", 4205, false);
}
