//! `mysql://user[:password]@host[:port][/db][?option=value&...]` URLs.
//!
//! The options parsed are exactly the ones documented in docs/mysql.md; any
//! other is an error, so that a misspelt `ssl-mode` is refused at start
//! instead of silently leaving the link unencrypted.

/// How the link to the server is encrypted (`ssl-mode`, the names and
/// meanings of MySQL's own clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disabled,
    /// TLS when the server offers it, unverified; plain otherwise. The
    /// default, as in MySQL's clients.
    Preferred,
    /// TLS or no connection; the certificate is not verified.
    Required,
    /// TLS with a certificate signed by `ssl-ca` (name not checked).
    VerifyCa,
    /// As `VerifyCa`, and the certificate names the host of the URL.
    VerifyIdentity,
}

impl SslMode {
    fn parse(v: &str) -> Result<SslMode, String> {
        match v.to_ascii_uppercase().as_str() {
            "DISABLED" => Ok(SslMode::Disabled),
            "PREFERRED" => Ok(SslMode::Preferred),
            "REQUIRED" => Ok(SslMode::Required),
            "VERIFY_CA" => Ok(SslMode::VerifyCa),
            "VERIFY_IDENTITY" => Ok(SslMode::VerifyIdentity),
            _ => Err(format!(
                "ssl-mode={v:?} is not one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
            )),
        }
    }

    /// The server's certificate is checked against `ssl-ca`.
    pub fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyIdentity)
    }
}

impl std::fmt::Display for SslMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SslMode::Disabled => "DISABLED",
            SslMode::Preferred => "PREFERRED",
            SslMode::Required => "REQUIRED",
            SslMode::VerifyCa => "VERIFY_CA",
            SslMode::VerifyIdentity => "VERIFY_IDENTITY",
        })
    }
}

/// The options after `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlOptions {
    pub ssl_mode: SslMode,
    /// `ssl-ca=FILE`: the PEM certificate(s) that sign the server's.
    pub ssl_ca: Option<String>,
    /// `socket=PATH`: a Unix socket instead of TCP (host and port unused).
    pub socket: Option<String>,
    /// `get-server-public-key=true`: on caching_sha2_password's full
    /// authentication over a plain link, ask the server for its RSA key.
    /// Off by default: whatever answers at the address would get to choose
    /// the key the password is encrypted with.
    pub get_server_public_key: bool,
    /// `server-public-key-path=FILE`: the server's RSA public key (PEM),
    /// pinned: the password is encrypted with it, never with a key sent
    /// by the server.
    pub server_public_key_path: Option<String>,
    /// `commit-marker=DB.TABLE` (default `hsd.commit_marker`), or `off`:
    /// the table where each write group marks, in its own transaction,
    /// that it committed, so that a COMMIT whose answer never came can be
    /// resolved from another connection.
    pub commit_marker: Option<(String, String)>,
}

impl Default for UrlOptions {
    fn default() -> UrlOptions {
        UrlOptions {
            ssl_mode: SslMode::Preferred,
            ssl_ca: None,
            socket: None,
            get_server_public_key: false,
            server_public_key_path: None,
            commit_marker: Some(("hsd".into(), "commit_marker".into())),
        }
    }
}

/// The option names `MysqlUrl::parse` accepts.
pub const OPTION_NAMES: [&str; 6] = [
    "ssl-mode",
    "ssl-ca",
    "socket",
    "get-server-public-key",
    "server-public-key-path",
    "commit-marker",
];

/// Where and as whom to connect.
#[derive(Clone, PartialEq, Eq)]
pub struct MysqlUrl {
    pub user: String,
    pub password: String,
    pub host: String,
    pub port: u16,
    pub database: Option<String>,
    pub options: UrlOptions,
}

impl std::fmt::Debug for MysqlUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlUrl")
            .field("user", &self.user)
            .field("password", &"***")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
            .field("options", &self.options)
            .finish()
    }
}

/// The URL as logs and messages show it: the password never appears.
impl std::fmt::Display for MysqlUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let password = if self.password.is_empty() { "" } else { ":***" };
        write!(f, "mysql://{}{password}@{}", self.user, self.address())?;
        if let Some(db) = &self.database {
            write!(f, "/{db}")?;
        }
        if let Some(socket) = &self.options.socket {
            write!(f, "?socket={socket}")?;
        }
        Ok(())
    }
}

