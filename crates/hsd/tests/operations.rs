//! Operating hsd: acknowledged writes survive kill -9, SIGTERM drains and
//! exits 0, metrics are served, connection limits and idle timeouts hold,
//! and settings come from a config file and the environment.

mod common;

use common::{q, t, Backend, TestServer};
use hs_client::{Client, ResponseExt};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn create_kv(s: &TestServer) -> String {
    s.sql("CREATE TABLE kv (k INT NOT NULL PRIMARY KEY, v VARCHAR(64))");
    s.db.clone()
}

/// Writers insert as fast as they can; hsd is killed with SIGKILL while they
/// run; after a restart every acknowledged key is there.
async fn acknowledged_writes_survive_kill9(s: &mut TestServer) {
    let db = create_kv(s).await;
    let mut writers = Vec::new();
    for w in 0..8u32 {
        let addr = s.write_addr.clone();
        let db = db.clone();
        writers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let Ok(mut c) = Client::connect(&addr).await else {
                return acked;
            };
            if c.open_index(1, &db, "kv", "PRIMARY", &["k", "v"], &[])
                .await
                .is_err()
            {
                return acked;
            }
            for i in 0..100_000u32 {
                let k = (w * 1_000_000 + i).to_string();
                match c.insert(1, &[k.as_str(), "value"]).await {
                    Ok(r) if r.is_ok() => acked.push(k),
                    _ => break,
                }
            }
            acked
        }));
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    s.kill9();
    let mut acked = BTreeSet::new();
    for w in writers {
        acked.extend(w.await.expect("writer task"));
    }
    assert!(
        acked.len() > 50,
        "writers got too few acknowledgements ({}) to test anything",
        acked.len()
    );
    s.kill9_and_restart();
    let present: BTreeSet<String> = s
        .sql("SELECT k FROM kv")
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect();
    let lost: Vec<_> = acked.difference(&present).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    // And the restarted server serves them.
    let mut c = s.reader().await;
    assert_eq!(q(&mut c, &format!("P|1|{db}|kv|PRIMARY|v")).await, t("0|1"));
    let first = acked.iter().next().expect("one key");
    assert_eq!(q(&mut c, &format!("1|=|1|{first}")).await, t("0|1|value"));
}
both_backends!(acknowledged_writes_survive_kill9, &[]);

/// SIGTERM while clients pipeline writes: every write answered before the
/// connection closed is committed, and hsd exits 0.
async fn sigterm_drains_and_exits_zero(s: &mut TestServer) {
    let db = create_kv(s).await;
    let mut c = s.writer().await;
    c.open_index(1, &db, "kv", "PRIMARY", &["k", "v"], &[])
        .await
        .unwrap()
        .check()
        .unwrap();
    let lines: Vec<Vec<u8>> = (0..200)
        .map(|i| format!("1\t+\t2\t{i}\tv").into_bytes())
        .collect();
    let answered = c.pipeline(&lines).await.unwrap();
    assert!(answered.iter().all(|r| r.is_ok()));
    // Idle connections must not hold shutdown up.
    let _idle = s.reader().await;
    assert_eq!(s.terminate(), Some(0));
    let n = s.sql("SELECT count(*) FROM kv")[0][0].clone();
    assert_eq!(n.as_deref(), Some("200"));
}
both_backends!(sigterm_drains_and_exits_zero, &[]);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint() {
    let s = TestServer::start(Backend::Sqlite, "m", &["--admin-address", "127.0.0.1:0"])
        .expect("server");
    s.sql("CREATE TABLE kv (k INT NOT NULL PRIMARY KEY, v TEXT)");
    let mut w = s.writer().await;
    assert_eq!(q(&mut w, "P|1|m|kv|PRIMARY|k,v").await, t("0|1"));
    assert_eq!(q(&mut w, "1|+|2|1|a").await, t("0|1"));
    assert_eq!(q(&mut w, "1|=|1|1").await, t("0|2|1|a"));
    assert_eq!(q(&mut w, "1|!|1|1").await, t("2|1|op"));
    let admin = s.admin_addr.clone().expect("admin address printed");
    let mut sock = tokio::net::TcpStream::connect(&admin).await.unwrap();
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    sock.read_to_string(&mut body).await.unwrap();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    for want in [
        "hsd_requests_total{command=\"find\",result=\"ok\"} 1",
        "hsd_requests_total{command=\"write\",result=\"ok\"} 1",
        "hsd_requests_total{command=\"open_index\",result=\"ok\"} 1",
        "hsd_requests_total{command=\"exec\",result=\"op\"} 1",
        "hsd_open_connections 1",
        "hsd_group_commit_writes_count 1",
        "hsd_request_duration_seconds_count 2",
        "# TYPE hsd_refused_connections_total counter\n",
        &format!(
            "hsd_build_info{{commit=\"{}\",version=\"{}\"}} 1\n",
            env!("HSD_COMMIT"),
            env!("CARGO_PKG_VERSION")
        ),
        "# TYPE process_cpu_seconds_total counter\n",
    ] {
        assert!(body.contains(want), "metrics lack {want:?}:\n{body}");
    }
    let value = |name: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name}:\n{body}"))
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = value("hsd_start_time_seconds");
    assert!(
        started <= now && started > now - 120.0,
        "{started} vs {now}"
    );
    // The kernel's start time (boot time and ticks: whole seconds at best).
    let process_started = value("process_start_time_seconds");
    assert!(
        (process_started - started).abs() < 5.0,
        "{process_started} vs {started}"
    );
    assert!(value("process_resident_memory_bytes") > 1e6);
    assert!(value("process_open_fds") >= 3.0);
    assert!(value("process_threads") >= 2.0);
    assert!(value("process_max_fds") >= value("process_open_fds"));
    // Every series exported is listed in docs/operations.md.
    let docs = include_str!("../../../docs/operations.md");
    for name in body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next())
    {
        assert!(
            docs.contains(&format!("`{name}")),
            "docs/operations.md does not list {name}"
        );
    }
}

