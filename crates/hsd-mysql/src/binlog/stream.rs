//! The reader's own connection: a replica session (checksums, heartbeats,
//! on MariaDB the GTID to start from), COM_REGISTER_SLAVE, COM_BINLOG_DUMP,
//! then events until the connection breaks; it then reports the stream
//! lost and connects again from the last transaction it delivered whole.
//!
//! The settings `start` judged can change while hsd runs (`SET GLOBAL
//! binlog_format`, replication started on a server whose own binary log
//! leaves out what it applies): they are judged again every
//! `SETTINGS_RECHECK` and before each reconnect. A refusal ends the stream
//! as a loss, in the words `hsd serve` refuses with at start, and the
//! reader waits until the settings pass again; it then streams from where
//! the server is and drops everything, since what was logged meanwhile
//! cannot be trusted.

use super::super::link::{Link, LinkSettings};
use super::checks::{observe, query, refusals};
use super::decode::Decoder;
use super::{BinlogPosition, Change, StreamEvent};
use mysql_wire::binlog::{binlog_dump, register_replica, StreamPacket};
use mysql_wire::{Flavor, MysqlUrl};
use std::time::Duration;

/// The server's error for a position its binlog no longer holds (or never
/// did): ER_MASTER_FATAL_ERROR_READING_BINLOG.
const ER_BINLOG_POSITION_GONE: u16 = 1236;
/// MariaDB's error to a stream another replica with its server id took
/// over (ER_SLAVE_SAME_ID); MariaDB and MySQL may also say it as a 1236
/// whose text names the same cause.
const ER_SAME_SERVER_ID: u16 = 4052;
const SAME_SERVER_ID_TEXT: &str = "same server_uuid/server_id";
/// How long the reader waits before it takes a stolen stream back.
const STOLEN_WAIT: Duration = Duration::from_secs(5);
/// How often a streaming reader judges the server's settings again: one
/// short connection and three small queries.
const SETTINGS_RECHECK: Duration = Duration::from_secs(5);

/// Whether the server ended the stream because another replica
/// registered with the reader's server id.
fn stolen(e: &mysql_wire::ErrPacket) -> bool {
    e.code == ER_SAME_SERVER_ID || e.to_string().contains(SAME_SERVER_ID_TEXT)
}

/// How the reader connects: the server's one `LinkSettings` (shared with
/// the connector and the position asker) and the reader's replica id.
#[derive(Debug, Clone)]
pub struct ReaderSettings {
    /// Its timeout is also the stream's read timeout (heartbeats come at
    /// a third of it, at most every second).
    pub(crate) link: LinkSettings,
    /// The replica id the reader registers with: unique among the
    /// server's replicas (a second connection with the same id makes the
    /// server drop the first).
    pub server_id: u32,
}

impl ReaderSettings {
    /// Settings of a reader of its own (tests, tools): the URL's options
    /// are resolved as the connector resolves them.
    pub fn new(url: MysqlUrl, timeout: Duration, server_id: u32) -> Result<ReaderSettings, String> {
        Ok(ReaderSettings {
            link: LinkSettings::new(url, timeout)?,
            server_id,
        })
    }

    /// A reader on a server whose link settings are already resolved.
    pub(crate) fn on(link: &LinkSettings, server_id: u32) -> ReaderSettings {
        ReaderSettings {
            link: link.clone(),
            server_id,
        }
    }

    /// The same reader with another connect and read timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> ReaderSettings {
        self.link.timeout = timeout;
        self
    }
}

/// Receives the reader's events, in binlog order, on the reader's task.
pub trait BinlogSink: Send + 'static {
    fn deliver(&mut self, event: StreamEvent);

    /// Whether the row images of `db.table` are wanted, asked at each rows
    /// event: those of a table not wanted are not decoded (the row cache
    /// decodes only the tables it holds). Its other events still come.
    fn wants_rows(&self, _db: &str, _table: &str) -> bool {
        true
    }
}

impl BinlogSink for std::sync::mpsc::Sender<StreamEvent> {
    fn deliver(&mut self, event: StreamEvent) {
        // The receiver gone means nobody listens: the reader is dropped soon.
        let _ = self.send(event);
    }
}

/// A running reader; dropping it stops it.
pub struct BinlogReader {
    task: tokio::task::JoinHandle<()>,
}

impl BinlogReader {
    /// Checks the server (one line per refusal), finds its current position
    /// and starts streaming from there on a task of the current runtime.
    /// The sink's first event is `Started`.
    pub async fn start(
        settings: ReaderSettings,
        mut sink: impl BinlogSink,
    ) -> Result<BinlogReader, String> {
        let follower = Follower::new(settings);
        let mut link = follower.connect().await?;
        let observed = observe(&mut link).await?;
        let refused = refusals(&observed);
        if !refused.is_empty() {
            link.quit().await;
            return Err(refused.join("\n"));
        }
        let from = current_position(&mut link).await?;
        link.quit().await;
        let follower = Follower {
            flavor: observed.flavor,
            checksums: observed.checksums(),
            lower_case_names: observed.lower_case_names(),
            ..follower
        };
        let (link, decoder) = follower.open(&from).await?;
        sink.deliver(StreamEvent::Started {
            position: from,
            connection_id: link.connection_id,
        });
        let task = tokio::spawn(follower.run(link, decoder, sink));
        Ok(BinlogReader { task })
    }

