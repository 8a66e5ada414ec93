//! `hsd check`: reads the settings as `hsd serve` does and prints one line
//! per finding, exit 0 when all are fine and 1 on any warning or error;
//! `hsd serve` refuses to start on the same errors with the same words and
//! logs the same warnings. On the embedded store and, with
//! HSD_TEST_MYSQL_URL, on MariaDB: the login, the account's privileges and
//! the commit marker table.

mod common;

use common::{hsd_bin, run_hsd};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

/// What `hsd check` printed and how it exited.
struct Checked {
    code: Option<i32>,
    lines: Vec<String>,
    stderr: String,
}

impl Checked {
    /// The first line starting with `prefix`.
    #[track_caller]
    fn line(&self, prefix: &str) -> &str {
        self.lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in {:#?}", self.lines))
    }
}

fn check(args: &[&str]) -> Checked {
    let out = Command::new(hsd_bin())
        .arg("check")
        .args(args)
        .env_remove("HSD_CONFIG")
        .output()
        .expect("run hsd check");
    Checked {
        code: out.status.code(),
        lines: String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Two ports free now.
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// A config file in `dir`: free ports, a data dir of its own, `extra`.
fn config(dir: &Path, extra: &str) -> String {
    let (port, port_wr) = free_ports();
    let path = dir.join("hsd.toml");
    std::fs::write(
        &path,
        format!(
            "port = {port}\nport-wr = {port_wr}\ndata-dir = \"{}\"\n{extra}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    // Readable by its owner only, as a file that may hold a password
    // should be (one every user may read is a warning of its own).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_str().unwrap().to_string()
}

/// `hsd check --config FILE` exits 1 with an `error:` line starting with
/// `want`; `hsd serve --config FILE` exits 1 with `hsd: ` and that line.
#[track_caller]
fn refused_alike(config: &str, want: &str) {
    let checked = check(&["--config", config]);
    assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
    let finding = checked
        .line(&format!("error: {want}"))
        .strip_prefix("error: ")
        .unwrap()
        .to_string();
    let served = run_hsd(&["serve", "--config", config], &[]);
    assert_eq!(served.code, Some(1), "serve: {}", served.stderr);
    let lines: Vec<&str> = served.stderr.lines().collect();
    assert_eq!(
        lines,
        [format!("hsd: {finding}")],
        "serve must refuse with the words of check"
    );
}

#[test]
fn a_good_config_is_all_ok_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "");
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let checked = check(&["--config", &config]);
    assert_eq!(
        checked.code,
        Some(0),
        "{:#?} {}",
        checked.lines,
        checked.stderr
    );
    assert!(checked
        .line("ok: settings read: backend sqlite")
        .contains("read port 127.0.0.1:"));
    checked.line(&format!(
        "ok: data directory {} is writable",
        dir.path().join("data").display()
    ));
    assert!(checked
        .line("ok: read port (--port) 127.0.0.1:")
        .ends_with(" is free"));
    assert!(checked
        .line("ok: write port (--port-wr) 127.0.0.1:")
        .ends_with(" is free"));
    for line in &checked.lines {
        assert!(
            line.starts_with("ok: ") || line.starts_with("note: checked as root"),
            "only ok lines (and the note for root) expected: {line}"
        );
    }
    assert!(checked.stderr.is_empty(), "no logs: {}", checked.stderr);
}

#[test]
fn a_port_in_use_is_refused_by_check_and_serve_alike() {
    let dir = tempfile::tempdir().unwrap();
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let config = config(dir.path(), "");
    // The file's read port replaced by the one held.
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text
        .lines()
        .map(|l| {
            if l.starts_with("port = ") {
                format!("port = {port}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&config, text).unwrap();
    refused_alike(
        &config,
        &format!(
            "cannot listen on 127.0.0.1:{port} for the read port (--port) (Address already in use"
        ),
    );
}

#[test]
fn the_same_port_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (port, _) = free_ports();
    let config = config(dir.path(), &format!("admin-address = \"127.0.0.1:{port}\""));
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replacen(
        &text
            .lines()
            .find(|l| l.starts_with("port = "))
            .unwrap()
            .to_string(),
        &format!("port = {port}"),
        1,
    );
    std::fs::write(&config, text).unwrap();
    refused_alike(
        &config,
        &format!("the admin endpoint (--admin-address) and the read port (--port) are both port {port}: give each its own"),
    );
}

#[test]
fn a_data_dir_that_cannot_be_made_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Under a regular file: refused whoever runs the test, root included.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let config = config(dir.path(), "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("data-dir"))
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    std::fs::write(
        &config,
        format!("{text}data-dir = \"{}\"\n", file.join("data").display()),
    )
    .unwrap();
    refused_alike(
        &config,
        &format!(
            "cannot create data directory {} (",
            file.join("data").display()
        ),
    );
}

/// `check` changes nothing on disk: a missing data directory is reported
/// as one `serve` would make, and is still missing afterwards (before,
/// `check` made it).
#[test]
fn check_makes_no_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "");
    let data = dir.path().join("data");
    assert!(!data.exists());
    let checked = check(&["--config", &config]);
    assert_eq!(checked.code, Some(0), "{:#?}", checked.lines);
    checked.line(&format!(
        "ok: data directory {} does not exist yet: hsd serve would create it",
        data.display()
    ));
    assert!(!data.exists(), "hsd check made {}", data.display());
}

#[test]
fn tls_files_that_are_not_pem_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, "not a certificate\n").unwrap();
    std::fs::write(&key, "not a key\n").unwrap();
    let config = config(
        dir.path(),
        &format!(
            "tls-cert = \"{}\"\ntls-key = \"{}\"",
            cert.display(),
            key.display()
        ),
    );
    refused_alike(
        &config,
        &format!("--tls-cert {} holds no PEM certificate", cert.display()),
    );
}

#[test]
fn good_tls_files_are_reported_ok() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    let config = config(
        dir.path(),
        &format!(
            "tls-cert = \"{}\"\ntls-key = \"{}\"",
            cert_path.display(),
            key_path.display()
        ),
    );
    let checked = check(&["--config", &config]);
    assert_eq!(checked.code, Some(0), "{:#?}", checked.lines);
    checked.line(&format!(
        "ok: TLS certificate {} and key {} load and make a pair",
        cert_path.display(),
        key_path.display()
    ));
}

#[test]
fn an_unknown_key_is_one_line_for_check_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "prot = 1");
    let checked = check(&["--config", &config]);
    assert_eq!(checked.lines.len(), 1, "{:#?}", checked.lines);
    refused_alike(
        &config,
        &format!("unknown key \"prot\" in {config} line 4; did you mean \"port\"?"),
    );
}

