//! The bench's MySQL/MariaDB connection setup and one-shot commands, over
//! its own lean `Conn`: the login, COM_QUERY and COM_STMT_PREPARE. The
//! protocol itself (packets, numbers, handshake, authentication, answers) is
//! `mysql-wire`'s, the same code hsd speaks with.

use anyhow::{anyhow, bail, Result};
use mysql_wire::auth::{AuthStep, Authenticator};
use mysql_wire::packet::Frame;
use mysql_wire::{
    Capabilities, ErrPacket, Greeting, HandshakeResponse, MysqlUrl, PacketReader, PacketWriter,
};

use super::mysql::{parse_response, MyResp};
use crate::net::Conn;

/// One payload at the front of `buf`: (sequence number, payload, bytes used).
fn frame(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    match PacketReader::next(buf, 0)? {
        Frame::Whole {
            seq,
            range,
            consumed,
        } => Some((seq, buf[range].to_vec(), consumed)),
        Frame::Joined {
            seq,
            payload,
            consumed,
        } => Some((seq, payload, consumed)),
    }
}

async fn read_packet(conn: &mut Conn) -> Result<(u8, Vec<u8>)> {
    conn.read_with(|b| Ok(frame(b).map(|(seq, p, n)| (n, (seq, p)))))
        .await
}

/// Performs the login on a fresh connection. CLIENT_FOUND_ROWS is set, so an
/// UPDATE reports matched rows (a same-value update still counts as 1).
pub async fn handshake(conn: &mut Conn, url: &MysqlUrl, db: Option<&str>) -> Result<()> {
    let (_, p) = read_packet(conn).await?;
    let greeting = Greeting::parse(&p).map_err(|e| anyhow!("mysql: {e}"))?;
    if !greeting.capabilities.has(Capabilities::PROTOCOL_41) {
        bail!("mysql: server lacks protocol 4.1");
    }
    let mut caps = Capabilities::LONG_PASSWORD
        | Capabilities::FOUND_ROWS
        | Capabilities::LONG_FLAG
        | Capabilities::PROTOCOL_41
        | Capabilities::TRANSACTIONS
        | Capabilities::SECURE_CONNECTION
        | Capabilities::MULTI_RESULTS;
    caps |=
        greeting.capabilities.0 & (Capabilities::PLUGIN_AUTH | Capabilities::PLUGIN_AUTH_LENENC);
    if db.is_some() {
        caps |= Capabilities::CONNECT_WITH_DB;
    }
    let mut auth = Authenticator::new(
        &greeting.auth_plugin,
        url.password.as_bytes(),
        &greeting.scramble,
        false,
    );
    let first = auth.first_response().map_err(|e| anyhow!("mysql: {e}"))?;
    let mut out = Vec::new();
    HandshakeResponse {
        capabilities: caps,
        user: &url.user,
        auth_response: &first,
        auth_plugin: auth.plugin(),
        database: db,
        collation: 45,
    }
    .write(&mut out, 1);
    conn.write_all(&out).await?;
    loop {
        let (seq, p) = read_packet(conn).await?;
        match auth.on_packet(&p) {
            Ok(AuthStep::Done) => return Ok(()),
            Ok(AuthStep::Wait) => {}
            Ok(AuthStep::Send(data)) => {
                out.clear();
                let w = PacketWriter::begin(&mut out, seq.wrapping_add(1));
                out.extend_from_slice(&data);
                w.finish(&mut out);
                conn.write_all(&out).await?;
            }
            Err(e) => bail!("mysql: {e} (user {:?})", url.user),
        }
    }
}

/// Runs one statement with COM_QUERY and returns its summarised result.
pub async fn query(conn: &mut Conn, sql: &str) -> Result<MyResp> {
    let mut out = Vec::with_capacity(sql.len() + 5);
    let w = PacketWriter::begin(&mut out, 0);
    out.push(0x03);
    out.extend_from_slice(sql.as_bytes());
    w.finish(&mut out);
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
    let w = PacketWriter::begin(&mut out, 0);
    out.push(0x16);
    out.extend_from_slice(sql.as_bytes());
    w.finish(&mut out);
    conn.write_all(&out).await?;
    conn.read_with(|b| {
        let Some((_, p, first)) = frame(b) else {
            return Ok(None);
        };
        if p.first() == Some(&0xff) {
            bail!("{}\n  preparing: {sql}", err_packet_text(&p));
        }
        if p.len() < 12 || p[0] != 0 {
            bail!("mysql: bad prepare reply");
        }
        let id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
        let cols = u16::from_le_bytes([p[5], p[6]]);
        let params = u16::from_le_bytes([p[7], p[8]]);
        // Then `params` definitions + EOF, `cols` definitions + EOF.
        let mut pos = first;
        for block in [params, cols] {
            if block == 0 {
                continue;
            }
            for _ in 0..=block {
                match frame(&b[pos..]) {
                    Some((_, _, n)) => pos += n,
                    None => return Ok(None),
                }
            }
        }
        Ok(Some((pos, Stmt { id, params })))
    })
    .await
}

/// An ERR packet as a message with its number.
pub fn err_packet_text(payload: &[u8]) -> String {
    let e = ErrPacket::parse(payload);
    format!("mysql error {}: {}", e.code, e.message)
}
