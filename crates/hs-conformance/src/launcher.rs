//! The one way tests and tools start an hsd binary: `serve` on free
//! loopback ports (or `start` with arguments of the caller's own), waiting
//! for the ready line hsd prints on stdout
//! (`hsd: listening read=ADDR write=ADDR[ admin=ADDR] backend=...`) and
//! taking the addresses from it; `run_until_ready` for start-up checks,
//! which captures everything hsd prints. Used by hs-conformance's binary and
//! by hsd's integration tests (tests/common, tests/hostile).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// What hsd's ready line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyLine {
    pub read: String,
    pub write: String,
    pub admin: Option<String>,
    /// The memcached port, when `--memcached-address` is given.
    pub memcached: Option<String>,
    /// The backend as hsd shows it (a URL without its password, or the
    /// embedded store's directory).
    pub backend: String,
}

impl ReadyLine {
    pub const PREFIX: &'static str = "hsd: listening ";

    /// Parses `hsd: listening read=... write=...[ admin=...] backend=...`
    /// (a trailing newline allowed); None for any other line.
    pub fn parse(line: &str) -> Option<ReadyLine> {
        let rest = line.trim_end().strip_prefix(Self::PREFIX)?;
        let (ports, backend) = match rest.split_once(" backend=") {
            Some((ports, backend)) => (ports, backend.to_string()),
            None => (rest, String::new()),
        };
        let field = |name: &str| {
            ports
                .split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_string)
        };
        Some(ReadyLine {
            read: field("read")?,
            write: field("write")?,
            admin: field("admin"),
            memcached: field("memcached"),
            backend,
        })
    }
}

/// A running `hsd serve` and where it listens; killed (SIGKILL) and reaped
/// when dropped.
pub struct Hsd {
    pub child: Child,
    pub read: String,
    pub write: String,
    pub admin: Option<String>,
    pub ready: ReadyLine,
}

impl Hsd {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// The process itself (`id`, `try_wait`, `kill`, ...).
impl std::ops::Deref for Hsd {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.child
    }
}

impl std::ops::DerefMut for Hsd {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}

impl Drop for Hsd {
    fn drop(&mut self) {
        // Already exited and reaped is fine: kill then does nothing.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `BIN serve --address 127.0.0.1 --port 0 --port-wr 0 ARGS...`
/// (stderr inherited) and waits for its ready line; hsd's stdout keeps
/// being drained afterwards so that it never blocks on a full pipe. An error
/// when hsd exits or prints something else first.
pub fn serve<S: AsRef<OsStr>>(bin: &Path, args: &[S]) -> Result<Hsd> {
    let mut all: Vec<&OsStr> = [
        "serve",
        "--address",
        "127.0.0.1",
        "--port",
        "0",
        "--port-wr",
        "0",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    all.extend(args.iter().map(AsRef::as_ref));
    start(bin, &all, &[])
}

/// Starts `BIN ARGS...` as given (with `env` added; stderr inherited), for
/// a start that takes its addresses elsewhere (`serve --config FILE`), and
/// waits for the ready line as `serve` does.
pub fn start<S: AsRef<OsStr>>(bin: &Path, args: &[S], env: &[(&str, &str)]) -> Result<Hsd> {
    let mut child = Command::new(bin)
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("start {}", bin.display()))?;
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("no stdout pipe to {}", bin.display());
    };
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next();
    let line = match first {
        Some(Ok(line)) => line,
        _ => {
            let _ = child.kill();
            let status = child.wait().ok();
            bail!(
                "{} printed no ready line (did it fail to start? exit: {status:?})",
                bin.display()
            );
        }
    };
    let Some(ready) = ReadyLine::parse(&line) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("unexpected first line from hsd: {line:?}");
    };
    std::thread::spawn(move || for _ in lines {});
    Ok(Hsd {
        child,
        read: ready.read.clone(),
        write: ready.write.clone(),
        admin: ready.admin.clone(),
        ready,
    })
}

