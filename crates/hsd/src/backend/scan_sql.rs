//! Turns a `Scan` into one SELECT statement, shared by every SQL backend.
//!
//! The statement's text depends only on the scan's shape (index, op, key
//! count, which keys and filter values are NULL, filters, mode), never on the
//! values, which are bound as parameters in the order `params` gives. Backends
//! cache statements by `ScanShape`, so the text is built once per shape.
//!
//! NULL sorts lowest, as in an index: each comparison below is written so
//! that a NULL column or key behaves that way instead of yielding SQL NULL.

use super::{FilterMode, ResolvedFilter, Scan};
use hs_proto::{FilterKind, FilterOp, FindOp};
use std::fmt::Write;

/// Everything that changes the text of a scan's statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScanShape {
    pub opened_index: u64,
    pub op: FindOp,
    /// One bit per key value: set when the value is NULL. Index keys are short.
    pub key_nulls: Vec<bool>,
    pub filters: Vec<(FilterKind, FilterOp, usize, bool)>,
    pub filter_mode: FilterMode,
    pub with_locator: bool,
}

impl ScanShape {
    pub fn of(scan: &Scan<'_>) -> ScanShape {
        ScanShape {
            opened_index: scan.index.id,
            op: scan.op,
            key_nulls: scan.keys.iter().map(Option::is_none).collect(),
            filters: scan
                .filters
                .iter()
                .map(|f| (f.kind, f.op, f.column, f.value.is_none()))
                .collect(),
            filter_mode: scan.filter_mode,
            with_locator: scan.with_locator,
        }
    }
}

/// Where a statement parameter's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Key(usize),
    Filter(usize),
    Limit,
}

#[derive(Debug, Clone)]
pub struct ScanSql {
    pub sql: String,
    pub params: Vec<Param>,
    /// Result layout: opened columns, then the state column if any, then locator.
    pub has_state: bool,
    pub locator_len: usize,
}

/// Options a dialect needs beyond the metadata's fragments.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// Appended to SELECTs run inside a write transaction (`FOR UPDATE`).
    pub lock_suffix: &'static str,
}

pub fn build(scan: &Scan<'_>, dialect: Dialect) -> ScanSql {
    let index = scan.index.index_meta();
    let table = &scan.index.table;
    let mut params = Vec::new();
    let mut sql = String::with_capacity(256);
    sql.push_str("SELECT ");
    let mut first = true;
    for &c in &scan.index.columns {
        if !first {
            sql.push_str(", ");
        }
        first = false;
        sql.push_str(&table.columns[c].select_sql);
    }
    let has_state = matches!(scan.filter_mode, FilterMode::StateColumn { .. });
    if has_state {
        if !first {
            sql.push_str(", ");
        }
        first = false;
        sql.push_str(&state_expr(scan.filters, table, &mut params));
    }
    let locator_len = if scan.with_locator {
        table.locator_sql.len()
    } else {
        0
    };
    if scan.with_locator {
        for l in &table.locator_sql {
            if !first {
                sql.push_str(", ");
            }
            first = false;
            sql.push_str(l);
        }
    }
    if first {
        // Nothing opened: still one row per match.
        sql.push('1');
    }
    let _ = write!(sql, " FROM {} WHERE ", index.from_sql);
    sql.push_str(&key_condition(scan, &index.key_sql, &mut params));
    match scan.filter_mode {
        FilterMode::InWhere => {
            for (i, f) in scan.filters.iter().enumerate() {
                sql.push_str(" AND ");
                sql.push_str(&filter_condition(f, i, table, &mut params));
            }
        }
        FilterMode::StateColumn {
            exclude_skipped: true,
        } => {
            let mut excluded = String::new();
            excluded.push_str(" AND ");
            excluded.push_str(&state_expr(scan.filters, table, &mut params));
            excluded.push_str(" <> 1");
            sql.push_str(&excluded);
        }
        _ => {}
    }
    let dir = if scan.op.is_descending() { " DESC" } else { "" };
    sql.push_str(" ORDER BY ");
    let mut first = true;
    for k in index.key_sql.iter().chain(index.tiebreak_sql.iter()) {
        if !first {
            sql.push_str(", ");
        }
        first = false;
        sql.push_str(k);
        sql.push_str(dir);
    }
    sql.push_str(" LIMIT ?");
    params.push(Param::Limit);
    if scan.with_locator {
        sql.push_str(dialect.lock_suffix);
    }
    ScanSql {
        sql,
        params,
        has_state,
        locator_len,
    }
}

/// `CASE WHEN NOT f1 THEN k1 ... ELSE 0 END`: the first false filter decides.
fn state_expr(
    filters: &[ResolvedFilter],
    table: &super::TableMeta,
    params: &mut Vec<Param>,
) -> String {
    let mut s = String::from("(CASE");
    for (i, f) in filters.iter().enumerate() {
        let code = match f.kind {
            FilterKind::Skip => 1,
            FilterKind::While => 2,
        };
        let _ = write!(
            s,
            " WHEN NOT {} THEN {code}",
            filter_condition(f, i, table, params)
        );
    }
    s.push_str(" ELSE 0 END)");
    s
}

