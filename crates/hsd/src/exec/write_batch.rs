//! A group's planned writes on a connection that batches them
//! (`WriteBatching::Batched`, MySQL): runs of alike writes go to storage
//! together, and each means exactly what it means alone (`write::run_one`);
//! only the number of round trips changes.
//!
//! - A `U` or `D` without `?` or filters by the whole key of a unique index
//!   (the commonest write after inserts) needs no read: alone or with one
//!   more, each is one statement by key, and the rows it found are the
//!   answer. So is a longer run that can be one statement by key
//!   (`one_statement_by_key`: MySQL makes it one merged UPDATE, kept only
//!   when every key found its row). Other longer runs go the
//!   read-and-change way below, fewer statements than one each.
//! - Consecutive inserts: one `insert_rows`.
//! - Consecutive modifies that read one row at most: their rows are read
//!   and locked by one `scan_many` and changed by one `write_rows`. This
//!   is only done while running them together cannot differ from running
//!   them one after another: their rows were read before any of them
//!   changed, so a batch ends before a modify that found a row an earlier
//!   one of the batch found, and after a modify that changed a column some
//!   later modify of the batch looks its row up by.
//! - Anything else runs alone, in order.

use super::answer::{Answer, Done};
use super::modify::{row_change, ModifyAnswer, ReadRow, RowChange};
use super::plan::{ModifyPlan, WritePlan};
use super::write::{
    answer_insert, run_finds, run_one, settle, take_progress, WalkProgress, WriteFailure,
    WriteLimits, WriteOutcome,
};
use super::{RowCounter, RowDecision};
use hs_proto::Value;
use hsd_storage::{
    ColumnKind, FilterMode, RowInsert, RowTarget, RowView, RowWrite, Scan, ScanStep, StorageConn,
    StorageError,
};
use std::collections::HashSet;

/// The longest run of writes by key sent as one statement each: a longer
/// run costs fewer statements as one locking read and one merged UPDATE
/// (measured: 64 single UPDATEs per group ran at a third of the merged
/// pair's rate).
const BY_KEY_RUN_MAX: usize = 2;

