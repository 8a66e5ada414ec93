//! Halves of the suites a local run skipped because a server was not given
//! (MariaDB, MySQL 8, or the original plugin's ports). A skipped half passes
//! without checking anything, and cargo shows a test's stderr only when it
//! fails, so each skip is recorded and said again where a developer sees
//! it: when the test binary exits, after cargo's `test result` line, one
//! summary of this binary's skips and of the whole `cargo test` run's so far
//! (kept in `target/tmp/skipped-halves/<cargo's pid>`). Under `CI` a missing
//! server is an error before anything gets here (see `mysql_url`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, Once};
use std::time::{Duration, SystemTime};

/// A half of the suite that needs a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Half {
    Mariadb,
    Mysql8,
    Vitess,
    Plugin,
}

impl Half {
    fn name(self) -> &'static str {
        match self {
            Half::Mariadb => "MariaDB (HSD_TEST_MYSQL_URL)",
            Half::Mysql8 => "MySQL 8 (HSD_TEST_MYSQL8_URL)",
            Half::Vitess => "Vitess (HSD_TEST_VITESS_URL)",
            Half::Plugin => "original plugin (HSD_HS_ORIGINAL_PORT[_WR])",
        }
    }
}

/// This binary's skips: (half, test name).
static SKIPS: Mutex<Vec<(Half, String)>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

/// Records that the running test skips `half`, and says why on stderr
/// (shown by cargo only if the test fails).
pub fn skip(half: Half, message: &str) {
    eprintln!("{message}");
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed test)")
        .to_string();
    {
        let mut skips = SKIPS.lock().unwrap_or_else(|p| p.into_inner());
        if skips.iter().any(|(h, t)| *h == half && *t == test) {
            return;
        }
        skips.push((half, test.clone()));
    }
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain extern "C" function that takes no
        // arguments; it runs once, when the test binary exits.
        unsafe {
            libc::atexit(report);
        }
    });
    if let Some(path) = run_file() {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            // One write per line: the tests of a binary run on many threads
            // and binaries may run at once (O_APPEND keeps each write whole).
            let line = format!("{}\t{half:?}\t{test}\n", binary());
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// The test binary's name without cargo's hash (`conformance`).
fn binary() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}

/// The file this `cargo test` run's skips go to: named after the parent
/// (cargo) process, so every test binary of one run shares it. Files of
/// runs older than a day are removed.
fn run_file() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped-halves");
    std::fs::create_dir_all(&dir).ok()?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let day_ago = SystemTime::now() - Duration::from_secs(24 * 3600);
        for e in entries.flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < day_ago);
            if old {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Some(dir.join(std::os::unix::process::parent_id().to_string()))
}

/// The summary: this binary's skipped halves by half, with their tests,
/// then the count for the whole run so far (`run_lines`: the run file's
/// `binary TAB half TAB test` lines).
pub fn summary(mine: &[(Half, String)], run_lines: Option<&str>) -> String {
    let mut by_half: BTreeMap<Half, Vec<&str>> = BTreeMap::new();
    for (half, test) in mine {
        by_half.entry(*half).or_default().push(test);
    }
    let mut out = format!(
        "\n{}: SKIPPED (passed without running; no server given) {} test halves:\n",
        binary(),
        mine.len()
    );
    for (half, mut tests) in by_half {
        tests.sort_unstable();
        out.push_str(&format!(
            "  {} x {}: {}\n",
            tests.len(),
            half.name(),
            tests.join(", ")
        ));
    }
    if let Some(lines) = run_lines {
        let mut binaries: Vec<&str> = lines.lines().filter_map(|l| l.split('\t').next()).collect();
        let total = binaries.len();
        binaries.sort_unstable();
        binaries.dedup();
        out.push_str(&format!(
            "  this cargo run so far: {total} skipped halves in {} test binaries ({})\n",
            binaries.len(),
            binaries.join(", ")
        ));
    }
    out.push_str("  scripts/test.sh starts the servers and runs them all.\n");
    out
}

extern "C" fn report() {
    let mine = SKIPS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if mine.is_empty() {
        return;
    }
    let run = run_file().and_then(|p| std::fs::read_to_string(p).ok());
    let _ = std::io::stderr().write_all(summary(&mine, run.as_deref()).as_bytes());
}
