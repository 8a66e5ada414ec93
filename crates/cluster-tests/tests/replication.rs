//! hsd in front of a replicated MariaDB or MySQL 8.0.31 (scripts/replication.sh:
//! a GTID primary, server 0 here, with two replicas): what clients see when
//! reads go to replicas and servers fail. scripts/test.sh runs this suite
//! on both flavors; on MySQL 8 (`HSD_REPL_FLAVOR=mysql8`) without the three
//! tests that compare with the original plugin, which only MariaDB loads.

mod cluster;

use cluster::{
    block_on, client, eventually, get, insert, open, req, set, write_until_it_moves, Cluster,
    Flavor, Hsd, Kind, Restore,
};
use hs_conformance::lockstep;
use hs_conformance::target::Endpoint;
use std::time::{Duration, Instant};

/// Every read on the read port sees every write acknowledged on the write
/// port before it was sent, while the reads run on the replicas: four
/// clients each write a key and at once read it back, 60 times.
#[test]
fn reads_on_replicas_see_every_acknowledged_write() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_consistency");
    c.sql(
        0,
        "INSERT INTO hsdtest.rr_consistency VALUES (1,0),(2,0),(3,0),(4,0)",
    );
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &["--read-from", "replicas", "--topology-interval", "0.2"],
    );
    block_on(async {
        let mut pairs = Vec::new();
        for k in 1..=4i64 {
            let (w, r) = (hsd.write.clone(), hsd.read.clone());
            pairs.push(tokio::spawn(async move {
                let mut writer = client(&w).await;
                let mut reader = client(&r).await;
                open(&mut writer, 1, "rr_consistency").await;
                open(&mut reader, 1, "rr_consistency").await;
                for i in 1..=60 {
                    assert_eq!(set(&mut writer, 1, k, i).await, "0|1|1");
                    assert_eq!(
                        get(&mut reader, 1, k).await,
                        format!("0|2|{k}|{i}"),
                        "key {k} round {i}"
                    );
                }
            }));
        }
        for p in pairs {
            p.await.expect("client pair");
        }
    });
    let on = |i: usize, m: &str| hsd.metric(m, &c.address(i), "");
    let replica_reads = on(1, "hsd_server_reads_total") + on(2, "hsd_server_reads_total");
    let fallbacks = on(0, "hsd_server_read_fallbacks_total");
    let waits = on(1, "hsd_server_read_waits_total") + on(2, "hsd_server_read_waits_total");
    eprintln!(
        "240 read-after-write finds: {replica_reads} on replicas ({waits} after a wait), \
         {} on the primary ({fallbacks} fallbacks)",
        on(0, "hsd_server_reads_total")
    );
    assert!(
        replica_reads >= 200.0,
        "{replica_reads} of 240 finds on replicas"
    );
    // Every series is there for every server.
    for i in 0..3 {
        for m in [
            "hsd_server_lag_seconds",
            "hsd_server_lag_transactions",
            "hsd_server_reads_total",
            "hsd_server_read_waits_total",
            "hsd_server_read_fallbacks_total",
        ] {
            assert!(
                hsd.metrics()
                    .contains(&format!("{m}{{server=\"{}\"}}", c.address(i))),
                "{m} {i}"
            );
        }
    }
    assert_eq!(
        hsd.metric("hsd_server_role", &c.address(0), "role=\"primary\""),
        1.0
    );
    assert_eq!(
        hsd.metric("hsd_server_role", &c.address(1), "role=\"replica\""),
        1.0
    );
    // Caught up once the writes stop.
    eventually(Duration::from_secs(3), "lag 0", || {
        hsd.metric("hsd_server_lag_transactions", &c.address(2), "") == 0.0
    });
}

/// A replica whose SQL thread stopped, or that lags, never serves a row
/// older than an acknowledged write: the read waits up to --replica-wait,
/// then runs on the primary.
#[test]
fn stopped_or_lagging_replicas_never_serve_stale_rows() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_stale");
    c.sql(0, "INSERT INTO hsdtest.rr_stale VALUES (1,0)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.2",
            "--replica-wait",
            "1",
        ],
    );
    let mut restore = Restore::new(&c);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_stale").await;
        open(&mut reader, 1, "rr_stale").await;

        // SQL threads stopped: the replicas are left out once polled; a
        // read before that waits for them in vain, then the primary.
        restore.then(&["start-sql", "2"]);
        restore.then(&["start-sql", "3"]);
        c.script(&["stop-sql", "2"]);
        c.script(&["stop-sql", "3"]);
        for i in 1..=5 {
            assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1");
            let t = Instant::now();
            assert_eq!(get(&mut reader, 1, 1).await, format!("0|2|1|{i}"));
            eprintln!("SQL threads stopped: read {i} took {:?}", t.elapsed());
        }
        c.script(&["start-sql", "2"]);
        c.script(&["start-sql", "3"]);

        // Three seconds behind: each read after a write waits --replica-wait
        // (1 s), then runs on the primary.
        restore.then(&["delay", "2", "0"]);
        restore.then(&["delay", "3", "0"]);
        c.script(&["delay", "2", "3"]);
        c.script(&["delay", "3", "3"]);
        // Polled as replicas again (their threads run; they are behind).
        for i in [1, 2] {
            let _ = eventually(Duration::from_secs(3), "replicas in use", || {
                hsd.metric("hsd_server_role", &c.address(i), "role=\"replica\"") == 1.0
            });
        }
        let before = hsd.metric("hsd_server_read_fallbacks_total", &c.address(0), "");
        for i in 10..=12 {
            assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1");
            let t = Instant::now();
            assert_eq!(get(&mut reader, 1, 1).await, format!("0|2|1|{i}"));
            let took = t.elapsed();
            eprintln!("3 s lag: read {i} took {took:?}");
            assert!(
                took >= Duration::from_millis(900) && took < Duration::from_millis(2500),
                "{took:?}"
            );
        }
        let after = hsd.metric("hsd_server_read_fallbacks_total", &c.address(0), "");
        assert_eq!(after - before, 3.0);
        c.script(&["delay", "2", "0"]);
        c.script(&["delay", "3", "0"]);
    });
}

