//! A memcached connection's framing: bytes in, commands (mc-proto's
//! `TextDecoder`: lines and data blocks) to the session, answers out in one
//! write per read, as `crate::connection` does for HandlerSocket lines and
//! with the same bounds: the input beyond a small allowance is charged to
//! the shared input budget, answers a client does not read to the output
//! budget, an unfinished request must be completed within the line timeout,
//! an idle connection is closed after the idle timeout, and a newcomer
//! takes a seat with its first command (`admission`). The first byte picks
//! the protocol (0x80: binary, as in memcached). With SASL only the binary
//! protocol is served: a connection whose first byte is not 0x80 is closed
//! without an answer, and one that has not authenticated within the auth
//! timeout is closed. One request is at
//! most a multi-get line or a storage line with its data block
//! (`--memcached-max-item-size`).

use super::gets::{plain_get_keys, MAX_BATCHED_KEYS};
use super::session::{Flow, McSession, Request};
use crate::admission::Place;
use crate::connection::{Close, INPUT_ALLOWANCE};
use crate::limits::ConnectionLimits;
use crate::shutdown::Shutdown;
use hsd_storage::Backend;
use mc_proto::{BinaryDecoder, Decoded, Protocol, Refusal, TextDecoder, TextLimits};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

const READ_CHUNK: usize = 16 * 1024;
/// Answers buffered beyond this are written before more commands run.
const OUT_HIGH_WATER: usize = 256 * 1024;

/// The connection's decoder, as its first byte chose.
#[derive(Clone)]
enum Framing {
    Text(TextDecoder),
    Binary(BinaryDecoder),
}

/// A refusal of either protocol: its answer, and whether it closes.
struct Refused {
    answer: Vec<u8>,
    close: bool,
}

fn refused(error: impl Refusal) -> Refused {
    let mut answer = Vec::new();
    error.encode(&mut answer);
    Refused {
        answer,
        close: error.closes(),
    }
}

impl Framing {
    /// What the start of `buf` holds, in the same terms for both protocols.
    fn next<'a>(&mut self, buf: &'a [u8]) -> Decoded<Request<'a>, Refused> {
        match self {
            Framing::Text(decoder) => decoder.decode(buf).map(Request::Text, refused),
            Framing::Binary(decoder) => decoder.decode(buf).map(Request::Binary, refused),
        }
    }
}

/// The plain gets that follow in `buf` (while the batch holds at most
/// `MAX_BATCHED_KEYS` keys with the `keys` it has), and the bytes they
/// take. Looked at with a copy of the decoder: a request that is not a
/// plain get, or a refusal, is left for the decoder itself.
fn pipelined_gets<'a>(
    framing: &Framing,
    buf: &'a [u8],
    mut keys: usize,
) -> (Vec<Request<'a>>, usize) {
    let mut probe = framing.clone();
    let (mut gets, mut used) = (Vec::new(), 0);
    while let Decoded::Request { request, consumed } = probe.next(&buf[used..]) {
        match plain_get_keys(&request) {
            Some(n) if keys + n <= MAX_BATCHED_KEYS => {
                keys += n;
                used += consumed;
                gets.push(request);
            }
            _ => break,
        }
    }
    (gets, used)
}

