//! A client connection: bytes in, request lines out to the session, response
//! bytes back. Reads whatever is available, answers every complete line it
//! holds with one write, and only then reads again, so a client that never
//! reads its responses stops being read from (TCP pushes back) instead of
//! making hsd buffer without bound.

use crate::backend::Backend;
use crate::session::Session;
use crate::shutdown::Shutdown;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Per-connection limits.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// A line longer than this closes the connection.
    pub max_line: usize,
    /// Close a connection that sends nothing for this long (None: never).
    pub idle_timeout: Option<Duration>,
}

const READ_CHUNK: usize = 64 * 1024;
/// Answers buffered beyond this are written before more lines are handled.
const OUT_HIGH_WATER: usize = 256 * 1024;

/// Why a connection ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Close {
    PeerClosed,
    Idle,
    LineTooLong,
    Shutdown,
    Io,
}

pub async fn serve<S, B>(
    mut stream: S,
    mut session: Session<B>,
    limits: ConnectionLimits,
    mut shutdown: Shutdown,
) -> Close
where
    S: AsyncRead + AsyncWrite + Unpin,
    B: Backend,
{
    let mut inbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // Bytes of `inbuf` already searched for LF without finding one.
    let mut searched = 0;
    loop {
        if shutdown.is_triggered() {
            return Close::Shutdown;
        }
        if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
            inbuf.reserve(READ_CHUNK);
        }
        let read = tokio::select! {
            r = read_some(&mut stream, &mut inbuf, limits.idle_timeout) => r,
            _ = shutdown.recv() => return Close::Shutdown,
        };
        match read {
            Ok(0) => return Close::PeerClosed,
            Ok(_) => {}
            Err(ReadError::Idle) => return Close::Idle,
            Err(ReadError::Io) => return Close::Io,
        }
        let mut start = 0;
        let mut from = searched;
        while let Some(pos) = memchr::memchr(b'\n', &inbuf[from..]) {
            let end = from + pos;
            let mut line = &inbuf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            session.handle_line(line, &mut out).await;
            start = end + 1;
            from = start;
            // Answers to a long pipelined chunk can be far bigger than the
            // chunk: send them as they pile up, so a client that does not
            // read blocks us here instead of making us buffer them all.
            if out.len() >= OUT_HIGH_WATER {
                if let Err(why) = write_out(&mut stream, &out, limits.idle_timeout).await {
                    return why;
                }
                out.clear();
            }
        }
        session.flush(&mut out).await;
        inbuf.drain(..start);
        searched = inbuf.len();
        if inbuf.len() > limits.max_line {
            tracing::debug!(
                len = inbuf.len(),
                "request line over the size limit; closing"
            );
            let _ = write_out(&mut stream, &out, limits.idle_timeout).await;
            return Close::LineTooLong;
        }
        if !out.is_empty() {
            if let Err(why) = write_out(&mut stream, &out, limits.idle_timeout).await {
                return why;
            }
            out.clear();
            // Do not keep a huge buffer around after one huge response.
            if out.capacity() > 4 * READ_CHUNK {
                out = Vec::with_capacity(READ_CHUNK);
            }
        }
    }
}

/// Writes responses; a client that reads nothing for the idle timeout is
/// closed like an idle one, so it cannot hold its connection slot forever.
async fn write_out<S: AsyncWrite + Unpin>(
    stream: &mut S,
    out: &[u8],
    idle: Option<Duration>,
) -> Result<(), Close> {
    let write = stream.write_all(out);
    match idle {
        Some(t) => match tokio::time::timeout(t, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Close::Io),
            Err(_) => Err(Close::Idle),
        },
        None => write.await.map_err(|_| Close::Io),
    }
}

enum ReadError {
    Idle,
    Io,
}

async fn read_some<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    idle: Option<Duration>,
) -> Result<usize, ReadError> {
    let read = stream.read_buf(buf);
    match idle {
        Some(t) => match tokio::time::timeout(t, read).await {
            Ok(r) => r.map_err(|_| ReadError::Io),
            Err(_) => Err(ReadError::Idle),
        },
        None => read.await.map_err(|_| ReadError::Io),
    }
}