/// The server's GTID tracker switched off by its administrator (MariaDB:
/// `SET GLOBAL session_track_system_variables = ''`; MySQL: `SET GLOBAL
/// session_track_gtids = OFF`) and replicas a second behind: every read
/// sent right after an acknowledged write answers the written row. On
/// MariaDB hsd's commits then come back without their GTID; each is of
/// unknown position (the read asks the primary's position and waits
/// `--replica-wait` for a replica to apply it, else runs on the primary),
/// never "logged nothing" (40 of 40 reads answered the old row from a
/// replica when it was taken so).
#[test]
fn tracker_off_reads_on_lagging_replicas_see_acknowledged_writes() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_untracked");
    c.sql(0, "INSERT INTO hsdtest.rr_untracked VALUES (1,0)");
    c.settle_data();
    let (var, off) = match c.flavor {
        Flavor::Mariadb => ("session_track_system_variables", "''"),
        Flavor::Mysql8 => ("session_track_gtids", "OFF"),
    };
    let was = c.script(&[
        "sql",
        "1",
        "-N",
        "-B",
        "-e",
        &format!("SELECT @@GLOBAL.{var}"),
    ]);
    let mut restore = Restore::new(&c);
    restore.then(&[
        "sql",
        "1",
        "-e",
        &format!("SET GLOBAL {var} = '{}'", was.trim()),
    ]);
    restore.then(&["delay", "2", "0"]);
    restore.then(&["delay", "3", "0"]);
    c.script(&["sql", "1", "-e", &format!("SET GLOBAL {var} = {off}")]);
    c.script(&["delay", "2", "1"]);
    c.script(&["delay", "3", "1"]);
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.2",
            "--replica-wait",
            "0.1",
        ],
    );
    for i in [1, 2] {
        let _ = eventually(Duration::from_secs(5), "replicas in use", || {
            hsd.metric("hsd_server_role", &c.address(i), "role=\"replica\"") == 1.0
        });
    }
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_untracked").await;
        open(&mut reader, 1, "rr_untracked").await;
        let mut stale = Vec::new();
        for i in 1..=40 {
            assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1");
            let got = get(&mut reader, 1, 1).await;
            if got != format!("0|2|1|{i}") {
                stale.push(format!("write {i}: read {got}"));
            }
        }
        assert!(
            stale.is_empty(),
            "{} of 40 reads after an acknowledged write answered another row: {stale:?}",
            stale.len()
        );
    });
    // MariaDB: hsd's `SET SESSION` reads back as asked and tracks nothing;
    // its login probe finds that out and says so once. MySQL: the
    // session's value overrides the global one and commits report their
    // GTIDs.
    let said = hsd.log().contains("does not report the GTID of commits");
    assert_eq!(
        said,
        c.flavor == Flavor::Mariadb,
        "the line saying the tracker is off: {}",
        hsd.log()
    );
}

/// The primary down: reads keep being served by the replicas; writes are
/// answered with an error within --mysql-timeout, and work again once it
/// is back.
#[test]
fn primary_down_reads_go_on_writes_fail_fast() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_primary_down");
    c.sql(0, "INSERT INTO hsdtest.rr_primary_down VALUES (1,0),(2,0)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.5",
            "--mysql-timeout",
            "2",
        ],
    );
    let mut restore = Restore::new(&c);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_primary_down").await;
        open(&mut reader, 1, "rr_primary_down").await;
        assert_eq!(set(&mut writer, 1, 1, 7).await, "0|1|1");
        assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|7");

        restore.then(&["start-node", "1"]);
        c.script(&["kill-node", "1"]);
        let t = Instant::now();
        let mut slowest = Duration::ZERO;
        while t.elapsed() < Duration::from_secs(2) {
            let r = Instant::now();
            assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|7");
            slowest = slowest.max(r.elapsed());
        }
        eprintln!("primary killed: reads went on, the slowest took {slowest:?}");
        // A new client opens and reads too (its P runs on a replica).
        let mut fresh = client(&hsd.read).await;
        open(&mut fresh, 1, "rr_primary_down").await;
        assert_eq!(get(&mut fresh, 1, 2).await, "0|2|2|0");
        for _ in 0..3 {
            let t = Instant::now();
            let answer = set(&mut writer, 1, 2, 9).await;
            let took = t.elapsed();
            eprintln!("primary down: a write answered {answer:?} after {took:?}");
            assert!(answer.starts_with("1|1|"), "{answer}");
            assert!(took < Duration::from_millis(2500), "{took:?}");
        }
        c.script(&["start-node", "1"]);
        let back = Instant::now();
        while set(&mut writer, 1, 2, 9).await != "0|1|1" {
            assert!(
                back.elapsed() < Duration::from_secs(10),
                "writes never came back"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!(
            "primary back: writes worked again {:?} after it answered",
            back.elapsed()
        );
        assert_eq!(get(&mut reader, 1, 2).await, "0|2|2|9");
    });
}

