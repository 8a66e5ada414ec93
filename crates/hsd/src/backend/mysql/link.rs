//! One live connection to MySQL/MariaDB, driven by the event loop that owns
//! it: login and session settings, statements queued and sent together,
//! answers read back in order.
//!
//! The protocol is driven directly (with `mysql-wire`) rather than through a
//! driver crate, for two reasons measured on this workload: statements are
//! pipelined (a batch's statements leave in one write and their answers are
//! read in order, one round trip for many lookups; driver crates wait for
//! each answer), and text rows are read in place from the receive buffer and
//! handed to the executor without an allocation per row or per value.

use crate::backend::StorageError;
use mysql_wire::auth::{AuthStep, Authenticator};
use mysql_wire::packet::Frame;
use mysql_wire::result::RowPacket;
use mysql_wire::session_state;
use mysql_wire::{
    Capabilities, ColumnDef, ErrPacket, Greeting, HandshakeResponse, MysqlUrl, OkPacket,
    PacketReader, PacketWriter, Response, TextRow,
};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const COM_QUERY: u8 = 0x03;
const COM_QUIT: u8 = 0x01;
/// utf8mb4_general_ci: the text hsd writes (SQL, names) is UTF-8.
const COLLATION_UTF8MB4: u8 = 45;
const READ_CHUNK: usize = 64 * 1024;

/// A failure, and whether it cost us the connection.
#[derive(Debug)]
pub struct Failure {
    pub error: StorageError,
    /// The connection is unusable: drop it and connect again.
    pub link_lost: bool,
    /// The server closed the connection (EOF, reset): a statement that
    /// failed this way before anything was read may safely be retried on a
    /// fresh connection. False for timeouts, where retrying would double
    /// the wait.
    pub retryable: bool,
}

impl Failure {
    fn lost(what: &str, e: impl std::fmt::Display, retryable: bool) -> Failure {
        Failure {
            error: StorageError::Unavailable(format!("{what}: {e}")),
            link_lost: true,
            retryable,
        }
    }

    fn protocol(what: impl std::fmt::Display) -> Failure {
        Failure {
            error: StorageError::Unavailable(format!("MySQL protocol: {what}")),
            link_lost: true,
            retryable: false,
        }
    }

    /// A login the server refused (wrong password, unknown user, ...).
    fn refused(message: String) -> Failure {
        Failure {
            error: StorageError::Refused { code: 1, message },
            link_lost: true,
            retryable: false,
        }
    }
}

/// Session settings and timeouts of every connection.
#[derive(Debug, Clone)]
pub struct LinkSettings {
    pub url: MysqlUrl,
    /// --mysql-timeout: connect, every read and write, lock waits,
    /// statement time.
    pub timeout: Duration,
    /// What a connection to one of several servers needs (see `Replicated`).
    pub replicated: Replicated,
}

/// Session duties of a connection to a replicated set-up (`topology`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replicated {
    /// Learn the GTID of each commit from the server's answer (session
    /// tracking), so that reads on replicas can wait for it.
    pub track_gtids: bool,
    /// Every read waits until the node has applied what the Galera cluster
    /// committed before it (`wsrep_sync_wait = 1`); the caller reads by
    /// SELECT only, since HANDLER reads do not wait.
    pub causal_reads: bool,
}

/// What a statement answered.
#[derive(Debug)]
pub enum Answer {
    /// A statement without rows (or the end of a result set's rows).
    Done(OkPacket),
    /// The server refused the statement; the connection is fine.
    Refused(ErrPacket),
}

/// Receives a result set as it is read.
pub trait ResultSink {
    /// Column `i`'s name, before any row.
    fn column(&mut self, _i: usize, _name: &[u8]) {}
    /// One row; `false` means the rest is not wanted (it is still read).
    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool;
}

/// A sink for statements whose rows, if any, are not wanted.
pub struct Discard;

impl ResultSink for Discard {
    fn row(&mut self, _: &[u8], _: &TextRow) -> bool {
        false
    }
}

pub struct Link {
    stream: TcpStream,
    rbuf: Vec<u8>,
    rpos: usize,
    wbuf: Vec<u8>,
    /// Statements sent (or queued) whose answers were not read yet.
    in_flight: usize,
    deprecate_eof: bool,
    timeout: Duration,
    row: TextRow,
    /// Statements at the front of `in_flight` whose answers `answer` reads
    /// and drops itself (session switches queued ahead of a batch).
    quiet: usize,
    /// The session's autocommit, as hsd last set it.
    pub autocommit: bool,
    /// The server reports each commit's GTID (`Replicated::track_gtids`,
    /// and the server agreed).
    tracks_gtids: bool,
    /// The GTID the last OK packet that had one reported.
    reported_gtid: Option<Vec<u8>>,
}

