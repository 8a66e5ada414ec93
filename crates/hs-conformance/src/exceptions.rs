//! Documented exceptions: the only places where hsd may answer differently
//! from the original, each because matching it would crash the server, open a
//! hole or corrupt data (`exceptions`); and the only places where hsd on
//! MySQL 8 may answer differently from hsd on MariaDB, each because the two
//! servers store the value differently (`cross_backend`); and those of hsd
//! on a sharded Vitess keyspace from hsd on one MySQL 8 (`vitess`, in
//! exceptions/vitess.rs). Each has a name, a
//! reason and a predicate on (request line, reference answer, subject
//! answer); each is also a named test in crates/hsd/tests/conformance.rs and
//! a row in docs/compatibility.md. Nothing else belongs here.

use crate::schema::{Column, Kind, Table};
use crate::store::Row;

/// An answer that differs, with what the runner knows of the index its
/// request names.
pub struct Case<'a> {
    /// The request as the reference got it.
    pub request: &'a [u8],
    pub reference: &'a [u8],
    pub subject: &'a [u8],
    /// The index the request's index id was opened on, on this connection
    /// (None: not an exec line, or an id not opened on a table of the suite).
    pub opened: Option<&'a Opened>,
    /// Earlier in the segment a modify that writes this table's
    /// auto-increment column answered an error on both servers.
    pub failed_auto_increment_modify: bool,
}

/// An index as a `P` opened it: the columns behind each position.
#[derive(Debug, Clone)]
pub struct Opened {
    pub table: &'static str,
    /// Every column of the table.
    pub table_columns: Vec<Column>,
    /// The index's key parts, in order.
    pub key: Vec<Column>,
    /// The opened columns and filter columns.
    pub columns: Vec<Column>,
    pub filter_columns: Vec<Column>,
}

pub struct Exception {
    pub name: &'static str,
    pub reason: &'static str,
    /// True when this difference is the documented one.
    pub applies: fn(&Case) -> bool,
    /// After it the two copies of the tables may differ (a write stored
    /// differently): the segment ends there.
    pub ends_segment: bool,
    /// It also covers the rows left different after a request it applies
    /// to, whatever the answers (the request's values are what the servers
    /// take differently).
    pub covers_rows: bool,
}

/// A documented difference in the rows two servers keep after the same
/// writes (only between hsd on MariaDB and hsd on MySQL 8). The segment
/// ends there.
pub struct RowsException {
    pub name: &'static str,
    pub reason: &'static str,
    pub applies: fn(table: &Table, reference: &[Row], subject: &[Row]) -> bool,
}

mod vitess;
pub use self::vitess::{vitess, vitess_rows};

pub fn exceptions() -> Vec<Exception> {
    vec![
        Exception {
            name: "index_id_above_65535",
            reason: "the original sizes a per-connection table by the index id a client \
                     sends (P 4294967295 makes mariadbd allocate about 4 billion entries \
                     and abort); hsd refuses ids above 65535 with 2 1 stmtnum",
            applies: |c| {
                c.subject == b"2\t1\tstmtnum" && index_id(c.request).is_some_and(|id| id > 65_535)
            },
            ends_segment: false,
            covers_rows: false,
        },
        Exception {
            name: "view_open_crashes_original",
            reason: "opening a view through the original crashes mariadbd (seen with \
                     P 0 mysql user ...); hsd answers 1 1 open_table",
            applies: |c| {
                c.request.starts_with(b"P\t")
                    && c.reference.is_empty()
                    && c.subject == b"1\t1\topen_table"
            },
            ends_segment: false,
            covers_rows: false,
        },
        Exception {
            name: "counts_beyond_the_line",
            reason: "the original allocates every key and IN value a count asks for before \
                     reading them (keys on its stack), so a count in the millions crashes \
                     mariadbd; hsd reads at most 4096 values beyond those the line holds",
            applies: |c| c.reference.is_empty() && counts_beyond_the_line(c.request),
            ends_segment: false,
            covers_rows: false,
        },
        Exception {
            name: "explicit_ids_after_an_error",
            reason: "once the original's write thread has met any error (a P on a missing \
                     table, from any client), it answers 1 1 167 to every insert that gives \
                     the auto-increment column a value, until the server restarts: one \
                     client's typo would decide another's inserts. hsd answers as the \
                     original does before that: the row stored, 0 1 0",
            applies: |c| {
                c.reference == b"1\t1\t167" && c.subject == b"0\t1\t0" && is_insert(c.request)
            },
            ends_segment: false,
            covers_rows: false,
        },
        Exception {
            name: "line_starting_with_q_or_slash",
            reason: "on the original a read buffer starting with Q shuts the listener \
                     down for every client and one starting with / drops the connection; \
                     hsd answers 2 1 cmd",
            applies: |c| {
                matches!(c.request.first(), Some(b'Q' | b'/')) && c.subject == b"2\t1\tcmd"
            },
            ends_segment: false,
            covers_rows: false,
        },
    ]
}