    /// The refusals `start` would give, without starting.
    pub async fn check(settings: ReaderSettings) -> Result<Vec<String>, String> {
        Follower::new(settings).refused().await
    }
}

impl Drop for BinlogReader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Why a stream ended.
enum Ended {
    Lost(String),
    /// Another replica with the reader's server id took the stream.
    Stolen(String),
    /// The server no longer has the position: changes were missed.
    Gap(String),
    /// The server's settings no longer let the cache be exact: the lines
    /// `refusals` gives.
    Refused(Vec<String>),
}

struct Follower {
    settings: ReaderSettings,
    flavor: Flavor,
    checksums: bool,
    /// Names are lowered before they are compared (`lower_case_table_names = 1`).
    lower_case_names: bool,
}

impl Follower {
    fn new(settings: ReaderSettings) -> Follower {
        Follower {
            settings,
            flavor: Flavor::MySql,
            checksums: false,
            lower_case_names: false,
        }
    }

    async fn connect(&self) -> Result<Link, String> {
        Link::connect(&self.settings.link)
            .await
            .map_err(|f| format!("binlog reader: {}", f.error))
    }

    /// A new stream from `from`.
    async fn open(&self, from: &BinlogPosition) -> Result<(Link, Decoder), String> {
        let mut link = self.connect().await?;
        let heartbeat = (self.settings.link.timeout / 3).min(Duration::from_secs(1));
        let mut statements = vec![
            "SET @master_binlog_checksum = @@GLOBAL.binlog_checksum".to_string(),
            "SET @source_binlog_checksum = @@GLOBAL.binlog_checksum".to_string(),
            format!("SET @master_heartbeat_period = {}", heartbeat.as_nanos()),
        ];
        if self.flavor.is_mariadb() {
            let gtid = from.gtid.as_deref().unwrap_or("");
            if !gtid
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'-' || b == b',')
            {
                return Err(format!(
                    "binlog reader: a GTID state {gtid:?} it cannot use"
                ));
            }
            statements.extend([
                // The dump is not a statement to time out.
                "SET SESSION max_statement_time = 0".to_string(),
                // 4: the replica understands GTIDs.
                "SET @mariadb_slave_capability = 4".to_string(),
                format!("SET @slave_connect_state = '{gtid}'"),
                "SET @slave_gtid_strict_mode = 0".to_string(),
                "SET @slave_gtid_ignore_duplicates = 0".to_string(),
            ]);
        }
        for s in &statements {
            query(&mut link, s).await?;
        }
        let id = self.settings.server_id;
        register_replica(&mut link.wbuf, id, "hsd", 0);
        link.send().await.map_err(|f| f.error.to_string())?;
        let (_, answer) = link.packet().await.map_err(|f| f.error.to_string())?;
        if answer.first() == Some(&0xff) {
            let e = mysql_wire::ErrPacket::parse(&answer);
            return Err(format!("binlog reader: registering as replica {id}: {e}"));
        }
        let offset = u32::try_from(from.offset.max(4))
            .map_err(|_| format!("binlog reader: offset {} past 4 GiB", from.offset))?;
        let file = if self.flavor.is_mariadb() {
            ""
        } else {
            from.file.as_str()
        };
        binlog_dump(&mut link.wbuf, id, file, offset);
        link.send().await.map_err(|f| f.error.to_string())?;
        Ok((
            link,
            Decoder::new(self.flavor, self.checksums, from).lowering_names(self.lower_case_names),
        ))
    }

    /// Follows the stream for ever: on a break, says so and resumes.
    async fn run(self, mut link: Link, mut decoder: Decoder, mut sink: impl BinlogSink) {
        loop {
            let ended = tokio::select! {
                ended = follow(&mut link, &mut decoder, &mut sink) => ended,
                refused = self.refused_later() => Ended::Refused(refused),
            };
            let (reason, mut gap, stolen) = match ended {
                Ended::Lost(r) => (r, false, false),
                Ended::Gap(r) => (r, true, false),
                Ended::Stolen(r) => (r, false, true),
                Ended::Refused(lines) => (settings_refused(&lines), true, false),
            };
            tracing::warn!(%reason, "binlog reader: stream lost at {}", decoder.applied());
            sink.deliver(StreamEvent::Lost {
                reason: reason.clone(),
                stolen,
            });
            // Taking a stolen stream back at once would steal it from the
            // other replica as fast: the two would take turns all the time.
            let mut delay = if stolen {
                STOLEN_WAIT
            } else {
                Duration::from_millis(50)
            };
            let mut from = decoder.applied().clone();
            let mut refused_before = if gap { reason.clone() } else { String::new() };
            loop {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
                match self.refused().await {
                    Ok(lines) if !lines.is_empty() => {
                        let reason = settings_refused(&lines);
                        if reason != refused_before {
                            tracing::warn!(%reason, "binlog reader: not streaming while the server's settings are refused");
                            refused_before = reason;
                        }
                        gap = true;
                        delay = SETTINGS_RECHECK;
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "binlog reader: cannot resume yet");
                        continue;
                    }
                }
                if gap {
                    match self.current().await {
                        Ok(p) => {
                            sink.deliver(StreamEvent::Change(Change::Everything {
                                reason: format!(
                                    "the binlog reader resumes at {p}, not at {from}: {reason}"
                                ),
                            }));
                            from = p;
                            gap = false;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "binlog reader: cannot read the position");
                            continue;
                        }
                    }
                }
                match self.open(&from).await {
                    Ok((l, d)) => {
                        tracing::info!("binlog reader: streaming again from {from}");
                        sink.deliver(StreamEvent::Started {
                            position: from,
                            connection_id: l.connection_id,
                        });
                        link = l;
                        decoder = d;
                        break;
                    }
                    Err(e) => tracing::warn!(error = %e, "binlog reader: cannot resume yet"),
                }
            }
        }
    }

    /// The refusals `start` would give now.
    async fn refused(&self) -> Result<Vec<String>, String> {
        let mut link = self.connect().await?;
        let observed = observe(&mut link).await;
        link.quit().await;
        Ok(refusals(&observed?))
    }

    /// Judges the settings every `SETTINGS_RECHECK`; returns the first
    /// refusals found. A check that cannot be made is not a refusal (the
    /// stream itself says whether the server is there).
    async fn refused_later(&self) -> Vec<String> {
        loop {
            tokio::time::sleep(SETTINGS_RECHECK).await;
            if let Ok(lines) = self.refused().await {
                if !lines.is_empty() {
                    return lines;
                }
            }
        }
    }

    async fn current(&self) -> Result<BinlogPosition, String> {
        let mut link = self.connect().await?;
        let p = current_position(&mut link).await;
        link.quit().await;
        p
    }
}