impl Link {
    pub async fn connect(settings: &LinkSettings) -> Result<Link, Failure> {
        let t = settings.timeout;
        let addr = settings.url.address();
        let stream = match tokio::time::timeout(t, TcpStream::connect(&addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(Failure::lost(&format!("connecting to {addr}"), e, false)),
            Err(_) => {
                return Err(Failure::lost(
                    &format!("connecting to {addr}"),
                    "timed out",
                    false,
                ))
            }
        };
        let _ = stream.set_nodelay(true);
        let mut link = Link {
            stream,
            rbuf: Vec::with_capacity(READ_CHUNK),
            rpos: 0,
            wbuf: Vec::with_capacity(4096),
            in_flight: 0,
            deprecate_eof: false,
            timeout: t,
            row: TextRow::default(),
            quiet: 0,
            autocommit: true,
            tracks_gtids: false,
            reported_gtid: None,
        };
        let mariadb = link.login(&settings.url, settings.replicated).await?;
        link.set_up_session(t).await?;
        link.set_up_replicated(settings.replicated, mariadb).await?;
        Ok(link)
    }

    /// Logs in; whether the server is MariaDB.
    async fn login(&mut self, url: &MysqlUrl, replicated: Replicated) -> Result<bool, Failure> {
        let (_, greeting) = self.packet().await?;
        let greeting = Greeting::parse(&greeting).map_err(Failure::refused)?;
        if !greeting.capabilities.has(Capabilities::PROTOCOL_41) {
            return Err(Failure::refused(
                "the server is too old (no protocol 4.1)".into(),
            ));
        }
        let mut auth = Authenticator::new(
            &greeting.auth_plugin,
            url.password.as_bytes(),
            &greeting.scramble,
            false,
        );
        let wanted = Capabilities::LONG_PASSWORD
            | Capabilities::FOUND_ROWS
            | Capabilities::LONG_FLAG
            | Capabilities::PROTOCOL_41
            | Capabilities::TRANSACTIONS
            | Capabilities::SECURE_CONNECTION
            | Capabilities::MULTI_RESULTS
            | Capabilities::PLUGIN_AUTH
            | Capabilities::PLUGIN_AUTH_LENENC
            | Capabilities::DEPRECATE_EOF;
        let mut caps =
            wanted & (greeting.capabilities.0 | Capabilities::FOUND_ROWS | Capabilities::LONG_FLAG);
        if replicated.track_gtids
            && greeting
                .capabilities
                .has(session_state::CLIENT_SESSION_TRACK)
        {
            caps |= session_state::CLIENT_SESSION_TRACK;
            self.tracks_gtids = true;
        }
        if url.database.is_some() {
            caps |= Capabilities::CONNECT_WITH_DB;
        }
        self.deprecate_eof = caps & Capabilities::DEPRECATE_EOF != 0;
        let first = auth.first_response().map_err(Failure::refused)?;
        let response = HandshakeResponse {
            capabilities: caps,
            user: &url.user,
            auth_response: &first,
            auth_plugin: auth.plugin(),
            database: url.database.as_deref(),
            collation: COLLATION_UTF8MB4,
        };
        self.wbuf.clear();
        response.write(&mut self.wbuf, 1);
        self.send().await?;
        loop {
            let (seq, p) = self.packet().await?;
            match auth.on_packet(&p) {
                Ok(AuthStep::Done) => return Ok(greeting.is_mariadb()),
                Ok(AuthStep::Wait) => {}
                Ok(AuthStep::Send(data)) => {
                    self.wbuf.clear();
                    let w = PacketWriter::begin(&mut self.wbuf, seq.wrapping_add(1));
                    self.wbuf.extend_from_slice(&data);
                    w.finish(&mut self.wbuf);
                    self.send().await?;
                }
                Err(message) => {
                    return Err(Failure::refused(format!(
                        "logging in as {}: {message}",
                        url.user
                    )))
                }
            }
        }
    }

    /// The settings every hsd connection runs with: non-strict like the
    /// original plugin; column values returned as stored, without character
    /// set conversion (the original answered with each column's own bytes);
    /// fresh reads; and the server's own time limits a little inside ours,
    /// so a slow statement reports the server's error and keeps the link.
    async fn set_up_session(&mut self, t: Duration) -> Result<(), Failure> {
        let lock_wait = (t.as_secs().max(2) - 1).max(1);
        let statement_time = t.saturating_sub((t / 4).min(Duration::from_millis(500)));
        let statements = [
            "SET NAMES utf8mb4".to_string(),
            format!(
                "SET SESSION sql_mode = '', autocommit = 1, character_set_results = NULL, \
                 innodb_lock_wait_timeout = {lock_wait}"
            ),
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string(),
            // The original wrote rows at the storage engine, below CHECK
            // constraints (a JSON column left out of an insert holds '').
            // MariaDB only; MySQL has no such variable, and that is fine.
            "SET SESSION check_constraint_checks = 0".to_string(),
            // MariaDB: seconds, every statement. MySQL: milliseconds, SELECT
            // only; one of the two fails, and that is fine.
            format!(
                "SET SESSION max_statement_time = {:.3}",
                statement_time.as_secs_f64()
            ),
            format!(
                "SET SESSION max_execution_time = {}",
                statement_time.as_millis()
            ),
        ];
        for s in &statements {
            self.queue(|sql| sql.extend_from_slice(s.as_bytes()));
        }
        for (i, s) in statements.iter().enumerate() {
            if let Answer::Refused(e) = self.answer(&mut Discard).await? {
                if i < 3 {
                    return Err(Failure::refused(format!("{s}: {e}")));
                }
            }
        }
        Ok(())
    }

    /// The session duties of a replicated set-up. A server that cannot
    /// report GTIDs leaves `tracks_gtids` off (the topology then treats
    /// each commit as unknown); a Galera node that refuses causal reads is
    /// not used.
    async fn set_up_replicated(&mut self, r: Replicated, mariadb: bool) -> Result<(), Failure> {
        if self.tracks_gtids {
            let sql: &[u8] = if mariadb {
                b"SET SESSION session_track_system_variables = 'last_gtid'"
            } else {
                b"SET SESSION session_track_gtids = OWN_GTID"
            };
            self.queue(|q| q.extend_from_slice(sql));
            if let Answer::Refused(e) = self.answer(&mut Discard).await? {
                tracing::warn!(error = %e, "the server cannot report the GTID of commits");
                self.tracks_gtids = false;
            }
            self.reported_gtid = None;
        }
        if r.causal_reads {
            self.queue(|q| q.extend_from_slice(b"SET SESSION wsrep_sync_wait = 1"));
            if let Answer::Refused(e) = self.answer(&mut Discard).await? {
                return Err(Failure::refused(format!(
                    "SET SESSION wsrep_sync_wait = 1 (causal reads on a Galera node): {e}"
                )));
            }
        }
        Ok(())
    }

    /// Whether the server reports the GTID of each commit.
    pub fn tracks_gtids(&self) -> bool {
        self.tracks_gtids
    }

    /// The GTID the server reported since the last call, if any.
    pub fn take_reported_gtid(&mut self) -> Option<Vec<u8>> {
        self.reported_gtid.take()
    }

    /// Queues one statement; `build` appends its text. It leaves with the
    /// next `send` (or the next `answer`, which sends what is queued).
    pub fn queue(&mut self, build: impl FnOnce(&mut Vec<u8>)) {
        let w = PacketWriter::begin(&mut self.wbuf, 0);
        self.wbuf.push(COM_QUERY);
        build(&mut self.wbuf);
        w.finish(&mut self.wbuf);
        self.in_flight += 1;
    }

    /// Queues a statement whose answer nobody waits for: the next `answer`
    /// reads it first and drops it (a refusal loses the link, as a session
    /// in an unknown state must not be used). Only ahead of other
    /// statements.
    pub fn queue_quiet(&mut self, statement: &[u8]) {
        debug_assert_eq!(self.in_flight, self.quiet, "quiet statements go first");
        self.queue(|sql| sql.extend_from_slice(statement));
        self.quiet += 1;
    }

    /// Sends everything queued.
    pub async fn send(&mut self) -> Result<(), Failure> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        let result = tokio::time::timeout(self.timeout, self.stream.write_all(&self.wbuf)).await;
        self.wbuf.clear();
        if self.wbuf.capacity() > 1 << 20 {
            self.wbuf = Vec::with_capacity(4096);
        }
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Failure::lost("sending to MySQL", e, true)),
            Err(_) => Err(Failure::lost("sending to MySQL", "timed out", false)),
        }
    }

    /// Reads the answer of the oldest statement in flight, handing its rows
    /// to `sink`. Sends what is queued first.
    pub async fn answer(&mut self, sink: &mut impl ResultSink) -> Result<Answer, Failure> {
        self.send().await?;
        while self.quiet > 0 {
            if let Answer::Refused(e) = self.read_answer(&mut Discard).await? {
                return Err(Failure::lost("switching the session", e, false));
            }
            self.quiet -= 1;
            self.in_flight -= 1;
        }
        if self.in_flight == 0 {
            return Err(Failure::protocol("no statement to read an answer for"));
        }
        let answer = self.read_answer(sink).await;
        if answer.is_ok() {
            self.in_flight -= 1;
        }
        answer
    }

    /// Reads and drops the answers of every statement in flight.
    pub async fn drain(&mut self) -> Result<(), Failure> {
        while self.in_flight > 0 {
            self.answer(&mut Discard).await?;
        }
        Ok(())
    }

    async fn read_answer(&mut self, sink: &mut impl ResultSink) -> Result<Answer, Failure> {
        let columns = {
            let (range, owned) = self.frame().await?;
            let first = payload(&self.rbuf, &range, owned.as_deref());
            match Response::parse(first).map_err(Failure::protocol)? {
                Response::Ok(ok) => {
                    if self.tracks_gtids {
                        if let Some(g) = session_state::reported_gtid(first) {
                            self.reported_gtid = Some(g.to_vec());
                        }
                    }
                    return Ok(Answer::Done(ok));
                }
                Response::Err(e) => return Ok(Answer::Refused(e)),
                Response::ResultSet(n) => usize::try_from(n).map_err(Failure::protocol)?,
            }
        };
        for i in 0..columns {
            let (range, owned) = self.frame().await?;
            let p = payload(&self.rbuf, &range, owned.as_deref());
            let def = ColumnDef::parse(p).map_err(Failure::protocol)?;
            sink.column(i, &def.name);
        }
        if !self.deprecate_eof {
            self.frame().await?;
        }
        let mut wanted = true;
        loop {
            let (range, owned) = self.frame().await?;
            let p = payload(&self.rbuf, &range, owned.as_deref());
            match RowPacket::classify(p, self.deprecate_eof) {
                RowPacket::End(ok) => return Ok(Answer::Done(ok)),
                RowPacket::Err(e) => return Ok(Answer::Refused(e)),
                RowPacket::Row => {
                    if wanted {
                        self.row.parse(p, columns).map_err(Failure::protocol)?;
                        wanted = sink.row(p, &self.row);
                    }
                }
            }
        }
    }

    /// The next payload: a range of `rbuf` (valid until the next read), or
    /// an owned copy when it spanned several packets.
    async fn frame(&mut self) -> Result<(std::ops::Range<usize>, Option<Vec<u8>>), Failure> {
        loop {
            match PacketReader::next(&self.rbuf, self.rpos) {
                Some(Frame::Whole {
                    range, consumed, ..
                }) => {
                    self.rpos += consumed;
                    return Ok((range, None));
                }
                Some(Frame::Joined {
                    payload, consumed, ..
                }) => {
                    self.rpos += consumed;
                    return Ok((0..0, Some(payload)));
                }
                None => self.fill().await?,
            }
        }
    }

    /// One payload with its sequence number, owned (login only).
    async fn packet(&mut self) -> Result<(u8, Vec<u8>), Failure> {
        loop {
            match PacketReader::next(&self.rbuf, self.rpos) {
                Some(Frame::Whole {
                    seq,
                    range,
                    consumed,
                }) => {
                    let p = self.rbuf[range].to_vec();
                    self.rpos += consumed;
                    return Ok((seq, p));
                }
                Some(Frame::Joined {
                    seq,
                    payload,
                    consumed,
                }) => {
                    self.rpos += consumed;
                    return Ok((seq, payload));
                }
                None => self.fill().await?,
            }
        }
    }

    /// Reads more bytes, first moving unread ones to the front.
    async fn fill(&mut self) -> Result<(), Failure> {
        if self.rpos > 0 {
            self.rbuf.drain(..self.rpos);
            self.rpos = 0;
        }
        if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK / 4 {
            self.rbuf.reserve(READ_CHUNK);
        }
        match tokio::time::timeout(self.timeout, self.stream.read_buf(&mut self.rbuf)).await {
            Ok(Ok(0)) => Err(Failure::lost(
                "reading from MySQL",
                "connection closed",
                true,
            )),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Failure::lost("reading from MySQL", e, true)),
            Err(_) => Err(Failure::lost("reading from MySQL", "timed out", false)),
        }
    }

    /// Says goodbye (best effort) so the server does not log an abort.
    pub async fn quit(mut self) {
        self.wbuf.clear();
        let w = PacketWriter::begin(&mut self.wbuf, 0);
        self.wbuf.push(COM_QUIT);
        w.finish(&mut self.wbuf);
        let _ = tokio::time::timeout(
            Duration::from_millis(100),
            self.stream.write_all(&self.wbuf),
        )
        .await;
    }
}

/// The bytes of a frame read by `Link::frame`.
fn payload<'a>(
    rbuf: &'a [u8],
    range: &std::ops::Range<usize>,
    owned: Option<&'a [u8]>,
) -> &'a [u8] {
    match owned {
        Some(p) => p,
        None => &rbuf[range.clone()],
    }
}
