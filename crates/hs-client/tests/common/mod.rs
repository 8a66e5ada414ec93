//! A scripted fake HandlerSocket server for the client's integration tests:
//! listens on 127.0.0.1:0, records every line it reads (per connection, LF
//! removed, anything else kept), and answers what the test's handler says.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// What the fake server does with one request line.
pub enum Action {
    /// Write these bytes (one or more complete response lines).
    Reply(Vec<u8>),
    /// Write these bytes, then close the connection.
    ReplyThenClose(Vec<u8>),
    /// Close the connection without answering.
    Drop,
    /// Answer nothing and keep reading.
    Silent,
}

type Lines = Vec<Vec<Vec<u8>>>;

pub struct FakeServer {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Lines>>,
}

impl FakeServer {
    /// Starts a server; `handler(connection_number, line)` decides the answer.
    /// Connections are numbered from 0 in accept order.
    pub async fn start<H>(handler: H) -> FakeServer
    where
        H: Fn(usize, &[u8]) -> Action + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let seen: Arc<Mutex<Lines>> = Arc::default();
        let handler = Arc::new(handler);
        let seen_for_task = seen.clone();
        tokio::spawn(async move {
            let mut number = 0;
            while let Ok((stream, _)) = listener.accept().await {
                let conn = number;
                number += 1;
                seen_for_task.lock().expect("lock").push(Vec::new());
                let seen = seen_for_task.clone();
                let handler = handler.clone();
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut read = BufReader::new(read);
                    let mut line = Vec::new();
                    loop {
                        line.clear();
                        match read.read_until(b'\n', &mut line).await {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        if line.last() == Some(&b'\n') {
                            line.pop();
                        }
                        seen.lock().expect("lock")[conn].push(line.clone());
                        match handler(conn, &line) {
                            Action::Reply(bytes) => {
                                if write.write_all(&bytes).await.is_err() {
                                    return;
                                }
                            }
                            Action::ReplyThenClose(bytes) => {
                                let _ = write.write_all(&bytes).await;
                                return;
                            }
                            Action::Drop => return,
                            Action::Silent => {}
                        }
                    }
                });
            }
        });
        FakeServer { addr, seen }
    }

    /// Lines read so far, per connection.
    pub fn seen(&self) -> Lines {
        self.seen.lock().expect("lock").clone()
    }

    pub fn connections(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }
}

/// A plausible answer: `0 1` for `A`/`P`, `0 1 1` for inserts and modifies,
/// and for a find, one row holding the key(s) sent (so order is visible).
pub fn answer(line: &[u8]) -> Vec<u8> {
    let tokens: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
    match tokens.first().copied() {
        Some(b"A") | Some(b"P") => b"0\t1\n".to_vec(),
        _ if tokens.get(1).copied() == Some(&b"+"[..]) => b"0\t1\t1\n".to_vec(),
        _ if tokens.len() >= 4 => {
            let mut out = b"0\t1\t".to_vec();
            out.extend_from_slice(tokens[3]);
            out.push(b'\n');
            out
        }
        _ => b"2\t1\tcmd\n".to_vec(),
    }
}

pub fn ok(line: &[u8]) -> Action {
    Action::Reply(answer(line))
}

pub fn is_find(line: &[u8]) -> bool {
    let mut tokens = line.split(|&b| b == b'\t');
    let first = tokens.next().unwrap_or(b"");
    first.first().is_some_and(u8::is_ascii_digit) && tokens.next() != Some(&b"+"[..])
}

pub fn is_insert(line: &[u8]) -> bool {
    line.split(|&b| b == b'\t').nth(1) == Some(&b"+"[..])
}

/// Renders lines for readable assertion failures.
pub fn text(lines: &[Vec<u8>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).replace('\t', "|"))
        .collect()
}
