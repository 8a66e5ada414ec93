//! No committed write answered failed, and no failed one committed, while
//! the server stalls: clients pipeline inserts on the write port while
//! MariaDB is stopped (SIGSTOP) for spells shorter and longer than
//! --mysql-timeout, many times; then every
//! answer is compared with the table. An insert answered `0 1` must be
//! there, one answered with an error must not be, and only `1 1 1180`
//! (outcome unknown) may be either. Run with one write group per loop and
//! with several. A MariaDB of this test's own (scripts/mariadb.sh with its
//! own data dir), never the shared one.
//!
//! `HSD_STALL_ROUNDS` sets how many runs each setting gets (default 3: a
//! failure that shows in one run of three is caught with odds of about
//! 0.96 over the two settings' six runs); `scripts/stall-stress.sh` runs
//! many more.

mod common;
use common::blocking::*;
use common::{mysql_url, PrivateMariadb};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Clients pipelining inserts, and how many each pipeline holds.
const CLIENTS: usize = 4;
const PIPELINE: usize = 8;
/// Stalls per run, how long each lasts (in turn: shorter than
/// --mysql-timeout, so statements and COMMITs wait it out, and longer, so
/// COMMITs go unanswered and are resolved), and the pause between them.
const STALLS: usize = 10;
const STALL: [Duration; 2] = [Duration::from_millis(300), Duration::from_millis(1300)];
const BETWEEN: Duration = Duration::from_millis(250);
/// Each client's pause between its pipelines.
const PAUSE: Duration = Duration::from_millis(2);

static SERIAL: Mutex<()> = Mutex::new(());

fn rounds() -> usize {
    std::env::var("HSD_STALL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

fn signal(inst: &PrivateMariadb, sig: i32) {
    let pid = inst.pid();
    // SAFETY: kill(2) on the pid of the server this test started.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

/// Never leaves the server stopped, whatever happens to the test.
struct Thawed<'a>(&'a PrivateMariadb);

impl Drop for Thawed<'_> {
    fn drop(&mut self) {
        signal(self.0, libc::SIGCONT);
    }
}

/// What each insert (by id) was answered.
type Answers = BTreeMap<u64, String>;

/// One run: clients insert while the server stalls; every answer checked
/// against the table. Returns (inserts answered, answered unknown).
fn run(inst: &PrivateMariadb, write_groups: &str, round: usize) -> (usize, usize) {
    let db = "hsdt_stalls";
    let mut sql = fresh_db(&inst.url, db);
    exec(
        &mut sql,
        "CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY, v VARCHAR(20) NOT NULL) ENGINE=InnoDB",
    );
    let hsd = Hsd::start(
        &inst.url,
        &["--mysql-timeout", "1", "--write-groups", write_groups],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Mutex::new(Answers::new()));
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (stop, answers, addr) = (stop.clone(), answers.clone(), hsd.write.clone());
        clients.push(std::thread::spawn(move || {
            let mut w = Hs::connect(&addr);
            assert_eq!(w.q(&format!("P|0|{db}|t|PRIMARY|id,v")), "0|1");
            let mut next = (c as u64) << 32;
            while !stop.load(Ordering::Relaxed) {
                let ids: Vec<u64> = (0..PIPELINE as u64).map(|k| next + k).collect();
                next += PIPELINE as u64;
                let lines: Vec<String> = ids
                    .iter()
                    .map(|id| format!("0|+|2|{id}|r{round}"))
                    .collect();
                let got = w.pipeline(&lines);
                {
                    let mut a = answers.lock().unwrap_or_else(|p| p.into_inner());
                    for (id, answer) in ids.into_iter().zip(got) {
                        a.insert(id, answer);
                    }
                }
                // A breath between pipelines: groups are still in flight at
                // most stalls, and the check does not starve the suites
                // that run beside it in CI of both cores.
                std::thread::sleep(PAUSE);
            }
        }));
    }
    {
        let _thawed = Thawed(inst);
        std::thread::sleep(BETWEEN);
        for k in 0..STALLS {
            signal(inst, libc::SIGSTOP);
            std::thread::sleep(STALL[k % STALL.len()]);
            signal(inst, libc::SIGCONT);
            std::thread::sleep(BETWEEN);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("a client thread");
    }
    drop(hsd);
    let stored: std::collections::BTreeSet<u64> = rows(&mut sql, "SELECT id FROM t")
        .into_iter()
        .map(|r| {
            String::from_utf8_lossy(&r[0].clone().unwrap_or_default())
                .parse()
                .expect("an id")
        })
        .collect();
    let answers = answers.lock().unwrap_or_else(|p| p.into_inner());
    let mut wrong = Vec::new();
    let mut unknown = 0;
    for (id, answer) in answers.iter() {
        let there = stored.contains(id);
        match (answer.as_str(), there) {
            ("0|1", true) => {}
            ("0|1", false) => wrong.push(format!("{id}: answered {answer}, not stored")),
            ("1|1|1180", _) => unknown += 1,
            (_, true) => wrong.push(format!("{id}: answered {answer}, stored")),
            (_, false) => {}
        }
    }
    for id in &stored {
        if !answers.contains_key(id) {
            wrong.push(format!("{id}: stored, never answered"));
        }
    }
    assert!(
        wrong.is_empty(),
        "--write-groups {write_groups}, run {round}: {} of {} answers disagree with the table: {:?}",
        wrong.len(),
        answers.len(),
        &wrong[..wrong.len().min(20)]
    );
    (answers.len(), unknown)
}

#[test]
fn no_committed_write_is_answered_failed_while_the_server_stalls() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if mysql_url().is_none() {
        return;
    }
    let inst = PrivateMariadb::start("mariadb-stalls");
    for write_groups in ["1", "3"] {
        for round in 0..rounds() {
            let t = Instant::now();
            let (answered, unknown) = run(&inst, write_groups, round);
            eprintln!(
                "--write-groups {write_groups}, run {round}: {answered} inserts answered, \
                 {unknown} outcome unknown, all as the table has them ({:?})",
                t.elapsed()
            );
        }
    }
}
