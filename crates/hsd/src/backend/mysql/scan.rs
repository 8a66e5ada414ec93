//! `scan_many` for MySQL/MariaDB: where grouping pays.
//!
//! The scans of one batch (every find queued by every client connection when
//! a read worker woke up) are planned into as few statements as possible:
//!
//! - Point lookups (`=` on every column of a unique index, no NULL key, no
//!   filter) with the same shape become one statement per chunk of up to
//!   `POINTS_CHUNK` distinct keys: `SELECT (CASE WHEN k = ? THEN 0 WHEN k = ?
//!   THEN 1 ... END), cols FROM t FORCE INDEX (..) WHERE k IN (?, ?, ...)`. The
//!   server compares (types, collations); the CASE tells which lookup a row
//!   answers. Keys equal for the server but not byte-identical (`'a'`/`'A'`
//!   under a case-insensitive collation) can share a row, and CASE names only
//!   the first: lookups that found nothing in a statement that found
//!   something are therefore asked again, until a round finds nothing.
//! - Other small scans (limit + offset <= `UNION_MAX_FETCH`, e.g. IN lists on
//!   a non-unique index) with the same shape become `(SELECT 0, ... LIMIT ?)
//!   UNION ALL (SELECT 1, ... LIMIT ?) ...`, each branch exactly the statement
//!   the scan would run alone.
//! - Everything else runs alone and streams.
//!
//! Statement counts are padded to a power of two (NULL keys, `LIMIT 0`
//! branches) so each shape has only a few statement texts to prepare.
//! Grouped rows are buffered per scan and handed to `visit` in scan order.

use super::fxhash::FxHashMap;
use super::link::{Failure, Link, Plan, StmtKey};
use super::values::{as_int, bind_scan, param, RowRef};
use crate::backend::scan_sql::{self, Dialect, ScanShape};
use crate::backend::{FilterMode, RowVisitor, Scan, ScanStep};
use hs_proto::FindOp;
use mysql::Value;
use std::collections::HashMap;
use std::fmt::Write;

pub const DIALECT: Dialect = Dialect {
    lock_suffix: " FOR UPDATE",
};

/// Most distinct keys in one point-lookup statement.
pub const POINTS_CHUNK: usize = 64;
/// Most branches in one UNION ALL statement.
pub const UNION_CHUNK: usize = 16;
/// Scans fetching more rows than this run alone (and stream).
pub const UNION_MAX_FETCH: u64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Points,
    Union,
}

struct Group {
    kind: Kind,
    shape: ScanShape,
    members: Vec<usize>,
    /// Row layout once run: (has_state, locator_len); the scan number is first.
    layout: Option<(bool, usize)>,
}

enum Route {
    /// Runs alone; the shape when planning computed it already.
    Alone(Option<ScanShape>),
    Group(usize),
}

fn is_point_lookup(scan: &Scan<'_>) -> bool {
    let index = scan.index.index_meta();
    scan.op == FindOp::Eq
        && index.unique
        && !index.key_sql.is_empty()
        && scan.keys.len() == index.key_sql.len()
        && scan.keys.iter().all(Option::is_some)
        && scan.filter_mode == FilterMode::None
}

