//! The bound on guessing SASL passwords across connections: every failed
//! login is counted (`hsd_memcached_sasl_failures_total`) and logged with
//! the client's address, at most one line a second (the lines held back
//! are counted in the next); an address that fails `MAX_FAILURES` times
//! within `WINDOW` is refused for `BLOCK` (its logins, even with the right
//! password, fail at once and close the connection:
//! `hsd_memcached_sasl_refused_total`), logged once. One connection's own
//! bound (`sasl::MAX_SASL_FAILURES`) closes it after 8 failures; this one
//! holds across connections. What is kept per address is bounded
//! (`MAX_ADDRESSES`): when full, addresses with nothing recent go first,
//! then the oldest ones. IPv4 addresses (also as IPv6-mapped) count one by
//! one; an IPv6 client counts by its /64, which one host commonly holds
//! whole.

use prometheus::{IntCounter, Registry};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed logins from one address within `WINDOW` that get it refused.
pub(crate) const MAX_FAILURES: u32 = 10;
/// How long failures are remembered.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// How long an address is refused.
pub(crate) const BLOCK: Duration = Duration::from_secs(300);
/// Addresses kept at most.
pub(crate) const MAX_ADDRESSES: usize = 4096;
/// The least time between two lines about failed logins.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// What is known of one address.
#[derive(Debug, Clone, Copy)]
struct Record {
    /// Failures since `since` (the first one in the window).
    failures: u32,
    since: Instant,
    blocked_until: Option<Instant>,
}

impl Record {
    fn blocked(&self, now: Instant) -> bool {
        self.blocked_until.is_some_and(|until| now < until)
    }

    /// Nothing it holds matters any more.
    fn stale(&self, now: Instant) -> bool {
        !self.blocked(now) && now.duration_since(self.since) >= WINDOW
    }
}

#[derive(Default)]
struct State {
    addresses: HashMap<IpAddr, Record>,
    last_line: Option<Instant>,
    /// Failed logins not logged since the last line.
    held_back: u64,
}

/// Failed logins by address, shared by every loop.
pub(crate) struct SaslGuard {
    state: Mutex<State>,
    failures: IntCounter,
    refused: IntCounter,
}

impl std::fmt::Debug for SaslGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslGuard")
            .field("failures", &self.failures.get())
            .field("refused", &self.refused.get())
            .finish()
    }
}

/// How a failed login came out for its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It may try again.
    Counted,
    /// This failure got it refused for `BLOCK`.
    Blocked,
}

/// The address failures are counted by: an IPv4 address (mapped or not)
/// as itself, an IPv6 one by its /64.
fn counted_as(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) => {
            let mut octets = v6.octets();
            octets[8..].fill(0);
            IpAddr::V6(octets.into())
        }
        v4 => v4,
    }
}

impl SaslGuard {
    pub(crate) fn new() -> anyhow::Result<SaslGuard> {
        Ok(SaslGuard {
            state: Mutex::new(State::default()),
            failures: IntCounter::new(
                "memcached_sasl_failures_total",
                "Failed SASL logins on the memcached port",
            )?,
            refused: IntCounter::new(
                "memcached_sasl_refused_total",
                "SASL logins refused because their address failed too often",
            )?,
        })
    }

