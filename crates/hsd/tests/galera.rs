//! hsd in front of a 3-node Galera cluster (scripts/galera.sh; node 0 is
//! `--backend`, the others `--replica`): what the topology sees, and what
//! clients see when reads go to the other nodes and nodes fail.

mod cluster;

use cluster::{eventually, Cluster, Kind, Restore};
use hsd::backend::mysql::topology::decide::Role;
use hsd::backend::mysql::topology::{ReadFrom, ServerSpec, Topology, TopologySettings};
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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The topology alone (no hsd): one writer among three writable nodes,
/// reads on the Synced peers (causal SELECTs), a desynced or isolated node
/// left out, the writer moving when its node goes.
#[test]
fn topology_follows_the_nodes() {
    let Some(c) = Cluster::get(Kind::Galera) else {
        return;
    };
    let _serial = Cluster::lock();
    runtime().block_on(async {
        c.settle();
        let mut restore = Restore::new(&c);
        let t = topology(&c, ReadFrom::Replicas, Duration::from_millis(200)).await;
        assert_eq!(
            t.roles(),
            vec![Role::Primary, Role::GaleraPeer, Role::GaleraPeer]
        );
        assert_eq!(t.writer().ok(), Some(0));
        let r = t.route_read(&t.frontier(), 1).await;
        assert!(
            r.server != 0 && r.causal_select,
            "{} {}",
            r.server,
            r.causal_select
        );
        drop(r);

        // Desynced: not Synced, not used.
        restore.then(&["resync", "2"]);
        c.script(&["desync", "2"]);
        eventually(
            Duration::from_secs(2),
            "node 2 unusable",
            || matches!(&t.roles()[1], Role::Unusable(w) if w.contains("Desynced")),
        );
        for _ in 0..10 {
            assert_eq!(t.route_read(&t.frontier(), 1).await.server, 2);
        }
        c.script(&["resync", "2"]);
        eventually(Duration::from_secs(3), "node 2 back", || {
            t.roles()[1] == Role::GaleraPeer
        });

        // Cut off from the others: it leaves the primary component.
        restore.then(&["rejoin", "3"]);
        c.script(&["isolate", "3"]);
        let took = eventually(Duration::from_secs(10), "node 3 unusable", || {
            matches!(&t.roles()[2], Role::Unusable(_))
        });
        eprintln!("an isolated node was left out after {took:?}");
        c.script(&["rejoin", "3"]);
        eventually(Duration::from_secs(5), "node 3 back", || {
            t.roles()[2] == Role::GaleraPeer
        });

        // The writer's node goes: the next Synced node writes.
        restore.then(&["start-node", "1"]);
        c.script(&["stop-node", "1"]);
        let took = eventually(Duration::from_secs(3), "writer moved", || {
            t.writer().ok() == Some(1)
        });
        eprintln!("writes moved to node 2 after {took:?}");
        assert_eq!(t.roles()[2], Role::GaleraPeer);
        c.script(&["start-node", "1"]);
        eventually(Duration::from_secs(3), "node 1 back as a peer", || {
            t.roles()[0] == Role::GaleraPeer
        });
        // The writer stays off node 1 (it may have moved on to node 3
        // while node 2 was the donor of node 1's state transfer).
        assert!(matches!(t.writer().ok(), Some(1 | 2)), "{:?}", t.writer());
        t.shut_down();
    });
}
