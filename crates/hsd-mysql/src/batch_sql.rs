//! The statements of a group's batched writes: multi-row INSERTs and
//! merged UPDATEs, and the rules for which writes may share one.

use super::literal::{push_key, WriteLiterals, TEXT_KIND};
use hsd_storage::values::is_stored_form;
use hsd_storage::write_sql::{self, WriteParam, WriteSink};
use hsd_storage::{
    Change, ColumnKind, RowInsert, RowTarget, RowWrite, TableMeta, WriteForm, WriteValue,
};

/// How much statement text one round trip of writes carries, at most
/// (well inside the server's default max_allowed_packet of 16 MiB).
pub(super) const BATCH_SQL_BYTES: usize = 1 << 20;

/// Writes the INSERT of `rows[start]` and of the rows after it that can
/// share its statement: same table and columns, no generated id. Returns
/// the end of the rows written.
pub(super) fn push_insert_run(rows: &[RowInsert<'_>], start: usize, sql: &mut Vec<u8>) -> usize {
    let first = &rows[start];
    push_insert(first, sql);
    // A multi-row INSERT that fails keeps its first rows on a table without
    // transactions: those rows go one by one.
    if !first.table.transactional || (first.table.has_autoincrement && !first.explicit_id) {
        return start + 1;
    }
    let mut end = start + 1;
    while end < rows.len() && sql.len() < BATCH_SQL_BYTES && same_statement(first, &rows[end]) {
        let values: Vec<WriteValue<'_>> = rows[end]
            .values
            .iter()
            .map(|v| WriteValue::Bytes(*v))
            .collect();
        let mut sink = WriteLiterals {
            table: rows[end].table,
            values: &values,
            locator: &[],
        };
        sql.extend_from_slice(b", ");
        write_sql::values_row(rows[end].table, rows[end].columns, &mut sink, sql);
        end += 1;
    }
    end
}

/// Whether row `b` can go in the same INSERT as row `a`.
fn same_statement(a: &RowInsert<'_>, b: &RowInsert<'_>) -> bool {
    a.explicit_id == b.explicit_id
        && a.table.table_sql == b.table.table_sql
        && a.columns.len() == b.columns.len()
        && a.columns
            .iter()
            .zip(b.columns)
            .all(|(&x, &y)| a.table.columns[x].name_sql == b.table.columns[y].name_sql)
}

/// Writes one row's INSERT.
pub(super) fn push_insert(row: &RowInsert<'_>, sql: &mut Vec<u8>) {
    let values: Vec<WriteValue<'_>> = row.values.iter().map(|v| WriteValue::Bytes(*v)).collect();
    let mut sink = WriteLiterals {
        table: row.table,
        values: &values,
        locator: &[],
    };
    write_sql::insert(row.table, row.columns, &mut sink, sql);
}

/// Writes the statement of `writes[start]` and of the updates after it
/// that can share it (see `write_rows`). Returns the end of the writes
/// written; writes nothing for an update of no column.
pub(super) fn push_write_run(writes: &[RowWrite<'_>], start: usize, sql: &mut Vec<u8>) -> usize {
    let mut end = start + 1;
    while end < writes.len() && mergeable(&writes[start], &writes[end]) {
        end += 1;
    }
    if end - start == 1 {
        push_write(&writes[start], sql);
        return end;
    }
    // Cut where the text would grow past the batch budget.
    let run = &writes[start..end];
    let mut rows = run.len();
    let estimate: usize = run.iter().map(write_size).sum();
    if estimate > BATCH_SQL_BYTES {
        let mut total = 0;
        rows = run
            .iter()
            .take_while(|w| {
                total += write_size(w);
                total <= BATCH_SQL_BYTES
            })
            .count()
            .max(1);
    }
    if rows == 1 {
        push_write(&writes[start], sql);
        return start + 1;
    }
    push_update_many(&run[..rows], sql);
    start + rows
}

/// One write's statement; nothing for an update of no column of a row
/// named by its locator (it was read: found, and nothing to write).
pub(super) fn push_write(w: &RowWrite<'_>, sql: &mut Vec<u8>) {
    let table = w.table;
    match (w.target, w.change) {
        (RowTarget::Locator(locator), Change::Update { columns, values }) => {
            if !columns.is_empty() {
                let mut sink = WriteLiterals {
                    table,
                    values,
                    locator,
                };
                write_sql::update(table, columns, &mut sink, sql);
            }
        }
        (RowTarget::Locator(locator), Change::Delete) => {
            let mut sink = WriteLiterals {
                table,
                values: &[],
                locator,
            };
            write_sql::delete(table, &mut sink, sql);
        }
        (RowTarget::Key { index, keys }, change) => {
            let meta = index.index_meta();
            match change {
                Change::Update { columns, values } if !columns.is_empty() => {
                    let mut sink = WriteLiterals {
                        table,
                        values,
                        locator: &[],
                    };
                    write_sql::update_set(table, columns, &mut sink, sql);
                }
                Change::Update { .. } => {
                    // Nothing to write, but the row found is still counted:
                    // a column set to itself, not a key column where one
                    // can be (vtgate refuses to set a vindex column).
                    sql.extend_from_slice(b"UPDATE ");
                    sql.extend_from_slice(table.table_sql.as_bytes());
                    sql.extend_from_slice(b" SET ");
                    let other = table.columns.iter().enumerate().find(|(i, c)| {
                        c.write_form != WriteForm::Generated
                            && !meta.key_columns.contains(&Some(*i))
                    });
                    let first = other.map_or_else(
                        || meta.key_sql.first().map_or("1", String::as_str),
                        |(_, c)| c.name_sql.as_str(),
                    );
                    sql.extend_from_slice(first.as_bytes());
                    sql.extend_from_slice(b" = ");
                    sql.extend_from_slice(first.as_bytes());
                }
                Change::Delete => {
                    sql.extend_from_slice(b"DELETE FROM ");
                    sql.extend_from_slice(table.table_sql.as_bytes());
                }
            }
            sql.extend_from_slice(b" WHERE ");
            for (n, ((col, c), k)) in meta
                .key_sql
                .iter()
                .zip(&meta.key_columns)
                .zip(keys)
                .enumerate()
            {
                if n > 0 {
                    sql.extend_from_slice(b" AND ");
                }
                sql.extend_from_slice(col.as_bytes());
                sql.extend_from_slice(b" = ");
                let kind = c.map_or(&TEXT_KIND, |c| &table.columns[c].kind);
                push_key(sql, kind, *k);
            }
        }
    }
}

/// Roughly how much statement text a write takes.
fn write_size(w: &RowWrite<'_>) -> usize {
    let bytes = |v: &Option<&[u8]>| v.map_or(4, |b| 2 * b.len() + 4);
    let target = match w.target {
        RowTarget::Locator(locator) => locator.iter().map(|l| bytes(&l.as_deref())).sum(),
        RowTarget::Key { keys, .. } => keys.iter().map(bytes).sum::<usize>(),
    };
    let change = match w.change {
        Change::Update { values, .. } => values
            .iter()
            .map(|v| match v {
                WriteValue::Int(_) => 20,
                WriteValue::Bytes(b) => bytes(b),
            })
            .sum::<usize>(),
        Change::Delete => 0,
    };
    target + change + 64
}

/// Whether update `b` can share update `a`'s statement: rows named by
/// their locators, same table and columns, values of the same kinds, and
/// no written column in a unique key.
fn mergeable(a: &RowWrite<'_>, b: &RowWrite<'_>) -> bool {
    let (
        RowTarget::Locator(_),
        Change::Update {
            columns: ca,
            values: va,
        },
        RowTarget::Locator(_),
        Change::Update {
            columns: cb,
            values: vb,
        },
    ) = (a.target, a.change, b.target, b.change)
    else {
        return false;
    };
    let (ta, tb) = (a.table, b.table);
    !ca.is_empty()
        && ta.transactional
        && ta.table_sql == tb.table_sql
        && ca.len() == cb.len()
        && ca
            .iter()
            .zip(cb.iter())
            .all(|(&x, &y)| ta.columns[x].name_sql == tb.columns[y].name_sql)
        && va
            .iter()
            .zip(vb.iter())
            .all(|(x, y)| ValueShape::of(x).fits(ValueShape::of(y)))
        && !writes_a_unique_key(ta, ca)
        && ta
            .locator_sql
            .iter()
            .all(|l| locator_literal(ta, l).is_some())
}

/// What a merged UPDATE's CASE branches of one column hold: numbers and
/// byte strings do not share a CASE (its type would change what is
/// stored); NULL goes with either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueShape {
    Null,
    Number,
    Bytes,
}

impl ValueShape {
    fn of(v: &WriteValue<'_>) -> ValueShape {
        match v {
            WriteValue::Int(_) => ValueShape::Number,
            WriteValue::Bytes(Some(_)) => ValueShape::Bytes,
            WriteValue::Bytes(None) => ValueShape::Null,
        }
    }

    fn fits(self, other: ValueShape) -> bool {
        self == other || self == ValueShape::Null || other == ValueShape::Null
    }
}

/// How a merged UPDATE writes a locator column's values, for the columns
/// whose comparisons in a CASE are exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LocatorLiteral {
    /// Integers as numbers (a string there would compare as a
    /// floating-point number).
    Number,
    /// Text and binary columns compare `_binary` literals byte for byte.
    Bytes,
}