/// One request to the admin endpoint; the whole answer, head and body.
async fn admin_request(admin: &str, request: &str) -> String {
    let mut sock = tokio::net::TcpStream::connect(admin).await.unwrap();
    sock.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(15), sock.read_to_string(&mut answer))
        .await
        .expect("the admin endpoint answers")
        .unwrap();
    answer
}

/// The body of an answer.
fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// The admin endpoint: metrics only on /metrics, health and readiness on
/// their paths, 404 elsewhere, 405 for other methods; the backend is up.
/// Before, every path and method answered 200 with the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_endpoint_routes_health_readiness_and_metrics() {
    let s = TestServer::start(Backend::Sqlite, "adm", &["--admin-address", "127.0.0.1:0"])
        .expect("server");
    let admin = s.admin_addr.clone().expect("admin address printed");
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    for path in ["/healthz", "/health", "/readyz", "/ready"] {
        let a = admin_request(&admin, &get(path)).await;
        assert!(a.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {a}");
        assert_eq!(body(&a), "ok\n", "{path}");
    }
    let metrics = admin_request(&admin, &get("/metrics")).await;
    assert!(
        metrics.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"),
        "{metrics}"
    );
    assert!(body(&metrics).contains("\nhsd_backend_up 1\n"), "{metrics}");
    assert!(
        body(&metrics).contains("# TYPE hsd_backend_up gauge"),
        "{metrics}"
    );
    for path in ["/", "/x", "/metricsx", "/healthz/more"] {
        let a = admin_request(&admin, &get(path)).await;
        assert!(a.starts_with("HTTP/1.1 404 Not Found\r\n"), "{path}: {a}");
        assert!(!a.contains("hsd_"), "{path}: {a}");
    }
    for method in ["DELETE", "POST", "PUT"] {
        let a = admin_request(&admin, &format!("{method} /x HTTP/1.1\r\n\r\n")).await;
        assert!(
            a.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
            "{method}: {a}"
        );
        assert!(a.contains("\r\nAllow: GET, HEAD\r\n"), "{method}: {a}");
    }
    // HEAD: the head of GET's answer, no body.
    let a = admin_request(&admin, "HEAD /healthz HTTP/1.1\r\n\r\n").await;
    assert!(a.starts_with("HTTP/1.1 200 OK\r\n"), "{a}");
    assert!(a.contains("Content-Length: 3\r\n"), "{a}");
    assert_eq!(body(&a), "", "{a}");
}

