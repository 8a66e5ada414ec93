//! An event loop's storage connections for inline work (the embedded
//! store): one is checked out per running request batch (usually just one
//! exists). At most `POOL_MAX` are in use at once: long scans hand the
//! thread back mid-way, and without a bound a thousand clients' scans
//! would each hold a storage connection (its page cache, its mapping of
//! the file) and a half-built answer. A keeper task gives back what an
//! idle connection must not hold (see `StorageConn::idle_deadline`).

use crate::backend::{Backend, StorageConn};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Most connections a pool has in use at once, and keeps idle.
const POOL_MAX: usize = 4;

pub(crate) struct StoragePool<C> {
    idle: RefCell<Vec<C>>,
    in_use: Arc<Semaphore>,
    keeper: Notify,
    /// The keeper sleeps until a deadline already (a checked-in connection
    /// then needs no wake-up: the keeper looks again when it wakes).
    keeper_armed: Cell<bool>,
}

impl<C: StorageConn + 'static> StoragePool<C> {
    /// A pool with its keeper running on the current `LocalSet`.
    pub(crate) fn start() -> Rc<StoragePool<C>> {
        let pool = Rc::new(StoragePool {
            idle: RefCell::new(Vec::new()),
            in_use: Arc::new(Semaphore::new(POOL_MAX)),
            keeper: Notify::new(),
            keeper_armed: Cell::new(false),
        });
        tokio::task::spawn_local(keep(pool.clone()));
        pool
    }

    /// A connection and its place among those in use (hold it until the
    /// connection is checked in).
    pub(crate) async fn checkout<B: Backend<Storage = C>>(
        &self,
        backend: &B,
    ) -> Option<(C, OwnedSemaphorePermit)> {
        let in_use = self.in_use.clone().acquire_owned().await.ok()?;
        let idle = self.idle.borrow_mut().pop();
        match idle {
            Some(c) => Some((c, in_use)),
            None => match backend.connect().await {
                Ok(c) => Some((c, in_use)),
                Err(e) => {
                    tracing::warn!(error = %e, target = %backend.describe_target(), "cannot connect to storage");
                    None
                }
            },
        }
    }

    pub(crate) fn checkin(&self, storage: C) {
        let holds = storage.idle_deadline().is_some();
        let mut idle = self.idle.borrow_mut();
        if idle.len() < POOL_MAX {
            idle.push(storage);
            if holds && !self.keeper_armed.get() {
                self.keeper.notify_one();
            }
        }
    }
}

/// The pool's keeper: at each idle connection's deadline, has it give back
/// what it holds. Lives as long as the event loop.
async fn keep<C: StorageConn>(pool: Rc<StoragePool<C>>) {
    loop {
        let woken = pool.keeper.notified();
        let next = pool
            .idle
            .borrow()
            .iter()
            .filter_map(StorageConn::idle_deadline)
            .min();
        match next {
            Some(at) => {
                pool.keeper_armed.set(true);
                tokio::select! {
                    _ = woken => {}
                    _ = tokio::time::sleep_until(at.into()) => {}
                }
                pool.keeper_armed.set(false);
            }
            None => woken.await,
        }
        let now = std::time::Instant::now();
        let due: Vec<C> = {
            let mut idle = pool.idle.borrow_mut();
            let (due, keep): (Vec<C>, Vec<C>) = idle
                .drain(..)
                .partition(|c| c.idle_deadline().is_some_and(|at| at <= now));
            *idle = keep;
            due
        };
        for mut c in due {
            c.release_idle().await;
            pool.idle.borrow_mut().push(c);
        }
    }
}
