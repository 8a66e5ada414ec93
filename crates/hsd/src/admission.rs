//! Who may hold a connection, and who makes room.
//!
//! A new connection is a newcomer until it has made its first request (on a
//! port with a secret: until it has authenticated). Only then does it take
//! a seat, one of `--max-connections`, a tenth of them (1 to 1000) kept for
//! the write port so writers get in while readers hold every other seat; a
//! connection that finds no seat is closed without an answer.
//!
//! Newcomers have a pool of their own, as large as the seats up to 1000
//! (`newcomer_places`). When it is full the oldest newcomer is closed to
//! let the new one in. A client that
//! connects and asks at once is seated within milliseconds, whatever
//! clients that never finish a line (slowloris) or never authenticate do:
//! they stay newcomers, and newcomers only ever push out each other.
//!
//! With `--max-connections-per-address`, one IP address may hold at most
//! that many connections, newcomers and seated, on both ports together; a
//! connection past it is closed at once, before it takes a newcomer's
//! place. Off by default: the clients behind one NAT or proxy, or one
//! application host's connection pool, share an address.

use crate::port::PortKind;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// How long an accept waits for the newcomer it pushed out to leave.
const MAKE_ROOM_WAIT: Duration = Duration::from_millis(500);

pub(crate) struct Admission {
    seats: Arc<Semaphore>,
    write_reserve: Arc<Semaphore>,
    newcomers: Arc<Semaphore>,
    /// Newcomers in arrival order; the dead (seated or closed) are skipped.
    queue: Mutex<VecDeque<Weak<Notify>>>,
    queue_limit: usize,
    /// Connections open per peer address, when they are limited.
    per_address: Option<PerAddress>,
}

/// `--max-connections-per-address`: the limit, and each address's count
/// (an address leaves the map with its last connection).
struct PerAddress {
    limit: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// Why a connection just accepted gets no place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its address holds `--max-connections-per-address` connections.
    AddressFull,
    /// No newcomer's place came free in time.
    NoRoom,
}

/// A connection's right to be open: a newcomer's place, then a seat.
pub(crate) struct Place {
    admission: Arc<Admission>,
    kind: PortKind,
    state: PlaceState,
    /// The peer address's share, when addresses are limited.
    _share: Option<AddressShare>,
}

/// One connection counted against its address's share; given back on drop.
struct AddressShare {
    admission: Arc<Admission>,
    peer: IpAddr,
}

enum PlaceState {
    Newcomer {
        _permit: OwnedSemaphorePermit,
        evict: Arc<Notify>,
    },
    Seated {
        _seat: OwnedSemaphorePermit,
    },
}

/// Connections that may wait for their first request at once. A thousand
/// is plenty: an attacker would need a million connections a second to push
/// out a client that asks within a millisecond.
pub fn newcomer_places(max_connections: usize) -> usize {
    max_connections.clamp(1, 1000)
}

impl Admission {
    /// `max_per_address`: `--max-connections-per-address`, None when off.
    pub(crate) fn new(max_connections: usize, max_per_address: Option<usize>) -> Arc<Admission> {
        let max = max_connections.max(1);
        let reserve = (max / 10).clamp(1, 1000).min(max - 1);
        Arc::new(Admission {
            seats: Arc::new(Semaphore::new(max - reserve)),
            write_reserve: Arc::new(Semaphore::new(reserve)),
            newcomers: Arc::new(Semaphore::new(newcomer_places(max))),
            queue: Mutex::new(VecDeque::new()),
            queue_limit: 2 * newcomer_places(max),
            per_address: max_per_address.map(|limit| PerAddress {
                limit: limit.max(1),
                open: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// A place for a connection just accepted from `peer`, pushing out the
    /// oldest newcomer if the pool is full. Refused when `peer` already
    /// holds its share of connections, or no place came free in time.
    pub(crate) async fn welcome(
        self: &Arc<Self>,
        kind: PortKind,
        peer: IpAddr,
    ) -> Result<Place, Refusal> {
        // Counted first, so that one address over its share never pushes
        // out another's newcomer; given back when the share is dropped.
        let share = match &self.per_address {
            Some(per) => Some(AddressShare {
                admission: self.clone(),
                peer: per.count_in(peer).ok_or(Refusal::AddressFull)?,
            }),
            None => None,
        };
        let permit = match self.newcomers.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                self.push_out_oldest();
                tokio::time::timeout(MAKE_ROOM_WAIT, self.newcomers.clone().acquire_owned())
                    .await
                    .map_err(|_| Refusal::NoRoom)?
                    .map_err(|_| Refusal::NoRoom)?
            }
        };
        let evict = Arc::new(Notify::new());
        {
            let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            if queue.len() >= self.queue_limit {
                queue.retain(|w| w.strong_count() > 0);
            }
            queue.push_back(Arc::downgrade(&evict));
        }
        Ok(Place {
            admission: self.clone(),
            kind,
            state: PlaceState::Newcomer {
                _permit: permit,
                evict,
            },
            _share: share,
        })
    }

    fn push_out_oldest(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(oldest) = queue.pop_front() {
            if let Some(evict) = oldest.upgrade() {
                evict.notify_one();
                return;
            }
        }
    }

    /// A seat: writers take the reserve first, so it is the readers' share
    /// that they leave free.
    fn seat(&self, kind: PortKind) -> Option<OwnedSemaphorePermit> {
        let shared = || self.seats.clone().try_acquire_owned().ok();
        match kind {
            PortKind::Read | PortKind::Memcached => shared(),
            PortKind::Write => self
                .write_reserve
                .clone()
                .try_acquire_owned()
                .ok()
                .or_else(shared),
        }
    }
}

impl PerAddress {
    /// Counts one more connection of `peer`; None when it has its share.
    fn count_in(&self, peer: IpAddr) -> Option<IpAddr> {
        // An IPv4 client of an IPv6 listener is the same client.
        let peer = peer.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(peer).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(peer)
    }

    fn count_out(&self, peer: IpAddr) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&peer);
            }
        }
    }
}