/// How a merged UPDATE writes the values of a locator column; `None` for
/// the kinds whose rows stay single statements.
fn locator_literal(table: &TableMeta, locator_sql: &str) -> Option<LocatorLiteral> {
    let column = table.columns.iter().find(|c| c.name_sql == locator_sql)?;
    match column.kind {
        ColumnKind::Integer { .. } => Some(LocatorLiteral::Number),
        ColumnKind::Text { .. } | ColumnKind::Bytes { .. } => Some(LocatorLiteral::Bytes),
        _ => None,
    }
}

/// A locator value in a merged UPDATE (see `locator_literal`).
fn push_locator_value(sql: &mut Vec<u8>, literal: LocatorLiteral, v: Option<&[u8]>) {
    match v {
        Some(digits)
            if literal == LocatorLiteral::Number
                && !digits.is_empty()
                && digits.iter().enumerate().all(|(i, b)| {
                    b.is_ascii_digit() || (i == 0 && *b == b'-' && digits.len() > 1)
                }) =>
        {
            sql.extend_from_slice(digits)
        }
        _ => mysql_wire::literal::push_binary(sql, v),
    }
}

/// Whether one of `columns` is part of a unique index (or of an index
/// whose columns are not all known).
fn writes_a_unique_key(table: &TableMeta, columns: &[usize]) -> bool {
    table.indexes.iter().filter(|i| i.unique).any(|i| {
        i.key_columns
            .iter()
            .any(|k| k.is_none_or(|k| columns.contains(&k)))
    })
}

