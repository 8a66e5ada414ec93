//! A client connection of either door (HandlerSocket, memcached): bytes in,
//! requests out to the door's session, answer bytes back. Reads whatever
//! is available, runs every complete request it holds, answers them with
//! one write, and only then reads again, so a client that never reads its
//! answers stops being read from (TCP pushes back) instead of making hsd
//! buffer without bound. A door (`Door`) says how requests are framed and
//! runs them; everything else is this loop's, the same for both doors.
//!
//! What one client may hold is bounded: its input buffer beyond a small
//! allowance is charged to a budget shared by all connections, and so are
//! answers it is not reading (`MemoryBudget`; a connection that needs more
//! than is left is closed); an unfinished request must be completed within
//! the line timeout and may not outgrow the door's limit; a door that asks
//! for authentication must get it within the auth timeout; and a
//! connection takes one of the --max-connections seats only with its first
//! request after authentication (`admission`). A door may close the
//! connection after an answer (HandlerSocket: too many failed `A`,
//! `session::MAX_AUTH_FAILURES`; memcached: `quit`).

use crate::admission::Place;
use crate::limits::{ConnectionLimits, MemoryBudget};
use crate::shutdown::Shutdown;
// The one shape both doors decode into (mc-proto's decoders return it).
pub(crate) use mc_proto::Decoded;
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

/// A request a door refused as it decoded it: its answer (maybe none), and
/// why the connection closes after it, if it does.
pub(crate) struct Refused {
    pub(crate) answer: Vec<u8>,
    pub(crate) close: Option<Close>,
}

/// A protocol's side of a connection: it finds requests in the input and
/// runs them; the loop (`serve`) owns the socket, the buffers and their
/// budgets, the deadlines, the seat and shutdown.
#[allow(async_fn_in_trait)]
pub(crate) trait Door {
    /// One request, borrowed from the input.
    type Request<'a>;

    /// How long an unfinished request may grow before the connection is
    /// closed (`Close::LineTooLong`).
    fn max_pending(&self) -> usize;

    /// What the start of `input` holds (the unconsumed bytes, from the
    /// first one not yet taken).
    fn decode<'a>(&mut self, input: &'a [u8]) -> Decoded<Self::Request<'a>, Refused>;

    /// Runs one request; its answer is appended to `out` now or at a later
    /// `flush`. `rest` is the input after it: the door may take requests
    /// from its start to run with this one (memcached's pipelined gets)
    /// and says how many bytes it took, or why the connection closes once
    /// its answers are written.
    async fn handle<'a>(
        &mut self,
        request: Self::Request<'a>,
        rest: &'a [u8],
        out: &mut Vec<u8>,
    ) -> Result<usize, Close>;

    /// Runs the requests still pending; their answers go to `out`.
    async fn flush(&mut self, out: &mut Vec<u8>);

    /// Whether requests may run (for the auth timeout and the seat).
    fn is_authenticated(&self) -> bool;
}

pub(crate) async fn serve<S, D>(
    mut stream: S,
    mut door: D,
    limits: ConnectionLimits,
    mut place: Place,
    shutdown: Shutdown,
) -> Close
where
    S: AsyncRead + AsyncWrite + Unpin,
    D: Door,
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
        let (due, why) = next_deadline(&limits, &door, opened, last_read, partial_since, never);
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
        loop {
            match door.decode(&input.buf[start..]) {
                Decoded::Incomplete => break,
                Decoded::Skipped(n) => start += n,
                Decoded::Error { error, consumed } => {
                    out.extend_from_slice(&error.answer);
                    start += consumed;
                    if let Some(why) = error.close {
                        let _ = writer.write(&mut stream, &mut out).await;
                        return why;
                    }
                }
                Decoded::Request { request, consumed } => {
                    // The first request (after authentication, if the door
                    // asks for it) needs a seat; nothing has run before it.
                    if !place.is_seated() && door.is_authenticated() && !place.take_seat() {
                        return Close::NoSeat;
                    }
                    let rest = &input.buf[start + consumed..];
                    start += consumed;
                    match door.handle(request, rest, &mut out).await {
                        Ok(taken) => start += taken,
                        Err(why) => {
                            door.flush(&mut out).await;
                            let _ = writer.write(&mut stream, &mut out).await;
                            return why;
                        }
                    }
                }
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
        door.flush(&mut out).await;
        input.consumed(start);
        partial_since = match (input.buf.is_empty(), start > 0) {
            (true, _) => None,
            // A new unfinished line began with this read.
            (false, true) => Some(last_read),
            (false, false) => partial_since.or(Some(last_read)),
        };
        if input.buf.len() > door.max_pending() {
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
fn next_deadline<D: Door>(
    limits: &ConnectionLimits,
    door: &D,
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
    if let (Some(t), false) = (limits.auth_timeout, door.is_authenticated()) {
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
