//! Redis RESP. One string per row at `<prefix><id>`, value `name\temail\tcreated`.
//!   get `GET k` -> bulk (miss: `$-1`); multiget10 `MGET k1..k10` -> array of bulks;
//!   insert/update `SET k v` -> `+OK`.

use anyhow::{bail, Result};
use memchr::memchr;

use super::{Op, Outcome, READ_COLS};
use crate::args::{Target, Workload};
use crate::data::{digits, push_kv_value, push_u64};

pub struct RedisCodec {
    workload: Workload,
    prefix: Vec<u8>,
    value: Vec<u8>,
}

/// One reply, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisResp {
    /// Non-null bulk strings (top level or inside an array).
    pub values: usize,
    pub nulls: usize,
    /// Smallest number of TAB-separated fields over those values.
    pub min_fields: usize,
    pub error: bool,
    /// A `+` simple string (e.g. OK).
    pub simple: bool,
}

/// The CRLF-terminated header line at `pos`: (line without CRLF, next position).
#[inline]
fn line_at(buf: &[u8], pos: usize) -> Result<Option<(&[u8], usize)>> {
    let Some(nl) = memchr(b'\n', &buf[pos..]) else {
        return Ok(None);
    };
    if nl == 0 || buf[pos + nl - 1] != b'\r' {
        bail!("redis: line not ended by CRLF");
    }
    Ok(Some((&buf[pos..pos + nl - 1], pos + nl + 1)))
}

fn int(t: &[u8]) -> Result<i64> {
    match std::str::from_utf8(t).ok().and_then(|s| s.parse().ok()) {
        Some(v) => Ok(v),
        None => bail!("redis: bad length {:?}", String::from_utf8_lossy(t)),
    }
}

/// Parses one value at `pos`, accumulating into `r`; returns the next position.
fn value(buf: &[u8], pos: usize, r: &mut RedisResp, depth: u32) -> Result<Option<usize>> {
    let Some((line, next)) = line_at(buf, pos)? else {
        return Ok(None);
    };
    let Some((&kind, rest)) = line.split_first() else {
        bail!("redis: empty reply line");
    };
    match kind {
        b'+' => r.simple = true,
        b'-' => r.error = true,
        b':' => {}
        b'$' => {
            let len = int(rest)?;
            if len < 0 {
                r.nulls += 1;
                return Ok(Some(next));
            }
            let end = next + len as usize;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                bail!("redis: bulk string not followed by CRLF");
            }
            r.values += 1;
            let fields = 1 + memchr::memchr_iter(b'\t', &buf[next..end]).count();
            r.min_fields = r.min_fields.min(fields);
            return Ok(Some(end + 2));
        }
        b'*' => {
            if depth > 4 {
                bail!("redis: arrays nested too deep");
            }
            let n = int(rest)?;
            let mut p = next;
            for _ in 0..n.max(0) {
                match value(buf, p, r, depth + 1)? {
                    Some(q) => p = q,
                    None => return Ok(None),
                }
            }
            return Ok(Some(p));
        }
        _ => bail!("redis: unexpected reply type {:?}", kind as char),
    }
    Ok(Some(next))
}

/// One complete reply at the start of `buf`.
pub fn parse_resp(buf: &[u8]) -> Result<Option<(usize, RedisResp)>> {
    let mut r = RedisResp {
        values: 0,
        nulls: 0,
        min_fields: usize::MAX,
        error: false,
        simple: false,
    };
    Ok(value(buf, 0, &mut r, 0)?.map(|n| {
        if r.values == 0 {
            r.min_fields = 0;
        }
        (n, r)
    }))
}

impl RedisCodec {
    pub fn new(t: &Target, workload: Workload) -> RedisCodec {
        RedisCodec {
            workload,
            prefix: t.key_prefix.as_bytes().to_vec(),
            value: Vec::with_capacity(128),
        }
    }