/// Whether a find/insert line's key count, or its IN clause's count, asks
/// for more than 4096 values beyond those the line holds.
pub fn counts_beyond_the_line(request: &[u8]) -> bool {
    let Ok(hs_proto::Request::Exec(e)) = hs_proto::parse_request(request) else {
        return false;
    };
    let beyond = |count: u32, held: usize| count as usize > held + hs_proto::MAX_PADDED_VALUES;
    beyond(e.key_count, e.keys.len())
        || e.in_clause
            .as_ref()
            .is_some_and(|i| beyond(i.count, i.given()))
}

/// The index id a `P` or find/insert line names, read as the original reads
/// numbers (its digits, wrapping at 2^32).
pub fn index_id(request: &[u8]) -> Option<u32> {
    let mut tokens = request.split(|&b| b == b'\t');
    let first = tokens.next()?;
    let token = if first == b"P" {
        tokens.next()?
    } else if first.first().is_some_and(u8::is_ascii_digit) {
        first
    } else {
        return None;
    };
    Some(wrapping_u32(token))
}

/// The token's decimal digits (others skipped), wrapping at 2^32, as the
/// original's number reader.
pub fn wrapping_u32(token: &[u8]) -> u32 {
    hs_proto::parse_u32(token)
}

/// The differences between hsd on MariaDB (the reference, which answers
/// as the plugin) and hsd on MySQL 8 that come from the servers themselves:
/// each is a value the two servers take, store or refuse differently. (A
/// difference that hsd could remove is fixed in hsd, not listed here.)
pub fn cross_backend() -> Vec<Exception> {
    let mut list = stored_value_exceptions();
    list.extend([
        Exception {
            name: "mysql8_handler_read_refuses_the_key",
            reason: "MySQL 8's HANDLER ... READ refuses a key value that its column cannot \
                     store as it is (an empty string, text or an out-of-range year for a \
                     number, an invalid or partial date or time), with ER_WRONG_ARGUMENTS: \
                     hsd answers 1 1 1210. MariaDB stores the value as a write would (0, \
                     the zero date) and seeks that, as the plugin does",
            applies: |c| {
                c.subject == b"1\t1\t1210"
                    && c.opened.is_some_and(|o| {
                        find_values(c.request, o)
                            .iter()
                            .any(|(col, v)| !fits_as_is(col, v.as_deref()))
                    })
            },
            ends_segment: false,
            covers_rows: false,
        },
        Exception {
            name: "fraction_rounded_by_mysql8",
            reason: FRACTION_ROUNDED,
            applies: |c| {
                c.opened.is_some_and(|o| {
                    all_values(c.request, o).iter().any(|(col, v)| {
                        is_clock_kind(col) && v.as_deref().is_some_and(has_fraction)
                    })
                })
            },
            ends_segment: true,
            covers_rows: true,
        },
        Exception {
            name: "auto_increment_at_its_maximum",
            reason: "once the auto-increment counter has reached the column's largest value, \
                     MariaDB refuses the next insert that leaves the column out (1 1 167, \
                     HA_ERR_AUTOINC_ERANGE) while MySQL 8 takes the largest value again: the \
                     row is stored if that id is free (0 1 <largest>), else 1 1 121",
            applies: |c| {
                c.reference == b"1\t1\t167"
                    && is_insert(c.request)
                    && c.opened.is_some_and(|o| {
                        o.table_columns
                            .iter()
                            .find(|col| col.mysql.contains("AUTO_INCREMENT"))
                            .and_then(|col| int_max(col.kind))
                            .is_some_and(|max| {
                                c.subject == b"1\t1\t121"
                                    || c.subject == format!("0\t1\t{max}").as_bytes()
                            })
                    })
            },
            ends_segment: true,
            covers_rows: false,
        },
        Exception {
            name: "auto_increment_after_a_failed_modify",
            reason: "after a modify that writes the auto-increment column and fails on a \
                     duplicate key (1 1 121 on both), the servers' auto-increment counters \
                     can stand one apart (the ids the failed statement tried are counted \
                     differently), so the next insert that leaves the id out is given \
                     another id (0 1 20000006 and 0 1 20000007)",
            applies: |c| {
                c.failed_auto_increment_modify
                    && is_insert(c.request)
                    && c.reference.starts_with(b"0\t1\t")
                    && c.subject.starts_with(b"0\t1\t")
            },
            ends_segment: true,
            covers_rows: false,
        },
        Exception {
            name: "invalid_utf8_cut_by_mysql8",
            reason: "a value that is not UTF-8 for a utf8mb4 column: MariaDB stores and \
                     compares each invalid byte as '?', MySQL 8 cuts the value at its first \
                     invalid byte (warning 1366 on both), so it finds, stores and compares \
                     another value; compared in a filter hsd answers 1 1 1267 on MySQL 8 \
                     (the converted value takes MySQL's default utf8mb4 collation)",
            applies: |c| {
                c.opened.is_some_and(|o| {
                    all_values(c.request, o).iter().any(|(col, v)| {
                        is_utf8mb4_text(col)
                            && v.as_deref()
                                .is_some_and(|b| std::str::from_utf8(b).is_err())
                    })
                })
            },
            ends_segment: true,
            covers_rows: true,
        },
    ]);
    list
}

