//! Inserts and find-and-modify (`U`, `D`, `+`, `-` and their `?` forms). They
//! run inside the transaction the group committer opened; a response is only
//! sent once that transaction has committed.

use super::{prepare_find, storage_error_kind, RowCounter, RowDecision};
use crate::backend::values::{modify_amount, stored_integer};
use crate::backend::{
    ColumnKind, FilterVerdict, IntRead, OpenedIndex, RowView, Scan, ScanStep, StorageConn,
    StorageError, WriteValue,
};
use hs_proto::{
    ErrorKind, FindRequest, InsertRequest, ModifyOp, ModifySpec, ResponseWriter, Value,
};
use std::sync::Arc;

pub enum WriteOp {
    Insert(InsertRequest),
    Modify(FindRequest),
}

/// One write to run and the response it produced.
pub struct WriteTask {
    pub index: Arc<OpenedIndex>,
    pub op: WriteOp,
    pub out: ResponseWriter,
    /// The most bytes of old rows a `?` form answers (--max-response-bytes;
    /// the group committer sets it): past it, `1 1 1153` and the walk ends.
    pub max_answer: usize,
}

impl WriteTask {
    pub fn new(index: Arc<OpenedIndex>, op: WriteOp) -> Self {
        WriteTask {
            index,
            op,
            out: ResponseWriter::new(),
            max_answer: usize::MAX,
        }
    }
}

/// The bytes `row` adds to an answer (values and separators, roughly).
pub(super) fn answer_bytes(row: &[Value]) -> usize {
    row.iter().map(|v| v.as_ref().map_or(1, Vec::len) + 1).sum()
}

/// How a write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Answered (done, or refused with an error line).
    Answered,
    /// Its db was locked by another writer and nothing was done: run it
    /// again later.
    Busy,
    /// It deadlocked with another transaction; it is answered with that
    /// error, but the whole group may be rolled back and run again.
    Conflict,
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

/// Runs one write inside the group's transaction; its answer goes to
/// `task.out` unless it must run again.
pub async fn run_write<C: StorageConn>(storage: &mut C, task: &mut WriteTask) -> WriteOutcome {
    task.out.clear();
    let result = match &task.op {
        WriteOp::Insert(ins) => insert(storage, &task.index, ins, &mut task.out).await,
        WriteOp::Modify(req) => {
            modify(storage, &task.index, req, task.max_answer, &mut task.out).await
        }
    };
    settle(task, result)
}

/// Turns how a write went into its answer and outcome.
pub(super) fn settle(task: &mut WriteTask, result: Result<(), WriteFailure>) -> WriteOutcome {
    match result {
        Ok(()) => WriteOutcome::Answered,
        Err(WriteFailure::Busy) => {
            task.out.clear();
            WriteOutcome::Busy
        }
        Err(WriteFailure::Answer(kind)) => {
            task.out.clear();
            task.out.error(kind);
            WriteOutcome::Answered
        }
        Err(WriteFailure::Conflict(kind)) => {
            task.out.clear();
            task.out.error(kind);
            WriteOutcome::Conflict
        }
    }
}

/// An insert as the original made it: it starts from the table's default
/// row with every NULL flag cleared, stores the first `min(n, opened)`
/// values into the opened columns in order (a column opened twice keeps its
/// last value, or NULL if any was NULL; NULL on a NOT NULL column changes
/// nothing), then writes.
/// Columns it did not set keep their default, or the zero value when that
/// default is NULL or an expression (`zero_on_insert`). A non-zero
/// auto-increment value is stored and answered with id 0 (nothing was
/// generated); zero or none takes the next id. (The original answers
/// `1 1 167` instead once its write thread has met any error, such as a
/// `P` on a missing table, until the server restarts: docs/compatibility.md,
/// `explicit_ids_after_an_error`.)
async fn insert<C: StorageConn>(
    storage: &mut C,
    index: &OpenedIndex,
    req: &InsertRequest,
    out: &mut ResponseWriter,
) -> Result<(), WriteFailure> {
    let row = plan_insert(index, req);
    let result = storage
        .insert(&index.table, &row.columns, &row.values)
        .await?;
    answer_insert(&row, result, out);
    Ok(())
}

/// The columns and values an insert writes (see `insert`).
pub(super) struct InsertRow<'r> {
    pub columns: Vec<usize>,
    pub values: Vec<Option<&'r [u8]>>,
    /// The auto-increment column is given a value of its own.
    pub explicit_id: bool,
}

