//! A minimal MySQL/MariaDB client-protocol driver, just enough for the bench:
//! URL parsing, packet framing, the v10 handshake with mysql_native_password or
//! caching_sha2_password (fast path; full auth needs TLS/RSA and is refused),
//! COM_QUERY and COM_STMT_PREPARE. Hand-written so that the benchmark loop stays
//! the same lean async loop as for the other protocols.

use anyhow::{bail, Context, Result};
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::mysql::{parse_response, MyResp};
use crate::net::Conn;

#[derive(Debug, Clone)]
pub struct MyUrl {
    pub user: String,
    pub pass: String,
    pub host: String,
    pub port: u16,
    pub db: Option<String>,
}

impl MyUrl {
    /// `mysql://user[:pass]@host[:port][/db][?...]`
    pub fn parse(url: &str) -> Result<MyUrl> {
        let Some(rest) = url.strip_prefix("mysql://") else {
            bail!("expected mysql://user:pass@host:port/db, got {url:?}");
        };
        let rest = rest.split('?').next().unwrap_or("");
        let (auth, hostpart) = match rest.rfind('@') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => ("", rest),
        };
        let (user, pass) = match auth.split_once(':') {
            Some((u, p)) => (u, p),
            None => (auth, ""),
        };
        let (hostport, db) = match hostpart.split_once('/') {
            Some((h, d)) => (h, (!d.is_empty()).then(|| d.to_string())),
            None => (hostpart, None),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().with_context(|| format!("port {p:?}"))?),
            None => (hostport, 3306),
        };
        Ok(MyUrl {
            user: pct_decode(if user.is_empty() { "root" } else { user }),
            pass: pct_decode(pass),
            host: if host.is_empty() { "127.0.0.1" } else { host }.to_string(),
            port,
            db: db.map(|d| pct_decode(&d)),
        })
    }
}

fn pct_decode(s: &str) -> String {
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

/// One packet at the start of `buf`: (sequence id, payload range end, total length).
#[inline]
pub fn packet(buf: &[u8], pos: usize) -> Result<Option<(u8, usize, usize)>> {
    if buf.len() < pos + 4 {
        return Ok(None);
    }
    let len = u32::from_le_bytes([buf[pos], buf[pos + 1], buf[pos + 2], 0]) as usize;
    if len == 0xff_ffff {
        bail!("mysql: multi-packet payloads are not supported");
    }
    if buf.len() < pos + 4 + len {
        return Ok(None);
    }
    Ok(Some((buf[pos + 3], pos + 4 + len, 4 + len)))
}

/// Appends a packet header placeholder; `finish_packet` patches the length.
#[inline]
pub fn start_packet(out: &mut Vec<u8>, seq: u8) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, seq]);
    at
}