/// Runs `plans` in order; one outcome per plan (a walk of `resume` from
/// where it paused).
pub(super) async fn run_batched<C: StorageConn, A: Answer>(
    storage: &mut C,
    plans: &[WritePlan<'_>],
    resume: &mut Vec<(usize, WalkProgress)>,
    limits: &WriteLimits,
) -> Vec<WriteOutcome<A>> {
    let mut outcomes = Vec::with_capacity(plans.len());
    let mut i = 0;
    while i < plans.len() {
        if !transactional(&plans[i]) {
            // Its statements keep their changes whatever happens to the
            // group: one at a time, so that no statement's failure leaves
            // rows of others changed (a multi-row INSERT that fails keeps
            // its first rows on such a table) and each answer is exact.
            let progress = take_progress(resume, i);
            outcomes.push(run_one(storage, &plans[i], progress, limits).await);
            i += 1;
            continue;
        }
        let end = run_of_finds(plans, i);
        if end > i {
            outcomes.extend(run_finds(storage, &plans[i..end], limits).await);
            i = end;
            continue;
        }
        let end = run_of(plans, i, |m| m.by_key.is_some());
        if end > i && end - i <= BY_KEY_RUN_MAX {
            outcomes.extend(by_key_batch(storage, &plans[i..end]).await);
            i = end;
            continue;
        }
        let end = i + one_statement_by_key(&plans[i..end]);
        if end - i > BY_KEY_RUN_MAX {
            outcomes.extend(by_key_batch(storage, &plans[i..end]).await);
            i = end;
            continue;
        }
        let end = run_of_inserts(plans, i);
        if end > i + 1 {
            outcomes.extend(insert_batch(storage, &plans[i..end]).await);
            i = end;
            continue;
        }
        let end = run_of(plans, i, |m| m.one_row);
        if end > i + 1 {
            let (done, mut results) = one_row_batch(storage, &plans[i..end], limits).await;
            outcomes.append(&mut results);
            i += done;
            continue;
        }
        let progress = take_progress(resume, i);
        outcomes.push(run_one(storage, &plans[i], progress, limits).await);
        i += 1;
    }
    outcomes
}

/// Whether a plan's table takes part in the group's transaction (see
/// `TableMeta::transactional`).
fn transactional(plan: &WritePlan<'_>) -> bool {
    match plan {
        WritePlan::Refused(_) => true,
        WritePlan::Insert(row) => row.table.transactional,
        WritePlan::Modify(m) => m.index.table.transactional,
        WritePlan::Find(task) => task.index.table.transactional,
    }
}

/// The end of the run of modifies from `start` that `fits`.
fn run_of(plans: &[WritePlan<'_>], start: usize, fits: impl Fn(&ModifyPlan<'_>) -> bool) -> usize {
    let mut end = start;
    while end < plans.len()
        && transactional(&plans[end])
        && matches!(&plans[end], WritePlan::Modify(m) if fits(m))
    {
        end += 1;
    }
    end
}

/// The end of the run of finds from `start` (of tables with transactions:
/// one of a table without runs alone, as its writes do).
fn run_of_finds(plans: &[WritePlan<'_>], start: usize) -> usize {
    let mut end = start;
    while end < plans.len()
        && transactional(&plans[end])
        && matches!(plans[end], WritePlan::Find(_))
    {
        end += 1;
    }
    end
}

fn run_of_inserts(plans: &[WritePlan<'_>], start: usize) -> usize {
    let mut end = start;
    while end < plans.len()
        && transactional(&plans[end])
        && matches!(plans[end], WritePlan::Insert(_))
    {
        end += 1;
    }
    end
}

/// The modify plans of a run (`run_of` made sure they all are).
fn modifies<'p, 't>(plans: &'p [WritePlan<'t>]) -> impl Iterator<Item = &'p ModifyPlan<'t>> {
    plans.iter().filter_map(|p| match p {
        WritePlan::Modify(m) => Some(m),
        _ => None,
    })
}

async fn insert_batch<C: StorageConn, A: Answer>(
    storage: &mut C,
    plans: &[WritePlan<'_>],
) -> Vec<WriteOutcome<A>> {
    let planned: Vec<_> = plans
        .iter()
        .filter_map(|p| match p {
            WritePlan::Insert(row) => Some(row),
            _ => None,
        })
        .collect();
    let rows: Vec<RowInsert<'_>> = planned.iter().map(|r| r.as_insert()).collect();
    let results = storage.insert_rows(&rows).await;
    planned
        .iter()
        .zip(results)
        .map(|(row, result)| settle(result.map(|id| answer_insert(row, id)).map_err(Into::into)))
        .collect()
}

/// Writes by key (see the module comment): one statement each, sent
/// together; each answered with the rows its statement found.
async fn by_key_batch<C: StorageConn, A: Answer>(
    storage: &mut C,
    plans: &[WritePlan<'_>],
) -> Vec<WriteOutcome<A>> {
    let writes: Vec<RowWrite<'_>> = modifies(plans)
        .filter_map(|m| {
            let change = m.by_key.as_ref()?;
            Some(RowWrite {
                table: &m.index.table,
                target: RowTarget::Key {
                    index: m.index,
                    keys: &m.find.keys,
                },
                change: change.as_change(),
            })
        })
        .collect();
    let results = storage.write_rows(&writes).await;
    results
        .into_iter()
        .map(|result| {
            settle(
                result
                    .map(|found| {
                        let mut out = A::with_capacity(0);
                        out.done(Done::Modified(found));
                        out
                    })
                    .map_err(Into::into),
            )
        })
        .collect()
}

/// How many of a run of writes by key, from its start, can be one
/// statement by key: updates of the same columns by the same one-column
/// integer unique key, no key twice (its write would see the earlier
/// one's change), no column of a unique key written. Storage makes such
/// a run at once and keeps it only when every key found its row (MySQL:
/// `conn_writes::update_by_keys_if_all_found`), otherwise one statement
/// each: exact either way, with no locking read.
fn one_statement_by_key(plans: &[WritePlan<'_>]) -> usize {
    let mut runs = modifies(plans);
    let Some(first) = runs.next() else {
        return 0;
    };
    let Some(RowChange::Update(columns, _)) = &first.by_key else {
        return 0;
    };
    let table = &first.index.table;
    let meta = first.index.index_meta();
    let integer_key = matches!(
        meta.key_columns.as_slice(),
        [Some(c)] if matches!(table.columns[*c].kind, ColumnKind::Integer { .. })
    );
    let writes_a_unique_key = table.indexes.iter().filter(|i| i.unique).any(|i| {
        i.key_columns
            .iter()
            .any(|k| k.is_none_or(|k| columns.contains(&k)))
    });
    if !integer_key || writes_a_unique_key {
        return 0;
    }
    let mut keys: HashSet<&[Option<&[u8]>]> = HashSet::new();
    keys.insert(&first.find.keys);
    1 + runs
        .take_while(|m| {
            matches!(&m.by_key, Some(RowChange::Update(c, _)) if c == columns)
                && m.index.table.db == table.db
                && m.index.table.name == table.name
                && m.index.index == first.index.index
                && keys.insert(&m.find.keys)
        })
        .count()
}

/// Runs a batch of modifies that read one row at most: returns how many of
/// them it ran (a batch may end early, see the module comment) and their
/// outcomes.
async fn one_row_batch<C: StorageConn, A: Answer>(
    storage: &mut C,
    plans: &[WritePlan<'_>],
    limits: &WriteLimits,
) -> (usize, Vec<WriteOutcome<A>>) {
    let batch: Vec<&ModifyPlan<'_>> = modifies(plans).collect();
    // Read (and lock) every row at once, whatever its filters say (the
    // verdict comes with it): a row the filters would drop now may be one
    // an earlier modify of the batch changes, which the same-row rule below
    // must see. (At most one row has the key, so this reads no other.)
    let scans: Vec<Scan<'_>> = batch
        .iter()
        .filter(|m| m.find.scan_count() > 0)
        .map(|m| m.find.scan(0, true))
        .map(|base| Scan {
            fetch: 1,
            filter_mode: if base.filters.is_empty() {
                FilterMode::None
            } else {
                FilterMode::StateColumn {
                    exclude_skipped: false,
                }
            },
            ..base
        })
        .collect();
    let mut rows: Vec<Option<ReadRow>> = Vec::new();
    rows.resize_with(batch.len(), || None);
    let read = if scans.len() == batch.len() {
        let mut visit = |i: usize, row: &dyn RowView| {
            rows[i] = Some(ReadRow::of(batch[i].index, row));
            ScanStep::Stop
        };
        storage.scan_many(&scans, &mut visit).await
    } else {
        Err(StorageError::Unavailable(
            "a modify without its scan".into(),
        ))
    };
    if read.is_err() {
        // Which read failed is unknown: run the first alone, which tells,
        // and leave the rest to the next batch.
        // (A modify that reads one row at most never pauses.)
        return (1, vec![run_one(storage, &plans[0], None, limits).await]);
    }

    // Decide each change, in order, as `write::walk` would.
    let mut seen: HashSet<(&str, &str, &[Value])> = HashSet::new();
    let mut answers: Vec<A> = Vec::new();
    let mut changes: Vec<(usize, RowChange<'_>)> = Vec::new();
    let mut refused: Vec<Option<WriteFailure>> = Vec::new();
    for (i, m) in batch.iter().enumerate() {
        let table = &m.index.table;
        let row = rows[i].as_ref();
        if let Some(r) = row {
            if !seen.insert((&table.db, &table.name, &r.locator)) {
                // An earlier modify of this batch read this row: its read
                // may be stale now.
                break;
            }
        }
        let mut counter = RowCounter::new(m.req);
        let mut answer = ModifyAnswer::new(m.index, m.spec, limits.max_answer);
        let mut written: &[usize] = &[];
        let mut failure = None;
        if let Some(r) = row.filter(|_| !counter.done) {
            if counter.decide(r.verdict) == RowDecision::Take {
                match answer.took(&r.before) {
                    // Answered with the error; the row stays as it was.
                    Err(kind) => failure = Some(WriteFailure::Answer(kind)),
                    Ok(()) => {
                        if let Some(change) = row_change(m.index, m.op, m.spec, &r.before) {
                            answer.changed();
                            changes.push((i, change));
                        }
                    }
                }
            }
        }
        if let Some((j, RowChange::Update(cols, _))) = changes.last() {
            if *j == i {
                written = cols;
            }
        }
        let cut = changes_a_later_key(&batch, i, written);
        answers.push(answer.finish());
        refused.push(failure);
        if cut {
            break;
        }
    }
    let done = answers.len();

    // Apply the changes, in order.
    let writes: Vec<RowWrite<'_>> = changes
        .iter()
        .map(|(i, change)| RowWrite {
            table: &batch[*i].index.table,
            target: RowTarget::Locator(rows[*i].as_ref().map_or(&[][..], |r| &r.locator)),
            change: change.as_change(),
        })
        .collect();
    let results = storage.write_rows(&writes).await;
    for ((i, _), result) in changes.iter().zip(results) {
        if let Err(e) = result {
            refused[*i] = Some(WriteFailure::from(e));
        }
    }
    let outcomes = answers
        .into_iter()
        .zip(refused)
        .map(|(answer, failure)| settle(failure.map_or(Ok(answer), Err)))
        .collect();
    (done, outcomes)
}

/// Whether modify `i`'s change of `written` columns touches a column that a
/// later modify of the batch, on the same table, finds its row by.
fn changes_a_later_key(batch: &[&ModifyPlan<'_>], i: usize, written: &[usize]) -> bool {
    if written.is_empty() {
        return false;
    }
    let table = &batch[i].index.table;
    batch[i + 1..]
        .iter()
        .filter(|m| m.index.table.db == table.db && m.index.table.name == table.name)
        .any(|m| {
            m.index
                .index_meta()
                .key_columns
                .iter()
                .flatten()
                .any(|c| written.contains(c))
        })
}

#[cfg(test)]
mod tests {
    //! Batched writes answer and change rows exactly as the same writes run
    //! one at a time: random groups over one table, run on two copies of
    //! the in-memory store, one taking writes one at a time, one batching.

    use crate::exec::testing::{open, store, write_task};
    use crate::exec::write::{
        run_writes, run_writes_resuming, WriteLimits, WriteOutcome, WriteTask, MAX_WALK_ROWS,
    };
    use hs_proto::ResponseWriter;
    use hsd_storage::memory::MemoryStore;
    use hsd_storage::{Backend, OpenedIndex, StorageConn, WriteBatching};

    const LIMITS: WriteLimits = WriteLimits {
        max_answer: 1 << 20,
        walk_time: None,
        walk_rows: MAX_WALK_ROWS,
        walk_slice: None,
        walk_whole_rows: 0,
    };
    use proptest::prelude::*;
    use std::sync::Arc;

    /// Indexes opened on `t`: (index, columns), filter column `n`.
    const OPENINGS: [(usize, &[usize]); 6] = [
        (0, &[0, 1, 2, 3]), // PRIMARY: id u n s (keys can move)
        (1, &[2, 3]),       // u_idx: n s
        (2, &[1, 2]),       // n_idx: u n
        (0, &[2]),          // PRIMARY: n (for + and -)
        (1, &[1, 2]),       // u_idx: u n (its own key can move)
        (0, &[2, 2]),       // PRIMARY: n opened twice
    ];

    fn openings(table: &Arc<hsd_storage::TableMeta>) -> Vec<Arc<OpenedIndex>> {
        OPENINGS
            .iter()
            .enumerate()
            .map(|(id, (index, cols))| open(table, id as u64 + 1, *index, cols, &[2]))
            .collect()
    }

    /// A value token: a small number, or NULL now and then.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => (0i64..11).prop_map(|n| n.to_string()),
            1 => Just("\0".to_string()),
        ]
    }

    /// One request: (opening, line without its index id).
    fn request() -> impl Strategy<Value = (usize, String)> {
        let insert = (value(), value(), value(), value())
            .prop_map(|(a, b, c, d)| (0usize, format!("+\t4\t{a}\t{b}\t{c}\t{d}")));
        let modify = (
            0usize..OPENINGS.len(),
            prop_oneof![6 => Just("="), 1 => Just(">="), 1 => Just("<="), 1 => Just(">"), 1 => Just("<")],
            value(),
            1u32..4,
            prop_oneof![4 => Just(0u32), 1 => Just(1u32)],
            prop_oneof![Just("U"), Just("D"), Just("+"), Just("-"), Just("U?"), Just("D?"), Just("+?"), Just("-?")],
            proptest::collection::vec(value(), 4),
            prop_oneof![4 => Just(String::new()), 1 => (0i64..3).prop_map(|n| format!("\tF\t>=\t0\t{n}")), 1 => (0i64..3).prop_map(|n| format!("\tW\t<=\t0\t{n}"))],
        )
            .prop_map(|(o, op, key, limit, offset, mop, vals, filter)| {
                let ncols = OPENINGS[o].1.len();
                let vals: Vec<String> = vals
                    .into_iter()
                    .take(ncols)
                    .map(|v| if mop.starts_with('+') || mop.starts_with('-') { v.replace('\0', "1") } else { v })
                    .collect();
                (
                    o,
                    format!("{op}\t1\t{key}\t{limit}\t{offset}{filter}\t{mop}\t{}", vals.join("\t")),
                )
            });
        let find = (
            0usize..OPENINGS.len(),
            prop_oneof![3 => Just("="), 1 => Just(">="), 1 => Just("<")],
            value(),
            1u32..4,
            prop_oneof![4 => Just(String::new()), 1 => (0i64..3).prop_map(|n| format!("\tF\t>=\t0\t{n}"))],
        )
            .prop_map(|(o, op, key, limit, filter)| (o, format!("{op}\t1\t{key}\t{limit}\t0{filter}")));
        prop_oneof![2 => insert, 6 => modify, 1 => find]
    }

    /// Runs the group on a fresh store: the answers and the rows left.
    fn run(batching: WriteBatching, group: &[(usize, String)]) -> (Vec<String>, Vec<String>) {
        let (store, table) = store(batching);
        let indexes = openings(&table);
        let tasks: Vec<WriteTask> = group
            .iter()
            .map(|(o, line)| write_task(&indexes[*o], &format!("{}\t{line}", o + 1)))
            .collect();
        let refs: Vec<&WriteTask> = tasks.iter().collect();
        let outcomes = block_on(async {
            let mut c = store.connect().await.expect("connect");
            c.begin().await.expect("begin");
            let outcomes: Vec<WriteOutcome<ResponseWriter>> =
                run_writes(&mut c, &refs, &LIMITS).await;
            let committed = c.commit().await;
            assert!(committed.failure.is_none());
            outcomes
        });
        let answers = outcomes
            .into_iter()
            .map(|o| match o {
                WriteOutcome::Answered(w) => String::from_utf8_lossy(w.as_bytes()).into_owned(),
                other => panic!("unexpected outcome {other:?}"),
            })
            .collect();
        (answers, rows(&store))
    }

    /// Runs the group one write at a time, each walk pausing after every
    /// row it reads and going on in the next transaction, as the group
    /// committer runs a long walk: the answers and the rows left.
    fn run_sliced(
        batching: WriteBatching,
        group: &[(usize, String)],
    ) -> (Vec<String>, Vec<String>) {
        let (store, table) = store(batching);
        let indexes = openings(&table);
        let tasks: Vec<WriteTask> = group
            .iter()
            .map(|(o, line)| write_task(&indexes[*o], &format!("{}\t{line}", o + 1)))
            .collect();
        let sliced = WriteLimits {
            walk_slice: Some(std::time::Duration::ZERO),
            walk_whole_rows: 0,
            ..LIMITS
        };
        let answers = block_on(async {
            let mut c = store.connect().await.expect("connect");
            let mut answers = Vec::new();
            for task in &tasks {
                let mut resume = Vec::new();
                loop {
                    c.begin().await.expect("begin");
                    let mut outcomes: Vec<WriteOutcome<ResponseWriter>> =
                        run_writes_resuming(&mut c, &[task], &mut resume, &sliced).await;
                    assert!(c.commit().await.failure.is_none());
                    match outcomes.pop() {
                        Some(WriteOutcome::Paused(progress)) => resume = vec![(0, progress)],
                        Some(WriteOutcome::Answered(w)) => {
                            answers.push(String::from_utf8_lossy(w.as_bytes()).into_owned());
                            break;
                        }
                        other => panic!("unexpected outcome {other:?}"),
                    }
                }
            }
            answers
        });
        (answers, rows(&store))
    }

    fn rows(store: &MemoryStore) -> Vec<String> {
        store
            .rows("db", "t")
            .iter()
            .map(|r| format!("{r:?}"))
            .collect()
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

        #[test]
        fn batched_writes_answer_and_change_rows_as_one_at_a_time(
            group in proptest::collection::vec(request(), 1..24)
        ) {
            let alone = run(WriteBatching::OneAtATime, &group);
            let batched = run(WriteBatching::Batched, &group);
            prop_assert_eq!(alone, batched, "group: {:?}", group);
        }

        #[test]
        fn walks_run_in_slices_answer_and_change_rows_as_in_one(
            group in proptest::collection::vec(request(), 1..12)
        ) {
            let whole = run(WriteBatching::OneAtATime, &group);
            for batching in [WriteBatching::OneAtATime, WriteBatching::Batched] {
                let sliced = run_sliced(batching, &group);
                prop_assert_eq!(&whole, &sliced, "group: {:?}", group);
            }
        }
    }

    #[test]
    fn a_later_modify_of_a_row_sees_the_change_before_it() {
        // The second modify's filter reads the column the first one changed.
        let group = [
            (3usize, "=\t1\t6\t1\t0\t+\t2".to_string()),
            (
                0usize,
                "=\t1\t6\t1\t0\tF\t>=\t0\t1\tU\t0\t0\t0\t0".to_string(),
            ),
        ];
        assert_eq!(
            run(WriteBatching::OneAtATime, &group),
            run(WriteBatching::Batched, &group)
        );
    }

    #[test]
    fn batching_sends_fewer_calls() {
        // Eight lookups-and-changes by primary key and eight inserts.
        let mut group: Vec<(usize, String)> = (1..=8)
            .map(|k| (3usize, format!("=\t1\t{k}\t1\t0\t+\t1")))
            .collect();
        group.extend((20..28).map(|k| (0usize, format!("+\t4\t{k}\t\0\t1\tx"))));
        let calls = |batching| {
            let (store, table) = store(batching);
            let indexes = openings(&table);
            let tasks: Vec<WriteTask> = group
                .iter()
                .map(|(o, line)| write_task(&indexes[*o], &format!("{}\t{line}", o + 1)))
                .collect();
            let refs: Vec<&WriteTask> = tasks.iter().collect();
            block_on(async {
                let mut c = store.connect().await.expect("connect");
                c.begin().await.expect("begin");
                let _: Vec<WriteOutcome<ResponseWriter>> = run_writes(&mut c, &refs, &LIMITS).await;
                c.commit().await;
            });
            (store.calls(), rows(&store))
        };
        let (alone, rows_alone) = calls(WriteBatching::OneAtATime);
        let (batched, rows_batched) = calls(WriteBatching::Batched);
        assert_eq!(rows_alone, rows_batched);
        // Alone: a read and a write per modify, a call per insert.
        assert_eq!(alone, 1 + 8 * 2 + 8 + 1);
        // Batched: one read, one write, one insert call.
        assert_eq!(batched, 1 + 3 + 1);
    }
}
