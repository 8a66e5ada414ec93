//! SASL on the memcached port (`--memcached-sasl-user`) against Debian's
//! memcached started with `-S` (Cyrus SASL, PLAIN from a sasldb made with
//! `saslpasswd2`, from sasl2-bin): the same request sequences, from a fresh
//! connection each, must get the same answers byte for byte (cas numbers
//! and the version string aside), up to the connection's close. Then what
//! memcached does not show: the row an authenticated client stored is in
//! the table, text is closed at once, and the auth timeout.

mod common;
mod memcached;

use memcached::{binary_request as req, Front, Store};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const USER: &str = "alice";
const PASSWORD: &str = "s3cret-pw";

/// memcached -S with one PLAIN login, killed when dropped.
struct SaslReference {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl SaslReference {
    fn start() -> SaslReference {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("sasldb");
        let mut tool = Command::new("/usr/sbin/saslpasswd2")
            .args(["-p", "-a", "memcached", "-c", "-f"])
            .arg(&db)
            .arg(USER)
            .stdin(Stdio::piped())
            .spawn()
            .expect("saslpasswd2 (Debian's sasl2-bin: scripts/deps.sh installs it)");
        tool.stdin
            .take()
            .expect("stdin")
            .write_all(PASSWORD.as_bytes())
            .expect("password to saslpasswd2");
        assert!(tool.wait().expect("saslpasswd2").success());
        std::fs::write(
            dir.path().join("memcached.conf"),
            format!("mech_list: plain\nsasldb_path: {}\n", db.display()),
        )
        .expect("memcached.conf");
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .expect("probe port")
            .port();
        let child = Command::new("/usr/bin/memcached")
            .args(["-S", "-U", "0", "-l", "127.0.0.1", "-u", "root", "-p"])
            .arg(port.to_string())
            .env("SASL_CONF_PATH", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start memcached -S");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            assert!(Instant::now() < deadline, "memcached -S did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        SaslReference {
            child,
            addr: format!("127.0.0.1:{port}"),
            _dir: dir,
        }
    }
}

impl Drop for SaslReference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// hsd on the embedded store with the same login.
fn start_front(db: &str, extra: &[&str]) -> (Front, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("password");
    std::fs::write(&file, format!("{PASSWORD}\n")).expect("password file");
    let file = file.display().to_string();
    let mut args = vec![
        "--memcached-sasl-user",
        USER,
        "--memcached-sasl-password-file",
        &file,
    ];
    args.extend_from_slice(extra);
    let front = Front::start_with(Store::Sqlite, db, &args).expect("the embedded store");
    (front, dir)
}

/// Sends `bytes` on a new connection and reads until the server closes it
/// (None if it is still open after 3 s).
fn until_closed(addr: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .expect("timeout");
    // A server that closes early may refuse the rest: what it answered
    // before counts.
    let _ = stream.write_all(bytes);
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(answer),
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(answer),
            Err(_) => return None,
        }
    }
}

/// The responses in `bytes`, each with its cas field zeroed and a
/// Version's body replaced by `V` (the versions differ).
fn responses(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 24 {
        let body = u32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]) as usize;
        let len = (24 + body).min(rest.len());
        let mut response = rest[..len].to_vec();
        response[16..24].fill(0);
        if response[1] == 0x0b && response[7] == 0 {
            response.truncate(24);
            response[8..12].copy_from_slice(&1u32.to_be_bytes());
            response.push(b'V');
        }
        out.push(response);
        rest = &rest[len..];
    }
    if !rest.is_empty() {
        out.push(rest.to_vec());
    }
    out
}

fn plain(message: &str) -> Vec<u8> {
    req(0x21, b"PLAIN", b"", message.as_bytes(), 0)
}

fn step(message: &str) -> Vec<u8> {
    req(0x22, b"PLAIN", b"", message.as_bytes(), 0)
}

fn good() -> Vec<u8> {
    plain(&format!("\0{USER}\0{PASSWORD}"))
}