fn plan(scans: &[Scan<'_>]) -> (Vec<Route>, Vec<Group>) {
    if scans.len() < 2 {
        return (
            scans.iter().map(|_| Route::Alone(None)).collect(),
            Vec::new(),
        );
    }
    let mut routes = Vec::with_capacity(scans.len());
    let mut groups: Vec<Group> = Vec::new();
    let mut by_shape: FxHashMap<(Kind, ScanShape), usize> = FxHashMap::default();
    for (i, scan) in scans.iter().enumerate() {
        let kind = if is_point_lookup(scan) {
            Kind::Points
        } else if !scan.with_locator && scan.fetch <= UNION_MAX_FETCH {
            Kind::Union
        } else {
            routes.push(Route::Alone(None));
            continue;
        };
        let key = (kind, ScanShape::of(scan));
        let g = match by_shape.get(&key) {
            Some(&g) => g,
            None => {
                groups.push(Group {
                    kind,
                    shape: key.1.clone(),
                    members: Vec::new(),
                    layout: None,
                });
                by_shape.insert(key, groups.len() - 1);
                groups.len() - 1
            }
        };
        groups[g].members.push(i);
        routes.push(Route::Group(g));
    }
    // A group of one is just a scan.
    for r in routes.iter_mut() {
        if let Route::Group(g) = *r {
            if groups[g].members.len() < 2 {
                *r = Route::Alone(Some(groups[g].shape.clone()));
            }
        }
    }
    (routes, groups)
}

/// Runs the scans; `progressed` is set once any row was handed to `visit`
/// (after which a failure may not be retried).
pub fn scan_many(
    link: &mut Link,
    scans: &[Scan<'_>],
    visit: &mut RowVisitor<'_>,
    progressed: &mut bool,
) -> Result<(), Failure> {
    let (routes, mut groups) = plan(scans);
    let mut buffers: Vec<Vec<Vec<Value>>> = Vec::new();
    if !groups.is_empty() {
        buffers.resize_with(scans.len(), Vec::new);
    }
    for (i, (scan, route)) in scans.iter().zip(routes).enumerate() {
        match route {
            Route::Alone(shape) => run_single(link, i, scan, shape, visit, progressed)?,
            Route::Group(g) => {
                let group = &mut groups[g];
                let (has_state, locator_len) = match group.layout {
                    Some(l) => l,
                    None => {
                        let l = match group.kind {
                            Kind::Points => run_points(link, scans, group, &mut buffers)?,
                            Kind::Union => run_union(link, scans, group, &mut buffers)?,
                        };
                        group.layout = Some(l);
                        l
                    }
                };
                let ncols = scan.index.columns.len();
                for vals in std::mem::take(&mut buffers[i]) {
                    *progressed = true;
                    let row = RowRef {
                        vals: &vals,
                        base: 1,
                        ncols,
                        has_state,
                        locator_len,
                    };
                    if visit(i, &row) == ScanStep::Stop {
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

/// A statement failed: close it if the table may have changed under it.
fn after_failure(link: &mut Link, key: &StmtKey, f: Failure) -> Failure {
    if !f.link_lost {
        link.forget(key);
    }
    f
}

fn run_single(
    link: &mut Link,
    n: usize,
    scan: &Scan<'_>,
    shape: Option<ScanShape>,
    visit: &mut RowVisitor<'_>,
    progressed: &mut bool,
) -> Result<(), Failure> {
    let key = StmtKey::Single(shape.unwrap_or_else(|| ScanShape::of(scan)));
    let (stmt, plan) = link.prepare(&key, || {
        let s = scan_sql::build(scan, DIALECT);
        (s.sql.clone(), Plan::Scan(s))
    })?;
    let Plan::Scan(sql) = &*plan else {
        return Err(Failure::refused(
            1,
            "statement cache holds a different plan",
        ));
    };
    let mut params = Vec::with_capacity(sql.params.len());
    bind_scan(scan, sql, scan.fetch, &mut params);
    let ncols = scan.index.columns.len();
    let result = link.query_rows(&stmt, params, |vals| {
        *progressed = true;
        let row = RowRef {
            vals: &vals,
            base: 0,
            ncols,
            has_state: sql.has_state,
            locator_len: sql.locator_len,
        };
        visit(n, &row) == ScanStep::Continue
    });
    result.map_err(|f| after_failure(link, &key, f))
}

/// The statement for `n` point lookups of `scan`'s shape.
fn points_sql(scan: &Scan<'_>, n: usize) -> (String, Plan) {
    let index = scan.index.index_meta();
    let table = &scan.index.table;
    let cond = index
        .key_sql
        .iter()
        .map(|k| format!("{k} = ?"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let mut sql = String::with_capacity(64 + n * (cond.len() + 16));
    sql.push_str("SELECT (CASE");
    for i in 0..n {
        let _ = write!(sql, " WHEN {cond} THEN {i}");
    }
    sql.push_str(" END)");
    for &c in &scan.index.columns {
        sql.push_str(", ");
        sql.push_str(&table.columns[c].select_sql);
    }
    let locator_len = if scan.with_locator {
        for l in &table.locator_sql {
            sql.push_str(", ");
            sql.push_str(l);
        }
        table.locator_sql.len()
    } else {
        0
    };
    let _ = write!(sql, " FROM {} WHERE ", index.from_sql);
    if index.key_sql.len() == 1 {
        let _ = write!(sql, "{} IN (", index.key_sql[0]);
        sql.push_str(&vec!["?"; n].join(", "));
        sql.push(')');
    } else {
        let parts: Vec<String> = (0..n).map(|_| format!("({cond})")).collect();
        sql.push_str(&parts.join(" OR "));
    }
    if scan.with_locator {
        sql.push_str(DIALECT.lock_suffix);
    }
    (
        sql,
        Plan::Points {
            key_len: index.key_sql.len(),
            locator_len,
        },
    )
}

fn padded(n: usize) -> usize {
    n.next_power_of_two()
}

fn run_points(
    link: &mut Link,
    scans: &[Scan<'_>],
    group: &Group,
    buffers: &mut [Vec<Vec<Value>>],
) -> Result<(bool, usize), Failure> {
    let first = &scans[group.members[0]];
    // Distinct keys (byte-identical keys are one lookup).
    let mut slots: Vec<&[Option<&[u8]>]> = Vec::new();
    let mut slot_of: Vec<usize> = Vec::with_capacity(group.members.len());
    let mut seen: HashMap<&[Option<&[u8]>], usize> = HashMap::new();
    for &m in &group.members {
        let keys = scans[m].keys.as_slice();
        let s = *seen.entry(keys).or_insert_with(|| {
            slots.push(keys);
            slots.len() - 1
        });
        slot_of.push(s);
    }
    let mut found: Vec<Option<Vec<Value>>> = vec![None; slots.len()];
    let mut pending: Vec<usize> = (0..slots.len()).collect();
    let mut locator_len = 0;
    while !pending.is_empty() {
        let mut missed = Vec::new();
        for chunk in pending.chunks(POINTS_CHUNK) {
            let n = padded(chunk.len());
            let key = StmtKey::Points(group.shape.clone(), n);
            let (stmt, plan) = link.prepare(&key, || points_sql(first, n))?;
            let Plan::Points {
                key_len,
                locator_len: l,
            } = *plan
            else {
                return Err(Failure::refused(
                    1,
                    "statement cache holds a different plan",
                ));
            };
            locator_len = l;
            let mut params = Vec::with_capacity(2 * n * key_len);
            for _ in 0..2 {
                for j in 0..n {
                    match chunk.get(j) {
                        Some(&s) => params.extend(slots[s].iter().map(|k| param(*k))),
                        None => params.extend((0..key_len).map(|_| Value::NULL)),
                    }
                }
            }
            let mut hits = 0;
            let result = link.query_rows(&stmt, params, |vals| {
                let j = vals.first().map_or(-1, as_int);
                if let Some(&s) = usize::try_from(j).ok().and_then(|j| chunk.get(j)) {
                    found[s] = Some(vals);
                    hits += 1;
                }
                true
            });
            result.map_err(|f| after_failure(link, &key, f))?;
            if hits > 0 {
                missed.extend(chunk.iter().copied().filter(|&s| found[s].is_none()));
            }
        }
        pending = missed;
    }
    // Hand each row to every lookup of its key; the last one takes it.
    let mut refs = vec![0usize; slots.len()];
    for &s in &slot_of {
        refs[s] += 1;
    }
    for (&m, &s) in group.members.iter().zip(&slot_of) {
        refs[s] -= 1;
        let row = if refs[s] == 0 {
            found[s].take()
        } else {
            found[s].clone()
        };
        if let Some(row) = row {
            buffers[m].push(row);
        }
    }
    Ok((false, locator_len))
}

fn run_union(
    link: &mut Link,
    scans: &[Scan<'_>],
    group: &Group,
    buffers: &mut [Vec<Vec<Value>>],
) -> Result<(bool, usize), Failure> {
    let first = &scans[group.members[0]];
    let mut layout = (false, 0);
    for chunk in group.members.chunks(UNION_CHUNK) {
        let n = padded(chunk.len());
        let key = StmtKey::Union(group.shape.clone(), n);
        let (stmt, plan) = link.prepare(&key, || {
            let branch = scan_sql::build(first, DIALECT);
            let body = branch.sql.strip_prefix("SELECT ").unwrap_or(&branch.sql);
            let sql = (0..n)
                .map(|b| format!("(SELECT {b} AS hsd_scan, {body})"))
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            (sql, Plan::Scan(branch))
        })?;
        let Plan::Scan(branch) = &*plan else {
            return Err(Failure::refused(
                1,
                "statement cache holds a different plan",
            ));
        };
        layout = (branch.has_state, branch.locator_len);
        let mut params = Vec::with_capacity(n * branch.params.len());
        for b in 0..n {
            // Padding branches repeat the last scan with LIMIT 0.
            let (m, limit) = match chunk.get(b) {
                Some(&m) => (m, scans[m].fetch),
                None => (chunk[chunk.len() - 1], 0),
            };
            bind_scan(&scans[m], branch, limit, &mut params);
        }
        let result = link.query_rows(&stmt, params, |vals| {
            let b = vals.first().map_or(-1, as_int);
            if let Some(&m) = usize::try_from(b).ok().and_then(|b| chunk.get(b)) {
                buffers[m].push(vals);
            }
            true
        });
        result.map_err(|f| after_failure(link, &key, f))?;
    }
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_is_a_power_of_two() {
        assert_eq!(padded(1), 1);
        assert_eq!(padded(3), 4);
        assert_eq!(padded(64), 64);
    }
}