/// One run of hsd with stdout and stderr captured, for start-up checks.
#[derive(Debug)]
pub struct Run {
    /// Exit code; None when hsd was killed after its ready line.
    pub code: Option<i32>,
    /// The ready line (without its newline), when hsd got that far.
    pub ready: Option<String>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `BIN ARGS...` (with `env` added, RUST_LOG and NO_COLOR removed,
/// stdin empty) until it prints its ready line, then kills it; or until it
/// exits. A first line that takes longer than `wait` also ends the run.
pub fn run_until_ready(
    bin: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    wait: Duration,
) -> Result<Run> {
    let mut child = Command::new(bin)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("start {}", bin.display()))?;
    let (Some(mut stderr), Some(stdout)) = (child.stderr.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("no output pipes to {}", bin.display());
    };
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdout = BufReader::new(stdout);
    let (first_tx, first_rx) = mpsc::channel();
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_line(&mut text);
        let _ = first_tx.send(text.clone());
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let first = first_rx.recv_timeout(wait);
    let ready = first
        .as_ref()
        .ok()
        .filter(|l| ReadyLine::parse(l).is_some())
        .map(|l| l.trim_end().to_string());
    if ready.is_some() || first.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().context("wait for hsd")?;
    let stdout = stdout
        .join()
        .map_err(|_| anyhow::anyhow!("stdout reader panicked"))?;
    let stderr = stderr
        .join()
        .map_err(|_| anyhow::anyhow!("stderr reader panicked"))?;
    Ok(Run {
        code: status.code(),
        ready,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_lines() {
        let r = ReadyLine::parse(
            "hsd: listening read=127.0.0.1:9998 write=127.0.0.1:9999 admin=127.0.0.1:9000 backend=mysql://hsd@127.0.0.1:3306\n",
        )
        .expect("ready");
        assert_eq!(r.read, "127.0.0.1:9998");
        assert_eq!(r.write, "127.0.0.1:9999");
        assert_eq!(r.admin.as_deref(), Some("127.0.0.1:9000"));
        assert_eq!(r.backend, "mysql://hsd@127.0.0.1:3306");
        let r =
            ReadyLine::parse("hsd: listening read=[::1]:1 write=[::1]:2 backend=sqlite:/tmp/a b")
                .expect("ready");
        assert_eq!((r.read.as_str(), r.write.as_str()), ("[::1]:1", "[::1]:2"));
        assert_eq!(r.admin, None);
        assert_eq!(r.backend, "sqlite:/tmp/a b");
        assert_eq!(ReadyLine::parse("hsd: listening read=a:1"), None);
        assert_eq!(ReadyLine::parse("hsd: error: no such file"), None);
        assert_eq!(ReadyLine::parse(""), None);
    }

    #[test]
    fn a_program_that_prints_no_ready_line_is_an_error() {
        // `true serve ...` exits at once and prints nothing.
        let err = serve(Path::new("true"), &["--x"])
            .err()
            .expect("no ready line");
        assert!(
            format!("{err:#}").contains("printed no ready line"),
            "{err:#}"
        );
        let run = run_until_ready(
            Path::new("sh"),
            &["-c", "echo hello; echo oops >&2; exit 3"],
            &[],
            Duration::from_secs(30),
        )
        .expect("run");
        assert_eq!(run.code, Some(3));
        assert_eq!(run.ready, None);
        assert_eq!(run.stdout, "hello\n");
        assert_eq!(run.stderr, "oops\n");
    }

    #[test]
    fn run_until_ready_stops_at_the_ready_line() {
        let run = run_until_ready(
            Path::new("sh"),
            &[
                "-c",
                "echo 'hsd: listening read=127.0.0.1:1 write=127.0.0.1:2 backend=x'; exec sleep 60",
            ],
            &[],
            Duration::from_secs(30),
        )
        .expect("run");
        assert_eq!(run.code, None, "killed");
        assert_eq!(
            run.ready.as_deref(),
            Some("hsd: listening read=127.0.0.1:1 write=127.0.0.1:2 backend=x")
        );
    }
}
