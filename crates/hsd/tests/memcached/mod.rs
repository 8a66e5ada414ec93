//! What the memcached front's tests share: a reference memcached (Debian's
//! binary on a free loopback port), a connection that reads one answer
//! per exchange (each exchange ends with `mn`, answered `MN`), hsd started
//! with a container over a fresh table, and the comparison of answers with
//! the cas numbers taken out.

// Each test binary uses part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Backend, TestServer};

/// Where the tables live: the three backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Sqlite,
    Mariadb,
    Mysql8,
}

/// hsd over `store` with a fresh database (None when that server is not
/// available outside CI, as `common` decides).
pub fn start_server(store: Store, db: &str, extra: &[&str]) -> Option<TestServer> {
    match store {
        Store::Sqlite => TestServer::start(Backend::Sqlite, db, extra),
        Store::Mariadb => TestServer::start(Backend::Mysql, db, extra),
        Store::Mysql8 => Some(TestServer::start_at(
            Backend::Mysql,
            Some(crate::common::mysql8_url()?),
            db,
            extra,
        )),
    }
}

/// Debian's memcached, killed when dropped.
pub struct Reference {
    child: Child,
    pub addr: String,
}

impl Reference {
    pub fn start() -> Reference {
        let binary = "/usr/bin/memcached";
        assert!(
            std::path::Path::new(binary).exists(),
            "memcached is not installed: scripts/deps.sh installs it"
        );
        for _ in 0..5 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|l| l.local_addr())
                .expect("probe port")
                .port();
            let mut child = Command::new(binary)
                .args(["-t", "2", "-U", "0", "-l", "127.0.0.1", "-u", "root", "-p"])
                .arg(port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start memcached");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                    return Reference {
                        child,
                        addr: format!("127.0.0.1:{port}"),
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("memcached did not start on a free loopback port");
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client connection.
pub struct Conn {
    stream: TcpStream,
    /// The cas of the last `VALUE` line with one (for `{cas}` in requests).
    pub last_cas: String,
}

impl Conn {
    pub fn open(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        // A guard against a hang, not a bound on speed: 334 pipelined sets
        // on MySQL 8 took more than 10 s in a loaded CI run (2026-12-08).
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("read timeout");
        stream.set_nodelay(true).expect("nodelay");
        Conn {
            stream,
            last_cas: "0".into(),
        }
    }

    /// Sends `request` (`{cas}` replaced by the last cas seen) and `mn`;
    /// returns everything answered before `MN`.
    pub fn ask(&mut self, request: &str) -> String {
        let request = request.replace("{cas}", &self.last_cas);
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(b"mn\r\n");
        self.stream.write_all(&bytes).expect("send");
        let mut answer = Vec::new();
        let mut buf = [0u8; 65536];
        while !answer.ends_with(b"MN\r\n") {
            let n = self.stream.read(&mut buf).expect("read an answer");
            assert!(
                n > 0,
                "connection closed after {:?}",
                String::from_utf8_lossy(&answer)
            );
            answer.extend_from_slice(&buf[..n]);
        }
        answer.truncate(answer.len() - 4);
        let text = String::from_utf8_lossy(&answer).into_owned();
        for line in text.split("\r\n") {
            let words: Vec<&str> = line.split(' ').collect();
            if words.len() == 5 && words[0] == "VALUE" {
                self.last_cas = words[4].to_string();
            }
        }
        text
    }

    /// Sends bytes and reads until the server closes (or 2 s pass).
    pub fn until_closed(&mut self, bytes: &[u8]) -> (Vec<u8>, bool) {
        self.stream.write_all(bytes).expect("send");
        self.stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return (answer, true),
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (answer, true),
                Err(_) => return (answer, false),
            }
        }
    }
}

