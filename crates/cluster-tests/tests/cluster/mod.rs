//! The replicated set-ups the replication suites run against:
//! `scripts/replication.sh` (a GTID primary with two replicas, MariaDB or,
//! with `HSD_REPL_FLAVOR=mysql8`, MySQL 8.0.31 with `gtid_mode = ON`) and
//! `scripts/galera.sh` (a 3-node Galera cluster), all started by
//! scripts/test.sh, which exports their addresses. In CI their absence is a
//! failure; elsewhere the suites are skipped with a note.
//!
//! The suites change the servers (stop them, promote, stop threads), so
//! each test holds the suite's lock (`Cluster::lock`) and puts back what it
//! changed before it ends, even when it fails (`Restore`).
#![allow(dead_code)]

use mysql::prelude::Queryable;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// scripts/replication.sh: server 1 the primary, 2 and 3 replicas.
    Replication,
    /// scripts/galera.sh: nodes 1, 2, 3.
    Galera,
}

/// Which server a replicated set runs (`HSD_REPL_FLAVOR` of
/// scripts/replication.sh; Galera is always MariaDB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Mariadb,
    Mysql8,
}

pub struct Cluster {
    pub kind: Kind,
    pub flavor: Flavor,
    /// Per server (1-based in the scripts; 0-based here), its hsd URL.
    pub urls: Vec<String>,
    dir: String,
}

static LOCK: Mutex<()> = Mutex::new(());

impl Cluster {
    /// The cluster the test script started, or `None` outside CI when it
    /// did not.
    pub fn get(kind: Kind) -> Option<Cluster> {
        let (urls, dir) = match kind {
            Kind::Replication => (
                std::env::var("HSD_REPL_PRIMARY_URL").ok().and_then(|p| {
                    let r = std::env::var("HSD_REPL_REPLICA_URLS").ok()?;
                    Some(format!("{p},{r}"))
                }),
                std::env::var("HSD_REPL_DIR").ok(),
            ),
            Kind::Galera => (
                std::env::var("HSD_GALERA_URLS").ok(),
                std::env::var("HSD_GALERA_DIR").ok(),
            ),
        };
        let flavor = match (kind, std::env::var("HSD_REPL_FLAVOR").as_deref()) {
            (Kind::Replication, Ok("mysql8")) => Flavor::Mysql8,
            (Kind::Replication, Ok("mariadb") | Err(_)) => Flavor::Mariadb,
            (Kind::Replication, Ok(other)) => panic!("HSD_REPL_FLAVOR={other}: mariadb or mysql8"),
            (Kind::Galera, _) => Flavor::Mariadb,
        };
        match (urls, dir) {
            (Some(urls), Some(dir)) if !urls.is_empty() => Some(Cluster {
                kind,
                flavor,
                urls: urls.split(',').map(str::to_string).collect(),
                dir,
            }),
            _ => {
                let script = match kind {
                    Kind::Replication => "scripts/replication.sh",
                    Kind::Galera => "scripts/galera.sh",
                };
                assert!(
                    std::env::var_os("CI").is_none(),
                    "{script} env not set: CI must run the replication suites (scripts/test.sh sets it)"
                );
                eprintln!("{script} env not set: skipping (eval \"$({script} env)\")");
                None
            }
        }
    }

