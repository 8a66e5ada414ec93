//! `HANDLER ... READ`: the server's own statement for reading rows by
//! index, one table handle per connection.
//!
//! It is what a find does on the original plugin, at the SQL level: the key
//! values are stored into the key columns first (padding, clamping,
//! truncating as a write would), the index is read with the same seek
//! (`=`, `>=`, `>`, `<=`, `<`) and walked with next/prev, and no optimizer
//! runs. Measured on MariaDB 10.11, a lone lookup costs the server less
//! than half of a prepared SELECT's CPU.
//!
//! An open handle holds a metadata lock: a waiting ALTER TABLE would wait
//! for as long as the handle stays open, even while the connection is idle.
//! So a handle is leased for `LEASE` only: after that it is closed and
//! opened again on next use, and an idle connection closes all of its
//! handles (see `dispatch`'s read batcher), so DDL waits at most about
//! `LEASE`.

use super::link::Link;
use hsd_storage::TableMeta;
use mysql_wire::literal::{push_identifier, push_number};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// How long a handle stays open before it is reopened.
pub(super) const LEASE: Duration = Duration::from_millis(50);

struct OpenHandle {
    alias: Vec<u8>,
    opened: Instant,
}

/// The handles open on one connection, by table.
#[derive(Default)]
pub(super) struct Handles {
    open: HashMap<String, OpenHandle>,
    next_alias: u64,
    /// Tables whose engine refuses `HANDLER ... OPEN` (1031, as MERGE
    /// does, though its handler reads by index): read by SELECT from then
    /// on. Kept when the connection is lost: it is the table's engine.
    refused: HashSet<String>,
}

impl Handles {
    /// The alias of an open handle on `table`, queueing a (re)open first
    /// when there is none or its lease ran out. The housekeeping statements
    /// queued (their answers come before the read's) are in `queued`.
    pub(super) fn alias_for(
        &mut self,
        link: &mut Link,
        table: &TableMeta,
        queued: &mut Vec<Housekeeping>,
    ) -> Vec<u8> {
        if let Some(h) = self.open.get(&table.table_sql) {
            if h.opened.elapsed() < LEASE {
                return h.alias.clone();
            }
            let alias = h.alias.clone();
            close(link, &alias);
            queued.push(Housekeeping::Close);
            self.open.remove(&table.table_sql);
        }
        self.next_alias += 1;
        let mut alias = b"hsd_h".to_vec();
        push_number(&mut alias, self.next_alias);
        let a = alias.clone();
        link.queue(|sql| {
            sql.extend_from_slice(b"HANDLER ");
            sql.extend_from_slice(table.table_sql.as_bytes());
            sql.extend_from_slice(b" OPEN AS ");
            sql.extend_from_slice(&a);
        });
        queued.push(Housekeeping::Open);
        self.open.insert(
            table.table_sql.clone(),
            OpenHandle {
                alias: alias.clone(),
                opened: Instant::now(),
            },
        );
        alias
    }

    /// Forgets the handle on `table`: the server has none (its OPEN
    /// failed, or it does not know the alias).
    pub(super) fn forget(&mut self, table: &TableMeta) {
        self.open.remove(&table.table_sql);
    }

    /// `table`'s engine refused HANDLER: its scans go by SELECT.
    pub(super) fn refuse(&mut self, table: &TableMeta) {
        self.refused.insert(table.table_sql.clone());
    }

    /// Whether `table`'s engine refused HANDLER.
    pub(super) fn refuses(&self, table: &TableMeta) -> bool {
        self.refused.contains(&table.table_sql)
    }

    /// The connection was lost: the server closed every handle.
    pub(super) fn clear(&mut self) {
        self.open.clear();
    }

    /// When the oldest lease runs out.
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        self.open.values().map(|h| h.opened + LEASE).min()
    }

    /// Queues a CLOSE for every open handle; returns how many.
    pub(super) fn close_all(&mut self, link: &mut Link) -> usize {
        let n = self.open.len();
        for (_, h) in self.open.drain() {
            close(link, &h.alias);
        }
        n
    }
}

/// A statement queued to keep handles, whose answer has no rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Housekeeping {
    Open,
    Close,
}

fn close(link: &mut Link, alias: &[u8]) {
    link.queue(|sql| {
        sql.extend_from_slice(b"HANDLER ");
        sql.extend_from_slice(alias);
        sql.extend_from_slice(b" CLOSE");
    });
}

/// Appends the index name as HANDLER READ wants it.
pub(super) fn push_index_name(sql: &mut Vec<u8>, name: &str) {
    push_identifier(sql, name.as_bytes());
}