pub(crate) async fn serve<S, B>(
    mut stream: S,
    mut session: McSession<B>,
    limits: ConnectionLimits,
    max_item_size: usize,
    mut place: Place,
    shutdown: Shutdown,
) -> Close
where
    S: AsyncRead + AsyncWrite + Unpin,
    B: Backend,
{
    let text_limits = TextLimits {
        max_item_size,
        ..TextLimits::default()
    };
    let max_request = text_limits.max_request_len() + READ_CHUNK;
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut charged = 0usize;
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut partial_since: Option<Instant> = None;
    let opened = Instant::now();
    let mut watcher = shutdown.clone();
    // Chosen by the first byte, as in memcached.
    let mut framing: Option<Framing> = None;
    let why = 'conn: loop {
        if shutdown.is_triggered() {
            break Close::Shutdown;
        }
        // Room for the next read, charged beyond the allowance.
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            let wanted = (buf.len() + READ_CHUNK).next_power_of_two();
            if wanted > max_request {
                break Close::LineTooLong;
            }
            let charge = wanted.saturating_sub(INPUT_ALLOWANCE);
            if charge > charged {
                if !limits.input_budget.take(charge - charged) {
                    break Close::OverBudget;
                }
                charged = charge;
            }
            buf.reserve_exact(wanted - buf.len());
        }
        let mut deadline = match (limits.line_timeout, partial_since, limits.idle_timeout) {
            (Some(t), Some(since), _) => Some((since + t, Close::LineTimeout)),
            (_, _, Some(t)) => Some((Instant::now() + t, Close::Idle)),
            _ => None,
        };
        if let (Some(t), true) = (limits.auth_timeout, session.auth_required()) {
            let at = opened + t;
            if deadline.as_ref().is_none_or(|(due, _)| at < *due) {
                deadline = Some((at, Close::AuthTimeout));
            }
        }
        let sleep = async {
            match &deadline {
                Some((at, _)) => tokio::time::sleep_until(*at).await,
                None => std::future::pending().await,
            }
        };
        let read = tokio::select! {
            biased;
            r = stream.read_buf(&mut buf) => r,
            _ = watcher.recv() => break Close::Shutdown,
            _ = sleep => break deadline.map_or(Close::Idle, |(_, why)| why),
            _ = place.pushed_out(), if !place.is_seated() => break Close::PushedOut,
        };
        match read {
            Ok(0) => break Close::PeerClosed,
            Ok(_) => {}
            Err(_) => break Close::Io,
        }
        let framing = match (&mut framing, buf.first()) {
            (Some(framing), _) => framing,
            (None, Some(&first)) => match Protocol::detect(first) {
                Protocol::Binary => {
                    framing.insert(Framing::Binary(BinaryDecoder::new(max_item_size)))
                }
                // memcached -S refuses text by closing (once it has read a
                // header's worth of bytes); no answer either way.
                Protocol::Text if session.sasl_enabled() => break Close::PeerClosed,
                Protocol::Text => {
                    framing.insert(Framing::Text(TextDecoder::new(text_limits.clone())))
                }
            },
            (None, None) => continue,
        };
        let mut start = 0;
        loop {
            if let Framing::Binary(decoder) = framing {
                decoder.require_auth(session.auth_required());
            }
            match framing.next(&buf[start..]) {
                Decoded::Incomplete => break,
                Decoded::Skipped(n) => start += n,
                Decoded::Error { error, consumed } => {
                    out.extend_from_slice(&error.answer);
                    start += consumed;
                    if error.close {
                        let _ = write(&mut stream, &mut out, &limits).await;
                        break 'conn Close::LineTooLong;
                    }
                }
                Decoded::Request { request, consumed } => {
                    if !place.is_seated() && !place.take_seat() {
                        break 'conn Close::NoSeat;
                    }
                    start += consumed;
                    // Plain gets pipelined behind this one are read with it.
                    let flow = match plain_get_keys(&request) {
                        Some(keys) => {
                            let mut gets = vec![request];
                            let (more, used) = pipelined_gets(framing, &buf[start..], keys);
                            start += used;
                            gets.extend(more);
                            if gets.len() == 1 {
                                session.handle_request(gets.remove(0), &mut out).await
                            } else {
                                session.handle_gets(gets, &mut out).await;
                                Flow::Continue
                            }
                        }
                        None => session.handle_request(request, &mut out).await,
                    };
                    if flow == Flow::Close {
                        let _ = write(&mut stream, &mut out, &limits).await;
                        break 'conn Close::PeerClosed;
                    }
                }
            }
            if out.len() >= OUT_HIGH_WATER {
                if let Err(why) = write(&mut stream, &mut out, &limits).await {
                    break 'conn why;
                }
            }
        }
        buf.drain(..start);
        partial_since = match (buf.is_empty(), start > 0) {
            (true, _) => None,
            (false, true) => Some(Instant::now()),
            (false, false) => partial_since.or(Some(Instant::now())),
        };
        if buf.capacity() > INPUT_ALLOWANCE && buf.len() < READ_CHUNK {
            buf.shrink_to(READ_CHUNK.max(buf.len()));
            let charge = buf.capacity().saturating_sub(INPUT_ALLOWANCE);
            if charge < charged {
                limits.input_budget.give_back(charged - charge);
                charged = charge;
            }
        }
        if let Err(why) = write(&mut stream, &mut out, &limits).await {
            break why;
        }
    };
    limits.input_budget.give_back(charged);
    why
}

/// Writes what `out` holds and empties it; what the client does not take
/// at once is charged to the output budget while it waits, within the
/// idle timeout.
async fn write<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &mut Vec<u8>,
    limits: &ConnectionLimits,
) -> Result<(), Close> {
    if out.is_empty() {
        return Ok(());
    }
    let waiting = out.len();
    if !limits.output_budget.take(waiting) {
        return Err(Close::OverBudget);
    }
    let io = async {
        stream.write_all(out).await?;
        stream.flush().await
    };
    let result = match limits.idle_timeout {
        Some(t) => match tokio::time::timeout(t, io).await {
            Ok(r) => r.map_err(|_| Close::Io),
            Err(_) => Err(Close::Idle),
        },
        None => io.await.map_err(|_| Close::Io),
    };
    limits.output_budget.give_back(waiting);
    out.clear();
    if out.capacity() > 4 * READ_CHUNK {
        *out = Vec::with_capacity(READ_CHUNK);
    }
    result
}
