//! The topology's decisions, as pure functions of what the polls saw: which
//! server takes writes, what each server may do, and where a read runs.
//! Nothing here does I/O or keeps state, so every rule is tested directly.
//!
//! Roles are learnt from the servers, never guessed: the server with
//! `read_only = OFF` takes the writes; a replica serves reads when its
//! applied position covers every write hsd acknowledged (the frontier); a
//! Galera node serves reads only while Synced in the primary component, and
//! only through SELECT with `wsrep_sync_wait` (see `Role::GaleraPeer`).

use super::observe::Observation;
use mysql_wire::GtidSet;

/// What the last poll of a server said.
// One per configured server, replaced once a poll: its size costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Health {
    /// Not polled yet.
    Unknown,
    /// The poll failed: unreachable, or an unreadable answer.
    Down(String),
    Up(Observation),
}

impl Health {
    pub(crate) fn observation(&self) -> Option<&Observation> {
        match self {
            Health::Up(o) => Some(o),
            _ => None,
        }
    }
}

/// Which server takes writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Writer {
    One(usize),
    /// No server may take writes; why.
    None(String),
    /// More than one writable server that are not one Galera cluster:
    /// writes are refused until only one is left.
    Conflict(Vec<usize>),
}

/// What a server is used for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Role {
    /// Takes the writes (and the reads that no replica may serve).
    Primary,
    /// An asynchronous replica: serves a read when its applied position
    /// covers the frontier.
    Replica,
    /// A Synced node of the writer's Galera cluster: serves reads, made
    /// causal by `wsrep_sync_wait`, which only SELECT honours (a HANDLER
    /// read on it could miss a write acknowledged on the writer).
    GaleraPeer,
    /// Not used; why (for logs and metrics).
    Unusable(String),
}

impl Role {
    /// A short name for metrics labels.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Replica => "replica",
            Role::GaleraPeer => "galera_peer",
            Role::Unusable(_) => "unusable",
        }
    }
}

/// Chooses the writer. `previous` is the writer chosen last (the
/// `--backend` server before any poll): it keeps the writes while it is
/// unreachable and nobody else is writable (writes to it then fail on
/// their own, within --mysql-timeout), and among the nodes of one Galera
/// cluster it stays the writer while usable, so writes do not hop between
/// nodes and conflict.
/// Per server, the earlier configured server it is the same server as
/// (one server under two addresses): it is used once, under its first.
pub(crate) fn same_as(servers: &[Health]) -> Vec<Option<usize>> {
    let id = |i: usize| servers[i].observation()?.identity.as_deref();
    (0..servers.len())
        .map(|i| {
            let mine = id(i)?;
            (0..i).find(|&j| id(j) == Some(mine))
        })
        .collect()
}

pub(crate) fn choose_writer(servers: &[Health], previous: Option<usize>) -> Writer {
    // Not polled yet (the first polls finish one by one): no news.
    if let Some(p) = previous {
        if matches!(servers.get(p), Some(Health::Unknown)) {
            return Writer::One(p);
        }
    }
    // Writable and fit to write: read_only off, and a Galera node Synced;
    // a server configured twice counts once.
    let same = same_as(servers);
    let candidates: Vec<usize> = servers
        .iter()
        .enumerate()
        .filter(|(i, _)| same[*i].is_none())
        .filter_map(|(i, h)| {
            let o = h.observation()?;
            let fit = !o.read_only && o.galera.as_ref().is_none_or(|g| g.usable());
            fit.then_some(i)
        })
        .collect();
    // Writable servers that are one Galera cluster are one group; each
    // other writable server is a group of its own.
    let cluster = |i: usize| {
        servers[i]
            .observation()
            .and_then(|o| o.galera.as_ref())
            .map(|g| g.cluster_uuid.as_str())
            .filter(|u| !u.is_empty())
    };
    let one_group = match candidates.as_slice() {
        [] => None,
        [_] => Some(()),
        [first, rest @ ..] => {
            let c = cluster(*first);
            (c.is_some() && rest.iter().all(|&i| cluster(i) == c)).then_some(())
        }
    };
    match (candidates.is_empty(), one_group) {
        (true, _) => match previous {
            Some(p) if !matches!(servers.get(p), Some(Health::Up(_)) | None) => Writer::One(p),
            _ => Writer::None(if servers.iter().any(|h| matches!(h, Health::Up(_))) {
                "no reachable server is writable (read_only is ON everywhere, or the \
                 writable Galera nodes are not Synced)"
                    .into()
            } else {
                "no server is reachable".into()
            }),
        },
        (false, Some(())) => match previous {
            Some(p) if candidates.contains(&p) => Writer::One(p),
            _ => Writer::One(candidates[0]),
        },
        (false, None) => Writer::Conflict(candidates),
    }
}

