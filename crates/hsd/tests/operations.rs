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
    ] {
        assert!(body.contains(want), "metrics lack {want:?}:\n{body}");
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
