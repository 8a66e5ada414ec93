//! The documented differences of hsd on a sharded Vitess keyspace from hsd
//! on one MySQL 8 (`--backend vitess`; docs/vitess.md, docs/compatibility.md).
//! Each comes from what sharding is (a row lives on the shard its vindex
//! column names, a unique index is unique within one shard, a sequence is
//! not an AUTO_INCREMENT counter) or from a read one MySQL 8 refuses that
//! vtgate lets hsd make; each is a named test in crates/hsd/tests/conformance.rs.

use super::{
    all_values, find_values, fits_as_is, is_insert, Case, Exception, Opened, RowsException,
};
use crate::schema::{Kind, Table};
use crate::store::Row;
use crate::tables::vitess_tables;

/// The table of the Vitess run that `opened` names.
fn table_of(opened: &Opened) -> Option<Table> {
    vitess_tables().into_iter().find(|t| t.name == opened.table)
}

/// The value an insert gives column `name` (None: not given, or NULL).
fn inserted(c: &Case, name: &str) -> Option<Vec<u8>> {
    let o = c.opened?;
    let Ok(hs_proto::Request::Exec(e)) = hs_proto::parse_request(c.request) else {
        return None;
    };
    o.columns
        .iter()
        .zip(&e.keys)
        .find(|(col, _)| col.name == name)
        .and_then(|(_, v)| v.clone())
}

/// An insert that gives the table's vindex column no value (or NULL).
fn insert_without_vindex_value(c: &Case) -> bool {
    is_insert(c.request)
        && c.opened.and_then(table_of).is_some_and(|t| {
            let column = t.primary().column(0);
            inserted(c, column).is_none()
        })
}

/// An insert that leaves the AUTO_INCREMENT column to the server (not
/// given, NULL or a value that stores as 0: `''`, `abc`, `0.4`).
fn insert_numbered_by_the_server(c: &Case) -> bool {
    let Some(o) = c.opened else { return false };
    let Some(auto) = o
        .table_columns
        .iter()
        .find(|col| col.mysql.contains("AUTO_INCREMENT"))
    else {
        return false;
    };
    let unsigned = matches!(auto.kind, Kind::Int { unsigned: true, .. });
    is_insert(c.request) && inserted(c, auto.name).is_none_or(|v| stores_as_zero(&v, unsigned))
}

/// Whether text stored into an integer column is 0: its leading number
/// (after white space) rounds to 0 (or below, for an unsigned column, which
/// clamps it to 0), or it has none.
fn stores_as_zero(v: &[u8], unsigned: bool) -> bool {
    let text = String::from_utf8_lossy(v);
    let text = text.trim_start();
    let mut end = 0;
    for (i, ch) in text.char_indices() {
        let sign = (ch == '-' || ch == '+') && i == 0;
        if !(sign || ch.is_ascii_digit() || ch == '.') {
            break;
        }
        end = i + ch.len_utf8();
    }
    text[..end]
        .parse::<f64>()
        .map_or(true, |n| n.abs() < 0.5 || (unsigned && n < 0.0))
}

/// The column `table` is sharded by, when it holds text of a character
/// set other than UTF-8 (the suite's latin1 table).
fn non_utf8_vindex_column(table: &Table) -> Option<usize> {
    let name = table.primary().column(0);
    let at = table.columns.iter().position(|c| c.name == name)?;
    let col = &table.columns[at];
    let latin = col.mysql.contains("latin1")
        || (!col.mysql.contains("CHARSET") && table.mysql_options.contains("CHARSET=latin1"));
    (col.kind.is_text() && latin).then_some(at)
}

fn beyond_ascii(v: &[u8]) -> bool {
    v.iter().any(|&b| b >= 0x80)
}

const NON_UTF8_VINDEX_TEXT: &str = "vtgate hashes a text vindex column's value as the bytes it is \
     given, read as UTF-8: a latin1 key with a byte above 127 is hashed as other text than \
     the column stores, or not at all (invalid UTF-8 names no shard), so a row written \
     with such a key may lie on another shard than the one its stored value names, and \
     finds, modifies and deletes by it look on the other shard; one MySQL 8 finds it. \
     Keys of ASCII text are not concerned";

/// Rows the two sides keep differently after the same writes.
pub fn vitess_rows() -> Vec<RowsException> {
    vec![RowsException {
        name: "vitess_non_utf8_vindex_text",
        reason: NON_UTF8_VINDEX_TEXT,
        applies: |t, r, s| {
            let Some(at) = non_utf8_vindex_column(t) else {
                return false;
            };
            let only_in = |a: &[Row], b: &[Row]| -> Vec<Row> {
                a.iter().filter(|row| !b.contains(row)).cloned().collect()
            };
            let differ: Vec<Row> = only_in(r, s).into_iter().chain(only_in(s, r)).collect();
            !differ.is_empty()
                && differ.iter().all(|row| {
                    row.get(at)
                        .and_then(|v| v.as_deref())
                        .is_some_and(beyond_ascii)
                })
        },
    }]
}

fn is_write(c: &Case) -> bool {
    matches!(
        hs_proto::parse_request(c.request),
        Ok(hs_proto::Request::Exec(e)) if e.op == hs_proto::ExecOp::Insert || e.modify.is_some()
    )
}

fn done(answer: &[u8]) -> bool {
    answer.starts_with(b"0\t")
}

