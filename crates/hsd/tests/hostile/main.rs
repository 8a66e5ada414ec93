//! Hostile clients over real sockets against the real `hsd` binary: every
//! error path of the spec, binary garbage, cut-off, huge and many-token
//! lines (`input`); floods of connections, slowloris clients, slow and
//! unauthenticated clients (`slots`); clients that never read and unfinished
//! lines from many clients at once (`memory`); shutdown with clients that
//! misbehave (`shutdown`); the same bounds on the memcached port
//! (`memcached`). After each case hsd must still answer a normal
//! request on a fresh connection, and its peak RSS (VmHWM, reset between
//! cases) must stay within 512 MiB. hs-client's blocking connection, which
//! hands over the raw socket and sends bytes as they are, throughout: these
//! cases need byte-level control. hsd is started by hs-conformance's
//! launcher. Loopback only.

mod fairness;
mod input;
mod memcached;
mod memory;
mod shutdown;
mod slots;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hs_client::blocking::Connection;
use hs_conformance::launcher;

const MAX_HWM_KB: u64 = 512 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `hsd serve` on a fresh data dir with the demo table and test.h.
struct Hsd {
    /// The process (a `Child` through Deref); killed when dropped.
    child: launcher::Hsd,
    read: String,
    write: String,
    data_dir: PathBuf,
    _tmp: tempfile::TempDir,
}

/// Created before the server starts: a BLOB column for `filterblob` and a
/// NOT NULL column for a refused insert.
/// `id` is a plain integer key, a column of its own (an INTEGER PRIMARY KEY
/// would be the table's rowid).
const SETUP_SQL: &str = "CREATE TABLE h (id BIGINT PRIMARY KEY, name TEXT NOT NULL, data BLOB)";

impl Hsd {
    fn start(extra: &[&str]) -> Hsd {
        Hsd::start_with_sql(extra, "")
    }

    /// The same, with `sql` run in db `test` too before the server starts.
    fn start_with_sql(extra: &[&str], sql: &str) -> Hsd {
        raise_fd_limit();
        let tmp = tempfile::tempdir().expect("tempdir");
        let data_dir = tmp.path().join("data");
        std::fs::create_dir_all(&data_dir).expect("data dir");
        let out = Command::new(env!("CARGO_BIN_EXE_hsd"))
            .arg("sql")
            .arg("--data-dir")
            .arg(&data_dir)
            .args(["test", SETUP_SQL])
            .output()
            .expect("run hsd sql");
        assert!(out.status.success(), "hsd sql failed: {out:?}");
        if !sql.is_empty() {
            let out = Command::new(env!("CARGO_BIN_EXE_hsd"))
                .arg("sql")
                .arg("--data-dir")
                .arg(&data_dir)
                .args(["test", sql])
                .output()
                .expect("run hsd sql");
            assert!(out.status.success(), "hsd sql failed: {out:?}");
        }
        let mut args = vec!["--demo".to_string(), "--data-dir".to_string()];
        args.push(data_dir.display().to_string());
        args.extend(extra.iter().map(|a| a.to_string()));
        let child = launcher::serve(Path::new(env!("CARGO_BIN_EXE_hsd")), &args)
            .unwrap_or_else(|e| panic!("{e:#}"));
        Hsd {
            read: child.read.clone(),
            write: child.write.clone(),
            child,
            data_dir,
            _tmp: tmp,
        }
    }

    fn status_kb(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("hsd /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key} in /proc status"))
    }

    /// CPU time hsd used so far, in clock ticks (utime + stime).
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .expect("hsd /proc stat");
        // Fields after the parenthesised command name; utime and stime are 14 and 15.
        let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0)
    }

    /// Waits until hsd has finished what it was busy with (no CPU used and
    /// no thread waiting for a CPU, for a while), so a peak RSS read
    /// afterwards includes all of its work, even on a machine other tests
    /// keep busy. (A thousand whole-table scans in a debug build, beside
    /// another case, took more than 60 s.)
    fn wait_idle(&self) {
        let deadline = Instant::now() + Duration::from_secs(150);
        let mut last = self.cpu_ticks();
        let mut quiet = 0;
        while quiet < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            let now = self.cpu_ticks();
            quiet = if now == last && !self.any_thread_runnable() {
                quiet + 1
            } else {
                0
            };
            last = now;
        }
    }

    /// Whether a thread of hsd is running or waiting for a CPU.
    fn any_thread_runnable(&self) -> bool {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.child.id())) else {
            return false;
        };
        tasks.filter_map(Result::ok).any(|t| {
            std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|stat| {
                    let state = stat[stat.rfind(')')? + 2..].chars().next()?;
                    Some(state == 'R')
                })
                .unwrap_or(false)
        })
    }

    /// Ends a case: hsd is still running and answers a fresh connection, and
    /// its peak RSS since the last case is within bounds (then reset).
    fn case_done(&mut self, case: &str) {
        assert!(
            self.child.try_wait().expect("try_wait").is_none(),
            "hsd exited during {case}"
        );
        let mut c = Conn::open(&self.read);
        assert_eq!(
            c.req("P|90|test|user|PRIMARY|user_id,user_name"),
            "0|1",
            "after {case}"
        );
        assert_eq!(c.req("90|=|1|7"), "0|2|7|Jonas Kowalski", "after {case}");
        self.wait_idle();
        let hwm = self.status_kb("VmHWM:");
        eprintln!("hostile: {case}: hsd VmHWM {} MiB", hwm / 1024);
        assert!(hwm <= MAX_HWM_KB, "{case}: hsd peak RSS {hwm} kB");
        // Reset the peak so the next case is measured on its own.
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
    }
}