const TIME_OUT_OF_RANGE: &str = "a number stored into a TIME column (what + and - store) \
     that is not a time of at most 7 digits (an hour past 838, a minute or second past 59, \
     8 digits or more): MariaDB stores 00:00:00 (the zero value of a value it cannot read; \
     a second change of a column opened twice starts from it), MySQL 8 the nearest end of \
     TIME's range, 838:59:59 or -838:59:59";

const DATE_ZERO_PART: &str = "a number stored into a DATE, DATETIME or TIMESTAMP column \
     (what + and - store) that MariaDB does not read as a date, one whose month or day is \
     00 or one of 7 digits or fewer: MariaDB stores the zero date, MySQL 8 (sql_mode without \
     NO_ZERO_IN_DATE, as hsd runs) keeps the date with its zero part, and reads the short \
     number as a date before the year 1000 (1030405 is 0103-04-05)";

const FRACTION_ROUNDED: &str = "a DATETIME, TIMESTAMP or TIME value with a fraction \
     of a second the column does not hold: MariaDB (and so the plugin) cuts it, MySQL 8 \
     rounds it (2010-01-02 03:04:05.678 is 03:04:05 on MariaDB, 03:04:06 on MySQL 8), so a \
     key finds another row and a write stores another second. hsd leaves MySQL its own \
     conversion (tests/mysql_types.rs holds hsd to the server's SQL); MySQL's sql_mode \
     TIME_TRUNCATE_FRACTIONAL would cut as MariaDB does";

fn is_clock_kind(col: &Column) -> bool {
    matches!(col.kind, Kind::DateTime | Kind::Timestamp | Kind::Time)
}

