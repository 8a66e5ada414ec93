//! Memory bounded by configuration, not by clients: pipelines never read,
//! many clients' unfinished lines, many clients' unread answers.

use crate::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn pipelining_without_reading_is_bounded() {
    let mut s = Hsd::start(&[]);
    // Point lookups (small answers), then scans whose answers are ~1,000x
    // and ~100,000x the request: hsd must stop reading rather than buffer
    // the answers (before that was fixed, one 64 KiB read of 1,000-row scans
    // took hsd to 550 MiB).
    for (case, line) in [
        ("pipelined point lookups, never read", "0\t=\t1\t7\n"),
        (
            "pipelined 1,000-row scans, never read",
            "0\t>=\t1\t1\t1000\t0\n",
        ),
        (
            "pipelined whole-table scans, never read",
            "0\t>=\t1\t1\t100000\t0\n",
        ),
    ] {
        let sock = TcpStream::connect(&s.read).expect("connect");
        // Small socket buffers: hsd's answers back up sooner, and what was
        // sent is close to what hsd read.
        set_sockopt(&sock, libc::SO_RCVBUF, 64 << 10);
        set_sockopt(&sock, libc::SO_SNDBUF, 64 << 10);
        sock.set_write_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let mut w = &sock;
        w.write_all(b"P\t0\ttest\tuser\tPRIMARY\tuser_id,user_name,user_email,created\n")
            .expect("send");
        let batch = line.repeat(4096).into_bytes();
        let mut sent = 0usize;
        let limit = 256usize << 20;
        let started = Instant::now();
        while sent < limit {
            match w.write(&batch) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
        eprintln!(
            "hostile: {case}: hsd stopped reading after {} KiB ({:?})",
            sent >> 10,
            started.elapsed()
        );
        assert!(sent < limit, "{case}: hsd kept reading {} MiB", sent >> 20);
        // Measure while the client still has not read anything.
        s.wait_idle();
        let hwm = s.status_kb("VmHWM:");
        eprintln!(
            "hostile: {case}: VmHWM {} MiB before the client goes",
            hwm >> 10
        );
        assert!(hwm <= MAX_HWM_KB, "{case}: hsd peak RSS {hwm} kB");
        set_linger_zero(&sock);
        drop(sock);
        s.case_done(case);
    }
}

/// Bytes of one unfinished line each client tries to send.
const UNFINISHED_LINE: usize = 15 << 20;

#[test]
fn unfinished_lines_of_many_clients_share_one_budget() {
    let mut s = Hsd::start(&["--max-connections", "1000"]);
    // Every client makes a request first, so it holds a seat, then begins a
    // line it never ends: up to 15 GB if hsd took it all. A tenth of the
    // seats are the write port's.
    let mut clients = Vec::new();
    for i in 0..1000 {
        let mut c = Conn::open(if i % 10 == 0 { &s.write } else { &s.read });
        assert_eq!(c.req("P|0|test|user|PRIMARY|user_id"), "0|1");
        set_sockopt(&c.writer, libc::SO_SNDBUF, 64 << 10);
        c.writer.set_nonblocking(true).expect("nonblocking");
        c.send(b"0\t=\t1\t");
        clients.push((c, 0usize, false));
    }
    let chunk = vec![b'7'; 256 << 10];
    let mut last_progress = Instant::now();
    while last_progress.elapsed() < Duration::from_secs(3) {
        let mut open = 0;
        for (c, sent, closed) in clients.iter_mut() {
            if *closed || *sent >= UNFINISHED_LINE {
                continue;
            }
            open += 1;
            match c
                .writer
                .write(&chunk[..chunk.len().min(UNFINISHED_LINE - *sent)])
            {
                Ok(n) => {
                    *sent += n;
                    last_progress = Instant::now();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => *closed = true,
            }
        }
        if open == 0 {
            break;
        }
    }
    let closed = clients.iter().filter(|(_, _, closed)| *closed).count();
    let total: usize = clients.iter().map(|(_, sent, _)| sent).sum();
    s.wait_idle();
    let hwm = s.status_kb("VmHWM:");
    eprintln!(
        "hostile: 1,000 unfinished lines: {} MiB sent, {closed} clients closed by hsd, VmHWM {} MiB",
        total >> 20,
        hwm >> 10
    );
    assert!(hwm <= MAX_HWM_KB, "hsd peak RSS {hwm} kB");
    assert!(closed >= 900, "only {closed} clients were cut off");
    drop(clients);

    // The budget comes back: one client may now send a 12 MiB line.
    std::thread::sleep(Duration::from_millis(300));
    let mut c = Conn::open(&s.read);
    assert_eq!(c.req("P|0|test|user|PRIMARY|user_id"), "0|1");
    let mut big = b"0\t=\t1\t".to_vec();
    big.extend(std::iter::repeat_n(b'7', 12 << 20));
    big.push(b'\n');
    c.send(&big);
    assert_eq!(show(&c.line()), "0|1");
    s.case_done("1,000 clients with unfinished lines");
    let rss = s.status_kb("VmRSS:");
    eprintln!(
        "hostile: after the unfinished lines: VmRSS {} MiB",
        rss >> 10
    );
}

#[test]
fn many_clients_that_never_read_whole_table_answers() {
    let mut s = Hsd::start(&["--max-connections", "1000"]);
    let before = s.status_kb("VmRSS:");
    // Each asks for the whole table (about 6 MB of answer) and reads
    // nothing: 6 GB if hsd kept every answer.
    let mut clients = Vec::new();
    for _ in 0..1000 {
        let sock = socket_with_small_buffers(&s.read);
        (&sock)
            .write_all(
                b"P\t0\ttest\tuser\tPRIMARY\tuser_id,user_name,user_email,created\n0\t>=\t1\t1\t100000\t0\n",
            )
            .expect("send");
        clients.push(sock);
    }
    s.wait_idle();
    let hwm = s.status_kb("VmHWM:");
    let held = s.status_kb("VmRSS:");
    eprintln!(
        "hostile: 1,000 clients never reading whole-table answers: VmHWM {} MiB, VmRSS {} MiB while they stay",
        hwm >> 10,
        held >> 10
    );
    assert!(hwm <= MAX_HWM_KB, "hsd peak RSS {hwm} kB");
    for sock in &clients {
        set_linger_zero(sock);
    }
    drop(clients);
    s.case_done("1,000 clients never reading whole-table answers");
    // Memory goes back once they are gone, but for what the storage
    // connections kept (page caches).
    let after = s.status_kb("VmRSS:");
    eprintln!(
        "hostile: VmRSS {} MiB at start, {} MiB after the clients left",
        before >> 10,
        after >> 10
    );
    assert!(
        after <= before + (128 << 10),
        "hsd kept {} MiB after the clients left",
        (after - before) >> 10
    );
}

/// A connection whose kernel buffers are small, so unread answers back up
/// into hsd at once.
fn socket_with_small_buffers(addr: &str) -> TcpStream {
    let target: std::net::SocketAddr = addr.parse().expect("address");
    // SAFETY: a plain socket(2); the fd is owned by the TcpStream below.
    // CLOEXEC: an hsd that a parallel test spawns must not inherit it.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket");
    // SAFETY: fd was just returned by socket(2) and nothing else owns it.
    let sock = unsafe { <TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    set_sockopt(&sock, libc::SO_RCVBUF, 16 << 10);
    let std::net::SocketAddr::V4(v4) = target else {
        panic!("IPv4 loopback expected")
    };
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*v4.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: connect(2) with a correctly sized sockaddr_in.
    let rc = unsafe {
        libc::connect(
            fd,
            (&sin as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
    sock
}

#[test]
fn answers_are_bounded_in_bytes() {
    // The bound here is in bytes: a generous statement time, so that a
    // busy machine cannot end the big scans by time first (1 1 1969).
    let mut s = Hsd::start(&["--statement-timeout", "60"]);
    let mut c = Conn::open(&s.read);
    // `P` may list a column as often as the table has columns, or 64
    // times: more is only repeats (the original took any number; 2,000
    // repeats of one column then made a row 2,000 values wide).
    let repeat = |name: &str, n: usize| vec![name; n].join(",");
    assert_eq!(
        c.req(&format!(
            "P|1|test|user|PRIMARY|{}",
            repeat("user_email", 2000)
        )),
        "2|1|fld"
    );
    assert_eq!(
        c.req(&format!(
            "P|1|test|user|PRIMARY|user_id|{}",
            repeat("user_id", 65)
        )),
        "2|1|fld"
    );
    assert_eq!(
        c.req(&format!(
            "P|1|test|user|PRIMARY|{}",
            repeat("user_email", 65)
        )),
        "2|1|fld"
    );
    assert_eq!(
        c.req(&format!(
            "P|1|test|user|PRIMARY|{}",
            repeat("user_email", 64)
        )),
        "0|1"
    );
    // 16 MiB `P` lines of one column repeated: before, each added ~125 MB
    // to the shared catalog (30 lines: 3.9 GB, kept after the client left).
    let huge_p = format!("P|4|test|user|PRIMARY|{}", repeat("user_id", 2 << 20));
    for _ in 0..10 {
        assert_eq!(c.req(&huge_p), "2|1|fld");
    }
    s.wait_idle();
    eprintln!(
        "hostile: ten 16 MiB P lines of repeats: VmHWM {} MiB, VmRSS {} MiB after",
        s.status_kb("VmHWM:") >> 10,
        s.status_kb("VmRSS:") >> 10
    );
    // The whole table 64 columns wide is about 170 MB of answer: past the
    // default --max-response-bytes (64 MiB), so it is refused without being
    // built in full. Before: 2,000 columns, 6 GB in 22 s, then an abort.
    let started = Instant::now();
    assert_eq!(c.req("1|>=|1|1|100000|0"), "1|1|1153");
    eprintln!(
        "hostile: whole table 64 columns wide: 1|1|1153 in {:?}",
        started.elapsed()
    );
    // The connection goes on, and answers within the limit are whole.
    let ten = c.req("1|>=|1|1|10|0");
    assert_eq!(ten.split('|').count(), 2 + 640, "{}", &ten[..60]);
    s.wait_idle();
    let hwm = s.status_kb("VmHWM:");
    eprintln!("hostile: a 170 MB answer refused: VmHWM {} MiB", hwm >> 10);
    assert!(hwm <= 256 << 10, "hsd peak RSS {hwm} kB");
    s.case_done("answer past --max-response-bytes");

    // One row bigger than the limit: an 8 MiB value listed 64 times is a
    // 512 MiB row, refused after 64 MiB of it.
    let mut w = Conn::open(&s.write);
    assert_eq!(w.req("P|0|test|h|PRIMARY|id,name"), "0|1");
    let big = "x".repeat(8 << 20);
    assert_eq!(w.req(&format!("0|+|2|77|{big}")), "0|1");
    assert_eq!(
        c.req(&format!("P|2|test|h|PRIMARY|{}", repeat("name", 64))),
        "0|1"
    );
    assert_eq!(c.req("2|=|1|77"), "1|1|1153");
    // Seven copies fit.
    assert_eq!(
        c.req(&format!("P|3|test|h|PRIMARY|{}", repeat("name", 7))),
        "0|1"
    );
    let back = c.req("3|=|1|77");
    assert_eq!(back.len(), 3 + 7 * (1 + big.len()), "seven 8 MiB values");
    s.wait_idle();
    let hwm = s.status_kb("VmHWM:");
    eprintln!("hostile: a 512 MiB row refused: VmHWM {} MiB", hwm >> 10);
    assert!(hwm <= 320 << 10, "hsd peak RSS {hwm} kB");
    s.case_done("a row bigger than --max-response-bytes");
}

#[test]
fn pipelined_answers_share_the_limit() {
    // With a 100 KB limit: three finds of about 60 KB each in one
    // pipelined batch. The first is answered; the next two would take the
    // batch's answers past the limit and are refused; alone, each is
    // answered.
    let mut s = Hsd::start(&["--max-response-bytes", "100000"]);
    let mut c = Conn::open(&s.read);
    assert_eq!(
        c.req("P|0|test|user|PRIMARY|user_id,user_name,user_email,created"),
        "0|1"
    );
    let find = "0\t>=\t1\t1\t800\t0\n";
    c.send(find.repeat(3).as_bytes());
    let first = show(&c.line());
    assert!(first.starts_with("0|4|1|"), "{}", &first[..40]);
    assert!(first.len() > 50_000, "{} bytes", first.len());
    assert_eq!(show(&c.line()), "1|1|1153");
    assert_eq!(show(&c.line()), "1|1|1153");
    for _ in 0..3 {
        assert!(c.req(find.trim_end()).starts_with("0|4|1|"));
    }
    s.case_done("pipelined answers past --max-response-bytes");
}

#[test]
fn old_rows_answered_by_modifies_are_bounded_too() {
    // The `?` forms answer the rows as they were before the change: with
    // the smallest limit (4096 bytes), a walk over 800 names (about 10 KB
    // of old values) answers 1 1 1153 once its old rows pass the limit;
    // rows it changed before stay changed, as after any error, and the rows
    // past it are as they were. A single-row `U?` answers as usual.
    let mut s = Hsd::start(&["--max-response-bytes", "4096"]);
    let mut c = Conn::open(&s.write);
    assert_eq!(
        c.req("P|0|test|user|PRIMARY|user_id,user_name,user_email,created"),
        "0|1"
    );
    assert_eq!(c.req("P|1|test|user|PRIMARY|user_name"), "0|1");
    assert_eq!(c.req("1|>=|1|100|800|0|U?|renamed"), "1|1|1153");
    assert!(c.req("0|=|1|100").contains("|renamed|"));
    assert!(!c.req("0|=|1|899").contains("renamed"));
    let one = c.req("0|=|1|5000|1|0|U?|5000|five|five@example.com|2020-01-01 00:00:00");
    assert!(one.starts_with("0|4|5000|"), "{one}");
    s.case_done("old rows answered by U? past --max-response-bytes");
}

#[test]
fn an_in_list_costs_about_its_line() {
    let mut s = Hsd::start(&[]);
    let mut c = Conn::open(&s.read);
    assert_eq!(c.req("P|0|test|user|PRIMARY|user_id"), "0|1");
    // Warm up, then take the peak from here.
    assert_eq!(c.req("0|=|1|7"), "0|1|7");
    s.wait_idle();
    let _ = std::fs::write(format!("/proc/{}/clear_refs", s.child.id()), "5");
    let start = s.status_kb("VmHWM:");
    // 200,000 IN values, a 1.3 MB line. Each value once became a scan of
    // its own before any ran (about 250 bytes each: 1.9 million values
    // took 482 MB); now they are kept end to end and seek a chunk at a
    // time.
    let n = 200_000;
    let mut line = format!("0\t=\t1\t1\t{n}\t0\t@\t0\t{n}").into_bytes();
    for i in 0..n {
        line.extend_from_slice(format!("\t{}", 1 + i % 100_000).as_bytes());
    }
    line.push(b'\n');
    c.send(&line);
    let answer = c.line();
    assert!(
        answer.starts_with(b"0\t1\t1\t2\t3\t"),
        "{:?}",
        &answer[..40.min(answer.len())]
    );
    let values = answer.iter().filter(|&&b| b == b'\t').count() - 1;
    assert_eq!(values, n);
    s.wait_idle();
    let grew = s.status_kb("VmHWM:").saturating_sub(start);
    eprintln!(
        "hostile: {n} IN values in a {} kB line: peak RSS grew {} kB",
        line.len() >> 10,
        grew
    );
    assert!(grew < 24 << 10, "peak RSS grew {grew} kB");
    s.case_done("a long IN list");
}
