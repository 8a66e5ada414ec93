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
use common::{mysql_url, PrivateMariadb};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// --mysql-timeout for these tests, in seconds.
const TIMEOUT: u64 = 1;

static SERIAL: Mutex<()> = Mutex::new(());

struct Instance(PrivateMariadb);

impl Instance {
    fn start() -> Instance {
        Instance(PrivateMariadb::start("mariadb-in-doubt"))
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

/// Opens the indexes and sends one group whose statements run; returns
/// once the group's COMMIT waits at the server (held by `blocker`).
fn send_group(hsd: &Hsd, db: &str, blocker: &mut mysql::Conn) -> Hs {
    let mut w = hsd.writer();
    assert_eq!(w.q(&format!("P|1|{db}|c|PRIMARY|n")), "0|1");
    assert_eq!(w.q(&format!("P|2|{db}|log|PRIMARY|id")), "0|1");
    exec(blocker, "BACKUP STAGE START");
    exec(blocker, "BACKUP STAGE BLOCK_COMMIT");
    let mut all = Vec::new();
    for l in GROUP {
        all.extend(Hs::line(
            &l.split('|').map(|t| Some(t.as_bytes())).collect::<Vec<_>>(),
        ));
    }
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

/// A TCP proxy in front of the server that can hold the answer to the next
/// COMMIT that passes it (the connection's later bytes from the server are
/// never delivered); other connections pass as usual.
struct Proxy {
    url: String,
    arm: Arc<AtomicBool>,
    held: Arc<AtomicBool>,
}

impl Proxy {
    fn start(server_url: &str) -> Proxy {
        let (head, port) = server_url.rsplit_once(':').expect("url with a port");
        let upstream = format!("127.0.0.1:{port}");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("{head}:{}", listener.local_addr().expect("addr").port());
        let (arm, held) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (a, h) = (arm.clone(), held.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let hold = Arc::new(AtomicBool::new(false));
                let (mut c_in, mut s_out) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                let (arm, held, hold_up) = (a.clone(), h.clone(), hold.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = c_in.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let chunk = &buf[..n];
                        if chunk.windows(7).any(|w| w == b"\x03COMMIT")
                            && arm.swap(false, Ordering::SeqCst)
                        {
                            hold_up.store(true, Ordering::SeqCst);
                            held.store(true, Ordering::SeqCst);
                        }
                        if s_out.write_all(chunk).is_err() {
                            break;
                        }
                    }
                    let _ = s_out.shutdown(std::net::Shutdown::Write);
                });
                let (mut s_in, mut c_out) = (server, client);
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = s_in.read(&mut buf) {
                        if n == 0 || hold.load(Ordering::SeqCst) {
                            break;
                        }
                        if c_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Proxy { url, arm, held }
    }

    fn hold_next_commit_answer(&self) {
        self.arm.store(true, Ordering::SeqCst);
    }

    fn held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }
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
