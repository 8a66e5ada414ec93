//! The binary log reader: follows the server's binlog as a replica does
//! (its own server id, its own connection) and turns it into changes of
//! rows and tables, with the position each transaction ends at, so that a
//! row cache can evict what changed and say "applied up to X". See
//! docs/mysql.md, "The binary log reader".
//!
//! - `checks`: the server settings and grants the reader needs, refused
//!   with one line each at start.
//! - `stream`: the connection: replica session, dump command, heartbeats,
//!   reconnection from the last applied position.
//! - `decode`: events to `StreamEvent`s (rows with `mysql_common`, MariaDB's
//!   GTID events by hand); `cells`: values in hsd's text form.
//! - `statement`: what a statement logged as text (DDL) changes.
//!
//! Positions: on MariaDB the reader streams by GTID (`@slave_connect_state`)
//! and reports the GTID state; on MySQL it streams by file and offset, which
//! needs no GTID mode, and reports the last GTID too when there is one.

mod cells;
mod checks;
mod decode;
mod statement;
mod stream;

pub(crate) use checks::query;
pub(crate) use stream::master_status;
pub use stream::{BinlogReader, BinlogSink, ReaderSettings};

/// One column of a row image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Null,
    /// The value as a text query returns it (see `cells` for the types).
    Text(Vec<u8>),
    /// A value of a type the reader does not turn into text: a key on it
    /// cannot be evicted by value.
    Undecoded,
    /// Not in the image (a session with binlog_row_image other than FULL).
    Absent,
}

/// A row image: one cell per column, in the table's column order.
pub type Row = Vec<Cell>;

/// One row inserted (`after` only), deleted (`before` only) or updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowChange {
    pub db: String,
    pub table: String,
    pub before: Option<Row>,
    pub after: Option<Row>,
}

/// What a cache must forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Row(RowChange),
    /// The table's definition or all its rows changed (ALTER, DROP,
    /// RENAME, TRUNCATE, CREATE): drop its rows and its metadata.
    Table {
        db: String,
        table: String,
    },
    /// Something the reader cannot attribute to rows or tables changed
    /// (a statement logged as text, an unknown event, a gap in the log):
    /// drop everything.
    Everything {
        reason: String,
    },
}

/// A place in the binary log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinlogPosition {
    /// The binlog file and the offset just after the last event applied.
    pub file: String,
    pub offset: u64,
    /// MariaDB: the GTID state (`@@gtid_binlog_pos` form, every domain's
    /// last GTID). MySQL: the last transaction's GTID (`uuid:n`), when the
    /// server has GTIDs on.
    pub gtid: Option<String>,
}

impl BinlogPosition {
    /// Whether this place is at or after `other` in the same server's
    /// binlog (files compare by their numeric suffix, then offsets): a
    /// reader that applied `self` has applied everything up to `other`.
    pub fn reached(&self, other: &BinlogPosition) -> bool {
        let number = |file: &str| {
            file.rsplit_once('.')
                .and_then(|(_, n)| n.parse::<u64>().ok())
        };
        let files = match (number(&self.file), number(&other.file)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.file.cmp(&other.file),
        };
        files.then(self.offset.cmp(&other.offset)).is_ge()
    }
}

impl std::fmt::Display for BinlogPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.offset)?;
        if let Some(g) = &self.gtid {
            write!(f, " ({g})")?;
        }
        Ok(())
    }
}

/// What the reader tells its sink, in binlog order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// Streaming (again) from `position`, on the server connection
    /// `connection_id`. Changes since the last `Applied` may come again.
    Started {
        position: BinlogPosition,
        connection_id: u64,
    },
    /// A change, committed on the server (events reach the binlog at
    /// commit). Evicting on it at once is safe.
    Change(Change),
    /// Every transaction up to `position` has been delivered.
    /// `commit_time` is the server's clock (Unix seconds) when the last of
    /// them was logged: the reader's lag is now minus it. A heartbeat of an
    /// idle stream (every second at most) says `Applied` too, with the
    /// server's own position and a `commit_time` of 0: nothing is waiting.
    Applied {
        position: BinlogPosition,
        commit_time: u32,
    },
    /// The stream broke: until the next `Started`, changes may be missed
    /// (a cache stops serving). The reader reconnects by itself.
    /// `stolen`: the server gave the stream to another replica that
    /// registered with the same server id.
    Lost { reason: String, stolen: bool },
}

#[cfg(test)]
mod tests {
    use super::BinlogPosition;

    #[test]
    fn positions_compare_by_file_number_then_offset() {
        let at = |file: &str, offset| BinlogPosition {
            file: file.to_string(),
            offset,
            gtid: None,
        };
        assert!(at("bin.000002", 4).reached(&at("bin.000001", 900)));
        assert!(at("bin.000010", 4).reached(&at("bin.000009", 900)));
        assert!(at("bin.000001", 900).reached(&at("bin.000001", 900)));
        assert!(!at("bin.000001", 899).reached(&at("bin.000001", 900)));
        assert!(!at("bin.000001", 900).reached(&at("bin.000002", 4)));
    }
}