fn noop() -> Vec<u8> {
    req(0x0a, b"", b"", b"", 0)
}

fn quit() -> Vec<u8> {
    req(0x07, b"", b"", b"", 0)
}

/// Sequences of requests, each ending where the server closes.
fn sequences() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let set = req(0x01, b"sk", &[0, 0, 0, 9, 0, 0, 0, 0], b"sasl-value", 0);
    let get = req(0x00, b"sk", b"", b"", 0);
    vec![
        (
            "list mechanisms, then noop",
            vec![req(0x20, b"", b"", b"", 0), noop()],
        ),
        (
            "version is allowed before auth",
            vec![req(0x0b, b"", b"", b"", 0), noop()],
        ),
        ("get before auth", vec![get.clone(), noop()]),
        (
            "quiet get before auth",
            vec![req(0x09, b"sk", b"", b"", 0), noop()],
        ),
        ("quit before auth", vec![quit()]),
        ("stat before auth", vec![req(0x10, b"", b"", b"", 0)]),
        (
            "unknown opcode before auth",
            vec![req(0x55, b"", b"", b"", 0), noop()],
        ),
        (
            "a 300-byte key before auth",
            vec![req(0x00, &[b'k'; 300], b"", b"", 0)],
        ),
        ("a store before auth", vec![set.clone(), get.clone()]),
        (
            "auth, store, get",
            vec![good(), set.clone(), get.clone(), quit()],
        ),
        (
            "wrong password, then right",
            vec![plain(&format!("\0{USER}\0nope")), good(), noop(), quit()],
        ),
        (
            "wrong password, then noop",
            vec![plain(&format!("\0{USER}\0nope")), noop()],
        ),
        (
            "unknown mechanism",
            vec![req(0x21, b"CRAM-MD5", b"", b"x", 0), noop()],
        ),
        (
            "mechanism in lower case",
            vec![
                req(
                    0x21,
                    b"plain",
                    b"",
                    format!("\0{USER}\0{PASSWORD}").as_bytes(),
                    0,
                ),
                noop(),
                quit(),
            ],
        ),
        (
            "authzid of the user itself",
            vec![
                plain(&format!("{USER}\0{USER}\0{PASSWORD}")),
                noop(),
                quit(),
            ],
        ),
        (
            "authzid of another",
            vec![plain(&format!("bob\0{USER}\0{PASSWORD}")), noop()],
        ),
        ("no NUL", vec![plain(USER), noop()]),
        (
            "a NUL too many",
            vec![plain(&format!("\0{USER}\0{PASSWORD}\0")), noop()],
        ),
        (
            "empty auth, then step",
            vec![
                plain(""),
                step(&format!("\0{USER}\0{PASSWORD}")),
                noop(),
                quit(),
            ],
        ),
        (
            "empty auth, wrong step",
            vec![plain(""), step("\0alice\0no"), noop()],
        ),
        (
            "step without auth",
            vec![step(&format!("\0{USER}\0{PASSWORD}")), noop()],
        ),
        (
            "a failed second auth forgets the first",
            vec![good(), plain("\0bob\0x"), noop()],
        ),
        (
            "auth with extras",
            vec![req(0x21, b"PLAIN", b"abcd", b"\0a\0b", 0)],
        ),
        (
            "auth without a mechanism",
            vec![req(0x21, b"", b"", b"\0a\0b", 0)],
        ),
        (
            "list mechanisms with a body",
            vec![req(0x20, b"", b"", b"xx", 0)],
        ),
        (
            "unknown opcode after auth",
            vec![good(), req(0x55, b"", b"", b"", 0), noop(), quit()],
        ),
        (
            "text of a header's length",
            vec![b"get some-key other-key third-key\r\n".to_vec()],
        ),
    ]
}

