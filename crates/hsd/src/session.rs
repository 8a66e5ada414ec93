//! One client connection's protocol state: which port it came in on, whether
//! it authenticated, which indexes it opened. Turns request lines into
//! responses, handing finds and writes to the workers in batches: consecutive
//! reads travel as one job, consecutive writes as another, so pipelined
//! requests are grouped while each connection's order is kept.

use crate::backend::{Backend, OpenedIndex};
use crate::exec::write::WriteOp;
use crate::exec::{ReadTask, WriteTask};
use crate::metrics::Metrics;
use crate::workers::{self, ReadJob, WriteJob};
use crossbeam_channel::Sender;
use hs_proto::{
    parse_request, AuthRequest, ErrorKind, ExecRequest, IndexOperation, OpenIndexRequest, Request,
    ResponseWriter,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// Finds only; writes answer `readonly`.
    Read,
    Write,
}

/// What every connection of one listener shares.
pub struct ListenerContext {
    pub kind: PortKind,
    pub secret: Option<Vec<u8>>,
    pub reads: Sender<ReadJob>,
    pub writes: Sender<WriteJob>,
    pub metrics: Arc<Metrics>,
    /// Set when the backend lets short reads run on the network thread.
    pub inline_reads: Option<Arc<dyn Backend>>,
}

/// Opened indexes by id: a vector for the small ids clients use, a bounded
/// map beyond, so a hostile id cannot make us allocate.
#[derive(Default)]
struct IndexTable {
    small: Vec<Option<Arc<OpenedIndex>>>,
    large: HashMap<u32, Arc<OpenedIndex>>,
}

const SMALL_IDS: usize = 1024;
const MAX_LARGE_IDS: usize = 4096;

impl IndexTable {
    fn get(&self, id: u32) -> Option<&Arc<OpenedIndex>> {
        match self.small.get(id as usize) {
            Some(slot) => slot.as_ref(),
            None => self.large.get(&id),
        }
    }

    fn set(&mut self, id: u32, index: Arc<OpenedIndex>) -> Result<(), ErrorKind> {
        let i = id as usize;
        if i < SMALL_IDS {
            if self.small.len() <= i {
                self.small.resize(i + 1, None);
            }
            self.small[i] = Some(index);
        } else {
            if self.large.len() >= MAX_LARGE_IDS && !self.large.contains_key(&id) {
                return Err(ErrorKind::StmtNum);
            }
            self.large.insert(id, index);
        }
        Ok(())
    }
}

enum Pending {
    None,
    Reads(Vec<ReadTask>),
    Writes(Vec<WriteTask>),
}

pub struct Session {
    ctx: Arc<ListenerContext>,
    authenticated: bool,
    indexes: IndexTable,
    pending: Pending,
    pending_since: Option<Instant>,
    /// Rows the pending batch may answer with (sum of its limits).
    pending_rows: u64,
}

/// A pending batch is run once its requests may answer with this many rows,
/// so pipelined scans cannot pile up answers far bigger than the requests.
const MAX_PENDING_ROWS: u64 = 4096;

impl Session {
    pub fn new(ctx: Arc<ListenerContext>) -> Self {
        let authenticated = ctx.secret.is_none();
        Session {
            ctx,
            authenticated,
            indexes: IndexTable::default(),
            pending: Pending::None,
            pending_since: None,
            pending_rows: 0,
        }
    }

    /// Handles one request line (LF and tolerated CR already removed). Its
    /// response is appended to `out` now or when the pending batch flushes.
    pub async fn handle_line(&mut self, line: &[u8], out: &mut Vec<u8>) {
        match parse_request(line) {
            Ok(Request::Exec(exec)) => self.exec(exec, out).await,
            Ok(Request::OpenIndex(req)) => {
                self.flush(out).await;
                self.open_index(req, out).await;
            }
            Ok(Request::Auth(req)) => {
                self.flush(out).await;
                self.auth(&req, out);
            }
            Err(e) => {
                self.flush(out).await;
                self.answer_error("invalid", e.0, out);
            }
        }
    }

    fn answer_error(&self, command: &str, kind: ErrorKind, out: &mut Vec<u8>) {
        let mut w = ResponseWriter::new();
        w.error(kind);
        out.extend_from_slice(w.as_bytes());
        self.ctx
            .metrics
            .requests
            .with_label_values(&[command, kind.label()])
            .inc();
    }

    fn auth(&mut self, req: &AuthRequest, out: &mut Vec<u8>) {
        if req.auth_type != b"1" {
            return self.answer_error("auth", ErrorKind::AuthType, out);
        }
        let ok = match &self.ctx.secret {
            Some(secret) => bool::from(secret.as_slice().ct_eq(req.secret.as_slice())),
            None => true,
        };
        self.authenticated = ok;
        if ok {
            out.extend_from_slice(b"0\t1\n");
            self.ctx
                .metrics
                .requests
                .with_label_values(&["auth", "ok"])
                .inc();
        } else {
            self.answer_error("auth", ErrorKind::Unauth, out);
        }
    }

    async fn open_index(&mut self, req: OpenIndexRequest, out: &mut Vec<u8>) {
        if !self.authenticated {
            return self.answer_error("open_index", ErrorKind::Unauth, out);
        }
        let id = req.index_id;
        let (reply, rx) = oneshot::channel();
        let result = if self.ctx.reads.send(ReadJob::Open { req, reply }).is_err() {
            Err(ErrorKind::OpenTable)
        } else {
            rx.await.unwrap_or(Err(ErrorKind::OpenTable))
        };
        match result.and_then(|index| self.indexes.set(id, index)) {
            Ok(()) => {
                out.extend_from_slice(b"0\t1\n");
                self.ctx
                    .metrics
                    .requests
                    .with_label_values(&["open_index", "ok"])
                    .inc();
            }
            Err(kind) => self.answer_error("open_index", kind, out),
        }
    }

