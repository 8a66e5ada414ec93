//! The MySQL/MariaDB client protocol as bytes, with no I/O: packet framing,
//! the handshake and its authentication methods, the answers to a text
//! query (OK, ERR, result sets with text rows), SQL literals, and the
//! replication commands and event framing a binlog reader needs (`binlog`).
//!
//! hsd's asynchronous MySQL link and hsbench's load generator both speak the
//! protocol through this crate, so it is written once. Only the text protocol
//! (COM_QUERY) is covered: it returns every value as the server's own text,
//! which is what HandlerSocket answers with.

pub mod auth;
pub mod binlog;
pub mod gtid;
pub mod handshake;
pub mod literal;
pub mod number;
pub mod packet;
pub mod result;
pub mod session_state;
pub mod url;

pub use gtid::{GtidError, GtidSet};
pub use handshake::{Capabilities, Flavor, Greeting, HandshakeResponse, ServerVersion};
pub use packet::{PacketReader, PacketWriter, MAX_PAYLOAD};
pub use result::{ColumnDef, ErrPacket, OkPacket, Response, RowPacket, TextRow};
pub use url::{MysqlUrl, SslMode, UrlOptions};
