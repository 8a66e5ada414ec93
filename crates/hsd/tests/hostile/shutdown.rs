//! Shutdown bounded: SIGTERM ends hsd within the drain timeout plus a
//! second whatever its clients do, and a second signal ends it at once.

use crate::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// A client that pipelines whole-table finds until hsd stops reading it,
/// and never reads an answer.
fn stalled_reader(addr: &str) -> TcpStream {
    let sock = TcpStream::connect(addr).expect("connect");
    set_sockopt(&sock, libc::SO_RCVBUF, 16 << 10);
    set_sockopt(&sock, libc::SO_SNDBUF, 16 << 10);
    sock.set_write_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let mut w = &sock;
    w.write_all(b"P\t0\ttest\tuser\tPRIMARY\tuser_id,user_name\n")
        .expect("send");
    let batch = "0\t>=\t1\t1\t100000\t0\n".repeat(256).into_bytes();
    while w.write_all(&batch).is_ok() {}
    sock
}

#[test]
fn sigterm_exits_within_the_drain_timeout_whatever_clients_do() {
    // No idle timeout: only the drain timeout can end the stalled reader.
    let mut s = Hsd::start(&["--drain-timeout", "2", "--idle-timeout", "0"]);
    let stalled = stalled_reader(&s.read);
    // Others: one idle after a request, one mid-line, one that never spoke.
    let mut idle = Conn::open(&s.read);
    assert_eq!(idle.req("P|0|test|user|PRIMARY|user_id"), "0|1");
    let mut midline = Conn::open(&s.write);
    midline.send(b"P\t0\ttest");
    let _silent = Conn::open(&s.write);
    std::thread::sleep(Duration::from_millis(200));

    s.signal(libc::SIGTERM);
    let (status, took) = s
        .wait_exit(Duration::from_secs(10))
        .expect("hsd still running 10 s after SIGTERM");
    eprintln!(
        "hostile: SIGTERM with a stalled reader, drain timeout 2 s: exit after {took:?}, {status}"
    );
    assert!(took < Duration::from_secs(3), "exit took {took:?}");
    assert!(status.success(), "exit status {status}");
    drop(stalled);
}

#[test]
fn sigterm_without_stalled_clients_exits_at_once() {
    let mut s = Hsd::start(&["--drain-timeout", "30"]);
    let mut idle = Conn::open(&s.read);
    assert_eq!(idle.req("P|0|test|user|PRIMARY|user_id"), "0|1");
    let mut midline = Conn::open(&s.read);
    midline.send(b"0\t=\t1");
    std::thread::sleep(Duration::from_millis(200));
    s.signal(libc::SIGTERM);
    let (status, took) = s
        .wait_exit(Duration::from_secs(10))
        .expect("hsd still running 10 s after SIGTERM");
    eprintln!("hostile: SIGTERM with idle and mid-line clients: exit after {took:?}");
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    assert!(status.success(), "exit status {status}");
}

#[test]
fn a_second_signal_exits_at_once() {
    let mut s = Hsd::start(&["--drain-timeout", "30", "--idle-timeout", "0"]);
    let stalled = stalled_reader(&s.read);
    s.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        s.proc.child.try_wait().expect("try_wait").is_none(),
        "hsd did not wait for the stalled client to drain"
    );
    s.signal(libc::SIGINT);
    let (status, took) = s
        .wait_exit(Duration::from_secs(10))
        .expect("hsd still running 10 s after a second signal");
    eprintln!("hostile: second signal: exit after {took:?}, {status}");
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    assert!(!status.success(), "a forced exit must not look clean");
    drop(stalled);
}