pub(super) fn plan_insert<'r>(index: &OpenedIndex, req: &'r InsertRequest) -> InsertRow<'r> {
    let table = &index.table;
    let n = (req.count as usize).min(index.columns.len());
    let mut columns: Vec<usize> = Vec::with_capacity(n);
    let mut values: Vec<Option<&[u8]>> = Vec::with_capacity(n);
    for (i, &c) in index.columns[..n].iter().enumerate() {
        let v = req.value(i);
        let meta = &table.columns[c];
        if v.is_none() && !meta.nullable {
            continue;
        }
        match columns.iter().position(|&x| x == c) {
            // The original never clears a NULL flag it set: a column given
            // NULL once stays NULL whatever follows.
            Some(p) if values[p].is_none() => {}
            Some(p) => values[p] = v,
            None => {
                columns.push(c);
                values.push(v);
            }
        }
    }
    // The auto-increment column: zero (or NULL) takes the next id.
    let mut explicit_id = false;
    let mut k = 0;
    while k < columns.len() {
        let meta = &table.columns[columns[k]];
        if meta.auto_increment {
            let (min, max) = match meta.kind {
                ColumnKind::Integer { min, max } => (min, max),
                _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
            };
            match values[k] {
                Some(v) if stored_integer(v, min, max) != 0 => explicit_id = true,
                _ => {
                    columns.remove(k);
                    values.remove(k);
                    continue;
                }
            }
        }
        k += 1;
    }
    for (c, meta) in table.columns.iter().enumerate() {
        if meta.zero_on_insert && !columns.contains(&c) {
            columns.push(c);
            values.push(Some(b""));
        }
    }
    InsertRow {
        columns,
        values,
        explicit_id,
    }
}

/// The answer to an insert that was written: the generated id, if any.
pub(super) fn answer_insert(row: &InsertRow<'_>, id: Option<u64>, out: &mut ResponseWriter) {
    match id {
        Some(_) if row.explicit_id => out.ok_number(0),
        Some(id) => out.ok_number(id),
        None => out.ok(),
    }
}

/// A row a modify read: its filter state, locator, position in the index
/// and values before any change.
struct ReadRow {
    state: FilterVerdict,
    locator: Vec<Value>,
    position: Vec<Value>,
    before: Before,
}

/// An opened row's values before a change: their text (what the `?` forms
/// answer) and the exact value of each column whose text rounds it (what
/// `+`/`-` add to; see `ColumnMeta::text_rounds`).
pub(super) struct Before {
    pub text: Vec<Value>,
    pub exact: Vec<Value>,
}

impl Before {
    /// Copies the opened columns of a row read with its locator.
    pub(super) fn of(index: &OpenedIndex, row: &dyn RowView) -> Before {
        let rounded = index.exact_columns().count();
        Before {
            text: (0..index.columns.len())
                .map(|c| row.column(c).map(<[u8]>::to_vec))
                .collect(),
            exact: (0..rounded)
                .map(|k| row.exact(k).map(<[u8]>::to_vec))
                .collect(),
        }
    }
}

/// Find-and-modify, as the original's loop: one row is read, answered (the
/// `?` forms, with its values before the change) and changed before the
/// next is read, so a later read sees what earlier changes did (a row whose
/// key moved ahead is met again; an IN value seeks among the rows as they
/// are then). An error stops the loop and is the answer; rows changed
/// before it stay changed.
async fn modify<C: StorageConn>(
    storage: &mut C,
    index: &OpenedIndex,
    req: &FindRequest,
    max_answer: usize,
    out: &mut ResponseWriter,
) -> Result<(), WriteFailure> {
    let Some(spec) = &req.modify else {
        return Err(ErrorKind::ModOp.into());
    };
    let Some(op) = spec.op else {
        return Err(ErrorKind::ModOp.into());
    };
    let prepared = prepare_find(index, req)?;
    let table = &index.table;
    if table.locator_sql.is_empty() {
        return Err(StorageError::NoRowLocator(table.name.clone()).into());
    }
    let ncols = index.columns.len();
    let locator_len = table.locator_sql.len();
    let seeks = prepared.scans(true);
    let walk = req.active_in().is_none();
    let mut counter = RowCounter::new(req);
    let mut returned: Vec<Value> = Vec::new();
    let mut returned_bytes = 0usize;
    let mut modified: u64 = 0;
    let mut after: Option<Vec<Value>> = None;
    // `=` with a full key of a unique index (no NULL in it) reads one row
    // at most: InnoDB knows no second one can follow, and does not look,
    // even for a row whose primary key the change moved ahead.
    let meta = index.index_meta();
    let single = walk
        && req.op == hs_proto::FindOp::Eq
        && meta.unique
        && prepared.keys.len() == meta.key_sql.len()
        && prepared.keys.iter().all(Option::is_some);
    let mut seek = 0;
    while !counter.done {
        let base = if walk {
            seeks.first()
        } else {
            seek += 1;
            seeks.get(seek - 1)
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
            after: if walk { after.as_deref() } else { None },
        };
        let mut read: Option<ReadRow> = None;
        let mut visit = |_: usize, row: &dyn RowView| {
            let mut locator = row.locator();
            let position = locator.split_off(locator_len.min(locator.len()));
            read = Some(ReadRow {
                state: row.filter_state(),
                locator,
                position,
                before: Before::of(index, row),
            });
            ScanStep::Stop
        };
        storage
            .scan_many(std::slice::from_ref(&scan), &mut visit)
            .await?;
        let Some(row) = read else {
            if walk {
                break;
            }
            continue;
        };
        if walk {
            after = Some(row.position);
        }
        if counter.decide(row.state) != RowDecision::Take {
            continue;
        }
        if spec.returning {
            returned_bytes += answer_bytes(&row.before.text);
            if returned_bytes > max_answer {
                // Rows changed before stay changed, as after any error.
                return Err(ErrorKind::Storage(super::find::ERR_ANSWER_TOO_LARGE).into());
            }
            returned.extend(row.before.text.iter().cloned());
        }
        match row_change(index, op, spec, &row.before) {
            RowChange::Update(cols, vals) => {
                storage.update(table, &row.locator, &cols, &vals).await?;
                modified += 1;
            }
            RowChange::Delete => {
                storage.delete(table, &row.locator).await?;
                modified += 1;
            }
            RowChange::Unchanged => {}
        }
        if single {
            break;
        }
    }
    if spec.returning {
        out.begin_ok(ncols);
        for v in &returned {
            out.value(v.as_deref());
        }
        out.end();
    } else {
        out.ok_number(modified);
    }
    Ok(())
}