#[test]
fn an_empty_secret_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "\n").unwrap();
    let config = config(
        dir.path(),
        &format!("plain-secret-file = \"{}\"", secret.display()),
    );
    refused_alike(
        &config,
        &format!("--plain-secret-file {} is empty", secret.display()),
    );
}

/// A secret every user may read is a warning naming the file and the fix:
/// a secret file, and the config file when it holds a secret itself; the
/// same files readable by their owner only give none.
#[test]
fn secrets_every_user_may_read_are_warned_of() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "s3cret-s3cret\n").unwrap();
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    mode(&secret, 0o644);
    let config = config(
        dir.path(),
        &format!(
            "plain-secret-file = \"{}\"\nplain-secret-wr = \"other-s3cret\"",
            secret.display()
        ),
    );
    mode(Path::new(&config), 0o644);
    let checked = check(&["--config", &config]);
    assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
    checked.line(&format!(
        "warning: {} (--plain-secret-file) holds a secret and every user may read it (mode 0644): chmod o-rwx",
        secret.display()
    ));
    checked.line(&format!(
        "warning: {config} (--config) holds a secret and every user may read it"
    ));
    mode(&secret, 0o600);
    mode(Path::new(&config), 0o640);
    let checked = check(&["--config", &config]);
    assert!(
        !checked
            .lines
            .iter()
            .any(|l| l.contains("every user may read")),
        "{:#?}",
        checked.lines
    );
    assert_eq!(checked.code, Some(0), "{:#?}", checked.lines);
}

