//! Request types and the line parser (sections 3 to 7 of the spec).
//!
//! The parser reads a line the way the original server did, position by
//! position, without knowing what is opened:
//!
//! - every number (index id, key count, limit, offset, IN position and count,
//!   filter column) is the decimal digits of its token with everything else
//!   skipped (`1x2` is 12, `x` is 0), wrapping modulo 2^32 (`parse_u32`);
//! - a find/modify/insert line is parsed the same way whatever its operation
//!   (an insert line can carry an IN clause that is never used), and the
//!   operation is judged afterwards (`ExecRequest::operation`);
//! - the errors the original answers while parsing (`invalueslen`,
//!   `filtertype`, `filterfld`) come before every other check except the
//!   index id's range (`ExecRequest::parse_error`).
//!
//! Which error wins is the server's business (`hsd::session`), in this order:
//! `stmtnum` (id beyond the connection's table), the parse errors, `stmtnum`
//! (slot not opened), `op`, `klen`, then `readonly`, `modop`, `kpnum`,
//! `filterblob`.

use crate::codec::{decode_token, unescape, Value};
use crate::response::ErrorKind;

/// Largest index id a client may open. Ids are small numbers chosen by clients;
/// anything larger is refused instead of growing per-connection tables.
pub const MAX_INDEX_ID: u32 = 65_535;

/// Values beyond the tokens a line holds read as empty strings. No index
/// has more key parts than this, so padding beyond it never matters for a
/// find, and an IN clause or key list never takes more than this many
/// values the line does not hold (the original allocates them all and
/// crashes on large counts).
pub const MAX_PADDED_VALUES: usize = 4096;

/// A parsed request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    OpenIndex(OpenIndexRequest),
    Auth(AuthRequest),
    /// Find, find-and-modify, insert (or the unimplemented `S`) on an index.
    Exec(ExecRequest),
}

/// A request error: which error line to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtoError(pub ErrorKind);

/// `P <indexid> <db> <table> <index> <columns> [<fcolumns>]`. Names are taken
/// as raw bytes up to their first 0x00 byte, never unescaped; missing tokens
/// are empty names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenIndexRequest {
    pub index_id: u32,
    pub db: Vec<u8>,
    pub table: Vec<u8>,
    /// Empty means PRIMARY; a name starting with a digit is a key number.
    pub index: Vec<u8>,
    /// Split on `,`, empty names kept (`a,` names `a` and ``).
    pub columns: Vec<Vec<u8>>,
    pub filter_columns: Vec<Vec<u8>>,
}

/// `A <type> <secret>`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRequest {
    /// The raw type token: only `1` is known.
    pub auth_type: Vec<u8>,
    /// What the secret is compared with: as long as the raw token, its
    /// unescaped bytes followed by the raw token's last bytes (the original
    /// unescapes in place and compares the token's raw length), so a secret
    /// sent escaped never matches.
    pub secret: Vec<u8>,
}

/// The operation token of an exec line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecOp {
    Find(FindOp),
    /// `+`
    Insert,
    /// `S`: the original's unfinished SQL operation (`notimpl`).
    Sql,
    /// Anything else (`op`).
    Invalid,
}

/// `<indexid> <op> <n> <v1> ... <vn> [<limit> <offset> [@ ...] [F/W ...] [<mop> ...]]`,
/// as read before anything is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    pub index_id: u32,
    pub op: ExecOp,
    /// `n` as given (wrapped).
    pub key_count: u32,
    /// The key (or insert) values the line holds, at most `key_count`; the
    /// others read as empty strings (`key`).
    pub keys: Vec<Value>,
    /// As given: 0 means 1 when the find runs.
    pub limit: u32,
    pub offset: u32,
    pub in_clause: Option<InClause>,
    /// The filters up to the first one whose type token is bad.
    pub filters: Vec<FilterSpec>,
    /// The filter after `filters` has a type token that is not `F`/`W`.
    pub bad_filter_type: bool,
    /// A non-empty modify token.
    pub modify: Option<ModifySpec>,
}

/// What an exec line asks, once `op` and `klen` are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOperation {
    Find(FindRequest),
    Insert(InsertRequest),
    /// `S` with a key count: answered `2 1 notimpl`.
    Sql,
}

