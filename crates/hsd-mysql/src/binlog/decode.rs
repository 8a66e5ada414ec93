//! Binlog events to `StreamEvent`s. `mysql_common` parses the format
//! description, table maps, rows events (v1 as MariaDB writes them, v2 as
//! MySQL 8 does), QUERY, XID and MySQL's GTID events; this file handles by
//! hand what it lacks: MariaDB's GTID event, the rotate event that comes
//! before any format description, checksums (verified here, CRC32), and
//! where each transaction ends.

use super::cells::{row_cells, unsigned_columns};
use super::statement::{classify, Statement};
use super::{BinlogPosition, Change, RowChange, StreamEvent};
use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::{Event, EventData, FormatDescriptionEvent, TableMapEvent};
use mysql_wire::binlog::{
    event_type as t, parse_rotate, strip_checksum, EventHeader, MariadbGtid, EVENT_HEADER_LEN,
    LOG_EVENT_ARTIFICIAL_F,
};
use mysql_wire::Flavor;
use std::collections::{BTreeMap, HashMap};

/// Event flag: a reader that does not know the event may skip it.
const LOG_EVENT_IGNORABLE_F: u16 = 0x80;

pub(super) struct Decoder {
    flavor: Flavor,
    checksums: bool,
    fde: Option<FormatDescriptionEvent<'static>>,
    tables: HashMap<u64, TableMapEvent<'static>>,
    /// The file being read and the end of the last event read.
    at: BinlogPosition,
    /// The end of the last transaction delivered whole.
    applied: BinlogPosition,
    /// MariaDB: each domain's last GTID (server, sequence).
    domains: BTreeMap<u32, (u32, u64)>,
    /// The GTID of the transaction being read.
    mariadb_gtid: Option<MariadbGtid>,
    mysql_gtid: Option<String>,
    in_transaction: bool,
    /// The server stores names in lower case (`lower_case_table_names =
    /// 1`): a statement's names, as typed, are lowered to match.
    lower_case_names: bool,
}

impl Decoder {
    /// Lowers the names a statement gives (see `lower_case_names`).
    pub(super) fn lowering_names(self, lower: bool) -> Decoder {
        Decoder {
            lower_case_names: lower,
            ..self
        }
    }

    /// A decoder for a stream that starts at `from`.
    pub(super) fn new(flavor: Flavor, checksums: bool, from: &BinlogPosition) -> Decoder {
        let mut domains = BTreeMap::new();
        if flavor.is_mariadb() {
            for gtid in from.gtid.as_deref().unwrap_or("").split(',') {
                let mut parts = gtid.trim().split('-').map(str::parse::<u64>);
                if let (Some(Ok(d)), Some(Ok(s)), Some(Ok(n))) =
                    (parts.next(), parts.next(), parts.next())
                {
                    domains.insert(d as u32, (s as u32, n));
                }
            }
        }
        Decoder {
            flavor,
            checksums,
            fde: None,
            tables: HashMap::new(),
            at: from.clone(),
            applied: from.clone(),
            domains,
            mariadb_gtid: None,
            mysql_gtid: None,
            in_transaction: false,
            lower_case_names: false,
        }
    }

    /// Where a new stream should start so that nothing is missed.
    pub(super) fn applied(&self) -> &BinlogPosition {
        &self.applied
    }

