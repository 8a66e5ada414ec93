//! SASL on the binary protocol, as memcached started with `-S` speaks it:
//! which opcodes a connection may send before it has authenticated, and
//! the PLAIN mechanism's message (RFC 4616). Checking the credentials is
//! the server's business.

use super::Opcode;

/// What `SaslListMechs` answers: the mechanisms served, space-separated.
pub const MECHANISMS: &str = "PLAIN";

/// The body of a successful `SaslAuth` or `SaslStep`.
pub const AUTHENTICATED: &str = "Authenticated";

/// Whether `opcode` may run before authentication: the SASL opcodes and
/// Version, as in memcached. Anything else is answered "Auth failure." and
/// the connection closes.
pub fn allowed_before_auth(opcode: u8) -> bool {
    matches!(
        Opcode::from_u8(opcode),
        Some(Opcode::SaslListMechs | Opcode::SaslAuth | Opcode::SaslStep | Opcode::Version)
    )
}

/// Whether a mechanism named by a `SaslAuth`/`SaslStep` key is PLAIN
/// (names compare without regard to case, as Cyrus SASL compares them).
pub fn is_plain(mechanism: &[u8]) -> bool {
    mechanism.eq_ignore_ascii_case(b"PLAIN")
}

/// A PLAIN message: `[authzid] NUL authcid NUL password`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlainCredentials<'a> {
    /// Whom the client acts for (empty: itself).
    pub authzid: &'a [u8],
    pub user: &'a [u8],
    pub password: &'a [u8],
}

/// Splits a PLAIN message; None unless it has exactly two NULs and a
/// non-empty user (RFC 4616).
pub fn parse_plain(message: &[u8]) -> Option<PlainCredentials<'_>> {
    let mut parts = message.split(|&b| b == 0);
    let authzid = parts.next()?;
    let user = parts.next()?;
    let password = parts.next()?;
    if parts.next().is_some() || user.is_empty() {
        return None;
    }
    Some(PlainCredentials {
        authzid,
        user,
        password,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_messages() {
        let c = parse_plain(b"\0alice\0pw").expect("plain");
        assert_eq!(
            (c.authzid, c.user, c.password),
            (&b""[..], &b"alice"[..], &b"pw"[..])
        );
        let c = parse_plain(b"bob\0alice\0").expect("empty password");
        assert_eq!(
            (c.authzid, c.user, c.password),
            (&b"bob"[..], &b"alice"[..], &b""[..])
        );
        for bad in [
            &b""[..],
            b"alice",
            b"\0alice",
            b"\0\0pw",
            b"\0alice\0pw\0",
            b"a\0b\0c\0d",
        ] {
            assert_eq!(parse_plain(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn what_runs_before_auth() {
        for op in [0x20, 0x21, 0x22, 0x0b] {
            assert!(allowed_before_auth(op), "{op:#x}");
        }
        for op in [0x00, 0x07, 0x09, 0x0a, 0x10, 0x1b, 0x55, 0xff] {
            assert!(!allowed_before_auth(op), "{op:#x}");
        }
        assert!(is_plain(b"plain") && is_plain(b"PLAIN") && !is_plain(b"CRAM-MD5"));
    }
}