/// `<indexid> + <n> <v1> ... <vn>`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertRequest {
    /// `n` as given.
    pub count: u32,
    /// The values the line holds (at most `count`); the others are empty
    /// strings (`value`).
    pub values: Vec<Value>,
}

impl InsertRequest {
    /// Value `i` (< `count`): the token, or an empty string past the line.
    pub fn value(&self, i: usize) -> Option<&[u8]> {
        match self.values.get(i) {
            Some(v) => v.as_deref(),
            None => Some(b""),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindOp {
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
}

impl FindOp {
    /// `<`/`<=` scan the index backwards.
    pub fn is_descending(self) -> bool {
        matches!(self, FindOp::Lt | FindOp::Le)
    }
}

/// A find, possibly with IN, filters and a modification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindRequest {
    pub op: FindOp,
    /// The `n` key values: missing tokens read as empty strings (at most
    /// `MAX_PADDED_VALUES` of them, enough to tell that `n` exceeds every
    /// index's key parts).
    pub keys: Vec<Value>,
    /// As given; 0 means 1 (see `effective_limit`).
    pub limit: u32,
    pub offset: u32,
    pub in_clause: Option<InClause>,
    pub filters: Vec<FilterSpec>,
    pub modify: Option<ModifySpec>,
}

impl FindRequest {
    /// The limit the scan uses: 0 means 1.
    pub fn effective_limit(&self) -> u32 {
        self.limit.max(1)
    }

    /// The IN clause when it takes part in the scan: its position read as
    /// the original's signed int is not negative.
    pub fn active_in(&self) -> Option<&InClause> {
        self.in_clause.as_ref().filter(|i| i.position.is_some())
    }
}

/// `@ <icol> <m> <iv1> ... <ivm>` (any token starting with `@` opens it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InClause {
    /// The key position the values replace; `None` when the position
    /// reads as a negative int (2^31 and above): the clause is then ignored.
    /// A position at or beyond the key count replaces nothing, but the find
    /// still seeks once per value.
    pub position: Option<u32>,
    /// `m` as given (never 0: that is `invalueslen`).
    pub count: u32,
    /// The values the line holds (at most `count`), unescaped, end to end:
    /// a line may hold millions, so they take one buffer, not one
    /// allocation each. Never NULL (the NULL token is the byte 0x00 here).
    bytes: Vec<u8>,
    /// Where each value ends in `bytes`.
    ends: Vec<u32>,
}

impl InClause {
    /// A clause holding `values` (as the line held them).
    pub fn new(position: Option<u32>, count: u32, values: &[&[u8]]) -> InClause {
        let mut clause = InClause {
            position,
            count,
            bytes: Vec::new(),
            ends: Vec::with_capacity(values.len()),
        };
        for v in values {
            clause.push(v);
        }
        clause
    }

    fn push(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
        // A line is at most a few GiB only if a server allows it; a value
        // past u32 ends where the buffer does.
        self.ends
            .push(u32::try_from(self.bytes.len()).unwrap_or(u32::MAX));
    }

    /// How many values the line holds.
    pub fn given(&self) -> usize {
        self.ends.len()
    }

    /// How many seeks the clause makes: `count`, but never more than
    /// `MAX_PADDED_VALUES` past the values the line holds.
    pub fn seeks(&self) -> usize {
        (self.count as usize).min(self.given() + MAX_PADDED_VALUES)
    }

