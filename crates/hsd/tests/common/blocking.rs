//! The harness's blocking side, for the MySQL/MariaDB backend tests
//! (tests/mysql_*.rs): the real `hsd` binary on the private MariaDB, a tiny
//! blocking HandlerSocket client (hs-proto's token encoding) for exact
//! pipelining and raw bytes, and SQL beside it through the `mysql` crate.

use mysql::prelude::Queryable;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::Duration;

/// A connection to the server, with the test's session settings.
pub fn sql_conn(url: &str) -> mysql::Conn {
    let opts = mysql::OptsBuilder::from_opts(mysql::Opts::from_url(url).expect("mysql url"))
        .prefer_socket(false);
    let mut c = mysql::Conn::new(opts).expect("connect to MariaDB");
    c.query_drop("SET NAMES utf8mb4").expect("set names");
    c
}

/// Drops and creates database `db`; returns a connection using it.
pub fn fresh_db(url: &str, db: &str) -> mysql::Conn {
    let mut c = sql_conn(url);
    c.query_drop(format!("DROP DATABASE IF EXISTS `{db}`"))
        .expect("drop db");
    c.query_drop(format!("CREATE DATABASE `{db}` CHARACTER SET utf8mb4"))
        .expect("create db");
    c.query_drop(format!("USE `{db}`")).expect("use db");
    c
}

/// Runs statements (text protocol), panicking with the SQL on error.
pub fn exec(c: &mut mysql::Conn, sql: &str) {
    c.query_drop(sql)
        .unwrap_or_else(|e| panic!("SQL {sql:?} failed: {e}"));
}

/// Rows as the server's own text (text protocol), NULL as None.
pub fn rows(c: &mut mysql::Conn, sql: &str) -> Vec<Vec<Option<Vec<u8>>>> {
    let result: Vec<mysql::Row> = c
        .query(sql)
        .unwrap_or_else(|e| panic!("SQL {sql:?} failed: {e}"));
    result
        .into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    mysql::Value::NULL => None,
                    mysql::Value::Bytes(b) => Some(b),
                    other => Some(other.as_sql(true).into_bytes()),
                })
                .collect()
        })
        .collect()
}

/// The first column of the first row, as a string.
pub fn scalar(c: &mut mysql::Conn, sql: &str) -> String {
    let r = rows(c, sql);
    let v = r
        .first()
        .and_then(|row| row.first().cloned())
        .flatten()
        .unwrap_or_default();
    String::from_utf8_lossy(&v).into_owned()
}

/// A global status counter (e.g. `Com_stmt_execute`).
pub fn global_status(c: &mut mysql::Conn, name: &str) -> u64 {
    let r = rows(c, &format!("SHOW GLOBAL STATUS LIKE '{name}'"));
    r.first()
        .and_then(|row| row.get(1).cloned().flatten())
        .and_then(|v| String::from_utf8_lossy(&v).parse().ok())
        .unwrap_or_else(|| panic!("no status {name}"))
}

/// The real hsd binary serving `url`.
pub struct Hsd {
    pub read: String,
    pub write: String,
    pub admin: Option<String>,
    child: Child,
}

impl Hsd {
    pub fn start(url: &str, extra: &[&str]) -> Hsd {
        let mut args = vec!["--backend", url];
        args.extend_from_slice(extra);
        let running = super::spawn_hsd(&args);
        Hsd {
            read: running.read,
            write: running.write,
            admin: running.admin,
            child: running.child,
        }
    }

    /// The hsd process id (for its /proc files).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn reader(&self) -> Hs {
        Hs::connect(&self.read)
    }

    pub fn writer(&self) -> Hs {
        Hs::connect(&self.write)
    }
}

impl Drop for Hsd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking HandlerSocket connection.
pub struct Hs {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

/// A response token: bytes or NULL.
pub type Token = Option<Vec<u8>>;

fn decode(t: &[u8]) -> Token {
    hs_proto::codec::decode_token(t)
}

impl Hs {
    pub fn connect(addr: &str) -> Hs {
        let stream = TcpStream::connect(addr).expect("connect to hsd");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let _ = stream.set_nodelay(true);
        let reader = BufReader::new(stream.try_clone().expect("clone"));
        Hs { stream, reader }
    }

    /// One request from tokens (None = NULL); the response's tokens.
    pub fn request(&mut self, tokens: &[Option<&[u8]>]) -> Vec<Token> {
        let line = Self::line(tokens);
        self.send_raw(&line);
        self.read_response()
    }

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

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to hsd");
    }

    pub fn read_response(&mut self) -> Vec<Token> {
        let mut buf = Vec::new();
        self.reader
            .read_until(b'\n', &mut buf)
            .expect("read from hsd");
        assert_eq!(buf.last(), Some(&b'\n'), "hsd closed the connection");
        buf.pop();
        buf.split(|&b| b == b'\t').map(decode).collect()
    }

    /// A request written with `|` for TAB and `~` for a NULL token; the
    /// response in the same notation.
    pub fn q(&mut self, line: &str) -> String {
        self.send_raw(&text_line(line));
        fmt(&self.read_response())
    }

    /// Many requests written at once (pipelined); their responses.
    pub fn pipeline(&mut self, lines: &[String]) -> Vec<String> {
        let mut all = Vec::new();
        for l in lines {
            all.extend(text_line(l));
        }
        self.send_raw(&all);
        lines.iter().map(|_| fmt(&self.read_response())).collect()
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