/// Each server's role, given the writer.
pub(crate) fn roles(servers: &[Health], writer: &Writer) -> Vec<Role> {
    let writer_at = match writer {
        Writer::One(w) => Some(*w),
        _ => None,
    };
    let writer_obs = writer_at.and_then(|w| servers.get(w)?.observation());
    let writer_cluster = writer_obs
        .and_then(|o| o.galera.as_ref())
        .map(|g| g.cluster_uuid.clone());
    let same = same_as(servers);
    servers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if let Some(j) = same[i] {
                return Role::Unusable(format!(
                    "the same server as configured server {} (one server, two addresses)",
                    j + 1
                ));
            }
            let o = match h {
                Health::Unknown => return Role::Unusable("not polled yet".into()),
                Health::Down(e) => return Role::Unusable(format!("unreachable: {e}")),
                Health::Up(o) => o,
            };
            if let Some(g) = &o.galera {
                if let Some(why) = g.why_unusable() {
                    return Role::Unusable(why);
                }
                if writer_at == Some(i) {
                    return Role::Primary;
                }
                return match (&writer_cluster, writer_at) {
                    // No writer (or one in conflict): the node is still
                    // causal within its own cluster.
                    (_, None) => Role::GaleraPeer,
                    (Some(c), _) if *c == g.cluster_uuid => Role::GaleraPeer,
                    _ => Role::Unusable("a Galera node outside the writer's cluster".into()),
                };
            }
            if writer_at == Some(i) {
                return Role::Primary;
            }
            if writer_obs.is_some_and(|w| w.galera.is_none() && !w.log_bin) {
                return Role::Unusable(
                    "the primary writes no binary log, so nothing replicates from it".into(),
                );
            }
            let writer_id = writer_obs.and_then(|w| w.server_id);
            match &o.replication {
                Some(r) if !r.sql_running => Role::Unusable(if r.last_error.is_empty() {
                    "replication SQL thread stopped".into()
                } else {
                    format!("replication SQL thread stopped: {}", r.last_error)
                }),
                // Its GTIDs may look ahead of the writer's while holding
                // transactions the writer never had (MariaDB compares a
                // domain's sequence numbers only).
                Some(r) if r.diverged.is_some() => Role::Unusable(format!(
                    "its source cannot send what it asks ({}): it holds transactions the \
                     writer does not, so its position proves nothing",
                    r.diverged.as_deref().unwrap_or_default()
                )),
                // Its position moves past the changes a filter skips: it
                // cannot prove it holds any table's (which tables a
                // filter keeps is not worked out: none are served).
                Some(r) if !r.filters.is_empty() => Role::Unusable(format!(
                    "replica-side filters ({}) may skip changes its position claims",
                    r.filters.join(", ")
                )),
                Some(r)
                    if r.source_server_id.is_some()
                        && writer_id.is_some()
                        && r.source_server_id != writer_id =>
                {
                    Role::Unusable(format!(
                        "it replicates from server_id {}, not from the writer (server_id {})",
                        r.source_server_id.unwrap_or_default(),
                        writer_id.unwrap_or_default()
                    ))
                }
                Some(_) => Role::Replica,
                None if !o.replication_visible => Role::Unusable(
                    "its replication status cannot be read (grant the account SLAVE MONITOR \
                     on MariaDB, REPLICATION CLIENT on MySQL)"
                        .into(),
                ),
                None if !o.read_only => Role::Unusable("writable, and not the primary".into()),
                None => Role::Unusable("read-only and not replicating".into()),
            }
        })
        .collect()
}

