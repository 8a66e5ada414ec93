//! Makes server connections for every event loop, and keeps them from all
//! waiting on a server that cannot be reached: after a failed attempt the
//! others fail at once for a short pause while one caller probes.

use super::link::{Failure, Link, LinkSettings};
use crate::backend::StorageError;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// After the server could not be reached, how long other callers fail at
/// once instead of each waiting for their own connect attempt.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

pub(super) struct Connector {
    pub(super) settings: LinkSettings,
    pub(super) target: String,
    /// Until when connect attempts fail at once (someone is probing, or the
    /// last attempt failed).
    paused_until: Mutex<Option<Instant>>,
}

impl Connector {
    pub(super) fn new(settings: LinkSettings, target: String) -> Connector {
        Connector {
            settings,
            target,
            paused_until: Mutex::new(None),
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