/// `UPDATE t SET c = CASE WHEN <row 1> THEN v1 WHEN ... END, ... WHERE
/// <row 1> OR ...`, a row named by its locator (with a one-column locator,
/// `CASE l WHEN x1 THEN v1 ...` and `l IN (x1, ...)`).
fn push_update_many(writes: &[RowWrite<'_>], sql: &mut Vec<u8>) {
    let (Some(first), Change::Update { columns, .. }) = (writes.first(), writes[0].change) else {
        return;
    };
    let table = first.table;
    let single = table.locator_sql.len() == 1;
    let row_test = |w: &RowWrite<'_>, sql: &mut Vec<u8>| {
        let RowTarget::Locator(locator) = w.target else {
            return;
        };
        for (n, l) in table.locator_sql.iter().enumerate() {
            if n > 0 {
                sql.extend_from_slice(b" AND ");
            }
            if !single {
                sql.extend_from_slice(l.as_bytes());
                sql.extend_from_slice(b" = ");
            }
            let literal = locator_literal(table, l).unwrap_or(LocatorLiteral::Bytes);
            push_locator_value(sql, literal, locator.get(n).and_then(|v| v.as_deref()));
        }
    };
    let case_on = single.then(|| table.locator_sql[0].as_str());
    sql.extend_from_slice(b"UPDATE ");
    sql.extend_from_slice(table.table_sql.as_bytes());
    push_set_cases(table, columns, writes, case_on, row_test, sql);
    sql.extend_from_slice(b" WHERE ");
    if single {
        sql.extend_from_slice(table.locator_sql[0].as_bytes());
        sql.extend_from_slice(b" IN (");
    }
    for (n, w) in writes.iter().enumerate() {
        if n > 0 {
            sql.extend_from_slice(if single { b", " } else { b" OR " });
        }
        if !single {
            sql.push(b'(');
        }
        row_test(w, sql);
        if !single {
            sql.push(b')');
        }
    }
    if single {
        sql.push(b')');
    }
}

