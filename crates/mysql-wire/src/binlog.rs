//! The replication protocol as bytes: the commands a replica sends
//! (COM_REGISTER_SLAVE, COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID), the packets
//! of the event stream that answers them, the common event header, the
//! CRC32 event checksum, and MariaDB's GTID events (which general binlog
//! parsers for MySQL do not know).

use crate::number::get_le;
use crate::packet::PacketWriter;

pub const COM_BINLOG_DUMP: u8 = 0x12;
pub const COM_REGISTER_SLAVE: u8 = 0x15;
pub const COM_BINLOG_DUMP_GTID: u8 = 0x1e;

/// COM_BINLOG_DUMP_GTID flag: the GTID set follows.
const BINLOG_THROUGH_GTID: u16 = 0x04;

/// Length of the header every event starts with.
pub const EVENT_HEADER_LEN: usize = 19;
/// Length of an event's CRC32 checksum, at its end when checksums are on.
pub const CHECKSUM_LEN: usize = 4;

/// Event types read by their number (the common ones of both servers).
pub mod event_type {
    pub const QUERY: u8 = 2;
    pub const ROTATE: u8 = 4;
    pub const FORMAT_DESCRIPTION: u8 = 15;
    pub const XID: u8 = 16;
    pub const TABLE_MAP: u8 = 19;
    pub const WRITE_ROWS_V1: u8 = 23;
    pub const UPDATE_ROWS_V1: u8 = 24;
    pub const DELETE_ROWS_V1: u8 = 25;
    pub const HEARTBEAT: u8 = 27;
    pub const WRITE_ROWS: u8 = 30;
    pub const UPDATE_ROWS: u8 = 31;
    pub const DELETE_ROWS: u8 = 32;
    /// MySQL's GTID event.
    pub const GTID: u8 = 33;
    pub const ANONYMOUS_GTID: u8 = 34;
    pub const XA_PREPARE: u8 = 38;
    pub const PARTIAL_UPDATE_ROWS: u8 = 39;
    pub const TRANSACTION_PAYLOAD: u8 = 40;
    /// MariaDB: the statement of the rows events that follow.
    pub const MARIADB_ANNOTATE_ROWS: u8 = 160;
    pub const MARIADB_BINLOG_CHECKPOINT: u8 = 161;
    /// MariaDB's GTID event: starts a transaction.
    pub const MARIADB_GTID: u8 = 162;
    pub const MARIADB_GTID_LIST: u8 = 163;
    pub const MARIADB_START_ENCRYPTION: u8 = 164;
    pub const MARIADB_QUERY_COMPRESSED: u8 = 165;
    /// MariaDB's compressed rows events (log_bin_compress), 166 to 171.
    pub const MARIADB_FIRST_COMPRESSED_ROWS: u8 = 166;
    pub const MARIADB_LAST_COMPRESSED_ROWS: u8 = 171;
}

