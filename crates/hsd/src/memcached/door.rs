//! memcached's door (`crate::connection::Door`): how the connection loop
//! finds commands in a memcached client's bytes (mc-proto's `TextDecoder`:
//! lines and data blocks; `BinaryDecoder`: frames) and has the session run
//! them. The first byte picks the protocol (0x80: binary, as in memcached).
//! With SASL only the binary protocol is served: a connection whose first
//! byte is not 0x80 is closed without an answer, and only SASL and Version
//! run before authentication. One request is at most a multi-get line or a
//! storage line with its data block (`--memcached-max-item-size`). The
//! loop's bounds (budgets, timeouts, seats, shutdown) are HandlerSocket's.

use super::gets::{plain_get_keys, MAX_BATCHED_KEYS};
use super::session::{Flow, McSession, Request};
use crate::connection::{Close, Decoded, Door, Refused};
use hsd_storage::Backend;
use mc_proto::{BinaryDecoder, Protocol, Refusal, TextDecoder, TextLimits};

/// The connection's decoder, as its first byte chose.
#[derive(Clone)]
enum Framing {
    Text(TextDecoder),
    Binary(BinaryDecoder),
}

/// A refusal of either protocol: its answer, and whether it closes (as a
/// request too long to read on, `Close::LineTooLong`).
fn refused(error: impl Refusal) -> Refused {
    let mut answer = Vec::new();
    error.encode(&mut answer);
    Refused {
        answer,
        close: error.closes().then_some(Close::LineTooLong),
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

/// A memcached connection's side: its session and its decoder.
pub(crate) struct McDoor<B: Backend> {
    session: McSession<B>,
    /// Chosen by the first byte, as in memcached.
    framing: Option<Framing>,
    text_limits: TextLimits,
    max_item_size: usize,
}

impl<B: Backend> McDoor<B> {
    pub(crate) fn new(session: McSession<B>, max_item_size: usize) -> McDoor<B> {
        McDoor {
            session,
            framing: None,
            text_limits: TextLimits {
                max_item_size,
                ..TextLimits::default()
            },
            max_item_size,
        }
    }
}

impl<B: Backend> Door for McDoor<B> {
    type Request<'a> = Request<'a>;

    fn max_pending(&self) -> usize {
        self.text_limits.max_request_len()
    }

    fn decode<'a>(&mut self, input: &'a [u8]) -> Decoded<Request<'a>, Refused> {
        let framing = match (&mut self.framing, input.first()) {
            (Some(framing), _) => framing,
            (None, None) => return Decoded::Incomplete,
            (None, Some(&first)) => match Protocol::detect(first) {
                Protocol::Binary => self
                    .framing
                    .insert(Framing::Binary(BinaryDecoder::new(self.max_item_size))),
                // memcached -S refuses text by closing; no answer.
                Protocol::Text if self.session.sasl_enabled() => {
                    return Decoded::Error {
                        error: Refused {
                            answer: Vec::new(),
                            close: Some(Close::PeerClosed),
                        },
                        consumed: 0,
                    }
                }
                Protocol::Text => self
                    .framing
                    .insert(Framing::Text(TextDecoder::new(self.text_limits.clone()))),
            },
        };
        if let Framing::Binary(decoder) = framing {
            decoder.require_auth(self.session.auth_required());
        }
        framing.next(input)
    }

    async fn handle<'a>(
        &mut self,
        request: Request<'a>,
        rest: &'a [u8],
        out: &mut Vec<u8>,
    ) -> Result<usize, Close> {
        let mut taken = 0;
        // Plain gets pipelined behind this one are read with it.
        let flow = match (plain_get_keys(&request), &self.framing) {
            (Some(keys), Some(framing)) => {
                let (more, used) = pipelined_gets(framing, rest, keys);
                taken = used;
                if more.is_empty() {
                    self.session.handle_request(request, out).await
                } else {
                    let mut gets = vec![request];
                    gets.extend(more);
                    self.session.handle_gets(gets, out).await;
                    Flow::Continue
                }
            }
            _ => self.session.handle_request(request, out).await,
        };
        match flow {
            Flow::Continue => Ok(taken),
            // `quit`, or a refusal memcached closes after.
            Flow::Close => Err(Close::PeerClosed),
        }
    }

    async fn flush(&mut self, _out: &mut Vec<u8>) {}

    fn is_authenticated(&self) -> bool {
        !self.session.auth_required()
    }
}
