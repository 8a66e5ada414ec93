//! Request types and the line parser (sections 3 to 7 of the spec).
//!
//! The parser is positional, like the original server's: it never needs to know
//! what is opened. Checks that need the opened index (`stmtnum`, `kpnum`,
//! `filterfld`, ...) belong to the server. For find/modify/insert lines the
//! index id is parsed first and the rest is kept as a `Result`, so that the
//! server can answer `stmtnum` before any other error, as the original did.

use crate::codec::{decode_token, Value};
use crate::response::ErrorKind;

/// Largest index id a client may open. Ids are small numbers chosen by clients;
/// anything larger is refused instead of growing per-connection tables.
pub const MAX_INDEX_ID: u32 = 65_535;

/// A parsed request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    OpenIndex(OpenIndexRequest),
    Auth(AuthRequest),
    /// Find, find-and-modify or insert on an opened index.
    Exec(ExecRequest),
}

/// A request error: which error line to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtoError(pub ErrorKind);

/// `P <indexid> <db> <table> <index> <columns> [<fcolumns>]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenIndexRequest {
    pub index_id: u32,
    pub db: Vec<u8>,
    pub table: Vec<u8>,
    /// Empty means PRIMARY.
    pub index: Vec<u8>,
    pub columns: Vec<Vec<u8>>,
    pub filter_columns: Vec<Vec<u8>>,
}

/// `A <type> <secret>`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRequest {
    pub auth_type: Vec<u8>,
    pub secret: Vec<u8>,
}

/// `<indexid> ...`: the operation is kept unvalidated-until-used (see module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    pub index_id: u32,
    pub operation: Result<IndexOperation, ProtoError>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOperation {
    Find(FindRequest),
    Insert(InsertRequest),
}

/// `<indexid> + <n> <v1> ... <vn>`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertRequest {
    pub values: Vec<Value>,
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
    /// The `n` key values (missing trailing tokens read as empty strings).
    pub keys: Vec<Value>,
    /// Already adjusted for the quirk "a limit of 0 means 1".
    pub limit: u32,
    pub offset: u32,
    pub in_clause: Option<InClause>,
    pub filters: Vec<FilterSpec>,
    pub modify: Option<ModifySpec>,
}

/// `@ <icol> <m> <iv1> ... <ivm>`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InClause {
    pub key_column: u32,
    pub values: Vec<Value>,
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
    /// Any other operator: the condition is always false (quirk).
    Never,
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

/// `<mop> <u1> ... <uc>`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifySpec {
    pub op: ModifyOp,
    /// `?` form: answer with the rows as they were before the change.
    pub returning: bool,
    /// All value tokens that followed; the server reads exactly as many as
    /// there are opened columns, padding with empty strings.
    pub values: Vec<Value>,
}

/// Parses one request line, without its LF (and without the tolerated CR).
pub fn parse_request(line: &[u8]) -> Result<Request, ProtoError> {
    let mut tokens = Tokens::new(line);
    let first = tokens.next_raw().unwrap_or(b"");
    match first {
        b"P" => parse_open_index(&mut tokens).map(Request::OpenIndex),
        b"A" => Ok(Request::Auth(AuthRequest {
            auth_type: tokens.next_raw().unwrap_or(b"").to_vec(),
            secret: tokens.next_value().flatten().unwrap_or_default(),
        })),
        [b'0'..=b'9', ..] => {
            let index_id = parse_index_id(first)?;
            Ok(Request::Exec(ExecRequest {
                index_id,
                operation: parse_operation(&mut tokens),
            }))
        }
        _ => Err(ProtoError(ErrorKind::Cmd)),
    }
}

fn parse_index_id(raw: &[u8]) -> Result<u32, ProtoError> {
    let id = parse_number(raw);
    if id > u64::from(MAX_INDEX_ID) {
        return Err(ProtoError(ErrorKind::StmtNum));
    }
    Ok(id as u32)
}