#[test]
fn sasl_answers_as_memcached_s() {
    let reference = SaslReference::start();
    let (front, _dir) = start_front("hst_mc_sasl", &[]);
    let ours_addr = front.server.memcached_addr.clone().expect("memcached port");
    for (what, requests) in sequences() {
        let bytes = requests.concat();
        let theirs = until_closed(&reference.addr, &bytes)
            .unwrap_or_else(|| panic!("{what}: memcached -S kept the connection open"));
        let ours = until_closed(&ours_addr, &bytes)
            .unwrap_or_else(|| panic!("{what}: hsd kept the connection open"));
        assert!(
            !theirs.is_empty() || what.starts_with("text"),
            "{what}: memcached answered nothing"
        );
        assert_eq!(responses(&ours), responses(&theirs), "{what}");
    }
    // The row stored after authenticating is the table's.
    let rows = front
        .server
        .sql("SELECT c2, c3 FROM demo_test WHERE c1 = 'sk'");
    assert_eq!(
        rows,
        vec![vec![Some("sasl-value".to_string()), Some("9".to_string())]]
    );
}

#[test]
fn text_is_closed_at_once_and_slow_logins_time_out() {
    let (front, _dir) = start_front("hst_mc_sasl_timeout", &["--auth-timeout", "1"]);
    let addr = front.server.memcached_addr.clone().expect("memcached port");
    // memcached -S waits for 24 bytes before it closes; hsd closes at the
    // first byte that is not a binary request's.
    let started = Instant::now();
    assert_eq!(until_closed(&addr, b"get k\r\n"), Some(Vec::new()));
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    // A binary client that does not authenticate is closed after
    // --auth-timeout, Version or not.
    let started = Instant::now();
    let answer = until_closed(&addr, &req(0x0b, b"", b"", b"", 0)).expect("closed");
    assert_eq!(responses(&answer).len(), 1, "the version was answered");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(3),
        "closed after {waited:?}"
    );
    // Eight failures close the connection (memcached lets a client guess on).
    let wrong = plain(&format!("\0{USER}\0wrong"));
    let answer = until_closed(&addr, &wrong.repeat(10)).expect("closed");
    let answers = responses(&answer);
    assert_eq!(answers.len(), 8, "eight answers, then closed");
    assert!(answers
        .iter()
        .all(|r| r[7] == 0x20 && r.ends_with(b"Auth failure.")));
    // An authenticated client is not timed out.
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream.write_all(&good()).expect("auth");
    std::thread::sleep(Duration::from_millis(1500));
    stream.write_all(&noop()).expect("noop");
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .expect("timeout");
    let mut got = vec![0u8; 24 + 13 + 24];
    stream.read_exact(&mut got).expect("auth and noop answered");
    assert_eq!(&got[24..37], b"Authenticated");
    assert_eq!((got[37 + 1], got[37 + 7]), (0x0a, 0));
}

