//! hsd in front of a replicated MariaDB (scripts/replication.sh: a GTID
//! primary, server 0 here, with two replicas): what the topology sees, and
//! what clients see when reads go to replicas and servers fail.

mod cluster;

use cluster::{eventually, Cluster, Kind, Restore};
use hsd::backend::mysql::topology::decide::Role;
use hsd::backend::mysql::topology::gtid::Position;
use hsd::backend::mysql::topology::{Commit, ReadFrom, ServerSpec, Topology, TopologySettings};
use std::sync::Arc;
use std::time::Duration;

async fn topology(c: &Cluster, read_from: ReadFrom, interval: Duration) -> Arc<Topology> {
    let servers = c
        .urls
        .iter()
        .enumerate()
        .map(|(i, u)| ServerSpec {
            url: mysql_wire::MysqlUrl::parse(u).expect("url"),
            name: c.address(i),
        })
        .collect();
    Topology::start(
        TopologySettings {
            servers,
            read_from,
            interval,
            replica_wait: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
        },
        &prometheus::Registry::new(),
    )
    .await
    .expect("topology")
}

/// The topology alone (no hsd): roles from the servers, a stopped SQL
/// thread, two writable servers, and a read that waits for a replica.
#[test]
fn topology_follows_the_servers() {
    let Some(c) = Cluster::get(Kind::Replication) else {
        return;
    };
    let _serial = Cluster::lock();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(topology_follows_the_servers_on(&c));
}

async fn topology_follows_the_servers_on(c: &Cluster) {
    c.settle();
    let mut restore = Restore::new(c);
    let t = topology(c, ReadFrom::Replicas, Duration::from_millis(200)).await;
    assert_eq!(t.roles(), vec![Role::Primary, Role::Replica, Role::Replica]);
    assert_eq!(t.writer().ok(), Some(0));

    // A stopped SQL thread: not used, seen within a poll.
    restore.then(&["start-sql", "2"]);
    c.script(&["stop-sql", "2"]);
    eventually(
        Duration::from_secs(2),
        "s2 unusable",
        || matches!(&t.roles()[1], Role::Unusable(w) if w.contains("SQL thread")),
    );
    c.script(&["start-sql", "2"]);
    eventually(Duration::from_secs(2), "s2 a replica again", || {
        t.roles()[1] == Role::Replica
    });

    // Two writable servers: writes refused until one is read-only again.
    restore.then(&["read-only", "3", "on"]);
    c.script(&["read-only", "3", "off"]);
    eventually(Duration::from_secs(2), "writes refused", || {
        t.writer().is_err()
    });
    let e = t.writer().unwrap_err().to_string();
    assert!(e.contains("all writable"), "{e}");
    c.script(&["read-only", "3", "on"]);
    eventually(Duration::from_secs(2), "writes back on s1", || {
        t.writer().ok() == Some(0)
    });

    // A write the replicas have not applied: a read waits for one.
    restore.then(&["start-sql", "3"]);
    c.script(&["stop-sql", "2"]);
    c.script(&["stop-sql", "3"]);
    // Wait for the polls to see the stopped threads, then restart them with
    // the replicas behind: they are replicas again, not caught up.
    eventually(Duration::from_secs(2), "replicas unusable", || {
        t.roles()[1..]
            .iter()
            .all(|r| matches!(r, Role::Unusable(_)))
    });
    c.sql(0, "CREATE DATABASE IF NOT EXISTS hsdtest; CREATE TABLE IF NOT EXISTS hsdtest.topo (id INT PRIMARY KEY, v INT); REPLACE INTO hsdtest.topo VALUES (1, 1)");
    let gtid = c.value(0, "SELECT @@gtid_binlog_pos").expect("gtid");
    t.note_commit(0, Commit::Gtid(gtid.as_bytes()));
    let frontier = t.frontier();
    assert_eq!(*frontier, Position::parse_mariadb(&gtid).unwrap());
    // Nobody has it and nobody can catch up: the primary, at once.
    let r = t.route_read(&frontier, 1).await;
    assert_eq!(r.server, 0);
    drop(r);
    c.script(&["start-sql", "2"]);
    c.script(&["start-sql", "3"]);
    eventually(Duration::from_secs(3), "replicas back", || {
        t.roles()[1..].iter().all(|r| *r == Role::Replica)
    });
    let r = t.route_read(&frontier, 1).await;
    assert!(r.server == 1 || r.server == 2, "ran on {}", r.server);
    drop(r);

    // Writes followed at once by reads: the reads run on a replica after
    // waiting for it (MASTER_GTID_WAIT), never on the primary.
    for i in 0..20 {
        c.sql(0, &format!("REPLACE INTO hsdtest.topo VALUES (1, {i})"));
        let gtid = c.value(0, "SELECT @@gtid_binlog_pos").expect("gtid");
        t.note_commit(0, Commit::Gtid(gtid.as_bytes()));
        let started = std::time::Instant::now();
        let r = t.route_read(&t.frontier(), 1).await;
        assert!(r.server != 0, "read {i} fell back to the primary");
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "read {i} waited {:?}",
            started.elapsed()
        );
    }

    // Replicas 3 s behind: after --replica-wait (1 s), the primary.
    restore.then(&["delay", "2", "0"]);
    restore.then(&["delay", "3", "0"]);
    c.script(&["delay", "2", "3"]);
    c.script(&["delay", "3", "3"]);
    eventually(Duration::from_secs(3), "delayed replicas polled", || {
        t.roles()[1..].iter().all(|r| *r == Role::Replica)
    });
    c.sql(0, "REPLACE INTO hsdtest.topo VALUES (1, 100)");
    let gtid = c.value(0, "SELECT @@gtid_binlog_pos").expect("gtid");
    t.note_commit(0, Commit::Gtid(gtid.as_bytes()));
    let started = std::time::Instant::now();
    let r = t.route_read(&t.frontier(), 1).await;
    let waited = started.elapsed();
    assert_eq!(r.server, 0);
    assert!(
        waited >= Duration::from_millis(950) && waited < Duration::from_millis(1500),
        "waited {waited:?}"
    );
    drop(r);
    t.shut_down();
}
