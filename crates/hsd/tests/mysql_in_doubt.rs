//! A write group's COMMIT whose answer does not come within
//! --mysql-timeout: hsd learns from a fresh connection whether the group
//! committed before it answers (its commit marker, written in the group's
//! own transaction), and answers `1 1 1180` (outcome unknown) only when the
//! server stays unreachable.
//!
//! The COMMIT's answer is held by a proxy (the server committed), or the
//! COMMIT itself is held at the server by a `BACKUP STAGE BLOCK_COMMIT`
//! (the group's statements run, its COMMIT waits) and the server frozen
//! with SIGSTOP. A MariaDB of these tests' own
//! (scripts/mariadb.sh with its own data dir), never the shared one.

mod common;
use common::blocking::*;
use common::commit_proxy::Proxy;
use common::{mysql_url, PrivateMariadb};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// --mysql-timeout for these tests, in seconds.
const TIMEOUT: u64 = 1;

static SERIAL: Mutex<()> = Mutex::new(());

struct Instance(PrivateMariadb);

impl Instance {
    fn start() -> Instance {
        let inst = PrivateMariadb::start("mariadb-in-doubt");
        // hsd makes it anew: a test that failed halfway may have left it
        // changed (and hsd would rightly refuse writes).
        exec(
            &mut sql_conn(&inst.url),
            "DROP TABLE IF EXISTS hsd.commit_marker",
        );
        Instance(inst)
    }

    fn signal(&self, sig: i32) {
        let pid = self.0.pid();
        // SAFETY: kill(2) on the pid of the server this test started.
        let rc = unsafe { libc::kill(pid, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig})");
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // Never leave it frozen.
        self.signal(libc::SIGCONT);
    }
}

/// A counter row and an empty log table.
fn setup(url: &str, db: &str) -> mysql::Conn {
    let mut sql = fresh_db(url, db);
    exec(
        &mut sql,
        "CREATE TABLE c (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB",
    );
    exec(&mut sql, "INSERT INTO c VALUES (1, 0)");
    exec(
        &mut sql,
        "CREATE TABLE log (id INT PRIMARY KEY) ENGINE=InnoDB",
    );
    sql
}

/// The group every case sends: an increment and an insert.
const GROUP: [&str; 2] = ["1|=|1|1|1|0|+|1", "2|+|1|7"];

/// The group's requests as one pipelined write.
fn group_bytes() -> Vec<u8> {
    let mut all = Vec::new();
    for l in GROUP {
        all.extend(Hs::line(
            &l.split('|').map(|t| Some(t.as_bytes())).collect::<Vec<_>>(),
        ));
    }
    all
}

/// Opens the indexes and sends one group whose statements run; returns
/// once the group's COMMIT waits at the server (held by `blocker`).
fn send_group(hsd: &Hsd, db: &str, blocker: &mut mysql::Conn) -> Hs {
    let mut w = hsd.writer();
    assert_eq!(w.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
    assert_eq!(w.q(&format!("P|2|{db}|log|PRIMARY|id")), "0|1");
    exec(blocker, "BACKUP STAGE START");
    exec(blocker, "BACKUP STAGE BLOCK_COMMIT");
    let all = group_bytes();
    w.send_raw(&all);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting = scalar(
            blocker,
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE INFO = 'COMMIT' AND STATE LIKE '%backup lock%'",
        );
        if waiting == "1" {
            return w;
        }
        assert!(Instant::now() < deadline, "the group's COMMIT never waited");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn answers(w: &mut Hs) -> Vec<String> {
    GROUP.iter().map(|_| fmt(&w.read_response())).collect()
}

fn stored(sql: &mut mysql::Conn, db: &str) -> (String, String) {
    (
        scalar(sql, &format!("SELECT n FROM {db}.c WHERE id = 1")),
        scalar(sql, &format!("SELECT COUNT(*) FROM {db}.log")),
    )
}

/// The server commits the group but the answer is held on the way (a
/// network that stalls): hsd asks on a fresh connection, learns the group
/// committed, and answers the writes done.
#[test]
fn a_commit_whose_answer_was_lost_is_answered_done() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = Instance::start();
    let db = "hsdt_doubt_done";
    let mut sql = setup(&inst.0.url, db);
    let proxy = Proxy::start(&inst.0.url);
    let hsd = Hsd::start(&proxy.url, &["--mysql-timeout", &TIMEOUT.to_string()]);
    let mut w = hsd.writer();
    assert_eq!(w.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
    assert_eq!(w.q(&format!("P|2|{db}|log|PRIMARY|id")), "0|1");
    proxy.hold_next_commit_answer();
    let t = Instant::now();
    let got = w.pipeline(&GROUP.map(String::from));
    let took = t.elapsed();
    assert!(
        proxy.held(),
        "the case happened: a COMMIT's answer was held"
    );
    assert_eq!(got, ["0|1|1", "0|1"]);
    assert!(took >= Duration::from_secs(TIMEOUT), "{took:?}");
    assert_eq!(stored(&mut sql, db), ("1".into(), "1".into()));
    // The write connection goes on.
    assert_eq!(w.q("1|=|1|1|1|0|+|1"), "0|1|1");
    assert_eq!(stored(&mut sql, db).0, "2");
}

/// The COMMIT still waits when hsd asks: ending the session rolls the
/// group back, and hsd answers the writes as failed, which they are.
#[test]
fn a_commit_that_did_not_happen_is_answered_failed_and_stays_undone() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = Instance::start();
    let db = "hsdt_doubt_undone";
    let mut sql = setup(&inst.0.url, db);
    let hsd = Hsd::start(&inst.0.url, &["--mysql-timeout", &TIMEOUT.to_string()]);
    let mut blocker = sql_conn(&inst.0.url);
    let mut w = send_group(&hsd, db, &mut blocker);
    // Frozen past hsd's timeout; thawed with the COMMIT still held.
    inst.signal(libc::SIGSTOP);
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(TIMEOUT) + Duration::from_millis(1500));
    inst.signal(libc::SIGCONT);
    let got = answers(&mut w);
    let took = t.elapsed();
    exec(&mut blocker, "BACKUP STAGE END");
    assert_eq!(got, ["1|1|2013", "1|1|2013"]);
    assert!(took < Duration::from_secs(TIMEOUT * 5 + 2), "{took:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        stored(&mut sql, db),
        ("0".into(), "0".into()),
        "answered failed, so nothing may be stored"
    );
    assert_eq!(w.q("1|=|1|1|1|0|+|1"), "0|1|1");
    assert_eq!(stored(&mut sql, db), ("1".into(), "0".into()));
}

