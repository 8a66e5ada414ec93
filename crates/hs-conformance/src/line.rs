//! A request line as the generator builds it: tokens that are either protocol
//! text (sent as is), values (encoded with hs-proto's codec, the project's one
//! wire implementation), or the database name, which differs per target.

use hs_proto::encode_token;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// Sent verbatim: commands, numbers, operators, deliberate garbage.
    Raw(Vec<u8>),
    /// A value: NULL or bytes, encoded on the wire.
    Value(Option<Vec<u8>>),
    /// The database name of the target (the plugin's and hsd's copies differ).
    Db,
}

impl Token {
    pub fn raw(s: impl AsRef<[u8]>) -> Token {
        Token::Raw(s.as_ref().to_vec())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line {
    pub tokens: Vec<Token>,
}

impl Line {
    pub fn new() -> Line {
        Line::default()
    }

    pub fn raw(mut self, s: impl AsRef<[u8]>) -> Line {
        self.tokens.push(Token::raw(s));
        self
    }

    pub fn num(self, n: impl std::fmt::Display) -> Line {
        self.raw(n.to_string())
    }

    pub fn value(mut self, v: Option<Vec<u8>>) -> Line {
        self.tokens.push(Token::Value(v));
        self
    }

    pub fn db(mut self) -> Line {
        self.tokens.push(Token::Db);
        self
    }

    /// The bytes sent to a target, without the terminating LF.
    pub fn render(&self, db: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, t) in self.tokens.iter().enumerate() {
            if i > 0 {
                out.push(b'\t');
            }
            match t {
                Token::Raw(b) => out.extend_from_slice(b),
                Token::Value(v) => encode_token(v.as_deref(), &mut out),
                Token::Db => out.extend_from_slice(db.as_bytes()),
            }
        }
        out
    }

    /// The first token as text, for classifying requests.
    pub fn head(&self) -> &[u8] {
        match self.tokens.first() {
            Some(Token::Raw(b)) => b,
            _ => b"",
        }
    }
}

/// Bytes shown unambiguously: printable ASCII as is, TAB as `\t`, other
/// bytes escaped (the NULL token shows as `\x00`).
pub fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_values_encoded_and_db_substituted() {
        let line = Line::new()
            .raw("P")
            .num(0)
            .db()
            .value(Some(b"a\tb".to_vec()))
            .value(None)
            .value(Some(Vec::new()));
        assert_eq!(line.render("x"), b"P\t0\tx\ta\x01\x49b\t\x00\t".to_vec());
        assert_eq!(line.head(), b"P");
    }

    #[test]
    fn show_escapes_tabs_and_nul() {
        assert_eq!(show(b"0\t1\t\x00"), "0\\t1\\t\\x00");
    }
}