/// Where a read on the read port runs (with `--read-from replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadChoice {
    /// On this server, now.
    Run(usize),
    /// No replica has applied the frontier yet; these replicas may soon:
    /// wait for one (up to --replica-wait), else run on the primary.
    Wait(Vec<usize>),
    /// On the primary.
    Primary,
}

/// Chooses where a read runs: among the replicas whose `known` position
/// covers `frontier` and the Galera peers, the one with the fewest reads
/// in flight (ties broken by `turn`, so equal servers share the load).
/// `known[i]` is the best knowledge of server i's applied position (polls
/// and waits); `in_flight[i]` its reads running now.
pub(crate) fn choose_read(
    roles: &[Role],
    known: &[GtidSet],
    frontier: &GtidSet,
    in_flight: &[usize],
    turn: usize,
) -> ReadChoice {
    let n = roles.len();
    let mut best: Option<(usize, usize)> = None; // (in flight, server)
    let mut waitable = Vec::new();
    for k in 0..n {
        let i = (turn + k) % n.max(1);
        let ready = match roles[i] {
            Role::GaleraPeer => true,
            Role::Replica => {
                let covers = known.get(i).is_some_and(|p| p.covers(frontier));
                if !covers {
                    waitable.push(i);
                }
                covers
            }
            _ => false,
        };
        if ready {
            let load = in_flight.get(i).copied().unwrap_or(0);
            if best.is_none_or(|(b, _)| load < b) {
                best = Some((load, i));
            }
        }
    }
    match best {
        Some((_, i)) => ReadChoice::Run(i),
        None if !waitable.is_empty() => {
            waitable.sort_unstable();
            ReadChoice::Wait(waitable)
        }
        None => ReadChoice::Primary,
    }
}

#[cfg(test)]
mod tests {
    use super::super::observe::{Galera, Replication};
    use super::*;
    use mysql_wire::Flavor;

    fn pos(s: &str) -> GtidSet {
        GtidSet::parse_mariadb(s).unwrap()
    }

    fn primary(logged: &str) -> Health {
        Health::Up(Observation {
            flavor: Flavor::MariaDb,
            read_only: false,
            log_bin: true,
            applied: GtidSet::default(),
            logged: pos(logged),
            replication: None,
            identity: None,
            server_id: None,
            replication_visible: true,
            galera: None,
        })
    }

    fn replica(applied: &str, sql_running: bool) -> Health {
        Health::Up(Observation {
            flavor: Flavor::MariaDb,
            read_only: true,
            log_bin: true,
            applied: pos(applied),
            logged: pos(applied),
            replication: Some(Replication {
                sql_running,
                io_running: true,
                seconds_behind: Some(0),
                last_error: String::new(),
                diverged: None,
                source_server_id: None,
                filters: Vec::new(),
            }),
            identity: None,
            server_id: None,
            replication_visible: true,
            galera: None,
        })
    }

    fn writable(h: Health) -> Health {
        match h {
            Health::Up(mut o) => {
                o.read_only = false;
                Health::Up(o)
            }
            h => h,
        }
    }

    fn galera(uuid: &str, state: &str, primary_component: bool) -> Health {
        Health::Up(Observation {
            flavor: Flavor::MariaDb,
            read_only: false,
            log_bin: false,
            applied: GtidSet::default(),
            logged: GtidSet::default(),
            replication: None,
            identity: None,
            server_id: None,
            replication_visible: true,
            galera: Some(Galera {
                ready: primary_component,
                state: state.into(),
                primary_component,
                cluster_uuid: uuid.into(),
                recv_queue: 0,
            }),
        })
    }

