//! Request line builders (spec sections 3 to 7). Every value goes through
//! `hs_proto::encode_token`, so control bytes are escaped and NULL (`None`)
//! stays distinct from the empty string. Lines are returned without the
//! terminating LF; the client appends it.

use hs_proto::codec::encode_bytes;
use hs_proto::{encode_token, Value};

use crate::value::AsValue;

/// `A 1 <secret>`
pub fn auth_line(secret: &[u8]) -> Vec<u8> {
    let mut out = b"A\t1\t".to_vec();
    encode_bytes(secret, &mut out);
    out
}

/// `P <id> <db> <table> <index> <columns> [<fcolumns>]`; the `fcolumns` token
/// is left out when `filter_columns` is empty.
pub fn open_index_line(
    id: u32,
    db: &str,
    table: &str,
    index: &str,
    columns: &[&str],
    filter_columns: &[&str],
) -> Vec<u8> {
    let mut out = b"P".to_vec();
    push_number(&mut out, u64::from(id));
    for name in [db, table, index] {
        out.push(b'\t');
        encode_bytes(name.as_bytes(), &mut out);
    }
    push_names(&mut out, columns);
    if !filter_columns.is_empty() {
        push_names(&mut out, filter_columns);
    }
    out
}

/// `<id> + <n> <v1> ... <vn>`
pub fn insert_line<V: AsValue>(id: u32, values: &[V]) -> Vec<u8> {
    let mut out = Vec::new();
    push_decimal(&mut out, u64::from(id));
    out.extend_from_slice(b"\t+");
    push_values(&mut out, values.iter().map(AsValue::as_value));
    out
}

/// A find, optionally with limit/offset, IN, filters and a modification:
///
/// ```
/// use hs_client::Find;
/// let line = Find::new(1, ">=", &["10"])
///     .limit(10)
///     .offset(2)
///     .in_values(0, &["a", "b"])
///     .filter('F', "=", 0, Some("x"))
///     .modify("U?", &[Some("new"), None])
///     .to_line();
/// assert_eq!(
///     line,
///     b"1\t>=\t1\t10\t10\t2\t@\t0\t2\ta\tb\tF\t=\t0\tx\tU?\tnew\t\0".to_vec()
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Find {
    id: u32,
    op: Vec<u8>,
    keys: Vec<Value>,
    limit: Option<u32>,
    offset: Option<u32>,
    in_clause: Option<(u32, Vec<Value>)>,
    filters: Vec<Filter>,
    modify: Option<(Vec<u8>, Vec<Value>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Filter {
    ftype: Vec<u8>,
    op: Vec<u8>,
    column: u32,
    value: Value,
}

impl Find {
    /// `<id> <op> <n> <k1> ... <kn>`. `op` is sent as given (`=`, `>`, `>=`,
    /// `<`, `<=`; anything else is sent too, for testing the server's `op`).
    pub fn new<V: AsValue>(id: u32, op: &str, keys: &[V]) -> Find {
        Find {
            id,
            op: op.as_bytes().to_vec(),
            keys: owned(keys),
            limit: None,
            offset: None,
            in_clause: None,
            filters: Vec::new(),
            modify: None,
        }
    }

    /// Sets `limit` (the server reads 0 as 1). Unset, it is omitted unless
    /// something follows the keys, in which case `1` is sent.
    pub fn limit(mut self, n: u32) -> Self {
        self.limit = Some(n);
        self
    }

    /// Sets `offset`; unset, it is omitted or sent as `0`, like `limit`.
    pub fn offset(mut self, n: u32) -> Self {
        self.offset = Some(n);
        self
    }

    /// `@ <column> <m> <v1> ... <vm>`; `column` is an index column position.
    pub fn in_values<V: AsValue>(mut self, column: u32, values: &[V]) -> Self {
        self.in_clause = Some((column, owned(values)));
        self
    }

    /// Appends `<ftype> <fop> <fcol> <fval>`. `ftype` is `'F'` or `'W'` (any
    /// string is accepted, to test the server); `column` indexes the opened
    /// filter columns.
    pub fn filter<V: AsValue>(
        mut self,
        ftype: impl Into<String>,
        op: &str,
        column: u32,
        value: V,
    ) -> Self {
        self.filters.push(Filter {
            ftype: ftype.into().into_bytes(),
            op: op.as_bytes().to_vec(),
            column,
            value: value.as_value().map(<[u8]>::to_vec),
        });
        self
    }

    /// `<mop> <u1> ... <uc>`: `U`, `D`, `+`, `-`, or with `?` to get the rows
    /// back as they were. The values line up with the opened columns.
    pub fn modify<V: AsValue>(mut self, mop: &str, values: &[V]) -> Self {
        self.modify = Some((mop.as_bytes().to_vec(), owned(values)));
        self
    }

    /// A modification without values (`D`, `D?`).
    pub fn modify_op(self, mop: &str) -> Self {
        self.modify::<&[u8]>(mop, &[])
    }

    /// True when the line modifies rows (a `mop` is set): such a request is
    /// never retried automatically.
    pub fn is_write(&self) -> bool {
        self.modify.is_some()
    }

    pub fn index_id(&self) -> u32 {
        self.id
    }

    /// The request line, without LF.
    pub fn to_line(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_line(&mut out);
        out
    }

    /// Appends the request line (without LF) to `out`.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        push_decimal(out, u64::from(self.id));
        out.push(b'\t');
        encode_bytes(&self.op, out);
        push_values(out, self.keys.iter().map(Option::as_deref));
        let more = self.in_clause.is_some() || !self.filters.is_empty() || self.modify.is_some();
        if more || self.limit.is_some() || self.offset.is_some() {
            push_number(out, u64::from(self.limit.unwrap_or(1)));
            push_number(out, u64::from(self.offset.unwrap_or(0)));
        }
        if let Some((column, values)) = &self.in_clause {
            out.extend_from_slice(b"\t@");
            push_number(out, u64::from(*column));
            push_values(out, values.iter().map(Option::as_deref));
        }
        for f in &self.filters {
            out.push(b'\t');
            encode_bytes(&f.ftype, out);
            out.push(b'\t');
            encode_bytes(&f.op, out);
            push_number(out, u64::from(f.column));
            out.push(b'\t');
            encode_token(f.value.as_deref(), out);
        }
        if let Some((mop, values)) = &self.modify {
            out.push(b'\t');
            encode_bytes(mop, out);
            for v in values {
                out.push(b'\t');
                encode_token(v.as_deref(), out);
            }
        }
    }
}

fn owned<V: AsValue>(values: &[V]) -> Vec<Value> {
    values
        .iter()
        .map(|v| v.as_value().map(<[u8]>::to_vec))
        .collect()
}

/// `\t<count>\t<v1>...\t<vn>`
fn push_values<'a>(out: &mut Vec<u8>, values: impl ExactSizeIterator<Item = Option<&'a [u8]>>) {
    push_number(out, values.len() as u64);
    for v in values {
        out.push(b'\t');
        encode_token(v, out);
    }
}