/// A MySQL backend that cannot be reached: hsd serves (healthy) but is
/// not ready, says why in one line, and `hsd_backend_up` is 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_fails_while_the_mysql_server_cannot_be_reached() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("mysql://hsd:pw@127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().display().to_string();
    let hsd = common::spawn_hsd(&[
        "--data-dir",
        &data,
        "--backend",
        &url,
        "--mysql-timeout",
        "1",
        "--admin-address",
        "127.0.0.1:0",
    ]);
    let admin = hsd.admin.clone().expect("admin address printed");
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\n\r\n");
    let a = admin_request(&admin, &get("/healthz")).await;
    assert!(a.starts_with("HTTP/1.1 200 OK\r\n"), "{a}");
    for _ in 0..2 {
        let a = admin_request(&admin, &get("/readyz")).await;
        assert!(a.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{a}");
        let why = body(&a);
        assert_eq!(why.lines().count(), 1, "{why:?}");
        assert!(
            why.starts_with("backend mysql://hsd:***@127.0.0.1:"),
            "{why}"
        );
        assert!(
            why.contains(&format!("127.0.0.1:{port} cannot be reached: ")),
            "{why}"
        );
        assert!(why.contains("Connection refused"), "{why}");
        assert!(!why.contains("pw@"), "no password: {why}");
    }
    let metrics = admin_request(&admin, &get("/metrics")).await;
    assert!(body(&metrics).contains("\nhsd_backend_up 0\n"), "{metrics}");
}

/// A MySQL backend that is up: ready, and `hsd_backend_up` is 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_holds_while_the_mysql_server_is_up() {
    let Some(s) = TestServer::start(
        Backend::Mysql,
        "hst_ready",
        &["--admin-address", "127.0.0.1:0"],
    ) else {
        return;
    };
    let admin = s.admin_addr.clone().expect("admin address printed");
    let a = admin_request(&admin, "GET /readyz HTTP/1.1\r\n\r\n").await;
    assert!(a.starts_with("HTTP/1.1 200 OK\r\n"), "{a}");
    let metrics = admin_request(&admin, "GET /metrics HTTP/1.1\r\n\r\n").await;
    assert!(body(&metrics).contains("\nhsd_backend_up 1\n"), "{metrics}");
}