impl Hsd {
    /// Sends hsd a signal (SIGTERM, SIGINT).
    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, sig);
        }
    }

    /// Waits up to `limit` for hsd to exit; its status and how long it took.
    fn wait_exit(&mut self, limit: Duration) -> Option<(std::process::ExitStatus, Duration)> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some((status, started.elapsed()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// Lets this process (and the hsd it spawns) hold thousands of sockets.
fn raise_fd_limit() {
    // SAFETY: plain libc calls on a local struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// `|` for TAB, `~` for a NULL token.
fn enc(text: &str) -> Vec<u8> {
    text.bytes()
        .map(|b| match b {
            b'|' => b'\t',
            b'~' => 0,
            other => other,
        })
        .collect()
}

/// A response line shown with `|` for TAB, without its LF.
fn show(line: &[u8]) -> String {
    String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(line)).replace('\t', "|")
}

/// hs-client's blocking connection in this suite's notation (see `enc` and
/// `show`), panicking where the case expects an answer.
struct Conn(Connection);

impl std::ops::Deref for Conn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.0
    }
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let options = hs_client::blocking::Options {
            timeout: Some(IO_TIMEOUT),
            nodelay: false,
        };
        Conn(Connection::connect_with(addr, options).expect("connect to hsd"))
    }

    /// The raw socket: sends bytes that no line framing touches.
    fn writer(&self) -> &TcpStream {
        self.0.socket()
    }

    fn send(&mut self, bytes: &[u8]) {
        self.0.send(bytes).expect("send to hsd");
    }

    /// The next response line (without its LF).
    fn line(&mut self) -> Vec<u8> {
        match self.0.read_line() {
            Ok(line) => line,
            Err(hs_client::ClientError::Closed) => panic!("connection closed mid-response"),
            Err(e) => panic!("read a response line: {e}"),
        }
    }

    /// Like `req`, but None when hsd closed the connection instead of
    /// answering (a refused or closed connection).
    fn try_req(&mut self, text: &str) -> Option<String> {
        self.0.request(&enc(text)).ok().map(|a| show(&a))
    }

    /// Whether hsd has closed this connection (EOF or reset), waiting up
    /// to `limit` for it to happen.
    fn closed_within(&mut self, limit: Duration) -> bool {
        self.0
            .closed_within(limit)
            .unwrap_or_else(|e| panic!("hsd sent something: {e}"))
    }

    /// Sends one request (see `enc`) and returns its response (see `show`).
    fn req(&mut self, text: &str) -> String {
        let mut line = enc(text);
        line.push(b'\n');
        self.send(&line);
        show(&self.line())
    }
}

/// Writes `input` from a second thread, then shuts the write side (a
/// half-close), and reads everything hsd sends until it closes.
fn exchange(addr: &str, input: Vec<u8>) -> Vec<u8> {
    let s = TcpStream::connect(addr).expect("connect to hsd");
    s.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    let mut w = s.try_clone().expect("clone socket");
    let writer = std::thread::spawn(move || {
        w.write_all(&input).expect("send to hsd");
        w.shutdown(Shutdown::Write).expect("half-close");
    });
    let mut out = Vec::new();
    (&s).read_to_end(&mut out).expect("read until hsd closes");
    writer.join().expect("writer thread");
    out
}

/// Checks section 2 of the spec on every response line; returns how many.
fn check_responses(out: &[u8]) -> usize {
    assert!(
        out.is_empty() || out.ends_with(b"\n"),
        "unterminated output"
    );
    let total = count_lf(out);
    for line in out.split(|&b| b == b'\n').take(total) {
        let r = hs_proto::Response::parse(line)
            .unwrap_or_else(|| panic!("bad response line {:?}", show(line)));
        match r.code {
            0 if r.ncols == 0 => assert!(r.values.is_empty(), "{:?}", show(line)),
            0 => assert_eq!(r.values.len() % r.ncols, 0, "{:?}", show(line)),
            1..=3 => assert!(r.ncols == 1 && r.values.len() <= 1, "{:?}", show(line)),
            _ => panic!("unknown code in {:?}", show(line)),
        }
    }
    total
}

fn count_lf(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// xorshift64*: deterministic garbage.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn set_sockopt(s: &TcpStream, name: libc::c_int, value: libc::c_int) {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt on a socket we own, with a correctly sized int.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn set_linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own, with a correctly sized struct.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Runs `hsd sql` on the running server's data dir.
pub(crate) fn sql(s: &Hsd, statement: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hsd"))
        .arg("sql")
        .arg("--data-dir")
        .arg(&s.data_dir)
        .args(["test", statement])
        .output()
        .expect("run hsd sql");
    assert!(out.status.success(), "hsd sql failed: {out:?}");
}
