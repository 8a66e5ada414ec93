//! The writes this process acknowledged, as the server numbered them, so
//! that a read under `--read-consistency acknowledged` knows what the
//! binlog reader must have applied without asking the server.
//!
//! Each commit's GTID comes back in its OK packet (`session_track_gtids`
//! on MySQL, `last_gtid` on MariaDB) and is noted before the writes are
//! answered. They are kept as commit marks (per MariaDB domain its highest
//! sequence number, per MySQL source its highest transaction number): a
//! server writes one source's transactions to its binary log in the order
//! it numbers them, so a reader that applied number n of a source has
//! applied every lower one. A commit whose GTID is not known (its answer
//! was lost, or the server reports none) is counted instead: reads then
//! ask the server's position until one asked after it has been applied.

use super::super::binlog::query;
use super::super::link::{Link, LinkSettings};
use mysql_wire::{Flavor, GtidSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) struct AckedWrites {
    flavor: Flavor,
    marks: Mutex<Arc<GtidSet>>,
    untracked: AtomicU64,
}

/// A commit as the connection saw it.
pub(crate) enum NotedCommit<'a> {
    /// The GTID its OK packet reported.
    Gtid(&'a [u8]),
    /// Committed (or maybe committed) without a GTID hsd knows.
    Untracked,
}

impl AckedWrites {
    pub(crate) fn new(flavor: Flavor) -> AckedWrites {
        AckedWrites {
            flavor,
            marks: Mutex::default(),
            untracked: AtomicU64::new(0),
        }
    }

    /// Notes a commit, before its writes are answered.
    pub(crate) fn note(&self, commit: NotedCommit<'_>) {
        let parsed = match commit {
            NotedCommit::Gtid(g) => std::str::from_utf8(g).ok().and_then(|t| self.parse(t)),
            NotedCommit::Untracked => None,
        };
        let Some(gtid) = parsed else {
            self.untracked.fetch_add(1, Ordering::AcqRel);
            return;
        };
        let mut marks = self.marks.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = (**marks).clone();
        next.merge(&gtid);
        *marks = Arc::new(next.commit_marks());
    }

    /// A GTID text in the server's dialect, as commit marks.
    pub(crate) fn parse(&self, text: &str) -> Option<GtidSet> {
        commit_marks(self.flavor, text)
    }

    /// The marks of every commit noted so far.
    pub(crate) fn marks(&self) -> Arc<GtidSet> {
        self.marks.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Commits noted without a GTID so far.
    pub(crate) fn untracked(&self) -> u64 {
        self.untracked.load(Ordering::Acquire)
    }
}

/// `text`, a GTID or GTID state of a MariaDB (`mariadb`) or MySQL server,
/// as commit marks.
pub(super) fn commit_marks(flavor: Flavor, text: &str) -> Option<GtidSet> {
    let parsed = if flavor.is_mariadb() {
        GtidSet::parse_mariadb(text)
    } else {
        GtidSet::parse_mysql(text)
    };
    parsed.ok().map(|p| p.commit_marks())
}

/// Whether the server is MariaDB, and whether it numbers every commit
/// (MariaDB always; MySQL with `gtid_mode = ON`). `None`: it could not be
/// asked (reads then ask its position, as without GTIDs).
pub(super) async fn numbering(settings: &LinkSettings) -> Option<(Flavor, bool)> {
    let mut link = Link::connect(settings).await.ok()?;
    let flavor = link.server.flavor;
    let numbered = if flavor.is_mariadb() {
        true
    } else {
        let rows = query(&mut link, "SELECT @@GLOBAL.gtid_mode").await.ok()?;
        let mode = rows.first().and_then(|r| r.first().cloned().flatten());
        mode.is_some_and(|m| m.eq_ignore_ascii_case("ON"))
    };
    link.quit().await;
    Some((flavor, numbered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_marks_keep_each_sources_highest_number() {
        let a = AckedWrites::new(Flavor::MySql);
        let src = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
        a.note(NotedCommit::Gtid(format!("{src}:7").as_bytes()));
        a.note(NotedCommit::Gtid(format!("{src}:5").as_bytes()));
        let reader_at = |n: u64| a.parse(&format!("{src}:{n}")).expect("parses");
        assert!(reader_at(7).covers(&a.marks()));
        assert!(!reader_at(6).covers(&a.marks()));
        assert_eq!(a.untracked(), 0);
    }

    #[test]
    fn mariadb_marks_are_per_domain() {
        let a = AckedWrites::new(Flavor::MariaDb);
        a.note(NotedCommit::Gtid(b"0-1-10"));
        a.note(NotedCommit::Gtid(b"1-1-3"));
        let reader = |s: &str| a.parse(s).expect("parses");
        assert!(reader("0-1-10,1-1-3").covers(&a.marks()));
        assert!(reader("0-2-11,1-1-4").covers(&a.marks()));
        assert!(!reader("0-1-10").covers(&a.marks()));
        assert!(!reader("0-1-9,1-1-3").covers(&a.marks()));
    }

    #[test]
    fn a_commit_without_a_readable_gtid_is_counted() {
        let a = AckedWrites::new(Flavor::MariaDb);
        a.note(NotedCommit::Untracked);
        a.note(NotedCommit::Gtid(b"not a gtid"));
        assert_eq!(a.untracked(), 2);
        assert!(GtidSet::default().covers(&a.marks()));
    }
}