/// The server itself gives up on the waiting COMMIT (its statement time
/// bound, a little inside --mysql-timeout): the writes are answered with
/// its error, and stay undone, also once the next group commits (hsd
/// rolls back after a refused COMMIT, whatever the server left open).
#[test]
fn a_commit_the_server_refused_stays_undone() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = Instance::start();
    let db = "hsdt_doubt_refused";
    let mut sql = setup(&inst.0.url, db);
    let hsd = Hsd::start(&inst.0.url, &["--mysql-timeout", &TIMEOUT.to_string()]);
    let mut blocker = sql_conn(&inst.0.url);
    let mut w = send_group(&hsd, db, &mut blocker);
    let got = answers(&mut w);
    exec(&mut blocker, "BACKUP STAGE END");
    assert_eq!(got, ["1|1|1969", "1|1|1969"]);
    assert_eq!(stored(&mut sql, db), ("0".into(), "0".into()));
    assert_eq!(w.q("1|=|1|1|1|0|+|1"), "0|1|1");
    assert_eq!(
        stored(&mut sql, db),
        ("1".into(), "0".into()),
        "the refused group's writes were committed by the next group"
    );
}

/// The server stays frozen past the resolution's bound (4 x
/// --mysql-timeout after the timeout): the writes are answered `1 1 1180`,
/// outcome unknown, within that bound.
#[test]
fn a_server_that_stays_unreachable_answers_outcome_unknown() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = Instance::start();
    let db = "hsdt_doubt_unknown";
    let _sql = setup(&inst.0.url, db);
    let hsd = Hsd::start(&inst.0.url, &["--mysql-timeout", &TIMEOUT.to_string()]);
    let mut blocker = sql_conn(&inst.0.url);
    let mut w = send_group(&hsd, db, &mut blocker);
    inst.signal(libc::SIGSTOP);
    let t = Instant::now();
    let got = answers(&mut w);
    let took = t.elapsed();
    inst.signal(libc::SIGCONT);
    exec(&mut blocker, "BACKUP STAGE END");
    assert_eq!(got, ["1|1|1180", "1|1|1180"]);
    assert!(
        took < Duration::from_secs(TIMEOUT * 5 + 3),
        "answered after {took:?}"
    );
    // Once the server is back, writes go on.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = w.q("1|=|1|1|1|0|+|1");
        if r == "0|1|1" {
            break;
        }
        assert!(Instant::now() < deadline, "still {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `url` with its commit marker table named.
fn with_marker(url: &str, marker: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}commit-marker={marker}")
}