/// A warning: `check` exits 1, `serve` starts and logs the same words.
#[test]
fn one_port_without_a_secret_is_a_warning_for_both() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "plain-secret = \"s3cret-s3cret\"");
    let checked = check(&["--config", &config]);
    assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
    let warning = checked
        .line("warning: only the read port has a secret")
        .strip_prefix("warning: ")
        .unwrap()
        .to_string();
    let served = run_hsd(&["serve", "--config", &config], &[]);
    assert!(served.ready.is_some(), "serve starts: {}", served.stderr);
    assert!(
        served.stderr.contains(&warning),
        "serve logs {warning:?}: {}",
        served.stderr
    );
}

#[test]
fn version_names_the_commit() {
    let out = Command::new(hsd_bin()).arg("--version").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let commit = text
        .trim()
        .strip_prefix(&format!("hsd {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("hsd --version: {text:?}"));
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{commit:?}"
    );
}

mod mysql {
    use super::*;
    use common::blocking::{exec, sql_conn};

    /// The MariaDB of HSD_TEST_MYSQL_URL with the test's account: logged
    /// in, may write, the commit marker table usable; exit 0.
    #[test]
    fn a_good_account_is_all_ok() {
        let Some(url) = common::mysql_url() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), &format!("backend = \"{url}\""));
        let checked = check(&["--config", &config]);
        assert_eq!(checked.code, Some(0), "{:#?}", checked.lines);
        let shown = url.replacen(":hsd@", ":***@", 1);
        checked.line(&format!("ok: --backend {shown}: logged in"));
        checked.line(&format!(
            "ok: {shown}: the account may write (INSERT, UPDATE, DELETE)"
        ));
        checked.line(&format!(
            "ok: {shown}: the commit marker table `hsd`.`commit_marker` is usable"
        ));
        assert!(
            !checked.lines.iter().any(|l| l.contains(":hsd@")),
            "password shown"
        );
    }

    /// An account that may only read: a warning for writes and one for
    /// the commit marker table, in the connector's words.
    #[test]
    fn a_read_only_account_is_warned_about_writes_and_the_marker() {
        let Some(url) = common::mysql_url() else {
            return;
        };
        let mut sql = sql_conn(&url);
        exec(&mut sql, "DROP USER IF EXISTS 'hsd_reader'@'127.0.0.1'");
        exec(
            &mut sql,
            "CREATE USER 'hsd_reader'@'127.0.0.1' IDENTIFIED BY 'reader'",
        );
        exec(
            &mut sql,
            "GRANT SELECT ON hsdtest.* TO 'hsd_reader'@'127.0.0.1'",
        );
        let reader_url = url.replacen("hsd:hsd@", "hsd_reader:reader@", 1);
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), &format!("backend = \"{reader_url}\""));
        let checked = check(&["--config", &config]);
        exec(&mut sql, "DROP USER 'hsd_reader'@'127.0.0.1'");
        assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
        let shown = reader_url.replacen(":reader@", ":***@", 1);
        checked.line(&format!(
            "warning: {shown}: the account holds no INSERT or UPDATE or DELETE privilege on any table"
        ));
        checked.line("warning: cannot use the commit marker table `hsd`.`commit_marker` (");
    }

    /// A marker table hsd did not make and whose rows cannot be trusted
    /// (MyISAM): warned about in the words `serve` refuses writes with.
    #[test]
    fn an_untrusted_marker_table_is_warned_about() {
        let Some(url) = common::mysql_url() else {
            return;
        };
        let mut sql = sql_conn(&url);
        exec(&mut sql, "CREATE DATABASE IF NOT EXISTS hsdt_check_marker");
        exec(&mut sql, "DROP TABLE IF EXISTS hsdt_check_marker.m");
        exec(
            &mut sql,
            "CREATE TABLE hsdt_check_marker.m (writer BIGINT UNSIGNED NOT NULL PRIMARY KEY, \
             seq BIGINT UNSIGNED NOT NULL, at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) \
             ENGINE=MyISAM",
        );
        let sep = if url.contains('?') { '&' } else { '?' };
        let marked = format!("{url}{sep}commit-marker=hsdt_check_marker.m");
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), &format!("backend = \"{marked}\""));
        let checked = check(&["--config", &config]);
        assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
        let line = checked
            .line("warning: writes refused: the commit marker table `hsdt_check_marker`.`m`");
        assert!(line.contains("InnoDB"), "{line}");
    }

    /// A wrong password: an error in the words `serve` refuses with.
    #[test]
    fn a_refused_login_is_refused_by_check_and_serve_alike() {
        let Some(url) = common::mysql_url() else {
            return;
        };
        let wrong = url.replacen("hsd:hsd@", "hsd:wrong-password@", 1);
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), &format!("backend = \"{wrong}\""));
        refused_alike(&config, "cannot use mysql://hsd:***@");
    }

    /// Nothing listens: a warning (serve starts anyway), exit 1.
    #[test]
    fn an_unreachable_server_is_a_warning() {
        let (port, _) = free_ports();
        let dir = tempfile::tempdir().unwrap();
        let config = config(
            dir.path(),
            &format!("backend = \"mysql://hsd:hsd@127.0.0.1:{port}\""),
        );
        let checked = check(&["--config", &config]);
        assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
        checked.line(&format!(
            "warning: cannot reach the MySQL server at 127.0.0.1:{port} ("
        ));
    }
}

