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

use crate::port::PortKind;
use std::collections::VecDeque;
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
}

/// A connection's right to be open: a newcomer's place, then a seat.
pub(crate) struct Place {
    admission: Arc<Admission>,
    kind: PortKind,
    state: PlaceState,
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
    pub(crate) fn new(max_connections: usize) -> Arc<Admission> {
        let max = max_connections.max(1);
        let reserve = (max / 10).clamp(1, 1000).min(max - 1);
        Arc::new(Admission {
            seats: Arc::new(Semaphore::new(max - reserve)),
            write_reserve: Arc::new(Semaphore::new(reserve)),
            newcomers: Arc::new(Semaphore::new(newcomer_places(max))),
            queue: Mutex::new(VecDeque::new()),
            queue_limit: 2 * newcomer_places(max),
        })
    }

    /// A place for a connection just accepted, pushing out the oldest
    /// newcomer if the pool is full; None if none left in time.
    pub(crate) async fn welcome(self: &Arc<Self>, kind: PortKind) -> Option<Place> {
        let permit = match self.newcomers.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                self.push_out_oldest();
                tokio::time::timeout(MAKE_ROOM_WAIT, self.newcomers.clone().acquire_owned())
                    .await
                    .ok()?
                    .ok()?
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
        Some(Place {
            admission: self.clone(),
            kind,
            state: PlaceState::Newcomer {
                _permit: permit,
                evict,
            },
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
            PortKind::Read => shared(),
            PortKind::Write => self
                .write_reserve
                .clone()
                .try_acquire_owned()
                .ok()
                .or_else(shared),
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
