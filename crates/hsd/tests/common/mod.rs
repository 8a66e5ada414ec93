//! The one test harness of the integration suites: spawns the real `hsd`
//! binary (through hs-conformance's launcher, which reads its ready line) on
//! the embedded store or on the private MariaDB that `scripts/mariadb.sh`
//! runs, runs SQL beside it, and formats responses (async, through
//! hs-client). `blocking` is its blocking side, used by the MariaDB
//! backend's suites; `skips` tells, at the end of a local run, which halves
//! were skipped for want of a server.
#![allow(dead_code)]

pub mod blocking;
pub mod commit_proxy;
pub mod servers;
pub mod skips;

#[allow(unused_imports)]
pub use servers::{mysql8_url, mysql_url};

use hs_client::{Client, Response};
use hs_conformance::launcher;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The hsd binary the tests run: this build's, or `HSD_TEST_BIN` (to check
/// that a new test fails on an older build).
pub fn hsd_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var_os("HSD_TEST_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_hsd")))
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Mysql,
}

/// vtgate of the private Vitess that `scripts/vitess.sh` runs (keyspace
/// `ks` in two shards). In CI its absence is a failure, as for `mysql_url`.
pub fn vitess_url() -> Option<String> {
    match std::env::var("HSD_TEST_VITESS_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "HSD_TEST_VITESS_URL is not set: CI must run the Vitess tests (scripts/test.sh sets it)"
            );
            skips::skip(
                skips::Half::Vitess,
                "HSD_TEST_VITESS_URL not set: skipping the Vitess half (run scripts/test.sh)",
            );
            None
        }
    }
}

/// The MySQL 8 server's own CA certificate (made by `mysqld
/// --initialize`), for the TLS tests.
pub fn mysql8_ca() -> Option<String> {
    std::env::var("HSD_MYSQL8_CA")
        .ok()
        .filter(|v| !v.is_empty())
}

/// Whether the server at `url` is MySQL (else MariaDB): the suites run on
/// both, and a few answers are the server's own and differ (each such
/// difference is listed in docs/compatibility.md).
pub fn is_mysql(url: &str) -> bool {
    use mysql::prelude::Queryable;
    static SEEN: std::sync::Mutex<Vec<(String, bool)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, m)) = seen.iter().find(|(u, _)| u == url) {
        return *m;
    }
    let opts = mysql::Opts::from_url(url).expect("mysql url");
    let mut conn = mysql::Conn::new(opts).expect("connect to the MySQL server");
    let version: String = conn
        .query_first("SELECT VERSION()")
        .expect("SELECT VERSION()")
        .expect("a version");
    let mysql = !version.contains("MariaDB");
    seen.push((url.to_string(), mysql));
    mysql
}

/// The original HandlerSocket plugin's read and write ports, which
/// `scripts/mariadb.sh` loads into the private MariaDB and exports. In CI
/// their absence is a failure, as for `mysql_url`.
pub fn original_ports() -> Option<(u16, u16)> {
    let port = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u16>().ok());
    match (
        port("HSD_HS_ORIGINAL_PORT"),
        port("HSD_HS_ORIGINAL_PORT_WR"),
    ) {
        (Some(r), Some(w)) => Some((r, w)),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "HSD_HS_ORIGINAL_PORT(_WR) not set: CI must run the conformance tests (scripts/test.sh sets them)"
            );
            skips::skip(
                skips::Half::Plugin,
                "original plugin ports not set: skipping (run scripts/test.sh)",
            );
            None
        }
    }
}

/// A MariaDB of a test's own (scripts/mariadb.sh with its own data dir
/// under the target dir, the original plugin loaded), for tests that must
/// not disturb the shared one; stopped when dropped.
pub struct PrivateMariadb {
    dir: PathBuf,
    pub url: String,
    /// The original plugin's read and write ports.
    pub hs_ports: (u16, u16),
    /// Its Unix socket, and the CA of its TLS files.
    pub socket: String,
    pub ca: String,
}

impl PrivateMariadb {
    pub fn start(name: &str) -> PrivateMariadb {
        Self::start_with(name, &[])
    }

    /// With scripts/mariadb.sh's environment options (HSD_MARIADB_TLS=1).
    pub fn start_with(name: &str, env: &[(&str, &str)]) -> PrivateMariadb {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
        mariadb_sh_env(&dir, "start", env);
        let env = mariadb_sh(&dir, "env");
        let var = |name: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap_or_else(|| panic!("{name} in mariadb.sh env"))
                .trim_matches('\'')
                .to_string()
        };
        let port = |name: &str| var(name).parse::<u16>().expect("port number");
        PrivateMariadb {
            url: var("HSD_TEST_MYSQL_URL"),
            socket: var("HSD_MARIADB_SOCKET"),
            ca: var("HSD_MARIADB_CA"),
            hs_ports: (
                port("HSD_HS_ORIGINAL_PORT"),
                port("HSD_HS_ORIGINAL_PORT_WR"),
            ),
            dir,
        }
    }

    /// Runs scripts/mariadb.sh `cmd` (start, stop, restart, ...) on it.
    pub fn script(&self, cmd: &str) -> String {
        mariadb_sh(&self.dir, cmd)
    }

    /// The server's process id.
    pub fn pid(&self) -> i32 {
        std::fs::read_to_string(self.dir.join("mariadbd.pid"))
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid")
    }
}