fn parse_open_index(tokens: &mut Tokens<'_>) -> Result<OpenIndexRequest, ProtoError> {
    let id_token = tokens.next_raw().unwrap_or(b"");
    if !id_token.first().is_some_and(u8::is_ascii_digit) {
        return Err(ProtoError(ErrorKind::StmtNum));
    }
    let index_id = parse_index_id(id_token)?;
    let mut text = || tokens.next_value().flatten().unwrap_or_default();
    let db = text();
    let table = text();
    let index = text();
    let columns = split_names(&text());
    let filter_columns = split_names(&text());
    Ok(OpenIndexRequest {
        index_id,
        db,
        table,
        index,
        columns,
        filter_columns,
    })
}

fn split_names(list: &[u8]) -> Vec<Vec<u8>> {
    if list.is_empty() {
        return Vec::new();
    }
    list.split(|&b| b == b',').map(<[u8]>::to_vec).collect()
}

fn parse_operation(tokens: &mut Tokens<'_>) -> Result<IndexOperation, ProtoError> {
    let op = tokens.next_raw().unwrap_or(b"");
    let count = parse_number(tokens.next_raw().unwrap_or(b""));
    if op == b"+" {
        let values = tokens.take_values(count);
        return Ok(IndexOperation::Insert(InsertRequest { values }));
    }
    let op = match op {
        b"=" => FindOp::Eq,
        b">" => FindOp::Gt,
        b">=" => FindOp::Ge,
        b"<" => FindOp::Lt,
        b"<=" => FindOp::Le,
        _ => return Err(ProtoError(ErrorKind::Op)),
    };
    if count == 0 {
        return Err(ProtoError(ErrorKind::KLen));
    }
    // Bound the key count by what the line can hold, so a huge `n` cannot
    // make us reserve memory; an index never has more than a few columns.
    let keys = tokens.take_values(count);
    let mut find = FindRequest {
        op,
        keys,
        limit: 1,
        offset: 0,
        in_clause: None,
        filters: Vec::new(),
        modify: None,
    };
    if tokens.is_done() {
        return Ok(IndexOperation::Find(find));
    }
    find.limit =
        parse_number(tokens.next_raw().unwrap_or(b"")).clamp(1, u64::from(u32::MAX)) as u32;
    find.offset = parse_number(tokens.next_raw().unwrap_or(b"")).min(u64::from(u32::MAX)) as u32;

    if tokens.peek_raw() == Some(b"@") {
        tokens.next_raw();
        let key_column =
            parse_number(tokens.next_raw().unwrap_or(b"")).min(u64::from(u32::MAX)) as u32;
        let m = parse_number(tokens.next_raw().unwrap_or(b""));
        if m == 0 {
            return Err(ProtoError(ErrorKind::InValuesLen));
        }
        let values = tokens.take_values(m);
        find.in_clause = Some(InClause { key_column, values });
    }

    while let Some(raw) = tokens.peek_raw() {
        if !matches!(raw.first(), Some(b'F' | b'W')) {
            break;
        }
        tokens.next_raw();
        let kind = match raw {
            b"F" => FilterKind::Skip,
            b"W" => FilterKind::While,
            _ => return Err(ProtoError(ErrorKind::FilterType)),
        };
        let op = match tokens.next_raw().unwrap_or(b"") {
            b"=" => FilterOp::Eq,
            b"!=" => FilterOp::Ne,
            b">" => FilterOp::Gt,
            b">=" => FilterOp::Ge,
            b"<" => FilterOp::Lt,
            b"<=" => FilterOp::Le,
            _ => FilterOp::Never,
        };
        let column = parse_number(tokens.next_raw().unwrap_or(b"")).min(u64::from(u32::MAX)) as u32;
        let value = tokens.next_value().unwrap_or(Some(Vec::new()));
        find.filters.push(FilterSpec {
            kind,
            op,
            column,
            value,
        });
    }

    if let Some(raw) = tokens.next_raw() {
        let (op, returning) = match raw {
            b"U" => (ModifyOp::Update, false),
            b"D" => (ModifyOp::Delete, false),
            b"+" => (ModifyOp::Increment, false),
            b"-" => (ModifyOp::Decrement, false),
            b"U?" => (ModifyOp::Update, true),
            b"D?" => (ModifyOp::Delete, true),
            b"+?" => (ModifyOp::Increment, true),
            b"-?" => (ModifyOp::Decrement, true),
            _ => return Err(ProtoError(ErrorKind::ModOp)),
        };
        let values = tokens.rest_values();
        find.modify = Some(ModifySpec {
            op,
            returning,
            values,
        });
    }
    Ok(IndexOperation::Find(find))
}

