//! hsbench: load generator for hsd (HandlerSocket), memcached, Redis and
//! MySQL/MariaDB, speaking each protocol with the same lean loop so the figures
//! compare side by side. Entry point: CLI parsing, runtime setup, exit codes
//! (0 ok, 1 failure, 2 the run completed but counted error responses).
//!
//!     hsbench --system hs --workload get -c 16 -d 8 --duration 10 --json
//!     hsbench load --system redis --rows 1000000
//!     hsbench delay-proxy --listen 127.0.0.1:0 --to 127.0.0.1:3306 --delay-us 100

mod args;
mod cpu;
mod data;
mod delay;
mod keys;
mod load;
mod net;
mod proto;
mod run;
mod stats;

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use args::{Cli, Cmd};

fn runtime(threads: usize) -> Result<tokio::runtime::Runtime> {
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    };
    rt.context("start tokio runtime")
}

fn main_inner() -> Result<ExitCode> {
    let cli = Cli::parse();
    match cli.cmd {
        Some(Cmd::Load(a)) => {
            runtime(a.threads)?.block_on(load::load(&a))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Run(a)) => bench(a),
        Some(Cmd::DelayProxy(a)) => {
            delay::run(&a)?;
            Ok(ExitCode::SUCCESS)
        }
        None => bench(cli.run),
    }
}

fn bench(a: args::RunArgs) -> Result<ExitCode> {
    let report = runtime(a.threads)?.block_on(run::run(&a))?;
    report.print(a.json)?;
    if report.errors > 0 && !a.allow_errors {
        eprintln!(
            "hsbench: the run counted {} errors (use --allow-errors to exit 0)",
            report.errors
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hsbench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
