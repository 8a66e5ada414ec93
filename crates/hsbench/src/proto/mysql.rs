//! MySQL/MariaDB requests and result framing (text protocol, or the binary
//! protocol with `--mysql-prepared`). MySQL cannot pipeline, so depth is 1.
//!   get        SELECT name,email,created FROM t WHERE id=<k>       (or id=?)
//!   multiget10 SELECT ... WHERE id IN (<k1>,...,<k10>)
//!   insert     INSERT INTO t (id,name,email,created) VALUES (...)  (autocommit)
//!   update     UPDATE t SET name=<v> WHERE id=<k>
//!   mixed      get or update, each request (autocommit)

use anyhow::{bail, Result};
use mysql_wire::literal::{push_binary, push_identifier};
use mysql_wire::number::{get_lenenc, put_lenenc};
use mysql_wire::packet::Frame;
use mysql_wire::{PacketReader, PacketWriter};
use std::ops::Range;

use super::mysql_conn::{err_packet_text, handshake, prepare, Stmt};
use super::{Op, Outcome, READ_COLS};
use crate::args::{Target, Workload};
use crate::data::{push_created, push_email, push_name, push_u64, push_updated_name};
use crate::net::Conn;

/// A statement's result, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MyResp {
    Ok { affected: u64 },
    Err(String),
    Rows { cols: u64, rows: u64 },
}

#[inline]
fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xfe) && p.len() < 9
}

/// The payload range of the packet at `pos` and the bytes it takes; `None`
/// while incomplete. Payloads of 16 MiB and more are refused: the bench
/// never reads any, and its hot path stays free of copies.
#[inline]
fn packet_at(buf: &[u8], pos: usize) -> Result<Option<(Range<usize>, usize)>> {
    match PacketReader::next(buf, pos) {
        None => Ok(None),
        Some(Frame::Whole {
            range, consumed, ..
        }) => Ok(Some((range, consumed))),
        Some(Frame::Joined { .. }) => bail!("mysql: multi-packet payloads are not supported"),
    }
}

/// One complete response (OK, ERR, or a whole result set, text or binary rows)
/// at the start of `buf`.
pub fn parse_response(buf: &[u8]) -> Result<Option<(usize, MyResp)>> {
    let Some((first, total)) = packet_at(buf, 0)? else {
        return Ok(None);
    };
    let p = &buf[first];
    match p.first() {
        None => bail!("mysql: empty packet"),
        Some(0x00) => {
            let affected = get_lenenc(p, 1).map_or(0, |(v, _)| v);
            return Ok(Some((total, MyResp::Ok { affected })));
        }
        Some(0xff) => return Ok(Some((total, MyResp::Err(err_packet_text(p))))),
        Some(0xfb) => bail!("mysql: LOCAL INFILE request not supported"),
        _ => {}
    }
    let Some((cols, _)) = get_lenenc(p, 0) else {
        bail!("mysql: bad column count");
    };
    let mut pos = total;
    // Column definitions, then an EOF packet.
    for i in 0..=cols {
        let Some((r, t)) = packet_at(buf, pos)? else {
            return Ok(None);
        };
        if i == cols && !is_eof(&buf[r]) {
            bail!("mysql: expected EOF after column definitions");
        }
        pos += t;
    }
    let mut rows = 0;
    loop {
        let Some((r, t)) = packet_at(buf, pos)? else {
            return Ok(None);
        };
        let row = &buf[r];
        pos += t;
        if is_eof(row) {
            return Ok(Some((pos, MyResp::Rows { cols, rows })));
        }
        if row.first() == Some(&0xff) {
            return Ok(Some((pos, MyResp::Err(err_packet_text(row)))));
        }
        rows += 1;
    }
}

