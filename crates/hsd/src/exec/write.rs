//! Inserts and find-and-modify (`U`, `D`, `+`, `-` and their `?` forms). They
//! run inside the transaction the group committer opened; a response is only
//! sent once that transaction has committed.

use super::{prepare_find, storage_error_kind, RowCounter, RowDecision};
use crate::backend::{OpenedIndex, RowView, ScanStep, StorageConn, StorageError};
use hs_proto::{ErrorKind, FindRequest, InsertRequest, ModifyOp, ResponseWriter, Value};
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
}

impl WriteTask {
    pub fn new(index: Arc<OpenedIndex>, op: WriteOp) -> Self {
        WriteTask {
            index,
            op,
            out: ResponseWriter::new(),
        }
    }
}

/// How a write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Answered (done, or refused with an error line).
    Answered,
    /// Its db was locked by another writer and nothing was done: run it
    /// again later.
    Busy,
}

/// Why a write did not complete.
enum WriteFailure {
    Answer(ErrorKind),
    Busy,
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
            other => WriteFailure::Answer(storage_error_kind(&other)),
        }
    }
}

/// Runs one write inside the group's transaction; its answer goes to
/// `task.out` unless it must run again.
pub async fn run_write<C: StorageConn>(conn: &mut C, task: &mut WriteTask) -> WriteOutcome {
    task.out.clear();
    let result = match &task.op {
        WriteOp::Insert(ins) => insert(conn, &task.index, ins, &mut task.out).await,
        WriteOp::Modify(req) => modify(conn, &task.index, req, &mut task.out).await,
    };
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
    }
}

async fn insert<C: StorageConn>(
    conn: &mut C,
    index: &OpenedIndex,
    req: &InsertRequest,
    out: &mut ResponseWriter,
) -> Result<(), WriteFailure> {
    let n = req.values.len().min(index.columns.len());
    let values: Vec<Option<&[u8]>> = req.values[..n].iter().map(|v| v.as_deref()).collect();
    match conn
        .insert(&index.table, &index.columns[..n], &values)
        .await?
    {
        Some(id) => out.ok_number(id),
        None => out.ok(),
    }
    Ok(())
}

/// A row chosen for modification: its locator and its values before the change.
struct Target {
    locator: Vec<Value>,
    before: Vec<Value>,
}

async fn modify<C: StorageConn>(
    conn: &mut C,
    index: &OpenedIndex,
    req: &FindRequest,
    out: &mut ResponseWriter,
) -> Result<(), WriteFailure> {
    let Some(spec) = &req.modify else {
        return Err(ErrorKind::ModOp.into());
    };
    let prepared = prepare_find(index, req)?;
    if index.table.locator_sql.is_empty() {
        return Err(StorageError::NoRowLocator(index.table.name.clone()).into());
    }
    let scans = prepared.scans(true);
    let ncols = index.columns.len();
    let mut counter = RowCounter::new(req);
    let mut targets: Vec<Target> = Vec::new();
    let mut visit = |_: usize, row: &dyn RowView| match counter.decide(row.filter_state()) {
        RowDecision::Take => {
            targets.push(Target {
                locator: row.locator(),
                before: (0..ncols)
                    .map(|c| row.column(c).map(<[u8]>::to_vec))
                    .collect(),
            });
            if counter.done {
                ScanStep::Stop
            } else {
                ScanStep::Continue
            }
        }
        RowDecision::Skip => ScanStep::Continue,
        RowDecision::End => ScanStep::Stop,
    };
    conn.scan_many(&scans, &mut visit).await?;

    // Exactly one value per opened column; missing ones are empty strings.
    let given: Vec<Option<&[u8]>> = (0..ncols)
        .map(|i| match spec.values.get(i) {
            Some(v) => v.as_deref(),
            None => Some(&b""[..]),
        })
        .collect();
    let mut modified: u64 = 0;
    for t in &targets {
        let changed = match spec.op {
            ModifyOp::Update => {
                conn.update(&index.table, &t.locator, &index.columns, &given)
                    .await?;
                true
            }
            ModifyOp::Delete => {
                conn.delete(&index.table, &t.locator).await?;
                true
            }
            ModifyOp::Increment | ModifyOp::Decrement => {
                match arithmetic(spec.op, &t.before, &given) {
                    Some((cols, vals)) => {
                        let cols: Vec<usize> = cols.iter().map(|&i| index.columns[i]).collect();
                        let vals: Vec<Option<&[u8]>> =
                            vals.iter().map(|v| Some(v.as_slice())).collect();
                        if !cols.is_empty() {
                            conn.update(&index.table, &t.locator, &cols, &vals).await?;
                        }
                        true
                    }
                    None => false,
                }
            }
        };
        if changed {
            modified += 1;
        }
    }
    if spec.returning {
        out.begin_ok(ncols);
        for t in &targets {
            for v in &t.before {
                out.value(v.as_deref());
            }
        }
        out.end();
    } else {
        out.ok_number(modified);
    }
    Ok(())
}

