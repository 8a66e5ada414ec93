//! The Grafana dashboard and the Prometheus alert rules in
//! packaging/monitoring name only series hsd exports: every `hsd_*` and
//! `process_*` name in their expressions is in a real hsd's `/metrics`
//! (on the embedded store with the memcached door and SASL, and on MariaDB
//! with the row cache), and each is listed in docs/operations.md.

mod common;

use common::blocking::metrics_text;
use common::{Backend, TestServer};
use std::collections::BTreeSet;

const DASHBOARD: &str = include_str!("../../../packaging/monitoring/hsd-dashboard.json");
const ALERTS: &str = include_str!("../../../packaging/monitoring/hsd-alerts.yml");
const DOCS: &str = include_str!("../../../docs/operations.md");

/// The series names in a PromQL expression (`hsd_...`, `process_...`).
fn series_in(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let rest = &expr[i..];
        if starts_word && (rest.starts_with("hsd_") || rest.starts_with("process_")) {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            names.push(rest[..len].to_string());
            i += len;
        } else {
            i += 1;
        }
    }
    names
}

/// Every expression of the dashboard's panels and of the alert rules.
fn expressions() -> Vec<String> {
    let dashboard: serde_json::Value = serde_json::from_str(DASHBOARD).expect("dashboard JSON");
    let mut exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect();
    exprs.extend(
        ALERTS
            .lines()
            .filter_map(|l| l.trim().strip_prefix("expr:"))
            .map(|e| e.trim().to_string()),
    );
    exprs
}

/// The series a scrape names (`# TYPE name kind`), with a histogram's
/// `_bucket`, `_sum` and `_count`.
fn exported(admin: &str) -> BTreeSet<String> {
    let text = metrics_text(admin);
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = rest.split(' ');
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        names.insert(name.to_string());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                names.insert(format!("{name}{suffix}"));
            }
        }
    }
    names
}

fn container_config(dir: &std::path::Path, db: &str) -> String {
    let path = dir.join("containers.toml");
    std::fs::write(
        &path,
        format!(
            "[[memcached.containers]]\nname = \"default\"\ndb_schema = \"{db}\"\n\
             db_table = \"kv\"\nkey_columns = \"k\"\nvalue_columns = \"v\"\n"
        ),
    )
    .expect("config");
    path.display().to_string()
}

fn free_address() -> String {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .to_string()
}

#[test]
fn dashboard_and_alerts_name_only_exported_series() {
    let exprs = expressions();
    assert!(exprs.len() >= 20, "{} expressions", exprs.len());
    let wanted: BTreeSet<String> = exprs.iter().flat_map(|e| series_in(e)).collect();
    assert!(wanted.contains("hsd_backend_up"), "{wanted:?}");

    let dir = tempfile::tempdir().expect("tempdir");
    let config = container_config(dir.path(), "hst_monitoring");
    let (admin, memcached) = (free_address(), free_address());
    let embedded = TestServer::start(
        Backend::Sqlite,
        "hst_monitoring",
        &[
            "--admin-address",
            &admin,
            "--config",
            &config,
            "--memcached-address",
            &memcached,
            "--memcached-sasl-user",
            "app",
            "--memcached-sasl-password",
            "app-password",
        ],
    )
    .expect("the embedded store");
    let mut have = exported(&admin);
    drop(embedded);
    // The row cache's series, on MariaDB (None outside CI without it: the
    // check below then fails on them, which is what a skip must not hide).
    let admin = free_address();
    if let Some(mariadb) = TestServer::start(
        Backend::Mysql,
        "hst_monitoring",
        &["--admin-address", &admin, "--row-cache-mib", "8"],
    ) {
        have.extend(exported(&admin));
        drop(mariadb);
    }
    let missing: Vec<&String> = wanted.iter().filter(|n| !have.contains(*n)).collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    for name in &wanted {
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|b| have.contains(*b)))
            .unwrap_or(name);
        assert!(
            DOCS.contains(&format!("`{base}")),
            "docs/operations.md does not list {base}"
        );
    }
}

#[test]
fn series_names_are_read_from_expressions() {
    assert_eq!(
        series_in("rate(hsd_requests_total{result!=\"ok\"}[5m]) / process_max_fds"),
        ["hsd_requests_total", "process_max_fds"]
    );
    assert_eq!(series_in("my_hsd_x + hsd_y"), ["hsd_y"]);
}
