//! Inserts and find-and-modify (`U`, `D`, `+`, `-` and their `?` forms):
//! the one executor of a group's writes. Every task is planned once
//! (`plan`); a connection that takes one write at a time gets them so,
//! one that batches gets runs of alike writes together (`write_batch`),
//! which answer and change rows exactly as they would one by one. They run
//! inside the transaction the group committer opened; an answer is only
//! sent once that transaction has committed.

use super::modify::{row_change, ModifyAnswer, ReadRow};
use super::plan::{plan, InsertRow, ModifyPlan, WritePlan};
use super::{storage_error_kind, RowCounter, RowDecision};
use crate::backend::{
    OpenedIndex, RowInsert, RowTarget, RowView, RowWrite, Scan, ScanStep, StorageConn,
    StorageError, WriteBatching,
};
use hs_proto::{ErrorKind, FindRequest, InsertRequest, ResponseWriter, Value};
use std::sync::Arc;

pub(crate) enum WriteOp {
    Insert(InsertRequest),
    Modify(FindRequest),
}

/// One write to run.
pub(crate) struct WriteTask {
    pub(crate) index: Arc<OpenedIndex>,
    pub(crate) op: WriteOp,
}

/// How a write went.
#[derive(Debug)]
pub(crate) enum WriteOutcome {
    /// Done, or refused with an error line: its answer.
    Answered(ResponseWriter),
    /// Its db was locked by another writer and nothing was done: run it
    /// again later.
    Busy,
    /// It deadlocked with another transaction: answered with that error,
    /// but the whole group may be rolled back and run again.
    Conflict(ResponseWriter),
}

/// Why a write did not complete.
pub(super) enum WriteFailure {
    Answer(ErrorKind),
    Busy,
    Conflict(ErrorKind),
}

impl From<ErrorKind> for WriteFailure {
    fn from(kind: ErrorKind) -> Self {
        WriteFailure::Answer(kind)
    }
}

impl From<StorageError> for WriteFailure {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Busy(_) => WriteFailure::Busy,
            other if other.is_deadlock() => WriteFailure::Conflict(storage_error_kind(&other)),
            other => WriteFailure::Answer(storage_error_kind(&other)),
        }
    }
}

/// Turns how a write went into its outcome.
pub(super) fn settle(result: Result<ResponseWriter, WriteFailure>) -> WriteOutcome {
    let error = |kind| {
        let mut out = ResponseWriter::new();
        out.error(kind);
        out
    };
    match result {
        Ok(out) => WriteOutcome::Answered(out),
        Err(WriteFailure::Busy) => WriteOutcome::Busy,
        Err(WriteFailure::Answer(kind)) => WriteOutcome::Answered(error(kind)),
        Err(WriteFailure::Conflict(kind)) => WriteOutcome::Conflict(error(kind)),
    }
}

/// Runs a group's writes in order inside the open transaction; one outcome
/// per task. The `?` forms answer at most `max_answer` bytes of rows each
/// (`--max-response-bytes`; past it `1 1 1153` and the walk ends).
pub(crate) async fn run_writes<C: StorageConn>(
    storage: &mut C,
    tasks: &[&WriteTask],
    max_answer: usize,
) -> Vec<WriteOutcome> {
    let plans: Vec<WritePlan<'_>> = tasks.iter().map(|t| plan(t)).collect();
    match storage.write_batching() {
        WriteBatching::OneAtATime => {
            // Once a db file is found locked, its later writes wait too, so
            // that each file's writes keep their order.
            let mut locked: Vec<&str> = Vec::new();
            let mut outcomes = Vec::with_capacity(plans.len());
            for (t, p) in tasks.iter().zip(&plans) {
                let db = t.index.table.db.as_str();
                if locked.contains(&db) {
                    outcomes.push(WriteOutcome::Busy);
                    continue;
                }
                let outcome = run_one(storage, p, max_answer).await;
                if matches!(outcome, WriteOutcome::Busy) {
                    locked.push(db);
                }
                outcomes.push(outcome);
            }
            outcomes
        }
        WriteBatching::Batched => {
            super::write_batch::run_batched(storage, &plans, max_answer).await
        }
    }
}

