//! Request encoder: turns a parsed `hs_proto::Request` back into a line.
//! It is the inverse of the parser on the parser's own output, so the
//! parse_request target can check `parse(encode(parse(line))) == parse(line)`.

use hs_proto::codec::encode_bytes;
use hs_proto::{
    encode_token, FilterKind, FilterOp, FindOp, FindRequest, IndexOperation, ModifyOp, Request,
    Value,
};

/// Encodes a request as one line without LF. `None` for an exec request
/// whose operation failed to parse: there is nothing to encode.
pub fn encode_request(r: &Request) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match r {
        Request::OpenIndex(o) => {
            out.extend_from_slice(b"P\t");
            push_decimal(&mut out, u64::from(o.index_id));
            for text in [&o.db, &o.table, &o.index] {
                out.push(b'\t');
                encode_bytes(text, &mut out);
            }
            out.push(b'\t');
            push_names(&mut out, &o.columns);
            if !o.filter_columns.is_empty() {
                out.push(b'\t');
                push_names(&mut out, &o.filter_columns);
            }
        }
        Request::Auth(a) => {
            // The type is taken raw by the parser, the secret decoded.
            out.extend_from_slice(b"A\t");
            out.extend_from_slice(&a.auth_type);
            out.push(b'\t');
            encode_bytes(&a.secret, &mut out);
        }
        Request::Exec(e) => {
            push_decimal(&mut out, u64::from(e.index_id));
            match e.operation.as_ref().ok()? {
                IndexOperation::Insert(ins) => {
                    out.extend_from_slice(b"\t+\t");
                    push_decimal(&mut out, ins.values.len() as u64);
                    push_values(&mut out, &ins.values);
                }
                IndexOperation::Find(f) => push_find(&mut out, f),
            }
        }
    }
    Some(out)
}

fn push_find(out: &mut Vec<u8>, f: &FindRequest) {
    out.push(b'\t');
    out.extend_from_slice(match f.op {
        FindOp::Eq => b"=".as_slice(),
        FindOp::Gt => b">",
        FindOp::Ge => b">=",
        FindOp::Lt => b"<",
        FindOp::Le => b"<=",
    });
    out.push(b'\t');
    push_decimal(out, f.keys.len() as u64);
    push_values(out, &f.keys);
    let defaults = f.limit == 1
        && f.offset == 0
        && f.in_clause.is_none()
        && f.filters.is_empty()
        && f.modify.is_none();
    if defaults {
        return;
    }
    out.push(b'\t');
    push_decimal(out, u64::from(f.limit));
    out.push(b'\t');
    push_decimal(out, u64::from(f.offset));
    if let Some(inc) = &f.in_clause {
        out.extend_from_slice(b"\t@\t");
        push_decimal(out, u64::from(inc.key_column));
        out.push(b'\t');
        push_decimal(out, inc.values.len() as u64);
        push_values(out, &inc.values);
    }
    for flt in &f.filters {
        out.push(b'\t');
        out.push(match flt.kind {
            FilterKind::Skip => b'F',
            FilterKind::While => b'W',
        });
        out.push(b'\t');
        out.extend_from_slice(match flt.op {
            FilterOp::Eq => b"=".as_slice(),
            FilterOp::Ne => b"!=",
            FilterOp::Gt => b">",
            FilterOp::Ge => b">=",
            FilterOp::Lt => b"<",
            FilterOp::Le => b"<=",
            FilterOp::Never => b"<>",
        });
        out.push(b'\t');
        push_decimal(out, u64::from(flt.column));
        out.push(b'\t');
        encode_token(flt.value.as_deref(), out);
    }
    if let Some(m) = &f.modify {
        out.push(b'\t');
        out.extend_from_slice(match m.op {
            ModifyOp::Update => b"U".as_slice(),
            ModifyOp::Delete => b"D",
            ModifyOp::Increment => b"+",
            ModifyOp::Decrement => b"-",
        });
        if m.returning {
            out.push(b'?');
        }
        push_values(out, &m.values);
    }
}

fn push_values(out: &mut Vec<u8>, values: &[Value]) {
    for v in values {
        out.push(b'\t');
        encode_token(v.as_deref(), out);
    }
}

fn push_names(out: &mut Vec<u8>, names: &[Vec<u8>]) {
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        encode_bytes(n, out);
    }
}

fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(n.to_string().as_bytes());
}
