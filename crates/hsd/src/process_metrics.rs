//! The standard `process_*` series of Prometheus clients (CPU time,
//! memory, open files, threads, start time), read from `/proc/self` at
//! each scrape and written in the text exposition format. Hand-made, so
//! that hsd needs no /proc crate; outside Linux there are none.

use std::fmt::Write;

/// The `process_*` series as Prometheus text, or nothing where `/proc`
/// cannot be read.
pub(crate) fn render() -> String {
    let mut out = String::new();
    let Some(stat) = read_stat() else {
        return out;
    };
    let ticks = clock_ticks();
    series(
        &mut out,
        "process_cpu_seconds_total",
        "Total user and system CPU time spent in seconds.",
        "counter",
        (stat.utime + stat.stime) as f64 / ticks,
    );
    if let Some(fds) = open_fds() {
        series(
            &mut out,
            "process_open_fds",
            "Number of open file descriptors.",
            "gauge",
            fds as f64,
        );
    }
    if let Some(max) = max_fds() {
        series(
            &mut out,
            "process_max_fds",
            "Maximum number of open file descriptors.",
            "gauge",
            max,
        );
    }
    series(
        &mut out,
        "process_virtual_memory_bytes",
        "Virtual memory size in bytes.",
        "gauge",
        stat.vsize as f64,
    );
    series(
        &mut out,
        "process_resident_memory_bytes",
        "Resident memory size in bytes.",
        "gauge",
        stat.rss_pages as f64 * page_size(),
    );
    if let Some(boot) = boot_time() {
        series(
            &mut out,
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            "gauge",
            boot + stat.start_ticks as f64 / ticks,
        );
    }
    series(
        &mut out,
        "process_threads",
        "Number of OS threads in the process.",
        "gauge",
        stat.threads as f64,
    );
    out
}

fn series(out: &mut String, name: &str, help: &str, kind: &str, value: f64) {
    let _ = write!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
    );
}

/// What `/proc/self/stat` says.
#[derive(Debug, PartialEq)]
struct Stat {
    utime: u64,
    stime: u64,
    threads: u64,
    start_ticks: u64,
    vsize: u64,
    rss_pages: u64,
}

fn read_stat() -> Option<Stat> {
    parse_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// Fields after the command name (which is in parentheses and may hold
/// spaces and parentheses itself): field 3 (state) is the first.
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Option<u64> { fields.get(n.checked_sub(3)?)?.parse().ok() };
    Some(Stat {
        utime: field(14)?,
        stime: field(15)?,
        threads: field(20)?,
        start_ticks: field(22)?,
        vsize: field(23)?,
        rss_pages: field(24)?,
    })
}

fn open_fds() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}

fn max_fds() -> Option<f64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    Some(lim.rlim_cur as f64)
}

/// The boot time, from `/proc/stat`'s `btime`.
fn boot_time() -> Option<f64> {
    std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf reads a constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn page_size() -> f64 {
    // SAFETY: sysconf reads a constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as f64
    } else {
        4096.0
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_stat, render, Stat};

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let text = "4242 (hsd (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 7 0 123456 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                utime: 250,
                stime: 50,
                threads: 7,
                start_ticks: 123456,
                vsize: 104857600,
                rss_pages: 2560,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn this_process_has_memory_threads_and_files() {
        let text = render();
        for name in [
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_max_fds",
            "process_virtual_memory_bytes",
            "process_resident_memory_bytes",
            "process_start_time_seconds",
            "process_threads",
        ] {
            let value: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {text}"));
            assert!(value >= 0.0, "{name} {value}");
        }
        assert!(text.contains("# TYPE process_cpu_seconds_total counter\n"));
    }
}
