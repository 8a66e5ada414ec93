//! Replication positions, compared the way the servers compare them.
//!
//! A `GtidSet` is what a server has applied (or what hsd needs a server to
//! have applied), in one of two dialects:
//!
//! - MariaDB: one GTID per replication domain, `domain-server-seq`
//!   (`0-1-13,1-2-300`). Within a domain sequence numbers only grow, so a
//!   server has applied `d-s-n` when its position in domain `d` has a
//!   sequence number of at least `n`; the server id does not count (as in
//!   `MASTER_GTID_WAIT`).
//! - MySQL: a GTID set, per source (`uuid`, or `uuid:tag`) the transaction
//!   numbers it holds as ranges (`3e11...:1-5:7-9`). A server has applied a
//!   set when it holds every transaction in it.
//!
//! hsd keeps the position of the writes it acknowledged (the "frontier")
//! and asks of a replica whether its position covers it.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GtidSet {
    /// MariaDB: per domain, (server id, sequence number) of its latest GTID.
    domains: BTreeMap<u32, (u32, u64)>,
    /// MySQL: per source, sorted, disjoint, non-adjacent inclusive ranges.
    sources: BTreeMap<String, Vec<(u64, u64)>>,
}

/// Text that is not a GTID position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable GTID position {text:?}: {why}")]
pub struct GtidError {
    pub text: String,
    pub why: &'static str,
}

fn err(text: &str, why: &'static str) -> GtidError {
    GtidError {
        text: text.chars().take(200).collect(),
        why,
    }
}

