//! A client connection: bytes in, request lines out to the session, response
//! bytes back. Reads whatever is available, answers every complete line it
//! holds with one write, and only then reads again, so a client that never
//! reads its responses stops being read from (TCP pushes back) instead of
//! making hsd buffer without bound.
//!
//! What one client may hold is bounded: its input buffer beyond a small
//! allowance is charged to a budget shared by all connections, and so are
//! answers it is not reading (`MemoryBudget`; a connection that needs more
//! than is left is closed); an unfinished line must be completed within the
//! line timeout; a port with a secret must be authenticated within the auth
//! timeout; and a connection takes one of the --max-connections seats only
//! with its first request (`admission`). A connection that keeps failing
//! `A` is closed (`session::MAX_AUTH_FAILURES`).

use crate::admission::Place;
use crate::limits::{ConnectionLimits, MemoryBudget};
use crate::shutdown::Shutdown;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// What each connection's input buffer may hold without charging the budget.
pub(crate) const INPUT_ALLOWANCE: usize = 16 * 1024;
const READ_CHUNK: usize = 8 * 1024;
/// Answers buffered beyond this are written before more lines are handled.
const OUT_HIGH_WATER: usize = 256 * 1024;

/// Why a connection ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Close {
    PeerClosed,
    Idle,
    LineTooLong,
    /// A line was not completed within the line timeout.
    LineTimeout,
    /// Not authenticated within the auth timeout.
    AuthTimeout,
    /// The input or output budget is spent.
    OverBudget,
    /// A newcomer pushed out to make room for a newer one.
    PushedOut,
    /// Every seat was taken when it made its first request.
    NoSeat,
    /// Too many failed `A` (answered, then closed).
    AuthFailures,
    Shutdown,
    Io,
}

/// The input buffer, with its charge to the budget.
struct Input {
    buf: Vec<u8>,
    charged: usize,
    budget: Arc<MemoryBudget>,
}

impl Input {
    /// Makes room for a read; `false` when the budget cannot pay for it.
    fn reserve(&mut self) -> bool {
        if self.buf.capacity() - self.buf.len() >= READ_CHUNK / 4 {
            return true;
        }
        let wanted = (self.buf.len() + READ_CHUNK).next_power_of_two();
        let charge = wanted.saturating_sub(INPUT_ALLOWANCE);
        if charge > self.charged {
            if !self.budget.take(charge - self.charged) {
                return false;
            }
            self.charged = charge;
        }
        self.buf.reserve_exact(wanted - self.buf.len());
        true
    }

    /// Drops consumed bytes; gives memory back once the buffer is small.
    fn consumed(&mut self, n: usize) {
        self.buf.drain(..n);
        if self.buf.capacity() > INPUT_ALLOWANCE && self.buf.len() < READ_CHUNK {
            self.buf.shrink_to(READ_CHUNK.max(self.buf.len()));
            let charge = self.buf.capacity().saturating_sub(INPUT_ALLOWANCE);
            if charge < self.charged {
                self.budget.give_back(self.charged - charge);
                self.charged = charge;
            }
        }
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.budget.give_back(self.charged);
    }
}

/// What a connection hands its request lines to: the session.
#[allow(async_fn_in_trait)]
pub(crate) trait LineHandler {
    /// Handles one request line (LF and a tolerated CR removed); its answer
    /// is appended to `out` now or at a later `flush`.
    async fn handle_line(&mut self, line: &[u8], out: &mut Vec<u8>);
    /// Runs the requests still pending; their answers go to `out`.
    async fn flush(&mut self, out: &mut Vec<u8>);
    /// Whether requests may run (for the auth timeout and the seat).
    fn is_authenticated(&self) -> bool;
    /// Whether the connection must close once its answers are sent.
    fn must_close(&self) -> bool;
}