    async fn exec(&mut self, req: ExecRequest, out: &mut Vec<u8>) {
        if !self.authenticated {
            self.flush(out).await;
            return self.answer_error("exec", ErrorKind::Unauth, out);
        }
        let Some(index) = self.indexes.get(req.index_id).cloned() else {
            self.flush(out).await;
            return self.answer_error("exec", ErrorKind::StmtNum, out);
        };
        let op = match req.operation {
            Ok(op) => op,
            Err(e) => {
                self.flush(out).await;
                return self.answer_error("exec", e.0, out);
            }
        };
        let write = match op {
            IndexOperation::Find(find) if find.modify.is_none() => {
                if matches!(self.pending, Pending::Writes(_)) {
                    self.flush(out).await;
                }
                self.pending_since.get_or_insert_with(Instant::now);
                self.pending_rows += u64::from(find.limit);
                match &mut self.pending {
                    Pending::Reads(tasks) => tasks.push(ReadTask::new(index, find)),
                    _ => self.pending = Pending::Reads(vec![ReadTask::new(index, find)]),
                }
                if self.pending_rows >= MAX_PENDING_ROWS {
                    self.flush(out).await;
                }
                return;
            }
            IndexOperation::Find(find) => WriteOp::Modify(find),
            IndexOperation::Insert(ins) => WriteOp::Insert(ins),
        };
        if self.ctx.kind == PortKind::Read {
            self.flush(out).await;
            return self.answer_error("write", ErrorKind::ReadOnly, out);
        }
        if matches!(self.pending, Pending::Reads(_)) {
            self.flush(out).await;
        }
        self.pending_since.get_or_insert_with(Instant::now);
        self.pending_rows += match &write {
            WriteOp::Modify(find) => u64::from(find.limit),
            WriteOp::Insert(_) => 1,
        };
        match &mut self.pending {
            Pending::Writes(tasks) => tasks.push(WriteTask::new(index, write)),
            _ => self.pending = Pending::Writes(vec![WriteTask::new(index, write)]),
        }
        if self.pending_rows >= MAX_PENDING_ROWS {
            self.flush(out).await;
        }
    }

    /// Runs the pending batch and appends its responses, in order.
    pub async fn flush(&mut self, out: &mut Vec<u8>) {
        let started = self.pending_since.take();
        self.pending_rows = 0;
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::None => {}
            Pending::Reads(tasks) => {
                let n = tasks.len();
                let tasks = match &self.ctx.inline_reads {
                    Some(backend) if inline_rows(&tasks) <= workers::INLINE_MAX_ROWS => {
                        match workers::run_reads_inline(backend, tasks) {
                            Ok(done) => {
                                self.collect(
                                    "find",
                                    n,
                                    Some(done.into_iter().map(|t| t.out)),
                                    out,
                                    started,
                                );
                                return;
                            }
                            Err(tasks) => tasks,
                        }
                    }
                    _ => tasks,
                };
                let (reply, rx) = oneshot::channel();
                let done = match self.ctx.reads.send(ReadJob::Finds { tasks, reply }) {
                    Ok(()) => rx.await.ok(),
                    Err(_) => None,
                };
                self.collect(
                    "find",
                    n,
                    done.map(|t| t.into_iter().map(|t| t.out)),
                    out,
                    started,
                );
            }
            Pending::Writes(tasks) => {
                let n = tasks.len();
                let (reply, rx) = oneshot::channel();
                let done = match self.ctx.writes.send(WriteJob { tasks, reply }) {
                    Ok(()) => rx.await.ok(),
                    Err(_) => None,
                };
                self.collect(
                    "write",
                    n,
                    done.map(|t| t.into_iter().map(|t| t.out)),
                    out,
                    started,
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn collect(
        &self,
        command: &str,
        n: usize,
        done: Option<impl Iterator<Item = ResponseWriter>>,
        out: &mut Vec<u8>,
        started: Option<Instant>,
    ) {
        let elapsed = started.map(|s| s.elapsed().as_secs_f64());
        match done {
            Some(responses) => {
                let m = &self.ctx.metrics;
                let (ok, err) = match command {
                    "find" => (&m.find_ok, &m.find_error),
                    _ => (&m.write_ok, &m.write_error),
                };
                for r in responses {
                    if r.as_bytes().first() == Some(&b'0') {
                        ok.inc();
                    } else {
                        err.inc();
                    }
                    if let Some(e) = elapsed {
                        m.latency.observe(e);
                    }
                    out.extend_from_slice(r.as_bytes());
                }
            }
            None => {
                // The workers are gone (shutting down): answer every request.
                for _ in 0..n {
                    self.answer_error(
                        command,
                        ErrorKind::Storage(crate::backend::ERR_UNAVAILABLE),
                        out,
                    );
                }
            }
        }
    }
}

/// Rows a batch of finds may touch at most: what decides whether it is short
/// enough to run inline.
fn inline_rows(tasks: &[ReadTask]) -> u64 {
    tasks
        .iter()
        .map(|t| {
            let per_scan = u64::from(t.req.limit) + u64::from(t.req.offset);
            let scans = t
                .req
                .in_clause
                .as_ref()
                .map_or(1, |i| i.values.len() as u64);
            // W filters may read one row past the last taken; F filters may skip many.
            let filtered = if t.req.filters.is_empty() { 1 } else { 8 };
            per_scan.saturating_mul(scans).saturating_mul(filtered)
        })
        .fold(0u64, u64::saturating_add)
}