/// A replica down: its reads move to the other one at once, and no client
/// sees an error.
#[test]
fn replica_down_moves_its_reads_without_errors() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_replica_down");
    c.sql(
        0,
        "INSERT INTO hsdtest.rr_replica_down VALUES (1,1),(2,2),(3,3),(4,4)",
    );
    c.settle_data();
    let hsd = Hsd::start(&c, &["--read-from", "replicas", "--topology-interval", "1"]);
    let mut restore = Restore::new(&c);
    restore.then(&["start-node", "2"]);
    let s2 = c.address(1);
    block_on(async {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut readers = Vec::new();
        for k in 1..=4i64 {
            let (addr, stop) = (hsd.read.clone(), stop.clone());
            readers.push(tokio::spawn(async move {
                let mut r = client(&addr).await;
                open(&mut r, 1, "rr_replica_down").await;
                let (mut n, mut slowest) = (0u64, Duration::ZERO);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let t = Instant::now();
                    assert_eq!(get(&mut r, 1, k).await, format!("0|2|{k}|{k}"));
                    slowest = slowest.max(t.elapsed());
                    n += 1;
                }
                (n, slowest)
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = hsd.metric("hsd_server_reads_total", &s2, "");
        assert!(before > 0.0, "s2 served no reads before it went down");
        c.script(&["kill-node", "2"]);
        let down = Instant::now();
        // Reads on s2 stop growing once it is left out.
        let mut last = hsd.metric("hsd_server_reads_total", &s2, "");
        let mut moved = None;
        while down.elapsed() < Duration::from_secs(3) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = hsd.metric("hsd_server_reads_total", &s2, "");
            if now == last && moved.is_none() {
                moved = Some(down.elapsed());
            }
            last = now;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut slowest = Duration::ZERO;
        let mut total = 0;
        for r in readers {
            let (n, s) = r.await.expect("reader");
            total += n;
            slowest = slowest.max(s);
        }
        let moved = moved.expect("reads kept going to the dead replica");
        eprintln!(
            "replica killed: {total} reads, no error; its reads moved within {moved:?}; \
             the slowest read took {slowest:?}"
        );
        assert!(moved < Duration::from_secs(1), "{moved:?}");
        assert!(slowest < Duration::from_secs(1), "{slowest:?}");
        assert_eq!(hsd.metric("hsd_server_role", &s2, "role=\"unusable\""), 1.0);
    });
    c.script(&["start-node", "2"]);
    eventually(Duration::from_secs(10), "s2 a replica again", || {
        hsd.metric("hsd_server_role", &s2, "role=\"replica\"") == 1.0
    });
}

/// A replica promoted (the primary gone, its read_only turned off): writes
/// go to it within two topology intervals, no restart; and back again.
#[test]
fn promoted_replica_takes_the_writes() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_promote");
    c.sql(0, "INSERT INTO hsdtest.rr_promote VALUES (1,0)");
    c.settle_data();
    let interval = Duration::from_millis(500);
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.5",
            "--mysql-timeout",
            "2",
        ],
    );
    let mut restore = Restore::new(&c);
    restore.then(&["start-node", "1"]);
    restore.then(&["promote", "1"]);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_promote").await;
        open(&mut reader, 1, "rr_promote").await;
        assert_eq!(set(&mut writer, 1, 1, 1).await, "0|1|1");

        c.script(&["stop-node", "1"]);
        c.script(&["promote", "2"]);
        let mut i = 100;
        let took = write_until_it_moves(
            &mut writer,
            1,
            &mut i,
            4 * interval + Duration::from_secs(2),
            "writes never moved",
        )
        .await;
        eprintln!("s2 promoted: writes went to it after {took:?} (interval {interval:?})");
        assert!(took < 2 * interval + Duration::from_secs(1), "{took:?}");
        assert_eq!(
            c.value(1, "SELECT v FROM hsdtest.rr_promote WHERE id = 1")
                .as_deref(),
            Some(&*i.to_string())
        );
        assert_eq!(get(&mut reader, 1, 1).await, format!("0|2|1|{i}"));
        assert!(
            hsd.log().contains("takes the writes"),
            "no log line for the new primary"
        );

        // The old primary comes back as a replica of s2, then takes over
        // again (a switchover).
        c.script(&["start-node", "1"]);
        c.script(&["promote", "1"]);
        let took = write_until_it_moves(
            &mut writer,
            1,
            &mut i,
            4 * interval + Duration::from_secs(2),
            "writes never moved back",
        )
        .await;
        eprintln!("switchover back to s1: writes followed after {took:?}");
        assert_eq!(
            c.value(0, "SELECT v FROM hsdtest.rr_promote WHERE id = 1")
                .as_deref(),
            Some(&*i.to_string())
        );
        assert_eq!(get(&mut reader, 1, 1).await, format!("0|2|1|{i}"));
    });
}

