//! The async client: one connection, typed requests, pipelining, and
//! reconnect with session replay.
//!
//! # Reconnect
//!
//! The client remembers the last successful `A` (auth) line — initially the one
//! built from `ClientOptions::auth_secret` — and every successful `P`
//! (open_index) line, by index id (a later `P` for the same id replaces the
//! earlier one; a failed `A` forgets the secret, since the server then treats
//! the connection as unauthenticated). When the connection breaks (I/O error
//! or EOF) or a call times out, it is dropped. With `reconnect` enabled, the
//! next call connects again, re-sends the `A` and then every remembered `P` in
//! id order, checks that each answers `0`, and only then sends its request. If
//! one of them is refused, that call fails with `ClientError::Handshake`, the
//! new connection is dropped and the next call tries again.
//!
//! A request that may already have reached the server when the connection
//! broke is retried on a new connection (once) only if it cannot change data:
//! a find without modify, an `A`, a `P`, or a line the server would reject
//! unparsed. An insert or find-and-modify is never retried: the call returns
//! the error (`Io` or `Closed`) because the write may or may not have been
//! applied, and the connection is re-established by the next call. Before
//! sending a write on an idle connection, the client checks without waiting
//! whether the server has already closed it (e.g. idle timeout) and, if so,
//! reconnects first, so that common case does not fail the write.
//! `pipeline` follows the same rule for its whole batch: retried only if every
//! line in it is retry-safe. `send`/`recv` never retry: every request in
//! flight when the connection breaks gets `Closed` from its `recv`, in order.
//!
//! A timeout is not retried either (the server may just be slow); it drops the
//! connection, as does dropping a call's future in the middle of its I/O.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::time::Duration;

use hs_proto::Response;
use tokio::net::TcpStream;

use crate::conn::Conn;
use crate::error::{ClientError, Result};
use crate::kind::{classify, Kind};
use crate::options::ClientOptions;
use crate::request::{auth_line, insert_line, open_index_line, Find};
use crate::value::AsValue;

/// A HandlerSocket connection. Methods take `&mut self`: one client is one
/// ordered stream of requests; use one client per concurrent task.
pub struct Client {
    addr: String,
    opts: ClientOptions,
    conn: Option<Conn>,
    /// Last successful `A` line (or the one from the options).
    auth: Option<Vec<u8>>,
    /// Successful `P` lines by index id.
    opened: BTreeMap<u32, Vec<u8>>,
    /// Requests written by `send` whose responses `recv` has not returned.
    in_flight: VecDeque<Kind>,
    /// Requests lost with a broken connection; `recv` answers `Closed` for each.
    lost: usize,
    /// Set while a call does I/O; still set at the next call means the last
    /// one was cancelled midway and the stream is out of step.
    dirty: bool,
    closed: bool,
    reconnects: u64,
    wbuf: Vec<u8>,
}

/// Shows the address and session state; never the secret.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("addr", &self.addr)
            .field("connected", &self.conn.is_some())
            .field("authenticated", &self.auth.is_some())
            .field("opened", &self.opened.keys().collect::<Vec<_>>())
            .field("in_flight", &self.in_flight())
            .field("reconnects", &self.reconnects)
            .finish()
    }
}

impl Client {
    /// Connects with default options. `addr` is anything printable as
    /// `host:port` (`&str`, `String`, `SocketAddr`); it is resolved again on
    /// every reconnect.
    pub async fn connect(addr: impl ToString) -> Result<Client> {
        Self::connect_with(addr, ClientOptions::new()).await
    }

    /// Connects, and authenticates if `opts.auth_secret` is set.
    pub async fn connect_with(addr: impl ToString, opts: ClientOptions) -> Result<Client> {
        let auth = opts.auth_secret.as_deref().map(auth_line);
        let mut client = Client {
            addr: addr.to_string(),
            opts,
            conn: None,
            auth,
            opened: BTreeMap::new(),
            in_flight: VecDeque::new(),
            lost: 0,
            dirty: false,
            closed: false,
            reconnects: 0,
            wbuf: Vec::new(),
        };
        client.establish().await?;
        Ok(client)
    }

    /// `A 1 <secret>`. On success the secret is re-sent after every reconnect.
    pub async fn auth(&mut self, secret: impl AsRef<[u8]>) -> Result<Response> {
        self.request(&auth_line(secret.as_ref())).await
    }