mod replicas {
    use super::*;

    /// The GTID primary and replicas of scripts/replication.sh (test.sh
    /// starts them before the suites): the primary takes the writes, both
    /// replicas may serve reads; exit 0. In CI their absence is a failure.
    #[test]
    fn a_primary_and_its_replicas_are_seen_in_their_roles() {
        let (Ok(primary), Ok(replicas)) = (
            std::env::var("HSD_REPL_PRIMARY_URL"),
            std::env::var("HSD_REPL_REPLICA_URLS"),
        ) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "HSD_REPL_PRIMARY_URL/HSD_REPL_REPLICA_URLS not set: CI must run this (scripts/test.sh sets them)"
            );
            eprintln!("HSD_REPL_PRIMARY_URL not set: skipping (scripts/replication.sh start, then its env)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let replica_list = replicas
            .split(',')
            .map(|u| format!("\"{u}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let config = config(
            dir.path(),
            &format!("backend = \"{primary}\"\nreplica = [{replica_list}]"),
        );
        let checked = check(&["--config", &config]);
        assert_eq!(checked.code, Some(0), "{:#?}", checked.lines);
        let endpoint = |url: &str| url.rsplit('@').next().unwrap().to_string();
        checked.line(&format!(
            "ok: {}: takes the writes (read_only = OFF)",
            endpoint(&primary)
        ));
        for replica in replicas.split(',') {
            checked.line(&format!(
                "ok: {}: a replica hsd may read from",
                endpoint(replica)
            ));
        }
    }

    /// The same MariaDB configured twice: one server, used once under its
    /// first name; the second is warned about (and writes go on).
    #[test]
    fn one_server_configured_twice_is_warned_about() {
        let Some(url) = common::mysql_url() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let config = config(
            dir.path(),
            &format!("backend = \"{url}\"\nreplica = [\"{url}\"]"),
        );
        let checked = check(&["--config", &config]);
        assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
        assert!(
            checked
                .lines
                .iter()
                .any(|l| l.starts_with("ok: ")
                    && l.ends_with(": takes the writes (read_only = OFF)")),
            "{:#?}",
            checked.lines
        );
        assert!(
            checked
                .lines
                .iter()
                .any(|l| l.starts_with("warning: ") && l.contains("not used: the same server as")),
            "{:#?}",
            checked.lines
        );
    }
}

/// With `--memcached-address`, `hsd check` reads the containers as `hsd
/// serve` does: none anywhere is refused by both in the same words; a
/// container over a table that exists is reported ok, with its name.
#[test]
fn memcached_containers_are_read_by_check_as_by_serve() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let (mc_port, _) = free_ports();
    let door = format!("memcached-address = \"127.0.0.1:{mc_port}\"");
    let none = config(dir.path(), &door);
    refused_alike(
        &none,
        "--memcached-address: no containers in the config file and",
    );

