//! The memcached door's counters, kept once and read two ways: as
//! Prometheus series (`hsd_memcached_commands_total{command,result}`,
//! `hsd_memcached_connections`, `hsd_memcached_connections_total`) and as
//! the general `stats` lines memcached answers and its dashboards and
//! exporters read (`cmd_get`, `get_hits`, `cmd_set`, `curr_connections`,
//! ...). Counted where the session runs a command, so the text, meta and
//! binary protocols count alike.

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry};

/// The store commands by the names memcached's stats give them.
pub(crate) const STORE_COMMANDS: [&str; 6] = ["set", "add", "replace", "append", "prepend", "cas"];

pub(crate) struct McCounters {
    commands: IntCounterVec,
    /// The hot ones, resolved once: label lookups hash strings.
    get_hit: IntCounter,
    get_miss: IntCounter,
    connections: IntGauge,
    connections_total: IntCounter,
    /// `stats reset`: the counters' values then, subtracted from what the
    /// stats lines show (the Prometheus series never go back).
    reset_at: std::sync::Mutex<Vec<(&'static str, u64)>>,
}

impl McCounters {
    pub(crate) fn new() -> McCounters {
        // The names and labels are fixed and valid: these cannot fail.
        let commands = IntCounterVec::new(
            Opts::new(
                "memcached_commands_total",
                "memcached commands by command and result (hit, miss, stored, not_stored, \
                 exists, not_found, deleted, touched, ok, error)",
            ),
            &["command", "result"],
        )
        .expect("a valid counter");
        let connections = IntGauge::with_opts(Opts::new(
            "memcached_connections",
            "memcached connections open now",
        ))
        .expect("a valid gauge");
        let connections_total = IntCounter::with_opts(Opts::new(
            "memcached_connections_total",
            "memcached connections accepted since start",
        ))
        .expect("a valid counter");
        McCounters {
            get_hit: commands.with_label_values(&["get", "hit"]),
            get_miss: commands.with_label_values(&["get", "miss"]),
            commands,
            connections,
            connections_total,
            reset_at: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Adds the series to the registry hsd's admin endpoint serves (its
    /// names get the registry's `hsd_` prefix).
    pub(crate) fn register(&self, registry: &Registry) -> anyhow::Result<()> {
        registry.register(Box::new(self.commands.clone()))?;
        registry.register(Box::new(self.connections.clone()))?;
        registry.register(Box::new(self.connections_total.clone()))?;
        Ok(())
    }

    /// One key of a get (each key of a multi-get counts, as in memcached).
    pub(crate) fn get(&self, hit: bool) {
        if hit {
            self.get_hit.inc()
        } else {
            self.get_miss.inc()
        }
    }

    pub(crate) fn command(&self, command: &str, result: &str) {
        self.commands.with_label_values(&[command, result]).inc();
    }

    pub(crate) fn connection_opened(&self) {
        self.connections.inc();
        self.connections_total.inc();
    }

    pub(crate) fn connection_closed(&self) {
        self.connections.dec();
    }

    fn count(&self, command: &str, result: &str) -> u64 {
        self.commands.with_label_values(&[command, result]).get()
    }

    /// `stats reset`: the stats lines start again from zero (all but
    /// `curr_connections`, as memcached resets them).
    pub(crate) fn reset(&self) {
        let now = self.totals();
        *self.reset_at.lock().unwrap_or_else(|p| p.into_inner()) = now;
    }

    /// The general `stats` group's counters, in memcached's names.
    pub(crate) fn stats_lines(&self) -> Vec<(&'static str, String)> {
        let reset_at = self
            .reset_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let since_reset = |name: &str, value: u64| {
            let base = reset_at
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0, |(_, v)| *v);
            value.saturating_sub(base)
        };
        let mut lines = vec![(
            "curr_connections",
            self.connections.get().max(0).to_string(),
        )];
        lines.extend(
            self.totals()
                .into_iter()
                .map(|(name, value)| (name, since_reset(name, value).to_string())),
        );
        lines
    }

    /// The counters behind the stats lines, since start.
    fn totals(&self) -> Vec<(&'static str, u64)> {
        let (hits, misses) = (self.get_hit.get(), self.get_miss.get());
        let sets: u64 = STORE_COMMANDS
            .iter()
            .flat_map(|c| {
                ["stored", "not_stored", "exists", "not_found", "error"].map(|r| self.count(c, r))
            })
            .sum();
        let touches = (
            self.count("touch", "touched"),
            self.count("touch", "not_found"),
        );
        vec![
            ("total_connections", self.connections_total.get()),
            ("cmd_get", hits + misses),
            ("cmd_set", sets),
            ("cmd_flush", self.count("flush_all", "ok")),
            ("cmd_touch", touches.0 + touches.1),
            ("get_hits", hits),
            ("get_misses", misses),
            ("delete_misses", self.count("delete", "not_found")),
            ("delete_hits", self.count("delete", "deleted")),
            ("incr_misses", self.count("incr", "not_found")),
            ("incr_hits", self.count("incr", "stored")),
            ("decr_misses", self.count("decr", "not_found")),
            ("decr_hits", self.count("decr", "stored")),
            ("cas_misses", self.count("cas", "not_found")),
            ("cas_hits", self.count("cas", "stored")),
            ("cas_badval", self.count("cas", "exists")),
            ("touch_hits", touches.0),
            ("touch_misses", touches.1),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_lines_add_up_the_series() {
        let c = McCounters::new();
        c.get(true);
        c.get(true);
        c.get(false);
        c.command("set", "stored");
        c.command("cas", "exists");
        c.command("add", "not_stored");
        c.command("delete", "deleted");
        c.connection_opened();
        c.connection_opened();
        c.connection_closed();
        let lines = c.stats_lines();
        let line = |n: &str| {
            lines
                .iter()
                .find(|(name, _)| *name == n)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no {n}"))
        };
        assert_eq!(line("cmd_get"), "3");
        assert_eq!(line("get_hits"), "2");
        assert_eq!(line("get_misses"), "1");
        assert_eq!(line("cmd_set"), "3");
        assert_eq!(line("cas_badval"), "1");
        assert_eq!(line("delete_hits"), "1");
        assert_eq!(line("curr_connections"), "1");
        assert_eq!(line("total_connections"), "2");
        c.reset();
        c.get(false);
        let lines = c.stats_lines();
        let line = |n: &str| {
            lines
                .iter()
                .find(|(name, _)| *name == n)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no {n}"))
        };
        assert_eq!(line("cmd_get"), "1");
        assert_eq!(line("get_hits"), "0");
        assert_eq!(line("total_connections"), "0");
        assert_eq!(line("curr_connections"), "1");
    }
}