/// `UPDATE t SET c = CASE k WHEN 1 THEN v1 ... END, ... WHERE k IN (1,
/// ...)` for updates by key (`RowTarget::Key`) of the same columns, where
/// `k` is the one integer column of a unique key and no key comes twice:
/// each key names one row or none, so the rows the statement finds (the
/// link asks for found rows) equal the number of writes exactly when every
/// key found its row. No unique column written, values of one shape per
/// column, as for a merged UPDATE by locator. Writes nothing and returns
/// false for a run that is not such.
pub(super) fn push_update_by_keys(writes: &[RowWrite<'_>], sql: &mut Vec<u8>) -> bool {
    let Some(key_sql) = merged_key_column(writes) else {
        return false;
    };
    let Change::Update { columns, .. } = writes[0].change else {
        return false;
    };
    let table = writes[0].table;
    // `merged_key_column` checked each is one key in stored form.
    let row_test = |w: &RowWrite<'_>, sql: &mut Vec<u8>| {
        if let RowTarget::Key {
            keys: [Some(k)], ..
        } = w.target
        {
            sql.extend_from_slice(k);
        }
    };
    sql.extend_from_slice(b"UPDATE ");
    sql.extend_from_slice(table.table_sql.as_bytes());
    push_set_cases(table, columns, writes, Some(key_sql), row_test, sql);
    sql.extend_from_slice(b" WHERE ");
    sql.extend_from_slice(key_sql.as_bytes());
    sql.extend_from_slice(b" IN (");
    for (n, w) in writes.iter().enumerate() {
        if n > 0 {
            sql.extend_from_slice(b", ");
        }
        row_test(w, sql);
    }
    sql.push(b')');
    true
}

/// The key column a run of updates by key can be merged on (see
/// `push_update_by_keys`), if it can.
fn merged_key_column<'a>(writes: &[RowWrite<'a>]) -> Option<&'a str> {
    let first = writes.first()?;
    let (RowTarget::Key { index, .. }, Change::Update { columns, values }) =
        (first.target, first.change)
    else {
        return None;
    };
    let table = first.table;
    let meta = index.index_meta();
    let (&[Some(column)], [key_sql]) = (meta.key_columns.as_slice(), meta.key_sql.as_slice())
    else {
        return None;
    };
    if meta.key_prefix.iter().any(Option::is_some) {
        return None;
    }
    let key_kind = &table.columns[column].kind;
    if writes.len() < 2
        || !meta.unique
        || !matches!(key_kind, ColumnKind::Integer { .. })
        || columns.is_empty()
        || !table.transactional
        || writes_a_unique_key(table, columns)
        || writes.iter().map(write_size).sum::<usize>() > BATCH_SQL_BYTES
    {
        return None;
    }
    let mut seen = std::collections::HashSet::with_capacity(writes.len());
    for w in writes {
        let (
            RowTarget::Key { index: i, keys },
            Change::Update {
                columns: c,
                values: v,
            },
        ) = (w.target, w.change)
        else {
            return None;
        };
        let same_shape = w.table.table_sql == table.table_sql
            && i.index_meta().key_sql.as_slice() == [key_sql.clone()]
            && c.len() == columns.len()
            && c.iter()
                .zip(columns.iter())
                .all(|(&x, &y)| w.table.columns[x].name_sql == table.columns[y].name_sql)
            && v.iter()
                .zip(values.iter())
                .all(|(x, y)| ValueShape::of(x).fits(ValueShape::of(y)));
        let key = match keys {
            [Some(k)] if is_stored_form(key_kind, k) => *k,
            _ => return None,
        };
        // Stored-form integers are canonical: equal numbers, equal bytes.
        if !same_shape || !seen.insert(key) {
            return None;
        }
    }
    Some(key_sql.as_str())
}

