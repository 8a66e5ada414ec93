//! The seeded request-stream generator. A segment is a short session: two
//! connections (one on the read port, one on the write port) that open
//! indexes and then send finds, modifies, inserts, auth lines and malformed
//! lines, reaching every branch of the original's request handling.
//!
//! Numbers that the original uses to size memory (key counts, IN value counts,
//! insert value counts, index ids) stay small: huge ones make mariadbd
//! allocate gigabytes or overflow its stack, which proves nothing. Lines never
//! start with `Q` or `/`: the original shuts its listener down or drops the
//! connection on those (see exceptions.rs).

use std::collections::BTreeMap;

use crate::line::Line;
use crate::rng::Rng;
use crate::schema::Table;
use crate::values::{delta, value_for, Range};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    Read,
    Write,
}

/// The two connections of a segment.
pub const CONN_PORTS: [Port; 2] = [Port::Read, Port::Write];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send one line on connection `conn` and read its answer. `writes` names
    /// the table a write request may change (compared row by row after it).
    Send {
        conn: usize,
        line: Line,
        writes: Option<&'static str>,
    },
    /// Close connection `conn` and open a fresh one on the same port.
    Reconnect { conn: usize },
}

#[derive(Debug, Clone)]
pub struct Segment {
    pub seed: u64,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
struct Opened {
    table: usize,
    index: usize,
    columns: Vec<&'static str>,
    fcolumns: Vec<&'static str>,
}

pub struct Generator<'a> {
    rng: Rng,
    tables: &'a [Table],
    range: Range,
    opened: Vec<BTreeMap<u32, Opened>>,
    steps: Vec<Step>,
}

/// Generates the segment for `seed`: `len` steps over `tables`.
pub fn segment(seed: u64, len: usize, tables: &[Table], range: Range) -> Segment {
    let mut g = Generator {
        rng: Rng::new(seed),
        tables,
        range,
        opened: vec![BTreeMap::new(); CONN_PORTS.len()],
        steps: Vec::new(),
    };
    // Start with a few indexes open on both connections, so that most
    // requests run on something.
    for conn in 0..CONN_PORTS.len() {
        for _ in 0..3 {
            if g.steps.len() < len {
                g.open_valid(conn);
            }
        }
    }
    while g.steps.len() < len {
        g.one();
    }
    Segment {
        seed,
        steps: g.steps,
    }
}

