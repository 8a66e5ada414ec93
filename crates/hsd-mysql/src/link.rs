//! One live connection to MySQL/MariaDB, driven by the event loop that owns
//! it: login and session settings (`link_login`), statements queued and
//! sent together, answers read back in order.
//!
//! The protocol is driven directly (with `mysql-wire`) rather than through a
//! driver crate, for two reasons measured on this workload: statements are
//! pipelined (a batch's statements leave in one write and their answers are
//! read in order, one round trip for many lookups; driver crates wait for
//! each answer), and text rows are read in place from the receive buffer and
//! handed to the executor without an allocation per row or per value.
//!
//! The link runs over TCP, TLS over TCP (`link_tls`) or a Unix socket, as
//! the URL says. At login the server's kind and version are checked: hsd
//! relies on MySQL 8.0.17's CAST(... AS DOUBLE) and is tested on MariaDB
//! 10.11, so older servers are refused with a message saying so.

use super::errors::codes::ER_SERVER_SHUTDOWN;
use super::errors::limits_connections;
use super::link_tls::TlsSetup;
use hsd_storage::StorageError;
use mysql_wire::auth::KeyPolicy;
use mysql_wire::packet::Frame;
use mysql_wire::result::RowPacket;
use mysql_wire::session_state;
use mysql_wire::{
    ColumnDef, ErrPacket, MysqlUrl, OkPacket, PacketReader, PacketWriter, Response, ServerVersion,
    TextRow,
};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

const COM_QUERY: u8 = 0x03;
const COM_QUIT: u8 = 0x01;
const READ_CHUNK: usize = 64 * 1024;

/// MySQL 8.0.24+ sends this error, unasked, before it closes a connection
/// that stayed idle past wait_timeout (ER_CLIENT_INTERACTION_TIMEOUT).
const ER_CLIENT_INTERACTION_TIMEOUT: u16 = 4031;

/// What the link runs over: TCP, TLS over TCP, or a Unix socket.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A failure, and whether it cost us the connection.
#[derive(Debug)]
pub(super) struct Failure {
    pub(crate) error: StorageError,
    /// The connection is unusable: drop it and connect again.
    pub(crate) link_lost: bool,
    /// The server closed the connection (EOF, reset): a statement that
    /// failed this way before anything was read may safely be retried on a
    /// fresh connection. False for timeouts, where retrying would double
    /// the wait.
    pub(crate) retryable: bool,
}

impl Failure {
    fn lost(what: &str, e: impl std::fmt::Display, retryable: bool) -> Failure {
        Failure {
            error: StorageError::Unavailable(format!("{what}: {e}")),
            link_lost: true,
            retryable,
        }
    }

    pub(super) fn protocol(what: impl std::fmt::Display) -> Failure {
        Failure {
            error: StorageError::Unavailable(format!("MySQL protocol: {what}")),
            link_lost: true,
            retryable: false,
        }
    }

    /// A connection the server does not take now: its own or the
    /// account's connection limit is reached (transient, unlike a refused
    /// login).
    pub(super) fn limited(e: &ErrPacket) -> Failure {
        Failure {
            error: StorageError::Refused {
                code: u32::from(e.code),
                message: e.to_string(),
            },
            link_lost: true,
            retryable: false,
        }
    }

    /// Whether the server refused the connection for its connection limits
    /// (see `limited`).
    pub(super) fn is_connection_limit(&self) -> bool {
        matches!(&self.error, StorageError::Refused { code, .. }
            if u16::try_from(*code).is_ok_and(limits_connections))
    }

    /// A login the server refused (wrong password, unknown user, ...).
    pub(super) fn refused(message: String) -> Failure {
        Failure {
            error: StorageError::Refused { code: 1, message },
            link_lost: true,
            retryable: false,
        }
    }
}

/// Session settings and timeouts of every connection.
#[derive(Clone)]
pub(super) struct LinkSettings {
    pub(crate) url: MysqlUrl,
    /// --mysql-timeout: connect, every read and write, lock waits,
    /// statement time.
    pub(crate) timeout: Duration,
    pub(super) tls: TlsSetup,
    /// Which RSA key may encrypt the password on a plain link.
    pub(super) keys: KeyPolicy,
    /// What a connection to one of several servers needs (see `Replicated`).
    pub(crate) replicated: Replicated,
}