/// Two writable servers at once: writes are refused, with a clear log
/// line, until one is read-only again.
#[test]
fn two_writable_servers_refuse_writes() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_two_writable");
    c.sql(0, "INSERT INTO hsdtest.rr_two_writable VALUES (1,0)");
    c.settle_data();
    let hsd = Hsd::start(&c, &["--topology-interval", "0.5"]);
    let mut restore = Restore::new(&c);
    restore.then(&["read-only", "2", "on"]);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        open(&mut writer, 1, "rr_two_writable").await;
        assert_eq!(set(&mut writer, 1, 1, 1).await, "0|1|1");
        c.script(&["read-only", "2", "off"]);
        let t = Instant::now();
        let refused = loop {
            let a = set(&mut writer, 1, 1, 2).await;
            if a != "0|1|1" {
                break a;
            }
            assert!(t.elapsed() < Duration::from_secs(3), "writes never refused");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        eprintln!(
            "two writable servers: writes refused after {:?} ({refused})",
            t.elapsed()
        );
        assert_eq!(refused, "1|1|2013");
        let wanted = format!("{} and {} are all writable", c.address(0), c.address(1));
        let log = hsd.log_with(&wanted, Duration::from_secs(2));
        assert!(log.contains(&wanted), "{log}");
        // Still refused a while later (not a blip).
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(set(&mut writer, 1, 1, 3).await, "1|1|2013");
        c.script(&["read-only", "2", "on"]);
        let t = Instant::now();
        loop {
            if set(&mut writer, 1, 1, 4).await == "0|1|1" {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(3),
                "writes never came back"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        eprintln!("read-only again: writes back after {:?}", t.elapsed());
    });
}

/// After a failover a replica may be ahead of the promoted server: it
/// applied a write the new primary never got, and its I/O thread then fails
/// with 1236 while its SQL thread runs. MariaDB compares GTIDs by domain
/// and sequence only, so its position seemed to cover the new primary's
/// writes; it must serve no read, and every read sees the write
/// acknowledged before it (on MySQL too, where GTID sets compare exactly).
#[test]
fn a_replica_ahead_of_the_promoted_primary_serves_nothing() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_ahead");
    c.sql(0, "INSERT INTO hsdtest.rr_ahead VALUES (1,0)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.2",
            "--mysql-timeout",
            "2",
        ],
    );
    let mut restore = Restore::new(&c);
    // s3 holds a transaction no other server has: only a fresh set heals.
    restore.then(&["reset"]);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_ahead").await;
        open(&mut reader, 1, "rr_ahead").await;
        assert_eq!(set(&mut writer, 1, 1, 1).await, "0|1|1");
        c.script(&["sql", "2", "-e", "STOP SLAVE IO_THREAD"]);
        // 300 transactions s2 never gets: s3's sequence numbers run that far
        // ahead of what s2 will write next.
        for v in 2..=301 {
            assert_eq!(set(&mut writer, 1, 1, v).await, "0|1|1");
        }
        eventually(
            Duration::from_secs(10),
            "s3 applies the writes s2 lacks",
            || {
                c.value(2, "SELECT v FROM hsdtest.rr_ahead WHERE id = 1")
                    .as_deref()
                    == Some("301")
            },
        );
        c.script(&["kill-node", "1"]);
        c.script(&["promote", "2"]);
        let mut i = 1000;
        write_until_it_moves(
            &mut writer,
            1,
            &mut i,
            Duration::from_secs(10),
            "writes never moved",
        )
        .await;
        let mut stale = 0;
        for _ in 0..200 {
            i += 1;
            assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1");
            if get(&mut reader, 1, 1).await != format!("0|2|1|{i}") {
                stale += 1;
            }
        }
        assert_eq!(
            stale, 0,
            "reads that missed the write acknowledged before them"
        );
    });
    // MariaDB: s3's I/O thread fails (1236) and hsd says why it is not
    // used. MySQL compares GTID sets exactly and s3's extra transactions
    // carry s1's server_uuid, so s2 sends it what it lacks and no error
    // comes: the reads above are the whole test there.
    if c.flavor == Flavor::Mariadb {
        let wanted = "its source cannot send what it asks";
        let log = hsd.log_with(wanted, Duration::from_secs(2));
        assert!(log.contains(wanted), "{log}");
    }
}

/// `RESET MASTER` on the primary: its GTIDs start again at 0-1-1 while
/// the replicas' positions keep the old, larger numbers, which compare as
/// covering every new write. Reads must still see each write acknowledged
/// before them.
#[test]
fn a_reset_binary_log_on_the_primary_serves_no_stale_reads() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_reset_master");
    c.sql(0, "INSERT INTO hsdtest.rr_reset_master VALUES (1,0)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &["--read-from", "replicas", "--topology-interval", "0.2"],
    );
    let mut restore = Restore::new(&c);
    restore.then(&["reset"]);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_reset_master").await;
        open(&mut reader, 1, "rr_reset_master").await;
        // The replicas' positions run well ahead of what follows the reset.
        for v in 1..=300 {
            assert_eq!(set(&mut writer, 1, 1, v).await, "0|1|1");
        }
        c.settle();
        c.script(&["sql", "1", "-e", "RESET MASTER"]);
        let mut stale = 0;
        for i in 1000..1200 {
            assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1");
            if get(&mut reader, 1, 1).await != format!("0|2|1|{i}") {
                stale += 1;
            }
        }
        assert_eq!(
            stale, 0,
            "reads that missed the write acknowledged before them"
        );
    });
}

