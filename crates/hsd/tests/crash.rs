//! Crash safety: hsd killed with SIGKILL at random moments under concurrent
//! writers, 20 times per backend, and MariaDB itself killed under load. After
//! every crash each acknowledged write is present and no multi-row request is
//! half applied.

mod common;

use common::{Backend, TestServer};
use hs_client::{insert_line, Client, ClientOptions};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GROUPS: u64 = 8;
const ROWS_PER_GROUP: u64 = 10;
/// Inserts per pipelined batch of the pipelining writers.
const PIPELINE: u64 = 64;
/// Batches each pipelining writer sends per round.
const PIPELINED_BATCHES: usize = 6;

fn create_tables(s: &TestServer) {
    s.sql("CREATE TABLE kv (k INT NOT NULL PRIMARY KEY, v VARCHAR(32))");
    s.sql("CREATE TABLE grp (id INT NOT NULL PRIMARY KEY, g INT NOT NULL, ver INT NOT NULL)");
    s.sql("CREATE INDEX g ON grp (g)");
    let rows: Vec<String> = (0..GROUPS * ROWS_PER_GROUP)
        .map(|i| format!("({i},{},0)", i / ROWS_PER_GROUP))
        .collect();
    s.sql(&format!(
        "INSERT INTO grp (id, g, ver) VALUES {}",
        rows.join(",")
    ));
}

/// What the writers had acknowledged before the crash.
#[derive(Default)]
struct Acked {
    keys: BTreeSet<u64>,
    /// Highest acknowledged version per group.
    versions: Vec<u64>,
}

/// Runs inserters and group updaters until `stop` or an error; returns acks.
async fn write_until_broken(
    s: &TestServer,
    next_key: Arc<AtomicU64>,
    next_ver: Arc<AtomicU64>,
    run_for: Duration,
) -> Acked {
    let deadline = Instant::now() + run_for;
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (addr, db, next_key) = (s.write_addr.clone(), s.db.clone(), next_key.clone());
        tasks.push(tokio::spawn(async move {
            let mut acked = Acked::default();
            let opts = ClientOptions::new().reconnect(false);
            let Ok(mut c) = Client::connect_with(&addr, opts).await else {
                return acked;
            };
            if !matches!(c.open_index(1, &db, "kv", "PRIMARY", &["k", "v"], &[]).await, Ok(r) if r.is_ok()) {
                return acked;
            }
            while Instant::now() < deadline {
                let k = next_key.fetch_add(1, Ordering::Relaxed);
                match c.insert(1, &[k.to_string().as_str(), "v"]).await {
                    Ok(r) if r.is_ok() => {
                        acked.keys.insert(k);
                    }
                    _ => break,
                }
            }
            acked
        }));
    }
    // Pipelining inserters: groups large enough that the embedded store
    // syncs them on its sync thread while the next group runs.
    for _ in 0..2 {
        let (addr, db, next_key) = (s.write_addr.clone(), s.db.clone(), next_key.clone());
        tasks.push(tokio::spawn(async move {
            let mut acked = Acked::default();
            let opts = ClientOptions::new().reconnect(false);
            let Ok(mut c) = Client::connect_with(&addr, opts).await else {
                return acked;
            };
            if !matches!(c.open_index(1, &db, "kv", "PRIMARY", &["k", "v"], &[]).await, Ok(r) if r.is_ok()) {
                return acked;
            }
            // A few batches per round: enough to be killed mid-sync, without
            // growing the table the rounds verify too fast.
            for _ in 0..PIPELINED_BATCHES {
                if Instant::now() >= deadline {
                    break;
                }
                let first = next_key.fetch_add(PIPELINE, Ordering::Relaxed);
                let lines: Vec<Vec<u8>> = (first..first + PIPELINE)
                    .map(|k| insert_line(1, &[k.to_string().as_str(), "p"]))
                    .collect();
                match c.pipeline(&lines).await {
                    Ok(answers) => {
                        for (k, r) in (first..).zip(&answers) {
                            if r.is_ok() {
                                acked.keys.insert(k);
                            }
                        }
                    }
                    Err(_) => break,
                }
            }
            acked
        }));
    }
    for u in 0..2u64 {
        let (addr, db, next_ver) = (s.write_addr.clone(), s.db.clone(), next_ver.clone());
        tasks.push(tokio::spawn(async move {
            let mut acked = Acked {
                versions: vec![0; GROUPS as usize],
                ..Default::default()
            };
            let opts = ClientOptions::new().reconnect(false);
            let Ok(mut c) = Client::connect_with(&addr, opts).await else {
                return acked;
            };
            if !matches!(c.open_index(1, &db, "grp", "g", &["ver"], &[]).await, Ok(r) if r.is_ok())
            {
                return acked;
            }
            let mut g = u;
            while Instant::now() < deadline {
                let ver = next_ver.fetch_add(1, Ordering::Relaxed);
                // One request rewrites all rows of the group: all or nothing.
                let line = format!("1\t=\t1\t{g}\t{ROWS_PER_GROUP}\t0\tU\t{ver}");
                match c.request(line.as_bytes()).await {
                    Ok(r) if r.is_ok() => {
                        assert_eq!(common::fmt(&r), format!("0\t1\t{ROWS_PER_GROUP}"));
                        acked.versions[g as usize] = ver;
                    }
                    _ => break,
                }
                g = (g + 2) % GROUPS;
            }
            acked
        }));
    }
    let mut all = Acked {
        versions: vec![0; GROUPS as usize],
        ..Default::default()
    };
    for t in tasks {
        let a = t.await.expect("writer task");
        all.keys.extend(a.keys);
        for (i, v) in a.versions.into_iter().enumerate() {
            all.versions[i] = all.versions[i].max(v);
        }
    }
    all
}

