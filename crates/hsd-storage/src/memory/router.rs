//! The memory seam's read router, for tests of the read batcher's routing
//! without servers: places numbered from 0 (the primary, which has
//! everything), positions plain numbers. Each place other than the primary
//! has applied up to some number, set by the test; `write` raises what a
//! read arriving after it must see. A batch goes to the first place after
//! the primary that the router believes up and that has applied what the
//! batch must see, else to the primary. Every route and every place
//! reported unreachable is recorded.

use crate::{ReadRouter, Route, StorageError};
use std::sync::{Arc, Mutex, MutexGuard};

pub struct FakeRouter {
    places: usize,
    state: Mutex<RouterState>,
}

#[derive(Default)]
struct RouterState {
    /// What a read arriving now must see.
    frontier: u64,
    /// What each place has applied (the primary's is ignored).
    applied: Vec<u64>,
    /// Places reported unreachable: none is routed there again.
    down: Vec<bool>,
    routes: Vec<usize>,
    unreachable: Vec<usize>,
}

impl FakeRouter {
    /// A router of `places` places, each having applied everything so far.
    pub(crate) fn new(places: usize) -> FakeRouter {
        FakeRouter {
            places,
            state: Mutex::new(RouterState {
                applied: vec![0; places],
                down: vec![false; places],
                ..RouterState::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, RouterState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A write was answered: reads arriving from now on must see it.
    pub fn write(&self) {
        self.lock().frontier += 1;
    }

    /// Place `place` has applied every write up to `position`.
    pub fn set_applied(&self, place: usize, position: u64) {
        self.lock().applied[place] = position;
    }

    /// The places batches were sent to, in order.
    pub fn routes(&self) -> Vec<usize> {
        self.lock().routes.clone()
    }

    /// The places reported unreachable, in order.
    pub fn reported_unreachable(&self) -> Vec<usize> {
        self.lock().unreachable.clone()
    }
}

impl ReadRouter for FakeRouter {
    type Position = u64;
    type Lease = ();

    fn places(&self) -> usize {
        self.places
    }

    fn must_see(&self) -> Option<Arc<u64>> {
        (self.places > 1).then(|| Arc::new(self.lock().frontier))
    }

    async fn route(&self, must_see: Option<&u64>, _reads: usize) -> Route<()> {
        let need = must_see.copied().unwrap_or(0);
        let mut st = self.lock();
        let place = (1..self.places)
            .find(|&p| !st.down[p] && st.applied[p] >= need)
            .unwrap_or(0);
        st.routes.push(place);
        Route { place, _lease: () }
    }

    fn fallback(&self) -> usize {
        0
    }

    fn unreachable(&self, place: usize, _error: &StorageError) {
        let mut st = self.lock();
        st.down[place] = true;
        st.unreachable.push(place);
    }
}
