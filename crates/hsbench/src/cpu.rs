//! CPU time of processes from /proc/PID/stat (utime + stime, in clock ticks),
//! sampled before and after the measured phase to report server CPU per request.
//! Ticks are converted with sysconf(_SC_CLK_TCK) (what `getconf CLK_TCK`
//! prints; 100 on Linux), so the resolution is 10 ms: measure for seconds.

use anyhow::{bail, Context, Result};

/// Clock ticks per second.
pub fn clk_tck() -> u64 {
    // SAFETY: sysconf has no preconditions; it only reads a configuration value.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as u64
    } else {
        100
    }
}

/// utime + stime of a process (all its threads), in clock ticks.
/// `pid` is a number or "self".
pub fn ticks(pid: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let s = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    parse_stat(&s).with_context(|| format!("parse {path}"))
}

fn parse_stat(s: &str) -> Result<u64> {
    // The command name (field 2) is in parentheses and may contain spaces and
    // parentheses itself: fields are counted after the last ')'.
    let Some(i) = s.rfind(')') else {
        bail!("no ')' in stat line");
    };
    let f: Vec<&str> = s[i + 1..].split_whitespace().collect();
    // After ')': state(3) ppid(4) ... utime(14) stime(15) => indexes 11 and 12.
    if f.len() < 13 {
        bail!("short stat line");
    }
    Ok(f[11].parse::<u64>()? + f[12].parse::<u64>()?)
}

/// Ticks of each of the given pids, in their order.
pub fn ticks_each(pids: &[u32]) -> Result<Vec<u64>> {
    pids.iter().map(|p| ticks(&p.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_comm() {
        let line = "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4 0 99 1 2 3";
        assert_eq!(parse_stat(line).unwrap(), 325);
        assert!(ticks("self").is_ok());
        assert!(clk_tck() >= 1);
    }
}
