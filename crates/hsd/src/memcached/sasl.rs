//! SASL on the memcached port (`--memcached-sasl-user`): the one login it
//! accepts and a connection's way through the PLAIN mechanism, as memcached
//! started with `-S` leads it (mc-proto's `binary::sasl` has the wire side).
//! Every `SaslAuth` or `SaslStep` first forgets an earlier success, as
//! memcached does: a failed second attempt leaves the connection
//! unauthenticated. Failures are also counted by the client's address
//! across connections (`sasl_guard`): an address refused for failing too
//! often fails every login at once, the right password too.

use super::sasl_guard::{SaslGuard, Verdict};
use crate::secrets::Secret;
use mc_proto::binary::sasl::{is_plain, parse_plain};
use sha2::{Digest, Sha256};
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;
use subtle::ConstantTimeEq;

/// A connection that fails this many times is closed after the last
/// answer (as HandlerSocket's `A`; memcached itself lets a client guess on).
pub(crate) const MAX_SASL_FAILURES: u32 = 8;

/// The user and password a client must give.
#[derive(Clone)]
pub(crate) struct SaslLogin {
    user: Vec<u8>,
    /// SHA-256 of the password: compared in constant time whatever its length.
    password_digest: [u8; 32],
}

impl fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslLogin")
            .field("user", &String::from_utf8_lossy(&self.user))
            .field("password", &"***")
            .finish()
    }
}

impl SaslLogin {
    pub(crate) fn new(user: String, password: Secret) -> anyhow::Result<SaslLogin> {
        anyhow::ensure!(
            !user.is_empty() && !user.contains('\0'),
            "--memcached-sasl-user must be a non-empty name without NUL"
        );
        Ok(SaslLogin {
            user: user.into_bytes(),
            password_digest: Sha256::digest(password.into_bytes()).into(),
        })
    }

    /// Whether a PLAIN message names this login: the user, the password,
    /// and no one else to act for (an empty authzid, or the user's own).
    fn accepts(&self, message: &[u8]) -> bool {
        let Some(given) = parse_plain(message) else {
            return false;
        };
        let password = Sha256::digest(given.password);
        let password_ok = bool::from(self.password_digest.ct_eq(password.as_slice()));
        let user_ok = given.user == self.user.as_slice();
        let acts_for_self = given.authzid.is_empty() || given.authzid == given.user;
        password_ok & user_ok & acts_for_self
    }
}

/// What a SASL request comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SaslOutcome {
    Authenticated,
    /// PLAIN without its message: send it with `SaslStep`.
    Continue,
    Failed,
    /// Failed, and too often: answer, then close.
    FailedTooOften,
}

/// One connection's authentication.
#[derive(Debug)]
pub(crate) struct SaslState {
    login: Option<Arc<SaslLogin>>,
    authenticated: bool,
    /// A PLAIN `SaslAuth` came without its message.
    awaiting_step: bool,
    failures: u32,
    /// Failures by address across connections (None: this connection's
    /// bound only).
    guard: Option<Arc<SaslGuard>>,
    peer: IpAddr,
}

impl SaslState {
    pub(crate) fn new(
        login: Option<Arc<SaslLogin>>,
        guard: Option<Arc<SaslGuard>>,
        peer: IpAddr,
    ) -> SaslState {
        SaslState {
            login,
            authenticated: false,
            awaiting_step: false,
            failures: 0,
            guard,
            peer,
        }
    }

    /// Whether the client's address is refused now (then the login fails
    /// at once and the connection closes, unchecked).
    fn refused(&mut self) -> bool {
        let refused = self
            .guard
            .as_ref()
            .is_some_and(|g| !g.admits(self.peer, Instant::now()));
        if refused {
            self.awaiting_step = false;
        }
        refused
    }

    /// Whether the port has SASL at all.
    pub(crate) fn enabled(&self) -> bool {
        self.login.is_some()
    }

    /// Whether requests other than SASL's and Version are refused now.
    pub(crate) fn required(&self) -> bool {
        self.login.is_some() && !self.authenticated
    }