/// What a modify does to one row it took.
pub(super) enum RowChange<'s> {
    /// Set these table columns to these values (counted even when no
    /// column is left to set).
    Update(Vec<usize>, Vec<WriteValue<'s>>),
    Delete,
    /// Left as it was and not counted (a `-` that would change a sign).
    Unchanged,
}

pub(super) fn row_change<'s>(
    index: &OpenedIndex,
    op: ModifyOp,
    spec: &'s ModifySpec,
    before: &Before,
) -> RowChange<'s> {
    match op {
        ModifyOp::Update => {
            let (cols, vals) = update_values(index, spec);
            RowChange::Update(cols, vals)
        }
        ModifyOp::Delete => RowChange::Delete,
        ModifyOp::Increment | ModifyOp::Decrement => match arithmetic(index, op, before, spec) {
            Some((cols, vals)) => {
                RowChange::Update(cols, vals.into_iter().map(WriteValue::Int).collect())
            }
            None => RowChange::Unchanged,
        },
    }
}

/// `U`: one value per opened column (missing ones are empty strings). A
/// column opened twice takes its last value; NULL on a NOT NULL column
/// leaves it as it was.
pub(super) fn update_values<'s>(
    index: &OpenedIndex,
    spec: &'s ModifySpec,
) -> (Vec<usize>, Vec<WriteValue<'s>>) {
    let mut cols: Vec<usize> = Vec::new();
    let mut vals: Vec<WriteValue<'s>> = Vec::new();
    for (i, &c) in index.columns.iter().enumerate() {
        let v = spec.value(i);
        if v.is_none() && !index.table.columns[c].nullable {
            continue;
        }
        match cols.iter().position(|&x| x == c) {
            Some(p) => vals[p] = WriteValue::Bytes(v),
            None => {
                cols.push(c);
                vals.push(WriteValue::Bytes(v));
            }
        }
    }
    (cols, vals)
}

/// `+`/`-` on one row: the table columns that change and their new
/// integers. Each opened column's value is read as an integer (`IntRead`)
/// and the amount (`atoll`) added or subtracted; a NULL value or amount
/// leaves the column alone. `None` when a `-` would change a value's sign:
/// the row is then left as it was and not counted (quirk).
fn arithmetic(
    index: &OpenedIndex,
    op: ModifyOp,
    before: &Before,
    spec: &ModifySpec,
) -> Option<(Vec<usize>, Vec<i64>)> {
    let mut cols: Vec<usize> = Vec::new();
    let mut vals: Vec<i64> = Vec::new();
    // What each changed column reads back after its store.
    let mut reads: Vec<i64> = Vec::new();
    let mut rounded = 0;
    for (i, &c) in index.columns.iter().enumerate() {
        let meta = &index.table.columns[c];
        // The exact value of a column whose text rounds it.
        let exact = if meta.text_rounds() {
            rounded += 1;
            before.exact.get(rounded - 1).and_then(|v| v.as_deref())
        } else {
            None
        };
        let (Some(cur), Some(amount)) =
            (before.text.get(i).and_then(|v| v.as_deref()), spec.value(i))
        else {
            continue;
        };
        // A column opened twice reads what the first change stored.
        let pos = cols.iter().position(|&x| x == c);
        let cur = match (pos, exact) {
            (Some(p), _) => reads[p],
            (None, Some(exact)) => IntRead::Real.read(exact),
            (None, None) => meta.int_read.read(cur),
        };
        let amount = modify_amount(amount);
        let new = if op == ModifyOp::Increment {
            cur.wrapping_add(amount)
        } else {
            let new = cur.wrapping_sub(amount);
            if (cur < 0 && new > 0) || (cur > 0 && new < 0) {
                return None;
            }
            new
        };
        let read = meta.stored_readback(new);
        match pos {
            Some(p) => {
                vals[p] = new;
                reads[p] = read;
            }
            None => {
                cols.push(c);
                vals.push(new);
                reads.push(read);
            }
        }
    }
    Some((cols, vals))
}
