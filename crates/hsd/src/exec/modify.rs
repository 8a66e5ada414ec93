//! What a modify (`U`, `D`, `+`, `-` and their `?` forms) does to one row it
//! took, and how its answer is assembled: the same for a walk run alone
//! and for a batch of single-row modifies.

use super::answer::{Answer, Done};
use super::find::ERR_ANSWER_TOO_LARGE;
use hs_proto::{ErrorKind, ModifyOp, ModifySpec, Value};
use hsd_storage::values::modify_amount;
use hsd_storage::{Change, FilterVerdict, IntRead, OpenedIndex, RowView, WriteValue};

/// An opened row's values before a change: their text (what the `?` forms
/// answer) and the exact value of each column whose text rounds it (what
/// `+`/`-` add to; see `ColumnMeta::text_rounds`).
pub(super) struct Before {
    pub(super) text: Vec<Value>,
    pub(super) exact: Vec<Value>,
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

/// A row a modify read: what its filters say, its locator, its position
/// in the index (what a walk goes on from) and its values before any
/// change.
pub(super) struct ReadRow {
    pub(super) verdict: FilterVerdict,
    pub(super) locator: Vec<Value>,
    pub(super) position: Vec<Value>,
    pub(super) before: Before,
}

impl ReadRow {
    /// Copies a row read with its locator.
    pub(super) fn of(index: &OpenedIndex, row: &dyn RowView) -> ReadRow {
        let mut locator = row.locator();
        let position = locator.split_off(index.table.locator_sql.len().min(locator.len()));
        ReadRow {
            verdict: row.filter_state(),
            locator,
            position,
            before: Before::of(index, row),
        }
    }
}

/// The change a modify decided for one row it took.
pub(super) enum RowChange<'s> {
    /// Set these table columns to these values (counted even when no
    /// column is left to set).
    Update(Vec<usize>, Vec<WriteValue<'s>>),
    Delete,
}

impl RowChange<'_> {
    /// The change as a storage call takes it.
    pub(super) fn as_change(&self) -> Change<'_> {
        match self {
            RowChange::Update(columns, values) => Change::Update { columns, values },
            RowChange::Delete => Change::Delete,
        }
    }
}

/// What `op` does to a row whose values were `before`; `None` leaves it as
/// it was and does not count it (a `-` that would change a sign).
pub(super) fn row_change<'s>(
    index: &OpenedIndex,
    op: ModifyOp,
    spec: &'s ModifySpec,
    before: &Before,
) -> Option<RowChange<'s>> {
    match op {
        ModifyOp::Update => {
            let (cols, vals) = update_values(index, spec);
            Some(RowChange::Update(cols, vals))
        }
        ModifyOp::Delete => Some(RowChange::Delete),
        ModifyOp::Increment | ModifyOp::Decrement => {
            arithmetic(index, op, before, spec).map(|(cols, vals)| {
                RowChange::Update(cols, vals.into_iter().map(WriteValue::Int).collect())
            })
        }
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

/// A modify's answer as its rows are taken: the count, or (`?` forms) the
/// rows before their change, bounded by the answer bytes limit.
#[derive(Debug, Clone)]
pub(super) struct ModifyAnswer {
    returning: bool,
    columns: usize,
    rows: Vec<Value>,
    bytes: usize,
    max_bytes: usize,
    changed: u64,
}

impl ModifyAnswer {
    pub(super) fn new(index: &OpenedIndex, spec: &ModifySpec, max_bytes: usize) -> ModifyAnswer {
        ModifyAnswer {
            returning: spec.returning,
            columns: index.columns.len(),
            rows: Vec::new(),
            bytes: 0,
            max_bytes,
            changed: 0,
        }
    }

    /// A row was taken: the `?` forms answer it. Past the answer bytes
    /// limit the modify ends with `1 1 1153` before changing this row
    /// (rows changed before stay changed, as after any error).
    pub(super) fn took(&mut self, before: &Before) -> Result<(), ErrorKind> {
        if !self.returning {
            return Ok(());
        }
        self.bytes += before
            .text
            .iter()
            .map(|v| v.as_ref().map_or(1, Vec::len) + 1)
            .sum::<usize>();
        if self.bytes > self.max_bytes {
            return Err(ErrorKind::Storage(ERR_ANSWER_TOO_LARGE));
        }
        self.rows.extend(before.text.iter().cloned());
        Ok(())
    }

    /// A taken row was changed (or deleted).
    pub(super) fn changed(&mut self) {
        self.changed += 1;
    }

    pub(super) fn finish<A: Answer>(self) -> A {
        let mut out = A::with_capacity(0);
        if self.returning {
            out.begin_rows(self.columns);
            for v in &self.rows {
                out.value(v.as_deref());
            }
            out.end_rows();
        } else {
            out.done(Done::Modified(self.changed));
        }
        out
    }
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
