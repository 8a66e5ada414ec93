//! Shutdown bounded: SIGTERM ends hsd within the drain timeout plus a
//! second whatever its clients do, and a second signal ends it at once.

use crate::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

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
        s.child.try_wait().expect("try_wait").is_none(),
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

/// A table whose index is over the column `+` raises: a walk `>=` over it
/// meets each row it changed again, ahead of itself (the original walked
/// on forever).
fn endless_walk_table(s: &Hsd) {
    sql(s, "CREATE TABLE w (id INTEGER PRIMARY KEY, n INT NOT NULL)");
    sql(s, "CREATE INDEX w_n ON w (n)");
    sql(s, "INSERT INTO w VALUES (1, 1), (2, 2), (3, 3)");
}

#[test]
fn a_modify_walk_is_bounded_and_the_loop_serves_others_meanwhile() {
    let mut s = Hsd::start(&["--statement-timeout", "1"]);
    endless_walk_table(&s);
    let write = s.write.clone();
    let walker = std::thread::spawn(move || {
        let mut c = Conn::open(&write);
        assert_eq!(c.req("P|0|test|w|w_n|n"), "0|1");
        let started = Instant::now();
        let answer = c.req("0|>=|1|0|4294967295|0|+|1");
        (answer, started.elapsed())
    });
    // Meanwhile the write loop answers finds at once.
    std::thread::sleep(Duration::from_millis(200));
    let mut other = Conn::open(&s.write);
    assert_eq!(other.req("P|1|test|user|PRIMARY|user_name"), "0|1");
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let started = Instant::now();
        assert_eq!(other.req("1|=|1|7"), "0|1|Jonas Kowalski");
        slowest = slowest.max(started.elapsed());
    }
    let (answer, took) = walker.join().expect("walker");
    eprintln!(
        "hostile: endless walk, --statement-timeout 1: {answer} after {took:?}; \
         slowest find on its loop meanwhile {slowest:?}"
    );
    assert_eq!(answer, "1|1|1969");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(slowest < Duration::from_millis(500), "{slowest:?}");
    s.case_done("endless walk");
}

/// Issue 30 row 12: a walk that runs until the statement timeout does not
/// hold the other writes of its write loop (one loop here). Before: an
/// insert into another table waited for the whole walk (3.07 s at
/// `--statement-timeout 3`).
#[test]
fn a_long_modify_walk_does_not_hold_the_other_writes_of_its_loop() {
    let mut s = Hsd::start(&["--statement-timeout", "1", "--threads-wr", "1"]);
    endless_walk_table(&s);
    let write = s.write.clone();
    let walker = std::thread::spawn(move || {
        let mut c = Conn::open(&write);
        assert_eq!(c.req("P|0|test|w|w_n|n"), "0|1");
        assert_eq!(c.req("P|1|test|h|PRIMARY|id,name"), "0|1");
        let started = Instant::now();
        // The walk and an insert behind it in one pipeline: the insert
        // waits for the walk's end (the client's order).
        c.send(b"0\t>=\t1\t0\t4294967295\t0\t+\t1\n1\t+\t2\t100\tafter the walk\n");
        let answers = [show(&c.line()), show(&c.line())];
        (answers, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    let mut other = Conn::open(&s.write);
    assert_eq!(other.req("P|1|test|h|PRIMARY|id,name"), "0|1");
    let mut slowest = Duration::ZERO;
    for id in 1..=10 {
        let started = Instant::now();
        assert_eq!(other.req(&format!("1|+|2|{id}|other")), "0|1");
        slowest = slowest.max(started.elapsed());
    }
    let (answers, took) = walker.join().expect("walker");
    eprintln!(
        "hostile: endless walk, --statement-timeout 1: {answers:?} after {took:?}; \
         slowest insert into another table on its loop meanwhile {slowest:?}"
    );
    assert_eq!(answers, ["1|1|1969", "0|1"]);
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(slowest < Duration::from_millis(300), "{slowest:?}");
    // The walk went on between the inserts: it changed rows many times.
    let mut c = Conn::open(&s.read);
    assert_eq!(c.req("P|0|test|w|PRIMARY|n"), "0|1");
    let n: u64 = c
        .req("0|=|1|1")
        .rsplit('|')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("n of row 1");
    assert!(n > 10, "row 1's n is {n}");
    s.case_done("endless walk beside other writes");
}

#[test]
fn sigterm_stops_a_walk_without_a_time_budget() {
    // No time budget at all: only shutdown ends the walk (its row budget
    // is far away).
    let mut s = Hsd::start(&["--statement-timeout", "0", "--drain-timeout", "2"]);
    endless_walk_table(&s);
    let mut c = Conn::open(&s.write);
    assert_eq!(c.req("P|0|test|w|w_n|n"), "0|1");
    c.send(b"0\t>=\t1\t0\t4294967295\t0\t+\t1\n");
    std::thread::sleep(Duration::from_millis(300));
    s.signal(libc::SIGTERM);
    let (status, took) = s
        .wait_exit(Duration::from_secs(20))
        .expect("hsd still running 20 s after SIGTERM");
    eprintln!("hostile: SIGTERM during an endless walk, drain timeout 2 s: exit after {took:?}");
    assert!(took < Duration::from_millis(3500), "exit took {took:?}");
    assert!(status.success(), "exit status {status}");
}
