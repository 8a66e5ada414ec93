//! The client's error type. Server-side error *responses* (`2 1 op`, ...) are not
//! errors here: they come back as `Response`s with a non-zero code, so tests can
//! look at them; `ResponseExt::check` turns them into `ClientError::Server`.

use std::io;

/// Everything that can go wrong talking to a HandlerSocket server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket failed (connect refused, reset, broken pipe, ...).
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The connect or request timeout elapsed. The connection is dropped, since
    /// a late response would otherwise be taken for the next request's.
    #[error("timed out")]
    Timeout,
    /// The server sent something that is not a response line, or the client
    /// was used against its contract (a line containing LF, `recv` with
    /// nothing in flight, `request` while `send`s are outstanding).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The connection is gone: the server closed it, the client was closed, or
    /// it broke while reconnect is disabled. Also returned by `recv` for each
    /// request that was in flight when the connection broke.
    #[error("connection closed")]
    Closed,
    /// A response with a non-zero code, from `ResponseExt::check`.
    #[error("server answered error {code}: {reason}")]
    Server { code: u32, reason: String },
    /// Setting up a (re)connected session failed: the `A` line from the
    /// options or a remembered `A`/`P` line was refused. `what` names the line
    /// without revealing the secret.
    #[error("session setup failed ({what}): server answered {code}: {reason}")]
    Handshake {
        what: String,
        code: u32,
        reason: String,
    },
}

impl ClientError {
    /// True when the connection broke (I/O error or EOF): the kind of failure
    /// after which a retry on a new connection may succeed.
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, ClientError::Io(_) | ClientError::Closed)
    }
}

/// Shorthand used across the crate.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;