/// A filter as a condition that is never NULL. NULL is equal to NULL and
/// lower than any value; an unknown operator is always false.
fn filter_condition(
    f: &ResolvedFilter,
    i: usize,
    table: &super::TableMeta,
    params: &mut Vec<Param>,
) -> String {
    let c = &table.columns[f.column].name_sql;
    if f.value.is_none() {
        return match f.op {
            FilterOp::Eq | FilterOp::Le => format!("({c} IS NULL)"),
            FilterOp::Ne | FilterOp::Gt => format!("({c} IS NOT NULL)"),
            FilterOp::Ge => "(1=1)".to_string(),
            FilterOp::Lt | FilterOp::Never => "(1=0)".to_string(),
        };
    }
    let (sql_op, null_col_result) = match f.op {
        FilterOp::Eq => ("=", 0),
        FilterOp::Ne => ("<>", 1),
        FilterOp::Gt => (">", 0),
        FilterOp::Ge => (">=", 0),
        FilterOp::Lt => ("<", 1),
        FilterOp::Le => ("<=", 1),
        FilterOp::Never => return "(1=0)".to_string(),
    };
    params.push(Param::Filter(i));
    format!("(COALESCE({c} {sql_op} ?, {null_col_result}) <> 0)")
}

/// The key condition over the first `n` index columns, lexicographic, with
/// NULL lowest. For range ops the first column's bound is also stated on its
/// own, so the planner can seek to it.
fn key_condition(scan: &Scan<'_>, key_sql: &[String], params: &mut Vec<Param>) -> String {
    let n = scan.keys.len().min(key_sql.len());
    let cols = &key_sql[..n];
    let is_null = |i: usize| scan.keys[i].is_none();
    if scan.op == FindOp::Eq {
        let mut parts = Vec::with_capacity(n);
        for (i, c) in cols.iter().enumerate() {
            parts.push(eq(c, i, is_null(i), params));
        }
        return parts.join(" AND ");
    }
    // Lexicographic: k1 op' v1 OR (k1 = v1 AND (k2 op' v2 OR (... kn op vn)))
    // where op' is the strict form of op. Parameters are pushed in text order.
    let strict = match scan.op {
        FindOp::Gt | FindOp::Ge => FindOp::Gt,
        _ => FindOp::Lt,
    };
    let mut sql = String::new();
    if n > 1 {
        // The seek bound on the leading column (implied by the expression).
        let inclusive = match strict {
            FindOp::Gt => FindOp::Ge,
            _ => FindOp::Le,
        };
        sql.push_str(&cmp(&cols[0], 0, inclusive, is_null(0), params));
        sql.push_str(" AND ");
    }
    sql.push_str(&lexicographic(cols, 0, scan.op, strict, &is_null, params));
    sql
}

fn lexicographic(
    cols: &[String],
    i: usize,
    op: FindOp,
    strict: FindOp,
    is_null: &dyn Fn(usize) -> bool,
    params: &mut Vec<Param>,
) -> String {
    if i + 1 == cols.len() {
        return format!("({})", cmp(&cols[i], i, op, is_null(i), params));
    }
    let head = cmp(&cols[i], i, strict, is_null(i), params);
    let equal = eq(&cols[i], i, is_null(i), params);
    let rest = lexicographic(cols, i + 1, op, strict, is_null, params);
    format!("({head} OR ({equal} AND {rest}))")
}

fn eq(col: &str, i: usize, null: bool, params: &mut Vec<Param>) -> String {
    if null {
        format!("{col} IS NULL")
    } else {
        params.push(Param::Key(i));
        format!("{col} = ?")
    }
}

fn cmp(col: &str, i: usize, op: FindOp, null: bool, params: &mut Vec<Param>) -> String {
    match (op, null) {
        (FindOp::Eq, _) => eq(col, i, null, params),
        (FindOp::Gt, true) => format!("{col} IS NOT NULL"),
        (FindOp::Ge, true) => "1=1".to_string(),
        (FindOp::Lt, true) => "1=0".to_string(),
        (FindOp::Le, true) => format!("{col} IS NULL"),
        (FindOp::Gt, false) => {
            params.push(Param::Key(i));
            format!("{col} > ?")
        }
        (FindOp::Ge, false) => {
            params.push(Param::Key(i));
            format!("{col} >= ?")
        }
        (FindOp::Lt, false) => {
            params.push(Param::Key(i));
            format!("({col} < ? OR {col} IS NULL)")
        }
        (FindOp::Le, false) => {
            params.push(Param::Key(i));
            format!("({col} <= ? OR {col} IS NULL)")
        }
    }
}
