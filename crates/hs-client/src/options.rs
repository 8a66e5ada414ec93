//! Connection options: timeouts, the auth secret sent on every (re)connect,
//! and whether a broken connection is re-established.

use std::fmt;
use std::time::Duration;

/// How a `Client` connects and recovers. Build with `ClientOptions::new()` and
/// the chainable setters; `Default` is the same as `new()`.
#[derive(Clone)]
pub struct ClientOptions {
    /// Bound on establishing the TCP connection. Default 5 s; `None` waits forever.
    pub connect_timeout: Option<Duration>,
    /// Bound on each request, pipeline, `send` or `recv` (write plus read).
    /// Default 30 s; `None` waits forever.
    pub request_timeout: Option<Duration>,
    /// If set, `A 1 <secret>` is sent on connect and on every reconnect.
    pub auth_secret: Option<Vec<u8>>,
    /// Re-establish a broken connection on the next call (default true).
    pub reconnect: bool,
    /// Longest response line accepted before the client gives up with a
    /// protocol error (default 256 MiB).
    pub max_response_line: usize,
}

impl ClientOptions {
    pub fn new() -> Self {
        ClientOptions {
            connect_timeout: Some(Duration::from_secs(5)),
            request_timeout: Some(Duration::from_secs(30)),
            auth_secret: None,
            reconnect: true,
            max_response_line: 256 << 20,
        }
    }

    pub fn connect_timeout(mut self, t: Option<Duration>) -> Self {
        self.connect_timeout = t;
        self
    }

    pub fn request_timeout(mut self, t: Option<Duration>) -> Self {
        self.request_timeout = t;
        self
    }

    pub fn auth_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.auth_secret = Some(secret.as_ref().to_vec());
        self
    }

    pub fn reconnect(mut self, on: bool) -> Self {
        self.reconnect = on;
        self
    }

    pub fn max_response_line(mut self, bytes: usize) -> Self {
        self.max_response_line = bytes;
        self
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Never prints the secret.
impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field(
                "auth_secret",
                &self.auth_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("reconnect", &self.reconnect)
            .field("max_response_line", &self.max_response_line)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_secret() {
        let o = ClientOptions::new().auth_secret("hunter2");
        let s = format!("{o:?}");
        assert!(!s.contains("hunter2"), "{s}");
        assert!(s.contains("redacted"));
    }
}