impl Drop for PrivateMariadb {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("mariadbd.pid")) {
            if let Ok(pid) = pid.trim().parse::<i32>() {
                // SAFETY: kill(2) on the server this test started: resumes it
                // if a failed test left it stopped, so that it can stop.
                unsafe { libc::kill(pid, libc::SIGCONT) };
            }
        }
        let _ = std::panic::catch_unwind(|| mariadb_sh(&self.dir, "stop"));
    }
}

/// Runs scripts/mariadb.sh `cmd` for the instance in `dir`; its stdout.
fn mariadb_sh(dir: &Path, cmd: &str) -> String {
    mariadb_sh_env(dir, cmd, &[])
}

fn mariadb_sh_env(dir: &Path, cmd: &str, env: &[(&str, &str)]) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mariadb.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(cmd)
        .envs(env.iter().copied())
        .env("HSD_MARIADB_DIR", dir)
        .output()
        .expect("run scripts/mariadb.sh");
    assert!(
        out.status.success(),
        "mariadb.sh {cmd} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub struct TestServer {
    pub backend: Backend,
    /// The database (SQLite file name / MariaDB schema) this test owns.
    pub db: String,
    pub read_addr: String,
    pub write_addr: String,
    pub admin_addr: Option<String>,
    /// With `--memcached-address`: where the memcached port listens.
    pub memcached_addr: Option<String>,
    child: Option<RunningHsd>,
    data_dir: PathBuf,
    _tmp: tempfile::TempDir,
    mysql_url: Option<String>,
    args: Vec<String>,
}

impl TestServer {
    /// Starts hsd for `backend` with a fresh database named after the test.
    /// Returns None when the MariaDB half is not available outside CI.
    pub fn start(backend: Backend, db: &str, extra: &[&str]) -> Option<TestServer> {
        let mysql_url = match backend {
            Backend::Sqlite => None,
            Backend::Mysql => Some(mysql_url()?),
        };
        Some(Self::start_at(backend, mysql_url, db, extra))
    }

    /// Like `start`, with the MariaDB URL given (for tests that run their own
    /// MariaDB instance).
    pub fn start_at(
        backend: Backend,
        mysql_url: Option<String>,
        db: &str,
        extra: &[&str],
    ) -> TestServer {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut s = TestServer {
            backend,
            db: db.to_string(),
            read_addr: String::new(),
            write_addr: String::new(),
            admin_addr: None,
            memcached_addr: None,
            child: None,
            data_dir: tmp.path().join("data"),
            _tmp: tmp,
            mysql_url,
            args: extra.iter().map(|s| s.to_string()).collect(),
        };
        match backend {
            Backend::Sqlite => {
                std::fs::create_dir_all(&s.data_dir).expect("data dir");
                // `hsd sql` makes a new db only for a CREATE statement; a
                // temporary table leaves the new db empty.
                s.sql("CREATE TEMP TABLE harness_new_db (x)");
            }
            Backend::Mysql => {
                s.mysql_admin(&format!("DROP DATABASE IF EXISTS `{db}`"));
                s.mysql_admin(&format!("CREATE DATABASE `{db}`"));
            }
        }
        s.spawn();
        s
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn spawn(&mut self) {
        let mut args: Vec<String> = vec!["--data-dir".into(), self.data_dir.display().to_string()];
        args.extend(self.args.iter().cloned());
        if let Some(url) = &self.mysql_url {
            args.extend(["--backend".to_string(), url.clone()]);
        }
        let running = spawn_hsd(&args);
        self.read_addr = running.read.clone();
        self.write_addr = running.write.clone();
        self.admin_addr = running.admin.clone();
        self.memcached_addr = running.ready.memcached.clone();
        self.child = Some(running);
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.pid()).unwrap_or(0)
    }

    /// kill -9, then start again on the same data (new ports).
    pub fn kill9_and_restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    /// kill -9, then start again serving another data directory.
    pub fn restart_with_data_dir(&mut self, dir: &Path) {
        self.kill9();
        self.data_dir = dir.to_path_buf();
        self.spawn();
    }

    pub fn kill9(&mut self) {
        // Dropping it kills (SIGKILL) and reaps it.
        drop(self.child.take());
    }

