//! An account whose MAX_USER_CONNECTIONS is below what hsd's event loops
//! would hold: loops without a server connection answer `1 1 2013`, say
//! once why, keep trying, and get their connection as soon as the server
//! allows it (idle connections of the others are given back meanwhile).
//! Before, the first loops to connect kept their connections for good and
//! a write loop that came later stayed without one until hsd restarted,
//! with nothing in the log.

mod common;
use common::blocking::*;
use common::{hsd_bin, mysql_url};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DB: &str = "hsdt_limits";
const USER: &str = "hsdt_lim";

/// hsd with its log in a file.
struct Logged {
    child: Child,
    read: String,
    write: String,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Logged {
    fn start(url: &str, extra: &[&str]) -> Logged {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("hsd.log");
        let mut child = Command::new(hsd_bin())
            .args([
                "serve",
                "--address",
                "127.0.0.1",
                "--port",
                "0",
                "--port-wr",
                "0",
            ])
            .args(["--backend", url])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("spawn hsd");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = lines.next().expect("ready line").expect("read stdout");
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("bad ready line {line:?}"))
        };
        let (read, write) = (field("read"), field("write"));
        std::thread::spawn(move || for _ in lines {});
        Logged {
            child,
            read,
            write,
            log,
            _dir: dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn loops_without_a_connection_say_why_and_heal() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, DB);
    exec(
        &mut sql,
        "CREATE TABLE kv (id INT PRIMARY KEY, n INT NOT NULL)",
    );
    exec(&mut sql, "INSERT INTO kv VALUES (1, 0), (2, 0)");
    for host in ["127.0.0.1", "localhost"] {
        exec(&mut sql, &format!("DROP USER IF EXISTS '{USER}'@'{host}'"));
        exec(
            &mut sql,
            &format!(
                "CREATE USER '{USER}'@'{host}' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 3"
            ),
        );
        exec(
            &mut sql,
            &format!("GRANT ALL ON {DB}.* TO '{USER}'@'{host}'"),
        );
        exec(
            &mut sql,
            &format!("GRANT ALL ON hsd.* TO '{USER}'@'{host}'"),
        );
    }
    let (_, address) = url.rsplit_once('@').expect("url");
    let limited = format!("mysql://{USER}:pw@{address}");
    // Another session of the account holds one of its three connections.
    let other = sql_conn(&limited);
    // Two read loops of two connections, a write loop's two and its
    // committer's: more than the account may have.
    let hsd = Logged::start(
        &limited,
        &[
            "--threads",
            "2",
            "--mysql-pool",
            "2",
            "--mysql-timeout",
            "2",
        ],
    );

    // Readers on every read loop, busy; the other session leaves while
    // they are, so they take its connection too.
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (addr, stop) = (hsd.read.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut c = Hs::connect(&addr);
                let mut opened = false;
                let mut served = 0;
                let mut other = std::collections::BTreeSet::new();
                while !stop.load(Ordering::Relaxed) {
                    if !opened {
                        let p = c.q(&format!("P|1|{DB}|kv|PRIMARY|id,n"));
                        opened = p == "0|1";
                        if !opened {
                            other.insert(p);
                        }
                        continue;
                    }
                    let a = c.q("1|=|1|1");
                    if a == "0|2|1|0" {
                        served += 1;
                    } else {
                        other.insert(a);
                    }
                }
                (served, other)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    drop(other);
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    let mut served = 0;
    let mut refused = std::collections::BTreeSet::new();
    for h in readers {
        let (n, other) = h.join().expect("reader");
        served += n;
        refused.extend(other);
    }
    assert!(served > 0, "no read was served");

    // Now quiet: the writer gets a connection (the idle readers give
    // theirs back) and its writes are done.
    let mut w = Hs::connect(&hsd.write);
    let t = Instant::now();
    let answer = loop {
        let p = w.q(&format!("P|1|{DB}|kv|PRIMARY|n"));
        let a = if p == "0|1" {
            w.q("1|=|1|2|1|0|+|1")
        } else {
            p
        };
        if a == "0|1|1" || t.elapsed() > Duration::from_secs(10) {
            break a;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(answer, "0|1|1", "the write loop never got a connection");
    eprintln!("the write loop served after {:?}", t.elapsed());
    assert_eq!(
        scalar(&mut sql, &format!("SELECT n FROM {DB}.kv WHERE id = 2")),
        "1"
    );

    // Loops without a connection answered as the server is unavailable,
    // a `P` too (never open_table: the table exists), not with an opaque 1.
    let known: std::collections::BTreeSet<String> = ["1|1|2013"].map(String::from).into();
    assert!(refused.is_subset(&known), "{refused:?}");
    // The log said why, once (it repeats at most once a minute).
    let log = hsd.log();
    let said = log
        .lines()
        .filter(|l| l.contains("refuses hsd another connection"))
        .count();
    assert!(
        said == 1 && log.contains("max_user_connections"),
        "{said} warnings in:\n{log}"
    );
}

/// The account's connections are all held, one of them by a loop that is
/// idle now: a request on a loop without one waits (within
/// --mysql-timeout) while the idle loop gives its connection back, and is
/// served, instead of answering `1 1 2013` at once.
#[test]
fn a_request_waits_for_a_connection_an_idle_loop_gives_back() {
    let Some(url) = mysql_url() else { return };
    let db = "hsdt_limits_wait";
    let user = "hsdt_limw";
    let mut sql = fresh_db(&url, db);
    exec(
        &mut sql,
        "CREATE TABLE kv (id INT PRIMARY KEY, n INT NOT NULL)",
    );
    exec(&mut sql, "INSERT INTO kv VALUES (1, 7)");
    for host in ["127.0.0.1", "localhost"] {
        exec(&mut sql, &format!("DROP USER IF EXISTS '{user}'@'{host}'"));
        exec(
            &mut sql,
            &format!(
                "CREATE USER '{user}'@'{host}' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 2"
            ),
        );
        exec(
            &mut sql,
            &format!("GRANT ALL ON {db}.* TO '{user}'@'{host}'"),
        );
        exec(
            &mut sql,
            &format!("GRANT ALL ON hsd.* TO '{user}'@'{host}'"),
        );
    }
    let (_, address) = url.rsplit_once('@').expect("url");
    let limited = format!("mysql://{user}:pw@{address}");
    let hsd = Logged::start(
        &limited,
        &[
            "--threads",
            "2",
            "--mysql-pool",
            "1",
            "--mysql-timeout",
            "3",
        ],
    );
    // Loop one reads once and goes idle; another session of the account
    // takes the second connection.
    let mut first = Hs::connect(&hsd.read);
    assert_eq!(first.q(&format!("P|1|{db}|kv|PRIMARY|id,n")), "0|1");
    assert_eq!(first.q("1|=|1|1"), "0|2|1|7");
    let other = sql_conn(&limited);
    // Loop two (the loop with fewer connections) has none and may make none.
    let mut second = Hs::connect(&hsd.read);
    let t = Instant::now();
    let p = second.q(&format!("P|1|{db}|kv|PRIMARY|id,n"));
    let a = second.q("1|=|1|1");
    let took = t.elapsed();
    drop(other);
    assert_eq!(
        (p.as_str(), a.as_str()),
        ("0|1", "0|2|1|7"),
        "after {took:?}"
    );
    assert!(took < Duration::from_secs(6), "{took:?}");
    eprintln!("served after waiting {took:?} for a connection");
    drop(first);
}