#[inline]
pub fn finish_packet(out: &mut [u8], at: usize) {
    let len = out.len() - at - 4;
    assert!(len < 0xff_ffff, "mysql packet too large");
    out[at..at + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
}

pub fn push_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Reads a length-encoded integer at `p`: (value, next position).
pub fn lenenc(b: &[u8], p: usize) -> Option<(u64, usize)> {
    let first = *b.get(p)?;
    let (n, w) = match first {
        0..=250 => return Some((first as u64, p + 1)),
        0xfc => (2, 2),
        0xfd => (3, 3),
        0xfe => (8, 8),
        _ => return None,
    };
    let bytes = b.get(p + 1..p + 1 + n)?;
    let mut v = [0u8; 8];
    v[..w].copy_from_slice(bytes);
    Some((u64::from_le_bytes(v), p + 1 + n))
}

async fn read_packet(conn: &mut Conn) -> Result<(u8, Vec<u8>)> {
    conn.read_with(
        |b| Ok(packet(b, 0)?.map(|(seq, end, total)| (total, (seq, b[4..end].to_vec())))),
    )
    .await
}

fn err_text(payload: &[u8]) -> String {
    let code = payload
        .get(1..3)
        .map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let msg = if payload.get(3) == Some(&b'#') {
        payload.get(9..).unwrap_or(&[])
    } else {
        payload.get(3..).unwrap_or(&[])
    };
    format!("mysql error {code}: {}", String::from_utf8_lossy(msg))
}

fn scramble_native(pass: &[u8], nonce: &[u8]) -> Vec<u8> {
    if pass.is_empty() {
        return Vec::new();
    }
    let h1 = Sha1::digest(pass);
    let h2 = Sha1::digest(h1);
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(h2);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

fn scramble_sha2(pass: &[u8], nonce: &[u8]) -> Vec<u8> {
    if pass.is_empty() {
        return Vec::new();
    }
    let h1 = Sha256::digest(pass);
    let h2 = Sha256::digest(h1);
    let mut h = Sha256::new();
    h.update(h2);
    h.update(nonce);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

fn auth_response(plugin: &str, pass: &[u8], nonce: &[u8]) -> Result<Vec<u8>> {
    match plugin {
        "mysql_native_password" | "" => Ok(scramble_native(pass, nonce)),
        "caching_sha2_password" => Ok(scramble_sha2(pass, nonce)),
        "mysql_clear_password" => bail!("refusing mysql_clear_password over plain TCP"),
        p => bail!("unsupported MySQL auth plugin {p:?}"),
    }
}

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_FOUND_ROWS: u32 = 2;
const CLIENT_LONG_FLAG: u32 = 4;
const CLIENT_CONNECT_WITH_DB: u32 = 8;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_MULTI_RESULTS: u32 = 0x2_0000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
const CLIENT_PLUGIN_AUTH_LENENC: u32 = 0x20_0000;

/// Performs the handshake on a fresh connection. CLIENT_FOUND_ROWS is set, so an
/// UPDATE reports matched rows (a same-value update still counts as 1).
pub async fn handshake(conn: &mut Conn, url: &MyUrl, db: Option<&str>) -> Result<()> {
    let (_, p) = read_packet(conn).await?;
    if p.first() == Some(&0xff) {
        bail!("{}", err_text(&p));
    }
    if p.first() != Some(&10) {
        bail!("mysql: unsupported handshake protocol {:?}", p.first());
    }
    let short = || anyhow::anyhow!("mysql: short handshake packet");
    let nul = p[1..].iter().position(|&b| b == 0).ok_or_else(short)?;
    let mut i = 1 + nul + 1 + 4; // server version, connection id
    let mut nonce = p.get(i..i + 8).ok_or_else(short)?.to_vec();
    i += 9; // part 1 + filler
    let cap_lo = u16::from_le_bytes(p.get(i..i + 2).ok_or_else(short)?.try_into()?) as u32;
    i += 2;
    let mut server_caps = cap_lo;
    let mut plugin = String::new();
    if p.len() > i {
        // charset(1) status(2) cap_hi(2) auth_len(1) reserved(10)
        let cap_hi = u16::from_le_bytes(p.get(i + 3..i + 5).ok_or_else(short)?.try_into()?);
        server_caps |= (cap_hi as u32) << 16;
        let auth_len = *p.get(i + 5).ok_or_else(short)? as usize;
        i += 16;
        if server_caps & CLIENT_SECURE_CONNECTION != 0 {
            let n = auth_len.saturating_sub(8).max(13);
            let part2 = p.get(i..(i + n).min(p.len())).ok_or_else(short)?;
            nonce.extend_from_slice(&part2[..part2.len().min(12)]);
            i += n;
        }
        if server_caps & CLIENT_PLUGIN_AUTH != 0 {
            let rest = p.get(i..).unwrap_or(&[]);
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
        }
    }
    if server_caps & CLIENT_PROTOCOL_41 == 0 {
        bail!("mysql: server lacks protocol 4.1");
    }
    let mut caps = CLIENT_LONG_PASSWORD
        | CLIENT_FOUND_ROWS
        | CLIENT_LONG_FLAG
        | CLIENT_PROTOCOL_41
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION
        | CLIENT_MULTI_RESULTS;
    caps |= server_caps & (CLIENT_PLUGIN_AUTH | CLIENT_PLUGIN_AUTH_LENENC);
    if db.is_some() {
        caps |= CLIENT_CONNECT_WITH_DB;
    }
    let pass = url.pass.as_bytes();
    let auth = auth_response(&plugin, pass, &nonce)?;
    let mut out = Vec::new();
    let at = start_packet(&mut out, 1);
    out.extend_from_slice(&caps.to_le_bytes());
    out.extend_from_slice(&(16u32 << 20).to_le_bytes());
    out.push(45); // utf8mb4_general_ci
    out.extend_from_slice(&[0; 23]);
    out.extend_from_slice(url.user.as_bytes());
    out.push(0);
    if caps & CLIENT_PLUGIN_AUTH_LENENC != 0 {
        push_lenenc(&mut out, auth.len() as u64);
    } else {
        out.push(auth.len() as u8);
    }
    out.extend_from_slice(&auth);
    if let Some(db) = db {
        out.extend_from_slice(db.as_bytes());
        out.push(0);
    }
    if caps & CLIENT_PLUGIN_AUTH != 0 {
        out.extend_from_slice(plugin.as_bytes());
        out.push(0);
    }
    finish_packet(&mut out, at);
    conn.write_all(&out).await?;
    loop {
        let (seq, p) = read_packet(conn).await?;
        match p.first() {
            Some(0x00) => return Ok(()),
            Some(0xff) => bail!("{} (user {:?})", err_text(&p), url.user),
            Some(0xfe) => {
                // Auth switch: plugin name NUL, new nonce.
                let rest = &p[1..];
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
                let mut n = rest.get(end + 1..).unwrap_or(&[]).to_vec();
                if n.last() == Some(&0) {
                    n.pop();
                }
                nonce = n;
                let auth = auth_response(&plugin, pass, &nonce)?;
                let mut out = Vec::new();
                let at = start_packet(&mut out, seq.wrapping_add(1));
                out.extend_from_slice(&auth);
                finish_packet(&mut out, at);
                conn.write_all(&out).await?;
            }
            Some(0x01) if plugin == "caching_sha2_password" => match p.get(1) {
                Some(3) => {} // fast auth succeeded; OK follows
                _ => bail!(
                    "caching_sha2_password needs full authentication (TLS/RSA), which hsbench \
                     does not do; use a mysql_native_password account or log in once with the \
                     mysql client to fill the server's cache"
                ),
            },
            other => bail!("mysql: unexpected auth reply {other:?}"),
        }
    }
}

/// Runs one statement with COM_QUERY and returns its summarised result.
pub async fn query(conn: &mut Conn, sql: &str) -> Result<MyResp> {
    let mut out = Vec::with_capacity(sql.len() + 5);
    let at = start_packet(&mut out, 0);
    out.push(0x03);
    out.extend_from_slice(sql.as_bytes());
    finish_packet(&mut out, at);
    conn.write_all(&out).await?;
    conn.read_with(parse_response).await
}

/// Like `query`, but a server error becomes an `Err` mentioning the statement.
pub async fn exec(conn: &mut Conn, sql: &str) -> Result<MyResp> {
    match query(conn, sql).await? {
        MyResp::Err(e) => bail!("{e}\n  in: {}", &sql[..sql.len().min(200)]),
        r => Ok(r),
    }
}

/// A prepared statement: id and parameter count.
#[derive(Debug, Clone, Copy)]
pub struct Stmt {
    pub id: u32,
    pub params: u16,
}

/// COM_STMT_PREPARE; consumes the parameter and column definitions.
pub async fn prepare(conn: &mut Conn, sql: &str) -> Result<Stmt> {
    let mut out = Vec::new();
    let at = start_packet(&mut out, 0);
    out.push(0x16);
    out.extend_from_slice(sql.as_bytes());
    finish_packet(&mut out, at);
    conn.write_all(&out).await?;
    conn.read_with(|b| {
        let Some((_, end, total)) = packet(b, 0)? else {
            return Ok(None);
        };
        let p = &b[4..end];
        if p.first() == Some(&0xff) {
            bail!("{}\n  preparing: {sql}", err_text(p));
        }
        if p.len() < 12 || p[0] != 0 {
            bail!("mysql: bad prepare reply");
        }
        let id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
        let cols = u16::from_le_bytes([p[5], p[6]]);
        let params = u16::from_le_bytes([p[7], p[8]]);
        // Then `params` definitions + EOF, `cols` definitions + EOF.
        let mut pos = total;
        for block in [params, cols] {
            if block == 0 {
                continue;
            }
            for _ in 0..=block {
                match packet(b, pos)? {
                    Some((_, _, t)) => pos += t,
                    None => return Ok(None),
                }
            }
        }
        Ok(Some((pos, Stmt { id, params })))
    })
    .await
}

pub fn err_packet_text(payload: &[u8]) -> String {
    err_text(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = MyUrl::parse("mysql://hsd:hsd@127.0.0.1:3307").unwrap();
        assert_eq!(
            (u.user.as_str(), u.pass.as_str(), u.port),
            ("hsd", "hsd", 3307)
        );
        assert_eq!(u.db, None);
        let u = MyUrl::parse("mysql://root@localhost/test?x=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.db.as_deref()),
            ("localhost", 3306, Some("test"))
        );
        let u = MyUrl::parse("mysql://a:p%40ss@h:1/d").unwrap();
        assert_eq!(u.pass, "p@ss");
        assert!(MyUrl::parse("http://x").is_err());
    }

    #[test]
    fn lenenc_roundtrip() {
        for n in [
            0u64,
            250,
            251,
            65535,
            65536,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut v = vec![9];
            push_lenenc(&mut v, n);
            assert_eq!(lenenc(&v, 1), Some((n, v.len())));
        }
    }

    #[test]
    fn native_scramble_known_answer() {
        // SHA1("") based scramble is empty; a non-empty one is 20 bytes and
        // reversible: h1 = out ^ sha1(nonce + sha1(h1)).
        let nonce = b"abcdefghij0123456789";
        let out = scramble_native(b"secret", nonce);
        let h1 = Sha1::digest(b"secret");
        let mut h = Sha1::new();
        h.update(nonce);
        h.update(Sha1::digest(h1));
        let back: Vec<u8> = out
            .iter()
            .zip(h.finalize().iter())
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(back, h1.to_vec());
        assert!(scramble_native(b"", nonce).is_empty());
    }
}
