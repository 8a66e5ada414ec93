//! MySQL backend: clients that ask for big answers and never read them
//! cost hsd a bounded amount of memory, and never hold up another client's
//! lookups. (Long finds run on a connection of their own, one client at a
//! time; before, they joined the lookups' batches: 300 such clients held
//! 1 GB and other clients' lookups waited 5.7 to 10.8 s.)

mod common;
use common::blocking::*;
use common::mysql_url;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ROWS: usize = 20_000;
const CLIENTS: usize = 100;

/// A connection whose receive buffer is small, so unread answers back up
/// into hsd at once.
fn small_buffer_socket(addr: &str) -> TcpStream {
    let target: std::net::SocketAddrV4 = addr.parse().expect("IPv4 address");
    // SAFETY: socket(2); the fd is owned by the TcpStream below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket");
    // SAFETY: fd was just returned by socket(2) and nothing else owns it.
    let sock = unsafe { <TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let size: libc::c_int = 16 << 10;
    // SAFETY: setsockopt with a c_int value of the right size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUF");
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: target.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*target.ip()).to_be(),
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

fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[test]
fn clients_that_never_read_big_answers_do_not_hold_up_lookups() {
    let Some(url) = mysql_url() else { return };
    let db = "hsdt_slow_readers";
    let mut sql = fresh_db(&url, db);
    exec(
        &mut sql,
        "CREATE TABLE big (id INT NOT NULL PRIMARY KEY, v VARCHAR(100) NOT NULL)",
    );
    for chunk in (1..=ROWS).collect::<Vec<_>>().chunks(1000) {
        let values: Vec<String> = chunk
            .iter()
            .map(|n| format!("({n}, REPEAT('x', 100))"))
            .collect();
        exec(
            &mut sql,
            &format!("INSERT INTO big VALUES {}", values.join(", ")),
        );
    }
    let hsd = Hsd::start(&url, &["--threads", "1", "--max-connections", "1000"]);
    let start_kb = peak_rss_kb(hsd.pid());
    // Each asks for the whole table (about 2 MB of answer) and reads
    // nothing.
    let ask = format!("P\t0\t{db}\tbig\tPRIMARY\tid,v\n0\t>=\t1\t0\t{ROWS}\t0\n");
    let mut silent = Vec::new();
    for _ in 0..CLIENTS {
        let mut s = small_buffer_socket(&hsd.read);
        s.write_all(ask.as_bytes()).expect("send");
        silent.push(s);
    }
    // Meanwhile another client's lookups, on the same event loop.
    let mut c = hsd.reader();
    assert_eq!(c.q(&format!("P|1|{db}|big|PRIMARY|id")), "0|1");
    let mut took: Vec<Duration> = (0..100)
        .map(|i| {
            let k = 1 + (i * 197) % ROWS;
            let started = Instant::now();
            assert_eq!(c.q(&format!("1|=|1|{k}")), format!("0|1|{k}"));
            started.elapsed()
        })
        .collect();
    took.sort();
    let (median, worst) = (took[took.len() / 2], took[took.len() - 1]);
    // Let the big scans run their course.
    std::thread::sleep(Duration::from_secs(2));
    let peak_kb = peak_rss_kb(hsd.pid());
    eprintln!(
        "mysql slow readers: {CLIENTS} never-reading clients of 2 MB answers: \
         lookups beside them median {median:?}, worst {worst:?}; \
         peak RSS {} MiB (started at {} MiB)",
        peak_kb >> 10,
        start_kb >> 10
    );
    assert!(median < Duration::from_millis(50), "median {median:?}");
    assert!(worst < Duration::from_secs(1), "worst {worst:?}");
    assert!(peak_kb < 400 << 10, "peak RSS {peak_kb} kB");
    drop(silent);
}