    /// `P <id> <db> <table> <index> <columns> [<fcolumns>]`. On success the
    /// index is re-opened after every reconnect.
    pub async fn open_index(
        &mut self,
        id: u32,
        db: &str,
        table: &str,
        index: &str,
        columns: &[&str],
        filter_columns: &[&str],
    ) -> Result<Response> {
        let line = open_index_line(id, db, table, index, columns, filter_columns);
        self.request(&line).await
    }

    /// A find, with or without modify (see `Find`).
    pub async fn find(&mut self, find: &Find) -> Result<Response> {
        self.request(&find.to_line()).await
    }

    /// `<id> + <n> <v1> ... <vn>`; `None` values are NULL.
    pub async fn insert<V: AsValue>(&mut self, id: u32, values: &[V]) -> Result<Response> {
        self.request(&insert_line(id, values)).await
    }

    /// Sends one raw line (without LF; a single trailing LF is accepted and
    /// not doubled) and returns its response. The line is sent as is, so tests
    /// can send malformed requests; it must not contain LF elsewhere.
    pub async fn request(&mut self, line: &[u8]) -> Result<Response> {
        let mut responses = self.pipeline(&[line]).await?;
        responses
            .pop()
            .ok_or_else(|| ClientError::Protocol("no response".into()))
    }

