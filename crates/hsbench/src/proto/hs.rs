//! HandlerSocket (spec/protocol.md): on connect optionally `A 1 <secret>`, then
//! `P 0 <db> <table> PRIMARY <cols>`; requests are one TAB-separated line each,
//! responses one line `<code> <ncols> <values...>`.
//!   get        `0 = 1 <key>`                                 cols name,email,created
//!   multiget10 `0 = 1 <k1> 10 0 @ 0 10 <k1>..<k10>`         (IN on index column 0)
//!   insert     `0 + 4 <id> <name> <email> <created>`          cols id,name,email,created
//!   update     `0 = 1 <key> 1 0 U <newname>`                  cols name
//!   mixed      get on index 0, update as `1 = ...` on index 1 (cols name)

use anyhow::{bail, Result};
use memchr::memchr;

use super::{Op, Outcome, READ_COLS};
use crate::args::{Target, Workload};
use crate::data::{push_created, push_email, push_name, push_u64, push_updated_name};
use crate::net::Conn;

pub struct HsCodec {
    workload: Workload,
    scratch: Vec<u8>,
}

/// A response line, as far as the benchmark cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HsResp<'a> {
    pub code_ok: bool,
    pub ncols: usize,
    /// Number of value tokens after `<code> <ncols>`.
    pub nvals: usize,
    /// The first value token (e.g. the modified-row count), if any.
    pub first: Option<&'a [u8]>,
}

/// Length (with the LF) of the first line of `buf`, if complete.
#[inline]
pub fn frame(buf: &[u8]) -> Option<usize> {
    memchr(b'\n', buf).map(|i| i + 1)
}

pub fn parse_line(line: &[u8]) -> HsResp<'_> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut toks = line.split(|&b| b == b'\t');
    let code_ok = toks.next() == Some(b"0");
    let ncols = toks
        .next()
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let first = toks.next();
    let nvals = first.as_ref().map_or(0, |_| 1 + toks.count());
    HsResp {
        code_ok,
        ncols,
        nvals,
        first,
    }
}

/// Appends one HS token (hs-proto's encoding).
pub fn push_token(out: &mut Vec<u8>, v: &[u8]) {
    hs_proto::codec::encode_bytes(v, out);
}

impl HsCodec {
    /// Authenticates (when a secret is given) and opens index 0 with the columns
    /// this workload needs.
    pub async fn open(conn: &mut Conn, t: &Target, workload: Workload) -> Result<HsCodec> {
        let [id, name, email, created] = &t.cols;
        let cols = match workload {
            Workload::Get | Workload::Multiget10 | Workload::Mixed => {
                format!("{name},{email},{created}")
            }
            Workload::Insert => format!("{id},{name},{email},{created}"),
            Workload::Update => name.clone(),
        };
        // Mixed: index 1 for the updates.
        let opens: &[(&str, &str)] = match workload {
            Workload::Mixed => &[("0", &cols), ("1", name)],
            _ => &[("0", &cols)],
        };
        let mut req = Vec::new();
        let mut expect = opens.len();
        if let Some(secret) = &t.secret {
            req.extend_from_slice(b"A\t1\t");
            push_token(&mut req, secret.as_bytes());
            req.push(b'\n');
            expect += 1;
        }
        for (id, cols) in opens {
            req.extend_from_slice(b"P\t");
            req.extend_from_slice(id.as_bytes());
            for tok in [&t.db, &t.table, "PRIMARY", cols] {
                req.push(b'\t');
                push_token(&mut req, tok.as_bytes());
            }
            req.push(b'\n');
        }
        conn.write_all(&req).await?;
        for i in 0..expect {
            let line = conn
                .read_with(|b| Ok(frame(b).map(|n| (n, b[..n].to_vec()))))
                .await?;
            if line != b"0\t1\n" {
                let what = if i + opens.len() < expect {
                    "auth"
                } else {
                    "open_index"
                };
                bail!(
                    "HS {what} failed: {:?} (db {}, table {}, columns {cols})",
                    String::from_utf8_lossy(&line).trim_end(),
                    t.db,
                    t.table
                );
            }
        }
        Ok(HsCodec {
            workload,
            scratch: Vec::with_capacity(128),
        })
    }

    #[cfg(test)]
    pub fn new_for_test(workload: Workload) -> HsCodec {
        HsCodec {
            workload,
            scratch: Vec::new(),
        }
    }

    #[inline]
    pub fn encode(&mut self, op: &Op, out: &mut Vec<u8>) {
        match *op {
            Op::Get(k) => {
                out.extend_from_slice(b"0\t=\t1\t");
                push_u64(out, k);
            }
            Op::Multi(keys) => {
                out.extend_from_slice(b"0\t=\t1\t");
                push_u64(out, keys[0]);
                out.push(b'\t');
                push_u64(out, keys.len() as u64);
                out.extend_from_slice(b"\t0\t@\t0\t");
                push_u64(out, keys.len() as u64);
                for &k in keys {
                    out.push(b'\t');
                    push_u64(out, k);
                }
            }
            Op::Insert(id) => {
                out.extend_from_slice(b"0\t+\t4\t");
                push_u64(out, id);
                for f in [push_name, push_email, push_created] {
                    out.push(b'\t');
                    self.scratch.clear();
                    f(&mut self.scratch, id);
                    push_token(out, &self.scratch);
                }
            }
            Op::Update { key, version } => {
                out.extend_from_slice(match self.workload {
                    Workload::Mixed => b"1\t=\t1\t",
                    _ => b"0\t=\t1\t",
                });
                push_u64(out, key);
                out.extend_from_slice(b"\t1\t0\tU\t");
                self.scratch.clear();
                push_updated_name(&mut self.scratch, key, version);
                push_token(out, &self.scratch);
            }
        }
        out.push(b'\n');
    }

