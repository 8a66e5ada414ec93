//! The link to the backend over TLS (`ssl-mode`, `ssl-ca`) and over a Unix
//! socket (`socket=`), against MySQL 8 (its own certificates, made at
//! initialize: they name no host) and MariaDB (a test CA and a server
//! certificate naming localhost and 127.0.0.1, from scripts/mariadb.sh).

mod common;
use common::blocking::*;
use common::{run_hsd, spawn_hsd, HsdRun};

/// Starts hsd on `url` until its ready line (or its exit).
fn login(url: &str) -> HsdRun {
    let data = tempfile::tempdir().expect("tempdir");
    run_hsd(
        &[
            "serve",
            "--address",
            "127.0.0.1",
            "--port",
            "0",
            "--port-wr",
            "0",
            "--data-dir",
            data.path().to_str().expect("path"),
            "--backend",
            url,
        ],
        &[],
    )
}

fn assert_link(url: &str, tls: bool) {
    let run = login(url);
    assert!(run.ready.is_some(), "{url}: {}", run.stderr);
    assert!(
        run.stderr.contains(&format!("tls={tls}")),
        "{url}: expected tls={tls}: {}",
        run.stderr
    );
}

fn assert_refused(url: &str, why: &str) {
    let run = login(url);
    assert!(run.ready.is_none(), "{url} was accepted");
    assert!(run.stderr.contains(why), "{url}: {}", run.stderr);
}

/// A find through hsd on `url` answers the row the test wrote by SQL.
fn serves(url: &str, sql_url: &str, db: &str) {
    let mut sql = fresh_db(sql_url, db);
    exec(
        &mut sql,
        "CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR(10))",
    );
    exec(&mut sql, "INSERT INTO t VALUES (1, 'one')");
    let data = tempfile::tempdir().expect("tempdir");
    let data = data.path().display().to_string();
    let mut hsd = spawn_hsd(&["--data-dir", &data, "--backend", url]);
    let mut c = Hs::connect(&hsd.read);
    assert_eq!(c.q(&format!("P|0|{db}|t|PRIMARY|k,v")), "0|1", "{url}");
    assert_eq!(c.q("0|=|1|1"), "0|2|1|one", "{url}");
    let _ = hsd.child.kill();
    let _ = hsd.child.wait();
}

#[test]
fn mysql8_tls_modes_and_socket() {
    let (Some(url), Some(ca)) = (common::mysql8_url(), common::mysql8_ca()) else {
        return;
    };
    let socket = std::env::var("HSD_MYSQL8_SOCKET").expect("HSD_MYSQL8_SOCKET");
    // MySQL 8 offers TLS: PREFERRED (the default) takes it.
    assert_link(&url, true);
    assert_link(&format!("{url}?ssl-mode=PREFERRED"), true);
    assert_link(&format!("{url}?ssl-mode=REQUIRED"), true);
    assert_link(&format!("{url}?ssl-mode=DISABLED"), false);
    assert_link(&format!("{url}?ssl-mode=VERIFY_CA&ssl-ca={ca}"), true);
    // Its certificate names no host: VERIFY_IDENTITY refuses it.
    assert_refused(
        &format!("{url}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
        "not valid for name",
    );
    // Signed by another CA: refused.
    let other = tempfile::tempdir().expect("tempdir");
    let other_ca = other.path().join("ca.pem");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    std::fs::write(&other_ca, cert.cert.pem()).expect("write");
    assert_refused(
        &format!("{url}?ssl-mode=VERIFY_CA&ssl-ca={}", other_ca.display()),
        "TLS handshake with the server failed (ssl-mode=VERIFY_CA)",
    );
    // A CA file that is not one stops hsd at start.
    assert_refused(
        &format!("{url}?ssl-mode=VERIFY_CA&ssl-ca=/nonexistent/ca.pem"),
        "cannot read ssl-ca /nonexistent/ca.pem",
    );
    // An account that requires TLS: refused by the server without it.
    let mut sql = sql_conn(&url);
    exec(&mut sql, "DROP USER IF EXISTS 'hsd_tls'@'127.0.0.1'");
    exec(
        &mut sql,
        "CREATE USER 'hsd_tls'@'127.0.0.1' IDENTIFIED BY 'tls' REQUIRE SSL",
    );
    exec(&mut sql, "GRANT ALL ON *.* TO 'hsd_tls'@'127.0.0.1'");
    let tls_url = url.replacen("hsd:hsd@", "hsd_tls:tls@", 1);
    assert_link(&format!("{tls_url}?ssl-mode=REQUIRED"), true);
    assert_refused(&format!("{tls_url}?ssl-mode=DISABLED"), "hsd_tls");
    exec(&mut sql, "DROP USER 'hsd_tls'@'127.0.0.1'");
    // The Unix socket: local, never TLS.
    let socket_url = format!("mysql://hsd:hsd@localhost/?socket={socket}");
    assert_link(&socket_url, false);
    assert_refused(
        &format!("{socket_url}&ssl-mode=REQUIRED"),
        "a Unix socket is local",
    );
    serves(&socket_url, &url, "hsdt_tls_socket8");
    serves(
        &format!("{url}?ssl-mode=VERIFY_CA&ssl-ca={ca}"),
        &url,
        "hsdt_tls_verify8",
    );
}

#[test]
fn mariadb_tls_modes_and_socket() {
    let Some(shared) = common::mysql_url() else {
        return;
    };
    // The shared instance offers no TLS: PREFERRED is plain, REQUIRED refused.
    assert_link(&shared, false);
    assert_refused(&format!("{shared}?ssl-mode=REQUIRED"), "does not offer TLS");
    // An instance of this test's own, with TLS on.
    let m = common::PrivateMariadb::start_with("mariadb-tls", &[("HSD_MARIADB_TLS", "1")]);
    let url = m.url.clone();
    let ca = m.ca.clone();
    assert_link(&url, true);
    assert_link(&format!("{url}?ssl-mode=REQUIRED"), true);
    assert_link(&format!("{url}?ssl-mode=DISABLED"), false);
    // Its certificate names 127.0.0.1 and localhost: VERIFY_IDENTITY holds.
    assert_link(&format!("{url}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"), true);
    let by_name = url.replacen("127.0.0.1", "localhost", 1);
    assert_link(
        &format!("{by_name}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
        true,
    );
    serves(
        &format!("{url}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
        &url,
        "hsdt_tls_verify_m",
    );
    if let Some(mysql8_ca) = common::mysql8_ca() {
        assert_refused(
            &format!("{url}?ssl-mode=VERIFY_CA&ssl-ca={mysql8_ca}"),
            "TLS handshake with the server failed",
        );
    }
    let socket_url = format!("mysql://hsd:hsd@localhost/?socket={}", m.socket);
    assert_link(&socket_url, false);
    serves(&socket_url, &url, "hsdt_tls_socket_m");
}