/// Whether a value has a fraction of a second that is not zero (`.5`).
fn has_fraction(v: &[u8]) -> bool {
    v.iter().position(|&b| b == b'.').is_some_and(|at| {
        v[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .any(|&b| b != b'0')
    })
}

/// Seconds of `YYYY-MM-DD HH:MM:SS` (from 0000-03-01) or of a TIME
/// `[-]H:MM:SS` (negative kept).
fn clock_seconds(kind: Kind, v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    let hms = |t: &str| -> Option<i64> {
        let mut p = t.split(':').map(|x| x.parse::<i64>().ok());
        Some(p.next()?? * 3600 + p.next()?? * 60 + p.next()??)
    };
    match kind {
        Kind::Time => match s.strip_prefix('-') {
            Some(t) => hms(t).map(|x| -x),
            None => hms(s),
        },
        _ => {
            let (date, time) = s.split_once(' ')?;
            let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
            let (y, m, day) = (d.next()??, d.next()??, d.next()??);
            // Days from civil (Howard Hinnant's algorithm).
            let y = if m <= 2 { y - 1 } else { y };
            let era = y.div_euclid(400);
            let yoe = y - era * 400;
            let mp = (m + 9) % 12;
            let doy = (153 * mp + 2) / 5 + day - 1;
            let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
            Some((era * 146_097 + doe) * 86_400 + hms(time)?)
        }
    }
}

/// A DATETIME, TIMESTAMP or TIME that MySQL 8 rounded up a second (away
/// from zero for a TIME) where MariaDB cut the fraction.
fn fraction_rounded(col: &Column, reference: Option<&[u8]>, subject: Option<&[u8]>) -> bool {
    let (Some(r), Some(s)) = (reference, subject) else {
        return false;
    };
    if !is_clock_kind(col) {
        return false;
    }
    match (clock_seconds(col.kind, r), clock_seconds(col.kind, s)) {
        (Some(r), Some(s)) if col.kind == Kind::Time => {
            s.abs() - r.abs() == 1 && (r >= 0) == (s >= 0 || r == 0)
        }
        (Some(r), Some(s)) => s - r == 1,
        _ => false,
    }
}

/// A TIME that MySQL 8 took to an end of its range where MariaDB stored
/// 00:00:00 (or, for a column opened twice, what the second change made of
/// that 00:00:00).
fn time_out_of_range(col: &Column, reference: Option<&[u8]>, subject: Option<&[u8]>) -> bool {
    col.kind == Kind::Time
        && reference.is_some()
        && reference != subject
        && matches!(subject, Some(b"838:59:59") | Some(b"-838:59:59"))
}

/// A date MySQL 8 kept with a zero month or day, or read before the year
/// 1000, where MariaDB stored the zero date.
fn date_zero_part(col: &Column, reference: Option<&[u8]>, subject: Option<&[u8]>) -> bool {
    let (Some(r), Some(s)) = (reference, subject) else {
        return false;
    };
    matches!(col.kind, Kind::Date | Kind::DateTime | Kind::Timestamp)
        && r.len() >= 10
        && r[..10] == *b"0000-00-00"
        && r[10..].iter().all(|&b| matches!(b, b'0' | b':' | b' '))
        && s.len() == r.len()
        && s != r
        && (s[5..7] == *b"00" || s[8..10] == *b"00" || &s[..4] < b"1000".as_slice())
}

/// A number stored into a TIME or a date column, which the servers take
/// differently (`time_out_of_range` or `date_zero_part`): one `+`/`-`
/// can store numbers into both kinds of column at once.
fn number_into_clock(col: &Column, reference: Option<&[u8]>, subject: Option<&[u8]>) -> bool {
    time_out_of_range(col, reference, subject) || date_zero_part(col, reference, subject)
}

type CellRule = fn(&Column, Option<&[u8]>, Option<&[u8]>) -> bool;

/// What cells two copies may differ in: every differing cell is one
/// `allowed` allows, and at least one is the exception's own (`own`),
/// which names the difference.
#[derive(Clone, Copy)]
struct Cells {
    allowed: CellRule,
    own: CellRule,
}

impl Cells {
    /// Every differing cell is the exception's own.
    const fn only(rule: CellRule) -> Cells {
        Cells {
            allowed: rule,
            own: rule,
        }
    }

    /// Whether the differing pairs (column, reference, subject) are these.
    fn cover<'a>(
        self,
        mut differing: impl Iterator<Item = (&'a Column, Option<&'a [u8]>, Option<&'a [u8]>)>,
    ) -> bool {
        let mut own = false;
        let allowed = differing.all(|(col, r, s)| {
            own |= (self.own)(col, r, s);
            (self.allowed)(col, r, s)
        });
        allowed && own
    }
}

/// Whether the two row sets differ only in `cells`.
fn rows_differ_only(table: &Table, reference: &[Row], subject: &[Row], cells: Cells) -> bool {
    reference.len() == subject.len()
        && cells.cover(reference.iter().zip(subject).flat_map(|(r, s)| {
            r.iter()
                .zip(s)
                .zip(&table.columns)
                .filter(|((a, b), _)| a != b)
                .map(|((a, b), col)| (col, a.as_deref(), b.as_deref()))
        }))
}

/// Whether two answers with rows differ only in `cells` (each row has the
/// opened columns).
fn answers_differ_only(case: &Case, cells: Cells) -> bool {
    let Some(o) = case.opened else {
        return false;
    };
    let r: Vec<&[u8]> = case.reference.split(|&b| b == b'\t').collect();
    let s: Vec<&[u8]> = case.subject.split(|&b| b == b'\t').collect();
    let width = o.columns.len();
    if r.len() != s.len() || r.len() <= 2 || r[..2] != s[..2] || r[0] != b"0" || width == 0 {
        return false;
    }
    // The differing cells, decoded (NULL is None), with their columns.
    let token = |t: &[u8]| hs_proto::codec::decode_token(t);
    let differing: Vec<_> = r[2..]
        .iter()
        .zip(&s[2..])
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (&o.columns[i % width], token(a), token(b)))
        .collect();
    cells.cover(
        differing
            .iter()
            .map(|(col, a, b)| (*col, a.as_deref(), b.as_deref())),
    )
}

/// A `+`/`-` that changes a key column of the kind `is_kind` of the index
/// it scans (a key part given, or the IN column), both servers answering
/// a count: where the change takes the column out of what the servers
/// store alike (`time_out_of_range`, `date_zero_part`), a later IN value,
/// or the walk going on, finds the changed row again on one server only,
/// so the counts differ (seed 946503171 of a long run: an IN of 839:00:00
/// and 00:00:00, `+ 16777217` on the TIME key; MariaDB's 00:00:00 is found
/// again by the second value, `0 1 2`, MySQL 8's 838:59:59 is not, `0 1 1`).
fn count_after_a_changed_key(case: &Case, is_kind: fn(Kind) -> bool) -> bool {
    let Some(o) = case.opened else {
        return false;
    };
    let Ok(hs_proto::Request::Exec(e)) = hs_proto::parse_request(case.request) else {
        return false;
    };
    let Some(m) = &e.modify else {
        return false;
    };
    let count = |a: &[u8]| {
        a.strip_prefix(b"0\t1\t")
            .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
    };
    let scanned = &o.key[..(e.key_count as usize).min(o.key.len())];
    matches!(
        m.op,
        Some(hs_proto::ModifyOp::Increment | hs_proto::ModifyOp::Decrement)
    ) && !m.returning
        && count(case.reference)
        && count(case.subject)
        && o.columns.iter().enumerate().any(|(i, col)| {
            is_kind(col.kind)
                && scanned.iter().any(|k| k.name == col.name)
                && m.value(i).is_some_and(nonzero_amount)
        })
}

