//! A private memcached for the differential test: Debian's binary on a
//! free loopback port (`-t 2 -U 0 -l 127.0.0.1`), killed when dropped.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Memcached {
    child: Child,
    pub port: u16,
}

/// How an exchange ends.
pub enum Until<'a> {
    /// The server closes the connection.
    Closed,
    /// The answer is at least this long and ends with these bytes (the
    /// marker command's answer; the length tells it from the same answer
    /// to a command of the case itself).
    EndsWith(&'a [u8], usize),
    /// Nothing more arrives for a while (the server waits for bytes).
    Quiet,
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a probe port");
    listener.local_addr().expect("probe port address").port()
}

impl Memcached {
    /// Starts memcached (1 MiB items, its default) and waits until it answers.
    pub fn start() -> Memcached {
        let binary = ["/usr/bin/memcached", "/usr/local/bin/memcached"]
            .into_iter()
            .find(|path| std::path::Path::new(path).exists())
            .expect("memcached is not installed: scripts/deps.sh installs it");
        for _ in 0..5 {
            let port = free_port();
            // `-u root` is needed when the tests run as root and ignored otherwise.
            let child = Command::new(binary)
                .args(["-t", "2", "-U", "0", "-l", "127.0.0.1", "-u", "root", "-p"])
                .arg(port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start memcached");
            let mut server = Memcached { child, port };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // lost the port to someone else: try another
                }
                if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                    return server;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        panic!("memcached did not start on a free loopback port");
    }

    fn connect(&self) -> TcpStream {
        let stream =
            TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).expect("connect to memcached");
        stream.set_nodelay(true).expect("nodelay");
        stream
    }

    /// Sends `bytes` on a new connection and reads the answer; returns it
    /// and whether the server closed the connection.
    pub fn exchange(&self, bytes: &[u8], until: Until<'_>) -> (Vec<u8>, bool) {
        let mut stream = self.connect();
        // Big cases are written by another thread so that reading answers
        // cannot deadlock against a full send buffer.
        let mut writer = stream.try_clone().expect("clone stream");
        let payload = bytes.to_vec();
        let sender = std::thread::spawn(move || {
            let _ = writer.write_all(&payload);
        });
        let quiet_after = Duration::from_millis(400);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut answer = Vec::new();
        let mut closed = false;
        let mut buf = [0u8; 65536];
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("read timeout");
        let mut last_data = Instant::now();
        while Instant::now() < deadline {
            match stream.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    last_data = Instant::now();
                    if let Until::EndsWith(marker, min_len) = until {
                        if answer.len() >= min_len && answer.ends_with(marker) {
                            break;
                        }
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if matches!(until, Until::Quiet) && last_data.elapsed() >= quiet_after {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    closed = true;
                    break;
                }
                Err(e) => panic!("reading memcached's answer: {e}"),
            }
        }
        let _ = sender.join();
        (answer, closed)
    }

    /// Empties the cache between cases.
    pub fn flush(&self) {
        let (answer, _) = self.exchange(b"flush_all\r\n", Until::EndsWith(b"OK\r\n", 4));
        assert_eq!(answer, b"OK\r\n", "flush_all before a case");
    }

    /// memcached's `version` answer.
    pub fn version(&self) -> String {
        let (answer, _) = self.exchange(b"version\r\n", Until::EndsWith(b"\r\n", 2));
        let text = String::from_utf8(answer).expect("version is text");
        text.trim_end()
            .strip_prefix("VERSION ")
            .expect("a VERSION line")
            .to_string()
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
