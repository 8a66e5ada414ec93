//! A blocking HandlerSocket connection over std TCP, for tests and tools
//! that need exact control of the bytes on the wire: hsd's integration
//! tests (including the hostile-client suites) and the differential
//! conformance suite (`hs-conformance`).
//!
//! Unlike [`crate::Client`] it never retries, reconnects or re-opens
//! anything, and it hands back each answer line exactly as the server sent
//! it (without its LF; a CR before the LF is kept), so two servers' answers
//! can be compared byte for byte. Requests go as raw lines or as tokens,
//! encoded as `hs-proto` encodes them; [`tokens`] decodes an answer line.
//!
//! ```no_run
//! use hs_client::blocking::Connection;
//! let mut c = Connection::connect("127.0.0.1:9998")?;
//! assert_eq!(c.request(b"P\t0\ttest\tuser\tPRIMARY\tname")?, b"0\t1");
//! let answers = c.pipeline(&[&b"0\t=\t1\t1"[..], b"0\t=\t1\t2"])?;
//! # let _ = answers; Ok::<(), hs_client::ClientError>(())
//! ```

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::error::{ClientError, Result};

/// How long `connect` waits for each answer by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Pipelines larger than this are written by a second thread while the
/// answers are read, so a server that stops reading until its answers are
/// taken cannot deadlock the exchange.
const WRITE_BESIDE_READ: usize = 64 * 1024;

/// How a connection is set up.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Read timeout for each answer (None: wait forever).
    pub timeout: Option<Duration>,
    /// TCP_NODELAY: each write leaves at once (no Nagle delay).
    pub nodelay: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            timeout: Some(DEFAULT_TIMEOUT),
            nodelay: true,
        }
    }
}

/// One blocking connection to a HandlerSocket port.
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    timeout: Option<Duration>,
}

impl Connection {
    /// Connects with the default options (30 s per answer, TCP_NODELAY).
    pub fn connect(addr: &str) -> Result<Connection> {
        Connection::connect_with(addr, Options::default())
    }

    pub fn connect_with(addr: &str, options: Options) -> Result<Connection> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(options.timeout)?;
        if options.nodelay {
            stream.set_nodelay(true)?;
        }
        let writer = stream.try_clone()?;
        Ok(Connection {
            reader: BufReader::new(stream),
            writer,
            timeout: options.timeout,
        })
    }

    /// The socket, for byte-level tricks (socket options, non-blocking
    /// writes, a half-close). Reads must go through this connection: it
    /// buffers what it has read.
    pub fn socket(&self) -> &TcpStream {
        &self.writer
    }

    /// Writes `bytes` as they are (any number of lines, or part of one).
    pub fn send(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer.write_all(bytes)?;
        Ok(())
    }

    /// The next answer line, without its LF. EOF before a complete line is
    /// `Closed`; a read timeout is `Timeout`.
    pub fn read_line(&mut self) -> Result<Vec<u8>> {
        let mut line = Vec::new();
        match self.reader.read_until(b'\n', &mut line) {
            Ok(_) => {}
            Err(e) if is_timeout(&e) => return Err(ClientError::Timeout),
            Err(e) => return Err(e.into()),
        }
        if line.pop() != Some(b'\n') {
            return Err(ClientError::Closed);
        }
        Ok(line)
    }

    /// The next answer line split into tokens and decoded (`None` is NULL).
    pub fn read_tokens(&mut self) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(tokens(&self.read_line()?))
    }

    /// Sends `line` (the LF is added) and returns its answer line.
    pub fn request(&mut self, line: &[u8]) -> Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        self.send(&bytes)?;
        self.read_line()
    }

    /// Sends a request made of `tokens` (`None` is NULL, each encoded as
    /// hs-proto encodes it) and returns the answer's decoded tokens.
    pub fn request_tokens(&mut self, tokens: &[Option<&[u8]>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.send(&line(tokens))?;
        self.read_tokens()
    }

    /// Sends every line (LFs added) in one write, so the server reads them
    /// together, and returns their answer lines in order.
    pub fn pipeline<L: AsRef<[u8]>>(&mut self, lines: &[L]) -> Result<Vec<Vec<u8>>> {
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l.as_ref());
            bytes.push(b'\n');
        }
        if bytes.len() <= WRITE_BESIDE_READ {
            self.send(&bytes)?;
            return (0..lines.len()).map(|_| self.read_line()).collect();
        }
        let mut writer = self.writer.try_clone()?;
        std::thread::scope(|scope| {
            let written = scope.spawn(move || writer.write_all(&bytes));
            let answers: Result<Vec<Vec<u8>>> =
                (0..lines.len()).map(|_| self.read_line()).collect();
            let written = written
                .join()
                .map_err(|_| ClientError::Protocol("pipeline writer thread panicked".into()))?;
            let answers = answers?;
            written?;
            Ok(answers)
        })
    }

    /// Whether the server has closed this connection (EOF or a reset),
    /// waiting up to `limit`. A byte the server sends instead is an error.
    pub fn closed_within(&mut self, limit: Duration) -> Result<bool> {
        self.reader.get_ref().set_read_timeout(Some(limit))?;
        let mut byte = [0u8; 1];
        let closed = match self.reader.read(&mut byte) {
            Ok(0) => Ok(true),
            Ok(_) => Err(ClientError::Protocol(format!(
                "unexpected byte {:?} from the server",
                byte[0] as char
            ))),
            Err(e) => Ok(e.kind() == io::ErrorKind::ConnectionReset),
        };
        self.reader.get_ref().set_read_timeout(self.timeout)?;
        closed
    }
}