/// Polls `/readyz` until it answers `status`; that answer.
async fn ready_becomes(admin: &str, status: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let a = admin_request(admin, "GET /readyz HTTP/1.1\r\n\r\n").await;
        if a.starts_with(&format!("HTTP/1.1 {status}")) {
            return a;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "readiness did not become {status}: {a}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The MySQL server goes away (a proxy in front of it refuses new
/// connections, as a server that is down): readiness turns 503 within
/// seconds, with no request from any client, and 200 again once it is
/// back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_mysql_server_through_an_outage() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    let proxy = common::commit_proxy::Proxy::start(&url);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().display().to_string();
    let hsd = common::spawn_hsd(&[
        "--data-dir",
        &data,
        "--backend",
        &proxy.url,
        "--mysql-timeout",
        "1",
        "--admin-address",
        "127.0.0.1:0",
    ]);
    let admin = hsd.admin.clone().expect("admin address printed");
    ready_becomes(&admin, "200").await;
    proxy.refuse_new_connections(true);
    let down = ready_becomes(&admin, "503").await;
    assert!(body(&down).contains("cannot be reached"), "{down}");
    let metrics = admin_request(&admin, "GET /metrics HTTP/1.1\r\n\r\n").await;
    assert!(body(&metrics).contains("\nhsd_backend_up 0\n"), "{metrics}");
    proxy.refuse_new_connections(false);
    ready_becomes(&admin, "200").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connections_refuses_the_excess_and_serves_the_rest() {
    // Six seats: five for readers, one kept for the write port.
    let s = TestServer::start(Backend::Sqlite, "mc", &["--demo", "--max-connections", "6"])
        .expect("server");
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut c = s.reader().await;
        assert_eq!(q(&mut c, "P|0|test|user|PRIMARY|user_id").await, t("0|1"));
        held.push(c);
    }
    // The sixth is accepted and closed at once.
    let mut extra = tokio::net::TcpStream::connect(&s.read_addr).await.unwrap();
    let _ = extra
        .write_all(b"P\t0\ttest\tuser\tPRIMARY\tuser_id\n")
        .await;
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), extra.read(&mut buf))
        .await
        .expect("refused connection is closed promptly")
        .unwrap_or(0);
    assert_eq!(n, 0, "a refused connection gets no answer");
    // The write port's seat is still free.
    let mut writer = s.writer().await;
    assert_eq!(
        q(&mut writer, "P|0|test|user|PRIMARY|user_id").await,
        t("0|1")
    );
    // The others keep working; closing one frees a seat.
    assert_eq!(q(&mut held[0], "0|=|1|7").await, t("0|1|7"));
    held.pop();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut again = s.reader().await;
    assert_eq!(
        q(&mut again, "P|0|test|user|PRIMARY|user_id").await,
        t("0|1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed() {
    let s = TestServer::start(Backend::Sqlite, "idle", &["--idle-timeout", "1"]).expect("server");
    let mut sock = tokio::net::TcpStream::connect(&s.read_addr).await.unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf))
        .await
        .expect("closed by the idle timeout")
        .unwrap_or(0);
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_file_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, "from-file\n").unwrap();
    let config = dir.path().join("hsd.toml");
    std::fs::write(
        &config,
        format!(
            "address = \"127.0.0.1\"\nport = 0\nport-wr = 0\ndata-dir = \"{}\"\nplain-secret-file = \"{}\"\n",
            dir.path().join("data").display(),
            secret_file.display()
        ),
    )
    .unwrap();
    let config_arg = config.display().to_string();
    let hsd = hs_conformance::launcher::start(
        common::hsd_bin(),
        &["serve", "--config", &config_arg],
        &[("HSD_PLAIN_SECRET_WR", "from-env")],
    )
    .unwrap();
    let mut r = Client::connect(hsd.read.clone()).await.unwrap();
    assert_eq!(q(&mut r, "A|1|from-file").await, t("0|1"));
    let mut w = Client::connect(hsd.write.clone()).await.unwrap();
    assert_eq!(q(&mut w, "A|1|from-file").await, t("3|1|unauth"));
    assert_eq!(q(&mut w, "A|1|from-env").await, t("0|1"));
    drop(hsd);
    // An unknown key in the file is an error, not silently ignored.
    std::fs::write(&config, "prot = 1\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hsd"))
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("prot"));
}

/// A mistake in the config file is one short line naming the key, the
/// file and its line, with a suggestion, from `serve` and `check` alike.
/// Before: serde's words (`unknown field `prot`, expected one of` and
/// every key, `invalid value: integer `70000`, expected u16`).
#[test]
fn config_file_errors_name_the_key_the_line_and_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hsd.toml");
    let shown = config.display().to_string();
    for (text, want) in [
        (
            "address = \"127.0.0.1\"\nprot = 1\n",
            format!("unknown key \"prot\" in {shown} line 2; did you mean \"port\"?"),
        ),
        (
            "port = 70000\n",
            format!(
                "port: 70000 is not a port number (1-65535, or 0 for a free one) in {shown} line 1"
            ),
        ),
        (
            "synchronous = \"fast\"\n",
            format!("synchronous: \"fast\" is not one of off, normal, full in {shown} line 1"),
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let serve = std::process::Command::new(common::hsd_bin())
            .args(["serve", "--config", &shown])
            .output()
            .unwrap();
        assert_eq!(serve.status.code(), Some(1), "{text:?}");
        assert_eq!(
            String::from_utf8_lossy(&serve.stderr),
            format!("hsd: {want}\n"),
            "{text:?}"
        );
        let check = std::process::Command::new(common::hsd_bin())
            .args(["check", "--config", &shown])
            .output()
            .unwrap();
        assert_eq!(check.status.code(), Some(1), "{text:?}");
        assert_eq!(
            String::from_utf8_lossy(&check.stdout),
            format!("error: {want}\n"),
            "{text:?}"
        );
    }
}