/// A replica's COM_REGISTER_SLAVE: makes it known to the server (SHOW
/// REPLICA HOSTS) under `server_id`.
pub fn register_replica(out: &mut Vec<u8>, server_id: u32, host: &str, port: u16) {
    let w = PacketWriter::begin(out, 0);
    out.push(COM_REGISTER_SLAVE);
    out.extend_from_slice(&server_id.to_le_bytes());
    let host = &host.as_bytes()[..host.len().min(255)];
    out.push(host.len() as u8);
    out.extend_from_slice(host);
    out.push(0); // user
    out.push(0); // password
    out.extend_from_slice(&port.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // replication rank
    out.extend_from_slice(&0u32.to_le_bytes()); // source id: filled by the server
    w.finish(out);
}

/// COM_BINLOG_DUMP: stream events from `file` at `position` (MariaDB with
/// `@slave_connect_state` set ignores both and starts at that GTID state).
pub fn binlog_dump(out: &mut Vec<u8>, server_id: u32, file: &str, position: u32) {
    let w = PacketWriter::begin(out, 0);
    out.push(COM_BINLOG_DUMP);
    out.extend_from_slice(&position.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // flags: block at the end
    out.extend_from_slice(&server_id.to_le_bytes());
    out.extend_from_slice(file.as_bytes());
    w.finish(out);
}

/// MySQL's COM_BINLOG_DUMP_GTID: stream every transaction not in `executed`
/// (already encoded by `encode_gtid_set`).
pub fn binlog_dump_gtid(out: &mut Vec<u8>, server_id: u32, executed: &[u8]) {
    let w = PacketWriter::begin(out, 0);
    out.push(COM_BINLOG_DUMP_GTID);
    out.extend_from_slice(&BINLOG_THROUGH_GTID.to_le_bytes());
    out.extend_from_slice(&server_id.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // no file name
    out.extend_from_slice(&4u64.to_le_bytes()); // position: after the magic
    out.extend_from_slice(&(executed.len() as u32).to_le_bytes());
    out.extend_from_slice(executed);
    w.finish(out);
}

/// A MySQL GTID set in text (`uuid:1-5:7,uuid2:1-3`, as `@@gtid_executed`
/// shows it) in the binary form of COM_BINLOG_DUMP_GTID: the count of
/// source ids, then each id's 16 bytes, its count of intervals and each
/// interval as first and one-past-last number.
pub fn encode_gtid_set(text: &str) -> Result<Vec<u8>, String> {
    let sets: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut out = Vec::new();
    out.extend_from_slice(&(sets.len() as u64).to_le_bytes());
    for set in sets {
        let mut parts = set.split(':');
        let uuid = parts.next().unwrap_or_default();
        let hex: String = uuid.chars().filter(|c| *c != '-').collect();
        if hex.len() != 32 {
            return Err(format!("bad source id {uuid:?} in GTID set"));
        }
        for i in 0..16 {
            let byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| format!("bad source id {uuid:?} in GTID set"))?;
            out.push(byte);
        }
        let intervals: Vec<&str> = parts.collect();
        out.extend_from_slice(&(intervals.len() as u64).to_le_bytes());
        for interval in intervals {
            let (first, last) = interval.split_once('-').unwrap_or((interval, interval));
            let number = |s: &str| {
                s.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("bad interval {interval:?} in GTID set"))
            };
            let (first, last) = (number(first)?, number(last)?);
            if first == 0 || last < first {
                return Err(format!("bad interval {interval:?} in GTID set"));
            }
            out.extend_from_slice(&first.to_le_bytes());
            out.extend_from_slice(&(last + 1).to_le_bytes());
        }
    }
    Ok(out)
}

/// One packet of the event stream.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamPacket<'a> {
    /// An event: header, body and (with checksums on) its checksum.
    Event(&'a [u8]),
    /// The server ended the stream (only for a non-blocking dump).
    End,
    /// An ERR packet: the server stopped the stream.
    Err(crate::ErrPacket),
}

impl StreamPacket<'_> {
    /// Classifies a payload of the stream.
    pub fn classify(payload: &[u8]) -> Result<StreamPacket<'_>, String> {
        match payload.first() {
            Some(0x00) => Ok(StreamPacket::Event(&payload[1..])),
            Some(0xfe) if payload.len() < 9 => Ok(StreamPacket::End),
            Some(0xff) => Ok(StreamPacket::Err(crate::ErrPacket::parse(payload))),
            Some(b) => Err(format!("unexpected packet 0x{b:02x} in the binlog stream")),
            None => Err("an empty packet in the binlog stream".to_string()),
        }
    }
}

/// The header every event starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHeader {
    pub timestamp: u32,
    pub event_type: u8,
    pub server_id: u32,
    pub event_size: u32,
    /// Where the next event starts in the binlog file (0 for artificial
    /// events).
    pub log_pos: u32,
    pub flags: u16,
}

/// Event flag: made up by the server for the stream, not in the file.
pub const LOG_EVENT_ARTIFICIAL_F: u16 = 0x20;

impl EventHeader {
    /// Parses the header of `event`, checking that its size is the event's.
    pub fn parse(event: &[u8]) -> Result<EventHeader, String> {
        if event.len() < EVENT_HEADER_LEN {
            return Err(format!("a binlog event of {} bytes", event.len()));
        }
        let field = |at, n| get_le(event, at, n).unwrap_or(0);
        let header = EventHeader {
            timestamp: field(0, 4) as u32,
            event_type: event[4],
            server_id: field(5, 4) as u32,
            event_size: field(9, 4) as u32,
            log_pos: field(13, 4) as u32,
            flags: field(17, 2) as u16,
        };
        if header.event_size as usize != event.len() {
            return Err(format!(
                "a binlog event (type {}) says {} bytes and has {}",
                header.event_type,
                header.event_size,
                event.len()
            ));
        }
        Ok(header)
    }
}

