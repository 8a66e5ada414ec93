//! Inserts and find-and-modify (`U`, `D`, `+`, `-` and their `?` forms):
//! the one executor of a group's writes. Every task is planned once
//! (`plan`); a connection that takes one write at a time gets them so,
//! one that batches gets runs of alike writes together (`write_batch`),
//! which answer and change rows exactly as they would one by one. They run
//! inside the transaction the group committer opened; an answer is only
//! sent once that transaction has committed.
//!
//! A long modify walk (one that read `WriteLimits::walk_whole_rows` rows
//! and may read more) runs in slices: past
//! `WriteLimits::walk_slice` it stops after a row, hands back where it
//! stands (`WalkProgress`), and goes on in the committer's next group, so
//! that the other writes of its loop commit and are answered meanwhile
//! instead of waiting for the whole walk. Its answer comes once it ends.

use super::answer::{failure, Answer, Done, InsertId};
use super::find::{run_reads, ReadTask};
use super::modify::{row_change, ModifyAnswer, ReadRow};
use super::plan::{plan, InsertRow, ModifyPlan, WritePlan};
use super::{storage_error_kind, RowCounter, RowDecision};
use hs_proto::{ErrorKind, FindOp, FindRequest, InsertRequest, Value};
use hsd_storage::{
    OpenedIndex, RowInsert, RowTarget, RowView, RowWrite, Scan, ScanStep, StorageConn,
    StorageError, WriteBatching, ERR_STATEMENT_TIMEOUT, ERR_UNAVAILABLE,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) enum WriteOp {
    Insert(InsertRequest),
    Modify(FindRequest),
    /// A find a client pipelined behind its writes on the write port: it
    /// runs in their group, inside its transaction, so it sees them (as the
    /// original's reads in the same round did), and is answered with them.
    Find(FindRequest),
}

/// One write to run.
pub(crate) struct WriteTask {
    pub(crate) index: Arc<OpenedIndex>,
    pub(crate) op: WriteOp,
}

/// How a write went (`A`: the protocol front's answer).
#[derive(Debug)]
pub(crate) enum WriteOutcome<A: Answer> {
    /// Done, or refused with an error: its answer.
    Answered(A),
    /// Its db was locked by another writer and nothing was done: run it
    /// again later.
    Busy,
    /// It deadlocked with another transaction: answered with that error,
    /// but the whole group may be rolled back and run again.
    Conflict(A),
    /// A modify walk used its slice (`WriteLimits::walk_slice`): the rows
    /// it changed so far are the group's; it goes on from here in a later
    /// group and is answered when it ends.
    Paused(WalkProgress),
}

/// Where a paused modify walk stands: what it counted, answered and read
/// so far, and since when it runs (its bounds are the whole walk's).
#[derive(Debug, Clone)]
pub(crate) struct WalkProgress {
    counter: RowCounter,
    answer: ModifyAnswer,
    after: Option<Vec<Value>>,
    seek: usize,
    started: Instant,
    rows_read: u64,
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
pub(super) fn settle<A: Answer>(result: Result<A, WriteFailure>) -> WriteOutcome<A> {
    match result {
        Ok(out) => WriteOutcome::Answered(out),
        Err(WriteFailure::Busy) => WriteOutcome::Busy,
        Err(WriteFailure::Answer(kind)) => WriteOutcome::Answered(failure(kind)),
        Err(WriteFailure::Conflict(kind)) => WriteOutcome::Conflict(failure(kind)),
    }
}

/// What one write may cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteLimits {
    /// Bytes of rows a `?` form answers (`--max-response-bytes`; past it
    /// `1 1 1153` and the walk ends).
    pub(crate) max_answer: usize,
    /// How long a modify walk may take as a whole (`--statement-timeout`;
    /// past it `1 1 1969` and the walk ends). A walk can meet a row it
    /// moved ahead again and again (`>=` on an index over the column `+`
    /// raises): the original walked on forever.
    pub(crate) walk_time: Option<Duration>,
    /// How many rows a modify walk may read, whatever its time.
    pub(crate) walk_rows: u64,
    /// How long a modify walk runs in one group before it pauses (see the
    /// module comment); `None`: it runs to its end in one group.
    pub(crate) walk_slice: Option<Duration>,
    /// A walk that read fewer rows than this never pauses: its changes
    /// commit together, as any request's (a crash never leaves it half
    /// done). Only a long walk is cut in slices.
    pub(crate) walk_whole_rows: u64,
}

/// A modify walk's slice in a group: long enough that the commit between
/// slices costs little of the walk's time, short enough that the other
/// writes of the loop are not held noticeably.
pub(crate) const WALK_SLICE: Duration = Duration::from_millis(20);