    /// Value `i`: the token, or an empty string past the line.
    pub fn value(&self, i: usize) -> &[u8] {
        let Some(&end) = self.ends.get(i) else {
            return b"";
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.bytes
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterKind {
    /// `F`: skip rows where the condition is false.
    Skip,
    /// `W`: end the scan at the first row where it is false.
    While,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterOp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    /// An unknown one-byte operator (`!`, `x`), or an unknown two-byte one
    /// ending in `=` (`==`): the condition is false.
    Never,
    /// Any other operator (empty, `<>`, `=>`, three bytes or more): the
    /// condition is true.
    Always,
}

impl FilterOp {
    /// The operator a token names, by the original's rules.
    pub fn from_token(op: &[u8]) -> FilterOp {
        match op {
            [b'='] => FilterOp::Eq,
            [b'>'] => FilterOp::Gt,
            [b'<'] => FilterOp::Lt,
            [_] => FilterOp::Never,
            [b'>', b'='] => FilterOp::Ge,
            [b'<', b'='] => FilterOp::Le,
            [b'!', b'='] => FilterOp::Ne,
            [_, b'='] => FilterOp::Never,
            _ => FilterOp::Always,
        }
    }
}

/// `<ftype> <fop> <fcol> <fval>`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSpec {
    pub kind: FilterKind,
    pub op: FilterOp,
    /// Position in the opened filter columns.
    pub column: u32,
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModifyOp {
    Update,
    Delete,
    Increment,
    Decrement,
}

/// `<mop> <u1> ... <uc>`: the token's first byte is the operation, a `?`
/// second byte asks for the rows as they were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifySpec {
    /// `None` when the first byte is not `U`, `D`, `+` or `-` (`modop`).
    pub op: Option<ModifyOp>,
    /// `?` form: answer with the rows as they were before the change.
    pub returning: bool,
    /// All value tokens that followed; the server reads exactly as many as
    /// there are opened columns (`value`).
    pub values: Vec<Value>,
}

impl ModifySpec {
    /// New value `i`: the token, or an empty string past the line.
    pub fn value(&self, i: usize) -> Option<&[u8]> {
        match self.values.get(i) {
            Some(v) => v.as_deref(),
            None => Some(b""),
        }
    }
}

impl ExecRequest {
    /// The error the original answers while reading the line, given how
    /// many filter columns the index id's slot has opened (0 for a slot
    /// that holds nothing): `invalueslen`, then per filter in order
    /// `filterfld` for a column beyond them, `filtertype` for a bad type.
    pub fn parse_error(&self, filter_columns: usize) -> Option<ErrorKind> {
        if self.in_clause.as_ref().is_some_and(|i| i.count == 0) {
            return Some(ErrorKind::InValuesLen);
        }
        if self
            .filters
            .iter()
            .any(|f| f.column as usize >= filter_columns)
        {
            return Some(ErrorKind::FilterFld);
        }
        if self.bad_filter_type {
            return Some(ErrorKind::FilterType);
        }
        None
    }

    /// Key value `i` (< `key_count`): the token, or an empty string past
    /// the line.
    pub fn key(&self, i: usize) -> Option<&[u8]> {
        match self.keys.get(i) {
            Some(v) => v.as_deref(),
            None => Some(b""),
        }
    }

    /// The operation, once `op` and `klen` are checked (in that order).
    pub fn operation(self) -> Result<IndexOperation, ErrorKind> {
        let op = match self.op {
            ExecOp::Invalid => return Err(ErrorKind::Op),
            other => other,
        };
        if self.key_count == 0 {
            return Err(ErrorKind::KLen);
        }
        match op {
            ExecOp::Insert => Ok(IndexOperation::Insert(InsertRequest {
                count: self.key_count,
                values: self.keys,
            })),
            ExecOp::Sql => Ok(IndexOperation::Sql),
            ExecOp::Find(find_op) => {
                let n = (self.key_count as usize).min(MAX_PADDED_VALUES.max(self.keys.len()));
                let mut keys = self.keys;
                keys.resize(n, Some(Vec::new()));
                Ok(IndexOperation::Find(FindRequest {
                    op: find_op,
                    keys,
                    limit: self.limit,
                    offset: self.offset,
                    in_clause: self.in_clause,
                    filters: self.filters,
                    modify: self.modify,
                }))
            }
            ExecOp::Invalid => Err(ErrorKind::Op),
        }
    }
}

/// Parses one request line, without its LF (and without the tolerated CR).
/// The only error is `cmd`: a line that names no command.
pub fn parse_request(line: &[u8]) -> Result<Request, ProtoError> {
    let mut tokens = Tokens::new(line);
    let first = tokens.next_raw();
    match first {
        b"P" => Ok(Request::OpenIndex(parse_open_index(&mut tokens))),
        b"A" => {
            let auth_type = tokens.next_raw().to_vec();
            let raw = tokens.next_raw();
            let mut secret = unescape(raw);
            secret.extend_from_slice(&raw[secret.len()..]);
            Ok(Request::Auth(AuthRequest { auth_type, secret }))
        }
        [b'0'..=b'9', ..] => Ok(Request::Exec(parse_exec(parse_u32(first), &mut tokens))),
        _ => Err(ProtoError(ErrorKind::Cmd)),
    }
}

/// A name: raw bytes up to the first 0x00 (the original uses C strings).
fn name(raw: &[u8]) -> Vec<u8> {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    raw[..end].to_vec()
}

fn parse_open_index(tokens: &mut Tokens<'_>) -> OpenIndexRequest {
    let index_id = parse_u32(tokens.next_raw());
    let db = name(tokens.next_raw());
    let table = name(tokens.next_raw());
    let index = name(tokens.next_raw());
    let columns = split_names(&name(tokens.next_raw()));
    let filter_columns = split_names(&name(tokens.next_raw()));
    OpenIndexRequest {
        index_id,
        db,
        table,
        index,
        columns,
        filter_columns,
    }
}

/// A column list is split into at most this many names and one more piece
/// holding the rest unsplit: no table has more columns (MySQL allows 4096),
/// so a longer list is refused (`fld`) whatever its rest holds, and a line
/// of millions of names costs no more than this.
pub const MAX_LISTED_NAMES: usize = 4096;

fn split_names(list: &[u8]) -> Vec<Vec<u8>> {
    if list.is_empty() {
        return Vec::new();
    }
    list.splitn(MAX_LISTED_NAMES + 1, |&b| b == b',')
        .map(<[u8]>::to_vec)
        .collect()
}

fn exec_op(token: &[u8]) -> ExecOp {
    match token {
        b"=" => ExecOp::Find(FindOp::Eq),
        b">" => ExecOp::Find(FindOp::Gt),
        b"<" => ExecOp::Find(FindOp::Lt),
        b">=" => ExecOp::Find(FindOp::Ge),
        b"<=" => ExecOp::Find(FindOp::Le),
        b"+" => ExecOp::Insert,
        b"S" => ExecOp::Sql,
        _ => ExecOp::Invalid,
    }
}

fn parse_exec(index_id: u32, tokens: &mut Tokens<'_>) -> ExecRequest {
    let op = exec_op(tokens.next_raw());
    let key_count = parse_u32(tokens.next_raw());
    let keys = tokens.take_values(key_count as usize);
    let mut req = ExecRequest {
        index_id,
        op,
        key_count,
        keys,
        limit: 0,
        offset: 0,
        in_clause: None,
        filters: Vec::new(),
        bad_filter_type: false,
        modify: None,
    };
    req.limit = parse_u32(tokens.next_raw());
    req.offset = parse_u32(tokens.next_raw());
    if tokens.is_done() {
        return req;
    }
    if tokens.peek_raw().first() == Some(&b'@') {
        tokens.next_raw();
        let position = parse_u32(tokens.next_raw());
        let count = parse_u32(tokens.next_raw());
        let mut clause = InClause::new(i32::try_from(position).ok().map(|p| p as u32), count, &[]);
        for _ in 0..count {
            if tokens.is_done() {
                break;
            }
            clause.push(&unescape(tokens.next_raw()));
        }
        req.in_clause = Some(clause);
        if count == 0 {
            // `invalueslen`: the original stops reading here.
            return req;
        }
    }
    while !tokens.is_done() && matches!(tokens.peek_raw().first(), Some(b'F' | b'W')) {
        let kind_token = tokens.next_raw();
        let op = FilterOp::from_token(tokens.next_raw());
        let column = parse_u32(tokens.next_raw());
        let value = decode_token(tokens.next_raw());
        let kind = match kind_token {
            b"F" => FilterKind::Skip,
            b"W" => FilterKind::While,
            _ => {
                // `filtertype`: the original stops reading here.
                req.bad_filter_type = true;
                return req;
            }
        };
        req.filters.push(FilterSpec {
            kind,
            op,
            column,
            value,
        });
    }
    if tokens.is_done() {
        return req;
    }
    let mop = tokens.next_raw();
    if mop.is_empty() {
        // An empty modify token is no modification (its values are read
        // and ignored).
        return req;
    }
    let op = match mop[0] {
        b'U' => Some(ModifyOp::Update),
        b'D' => Some(ModifyOp::Delete),
        b'+' => Some(ModifyOp::Increment),
        b'-' => Some(ModifyOp::Decrement),
        _ => None,
    };
    req.modify = Some(ModifySpec {
        op,
        returning: mop.get(1) == Some(&b'?'),
        values: tokens.rest_values(),
    });
    req
}

/// A number as the original reads it: every decimal digit of the token in
/// order, anything else skipped, wrapping modulo 2^32 (`1x2` is 12, `x` and
/// the empty token are 0, `4294967297` is 1).
pub fn parse_u32(raw: &[u8]) -> u32 {
    raw.iter()
        .filter(|b| b.is_ascii_digit())
        .fold(0u32, |n, &b| {
            n.wrapping_mul(10).wrapping_add(u32::from(b - b'0'))
        })
}

/// Cursor over the raw HT-separated tokens of a line. Past the end of the
/// line every token reads as empty, as the original's reader does; `is_done`
/// tells whether the line is used up.
struct Tokens<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Tokens<'a> {
    fn new(line: &'a [u8]) -> Self {
        Tokens { rest: Some(line) }
    }

    fn next_raw(&mut self) -> &'a [u8] {
        let Some(rest) = self.rest else {
            return b"";
        };
        match memchr_tab(rest) {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                &rest[..i]
            }
            None => {
                self.rest = None;
                rest
            }
        }
    }