/// A replica with a replica-side filter skips a table's changes while its
/// GTID position moves past them: it serves nothing, and every read of the
/// filtered table sees the insert acknowledged before it.
#[test]
fn a_replica_with_replication_filters_serves_nothing() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_filtered");
    c.settle_data();
    let filter = |pattern: &str| match c.flavor {
        Flavor::Mariadb => format!(
            "STOP SLAVE SQL_THREAD; SET GLOBAL replicate_wild_ignore_table = '{pattern}'; \
             START SLAVE SQL_THREAD"
        ),
        Flavor::Mysql8 => {
            let list = if pattern.is_empty() {
                String::new()
            } else {
                format!("'{pattern}'")
            };
            format!(
                "STOP REPLICA SQL_THREAD; \
                 CHANGE REPLICATION FILTER REPLICATE_WILD_IGNORE_TABLE = ({list}); \
                 START REPLICA SQL_THREAD"
            )
        }
    };
    let mut restore = Restore::new(&c);
    restore.then(&["sql", "3", "-e", &filter("")]);
    c.script(&["sql", "3", "-e", &filter("hsdtest.rr_filtered")]);
    let hsd = Hsd::start(
        &c,
        &["--read-from", "replicas", "--topology-interval", "0.2"],
    );
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_filtered").await;
        open(&mut reader, 1, "rr_filtered").await;
        let mut missed = 0;
        for k in 1..=200i64 {
            assert_eq!(insert(&mut writer, 1, k, k).await, "0|1");
            if get(&mut reader, 1, k).await != format!("0|2|{k}|{k}") {
                missed += 1;
            }
        }
        assert_eq!(
            missed, 0,
            "reads that missed the insert acknowledged before them"
        );
    });
    let log = hsd.log_with("replica-side filters", Duration::from_secs(2));
    assert!(log.contains("replica-side filters"), "{log}");
}

/// A replica with a table locked (`LOCK TABLES ... WRITE` held there): a
/// read sent to it fails for that server's sake, not the data's, and runs
/// again elsewhere instead of answering the statement time's error.
#[test]
fn reads_a_locked_replica_cannot_serve_run_elsewhere() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_locked");
    c.sql(0, "INSERT INTO hsdtest.rr_locked VALUES (1,1),(2,2),(3,3)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.2",
            "--mysql-timeout",
            "1",
        ],
    );
    let mut holder = c.root_conn(2);
    use mysql::prelude::Queryable;
    holder
        .query_drop("LOCK TABLES hsdtest.rr_locked WRITE")
        .expect("lock on s3");
    block_on(async {
        let mut reader = client(&hsd.read).await;
        open(&mut reader, 1, "rr_locked").await;
        let mut failed = Vec::new();
        for i in 0..60i64 {
            let k = 1 + i % 3;
            let got = get(&mut reader, 1, k).await;
            if got != format!("0|2|{k}|{k}") {
                failed.push(got);
            }
        }
        assert!(failed.is_empty(), "reads answered an error: {failed:?}");
    });
    holder.query_drop("UNLOCK TABLES").expect("unlock");
}

/// The primary configured a second time under another address
/// (`--replica` naming it by `localhost`): one server is one server (its
/// identity, not its address), so it is not two writable servers and
/// writes go on.
#[test]
fn one_server_under_two_addresses_is_one_server() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_same_server");
    c.sql(0, "INSERT INTO hsdtest.rr_same_server VALUES (1,0)");
    c.settle_data();
    let again = c.urls[0].replace("@127.0.0.1:", "@localhost:");
    assert_ne!(again, c.urls[0], "the primary's URL names 127.0.0.1");
    let hsd = Hsd::start(&c, &["--replica", &again, "--topology-interval", "0.2"]);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        open(&mut writer, 1, "rr_same_server").await;
        // Several polls long: every write goes through.
        let t = Instant::now();
        let mut i = 0;
        while t.elapsed() < Duration::from_millis(1500) {
            i += 1;
            assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1", "write {i}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let log = hsd.log();
    assert!(!log.contains("are all writable"), "{log}");
}

/// MDEV-33967: with MariaDB 10.11, the original plugin's writes on a
/// primary are not written to the binary log, so replicas never see them;
/// hsd writes through SQL, and its writes replicate.
#[test]
fn hsd_writes_replicate_the_plugins_do_not() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let plugin_wr =
        std::env::var("HSD_REPL_HS_PORT_WR").expect("HSD_REPL_HS_PORT_WR (replication.sh env)");
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_plugin");
    let hsd = Hsd::start(&c, &[]);
    block_on(async {
        let mut plugin = client(&format!("127.0.0.1:{plugin_wr}")).await;
        open(&mut plugin, 1, "rr_plugin").await;
        assert_eq!(insert(&mut plugin, 1, 1, 10).await, "0|1");
        let mut ours = client(&hsd.write).await;
        open(&mut ours, 1, "rr_plugin").await;
        assert_eq!(insert(&mut ours, 1, 2, 20).await, "0|1");
        let _ = req(&mut plugin, "1|=|1|1").await;
    });
    c.settle_data();
    let rows = |i: usize| {
        c.sql(i, "SELECT id, v FROM hsdtest.rr_plugin ORDER BY id")
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|v| v.unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join("=")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(0), ["1=10", "2=20"], "the primary has both rows");
    for i in [1, 2] {
        assert_eq!(rows(i), ["2=20"], "replica {i}: hsd's row only");
    }
}