/// Session duties of a connection to a replicated set-up (`topology`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Replicated {
    /// Learn the GTID of each commit from the server's answer (session
    /// tracking), so that reads on replicas can wait for it.
    pub(crate) track_gtids: bool,
    /// Every read waits until the node has applied what the Galera cluster
    /// committed before it (`wsrep_sync_wait = 1`); the caller reads by
    /// SELECT only, since HANDLER reads do not wait.
    pub(crate) causal_reads: bool,
}

impl LinkSettings {
    /// Resolves the URL's options: reads `ssl-ca` and
    /// `server-public-key-path` now, so a bad file stops hsd at start.
    pub(super) fn new(url: MysqlUrl, timeout: Duration) -> Result<LinkSettings, String> {
        let tls = TlsSetup::new(&url)?;
        let keys = match (
            &url.options.server_public_key_path,
            url.options.get_server_public_key,
        ) {
            (Some(path), _) => {
                let pem = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read server-public-key-path {path} ({e})"))?;
                if !pem.contains("BEGIN PUBLIC KEY") {
                    return Err(format!(
                        "server-public-key-path {path} holds no PEM public key (BEGIN PUBLIC KEY)"
                    ));
                }
                KeyPolicy::Pinned(pem)
            }
            (None, true) => KeyPolicy::AskServer,
            (None, false) => KeyPolicy::Refuse,
        };
        Ok(LinkSettings {
            url,
            timeout,
            tls,
            keys,
            replicated: Replicated::default(),
        })
    }

    /// The same settings with these session duties.
    pub(crate) fn with_replicated(&self, replicated: Replicated) -> LinkSettings {
        LinkSettings {
            replicated,
            ..self.clone()
        }
    }
}

impl std::fmt::Debug for LinkSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkSettings")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .field("ssl_mode", &self.tls.mode)
            .finish()
    }
}

/// What a statement answered.
#[derive(Debug)]
pub(super) enum Answer {
    /// A statement without rows (or the end of a result set's rows).
    Done(OkPacket),
    /// The server refused the statement; the connection is fine.
    Refused(ErrPacket),
}

/// Receives a result set as it is read.
pub(super) trait ResultSink {
    /// Column `i`'s name, before any row.
    fn column(&mut self, _i: usize, _name: &[u8]) {}
    /// One row; `false` means the rest is not wanted (it is still read).
    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool;
}

/// A server and when it started, as a connection learnt them at login: a
/// restarted server numbers its connections from 1 again, so an old
/// connection id means nothing on a new run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ServerRun {
    pub(crate) server_id: Option<u64>,
    /// Unix seconds (from the server's clock and `Uptime`); `None` where
    /// the account may not read the status.
    pub(crate) started_at: Option<u64>,
}

impl ServerRun {
    /// Whether `later` (learnt after `self`) is another server or another
    /// run of it; `None` when it cannot be told. Start times computed at
    /// two moments may differ by a second of rounding.
    pub(crate) fn changed(&self, later: &ServerRun) -> Option<bool> {
        if let (Some(a), Some(b)) = (self.server_id, later.server_id) {
            if a != b {
                return Some(true);
            }
        }
        let (a, b) = (self.started_at?, later.started_at?);
        Some(a.abs_diff(b) > 1)
    }
}

/// A result set kept whole as text (NULL as `None`), with its column
/// names: the few small answers of status, variable and metadata queries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TextTable {
    pub(crate) columns: Vec<String>,
    pub(crate) rows: Vec<Vec<Option<String>>>,
}

impl TextTable {
    /// Row `row`'s value of column `name` (case-insensitive); `None` for
    /// NULL or a column the result does not have.
    pub(crate) fn get(&self, row: usize, name: &str) -> Option<&str> {
        let i = self
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))?;
        self.rows.get(row)?.get(i)?.as_deref()
    }

    /// For `SHOW VARIABLES`/`SHOW STATUS` results: the value of the row
    /// whose first column is `name`.
    pub(crate) fn value_of(&self, name: &str) -> Option<&str> {
        self.rows
            .iter()
            .find(|r| {
                r.first()
                    .and_then(|v| v.as_deref())
                    .is_some_and(|v| v.eq_ignore_ascii_case(name))
            })
            .and_then(|r| r.get(1)?.as_deref())
    }
}

