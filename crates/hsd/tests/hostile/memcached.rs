//! The same bounds on the memcached port: both doors share one connection
//! loop (`connection.rs`), so a memcached client meets the budgets, the
//! timeouts, the seats and the shutdown a HandlerSocket client meets.
//! hsd serves a container over `test.kv` on the embedded store.

use crate::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const KV_SQL: &str = "CREATE TABLE kv (k VARCHAR(250) PRIMARY KEY, v BLOB, f INTEGER, \
                      c BIGINT, e INTEGER)";

const CONTAINER: &str = r#"
[[memcached.containers]]
name = "default"
db_schema = "test"
db_table = "kv"
key_columns = "k"
value_columns = "v"
flags = "f"
cas_column = "c"
expire_time_column = "e"
unique_idx_name_on_key = "PRIMARY"
"#;

/// hsd with the memcached port over `test.kv`, and that port's address.
fn start(extra: &[&str]) -> (Hsd, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("hsd.toml");
    std::fs::write(&config, CONTAINER).expect("config");
    let config = config.display().to_string();
    let mut args = vec!["--memcached-address", "127.0.0.1:0", "--config", &config];
    args.extend_from_slice(extra);
    let s = Hsd::start_with_sql(&args, KV_SQL);
    let mc = s.child.ready.memcached.clone().expect("the memcached port");
    // The config file is read at start; the directory may go.
    drop(dir);
    (s, mc)
}

/// One text exchange: sends `request`, reads until the answer ends with `end`.
fn exchange_mc(addr: &str, request: &[u8], end: &[u8]) -> Vec<u8> {
    let mut sock = TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    sock.write_all(request).expect("send");
    let mut answer = Vec::new();
    let mut buf = [0u8; 65536];
    while !answer.ends_with(end) {
        let n = sock.read(&mut buf).expect("read");
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buf[..n]);
    }
    answer
}

/// The memcached port still answers a fresh client.
fn mc_alive(addr: &str, case: &str) {
    let answer = exchange_mc(addr, b"version\r\n", b"\r\n");
    assert!(answer.starts_with(b"VERSION "), "{case}: {answer:?}");
}

/// Stores `value` under `key`.
fn set(addr: &str, key: &str, value: &[u8]) {
    let mut request = format!("set {key} 0 0 {}\r\n", value.len()).into_bytes();
    request.extend_from_slice(value);
    request.extend_from_slice(b"\r\n");
    assert_eq!(exchange_mc(addr, &request, b"\r\n"), b"STORED\r\n");
}

#[test]
fn memcached_pipelined_gets_without_reading_are_bounded() {
    let (mut s, mc) = start(&[]);
    set(&mc, "big", &vec![b'x'; 100_000]);
    let sock = TcpStream::connect(&mc).expect("connect");
    set_sockopt(&sock, libc::SO_RCVBUF, 64 << 10);
    set_sockopt(&sock, libc::SO_SNDBUF, 64 << 10);
    sock.set_write_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    // Each line asks for ~1,000 times its own size.
    let batch = "get big\r\n".repeat(4096).into_bytes();
    let (mut sent, limit) = (0usize, 256usize << 20);
    let mut w = &sock;
    while sent < limit {
        match w.write(&batch) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    eprintln!(
        "hostile: memcached gets never read: hsd stopped reading after {} KiB",
        sent >> 10
    );
    assert!(sent < limit, "hsd kept reading {} MiB", sent >> 20);
    s.wait_idle();
    let hwm = s.status_kb("VmHWM:");
    assert!(hwm <= MAX_HWM_KB, "peak RSS {hwm} kB");
    set_linger_zero(&sock);
    drop(sock);
    mc_alive(&mc, "gets never read");
    s.case_done("memcached gets never read");
}

#[test]
fn memcached_unfinished_requests_share_the_input_budget() {
    // 20 clients each send 8 MiB of one unfinished data block: together
    // past the 32 MiB budget, so some are closed; hsd stays bounded.
    let (mut s, mc) = start(&[
        "--max-input-memory",
        "33554432",
        "--memcached-max-item-size",
        "16777216",
    ]);
    let chunk = vec![b'y'; 1 << 20];
    let mut socks = Vec::new();
    for _ in 0..20 {
        let sock = TcpStream::connect(&mc).expect("connect");
        sock.set_write_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let mut w = &sock;
        if w.write_all(b"set k 0 0 16000000\r\n").is_ok() {
            for _ in 0..8 {
                if w.write_all(&chunk).is_err() {
                    break;
                }
            }
        }
        socks.push(sock);
    }
    std::thread::sleep(Duration::from_millis(500));
    // Closed by hsd: the read ends (or the peer reset it); a client still
    // held reads nothing within the timeout.
    let closed = socks
        .iter()
        .filter(|sock| {
            sock.set_read_timeout(Some(Duration::from_millis(200)))
                .expect("timeout");
            let mut buf = [0u8; 64];
            match (&**sock).read(&mut buf) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            }
        })
        .count();
    s.wait_idle();
    let hwm = s.status_kb("VmHWM:");
    eprintln!(
        "hostile: memcached unfinished blocks: {closed} of 20 refused, VmHWM {} MiB",
        hwm >> 10
    );
    assert!(hwm <= MAX_HWM_KB, "peak RSS {hwm} kB");
    // 32 MiB holds at most four of them.
    assert!(closed >= 10, "{closed} of 20 closed");
    drop(socks);
    mc_alive(&mc, "unfinished blocks");
    s.case_done("memcached unfinished blocks");
}