    /// Writes all lines in one write, then reads one response per line, in
    /// order (reading starts while writing, so large batches cannot deadlock).
    pub async fn pipeline<L: AsRef<[u8]>>(&mut self, lines: &[L]) -> Result<Vec<Response>> {
        self.require_idle()?;
        let mut kinds = Vec::with_capacity(lines.len());
        self.wbuf.clear();
        for line in lines {
            let line = check_line(line.as_ref())?;
            kinds.push(classify(line));
            self.wbuf.extend_from_slice(line);
            self.wbuf.push(b'\n');
        }
        if lines.is_empty() {
            return Ok(Vec::new());
        }
        let retry_safe = !kinds.iter().any(Kind::is_write);
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.prepare(!retry_safe).await?;
            let conn = self.conn.as_mut().ok_or(ClientError::Closed)?;
            self.dirty = true;
            let result = timed(
                self.opts.request_timeout,
                conn.exchange(&self.wbuf, lines.len()),
            )
            .await;
            match result {
                Ok(responses) => {
                    self.dirty = false;
                    for (kind, response) in kinds.into_iter().zip(&responses) {
                        self.note(kind, response);
                    }
                    return Ok(responses);
                }
                Err(e) => {
                    self.break_conn();
                    let retry = attempt == 1
                        && retry_safe
                        && self.opts.reconnect
                        && !self.closed
                        && e.is_connection_lost();
                    if !retry {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Writes one request line (without LF) and returns without waiting for
    /// the answer; `recv` returns the answers in order. Keep the number in
    /// flight bounded (responses must fit in the socket buffers while the
    /// client is not reading) or use `pipeline`. Never retried.
    pub async fn send(&mut self, line: &[u8]) -> Result<()> {
        let line = check_line(line)?;
        let kind = classify(line);
        if self.dirty {
            self.break_conn();
        }
        let idle = self.in_flight.is_empty() && self.lost == 0;
        self.prepare(idle && kind.is_write()).await?;
        self.wbuf.clear();
        self.wbuf.extend_from_slice(line);
        self.wbuf.push(b'\n');
        let conn = self.conn.as_mut().ok_or(ClientError::Closed)?;
        self.dirty = true;
        match timed(self.opts.request_timeout, conn.write_all(&self.wbuf)).await {
            Ok(()) => {
                self.dirty = false;
                self.in_flight.push_back(kind);
                Ok(())
            }
            Err(e) => {
                self.break_conn();
                Err(e)
            }
        }
    }

    /// The response to the oldest request written by `send`. If the
    /// connection broke while requests were in flight, each of them gets
    /// `Closed` here, in order, before responses to later `send`s.
    pub async fn recv(&mut self) -> Result<Response> {
        if self.dirty {
            self.break_conn();
        }
        if self.lost > 0 {
            self.lost -= 1;
            return Err(ClientError::Closed);
        }
        let Some(kind) = self.in_flight.pop_front() else {
            return Err(ClientError::Protocol(
                "recv() with no request in flight".into(),
            ));
        };
        let conn = self.conn.as_mut().ok_or(ClientError::Closed)?;
        self.dirty = true;
        match timed(self.opts.request_timeout, conn.read_response()).await {
            Ok(response) => {
                self.dirty = false;
                self.note(kind, &response);
                Ok(response)
            }
            Err(e) => {
                self.break_conn();
                Err(e)
            }
        }
    }

    /// Requests sent and not yet answered by `recv` (including lost ones).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len() + self.lost
    }

    /// Whether a connection is currently open (it may still turn out dead).
    pub fn is_connected(&self) -> bool {
        self.conn.is_some()
    }

    /// How many times the connection has been re-established.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// Ids of the indexes that will be re-opened after a reconnect.
    pub fn opened_indexes(&self) -> Vec<u32> {
        self.opened.keys().copied().collect()
    }

    /// Stops re-opening `id` after reconnects (e.g. its table was dropped and
    /// re-opening it would fail every reconnect). Returns whether it was known.
    pub fn forget_index(&mut self, id: u32) -> bool {
        self.opened.remove(&id).is_some()
    }

    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    /// Closes the connection for good: later calls return `Closed`.
    pub async fn close(&mut self) {
        self.closed = true;
        if let Some(mut conn) = self.conn.take() {
            conn.shutdown().await;
        }
        self.break_conn();
    }

    /// Makes sure a usable connection exists before a call writes.
    async fn prepare(&mut self, will_write_data: bool) -> Result<()> {
        if self.dirty {
            self.break_conn();
        }
        if will_write_data && self.conn.as_mut().is_some_and(Conn::looks_dead) {
            self.break_conn();
        }
        if self.conn.is_some() {
            return Ok(());
        }
        if self.closed || !self.opts.reconnect {
            return Err(ClientError::Closed);
        }
        self.establish().await?;
        self.reconnects += 1;
        Ok(())
    }

    /// Connects and replays the remembered `A` and `P` lines.
    async fn establish(&mut self) -> Result<()> {
        let connect = async {
            let stream = TcpStream::connect(self.addr.as_str()).await?;
            stream.set_nodelay(true)?;
            Ok::<_, ClientError>(stream)
        };
        let stream = timed(self.opts.connect_timeout, connect).await?;
        let mut conn = Conn::new(stream, self.opts.max_response_line);
        let mut replay: Vec<(String, &[u8])> = Vec::new();
        if let Some(auth) = &self.auth {
            replay.push(("auth".to_string(), auth));
        }
        for (id, line) in &self.opened {
            replay.push((format!("open_index {id}"), line));
        }
        if replay.is_empty() {
            self.conn = Some(conn);
            return Ok(());
        }
        let mut bytes = Vec::new();
        for (_, line) in &replay {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        let responses = timed(
            self.opts.request_timeout,
            conn.exchange(&bytes, replay.len()),
        )
        .await?;
        for ((what, _), response) in replay.iter().zip(&responses) {
            if !response.is_ok() {
                return Err(ClientError::Handshake {
                    what: what.clone(),
                    code: response.code,
                    reason: response.reason().unwrap_or_default(),
                });
            }
        }
        self.conn = Some(conn);
        Ok(())
    }

    /// Records what a successful `A`/`P` means for future reconnects.
    fn note(&mut self, kind: Kind, response: &Response) {
        match kind {
            Kind::Auth(line) => self.auth = response.is_ok().then_some(line),
            Kind::Open(id, line) if response.is_ok() => {
                self.opened.insert(id, line);
            }
            _ => {}
        }
    }

    fn break_conn(&mut self) {
        self.conn = None;
        self.lost += self.in_flight.len();
        self.in_flight.clear();
        self.dirty = false;
    }

    fn require_idle(&mut self) -> Result<()> {
        if self.dirty {
            self.break_conn();
        }
        match self.in_flight() {
            0 => Ok(()),
            n => Err(ClientError::Protocol(format!(
                "{n} request(s) from send() still in flight; recv() them first"
            ))),
        }
    }
}

/// Accepts a line with or without its final LF; refuses LF anywhere else,
/// which would turn one request into two and shift every later response.
fn check_line(line: &[u8]) -> Result<&[u8]> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if line.contains(&b'\n') {
        return Err(ClientError::Protocol(
            "request line contains LF; encode values with hs_proto::encode_token".into(),
        ));
    }
    Ok(line)
}

async fn timed<T>(limit: Option<Duration>, fut: impl Future<Output = Result<T>>) -> Result<T> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, fut)
            .await
            .map_err(|_| ClientError::Timeout)?,
        None => fut.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_line_strips_one_lf_and_refuses_inner_lf() {
        assert_eq!(check_line(b"0\t=\t1\t1\n").ok(), Some(&b"0\t=\t1\t1"[..]));
        assert_eq!(check_line(b"").ok(), Some(&b""[..]));
        assert!(check_line(b"a\nb").is_err());
        assert!(check_line(b"a\n\n").is_err());
    }
}
