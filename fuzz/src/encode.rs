//! Request encoder: turns a parsed `hs_proto::Request` back into a line.
//! It is the inverse of the parser on the parser's own output, so the
//! parse_request target can check `parse(encode(parse(line))) == parse(line)`.

use hs_proto::codec::encode_bytes;
use hs_proto::{
    encode_token, ExecOp, ExecRequest, FilterKind, FilterOp, FindOp, ModifyOp, Request, Value,
};

/// Encodes a request as one line without LF. `None` for an `A` whose
/// secret holds control bytes (the parser's compare buffer cannot be sent
/// back as a token).
pub fn encode_request(r: &Request) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match r {
        Request::OpenIndex(o) => {
            // Names are taken raw (never unescaped) by the parser.
            out.extend_from_slice(b"P\t");
            push_decimal(&mut out, u64::from(o.index_id));
            for text in [&o.db, &o.table, &o.index] {
                out.push(b'\t');
                out.extend_from_slice(text);
            }
            out.push(b'\t');
            out.extend_from_slice(&o.columns.join(&b","[..]));
            out.push(b'\t');
            out.extend_from_slice(&o.filter_columns.join(&b","[..]));
        }
        Request::Auth(a) => {
            if a.secret.iter().any(|&b| b < 0x20) {
                return None;
            }
            out.extend_from_slice(b"A\t");
            out.extend_from_slice(&a.auth_type);
            out.push(b'\t');
            out.extend_from_slice(&a.secret);
        }
        Request::Exec(e) => push_exec(&mut out, e),
    }
    Some(out)
}

fn push_exec(out: &mut Vec<u8>, e: &ExecRequest) {
    push_decimal(out, u64::from(e.index_id));
    out.push(b'\t');
    out.extend_from_slice(match e.op {
        ExecOp::Find(FindOp::Eq) => b"=".as_slice(),
        ExecOp::Find(FindOp::Gt) => b">",
        ExecOp::Find(FindOp::Ge) => b">=",
        ExecOp::Find(FindOp::Lt) => b"<",
        ExecOp::Find(FindOp::Le) => b"<=",
        ExecOp::Insert => b"+",
        ExecOp::Sql => b"S",
        ExecOp::Invalid => b"!",
    });
    out.push(b'\t');
    push_decimal(out, u64::from(e.key_count));
    push_values(out, &e.keys);
    if (e.keys.len() as u64) < u64::from(e.key_count) {
        return; // the line ended among the keys
    }
    out.push(b'\t');
    push_decimal(out, u64::from(e.limit));
    out.push(b'\t');
    push_decimal(out, u64::from(e.offset));
    if let Some(inc) = &e.in_clause {
        out.extend_from_slice(b"\t@\t");
        push_decimal(out, inc.position.map_or(1 << 31, u64::from));
        out.push(b'\t');
        push_decimal(out, u64::from(inc.count));
        for i in 0..inc.given() {
            out.push(b'\t');
            encode_bytes(inc.value(i), out);
        }
        if inc.count == 0 || (inc.given() as u64) < u64::from(inc.count) {
            return;
        }
    }
    for flt in &e.filters {
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
            FilterOp::Never => b"!",
            FilterOp::Always => b"<>",
        });
        out.push(b'\t');
        push_decimal(out, u64::from(flt.column));
        out.push(b'\t');
        encode_token(flt.value.as_deref(), out);
    }
    if e.bad_filter_type {
        out.extend_from_slice(b"\tFF\t=\t0\t");
        return;
    }
    if let Some(m) = &e.modify {
        out.push(b'\t');
        out.push(match m.op {
            Some(ModifyOp::Update) => b'U',
            Some(ModifyOp::Delete) => b'D',
            Some(ModifyOp::Increment) => b'+',
            Some(ModifyOp::Decrement) => b'-',
            None => b'Z',
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

fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(n.to_string().as_bytes());
}