    fn down() -> Health {
        Health::Down("connection refused".into())
    }

    #[test]
    fn the_writable_server_writes() {
        let s = [
            primary("0-1-5"),
            replica("0-1-5", true),
            replica("0-1-4", true),
        ];
        assert_eq!(choose_writer(&s, Some(0)), Writer::One(0));
        let w = choose_writer(&s, None);
        assert_eq!(w, Writer::One(0));
        assert_eq!(
            roles(&s, &w),
            vec![Role::Primary, Role::Replica, Role::Replica]
        );
    }

    #[test]
    fn primary_down_keeps_writes_pointed_at_it_until_another_is_writable() {
        let s = [down(), replica("0-1-5", true), replica("0-1-5", true)];
        let w = choose_writer(&s, Some(0));
        assert_eq!(w, Writer::One(0));
        let r = roles(&s, &w);
        assert!(matches!(r[0], Role::Unusable(_)));
        // The replicas keep serving (their I/O threads may be reconnecting).
        assert_eq!(r[1..], [Role::Replica, Role::Replica]);
        // Nobody known yet, nothing reachable.
        assert!(matches!(
            choose_writer(&[down(), down()], None),
            Writer::None(_)
        ));
        assert_eq!(
            choose_writer(&[Health::Unknown, down()], Some(0)),
            Writer::One(0)
        );
    }

    #[test]
    fn a_promoted_replica_takes_the_writes() {
        // s2 promoted: replication reset, read_only off; s1 gone.
        let s = [down(), primary("0-2-9"), replica("0-2-9", true)];
        assert_eq!(choose_writer(&s, Some(0)), Writer::One(1));
        // The old primary came back read-only (a switchover).
        let mut old = replica("0-2-9", true);
        if let Health::Up(o) = &mut old {
            o.replication = None;
        }
        let s = [old, primary("0-2-9"), replica("0-2-9", true)];
        let w = choose_writer(&s, Some(0));
        assert_eq!(w, Writer::One(1));
        assert_eq!(
            roles(&s, &w)[0],
            Role::Unusable("read-only and not replicating".into())
        );
    }

    /// After a failover, a replica whose source cannot send it what it asks
    /// (it applied transactions the promoted server never got) or that
    /// still follows another server serves no reads: its GTIDs compare as
    /// covering the writer's while its data does not.
    #[test]
    fn replicas_that_diverged_or_follow_another_source_serve_nothing() {
        let with = |h: Health, f: &dyn Fn(&mut Observation)| match h {
            Health::Up(mut o) => {
                f(&mut o);
                Health::Up(o)
            }
            h => h,
        };
        let writer = with(primary("0-2-16"), &|o| o.server_id = Some(2));
        let following = |source: u64| {
            with(replica("0-2-16", true), &move |o| {
                if let Some(r) = o.replication.as_mut() {
                    r.source_server_id = Some(source);
                }
            })
        };
        let ahead = with(replica("0-1-315", true), &|o| {
            if let Some(r) = o.replication.as_mut() {
                r.io_running = false;
                r.diverged = Some("error 1236: ahead".into());
                r.source_server_id = Some(2);
            }
        });
        let filtered = with(following(2), &|o| {
            if let Some(r) = o.replication.as_mut() {
                r.filters = vec!["Replicate_Wild_Ignore_Table=hsdtest.t%".into()];
            }
        });
        let s = [writer, following(2), ahead, following(1), filtered];
        let w = choose_writer(&s, Some(0));
        assert_eq!(w, Writer::One(0));
        let r = roles(&s, &w);
        assert_eq!(r[1], Role::Replica);
        assert!(
            matches!(&r[2], Role::Unusable(why) if why.contains("1236")),
            "{:?}",
            r[2]
        );
        assert!(
            matches!(&r[3], Role::Unusable(why) if why.contains("server_id 1")),
            "{:?}",
            r[3]
        );
        assert!(
            matches!(&r[4], Role::Unusable(why) if why.contains("replica-side filters")),
            "{:?}",
            r[4]
        );
        // The writer down: its replicas keep serving what they applied.
        let s = [Health::Down("gone".into()), following(2)];
        let r = roles(&s, &choose_writer(&s, Some(0)));
        assert_eq!(r[1], Role::Replica);
    }