impl TextTable {
    /// The position of column `name` (case-insensitive).
    pub(crate) fn column(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
    }
}

impl ResultSink for TextTable {
    fn column(&mut self, _i: usize, name: &[u8]) {
        self.columns
            .push(String::from_utf8_lossy(name).into_owned());
    }

    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool {
        self.rows.push(
            (0..row.len())
                .map(|i| {
                    row.get(payload, i)
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                })
                .collect(),
        );
        true
    }
}

/// Keeps every value of the first row.
#[derive(Default)]
pub(super) struct FirstRow(pub(super) Option<Vec<Option<Vec<u8>>>>);

impl ResultSink for FirstRow {
    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool {
        if self.0.is_none() {
            self.0 = Some(
                (0..row.len())
                    .map(|i| row.get(payload, i).map(<[u8]>::to_vec))
                    .collect(),
            );
        }
        true
    }
}

impl FirstRow {
    /// Value `i` as a number.
    pub(super) fn number(&self, i: usize) -> Option<u64> {
        let v = self.0.as_ref()?.get(i)?.as_deref()?;
        std::str::from_utf8(v).ok()?.trim().parse().ok()
    }
}

/// Keeps the first column of the first row.
#[derive(Default)]
pub(super) struct FirstValue(pub(super) Option<Vec<u8>>);

impl ResultSink for FirstValue {
    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool {
        if self.0.is_none() {
            self.0 = row.get(payload, 0).map(<[u8]>::to_vec);
        }
        true
    }
}

/// A sink for statements whose rows, if any, are not wanted.
pub(super) struct Discard;

impl ResultSink for Discard {
    fn row(&mut self, _: &[u8], _: &TextRow) -> bool {
        false
    }
}

pub(super) struct Link {
    stream: Box<dyn Io>,
    /// The server's kind and version, from its greeting.
    pub(crate) server: ServerVersion,
    /// The server's id of this connection (what `KILL` takes).
    pub(crate) connection_id: u64,
    /// Which server run this connection belongs to (`KILL` names a
    /// session of that run only).
    pub(crate) server_run: ServerRun,
    /// The server's `innodb_rollback_on_timeout`: a lock wait that times
    /// out rolls back the whole transaction, not just the statement.
    pub(crate) rollback_on_timeout: bool,
    /// The server stores table and database names in lower case
    /// (`lower_case_table_names = 1`): names are lowered before they are
    /// looked up, as the server resolves them.
    pub(crate) lower_case_names: bool,
    /// The link is encrypted.
    pub(crate) tls: bool,
    rbuf: Vec<u8>,
    rpos: usize,
    pub(super) wbuf: Vec<u8>,
    /// Statements sent (or queued) whose answers were not read yet.
    in_flight: usize,
    pub(super) deprecate_eof: bool,
    timeout: Duration,
    row: TextRow,
    /// Statements at the front of `in_flight` whose answers `answer` reads
    /// and drops itself (session switches queued ahead of a batch).
    quiet: usize,
    /// The session's autocommit, as hsd last set it.
    pub(crate) autocommit: bool,
    /// The server reports each commit's GTID (`Replicated::track_gtids`,
    /// and the server agreed).
    pub(super) tracks_gtids: bool,
    /// The GTID the last OK packet that had one reported.
    pub(super) reported_gtid: Option<Vec<u8>>,
    /// The server gives every commit that writes a GTID (a binary log;
    /// on MySQL gtid_mode ON): read where GTIDs are tracked.
    pub(super) numbers_commits: bool,
    /// hsd asked the server to track GTIDs and it accepted, but does not
    /// report them (`gtid_tracking`).
    pub(super) tracking_off: bool,
}

