//! hs-conformance: long differential runs of hsd against the original
//! HandlerSocket plugin (`--backend mysql`, `sqlite`), or of hsd on MySQL 8
//! against hsd on MariaDB (`--backend mysql8`), or of hsd on a sharded
//! Vitess keyspace against hsd on one MySQL 8 (`--backend vitess`, which
//! needs no MariaDB). Prints figures as it goes
//! and, for each class of difference, the reduced transcript. Exit code 1
//! when anything differs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};

use hs_conformance::launcher;
use hs_conformance::runner::{Runner, Side};
use hs_conformance::store::Store;
use hs_conformance::suite::{self, Config, Mode};
use hs_conformance::target::Endpoint;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Backend {
    /// The plugin vs hsd on MariaDB.
    Mysql,
    /// The plugin vs hsd's embedded store.
    Sqlite,
    /// hsd on MariaDB vs hsd on MySQL 8.
    Mysql8,
    /// hsd on MySQL 8 vs hsd on a sharded Vitess keyspace (vtgate).
    Vitess,
}

#[derive(Debug, Parser)]
#[command(
    about = "Send the same seeded HandlerSocket request streams to the original plugin and to hsd (or to hsd on MariaDB and on MySQL 8); compare answers and rows"
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
    /// Which pair to compare: hsd on MariaDB or on its embedded store
    /// against the plugin, or hsd on MySQL 8 against hsd on MariaDB.
    #[arg(long, value_enum, default_value_t = Backend::Mysql)]
    backend: Backend,
    /// The hsd binary to start.
    #[arg(long, default_value = "target/debug/hsd")]
    hsd: PathBuf,
    /// hsd's data directory (the embedded store's files).
    #[arg(long, default_value = "target/conformance/hsd-data")]
    data_dir: PathBuf,
    /// The MariaDB server with the plugin loaded (not for --backend vitess).
    #[arg(long, env = "HSD_TEST_MYSQL_URL")]
    mysql_url: Option<String>,
    /// The MySQL 8 server (for --backend mysql8 and vitess).
    #[arg(long, env = "HSD_TEST_MYSQL8_URL")]
    mysql8_url: Option<String>,
    /// vtgate, in front of the keyspace `ks` (for --backend vitess).
    #[arg(long, env = "HSD_TEST_VITESS_URL")]
    vitess_url: Option<String>,
    /// The plugin's read port (not for --backend mysql8).
    #[arg(long, env = "HSD_HS_ORIGINAL_PORT")]
    plugin_port: Option<u16>,
    /// The plugin's write port (not for --backend mysql8).
    #[arg(long, env = "HSD_HS_ORIGINAL_PORT_WR")]
    plugin_port_wr: Option<u16>,
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
        Backend::Mysql8 => Mode::CrossBackend,
        Backend::Vitess => Mode::Vitess,
    };
    if !args.hsd.exists() {
        bail!(
            "no hsd binary at {} (cargo build -p hsd, or --hsd)",
            args.hsd.display()
        );
    }
    // The hsd processes live until the run ends.
    let mut running = Vec::new();
    let mariadb_url = || {
        args.mysql_url.as_deref().context(
            "--backend mysql, sqlite and mysql8 need --mysql-url or HSD_TEST_MYSQL_URL (MariaDB)",
        )
    };
    let (reference, subject) = match mode {
        Mode::Mysql | Mode::Sqlite => {
            let mysql_url = mariadb_url()?;
            let (Some(port), Some(port_wr)) = (args.plugin_port, args.plugin_port_wr) else {
                bail!("the plugin's ports are needed (--plugin-port, --plugin-port-wr or HSD_HS_ORIGINAL_PORT[_WR])");
            };
            let (plugin_db, hsd_db) = match mode {
                Mode::Mysql => ("conf_orig", "conf_hsd"),
                _ => ("conf_orig_lite", "conf_lite"),
            };
            let plugin = Side {
                endpoint: Endpoint {
                    name: "plugin".into(),
                    read_addr: format!("127.0.0.1:{port}"),
                    write_addr: format!("127.0.0.1:{port_wr}"),
                    db: plugin_db.into(),
                },
                store: Store::mysql(mysql_url, plugin_db)?,
            };
            let backend_url = matches!(mode, Mode::Mysql).then_some(mysql_url);
            let hsd = start_hsd(&args.hsd, &args.data_dir, backend_url)?;
            let store = match mode {
                Mode::Mysql => Store::mysql(mysql_url, hsd_db)?,
                _ => Store::sqlite(&args.data_dir, hsd_db)?,
            };
            let side = hsd_side("hsd", &hsd, hsd_db, store);
            running.push(hsd);
            (plugin, side)
        }
        Mode::CrossBackend => {
            let mysql_url = mariadb_url()?;
            let Some(mysql8_url) = args.mysql8_url.as_deref() else {
                bail!("--backend mysql8 needs --mysql8-url or HSD_TEST_MYSQL8_URL");
            };
            let (maria_db, mysql8_db) = ("conf_x_mariadb", "conf_x_mysql8");
            let maria = start_hsd(&args.hsd, &args.data_dir.join("mariadb"), Some(mysql_url))?;
            let mysql8 = start_hsd(&args.hsd, &args.data_dir.join("mysql8"), Some(mysql8_url))?;
            let reference = hsd_side(
                "mariadb",
                &maria,
                maria_db,
                Store::mysql(mysql_url, maria_db)?,
            );
            let subject = hsd_side(
                "mysql8",
                &mysql8,
                mysql8_db,
                Store::mysql(mysql8_url, mysql8_db)?,
            );
            running.extend([maria, mysql8]);
            (reference, subject)
        }
        Mode::Vitess => {
            let (Some(mysql8_url), Some(vitess_url)) =
                (args.mysql8_url.as_deref(), args.vitess_url.as_deref())
            else {
                bail!("--backend vitess needs --mysql8-url and --vitess-url (or HSD_TEST_MYSQL8_URL, HSD_TEST_VITESS_URL)");
            };
            let (mysql8_db, keyspace) = ("conf_v_mysql8", "ks");
            let mysql8 = start_hsd(&args.hsd, &args.data_dir.join("mysql8"), Some(mysql8_url))?;
            let vitess = start_hsd(&args.hsd, &args.data_dir.join("vitess"), Some(vitess_url))?;
            let reference = hsd_side(
                "mysql8",
                &mysql8,
                mysql8_db,
                Store::mysql(mysql8_url, mysql8_db)?,
            );
            let subject = hsd_side(
                "vitess",
                &vitess,
                keyspace,
                Store::vitess(vitess_url, keyspace)?,
            );
            running.extend([mysql8, vitess]);
            (reference, subject)
        }
    };
    let mut runner = Runner::new(reference, subject, mode);
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
    drop(running);
    Ok(report.differing_segments == 0)
}

/// Starts hsd on `backend` (a MySQL URL; None: the embedded store in `data_dir`).
fn start_hsd(bin: &Path, data_dir: &Path, backend: Option<&str>) -> Result<launcher::Hsd> {
    std::fs::create_dir_all(data_dir).with_context(|| format!("create {}", data_dir.display()))?;
    let mut args = vec!["--data-dir".to_string(), data_dir.display().to_string()];
    if let Some(url) = backend {
        args.extend(["--backend".to_string(), url.to_string()]);
    }
    launcher::serve(bin, &args)
}

fn hsd_side(name: &str, hsd: &launcher::Hsd, db: &str, store: Store) -> Side {
    Side {
        endpoint: Endpoint {
            name: name.into(),
            read_addr: hsd.read.clone(),
            write_addr: hsd.write.clone(),
            db: db.into(),
        },
        store,
    }
}