impl MysqlUrl {
    /// Parses a URL; user, password, database and option values may be
    /// percent-encoded (a password may also hold `/`, `#`, `@`, `:` and `?`
    /// as they are: the host starts after the last `@`, options after the
    /// first `?` behind it). An unknown option, or
    /// a bad value, is an error. An error never repeats the URL (it may
    /// hold a password).
    pub fn parse(url: &str) -> Result<MysqlUrl, String> {
        let Some(rest) = url.strip_prefix("mysql://") else {
            return Err("expected mysql://user:password@host:port".into());
        };
        // Options begin at the first `?` after the last `@`: a password
        // may hold `?` too.
        let options_from = rest.rfind('@').map_or(0, |at| at + 1).min(rest.len());
        let (rest, query) = match rest[options_from..].find('?') {
            Some(q) => (
                &rest[..options_from + q],
                Some(&rest[options_from + q + 1..]),
            ),
            None => (rest, None),
        };
        let (auth, hostpart) = match rest.rfind('@') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => ("", rest),
        };
        let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
        let (hostport, db) = match hostpart.split_once('/') {
            Some((h, d)) => (h, (!d.is_empty()).then(|| d.to_string())),
            None => (hostpart, None),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            // An IPv6 address in brackets: the colon inside is not the port's.
            Some((h, p)) if !p.contains(']') => (
                h,
                p.parse()
                    // Not repeated: a badly written URL may have put
                    // part of a password here.
                    .map_err(|_| "the port is not a number from 1 to 65535".to_string())?,
            ),
            _ => (hostport, 3306),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let options = parse_options(query.unwrap_or(""))?;
        // Once an empty host silently meant 127.0.0.1.
        let host = match (host.is_empty(), &options.socket) {
            (false, _) => host,
            (true, Some(_)) => "localhost",
            (true, None) => {
                return Err("no host: write mysql://user:password@HOST:port".into());
            }
        };
        Ok(MysqlUrl {
            user: percent_decode(if user.is_empty() { "root" } else { user }),
            password: percent_decode(password),
            host: host.to_string(),
            port,
            database: db.map(|d| percent_decode(&d)),
            options,
        })
    }

    /// `host:port`, for connecting.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Where the link goes, for messages: the socket path or `host:port`.
    pub fn endpoint(&self) -> String {
        match &self.options.socket {
            Some(path) => format!("socket {path}"),
            None => self.address(),
        }
    }
}

