//! Read-only finds. Every scan of every task in a batch goes to the backend in
//! one `scan_many` call; rows come back in scan order and are encoded straight
//! into each task's response.

use super::{prepare_find, storage_error_kind, PreparedFind, RowCounter, RowDecision};
use crate::backend::{OpenedIndex, RowView, ScanStep, StorageConn};
use hs_proto::{ErrorKind, FindRequest, ResponseWriter};
use std::sync::Arc;

/// One find to run and the response it produced.
pub struct ReadTask {
    pub index: Arc<OpenedIndex>,
    pub req: FindRequest,
    pub out: ResponseWriter,
}

impl ReadTask {
    pub fn new(index: Arc<OpenedIndex>, req: FindRequest) -> Self {
        ReadTask {
            index,
            req,
            out: ResponseWriter::new(),
        }
    }
}

/// Runs a batch of finds. If the grouped statement fails, each task is run on
/// its own so one bad request cannot fail its neighbours.
pub async fn run_reads<C: StorageConn>(conn: &mut C, tasks: &mut [ReadTask]) {
    if tasks.len() > 1 && run_grouped(conn, tasks).await.is_ok() {
        return;
    }
    for task in tasks.iter_mut() {
        task.out.clear();
        let _ = run_grouped(conn, std::slice::from_mut(task)).await;
    }
}

async fn run_grouped<C: StorageConn>(conn: &mut C, tasks: &mut [ReadTask]) -> Result<(), ()> {
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
    let mut scans = Vec::new();
    let mut owner = Vec::new();
    for (t, p) in prepared.iter().enumerate() {
        if let Some(p) = p {
            for s in p.scans(false) {
                scans.push(s);
                owner.push(t);
            }
        }
    }
    let mut outputs: Vec<ResponseWriter> = tasks
        .iter()
        .map(|t| {
            let mut w = ResponseWriter::with_capacity(64);
            w.begin_ok(t.index.columns.len());
            w
        })
        .collect();
    let mut counters: Vec<RowCounter> = tasks.iter().map(|t| RowCounter::new(&t.req)).collect();
    let ncols: Vec<usize> = tasks.iter().map(|t| t.index.columns.len()).collect();
    let mut visit = |scan_no: usize, row: &dyn RowView| {
        let t = owner[scan_no];
        match counters[t].decide(row.filter_state()) {
            RowDecision::Take => {
                for c in 0..ncols[t] {
                    outputs[t].value(row.column(c));
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
    let result = conn.scan_many(&scans, &mut visit).await;
    match result {
        Ok(()) => {
            for ((task, mut out), err) in tasks.iter_mut().zip(outputs).zip(errors) {
                match err {
                    Some(e) => task.out.error(e),
                    None => {
                        out.end();
                        task.out = out;
                    }
                }
            }
            Ok(())
        }
        Err(e) => {
            if tasks.len() == 1 {
                let task = &mut tasks[0];
                task.out
                    .error(errors[0].unwrap_or_else(|| storage_error_kind(&e)));
            }
            tracing::debug!(error = %e, tasks = tasks.len(), "read batch failed");
            Err(())
        }
    }
}
