//! The connection handshake: the server's greeting and the client's answer.

use crate::number::{get_le, put_lenenc};
use crate::packet::PacketWriter;

/// Capability flags, as the protocol numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities(pub u32);

impl Capabilities {
    pub const LONG_PASSWORD: u32 = 1;
    /// UPDATE answers the rows it matched, not only those it changed.
    pub const FOUND_ROWS: u32 = 2;
    pub const LONG_FLAG: u32 = 4;
    pub const CONNECT_WITH_DB: u32 = 8;
    pub const PROTOCOL_41: u32 = 0x200;
    pub const SSL: u32 = 0x800;
    pub const TRANSACTIONS: u32 = 0x2000;
    pub const SECURE_CONNECTION: u32 = 0x8000;
    pub const MULTI_RESULTS: u32 = 0x2_0000;
    pub const PLUGIN_AUTH: u32 = 0x8_0000;
    pub const PLUGIN_AUTH_LENENC: u32 = 0x20_0000;
    /// Result sets end with an OK packet instead of an EOF packet.
    pub const DEPRECATE_EOF: u32 = 0x100_0000;

    pub fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
}

/// The server's first packet (protocol version 10).
#[derive(Debug, Clone)]
pub struct Greeting {
    pub server_version: String,
    pub connection_id: u32,
    pub capabilities: Capabilities,
    /// The nonce the authentication methods scramble with (20 bytes).
    pub scramble: Vec<u8>,
    /// The server's default authentication method.
    pub auth_plugin: String,
}

impl Greeting {
    pub fn parse(p: &[u8]) -> Result<Greeting, String> {
        let short = || "the server's greeting is cut short".to_string();
        match p.first() {
            Some(10) => {}
            Some(0xff) => return Err(crate::result::ErrPacket::parse(p).to_string()),
            other => return Err(format!("unsupported handshake protocol {other:?}")),
        }
        let nul = p[1..].iter().position(|&b| b == 0).ok_or_else(short)?;
        let server_version = String::from_utf8_lossy(&p[1..1 + nul]).into_owned();
        let mut i = 1 + nul + 1;
        let connection_id = get_le(p, i, 4).ok_or_else(short)? as u32;
        i += 4;
        let mut scramble = p.get(i..i + 8).ok_or_else(short)?.to_vec();
        i += 9; // part 1 and a filler byte
        let mut caps = get_le(p, i, 2).ok_or_else(short)? as u32;
        i += 2;
        let mut auth_plugin = String::new();
        if p.len() > i {
            // charset(1) status(2) capabilities high(2) scramble length(1) reserved(10)
            caps |= (get_le(p, i + 3, 2).ok_or_else(short)? as u32) << 16;
            let scramble_len = usize::from(*p.get(i + 5).ok_or_else(short)?);
            i += 16;
            if caps & Capabilities::SECURE_CONNECTION != 0 {
                let n = scramble_len.saturating_sub(8).max(13);
                let part2 = p.get(i..(i + n).min(p.len())).ok_or_else(short)?;
                // The last byte of part 2 is a NUL terminator.
                scramble.extend_from_slice(&part2[..part2.len().min(12)]);
                i += n;
            }
            if caps & Capabilities::PLUGIN_AUTH != 0 {
                let rest = p.get(i..).unwrap_or(&[]);
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                auth_plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
            }
        }
        Ok(Greeting {
            server_version,
            connection_id,
            capabilities: Capabilities(caps),
            scramble,
            auth_plugin,
        })
    }

    /// MariaDB announces itself in the version string.
    pub fn is_mariadb(&self) -> bool {
        self.server_version.contains("MariaDB")
    }

    /// The server's kind and version number, from the version string.
    pub fn server(&self) -> ServerVersion {
        ServerVersion::parse(&self.server_version)
    }
}

/// Which kind of server speaks: the SQL dialects and status variables
/// differ between the first two; vtgate speaks MySQL's protocol in front
/// of MySQL shards, with what its planner supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    MariaDb,
    MySql,
    /// vtgate, Vitess's MySQL-protocol front: it announces a MySQL version
    /// followed by `-Vitess` (its `--mysql-server-version` default).
    Vitess,
}

impl Flavor {
    /// MariaDB's SQL and variables, not MySQL's (which vtgate speaks).
    pub fn is_mariadb(self) -> bool {
        self == Flavor::MariaDb
    }

    pub fn name(self) -> &'static str {
        match self {
            Flavor::MariaDb => "MariaDB",
            Flavor::MySql => "MySQL",
            Flavor::Vitess => "Vitess",
        }
    }
}

/// Which server answered, and its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerVersion {
    pub flavor: Flavor,
    /// (major, minor, patch); zeros when the string has no number.
    pub number: (u32, u32, u32),
}

impl ServerVersion {
    /// `8.0.31`, `8.0.31-0ubuntu0.22.04.1`, `5.5.5-10.11.6-MariaDB-0+deb12u1`
    /// (MariaDB puts `5.5.5-` first for old clients), `11.4.2-MariaDB`,
    /// `8.0.40-Vitess`.
    pub fn parse(version: &str) -> ServerVersion {
        let flavor = if version.contains("MariaDB") {
            Flavor::MariaDb
        } else if version.contains("-Vitess") {
            Flavor::Vitess
        } else {
            Flavor::MySql
        };
        let text = if flavor == Flavor::MariaDb {
            version.strip_prefix("5.5.5-").unwrap_or(version)
        } else {
            version
        };
        let mut parts = text
            .split(|c: char| !c.is_ascii_digit())
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let number = (
            parts.next().unwrap_or(0),
            parts.next().unwrap_or(0),
            parts.next().unwrap_or(0),
        );
        ServerVersion { flavor, number }
    }

