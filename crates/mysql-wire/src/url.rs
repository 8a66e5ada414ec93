//! `mysql://user[:password]@host[:port][/db][?options]` URLs.

/// Where and as whom to connect.
#[derive(Clone, PartialEq, Eq)]
pub struct MysqlUrl {
    pub user: String,
    pub password: String,
    pub host: String,
    pub port: u16,
    pub database: Option<String>,
}

impl std::fmt::Debug for MysqlUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlUrl")
            .field("user", &self.user)
            .field("password", &"***")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
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
        Ok(())
    }
}

impl MysqlUrl {
    /// Parses a URL; user, password and database may be percent-encoded
    /// (a password may also hold `/`, `#`, `@` and `:` as they are: the
    /// host starts after the last `@`). Query options are ignored. An error
    /// never repeats the URL (it may hold a password).
    pub fn parse(url: &str) -> Result<MysqlUrl, String> {
        let Some(rest) = url.strip_prefix("mysql://") else {
            return Err("expected mysql://user:password@host:port".into());
        };
        let rest = rest.split('?').next().unwrap_or("");
        let (auth, hostpart) = match rest.rfind('@') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => ("", rest),
        };
        let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
        let (hostport, db) = match hostpart.split_once('/') {
            Some((h, d)) => (h, (!d.is_empty()).then(|| d.to_string())),
            None => (hostpart, None),
        };
        if hostport.is_empty() {
            return Err("no host: write mysql://user:password@HOST:port".into());
        }
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse()
                    .map_err(|_| format!("the port {p:?} is not a number"))?,
            ),
            None => (hostport, 3306),
        };
        if host.is_empty() {
            return Err("no host: write mysql://user:password@HOST:port".into());
        }
        Ok(MysqlUrl {
            user: percent_decode(if user.is_empty() { "root" } else { user }),
            password: percent_decode(password),
            host: host.to_string(),
            port,
            database: db.map(|d| percent_decode(&d)),
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
        let u = MysqlUrl::parse("mysql://root@localhost/test?x=1").unwrap();
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
    }
}
