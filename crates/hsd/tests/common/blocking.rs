//! The harness's blocking side, for the MySQL/MariaDB backend tests
//! (tests/mysql_*.rs): the real `hsd` binary on the private MariaDB, hs-client's
//! blocking connection (hs-proto's token encoding, exact pipelining and raw
//! bytes) in the tests' `|`-for-TAB, `~`-for-NULL notation, and SQL beside it
//! through the `mysql` crate.

use hs_client::blocking::Connection;
use std::time::Duration;

// The suites take SQL from here, beside the harness.
#[allow(unused_imports)]
pub use super::servers::{exec, fresh_db, global_status, rows, scalar, sql_conn};

/// The real hsd binary serving `url`.
pub struct Hsd {
    pub read: String,
    pub write: String,
    pub admin: Option<String>,
    /// Killed when dropped.
    process: super::RunningHsd,
}

impl Hsd {
    pub fn start(url: &str, extra: &[&str]) -> Hsd {
        let mut args = vec!["--backend", url];
        args.extend_from_slice(extra);
        let running = super::spawn_hsd(&args);
        Hsd {
            read: running.read.clone(),
            write: running.write.clone(),
            admin: running.admin.clone(),
            process: running,
        }
    }

    /// The hsd process id (for its /proc files).
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    pub fn reader(&self) -> Hs {
        Hs::connect(&self.read)
    }

    pub fn writer(&self) -> Hs {
        Hs::connect(&self.write)
    }
}

/// hs-client's blocking connection, with the tests' notation: every method
/// here panics on a broken connection; the client's own methods (through
/// Deref) answer `Result`s.
pub struct Hs(Connection);

/// A response token: bytes or NULL.
pub type Token = Option<Vec<u8>>;

impl std::ops::Deref for Hs {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0
    }
}

impl std::ops::DerefMut for Hs {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.0
    }
}

impl Hs {
    pub fn connect(addr: &str) -> Hs {
        let options = hs_client::blocking::Options {
            timeout: Some(Duration::from_secs(60)),
            nodelay: true,
        };
        Hs(Connection::connect_with(addr, options).expect("connect to hsd"))
    }

    /// One request from tokens (None = NULL); the response's tokens.
    pub fn request(&mut self, tokens: &[Option<&[u8]>]) -> Vec<Token> {
        self.0.request_tokens(tokens).expect("request to hsd")
    }

    pub fn line(tokens: &[Option<&[u8]>]) -> Vec<u8> {
        hs_client::blocking::line(tokens)
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.0.send(bytes).expect("write to hsd");
    }

    pub fn read_response(&mut self) -> Vec<Token> {
        self.0.read_tokens().expect("read from hsd")
    }

    /// A request written with `|` for TAB and `~` for a NULL token; the
    /// response in the same notation.
    pub fn q(&mut self, line: &str) -> String {
        self.send_raw(&text_line(line));
        fmt(&self.read_response())
    }

    /// Many requests written at once (pipelined); their responses.
    pub fn pipeline(&mut self, lines: &[String]) -> Vec<String> {
        let raw: Vec<Vec<u8>> = lines
            .iter()
            .map(|l| {
                let mut line = text_line(l);
                line.pop();
                line
            })
            .collect();
        self.0
            .pipeline(&raw)
            .expect("pipeline to hsd")
            .iter()
            .map(|answer| fmt(&hs_client::blocking::tokens(answer)))
            .collect()
    }
}

fn text_line(line: &str) -> Vec<u8> {
    let tokens: Vec<Option<&[u8]>> = line
        .split('|')
        .map(|t| (t != "~").then_some(t.as_bytes()))
        .collect();
    Hs::line(&tokens)
}

/// Tokens joined by `|`, NULL as `~`.
pub fn fmt(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| match t {
            None => "~".to_string(),
            Some(b) => String::from_utf8_lossy(b).into_owned(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// The answer of `admin`'s `/metrics` (`--admin-address`), head and body.
pub fn metrics_text(admin: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(admin).expect("admin port");
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").expect("ask");
    let mut text = String::new();
    c.read_to_string(&mut text).expect("metrics");
    text
}

/// A counter or gauge of hsd's Prometheus metrics at `admin`
/// (`--admin-address`), by its full name.
pub fn metric(admin: &str, name: &str) -> f64 {
    metrics_text(admin)
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no metric {name}"))
}

/// Reads `query` until one is answered from the row cache (its hits
/// counter at `admin` grows), each answering
/// `expected`: on a server other tests write to, a strict read may wait
/// longer than the reader's catch-up wait (it is then read on the server).
pub fn read_until_a_hit(r: &mut Hs, admin: &str, query: &str, expected: &str, what: &str) {
    let before = metric(admin, "hsd_row_cache_hits_total");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        assert_eq!(r.q(query), expected, "{what}");
        if metric(admin, "hsd_row_cache_hits_total") > before {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: never served from the cache"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