/// Why the stream stopped when the settings are refused: the lines
/// `hsd serve` refuses `--row-cache-mib` with at start.
fn settings_refused(lines: &[String]) -> String {
    format!(
        "the server's settings changed, and the row cache cannot be exact with them: {}",
        lines.join("; ")
    )
}

/// Reads events until the stream breaks, delivering what they mean.
async fn follow(link: &mut Link, decoder: &mut Decoder, sink: &mut impl BinlogSink) -> Ended {
    let mut out = Vec::new();
    loop {
        let payload = match link.packet().await {
            Ok((_, p)) => p,
            Err(f) => return Ended::Lost(f.error.to_string()),
        };
        let result = match StreamPacket::classify(&payload) {
            Ok(StreamPacket::Event(event)) => {
                decoder.decode(event, &|db, table| sink.wants_rows(db, table), &mut out)
            }
            Ok(StreamPacket::End) => Err("the server ended the binlog stream".to_string()),
            Ok(StreamPacket::Err(e)) if stolen(&e) => return Ended::Stolen(e.to_string()),
            Ok(StreamPacket::Err(e)) if e.code == ER_BINLOG_POSITION_GONE => {
                return Ended::Gap(e.to_string())
            }
            Ok(StreamPacket::Err(e)) => Err(format!("the server stopped the binlog stream: {e}")),
            Err(e) => Err(e),
        };
        for event in out.drain(..) {
            sink.deliver(event);
        }
        if let Err(e) = result {
            return Ended::Lost(e);
        }
    }
}

/// The server's binlog file and offset now (`SHOW MASTER STATUS`), without
/// its GTID state.
pub(crate) async fn master_status(link: &mut Link) -> Result<BinlogPosition, String> {
    let rows = query(link, "SHOW MASTER STATUS").await?;
    let row = rows
        .first()
        .ok_or("SHOW MASTER STATUS answered nothing: is the binary log on?")?;
    let file = row.first().cloned().flatten().unwrap_or_default();
    let offset = row
        .get(1)
        .cloned()
        .flatten()
        .and_then(|p| p.parse().ok())
        .ok_or("SHOW MASTER STATUS answered no position")?;
    Ok(BinlogPosition {
        file,
        offset,
        gtid: None,
    })
}

/// The server's binlog position now (MariaDB: with its GTID state).
async fn current_position(link: &mut Link) -> Result<BinlogPosition, String> {
    let BinlogPosition { file, offset, .. } = master_status(link).await?;
    let gtid = if link.server.is_mariadb() {
        let rows = query(link, "SELECT @@GLOBAL.gtid_binlog_pos").await?;
        Some(
            rows.into_iter()
                .next()
                .and_then(|r| r.into_iter().next().flatten())
                .unwrap_or_default(),
        )
    } else {
        None
    };
    Ok(BinlogPosition { file, offset, gtid })
}