    /// A MariaDB server (its SQL and variables, not MySQL's).
    pub fn is_mariadb(&self) -> bool {
        self.flavor.is_mariadb()
    }

    /// vtgate in front of a keyspace, not a server of its own.
    pub fn is_vitess(&self) -> bool {
        self.flavor == Flavor::Vitess
    }

    pub fn name(&self) -> &'static str {
        self.flavor.name()
    }

    pub fn at_least(&self, major: u32, minor: u32, patch: u32) -> bool {
        self.number >= (major, minor, patch)
    }
}

impl std::fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, b, c) = self.number;
        write!(f, "{} {a}.{b}.{c}", self.name())
    }
}

/// The client's answer to the greeting.
pub struct HandshakeResponse<'a> {
    pub capabilities: u32,
    pub user: &'a str,
    pub auth_response: &'a [u8],
    pub auth_plugin: &'a str,
    pub database: Option<&'a str>,
    /// Collation number for the connection (45: utf8mb4_general_ci).
    pub collation: u8,
}

impl HandshakeResponse<'_> {
    /// Appends the packet (sequence number 1, after the greeting's 0; 2
    /// when an SSL request went first).
    pub fn write(&self, out: &mut Vec<u8>, seq: u8) {
        let w = PacketWriter::begin(out, seq);
        self.write_head(out);
        out.extend_from_slice(self.user.as_bytes());
        out.push(0);
        if self.capabilities & Capabilities::PLUGIN_AUTH_LENENC != 0 {
            put_lenenc(out, self.auth_response.len() as u64);
        } else {
            out.push(self.auth_response.len().min(255) as u8);
        }
        out.extend_from_slice(self.auth_response);
        if let Some(db) = self.database {
            out.extend_from_slice(db.as_bytes());
            out.push(0);
        }
        if self.capabilities & Capabilities::PLUGIN_AUTH != 0 {
            out.extend_from_slice(self.auth_plugin.as_bytes());
            out.push(0);
        }
        w.finish(out);
    }

    /// The short packet that asks for TLS before the real answer.
    pub fn write_ssl_request(&self, out: &mut Vec<u8>) {
        let w = PacketWriter::begin(out, 1);
        self.write_head(out);
        w.finish(out);
    }

    fn write_head(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.capabilities.to_le_bytes());
        out.extend_from_slice(&(1u32 << 30).to_le_bytes());
        out.push(self.collation);
        out.extend_from_slice(&[0; 23]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mariadb_greeting() -> Vec<u8> {
        let mut p = vec![10];
        p.extend_from_slice(b"5.5.5-10.11.19-MariaDB\0");
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(b"abcdefgh\0");
        let caps: u32 = Capabilities::PROTOCOL_41
            | Capabilities::SECURE_CONNECTION
            | Capabilities::PLUGIN_AUTH
            | Capabilities::DEPRECATE_EOF;
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0; 10]);
        p.extend_from_slice(b"ijklmnopqrst\0");
        p.extend_from_slice(b"mysql_native_password\0");
        p
    }

    #[test]
    fn parses_a_greeting() {
        let g = Greeting::parse(&mariadb_greeting()).unwrap();
        assert_eq!(g.connection_id, 7);
        assert_eq!(g.scramble, b"abcdefghijklmnopqrst");
        assert_eq!(g.auth_plugin, "mysql_native_password");
        assert!(g.is_mariadb());
        assert!(g.capabilities.has(Capabilities::DEPRECATE_EOF));
    }

    #[test]
    fn server_versions() {
        let v = ServerVersion::parse("5.5.5-10.11.19-MariaDB-0+deb12u1");
        assert_eq!((v.flavor, v.number), (Flavor::MariaDb, (10, 11, 19)));
        assert_eq!(v.to_string(), "MariaDB 10.11.19");
        let v = ServerVersion::parse("8.0.31");
        assert_eq!((v.flavor, v.number), (Flavor::MySql, (8, 0, 31)));
        assert!(v.at_least(8, 0, 17) && !v.at_least(8, 0, 32));
        let v = ServerVersion::parse("8.0.36-0ubuntu0.22.04.1");
        assert_eq!(v.number, (8, 0, 36));
        assert_eq!(ServerVersion::parse("11.4.2-MariaDB").number, (11, 4, 2));
        assert_eq!(ServerVersion::parse("").number, (0, 0, 0));
        let v = ServerVersion::parse("8.0.40-Vitess");
        assert_eq!((v.flavor, v.number), (Flavor::Vitess, (8, 0, 40)));
        assert_eq!(v.to_string(), "Vitess 8.0.40");
        assert!(!ServerVersion::parse("8.0.31").is_vitess());
    }

    #[test]
    fn cut_greetings_are_errors() {
        let g = mariadb_greeting();
        for n in [0, 1, 10, 20] {
            assert!(Greeting::parse(&g[..n]).is_err(), "{n} bytes");
        }
    }

    #[test]
    fn response_layout() {
        let r = HandshakeResponse {
            capabilities: Capabilities::PROTOCOL_41 | Capabilities::PLUGIN_AUTH,
            user: "hsd",
            auth_response: &[1, 2, 3],
            auth_plugin: "mysql_native_password",
            database: None,
            collation: 45,
        };
        let mut out = Vec::new();
        r.write(&mut out, 1);
        assert_eq!(out[3], 1);
        let payload = &out[4..];
        assert_eq!(&payload[32..36], b"hsd\0");
        assert_eq!(&payload[36..40], &[3, 1, 2, 3]);
        assert_eq!(&payload[40..], b"mysql_native_password\0");
    }
}
