//! The runner: sends the same steps to two servers, the reference (the
//! original plugin, or hsd on MariaDB) and the subject (hsd, or hsd on
//! MySQL 8), compares every answer byte for byte and after each run of write
//! requests compares the two copies of the written tables row by row. Stops
//! at the first difference that no documented exception covers.

use std::collections::{BTreeSet, HashMap};

use anyhow::{Context, Result};

use crate::exceptions::{self, Case, Exception, Opened, RowsException};
use crate::generate::{Port, Step, CONN_PORTS};
use crate::line::show;
use crate::schema::Table;
use crate::store::{Row, Store};
use crate::suite::Mode;
use crate::target::{self, Connection, Endpoint};

/// A server under test and the SQL view of its tables.
pub struct Side {
    pub endpoint: Endpoint,
    pub store: Store,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffKind {
    Answer {
        reference: Vec<u8>,
        subject: Vec<u8>,
    },
    Rows {
        table: &'static str,
        reference: Vec<Row>,
        subject: Vec<Row>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Index of the step after which it showed.
    pub step: usize,
    /// The request as the reference got it (for rows: the last write).
    pub request: Vec<u8>,
    pub kind: DiffKind,
    /// The reference's and the subject's names, for messages.
    pub names: (String, String),
}

impl Difference {
    /// A short class label, so the reducer keeps the same difference and
    /// long runs can count differences by kind.
    pub fn signature(&self) -> String {
        match &self.kind {
            DiffKind::Rows { table, .. } => format!("rows differ in {table}"),
            DiffKind::Answer { reference, subject } => format!(
                "{} | {} {} | {} {}",
                request_shape(&self.request),
                self.names.0,
                answer_shape(reference),
                self.names.1,
                answer_shape(subject)
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
    /// The request with the reference's database name.
    pub request: Vec<u8>,
    pub reference: Vec<u8>,
    pub subject: Vec<u8>,
}

#[derive(Debug, Default)]
pub struct Replay {
    /// Requests sent to each server.
    pub sent: usize,
    /// Differences covered by an exception, by exception name.
    pub excepted: Vec<&'static str>,
    pub difference: Option<Difference>,
    pub transcript: Vec<Exchange>,
    /// The reference's and the subject's names, for transcripts.
    pub names: (String, String),
}

/// A write sent since the tables were last compared: its request (as the
/// reference got it), its index and both answers.
struct SentWrite {
    request: Vec<u8>,
    opened: Option<Opened>,
    reference: Vec<u8>,
    subject: Vec<u8>,
}

pub struct Runner {
    pub reference: Side,
    pub subject: Side,
    pub tables: Vec<Table>,
    /// The differences allowed between these two servers.
    exceptions: Vec<Exception>,
    rows_exceptions: Vec<RowsException>,
    /// Tables that may differ from their seed rows (reset before the next run).
    dirty: BTreeSet<usize>,
}

impl Runner {
    /// A runner for `mode`'s pair of servers: its tables and its exceptions.
    pub fn new(reference: Side, subject: Side, mode: Mode) -> Runner {
        let tables = mode.tables();
        let dirty = (0..tables.len()).collect();
        Runner {
            reference,
            subject,
            tables,
            exceptions: mode.exceptions(),
            rows_exceptions: mode.rows_exceptions(),
            dirty,
        }
    }

    fn names(&self) -> (String, String) {
        (
            self.reference.endpoint.name.clone(),
            self.subject.endpoint.name.clone(),
        )
    }

    fn table_index(&self, name: &str) -> Option<usize> {
        self.tables.iter().position(|t| t.name == name)
    }

    /// What a `P` opens, when it names a table and index of the suite and
    /// columns they have (an index named by a number is the one at that
    /// position, PRIMARY first).
    fn resolve(&self, p: &hs_proto::OpenIndexRequest) -> Option<Opened> {
        let table = self.tables.iter().find(|t| t.name.as_bytes() == p.table)?;
        let index = match p.index.first() {
            None => table.indexes.first(),
            Some(b) if b.is_ascii_digit() => table
                .indexes
                .get(exceptions::wrapping_u32(&p.index) as usize),
            Some(_) => table.indexes.iter().find(|i| i.name.as_bytes() == p.index),
        }?;
        let column = |name: &[u8]| {
            table
                .columns
                .iter()
                .find(|c| c.name.as_bytes() == name)
                .cloned()
        };
        Some(Opened {
            table: table.name,
            table_columns: table.columns.clone(),
            key: (0..index.parts.len())
                .map(|i| table.column(index.column(i)).cloned())
                .collect::<Option<_>>()?,
            columns: p.columns.iter().map(|n| column(n)).collect::<Option<_>>()?,
            filter_columns: p
                .filter_columns
                .iter()
                .map(|n| column(n))
                .collect::<Option<_>>()?,
        })
    }

    /// Puts every table that may have changed back to its seed rows, in both copies.
    pub fn reset(&mut self) -> Result<()> {
        for &i in &self.dirty {
            let t = &self.tables[i];
            for side in [&mut self.reference, &mut self.subject] {
                side.store
                    .reset(t)
                    .with_context(|| format!("reset {} in {}", t.name, side.store.describe()))?;
            }
        }
        self.dirty.clear();
        Ok(())
    }

    fn connect_all(&self, side: &Side) -> Result<Vec<Connection>> {
        CONN_PORTS
            .iter()
            .map(|&p| target::open(&side.endpoint, p))
            .collect()
    }

    /// Resets the tables, opens fresh connections and runs `steps` until the
    /// first difference. An error means the run itself broke (a server not
    /// reachable, the reference closing a connection, SQL failing).
    pub fn run(&mut self, steps: &[Step]) -> Result<Replay> {
        self.reset()?;
        let mut rc = self.connect_all(&self.reference)?;
        let mut sc = self.connect_all(&self.subject)?;
        let mut replay = Replay {
            names: self.names(),
            ..Replay::default()
        };
        let mut pending: BTreeSet<usize> = BTreeSet::new();
        let mut last_write: Vec<u8> = Vec::new();
        // Per connection: what each index id was opened on.
        let mut opened: Vec<HashMap<u32, Opened>> = vec![HashMap::new(); CONN_PORTS.len()];
        // Tables whose auto-increment column a failed modify wrote.
        let mut failed_autoinc: BTreeSet<&'static str> = BTreeSet::new();
        // The writes since the tables were last compared, with their index
        // and answers (a rows exception may be one of theirs).
        let mut writes_since: Vec<SentWrite> = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Reconnect { conn } => {
                    let port: Port = CONN_PORTS[*conn];
                    rc[*conn] = target::open(&self.reference.endpoint, port)?;
                    sc[*conn] = target::open(&self.subject.endpoint, port)?;
                    opened[*conn].clear();
                }
                Step::Send { conn, line, writes } => {
                    let rreq = line.render(&self.reference.endpoint.db);
                    let sreq = line.render(&self.subject.endpoint.db);
                    let rans = rc[*conn].request(&rreq).with_context(|| {
                        format!(
                            "step {i}: {} did not answer {}",
                            self.reference.endpoint.name,
                            show(&rreq)
                        )
                    })?;
                    let sans = match sc[*conn].request(&sreq) {
                        Ok(a) => a,
                        Err(e) => format!("<{e:#}>").into_bytes(),
                    };
                    replay.sent += 1;
                    replay.transcript.push(Exchange {
                        conn: *conn,
                        request: rreq.clone(),
                        reference: rans.clone(),
                        subject: sans.clone(),
                    });
                    if let Some(t) = writes.and_then(|w| self.table_index(w)) {
                        self.dirty.insert(t);
                        pending.insert(t);
                        last_write = rreq.clone();
                    }
                    let parsed = hs_proto::parse_request(&rreq);
                    let index = match &parsed {
                        Ok(hs_proto::Request::Exec(e)) => opened[*conn].get(&e.index_id),
                        _ => None,
                    };
                    if writes.is_some() {
                        // The table the server opened under the id, which a
                        // malformed `P` (`P 1x ...`, read as id 1) may have
                        // made another than the generator's.
                        if let Some(t) = index.and_then(|o| self.table_index(o.table)) {
                            self.dirty.insert(t);
                            pending.insert(t);
                        }
                        writes_since.push(SentWrite {
                            request: rreq.clone(),
                            opened: index.cloned(),
                            reference: rans.clone(),
                            subject: sans.clone(),
                        });
                    }
                    if rans != sans {
                        // Answers name the database only in P lines we send, so the
                        // request is judged in its reference form.
                        let case = Case {
                            request: &rreq,
                            reference: &rans,
                            subject: &sans,
                            opened: index,
                            failed_auto_increment_modify: index
                                .is_some_and(|o| failed_autoinc.contains(o.table)),
                        };
                        match exceptions::matching_in(&self.exceptions, &case) {
                            Some(e) => {
                                replay.excepted.push(e.name);
                                if e.ends_segment {
                                    return Ok(replay);
                                }
                            }
                            None => {
                                replay.difference = Some(Difference {
                                    step: i,
                                    request: rreq,
                                    kind: DiffKind::Answer {
                                        reference: rans,
                                        subject: sans,
                                    },
                                    names: self.names(),
                                });
                                return Ok(replay);
                            }
                        }
                    }
                    if let (Ok(hs_proto::Request::Exec(e)), Some(o)) = (&parsed, index) {
                        let writes_autoinc = e.modify.is_some()
                            && o.columns.iter().any(|c| c.mysql.contains("AUTO_INCREMENT"));
                        if writes_autoinc && rans.starts_with(b"1\t") && sans.starts_with(b"1\t") {
                            failed_autoinc.insert(o.table);
                        }
                    }
                    // A `P` that fails leaves the id's earlier index open.
                    if let (Ok(hs_proto::Request::OpenIndex(p)), true) = (&parsed, rans == b"0\t1")
                    {
                        match self.resolve(p) {
                            Some(o) => opened[*conn].insert(p.index_id, o),
                            None => opened[*conn].remove(&p.index_id),
                        };
                    }
                }
            }
            let next_is_write = matches!(
                steps.get(i + 1),
                Some(Step::Send { writes: Some(_), conn, .. }) if CONN_PORTS[*conn] == Port::Write
            );
            if !pending.is_empty() && !next_is_write {
                if let Some(kind) = self.compare_tables(&pending)? {
                    if let DiffKind::Rows {
                        table,
                        reference,
                        subject,
                    } = &kind
                    {
                        let t = self.tables.iter().find(|t| t.name == *table);
                        let excepted = t.and_then(|t| {
                            exceptions::matching_rows(&self.rows_exceptions, t, reference, subject)
                        });
                        if let Some(e) = excepted {
                            // The copies differ from here on: the segment ends.
                            replay.excepted.push(e.name);
                            return Ok(replay);
                        }
                        // Or one of the writes since the last comparison
                        // holds a value the servers take differently.
                        let by_write = writes_since.iter().rev().find_map(|w| {
                            let case = Case {
                                request: &w.request,
                                reference: &w.reference,
                                subject: &w.subject,
                                opened: w.opened.as_ref(),
                                failed_auto_increment_modify: false,
                            };
                            self.exceptions
                                .iter()
                                .find(|e| e.covers_rows && (e.applies)(&case))
                        });
                        if let Some(e) = by_write {
                            replay.excepted.push(e.name);
                            return Ok(replay);
                        }
                    }
                    replay.difference = Some(Difference {
                        step: i,
                        request: last_write.clone(),
                        kind,
                        names: self.names(),
                    });
                    return Ok(replay);
                }
                pending.clear();
                writes_since.clear();
            }
        }
        Ok(replay)
    }

    fn compare_tables(&mut self, tables: &BTreeSet<usize>) -> Result<Option<DiffKind>> {
        for &i in tables {
            let t = &self.tables[i];
            let r = self.reference.store.rows(t)?;
            let s = self.subject.store.rows(t)?;
            if r != s {
                return Ok(Some(DiffKind::Rows {
                    table: t.name,
                    reference: r,
                    subject: s,
                }));
            }
        }
        Ok(None)
    }
}

/// A readable transcript: every exchange, then the difference.
pub fn transcript(replay: &Replay) -> String {
    let (rname, sname) = &replay.names;
    let width = rname.len().max(sname.len()).max(4);
    let mut out = String::new();
    for ex in &replay.transcript {
        let port = match CONN_PORTS[ex.conn] {
            Port::Read => "rd",
            Port::Write => "wr",
        };
        out.push_str(&format!("{port}> {}\n", show(&ex.request)));
        if ex.reference == ex.subject {
            out.push_str(&format!(
                "      {:width$} < {}\n",
                "both",
                show(&ex.reference)
            ));
        } else {
            out.push_str(&format!("      {rname:width$} < {}\n", show(&ex.reference)));
            out.push_str(&format!("      {sname:width$} < {}\n", show(&ex.subject)));
        }
    }
    if let Some(Difference {
        kind:
            DiffKind::Rows {
                table,
                reference,
                subject,
            },
        ..
    }) = &replay.difference
    {
        out.push_str(&format!("rows left in {table} differ:\n"));
        out.push_str(&rows_diff(&replay.names, reference, subject));
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

/// Rows only one side has, each marked with the side's name.
pub fn rows_diff(names: &(String, String), reference: &[Row], subject: &[Row]) -> String {
    let width = names.0.len().max(names.1.len()) + 6;
    let mut out = String::new();
    for r in reference {
        if !subject.contains(r) {
            let label = format!("{} only:", names.0);
            out.push_str(&format!("  {label:width$} ({})\n", show_row(r)));
        }
    }
    for r in subject {
        if !reference.contains(r) {
            let label = format!("{} only:", names.1);
            out.push_str(&format!("  {label:width$} ({})\n", show_row(r)));
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
        let names = ("plugin".to_string(), "hsd".to_string());
        let d = rows_diff(&names, &a, &b);
        assert!(d.contains("plugin only: ('1', NULL)"), "{d}");
        assert!(d.contains("hsd only:    ('1', '')"), "{d}");
    }
}
