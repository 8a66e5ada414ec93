//! Tells the service manager when hsd serves and when it stops: systemd's
//! `Type=notify` units pass a datagram socket in `NOTIFY_SOCKET` and wait
//! for `READY=1` before they count the service as started. Without the
//! variable (a shell, a test) nothing is sent.

use sd_notify::NotifyState;

/// Both listeners are bound and the event loops run: clients may connect.
pub(crate) fn serving() {
    notify(NotifyState::Ready, "ready");
}

/// Shutdown began: no new connections.
pub(crate) fn stopping() {
    notify(NotifyState::Stopping, "stopping");
}

fn notify(state: NotifyState<'_>, what: &str) {
    if let Err(e) = sd_notify::notify(&[state]) {
        // Under Type=notify systemd then stops hsd at its start timeout:
        // the log says why.
        tracing::warn!(error = %e, "cannot tell the service manager (NOTIFY_SOCKET) that hsd is {what}");
    }
}
