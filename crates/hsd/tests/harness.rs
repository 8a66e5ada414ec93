//! Checks of the test harness itself (tests/common): a local run without
//! the servers says at its end which halves it skipped, and the launcher
//! reads every address from hsd's ready line.

mod common;

use std::process::Command;

/// A probe for `a_local_run_says_at_its_end_which_halves_were_skipped`,
/// which runs it in a child process with no server given; run any other
/// way it does nothing.
#[test]
fn probe_every_half_without_its_server() {
    if std::env::var_os("HSD_SKIPS_PROBE").is_none() {
        return;
    }
    assert!(common::mysql_url().is_none());
    assert!(common::mysql8_url().is_none());
    assert!(common::original_ports().is_none());
    // Asked twice, said once.
    assert!(common::mysql_url().is_none());
}

#[test]
fn a_local_run_says_at_its_end_which_halves_were_skipped() {
    let exe = std::env::current_exe().expect("this test binary");
    let out = Command::new(exe)
        .args(["probe_every_half_without_its_server", "--exact"])
        .env("HSD_SKIPS_PROBE", "1")
        .env_remove("CI")
        .env_remove("HSD_TEST_MYSQL_URL")
        .env_remove("HSD_TEST_MYSQL8_URL")
        .env_remove("HSD_HS_ORIGINAL_PORT")
        .env_remove("HSD_HS_ORIGINAL_PORT_WR")
        .output()
        .expect("run the probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    let test = "probe_every_half_without_its_server";
    for half in [
        "MariaDB (HSD_TEST_MYSQL_URL)",
        "MySQL 8 (HSD_TEST_MYSQL8_URL)",
        "original plugin (HSD_HS_ORIGINAL_PORT[_WR])",
    ] {
        assert!(
            stderr.contains(&format!("  1 x {half}: {test}\n")),
            "{half}: {stderr}"
        );
    }
    assert!(stderr.contains("harness: SKIPPED"), "{stderr}");
    assert!(
        stderr.contains("this cargo run so far: 3 skipped halves in 1 test binaries (harness)"),
        "{stderr}"
    );
}

#[test]
fn the_summary_names_each_half_and_its_tests() {
    use common::skips::{summary, Half};
    let mine = vec![
        (Half::Plugin, "b".to_string()),
        (Half::Mariadb, "z".to_string()),
        (Half::Plugin, "a".to_string()),
    ];
    let run = "conformance\tPlugin\ta\nprotocol\tMariadb\tq\nconformance\tPlugin\tb\n";
    let s = summary(&mine, Some(run));
    assert!(
        s.contains("SKIPPED (passed without running; no server given) 3 test halves"),
        "{s}"
    );
    assert!(s.contains("  1 x MariaDB (HSD_TEST_MYSQL_URL): z\n"), "{s}");
    assert!(
        s.contains("  2 x original plugin (HSD_HS_ORIGINAL_PORT[_WR]): a, b\n"),
        "{s}"
    );
    assert!(
        s.contains("3 skipped halves in 2 test binaries (conformance, protocol)"),
        "{s}"
    );
}

/// The launcher takes the read, write and admin addresses and the backend
/// from the ready line, and they are the ones hsd serves.
#[test]
fn the_launcher_reads_every_address_from_the_ready_line() {
    let data = tempfile::tempdir().expect("tempdir");
    let data = data.path().display().to_string();
    let hsd = common::spawn_hsd(&["--data-dir", &data, "--admin-address", "127.0.0.1:0"]);
    assert_eq!(hsd.ready.read, hsd.read);
    assert!(hsd.ready.backend.contains(&data), "{:?}", hsd.ready);
    let admin = hsd.admin.clone().expect("admin address");
    for addr in [&hsd.read, &hsd.write] {
        let mut c = hs_client::blocking::Connection::connect(addr).expect("connect");
        assert_eq!(c.request(b"A\t1").expect("answer"), b"0\t1", "{addr}");
    }
    let mut admin = std::net::TcpStream::connect(&admin).expect("admin port");
    use std::io::{Read, Write};
    admin
        .write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
        .expect("ask the admin port");
    let mut text = String::new();
    admin.read_to_string(&mut text).expect("metrics");
    assert!(text.starts_with("HTTP/1."), "{text}");
}