#[test]
fn memcached_requests_must_end_within_the_line_timeout() {
    let (mut s, mc) = start(&["--line-timeout", "1"]);
    let mut slow = TcpStream::connect(&mc).expect("connect");
    slow.write_all(b"get ").expect("send");
    let started = Instant::now();
    let mut closed = false;
    slow.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    while started.elapsed() < Duration::from_secs(5) {
        let mut buf = [0u8; 64];
        match slow.read(&mut buf) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => {
                closed = true;
                break;
            }
        }
        let _ = slow.write_all(b"k");
    }
    let took = started.elapsed();
    eprintln!("hostile: memcached line timeout 1 s: trickled request closed after {took:?}");
    assert!(closed, "a never-ending request was not cut off");
    assert!(took >= Duration::from_millis(900), "closed early: {took:?}");
    assert!(took < Duration::from_secs(3), "closed late: {took:?}");
    mc_alive(&mc, "line timeout");
    s.case_done("memcached line timeout");
}

#[test]
fn memcached_answers_the_kernel_takes_are_not_charged() {
    // An answer bigger than the whole output budget that the socket takes
    // at once costs the budget nothing, as on the HandlerSocket ports.
    let (mut s, mc) = start(&["--max-output-memory", "65536"]);
    set(&mc, "v", &vec![b'z'; 100_000]);
    let answer = exchange_mc(&mc, b"get v\r\n", b"END\r\n");
    assert!(answer.len() > 100_000, "{} bytes", answer.len());
    s.case_done("memcached answer past the output budget");
}

#[test]
fn memcached_idle_clients_are_closed() {
    let (mut s, mc) = start(&["--idle-timeout", "1"]);
    let mut idle = TcpStream::connect(&mc).expect("connect");
    idle.write_all(b"version\r\n").expect("send");
    idle.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = idle.read_to_end(&mut buf);
    let took = started.elapsed();
    assert!(buf.starts_with(b"VERSION "), "{buf:?}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "idle client closed after {took:?}"
    );
    s.case_done("memcached idle timeout");
}

#[test]
fn memcached_sigterm_exits_within_the_drain_timeout() {
    let (mut s, mc) = start(&["--drain-timeout", "2", "--idle-timeout", "0"]);
    set(&mc, "big", &vec![b'x'; 100_000]);
    // One that never reads its answers, one mid-request, one silent.
    let stalled = TcpStream::connect(&mc).expect("connect");
    set_sockopt(&stalled, libc::SO_RCVBUF, 16 << 10);
    stalled
        .set_write_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let batch = "get big\r\n".repeat(256).into_bytes();
    while (&stalled).write_all(&batch).is_ok() {}
    let mut midline = TcpStream::connect(&mc).expect("connect");
    midline.write_all(b"set k 0 0 10\r\nabc").expect("send");
    let _silent = TcpStream::connect(&mc).expect("connect");
    std::thread::sleep(Duration::from_millis(200));
    s.signal(libc::SIGTERM);
    let (status, took) = s
        .wait_exit(Duration::from_secs(10))
        .expect("hsd still running 10 s after SIGTERM");
    eprintln!("hostile: memcached clients at SIGTERM, drain timeout 2 s: exit after {took:?}");
    assert!(took < Duration::from_secs(3), "exit took {took:?}");
    assert!(status.success(), "exit status {status}");
}
