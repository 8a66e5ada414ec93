//! What one client connection may hold and how long it may take: the
//! limits every connection of a port gets, and the memory budgets all
//! connections share.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Per-connection limits.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionLimits {
    /// A line longer than this closes the connection.
    pub(crate) max_line: usize,
    /// Close a connection that sends nothing for this long (None: never).
    pub(crate) idle_timeout: Option<Duration>,
    /// A line begun must end (LF) within this long (None: no limit).
    pub(crate) line_timeout: Option<Duration>,
    /// A port with a secret closes a connection not authenticated this long
    /// after it opened (None: no limit).
    pub(crate) auth_timeout: Option<Duration>,
    /// Input beyond each connection's allowance is charged here.
    pub(crate) input_budget: Arc<MemoryBudget>,
    /// Answers a client has not read yet (what the kernel would not take)
    /// are charged here while they wait.
    pub(crate) output_budget: Arc<MemoryBudget>,
}

/// Bytes that all connections together may hold beyond their allowances:
/// one for unfinished request lines, one for unread answers.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    limit: usize,
    used: AtomicUsize,
}

impl MemoryBudget {
    pub(crate) fn new(limit: usize) -> MemoryBudget {
        MemoryBudget {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    pub(crate) fn take(&self, n: usize) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            if used + n > self.limit {
                return false;
            }
            match self.used.compare_exchange_weak(
                used,
                used + n,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    pub(crate) fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}