impl Generator<'_> {
    fn full(&self) -> bool {
        self.range == Range::Full
    }

    fn send(&mut self, conn: usize, line: Line, writes: Option<&'static str>) {
        let writes = if CONN_PORTS[conn] == Port::Write {
            writes
        } else {
            None
        };
        self.steps.push(Step::Send { conn, line, writes });
    }

    fn one(&mut self) {
        let kind = self.rng.weighted(&[8, 3, 30, 8, 10, 16, 10, 2, 5, 1, 2]);
        let reader = if self.rng.chance(65) { 0 } else { 1 };
        let writer = if self.rng.chance(88) { 1 } else { 0 };
        match kind {
            0 => self.open_valid(reader),
            1 => self.open_broken(reader),
            2 => self.find(reader, false, false),
            3 => self.find(reader, true, false),
            4 => self.find(reader, false, true),
            5 => self.modify(writer),
            6 => self.insert(writer),
            7 => self.auth(reader),
            8 => self.garbage(reader),
            9 => {
                let conn = self.rng.below(CONN_PORTS.len());
                self.opened[conn].clear();
                self.steps.push(Step::Reconnect { conn });
            }
            _ => self.open_big_id(reader),
        }
    }

    fn pick_table(&mut self) -> usize {
        self.rng.below(self.tables.len())
    }

    fn random_columns(&mut self, table: usize, at_least: usize) -> Vec<&'static str> {
        let t = &self.tables[table];
        let all: Vec<&'static str> = t.columns.iter().map(|c| c.name).collect();
        let n = self.rng.range(at_least, all.len());
        let mut cols = Vec::new();
        let mut pool = all.clone();
        for _ in 0..n {
            let i = self.rng.below(pool.len());
            cols.push(pool.remove(i));
        }
        if self.rng.chance(5) && !all.is_empty() {
            // the same column twice
            let c = *self.rng.pick(&all);
            cols.push(c);
        }
        cols
    }

    fn index_token(&mut self, table: usize, index: usize) -> String {
        let name = self.tables[table].indexes[index].name;
        let roll = self.rng.below(100);
        if roll < 12 && self.full() {
            index.to_string()
        } else if roll < 20 && index == 0 {
            String::new()
        } else {
            name.to_string()
        }
    }

    fn open_valid(&mut self, conn: usize) {
        let table = self.pick_table();
        let index = self.rng.below(self.tables[table].indexes.len());
        let id = self.rng.below(6) as u32;
        let at_least = if self.rng.chance(4) { 0 } else { 1 };
        let columns = self.random_columns(table, at_least);
        let fcolumns = if self.rng.chance(60) {
            self.random_columns(table, 1)
        } else {
            Vec::new()
        };
        let idx = self.index_token(table, index);
        let mut line = Line::new()
            .raw("P")
            .num(id)
            .db()
            .raw(self.tables[table].name)
            .raw(idx)
            .raw(columns.join(","));
        if !fcolumns.is_empty() || self.rng.chance(10) {
            line = line.raw(fcolumns.join(","));
        }
        self.opened[conn].insert(
            id,
            Opened {
                table,
                index,
                columns,
                fcolumns,
            },
        );
        self.send(conn, line, None);
    }

    fn open_broken(&mut self, conn: usize) {
        let table = self.pick_table();
        let t = &self.tables[table];
        let name = t.name;
        let first_col = t.columns[0].name;
        let id = self.rng.below(6);
        // Cases 0-4 make the plugin fail to open a table. On its write
        // thread that error never clears, and every explicit auto-increment
        // insert after it answers 1 1 167 until the server restarts (see
        // exceptions.rs): so on the write port only the other cases.
        let case = if CONN_PORTS[conn] == Port::Write {
            5 + self.rng.below(7)
        } else {
            self.rng.below(12)
        };
        let line = match case {
            0 => Line::new().raw("P"),
            1 => Line::new().raw("P").num(id),
            2 => Line::new().raw("P").num(id).db().raw(name),
            3 => Line::new()
                .raw("P")
                .num(id)
                .raw("no_such_db")
                .raw(name)
                .raw("PRIMARY")
                .raw(first_col),
            4 => Line::new()
                .raw("P")
                .num(id)
                .db()
                .raw("no_such_table")
                .raw("PRIMARY")
                .raw(first_col),
            5 => Line::new()
                .raw("P")
                .num(id)
                .db()
                .raw(name)
                .raw(if self.full() { "9" } else { "no_such_index" })
                .raw(first_col),
            6 => Line::new()
                .raw("P")
                .num(id)
                .db()
                .raw(name)
                .raw("primary")
                .raw(first_col),
            7 => Line::new()
                .raw("P")
                .num(id)
                .db()
                .raw(name)
                .raw("PRIMARY")
                .raw(format!("{first_col},no_such_col")),
            8 => Line::new()
                .raw("P")
                .num(id)
                .db()
                .raw(name)
                .raw("PRIMARY")
                .raw(first_col.to_ascii_uppercase()),
            9 => Line::new()
                .raw("P")
                .num(id)
                .db()
                .raw(name)
                .raw("PRIMARY")
                .raw(first_col)
                .raw("no_such_fcol"),
            10 => Line::new()
                .raw("P")
                .raw(*self.rng.pick(&["x", "1x", "", "-1", "4294967297"]))
                .db()
                .raw(name)
                .raw("PRIMARY")
                .raw(first_col),
            _ => Line::new()
                .raw("P")
                .num(id)
                .db()
                .raw(name)
                .raw("PRIMARY")
                .raw(format!("{first_col},"))
                .raw(",")
                .raw("extra"),
        };
        self.send(conn, line, None);
    }

    /// An index id above hsd's limit (65535): a documented exception.
    fn open_big_id(&mut self, conn: usize) {
        let table = self.pick_table();
        let t = &self.tables[table];
        let id = 65_536 + self.rng.below(3) as u32;
        let line = Line::new()
            .raw("P")
            .num(id)
            .db()
            .raw(t.name)
            .raw("PRIMARY")
            .raw(t.columns[0].name);
        self.send(conn, line, None);
        if self.rng.chance(50) {
            let l = Line::new()
                .num(id)
                .raw(">=")
                .num(1)
                .value(Some(b"0".to_vec()));
            self.send(conn, l, None);
        }
    }

    /// An opened index id of `conn`, sometimes one that is not open.
    fn pick_id(&mut self, conn: usize) -> (String, Option<Opened>) {
        let ids: Vec<u32> = self.opened[conn].keys().copied().collect();
        if ids.is_empty() || self.rng.chance(4) {
            let id = *self.rng.pick(&[0u32, 1, 5, 6, 7, 40]);
            return (id.to_string(), self.opened[conn].get(&id).cloned());
        }
        let id = *self.rng.pick(&ids);
        let token = match self.rng.below(40) {
            0 => format!("0{id}"),
            1 => format!("{id}x"),
            2 => (u64::from(id) + (1u64 << 32)).to_string(),
            _ => id.to_string(),
        };
        (token, self.opened[conn].get(&id).cloned())
    }

    fn find_op(&mut self) -> &'static str {
        let op: &&'static str = if self.rng.chance(92) {
            self.rng.pick(&["=", "=", ">=", "<=", ">", "<"])
        } else {
            self.rng
                .pick(&["=>", "==", "!", "", "<>", "=<", ">>", "S", "x", "!="])
        };
        op
    }

    /// The key count: usually 1..=parts, sometimes 0, parts+1, or a wrapped number.
    fn key_count(&mut self, parts: usize) -> (String, usize) {
        match self.rng.below(100) {
            0..=3 => ("0".into(), 0),
            4..=10 => ((parts + 1).to_string(), parts + 1),
            11 if self.full() => ("4294967297".into(), 1),
            12 => (format!("{parts}x"), parts),
            _ => {
                let n = self.rng.range(1, parts);
                (n.to_string(), n)
            }
        }
    }

    fn key_values(&mut self, o: &Opened, n: usize) -> Vec<Option<Vec<u8>>> {
        let t = &self.tables[o.table];
        let ix = &t.indexes[o.index];
        (0..n)
            .map(|i| {
                let col = if i < ix.parts.len() {
                    ix.column(i)
                } else {
                    t.columns[i % t.columns.len()].name
                };
                value_for(&mut self.rng, t, col, self.range)
            })
            .collect()
    }

    fn limit_offset(&mut self, line: Line, force: bool) -> Line {
        if !force && self.rng.chance(30) {
            return line;
        }
        let limit = *self.rng.pick(&[
            "1",
            "1",
            "2",
            "3",
            "5",
            "10",
            "100",
            "0",
            "",
            "abc",
            "4294967296",
            "4294967295",
            "2x",
        ]);
        let line = line.raw(limit);
        if !force && self.rng.chance(8) {
            return line;
        }
        let offset = *self
            .rng
            .pick(&["0", "0", "0", "0", "1", "2", "5", "", "x", "4294967295"]);
        line.raw(offset)
    }

    fn in_clause(&mut self, line: Line, o: &Opened) -> Line {
        let t = &self.tables[o.table];
        let ix = &t.indexes[o.index];
        let icol = self.rng.range(0, ix.parts.len());
        let m = if self.rng.chance(5) {
            0
        } else {
            self.rng.range(1, 4)
        };
        let at = if self.rng.chance(3) { "@x" } else { "@" };
        let mut line = line.raw(at).num(icol).num(m);
        let col = if icol < ix.parts.len() {
            ix.column(icol)
        } else {
            t.columns[0].name
        };
        for _ in 0..m {
            line = line.value(value_for(&mut self.rng, t, col, self.range));
        }
        line
    }

    fn filters(&mut self, mut line: Line, o: &Opened) -> Line {
        let t = &self.tables[o.table];
        let count = self.rng.range(1, 3);
        for _ in 0..count {
            let ftype = if self.rng.chance(94) {
                *self.rng.pick(&["F", "W", "F"])
            } else {
                *self.rng.pick(&["FF", "Wx", "F!"])
            };
            let fop = if self.rng.chance(85) {
                *self.rng.pick(&["=", "!=", ">", ">=", "<", "<="])
            } else {
                *self
                    .rng
                    .pick(&["<>", "=>", "!", "==", "", "x", "abc", "!==", "=<"])
            };
            let nf = o.fcolumns.len();
            let fcol = if nf == 0 || self.rng.chance(5) {
                nf + self.rng.below(2)
            } else {
                self.rng.below(nf)
            };
            let value = if fcol < nf {
                value_for(&mut self.rng, t, o.fcolumns[fcol], self.range)
            } else {
                Some(b"1".to_vec())
            };
            line = line.raw(ftype).raw(fop).num(fcol).value(value);
        }
        line
    }

    /// A find, optionally with IN and/or filters.
    fn find(&mut self, conn: usize, with_in: bool, with_filters: bool) {
        let (id, opened) = self.pick_id(conn);
        let Some(o) = opened else {
            let line = Line::new()
                .raw(id)
                .raw("=")
                .num(1)
                .value(Some(b"1".to_vec()));
            return self.send(conn, line, None);
        };
        let parts = self.tables[o.table].indexes[o.index].parts.len();
        let op = self.find_op();
        let (n_token, n) = self.key_count(parts);
        let mut line = Line::new().raw(id).raw(op).raw(n_token);
        let keys = self.key_values(&o, n);
        let given = if self.rng.chance(4) && n > 0 {
            n - 1
        } else {
            n
        };
        for k in keys.into_iter().take(given) {
            line = line.value(k);
        }
        if given < n {
            return self.send(conn, line, None);
        }
        let extra = with_in || with_filters;
        line = self.limit_offset(line, extra);
        if with_in {
            line = self.in_clause(line, &o);
        }
        if with_filters {
            line = self.filters(line, &o);
        }
        if self.rng.chance(3) {
            line = line.raw("");
        }
        self.send(conn, line, None);
    }

    fn modify(&mut self, conn: usize) {
        let (id, opened) = self.pick_id(conn);
        let Some(o) = opened else {
            let line = Line::new()
                .raw(id)
                .raw("=")
                .num(1)
                .value(Some(b"1".to_vec()))
                .num(1)
                .num(0)
                .raw("D");
            return self.send(conn, line, None);
        };
        let table_name = self.tables[o.table].name;
        let parts = self.tables[o.table].indexes[o.index].parts.len();
        let op = if self.rng.chance(95) {
            *self.rng.pick(&["=", "=", "=", ">=", "<=", ">", "<"])
        } else {
            self.find_op()
        };
        let n = self.rng.range(1, parts);
        let mut line = Line::new().raw(id).raw(op).num(n);
        for k in self.key_values(&o, n) {
            line = line.value(k);
        }
        let limit = *self.rng.pick(&["1", "1", "1", "2", "3", "0", "5"]);
        let offset = *self.rng.pick(&["0", "0", "0", "1"]);
        line = line.raw(limit).raw(offset);
        if self.rng.chance(15) {
            line = self.in_clause(line, &o);
        }
        if self.rng.chance(20) {
            line = self.filters(line, &o);
        }
        let mop = if self.rng.chance(93) {
            *self
                .rng
                .pick(&["U", "U", "D", "+", "+", "-", "-", "U?", "D?", "+?", "-?"])
        } else {
            *self.rng.pick(&["X", "u", "UU", "D!", "+-", "", "?"])
        };
        line = line.raw(mop);
        let ncols = o.columns.len();
        let nvals = match self.rng.below(100) {
            0..=54 => ncols,
            55..=79 => ncols.saturating_sub(self.rng.range(1, 2)),
            _ => ncols + self.rng.range(1, 2),
        };
        let t = &self.tables[o.table];
        for i in 0..nvals {
            let v = if mop.starts_with('+') || mop.starts_with('-') {
                delta(&mut self.rng, self.range)
            } else if i < ncols {
                value_for(&mut self.rng, t, o.columns[i], self.range)
            } else {
                Some(b"extra".to_vec())
            };
            line = line.value(v);
        }
        self.send(conn, line, Some(table_name));
    }

    fn insert(&mut self, conn: usize) {
        let (id, opened) = self.pick_id(conn);
        let Some(o) = opened else {
            let line = Line::new()
                .raw(id)
                .raw("+")
                .num(1)
                .value(Some(b"1".to_vec()));
            return self.send(conn, line, None);
        };
        let t = &self.tables[o.table];
        let ncols = o.columns.len();
        let n = match self.rng.below(100) {
            0..=4 => 0,
            5..=29 => self.rng.range(1, ncols.max(1)),
            30..=79 => ncols,
            _ => ncols + self.rng.range(1, 2),
        };
        let given = if self.rng.chance(5) && n > 0 {
            n - 1
        } else {
            n
        };
        let mut line = Line::new().raw(id).raw("+").num(n);
        for i in 0..given {
            let v = if i < ncols {
                self.insert_value(t, o.columns[i])
            } else {
                Some(b"9".to_vec())
            };
            line = line.value(v);
        }
        self.send(conn, line, Some(t.name));
    }

    /// Insert values: fresh values so that most inserts succeed, sometimes a
    /// seed value (duplicates), NULL, or an edge value.
    fn insert_value(&mut self, t: &Table, column: &str) -> Option<Vec<u8>> {
        let Some(c) = t.column(column) else {
            return Some(b"1".to_vec());
        };
        let fresh = self.rng.chance(45);
        if fresh {
            let n = 100 + self.rng.below(900);
            if c.kind.is_integer() {
                // small enough for every integer column but TINYINT (clamped there)
                return Some((n % 120).to_string().into_bytes());
            }
            if c.kind.is_text() {
                return Some(format!("n{}", n % 1000).into_bytes());
            }
        }
        value_for(&mut self.rng, t, column, self.range)
    }

    fn auth(&mut self, conn: usize) {
        let line = match self.rng.below(8) {
            0 => Line::new().raw("A").raw("1"),
            1 => Line::new().raw("A").raw("1").raw(""),
            2 => Line::new().raw("A").raw("1").raw("secret"),
            3 => Line::new().raw("A").raw("2").raw("secret"),
            4 => Line::new().raw("A"),
            5 => Line::new().raw("A").raw("11").raw("x"),
            6 => Line::new().raw("A").raw("1").raw("x").raw("y"),
            _ => Line::new().raw("A").raw("1").value(None),
        };
        self.send(conn, line, None);
    }

    fn garbage(&mut self, conn: usize) {
        let line = match self.rng.below(14) {
            0 => Line::new().raw(""),
            1 => Line::new().raw("X"),
            2 => Line::new().raw("PX").num(0),
            3 => Line::new().raw("AB"),
            4 => Line::new().raw("-1").raw("=").num(1).num(1),
            5 => Line::new().raw(" 0").raw("=").num(1).num(1),
            6 => Line::new().raw("abc").raw("def"),
            7 => Line::new().raw("P0"),
            8 => Line::new().raw("+").num(1).raw("x"),
            9 => Line::new().num(0),
            10 => Line::new().num(0).raw("="),
            11 => Line::new().num(0).raw("+"),
            12 => Line::new().raw("").raw("").raw(""),
            _ => Line::new().raw("p").num(0),
        };
        self.send(conn, line, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{lite_tables, mysql_tables};

    #[test]
    fn same_seed_same_segment() {
        let t = mysql_tables();
        let a = segment(11, 300, &t, Range::Full);
        let b = segment(11, 300, &t, Range::Full);
        assert_eq!(a.steps, b.steps);
        assert_eq!(a.steps.len(), 300);
        let c = segment(12, 300, &t, Range::Full);
        assert_ne!(a.steps, c.steps);
    }

    #[test]
    fn no_line_starts_with_q_or_slash() {
        let t = mysql_tables();
        for seed in 0..20 {
            for s in segment(seed, 400, &t, Range::Full).steps {
                if let Step::Send { line, .. } = s {
                    let bytes = line.render("db");
                    assert!(!matches!(bytes.first(), Some(b'Q' | b'/')), "{:?}", bytes);
                }
            }
        }
    }

    #[test]
    fn reaches_every_request_family() {
        let t = mysql_tables();
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..10 {
            for s in segment(seed, 500, &t, Range::Full).steps {
                let Step::Send { line, writes, .. } = s else {
                    seen.insert("reconnect".to_string());
                    continue;
                };
                let text = String::from_utf8_lossy(&line.render("db")).into_owned();
                let toks: Vec<&str> = text.split('\t').collect();
                if toks[0] == "P" || toks[0] == "A" {
                    seen.insert(toks[0].to_string());
                }
                if toks.get(1) == Some(&"+") {
                    seen.insert("insert".into());
                }
                for m in ["U", "D", "+", "-", "U?", "D?", "+?", "-?"] {
                    if writes.is_some() && toks.last().is_some() && toks.contains(&m) {
                        seen.insert(format!("mod{m}"));
                    }
                }
                if toks.contains(&"@") {
                    seen.insert("in".into());
                }
                if toks.contains(&"W") {
                    seen.insert("while".into());
                }
            }
        }
        for want in [
            "P",
            "A",
            "insert",
            "modU",
            "modD",
            "mod+",
            "mod-",
            "modU?",
            "modD?",
            "mod+?",
            "mod-?",
            "in",
            "while",
            "reconnect",
        ] {
            assert!(seen.contains(want), "never generated: {want}; saw {seen:?}");
        }
    }

    #[test]
    fn lite_segments_use_names_not_numbers_for_indexes() {
        let t = lite_tables();
        for s in segment(3, 400, &t, Range::TypeIndependent).steps {
            if let Step::Send { line, .. } = s {
                let text = String::from_utf8_lossy(&line.render("db")).into_owned();
                let toks: Vec<&str> = text.split('\t').collect();
                if toks[0] == "P" && toks.len() > 4 {
                    assert!(!toks[4].starts_with(|c: char| c.is_ascii_digit()), "{text}");
                }
            }
        }
    }
}