/// Rows a walk reads before it may pause (`WriteLimits::walk_whole_rows`):
/// a request that changes fewer rows applies whole.
pub(crate) const WALK_WHOLE_ROWS: u64 = 100;

/// Whether `task` may be a modify walk that pauses (it may read more than
/// one row: not `=` on the whole of a unique key without NULLs or an IN
/// list). A cheap look at the request; may say yes for a write that turns
/// out to read one row or to be refused.
pub(crate) fn may_pause(task: &WriteTask) -> bool {
    let WriteOp::Modify(req) = &task.op else {
        return false;
    };
    let meta = task.index.index_meta();
    !(req.active_in().is_none()
        && req.op == FindOp::Eq
        && meta.unique
        && req.keys.len() == meta.key_sql.len()
        && req.keys.iter().all(Option::is_some))
}

/// The row budget of a modify walk (see `WriteLimits::walk_rows`).
pub(crate) const MAX_WALK_ROWS: u64 = 1_000_000;

/// Runs a group's writes in order inside the open transaction; one outcome
/// per task.
#[cfg(test)]
pub(crate) async fn run_writes<C: StorageConn, A: Answer>(
    storage: &mut C,
    tasks: &[&WriteTask],
    limits: &WriteLimits,
) -> Vec<WriteOutcome<A>> {
    run_writes_resuming(storage, tasks, &mut Vec::new(), limits).await
}

/// `run_writes`, where the walks of `resume` (task number, where it
/// stands) go on from where they paused. The caller keeps a task that
/// paused, and any later write of its client, out of the group until the
/// walk ends (`may_pause`).
pub(crate) async fn run_writes_resuming<C: StorageConn, A: Answer>(
    storage: &mut C,
    tasks: &[&WriteTask],
    resume: &mut Vec<(usize, WalkProgress)>,
    limits: &WriteLimits,
) -> Vec<WriteOutcome<A>> {
    let plans: Vec<WritePlan<'_>> = tasks.iter().map(|t| plan(t)).collect();
    match storage.write_batching() {
        WriteBatching::OneAtATime => {
            // Once a db file is found locked, its later writes wait too, so
            // that each file's writes keep their order.
            let mut locked: Vec<&str> = Vec::new();
            let mut outcomes = Vec::with_capacity(plans.len());
            let mut i = 0;
            while i < plans.len() {
                let db = tasks[i].index.table.db.as_str();
                if locked.contains(&db) {
                    outcomes.push(WriteOutcome::Busy);
                    i += 1;
                    continue;
                }
                // Consecutive finds (of files not locked) in one pass.
                let finds = plans[i..]
                    .iter()
                    .zip(&tasks[i..])
                    .take_while(|(p, t)| {
                        matches!(p, WritePlan::Find(_))
                            && !locked.contains(&t.index.table.db.as_str())
                    })
                    .count();
                if finds > 0 {
                    outcomes.extend(run_finds(storage, &plans[i..i + finds], limits).await);
                    i += finds;
                    continue;
                }
                let p = &plans[i];
                let outcome = run_one(storage, p, take_progress(resume, i), limits).await;
                if matches!(outcome, WriteOutcome::Busy) {
                    locked.push(db);
                }
                outcomes.push(outcome);
                i += 1;
            }
            outcomes
        }
        WriteBatching::Batched => {
            super::write_batch::run_batched(storage, &plans, resume, limits).await
        }
    }
}

/// Where task `i`'s walk paused, if it did.
pub(super) fn take_progress(
    resume: &mut Vec<(usize, WalkProgress)>,
    i: usize,
) -> Option<WalkProgress> {
    let at = resume.iter().position(|(t, _)| *t == i)?;
    Some(resume.swap_remove(at).1)
}

/// Runs one planned write on its own (a walk from where it paused, when
/// `progress` says).
pub(super) async fn run_one<C: StorageConn, A: Answer>(
    storage: &mut C,
    plan: &WritePlan<'_>,
    progress: Option<WalkProgress>,
    limits: &WriteLimits,
) -> WriteOutcome<A> {
    let result = match plan {
        WritePlan::Refused(kind) => Err(WriteFailure::Answer(*kind)),
        WritePlan::Insert(row) => insert(storage, row).await,
        WritePlan::Find(_) => {
            let mut outcomes = run_finds(storage, std::slice::from_ref(plan), limits).await;
            return outcomes.pop().unwrap_or_else(|| {
                WriteOutcome::Answered(failure(ErrorKind::Storage(ERR_UNAVAILABLE)))
            });
        }
        WritePlan::Modify(p) => match walk(storage, p, progress, limits).await {
            Ok(Walked::Paused(progress)) => return WriteOutcome::Paused(progress),
            Ok(Walked::Ended(answer)) => Ok(answer.finish()),
            Err(e) => Err(e),
        },
    };
    settle(result)
}