    /// SIGTERM and wait; returns the exit status code.
    pub fn terminate(&mut self) -> Option<i32> {
        let mut c = self.child.take()?;
        unsafe {
            libc::kill(c.pid() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = c.child.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = c.child.kill();
                panic!("hsd did not exit within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub async fn reader(&self) -> Client {
        Client::connect(&self.read_addr)
            .await
            .expect("connect read port")
    }

    pub async fn writer(&self) -> Client {
        Client::connect(&self.write_addr)
            .await
            .expect("connect write port")
    }

    /// Runs SQL on the test's database beside hsd; returns rows as text
    /// (NULL as None).
    pub fn sql(&self, stmt: &str) -> Vec<Vec<Option<String>>> {
        match self.backend {
            Backend::Sqlite => {
                let out = Command::new(hsd_bin())
                    .arg("sql")
                    .arg("--data-dir")
                    .arg(&self.data_dir)
                    .arg(&self.db)
                    .arg(stmt)
                    .output()
                    .expect("run hsd sql");
                assert!(
                    out.status.success(),
                    "hsd sql {stmt:?} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(|l| {
                        l.split('\t')
                            .map(|v| (v != "NULL").then(|| v.to_string()))
                            .collect()
                    })
                    .collect()
            }
            Backend::Mysql => self.mysql_query(&format!("USE `{}`; {stmt}", self.db)),
        }
    }

    fn mysql_admin(&self, stmt: &str) {
        self.mysql_query(stmt);
    }

    fn mysql_query(&self, stmt: &str) -> Vec<Vec<Option<String>>> {
        use mysql::prelude::Queryable;
        let url = self.mysql_url.as_ref().expect("mysql url");
        let opts = mysql::Opts::from_url(url).expect("mysql url");
        let mut conn = mysql::Conn::new(opts).expect("connect to MariaDB");
        let mut rows = Vec::new();
        let mut result = conn.query_iter(stmt).expect("mysql query");
        while let Some(set) = result.iter() {
            for row in set {
                let row = row.expect("mysql row");
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

    /// Column type for an auto-increment integer primary key.
    pub fn autoinc_pk(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "INTEGER PRIMARY KEY AUTOINCREMENT",
            Backend::Mysql => "INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY",
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// One run of `hsd` with stdout and stderr captured, for start-up checks:
/// `run_hsd` waits until hsd prints its ready line (then kills it) or exits.
/// Fields: `code` (None when killed after the ready line), `ready`, `stdout`,
/// `stderr`.
pub type HsdRun = launcher::Run;

pub fn run_hsd(args: &[&str], env: &[(&str, &str)]) -> HsdRun {
    launcher::run_until_ready(hsd_bin(), args, env, Duration::from_secs(30)).expect("run hsd")
}

/// A response as one readable line: tokens joined by TAB, NULL as `<NULL>`.
pub fn fmt(r: &Response) -> String {
    let mut parts = vec![r.code.to_string(), r.ncols.to_string()];
    for v in &r.values {
        parts.push(match v {
            None => "<NULL>".to_string(),
            Some(b) => String::from_utf8_lossy(b).into_owned(),
        });
    }
    parts.join("\t")
}

/// Sends a request written with `|` for TAB and `~` for a NULL token, and
/// returns the formatted response.
pub async fn q(c: &mut Client, line: &str) -> String {
    let raw: Vec<u8> = line
        .bytes()
        .map(|b| match b {
            b'|' => b'\t',
            b'~' => 0,
            other => other,
        })
        .collect();
    let r = c
        .request(&raw)
        .await
        .unwrap_or_else(|e| panic!("request {line:?}: {e}"));
    fmt(&r)
}

/// `0|n|...` written with `|` for TAB, for comparing with `q`.
pub fn t(s: &str) -> String {
    s.replace('|', "\t")
}

/// Generates one test per backend from an async fn taking `&mut TestServer`.
#[macro_export]
macro_rules! both_backends {
    ($name:ident, $extra:expr) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let mut s = common::TestServer::start(
                    common::Backend::Sqlite,
                    concat!("hst_", stringify!($name)),
                    $extra,
                )
                .expect("sqlite server");
                super::$name(&mut s).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                let Some(mut s) = common::TestServer::start(
                    common::Backend::Mysql,
                    concat!("hst_", stringify!($name)),
                    $extra,
                ) else {
                    return;
                };
                super::$name(&mut s).await;
            }
        }
    };
}

/// A running `hsd serve` on free loopback ports and where it listens (from
/// its ready line): `child`, `read`, `write`, `admin`. Killed when dropped.
pub type RunningHsd = launcher::Hsd;

/// Starts `hsd serve --address 127.0.0.1 --port 0 --port-wr 0 <args>` and
/// reads its ready line; its stdout keeps being drained so that hsd never
/// blocks on a full pipe.
pub fn spawn_hsd<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> RunningHsd {
    launcher::serve(hsd_bin(), args).unwrap_or_else(|e| panic!("{e:#}"))
}

/// A size-limited tmpfs, unmounted on drop: a disk that fills up. Mounting
/// needs root (scripts/test.sh runs as root in CI).
pub struct SmallDisk {
    pub dir: PathBuf,
}

impl SmallDisk {
    pub fn mount(dir: &Path, bytes: u64) -> SmallDisk {
        std::fs::create_dir_all(dir).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mounting a small tmpfs failed: this test needs root (scripts/test.sh runs as root in CI)"
        );
        SmallDisk {
            dir: dir.to_path_buf(),
        }
    }

    /// Takes every byte left with a file named `name`: the disk is full
    /// afterwards (a write of one more page fails with ENOSPC).
    pub fn fill(&self, name: &str) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.dir.join(name)).expect("create filler");
        let page = [0u8; 4096];
        loop {
            match filler.write(&page) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling {}: {e}", self.dir.display()),
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}