    /// Serialises the tests of a suite (they share the servers).
    pub fn lock() -> MutexGuard<'static, ()> {
        LOCK.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs the cluster's script with `args`; its stdout. Panics on failure.
    pub fn script(&self, args: &[&str]) -> String {
        let (name, var) = match self.kind {
            Kind::Replication => ("replication.sh", "HSD_REPL_DIR"),
            Kind::Galera => ("galera.sh", "HSD_GALERA_DIR"),
        };
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../scripts")
            .join(name);
        let out = Command::new("bash")
            .arg(&script)
            .args(args)
            .env(var, &self.dir)
            .output()
            .expect("run the cluster script");
        assert!(
            out.status.success(),
            "{name} {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A connection to server `i` (0-based) as hsd.
    pub fn conn(&self, i: usize) -> mysql::Conn {
        let opts =
            mysql::OptsBuilder::from_opts(mysql::Opts::from_url(&self.urls[i]).expect("url"))
                .tcp_connect_timeout(Some(Duration::from_secs(5)));
        mysql::Conn::new(opts).unwrap_or_else(|e| panic!("connect to {}: {e}", self.urls[i]))
    }

    /// A root session on replicated server `i` (0-based), through its own
    /// socket (root has no TCP account there): for what hsd's account may
    /// not do on a read-only server, such as `LOCK TABLES ... WRITE`.
    pub fn root_conn(&self, i: usize) -> mysql::Conn {
        assert!(
            matches!(self.kind, Kind::Replication),
            "replication servers only"
        );
        let sock = format!("{}/s{}/mariadbd.sock", self.dir, i + 1);
        assert!(
            sock.len() <= 100,
            "socket path too long for this helper: {sock}"
        );
        let opts = mysql::OptsBuilder::new()
            .socket(Some(sock.clone()))
            .user(Some("root"));
        mysql::Conn::new(opts).unwrap_or_else(|e| panic!("root on {sock}: {e}"))
    }

    /// Runs statements on server `i`; the rows of the last as text.
    pub fn sql(&self, i: usize, stmt: &str) -> Vec<Vec<Option<String>>> {
        let mut c = self.conn(i);
        let mut rows = Vec::new();
        let mut result = c.query_iter(stmt).unwrap_or_else(|e| panic!("{stmt}: {e}"));
        while let Some(set) = result.iter() {
            rows.clear();
            for row in set {
                let row = row.expect("row");
                rows.push(
                    row.unwrap()
                        .into_iter()
                        .map(|v| match v {
                            mysql::Value::NULL => None,
                            mysql::Value::Bytes(b) => {
                                Some(String::from_utf8_lossy(&b).into_owned())
                            }
                            other => Some(other.as_sql(true).trim_matches('\'').to_string()),
                        })
                        .collect(),
                );
            }
        }
        rows
    }

    /// One value of one row.
    pub fn value(&self, i: usize, stmt: &str) -> Option<String> {
        self.sql(i, stmt)
            .first()
            .and_then(|r| r.first().cloned().flatten())
    }

    /// The hsd arguments for this cluster: `--backend` server 0, a
    /// `--replica` per other server.
    pub fn hsd_args(&self) -> Vec<String> {
        let mut args = vec!["--backend".to_string(), self.urls[0].clone()];
        for u in &self.urls[1..] {
            args.push("--replica".into());
            args.push(u.clone());
        }
        args
    }

    /// `host:port` of server `i` (as hsd names it in logs and metrics).
    pub fn address(&self, i: usize) -> String {
        self.urls[i]
            .rsplit('@')
            .next()
            .unwrap_or_default()
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until every replica applied the primary's binary log
    /// (replication) or every node is Synced (Galera).
    pub fn settle(&self) {
        match self.kind {
            Kind::Replication => {
                self.script(&["sync", "30"]);
            }
            Kind::Galera => {
                for n in ["1", "2", "3"] {
                    self.script(&["wait-synced", n, "60"]);
                }
            }
        }
    }
}

/// Runs the script with `args` when dropped: puts back what a test
/// changed, also when it fails.
pub struct Restore<'a> {
    cluster: &'a Cluster,
    args: Vec<Vec<String>>,
}

impl<'a> Restore<'a> {
    pub fn new(cluster: &'a Cluster) -> Restore<'a> {
        Restore {
            cluster,
            args: Vec::new(),
        }
    }

    /// Adds a script call to run at the end (calls run in the order added).
    pub fn then(&mut self, args: &[&str]) {
        self.args.push(args.iter().map(|s| s.to_string()).collect());
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        for args in &self.args {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.cluster.script(&a)));
            if r.is_err() {
                eprintln!("restoring the cluster: {a:?} failed");
            }
        }
    }
}

/// Polls `check` every 20 ms until it is true; how long that took. Panics
/// with `what` after `limit`.
pub fn eventually(limit: Duration, what: &str, mut check: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if check() {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `hsd serve` in front of a cluster, on free loopback ports,
/// with its log kept for assertions (and echoed to the test's stderr).
pub struct Hsd {
    child: std::process::Child,
    pub read: String,
    pub write: String,
    pub admin: String,
    log: std::sync::Arc<Mutex<String>>,
}

impl Hsd {
    /// `hsd serve` with `--backend`/`--replica` for `cluster`, then `args`.
    pub fn start(cluster: &Cluster, args: &[&str]) -> Hsd {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(hsd_binary())
            .arg("serve")
            .args(["--address", "127.0.0.1", "--port", "0", "--port-wr", "0"])
            .args(["--admin-address", "127.0.0.1:0"])
            .args(cluster.hsd_args())
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn hsd");
        let log = std::sync::Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr");
        let keep = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[hsd] {line}");
                let mut l = keep.lock().unwrap_or_else(|p| p.into_inner());
                l.push_str(&line);
                l.push('\n');
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = lines
            .next()
            .expect("hsd printed nothing (did it fail to start?)")
            .expect("read hsd stdout");
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no {name} in {line:?}"))
        };
        let (read, write, admin) = (field("read"), field("write"), field("admin"));
        std::thread::spawn(move || for _ in lines {});
        Hsd {
            child,
            read,
            write,
            admin,
            log,
        }
    }

    /// What hsd logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The log once it holds `wanted`, or as it is after `within`: the
    /// thread that copies hsd's stderr may lag the answer that followed the
    /// line (seen under load in CI).
    pub fn log_with(&self, wanted: &str, within: std::time::Duration) -> String {
        let deadline = std::time::Instant::now() + within;
        loop {
            let log = self.log();
            if log.contains(wanted) || std::time::Instant::now() >= deadline {
                return log;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The Prometheus text of the admin endpoint.
    pub fn metrics(&self) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&self.admin).expect("admin endpoint");
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
            .expect("write");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text
    }

    /// A metric without labels (0 when absent).
    pub fn unlabelled(&self, name: &str) -> f64 {
        let text = self.metrics();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(0.0)
    }

    /// A metric's value for `server` (`host:port`), with `extra` labels
    /// (e.g. `role="primary"`); 0 when absent.
    pub fn metric(&self, name: &str, server: &str, extra: &str) -> f64 {
        let text = self.metrics();
        let server_label = format!("server=\"{server}\"");
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .filter(|l| l.contains(&server_label) && l.contains(extra))
            .find_map(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0.0)
    }
}

impl Drop for Hsd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hsd binary: $HSD_BIN, else the one built beside this test (cargo
/// puts test executables in <target>/<profile>/deps/).
pub fn hsd_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("HSD_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let bin = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("hsd"))
        .expect("target directory");
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build -p hsd) or set HSD_BIN",
        bin.display()
    );
    bin
}

/// Runs `f` on a 2-thread runtime (tests are plain #[test]s: they hold the
/// suite's lock, which must not live across an await of an async test).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

pub async fn client(addr: &str) -> hs_client::Client {
    hs_client::Client::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"))
}

/// Sends a request written with `|` for TAB; the answer's tokens joined
/// by `|` (NULL as `~`), or the client error.
pub async fn req(c: &mut hs_client::Client, line: &str) -> String {
    let raw = line.replace('|', "\t");
    match c.request(raw.as_bytes()).await {
        Ok(r) => {
            let mut parts = vec![r.code.to_string(), r.ncols.to_string()];
            for v in &r.values {
                parts.push(match v {
                    None => "~".into(),
                    Some(b) => String::from_utf8_lossy(b).into_owned(),
                });
            }
            parts.join("|")
        }
        Err(e) => format!("client error: {e}"),
    }
}

impl Cluster {
    /// A fresh table `hsdtest.<name>` (id INT PRIMARY KEY, v INT), made on
    /// server 0 and present everywhere when this returns.
    pub fn fresh_table(&self, name: &str) {
        self.sql(
            0,
            &format!(
                "CREATE DATABASE IF NOT EXISTS hsdtest; DROP TABLE IF EXISTS hsdtest.{name}; \
                 CREATE TABLE hsdtest.{name} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB"
            ),
        );
        self.settle_data();
    }

    /// Waits until every replica has applied what server 0 wrote (Galera:
    /// nothing to wait for once the nodes are Synced).
    pub fn settle_data(&self) {
        if self.kind == Kind::Replication {
            self.script(&["sync", "30"]);
        }
    }
}

/// The kv tables of the suites (`fresh_table`): open, set, get, insert on
/// index `id`.
pub async fn open(c: &mut hs_client::Client, id: u32, table: &str) {
    let r = req(c, &format!("P|{id}|hsdtest|{table}|PRIMARY|id,v")).await;
    assert_eq!(r, "0|1", "opening {table}");
}

/// Sets row `k`'s value; the answer (`0|1|1` when the row was there).
pub async fn set(c: &mut hs_client::Client, id: u32, k: i64, v: i64) -> String {
    req(c, &format!("{id}|=|1|{k}|1|0|U|{k}|{v}")).await
}

/// After a change of primary: sets row 1 (index `id`) to `*v + 1`,
/// `*v + 2`, ... (`*v` left at the value written) until a write succeeds,
/// failing with `what` past `within`; how long it took.
pub async fn write_until_it_moves(
    c: &mut hs_client::Client,
    id: u32,
    v: &mut i64,
    within: std::time::Duration,
    what: &str,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    loop {
        *v += 1;
        if set(c, id, 1, *v).await == "0|1|1" {
            return started.elapsed();
        }
        assert!(started.elapsed() < within, "{what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Row `k` as `0|2|k|v` (or the error).
pub async fn get(c: &mut hs_client::Client, id: u32, k: i64) -> String {
    req(c, &format!("{id}|=|1|{k}")).await
}

pub async fn insert(c: &mut hs_client::Client, id: u32, k: i64, v: i64) -> String {
    req(c, &format!("{id}|+|2|{k}|{v}")).await
}