impl GtidSet {
    /// Parses MariaDB's `gtid_slave_pos` / `gtid_binlog_pos` / `last_gtid`
    /// text: GTIDs separated by commas (blanks allowed), empty for none. A
    /// domain named twice keeps its highest sequence number.
    pub fn parse_mariadb(text: &str) -> Result<GtidSet, GtidError> {
        let mut p = GtidSet::default();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let mut fields = part.split('-');
            let (Some(d), Some(s), Some(n), None) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(err(text, "a GTID is domain-server-sequence"));
            };
            let domain = d.parse().map_err(|_| err(text, "bad domain id"))?;
            let server = s.parse().map_err(|_| err(text, "bad server id"))?;
            let seq = n.parse().map_err(|_| err(text, "bad sequence number"))?;
            p.raise_domain(domain, server, seq);
        }
        Ok(p)
    }

    /// Parses a MySQL GTID set (`gtid_executed`, `session_track_gtids`):
    /// `uuid:1-5:7,uuid2[:tag]:1-3`, blanks and newlines allowed.
    pub fn parse_mysql(text: &str) -> Result<GtidSet, GtidError> {
        let mut p = GtidSet::default();
        for part in text.split(',') {
            let part: String = part.chars().filter(|c| !c.is_whitespace()).collect();
            if part.is_empty() {
                continue;
            }
            let mut tokens = part.split(':');
            let uuid = tokens.next().unwrap_or_default().to_ascii_lowercase();
            if !is_uuid(&uuid) {
                return Err(err(text, "a GTID set names its sources by UUID"));
            }
            let mut source = uuid.clone();
            let mut any = false;
            for tok in tokens {
                if tok.is_empty() {
                    return Err(err(text, "empty range"));
                }
                if tok.as_bytes()[0].is_ascii_digit() {
                    let (a, b) = match tok.split_once('-') {
                        Some((a, b)) => (a, b),
                        None => (tok, tok),
                    };
                    let a: u64 = a.parse().map_err(|_| err(text, "bad transaction number"))?;
                    let b: u64 = b.parse().map_err(|_| err(text, "bad transaction number"))?;
                    if a == 0 || b < a {
                        return Err(err(text, "bad range"));
                    }
                    p.add_range(&source, a, b);
                    any = true;
                } else {
                    // MySQL 8.3's tagged GTIDs: ranges after a tag belong
                    // to uuid:tag. A tag is letters, digits and '_' (so
                    // the set's text is safe inside a quoted literal).
                    if tok.len() > 32
                        || !tok.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        return Err(err(text, "bad tag"));
                    }
                    source = format!("{uuid}:{}", tok.to_ascii_lowercase());
                }
            }
            if !any {
                return Err(err(text, "a source without transactions"));
            }
        }
        Ok(p)
    }

    /// Whether it holds no GTID at all.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty() && self.sources.is_empty()
    }

    /// Whether a server at `self` has applied everything in `want`.
    pub fn covers(&self, want: &GtidSet) -> bool {
        want.domains
            .iter()
            .all(|(d, &(_, n))| self.domains.get(d).is_some_and(|&(_, have)| have >= n))
            && want.sources.iter().all(|(src, ranges)| {
                let have = self.sources.get(src).map(Vec::as_slice).unwrap_or(&[]);
                ranges.iter().all(|&r| contains_range(have, r))
            })
    }

    /// Whether `commit`, a new commit's GTID on the writer, is not past
    /// what this position holds: on MariaDB its sequence number in its
    /// domain, on MySQL its transaction number from its source (the writer
    /// numbers its own transactions upwards, whoever sends them). When
    /// `self` holds the commits noted before `commit` was sent, this means
    /// the writer's history started again (`RESET MASTER`, a restored
    /// backup), and positions from before no longer compare with those
    /// after.
    pub fn reuses(&self, commit: &GtidSet) -> bool {
        let in_domain = commit
            .domains
            .iter()
            .any(|(d, &(_, n))| self.domains.get(d).is_some_and(|&(_, have)| have >= n));
        let from_source = commit.sources.iter().any(|(src, ranges)| {
            let have = self
                .sources
                .get(src)
                .and_then(|r| r.last())
                .map(|&(_, b)| b);
            have.is_some_and(|have| ranges.iter().any(|&(a, _)| a <= have))
        });
        in_domain || from_source
    }

    /// What `reuses` compares, kept small: per MariaDB domain the latest
    /// GTID, per MySQL source its highest transaction number (as the range
    /// from 1), whatever gaps other writers' transactions leave.
    pub fn commit_marks(&self) -> GtidSet {
        GtidSet {
            domains: self.domains.clone(),
            sources: self
                .sources
                .iter()
                .filter_map(|(src, r)| r.last().map(|&(_, b)| (src.clone(), vec![(1, b)])))
                .collect(),
        }
    }

    /// Adds `other`: the position of a server that applied both.
    pub fn merge(&mut self, other: &GtidSet) {
        for (&d, &(s, n)) in &other.domains {
            self.raise_domain(d, s, n);
        }
        for (src, ranges) in &other.sources {
            for &(a, b) in ranges {
                self.add_range(src, a, b);
            }
        }
    }

    /// How many transactions of `want` a server at `self` has not applied
    /// (a replica's lag in transactions, `want` being its primary's).
    pub fn missing(&self, want: &GtidSet) -> u64 {
        let mut n: u64 = 0;
        for (d, &(_, seq)) in &want.domains {
            let have = self.domains.get(d).map_or(0, |&(_, h)| h);
            n = n.saturating_add(seq.saturating_sub(have));
        }
        for (src, ranges) in &want.sources {
            let have = self.sources.get(src).map(Vec::as_slice).unwrap_or(&[]);
            for &(a, b) in ranges {
                let mut count = b - a + 1;
                for &(c, d) in have {
                    let (lo, hi) = (a.max(c), b.min(d));
                    if lo <= hi {
                        count -= hi - lo + 1;
                    }
                }
                n = n.saturating_add(count);
            }
        }
        n
    }

    /// `self` without the transactions of `then` that `logged` lacks
    /// (lost with an earlier primary). What `self` gained since `then`
    /// stays: a MariaDB domain that moved on since is kept as it is (its
    /// newer transaction came from the writer, and orders after the lost
    /// ones); a MySQL set loses exactly the lost transactions.
    pub fn without_lost(&self, then: &GtidSet, logged: &GtidSet) -> GtidSet {
        let mut out = self.clone();
        for (d, &(_, n)) in &then.domains {
            let have = logged.domains.get(d).copied();
            if have.is_some_and(|(_, h)| h >= n) {
                continue;
            }
            if out.domains.get(d).is_some_and(|&(_, cur)| cur == n) {
                match have {
                    Some(h) => {
                        out.domains.insert(*d, h);
                    }
                    None => {
                        out.domains.remove(d);
                    }
                }
            }
        }
        for (src, ranges) in &then.sources {
            let have = logged.sources.get(src).map(Vec::as_slice).unwrap_or(&[]);
            for &r in ranges {
                for gap in uncovered(have, r) {
                    out.remove_range(src, gap);
                }
            }
        }
        out
    }

    /// How many ranges the MySQL sets hold (a measure of fragmentation).
    pub fn range_count(&self) -> usize {
        self.sources.values().map(Vec::len).sum()
    }

    fn remove_range(&mut self, source: &str, (a, b): (u64, u64)) {
        let Some(ranges) = self.sources.get_mut(source) else {
            return;
        };
        let mut kept = Vec::with_capacity(ranges.len() + 1);
        for &(c, d) in ranges.iter() {
            if d < a || c > b {
                kept.push((c, d));
                continue;
            }
            if c < a {
                kept.push((c, a - 1));
            }
            if d > b {
                kept.push((b + 1, d));
            }
        }
        if kept.is_empty() {
            self.sources.remove(source);
        } else {
            *ranges = kept;
        }
    }

    fn raise_domain(&mut self, domain: u32, server: u32, seq: u64) {
        let e = self.domains.entry(domain).or_insert((server, seq));
        if seq > e.1 {
            *e = (server, seq);
        }
    }

    fn add_range(&mut self, source: &str, a: u64, b: u64) {
        let ranges = match self.sources.get_mut(source) {
            Some(r) => r,
            None => self.sources.entry(source.to_string()).or_default(),
        };
        ranges.push((a, b));
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for &(a, b) in ranges.iter() {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        *ranges = merged;
    }
}