/// `hsd serve` with its stdout and stderr in files, for tests that read
/// its log while it runs; killed when dropped.
struct LoggedHsd {
    child: std::process::Child,
    stderr: std::path::PathBuf,
    ready: hs_conformance::launcher::ReadyLine,
}

impl LoggedHsd {
    fn start(dir: &std::path::Path, args: &[&str]) -> LoggedHsd {
        let stdout = dir.join("stdout");
        let stderr = dir.join("stderr");
        let child = std::process::Command::new(common::hsd_bin())
            .arg("serve")
            .args(args)
            .env_remove("RUST_LOG")
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut hsd = LoggedHsd {
            child,
            stderr,
            ready: hs_conformance::launcher::ReadyLine::parse("hsd: listening read=- write=-")
                .unwrap(),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let out = std::fs::read_to_string(&stdout).unwrap_or_default();
            if let Some(ready) = out
                .lines()
                .find_map(hs_conformance::launcher::ReadyLine::parse)
            {
                hsd.ready = ready;
                return hsd;
            }
            if let Ok(Some(status)) = hsd.child.try_wait() {
                panic!("hsd exited ({status}) before serving: {}", hsd.log());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "hsd not ready: {}",
                hsd.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits until the log has a line containing `what`; that line.
    fn wait_for(&mut self, what: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(line) = self.log().lines().find(|l| l.contains(what)) {
                return line.to_string();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "hsd exited ({status:?}) while waiting for {what:?}: {}",
                    self.log()
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no log line with {what:?}: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }
}

impl Drop for LoggedHsd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A config file for the SIGHUP and log tests: a free read port and
/// `extra` lines (the write port's among them).
fn write_config(path: &std::path::Path, data: &std::path::Path, extra: &str) {
    std::fs::write(
        path,
        format!(
            "address = \"127.0.0.1\"\nport = 0\ndata-dir = \"{}\"\n{extra}",
            data.display()
        ),
    )
    .unwrap();
}

/// SIGHUP reads the config file again: hsd keeps serving (the same
/// connection), applies a new log level at once, names a changed port as
/// needing a restart, and keeps its settings when the file no longer
/// reads. Before, SIGHUP ended hsd (status 129).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_log_level_and_never_exits() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("hsd.toml");
    write_config(&config, &data, "port-wr = 0\nlog-level = \"info\"\n");
    let config_arg = config.display().to_string();
    let mut hsd = LoggedHsd::start(dir.path(), &["--config", &config_arg]);
    let mut c = Client::connect(hsd.ready.read.clone()).await.unwrap();
    assert_eq!(q(&mut c, "P|1|nodb|t|PRIMARY|k").await, t("1|1|open_table"));

    // Nothing changed: said so, still serving on the same connection.
    hsd.signal(libc::SIGHUP);
    hsd.wait_for("SIGHUP: no setting changed");
    assert_eq!(q(&mut c, "P|1|nodb|t|PRIMARY|k").await, t("1|1|open_table"));
    // At info, a closed connection logs nothing.
    let before = hsd.log();
    drop(Client::connect(hsd.ready.read.clone()).await.unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!hsd.log().contains("connection closed"), "{before}");

    // A new level applies at once; a new port waits for a restart.
    write_config(&config, &data, "port-wr = 1\nlog-level = \"debug\"\n");
    hsd.signal(libc::SIGHUP);
    hsd.wait_for("SIGHUP: log-level changed from info to debug");
    hsd.wait_for("SIGHUP: port-wr changed; needs a restart");
    drop(Client::connect(hsd.ready.read.clone()).await.unwrap());
    hsd.wait_for("connection closed");
    assert_eq!(q(&mut c, "P|1|nodb|t|PRIMARY|k").await, t("1|1|open_table"));

    // A file that no longer reads: an error, the settings stay.
    std::fs::write(&config, "port = \n").unwrap();
    hsd.signal(libc::SIGHUP);
    let line = hsd.wait_for("SIGHUP: the settings were not changed");
    assert!(line.contains("ERROR"), "{line}");
    assert_eq!(q(&mut c, "P|1|nodb|t|PRIMARY|k").await, t("1|1|open_table"));
    assert!(hsd.child.try_wait().unwrap().is_none(), "hsd exited");

    // SIGTERM still drains and exits 0.
    drop(c);
    hsd.signal(libc::SIGTERM);
    let status = hsd.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", hsd.log());
}

/// Without a config file SIGHUP changes nothing and hsd keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_without_a_config_file_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let mut hsd = LoggedHsd::start(
        dir.path(),
        &[
            "--address",
            "127.0.0.1",
            "--port",
            "0",
            "--port-wr",
            "0",
            "--data-dir",
            &data,
        ],
    );
    hsd.signal(libc::SIGHUP);
    hsd.wait_for("SIGHUP: no --config file to read again");
    let mut c = Client::connect(hsd.ready.read.clone()).await.unwrap();
    assert_eq!(q(&mut c, "P|1|nodb|t|PRIMARY|k").await, t("1|1|open_table"));
}

/// Every line of a JSON log: an object with timestamp, level, target and
/// the message among its fields.
fn json_lines(log: &str) -> Vec<serde_json::Value> {
    log.lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            for key in ["timestamp", "level", "target"] {
                assert!(v[key].is_string(), "no {key}: {l}");
            }
            assert!(v["fields"]["message"].is_string(), "no message: {l}");
            v
        })
        .collect()
}