    fn known_as(h: Health, id: &str) -> Health {
        match h {
            Health::Up(mut o) => {
                o.identity = Some(id.into());
                Health::Up(o)
            }
            h => h,
        }
    }

    /// `--backend 127.0.0.1:P --replica localhost:P`: one server, used
    /// once; it takes the writes and is not a replica of itself.
    #[test]
    fn one_server_under_two_addresses_is_one_server() {
        let s = [
            known_as(primary("0-1-5"), "h:3306:/data"),
            known_as(primary("0-1-5"), "h:3306:/data"),
            known_as(replica("0-1-5", true), "h:3307:/data2"),
        ];
        assert_eq!(same_as(&s), [None, Some(0), None]);
        let w = choose_writer(&s, Some(0));
        assert_eq!(w, Writer::One(0));
        let r = roles(&s, &w);
        assert_eq!(r[0], Role::Primary);
        assert!(matches!(&r[1], Role::Unusable(why) if why.contains("same server")));
        assert_eq!(r[2], Role::Replica);
        // Two servers that only look alike (identity unknown) still count twice.
        let s = [primary("0-1-5"), primary("0-1-5")];
        assert_eq!(choose_writer(&s, Some(0)), Writer::Conflict(vec![0, 1]));
    }

    #[test]
    fn two_writable_servers_refuse_writes() {
        let s = [
            primary("0-1-5"),
            writable(replica("0-1-5", true)),
            replica("0-1-5", true),
        ];
        let w = choose_writer(&s, Some(0));
        assert_eq!(w, Writer::Conflict(vec![0, 1]));
        // Reads still have their replicas (a writable replica that still
        // replicates is one), and no server is the primary.
        let r = roles(&s, &w);
        assert_eq!(r[1..], [Role::Replica, Role::Replica]);
        assert!(matches!(r[0], Role::Unusable(_)));
        // Read-only again: back to one writer.
        let s = [
            primary("0-1-5"),
            replica("0-1-5", true),
            replica("0-1-5", true),
        ];
        assert_eq!(choose_writer(&s, Some(0)), Writer::One(0));
    }

    #[test]
    fn everything_read_only_means_no_writer() {
        let s = [replica("0-1-5", true), replica("0-1-5", true)];
        assert!(matches!(choose_writer(&s, Some(0)), Writer::None(_)));
    }

    #[test]
    fn stopped_sql_thread_or_invisible_status_is_unusable() {
        let mut hidden = replica("0-1-5", true);
        if let Health::Up(o) = &mut hidden {
            o.replication = None;
            o.replication_visible = false;
        }
        let s = [primary("0-1-5"), replica("0-1-5", false), hidden];
        let r = roles(&s, &Writer::One(0));
        assert!(matches!(&r[1], Role::Unusable(w) if w.contains("SQL thread")));
        assert!(matches!(&r[2], Role::Unusable(w) if w.contains("SLAVE MONITOR")));
    }

    #[test]
    fn primary_without_binary_log_has_no_usable_replicas() {
        let mut p = primary("");
        if let Health::Up(o) = &mut p {
            o.log_bin = false;
        }
        let s = [p, replica("0-1-5", true)];
        let r = roles(&s, &Writer::One(0));
        assert!(matches!(&r[1], Role::Unusable(w) if w.contains("binary log")));
    }

