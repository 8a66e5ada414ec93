//! Per-connection counters and latency histograms, merged into one report that
//! is printed as text or as one JSON object.

use anyhow::Result;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::proto::Outcome;

/// Latencies are recorded in nanoseconds, 3 significant digits, up to 100 s.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

pub struct ConnStats {
    pub hist: Histogram<u64>,
    /// Measured responses (successes and errors).
    pub requests: u64,
    pub error_responses: u64,
    pub misses: u64,
    pub first_error: Option<String>,
}

impl ConnStats {
    pub fn new() -> Self {
        ConnStats {
            hist: new_histogram(),
            requests: 0,
            error_responses: 0,
            misses: 0,
            first_error: None,
        }
    }

    /// Counts one measured response; `raw` is looked at only for a failure.
    #[inline]
    pub fn record(&mut self, latency_ns: u64, outcome: Outcome, raw: &[u8]) {
        self.requests += 1;
        self.hist.saturating_record(latency_ns.max(1));
        if outcome != Outcome::Ok {
            self.note_failure(outcome, raw);
        }
    }

    #[cold]
    pub fn note_failure(&mut self, outcome: Outcome, raw: &[u8]) {
        match outcome {
            Outcome::Ok => return,
            Outcome::Error => self.error_responses += 1,
            Outcome::Miss => self.misses += 1,
        }
        if self.first_error.is_none() {
            let shown = &raw[..raw.len().min(200)];
            let kind = if outcome == Outcome::Error {
                "error"
            } else {
                "miss"
            };
            self.first_error = Some(format!("{kind}: {:?}", String::from_utf8_lossy(shown)));
        }
    }

    pub fn merge(&mut self, o: ConnStats) -> Result<()> {
        self.hist.add(&o.hist)?;
        self.requests += o.requests;
        self.error_responses += o.error_responses;
        self.misses += o.misses;
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
        Ok(())
    }
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub system: String,
    pub workload: String,
    pub connections: usize,
    pub depth: usize,
    pub requests: u64,
    /// error_responses + misses
    pub errors: u64,
    pub seconds: f64,
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Server CPU (utime+stime of --server-pid) per measured request.
    pub cpu_us_per_req: Option<f64>,
    /// The same, each --server-pid apart, in the order given.
    pub cpu_by_pid: Vec<PidCpu>,
    pub client_cpu_us_per_req: f64,
    pub error_responses: u64,
    pub misses: u64,
    pub mean_us: f64,
    pub max_us: f64,
    pub keys: u64,
    pub dist: String,
    pub first_error: Option<String>,
}

fn us(ns: u64) -> f64 {
    (ns as f64 / 100.0).round() / 10.0
}

/// One server process's CPU per measured request.
#[derive(Serialize, Debug)]
pub struct PidCpu {
    pub pid: u32,
    pub us_per_req: f64,
}

pub struct RunInfo {
    pub system: String,
    pub workload: String,
    pub connections: usize,
    pub depth: usize,
    pub keys: u64,
    pub dist: String,
}

impl Report {
    pub fn build(
        info: RunInfo,
        s: &ConnStats,
        seconds: f64,
        server_ticks: &[(u32, u64)],
        client_ticks: u64,
        tck: u64,
    ) -> Report {
        let per_req = |ticks: u64| {
            if s.requests == 0 {
                0.0
            } else {
                let v = ticks as f64 * 1e6 / tck as f64 / s.requests as f64;
                (v * 100.0).round() / 100.0
            }
        };
        let h = &s.hist;
        let q = |x: f64| {
            if h.is_empty() {
                0.0
            } else {
                us(h.value_at_quantile(x))
            }
        };
        Report {
            system: info.system,
            workload: info.workload,
            connections: info.connections,
            depth: info.depth,
            requests: s.requests,
            errors: s.error_responses + s.misses,
            seconds: (seconds * 1000.0).round() / 1000.0,
            rps: if seconds > 0.0 {
                (s.requests as f64 / seconds).round()
            } else {
                0.0
            },
            p50_us: q(0.5),
            p99_us: q(0.99),
            p999_us: q(0.999),
            cpu_us_per_req: (!server_ticks.is_empty())
                .then(|| per_req(server_ticks.iter().map(|&(_, t)| t).sum())),
            cpu_by_pid: server_ticks
                .iter()
                .map(|&(pid, t)| PidCpu {
                    pid,
                    us_per_req: per_req(t),
                })
                .collect(),
            client_cpu_us_per_req: per_req(client_ticks),
            error_responses: s.error_responses,
            misses: s.misses,
            mean_us: (h.mean() / 100.0).round() / 10.0,
            max_us: us(h.max()),
            keys: info.keys,
            dist: info.dist,
            first_error: s.first_error.clone(),
        }
    }

    pub fn print(&self, json: bool) -> Result<()> {
        if json {
            println!("{}", serde_json::to_string(self)?);
            return Ok(());
        }
        println!(
            "{} {}: {} connections x depth {}, keys 1..={} ({})",
            self.system, self.workload, self.connections, self.depth, self.keys, self.dist
        );
        println!(
            "  requests {}  in {:.3} s  =>  {:.0} req/s",
            self.requests, self.seconds, self.rps
        );
        println!(
            "  latency us: p50 {}  p99 {}  p999 {}  mean {}  max {}",
            self.p50_us, self.p99_us, self.p999_us, self.mean_us, self.max_us
        );
        if let Some(c) = self.cpu_us_per_req {
            println!("  server cpu {c} us/req");
            if self.cpu_by_pid.len() > 1 {
                for p in &self.cpu_by_pid {
                    println!("    pid {}: {} us/req", p.pid, p.us_per_req);
                }
            }
        }
        println!("  client cpu {} us/req", self.client_cpu_us_per_req);
        if self.errors == 0 {
            println!("  errors 0");
        } else {
            println!(
                "  ERRORS {} ({} error responses, {} misses/mismatches); first: {}",
                self.errors,
                self.error_responses,
                self.misses,
                self.first_error.as_deref().unwrap_or("?")
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_cpu_is_split_by_pid_and_summed() {
        let mut s = ConnStats::new();
        for _ in 0..100 {
            s.record(1_000, Outcome::Ok, b"");
        }
        let info = RunInfo {
            system: "hs".into(),
            workload: "get".into(),
            connections: 1,
            depth: 1,
            keys: 10,
            dist: "uniform".into(),
        };
        // 100 ticks per second: 3 ticks = 30 ms over 100 requests = 300 us.
        let r = Report::build(info, &s, 1.0, &[(7, 3), (9, 1)], 0, 100);
        assert_eq!(r.cpu_us_per_req, Some(400.0));
        let split: Vec<(u32, f64)> = r.cpu_by_pid.iter().map(|p| (p.pid, p.us_per_req)).collect();
        assert_eq!(split, vec![(7, 300.0), (9, 100.0)]);
    }
}
