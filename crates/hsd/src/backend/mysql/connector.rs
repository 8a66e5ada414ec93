//! Makes server connections for every event loop, and keeps them from all
//! waiting on a server that cannot be reached: after a failed attempt the
//! others fail at once for a short pause while one caller probes.

use super::link::{Failure, Link, LinkSettings};
use crate::backend::{StorageError, ERR_LOCK_WAIT_TIMEOUT};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::OwnedMutexGuard;

/// After the server could not be reached, how long other callers fail at
/// once instead of each waiting for their own connect attempt.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

pub(super) struct Connector {
    pub(super) settings: LinkSettings,
    pub(super) target: String,
    /// Until when connect attempts fail at once (someone is probing, or the
    /// last attempt failed).
    paused_until: Mutex<Option<Instant>>,
    /// Per table without transactions (by its SQL name): held by the
    /// connection reading its rows to change them (`serialize_modifies`).
    modify_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Connector {
    pub(super) fn new(settings: LinkSettings, target: String) -> Connector {
        Connector {
            settings,
            target,
            paused_until: Mutex::new(None),
            modify_locks: Mutex::default(),
        }
    }

    /// Takes the modify lock of table `table_sql` (see
    /// `StorageConn::serialize_modifies`), waiting at most the link timeout:
    /// beyond it the write is answered as a lock wait that timed out.
    pub(super) async fn serialize_modifies(
        &self,
        table_sql: &str,
    ) -> Result<OwnedMutexGuard<()>, StorageError> {
        let lock = {
            let mut locks = self.modify_locks.lock().unwrap_or_else(|p| p.into_inner());
            locks.entry(table_sql.to_string()).or_default().clone()
        };
        match tokio::time::timeout(self.settings.timeout, lock.lock_owned()).await {
            Ok(guard) => Ok(guard),
            Err(_) => Err(StorageError::Refused {
                code: ERR_LOCK_WAIT_TIMEOUT,
                message: format!(
                    "another write loop kept modifying {table_sql} (a table without \
                     transactions) for {:?}",
                    self.settings.timeout
                ),
            }),
        }
    }

    pub(super) async fn open_link(&self) -> Result<Link, Failure> {
        let now = Instant::now();
        {
            let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(until) = *paused {
                if now < until {
                    return Err(Failure {
                        error: StorageError::Unavailable(format!(
                            "{} is not reachable; retrying shortly",
                            self.target
                        )),
                        // No connection was lost here (and the pause must
                        // not be extended by the callers it turns away).
                        link_lost: false,
                        retryable: false,
                    });
                }
                // This caller probes; the others fail fast meanwhile.
                *paused = Some(now + self.settings.timeout + RETRY_PAUSE);
            }
        }
        let result = Link::connect(&self.settings).await;
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        match &result {
            Ok(link) => {
                super::link::announce(link, &self.settings);
                if paused.is_some() {
                    tracing::info!(target = %self.target, "MySQL server reachable again");
                }
                *paused = None;
            }
            Err(f) if f.link_lost && !matches!(f.error, StorageError::Refused { .. }) => {
                if paused.is_none() {
                    tracing::warn!(target = %self.target, error = %f.error, "cannot connect to MySQL server");
                } else {
                    tracing::debug!(target = %self.target, error = %f.error, "MySQL server still not reachable");
                }
                *paused = Some(Instant::now() + RETRY_PAUSE);
            }
            // The server answered (e.g. refused the login): it is up.
            Err(_) => *paused = None,
        }
        result
    }

    /// A live connection timed out: make the others fail fast for a while.
    pub(super) fn note_timeout(&self) {
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        *paused = Some(Instant::now() + RETRY_PAUSE);
    }
}