impl Link {
    pub(super) async fn connect(settings: &LinkSettings) -> Result<Link, Failure> {
        let t = settings.timeout;
        let endpoint = settings.url.endpoint();
        let what = format!("connecting to {endpoint}");
        let stream: Box<dyn Io> = match &settings.url.options.socket {
            Some(path) => match tokio::time::timeout(t, UnixStream::connect(path)).await {
                Ok(Ok(s)) => Box::new(s),
                Ok(Err(e)) => return Err(Failure::lost(&what, e, false)),
                Err(_) => return Err(Failure::lost(&what, "timed out", false)),
            },
            None => match tokio::time::timeout(t, TcpStream::connect(&endpoint)).await {
                Ok(Ok(s)) => {
                    let _ = s.set_nodelay(true);
                    Box::new(s)
                }
                Ok(Err(e)) => return Err(Failure::lost(&what, e, false)),
                Err(_) => return Err(Failure::lost(&what, "timed out", false)),
            },
        };
        let mut link = Link {
            stream,
            server: ServerVersion::parse(""),
            connection_id: 0,
            server_run: ServerRun::default(),
            rollback_on_timeout: false,
            lower_case_names: false,
            tls: false,
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
            numbers_commits: false,
            tracking_off: false,
        };
        link.login(settings).await?;
        link.set_up_session(t).await?;
        link.set_up_replicated(settings.replicated).await?;
        Ok(link)
    }

    /// Upgrades the TCP stream to TLS (after the SSL request packet).
    pub(super) async fn start_tls(&mut self, tls: &TlsSetup) -> Result<(), Failure> {
        let Some(config) = tls.config.clone() else {
            return Err(Failure::protocol("TLS wanted without a TLS configuration"));
        };
        if self.rpos < self.rbuf.len() {
            return Err(Failure::protocol(
                "the server sent bytes before the TLS handshake",
            ));
        }
        let connector = tokio_rustls::TlsConnector::from(config);
        // The plain stream is moved into the TLS one; a placeholder holds
        // its place meanwhile (a failed handshake loses the link anyway).
        let plain = std::mem::replace(&mut self.stream, Box::new(tokio::io::duplex(1).0));
        let handshake = connector.connect(tls.server_name.clone(), plain);
        match tokio::time::timeout(self.timeout, handshake).await {
            Ok(Ok(s)) => {
                self.stream = Box::new(s);
                self.tls = true;
                Ok(())
            }
            // A certificate that does not verify is a configuration matter:
            // say so as a refusal, which also keeps hsd from starting.
            Ok(Err(e)) => Err(Failure::refused(format!(
                "TLS handshake with the server failed (ssl-mode={}): {e}",
                tls.mode
            ))),
            Err(_) => Err(Failure::lost("TLS handshake", "timed out", false)),
        }
    }

    /// Whether the server reports the GTID of each commit.
    pub(crate) fn tracks_gtids(&self) -> bool {
        self.tracks_gtids
    }

    /// Whether every commit that writes gets a GTID on this server.
    /// The server accepted GTID tracking and does not report GTIDs.
    pub(crate) fn tracking_off(&self) -> bool {
        self.tracking_off
    }

    pub(crate) fn numbers_commits(&self) -> bool {
        self.numbers_commits
    }

    /// The GTID the server reported since the last call, if any.
    pub(crate) fn take_reported_gtid(&mut self) -> Option<Vec<u8>> {
        self.reported_gtid.take()
    }

    /// Queues one statement; `build` appends its text. It leaves with the
    /// next `send` (or the next `answer`, which sends what is queued).
    pub(super) fn queue(&mut self, build: impl FnOnce(&mut Vec<u8>)) {
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
    pub(super) fn queue_quiet(&mut self, statement: &[u8]) {
        debug_assert_eq!(self.in_flight, self.quiet, "quiet statements go first");
        self.queue(|sql| sql.extend_from_slice(statement));
        self.quiet += 1;
    }

    /// Sends everything queued.
    pub(super) async fn send(&mut self) -> Result<(), Failure> {
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
    pub(super) async fn answer(&mut self, sink: &mut impl ResultSink) -> Result<Answer, Failure> {
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
    pub(super) async fn drain(&mut self) -> Result<(), Failure> {
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
                // The server closed the link before it read the statement
                // (idle past wait_timeout, or shutting down): nothing ran,
                // and the statement may go again on a new link.
                Response::Err(e)
                    if matches!(e.code, ER_CLIENT_INTERACTION_TIMEOUT | ER_SERVER_SHUTDOWN) =>
                {
                    return Err(Failure::lost("the server closed the connection", e, true))
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
    pub(super) async fn packet(&mut self) -> Result<(u8, Vec<u8>), Failure> {
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
    pub(super) async fn quit(mut self) {
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