    fn peek_raw(&self) -> &'a [u8] {
        match self.rest {
            Some(rest) => &rest[..memchr_tab(rest).unwrap_or(rest.len())],
            None => b"",
        }
    }

    fn is_done(&self) -> bool {
        self.rest.is_none()
    }

    /// Up to `count` values, as many as the line holds.
    fn take_values(&mut self, count: usize) -> Vec<Value> {
        let mut values = Vec::new();
        for _ in 0..count {
            if self.is_done() {
                break;
            }
            values.push(decode_token(self.next_raw()));
        }
        values
    }

    fn rest_values(&mut self) -> Vec<Value> {
        let mut values = Vec::new();
        while !self.is_done() {
            values.push(decode_token(self.next_raw()));
        }
        values
    }
}

fn memchr_tab(s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(line: &[u8]) -> ExecRequest {
        match parse_request(line) {
            Ok(Request::Exec(e)) => e,
            other => panic!("expected exec, got {other:?}"),
        }
    }

    fn find(line: &[u8]) -> FindRequest {
        match exec(line).operation() {
            Ok(IndexOperation::Find(f)) => f,
            other => panic!("expected find, got {other:?}"),
        }
    }

    /// The error the line answers on a slot with `fcols` filter columns.
    fn error(line: &[u8], fcols: usize) -> Option<ErrorKind> {
        match parse_request(line) {
            Err(ProtoError(kind)) => Some(kind),
            Ok(Request::Exec(e)) => match e.parse_error(fcols) {
                Some(k) => Some(k),
                None => e.operation().err(),
            },
            Ok(_) => None,
        }
    }

    #[test]
    fn column_lists_are_split_into_at_most_4097_pieces() {
        let list = vec!["a"; 10_000].join(",");
        let Ok(Request::OpenIndex(o)) =
            parse_request(format!("P\t0\td\tt\tPRIMARY\t{list}").as_bytes())
        else {
            panic!("not an open_index");
        };
        assert_eq!(o.columns.len(), MAX_LISTED_NAMES + 1);
        assert_eq!(
            o.columns[MAX_LISTED_NAMES].len(),
            2 * (10_000 - MAX_LISTED_NAMES) - 1
        );
    }

    #[test]
    fn open_index_with_filter_columns() {
        let r = parse_request(b"P\t1\ttest\tuser\tPRIMARY\tuser_name,user_email\tcreated").unwrap();
        assert_eq!(
            r,
            Request::OpenIndex(OpenIndexRequest {
                index_id: 1,
                db: b"test".to_vec(),
                table: b"user".to_vec(),
                index: b"PRIMARY".to_vec(),
                columns: vec![b"user_name".to_vec(), b"user_email".to_vec()],
                filter_columns: vec![b"created".to_vec()],
            })
        );
    }

    #[test]
    fn open_index_reads_like_the_original() {
        // Verified against the plugin: `P x ...` opens id 0, `P 1x2` id 12,
        // `P 4294967297` id 1; `P` alone opens an empty table name.
        let id = |line: &[u8]| match parse_request(line).unwrap() {
            Request::OpenIndex(o) => o.index_id,
            other => panic!("{other:?}"),
        };
        assert_eq!(id(b"P\tx\tdb\tt\tPRIMARY\ta"), 0);
        assert_eq!(id(b"P\t1x2\tdb\tt\tPRIMARY\ta"), 12);
        assert_eq!(id(b"P\t4294967297\tdb\tt\tPRIMARY\ta"), 1);
        match parse_request(b"P").unwrap() {
            Request::OpenIndex(o) => {
                assert!(o.table.is_empty() && o.columns.is_empty() && o.index.is_empty());
            }
            other => panic!("{other:?}"),
        }
        match parse_request(b"P\t0\tdb\tt\t\ta,\tx\x00y").unwrap() {
            Request::OpenIndex(o) => {
                assert_eq!(o.columns, vec![b"a".to_vec(), Vec::new()]);
                assert_eq!(o.filter_columns, vec![b"x".to_vec()]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn simple_find_defaults() {
        let f = find(b"0\t=\t1\t101");
        assert_eq!(f.op, FindOp::Eq);
        assert_eq!(f.keys, vec![Some(b"101".to_vec())]);
        assert_eq!((f.limit, f.offset, f.effective_limit()), (0, 0, 1));
        assert!(f.in_clause.is_none() && f.filters.is_empty() && f.modify.is_none());
    }

    #[test]
    fn numbers_wrap_and_skip_non_digits() {
        assert_eq!(parse_u32(b"12ab"), 12);
        assert_eq!(parse_u32(b"a1b2"), 12);
        assert_eq!(parse_u32(b"ab"), 0);
        assert_eq!(parse_u32(b"4294967296"), 0);
        assert_eq!(parse_u32(b"4294967297"), 1);
        let f = find(b"0\t<\t1\t100000\t4294967296\tx");
        assert_eq!((f.effective_limit(), f.offset), (1, 0));
        assert_eq!(exec(b"4294967299\t+\t1\tx").index_id, 3);
    }

    #[test]
    fn in_filters_and_modify() {
        let f = find(
            b"3\t=\t2\ta\t\x00\t10\t2\t@\t1\t2\tx\t\x00\tF\t!=\t0\tzz\tW\t<=\t1\t\x00\tU?\tv1\t\x00",
        );
        assert_eq!(f.keys, vec![Some(b"a".to_vec()), None]);
        assert_eq!((f.limit, f.offset), (10, 2));
        assert_eq!(
            f.in_clause,
            // The NULL token is the byte 0x00 in an IN clause.
            Some(InClause::new(Some(1), 2, &[b"x", &[0]]))
        );
        assert_eq!(f.filters.len(), 2);
        assert_eq!(f.filters[0].kind, FilterKind::Skip);
        assert_eq!(f.filters[0].op, FilterOp::Ne);
        assert_eq!(f.filters[1].kind, FilterKind::While);
        assert_eq!(f.filters[1].value, None);
        let m = f.modify.unwrap();
        assert_eq!(m.op, Some(ModifyOp::Update));
        assert!(m.returning);
        assert_eq!(m.values, vec![Some(b"v1".to_vec()), None]);
        assert_eq!(m.value(5), Some(&b""[..]));
    }

    #[test]
    fn in_clause_variants() {
        // Any token starting with `@` opens the clause.
        let f = find(b"0\t>=\t1\t1\t10\t0\t@x\t0\t2\t1\t3");
        assert_eq!(f.in_clause.as_ref().map(|i| i.count), Some(2));
        // A position that reads as a negative int: ignored.
        let f = find(b"0\t>=\t1\t1\t10\t0\t@\t2147483648\t1\t5");
        assert!(f.in_clause.is_some() && f.active_in().is_none());
    }

    #[test]
    fn filter_operators() {
        for (tok, op) in [
            (&b"="[..], FilterOp::Eq),
            (b"!=", FilterOp::Ne),
            (b">=", FilterOp::Ge),
            (b"<", FilterOp::Lt),
            (b"!", FilterOp::Never),
            (b"x", FilterOp::Never),
            (b"==", FilterOp::Never),
            (b"<>", FilterOp::Always),
            (b"=>", FilterOp::Always),
            (b"=<", FilterOp::Always),
            (b"", FilterOp::Always),
            (b"abc", FilterOp::Always),
            (b"!==", FilterOp::Always),
        ] {
            assert_eq!(FilterOp::from_token(tok), op, "{tok:?}");
        }
    }

    #[test]
    fn modify_token_first_byte() {
        let m = |line: &[u8]| find(line).modify;
        assert_eq!(
            m(b"1\t>=\t1\t2\t2\t0\tUU\tx").map(|m| (m.op, m.returning)),
            Some((Some(ModifyOp::Update), false))
        );
        assert_eq!(
            m(b"1\t=\t1\t2\t1\t0\tD!").map(|m| m.op),
            Some(Some(ModifyOp::Delete))
        );
        assert_eq!(
            m(b"1\t=\t1\t2\t1\t0\t+-").map(|m| m.op),
            Some(Some(ModifyOp::Increment))
        );
        assert_eq!(m(b"1\t=\t1\t2\t1\t0\tZ").map(|m| m.op), Some(None));
        // An empty token (or a TAB after the offset) is a plain find.
        assert_eq!(m(b"0\t>=\t1\tabc\t1\t0\t"), None);
        assert_eq!(m(b"0\t>=\t1\tabc\t1\t0\t\textra"), None);
    }

    #[test]
    fn insert_values() {
        match exec(b"1\t+\t3\ta\t\x00\t").operation().unwrap() {
            IndexOperation::Insert(i) => {
                assert_eq!(i.values, vec![Some(b"a".to_vec()), None, Some(Vec::new())]);
                assert_eq!(i.count, 3);
            }
            other => panic!("{other:?}"),
        }
        match exec(b"1\t+\t4\ta").operation().unwrap() {
            IndexOperation::Insert(i) => assert_eq!(i.value(3), Some(&b""[..])),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_keys_read_as_empty() {
        let f = find(b"0\t=\t2\tonly");
        assert_eq!(f.keys, vec![Some(b"only".to_vec()), Some(Vec::new())]);
    }

    #[test]
    fn error_codes_and_their_order() {
        assert_eq!(error(b"", 0), Some(ErrorKind::Cmd));
        assert_eq!(error(b"X\t1", 0), Some(ErrorKind::Cmd));
        assert_eq!(error(b"0\t!\t1\t1", 0), Some(ErrorKind::Op));
        assert_eq!(error(b"0\t=\t0", 0), Some(ErrorKind::KLen));
        assert_eq!(error(b"0\t+\t0", 0), Some(ErrorKind::KLen));
        assert_eq!(error(b"0\tS\t0", 0), Some(ErrorKind::KLen));
        assert_eq!(error(b"0\tS\t1\t1", 0), None);
        // Parse-time errors come before op and klen.
        assert_eq!(
            error(b"1\t<\t1\tx\t1\t0\t@\t0\t0", 0),
            Some(ErrorKind::InValuesLen)
        );
        assert_eq!(
            error(b"1\t!\t1\tx\t1\t0\tF\t=\t9\t1", 3),
            Some(ErrorKind::FilterFld)
        );
        assert_eq!(
            error(b"0\t=\t1\t1\t1\t0\tFF\t=\t0\t1", 1),
            Some(ErrorKind::FilterType)
        );
        // Filters in order: the first bad one decides.
        assert_eq!(
            error(b"0\t=\t1\t1\t1\t0\tF\t=\t5\t1\tFF\t=\t0\t1", 1),
            Some(ErrorKind::FilterFld)
        );
        assert_eq!(
            error(b"0\t=\t1\t1\t1\t0\tF\t=\t0\t1\tFF\t=\t5\t1", 1),
            Some(ErrorKind::FilterType)
        );
        assert_eq!(error(b"0\t=\t1\t1\t1\t0\tX", 0), None);
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        let f = find(b"0\t=\t4294967295\tk");
        assert!(f.keys.len() <= MAX_PADDED_VALUES);
        match exec(b"0\t+\t4294967295").operation().unwrap() {
            IndexOperation::Insert(i) => assert!(i.values.is_empty()),
            other => panic!("{other:?}"),
        }
        let f = find(b"0\t=\t1\tk\t1\t0\t@\t0\t4294967295\tv");
        let inc = f.in_clause.unwrap();
        assert_eq!(inc.given(), 1);
        assert_eq!(inc.seeks(), 1 + MAX_PADDED_VALUES);
    }

    #[test]
    fn auth_secret_compares_raw_length() {
        match parse_request(b"A\t1\ta\x01\x41b").unwrap() {
            Request::Auth(a) => {
                assert_eq!(a.auth_type, b"1");
                assert_eq!(a.secret, b"a\x01bb");
            }
            other => panic!("{other:?}"),
        }
    }
}