    /// `SaslAuth`: starts the mechanism, with its first message.
    pub(crate) fn auth(&mut self, mechanism: &[u8], message: &[u8]) -> SaslOutcome {
        self.authenticated = false;
        self.awaiting_step = false;
        if self.refused() {
            return SaslOutcome::FailedTooOften;
        }
        if !is_plain(mechanism) {
            return self.failed();
        }
        if message.is_empty() {
            self.awaiting_step = true;
            return SaslOutcome::Continue;
        }
        self.check(message)
    }

    /// `SaslStep`: the message a `Continue` asked for.
    pub(crate) fn step(&mut self, mechanism: &[u8], message: &[u8]) -> SaslOutcome {
        self.authenticated = false;
        if self.refused() {
            return SaslOutcome::FailedTooOften;
        }
        let awaited = std::mem::take(&mut self.awaiting_step);
        if !awaited || !is_plain(mechanism) {
            return self.failed();
        }
        self.check(message)
    }

    fn check(&mut self, message: &[u8]) -> SaslOutcome {
        match &self.login {
            Some(login) if login.accepts(message) => {
                self.authenticated = true;
                if let Some(guard) = &self.guard {
                    guard.succeeded(self.peer);
                }
                SaslOutcome::Authenticated
            }
            _ => self.failed(),
        }
    }

    fn failed(&mut self) -> SaslOutcome {
        self.failures += 1;
        let blocked = self
            .guard
            .as_ref()
            .is_some_and(|g| g.failed(self.peer, Instant::now()) == Verdict::Blocked);
        if blocked || self.failures >= MAX_SASL_FAILURES {
            SaslOutcome::FailedTooOften
        } else {
            SaslOutcome::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SaslState {
        let secret = Secret::new(b"s3cret".to_vec(), "pw").expect("secret");
        let login = SaslLogin::new("alice".into(), secret).expect("login");
        assert_eq!(
            format!("{login:?}"),
            r#"SaslLogin { user: "alice", password: "***" }"#
        );
        SaslState::new(
            Some(Arc::new(login)),
            None,
            std::net::Ipv4Addr::LOCALHOST.into(),
        )
    }

    #[test]
    fn plain_as_memcached_leads_it() {
        let mut s = state();
        assert!(s.enabled() && s.required());
        assert_eq!(
            s.auth(b"PLAIN", b"\0alice\0s3cret"),
            SaslOutcome::Authenticated
        );
        assert!(!s.required());
        // A second attempt that fails forgets the first success.
        assert_eq!(s.auth(b"PLAIN", b"\0alice\0nope"), SaslOutcome::Failed);
        assert!(s.required());
        assert_eq!(
            s.auth(b"plain", b"alice\0alice\0s3cret"),
            SaslOutcome::Authenticated
        );
        // The message in a step, after an empty auth.
        assert_eq!(s.auth(b"PLAIN", b""), SaslOutcome::Continue);
        assert!(s.required());
        assert_eq!(
            s.step(b"PLAIN", b"\0alice\0s3cret"),
            SaslOutcome::Authenticated
        );
        // A step nobody asked for fails, and so does a stranger.
        assert_eq!(s.step(b"PLAIN", b"\0alice\0s3cret"), SaslOutcome::Failed);
        for (mech, msg) in [
            (&b"CRAM-MD5"[..], &b"\0alice\0s3cret"[..]),
            (b"PLAIN", b"bob\0alice\0s3cret"),
            (b"PLAIN", b"\0Alice\0s3cret"),
            (b"PLAIN", b"\0alice\0s3cret\0"),
        ] {
            assert_eq!(s.auth(mech, msg), SaslOutcome::Failed, "{msg:?}");
        }
        let mut tries = 0;
        while s.auth(b"PLAIN", b"\0alice\0x") == SaslOutcome::Failed {
            tries += 1;
        }
        // Six failures above, one more here, and the eighth closes.
        assert_eq!(tries, 1);
        assert_eq!(MAX_SASL_FAILURES, 8);
        assert!(!SaslState::new(None, None, std::net::Ipv4Addr::LOCALHOST.into()).required());
    }
}