/// The conformance suite's short run (as tests/conformance.rs runs it on
/// one server) with hsd reading from the replicas: the original plugin on
/// the primary and hsd must still answer alike, byte for byte, and leave
/// the same rows.
#[test]
fn conformance_short_run_with_reads_on_replicas() {
    use hs_conformance::runner::{Runner, Side};
    use hs_conformance::store::Store;
    use hs_conformance::suite::{self, Config, Mode};
    use hs_conformance::target::Endpoint;
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let port =
        |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} (replication.sh env)"));
    let (plugin_rd, plugin_wr) = (port("HSD_REPL_HS_PORT"), port("HSD_REPL_HS_PORT_WR"));
    let _serial = Cluster::lock();
    c.settle();
    let hsd = Hsd::start(
        &c,
        &["--read-from", "replicas", "--topology-interval", "0.2"],
    );
    let (orig_db, hsd_db) = ("hst_conf_repl_orig", "hst_conf_repl");
    let plugin = Side {
        endpoint: Endpoint {
            name: "plugin".into(),
            read_addr: format!("127.0.0.1:{plugin_rd}"),
            write_addr: format!("127.0.0.1:{plugin_wr}"),
            db: orig_db.into(),
        },
        store: Store::mysql(&c.urls[0], orig_db).expect("plugin's database"),
    };
    let ours = Side {
        endpoint: Endpoint {
            name: "hsd".into(),
            read_addr: hsd.read.clone(),
            write_addr: hsd.write.clone(),
            db: hsd_db.into(),
        },
        store: Store::mysql_replicated(&c.urls[0], hsd_db, &c.urls[1..]).expect("hsd's database"),
    };
    let mut runner = Runner::new(plugin, ours, Mode::Mysql);
    let cfg = Config {
        mode: Mode::Mysql,
        first_seed: 1,
        requests: 3_000,
        segment_len: 200,
        reduce: true,
        reduce_budget: 100,
        max_differences: 1,
    };
    let report = suite::run(&mut runner, &cfg, |_| {}).expect("conformance run");
    let mut msg = report.summary();
    for f in &report.found {
        msg.push_str(&format!(
            "\n{} (seed {}), reduced to {} steps:\n{}",
            f.signature, f.seed, f.reduced_steps, f.transcript
        ));
    }
    assert_eq!(
        report.differing_segments, 0,
        "hsd differs from the original:\n{msg}"
    );
    let replica_reads: f64 = (1..3)
        .map(|i| hsd.metric("hsd_server_reads_total", &c.address(i), ""))
        .sum();
    eprintln!("{msg}\nfinds on the replicas: {replica_reads}");
    assert!(replica_reads > 0.0);
}

/// A write acknowledged on a primary that died before any replica received
/// it is lost (asynchronous replication promises nothing more): once the
/// new primary has been in place for two topology intervals without it,
/// reads stop waiting for it (with a warning), instead of never using the
/// replicas again.
#[test]
fn a_write_lost_with_the_old_primary_stops_holding_reads() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_lost");
    c.sql(0, "INSERT INTO hsdtest.rr_lost VALUES (1,0)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.3",
            "--replica-wait",
            "0.5",
            "--mysql-timeout",
            "2",
        ],
    );
    // The old primary's data diverges from the new one's: rebuild after.
    let mut restore = Restore::new(&c);
    restore.then(&["reset"]);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_lost").await;
        open(&mut reader, 1, "rr_lost").await;
        assert_eq!(set(&mut writer, 1, 1, 1).await, "0|1|1");
        assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|1");
        // The replicas stop receiving; the next write stays on s1.
        c.script(&["sql", "2", "-e", "STOP SLAVE IO_THREAD"]);
        c.script(&["sql", "3", "-e", "STOP SLAVE IO_THREAD"]);
        assert_eq!(set(&mut writer, 1, 1, 2).await, "0|1|1");
        c.script(&["kill-node", "1"]);
        c.script(&["promote", "2"]);
        let promoted = Instant::now();
        // Whatever serves it, the read shows what survives (the lost write
        // is nowhere); it falls back to the new primary until the
        // frontier lets go of the lost write.
        let fell_back = |h: &Hsd| h.metric("hsd_server_read_fallbacks_total", &c.address(1), "");
        let took = loop {
            let before = fell_back(&hsd);
            assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|1");
            if fell_back(&hsd) == before && promoted.elapsed() > Duration::from_millis(300) {
                break promoted.elapsed();
            }
            assert!(
                promoted.elapsed() < Duration::from_secs(5),
                "reads kept waiting for the lost write"
            );
        };
        eprintln!("a write lost with the old primary: reads stopped waiting for it {took:?} after the promotion");
        assert!(
            hsd.log().contains("lost with an earlier primary"),
            "no warning logged"
        );
        // Writes and read-after-write work on the new primary.
        assert_eq!(set(&mut writer, 1, 1, 3).await, "0|1|1");
        assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|3");
    });
}

/// The primary hung (SIGSTOP: its port still accepts connections, nothing
/// answers): writes are answered with an error within --mysql-timeout,
/// never hang; reads go on from the replicas; writes work again once it
/// answers.
#[test]
fn hung_primary_writes_fail_within_the_timeout() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_hung");
    c.sql(0, "INSERT INTO hsdtest.rr_hung VALUES (1,0)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.5",
            "--mysql-timeout",
            "2",
        ],
    );
    let mut restore = Restore::new(&c);
    restore.then(&["thaw", "1"]);
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_hung").await;
        open(&mut reader, 1, "rr_hung").await;
        assert_eq!(set(&mut writer, 1, 1, 5).await, "0|1|1");
        assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|5");
        c.script(&["freeze", "1"]);
        let mut slowest_read = Duration::ZERO;
        for _ in 0..20 {
            let t = Instant::now();
            assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|5");
            slowest_read = slowest_read.max(t.elapsed());
        }
        let mut slowest_write = Duration::ZERO;
        for i in 0..3 {
            let t = Instant::now();
            let answer = set(&mut writer, 1, 1, 6).await;
            let took = t.elapsed();
            eprintln!("primary hung: write {i} answered {answer:?} after {took:?}");
            assert!(answer.starts_with("1|1|"), "{answer}");
            slowest_write = slowest_write.max(took);
        }
        eprintln!("primary hung: slowest read {slowest_read:?}, slowest write {slowest_write:?} (--mysql-timeout 2)");
        assert!(
            slowest_write < Duration::from_millis(2600),
            "{slowest_write:?}"
        );
        assert!(
            slowest_read < Duration::from_millis(500),
            "{slowest_read:?}"
        );
        c.script(&["thaw", "1"]);
        let back = Instant::now();
        while set(&mut writer, 1, 1, 7).await != "0|1|1" {
            assert!(
                back.elapsed() < Duration::from_secs(10),
                "writes never came back"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!(
            "primary answering again: writes back after {:?}",
            back.elapsed()
        );
        assert_eq!(get(&mut reader, 1, 1).await, "0|2|1|7");
    });
}