/// `--log-format json`: one JSON object a line, the event's fields with
/// the message; `text` (the default) stays as it was. Before, the option
/// did not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_format_json_and_text_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let args = [
        "--address",
        "127.0.0.1",
        "--port",
        "0",
        "--port-wr",
        "0",
        "--data-dir",
        &data,
    ];
    let mut json_args = args.to_vec();
    json_args.extend(["--log-format", "json"]);
    let mut hsd = LoggedHsd::start(dir.path(), &json_args);
    hsd.wait_for("hsd ready");
    let lines = json_lines(&hsd.log());
    let ready = lines
        .iter()
        .find(|v| v["fields"]["message"] == "hsd ready")
        .expect("the ready line");
    assert_eq!(ready["level"], "INFO");
    assert_eq!(ready["target"], "hsd::server");
    assert_eq!(ready["fields"]["read_local"], hsd.ready.read.as_str());
    drop(hsd);

    let text_dir = tempfile::tempdir().unwrap();
    let mut text_args = args.to_vec();
    text_args.extend(["--log-format", "text"]);
    let mut hsd = LoggedHsd::start(text_dir.path(), &text_args);
    let line = hsd.wait_for("hsd ready");
    assert!(line.contains(" INFO hsd::server: hsd ready"), "{line}");
    assert!(!line.starts_with('{'), "{line}");
    // A word that is not a format is refused, naming the choices.
    let out = std::process::Command::new(common::hsd_bin())
        .args(["serve", "--log-format", "yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[possible values: text, json]"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `log-format` and `log-level` in the config file: JSON lines, and no
/// INFO line at `warn`; a level that is not one is refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_format_and_level_in_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("hsd.toml");
    write_config(&config, &data, "port-wr = 0\nlog-format = \"json\"\n");
    let config_arg = config.display().to_string();
    let mut hsd = LoggedHsd::start(dir.path(), &["--config", &config_arg]);
    hsd.wait_for("hsd ready");
    assert!(!json_lines(&hsd.log()).is_empty());
    drop(hsd);

    let quiet = tempfile::tempdir().unwrap();
    write_config(
        &config,
        &data,
        "port-wr = 0\nlog-format = \"json\"\nlog-level = \"warn\"\n",
    );
    let mut hsd = LoggedHsd::start(quiet.path(), &["--config", &config_arg]);
    // SIGHUP's warning for a changed port shows at warn, in JSON.
    write_config(
        &config,
        &data,
        "port-wr = 1\nlog-format = \"json\"\nlog-level = \"warn\"\n",
    );
    hsd.signal(libc::SIGHUP);
    hsd.wait_for("port-wr changed; needs a restart");
    let lines = json_lines(&hsd.log());
    assert!(lines.iter().all(|v| v["level"] != "INFO"), "{}", hsd.log());
    drop(hsd);

    write_config(&config, &data, "port-wr = 0\nlog-level = \"loud\"\n");
    let out = std::process::Command::new(common::hsd_bin())
        .args(["serve", "--config", &config_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("log-level \"loud\" is not a level"), "{err}");
}