    #[inline]
    fn push_key(&self, out: &mut Vec<u8>, k: u64) {
        out.push(b'$');
        push_u64(out, (self.prefix.len() + digits(k)) as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.prefix);
        push_u64(out, k);
        out.extend_from_slice(b"\r\n");
    }

    fn push_set(&mut self, out: &mut Vec<u8>, id: u64, version: Option<u64>) {
        self.value.clear();
        push_kv_value(&mut self.value, id, version);
        out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
        self.push_key(out, id);
        out.push(b'$');
        push_u64(out, self.value.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.value);
        out.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn encode(&mut self, op: &Op, out: &mut Vec<u8>) {
        match *op {
            Op::Get(k) => {
                out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
                self.push_key(out, k);
            }
            Op::Multi(keys) => {
                out.push(b'*');
                push_u64(out, keys.len() as u64 + 1);
                out.extend_from_slice(b"\r\n$4\r\nMGET\r\n");
                for &k in keys {
                    self.push_key(out, k);
                }
            }
            Op::Insert(id) => self.push_set(out, id, None),
            Op::Update { key, version } => self.push_set(out, key, Some(version)),
        }
    }

    #[inline]
    pub fn parse(&self, buf: &[u8]) -> Result<Option<(usize, Outcome)>> {
        let Some((n, r)) = parse_resp(buf)? else {
            return Ok(None);
        };
        let outcome = if r.error {
            Outcome::Error
        } else {
            let ok = match self.workload {
                // Mixed is refused at connect.
                Workload::Get | Workload::Mixed => r.values == 1 && r.min_fields == READ_COLS,
                Workload::Multiget10 => r.values == 10 && r.min_fields == READ_COLS,
                Workload::Insert | Workload::Update => r.simple,
            };
            if ok {
                Outcome::Ok
            } else {
                Outcome::Miss
            }
        };
        Ok(Some((n, outcome)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::check_splits;

    #[test]
    fn framing_split_everywhere() {
        let r = check_splits(b"$5\r\na\tb\tc\r\n", parse_resp);
        assert_eq!((r.values, r.min_fields), (1, 3));
        // CRLF inside a bulk value must not confuse framing.
        let r = check_splits(b"$4\r\n\r\n\r\n\r\n", parse_resp);
        assert_eq!(r.values, 1);
        let r = check_splits(b"$-1\r\n", parse_resp);
        assert_eq!((r.values, r.nulls), (0, 1));
        let mut m = b"*10\r\n".to_vec();
        for i in 0..10 {
            if i == 4 {
                m.extend_from_slice(b"$-1\r\n");
            } else {
                m.extend_from_slice(b"$5\r\nx\ty\tz\r\n");
            }
        }
        let r = check_splits(&m, parse_resp);
        assert_eq!((r.values, r.nulls), (9, 1));
        assert!(check_splits(b"+OK\r\n", parse_resp).simple);
        assert!(check_splits(b"-ERR wrong type\r\n", parse_resp).error);
        assert!(check_splits(b"*0\r\n", parse_resp).values == 0);
        assert!(parse_resp(b"?\r\n").is_err());
        assert!(parse_resp(b"$1\r\nab\r\n").is_err());
    }

    #[test]
    fn encodes_commands() {
        let t = crate::args::TargetArgs {
            system: crate::args::System::Redis,
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
        let mut c = RedisCodec::new(&t, Workload::Get);
        let mut out = Vec::new();
        c.encode(&Op::Get(123), &mut out);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$7\r\nkey:123\r\n");
        out.clear();
        c.encode(&Op::Multi(&[1, 22]), &mut out);
        assert_eq!(out, b"*3\r\n$4\r\nMGET\r\n$5\r\nkey:1\r\n$6\r\nkey:22\r\n");
        assert_eq!(c.parse(b"$-1\r\n").unwrap(), Some((5, Outcome::Miss)));
    }
}
