//! A write group on a backend where every statement is a round trip
//! (`StorageConn::batches_writes`, MySQL): consecutive inserts go to the
//! backend as one `insert_rows`, consecutive single-row modifies read and
//! lock their rows with one `scan_many` and change them with one
//! `write_rows`. Each write means exactly what `write.rs` makes of it alone;
//! only the number of round trips changes. Anything else runs alone through
//! `run_write`, in order.
//!
//! Before both, a `U` or `D` without `?` or filters by the whole key of a
//! unique index (the commonest write after inserts) needs no read at all on
//! a backend that can find the row itself (`StorageConn::can_write_by_key`):
//! alone or with one more, each becomes one statement, and the row count it
//! reports is the answer (more of them go the read-and-merge way, which is
//! fewer statements).
//!
//! Modifies are batched only while running them together cannot differ from
//! running them one after another: their rows were read before any of them
//! changed, so a batch ends before a modify that found a row an earlier one
//! of the batch found, and after a modify that changed a column some later
//! modify of the batch looks its row up by.

use super::write::{
    answer_bytes, answer_insert, plan_insert, row_change, settle, update_values, Before, InsertRow,
    RowChange, WriteFailure, WriteOp, WriteOutcome, WriteTask,
};
use super::{prepare_find, RowCounter, RowDecision};
use crate::backend::{
    FilterVerdict, KeyedChange, KeyedWrite, RowInsert, RowView, RowWrite, Scan, ScanStep,
    StorageConn,
};
use hs_proto::{FindOp, FindRequest, ModifyOp, Value};
use std::collections::HashSet;

/// The longest run of keyed writes sent as one statement each: a longer run
/// costs fewer statements as one locking read and one merged UPDATE
/// (measured: 64 single UPDATEs per group ran at a third of the merged
/// pair's rate).
const KEYED_RUN_MAX: usize = 2;

/// Runs `tasks` in order; one outcome per task.
pub async fn run_batched<C: StorageConn>(
    storage: &mut C,
    tasks: &mut [&mut WriteTask],
) -> Vec<WriteOutcome> {
    let mut outcomes = Vec::with_capacity(tasks.len());
    let mut i = 0;
    while i < tasks.len() {
        let end = run_of(tasks, i, |t| keyed_write(&*storage, t));
        if end > i && end - i <= KEYED_RUN_MAX {
            outcomes.extend(keyed_batch(storage, &mut tasks[i..end]).await);
            i = end;
            continue;
        }
        let end = run_of(tasks, i, |t| matches!(t.op, WriteOp::Insert(_)));
        if end > i + 1 {
            outcomes.extend(insert_batch(storage, &mut tasks[i..end]).await);
            i = end;
            continue;
        }
        let end = run_of(tasks, i, |t| single_row_modify(t).is_some());
        if end > i + 1 {
            let (done, mut results) = modify_batch(storage, &mut tasks[i..end]).await;
            outcomes.append(&mut results);
            i += done;
            continue;
        }
        outcomes.push(super::run_write(storage, tasks[i]).await);
        i += 1;
    }
    outcomes
}

/// The end of the run of tasks from `start` that `fits`.
fn run_of(tasks: &[&mut WriteTask], start: usize, fits: impl Fn(&WriteTask) -> bool) -> usize {
    let mut end = start;
    while end < tasks.len() && fits(tasks[end]) {
        end += 1;
    }
    end
}

async fn insert_batch<C: StorageConn>(
    storage: &mut C,
    tasks: &mut [&mut WriteTask],
) -> Vec<WriteOutcome> {
    let planned: Vec<InsertRow<'_>> = tasks
        .iter()
        .filter_map(|t| match &t.op {
            WriteOp::Insert(req) => Some(plan_insert(&t.index, req)),
            WriteOp::Modify(_) => None,
        })
        .collect();
    if planned.len() != tasks.len() {
        // Not a run of inserts after all: one at a time.
        drop(planned);
        let mut outcomes = Vec::with_capacity(tasks.len());
        for t in tasks.iter_mut() {
            outcomes.push(super::run_write(storage, t).await);
        }
        return outcomes;
    }
    let rows: Vec<RowInsert<'_>> = tasks
        .iter()
        .zip(&planned)
        .map(|(t, p)| RowInsert {
            table: &t.index.table,
            columns: &p.columns,
            values: &p.values,
            explicit_id: p.explicit_id,
        })
        .collect();
    let results = storage.insert_rows(&rows).await;
    let mut answers = Vec::with_capacity(tasks.len());
    for (p, result) in planned.iter().zip(results) {
        let mut out = hs_proto::ResponseWriter::new();
        let result = result.map(|id| answer_insert(p, id, &mut out));
        answers.push((out, result));
    }
    drop(rows);
    drop(planned);
    tasks
        .iter_mut()
        .zip(answers)
        .map(|(t, (out, result))| {
            t.out = out;
            settle(t, result.map_err(WriteFailure::from))
        })
        .collect()
}