/// `\t<name1>,<name2>,...`
fn push_names(out: &mut Vec<u8>, names: &[&str]) {
    out.push(b'\t');
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        encode_bytes(name.as_bytes(), out);
    }
}

/// `\t<n>`
fn push_number(out: &mut Vec<u8>, n: u64) {
    out.push(b'\t');
    push_decimal(out, n);
}

fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_proto::{parse_request, FilterKind, FilterOp, IndexOperation, ModifyOp, Request};

    const NONE: &[Option<&[u8]>] = &[];

    #[test]
    fn auth_escapes_the_secret() {
        assert_eq!(auth_line(b"s\te\x00"), b"A\t1\ts\x01\x49e\x01\x40".to_vec());
        assert_eq!(auth_line(b""), b"A\t1\t".to_vec());
    }

    #[test]
    fn open_index_layout() {
        assert_eq!(
            open_index_line(
                0,
                "test",
                "user",
                "PRIMARY",
                &["user_name", "user_email"],
                &[]
            ),
            b"P\t0\ttest\tuser\tPRIMARY\tuser_name,user_email".to_vec()
        );
        assert_eq!(
            open_index_line(7, "db", "t", "", &[], &["a", "b"]),
            b"P\t7\tdb\tt\t\t\ta,b".to_vec()
        );
        assert_eq!(
            open_index_line(1, "db", "t", "i", &["x"], &["created"]),
            b"P\t1\tdb\tt\ti\tx\tcreated".to_vec()
        );
    }

    #[test]
    fn insert_null_vs_empty_and_escaping() {
        let line = insert_line(
            3,
            &[Some(b"a\nb".as_slice()), None, Some(b""), Some(b"\x01")],
        );
        assert_eq!(line, b"3\t+\t4\ta\x01\x4ab\t\x00\t\t\x01\x41".to_vec());
        assert_eq!(insert_line(0, NONE), b"0\t+\t0".to_vec());
        let round = parse_request(&line).unwrap();
        let Request::Exec(exec) = round else {
            panic!("not an exec line");
        };
        assert_eq!(exec.index_id, 3);
        match exec.operation() {
            Ok(IndexOperation::Insert(i)) => assert_eq!(
                i.values,
                vec![
                    Some(b"a\nb".to_vec()),
                    None,
                    Some(Vec::new()),
                    Some(vec![1])
                ]
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn plain_find_has_no_limit() {
        assert_eq!(
            Find::new(0, "=", &["101"]).to_line(),
            b"0\t=\t1\t101".to_vec()
        );
        assert_eq!(
            Find::new(2, ">=", &[Some("a"), None, Some("")]).to_line(),
            b"2\t>=\t3\ta\t\x00\t".to_vec()
        );
    }

    #[test]
    fn limit_and_offset_come_right_after_keys() {
        assert_eq!(
            Find::new(0, ">=", &["100"]).limit(2).to_line(),
            b"0\t>=\t1\t100\t2\t0".to_vec()
        );
        assert_eq!(
            Find::new(0, ">=", &["100"]).offset(5).to_line(),
            b"0\t>=\t1\t100\t1\t5".to_vec()
        );
        // Something after the keys forces limit/offset to be present.
        assert_eq!(
            Find::new(0, "=", &["k"]).modify_op("D").to_line(),
            b"0\t=\t1\tk\t1\t0\tD".to_vec()
        );
    }

    #[test]
    fn in_clause_layout() {
        assert_eq!(
            Find::new(4, "=", &["x", "y"])
                .limit(10)
                .in_values(1, &[Some("a"), None, Some("\t")])
                .to_line(),
            b"4\t=\t2\tx\ty\t10\t0\t@\t1\t3\ta\t\x00\t\x01\x49".to_vec()
        );
    }

    #[test]
    fn filters_layout() {
        assert_eq!(
            Find::new(0, ">", &["1"])
                .limit(3)
                .offset(1)
                .filter('F', "!=", 0, "zz")
                .filter('W', "<=", 2, None::<&str>)
                .to_line(),
            b"0\t>\t1\t1\t3\t1\tF\t!=\t0\tzz\tW\t<=\t2\t\x00".to_vec()
        );
    }

    #[test]
    fn modify_layout() {
        assert_eq!(
            Find::new(0, "=", &["1"])
                .modify("U", &[Some("v"), None, Some("")])
                .to_line(),
            b"0\t=\t1\t1\t1\t0\tU\tv\t\x00\t".to_vec()
        );
        assert_eq!(
            Find::new(0, "=", &["1"]).modify("+?", &["5"]).to_line(),
            b"0\t=\t1\t1\t1\t0\t+?\t5".to_vec()
        );
        assert!(Find::new(0, "=", &["1"]).modify_op("D?").is_write());
        assert!(!Find::new(0, "=", &["1"]).limit(3).is_write());
    }

    #[test]
    fn full_find_roundtrips_through_the_parser() {
        let line = Find::new(3, "<=", &[Some(b"a".as_slice()), None])
            .limit(10)
            .offset(2)
            .in_values(1, &["x", "y"])
            .filter('F', "!=", 0, "z\x00")
            .filter('W', "<", 1, None::<&[u8]>)
            .modify("U?", &[Some("v1"), None])
            .to_line();
        let Request::Exec(exec) = parse_request(&line).unwrap() else {
            panic!("not an exec line");
        };
        assert_eq!(exec.index_id, 3);
        let f = match exec.operation() {
            Ok(IndexOperation::Find(f)) => f,
            other => panic!("{other:?}"),
        };
        assert_eq!(f.keys, vec![Some(b"a".to_vec()), None]);
        assert_eq!((f.limit, f.offset), (10, 2));
        let inc = f.in_clause.unwrap();
        assert_eq!(inc.position, Some(1));
        assert_eq!(
            (inc.given(), inc.value(0), inc.value(1)),
            (2, &b"x"[..], &b"y"[..])
        );
        assert_eq!(f.filters.len(), 2);
        assert_eq!(
            (f.filters[0].kind, f.filters[0].op),
            (FilterKind::Skip, FilterOp::Ne)
        );
        assert_eq!(f.filters[0].value, Some(b"z\x00".to_vec()));
        assert_eq!(
            (f.filters[1].kind, f.filters[1].op),
            (FilterKind::While, FilterOp::Lt)
        );
        assert_eq!(f.filters[1].value, None);
        let m = f.modify.unwrap();
        assert_eq!((m.op, m.returning), (Some(ModifyOp::Update), true));
        assert_eq!(m.values, vec![Some(b"v1".to_vec()), None]);
    }

    #[test]
    fn lines_never_contain_raw_framing_bytes() {
        let nasty: Vec<u8> = (0u8..=0x1f).collect();
        let line = Find::new(0, "=", std::slice::from_ref(&nasty))
            .filter('F', "=", 0, &nasty)
            .modify("U", &[&nasty])
            .to_line();
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        assert!(!insert_line(0, &[&nasty]).contains(&b'\n'));
        assert!(!auth_line(&nasty).contains(&b'\n'));
    }

    #[test]
    fn decimals() {
        let mut out = Vec::new();
        push_decimal(&mut out, 0);
        push_number(&mut out, u64::from(u32::MAX));
        assert_eq!(out, b"0\t4294967295".to_vec());
    }
}