fn verify(s: &TestServer, acked: &Acked, floor: &mut [u64]) {
    let present: BTreeSet<u64> = s
        .sql("SELECT k FROM kv")
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten().and_then(|v| v.parse().ok()))
        .collect();
    let lost: Vec<_> = acked.keys.difference(&present).take(5).collect();
    assert!(
        lost.is_empty(),
        "acknowledged inserts lost after crash, e.g. {lost:?}"
    );
    for g in 0..GROUPS {
        let rows = s.sql(&format!("SELECT ver FROM grp WHERE g = {g}"));
        let vers: BTreeSet<u64> = rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten().and_then(|v| v.parse().ok()))
            .collect();
        assert_eq!(vers.len(), 1, "group {g} half updated: versions {vers:?}");
        let ver = *vers.iter().next().expect("one version");
        floor[g as usize] = floor[g as usize].max(acked.versions[g as usize]);
        assert!(
            ver >= floor[g as usize],
            "group {g}: acknowledged version {} lost (found {ver})",
            floor[g as usize]
        );
    }
}

async fn hsd_killed_20_times(s: &mut TestServer) {
    create_tables(s);
    let next_key = Arc::new(AtomicU64::new(1));
    let next_ver = Arc::new(AtomicU64::new(1));
    let mut floor = vec![0u64; GROUPS as usize];
    let mut total = 0;
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..20 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let kill_after = Duration::from_millis(60 + rng % 300);
        let writers = {
            let (nk, nv) = (next_key.clone(), next_ver.clone());
            let addr_holder = &*s;
            write_until_broken(addr_holder, nk, nv, Duration::from_secs(30))
        };
        let killer = async {
            tokio::time::sleep(kill_after).await;
        };
        // Kill while the writers run; they stop at their first error.
        let (acked, ()) = tokio::join!(writers, async {
            killer.await;
            s_kill(s.pid());
        });
        total += acked.keys.len();
        s.kill9_and_restart();
        verify(s, &acked, &mut floor);
        eprintln!("crash round {round}: killed after {kill_after:?}, {} inserts acknowledged, all present", acked.keys.len());
    }
    assert!(
        total > 100,
        "too few acknowledged writes ({total}) for the test to mean anything"
    );
}
both_backends!(hsd_killed_20_times, &[]);

fn s_kill(pid: u32) {
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs scripts/mariadb.sh against this test's own instance, so killing it
/// never disturbs the tests that share the main one.
fn own_mariadb(action: &str) -> String {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/mariadb.sh"))
        .arg(action)
        .env("HSD_MARIADB_DIR", repo_root().join("target/mariadb-crash"))
        .output()
        .expect("run scripts/mariadb.sh");
    assert!(
        out.status.success() || action == "stop",
        "mariadb.sh {action} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// MariaDB killed with SIGKILL three times under write load: requests fail
/// fast during the outage, hsd recovers by itself, an index opened before the
/// outage works again on the same client connection, and no acknowledged
/// write is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_killed_under_load() {
    if common::mysql_url().is_none() {
        return;
    }
    own_mariadb("start");
    let env = own_mariadb("env");
    let url = env
        .split_whitespace()
        .find_map(|w| w.strip_prefix("HSD_TEST_MYSQL_URL="))
        .expect("URL in mariadb.sh env")
        .to_string();
    let mut s = TestServer::start_at(
        Backend::Mysql,
        Some(url),
        "hst_mariadb_kill",
        &["--mysql-timeout", "2"],
    );
    create_tables(&s);
    let mut watcher = Client::connect_with(&s.read_addr, ClientOptions::new().reconnect(false))
        .await
        .expect("connect");
    let r = watcher
        .open_index(1, &s.db, "grp", "PRIMARY", &["g"], &[])
        .await
        .expect("P");
    assert!(r.is_ok());
    let next_key = Arc::new(AtomicU64::new(1));
    let next_ver = Arc::new(AtomicU64::new(1));
    let mut floor = vec![0u64; GROUPS as usize];
    let mut acked_all = Acked {
        versions: vec![0; GROUPS as usize],
        ..Default::default()
    };
    for round in 0..3 {
        let writers = write_until_broken(
            &s,
            next_key.clone(),
            next_ver.clone(),
            Duration::from_secs(30),
        );
        let (acked, ()) = tokio::join!(writers, async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            own_mariadb("kill");
        });
        // During the outage a request answers an error, and promptly.
        let t0 = Instant::now();
        let during = watcher
            .request(b"1\t=\t1\t5")
            .await
            .expect("hsd answers during the outage");
        assert!(!during.is_ok(), "MariaDB is down, yet: {during:?}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "error took {:?}",
            t0.elapsed()
        );
        own_mariadb("start");
        // hsd reconnects by itself; the index opened before works again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = watcher
                .request(b"1\t=\t1\t5")
                .await
                .expect("same connection");
            if r.is_ok() {
                assert_eq!(common::fmt(&r), "0\t1\t0");
                break;
            }
            assert!(Instant::now() < deadline, "hsd did not recover: {r:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        acked_all.keys.extend(acked.keys.iter().copied());
        for (i, v) in acked.versions.iter().enumerate() {
            acked_all.versions[i] = acked_all.versions[i].max(*v);
        }
        verify(&s, &acked_all, &mut floor);
        eprintln!(
            "MariaDB kill {round}: {} inserts acknowledged so far, all present",
            acked_all.keys.len()
        );
    }
    assert!(
        acked_all.keys.len() > 50,
        "too few acknowledged writes to mean anything"
    );
    s.kill9();
    own_mariadb("stop");
}