/// Sixteen depth-1 clients in lockstep, half writing on the write port and
/// half reading the rows written in earlier steps on the read port, which
/// reads from the replicas: every answer must be the original plugin's on
/// the primary (where the read always sees the write, both ports being one
/// server).
#[test]
fn lockstep_clients_on_replicas_answer_as_the_original() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let port =
        |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} (replication.sh env)"));
    let (plugin_rd, plugin_wr) = (port("HSD_REPL_HS_PORT"), port("HSD_REPL_HS_PORT_WR"));
    let _serial = Cluster::lock();
    c.settle();
    let rows = lockstep::seed_rows();
    for db in ["hst_lockstep_plugin", "hst_lockstep_hsd"] {
        c.sql(
            0,
            &format!(
                "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; USE {db}; {}; \
                 INSERT INTO ls VALUES {}",
                lockstep::TABLE_SQL,
                rows.join(", ")
            ),
        );
    }
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &["--read-from", "replicas", "--topology-interval", "0.2"],
    );
    let seed = 7;
    let endpoint = |name: &str, read: String, write: String, db: &str| Endpoint {
        name: name.into(),
        read_addr: read,
        write_addr: write,
        db: db.into(),
    };
    let plugin = lockstep::answers(
        &endpoint(
            "plugin",
            format!("127.0.0.1:{plugin_rd}"),
            format!("127.0.0.1:{plugin_wr}"),
            "hst_lockstep_plugin",
        ),
        seed,
    );
    let ours = lockstep::answers(
        &endpoint(
            "hsd",
            hsd.read.clone(),
            hsd.write.clone(),
            "hst_lockstep_hsd",
        ),
        seed,
    );
    for (client, (p, h)) in plugin.iter().zip(&ours).enumerate() {
        for (k, (pa, ha)) in p.iter().zip(h).enumerate() {
            assert_eq!(
                ha, pa,
                "client {client}, step {k}: hsd's answer differs from the plugin's"
            );
        }
    }
    let changed_reads = plugin
        .iter()
        .flatten()
        .filter(|a| a.starts_with("0\t=") && !a.contains("\ts"))
        .count();
    assert!(changed_reads > 0, "no read met a changed row");
    let replica_reads: f64 = (1..3)
        .map(|i| hsd.metric("hsd_server_reads_total", &c.address(i), ""))
        .sum();
    eprintln!("lockstep on replicas: {changed_reads} reads met a changed row; {replica_reads} finds on the replicas");
    assert!(replica_reads > 0.0);
}

/// Reads on one hsd's read port (replicas) of a row written through
/// another hsd on the same primary, with the replicas `lag` seconds behind
/// (`--read-consistency` as `consistency`): how many of `rounds` answered
/// an older value, and the slowest read.
fn reads_of_another_hsds_writes(
    c: &Cluster,
    table: &str,
    consistency: &str,
    rounds: i64,
) -> (usize, Duration) {
    let writer_hsd = Hsd::start(c, &[]);
    let reader_hsd = Hsd::start(
        c,
        &[
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.2",
            "--replica-wait",
            "0.3",
            "--read-consistency",
            consistency,
        ],
    );
    for i in [1, 2] {
        let _ = eventually(Duration::from_secs(5), "replicas in use", || {
            reader_hsd.metric("hsd_server_role", &c.address(i), "role=\"replica\"") == 1.0
        });
    }
    block_on(async {
        let mut writer = client(&writer_hsd.write).await;
        let mut reader = client(&reader_hsd.read).await;
        open(&mut writer, 1, table).await;
        open(&mut reader, 1, table).await;
        let mut stale = 0;
        let mut slowest = Duration::ZERO;
        for i in 1..=rounds {
            assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1");
            let t = Instant::now();
            let got = get(&mut reader, 1, 1).await;
            slowest = slowest.max(t.elapsed());
            if got != format!("0|2|1|{i}") {
                stale += 1;
            }
        }
        (stale, slowest)
    })
}