/// A request line from tokens (`None` is NULL), LF included.
pub fn line(tokens: &[Option<&[u8]>]) -> Vec<u8> {
    let mut line = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 {
            line.push(b'\t');
        }
        hs_proto::codec::encode_token(*t, &mut line);
    }
    line.push(b'\n');
    line
}

/// An answer line (without its LF) as decoded tokens (`None` is NULL).
pub fn tokens(line: &[u8]) -> Vec<Option<Vec<u8>>> {
    line.split(|&b| b == b'\t')
        .map(hs_proto::codec::decode_token)
        .collect()
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-connection server: reads what the client sends for `read`
    /// bytes (or until EOF), then writes `answer` and keeps the socket open
    /// for `linger`.
    fn server(
        answer: Vec<u8>,
        read: usize,
        linger: Duration,
    ) -> (String, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().expect("accept");
            let mut got = vec![0u8; read];
            s.read_exact(&mut got).expect("read request");
            s.write_all(&answer).expect("answer");
            std::thread::sleep(linger);
            got
        });
        (addr, handle)
    }

    #[test]
    fn answers_come_back_exactly() {
        let (addr, srv) = server(b"0\t1\r\n0\t2\t\x01\x42\t\0\n".to_vec(), 10, Duration::ZERO);
        let mut c = Connection::connect(&addr).expect("connect");
        let answers = c.pipeline(&["P\t0", "0\t=\t1"]).expect("answers");
        assert_eq!(
            answers,
            vec![b"0\t1\r".to_vec(), b"0\t2\t\x01\x42\t\0".to_vec()]
        );
        assert_eq!(srv.join().expect("server"), b"P\t0\n0\t=\t1\n");
        assert_eq!(
            tokens(&answers[1]),
            vec![
                Some(b"0".to_vec()),
                Some(b"2".to_vec()),
                Some(b"\x02".to_vec()),
                None
            ]
        );
    }

    #[test]
    fn tokens_are_encoded_as_hs_proto_does() {
        assert_eq!(
            line(&[Some(b"0"), Some(b"+"), None, Some(b"a\tb"), Some(b"")]),
            b"0\t+\t\0\ta\x01\x49b\t\n".to_vec()
        );
    }

    #[test]
    fn a_cut_answer_is_closed() {
        let (addr, srv) = server(b"0\t1\n0\t2".to_vec(), 2, Duration::ZERO);
        let mut c = Connection::connect(&addr).expect("connect");
        assert_eq!(c.request(b"A").expect("first"), b"0\t1");
        assert!(matches!(c.read_line(), Err(ClientError::Closed)));
        srv.join().expect("server");
    }

    #[test]
    fn a_silent_server_times_out() {
        let (addr, srv) = server(Vec::new(), 2, Duration::from_millis(500));
        let options = Options {
            timeout: Some(Duration::from_millis(100)),
            nodelay: false,
        };
        let mut c = Connection::connect_with(&addr, options).expect("connect");
        assert!(matches!(c.request(b"A"), Err(ClientError::Timeout)));
        srv.join().expect("server");
    }

    #[test]
    fn closed_within_sees_the_close_and_nothing_else() {
        let (addr, srv) = server(Vec::new(), 0, Duration::from_millis(300));
        let mut c = Connection::connect(&addr).expect("connect");
        assert!(!c.closed_within(Duration::from_millis(50)).expect("open"));
        assert!(c.closed_within(Duration::from_secs(5)).expect("closed"));
        srv.join().expect("server");
        let (addr, srv) = server(b"x".to_vec(), 0, Duration::from_millis(300));
        let mut c = Connection::connect(&addr).expect("connect");
        assert!(c.closed_within(Duration::from_secs(5)).is_err());
        srv.join().expect("server");
    }

    /// A pipeline far larger than the socket buffers, to a server that
    /// answers each line before it reads the next: written beside the reads.
    #[test]
    fn a_big_pipeline_does_not_deadlock() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let srv = std::thread::spawn(move || {
            let (s, _) = listener.accept().expect("accept");
            let mut w = s.try_clone().expect("clone");
            let mut r = BufReader::new(s);
            let mut line = Vec::new();
            let mut n = 0;
            while r.read_until(b'\n', &mut line).expect("read") > 0 {
                w.write_all(&[b"0\t1\t", &line[..]].concat())
                    .expect("answer");
                line.clear();
                n += 1;
            }
            n
        });
        let lines: Vec<String> = (0..100_000).map(|i| format!("{i:0>60}")).collect();
        let mut c = Connection::connect(&addr).expect("connect");
        let answers = c.pipeline(&lines).expect("answers");
        assert_eq!(answers.len(), lines.len());
        assert_eq!(
            answers[99_999],
            format!("0\t1\t{:0>60}", 99_999).into_bytes()
        );
        c.socket()
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown");
        assert_eq!(srv.join().expect("server"), 100_000);
    }
}
