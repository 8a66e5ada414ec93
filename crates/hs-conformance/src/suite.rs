//! Runs many segments (one per seed) through the runner: counts requests and
//! differences by class, reduces the first case of each class to a short
//! transcript. Used by the long-run binary and the short CI test.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::generate::{segment, Step};
use crate::reduce::reduce;
use crate::runner::{transcript, Runner};
use crate::tables::{lite_tables, mysql_tables, vitess_tables};
use crate::values::Range;

/// Which pair of servers is compared (reference vs subject).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Plugin vs hsd on MariaDB: every column type.
    Mysql,
    /// Plugin vs hsd's embedded store: the type-independent part.
    Sqlite,
    /// hsd on MariaDB (which answers as the plugin) vs hsd on MySQL 8: every
    /// column type, which both servers share (the plugin cannot load into
    /// MySQL).
    CrossBackend,
    /// hsd on one MySQL 8 vs hsd on a two-shard Vitess keyspace (vtgate):
    /// every column type, each table sharded by its key (`vschema`).
    Vitess,
}

impl Mode {
    pub fn tables(self) -> Vec<crate::schema::Table> {
        match self {
            Mode::Mysql | Mode::CrossBackend => mysql_tables(),
            Mode::Sqlite => lite_tables(),
            Mode::Vitess => vitess_tables(),
        }
    }

    pub fn range(self) -> Range {
        match self {
            Mode::Mysql | Mode::CrossBackend | Mode::Vitess => Range::Full,
            Mode::Sqlite => Range::TypeIndependent,
        }
    }

    /// The documented differences in the rows two servers keep.
    pub fn rows_exceptions(self) -> Vec<crate::exceptions::RowsException> {
        match self {
            Mode::Mysql | Mode::Sqlite => Vec::new(),
            Mode::CrossBackend => crate::exceptions::cross_backend_rows(),
            Mode::Vitess => crate::exceptions::vitess_rows(),
        }
    }

    /// The documented differences allowed between the two servers.
    pub fn exceptions(self) -> Vec<crate::exceptions::Exception> {
        match self {
            Mode::Mysql | Mode::Sqlite => crate::exceptions::exceptions(),
            Mode::CrossBackend => crate::exceptions::cross_backend(),
            Mode::Vitess => crate::exceptions::vitess(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub mode: Mode,
    pub first_seed: u64,
    /// Stop once this many requests were sent to each server.
    pub requests: usize,
    /// Steps per segment (a segment starts from freshly reset tables).
    pub segment_len: usize,
    /// Reduce the first case of each difference class.
    pub reduce: bool,
    pub reduce_budget: usize,
    /// Stop after this many differing segments (0: never stop early).
    pub max_differences: usize,
}

/// One differing segment.
#[derive(Debug, Clone)]
pub struct Found {
    pub seed: u64,
    pub signature: String,
    /// The reduced transcript (or the whole segment's when not reduced).
    pub transcript: String,
    /// How many steps the transcript has, and how many the segment had up to the difference.
    pub reduced_steps: usize,
    pub original_steps: usize,
    /// How many of `REPLAYS` replays of the segment showed the difference
    /// again. When none did, the transcript is the first run's (the
    /// difference depends on timing, and that run is the only record).
    pub reproduced: usize,
}

/// Replays of a differing segment before it is reduced.
pub const REPLAYS: usize = 3;

#[derive(Debug, Default)]
pub struct Report {
    pub requests: usize,
    pub segments: usize,
    /// Differences covered by a documented exception, by name.
    pub excepted: BTreeMap<&'static str, usize>,
    /// Differing segments by class.
    pub classes: BTreeMap<String, usize>,
    /// The first case of each class, with its transcript.
    pub found: Vec<Found>,
    pub differing_segments: usize,
}

impl Report {
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} requests in {} segments; {} segments differ ({} classes); {} excepted differences\n",
            self.requests,
            self.segments,
            self.differing_segments,
            self.classes.len(),
            self.excepted.values().sum::<usize>()
        );
        for (name, n) in &self.excepted {
            s.push_str(&format!("  excepted {name}: {n}\n"));
        }
        for (class, n) in &self.classes {
            s.push_str(&format!("  {n:>5} x {class}\n"));
        }
        s
    }
}

/// Runs segments with seeds `first_seed`, `first_seed + 1`, ... until
/// `requests` requests were sent; `progress` sees the report after each.
pub fn run(runner: &mut Runner, cfg: &Config, mut progress: impl FnMut(&Report)) -> Result<Report> {
    let tables = cfg.mode.tables();
    let mut report = Report::default();
    let mut seed = cfg.first_seed;
    while report.requests < cfg.requests {
        let len = cfg.segment_len.min(cfg.requests - report.requests + 8);
        let seg = segment(seed, len, &tables, cfg.mode.range());
        let replay = runner
            .run(&seg.steps)
            .with_context(|| format!("segment seed {seed}"))?;
        report.requests += replay.sent;
        report.segments += 1;
        for name in &replay.excepted {
            *report.excepted.entry(name).or_default() += 1;
        }
        if let Some(diff) = &replay.difference {
            if std::env::var_os("HS_CONFORMANCE_DEBUG").is_some() {
                eprintln!("seed {seed} first run:\n{}", transcript(&replay));
            }
            report.differing_segments += 1;
            let signature = diff.signature();
            let count = report.classes.entry(signature.clone()).or_default();
            *count += 1;
            if *count == 1 {
                let upto: Vec<Step> = seg.steps[..=diff.step].to_vec();
                let mut reproduced = 0;
                for _ in 0..REPLAYS {
                    let again = runner
                        .run(&upto)
                        .with_context(|| format!("replay segment seed {seed}"))?;
                    if again.difference.map(|d| d.signature()).as_deref() == Some(&signature) {
                        reproduced += 1;
                    }
                }
                let found = if reproduced == 0 {
                    Found {
                        seed,
                        signature,
                        transcript: transcript(&replay),
                        reduced_steps: upto.len(),
                        original_steps: upto.len(),
                        reproduced,
                    }
                } else {
                    let steps = if cfg.reduce {
                        reduce(runner, &upto, &signature, cfg.reduce_budget)
                            .with_context(|| format!("reduce segment seed {seed}"))?
                    } else {
                        upto.clone()
                    };
                    let shown = runner
                        .run(&steps)
                        .with_context(|| format!("replay reduced segment seed {seed}"))?;
                    Found {
                        seed,
                        signature,
                        transcript: transcript(&shown),
                        reduced_steps: steps.len(),
                        original_steps: upto.len(),
                        reproduced,
                    }
                };
                report.found.push(found);
            }
            if cfg.max_differences > 0 && report.differing_segments >= cfg.max_differences {
                progress(&report);
                break;
            }
        }
        progress(&report);
        seed += 1;
    }
    Ok(report)
}