/// An answer with every cas number (a `VALUE` line's fifth word, an
/// `mg`'s `c` flag) replaced by `C`: hsd's and memcached's differ.
pub fn without_cas(answer: &str) -> String {
    answer
        .split("\r\n")
        .map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            if words.len() == 5 && words[0] == "VALUE" {
                return format!("{} {} {} {} C", words[0], words[1], words[2], words[3]);
            }
            if matches!(words[0], "VA" | "HD" | "EN" | "NF" | "NS" | "EX") {
                return words
                    .iter()
                    .map(|w| match w.strip_prefix('c') {
                        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => "cC",
                        _ => w,
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            line.to_string()
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// The table the tests serve: the plugin's demo_test shape (key, value,
/// flags, cas, expiry).
pub fn create_demo_table(s: &TestServer, table: &str) {
    let ddl = match s.backend {
        Backend::Sqlite => format!(
            "CREATE TABLE {table} (c1 VARCHAR(32) NOT NULL PRIMARY KEY, c2 VARCHAR(1024), \
             c3 INT, c4 BIGINT UNSIGNED, c5 INT)"
        ),
        Backend::Mysql => format!(
            "CREATE TABLE {table} (c1 VARCHAR(32) NOT NULL PRIMARY KEY, c2 VARCHAR(1024), \
             c3 INT, c4 BIGINT UNSIGNED, c5 INT) ENGINE=InnoDB"
        ),
    };
    s.sql(&ddl);
}

/// A config file naming containers over `db`: `default` on `demo_test`,
/// `two` on `pairs` (two value columns joined by `|`).
pub fn write_config(dir: &std::path::Path, db: &str) -> std::path::PathBuf {
    write_config_with(dir, db, "")
}

/// What `start_flushable` adds to each container.
const FLUSHABLE: &str = "flush_policy = \"innodb_only\"";

/// The same, with `policy` (lines) added to each container.
pub fn write_config_with(dir: &std::path::Path, db: &str, policy: &str) -> std::path::PathBuf {
    let path = dir.join("hsd.toml");
    let text = format!(
        r#"
[[memcached.containers]]
name = "default"
db_schema = "{db}"
db_table = "demo_test"
key_columns = "c1"
value_columns = "c2"
flags = "c3"
cas_column = "c4"
expire_time_column = "c5"
unique_idx_name_on_key = "PRIMARY"
{policy}

[[memcached.containers]]
name = "two"
db_schema = "{db}"
db_table = "pairs"
key_columns = "k"
value_columns = "a,b"
{policy}
"#
    );
    std::fs::write(&path, text).expect("write config");
    path
}

/// hsd with the memcached port and the two containers, over a fresh db.
pub struct Front {
    pub server: TestServer,
    _config: tempfile::TempDir,
}

impl Front {
    pub fn start(store: Store, db: &str) -> Option<Front> {
        Front::start_with(store, db, &[])
    }

    /// The same, with `flush_all` emptying the containers' tables
    /// (`flush_policy = "innodb_only"`).
    pub fn start_flushable(store: Store, db: &str) -> Option<Front> {
        Front::start_configured(store, db, &[], FLUSHABLE)
    }

    /// With more options for hsd.
    pub fn start_with(store: Store, db: &str, extra: &[&str]) -> Option<Front> {
        Front::start_configured(store, db, extra, "")
    }

    /// With more options for hsd and `policy` lines added to each container.
    fn start_configured(store: Store, db: &str, extra: &[&str], policy: &str) -> Option<Front> {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config_with(dir.path(), db, policy);
        let config = config.display().to_string();
        let mut args = vec!["--memcached-address", "127.0.0.1:0", "--config", &config];
        args.extend_from_slice(extra);
        let server = start_server(store, db, &args)?;
        create_demo_table(&server, "demo_test");
        server.sql(
            "CREATE TABLE pairs (k VARCHAR(32) NOT NULL PRIMARY KEY, a VARCHAR(64), b VARCHAR(64))",
        );
        Some(Front {
            server,
            _config: dir,
        })
    }

    /// hsd over a fresh `db` with the containers `containers` names (a
    /// config file's `[[memcached.containers]]` tables, `{db}` standing for
    /// the database) and no table made: the test makes its own.
    pub fn start_containers(store: Store, db: &str, containers: &str) -> Option<Front> {
        Front::start_containers_with(store, db, containers, &[])
    }

    /// The same, with more options for hsd.
    pub fn start_containers_with(
        store: Store,
        db: &str,
        containers: &str,
        extra: &[&str],
    ) -> Option<Front> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hsd.toml");
        std::fs::write(&path, containers.replace("{db}", db)).expect("write config");
        let config = path.display().to_string();
        let mut args = vec!["--memcached-address", "127.0.0.1:0", "--config", &config];
        args.extend_from_slice(extra);
        let server = start_server(store, db, &args)?;
        Some(Front {
            server,
            _config: dir,
        })
    }

    pub fn conn(&self) -> Conn {
        Conn::open(
            self.server
                .memcached_addr
                .as_deref()
                .expect("memcached port"),
        )
    }
}

/// A binary request (opaque 7).
pub fn binary_request(opcode: u8, key: &[u8], extras: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
    let mut out = vec![0x80, opcode];
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.push(extras.len() as u8);
    out.push(0);
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
    out.extend_from_slice(&7u32.to_be_bytes());
    out.extend_from_slice(&cas.to_be_bytes());
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

/// A binary connection: each exchange ends with a Noop, whose answer ends
/// the responses read back.
pub struct BinaryConn(TcpStream);

impl BinaryConn {
    pub fn open(addr: &str) -> BinaryConn {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("read timeout");
        BinaryConn(stream)
    }

    /// Sends `request` and a Noop; returns each response before the Noop's,
    /// with its cas field zeroed (hsd's and memcached's numbers differ).
    pub fn ask(&mut self, request: &[u8]) -> Vec<Vec<u8>> {
        let mut responses = self.ask_with_cas(request);
        for response in &mut responses {
            response[16..24].fill(0);
        }
        responses
    }

    /// The same, each response whole (its cas field as answered).
    pub fn ask_with_cas(&mut self, request: &[u8]) -> Vec<Vec<u8>> {
        let mut bytes = request.to_vec();
        bytes.extend_from_slice(&binary_request(0x0a, b"", b"", b"", 0));
        self.0.write_all(&bytes).expect("send");
        let mut responses = Vec::new();
        loop {
            let mut header = [0u8; 24];
            self.0.read_exact(&mut header).expect("a response header");
            let header = header;
            let body_len = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
            let mut body = vec![0u8; body_len as usize];
            self.0.read_exact(&mut body).expect("a response body");
            if header[1] == 0x0a {
                return responses;
            }
            let mut response = header.to_vec();
            response.extend_from_slice(&body);
            responses.push(response);
        }
    }
}

/// The plugin's configuration schema and its example, written from what
/// the plugin's script creates.
pub const PLUGIN_SETUP: &[&str] = &[
    "DROP DATABASE IF EXISTS innodb_memcache",
    "CREATE DATABASE innodb_memcache",
    "CREATE TABLE innodb_memcache.cache_policies (
        policy_name VARCHAR(40) PRIMARY KEY,
        get_policy ENUM('innodb_only', 'cache_only', 'caching', 'disabled') NOT NULL,
        set_policy ENUM('innodb_only', 'cache_only', 'caching', 'disabled') NOT NULL,
        delete_policy ENUM('innodb_only', 'cache_only', 'caching', 'disabled') NOT NULL,
        flush_policy ENUM('innodb_only', 'cache_only', 'caching', 'disabled') NOT NULL
     ) ENGINE = InnoDB",
    "CREATE TABLE innodb_memcache.containers (
        name VARCHAR(50) NOT NULL PRIMARY KEY,
        db_schema VARCHAR(250) NOT NULL,
        db_table VARCHAR(250) NOT NULL,
        key_columns VARCHAR(250) NOT NULL,
        value_columns VARCHAR(250),
        flags VARCHAR(250) NOT NULL DEFAULT '0',
        cas_column VARCHAR(250),
        expire_time_column VARCHAR(250),
        unique_idx_name_on_key VARCHAR(250) NOT NULL
     ) ENGINE = InnoDB",
    "CREATE TABLE innodb_memcache.config_options (
        name VARCHAR(50) NOT NULL PRIMARY KEY,
        value VARCHAR(50)
     ) ENGINE = InnoDB",
    "INSERT INTO innodb_memcache.containers
        VALUES ('aaa', 'test', 'demo_test', 'c1', 'c2', 'c3', 'c4', 'c5', 'PRIMARY')",
    "INSERT INTO innodb_memcache.cache_policies
        VALUES ('cache_policy', 'innodb_only', 'innodb_only', 'innodb_only', 'innodb_only')",
    "INSERT INTO innodb_memcache.config_options VALUES ('separator', '|')",
    "INSERT INTO innodb_memcache.config_options VALUES ('table_map_delimiter', '.')",
    "CREATE DATABASE IF NOT EXISTS test",
    "DROP TABLE IF EXISTS test.demo_test",
    "CREATE TABLE test.demo_test (c1 VARCHAR(32), c2 VARCHAR(1024), c3 INT,
        c4 BIGINT UNSIGNED, C5 INT, PRIMARY KEY (c1)) ENGINE = InnoDB",
    "INSERT INTO test.demo_test VALUES ('AA', 'HELLO, HELLO', 8, 0, 0)",
];