/// Runs one planned write on its own.
pub(super) async fn run_one<C: StorageConn>(
    storage: &mut C,
    plan: &WritePlan<'_>,
    max_answer: usize,
) -> WriteOutcome {
    let result = match plan {
        WritePlan::Refused(kind) => Err(WriteFailure::Answer(*kind)),
        WritePlan::Insert(row) => insert(storage, row).await,
        WritePlan::Modify(p) => walk(storage, p, max_answer).await,
    };
    settle(result)
}

async fn insert<C: StorageConn>(
    storage: &mut C,
    row: &InsertRow<'_>,
) -> Result<ResponseWriter, WriteFailure> {
    let rows = [row.as_insert()];
    let id = storage
        .insert_rows(&rows)
        .await
        .pop()
        .unwrap_or_else(|| Err(StorageError::Unavailable("no answer to an insert".into())))?;
    Ok(answer_insert(row, id))
}

/// The answer to an insert that was written: the generated id, if any.
pub(super) fn answer_insert(row: &InsertRow<'_>, id: Option<u64>) -> ResponseWriter {
    let mut out = ResponseWriter::new();
    match id {
        Some(_) if row.explicit_id => out.ok_number(0),
        Some(id) => out.ok_number(id),
        None => out.ok(),
    }
    out
}

/// Find-and-modify, as the original's loop: one row is read, answered (the
/// `?` forms, with its values before the change) and changed before the
/// next is read, so a later read sees what earlier changes did (a row whose
/// key moved ahead is met again; an IN value seeks among the rows as they
/// are then). An error stops the loop and is the answer; rows changed
/// before it stay changed.
async fn walk<C: StorageConn>(
    storage: &mut C,
    p: &ModifyPlan<'_>,
    max_answer: usize,
) -> Result<ResponseWriter, WriteFailure> {
    let table = &p.index.table;
    let seeks = p.find.scans(true);
    let in_list = p.req.active_in().is_some();
    let mut counter = RowCounter::new(p.req);
    let mut answer = ModifyAnswer::new(p.index, p.spec, max_answer);
    let mut after: Option<Vec<Value>> = None;
    let mut seek = 0;
    while !counter.done {
        let base = if in_list {
            seek += 1;
            seeks.get(seek - 1)
        } else {
            seeks.first()
        };
        let Some(base) = base else {
            break;
        };
        let scan = Scan {
            index: base.index,
            op: base.op,
            keys: base.keys.clone(),
            filters: base.filters,
            filter_mode: base.filter_mode,
            fetch: 1,
            with_locator: true,
            after: if in_list { None } else { after.as_deref() },
        };
        let mut read: Option<ReadRow> = None;
        let mut visit = |_: usize, row: &dyn RowView| {
            read = Some(ReadRow::of(p.index, row));
            ScanStep::Stop
        };
        storage
            .scan_many(std::slice::from_ref(&scan), &mut visit)
            .await?;
        let Some(row) = read else {
            if in_list {
                continue;
            }
            break;
        };
        if !in_list {
            after = Some(row.position);
        }
        if counter.decide(row.verdict) != RowDecision::Take {
            continue;
        }
        answer.took(&row.before)?;
        if let Some(change) = row_change(p.index, p.op, p.spec, &row.before) {
            let write = RowWrite {
                table,
                target: RowTarget::Locator(&row.locator),
                change: change.as_change(),
            };
            storage
                .write_rows(&[write])
                .await
                .pop()
                .unwrap_or_else(|| Err(StorageError::Unavailable("no answer to a write".into())))?;
            answer.changed();
        }
        if p.one_row {
            break;
        }
    }
    Ok(answer.finish())
}

impl InsertRow<'_> {
    /// The row as a storage call takes it.
    pub(super) fn as_insert(&self) -> RowInsert<'_> {
        RowInsert {
            table: self.table,
            columns: &self.columns,
            values: &self.values,
            explicit_id: self.explicit_id,
        }
    }
}
