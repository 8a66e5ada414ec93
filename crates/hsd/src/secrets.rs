//! Values that must never reach a log line, an error message or `{:?}`: the
//! ports' shared secrets and the backend URL's password. Each is a type
//! whose `Debug` (and `Display`, where it has one) hides the secret part, so
//! printing a `Config` is safe by construction.

use std::fmt;
use std::ops::Deref;
use std::path::Path;

/// A shared secret (`--plain-secret`, `--plain-secret-wr`). Never empty:
/// an empty secret would let anyone in with `A 1` and nothing after it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Refuses an empty secret; `what` names its source for the message.
    pub fn new(bytes: Vec<u8>, what: &str) -> anyhow::Result<Secret> {
        anyhow::ensure!(
            !bytes.is_empty(),
            "{what} is empty: an empty secret would let any client in; give a non-empty secret, or none to leave the port open"
        );
        Ok(Secret(bytes))
    }

    /// Reads a secret from a file; trailing CR and LF are not part of it.
    pub fn from_file(path: &Path, what: &str) -> anyhow::Result<Secret> {
        let bytes = read_trimmed(path)
            .map_err(|e| anyhow::anyhow!("cannot read {what} {} ({e})", path.display()))?;
        Secret::new(bytes, &format!("{what} {}", path.display()))
    }

    /// The secret itself, for the constant-time comparison.
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The file's bytes without trailing CR/LF (editors add a final newline).
pub fn read_trimmed(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut s = std::fs::read(path)?;
    while matches!(s.last(), Some(b'\n' | b'\r')) {
        s.pop();
    }
    Ok(s)
}

/// The `--backend` value: `sqlite` or a `mysql://` URL that may carry a
/// password. Reads as a `str`; prints with the password as `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct BackendUrl(String);

impl BackendUrl {
    pub fn new(url: String) -> BackendUrl {
        BackendUrl(url)
    }

    /// Whether the URL's user part carries a password.
    pub fn has_password(&self) -> bool {
        redact_url(&self.0) != self.0
    }

    /// The URL with the password from `path` put in: the URL must name a user
    /// and have no password of its own.
    pub fn with_password_file(self, path: &Path) -> anyhow::Result<BackendUrl> {
        let what = format!("backend password file {}", path.display());
        let url = &self.0;
        let Some(rest) = url.strip_prefix("mysql://") else {
            anyhow::bail!(
                "a backend password file needs a mysql:// backend, not {:?}",
                redact_url(url)
            );
        };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let Some(at) = rest[..authority_end].rfind('@') else {
            anyhow::bail!(
                "the backend URL {} names no user: write mysql://USER@host:port with the {what}",
                redact_url(url)
            );
        };
        let user = &rest[..at];
        anyhow::ensure!(
            !user.contains(':'),
            "the backend URL {} already has a password: remove it from the URL or drop the {what}",
            redact_url(url)
        );
        anyhow::ensure!(
            !user.is_empty(),
            "the backend URL {} names no user: write mysql://USER@host:port with the {what}",
            redact_url(url)
        );
        let password =
            read_trimmed(path).map_err(|e| anyhow::anyhow!("cannot read {what} ({e})"))?;
        anyhow::ensure!(
            !password.is_empty(),
            "{what} is empty: put the MySQL password in it"
        );
        Ok(BackendUrl(format!(
            "mysql://{user}:{}{}",
            percent_encode(&password),
            &rest[at..]
        )))
    }
}

impl Deref for BackendUrl {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for BackendUrl {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Debug for BackendUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&redact_url(&self.0), f)
    }
}

impl fmt::Display for BackendUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

/// A URL with the password of its user part replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end + 3],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

/// Percent-encodes every byte but URL-unreserved ones, so any password fits
/// in the URL's user part (the MySQL driver decodes it).
fn percent_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_print_as_stars() {
        let s = Secret::new(b"hunter2".to_vec(), "secret").unwrap();
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(format!("{:?}", Some(s)), "Some(Secret(***))");
        let err = Secret::new(Vec::new(), "--plain-secret").unwrap_err();
        assert!(
            err.to_string().starts_with("--plain-secret is empty"),
            "{err}"
        );
    }

    #[test]
    fn backend_url_hides_its_password() {
        let u = BackendUrl::new("mysql://app:hunter2@db:3306/x?a=b".into());
        assert_eq!(format!("{u:?}"), "\"mysql://app:***@db:3306/x?a=b\"");
        assert_eq!(u.to_string(), "mysql://app:***@db:3306/x?a=b");
        assert!(u.starts_with("mysql://app:hunter2@"));
        assert_eq!(redact_url("mysql://app@db"), "mysql://app@db");
        assert_eq!(redact_url("mysql://db:3306/a@b"), "mysql://db:3306/a@b");
        assert_eq!(redact_url("mysql://a:p@ss@db"), "mysql://a:***@db");
        assert_eq!(redact_url("sqlite"), "sqlite");
    }

    #[test]
    fn password_file_goes_into_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pw");
        std::fs::write(&f, "p@ss:w/rd é\n").unwrap();
        let u = BackendUrl::new("mysql://app@db:3306/x".into())
            .with_password_file(&f)
            .unwrap();
        assert_eq!(&*u, "mysql://app:p%40ss%3Aw%2Frd%20%C3%A9@db:3306/x");
        assert_eq!(u.to_string(), "mysql://app:***@db:3306/x");

        let refused = |url: &str| {
            BackendUrl::new(url.into())
                .with_password_file(&f)
                .unwrap_err()
                .to_string()
        };
        assert!(refused("mysql://app:old@db").contains("already has a password"));
        assert!(!refused("mysql://app:old@db").contains("old"));
        assert!(refused("mysql://db:3306").contains("names no user"));
        assert!(refused("sqlite").contains("needs a mysql:// backend"));
        std::fs::write(&f, "\n").unwrap();
        assert!(refused("mysql://app@db").contains("is empty"));
    }
}