/// Whether a `+`/`-` amount (read as `atoll` reads it) is not 0.
fn nonzero_amount(v: &[u8]) -> bool {
    let digits = v.strip_prefix(b"-").or(v.strip_prefix(b"+")).unwrap_or(v);
    digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .any(|&b| b != b'0')
}

fn is_date_kind(kind: Kind) -> bool {
    matches!(kind, Kind::Date | Kind::DateTime | Kind::Timestamp)
}

/// Cells of a number stored into a TIME (with, from the same write, any
/// of a number stored into a date), and the other way round (seed
/// 946503114 of a long run: one `-` left a TIME at 00:00:00 against
/// 838:59:59 and a DATE at 0000-00-00 against 1000-00-01).
const TIME_CELLS: Cells = Cells {
    allowed: number_into_clock,
    own: time_out_of_range,
};
const DATE_CELLS: Cells = Cells {
    allowed: number_into_clock,
    own: date_zero_part,
};

/// The stored-value differences as they show in answers (a `+?`/`-?` or
/// find that returns the rows before the tables were compared).
fn stored_value_exceptions() -> Vec<Exception> {
    vec![
        Exception {
            name: "time_from_a_number_out_of_range",
            reason: TIME_OUT_OF_RANGE,
            applies: |c| {
                answers_differ_only(c, TIME_CELLS)
                    || count_after_a_changed_key(c, |k| k == Kind::Time)
            },
            ends_segment: true,
            covers_rows: false,
        },
        Exception {
            name: "date_from_a_number_mariadb_cannot_read",
            reason: DATE_ZERO_PART,
            applies: |c| {
                answers_differ_only(c, DATE_CELLS) || count_after_a_changed_key(c, is_date_kind)
            },
            ends_segment: true,
            covers_rows: false,
        },
    ]
}

/// Rows the two servers keep differently after the same writes.
pub fn cross_backend_rows() -> Vec<RowsException> {
    vec![
        RowsException {
            name: "fraction_rounded_by_mysql8",
            reason: FRACTION_ROUNDED,
            applies: |t, r, s| rows_differ_only(t, r, s, Cells::only(fraction_rounded)),
        },
        RowsException {
            name: "time_from_a_number_out_of_range",
            reason: TIME_OUT_OF_RANGE,
            applies: |t, r, s| rows_differ_only(t, r, s, TIME_CELLS),
        },
        RowsException {
            name: "date_from_a_number_mariadb_cannot_read",
            reason: DATE_ZERO_PART,
            applies: |t, r, s| rows_differ_only(t, r, s, DATE_CELLS),
        },
    ]
}

fn is_insert(request: &[u8]) -> bool {
    matches!(
        hs_proto::parse_request(request),
        Ok(hs_proto::Request::Exec(e)) if e.op == hs_proto::ExecOp::Insert
    )
}

fn int_max(kind: Kind) -> Option<u128> {
    match kind {
        Kind::Int { bytes, unsigned } => {
            let bits = u32::from(bytes) * 8 - u32::from(!unsigned);
            Some((1u128 << bits) - 1)
        }
        _ => None,
    }
}

fn is_utf8mb4_text(col: &Column) -> bool {
    matches!(
        col.kind,
        Kind::Char(_) | Kind::VarChar(_) | Kind::Text | Kind::Enum
    ) && !col.mysql.contains("latin1")
}

/// A find's key values and IN values, each with the key column it is
/// stored into (missing key values are empty strings, as the server gets
/// them).
pub fn find_values(request: &[u8], opened: &Opened) -> Vec<(Column, Option<Vec<u8>>)> {
    let Ok(hs_proto::Request::Exec(e)) = hs_proto::parse_request(request) else {
        return Vec::new();
    };
    if !matches!(e.op, hs_proto::ExecOp::Find(_)) {
        return Vec::new();
    }
    let parts = (e.key_count as usize).min(opened.key.len());
    let in_at = e
        .in_clause
        .as_ref()
        .and_then(|i| i.position)
        .map(|p| p as usize)
        .filter(|&p| p < parts);
    let mut out = Vec::new();
    for i in (0..parts).filter(|&i| Some(i) != in_at) {
        let v = match e.keys.get(i) {
            Some(v) => v.clone(),
            None => Some(Vec::new()),
        };
        out.push((opened.key[i].clone(), v));
    }
    if let (Some(p), Some(inc)) = (in_at, &e.in_clause) {
        let col = &opened.key[p];
        for i in 0..inc.given() {
            out.push((col.clone(), Some(inc.value(i).to_vec())));
        }
        if (inc.count as usize) > inc.given() {
            out.push((col.clone(), Some(Vec::new())));
        }
    }
    out
}

