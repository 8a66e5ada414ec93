//! memcached text protocol. Keys are `<prefix><id>`, values `name\temail\tcreated`.
//!   get        `get key:<k>`               -> `VALUE ... <n>\r\n<data>\r\nEND` (miss: `END`)
//!   multiget10 `get key:<k1> ... key:<k10>` -> ten VALUE blocks then END
//!   insert/update `set key:<k> 0 0 <n>\r\n<data>` -> `STORED`

use anyhow::{bail, Result};
use memchr::memchr;

use super::{Op, Outcome, READ_COLS};
use crate::args::{Target, Workload};
use crate::data::{push_kv_value, push_u64};

pub struct McCodec {
    workload: Workload,
    prefix: Vec<u8>,
    value: Vec<u8>,
}

/// One response, as far as the benchmark cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McResp {
    /// VALUE blocks received.
    pub values: usize,
    /// Smallest number of TAB-separated fields over those values.
    pub min_fields: usize,
    /// STORED (for set).
    pub stored: bool,
    /// ERROR / CLIENT_ERROR / SERVER_ERROR / NOT_STORED / EXISTS / NOT_FOUND.
    pub error: bool,
}

/// One complete response at the start of `buf`.
pub fn parse_resp(buf: &[u8]) -> Result<Option<(usize, McResp)>> {
    let mut r = McResp {
        values: 0,
        min_fields: usize::MAX,
        stored: false,
        error: false,
    };
    let mut pos = 0;
    loop {
        let Some(nl) = memchr(b'\n', &buf[pos..]) else {
            return Ok(None);
        };
        let end = pos + nl + 1;
        let line = &buf[pos..pos + nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"VALUE ") {
            let len = rest
                .rsplit(|&b| b == b' ')
                .next()
                .and_then(|t| std::str::from_utf8(t).ok())
                .and_then(|t| t.parse::<usize>().ok());
            let Some(len) = len else {
                bail!(
                    "memcached: bad VALUE line {:?}",
                    String::from_utf8_lossy(line)
                );
            };
            let data_end = end + len;
            if buf.len() < data_end + 2 {
                return Ok(None);
            }
            if &buf[data_end..data_end + 2] != b"\r\n" {
                bail!("memcached: value not followed by CRLF");
            }
            let fields = 1 + memchr::memchr_iter(b'\t', &buf[end..data_end]).count();
            r.values += 1;
            r.min_fields = r.min_fields.min(fields);
            pos = data_end + 2;
            continue;
        }
        if line == b"END" {
        } else if line == b"STORED" {
            r.stored = true;
        } else if [
            &b"ERROR"[..],
            b"CLIENT_ERROR",
            b"SERVER_ERROR",
            b"NOT_STORED",
            b"EXISTS",
            b"NOT_FOUND",
        ]
        .iter()
        .any(|p| line.starts_with(p))
        {
            r.error = true;
        } else {
            bail!(
                "memcached: unexpected line {:?}",
                String::from_utf8_lossy(line)
            );
        }
        if r.values == 0 {
            r.min_fields = 0;
        }
        return Ok(Some((end, r)));
    }
}

impl McCodec {
    pub fn new(t: &Target, workload: Workload) -> McCodec {
        McCodec {
            workload,
            prefix: t.key_prefix.as_bytes().to_vec(),
            value: Vec::with_capacity(128),
        }
    }

    #[inline]
    fn push_key(&self, out: &mut Vec<u8>, k: u64) {
        out.extend_from_slice(&self.prefix);
        push_u64(out, k);
    }

    fn push_set(&mut self, out: &mut Vec<u8>, id: u64, version: Option<u64>) {
        self.value.clear();
        push_kv_value(&mut self.value, id, version);
        out.extend_from_slice(b"set ");
        self.push_key(out, id);
        out.extend_from_slice(b" 0 0 ");
        push_u64(out, self.value.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.value);
        out.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn encode(&mut self, op: &Op, out: &mut Vec<u8>) {
        match *op {
            Op::Get(k) => {
                out.extend_from_slice(b"get ");
                self.push_key(out, k);
                out.extend_from_slice(b"\r\n");
            }
            Op::Multi(keys) => {
                out.extend_from_slice(b"get");
                for &k in keys {
                    out.push(b' ');
                    self.push_key(out, k);
                }
                out.extend_from_slice(b"\r\n");
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
        let want = match self.workload {
            // Mixed is refused at connect.
            Workload::Get | Workload::Mixed => 1,
            Workload::Multiget10 => 10,
            Workload::Insert | Workload::Update => 0,
        };
        let outcome = if r.error {
            Outcome::Error
        } else if want == 0 {
            if r.stored {
                Outcome::Ok
            } else {
                Outcome::Miss
            }
        } else if r.values == want && r.min_fields == READ_COLS {
            Outcome::Ok
        } else {
            Outcome::Miss
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
        let one = b"VALUE key:1 0 22\r\nJane Roe\tj@x\t2010-01-0\r\nEND\r\n";
        let r = check_splits(one, parse_resp);
        assert_eq!((r.values, r.min_fields, r.error), (1, 3, false));
        // A value that itself contains CRLF and "END" must not confuse framing.
        let tricky = b"VALUE k 0 9\r\na\r\nEND\r\nb\r\nEND\r\n";
        let r = check_splits(tricky, parse_resp);
        assert_eq!(r.values, 1);
        let r = check_splits(b"END\r\n", parse_resp);
        assert_eq!((r.values, r.min_fields), (0, 0));
        let mut multi = Vec::new();
        for i in 0..10 {
            multi.extend_from_slice(format!("VALUE key:{i} 0 5\r\na\tb\tc\r\n").as_bytes());
        }
        multi.extend_from_slice(b"END\r\n");
        assert_eq!(check_splits(&multi, parse_resp).values, 10);
        assert!(check_splits(b"STORED\r\n", parse_resp).stored);
        assert!(check_splits(b"SERVER_ERROR out of memory\r\n", parse_resp).error);
        assert!(parse_resp(b"BOGUS\r\n").is_err());
        assert!(parse_resp(b"VALUE k 0 1\r\nab\r\n").is_err());
    }

    #[test]
    fn encodes_and_judges() {
        let t = crate::args::TargetArgs {
            system: crate::args::System::Memcached,
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
        let mut c = McCodec::new(&t, Workload::Multiget10);
        let mut out = Vec::new();
        c.encode(&Op::Multi(&[1, 2, 3]), &mut out);
        assert_eq!(out, b"get key:1 key:2 key:3\r\n");
        out.clear();
        c.encode(&Op::Insert(9), &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("set key:9 0 0 ") && s.ends_with("\r\n"));
        let c = McCodec::new(&t, Workload::Get);
        let hit = b"VALUE key:1 0 5\r\na\tb\tc\r\nEND\r\n";
        assert_eq!(c.parse(hit).unwrap(), Some((hit.len(), Outcome::Ok)));
        assert_eq!(c.parse(b"END\r\n").unwrap(), Some((5, Outcome::Miss)));
        let two = b"VALUE key:1 0 3\r\na\tb\r\nEND\r\n";
        assert_eq!(c.parse(two).unwrap().unwrap().1, Outcome::Miss);
    }
}
