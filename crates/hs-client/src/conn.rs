//! One TCP connection: buffered line framing on the read side (split on LF,
//! one CR before the LF tolerated), whole-buffer writes, and the pipelined
//! exchange that writes and reads at the same time so a large pipeline
//! cannot deadlock against a server whose send buffer is full.

use std::io;
use std::ops::Range;

use hs_proto::Response;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{ClientError, Result};

/// Bytes asked of the socket per read when the buffer has no room.
const READ_CHUNK: usize = 64 * 1024;

pub(crate) struct Conn {
    stream: TcpStream,
    lines: LineBuf,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream, max_line: usize) -> Conn {
        Conn {
            stream,
            lines: LineBuf::new(max_line),
        }
    }

    /// Writes `bytes` (complete LF-terminated lines) in one go.
    pub(crate) async fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes).await?;
        Ok(())
    }

    /// Reads and parses the next response line.
    pub(crate) async fn read_response(&mut self) -> Result<Response> {
        let line = self.lines.read_line(&mut self.stream).await?;
        parse_response(line)
    }

    /// Writes `bytes`, holding `count` request lines, while reading `count`
    /// responses concurrently.
    pub(crate) async fn exchange(&mut self, bytes: &[u8], count: usize) -> Result<Vec<Response>> {
        let (mut reader, mut writer) = self.stream.split();
        let lines = &mut self.lines;
        let write = async {
            writer.write_all(bytes).await?;
            Ok::<(), ClientError>(())
        };
        let read = async {
            let mut responses = Vec::with_capacity(count);
            for _ in 0..count {
                let line = lines.read_line(&mut reader).await?;
                responses.push(parse_response(line)?);
            }
            Ok::<_, ClientError>(responses)
        };
        let ((), responses) = tokio::try_join!(write, read)?;
        Ok(responses)
    }

    /// Best-effort check, without waiting, that the server has not closed the
    /// connection (e.g. an idle timeout) and sent nothing unsolicited. Used
    /// before a write, which cannot be retried once it may have been sent.
    pub(crate) fn looks_dead(&mut self) -> bool {
        if self.lines.has_pending() {
            return true;
        }
        let mut probe = [0u8; 1];
        match self.stream.try_read(&mut probe) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            // EOF, unsolicited bytes (the stream is out of step) or an error.
            _ => true,
        }
    }

    pub(crate) async fn shutdown(&mut self) {
        // The connection is being dropped; a failed shutdown changes nothing.
        let _ = self.stream.shutdown().await;
    }
}

fn parse_response(line: &[u8]) -> Result<Response> {
    Response::parse(line).ok_or_else(|| {
        let shown: Vec<u8> = line.iter().copied().take(80).collect();
        ClientError::Protocol(format!(
            "malformed response line: {:?}",
            String::from_utf8_lossy(&shown)
        ))
    })
}

/// A growable read buffer that hands out complete lines.
pub(crate) struct LineBuf {
    buf: Vec<u8>,
    /// Start of the first unconsumed byte.
    pos: usize,
    /// Bytes before this index (from `pos`) are known to hold no LF.
    scanned: usize,
    max_line: usize,
}

impl LineBuf {
    pub(crate) fn new(max_line: usize) -> LineBuf {
        LineBuf {
            buf: Vec::new(),
            pos: 0,
            scanned: 0,
            max_line,
        }
    }

    fn has_pending(&self) -> bool {
        self.pos < self.buf.len()
    }

    /// The next line without its LF (and without one CR before the LF),
    /// reading from `r` as needed. EOF before a complete line is `Closed`.
    pub(crate) async fn read_line<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> Result<&[u8]> {
        let range = loop {
            if let Some(range) = self.take_line() {
                break range;
            }
            if self.buf.len() - self.pos > self.max_line {
                return Err(ClientError::Protocol(format!(
                    "response line longer than {} bytes",
                    self.max_line
                )));
            }
            self.fill(r).await?;
        };
        Ok(&self.buf[range])
    }

    fn take_line(&mut self) -> Option<Range<usize>> {
        let offset = self.buf[self.scanned..].iter().position(|&b| b == b'\n');
        let Some(offset) = offset else {
            self.scanned = self.buf.len();
            return None;
        };
        let lf = self.scanned + offset;
        let start = self.pos;
        let end = if lf > start && self.buf[lf - 1] == b'\r' {
            lf - 1
        } else {
            lf
        };
        self.pos = lf + 1;
        self.scanned = self.pos;
        Some(start..end)
    }

    async fn fill<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> Result<()> {
        if self.pos > 0 {
            // Drop consumed lines; only a partial line (if any) is moved.
            self.buf.copy_within(self.pos.., 0);
            self.buf.truncate(self.buf.len() - self.pos);
            self.scanned -= self.pos;
            self.pos = 0;
        }
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        let n = r.read_buf(&mut self.buf).await?;
        if n == 0 {
            return Err(ClientError::Closed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all_lines(input: &[u8], chunk: usize) -> (Vec<Vec<u8>>, ClientError) {
        let (mut tx, mut rx) = tokio::io::duplex(chunk.max(1));
        let data = input.to_vec();
        let writer = tokio::spawn(async move {
            for piece in data.chunks(chunk.max(1)) {
                if tx.write_all(piece).await.is_err() {
                    return;
                }
            }
        });
        let mut lines = LineBuf::new(1 << 20);
        let mut out = Vec::new();
        let end = loop {
            match lines.read_line(&mut rx).await {
                Ok(line) => out.push(line.to_vec()),
                Err(e) => break e,
            }
        };
        writer.await.expect("writer task");
        (out, end)
    }

    #[tokio::test]
    async fn splits_on_lf_and_drops_one_cr() {
        let input = b"0\t1\r\n0\t1\ta\n\n0\t2\tx\r\r\n2\t1\tcmd\n";
        for chunk in [1, 2, 3, 7, 1000] {
            let (lines, end) = all_lines(input, chunk).await;
            assert_eq!(
                lines,
                vec![
                    b"0\t1".to_vec(),
                    b"0\t1\ta".to_vec(),
                    b"".to_vec(),
                    b"0\t2\tx\r".to_vec(),
                    b"2\t1\tcmd".to_vec(),
                ],
                "chunk {chunk}"
            );
            assert!(matches!(end, ClientError::Closed));
        }
    }

    #[tokio::test]
    async fn partial_line_at_eof_is_closed() {
        let (lines, end) = all_lines(b"0\t1\n0\t1\tpart", 4).await;
        assert_eq!(lines, vec![b"0\t1".to_vec()]);
        assert!(matches!(end, ClientError::Closed));
    }

    #[tokio::test]
    async fn long_lines_are_refused() {
        let (mut tx, mut rx) = tokio::io::duplex(1 << 16);
        tx.write_all(&vec![b'x'; 5000]).await.expect("write");
        let mut lines = LineBuf::new(100);
        let err = lines.read_line(&mut rx).await.expect_err("too long");
        assert!(matches!(err, ClientError::Protocol(_)), "{err:?}");
    }

    #[tokio::test]
    async fn big_lines_across_many_reads() {
        let mut input = Vec::new();
        for i in 0..50u8 {
            input.extend(std::iter::repeat_n(b'a' + i % 26, 10_000 + usize::from(i)));
            input.push(b'\n');
        }
        let (lines, _) = all_lines(&input, 4096).await;
        assert_eq!(lines.len(), 50);
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(line.len(), 10_000 + i);
        }
    }
}