/// Every value of a request with the column it goes to: keys and IN values,
/// filter values, modify values and insert values.
pub fn all_values(request: &[u8], opened: &Opened) -> Vec<(Column, Option<Vec<u8>>)> {
    let Ok(hs_proto::Request::Exec(e)) = hs_proto::parse_request(request) else {
        return Vec::new();
    };
    if e.op == hs_proto::ExecOp::Insert {
        return e
            .keys
            .iter()
            .zip(&opened.columns)
            .map(|(v, col)| (col.clone(), v.clone()))
            .collect();
    }
    let mut out = find_values(request, opened);
    for f in &e.filters {
        if let Some(col) = opened.filter_columns.get(f.column as usize) {
            out.push((col.clone(), f.value.clone()));
        }
    }
    if let Some(m) = &e.modify {
        for (v, col) in m.values.iter().zip(&opened.columns) {
            out.push((col.clone(), v.clone()));
        }
    }
    out
}

/// Whether `v` is a value the column stores exactly as given (no
/// conversion, no clamping): MySQL 8's HANDLER READ takes those and refuses
/// most others.
pub fn fits_as_is(col: &Column, v: Option<&[u8]>) -> bool {
    let Some(v) = v else {
        return col.nullable;
    };
    let Ok(s) = std::str::from_utf8(v) else {
        return col.kind.is_text();
    };
    match col.kind {
        Kind::Int { .. } => {
            let digits = s.strip_prefix('-').unwrap_or(s);
            !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && s.parse::<i128>().is_ok_and(|n| {
                    let max = int_max(col.kind).unwrap_or(0) as i128;
                    let min = match col.kind {
                        Kind::Int { unsigned: true, .. } => 0,
                        _ => -max - 1,
                    };
                    (min..=max).contains(&n)
                })
        }
        Kind::Decimal | Kind::Double => {
            is_plain_number(s) && s.parse::<f64>().is_ok_and(f64::is_finite)
        }
        Kind::Float => is_plain_number(s) && s.parse::<f32>().is_ok_and(f32::is_finite),
        Kind::Year => {
            s.parse::<u32>()
                .is_ok_and(|y| y <= 99 || (1901..=2155).contains(&y))
                && s.bytes().all(|b| b.is_ascii_digit())
        }
        Kind::Date => is_date(s),
        Kind::DateTime => is_datetime(s),
        Kind::Timestamp => {
            is_datetime(s) && ("1970-01-01 00:00:01".."2038-01-19 03:14:08").contains(&s)
        }
        Kind::Time => is_time(s),
        _ => true,
    }
}

fn is_plain_number(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let mut parts = mantissa.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next().unwrap_or("");
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    (!int.is_empty() || !frac.is_empty())
        && digits(int)
        && digits(frac)
        && exp.is_none_or(|e| {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && digits(e)
        })
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    y >= 1000 && (1..=12).contains(&m) && d >= 1 && d <= days[m as usize - 1]
}

fn is_datetime(s: &str) -> bool {
    s.len() >= 19
        && s.as_bytes()[10] == b' '
        && is_date(&s[..10])
        && is_clock(&s[11..19], 23)
        && (s.len() == 19
            || (s.as_bytes()[19] == b'.'
                && s.len() > 20
                && s[20..].bytes().all(|b| b.is_ascii_digit())))
}

fn is_clock(s: &str, max_hour: u32) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && parts[1].len() == 2
        && parts[2].len() == 2
        && parts[0].parse::<u32>().is_ok_and(|h| h <= max_hour)
        && parts[1].parse::<u32>().is_ok_and(|m| m <= 59)
        && parts[2].parse::<u32>().is_ok_and(|x| x <= 59)
}

fn is_time(s: &str) -> bool {
    let t = s.strip_prefix('-').unwrap_or(s);
    is_clock(t, 838)
}

/// The first plugin-vs-hsd exception that covers this difference, if any
/// (these need no index: `opened` is not consulted).
pub fn matching(request: &[u8], plugin: &[u8], hsd: &[u8]) -> Option<&'static str> {
    let case = Case {
        request,
        reference: plugin,
        subject: hsd,
        opened: None,
        failed_auto_increment_modify: false,
    };
    matching_in(&exceptions(), &case).map(|e| e.name)
}

/// The first exception of `list` that covers this difference, if any.
pub fn matching_in<'l>(list: &'l [Exception], case: &Case) -> Option<&'l Exception> {
    list.iter().find(|e| (e.applies)(case))
}