impl Drop for AddressShare {
    fn drop(&mut self) {
        if let Some(per) = &self.admission.per_address {
            per.count_out(self.peer);
        }
    }
}

impl Place {
    pub(crate) fn is_seated(&self) -> bool {
        matches!(self.state, PlaceState::Seated { .. })
    }

    /// Turns a newcomer into a seated connection; false when every seat is
    /// taken (the caller closes the connection).
    pub(crate) fn take_seat(&mut self) -> bool {
        if self.is_seated() {
            return true;
        }
        match self.admission.seat(self.kind) {
            Some(seat) => {
                // Dropping the newcomer state gives its pool place back.
                self.state = PlaceState::Seated { _seat: seat };
                true
            }
            None => false,
        }
    }

    /// Resolves when this newcomer is pushed out to make room; never once
    /// seated.
    pub(crate) async fn pushed_out(&self) {
        match &self.state {
            PlaceState::Newcomer { evict, .. } => evict.notified().await,
            PlaceState::Seated { .. } => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Admission, Refusal};
    use crate::port::PortKind;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    }

    /// One address holds at most its share, on both ports together, seated
    /// or not; another address is not affected; a closed connection gives
    /// its share back; an IPv4 client seen through IPv6 is the same client.
    #[test]
    fn an_address_holds_at_most_its_share() {
        rt().block_on(async {
            let admission = Admission::new(100, Some(2));
            let a: IpAddr = Ipv4Addr::new(10, 0, 0, 1).into();
            let b: IpAddr = Ipv4Addr::new(10, 0, 0, 2).into();
            let a_v6: IpAddr = Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped().into();
            let mut first = admission.welcome(PortKind::Read, a).await.expect("first");
            assert!(first.take_seat());
            let second = admission
                .welcome(PortKind::Write, a_v6)
                .await
                .expect("second");
            assert_eq!(
                admission.welcome(PortKind::Read, a).await.err(),
                Some(Refusal::AddressFull)
            );
            assert_eq!(
                admission.welcome(PortKind::Write, a_v6).await.err(),
                Some(Refusal::AddressFull)
            );
            let other = admission.welcome(PortKind::Read, b).await;
            assert!(other.is_ok(), "another address is refused");
            drop(second);
            let again = admission.welcome(PortKind::Read, a).await;
            assert!(again.is_ok(), "a closed connection's share not given back");
            drop((first, again, other));
            assert!(admission.per_address.as_ref().is_some_and(|p| p
                .open
                .lock()
                .map(|m| m.is_empty())
                .unwrap_or(false)));
        });
    }

    /// Without the limit, one address may take every place.
    #[test]
    fn without_the_limit_an_address_is_not_counted() {
        rt().block_on(async {
            let admission = Admission::new(3, None);
            let a: IpAddr = Ipv6Addr::LOCALHOST.into();
            let places: Vec<_> = (0..3)
                .map(|_| admission.welcome(PortKind::Read, a))
                .collect();
            for p in places {
                assert!(p.await.is_ok());
            }
            assert!(admission.per_address.is_none());
        });
    }
}
