//! hs-conformance: long differential runs of hsd against the original
//! HandlerSocket plugin. Prints figures as it goes and, for each class of
//! difference, the reduced transcript. Exit code 1 when anything differs.

mod hsd_process;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};

use hs_conformance::runner::{Runner, Side};
use hs_conformance::store::Store;
use hs_conformance::suite::{self, Config, Mode};
use hs_conformance::target::Endpoint;
use hsd_process::HsdProcess;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Backend {
    Mysql,
    Sqlite,
}

#[derive(Debug, Parser)]
#[command(
    about = "Send the same seeded HandlerSocket request streams to the original plugin and to hsd; compare answers and rows"
)]
struct Args {
    /// First seed (segments use seed, seed+1, ...); default: a fresh one from the clock.
    #[arg(long)]
    seed: Option<u64>,
    /// Requests to send to each server.
    #[arg(long, default_value_t = 100_000)]
    requests: usize,
    /// Requests per segment (each segment starts from freshly reset tables).
    #[arg(long, default_value_t = 400)]
    segment: usize,
    /// Which hsd backend to compare with the plugin.
    #[arg(long, value_enum, default_value_t = Backend::Mysql)]
    backend: Backend,
    /// The hsd binary to start.
    #[arg(long, default_value = "target/debug/hsd")]
    hsd: PathBuf,
    /// hsd's data directory (the embedded store's files).
    #[arg(long, default_value = "target/conformance/hsd-data")]
    data_dir: PathBuf,
    /// The MariaDB server with the plugin loaded.
    #[arg(long, env = "HSD_TEST_MYSQL_URL")]
    mysql_url: String,
    /// The plugin's read port.
    #[arg(long, env = "HSD_HS_ORIGINAL_PORT")]
    plugin_port: u16,
    /// The plugin's write port.
    #[arg(long, env = "HSD_HS_ORIGINAL_PORT_WR")]
    plugin_port_wr: u16,
    /// Stop after this many differing segments (0: run all requests).
    #[arg(long, default_value_t = 0)]
    max_differences: usize,
    /// Do not reduce differing segments.
    #[arg(long)]
    no_reduce: bool,
    /// Replays the reducer may spend per difference class.
    #[arg(long, default_value_t = 150)]
    reduce_budget: usize,
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("hs-conformance: error: {e:#}");
            std::process::exit(2);
        }
    }
}

fn run() -> Result<bool> {
    let args = Args::parse();
    let seed = match args.seed {
        Some(s) => s,
        None => {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .context("clock before 1970")?
                .as_nanos() as u64
                % 1_000_000_000
        }
    };
    let mode = match args.backend {
        Backend::Mysql => Mode::Mysql,
        Backend::Sqlite => Mode::Sqlite,
    };
    if !args.hsd.exists() {
        bail!(
            "no hsd binary at {} (cargo build -p hsd, or --hsd)",
            args.hsd.display()
        );
    }
    let (plugin_db, hsd_db) = match mode {
        Mode::Mysql => ("conf_orig", "conf_hsd"),
        Mode::Sqlite => ("conf_orig_lite", "conf_lite"),
    };
    let backend_url = matches!(mode, Mode::Mysql).then_some(args.mysql_url.as_str());
    let hsd = HsdProcess::start(&args.hsd, &args.data_dir, backend_url)?;
    let hsd_store = match mode {
        Mode::Mysql => Store::mysql(&args.mysql_url, hsd_db)?,
        Mode::Sqlite => Store::sqlite(&args.data_dir, hsd_db)?,
    };
    let plugin = Side {
        endpoint: Endpoint {
            name: "plugin".into(),
            read_addr: format!("127.0.0.1:{}", args.plugin_port),
            write_addr: format!("127.0.0.1:{}", args.plugin_port_wr),
            db: plugin_db.into(),
        },
        store: Store::mysql(&args.mysql_url, plugin_db)?,
    };
    let hsd_side = Side {
        endpoint: Endpoint {
            name: "hsd".into(),
            read_addr: hsd.read_addr.clone(),
            write_addr: hsd.write_addr.clone(),
            db: hsd_db.into(),
        },
        store: hsd_store,
    };
    let mut runner = Runner::new(plugin, hsd_side, mode.tables());
    let cfg = Config {
        mode,
        first_seed: seed,
        requests: args.requests,
        segment_len: args.segment.max(10),
        reduce: !args.no_reduce,
        reduce_budget: args.reduce_budget,
        max_differences: args.max_differences,
    };
    println!(
        "hs-conformance: backend {:?}, first seed {seed}, {} requests, segments of {}",
        args.backend, cfg.requests, cfg.segment_len
    );
    let started = Instant::now();
    let mut last_print = Instant::now();
    let report = suite::run(&mut runner, &cfg, |r| {
        if last_print.elapsed().as_secs() >= 10 {
            last_print = Instant::now();
            println!(
                "  ... {} requests, {} segments, {} differing",
                r.requests, r.segments, r.differing_segments
            );
        }
    })?;
    let secs = started.elapsed().as_secs_f64();
    for f in &report.found {
        let how = if f.reproduced == 0 {
            format!(
                "not seen again in {} replays (timing?); the first run's {} steps",
                suite::REPLAYS,
                f.original_steps
            )
        } else {
            format!(
                "seen again in {} of {} replays; reduced from {} to {} steps",
                f.reproduced,
                suite::REPLAYS,
                f.original_steps,
                f.reduced_steps
            )
        };
        println!(
            "\n=== difference: {}\n    seed {} (--seed {} --requests {} --segment {}), {how}:\n{}",
            f.signature, f.seed, f.seed, cfg.segment_len, cfg.segment_len, f.transcript
        );
    }
    println!("\n{}", report.summary());
    println!(
        "time {secs:.1} s ({:.0} requests/s per server), seeds {seed}..{}",
        report.requests as f64 / secs.max(0.001),
        seed + report.segments as u64
    );
    Ok(report.differing_segments == 0)
}
