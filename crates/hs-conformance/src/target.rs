//! One HandlerSocket server under test (the plugin or hsd): its two ports,
//! the database name its copy of the tables lives under, and blocking
//! connections that send one line and read one answer line.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::generate::Port;

#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `plugin` or `hsd`, for messages.
    pub name: String,
    pub read_addr: String,
    pub write_addr: String,
    /// The database name substituted into `P` lines.
    pub db: String,
}

impl Endpoint {
    pub fn addr(&self, port: Port) -> &str {
        match port {
            Port::Read => &self.read_addr,
            Port::Write => &self.write_addr,
        }
    }
}

/// How long one answer may take before the server counts as not answering.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    what: String,
}

impl Connection {
    pub fn open(endpoint: &Endpoint, port: Port) -> Result<Connection> {
        let addr = endpoint.addr(port);
        let what = format!("{} {:?} port {addr}", endpoint.name, port);
        let stream = TcpStream::connect(addr).with_context(|| format!("connect to {what}"))?;
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .with_context(|| format!("set timeout on {what}"))?;
        stream.set_nodelay(true).ok();
        let writer = stream
            .try_clone()
            .with_context(|| format!("clone socket of {what}"))?;
        Ok(Connection {
            reader: BufReader::new(stream),
            writer,
            what,
        })
    }

    /// Sends `line` (LF added) and returns the answer line without its LF.
    pub fn request(&mut self, line: &[u8]) -> Result<Vec<u8>> {
        let mut answers = self.pipeline(&[line])?;
        answers
            .pop()
            .with_context(|| format!("no answer from {}", self.what))
    }

    /// Sends every line in one write (so the server reads them together)
    /// and returns their answers, in order, without their LFs.
    pub fn pipeline(&mut self, lines: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        let mut buf = Vec::new();
        for line in lines {
            buf.extend_from_slice(line);
            buf.push(b'\n');
        }
        self.writer
            .write_all(&buf)
            .with_context(|| format!("send to {}", self.what))?;
        lines.iter().map(|_| self.answer()).collect()
    }

    fn answer(&mut self) -> Result<Vec<u8>> {
        let mut answer = Vec::new();
        let n = self
            .reader
            .read_until(b'\n', &mut answer)
            .with_context(|| format!("no answer from {} within {:?}", self.what, ANSWER_TIMEOUT))?;
        if n == 0 || answer.last() != Some(&b'\n') {
            bail!("{} closed the connection", self.what);
        }
        answer.pop();
        Ok(answer)
    }
}
