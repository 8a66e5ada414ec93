//! One client connection's protocol state: which port it came in on, whether
//! it authenticated, which indexes it opened, and the requests it sent that
//! wait to run. Consecutive finds travel to storage as one batch,
//! consecutive writes as another, so pipelined requests are grouped while
//! the connection's order is kept; short finds pipelined behind writes on
//! the write port join the writes' batch and run in their group, after
//! them and inside their transaction (`WriteOp::Find`), so that a pipeline
//! of writes and reads is one group and one commit, as on the original.
//! Where a batch runs is the dispatcher's business (`dispatch`).

use crate::connection::{Close, Decoded, Door, Refused};
use crate::dispatch::Dispatcher;
use crate::exec::{is_short, Answer, ReadTask, WriteOp, WriteTask};
use crate::hs_answer;
use crate::port::{Port, PortKind};
use hs_proto::{
    parse_request, AuthRequest, ErrorKind, ExecRequest, IndexOperation, OpenIndexRequest, Request,
    ResponseWriter, MAX_INDEX_ID,
};
use hsd_storage::{Backend, OpenedIndex};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// Opened indexes by id: a vector for the small ids clients use, a bounded
/// map beyond, so a hostile id cannot make us allocate.
///
/// Like the original's per-connection table, it has as many slots as the
/// highest id opened so far plus one: an id beyond them answers `stmtnum`
/// before anything else in the line is looked at, an id within them that
/// holds nothing only after the line's parse errors.
#[derive(Default)]
struct IndexTable {
    small: Vec<Option<Arc<OpenedIndex>>>,
    large: HashMap<u32, Arc<OpenedIndex>>,
    /// Highest id opened + 1.
    slots: u64,
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

    fn has_slot(&self, id: u32) -> bool {
        u64::from(id) < self.slots
    }

