//! What an accept loop does when accept fails (out of file descriptors and
//! the like), shared by the HandlerSocket ports and the admin endpoint.

use std::time::Duration;

/// The pending connection stays pending, so retrying at once
/// would spin. Waits a little, and warns at most every ten seconds.
#[derive(Default)]
pub(crate) struct AcceptBackoff {
    last_warning: Option<std::time::Instant>,
}

impl AcceptBackoff {
    pub(crate) async fn failed(&mut self, error: &std::io::Error, listener: &str) {
        let due = self
            .last_warning
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(10));
        if due {
            tracing::warn!(%error, listener, "accept failed; retrying every 100 ms");
            self.last_warning = Some(std::time::Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