/// Waits until `line` answers `want` on `w`.
fn until_answer(w: &mut Hs, line: &str, want: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let got = w.q(line);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{line}: still {got}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A marker table whose rows could not say what became of a group (an
/// engine without transactions keeps a mark the group's rollback undoes
/// nowhere else; without `writer` as its key every group adds a row and an
/// old one may be read): writes are refused (`1 1 2013`) and store
/// nothing, reads go on, and once the table is fixed writes resume
/// without a restart.
#[test]
fn an_untrusted_marker_table_refuses_writes_until_it_is_fixed() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(url) = mysql_url() else {
        return;
    };
    let db = "hsdt_marker_untrusted";
    let mut sql = setup(&url, db);
    let columns = "(writer BIGINT UNSIGNED NOT NULL, seq BIGINT UNSIGNED NOT NULL, \
                   at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP";
    exec(
        &mut sql,
        &format!("CREATE TABLE {db}.m_myisam {columns}, PRIMARY KEY (writer)) ENGINE=MyISAM"),
    );
    exec(
        &mut sql,
        &format!("CREATE TABLE {db}.m_nokey {columns}) ENGINE=InnoDB"),
    );
    let cases = [
        ("m_myisam", "ENGINE=InnoDB", 7),
        ("m_nokey", "ADD PRIMARY KEY (writer)", 8),
    ];
    for (marker, fix, id) in cases {
        let hsd = Hsd::start(
            &with_marker(&url, &format!("{db}.{marker}")),
            &["--mysql-timeout", &TIMEOUT.to_string()],
        );
        let mut w = hsd.writer();
        assert_eq!(w.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
        assert_eq!(w.q(&format!("P|2|{db}|log|PRIMARY|id")), "0|1");
        assert_eq!(w.q(&format!("2|+|1|{id}")), "1|1|2013", "{marker}");
        assert_eq!(w.q("1|=|1|1|1|0|+|1"), "1|1|2013", "{marker}");
        let count = format!("SELECT COUNT(*) FROM {db}.log WHERE id = {id}");
        assert_eq!(scalar(&mut sql, &count), "0", "{marker}");
        assert_eq!(stored(&mut sql, db).0, "0", "{marker}");
        let mut r = hsd.reader();
        assert_eq!(r.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
        assert_eq!(r.q("1|=|1|1"), "0|1|0", "reads go on");
        exec(&mut sql, &format!("ALTER TABLE {db}.{marker} {fix}"));
        until_answer(
            &mut w,
            &format!("2|+|1|{id}"),
            "0|1",
            Duration::from_secs(10),
        );
        assert_eq!(scalar(&mut sql, &count), "1");
    }
}

/// The marker table changed under a running hsd (its key dropped, so a
/// group's mark became a second row): a COMMIT whose answer was lost is
/// not resolved from it (its old row would say "rolled back" of a group
/// that committed); the writes answer `1 1 1180`, outcome unknown, and
/// later writes are refused until the table is fixed.
#[test]
fn a_marker_table_changed_under_hsd_resolves_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = Instance::start();
    let db = "hsdt_doubt_marker_changed";
    let mut sql = setup(&inst.0.url, db);
    let proxy = Proxy::start(&inst.0.url);
    let hsd = Hsd::start(&proxy.url, &["--mysql-timeout", &TIMEOUT.to_string()]);
    let mut w = hsd.writer();
    assert_eq!(w.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
    assert_eq!(w.q(&format!("P|2|{db}|log|PRIMARY|id")), "0|1");
    assert_eq!(w.q("2|+|1|5"), "0|1", "a first group marks its commit");
    exec(&mut sql, "ALTER TABLE hsd.commit_marker DROP PRIMARY KEY");
    proxy.hold_next_commit_answer();
    let got = w.pipeline(&GROUP.map(String::from));
    assert!(
        proxy.held(),
        "the case happened: a COMMIT's answer was held"
    );
    assert_eq!(got, ["1|1|1180", "1|1|1180"]);
    // The server had committed it: answered "unknown", never "failed".
    assert_eq!(stored(&mut sql, db), ("1".into(), "2".into()));
    assert_eq!(w.q("2|+|1|9"), "1|1|2013", "writes refused meanwhile");
    exec(&mut sql, "DELETE FROM hsd.commit_marker");
    exec(
        &mut sql,
        "ALTER TABLE hsd.commit_marker ADD PRIMARY KEY (writer)",
    );
    until_answer(&mut w, "2|+|1|9", "0|1", Duration::from_secs(10));
}

/// With `innodb_rollback_on_timeout=ON` a lock wait that times out rolls
/// back the whole transaction, not the statement: the group fails whole
/// (each write answers an error and none is stored), never the one write
/// alone while the writes before it are answered done and lost.
#[test]
fn a_lock_wait_timeout_that_ends_the_transaction_fails_the_whole_group() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = PrivateMariadb::start_with(
        "mariadb-rollback-on-timeout",
        &[("HSD_MARIADB_OPTIONS", "innodb_rollback_on_timeout=ON")],
    );
    let db = "hsdt_rollback_on_timeout";
    let mut sql = setup(&inst.url, db);
    exec(&mut sql, &format!("INSERT INTO {db}.c VALUES (2, 0)"));
    assert_eq!(scalar(&mut sql, "SELECT @@innodb_rollback_on_timeout"), "1");
    // --mysql-timeout 2: hsd's lock waits last 1 s.
    let hsd = Hsd::start(&inst.url, &["--mysql-timeout", "2"]);
    let mut w = hsd.writer();
    assert_eq!(w.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
    assert_eq!(w.q(&format!("P|2|{db}|log|PRIMARY|id")), "0|1");
    let mut holder = sql_conn(&inst.url);
    exec(&mut holder, "START TRANSACTION");
    exec(
        &mut holder,
        &format!("SELECT n FROM {db}.c WHERE id = 2 FOR UPDATE"),
    );
    for round in 0..3 {
        let (a, b) = (100 + 2 * round, 101 + 2 * round);
        let got = w.pipeline(&[
            format!("2|+|1|{a}"),
            "1|=|1|2|1|0|U|5".to_string(),
            format!("2|+|1|{b}"),
        ]);
        assert!(
            got.iter().all(|g| g.starts_with("1|1|")),
            "round {round}: {got:?}"
        );
        assert_eq!(
            scalar(
                &mut sql,
                &format!("SELECT COUNT(*) FROM {db}.log WHERE id IN ({a}, {b})")
            ),
            "0",
            "round {round}: {got:?}"
        );
    }
    exec(&mut holder, "ROLLBACK");
    let got = w.pipeline(&[
        "2|+|1|200".to_string(),
        "1|=|1|2|1|0|U|5".to_string(),
        "2|+|1|201".to_string(),
    ]);
    assert_eq!(got, ["0|1", "0|1|1", "0|1"]);
    assert_eq!(
        scalar(&mut sql, &format!("SELECT COUNT(*) FROM {db}.log")),
        "2"
    );
}

/// The server restarted while a COMMIT's answer was outstanding: it
/// numbers connections from 1 again, so hsd's old id may now be another
/// account's session (here: root's). hsd reads the marker without ending
/// any session: every session opened after the restart lives on, and the
/// writes, which the server had committed, are answered done.
#[test]
fn after_a_restart_the_resolver_ends_no_session() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = Instance::start();
    let db = "hsdt_doubt_restart";
    let mut sql = setup(&inst.0.url, db);
    let proxy = Proxy::start(&inst.0.url);
    // Long enough for the server's restart inside the resolution's bound.
    let hsd = Hsd::start(&proxy.url, &["--mysql-timeout", "5"]);
    let mut w = hsd.writer();
    assert_eq!(w.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
    assert_eq!(w.q(&format!("P|2|{db}|log|PRIMARY|id")), "0|1");
    // The write loop's connection is made (the proxy takes no new ones).
    assert_eq!(w.q("2|+|1|5"), "0|1");
    let highest: u64 = scalar(
        &mut sql,
        "SELECT MAX(ID) FROM information_schema.PROCESSLIST",
    )
    .parse()
    .expect("an id");
    drop(sql);
    proxy.refuse_new_connections(true);
    proxy.hold_next_commit_answer();
    let all = group_bytes();
    w.send_raw(&all);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !proxy.held() {
        assert!(Instant::now() < deadline, "the COMMIT never passed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // hsd tells a server's runs apart by their start, in whole seconds: a
    // run that lasted under two seconds could pass for the same run.
    std::thread::sleep(Duration::from_secs(3));
    inst.0.script("restart");
    // Root's sessions take every id hsd's connections had.
    let root = |_| {
        let opts = mysql::OptsBuilder::new()
            .socket(Some(inst.0.socket.clone()))
            .user(Some("root"));
        mysql::Conn::new(opts).expect("root on the socket")
    };
    let mut sessions: Vec<mysql::Conn> = (0..highest + 5).map(root).collect();
    let ids: Vec<String> = sessions
        .iter_mut()
        .map(|c| scalar(c, "SELECT CONNECTION_ID()"))
        .collect();
    proxy.refuse_new_connections(false);
    let got = answers(&mut w);
    assert_eq!(got, ["0|1|1", "0|1"], "the server had committed the group");
    for (c, id) in sessions.iter_mut().zip(&ids) {
        assert_eq!(scalar(c, "SELECT 1"), "1", "root's session {id} was ended");
    }
    let mut sql = sql_conn(&inst.0.url);
    assert_eq!(stored(&mut sql, db), ("1".into(), "2".into()));
}
