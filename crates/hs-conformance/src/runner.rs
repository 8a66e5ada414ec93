//! The runner: sends the same steps to the plugin and to hsd, compares every
//! answer byte for byte, and after each run of write requests compares the two
//! copies of the written tables row by row. Stops at the first difference
//! that no documented exception covers.

use std::collections::BTreeSet;

use anyhow::{Context, Result};

use crate::exceptions;
use crate::generate::{Port, Step, CONN_PORTS};
use crate::line::show;
use crate::schema::Table;
use crate::store::{Row, Store};
use crate::target::{Connection, Endpoint};

/// A server under test and the SQL view of its tables.
pub struct Side {
    pub endpoint: Endpoint,
    pub store: Store,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffKind {
    Answer {
        plugin: Vec<u8>,
        hsd: Vec<u8>,
    },
    Rows {
        table: &'static str,
        plugin: Vec<Row>,
        hsd: Vec<Row>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Index of the step after which it showed.
    pub step: usize,
    /// The request as the plugin got it (for rows: the last write).
    pub request: Vec<u8>,
    pub kind: DiffKind,
}

impl Difference {
    /// A short class label, so the reducer keeps the same difference and
    /// long runs can count differences by kind.
    pub fn signature(&self) -> String {
        match &self.kind {
            DiffKind::Rows { table, .. } => format!("rows differ in {table}"),
            DiffKind::Answer { plugin, hsd } => format!(
                "{} | plugin {} | hsd {}",
                request_shape(&self.request),
                answer_shape(plugin),
                answer_shape(hsd)
            ),
        }
    }
}

/// What kind of request a line is: `P`, `A`, insert, find, find+modify op.
pub fn request_shape(line: &[u8]) -> String {
    let toks: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
    let first = toks.first().copied().unwrap_or_default();
    match first {
        b"P" => return "open".into(),
        b"A" => return "auth".into(),
        _ => {}
    }
    if !first.first().is_some_and(u8::is_ascii_digit) {
        return "not a command".into();
    }
    let op = toks.get(1).copied().unwrap_or_default();
    if op == b"+" {
        return "insert".into();
    }
    let mut shape = format!("find {}", String::from_utf8_lossy(op));
    if toks.iter().any(|t| t.starts_with(b"@")) {
        shape.push_str(" IN");
    }
    if toks.iter().any(|t| *t == b"F" || *t == b"W") {
        shape.push_str(" filter");
    }
    for m in [&b"U"[..], b"D", b"+", b"-", b"U?", b"D?", b"+?", b"-?"] {
        if toks.iter().skip(3).any(|t| *t == m) {
            shape.push_str(&format!(" {}", String::from_utf8_lossy(m)));
            break;
        }
    }
    shape
}

/// `ok` / `ok N cols` / the error line of an answer.
pub fn answer_shape(answer: &[u8]) -> String {
    if answer.is_empty() {
        return "no answer".into();
    }
    let toks: Vec<&[u8]> = answer.split(|&b| b == b'\t').collect();
    if toks[0] == b"0" {
        let rows = if toks.len() > 2 { "rows" } else { "empty" };
        return format!("0 ({rows})");
    }
    show(answer)
}

/// One request and both answers, for transcripts.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub conn: usize,
    /// The request with the plugin's database name.
    pub request: Vec<u8>,
    pub plugin: Vec<u8>,
    pub hsd: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct Replay {
    /// Requests sent to each server.
    pub sent: usize,
    /// Differences covered by an exception, by exception name.
    pub excepted: Vec<&'static str>,
    pub difference: Option<Difference>,
    pub transcript: Vec<Exchange>,
}

pub struct Runner {
    pub plugin: Side,
    pub hsd: Side,
    pub tables: Vec<Table>,
    /// Tables that may differ from their seed rows (reset before the next run).
    dirty: BTreeSet<usize>,
}

impl Runner {
    pub fn new(plugin: Side, hsd: Side, tables: Vec<Table>) -> Runner {
        let dirty = (0..tables.len()).collect();
        Runner {
            plugin,
            hsd,
            tables,
            dirty,
        }
    }

    fn table_index(&self, name: &str) -> Option<usize> {
        self.tables.iter().position(|t| t.name == name)
    }

    /// Puts every table that may have changed back to its seed rows, in both copies.
    pub fn reset(&mut self) -> Result<()> {
        for &i in &self.dirty {
            let t = &self.tables[i];
            self.plugin
                .store
                .reset(t)
                .with_context(|| format!("reset {} in {}", t.name, self.plugin.store.describe()))?;
            self.hsd
                .store
                .reset(t)
                .with_context(|| format!("reset {} in {}", t.name, self.hsd.store.describe()))?;
        }
        self.dirty.clear();
        Ok(())
    }

    fn connect_all(&self, side: &Side) -> Result<Vec<Connection>> {
        CONN_PORTS
            .iter()
            .map(|&p| Connection::open(&side.endpoint, p))
            .collect()
    }

    /// Resets the tables, opens fresh connections and runs `steps` until the
    /// first difference. An error means the run itself broke (a server not
    /// reachable, the plugin closing a connection, SQL failing).
    pub fn run(&mut self, steps: &[Step]) -> Result<Replay> {
        self.reset()?;
        let mut pc = self.connect_all(&self.plugin)?;
        let mut hc = self.connect_all(&self.hsd)?;
        let mut replay = Replay::default();
        let mut pending: BTreeSet<usize> = BTreeSet::new();
        let mut last_write: Vec<u8> = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Reconnect { conn } => {
                    let port: Port = CONN_PORTS[*conn];
                    pc[*conn] = Connection::open(&self.plugin.endpoint, port)?;
                    hc[*conn] = Connection::open(&self.hsd.endpoint, port)?;
                }
                Step::Send { conn, line, writes } => {
                    let preq = line.render(&self.plugin.endpoint.db);
                    let hreq = line.render(&self.hsd.endpoint.db);
                    let pans = pc[*conn].request(&preq).with_context(|| {
                        format!("step {i}: the plugin did not answer {}", show(&preq))
                    })?;
                    let hans = match hc[*conn].request(&hreq) {
                        Ok(a) => a,
                        Err(e) => format!("<{e:#}>").into_bytes(),
                    };
                    replay.sent += 1;
                    replay.transcript.push(Exchange {
                        conn: *conn,
                        request: preq.clone(),
                        plugin: pans.clone(),
                        hsd: hans.clone(),
                    });
                    if let Some(t) = writes.and_then(|w| self.table_index(w)) {
                        self.dirty.insert(t);
                        pending.insert(t);
                        last_write = preq.clone();
                    }
                    if pans != hans {
                        // Answers name the database only in P lines we send, so the
                        // request is judged in its plugin form.
                        match exceptions::matching(&preq, &pans, &hans) {
                            Some(name) => replay.excepted.push(name),
                            None => {
                                replay.difference = Some(Difference {
                                    step: i,
                                    request: preq,
                                    kind: DiffKind::Answer {
                                        plugin: pans,
                                        hsd: hans,
                                    },
                                });
                                return Ok(replay);
                            }
                        }
                    }
                }
            }
            let next_is_write = matches!(
                steps.get(i + 1),
                Some(Step::Send { writes: Some(_), conn, .. }) if CONN_PORTS[*conn] == Port::Write
            );
            if !pending.is_empty() && !next_is_write {
                if let Some(kind) = self.compare_tables(&pending)? {
                    replay.difference = Some(Difference {
                        step: i,
                        request: last_write.clone(),
                        kind,
                    });
                    return Ok(replay);
                }
                pending.clear();
            }
        }
        Ok(replay)
    }

