//! A TCP connection with a hand-managed read buffer: the framing parsers look at
//! `pending()` and `consume()` what they parsed. Deliberately no codec framework
//! (tokio-util etc.): the load generator must not be the bottleneck, so the hot
//! path is a plain read-into-Vec + slice scan with no per-frame allocation.

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct Conn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    start: usize,
}

const READ_CHUNK: usize = 64 * 1024;

impl Conn {
    pub async fn connect(host: &str, port: u16) -> Result<Conn> {
        let stream = TcpStream::connect((host, port))
            .await
            .with_context(|| format!("connect to {host}:{port}"))?;
        stream.set_nodelay(true).context("set TCP_NODELAY")?;
        Ok(Conn {
            stream,
            rbuf: Vec::with_capacity(READ_CHUNK),
            start: 0,
        })
    }

    /// Received bytes not yet consumed.
    #[inline]
    pub fn pending(&self) -> &[u8] {
        &self.rbuf[self.start..]
    }

    #[inline]
    pub fn consume(&mut self, n: usize) {
        self.start += n;
        debug_assert!(self.start <= self.rbuf.len());
    }

    pub async fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.stream.write_all(buf).await.context("write to server")
    }

    /// Reads at least one more byte; an orderly close by the server is an error.
    pub async fn fill(&mut self) -> Result<usize> {
        if self.start == self.rbuf.len() {
            self.rbuf.clear();
            self.start = 0;
        } else if self.start > 0 && self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK / 4 {
            self.rbuf.drain(..self.start);
            self.start = 0;
        }
        if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK / 4 {
            self.rbuf.reserve(READ_CHUNK);
        }
        let n = self
            .stream
            .read_buf(&mut self.rbuf)
            .await
            .context("read from server")?;
        if n == 0 {
            bail!("connection closed by server");
        }
        Ok(n)
    }

    /// Reads until `parse` recognises one complete frame at the start of the
    /// pending bytes, consumes it and returns what `parse` made of it.
    pub async fn read_with<T>(
        &mut self,
        mut parse: impl FnMut(&[u8]) -> Result<Option<(usize, T)>>,
    ) -> Result<T> {
        loop {
            if let Some((n, t)) = parse(self.pending())? {
                self.consume(n);
                return Ok(t);
            }
            self.fill().await?;
        }
    }
}
