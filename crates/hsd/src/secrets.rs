//! The ports' shared secrets: values that must never reach a log line, an
//! error message or `{:?}`. (The backend's password is hidden the same way
//! by `mysql_wire::MysqlUrl`.) Printing a `Config` is safe by construction.

use std::fmt;
use std::path::Path;

/// A shared secret (`--plain-secret`, `--plain-secret-wr`). Never empty:
/// an empty secret would let anyone in with `A 1` and nothing after it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(Vec<u8>);

impl Secret {
    /// Refuses an empty secret; `what` names its source for the message.
    pub(crate) fn new(bytes: Vec<u8>, what: &str) -> anyhow::Result<Secret> {
        anyhow::ensure!(
            !bytes.is_empty(),
            "{what} is empty: an empty secret would let any client in; give a non-empty secret, or none to leave the port open"
        );
        Ok(Secret(bytes))
    }

    /// Reads a secret from a file; trailing CR and LF are not part of it.
    pub(crate) fn from_file(path: &Path, what: &str) -> anyhow::Result<Secret> {
        let bytes = read_trimmed(path)
            .map_err(|e| anyhow::anyhow!("cannot read {what} {} ({e})", path.display()))?;
        Secret::new(bytes, &format!("{what} {}", path.display()))
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The file's bytes without trailing CR/LF (editors add a final newline).
pub(crate) fn read_trimmed(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut s = std::fs::read(path)?;
    while matches!(s.last(), Some(b'\n' | b'\r')) {
        s.pop();
    }
    Ok(s)
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
}