/// A `U`/`D` (no `?`, filter or IN) by `=` on the whole key of a unique
/// index, with offset 0, that `conn` can make without reading the row.
fn keyed_write<C: StorageConn>(storage: &C, task: &WriteTask) -> bool {
    let Some(req) = single_row_modify(task) else {
        return false;
    };
    let Some(spec) = req.modify.as_ref() else {
        return false;
    };
    let plain = !spec.returning
        && req.filters.is_empty()
        && req.offset == 0
        && matches!(spec.op, Some(ModifyOp::Update | ModifyOp::Delete));
    if !plain {
        return false;
    }
    let Ok(prepared) = prepare_find(&task.index, req) else {
        return false;
    };
    let (columns, values) = update_values(&task.index, spec);
    let change = match spec.op {
        Some(ModifyOp::Update) if !columns.is_empty() => KeyedChange::Update {
            columns: &columns,
            values: &values,
        },
        Some(ModifyOp::Delete) => KeyedChange::Delete,
        _ => return false,
    };
    storage.can_write_by_key(&KeyedWrite {
        index: &task.index,
        keys: &prepared.keys,
        change,
    })
}

/// Runs a run of keyed writes (see `keyed_write`): one statement each,
/// sent together; each answered with the rows its statement found.
async fn keyed_batch<C: StorageConn>(
    storage: &mut C,
    tasks: &mut [&mut WriteTask],
) -> Vec<WriteOutcome> {
    let mut planned = Vec::with_capacity(tasks.len());
    for t in tasks.iter() {
        let WriteOp::Modify(req) = &t.op else {
            planned.push(None);
            continue;
        };
        let (Some(spec), Ok(prepared)) = (req.modify.as_ref(), prepare_find(&t.index, req)) else {
            planned.push(None);
            continue;
        };
        let (columns, values) = update_values(&t.index, spec);
        planned.push(Some((spec.op, prepared.keys, columns, values)));
    }
    if planned.iter().any(Option::is_none) {
        // Not a run of keyed writes after all: one at a time.
        drop(planned);
        let mut outcomes = Vec::with_capacity(tasks.len());
        for t in tasks.iter_mut() {
            outcomes.push(super::run_write(storage, t).await);
        }
        return outcomes;
    }
    let writes: Vec<KeyedWrite<'_>> = tasks
        .iter()
        .zip(planned.iter().flatten())
        .map(|(t, (op, keys, columns, values))| KeyedWrite {
            index: &t.index,
            keys,
            change: match op {
                Some(ModifyOp::Update) => KeyedChange::Update { columns, values },
                _ => KeyedChange::Delete,
            },
        })
        .collect();
    let results = storage.write_by_keys(&writes).await;
    drop(writes);
    drop(planned);
    tasks
        .iter_mut()
        .zip(results)
        .map(|(t, result)| {
            t.out.clear();
            let result = result.map(|found| t.out.ok_number(found));
            settle(t, result.map_err(WriteFailure::from))
        })
        .collect()
}

/// A modify that reads one row at most, by `=` on the whole key of a unique
/// index: what `write.rs` calls `single`. Returns its request.
fn single_row_modify(task: &WriteTask) -> Option<&FindRequest> {
    let WriteOp::Modify(req) = &task.op else {
        return None;
    };
    let spec = req.modify.as_ref()?;
    spec.op?;
    let meta = task.index.index_meta();
    let single = req.active_in().is_none()
        && req.op == FindOp::Eq
        && meta.unique
        && !task.index.table.locator_sql.is_empty();
    if !single {
        return None;
    }
    let prepared = prepare_find(&task.index, req).ok()?;
    (prepared.keys.len() == meta.key_sql.len() && prepared.keys.iter().all(Option::is_some))
        .then_some(req)
}

/// What a modify of the batch read.
struct ReadRow {
    state: FilterVerdict,
    locator: Vec<Value>,
    before: Before,
}

