//! The embedded store's time budget per statement (`--statement-timeout`).
//!
//! SQLite calls a progress handler every few thousand steps of a running
//! statement; ours stops the statement once its deadline has passed, and
//! the request is answered `1 1 1969`, as MariaDB answers a statement that
//! ran past `max_statement_time`. The connection stays usable (a read is
//! simply ended; a write interrupted inside a transaction rolls that
//! transaction back, which the write group sees as its file failing).
//!
//! The deadline is armed only while a scan or write statement runs, never
//! around BEGIN or COMMIT, and a scan that hands the thread back to its
//! event loop is not charged for the time it waited.

use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// SQLite virtual machine steps between two looks at the clock: a look
/// costs a clock read, and a step is a few nanoseconds.
const STEPS_PER_LOOK: i32 = 4096;

/// One storage connection's deadline, shared with its progress handlers.
#[derive(Clone)]
pub(super) struct StatementClock {
    budget: Option<Duration>,
    base: Instant,
    /// Nanoseconds after `base` when the running statement must stop; 0
    /// while nothing runs under the budget.
    deadline: Arc<AtomicU64>,
}

impl StatementClock {
    pub(super) fn new(budget: Option<Duration>) -> StatementClock {
        StatementClock {
            budget,
            base: Instant::now(),
            deadline: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Lets this clock stop statements on `conn`.
    pub(super) fn watch(&self, conn: &Connection) {
        if self.budget.is_none() {
            return;
        }
        let base = self.base;
        let deadline = self.deadline.clone();
        conn.progress_handler(
            STEPS_PER_LOOK,
            Some(move || {
                let at = deadline.load(Ordering::Relaxed);
                at != 0 && nanos(base.elapsed()) > at
            }),
        );
    }

    /// Arms the deadline for a statement starting now; disarmed when the
    /// returned guard drops.
    pub(super) fn start(&self) -> Armed<'_> {
        if let Some(budget) = self.budget {
            let at = nanos(self.base.elapsed() + budget).max(1);
            self.deadline.store(at, Ordering::Relaxed);
        }
        Armed { clock: self }
    }
}

/// A running statement's deadline; dropping it disarms the clock.
pub(super) struct Armed<'a> {
    clock: &'a StatementClock,
}

impl Armed<'_> {
    /// Moves the deadline on by time the statement spent waiting (not
    /// running) while the event loop served others.
    pub(super) fn excuse(&self, waited: Duration) {
        if self.clock.budget.is_some() {
            let d = &self.clock.deadline;
            let at = d.load(Ordering::Relaxed);
            if at != 0 {
                d.store(at.saturating_add(nanos(waited)), Ordering::Relaxed);
            }
        }
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.clock.deadline.store(0, Ordering::Relaxed);
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement that runs for about as long as we let it.
    const SLOW: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                        SELECT count(*) FROM n";

    #[test]
    fn a_statement_past_its_budget_stops_and_the_connection_goes_on() {
        let conn = Connection::open_in_memory().unwrap();
        let clock = StatementClock::new(Some(Duration::from_millis(100)));
        clock.watch(&conn);
        let started = Instant::now();
        let result = {
            let _armed = clock.start();
            conn.query_row(SLOW, [], |r| r.get::<_, i64>(0))
        };
        let took = started.elapsed();
        let err = result.unwrap_err();
        assert_eq!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::OperationInterrupted)
        );
        assert!(took < Duration::from_secs(2), "stopped after {took:?}");
        // Disarmed: statements run to their end again.
        let one: i64 = conn.query_row("SELECT 1", [], |r| r.get(0)).unwrap();
        assert_eq!(one, 1);
    }

    #[test]
    fn without_a_budget_nothing_is_stopped() {
        let conn = Connection::open_in_memory().unwrap();
        let clock = StatementClock::new(None);
        clock.watch(&conn);
        let _armed = clock.start();
        let n: i64 = conn
            .query_row(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) \
                 SELECT count(*) FROM n",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 200_000);
    }
}