    fn set(&mut self, id: u32, index: Arc<OpenedIndex>) -> Result<(), ErrorKind> {
        self.slots = self.slots.max(u64::from(id) + 1);
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

/// Requests read but not run yet, which travel to storage together: all
/// finds or all writes.
enum Batch {
    Reads(Vec<ReadTask<ResponseWriter>>),
    Writes(Vec<WriteTask>),
}

pub(crate) struct Session<B: Backend> {
    port: Rc<Port>,
    dispatcher: Rc<Dispatcher<B, ResponseWriter>>,
    /// Set by a successful `A`, cleared by a failed one; only consulted when
    /// the port has a secret.
    authorized: bool,
    indexes: IndexTable,
    pending: Option<Batch>,
    pending_since: Option<Instant>,
    /// Rows the pending batch may answer with (sum of its limits).
    pending_rows: u64,
    /// Failed `A` on a port with a secret.
    auth_failures: u32,
    /// Bytes at the start of the unconsumed input known to hold no LF
    /// (`Door::decode` does not search them again after a short read).
    scanned: usize,
}

/// A connection that fails `A` this many times (on a port with a secret)
/// is closed after the last answer: guessing takes a new connection every
/// few tries. The answers themselves are the original's.
pub const MAX_AUTH_FAILURES: u32 = 8;

/// Most filters one find or modify may carry. The original took any
/// number; each is an SQL expression evaluated on every row read, so hsd
/// answers `2 1 filterfld` beyond this (docs/protocol.md, hsd's limits).
pub(crate) const MAX_FILTERS: usize = 128;

/// A pending batch runs once its requests may answer with this many rows,
/// so pipelined scans cannot pile up answers far bigger than the requests.
const MAX_PENDING_ROWS: u64 = 4096;
/// A pending batch of finds runs once it holds this many requests, so one
/// client's long pipeline goes to storage in pieces and others' requests
/// get turns.
const MAX_PENDING_REQUESTS: usize = 128;
/// A pending batch of writes may hold more: it is one group (and one
/// commit, one fsync) however many it holds, and other connections' writes
/// join that group instead of waiting behind it. So a pipeline commits once
/// per read of the socket, as on the original, not once per 128 requests.
/// As many as a group takes.
const MAX_PENDING_WRITES: usize = crate::group_commit::MAX_GROUP_WRITES;

impl<B: Backend> Session<B> {
    pub(crate) fn new(port: Rc<Port>, dispatcher: Rc<Dispatcher<B, ResponseWriter>>) -> Self {
        Session {
            port,
            dispatcher,
            authorized: false,
            indexes: IndexTable::default(),
            pending: None,
            pending_since: None,
            pending_rows: 0,
            auth_failures: 0,
            scanned: 0,
        }
    }

    /// Whether the connection must be closed once its answers are sent
    /// (too many failed `A`, see `MAX_AUTH_FAILURES`).
    pub(crate) fn must_close(&self) -> bool {
        self.auth_failures >= MAX_AUTH_FAILURES
    }

    /// Whether requests other than `A` may run: always on a port without
    /// a secret, after a successful `A` on one with.
    pub(crate) fn is_authenticated(&self) -> bool {
        !self.port.has_secret() || self.authorized
    }

    /// Handles one request line (LF and tolerated CR already removed). Its
    /// response is appended to `out` now or when the pending batch flushes.
    pub(crate) async fn handle_line(&mut self, line: &[u8], out: &mut Vec<u8>) {
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
        hs_answer::push_error(out, kind);
        self.dispatcher
            .metrics()
            .requests
            .with_label_values(&[command, kind.label()])
            .inc();
    }

    /// `A <type> <secret>`: only type `1`; the secret must be the port's,
    /// byte for byte (an empty one on a port without a secret, where any
    /// other answers `unauth` as on the original). A failure clears an
    /// earlier success.
    fn auth(&mut self, req: &AuthRequest, out: &mut Vec<u8>) {
        if req.auth_type != b"1" {
            return self.answer_error("auth", ErrorKind::AuthType, out);
        }
        let ok = self.port.secret_matches(&req.secret);
        self.authorized = ok;
        if !ok && self.port.has_secret() {
            self.auth_failures += 1;
        }
        if ok {
            out.extend_from_slice(hs_answer::OK_LINE);
            self.dispatcher
                .metrics()
                .requests
                .with_label_values(&["auth", "ok"])
                .inc();
        } else {
            self.answer_error("auth", ErrorKind::Unauth, out);
        }
    }

    async fn open_index(&mut self, req: OpenIndexRequest, out: &mut Vec<u8>) {
        if !self.is_authenticated() {
            return self.answer_error("open_index", ErrorKind::Unauth, out);
        }
        let id = req.index_id;
        if id > MAX_INDEX_ID {
            // Documented exception `index_id_above_65535`.
            return self.answer_error("open_index", ErrorKind::StmtNum, out);
        }
        let result = self.dispatcher.open(req).await;
        match result.and_then(|index| self.indexes.set(id, index)) {
            Ok(()) => {
                out.extend_from_slice(hs_answer::OK_LINE);
                self.dispatcher
                    .metrics()
                    .requests
                    .with_label_values(&["open_index", "ok"])
                    .inc();
            }
            Err(kind) => self.answer_error("open_index", kind, out),
        }
    }

    /// A find, modify or insert line, checked in the original's order:
    /// `stmtnum` for an id beyond the table, the parse errors, `stmtnum` for
    /// an empty slot, `op`, `klen`, then `readonly`/`modop` (and, when it
    /// runs, `kpnum` and `filterblob`).
    async fn exec(&mut self, req: ExecRequest, out: &mut Vec<u8>) {
        if !self.is_authenticated() {
            self.flush(out).await;
            return self.answer_error("exec", ErrorKind::Unauth, out);
        }
        if !self.indexes.has_slot(req.index_id) {
            self.flush(out).await;
            return self.answer_error("exec", ErrorKind::StmtNum, out);
        }
        let index = self.indexes.get(req.index_id).cloned();
        let filter_columns = index.as_ref().map_or(0, |i| i.filter_columns.len());
        if let Some(kind) = req.parse_error(filter_columns) {
            self.flush(out).await;
            return self.answer_error("exec", kind, out);
        }
        let Some(index) = index else {
            self.flush(out).await;
            return self.answer_error("exec", ErrorKind::StmtNum, out);
        };
        if req.filters.len() > MAX_FILTERS {
            self.flush(out).await;
            return self.answer_error("exec", ErrorKind::FilterFld, out);
        }
        let op = match req.operation() {
            Ok(op) => op,
            Err(kind) => {
                self.flush(out).await;
                return self.answer_error("exec", kind, out);
            }
        };
        let read_port = self.port.kind == PortKind::Read;
        let refused = |kind| (0, Err(kind));
        let (rows, request) = match op {
            IndexOperation::Sql => refused(ErrorKind::NotImpl),
            IndexOperation::Insert(_) if read_port => refused(ErrorKind::ReadOnly),
            IndexOperation::Insert(ins) => (
                1,
                Ok(Batch::Writes(vec![WriteTask {
                    index,
                    op: WriteOp::Insert(ins),
                }])),
            ),
            IndexOperation::Find(find) => match &find.modify {
                None => (
                    find.effective_limit(),
                    Ok(Batch::Reads(vec![ReadTask::new(index, find)])),
                ),
                Some(_) if read_port => refused(ErrorKind::ReadOnly),
                Some(m) if m.op.is_none() => refused(ErrorKind::ModOp),
                Some(_) => (
                    find.effective_limit(),
                    Ok(Batch::Writes(vec![WriteTask {
                        index,
                        op: WriteOp::Modify(find),
                    }])),
                ),
            },
        };
        let request = match request {
            Ok(request) => request,
            Err(kind) => {
                self.flush(out).await;
                return self.answer_error("exec", kind, out);
            }
        };
        self.queue(request, rows, out).await;
    }

    /// Adds a request to the pending batch (running the batch first when
    /// it is of the other kind), and runs the batch once it is big enough.
    async fn queue(&mut self, request: Batch, rows: u32, out: &mut Vec<u8>) {
        let apart = match (&mut self.pending, request) {
            (Some(Batch::Reads(tasks)), Batch::Reads(mut more)) => {
                tasks.append(&mut more);
                None
            }
            (Some(Batch::Writes(tasks)), Batch::Writes(mut more)) => {
                tasks.append(&mut more);
                None
            }
            // Short finds behind writes: in the writes' group, after them.
            (Some(Batch::Writes(tasks)), Batch::Reads(more)) if more.iter().all(is_short) => {
                tasks.extend(more.into_iter().map(|t| WriteTask {
                    index: t.index,
                    op: WriteOp::Find(t.req),
                }));
                None
            }
            (_, request) => Some(request),
        };
        if let Some(request) = apart {
            self.flush(out).await;
            self.pending = Some(request);
        }
        self.pending_since.get_or_insert_with(Instant::now);
        self.pending_rows += u64::from(rows);
        let full = match &self.pending {
            Some(Batch::Reads(tasks)) => tasks.len() >= MAX_PENDING_REQUESTS,
            Some(Batch::Writes(tasks)) => tasks.len() >= MAX_PENDING_WRITES,
            None => false,
        };
        if self.pending_rows >= MAX_PENDING_ROWS || full {
            self.flush(out).await;
        }
    }

    /// Runs the pending batch and appends its responses, in order.
    pub(crate) async fn flush(&mut self, out: &mut Vec<u8>) {
        let started = self.pending_since.take();
        self.pending_rows = 0;
        match self.pending.take() {
            None => {}
            Some(Batch::Reads(tasks)) => {
                let answers = self.dispatcher.reads(tasks).await;
                self.collect(|_| true, &answers, out, started);
            }
            Some(Batch::Writes(tasks)) => {
                let finds: Vec<bool> = tasks
                    .iter()
                    .map(|t| matches!(t.op, WriteOp::Find(_)))
                    .collect();
                let answers = self.dispatcher.writes(tasks).await;
                self.collect(|i| finds.get(i) == Some(&true), &answers, out, started);
            }
        }
    }

    /// Appends the answers; `find(i)`: answer `i` is a find's (metrics).
    fn collect(
        &self,
        find: impl Fn(usize) -> bool,
        answers: &[ResponseWriter],
        out: &mut Vec<u8>,
        started: Option<Instant>,
    ) {
        let elapsed = started.map(|s| s.elapsed().as_secs_f64());
        let m = self.dispatcher.metrics();
        for (i, r) in answers.iter().enumerate() {
            let (ok, err) = if find(i) {
                (&m.find_ok, &m.find_error)
            } else {
                (&m.write_ok, &m.write_error)
            };
            if r.is_failure() {
                err.inc();
            } else {
                ok.inc();
            }
            if let Some(e) = elapsed {
                m.latency.observe(e);
            }
            out.extend_from_slice(r.as_bytes());
        }
    }
}

/// HandlerSocket's door: a request is a line (LF, a CR before it
/// tolerated), as long as the port's `max_line`.
impl<B: Backend> Door for Session<B> {
    type Request<'a> = &'a [u8];

    fn max_pending(&self) -> usize {
        self.port.limits.max_line
    }

    fn decode<'a>(&mut self, input: &'a [u8]) -> Decoded<&'a [u8], Refused> {
        let from = self.scanned.min(input.len());
        match memchr::memchr(b'\n', &input[from..]) {
            Some(pos) => {
                self.scanned = 0;
                let end = from + pos;
                let line = &input[..end];
                Decoded::Request {
                    request: line.strip_suffix(b"\r").unwrap_or(line),
                    consumed: end + 1,
                }
            }
            None => {
                self.scanned = input.len();
                Decoded::Incomplete
            }
        }
    }

    async fn handle<'a>(
        &mut self,
        line: &'a [u8],
        _rest: &'a [u8],
        out: &mut Vec<u8>,
    ) -> Result<usize, Close> {
        Session::handle_line(self, line, out).await;
        if self.must_close() {
            return Err(Close::AuthFailures);
        }
        Ok(0)
    }

    async fn flush(&mut self, out: &mut Vec<u8>) {
        Session::flush(self, out).await;
    }

    fn is_authenticated(&self) -> bool {
        Session::is_authenticated(self)
    }
}