pub(crate) async fn serve<S, L>(
    mut stream: S,
    mut session: L,
    limits: ConnectionLimits,
    mut place: Place,
    shutdown: Shutdown,
) -> Close
where
    S: AsyncRead + AsyncWrite + Unpin,
    L: LineHandler,
{
    let mut input = Input {
        buf: Vec::with_capacity(READ_CHUNK),
        charged: 0,
        budget: limits.input_budget.clone(),
    };
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let writer = Writer {
        idle: limits.idle_timeout,
        budget: &limits.output_budget,
    };
    // Bytes of the input already searched for LF without finding one.
    let mut searched = 0;
    let opened = Instant::now();
    let mut last_read = opened;
    // Since when an unfinished line has been pending.
    let mut partial_since: Option<Instant> = None;
    // One timer for every deadline. It is moved only when a deadline comes
    // nearer; when one moves away (every read pushes the idle deadline) the
    // timer fires early once and is set again, which costs far less than
    // moving it on every read.
    let never = Instant::now() + Duration::from_secs(86_400 * 365);
    let deadline = tokio::time::sleep_until(never);
    tokio::pin!(deadline);
    // Waited on for the connection's whole life, not made anew per read: a
    // waiter registers once.
    let mut watcher = shutdown.clone();
    let stopping = watcher.recv();
    tokio::pin!(stopping);
    loop {
        if shutdown.is_triggered() {
            return Close::Shutdown;
        }
        if !input.reserve() {
            tracing::debug!(
                len = input.buf.len(),
                "input budget spent; closing a connection with an unfinished line"
            );
            return Close::OverBudget;
        }
        let (due, why) = next_deadline(&limits, &session, opened, last_read, partial_since, never);
        if due < deadline.deadline() || deadline.is_elapsed() {
            deadline.as_mut().reset(due);
        }
        // The read first: it is ready whenever a client's request woke
        // the task, and then nothing else is polled.
        let read = tokio::select! {
            biased;
            r = stream.read_buf(&mut input.buf) => r,
            _ = &mut stopping => return Close::Shutdown,
            _ = &mut deadline => {
                if Instant::now() >= due {
                    return why;
                }
                continue;
            }
            _ = place.pushed_out(), if !place.is_seated() => return Close::PushedOut,
        };
        match read {
            Ok(0) => return Close::PeerClosed,
            Ok(_) => {}
            Err(_) => return Close::Io,
        }
        last_read = Instant::now();
        let mut start = 0;
        let mut from = searched;
        while let Some(pos) = memchr::memchr(b'\n', &input.buf[from..]) {
            let end = from + pos;
            let mut line = &input.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            // The first request (after authentication, if the port has a
            // secret) needs a seat; nothing has run before it.
            if !place.is_seated() && session.is_authenticated() && !place.take_seat() {
                return Close::NoSeat;
            }
            session.handle_line(line, &mut out).await;
            start = end + 1;
            from = start;
            if session.must_close() {
                session.flush(&mut out).await;
                let _ = writer.write(&mut stream, &mut out).await;
                return Close::AuthFailures;
            }
            // Answers to a long pipelined chunk can be far bigger than the
            // chunk: send them as they pile up, so a client that does not
            // read blocks us here instead of making us buffer them all.
            if out.len() >= OUT_HIGH_WATER {
                if let Err(why) = writer.write(&mut stream, &mut out).await {
                    return why;
                }
                out.clear();
            }
        }
        session.flush(&mut out).await;
        input.consumed(start);
        searched = input.buf.len();
        partial_since = match (input.buf.is_empty(), start > 0) {
            (true, _) => None,
            // A new unfinished line began with this read.
            (false, true) => Some(last_read),
            (false, false) => partial_since.or(Some(last_read)),
        };
        if input.buf.len() > limits.max_line {
            tracing::debug!(
                len = input.buf.len(),
                "request line over the size limit; closing"
            );
            let _ = writer.write(&mut stream, &mut out).await;
            return Close::LineTooLong;
        }
        if !out.is_empty() {
            if let Err(why) = writer.write(&mut stream, &mut out).await {
                return why;
            }
            out.clear();
            // Do not keep a huge buffer around after one huge response.
            if out.capacity() > 4 * READ_CHUNK {
                out = Vec::with_capacity(READ_CHUNK);
            }
        }
    }
}

/// The earliest deadline that applies now, and what passing it means.
fn next_deadline<L: LineHandler>(
    limits: &ConnectionLimits,
    session: &L,
    opened: Instant,
    last_read: Instant,
    partial_since: Option<Instant>,
    never: Instant,
) -> (Instant, Close) {
    let mut due = (never, Close::Idle);
    let mut consider = |at: Instant, why: Close| {
        if at < due.0 {
            due = (at, why);
        }
    };
    if let Some(t) = limits.idle_timeout {
        consider(last_read + t, Close::Idle);
    }
    if let (Some(t), Some(since)) = (limits.line_timeout, partial_since) {
        consider(since + t, Close::LineTimeout);
    }
    if let (Some(t), false) = (limits.auth_timeout, session.is_authenticated()) {
        consider(opened + t, Close::AuthTimeout);
    }
    due
}

/// Writes answers. What the kernel takes at once costs nothing; what must
/// wait for the client to read is charged to the output budget until it is
/// sent, and a client that reads nothing for the idle timeout is closed
/// like an idle one, so it cannot hold its slot or its answers forever.
struct Writer<'a> {
    idle: Option<Duration>,
    budget: &'a MemoryBudget,
}

impl Writer<'_> {
    async fn write<S: AsyncWrite + Unpin>(
        &self,
        stream: &mut S,
        out: &mut Vec<u8>,
    ) -> Result<(), Close> {
        let mut sent = 0;
        while sent < out.len() {
            // One attempt without waiting: `biased` polls the write first.
            let attempt = tokio::select! {
                biased;
                r = stream.write(&out[sent..]) => Some(r),
                _ = std::future::ready(()) => None,
            };
            match attempt {
                Some(Ok(0)) | Some(Err(_)) => return Err(Close::Io),
                Some(Ok(n)) => sent += n,
                None => break,
            }
        }
        if sent < out.len() {
            // What waits is the whole buffer: shed its spare capacity (for
            // a large buffer a remap, not a copy) and charge the rest.
            out.shrink_to_fit();
            let waiting = out.capacity();
            if !self.budget.take(waiting) {
                tracing::debug!(
                    waiting,
                    "output budget spent; closing a connection that is not reading its answers"
                );
                return Err(Close::OverBudget);
            }
            let result = self.timed(stream.write_all(&out[sent..])).await;
            self.budget.give_back(waiting);
            result?;
        }
        // Pushes out whatever a TLS layer still holds; nothing for plain TCP.
        self.timed(stream.flush()).await
    }

    async fn timed(
        &self,
        io: impl std::future::Future<Output = std::io::Result<()>>,
    ) -> Result<(), Close> {
        match self.idle {
            Some(t) => match tokio::time::timeout(t, io).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(_)) => Err(Close::Io),
                Err(_) => Err(Close::Idle),
            },
            None => io.await.map_err(|_| Close::Io),
        }
    }
}