/// Whether the sorted, merged `have` holds every number of `r`.
fn contains_range(have: &[(u64, u64)], r: (u64, u64)) -> bool {
    // Ranges are merged, so one of them must hold all of `r`.
    let i = have.partition_point(|&(_, end)| end < r.0);
    have.get(i).is_some_and(|&(a, b)| a <= r.0 && r.1 <= b)
}

/// The parts of range `r` that the sorted, merged `have` does not hold.
fn uncovered(have: &[(u64, u64)], (a, b): (u64, u64)) -> Vec<(u64, u64)> {
    let mut gaps = Vec::new();
    let mut next = a;
    for &(c, d) in have {
        if d < next {
            continue;
        }
        if c > b {
            break;
        }
        if c > next {
            gaps.push((next, c - 1));
        }
        next = d.saturating_add(1);
        if next > b {
            return gaps;
        }
    }
    if next <= b {
        gaps.push((next, b));
    }
    gaps
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The position as the server writes it, which is also what
/// `MASTER_GTID_WAIT` / `WAIT_FOR_EXECUTED_GTID_SET` take.
impl fmt::Display for GtidSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (d, (s, n)) in &self.domains {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{d}-{s}-{n}")?;
        }
        for (src, ranges) in &self.sources {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            f.write_str(src)?;
            for &(a, b) in ranges {
                if a == b {
                    write!(f, ":{a}")?;
                } else {
                    write!(f, ":{a}-{b}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> GtidSet {
        GtidSet::parse_mariadb(s).unwrap()
    }
    fn y(s: &str) -> GtidSet {
        GtidSet::parse_mysql(s).unwrap()
    }

    const U1: &str = "3e11fa47-71ca-11e1-9e33-c80aa9429562";
    const U2: &str = "0fa6e8d2-0000-11ee-8000-000000000002";

    #[test]
    fn mariadb_parse_and_print() {
        assert!(m("").is_empty());
        assert!(m(" , ").is_empty());
        assert_eq!(m("0-1-13").to_string(), "0-1-13");
        assert_eq!(m("1-2-300, 0-1-13").to_string(), "0-1-13,1-2-300");
        assert_eq!(m("0-1-13,\n0-2-15").to_string(), "0-2-15");
        assert_eq!(m("0-2-15,0-1-13").to_string(), "0-2-15");
        for bad in [
            "0-1",
            "0-1-2-3",
            "a-1-2",
            "0--2",
            "0-1-x",
            "-1-1-1",
            "0-1-99999999999999999999",
        ] {
            assert!(GtidSet::parse_mariadb(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mariadb_covers_by_domain_and_sequence() {
        let replica = m("0-1-100,1-5-7");
        assert!(replica.covers(&m("")));
        assert!(replica.covers(&m("0-1-100")));
        assert!(replica.covers(&m("0-1-99")));
        assert!(!replica.covers(&m("0-1-101")));
        // The server id does not count: sequence numbers order a domain.
        assert!(replica.covers(&m("0-2-100")));
        assert!(replica.covers(&m("0-1-50,1-5-7")));
        assert!(!replica.covers(&m("0-1-50,1-5-8")));
        // A domain the replica never saw.
        assert!(!replica.covers(&m("2-1-1")));
        assert!(!m("").covers(&m("0-1-1")));
    }

    #[test]
    fn mariadb_merge_and_missing() {
        let mut f = m("0-1-10");
        f.merge(&m("0-1-12"));
        f.merge(&m("0-1-11"));
        f.merge(&m("3-1-2"));
        assert_eq!(f.to_string(), "0-1-12,3-1-2");
        assert_eq!(m("0-1-5").missing(&f), 7 + 2);
        assert_eq!(f.missing(&f), 0);
        assert_eq!(m("0-1-20,3-1-9").missing(&f), 0);
    }

    #[test]
    fn mysql_parse_and_print() {
        let p = y(&format!("{U1}:1-5:7-9,\n{U2}:3"));
        assert_eq!(p.to_string(), format!("{U2}:3,{U1}:1-5:7-9"));
        // Adjacent and overlapping ranges merge.
        let p = y(&format!("{U1}:1-5:6-9:8-12:20"));
        assert_eq!(p.to_string(), format!("{U1}:1-12:20"));
        // Upper-case UUIDs are the same source.
        let p = y(&format!("{}:1-2,{U1}:3", U1.to_uppercase()));
        assert_eq!(p.to_string(), format!("{U1}:1-3"));
        // Tags (MySQL 8.3).
        let p = y(&format!("{U1}:1-3:Tag_a:1-2:5"));
        assert_eq!(p.to_string(), format!("{U1}:1-3,{U1}:tag_a:1-2:5"));
        assert!(y("").is_empty());
        for bad in [
            "nouuid:1-2".to_string(),
            U1.to_string(),
            format!("{U1}:"),
            format!("{U1}:0-3"),
            format!("{U1}:5-3"),
            format!("{U1}:1-x"),
            format!("{U1}:tag"),
            format!("{U1}:t'g:1"),
        ] {
            assert!(GtidSet::parse_mysql(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mysql_covers_as_sets() {
        let replica = y(&format!("{U1}:1-100:105-110,{U2}:1-3"));
        assert!(replica.covers(&y(&format!("{U1}:1-100"))));
        assert!(replica.covers(&y(&format!("{U1}:50:106-108,{U2}:2"))));
        assert!(!replica.covers(&y(&format!("{U1}:101"))));
        assert!(!replica.covers(&y(&format!("{U1}:100-105"))));
        assert!(!replica.covers(&y(&format!("{U2}:4"))));
        assert!(!replica.covers(&y(&format!("{U1}:tag:1"))));
        assert!(replica.covers(&GtidSet::default()));
    }

    #[test]
    fn mysql_merge_and_missing() {
        let mut f = y(&format!("{U1}:1-5"));
        f.merge(&y(&format!("{U1}:7")));
        f.merge(&y(&format!("{U1}:6")));
        assert_eq!(f.to_string(), format!("{U1}:1-7"));
        let replica = y(&format!("{U1}:1-3:6"));
        assert_eq!(replica.missing(&f), 3);
        assert_eq!(y(&format!("{U2}:1")).missing(&f), 7);
    }

    #[test]
    fn lost_writes_leave_the_frontier() {
        // MariaDB: the writer has 0-1-7 of the 0-1-10 acknowledged.
        assert_eq!(
            m("0-1-10")
                .without_lost(&m("0-1-10"), &m("0-1-7"))
                .to_string(),
            "0-1-7"
        );
        // A domain the writer never saw goes.
        assert_eq!(
            m("0-1-10,5-1-3")
                .without_lost(&m("0-1-10,5-1-3"), &m("0-1-10"))
                .to_string(),
            "0-1-10"
        );
        // A commit since (on the writer, so ordered after): kept.
        assert_eq!(
            m("0-2-11")
                .without_lost(&m("0-1-10"), &m("0-1-7"))
                .to_string(),
            "0-2-11"
        );
        // Nothing lost.
        assert_eq!(
            m("0-1-10")
                .without_lost(&m("0-1-9"), &m("0-1-9"))
                .to_string(),
            "0-1-10"
        );
        // MySQL: exactly the lost transactions go.
        let f = y(&format!("{U1}:1-10,{U2}:1-4"));
        let logged = y(&format!("{U1}:1-6:9-20"));
        assert_eq!(
            f.without_lost(&f, &logged).to_string(),
            format!("{U1}:1-6:9-10")
        );
        let now = y(&format!("{U1}:1-12"));
        assert_eq!(
            now.without_lost(&f, &logged).to_string(),
            format!("{U1}:1-6:9-12")
        );
        assert_eq!(uncovered(&[(1, 6), (9, 20)], (1, 10)), vec![(7, 8)]);
        assert_eq!(uncovered(&[], (3, 4)), vec![(3, 4)]);
        assert_eq!(uncovered(&[(1, 2)], (3, 4)), vec![(3, 4)]);
        assert_eq!(uncovered(&[(5, 9)], (3, 12)), vec![(3, 4), (10, 12)]);
        assert_eq!(uncovered(&[(1, 99)], (3, 12)), vec![]);
        assert_eq!(y(&format!("{U1}:1-3:5,{U2}:9")).range_count(), 3);
    }

    #[test]
    fn dialects_do_not_cover_each_other() {
        assert!(!m("0-1-5").covers(&y(&format!("{U1}:1"))));
        assert!(!y(&format!("{U1}:1-9")).covers(&m("0-1-1")));
    }
}