/// The first rows exception of `list` that covers this difference, if any.
pub fn matching_rows<'l>(
    list: &'l [RowsException],
    table: &Table,
    reference: &[Row],
    subject: &[Row],
) -> Option<&'l RowsException> {
    list.iter().find(|e| (e.applies)(table, reference, subject))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_index_ids_are_excepted_only_when_hsd_says_stmtnum() {
        let p = b"P\t65536\tdb\tt\tPRIMARY\tid";
        assert_eq!(
            matching(p, b"0\t1", b"2\t1\tstmtnum"),
            Some("index_id_above_65535")
        );
        assert_eq!(matching(p, b"0\t1", b"0\t1"), None);
        let small = b"P\t65535\tdb\tt\tPRIMARY\tid";
        assert_eq!(matching(small, b"0\t1", b"2\t1\tstmtnum"), None);
        // 4294967296 wraps to 0 on the original: not a big id, no exception.
        let wrapped = b"4294967296\t=\t1\t1";
        assert_eq!(matching(wrapped, b"0\t1\t1", b"2\t1\tstmtnum"), None);
        assert_eq!(
            matching(b"65537\t=\t1\t1", b"0\t1\t1", b"2\t1\tstmtnum"),
            Some("index_id_above_65535")
        );
    }

    #[test]
    fn view_and_q_lines() {
        assert_eq!(
            matching(b"P\t0\tmysql\tuser\t\tUser", b"", b"1\t1\topen_table"),
            Some("view_open_crashes_original")
        );
        assert_eq!(
            matching(b"Q", b"", b"2\t1\tcmd"),
            Some("line_starting_with_q_or_slash")
        );
        assert_eq!(
            matching(b"/x", b"", b"2\t1\tcmd"),
            Some("line_starting_with_q_or_slash")
        );
        assert_eq!(matching(b"X", b"2\t1\tcmd", b"2\t1\top"), None);
    }

    #[test]
    fn wrapping_numbers() {
        assert_eq!(wrapping_u32(b"4294967297"), 1);
        assert_eq!(wrapping_u32(b"12ab"), 12);
        assert_eq!(wrapping_u32(b"1x2"), 12);
        assert_eq!(wrapping_u32(b"x"), 0);
    }

    fn col(kind: Kind, nullable: bool) -> Column {
        Column {
            name: "c",
            mysql: "",
            sqlite: "",
            kind,
            nullable,
        }
    }

    #[test]
    fn values_a_column_holds_as_they_are() {
        let int = col(
            Kind::Int {
                bytes: 1,
                unsigned: false,
            },
            true,
        );
        assert!(fits_as_is(&int, Some(b"-128")));
        assert!(!fits_as_is(&int, Some(b"128")));
        assert!(!fits_as_is(&int, Some(b"1.5")));
        assert!(!fits_as_is(&int, Some(b"")));
        assert!(fits_as_is(&int, None));
        assert!(!fits_as_is(&col(Kind::Date, false), None));
        let date = col(Kind::Date, true);
        assert!(fits_as_is(&date, Some(b"2010-01-02")));
        for bad in [
            &b"2010-02-30"[..],
            b"abc",
            b"",
            b"2010-01-02 03:04:05",
            b"20100102",
        ] {
            assert!(!fits_as_is(&date, Some(bad)), "{bad:?}");
        }
        let ts = col(Kind::Timestamp, true);
        assert!(fits_as_is(&ts, Some(b"2038-01-19 03:14:07")));
        assert!(!fits_as_is(&ts, Some(b"2038-01-19 03:14:08")));
        assert!(fits_as_is(&ts, Some(b"2010-01-02 03:04:05.678")));
        let time = col(Kind::Time, true);
        assert!(fits_as_is(&time, Some(b"-838:59:59")));
        assert!(!fits_as_is(&time, Some(b"839:00:00")));
        assert!(!fits_as_is(&time, Some(b"25:00")));
        let year = col(Kind::Year, true);
        assert!(fits_as_is(&year, Some(b"69")) && fits_as_is(&year, Some(b"2155")));
        assert!(!fits_as_is(&year, Some(b"2156")) && !fits_as_is(&year, Some(b"")));
        let double = col(Kind::Double, true);
        assert!(fits_as_is(&double, Some(b"-1e-5")) && fits_as_is(&double, Some(b".5")));
        assert!(!fits_as_is(&double, Some(b"nan")) && !fits_as_is(&double, Some(b" 1.5")));
        assert!(fits_as_is(&col(Kind::VarChar(4), true), Some(b"anything")));
    }

    #[test]
    fn numbers_in_a_time_and_a_date_at_once() {
        let (time, date) = (col(Kind::Time, true), col(Kind::Date, true));
        let text = col(Kind::VarChar(4), true);
        let t = (&time, Some(&b"00:00:00"[..]), Some(&b"838:59:59"[..]));
        let d = (&date, Some(&b"0000-00-00"[..]), Some(&b"1000-00-01"[..]));
        // Both kinds of cell: the TIME's exception, which is listed first.
        assert!(TIME_CELLS.cover([t, d].into_iter()));
        assert!(DATE_CELLS.cover([d, t].into_iter()));
        // Each names only differences that hold one of its own cells.
        assert!(!TIME_CELLS.cover([d].into_iter()));
        assert!(DATE_CELLS.cover([d].into_iter()) && !DATE_CELLS.cover([t].into_iter()));
        // Any other cell is not covered.
        let other = (&text, Some(&b"a"[..]), Some(&b"b"[..]));
        assert!(!TIME_CELLS.cover([t, other].into_iter()));
        assert!(!Cells::only(fraction_rounded).cover(std::iter::empty()));
    }

    #[test]
    fn counts_after_a_changed_time_key() {
        let time = Column {
            name: "tm",
            ..col(Kind::Time, true)
        };
        let dt = Column {
            name: "dt",
            ..col(Kind::DateTime, true)
        };
        let opened = Opened {
            table: "times",
            table_columns: vec![dt.clone(), time.clone()],
            key: vec![dt.clone(), time.clone()],
            columns: vec![time.clone(), dt.clone()],
            filter_columns: Vec::new(),
        };
        let case = |request: &'static [u8], reference: &'static [u8], subject| Case {
            request,
            reference,
            subject,
            opened: Some(&opened),
            failed_auto_increment_modify: false,
        };
        let is_time = |k| k == Kind::Time;
        let in_plus = b"3\t=\t2\tx\t00:00:00\t3\t0\t@\t1\t2\t839:00:00\t00:00:00\t+\t16777217";
        assert!(count_after_a_changed_key(
            &case(in_plus, b"0\t1\t2", b"0\t1\t1"),
            is_time
        ));
        // The TIME key not scanned (one key part), an amount of 0, an
        // update, rows asked back, an error: none of these.
        for request in [
            &b"3\t=\t1\tx\t3\t0\t+\t16777217"[..],
            b"3\t=\t2\tx\t0\t3\t0\t+\t0\t5",
            b"3\t=\t2\tx\t0\t3\t0\tU\t1\t1",
            b"3\t=\t2\tx\t0\t3\t0\t+?\t1\t1",
        ] {
            assert!(!count_after_a_changed_key(
                &case(request, b"0\t1\t2", b"0\t1\t1"),
                is_time
            ));
        }
        assert!(!count_after_a_changed_key(
            &case(in_plus, b"0\t1\t2", b"1\t1\t121"),
            is_time
        ));
        assert!(!count_after_a_changed_key(
            &case(in_plus, b"0\t1\t2", b"0\t1\t1"),
            is_date_kind
        ));
        assert!(nonzero_amount(b"-100") && nonzero_amount(b"7x"));
        assert!(!nonzero_amount(b"0") && !nonzero_amount(b"") && !nonzero_amount(b"x5"));
    }

    #[test]
    fn stored_value_cells() {
        let time = col(Kind::Time, true);
        assert!(time_out_of_range(
            &time,
            Some(b"00:00:00"),
            Some(b"-838:59:59")
        ));
        assert!(time_out_of_range(
            &time,
            Some(b"00:00:05"),
            Some(b"838:59:59")
        ));
        assert!(!time_out_of_range(
            &time,
            Some(b"838:59:59"),
            Some(b"838:59:59")
        ));
        assert!(!time_out_of_range(
            &time,
            Some(b"00:00:00"),
            Some(b"838:59:58")
        ));
        assert!(!time_out_of_range(&time, None, Some(b"838:59:59")));
        let date = col(Kind::Date, true);
        assert!(date_zero_part(
            &date,
            Some(b"0000-00-00"),
            Some(b"1000-00-01")
        ));
        assert!(date_zero_part(
            &date,
            Some(b"0000-00-00"),
            Some(b"2010-01-00")
        ));
        assert!(!date_zero_part(
            &date,
            Some(b"0000-00-00"),
            Some(b"2010-01-02")
        ));
        let dt = col(Kind::DateTime, true);
        assert!(date_zero_part(
            &dt,
            Some(b"0000-00-00 00:00:00"),
            Some(b"2010-00-02 03:04:05")
        ));
        assert!(!date_zero_part(
            &time,
            Some(b"0000-00-00"),
            Some(b"1000-00-01")
        ));
    }

    #[test]
    fn fractions_rounded_up_a_second() {
        let dt = col(Kind::DateTime, true);
        assert!(has_fraction(b"2010-01-02 03:04:05.678") && !has_fraction(b"03:04:05.000"));
        assert!(fraction_rounded(
            &dt,
            Some(b"2010-12-31 23:59:59"),
            Some(b"2011-01-01 00:00:00")
        ));
        assert!(!fraction_rounded(
            &dt,
            Some(b"2010-01-02 03:04:05"),
            Some(b"2010-01-02 03:04:07")
        ));
        let time = col(Kind::Time, true);
        assert!(fraction_rounded(
            &time,
            Some(b"-01:00:00"),
            Some(b"-01:00:01")
        ));
        assert!(fraction_rounded(
            &time,
            Some(b"838:59:58"),
            Some(b"838:59:59")
        ));
        assert!(!fraction_rounded(
            &time,
            Some(b"01:00:01"),
            Some(b"01:00:00")
        ));
    }

    #[test]
    fn every_exception_has_a_reason() {
        for e in exceptions().into_iter().chain(cross_backend()) {
            assert!(e.reason.len() > 40, "{}", e.name);
        }
        for e in cross_backend_rows() {
            assert!(e.reason.len() > 40, "{}", e.name);
        }
    }
}