/// Checks an event's CRC32 (its last 4 bytes) and returns the event
/// without them.
pub fn strip_checksum(event: &[u8]) -> Result<&[u8], String> {
    if event.len() < EVENT_HEADER_LEN + CHECKSUM_LEN {
        return Err(format!(
            "a binlog event of {} bytes cannot hold a checksum",
            event.len()
        ));
    }
    let (body, sum) = event.split_at(event.len() - CHECKSUM_LEN);
    let expected = u32::from_le_bytes([sum[0], sum[1], sum[2], sum[3]]);
    let mut crc = crc32fast::Hasher::new();
    crc.update(body);
    let actual = crc.finalize();
    if actual != expected {
        return Err(format!(
            "a binlog event (type {}) fails its checksum",
            body[4]
        ));
    }
    Ok(body)
}

/// A Rotate event's body (header and checksum removed): the next file and
/// where to start in it.
pub fn parse_rotate(body: &[u8]) -> Result<(String, u64), String> {
    let position = get_le(body, 0, 8).ok_or("a short rotate event")?;
    let file = String::from_utf8_lossy(&body[8..]).into_owned();
    Ok((file, position))
}

/// MariaDB GTID flag: the transaction is one statement, with no COMMIT or
/// XID event after it (DDL).
pub const MARIADB_GTID_STANDALONE: u8 = 0x01;

/// MariaDB's GTID event (162): `domain-server-sequence` of the transaction
/// it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MariadbGtid {
    pub domain: u32,
    pub server: u32,
    pub sequence: u64,
    pub flags: u8,
}

impl MariadbGtid {
    /// Parses the body (header and checksum removed); `server` is the
    /// header's server id.
    pub fn parse(body: &[u8], server: u32) -> Result<MariadbGtid, String> {
        let short = || "a short MariaDB GTID event".to_string();
        Ok(MariadbGtid {
            sequence: get_le(body, 0, 8).ok_or_else(short)?,
            domain: get_le(body, 8, 4).ok_or_else(short)? as u32,
            server,
            flags: *body.get(12).ok_or_else(short)?,
        })
    }

    /// The transaction ends with its one statement.
    pub fn standalone(&self) -> bool {
        self.flags & MARIADB_GTID_STANDALONE != 0
    }
}