/// Leading-decimal parse, as the original's `atoi`: digits up to the first
/// non-digit, saturating; no digits reads as 0.
pub fn parse_number(raw: &[u8]) -> u64 {
    let mut n: u64 = 0;
    for &b in raw {
        if !b.is_ascii_digit() {
            break;
        }
        n = n.saturating_mul(10).saturating_add(u64::from(b - b'0'));
    }
    n
}

/// The raw tokens of a line, split on HT.
type TabSplit<'a> = std::slice::Split<'a, u8, fn(&u8) -> bool>;

/// Cursor over the raw HT-separated tokens of a line.
struct Tokens<'a> {
    iter: std::iter::Peekable<TabSplit<'a>>,
}

fn is_tab(b: &u8) -> bool {
    *b == b'\t'
}

impl<'a> Tokens<'a> {
    fn new(line: &'a [u8]) -> Self {
        let split: std::slice::Split<'a, u8, fn(&u8) -> bool> =
            line.split(is_tab as fn(&u8) -> bool);
        Tokens {
            iter: split.peekable(),
        }
    }

    fn next_raw(&mut self) -> Option<&'a [u8]> {
        self.iter.next()
    }

    fn peek_raw(&mut self) -> Option<&'a [u8]> {
        self.iter.peek().copied()
    }

    fn is_done(&mut self) -> bool {
        self.iter.peek().is_none()
    }

    fn next_value(&mut self) -> Option<Value> {
        self.iter.next().map(decode_token)
    }

    /// Takes `count` values; tokens missing at the end of the line read as
    /// empty strings. Never allocates more than the line can hold.
    fn take_values(&mut self, count: u64) -> Vec<Value> {
        let mut values = Vec::new();
        for _ in 0..count {
            match self.next_value() {
                Some(v) => values.push(v),
                None => break,
            }
        }
        let missing = count.saturating_sub(values.len() as u64);
        // Padding is bounded: callers validate `count` against the index, and
        // absurd counts are capped here so a tiny line cannot demand gigabytes.
        let pad = missing.min(MAX_PADDED_VALUES) as usize;
        values.extend(std::iter::repeat_with(|| Some(Vec::new())).take(pad));
        values
    }

    fn rest_values(&mut self) -> Vec<Value> {
        self.iter.by_ref().map(decode_token).collect()
    }
}