/// Backtick-quotes an identifier (each part of `db.table`).
pub fn ident(name: &str) -> String {
    let mut out = Vec::with_capacity(name.len() + 4);
    for (i, part) in name.split('.').enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        push_identifier(&mut out, part.as_bytes());
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Appends a string literal.
pub fn push_sql_str(out: &mut Vec<u8>, v: &[u8]) {
    push_binary(out, Some(v));
}

/// SQL text for a workload: (text-protocol prefix, prepared statement).
fn statements(t: &Target, w: Workload) -> (String, String) {
    let [id, name, email, created] = t.cols.each_ref().map(|c| ident(c));
    let table = ident(&t.table);
    let select = format!("SELECT {name},{email},{created} FROM {table} WHERE {id}");
    match w {
        Workload::Get | Workload::Mixed => (format!("{select}="), format!("{select}=?")),
        Workload::Multiget10 => (
            format!("{select} IN ("),
            format!("{select} IN ({})", ["?"; 10].join(",")),
        ),
        Workload::Insert => {
            let ins = format!("INSERT INTO {table} ({id},{name},{email},{created}) VALUES (");
            (ins.clone(), format!("{ins}?,?,?,?)"))
        }
        Workload::Update => (
            format!("UPDATE {table} SET {name}="),
            format!("UPDATE {table} SET {name}=? WHERE {id}=?"),
        ),
    }
}

pub struct MyCodec {
    workload: Workload,
    prefix: Vec<u8>,
    /// For update: ` WHERE <id>=`.
    where_id: Vec<u8>,
    stmt: Option<Stmt>,
    scratch: Vec<u8>,
    /// Mixed: the updates' codec (its own statement).
    update: Option<Box<MyCodec>>,
}

const T_LONGLONG: u8 = 0x08;
const T_VAR_STRING: u8 = 0xfd;

impl MyCodec {
    pub async fn open(conn: &mut Conn, t: &Target, workload: Workload) -> Result<MyCodec> {
        let Some(url) = &t.mysql else {
            bail!("mysql: no URL");
        };
        handshake(conn, url, Some(&t.db)).await?;
        let mut c = MyCodec::prepared(conn, t, workload).await?;
        if workload == Workload::Mixed {
            c.update = Some(Box::new(
                MyCodec::prepared(conn, t, Workload::Update).await?,
            ));
        }
        Ok(c)
    }

    async fn prepared(conn: &mut Conn, t: &Target, workload: Workload) -> Result<MyCodec> {
        let mut c = MyCodec::new(t, workload);
        if t.prepared {
            let (_, sql) = statements(t, workload);
            c.stmt = Some(prepare(conn, &sql).await?);
        }
        Ok(c)
    }

    pub fn new(t: &Target, workload: Workload) -> MyCodec {
        let (prefix, _) = statements(t, workload);
        MyCodec {
            workload,
            prefix: prefix.into_bytes(),
            where_id: format!(" WHERE {}=", ident(&t.cols[0])).into_bytes(),
            stmt: None,
            scratch: Vec::with_capacity(128),
            update: None,
        }
    }

    fn encode_text(&mut self, op: &Op, out: &mut Vec<u8>) {
        out.push(0x03); // COM_QUERY
        out.extend_from_slice(&self.prefix);
        match *op {
            Op::Get(k) => push_u64(out, k),
            Op::Multi(keys) => {
                for (i, &k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    push_u64(out, k);
                }
                out.push(b')');
            }
            Op::Insert(id) => {
                push_u64(out, id);
                for f in [push_name, push_email, push_created] {
                    out.push(b',');
                    self.scratch.clear();
                    f(&mut self.scratch, id);
                    push_sql_str(out, &self.scratch);
                }
                out.push(b')');
            }
            Op::Update { key, version } => {
                self.scratch.clear();
                push_updated_name(&mut self.scratch, key, version);
                push_sql_str(out, &self.scratch);
                out.extend_from_slice(&self.where_id);
                push_u64(out, key);
            }
        }
    }

    fn encode_execute(&mut self, stmt: Stmt, op: &Op, out: &mut Vec<u8>) {
        out.push(0x17); // COM_STMT_EXECUTE
        out.extend_from_slice(&stmt.id.to_le_bytes());
        out.push(0); // no cursor
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend(std::iter::repeat_n(0u8, (stmt.params as usize).div_ceil(8)));
        out.push(1); // new parameter types follow
        let str_param = |out: &mut Vec<u8>, v: &[u8]| {
            put_lenenc(out, v.len() as u64);
            out.extend_from_slice(v);
        };
        match *op {
            Op::Get(k) => {
                out.extend_from_slice(&[T_LONGLONG, 0]);
                out.extend_from_slice(&k.to_le_bytes());
            }
            Op::Multi(keys) => {
                for _ in keys {
                    out.extend_from_slice(&[T_LONGLONG, 0]);
                }
                for &k in keys {
                    out.extend_from_slice(&k.to_le_bytes());
                }
            }
            Op::Insert(id) => {
                out.extend_from_slice(&[T_LONGLONG, 0, T_VAR_STRING, 0, T_VAR_STRING, 0]);
                out.extend_from_slice(&[T_VAR_STRING, 0]);
                out.extend_from_slice(&id.to_le_bytes());
                for f in [push_name, push_email, push_created] {
                    self.scratch.clear();
                    f(&mut self.scratch, id);
                    str_param(out, &self.scratch);
                }
            }
            Op::Update { key, version } => {
                out.extend_from_slice(&[T_VAR_STRING, 0, T_LONGLONG, 0]);
                self.scratch.clear();
                push_updated_name(&mut self.scratch, key, version);
                str_param(out, &self.scratch);
                out.extend_from_slice(&key.to_le_bytes());
            }
        }
    }

    #[inline]
    pub fn encode(&mut self, op: &Op, out: &mut Vec<u8>) {
        if let (Op::Update { .. }, Some(update)) = (op, &mut self.update) {
            return update.encode(op, out);
        }
        let w = PacketWriter::begin(out, 0);
        match self.stmt {
            Some(stmt) => self.encode_execute(stmt, op, out),
            None => self.encode_text(op, out),
        }
        w.finish(out);
    }

    #[inline]
    pub fn parse(&self, buf: &[u8]) -> Result<Option<(usize, Outcome)>> {
        let Some((n, r)) = parse_response(buf)? else {
            return Ok(None);
        };
        let ok = match (&r, self.workload) {
            (MyResp::Err(_), _) => return Ok(Some((n, Outcome::Error))),
            (MyResp::Rows { cols, rows }, Workload::Get) => *cols == READ_COLS as u64 && *rows == 1,
            (MyResp::Rows { cols, rows }, Workload::Multiget10) => {
                *cols == READ_COLS as u64 && *rows == 10
            }
            (MyResp::Ok { affected }, Workload::Insert | Workload::Update | Workload::Mixed) => {
                *affected == 1
            }
            (MyResp::Rows { cols, rows }, Workload::Mixed) => {
                *cols == READ_COLS as u64 && *rows == 1
            }
            _ => false,
        };
        Ok(Some((n, if ok { Outcome::Ok } else { Outcome::Miss })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::check_splits;

    fn pkt(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        let w = PacketWriter::begin(&mut v, seq);
        v.extend_from_slice(payload);
        w.finish(&mut v);
        v
    }

    fn result_set(cols: usize, rows: &[&[&str]]) -> Vec<u8> {
        let mut v = pkt(1, &[cols as u8]);
        for i in 0..cols {
            let mut def = Vec::new();
            for s in ["def", "test", "user", "user", &format!("c{i}"), "c"] {
                put_lenenc(&mut def, s.len() as u64);
                def.extend_from_slice(s.as_bytes());
            }
            def.extend_from_slice(&[0x0c, 45, 0, 64, 0, 0, 0, 0xfd, 0, 0, 0, 0, 0]);
            v.extend(pkt(2, &def));
        }
        v.extend(pkt(3, &[0xfe, 0, 0, 2, 0]));
        for r in rows {
            let mut row = Vec::new();
            for s in *r {
                put_lenenc(&mut row, s.len() as u64);
                row.extend_from_slice(s.as_bytes());
            }
            v.extend(pkt(4, &row));
        }
        v.extend(pkt(5, &[0xfe, 0, 0, 2, 0]));
        v
    }

    #[test]
    fn framing_split_everywhere() {
        let rs = result_set(3, &[&["Jane Roe", "j@x", "2010-01-01 00:00:00"]]);
        assert_eq!(
            check_splits(&rs, parse_response),
            MyResp::Rows { cols: 3, rows: 1 }
        );
        let ten: Vec<&[&str]> = vec![&["a", "b", "c"]; 10];
        let rs = result_set(3, &ten);
        assert_eq!(
            check_splits(&rs, parse_response),
            MyResp::Rows { cols: 3, rows: 10 }
        );
        let empty = result_set(3, &[]);
        assert_eq!(
            check_splits(&empty, parse_response),
            MyResp::Rows { cols: 3, rows: 0 }
        );
        // A row whose first column is a NULL (0xfb) or a long string is still a row.
        let long = "x".repeat(300);
        let rs = result_set(1, &[&[long.as_str()]]);
        assert_eq!(
            check_splits(&rs, parse_response),
            MyResp::Rows { cols: 1, rows: 1 }
        );
        let ok = pkt(1, &[0, 1, 0, 2, 0, 0, 0]);
        assert_eq!(
            check_splits(&ok, parse_response),
            MyResp::Ok { affected: 1 }
        );
        let err = pkt(1, b"\xff\x26\x04#23000Duplicate entry");
        match check_splits(&err, parse_response) {
            MyResp::Err(e) => assert!(e.contains("1062") && e.contains("Duplicate")),
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn encodes_text_queries() {
        let t = crate::args::TargetArgs {
            system: crate::args::System::Mysql,
            host: None,
            port: None,
            db: None,
            table: "user".into(),
            cols: "id,name,email,created".into(),
            secret: None,
            key_prefix: "key:".into(),
            mysql_url: "mysql://root@127.0.0.1".into(),
            mysql_prepared: false,
        }
        .resolve(false)
        .unwrap();
        let text = |w: Workload, op: Op| {
            let mut out = Vec::new();
            MyCodec::new(&t, w).encode(&op, &mut out);
            assert_eq!(
                out.len() - 4,
                u32::from_le_bytes([out[0], out[1], out[2], 0]) as usize
            );
            String::from_utf8(out[5..].to_vec()).unwrap()
        };
        assert_eq!(
            text(Workload::Get, Op::Get(7)),
            "SELECT `name`,`email`,`created` FROM `user` WHERE `id`=7"
        );
        assert!(text(Workload::Multiget10, Op::Multi(&[1, 2])).ends_with("`id` IN (1,2)"));
        let ins = text(Workload::Insert, Op::Insert(5));
        assert!(ins
            .starts_with("INSERT INTO `user` (`id`,`name`,`email`,`created`) VALUES (5,_binary'"));
        let upd = text(Workload::Update, Op::Update { key: 3, version: 1 });
        assert!(
            upd.starts_with("UPDATE `user` SET `name`=_binary'") && upd.ends_with("' WHERE `id`=3")
        );
        assert_eq!(ident("db.t`x"), "`db`.`t``x`");
    }
}