#[test]
fn sasl_options_are_checked_at_start() {
    let hsd = env!("CARGO_BIN_EXE_hsd");
    for (args, says) in [
        (
            &[
                "--memcached-address",
                "127.0.0.1:0",
                "--memcached-sasl-user",
                "u",
            ][..],
            "--memcached-sasl-user needs --memcached-sasl-password",
        ),
        (
            &[
                "--memcached-address",
                "127.0.0.1:0",
                "--memcached-sasl-password",
                "p",
            ][..],
            "--memcached-sasl-password needs --memcached-sasl-user",
        ),
        (
            &[
                "--memcached-sasl-user",
                "u",
                "--memcached-sasl-password",
                "p",
            ][..],
            "--memcached-sasl-user needs --memcached-address",
        ),
        (
            &[
                "--memcached-address",
                "127.0.0.1:0",
                "--memcached-sasl-user",
                "u",
                "--memcached-sasl-password",
                "",
            ][..],
            "is empty",
        ),
    ] {
        let out = Command::new(hsd)
            .arg("serve")
            .args(args)
            .env_clear()
            .output()
            .expect("run hsd");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// hsd with SASL on `[::]` (so that 127.0.0.1 and ::1 are two clients),
/// an admin port, and its log in a file.
fn start_logged(dir: &std::path::Path) -> (hs_conformance::launcher::Hsd, std::path::PathBuf) {
    let password = dir.join("password");
    std::fs::write(&password, format!("{PASSWORD}\n")).expect("password file");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let log = dir.join("hsd.log");
    let hsd = common::hsd_bin().display().to_string();
    let (password, data) = (password.display().to_string(), data.display().to_string());
    let config = memcached::write_config(dir, "hst_mc_sasl_guard");
    let config = config.display().to_string();
    let args = [
        "-c",
        "exec \"$0\" \"$@\" 2>\"$HSD_LOG\"",
        &hsd,
        "serve",
        "--port",
        "0",
        "--port-wr",
        "0",
        "--data-dir",
        &data,
        "--admin-address",
        "127.0.0.1:0",
        "--memcached-address",
        "[::]:0",
        "--config",
        &config,
        "--memcached-sasl-user",
        USER,
        "--memcached-sasl-password-file",
        &password,
    ];
    let log_text = log.display().to_string();
    let running = hs_conformance::launcher::start(
        std::path::Path::new("/bin/sh"),
        &args,
        &[("HSD_LOG", &log_text)],
    )
    .expect("hsd with SASL");
    (running, log)
}

/// Failed logins across connections: counted in a metric, logged with the
/// client's address at most once a second, and after ten from one address
/// within a minute that address is refused (the right password too, the
/// connection closed) while another address still logs in.
#[test]
fn repeated_failures_from_one_address_are_logged_counted_and_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (hsd, log) = start_logged(dir.path());
    let port = hsd
        .ready
        .memcached
        .as_deref()
        .and_then(|a| a.rsplit(':').next())
        .expect("memcached port")
        .to_string();
    let (v4, v6) = (format!("127.0.0.1:{port}"), format!("[::1]:{port}"));
    let admin = hsd.admin.clone().expect("admin address");
    let wrong = plain(&format!("\0{USER}\0wrong"));
    let auth_failure = |answer: &[u8]| {
        let answers = responses(answer);
        answers.len() == 1 && answers[0][7] == 0x20 && answers[0].ends_with(b"Auth failure.")
    };
    // Nine failures, each on a new connection (which stays open).
    for i in 0..9 {
        let mut c = memcached::BinaryConn::open(&v4);
        let answer = c.ask(&wrong);
        assert_eq!(answer.len(), 1, "failure {i}");
        assert_eq!(answer[0][7], 0x20, "failure {i}: Auth error");
    }
    // The tenth is answered and its connection closed; then even the right
    // password is refused from that address, the connection closed.
    let answer = until_closed(&v4, &wrong).expect("closed after the tenth failure");
    assert!(auth_failure(&answer), "{answer:?}");
    let answer = until_closed(&v4, &good()).expect("a refused address is closed");
    assert!(
        auth_failure(&answer),
        "the right password from a refused address: {answer:?}"
    );
    // Another address is not refused.
    let mut other = memcached::BinaryConn::open(&v6);
    let answer = other.ask(&good());
    assert_eq!(answer.len(), 1);
    assert_eq!((answer[0][7], &answer[0][24..]), (0, &b"Authenticated"[..]));
    let failures = common::blocking::metric(&admin, "hsd_memcached_sasl_failures_total");
    let refused = common::blocking::metric(&admin, "hsd_memcached_sasl_refused_total");
    assert_eq!((failures, refused), (10.0, 1.0));
    drop(hsd);
    let text = std::fs::read_to_string(&log).expect("hsd's log");
    let failed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("memcached SASL login failed"))
        .collect();
    // Ten failures in well under ten seconds: not one line each.
    assert!(
        !failed.is_empty() && failed.len() < 10,
        "{} lines for 10 failures",
        failed.len()
    );
    assert!(
        failed.iter().all(|l| l.contains("client=127.0.0.1")),
        "{failed:?}"
    );
    let refused: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("is refused for a while"))
        .collect();
    assert_eq!(refused.len(), 1, "{text}");
    assert!(refused[0].contains("client=127.0.0.1"), "{}", refused[0]);
}