    let made = run_hsd(
        &[
            "sql",
            "--data-dir",
            dir.path().join("data").to_str().unwrap(),
            "test",
            "CREATE TABLE demo_test (c1 TEXT PRIMARY KEY, c2 TEXT, c3 INTEGER, c4 INTEGER, c5 INTEGER)",
        ],
        &[],
    );
    assert_eq!(made.code, Some(0), "{}", made.stderr);
    let one = config(
        dir.path(),
        &format!(
            "{door}\n[[memcached.containers]]\nname = \"kv\"\ndb_schema = \"test\"\n\
             db_table = \"demo_test\"\nkey_columns = \"c1\"\nvalue_columns = \"c2\"\n\
             flags = \"c3\"\ncas_column = \"c4\"\nexpire_time_column = \"c5\"\n"
        ),
    );
    let checked = check(&["--config", &one]);
    assert_eq!(checked.code, Some(0), "{:#?}", checked.lines);
    checked.line("ok: --memcached-address: 1 container read (kv), the default kv");
    assert!(checked
        .line("ok: memcached port (--memcached-address) 127.0.0.1:")
        .ends_with(" is free"));
    // A key column the table lacks: refused alike.
    let wrong = config(
        dir.path(),
        &format!(
            "{door}\n[[memcached.containers]]\nname = \"kv\"\ndb_schema = \"test\"\n\
             db_table = \"demo_test\"\nkey_columns = \"nope\"\nvalue_columns = \"c2\"\n"
        ),
    );
    let checked = check(&["--config", &wrong]);
    assert_eq!(checked.code, Some(1), "{:#?}", checked.lines);
    let error = checked
        .lines
        .iter()
        .find(|l| l.starts_with("error: "))
        .expect("an error line")
        .clone();
    let served = run_hsd(&["serve", "--config", &wrong], &[]);
    assert_eq!(served.code, Some(1), "serve: {}", served.stderr);
    assert_eq!(
        served.stderr.lines().collect::<Vec<_>>(),
        [format!("hsd: {}", error.trim_start_matches("error: "))],
        "serve must refuse with the words of check"
    );
}

/// Every refusal of a setting's value, table-driven: `hsd check` exits 1
/// with one `error:` line naming the setting (not as an unknown key), and
/// `hsd serve` exits 1 with that very line.
#[test]
fn each_refused_value_is_said_alike_by_check_and_serve() {
    let cases: &[(&str, &str)] = &[
        ("port = 70000", "port"),
        ("port = \"nine\"", "port"),
        ("threads = -1", "threads"),
        ("max-line-size = \"12 parsecs\"", "max-line-size"),
        ("synchronous = \"sometimes\"", "synchronous"),
        ("log-format = \"yaml\"", "log-format"),
        ("log-level = \"loud\"", "log-level"),
        ("read-from = \"anywhere\"", "read-from"),
        ("row-cache-mib = \"lots\"", "row-cache-mib"),
        ("memcached-address = \"no-port\"", "memcached-address"),
        ("admin-address = \"nowhere\"", "admin-address"),
        ("idle-timeout = \"soon\"", "idle-timeout"),
        ("demo = true\nbackend = \"mysql://u@127.0.0.1:1\"", "--demo"),
    ];
    let mut failed = Vec::new();
    for (extra, names) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let config = config(dir.path(), extra);
        let checked = check(&["--config", &config]);
        let errors: Vec<&String> = checked
            .lines
            .iter()
            .filter(|l| l.starts_with("error: "))
            .collect();
        let served = run_hsd(&["serve", "--config", &config], &[]);
        let said = served.stderr.lines().collect::<Vec<_>>();
        // Serve stops at the first error it meets; check may say more
        // (here: a MySQL server it cannot log in to).
        let alike = errors
            .iter()
            .any(|e| e.contains(names) && said == [format!("hsd: {}", &e["error: ".len()..])]);
        let unknown = errors.iter().any(|e| e.contains("unknown key"));
        if !(checked.code == Some(1) && served.code == Some(1) && alike && !unknown) {
            failed.push(format!(
                "{extra:?}: check exit {:?} {:?}; serve exit {:?} {:?}",
                checked.code, checked.lines, served.code, said
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