/// hsd on Vitess against hsd on one MySQL 8 (docs/vitess.md).
pub fn vitess() -> Vec<Exception> {
    vec![
        Exception {
            name: "vitess_vindex_column_change",
            reason: "vtgate refuses a write that changes the column a table is sharded by \
                 (the row would move to another shard) before any shard sees it: hsd \
                 answers vtgate's 1 1 1235 (VT12001) where one MySQL 8 changes the row, or \
                 refuses it for what the change meets there (a duplicate key: 1 1 121)",
            applies: |c| c.subject == b"1\t1\t1235",
            ends_segment: true,
            covers_rows: true,
        },
        Exception {
            name: "vitess_insert_without_the_vindex_column",
            reason: "an insert that gives the column a table is sharded by no value (or NULL) \
                 gives vtgate no shard for the row: it refuses it (1 1 1105, VT09023, for a \
                 `hash` vindex; 1 1 1048, the column cannot be NULL, where the vindex hashes \
                 NULL) where one MySQL 8 stores the column's implicit default (0, '') or \
                 finds that value taken (1 1 121). A column numbered by a sequence is given \
                 its value by vtgate and is not concerned",
            applies: |c| {
                (c.subject == b"1\t1\t1105" || c.subject == b"1\t1\t1048")
                    && (done(c.reference) || c.reference == b"1\t1\t121")
                    && insert_without_vindex_value(c)
            },
            ends_segment: true,
            covers_rows: true,
        },
        Exception {
            name: "vitess_unique_index_per_shard",
            reason: "a unique secondary index is unique within each shard: a write that \
                 gives a row the value another row on another shard holds is stored on \
                 Vitess, where one MySQL 8 refuses it (1 1 121); a modify over several \
                 rows that both refuse at a duplicate may have changed more rows on \
                 Vitess before it (the rows differ, the answers not). Vitess keeps such a \
                 value unique across shards only with a lookup vindex, which the suite's \
                 tables do not have",
            applies: |c| {
                c.reference == b"1\t1\t121"
                    && (done(c.subject) || c.subject == b"1\t1\t121")
                    && is_write(c)
                    && c.opened
                        .and_then(table_of)
                        .is_some_and(|t| t.indexes.iter().skip(1).any(|i| i.unique))
            },
            ends_segment: true,
            covers_rows: true,
        },
        Exception {
            name: "vitess_sequence_is_no_auto_increment_counter",
            reason: "on Vitess a sequence numbers the rows of a table whose AUTO_INCREMENT \
                 column it shards by; an id given by an insert does not move it, where one \
                 MySQL 8's counter goes past it: after 0 1 <id> the next insert that leaves \
                 the id out is given another id (0 1 10 against 0 1 101), or one that is \
                 taken (1 1 121)",
            applies: |c| {
                done(c.reference)
                    && (done(c.subject) || c.subject == b"1\t1\t121")
                    && insert_numbered_by_the_server(c)
            },
            ends_segment: true,
            covers_rows: true,
        },
        Exception {
            name: "vitess_non_utf8_vindex_text",
            reason: NON_UTF8_VINDEX_TEXT,
            applies: |c| {
                c.opened.is_some_and(|o| {
                    table_of(o)
                        .and_then(|t| non_utf8_vindex_column(&t).map(|at| t.columns[at].name))
                        .is_some_and(|name| {
                            all_values(c.request, o).iter().any(|(col, v)| {
                                col.name == name && v.as_deref().is_some_and(beyond_ascii)
                            })
                        })
                })
            },
            ends_segment: true,
            covers_rows: true,
        },
        Exception {
            name: "vitess_reads_keys_handler_refuses",
            reason: "on one MySQL 8 hsd reads plain finds with HANDLER ... READ, which refuses \
                 a key value its column cannot store as it is (1 1 1210; the cross-backend \
                 exception mysql8_handler_read_refuses_the_key); vtgate takes no HANDLER, \
                 so on Vitess hsd reads with SELECT, which seeks the value as a write \
                 would store it, as MariaDB and the original plugin do",
            applies: |c| {
                c.reference == b"1\t1\t1210"
                    && c.opened.is_some_and(|o| {
                        find_values(c.request, o)
                            .iter()
                            .any(|(col, v)| !fits_as_is(col, v.as_deref()))
                    })
            },
            ends_segment: false,
            covers_rows: false,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_latin1_key_is_a_non_utf8_vindex_column() {
        let tables = vitess_tables();
        let with: Vec<&str> = tables
            .iter()
            .filter(|t| non_utf8_vindex_column(t).is_some())
            .map(|t| t.name)
            .collect();
        assert_eq!(with, ["latin"]);
        let latin = tables.iter().find(|t| t.name == "latin").expect("latin");
        let row = |code: &[u8]| -> Row {
            vec![
                Some(code.to_vec()),
                Some(b"ann".to_vec()),
                Some(b"1".to_vec()),
                None,
            ]
        };
        let rows = vitess_rows();
        let applies = rows[0].applies;
        assert!(applies(
            latin,
            &[row(b"a")],
            &[row(b"a"), row(b"\xc3\x83\xc2\xa9")]
        ));
        assert!(!applies(latin, &[row(b"a")], &[row(b"a"), row(b"b")]));
        assert!(!applies(latin, &[row(b"a")], &[row(b"a")]));
    }

    #[test]
    fn values_that_store_as_zero() {
        for zero in ["", "abc", "0", "-0", " 0.4", "0x1f", "+", "-0.49"] {
            assert!(stores_as_zero(zero.as_bytes(), false), "{zero:?}");
        }
        for not in ["1", " 7", "0.5", "-1", "-0.5", "3abc", "1e2"] {
            assert!(!stores_as_zero(not.as_bytes(), false), "{not:?}");
        }
        for zero in ["-0.5", "-7", "-1e9"] {
            assert!(stores_as_zero(zero.as_bytes(), true), "{zero:?}");
        }
    }
}
