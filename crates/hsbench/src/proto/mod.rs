//! The four protocols behind one enum: each encodes benchmark operations into a
//! write buffer and recognises one complete response at the start of a read
//! buffer (returning how many bytes it took and whether it was a success).
//! Enum dispatch rather than trait objects keeps the hot loop monomorphic.

pub mod hs;
pub mod memcached;
pub mod mysql;
pub mod mysql_conn;
pub mod redis;

use anyhow::Result;

use crate::args::{System, Target, Workload};
use crate::net::Conn;

/// Columns a read returns: name, email, created.
pub const READ_COLS: usize = 3;

/// One benchmark request.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    Get(u64),
    Multi(&'a [u64]),
    Insert(u64),
    Update { key: u64, version: u64 },
}

/// What a response meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// The server answered with an error (HS code != 0, ERR, -ERR, SERVER_ERROR...).
    Error,
    /// A success that does not match the request: missing rows (a miss), wrong
    /// column count, an update that changed no row.
    Miss,
}

pub enum Codec {
    Hs(hs::HsCodec),
    Memcached(memcached::McCodec),
    Redis(redis::RedisCodec),
    Mysql(mysql::MyCodec),
}

impl Codec {
    #[inline]
    pub fn encode(&mut self, op: &Op, out: &mut Vec<u8>) {
        match self {
            Codec::Hs(c) => c.encode(op, out),
            Codec::Memcached(c) => c.encode(op, out),
            Codec::Redis(c) => c.encode(op, out),
            Codec::Mysql(c) => c.encode(op, out),
        }
    }

    /// One complete response at the start of `buf`: `Ok(None)` when more bytes
    /// are needed, `Err` when the bytes cannot be a valid response (fatal).
    #[inline]
    pub fn parse(&self, buf: &[u8]) -> Result<Option<(usize, Outcome)>> {
        match self {
            Codec::Hs(c) => Ok(c.parse(buf)),
            Codec::Memcached(c) => c.parse(buf),
            Codec::Redis(c) => c.parse(buf),
            Codec::Mysql(c) => c.parse(buf),
        }
    }
}

/// Opens a connection and does the per-protocol setup (HS auth + open_index,
/// MySQL handshake + prepare).
pub async fn connect(t: &Target, workload: Workload) -> Result<(Conn, Codec)> {
    if workload == Workload::Mixed && matches!(t.system, System::Memcached | System::Redis) {
        anyhow::bail!("--workload mixed runs on hs and mysql only");
    }
    let mut conn = Conn::connect(&t.host, t.port).await?;
    let codec = match t.system {
        System::Hs => Codec::Hs(hs::HsCodec::open(&mut conn, t, workload).await?),
        System::Memcached => Codec::Memcached(memcached::McCodec::new(t, workload)),
        System::Redis => Codec::Redis(redis::RedisCodec::new(t, workload)),
        System::Mysql => Codec::Mysql(mysql::MyCodec::open(&mut conn, t, workload).await?),
    };
    Ok((conn, codec))
}

/// Test helper: feeds `bytes` to `parse` growing one prefix at a time (so every
/// split position is seen as an incomplete buffer) and checks that the frame is
/// recognised exactly when complete, with the same result as all at once.
#[cfg(test)]
pub fn check_splits<T: PartialEq + std::fmt::Debug>(
    bytes: &[u8],
    parse: impl Fn(&[u8]) -> Result<Option<(usize, T)>>,
) -> T {
    let (n, whole) = parse(bytes)
        .unwrap()
        .expect("complete frame not recognised");
    assert_eq!(n, bytes.len(), "frame length");
    for cut in 0..bytes.len() {
        assert!(
            parse(&bytes[..cut]).unwrap().is_none(),
            "frame recognised early at {cut} of {}",
            bytes.len()
        );
        // Two frames back to back, split anywhere: the first is found intact.
        let mut two = bytes.to_vec();
        two.extend_from_slice(&bytes[..cut]);
        let (n2, t2) = parse(&two).unwrap().expect("first of two");
        assert_eq!((n2, &t2), (n, &whole));
    }
    whole
}