/// Runs a batch of single-row modifies: returns how many of them it ran
/// (a batch may end early, see the module comment) and their outcomes.
async fn modify_batch<C: StorageConn>(
    storage: &mut C,
    tasks: &mut [&mut WriteTask],
) -> (usize, Vec<WriteOutcome>) {
    // Read (and lock) every task's row at once.
    let mut rows: Vec<Option<ReadRow>> = Vec::new();
    let read = {
        let prepared: Vec<_> = tasks
            .iter()
            .filter_map(|t| prepare_find(&t.index, single_row_modify(t)?).ok())
            .collect();
        let scans: Vec<Scan<'_>> = prepared
            .iter()
            .filter_map(|p| p.scans(true).into_iter().next())
            .map(|base| Scan { fetch: 1, ..base })
            .collect();
        if scans.len() != tasks.len() {
            // Not a run of single-row modifies after all.
            drop(scans);
            drop(prepared);
            let outcome = super::run_write(storage, tasks[0]).await;
            return (1, vec![outcome]);
        }
        rows.resize_with(tasks.len(), || None);
        let mut visit = |i: usize, row: &dyn RowView| {
            let locator_len = tasks[i].index.table.locator_sql.len();
            let mut locator = row.locator();
            locator.truncate(locator_len);
            rows[i] = Some(ReadRow {
                state: row.filter_state(),
                locator,
                before: Before::of(&tasks[i].index, row),
            });
            ScanStep::Stop
        };
        storage.scan_many(&scans, &mut visit).await
    };
    if read.is_err() {
        // Which task's read failed is unknown: run the first alone, which
        // tells, and leave the rest to the next batch.
        let outcome = super::run_write(storage, tasks[0]).await;
        return (1, vec![outcome]);
    }

    // Decide each task's change, in order, as `write.rs` would.
    let mut seen: HashSet<(&str, &str, &[Value])> = HashSet::new();
    let mut answers: Vec<hs_proto::ResponseWriter> = Vec::new();
    let mut changes: Vec<(usize, RowChange<'_>)> = Vec::new();
    let mut done = 0;
    for (i, task) in tasks.iter().enumerate() {
        let WriteOp::Modify(req) = &task.op else {
            break;
        };
        let Some(spec) = req.modify.as_ref() else {
            break;
        };
        let Some(op) = spec.op else {
            break;
        };
        let table = &task.index.table;
        let row = rows[i].as_ref();
        if let Some(r) = row {
            if !seen.insert((&table.db, &table.name, &r.locator)) {
                // An earlier modify of this batch read this row: its read
                // may be stale now.
                break;
            }
        }
        let mut counter = RowCounter::new(req);
        let mut out = hs_proto::ResponseWriter::new();
        let mut modified = 0u64;
        let mut returned: &[Value] = &[];
        let mut written: Vec<usize> = Vec::new();
        if let Some(r) = row.filter(|_| !counter.done) {
            if counter.decide(r.state) == RowDecision::Take {
                if spec.returning && answer_bytes(&r.before.text) > task.max_answer {
                    // Answered with the error; the row stays as it was.
                    out.error(hs_proto::ErrorKind::Storage(
                        super::find::ERR_ANSWER_TOO_LARGE,
                    ));
                    answers.push(out);
                    done = i + 1;
                    continue;
                }
                if spec.returning {
                    returned = &r.before.text;
                }
                let change = row_change(&task.index, op, spec, &r.before);
                match &change {
                    RowChange::Update(cols, _) => {
                        written.clone_from(cols);
                        modified = 1;
                    }
                    RowChange::Delete => modified = 1,
                    RowChange::Unchanged => {}
                }
                if !matches!(change, RowChange::Unchanged) {
                    changes.push((i, change));
                }
            }
        }
        if spec.returning {
            out.begin_ok(task.index.columns.len());
            for v in returned {
                out.value(v.as_deref());
            }
            out.end();
        } else {
            out.ok_number(modified);
        }
        answers.push(out);
        done = i + 1;
        if changes_a_later_key(tasks, i, &written) {
            break;
        }
    }

    // Apply the changes, in order.
    let writes: Vec<RowWrite<'_>> = changes
        .iter()
        .map(|(i, change)| {
            let table = &tasks[*i].index.table;
            let locator = rows[*i].as_ref().map_or(&[][..], |r| r.locator.as_slice());
            match change {
                RowChange::Update(columns, values) => RowWrite::Update {
                    table,
                    locator,
                    columns,
                    values: values.as_slice(),
                },
                _ => RowWrite::Delete { table, locator },
            }
        })
        .collect();
    let results = storage.write_rows(&writes).await;
    let mut failures: Vec<Option<WriteFailure>> = (0..done).map(|_| None).collect();
    for ((i, _), result) in changes.iter().zip(results) {
        if let Err(e) = result {
            failures[*i] = Some(WriteFailure::from(e));
        }
    }
    drop(writes);
    drop(changes);
    let outcomes = tasks[..done]
        .iter_mut()
        .zip(answers)
        .zip(failures)
        .map(|((t, out), failure)| {
            t.out = out;
            settle(t, failure.map_or(Ok(()), Err))
        })
        .collect();
    (done, outcomes)
}

/// Whether task `i`'s change of `written` columns touches a column that a
/// later task of the batch, on the same table, finds its row by.
fn changes_a_later_key(tasks: &[&mut WriteTask], i: usize, written: &[usize]) -> bool {
    if written.is_empty() {
        return false;
    }
    let table = &tasks[i].index.table;
    tasks[i + 1..]
        .iter()
        .filter(|t| t.index.table.db == table.db && t.index.table.name == table.name)
        .any(|t| {
            t.index
                .index_meta()
                .key_columns
                .iter()
                .flatten()
                .any(|c| written.contains(c))
        })
}
