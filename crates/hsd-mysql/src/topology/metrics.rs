//! The topology's Prometheus metrics: per configured server, its role,
//! its lag behind the primary, and where the read port's finds ran.

use super::decide::Role;
use prometheus::{IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

/// The role labels of the `server_role` metric, in `role_index` order.
const ROLE_LABELS: [&str; 4] = ["primary", "replica", "galera_peer", "unusable"];

pub(super) fn role_index(r: &Role) -> usize {
    match r {
        Role::Primary => 0,
        Role::Replica => 1,
        Role::GaleraPeer => 2,
        Role::Unusable(_) => 3,
    }
}

pub(super) struct ServerMetrics {
    /// One gauge per `ROLE_LABELS` entry: 1 for the current role.
    pub(super) roles: [IntGauge; 4],
    pub(super) lag_seconds: IntGauge,
    pub(super) lag_transactions: IntGauge,
    pub(super) reads: IntCounter,
    pub(super) waits: IntCounter,
    pub(super) fallbacks: IntCounter,
}

/// The topology's metric families.
pub(super) struct TopologyMetrics {
    role: IntGaugeVec,
    lag_seconds: IntGaugeVec,
    lag_transactions: IntGaugeVec,
    reads: IntCounterVec,
    waits: IntCounterVec,
    fallbacks: IntCounterVec,
}

impl TopologyMetrics {
    pub(super) fn register(registry: &Registry) -> anyhow::Result<TopologyMetrics> {
        let role = IntGaugeVec::new(
            Opts::new(
                "server_role",
                "1 for each configured MySQL server's current role (primary, replica, galera_peer, unusable)",
            ),
            &["server", "role"],
        )?;
        let lag_seconds = IntGaugeVec::new(
            Opts::new(
                "server_lag_seconds",
                "A replica's Seconds_Behind_Master at the last poll (-1: unknown)",
            ),
            &["server"],
        )?;
        let lag_transactions = IntGaugeVec::new(
            Opts::new(
                "server_lag_transactions",
                "Transactions of the primary a replica has not applied, at the last poll \
                 (Galera: write sets received and not applied; -1: unknown)",
            ),
            &["server"],
        )?;
        let reads = IntCounterVec::new(
            Opts::new(
                "server_reads_total",
                "Finds of the read port run on this server",
            ),
            &["server"],
        )?;
        let waits = IntCounterVec::new(
            Opts::new(
                "server_read_waits_total",
                "Read batches that waited for a replica to apply hsd's writes, then ran on this one",
            ),
            &["server"],
        )?;
        let fallbacks = IntCounterVec::new(
            Opts::new(
                "server_read_fallbacks_total",
                "Read batches no replica could serve in time, run on this server as the primary",
            ),
            &["server"],
        )?;
        for c in [&role, &lag_seconds, &lag_transactions] {
            registry.register(Box::new(c.clone()))?;
        }
        for c in [&reads, &waits, &fallbacks] {
            registry.register(Box::new(c.clone()))?;
        }
        Ok(TopologyMetrics {
            role,
            lag_seconds,
            lag_transactions,
            reads,
            waits,
            fallbacks,
        })
    }

    pub(super) fn for_server(&self, name: &str) -> ServerMetrics {
        // Every role's series exists from the start (a scrape sees zeros,
        // not missing series); a server is unusable until polled.
        let roles = ROLE_LABELS.map(|r| {
            let g = self.role.with_label_values(&[name, r]);
            g.set(i64::from(r == "unusable"));
            g
        });
        ServerMetrics {
            roles,
            lag_seconds: self.lag_seconds.with_label_values(&[name]),
            lag_transactions: self.lag_transactions.with_label_values(&[name]),
            reads: self.reads.with_label_values(&[name]),
            waits: self.waits.with_label_values(&[name]),
            fallbacks: self.fallbacks.with_label_values(&[name]),
        }
    }
}
