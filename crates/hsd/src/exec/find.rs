//! Read-only finds. Every scan of every task in a batch goes to the backend in
//! one `scan_many` call; rows come back in scan order and are encoded straight
//! into each task's response.
//!
//! Answers are bounded in bytes (`--max-response-bytes`): the answers that
//! one client connection's batch builds at once may hold at most that many
//! bytes together (and a run joining several clients' batches a few times
//! that). A find whose rows would take them past it stops reading rows,
//! drops those it took and answers `1 1 1153` (MySQL's "packet bigger than
//! max_allowed_packet"); the finds before it keep their answers.

use super::answer::{failure, Answer};
use super::{prepare_find, storage_error_kind, PreparedFind, RowCounter, RowDecision};
use hs_proto::{ErrorKind, FindRequest};
use hsd_storage::{OpenedIndex, RowView, ScanStep, StorageConn, StorageError};
use std::sync::Arc;

/// The answer to a find whose rows would exceed the answer bytes limit:
/// MySQL's ER_NET_PACKET_TOO_LARGE, a result bigger than the server's limit.
pub(crate) const ERR_ANSWER_TOO_LARGE: u32 = 1153;

/// One find to run and the answer it produced (`A`: the protocol front's).
pub(crate) struct ReadTask<A: Answer> {
    pub(crate) index: Arc<OpenedIndex>,
    pub(crate) req: FindRequest,
    pub(crate) out: A,
    /// The storage failure `out` answers, when it answers one: a caller
    /// that can run the find elsewhere looks here, never at the answer.
    pub(crate) failed: Option<StorageError>,
}

impl<A: Answer> ReadTask<A> {
    pub(crate) fn new(index: Arc<OpenedIndex>, req: FindRequest) -> Self {
        ReadTask {
            index,
            req,
            out: A::with_capacity(0),
            failed: None,
        }
    }
}

/// At most how many rows a short find may read (see `is_short`).
const SHORT_ROWS: u64 = 1024;

/// Whether a find reads few rows whatever the table holds: a lookup by the
/// whole key of a unique index (for each of at most `SHORT_ROWS` IN
/// values), or a scan without filters of at most `SHORT_ROWS` rows. Such
/// finds run together on the event loop (`dispatch`); a filtered scan may
/// pass over any number of rows for one answer, so it does not.
pub(crate) fn is_short<A: Answer>(task: &ReadTask<A>) -> bool {
    let req = &task.req;
    let meta = task.index.index_meta();
    let seeks = req.active_in().map_or(1, |i| i.seeks() as u64);
    let point = req.op == hs_proto::FindOp::Eq
        && meta.unique
        && req.keys.len() == meta.key_sql.len()
        && req.keys.iter().all(Option::is_some);
    let rows = if point {
        seeks
    } else if req.filters.is_empty() {
        seeks.saturating_mul(RowCounter::reads(req))
    } else {
        return false;
    };
    rows <= SHORT_ROWS
}

/// Most scans one `scan_many` call runs: a batch of finds (or one find's
/// IN list) with more goes in pieces, so that what the scans hold stays
/// bounded whatever the line held.
const SCANS_PER_CALL: usize = 1024;

/// When one run joins the batches of several clients (the MySQL read
/// batcher does), their answers together may hold this many times the
/// limit: each client gets its own limit, the run as a whole a bound.
pub(crate) const JOINED_BATCHES_FACTOR: usize = 4;

/// Bytes the answers of each client batch hold so far, against the limit.
struct AnswerBytes {
    limit: usize,
    /// By batch number.
    used: Vec<usize>,
    /// All batches together, against `JOINED_BATCHES_FACTOR` x the limit.
    total: usize,
}

impl AnswerBytes {
    fn new(limit: usize, clients: &[usize]) -> AnswerBytes {
        let batches = clients.iter().map(|c| c + 1).max().unwrap_or(0);
        AnswerBytes {
            limit,
            used: vec![0; batches],
            total: 0,
        }
    }

    /// Counts `n` more bytes for `batch`; whether both bounds still hold.
    fn add(&mut self, batch: usize, n: usize) -> bool {
        self.used[batch] += n;
        self.total += n;
        self.used[batch] <= self.limit
            && self.total <= self.limit.saturating_mul(JOINED_BATCHES_FACTOR)
    }

    /// Forgets `n` bytes of `batch` (an answer dropped).
    fn remove(&mut self, batch: usize, n: usize) {
        self.used[batch] = self.used[batch].saturating_sub(n);
        self.total = self.total.saturating_sub(n);
    }
}