/// ` SET c = CASE [case_on] WHEN <row> THEN v ... END, ...`: each of
/// `writes` (updates of `columns`) gives its row's values, the row named by
/// `row_test`.
fn push_set_cases(
    table: &TableMeta,
    columns: &[usize],
    writes: &[RowWrite<'_>],
    case_on: Option<&str>,
    row_test: impl Fn(&RowWrite<'_>, &mut Vec<u8>),
    sql: &mut Vec<u8>,
) {
    sql.extend_from_slice(b" SET ");
    for (k, &c) in columns.iter().enumerate() {
        if k > 0 {
            sql.extend_from_slice(b", ");
        }
        sql.extend_from_slice(table.columns[c].name_sql.as_bytes());
        if table.columns[c].write_form == WriteForm::Generated {
            // The server computes it; DEFAULT may not stand inside a CASE.
            sql.extend_from_slice(b" = DEFAULT");
            continue;
        }
        sql.extend_from_slice(b" = CASE");
        if let Some(on) = case_on {
            sql.push(b' ');
            sql.extend_from_slice(on.as_bytes());
        }
        for w in writes {
            let Change::Update { values, .. } = w.change else {
                continue;
            };
            let locator = match w.target {
                RowTarget::Locator(locator) => locator,
                RowTarget::Key { .. } => &[],
            };
            sql.extend_from_slice(b" WHEN ");
            row_test(w, sql);
            sql.extend_from_slice(b" THEN ");
            let mut sink = WriteLiterals {
                table,
                values,
                locator,
            };
            sink.column_value(sql, WriteParam::Value(k), &table.columns[c]);
        }
        sql.extend_from_slice(b" END");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_proto::Value;
    use hsd_storage::memory::{table_meta, Col, Idx};

    /// `t (id integer key, name text, n integer)`, rows located by `id` as
    /// a MySQL table's are by its primary key.
    fn table(transactional: bool) -> TableMeta {
        let col = |name, integer| Col {
            name,
            integer,
            nullable: true,
        };
        let mut t = table_meta(
            "db",
            "t",
            &[col("id", true), col("name", false), col("n", true)],
            &[Idx {
                name: "PRIMARY",
                columns: &["id"],
                unique: true,
            }],
            None,
        );
        t.locator_sql = vec!["id".into()];
        t.transactional = transactional;
        t
    }

    fn text(sql: &[u8]) -> String {
        String::from_utf8_lossy(sql).into_owned()
    }

    #[test]
    fn inserts_share_a_statement_while_table_and_columns_agree() {
        let t = table(true);
        let (both, id_only): (&[usize], &[usize]) = (&[0, 1], &[0]);
        let (a, b, c) = (
            [Some(&b"1"[..]), Some(&b"x"[..])],
            [Some(&b"2"[..]), None],
            [Some(&b"3"[..])],
        );
        let row = |columns, values| RowInsert {
            table: &t,
            columns,
            values,
            explicit_id: false,
        };
        let rows = [row(both, &a[..]), row(both, &b[..]), row(id_only, &c[..])];
        let mut sql = Vec::new();
        assert_eq!(push_insert_run(&rows, 0, &mut sql), 2);
        let merged = text(&sql);
        assert!(
            merged.starts_with("INSERT INTO t (id, name) VALUES ("),
            "{merged}"
        );
        assert_eq!(merged.matches("), (").count(), 1, "two rows: {merged}");
        assert!(merged.ends_with("NULL)"), "{merged}");
        sql.clear();
        assert_eq!(push_insert_run(&rows, 2, &mut sql), 3);
        assert!(text(&sql).starts_with("INSERT INTO t (id) VALUES ("));
    }

    #[test]
    fn inserts_without_transactions_or_with_generated_ids_go_one_by_one() {
        let cols = [0, 1];
        let values = [Some(&b"1"[..]), Some(&b"x"[..])];
        let mut auto = table(true);
        auto.has_autoincrement = true;
        for t in [table(false), auto] {
            let row = RowInsert {
                table: &t,
                columns: &cols,
                values: &values,
                explicit_id: false,
            };
            let mut sql = Vec::new();
            assert_eq!(push_insert_run(&[row, row, row], 0, &mut sql), 1);
            assert!(!text(&sql).contains("), ("), "{}", text(&sql));
        }
    }

    #[test]
    fn updates_of_the_same_columns_merge_into_one_case_by_locator() {
        let t = table(true);
        let name = [1];
        let (k1, k2): ([Value; 1], [Value; 1]) = ([Some(b"1".to_vec())], [Some(b"2".to_vec())]);
        let (v1, v2) = (
            [WriteValue::Bytes(Some(b"a"))],
            [WriteValue::Bytes(Some(b"b"))],
        );
        let update = |locator, values| RowWrite {
            table: &t,
            target: RowTarget::Locator(locator),
            change: Change::Update {
                columns: &name,
                values,
            },
        };
        let delete = RowWrite {
            table: &t,
            target: RowTarget::Locator(&k1),
            change: Change::Delete,
        };
        let writes = [update(&k1, &v1[..]), update(&k2, &v2[..]), delete];
        let mut sql = Vec::new();
        assert_eq!(push_write_run(&writes, 0, &mut sql), 2);
        let merged = text(&sql);
        assert!(
            merged.starts_with("UPDATE t SET name = CASE id WHEN 1 THEN "),
            "{merged}"
        );
        assert!(merged.ends_with(" END WHERE id IN (1, 2)"), "{merged}");
        // A delete never merges (its locator as the bytes read).
        sql.clear();
        assert_eq!(push_write_run(&writes, 2, &mut sql), 3);
        assert_eq!(text(&sql), "DELETE FROM t WHERE id = _binary'1'");
    }

    #[test]
    fn updates_that_must_not_share_a_case_stay_apart() {
        let name = [1];
        let k: [Value; 1] = [Some(b"1".to_vec())];
        let bytes = [WriteValue::Bytes(Some(b"a"))];
        let number = [WriteValue::Int(7)];
        let t = table(true);
        let plain = table(false);
        let write = |table, values| RowWrite {
            table,
            target: RowTarget::Locator(&k),
            change: Change::Update {
                columns: &name,
                values,
            },
        };
        // A number and a string in one CASE would change what is stored;
        // a table without transactions writes one statement at a time.
        for pair in [
            [write(&t, &bytes[..]), write(&t, &number[..])],
            [write(&plain, &bytes[..]), write(&plain, &bytes[..])],
        ] {
            let mut sql = Vec::new();
            assert_eq!(push_write_run(&pair, 0, &mut sql), 1, "{}", text(&sql));
            assert!(!text(&sql).contains("CASE"), "{}", text(&sql));
        }
    }
    #[test]
    fn updates_by_distinct_integer_keys_merge_into_one_case_by_key() {
        let t = std::sync::Arc::new(table(true));
        let by_id = std::sync::Arc::new(hsd_storage::OpenedIndex {
            id: 1,
            table: t.clone(),
            index: 0,
            columns: vec![1],
            filter_columns: vec![],
        });
        let name = [1];
        let (k1, k2, k3) = ([Some(&b"1"[..])], [Some(&b"2"[..])], [Some(&b"007"[..])]);
        let (v1, v2) = (
            [WriteValue::Bytes(Some(b"a"))],
            [WriteValue::Bytes(Some(b"b"))],
        );
        let update = |keys, values| RowWrite {
            table: &t,
            target: RowTarget::Key {
                index: &by_id,
                keys,
            },
            change: Change::Update {
                columns: &name,
                values,
            },
        };
        let mut sql = Vec::new();
        let pair = [update(&k1[..], &v1[..]), update(&k2[..], &v2[..])];
        assert!(push_update_by_keys(&pair, &mut sql));
        let merged = text(&sql);
        assert!(
            merged.starts_with("UPDATE t SET name = CASE id WHEN 1 THEN "),
            "{merged}"
        );
        assert!(merged.ends_with(" END WHERE id IN (1, 2)"), "{merged}");
        // A key twice, a key not as the column stores it, one write alone,
        // a unique column written: not merged, nothing written.
        let n_and_id = [0, 1];
        let id_too = [WriteValue::Bytes(Some(b"9")), WriteValue::Bytes(Some(b"c"))];
        let moves_key = |keys| RowWrite {
            table: &t,
            target: RowTarget::Key {
                index: &by_id,
                keys,
            },
            change: Change::Update {
                columns: &n_and_id,
                values: &id_too,
            },
        };
        for run in [
            &[pair[0], pair[0]][..],
            &[pair[0], update(&k3[..], &v2[..])][..],
            &pair[..1],
            &[moves_key(&k1[..]), moves_key(&k2[..])][..],
        ] {
            sql.clear();
            assert!(!push_update_by_keys(run, &mut sql), "{}", text(&sql));
            assert!(sql.is_empty());
        }
    }
}
