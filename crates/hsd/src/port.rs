//! A listening port: its kind, its secret, and the settings every
//! connection accepted on it gets.

use crate::limits::ConnectionLimits;
use sha2::{Digest, Sha256};
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio_rustls::TlsAcceptor;

/// Which port a connection came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortKind {
    /// Finds only; writes answer `readonly`.
    Read,
    Write,
    /// The memcached port: reads and writes on one connection, reads
    /// routed as the read port's.
    Memcached,
}

#[derive(Clone)]
pub(crate) struct Port {
    pub(crate) kind: PortKind,
    /// Whether `A` must be given before other requests.
    has_secret: bool,
    /// SHA-256 of the secret (of the empty secret on a port without one),
    /// computed once: an `A` then costs the same whatever the secret.
    secret_digest: [u8; 32],
    pub(crate) limits: ConnectionLimits,
    pub(crate) tls: Option<TlsAcceptor>,
    /// How long shutdown waits for connections to finish what they read.
    pub(crate) drain: Duration,
}

impl Port {
    pub(crate) fn new(
        kind: PortKind,
        secret: Option<&[u8]>,
        limits: ConnectionLimits,
        tls: Option<TlsAcceptor>,
        drain: Duration,
    ) -> Port {
        Port {
            kind,
            has_secret: secret.is_some(),
            secret_digest: Sha256::digest(secret.unwrap_or_default()).into(),
            limits,
            tls,
            drain,
        }
    }

    pub(crate) fn has_secret(&self) -> bool {
        self.has_secret
    }

    /// Whether `given` is the port's secret (the empty one on a port
    /// without a secret). Digests of equal length, compared in constant
    /// time: how long it takes tells nothing about the secret, not even its
    /// length.
    pub(crate) fn secret_matches(&self, given: &[u8]) -> bool {
        let given = Sha256::digest(given);
        bool::from(self.secret_digest.ct_eq(given.as_slice()))
    }
}