    fn compare_tables(&mut self, tables: &BTreeSet<usize>) -> Result<Option<DiffKind>> {
        for &i in tables {
            let t = &self.tables[i];
            let p = self.plugin.store.rows(t)?;
            let h = self.hsd.store.rows(t)?;
            if p != h {
                return Ok(Some(DiffKind::Rows {
                    table: t.name,
                    plugin: p,
                    hsd: h,
                }));
            }
        }
        Ok(None)
    }
}

/// A readable transcript: every exchange, then the difference.
pub fn transcript(replay: &Replay) -> String {
    let mut out = String::new();
    for ex in &replay.transcript {
        let port = match CONN_PORTS[ex.conn] {
            Port::Read => "rd",
            Port::Write => "wr",
        };
        out.push_str(&format!("{port}> {}\n", show(&ex.request)));
        if ex.plugin == ex.hsd {
            out.push_str(&format!("      both   < {}\n", show(&ex.plugin)));
        } else {
            out.push_str(&format!("      plugin < {}\n", show(&ex.plugin)));
            out.push_str(&format!("      hsd    < {}\n", show(&ex.hsd)));
        }
    }
    if let Some(Difference {
        kind: DiffKind::Rows { table, plugin, hsd },
        ..
    }) = &replay.difference
    {
        out.push_str(&format!("rows left in {table} differ:\n"));
        out.push_str(&rows_diff(plugin, hsd));
    }
    out
}

fn show_row(r: &Row) -> String {
    r.iter()
        .map(|v| match v {
            None => "NULL".to_string(),
            Some(b) => format!("'{}'", show(b)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rows only one side has, each marked with the side.
pub fn rows_diff(plugin: &[Row], hsd: &[Row]) -> String {
    let mut out = String::new();
    for r in plugin {
        if !hsd.contains(r) {
            out.push_str(&format!("  plugin only: ({})\n", show_row(r)));
        }
    }
    for r in hsd {
        if !plugin.contains(r) {
            out.push_str(&format!("  hsd only:    ({})\n", show_row(r)));
        }
    }
    if out.is_empty() {
        out.push_str("  same rows, different order or multiplicity\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_shapes() {
        assert_eq!(request_shape(b"P\t0\tdb"), "open");
        assert_eq!(request_shape(b"1\t+\t2\ta\tb"), "insert");
        assert_eq!(
            request_shape(b"1\t>=\t1\ta\t1\t0\t@\t0\t1\tx\tF\t=\t0\t1\tU?\tz"),
            "find >= IN filter U?"
        );
        assert_eq!(request_shape(b"X"), "not a command");
    }

    #[test]
    fn answer_shapes() {
        assert_eq!(answer_shape(b"0\t2\ta\tb"), "0 (rows)");
        assert_eq!(answer_shape(b"0\t2"), "0 (empty)");
        assert_eq!(answer_shape(b"2\t1\tkpnum"), "2\\t1\\tkpnum");
        assert_eq!(answer_shape(b""), "no answer");
    }

    #[test]
    fn rows_diff_marks_sides() {
        let a = vec![vec![Some(b"1".to_vec()), None]];
        let b = vec![vec![Some(b"1".to_vec()), Some(b"".to_vec())]];
        let d = rows_diff(&a, &b);
        assert!(d.contains("plugin only: ('1', NULL)"), "{d}");
        assert!(d.contains("hsd only:    ('1', '')"), "{d}");
    }
}