    /// Decodes one event (as the stream carries it, checksum included),
    /// appending what it means to `out`.
    /// Row images of a table `wants` refuses are skipped undecoded.
    pub(super) fn decode(
        &mut self,
        raw: &[u8],
        wants: &dyn Fn(&str, &str) -> bool,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), String> {
        let header = EventHeader::parse(raw)?;
        let event = if self.checksums {
            strip_checksum(raw)?
        } else {
            raw
        };
        let body = &event[EVENT_HEADER_LEN..];
        // The end of this event: where a transaction it ends is applied up
        // to (a rotate then moves to the next file).
        if header.log_pos != 0 && header.flags & LOG_EVENT_ARTIFICIAL_F == 0 {
            self.at.offset = u64::from(header.log_pos);
        }
        // `mysql_common` indexes metadata it trusts; a malformed event must
        // lose the stream, not the process.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.decode_event(&header, raw, body, wants, out)
        }))
        .unwrap_or_else(|_| {
            Err(format!(
                "cannot decode a binlog event of type {}",
                header.event_type
            ))
        })
    }

    fn decode_event(
        &mut self,
        header: &EventHeader,
        raw: &[u8],
        body: &[u8],
        wants: &dyn Fn(&str, &str) -> bool,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), String> {
        match header.event_type {
            t::ROTATE => {
                let (file, offset) = parse_rotate(body)?;
                if header.flags & LOG_EVENT_ARTIFICIAL_F == 0 {
                    // A real rotate: table ids start again in the next file.
                    self.tables.clear();
                }
                self.at.file = file;
                self.at.offset = offset;
                // The stream stays in step with a file only between
                // transactions: an Applied position names that file.
                if !self.in_transaction {
                    self.applied.file = self.at.file.clone();
                    self.applied.offset = offset;
                }
                Ok(())
            }
            t::FORMAT_DESCRIPTION => {
                let placeholder = FormatDescriptionEvent::new(BinlogVersion::Version4);
                let event = Event::read(&placeholder, raw).map_err(|e| e.to_string())?;
                let fde = event
                    .read_event::<FormatDescriptionEvent>()
                    .map_err(|e| format!("format description: {e}"))?;
                self.fde = Some(fde.into_owned().with_footer(event.footer()));
                self.tables.clear();
                if !self.in_transaction {
                    self.applied.file = self.at.file.clone();
                    self.applied.offset = self.at.offset;
                }
                Ok(())
            }
            t::MARIADB_GTID => {
                let gtid = MariadbGtid::parse(body, header.server_id)?;
                self.in_transaction = !gtid.standalone();
                self.mariadb_gtid = Some(gtid);
                Ok(())
            }
            t::XID | t::XA_PREPARE => {
                self.end_transaction(header.timestamp, out);
                Ok(())
            }
            t::HEARTBEAT => {
                // The server's position while idle: everything before it
                // was sent (or is not for replicas).
                if !self.in_transaction {
                    let file = String::from_utf8_lossy(body);
                    let file = file.trim_end_matches('\0');
                    if file == self.at.file && u64::from(header.log_pos) > self.at.offset {
                        self.at.offset = u64::from(header.log_pos);
                    }
                    self.applied.file = self.at.file.clone();
                    self.applied.offset = self.at.offset;
                    out.push(StreamEvent::Applied {
                        position: self.applied.clone(),
                        commit_time: 0,
                    });
                }
                Ok(())
            }
            t::TABLE_MAP
            | t::WRITE_ROWS_V1
            | t::UPDATE_ROWS_V1
            | t::DELETE_ROWS_V1
            | t::WRITE_ROWS
            | t::UPDATE_ROWS
            | t::DELETE_ROWS
            | t::PARTIAL_UPDATE_ROWS
            | t::QUERY
            | t::GTID => self.parsed_event(raw, header.timestamp, wants, out),
            t::ANONYMOUS_GTID => {
                self.mysql_gtid = None;
                Ok(())
            }
            // Statement context inside a transaction: nothing changes.
            5 | 13 | 14 | 28 | 29 | t::MARIADB_ANNOTATE_ROWS => Ok(()),
            // Bookkeeping between transactions: nothing changes, and the
            // applied position moves past it (a server's position after
            // FLUSH LOGS is after these).
            3
            | 35
            | 36
            | 37
            | t::MARIADB_BINLOG_CHECKPOINT
            | t::MARIADB_GTID_LIST
            | t::MARIADB_START_ENCRYPTION => {
                if !self.in_transaction {
                    self.applied.file = self.at.file.clone();
                    self.applied.offset = self.at.offset;
                }
                Ok(())
            }
            _ if header.flags & LOG_EVENT_IGNORABLE_F != 0 => Ok(()),
            other => {
                out.push(StreamEvent::Change(Change::Everything {
                    reason: format!("a binlog event of type {other} the reader does not decode"),
                }));
                if !self.in_transaction {
                    self.end_transaction(header.timestamp, out);
                }
                Ok(())
            }
        }
    }

    /// The events `mysql_common` parses.
    fn parsed_event(
        &mut self,
        raw: &[u8],
        time: u32,
        wants: &dyn Fn(&str, &str) -> bool,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), String> {
        let fde = self
            .fde
            .as_ref()
            .ok_or("a binlog event before the format description")?;
        let event = Event::read(fde, raw).map_err(|e| e.to_string())?;
        let data = event
            .read_data()
            .map_err(|e| format!("binlog event: {e}"))?
            .ok_or("a binlog event of an unknown type")?;
        match data {
            EventData::TableMapEvent(tme) => {
                self.tables.insert(tme.table_id(), tme.into_owned());
            }
            EventData::RowsEvent(rows) => {
                let Some(tme) = self.tables.get(&rows.table_id()) else {
                    out.push(StreamEvent::Change(Change::Everything {
                        reason: format!("rows of table id {} with no table map", rows.table_id()),
                    }));
                    return Ok(());
                };
                // By the names the changes below carry.
                if !wants(&tme.database_name(), &tme.table_name()) {
                    return Ok(());
                }
                let columns = rows.num_columns() as usize;
                let before_bits: Option<Vec<bool>> = rows.columns_before_image().map(|b| {
                    (0..columns)
                        .map(|i| b.get(i).as_deref().copied().unwrap_or(false))
                        .collect()
                });
                let after_bits: Option<Vec<bool>> = rows.columns_after_image().map(|b| {
                    (0..columns)
                        .map(|i| b.get(i).as_deref().copied().unwrap_or(false))
                        .collect()
                });
                let unsigned = unsigned_columns(tme);
                let db = tme.database_name().into_owned();
                let table = tme.table_name().into_owned();
                for row in rows.rows(tme) {
                    let (before, after) = row.map_err(|e| format!("rows of {db}.{table}: {e}"))?;
                    let image = |row: Option<_>, bits: &Option<Vec<bool>>| {
                        let (Some(row), Some(bits)) = (row, bits) else {
                            return None;
                        };
                        Some(row_cells(row, bits.iter().copied(), tme, &unsigned))
                    };
                    out.push(StreamEvent::Change(Change::Row(RowChange {
                        db: db.clone(),
                        table: table.clone(),
                        before: image(before, &before_bits),
                        after: image(after, &after_bits),
                    })));
                }
            }
            EventData::QueryEvent(q) => {
                match lowered(classify(&q.schema(), q.query_raw()), self.lower_case_names) {
                    Statement::Begin => self.in_transaction = true,
                    Statement::End => self.end_transaction(time, out),
                    Statement::Neutral => {
                        if !self.in_transaction {
                            self.end_transaction(time, out);
                        }
                    }
                    Statement::Changes(changes) => {
                        out.extend(changes.into_iter().map(StreamEvent::Change));
                        if !self.in_transaction {
                            self.end_transaction(time, out);
                        }
                    }
                    Statement::EndWith(changes) => {
                        out.extend(changes.into_iter().map(StreamEvent::Change));
                        self.end_transaction(time, out);
                    }
                }
            }
            EventData::GtidEvent(g) => {
                self.mysql_gtid = Some(format!("{}:{}", uuid_text(&g.sid()), g.gno()));
            }
            _ => {}
        }
        Ok(())
    }

    /// The transaction read so far is whole: it is applied once its
    /// changes are delivered.
    fn end_transaction(&mut self, commit_time: u32, out: &mut Vec<StreamEvent>) {
        self.in_transaction = false;
        let gtid = if self.flavor.is_mariadb() {
            if let Some(g) = self.mariadb_gtid.take() {
                self.domains.insert(g.domain, (g.server, g.sequence));
            }
            Some(
                self.domains
                    .iter()
                    .map(|(d, (s, n))| format!("{d}-{s}-{n}"))
                    .collect::<Vec<_>>()
                    .join(","),
            )
        } else {
            self.mysql_gtid.take().or_else(|| self.applied.gtid.clone())
        };
        self.applied = BinlogPosition {
            file: self.at.file.clone(),
            offset: self.at.offset,
            gtid,
        };
        out.push(StreamEvent::Applied {
            position: self.applied.clone(),
            commit_time,
        });
    }
}

fn uuid_text(sid: &[u8; 16]) -> String {
    let hex: String = sid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `statement` with the tables it names in lower case, when the server
/// stores them so (`lower_case_table_names = 1`: `TRUNCATE TABLE RT.T2`
/// changes `rt`.`t2`, the name its row events and its tables carry).
fn lowered(statement: Statement, lower: bool) -> Statement {
    if !lower {
        return statement;
    }
    let lower_all = |changes: Vec<Change>| -> Vec<Change> {
        changes
            .into_iter()
            .map(|c| match c {
                Change::Table { db, table } => Change::Table {
                    db: db.to_lowercase(),
                    table: table.to_lowercase(),
                },
                other => other,
            })
            .collect()
    };
    match statement {
        Statement::Changes(c) => Statement::Changes(lower_all(c)),
        Statement::EndWith(c) => Statement::EndWith(lower_all(c)),
        other => other,
    }
}