    /// Puts the counters in hsd's metrics.
    pub(crate) fn register(&self, registry: &Registry) -> anyhow::Result<()> {
        registry.register(Box::new(self.failures.clone()))?;
        registry.register(Box::new(self.refused.clone()))?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Each change is whole (one map operation): go on after a panic.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `peer` may try a login now; counts and answers false while
    /// it is refused.
    pub(crate) fn admits(&self, peer: IpAddr, now: Instant) -> bool {
        let state = self.lock();
        let blocked = state
            .addresses
            .get(&counted_as(peer))
            .is_some_and(|r| r.blocked(now));
        if blocked {
            self.refused.inc();
        }
        !blocked
    }

    /// A login from `peer` succeeded: its failures are forgotten.
    pub(crate) fn succeeded(&self, peer: IpAddr) {
        self.lock().addresses.remove(&counted_as(peer));
    }

    /// A login from `peer` failed: counted, logged (rate-limited), and the
    /// address refused for `BLOCK` once it failed `MAX_FAILURES` times
    /// within `WINDOW`.
    pub(crate) fn failed(&self, peer: IpAddr, now: Instant) -> Verdict {
        self.failures.inc();
        let address = counted_as(peer);
        let mut state = self.lock();
        if !state.addresses.contains_key(&address) && state.addresses.len() >= MAX_ADDRESSES {
            make_room(&mut state.addresses, now);
        }
        let record = state.addresses.entry(address).or_insert(Record {
            failures: 0,
            since: now,
            blocked_until: None,
        });
        if record.stale(now) {
            *record = Record {
                failures: 0,
                since: now,
                blocked_until: None,
            };
        }
        record.failures += 1;
        let failures = record.failures;
        let verdict = if failures >= MAX_FAILURES && !record.blocked(now) {
            record.blocked_until = Some(now + BLOCK);
            Verdict::Blocked
        } else {
            Verdict::Counted
        };
        if verdict == Verdict::Blocked {
            tracing::warn!(
                client = %peer.to_canonical(),
                failures,
                refused_for_secs = BLOCK.as_secs(),
                "memcached SASL: the client's address failed to log in too often and is refused for a while"
            );
        }
        let due = state
            .last_line
            .is_none_or(|last| now.duration_since(last) >= LOG_EVERY);
        if due {
            let held_back = std::mem::take(&mut state.held_back);
            state.last_line = Some(now);
            tracing::warn!(
                client = %peer.to_canonical(),
                failures_from_client = failures,
                others_not_logged = held_back,
                "memcached SASL login failed"
            );
        } else {
            state.held_back += 1;
        }
        verdict
    }

    /// Addresses kept now.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.lock().addresses.len()
    }
}

/// Frees a place: the stale records first, else the one whose window
/// began longest ago.
fn make_room(addresses: &mut HashMap<IpAddr, Record>, now: Instant) {
    addresses.retain(|_, r| !r.stale(now));
    if addresses.len() < MAX_ADDRESSES {
        return;
    }
    let oldest = addresses
        .iter()
        .min_by_key(|(_, r)| (r.blocked(now), r.since))
        .map(|(a, _)| *a);
    if let Some(oldest) = oldest {
        addresses.remove(&oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    #[test]
    fn an_address_that_fails_too_often_is_refused_for_a_while() {
        let guard = SaslGuard::new().expect("counters");
        let start = Instant::now();
        for i in 1..MAX_FAILURES {
            assert_eq!(guard.failed(v4(1), start), Verdict::Counted, "failure {i}");
            assert!(guard.admits(v4(1), start));
        }
        assert_eq!(guard.failed(v4(1), start), Verdict::Blocked);
        assert!(!guard.admits(v4(1), start));
        assert!(!guard.admits(v4(1), start + BLOCK - Duration::from_secs(1)));
        // Another address is not refused; the refused one is again later.
        assert!(guard.admits(v4(2), start));
        assert!(guard.admits(v4(1), start + BLOCK));
        assert_eq!(guard.failures.get(), u64::from(MAX_FAILURES));
        assert_eq!(guard.refused.get(), 2);
        // Failures spread wider than the window never add up.
        let mut t = start;
        for _ in 0..3 * MAX_FAILURES {
            assert_eq!(guard.failed(v4(3), t), Verdict::Counted);
            t += WINDOW / (MAX_FAILURES - 2);
        }
        // A success forgets the failures.
        for _ in 1..MAX_FAILURES {
            guard.failed(v4(4), start);
        }
        guard.succeeded(v4(4));
        assert_eq!(guard.failed(v4(4), start), Verdict::Counted);
        // IPv4 mapped in IPv6 is the IPv4 address; IPv6 counts by /64.
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert!(!guard.admits(mapped, start));
        let a = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, 1));
        let b = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 9, 9, 9, 9));
        for _ in 0..MAX_FAILURES {
            guard.failed(a, start);
        }
        assert!(!guard.admits(b, start));
    }

    #[test]
    fn the_bookkeeping_is_bounded() {
        let guard = SaslGuard::new().expect("counters");
        let start = Instant::now();
        let blocked = v4(1);
        for _ in 0..MAX_FAILURES {
            guard.failed(blocked, start);
        }
        for i in 0..(MAX_ADDRESSES as u32 * 3) {
            let address = IpAddr::V4(Ipv4Addr::from(0x0b00_0000 + i));
            guard.failed(address, start + Duration::from_millis(u64::from(i)));
            assert!(guard.kept() <= MAX_ADDRESSES);
        }
        assert_eq!(guard.kept(), MAX_ADDRESSES);
        // The oldest unblocked records went first: the refused address is
        // still refused.
        assert!(!guard.admits(blocked, start + Duration::from_secs(1)));
    }
}