fn parse_options(query: &str) -> Result<UrlOptions, String> {
    let mut o = UrlOptions::default();
    let mut seen: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value);
        // MySQL's clients spell options with '-' or '_'.
        let canonical = OPTION_NAMES
            .iter()
            .find(|n| n.replace('-', "_") == name.replace('-', "_").to_ascii_lowercase())
            .copied()
            .ok_or_else(|| {
                format!(
                    "unknown option {name:?} in the URL (known: {})",
                    OPTION_NAMES.join(", ")
                )
            })?;
        if seen.contains(&canonical) {
            return Err(format!("option {canonical} is given twice in the URL"));
        }
        seen.push(canonical);
        let path = |what: &str| {
            if value.is_empty() {
                Err(format!("option {what} needs a path"))
            } else {
                Ok(Some(value.clone()))
            }
        };
        match canonical {
            "ssl-mode" => o.ssl_mode = SslMode::parse(&value)?,
            "ssl-ca" => o.ssl_ca = path("ssl-ca")?,
            "socket" => o.socket = path("socket")?,
            "server-public-key-path" => o.server_public_key_path = path("server-public-key-path")?,
            "get-server-public-key" => {
                o.get_server_public_key = match value.to_ascii_lowercase().as_str() {
                    "true" | "1" | "on" | "yes" => true,
                    "false" | "0" | "off" | "no" => false,
                    _ => {
                        return Err(format!(
                            "get-server-public-key={value:?} is not true or false"
                        ))
                    }
                }
            }
            "commit-marker" => {
                o.commit_marker = match value.split_once('.') {
                    _ if value.eq_ignore_ascii_case("off") => None,
                    Some((db, table))
                        if !db.is_empty() && !table.is_empty() && !table.contains('.') =>
                    {
                        Some((db.to_string(), table.to_string()))
                    }
                    _ => return Err(format!("commit-marker={value:?} is not DB.TABLE or off")),
                }
            }
            _ => unreachable!("every name in OPTION_NAMES is handled"),
        }
    }
    if o.ssl_mode.verifies() && o.ssl_ca.is_none() {
        return Err("ssl-mode=VERIFY_CA and VERIFY_IDENTITY need ssl-ca=FILE \
                    (the certificate that signs the server's)"
            .into());
    }
    if o.ssl_ca.is_some() && !o.ssl_mode.verifies() && seen.contains(&"ssl-mode") {
        return Err(
            "ssl-ca is only used with ssl-mode=VERIFY_CA or VERIFY_IDENTITY; drop one".into(),
        );
    }
    if o.ssl_ca.is_some() && !seen.contains(&"ssl-mode") {
        // As MySQL's clients do: a CA given means verify against it.
        o.ssl_mode = SslMode::VerifyCa;
    }
    Ok(o)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = MysqlUrl::parse("mysql://hsd:hsd@127.0.0.1:3307").unwrap();
        assert_eq!(
            (u.user.as_str(), u.password.as_str(), u.port),
            ("hsd", "hsd", 3307)
        );
        assert_eq!(u.database, None);
        assert_eq!(u.options, UrlOptions::default());
        let u = MysqlUrl::parse("mysql://root@localhost/test").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.database.as_deref()),
            ("localhost", 3306, Some("test"))
        );
        let u = MysqlUrl::parse("mysql://a:p%40ss@h:1/d").unwrap();
        assert_eq!(u.password, "p@ss");
        assert!(MysqlUrl::parse("http://x").is_err());
        assert!(MysqlUrl::parse("mysql://a@h:notaport").is_err());
        assert!(MysqlUrl::parse("mysql://u:p@").is_err());
        let u = MysqlUrl::parse("mysql://u:pa/ss#w%25@d@b:1/x").unwrap();
        assert_eq!((u.password.as_str(), u.host.as_str()), ("pa/ss#w%@d", "b"));
        assert_eq!(u.to_string(), "mysql://u:***@b:1/x");
        assert!(!format!("{u:?}").contains("p@ss"));
        assert_eq!(
            MysqlUrl::parse("mysql://a@::1:5").unwrap().address(),
            "[::1]:5"
        );
        assert_eq!(
            MysqlUrl::parse("mysql://a@[::1]:5").unwrap().address(),
            "[::1]:5"
        );
        assert_eq!(
            MysqlUrl::parse("mysql://a@[::1]").unwrap().address(),
            "[::1]:3306"
        );
        // A password may end in '%' or hold a lone one.
        assert_eq!(MysqlUrl::parse("mysql://a:x%@h").unwrap().password, "x%");
        assert_eq!(MysqlUrl::parse("mysql://a:%4@h").unwrap().password, "%4");
    }

    #[test]
    fn options_are_exactly_the_documented_ones() {
        let u = MysqlUrl::parse(
            "mysql://u:p@localhost/db?ssl-mode=verify_identity&ssl-ca=/etc/ca.pem\
             &get-server-public-key=true&server-public-key-path=/k.pem",
        )
        .unwrap();
        assert_eq!(u.options.ssl_mode, SslMode::VerifyIdentity);
        assert_eq!(u.options.ssl_ca.as_deref(), Some("/etc/ca.pem"));
        assert!(u.options.get_server_public_key);
        assert_eq!(u.options.server_public_key_path.as_deref(), Some("/k.pem"));
        assert_eq!(u.database.as_deref(), Some("db"));
        let u = MysqlUrl::parse("mysql://u@localhost/?socket=/run/my%20sql.sock").unwrap();
        assert_eq!(u.options.socket.as_deref(), Some("/run/my sql.sock"));
        assert_eq!(u.database, None);
        assert_eq!(u.endpoint(), "socket /run/my sql.sock");
        // MySQL's underscore spelling is the same option.
        let u = MysqlUrl::parse("mysql://u@h?ssl_mode=DISABLED").unwrap();
        assert_eq!(u.options.ssl_mode, SslMode::Disabled);
        // A CA alone means verify against it.
        let u = MysqlUrl::parse("mysql://u@h?ssl-ca=/ca.pem").unwrap();
        assert_eq!(u.options.ssl_mode, SslMode::VerifyCa);
        // The commit marker: hsd.commit_marker unless named or off.
        assert_eq!(
            u.options.commit_marker,
            Some(("hsd".into(), "commit_marker".into()))
        );
        let u = MysqlUrl::parse("mysql://u@h?commit-marker=ops.hsd_commits").unwrap();
        assert_eq!(
            u.options.commit_marker,
            Some(("ops".into(), "hsd_commits".into()))
        );
        let u = MysqlUrl::parse("mysql://u@h?commit_marker=OFF").unwrap();
        assert_eq!(u.options.commit_marker, None);
        for bad in ["x", ".t", "d.", "a.b.c", ""] {
            assert!(
                MysqlUrl::parse(&format!("mysql://u@h?commit-marker={bad}")).is_err(),
                "{bad}"
            );
        }
        for bad in [
            "mysql://u@h?x=1",
            "mysql://u@h?sslmode=REQUIRED",
            "mysql://u@h?ssl-mode=ON",
            "mysql://u@h?ssl-mode=VERIFY_CA",
            "mysql://u@h?ssl-mode=REQUIRED&ssl-ca=/ca.pem",
            "mysql://u@h?socket=",
            "mysql://u@h?get-server-public-key=maybe",
            "mysql://u@h?ssl-mode=DISABLED&ssl-mode=REQUIRED",
        ] {
            assert!(MysqlUrl::parse(bad).is_err(), "{bad} was accepted");
        }
        let e = MysqlUrl::parse("mysql://u@h?sslmode=REQUIRED").unwrap_err();
        assert!(e.contains("unknown option \"sslmode\""), "{e}");
        assert!(e.contains("ssl-mode"), "{e}");
    }
}