/// Runs a batch of finds, whose answers together may hold `max_bytes` per
/// client batch (see the module comment); `clients[i]` numbers the client
/// batch of `tasks[i]` (from 0, one client's tasks next to each other). If
/// the grouped statement fails, each task is run on its own so one bad
/// request cannot fail its neighbours.
pub(crate) async fn run_reads<C: StorageConn, A: Answer>(
    storage: &mut C,
    tasks: &mut [ReadTask<A>],
    clients: &[usize],
    max_bytes: usize,
) {
    debug_assert_eq!(tasks.len(), clients.len());
    if tasks.len() > 1 {
        let mut bytes = AnswerBytes::new(max_bytes, clients);
        if run_grouped(storage, tasks, clients, &mut bytes)
            .await
            .is_ok()
        {
            return;
        }
    }
    let mut bytes = AnswerBytes::new(max_bytes, clients);
    for i in 0..tasks.len() {
        tasks[i].out = A::with_capacity(0);
        tasks[i].failed = None;
        let _ = run_grouped(storage, &mut tasks[i..=i], &clients[i..=i], &mut bytes).await;
    }
}

async fn run_grouped<C: StorageConn, A: Answer>(
    storage: &mut C,
    tasks: &mut [ReadTask<A>],
    batch: &[usize],
    bytes: &mut AnswerBytes,
) -> Result<(), ()> {
    // Check every task first; a failed check answers at once and adds no scan.
    let mut prepared: Vec<Option<PreparedFind<'_>>> = Vec::with_capacity(tasks.len());
    let mut errors: Vec<Option<ErrorKind>> = Vec::with_capacity(tasks.len());
    for task in tasks.iter() {
        match prepare_find(&task.index, &task.req) {
            Ok(p) => {
                prepared.push(Some(p));
                errors.push(None);
            }
            Err(e) => {
                prepared.push(None);
                errors.push(Some(e));
            }
        }
    }
    let mut outputs: Vec<A> = tasks
        .iter()
        .map(|t| {
            let mut w = A::with_capacity(64);
            w.begin_rows(t.index.columns.len());
            w
        })
        .collect();
    let mut counters: Vec<RowCounter> = tasks.iter().map(|t| RowCounter::new(&t.req)).collect();
    let ncols: Vec<usize> = tasks.iter().map(|t| t.index.columns.len()).collect();
    for (out, &b) in outputs.iter().zip(batch) {
        bytes.add(b, out.len());
    }
    // Tasks whose answer went over the limit.
    let mut too_large = vec![false; tasks.len()];
    // Every (task, scan) pair, made and run a chunk at a time: a find's IN
    // list may hold millions of seeks.
    let mut pending = prepared.iter().enumerate().flat_map(|(t, p)| {
        let n = p.as_ref().map_or(0, PreparedFind::scan_count);
        (0..n).map(move |s| (t, s))
    });
    let mut result = Ok(());
    loop {
        let mut owner: Vec<usize> = Vec::new();
        let mut scans = Vec::new();
        for (t, s) in pending.by_ref() {
            // A find that has its rows (or went over the limit) seeks no
            // further.
            if counters[t].done || too_large[t] {
                continue;
            }
            if let Some(p) = &prepared[t] {
                scans.push(p.scan(s, false));
                owner.push(t);
            }
            if scans.len() == SCANS_PER_CALL {
                break;
            }
        }
        if scans.is_empty() {
            break;
        }
        let mut visit = |scan_no: usize, row: &dyn RowView| {
            let t = owner[scan_no];
            if too_large[t] {
                return ScanStep::Stop;
            }
            match counters[t].decide(row.filter_state()) {
                RowDecision::Take => {
                    // Checked after every value: one row may be far bigger
                    // than the limit (wide rows of long values).
                    for c in 0..ncols[t] {
                        let before = outputs[t].len();
                        outputs[t].value(row.column(c));
                        if !bytes.add(batch[t], outputs[t].len() - before) {
                            bytes.remove(batch[t], outputs[t].len());
                            outputs[t] = A::with_capacity(0);
                            too_large[t] = true;
                            return ScanStep::Stop;
                        }
                    }
                    if counters[t].done {
                        ScanStep::Stop
                    } else {
                        ScanStep::Continue
                    }
                }
                RowDecision::Skip if counters[t].done => ScanStep::Stop,
                RowDecision::Skip => ScanStep::Continue,
                RowDecision::End => ScanStep::Stop,
            }
        };
        result = storage.scan_many(&scans, &mut visit).await;
        if result.is_err() {
            break;
        }
    }
    match result {
        Ok(()) => {
            for (((task, mut out), err), too_large) in
                tasks.iter_mut().zip(outputs).zip(errors).zip(too_large)
            {
                match err {
                    Some(e) => task.out = failure(e),
                    None if too_large => {
                        task.out = failure(ErrorKind::Storage(ERR_ANSWER_TOO_LARGE));
                    }
                    None => {
                        out.end_rows();
                        task.out = out;
                    }
                }
            }
            Ok(())
        }
        Err(e) => {
            // What the answers held is dropped with them.
            for (&b, out) in batch.iter().zip(&outputs) {
                bytes.remove(b, out.len());
            }
            if tasks.len() == 1 {
                let task = &mut tasks[0];
                match errors[0] {
                    Some(kind) => task.out = failure(kind),
                    None => {
                        task.out = failure(storage_error_kind(&e));
                        task.failed = Some(e.clone());
                    }
                }
            }
            tracing::debug!(error = %e, tasks = tasks.len(), "read batch failed");
            Err(())
        }
    }
}