/// `+`/`-` on one row: which opened columns change and their new text. A NULL
/// current or given value leaves that column alone. `None` when a `-` would
/// change a column's sign: the whole row is then left unmodified (quirk).
fn arithmetic(
    op: ModifyOp,
    before: &[Value],
    given: &[Option<&[u8]>],
) -> Option<(Vec<usize>, Vec<Vec<u8>>)> {
    let mut cols = Vec::new();
    let mut vals = Vec::new();
    for (i, (cur, delta)) in before.iter().zip(given).enumerate() {
        let (Some(cur), Some(delta)) = (cur, delta) else {
            continue;
        };
        let cur = leading_integer(cur);
        let delta = leading_integer(delta);
        let new = if op == ModifyOp::Increment {
            cur.wrapping_add(delta)
        } else {
            let new = cur.wrapping_sub(delta);
            if (cur < 0 && new > 0) || (cur > 0 && new < 0) {
                return None;
            }
            new
        };
        cols.push(i);
        vals.push(new.to_string().into_bytes());
    }
    Some((cols, vals))
}

/// `atoll`: optional sign, then digits up to the first non-digit; garbage is 0.
pub fn leading_integer(s: &[u8]) -> i64 {
    let s = s.trim_ascii_start();
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            break;
        }
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg {
        -n
    } else {
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_integer_parses_like_atoll() {
        assert_eq!(leading_integer(b"42abc"), 42);
        assert_eq!(leading_integer(b"-7"), -7);
        assert_eq!(leading_integer(b" 3"), 3);
        assert_eq!(leading_integer(b"x"), 0);
        assert_eq!(leading_integer(b"12.9"), 12);
    }

    #[test]
    fn decrement_sign_rule() {
        let before = vec![Some(b"5".to_vec()), Some(b"1".to_vec())];
        // 5-3 = 2 fine, 1-3 = -2 changes sign: whole row untouched.
        assert!(arithmetic(ModifyOp::Decrement, &before, &[Some(b"3"), Some(b"3")]).is_none());
        let (cols, vals) =
            arithmetic(ModifyOp::Decrement, &before, &[Some(b"3"), Some(b"1")]).unwrap();
        assert_eq!(cols, vec![0, 1]);
        assert_eq!(vals, vec![b"2".to_vec(), b"0".to_vec()]);
        // From zero going negative is not a sign change.
        let zero = vec![Some(b"0".to_vec())];
        assert!(arithmetic(ModifyOp::Decrement, &zero, &[Some(b"1")]).is_some());
    }

    #[test]
    fn null_leaves_column_alone() {
        let before = vec![None, Some(b"1".to_vec())];
        let (cols, _) = arithmetic(ModifyOp::Increment, &before, &[Some(b"1"), None]).unwrap();
        assert!(cols.is_empty());
    }
}
