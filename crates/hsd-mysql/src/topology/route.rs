//! Read routing: where a find of the read port runs (`route_read`), waiting
//! for a replica to apply what the read must see, and the count of reads in
//! flight on each server that spreads them.

use super::decide::{self, ReadChoice};
use super::{lock, ReadFrom, Server, State, Topology};
use mysql_wire::GtidSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Where a read runs, and its place among the server's reads in flight
/// (held until the read is done).
pub struct ReadRoute {
    pub(crate) server: usize,
    _in_flight: InFlight,
}

/// A read's registration as waiting for some servers (`route_read`).
struct Waiting<'a> {
    topology: &'a Topology,
    servers: Vec<usize>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.servers.is_empty() {
            return;
        }
        let mut st = lock(&self.topology.state);
        for &c in &self.servers {
            st.waiting[c] = st.waiting[c].saturating_sub(1);
            if st.waiting[c] == 0 {
                st.demand[c] = GtidSet::default();
            }
        }
    }
}

struct InFlight {
    topology: Arc<Topology>,
    server: usize,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.topology.servers[self.server]
            .in_flight
            .fetch_sub(1, Ordering::Relaxed);
    }
}

impl Topology {
    /// Where a find of the read port runs (`finds`: how many, for the
    /// metrics). With `--read-from replicas`, on a replica that has applied
    /// `frontier` (the least busy), waiting up to `--replica-wait` for one
    /// to catch up; else on the primary.
    pub(crate) async fn route_read(
        self: &Arc<Self>,
        frontier: &GtidSet,
        finds: usize,
    ) -> ReadRoute {
        if self.settings.read_from == ReadFrom::Primary {
            let p = lock(&self.state).read_primary();
            return self.route_to(p, finds);
        }
        let deadline = tokio::time::Instant::now() + self.settings.replica_wait;
        // The replicas this read waits for; they stop being asked when it
        // is done, or dropped (its client went away).
        let mut waiting_on = Waiting {
            topology: self,
            servers: Vec::new(),
        };
        let route = loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let choice = {
                let mut st = lock(&self.state);
                let choice = st.choose_read(frontier, &self.servers);
                if let ReadChoice::Wait(candidates) = &choice {
                    // Ask the candidates to report once they have it.
                    for &c in candidates {
                        if !waiting_on.servers.contains(&c) {
                            waiting_on.servers.push(c);
                            st.waiting[c] += 1;
                            st.demand[c].merge(frontier);
                            self.servers[c].demand_added.notify_one();
                        }
                    }
                }
                (choice, st.read_primary())
            };
            match choice {
                (ReadChoice::Run(i), _) => {
                    if !waiting_on.servers.is_empty() {
                        self.servers[i].metrics.waits.inc();
                    }
                    break self.route_to(i, finds);
                }
                (ReadChoice::Primary, p) => {
                    self.servers[p].metrics.fallbacks.inc();
                    break self.route_to(p, finds);
                }
                (ReadChoice::Wait(_), p) => {
                    if tokio::time::Instant::now() >= deadline {
                        self.servers[p].metrics.fallbacks.inc();
                        break self.route_to(p, finds);
                    }
                    tokio::select! {
                        _ = &mut changed => {}
                        _ = tokio::time::sleep_until(deadline) => {}
                    }
                }
            }
        };
        route
    }

    fn route_to(self: &Arc<Self>, server: usize, finds: usize) -> ReadRoute {
        let s = &self.servers[server];
        s.in_flight.fetch_add(1, Ordering::Relaxed);
        s.metrics.reads.inc_by(finds as u64);
        ReadRoute {
            server,
            _in_flight: InFlight {
                topology: self.clone(),
                server,
            },
        }
    }
}

impl State {
    fn choose_read(&mut self, frontier: &GtidSet, servers: &[Server]) -> ReadChoice {
        if self.untracked_since.is_some() {
            return ReadChoice::Primary;
        }
        let in_flight: Vec<usize> = servers
            .iter()
            .map(|s| s.in_flight.load(Ordering::Relaxed))
            .collect();
        self.turn = self.turn.wrapping_add(1);
        decide::choose_read(&self.roles, &self.known, frontier, &in_flight, self.turn)
    }
}

#[cfg(test)]
mod tests {
    //! Routing with the topology fed by hand (see the topology's tests).
    use super::super::tests::{poll_all, pos, rt, topology};
    use super::super::{lock, Commit, ReadFrom};
    use std::time::{Duration, Instant};

    #[test]
    fn reads_go_to_replicas_that_have_the_frontier() {
        let t = topology(ReadFrom::Replicas, 1000);
        poll_all(&t, "0-1-10", "0-1-10", "0-1-9");
        t.note_commit(0, Commit::Gtid(b"0-1-10"));
        rt().block_on(async {
            for _ in 0..4 {
                assert_eq!(t.route_read(&t.frontier(), 1).await.server, 1);
            }
            // Both caught up: they take turns (or the less busy one).
            poll_all(&t, "0-1-10", "0-1-10", "0-1-10");
            let a = t.route_read(&t.frontier(), 1).await;
            let b = t.route_read(&t.frontier(), 1).await;
            assert_ne!(a.server, b.server, "the busier replica was chosen");
        });
    }

    #[test]
    fn a_read_waits_until_a_replica_reports_the_position() {
        let t = topology(ReadFrom::Replicas, 1000);
        poll_all(&t, "0-1-10", "0-1-9", "0-1-9");
        t.note_commit(0, Commit::Gtid(b"0-1-10"));
        let rt = rt();
        let started = Instant::now();
        let route = rt.block_on(async {
            let reporter = {
                let t = t.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    // The wait task asked s3: it has it now.
                    assert_eq!(lock(&t.state).waiting, vec![0, 1, 1]);
                    t.apply_wait(2, &pos("0-1-10"));
                })
            };
            let route = t.route_read(&t.frontier(), 1).await;
            reporter.await.expect("reporter");
            route
        });
        assert_eq!(route.server, 2);
        assert!(started.elapsed() < Duration::from_millis(500));
        // Nobody waits any more: the wait tasks are asked nothing.
        let st = lock(&t.state);
        assert_eq!(st.waiting, vec![0, 0, 0]);
        assert!(st.demand.iter().all(|d| d.is_empty()));
        drop(st);
        assert_eq!(t.servers[2].metrics.waits.get(), 1);
    }

    #[test]
    fn a_read_nobody_catches_up_for_runs_on_the_primary_after_the_wait() {
        let t = topology(ReadFrom::Replicas, 150);
        poll_all(&t, "0-1-10", "0-1-9", "0-1-9");
        t.note_commit(0, Commit::Gtid(b"0-1-10"));
        let started = Instant::now();
        let route = rt().block_on(t.route_read(&t.frontier(), 1));
        assert_eq!(route.server, 0);
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert_eq!(t.servers[0].metrics.fallbacks.get(), 1);
    }

    #[test]
    fn a_read_given_up_leaves_no_demand_behind() {
        let t = topology(ReadFrom::Replicas, 5000);
        poll_all(&t, "0-1-10", "0-1-9", "0-1-9");
        t.note_commit(0, Commit::Gtid(b"0-1-10"));
        rt().block_on(async {
            let gave_up =
                tokio::time::timeout(Duration::from_millis(50), t.route_read(&t.frontier(), 1))
                    .await;
            assert!(gave_up.is_err());
        });
        let st = lock(&t.state);
        assert_eq!(st.waiting, vec![0, 0, 0]);
        assert!(st.demand.iter().all(|d| d.is_empty()));
    }
}