impl std::fmt::Display for MariadbGtid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}-{}", self.domain, self.server, self.sequence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Frame, PacketReader};

    fn payload(out: &[u8]) -> Vec<u8> {
        match PacketReader::next(out, 0) {
            Some(Frame::Whole { range, .. }) => out[range].to_vec(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dump_by_file_and_position() {
        let mut out = Vec::new();
        binlog_dump(&mut out, 77, "bin.000002", 1234);
        let p = payload(&out);
        assert_eq!(p[0], COM_BINLOG_DUMP);
        assert_eq!(&p[1..5], &1234u32.to_le_bytes());
        assert_eq!(&p[5..7], &[0, 0]);
        assert_eq!(&p[7..11], &77u32.to_le_bytes());
        assert_eq!(&p[11..], b"bin.000002");
    }

    #[test]
    fn register_replica_layout() {
        let mut out = Vec::new();
        register_replica(&mut out, 9, "hsd", 3306);
        let p = payload(&out);
        assert_eq!(p[0], COM_REGISTER_SLAVE);
        assert_eq!(&p[1..5], &9u32.to_le_bytes());
        assert_eq!(&p[5..9], &[3, b'h', b's', b'd']);
        assert_eq!(&p[9..11], &[0, 0]);
        assert_eq!(&p[11..13], &3306u16.to_le_bytes());
        assert_eq!(p.len(), 21);
    }

    #[test]
    fn gtid_set_encoding() {
        let set = encode_gtid_set("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7").unwrap();
        assert_eq!(&set[..8], &1u64.to_le_bytes());
        assert_eq!(set[8], 0x3e);
        assert_eq!(set[23], 0x62);
        assert_eq!(&set[24..32], &2u64.to_le_bytes());
        assert_eq!(&set[32..40], &1u64.to_le_bytes());
        assert_eq!(&set[40..48], &6u64.to_le_bytes());
        assert_eq!(&set[48..56], &7u64.to_le_bytes());
        assert_eq!(&set[56..64], &8u64.to_le_bytes());
        assert_eq!(set.len(), 64);
        assert_eq!(encode_gtid_set("").unwrap(), 0u64.to_le_bytes());
        assert!(encode_gtid_set("nope:1-2").is_err());
        assert!(encode_gtid_set("3E11FA47-71CA-11E1-9E33-C80AA9429562:5-2").is_err());

        let mut out = Vec::new();
        binlog_dump_gtid(&mut out, 5, &set);
        let p = payload(&out);
        assert_eq!(p[0], COM_BINLOG_DUMP_GTID);
        assert_eq!(&p[1..3], &4u16.to_le_bytes());
        assert_eq!(&p[3..7], &5u32.to_le_bytes());
        assert_eq!(&p[7..11], &0u32.to_le_bytes());
        assert_eq!(&p[11..19], &4u64.to_le_bytes());
        assert_eq!(&p[19..23], &(set.len() as u32).to_le_bytes());
        assert_eq!(&p[23..], &set[..]);
    }

    fn event(event_type: u8, body: &[u8], checksum: bool) -> Vec<u8> {
        let size = EVENT_HEADER_LEN + body.len() + if checksum { CHECKSUM_LEN } else { 0 };
        let mut e = Vec::new();
        e.extend_from_slice(&100u32.to_le_bytes());
        e.push(event_type);
        e.extend_from_slice(&1u32.to_le_bytes());
        e.extend_from_slice(&(size as u32).to_le_bytes());
        e.extend_from_slice(&4000u32.to_le_bytes());
        e.extend_from_slice(&0u16.to_le_bytes());
        e.extend_from_slice(body);
        if checksum {
            let sum = crc32fast::hash(&e);
            e.extend_from_slice(&sum.to_le_bytes());
        }
        e
    }

    #[test]
    fn header_checksum_and_mariadb_gtid() {
        let mut body = 42u64.to_le_bytes().to_vec();
        body.extend_from_slice(&3u32.to_le_bytes());
        body.push(MARIADB_GTID_STANDALONE);
        let e = event(event_type::MARIADB_GTID, &body, true);
        let h = EventHeader::parse(&e).unwrap();
        assert_eq!(h.event_type, event_type::MARIADB_GTID);
        assert_eq!(h.log_pos, 4000);
        let stripped = strip_checksum(&e).unwrap();
        let gtid = MariadbGtid::parse(&stripped[EVENT_HEADER_LEN..], h.server_id).unwrap();
        assert_eq!(gtid.to_string(), "3-1-42");
        assert!(gtid.standalone());

        let mut bad = e.clone();
        bad[EVENT_HEADER_LEN] ^= 1;
        assert!(strip_checksum(&bad).is_err());
        assert!(EventHeader::parse(&e[..e.len() - 1]).is_err());
        assert!(MariadbGtid::parse(&body[..5], 1).is_err());
    }

    #[test]
    fn stream_packets() {
        assert_eq!(
            StreamPacket::classify(&[0, 1, 2]).unwrap(),
            StreamPacket::Event(&[1, 2])
        );
        assert_eq!(
            StreamPacket::classify(&[0xfe, 0, 0, 2, 0]).unwrap(),
            StreamPacket::End
        );
        match StreamPacket::classify(b"\xff\xe4\x04#HY000purged").unwrap() {
            StreamPacket::Err(e) => assert_eq!(e.code, 1252),
            other => panic!("{other:?}"),
        }
        assert!(StreamPacket::classify(&[]).is_err());
        let (file, pos) = parse_rotate(b"\x04\0\0\0\0\0\0\0bin.000003").unwrap();
        assert_eq!((file.as_str(), pos), ("bin.000003", 4));
    }
}