    #[test]
    fn galera_writes_to_one_node_and_reads_on_synced_peers() {
        let s = [
            galera("c1", "Synced", true),
            galera("c1", "Synced", true),
            galera("c1", "Synced", true),
        ];
        // Three writable nodes of one cluster are no conflict.
        let w = choose_writer(&s, Some(0));
        assert_eq!(w, Writer::One(0));
        assert_eq!(
            roles(&s, &w),
            vec![Role::Primary, Role::GaleraPeer, Role::GaleraPeer]
        );
        // The writer stays where it is while usable.
        assert_eq!(choose_writer(&s, Some(2)), Writer::One(2));
        // The first polls finish one by one: a peer polled before the
        // writer does not take the writes.
        let s = [
            Health::Unknown,
            galera("c1", "Synced", true),
            Health::Unknown,
        ];
        assert_eq!(choose_writer(&s, Some(0)), Writer::One(0));
        // A desynced node and one outside the primary component are not used.
        let s = [
            galera("c1", "Synced", true),
            galera("c1", "Donor/Desynced", true),
            galera("c1", "Initialized", false),
        ];
        let w = choose_writer(&s, Some(0));
        assert_eq!(w, Writer::One(0));
        let r = roles(&s, &w);
        assert!(matches!(&r[1], Role::Unusable(w) if w.contains("Desynced")));
        assert!(matches!(&r[2], Role::Unusable(w) if w.contains("primary component")));
        // The writer node fails: the next Synced node takes over.
        let s = [
            down(),
            galera("c1", "Synced", true),
            galera("c1", "Synced", true),
        ];
        assert_eq!(choose_writer(&s, Some(0)), Writer::One(1));
        // Two different clusters, both writable: a conflict.
        let s = [galera("c1", "Synced", true), galera("c2", "Synced", true)];
        assert_eq!(choose_writer(&s, Some(0)), Writer::Conflict(vec![0, 1]));
        // A Galera node and a plain server, both writable: a conflict.
        let s = [galera("c1", "Synced", true), primary("0-1-1")];
        assert_eq!(choose_writer(&s, Some(0)), Writer::Conflict(vec![0, 1]));
    }

    #[test]
    fn reads_go_to_a_caught_up_replica_least_busy_first() {
        let roles = [Role::Primary, Role::Replica, Role::Replica];
        let known = [pos("0-1-10"), pos("0-1-10"), pos("0-1-10")];
        let f = pos("0-1-10");
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 3, 1], 0),
            ReadChoice::Run(2)
        );
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 1, 3], 0),
            ReadChoice::Run(1)
        );
        // Equal load: the turn spreads reads.
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 0, 0], 1),
            ReadChoice::Run(1)
        );
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 0, 0], 2),
            ReadChoice::Run(2)
        );
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 0, 0], 0),
            ReadChoice::Run(1)
        );
        // Only one has the frontier.
        let known = [pos("0-1-10"), pos("0-1-9"), pos("0-1-10")];
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 0, 9], 0),
            ReadChoice::Run(2)
        );
    }

    #[test]
    fn reads_wait_when_no_replica_has_the_frontier() {
        let roles = [Role::Primary, Role::Replica, Role::Replica];
        let known = [pos("0-1-10"), pos("0-1-9"), pos("0-1-8")];
        let f = pos("0-1-10");
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 0, 0], 2),
            ReadChoice::Wait(vec![1, 2])
        );
        // No replica in a state to catch up: the primary.
        let roles = [
            Role::Primary,
            Role::Unusable("replication SQL thread stopped".into()),
            Role::Unusable("unreachable".into()),
        ];
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 0, 0], 0),
            ReadChoice::Primary
        );
        // A stopped SQL thread never serves, even when its position would do.
        let known = [pos("0-1-10"), pos("0-1-10"), pos("0-1-10")];
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 0, 0], 0),
            ReadChoice::Primary
        );
    }

    #[test]
    fn galera_peers_need_no_position() {
        let roles = [Role::Primary, Role::GaleraPeer, Role::GaleraPeer];
        let known = [GtidSet::default(), GtidSet::default(), GtidSet::default()];
        let f = pos("0-1-10");
        assert_eq!(
            choose_read(&roles, &known, &f, &[0, 2, 1], 0),
            ReadChoice::Run(2)
        );
    }
}