/// Issue 30 row 4: a client writes through one hsd and reads through
/// another's read port, the replicas 2 s behind. `strict`: every read
/// sees the write (the reading hsd asks the writer's position, finds no
/// replica that has it within --replica-wait, and reads on the primary).
/// `acknowledged` is per process: the reading hsd never saw the write, a
/// replica serves, and the reads miss it - the same check fails there.
#[test]
fn strict_reads_see_writes_made_through_another_hsd() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_two_hsd");
    c.sql(0, "INSERT INTO hsdtest.rr_two_hsd VALUES (1,0)");
    c.settle_data();
    let mut restore = Restore::new(&c);
    restore.then(&["delay", "2", "0"]);
    restore.then(&["delay", "3", "0"]);
    c.script(&["delay", "2", "2"]);
    c.script(&["delay", "3", "2"]);
    let (stale, slowest) = reads_of_another_hsds_writes(&c, "rr_two_hsd", "strict", 10);
    eprintln!("strict: {stale} of 10 reads stale, slowest {slowest:?}");
    assert_eq!(stale, 0, "strict: reads missed another hsd's writes");
    assert!(slowest < Duration::from_millis(1500), "{slowest:?}");
    let (stale, _) = reads_of_another_hsds_writes(&c, "rr_two_hsd", "acknowledged", 10);
    eprintln!("acknowledged: {stale} of 10 reads stale");
    assert!(
        stale > 0,
        "acknowledged: the replicas lag 2 s, yet no read missed another hsd's write"
    );
    c.script(&["delay", "2", "0"]);
    c.script(&["delay", "3", "0"]);
    c.settle_data();

    // Caught-up replicas still serve strict reads; what a read costs, in
    // either mode.
    let other = Hsd::start(&c, &[]);
    for consistency in ["acknowledged", "strict"] {
        let hsd = Hsd::start(
            &c,
            &[
                "--read-from",
                "replicas",
                "--topology-interval",
                "0.2",
                "--read-consistency",
                consistency,
            ],
        );
        block_on(async {
            let mut writer = client(&other.write).await;
            let mut reader = client(&hsd.read).await;
            open(&mut writer, 1, "rr_two_hsd").await;
            open(&mut reader, 1, "rr_two_hsd").await;
            let v = get(&mut reader, 1, 1).await;
            let t = Instant::now();
            for _ in 1..=200 {
                assert_eq!(get(&mut reader, 1, 1).await, v);
            }
            eprintln!(
                "{consistency}, nothing written: 200 reads in {:?}",
                t.elapsed()
            );
        });
        if consistency == "strict" {
            block_on(async {
                let mut writer = client(&other.write).await;
                let mut reader = client(&hsd.read).await;
                open(&mut writer, 1, "rr_two_hsd").await;
                open(&mut reader, 1, "rr_two_hsd").await;
                let t = Instant::now();
                for i in 100..=140 {
                    assert_eq!(set(&mut writer, 1, 1, i).await, "0|1|1");
                    assert_eq!(get(&mut reader, 1, 1).await, format!("0|2|1|{i}"));
                }
                eprintln!("strict, write then read: 41 pairs in {:?}", t.elapsed());
            });
            let on = |i: usize, m: &str| hsd.metric(m, &c.address(i), "");
            let replica_reads = on(1, "hsd_server_reads_total") + on(2, "hsd_server_reads_total");
            eprintln!(
                "strict: {replica_reads} of 242 reads on replicas, {} on the primary",
                on(0, "hsd_server_reads_total")
            );
            assert!(replica_reads >= 150.0, "{replica_reads} reads on replicas");
        }
    }
}

/// The row cache follows the primary: after a switchover (the old primary
/// up, not applying the new one's writes), no read answers a row the new
/// primary does not hold, and the cache serves again once its reader
/// streams from the new primary. Strict reads: every read follows a
/// commit made through SQL on the new primary and must see it; the reads
/// the cache does not answer run where `--read-from replicas` routes them.
#[test]
fn row_cache_follows_a_new_primary() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    c.settle();
    c.fresh_table("rr_cache");
    c.sql(0, "INSERT INTO hsdtest.rr_cache VALUES (1,0),(2,0)");
    c.settle_data();
    let hsd = Hsd::start(
        &c,
        &[
            "--row-cache-mib",
            "8",
            "--read-consistency",
            "strict",
            "--read-from",
            "replicas",
            "--topology-interval",
            "0.5",
            "--mysql-timeout",
            "2",
        ],
    );
    let mut restore = Restore::new(&c);
    restore.then(&["start-sql", "1"]);
    restore.then(&["promote", "1"]);
    let hits = || hsd.unlabelled("hsd_row_cache_hits_total");
    block_on(async {
        let mut writer = client(&hsd.write).await;
        let mut reader = client(&hsd.read).await;
        open(&mut writer, 1, "rr_cache").await;
        open(&mut reader, 1, "rr_cache").await;
        let started = Instant::now();
        while hits() < 1.0 {
            assert_eq!(get(&mut reader, 1, 2).await, "0|2|2|0");
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the cache never answered before the switch"
            );
        }

        // A switchover; s1 stays up but stops applying s2's writes, so a
        // reader left on s1's binlog would never see them.
        c.script(&["promote", "2"]);
        c.script(&["stop-sql", "1"]);
        let promoted = Instant::now();
        let mut i = 100;
        write_until_it_moves(
            &mut writer,
            1,
            &mut i,
            Duration::from_secs(5),
            "writes never moved",
        )
        .await;
        assert_eq!(get(&mut reader, 1, 1).await, format!("0|2|1|{i}"));
        for k in 1..=30 {
            c.sql(
                1,
                &format!("UPDATE hsdtest.rr_cache SET v = {k} WHERE id = 2"),
            );
            for _ in 0..2 {
                assert_eq!(
                    get(&mut reader, 1, 2).await,
                    format!("0|2|2|{k}"),
                    "a read after a commit on the new primary"
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let before = hits();
        let took = loop {
            assert_eq!(get(&mut reader, 1, 2).await, "0|2|2|30");
            if hits() > before {
                break promoted.elapsed();
            }
            assert!(
                promoted.elapsed() < Duration::from_secs(10),
                "the cache never served again after the switch"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        eprintln!("row cache serving again {took:?} after the promotion");
    });
    assert!(
        hsd.unlabelled("hsd_row_cache_primary_changes_total") >= 1.0,
        "no change of primary counted"
    );
    assert!(
        hsd.log().contains("row cache: the primary changed"),
        "no log line for the change"
    );
}