/// No index or table has more columns than this, so padding beyond it is moot.
const MAX_PADDED_VALUES: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    fn find(line: &[u8]) -> FindRequest {
        match parse_request(line) {
            Ok(Request::Exec(ExecRequest {
                operation: Ok(IndexOperation::Find(f)),
                ..
            })) => f,
            other => panic!("expected find, got {other:?}"),
        }
    }

    fn exec_err(line: &[u8]) -> ErrorKind {
        match parse_request(line) {
            Ok(Request::Exec(ExecRequest {
                operation: Err(ProtoError(kind)),
                ..
            })) => kind,
            Err(ProtoError(kind)) => kind,
            other => panic!("expected error, got {other:?}"),
        }
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
    fn open_index_with_empty_columns() {
        match parse_request(b"P\t0\tdb\tt\t\t").unwrap() {
            Request::OpenIndex(o) => {
                assert!(o.columns.is_empty());
                assert!(o.index.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn simple_find_defaults() {
        let f = find(b"0\t=\t1\t101");
        assert_eq!(f.op, FindOp::Eq);
        assert_eq!(f.keys, vec![Some(b"101".to_vec())]);
        assert_eq!((f.limit, f.offset), (1, 0));
        assert!(f.in_clause.is_none() && f.filters.is_empty() && f.modify.is_none());
    }

    #[test]
    fn limit_zero_means_one() {
        let f = find(b"0\t>=\t1\t100\t0\t5");
        assert_eq!((f.limit, f.offset), (1, 5));
    }

    #[test]
    fn in_filters_and_modify() {
        let f = find(
            b"3\t=\t2\ta\t\x00\t10\t2\t@\t1\t2\tx\ty\tF\t!=\t0\tzz\tW\t<=\t1\t\x00\tU?\tv1\t\x00",
        );
        assert_eq!(f.keys, vec![Some(b"a".to_vec()), None]);
        assert_eq!((f.limit, f.offset), (10, 2));
        assert_eq!(
            f.in_clause,
            Some(InClause {
                key_column: 1,
                values: vec![Some(b"x".to_vec()), Some(b"y".to_vec())]
            })
        );
        assert_eq!(f.filters.len(), 2);
        assert_eq!(f.filters[0].kind, FilterKind::Skip);
        assert_eq!(f.filters[0].op, FilterOp::Ne);
        assert_eq!(f.filters[1].kind, FilterKind::While);
        assert_eq!(f.filters[1].value, None);
        let m = f.modify.unwrap();
        assert_eq!(m.op, ModifyOp::Update);
        assert!(m.returning);
        assert_eq!(m.values, vec![Some(b"v1".to_vec()), None]);
    }

    #[test]
    fn unknown_filter_op_is_never() {
        let f = find(b"0\t>=\t1\t1\t1\t0\tF\t<>\t0\t5");
        assert_eq!(f.filters[0].op, FilterOp::Never);
    }

    #[test]
    fn insert_values() {
        match parse_request(b"1\t+\t3\ta\t\x00\t").unwrap() {
            Request::Exec(ExecRequest {
                index_id: 1,
                operation: Ok(IndexOperation::Insert(i)),
            }) => assert_eq!(i.values, vec![Some(b"a".to_vec()), None, Some(Vec::new())]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_keys_read_as_empty() {
        let f = find(b"0\t=\t2\tonly");
        assert_eq!(f.keys, vec![Some(b"only".to_vec()), Some(Vec::new())]);
    }

    #[test]
    fn error_codes() {
        assert_eq!(exec_err(b""), ErrorKind::Cmd);
        assert_eq!(exec_err(b"X\t1"), ErrorKind::Cmd);
        assert_eq!(exec_err(b"0\t!\t1\t1"), ErrorKind::Op);
        assert_eq!(exec_err(b"0\t=\t0"), ErrorKind::KLen);
        assert_eq!(
            exec_err(b"0\t=\t1\t1\t1\t0\t@\t0\t0"),
            ErrorKind::InValuesLen
        );
        assert_eq!(
            exec_err(b"0\t=\t1\t1\t1\t0\tFF\t=\t0\t1"),
            ErrorKind::FilterType
        );
        assert_eq!(exec_err(b"0\t=\t1\t1\t1\t0\tX"), ErrorKind::ModOp);
        assert_eq!(exec_err(b"99999999\t=\t1\t1"), ErrorKind::StmtNum);
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        let f = find(b"0\t=\t18446744073709551615\tk");
        assert!(f.keys.len() as u64 <= MAX_PADDED_VALUES + 1);
        match parse_request(b"0\t+\t999999999999").unwrap() {
            Request::Exec(ExecRequest {
                operation: Ok(IndexOperation::Insert(i)),
                ..
            }) => assert!(i.values.len() as u64 <= MAX_PADDED_VALUES),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn numbers_are_leading_digits() {
        assert_eq!(parse_number(b"12ab"), 12);
        assert_eq!(parse_number(b"ab"), 0);
        assert_eq!(parse_number(b"99999999999999999999999"), u64::MAX);
    }
}
