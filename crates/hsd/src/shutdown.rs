//! Graceful shutdown: one signal that every connection task watches.
//!
//! On SIGTERM/SIGINT the listeners stop accepting, each connection finishes
//! the requests it already read (writes commit before they are answered) and
//! closes, then the event loops' batchers and committers finish what they
//! hold and the process exits 0.

use tokio::sync::watch;

/// A handle each task holds; `recv` resolves once shutdown has begun.
#[derive(Clone)]
pub(crate) struct Shutdown {
    rx: watch::Receiver<bool>,
}

/// The side that starts the shutdown.
pub(crate) struct ShutdownTrigger {
    tx: watch::Sender<bool>,
}

pub(crate) fn channel() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (ShutdownTrigger { tx }, Shutdown { rx })
}

impl ShutdownTrigger {
    pub(crate) fn trigger(&self) {
        let _ = self.tx.send(true);
    }
}

impl Shutdown {
    pub(crate) fn is_triggered(&self) -> bool {
        *self.rx.borrow()
    }

    pub(crate) async fn recv(&mut self) {
        // An error means the trigger is gone, which also means shutting down.
        let _ = self.rx.wait_for(|&down| down).await;
    }
}

/// Resolves on SIGTERM or SIGINT.
pub(crate) async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
