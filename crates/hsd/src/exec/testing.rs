//! Test helpers for the executor and its callers: a standard table in the
//! in-memory store (`hsd_storage::memory`), indexes opened on it, and requests
//! written as protocol lines (parsed as a client's would be).

use super::{ReadTask, WriteOp, WriteTask};
use hs_proto::{parse_request, IndexOperation, Request, ResponseWriter};
use hsd_storage::memory::{table_meta, Col, Idx, MemoryStore};
use hsd_storage::{OpenedIndex, TableMeta, WriteBatching};
use std::sync::Arc;

/// `t (id INT NOT NULL, u INT NULL, n INT NOT NULL, s TEXT NULL)`, with a
/// primary key on `id`, a unique index `u_idx` on `u` and a non-unique
/// `n_idx` on `n`; rows `id` 1..=8, `u` = 10 x id (NULL for id 4 and 7),
/// `n` = id % 3, `s` = `s<id>`.
pub(crate) fn store(batching: WriteBatching) -> (MemoryStore, Arc<TableMeta>) {
    let store = MemoryStore::new(batching);
    let meta = table_meta(
        "db",
        "t",
        &[
            Col {
                name: "id",
                integer: true,
                nullable: false,
            },
            Col {
                name: "u",
                integer: true,
                nullable: true,
            },
            Col {
                name: "n",
                integer: true,
                nullable: false,
            },
            Col {
                name: "s",
                integer: false,
                nullable: true,
            },
        ],
        &[
            Idx {
                name: "PRIMARY",
                columns: &["id"],
                unique: true,
            },
            Idx {
                name: "u_idx",
                columns: &["u"],
                unique: true,
            },
            Idx {
                name: "n_idx",
                columns: &["n"],
                unique: false,
            },
        ],
        None,
    );
    let rows: Vec<Vec<Option<String>>> = (1..=8)
        .map(|id: i64| {
            vec![
                Some(id.to_string()),
                (id != 4 && id != 7).then(|| (id * 10).to_string()),
                Some((id % 3).to_string()),
                Some(format!("s{id}")),
            ]
        })
        .collect();
    let rows: Vec<Vec<Option<&str>>> = rows
        .iter()
        .map(|r| r.iter().map(|v| v.as_deref()).collect())
        .collect();
    let table = store.add_table(meta, &rows);
    (store, table)
}

/// An index of `table` opened with these columns (table positions) and
/// filter columns.
pub(crate) fn open(
    table: &Arc<TableMeta>,
    id: u64,
    index: usize,
    columns: &[usize],
    filter_columns: &[usize],
) -> Arc<OpenedIndex> {
    Arc::new(OpenedIndex {
        id,
        table: table.clone(),
        index,
        columns: columns.to_vec(),
        filter_columns: filter_columns.to_vec(),
    })
}

/// A write task from a request line (tabs between tokens).
pub(crate) fn write_task(index: &Arc<OpenedIndex>, line: &str) -> WriteTask {
    let op = match operation(line) {
        IndexOperation::Insert(ins) => WriteOp::Insert(ins),
        IndexOperation::Find(f) if f.modify.is_some() => WriteOp::Modify(f),
        // A find pipelined behind writes runs in their group.
        IndexOperation::Find(f) => WriteOp::Find(f),
        _ => panic!("not a write: {line:?}"),
    };
    WriteTask {
        index: index.clone(),
        op,
    }
}

/// A find task from a request line.
/// Answered as HandlerSocket's lines, which tests read as text.
pub(crate) fn read_task(index: &Arc<OpenedIndex>, line: &str) -> ReadTask<ResponseWriter> {
    match operation(line) {
        IndexOperation::Find(f) if f.modify.is_none() => ReadTask::new(index.clone(), f),
        _ => panic!("not a find: {line:?}"),
    }
}

fn operation(line: &str) -> IndexOperation {
    let Ok(Request::Exec(exec)) = parse_request(line.as_bytes()) else {
        panic!("not a request line: {line:?}");
    };
    exec.operation()
        .unwrap_or_else(|e| panic!("bad request {line:?}: {e:?}"))
}
