//! `stats` (text) and Stat (binary): the groups that mean something for a
//! server whose items are table rows, in memcached's names. The general
//! group; `settings` with hsd's own values for the settings that apply;
//! `items`, `slabs` and `sizes` as memcached answers them with no item in
//! memory (hsd keeps none: rows live in their tables); `reset`. Other
//! groups (`conns`, `detail`, `cachedump`, ...) are unknown: `ERROR`, or
//! "Not found" on the binary protocol, as memcached answers a group it
//! does not have.

use super::counters::McCounters;
use super::item::now;

/// What a group comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StatsAnswer {
    /// `STAT <name> <value>` lines (maybe none), then the end.
    Lines(Vec<(&'static str, String)>),
    /// `stats reset`: `RESET` (an empty end on the binary protocol).
    Reset,
    Unknown,
}

/// What the general group and `stats settings` report: fixed at start,
/// but for the counters.
pub(crate) struct StatsContext {
    /// Seconds since the epoch when the server started.
    pub(crate) started: u64,
    pub(crate) containers: usize,
    /// `stats settings`: hsd's values of memcached's settings that apply.
    pub(crate) settings: Vec<(&'static str, String)>,
    pub(crate) counters: McCounters,
}

/// The settings lines, from the memcached port's configuration.
pub(crate) struct Settings<'a> {
    pub(crate) address: &'a str,
    pub(crate) max_connections: usize,
    pub(crate) threads: usize,
    pub(crate) max_item_size: usize,
    pub(crate) idle_timeout: u64,
    pub(crate) sasl: bool,
    pub(crate) tls: bool,
    /// Some container's flush_policy lets flush_all run.
    pub(crate) flush: bool,
    /// Some container keeps items in memory (`cache_only`), where the
    /// least recently used are evicted.
    pub(crate) evicts: bool,
}

impl Settings<'_> {
    pub(crate) fn lines(&self) -> Vec<(&'static str, String)> {
        let (inter, port) = self.address.rsplit_once(':').unwrap_or((self.address, "0"));
        let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
        vec![
            ("maxconns", self.max_connections.to_string()),
            ("tcpport", port.to_string()),
            ("udpport", "0".into()),
            ("inter", inter.trim_matches(['[', ']']).to_string()),
            // Rows are never evicted; cache_only items are.
            ("evictions", if self.evicts { "on" } else { "off" }.into()),
            ("num_threads", self.threads.to_string()),
            ("cas_enabled", "yes".into()),
            (
                "binding_protocol",
                if self.sasl {
                    "binary"
                } else {
                    "auto-negotiate"
                }
                .into(),
            ),
            ("auth_enabled_sasl", yes_no(self.sasl)),
            ("auth_enabled_ascii", "no".into()),
            ("item_size_max", self.max_item_size.to_string()),
            // flush_all runs where a container's flush_policy lets it.
            ("flush_enabled", yes_no(self.flush)),
            ("idle_timeout", self.idle_timeout.to_string()),
            ("ssl_enabled", yes_no(self.tls)),
        ]
    }
}

/// The answer to `stats <group>` (None: the general group). Words after
/// the group are ignored, as memcached ignores them.
pub(crate) fn answer(group: Option<&[u8]>, context: &StatsContext) -> StatsAnswer {
    let lines = match group {
        None => {
            let now = now();
            let mut lines = vec![
                ("pid", std::process::id().to_string()),
                ("uptime", now.saturating_sub(context.started).to_string()),
                ("time", now.to_string()),
                ("version", super::VERSION.to_string()),
                ("pointer_size", usize::BITS.to_string()),
            ];
            lines.extend(context.counters.stats_lines());
            lines.push(("containers", context.containers.to_string()));
            lines
        }
        Some(b"settings") => context.settings.clone(),
        Some(b"items") => Vec::new(),
        Some(b"slabs") => vec![("active_slabs", "0".into()), ("total_malloced", "0".into())],
        Some(b"sizes") => vec![("sizes_status", "disabled".into())],
        Some(b"reset") => {
            context.counters.reset();
            return StatsAnswer::Reset;
        }
        Some(_) => return StatsAnswer::Unknown,
    };
    StatsAnswer::Lines(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups() {
        let settings = Settings {
            address: "127.0.0.1:11211",
            max_connections: 100,
            threads: 2,
            max_item_size: 4096,
            idle_timeout: 300,
            sasl: true,
            tls: false,
            flush: true,
            evicts: false,
        };
        let context = StatsContext {
            started: 1,
            containers: 3,
            settings: settings.lines(),
            counters: McCounters::new(),
        };
        let StatsAnswer::Lines(general) = answer(None, &context) else {
            panic!("the general group");
        };
        let names: Vec<&str> = general.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names[..5],
            ["pid", "uptime", "time", "version", "pointer_size"]
        );
        for counter in [
            "curr_connections",
            "cmd_get",
            "get_hits",
            "get_misses",
            "cmd_set",
        ] {
            assert!(names.contains(&counter), "{counter} in {names:?}");
        }
        assert_eq!(general.last(), Some(&("containers", "3".to_string())));
        let StatsAnswer::Lines(set) = answer(Some(b"settings"), &context) else {
            panic!("settings");
        };
        let get = |name: &str| {
            set.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("tcpport"), Some("11211"));
        assert_eq!(get("inter"), Some("127.0.0.1"));
        assert_eq!(get("maxconns"), Some("100"));
        assert_eq!(get("item_size_max"), Some("4096"));
        assert_eq!(get("binding_protocol"), Some("binary"));
        assert_eq!(get("auth_enabled_sasl"), Some("yes"));
        assert_eq!(get("flush_enabled"), Some("yes"));
        assert_eq!(answer(Some(b"items"), &context), StatsAnswer::Lines(vec![]));
        assert_eq!(answer(Some(b"reset"), &context), StatsAnswer::Reset);
        assert_eq!(answer(Some(b"conns"), &context), StatsAnswer::Unknown);
    }
}
