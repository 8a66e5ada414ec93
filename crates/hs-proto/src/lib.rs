//! The HandlerSocket wire format, as `docs/protocol.md` specifies it.
//!
//! This crate is pure data transformation: bytes in, typed requests out, and
//! responses encoded back to bytes. It performs no I/O and knows nothing about
//! storage, so the server, the client and the fuzzers all share one parser.

pub mod codec;
pub mod request;
pub mod response;

pub use codec::{decode_token, encode_token, unescape, Value};
pub use request::{
    parse_request, parse_u32, AuthRequest, ExecOp, ExecRequest, FilterKind, FilterOp, FilterSpec,
    FindOp, FindRequest, InClause, IndexOperation, InsertRequest, ModifyOp, ModifySpec,
    OpenIndexRequest, ProtoError, Request, MAX_INDEX_ID, MAX_PADDED_VALUES,
};
pub use response::{ErrorKind, Response, ResponseWriter};