/// Runs finds that came with the group's writes (`plans` are all
/// `WritePlan::Find`), together, inside the group's transaction; one
/// outcome each. Each find's answer has its own bytes limit.
pub(super) async fn run_finds<C: StorageConn, A: Answer>(
    storage: &mut C,
    plans: &[WritePlan<'_>],
    limits: &WriteLimits,
) -> Vec<WriteOutcome<A>> {
    let mut reads: Vec<ReadTask<A>> = plans
        .iter()
        .filter_map(|p| match p {
            WritePlan::Find(task) => match &task.op {
                WriteOp::Find(req) => Some(ReadTask::new(task.index.clone(), req.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let clients: Vec<usize> = (0..reads.len()).collect();
    run_reads(storage, &mut reads, &clients, limits.max_answer).await;
    reads
        .into_iter()
        .map(|r| match r.failed {
            Some(StorageError::Busy(_)) => WriteOutcome::Busy,
            Some(e) if e.is_deadlock() => WriteOutcome::Conflict(r.out),
            _ => WriteOutcome::Answered(r.out),
        })
        .collect()
}

/// How a slice of a walk ended.
enum Walked {
    Ended(ModifyAnswer),
    Paused(WalkProgress),
}

async fn insert<C: StorageConn, A: Answer>(
    storage: &mut C,
    row: &InsertRow<'_>,
) -> Result<A, WriteFailure> {
    let rows = [row.as_insert()];
    let id = storage
        .insert_rows(&rows)
        .await
        .pop()
        .unwrap_or_else(|| Err(StorageError::Unavailable("no answer to an insert".into())))?;
    Ok(answer_insert(row, id))
}

/// The answer to an insert that was written: the generated id, if any.
pub(super) fn answer_insert<A: Answer>(row: &InsertRow<'_>, id: Option<u64>) -> A {
    let mut out = A::with_capacity(0);
    out.done(Done::Inserted(match id {
        Some(_) if row.explicit_id => InsertId::Given,
        Some(id) => InsertId::Generated(id),
        None => InsertId::None,
    }));
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
    progress: Option<WalkProgress>,
    limits: &WriteLimits,
) -> Result<Walked, WriteFailure> {
    // A table without transactions: no row lock holds the rows read until
    // they are changed, so another write loop must not read them meanwhile.
    let table = &p.index.table;
    if table.transactional {
        return walk_rows(storage, p, progress, limits).await;
    }
    storage.serialize_modifies(table).await?;
    let result = walk_rows(storage, p, progress, limits).await;
    storage.end_serialized();
    result
}

async fn walk_rows<C: StorageConn>(
    storage: &mut C,
    p: &ModifyPlan<'_>,
    progress: Option<WalkProgress>,
    limits: &WriteLimits,
) -> Result<Walked, WriteFailure> {
    let table = &p.index.table;
    let seeks = p.find.scan_count();
    let in_list = p.req.active_in().is_some();
    let WalkProgress {
        mut counter,
        mut answer,
        mut after,
        mut seek,
        started,
        mut rows_read,
    } = progress.unwrap_or_else(|| WalkProgress {
        counter: RowCounter::new(p.req),
        answer: ModifyAnswer::new(p.index, p.spec, limits.max_answer),
        after: None,
        seek: 0,
        started: Instant::now(),
        rows_read: 0,
    });
    let slice_started = Instant::now();
    let read_before = rows_read;
    while !counter.done {
        if rows_read > 0 {
            // The walk as a whole is bounded (rows changed so far stay
            // changed, as after any error), and gives the loop's other
            // tasks a turn now and then: on the embedded store no call
            // here ever suspends.
            let over_time = limits.walk_time.is_some_and(|t| started.elapsed() > t);
            if over_time || rows_read >= limits.walk_rows {
                return Err(ErrorKind::Storage(ERR_STATEMENT_TIMEOUT).into());
            }
            // Its slice is used (and it went a row further in it): the
            // group commits without it waiting for the rest.
            let slice_used = limits
                .walk_slice
                .is_some_and(|s| slice_started.elapsed() > s);
            if slice_used && rows_read > read_before && rows_read >= limits.walk_whole_rows {
                return Ok(Walked::Paused(WalkProgress {
                    counter,
                    answer,
                    after,
                    seek,
                    started,
                    rows_read,
                }));
            }
            tokio::task::consume_budget().await;
        }
        // A walk goes on from the last row it read; each IN seek is made
        // as it runs (a line may hold millions).
        let i = if in_list { seek } else { 0 };
        if i >= seeks {
            break;
        }
        seek += 1;
        let base = p.find.scan(i, true);
        let scan = Scan {
            fetch: 1,
            after: if in_list { None } else { after.as_deref() },
            ..base
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
        rows_read += 1;
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
    Ok(Walked::Ended(answer))
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