    #[inline]
    pub fn parse(&self, buf: &[u8]) -> Option<(usize, Outcome)> {
        let n = frame(buf)?;
        let r = parse_line(&buf[..n]);
        Some((n, self.judge(&r)))
    }

    fn judge(&self, r: &HsResp) -> Outcome {
        if !r.code_ok {
            return Outcome::Error;
        }
        let ok = match self.workload {
            Workload::Get => r.ncols == READ_COLS && r.nvals == READ_COLS,
            Workload::Multiget10 => r.ncols == READ_COLS && r.nvals == 10 * READ_COLS,
            Workload::Insert => true,
            Workload::Update => r.first == Some(b"1"),
            // A get's row or an update's count of one.
            Workload::Mixed => {
                (r.ncols == READ_COLS && r.nvals == READ_COLS)
                    || (r.ncols == 1 && r.nvals == 1 && r.first == Some(b"1"))
            }
        };
        if ok {
            Outcome::Ok
        } else {
            Outcome::Miss
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::check_splits;

    fn enc(w: Workload, op: Op) -> String {
        let mut out = Vec::new();
        HsCodec::new_for_test(w).encode(&op, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn encodes_requests() {
        assert_eq!(enc(Workload::Get, Op::Get(42)), "0\t=\t1\t42\n");
        let keys: Vec<u64> = (1..=10).collect();
        assert_eq!(
            enc(Workload::Multiget10, Op::Multi(&keys)),
            "0\t=\t1\t1\t10\t0\t@\t0\t10\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\n"
        );
        let ins = enc(Workload::Insert, Op::Insert(7));
        assert!(ins.starts_with("0\t+\t4\t7\t") && ins.ends_with('\n'));
        assert_eq!(ins.matches('\t').count(), 6);
        let upd = enc(Workload::Update, Op::Update { key: 5, version: 3 });
        assert!(upd.starts_with("0\t=\t1\t5\t1\t0\tU\t") && upd.ends_with(" v3\n"));
        let mut t = Vec::new();
        push_token(&mut t, b"a\tb\0");
        assert_eq!(t, b"a\x01\x49b\x01\x40");
    }

    #[test]
    fn mixed_updates_go_to_index_1_and_both_answers_count() {
        assert_eq!(enc(Workload::Mixed, Op::Get(9)), "0\t=\t1\t9\n");
        let upd = enc(Workload::Mixed, Op::Update { key: 9, version: 1 });
        assert!(upd.starts_with("1\t=\t1\t9\t1\t0\tU\t"), "{upd}");
        let c = HsCodec::new_for_test(Workload::Mixed);
        let judge = |line: &[u8]| c.parse(line).map(|(_, o)| o);
        assert_eq!(judge(b"0\t3\ta\tb\tc\n"), Some(Outcome::Ok));
        assert_eq!(judge(b"0\t1\t1\n"), Some(Outcome::Ok));
        assert_eq!(judge(b"0\t1\t0\n"), Some(Outcome::Miss));
        assert_eq!(judge(b"0\t3\n"), Some(Outcome::Miss));
        assert_eq!(judge(b"1\t1\t121\n"), Some(Outcome::Error));
    }

    #[test]
    fn framing_split_everywhere() {
        let parse = |w: Workload| {
            move |b: &[u8]| -> Result<Option<(usize, Outcome)>> {
                Ok(HsCodec::new_for_test(w).parse(b))
            }
        };
        let g = Workload::Get;
        assert_eq!(
            check_splits(b"0\t3\tJane Roe\tj@x\t2010-02-03 11:22:33\n", parse(g)),
            Outcome::Ok
        );
        assert_eq!(check_splits(b"0\t3\n", parse(g)), Outcome::Miss);
        assert_eq!(check_splits(b"0\t2\ta\tb\n", parse(g)), Outcome::Miss);
        assert_eq!(check_splits(b"2\t1\tstmtnum\n", parse(g)), Outcome::Error);
        let row = "\tn\te\tc".repeat(10);
        let multi = format!("0\t3{row}\n");
        assert_eq!(
            check_splits(multi.as_bytes(), parse(Workload::Multiget10)),
            Outcome::Ok
        );
        let nine = format!("0\t3{}\n", "\tn\te\tc".repeat(9));
        assert_eq!(
            check_splits(nine.as_bytes(), parse(Workload::Multiget10)),
            Outcome::Miss
        );
        assert_eq!(
            check_splits(b"0\t1\n", parse(Workload::Insert)),
            Outcome::Ok
        );
        assert_eq!(
            check_splits(b"0\t1\t1001\n", parse(Workload::Insert)),
            Outcome::Ok
        );
        assert_eq!(
            check_splits(b"1\t1\t121\n", parse(Workload::Insert)),
            Outcome::Error
        );
        assert_eq!(
            check_splits(b"0\t1\t1\n", parse(Workload::Update)),
            Outcome::Ok
        );
        assert_eq!(
            check_splits(b"0\t1\t0\n", parse(Workload::Update)),
            Outcome::Miss
        );
        // Empty values and NULL count as values.
        assert_eq!(check_splits(b"0\t3\t\t\x00\t\n", parse(g)), Outcome::Ok);
    }
}
