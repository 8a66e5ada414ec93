//! Each write planned once: when a group starts, every write task is
//! checked against its opened index and told what it will do. Whether the
//! group then runs it alone or with others alike (`write_batch`), it means
//! the same; nothing here is computed again later.

use super::modify::{update_values, RowChange};
use super::write::{WriteOp, WriteTask};
use super::{prepare_find, storage_error_kind, PreparedFind};
use hs_proto::{ErrorKind, FindOp, FindRequest, InsertRequest, ModifyOp, ModifySpec};
use hsd_storage::values::{is_stored_form, stored_integer};
use hsd_storage::{ColumnKind, OpenedIndex, StorageError, TableMeta};

/// What one write task will do.
pub(super) enum WritePlan<'t> {
    /// Answered with this error; storage is not asked.
    Refused(ErrorKind),
    Insert(InsertRow<'t>),
    Modify(ModifyPlan<'t>),
    /// A find that came with the group's writes (`WriteOp::Find`).
    Find(&'t WriteTask),
}

/// A find-and-modify, checked.
pub(super) struct ModifyPlan<'t> {
    pub(super) index: &'t OpenedIndex,
    pub(super) req: &'t FindRequest,
    pub(super) find: PreparedFind<'t>,
    pub(super) op: ModifyOp,
    pub(super) spec: &'t ModifySpec,
    /// It reads one row at most (see `reads_one_row`).
    pub(super) one_row: bool,
    /// A plain `U`/`D` of one row whose whole key is in stored form: the
    /// change it makes, which a batching backend makes by key without
    /// reading the row (`RowTarget::Key`).
    pub(super) by_key: Option<RowChange<'t>>,
}

/// The columns and values an insert writes.
pub(super) struct InsertRow<'t> {
    pub(super) table: &'t TableMeta,
    pub(super) columns: Vec<usize>,
    pub(super) values: Vec<Option<&'t [u8]>>,
    /// The auto-increment column is given a value of its own.
    pub(super) explicit_id: bool,
}

/// Plans `task`.
pub(super) fn plan(task: &WriteTask) -> WritePlan<'_> {
    match &task.op {
        WriteOp::Insert(req) => WritePlan::Insert(plan_insert(&task.index, req)),
        WriteOp::Find(_) => WritePlan::Find(task),
        WriteOp::Modify(req) => match plan_modify(&task.index, req) {
            Ok(p) => WritePlan::Modify(p),
            Err(kind) => WritePlan::Refused(kind),
        },
    }
}

/// The checks in the original's order: `modop`, then those of the find
/// (`kpnum`, `filterblob`), then a table without a row locator.
fn plan_modify<'t>(
    index: &'t OpenedIndex,
    req: &'t FindRequest,
) -> Result<ModifyPlan<'t>, ErrorKind> {
    let (Some(spec), Some(op)) = (req.modify.as_ref(), req.modify.as_ref().and_then(|m| m.op))
    else {
        return Err(ErrorKind::ModOp);
    };
    let find = prepare_find(index, req)?;
    if index.table.locator_sql.is_empty() {
        return Err(storage_error_kind(&StorageError::NoRowLocator(
            index.table.name.clone(),
        )));
    }
    let one_row = reads_one_row(&find);
    let plain = one_row
        && !spec.returning
        && req.filters.is_empty()
        && req.offset == 0
        && key_in_stored_form(&find);
    let by_key = match op {
        ModifyOp::Update if plain => {
            let (columns, values) = update_values(index, spec);
            (!columns.is_empty()).then_some(RowChange::Update(columns, values))
        }
        ModifyOp::Delete if plain => Some(RowChange::Delete),
        _ => None,
    };
    Ok(ModifyPlan {
        index,
        req,
        find,
        op,
        spec,
        one_row,
        by_key,
    })
}

/// `=` with the whole key of a unique index, none of it NULL, and no IN
/// list: at most one row matches, and InnoDB, knowing so, reads no second
/// one (not even a row whose key the change moved ahead). The rule for
/// every modify, alone or batched.
fn reads_one_row(find: &PreparedFind<'_>) -> bool {
    let meta = find.index.index_meta();
    find.req.active_in().is_none()
        && find.req.op == FindOp::Eq
        && meta.unique
        && find.keys.len() == meta.key_sql.len()
        && find.keys.iter().all(Option::is_some)
}

/// Every key value is written as its column stores it, in a key of whole
/// columns (no prefix part, no rowid): a statement comparing it finds the
/// row a lookup finds.
fn key_in_stored_form(find: &PreparedFind<'_>) -> bool {
    let meta = find.index.index_meta();
    let table = &find.index.table;
    meta.key_prefix.iter().all(Option::is_none)
        && find.keys.iter().zip(&meta.key_columns).all(|(k, c)| {
            matches!((k, c), (Some(k), Some(c)) if is_stored_form(&table.columns[*c].kind, k))
        })
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
fn plan_insert<'t>(index: &'t OpenedIndex, req: &'t InsertRequest) -> InsertRow<'t> {
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
        table,
        columns,
        values,
        explicit_id,
    }
}
