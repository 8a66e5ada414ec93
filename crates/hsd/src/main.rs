//! The `hsd` command: `serve` runs the server, `check` reports what would
//! stop or hinder it (without serving), `sql` runs SQL on the embedded
//! store's files.

use clap::{Parser, Subcommand};
use hsd::logging::LogFormat;
use hsd::preflight::Severity;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "hsd",
    // The commit comes from build.rs (`unknown` when built outside git).
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("HSD_COMMIT"), ")"),
    about = "A HandlerSocket server for SQLite and MySQL/MariaDB tables",
    after_help = "To start: `hsd serve --demo`, then read test.user on 127.0.0.1:9998; `hsd serve --help` lists every option. Installed from the package, hsd runs as the systemd service hsd.service with /etc/hsd/hsd.toml; `hsd check --config /etc/hsd/hsd.toml` checks that file before a restart. Documentation: docs/operations.md (/usr/share/doc/hsd/ when installed)."
)]
struct Cli {
    /// More log output (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    #[command(
        after_help = "To start: `hsd serve --demo` serves the table test.user on 127.0.0.1:9998 (reads) and 9999 (writes). Every option is also an HSD_* variable and a --config key; docs/operations.md explains them."
    )]
    Serve(Box<hsd::ServeOptions>),
    /// Check the settings and what they need without serving: files and
    /// their permissions, TLS, free ports, the MySQL servers and the
    /// account's privileges. One line per finding (ok, note, warning,
    /// error); exit 1 on any warning or error.
    #[command(
        after_help = "Takes every option of `hsd serve` and reads them as it does (command line, HSD_* variables, --config file). `hsd serve` refuses to start on the errors and logs the warnings, in the same words. Run it as the user hsd runs as (runuser -u hsd -- hsd check --config /etc/hsd/hsd.toml): permissions are checked for the user who runs it."
    )]
    Check(Box<hsd::ServeOptions>),
    /// Run SQL on the embedded store: hsd sql [--data-dir DIR] <db> "<statement>".
    /// A db that does not exist is created only by a CREATE statement.
    Sql {
        #[arg(long, env = "HSD_DATA_DIR", default_value = "hsd-data")]
        data_dir: PathBuf,
        db: String,
        statement: String,
    },
    /// Print a completion script for a shell: hsd completions bash|zsh|fish.
    /// The package installs the bash one (/usr/share/bash-completion/completions/hsd).
    Completions { shell: clap_complete::Shell },
}

fn main() -> std::process::ExitCode {
    hsd::return_large_blocks();
    let cli = Cli::parse();
    let (format, level) = match &cli.command {
        Command::Serve(opts) => opts.log_settings(),
        // `check` speaks in findings (what the modules it runs would log
        // is among them); -v shows their logs too.
        Command::Check(_) => (LogFormat::Text, Some("off".to_string())),
        Command::Sql { .. } | Command::Completions { .. } => (LogFormat::Text, None),
    };
    let log = hsd::logging::init(format, cli.verbose, level.as_deref());
    let result = match cli.command {
        Command::Serve(opts) => serve(*opts, log),
        Command::Check(opts) => return check(*opts),
        Command::Sql {
            data_dir,
            db,
            statement,
        } => hsd::run_sql(&data_dir, &db, &statement),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "hsd", &mut std::io::stdout());
            Ok(())
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hsd: {}", hsd::preflight::one_line(&format!("{e:#}")));
            std::process::ExitCode::FAILURE
        }
    }
}

fn serve(opts: hsd::ServeOptions, log: hsd::logging::LogHandle) -> anyhow::Result<()> {
    // SIGHUP is ignored until the server listens for it (hsd::serve): its
    // default action would end the process while it starts.
    // SAFETY: sets the disposition of one signal; no handler runs.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    // SIGHUP reads the settings again from what was given.
    let reload = hsd::Reload {
        options: opts.clone(),
        log,
    };
    let config = opts.resolve()?;
    tracing::debug!(?config, "settings");
    for finding in hsd::preflight::before_serving(&config) {
        match finding.severity {
            Severity::Error => anyhow::bail!(finding.text),
            Severity::Warning => tracing::warn!("{}", finding.text),
            Severity::Ok | Severity::Note => tracing::debug!("{}", finding.text),
        }
    }
    raise_open_file_limit(config.max_connections);
    // The main thread accepts and starts the event loops, which run every
    // connection on threads of their own (see hsd::dispatch).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(hsd::serve(config, reload))
}

/// `hsd check`: the findings on stdout, one a line; exit 1 on a problem.
fn check(opts: hsd::ServeOptions) -> std::process::ExitCode {
    let findings = match opts.resolve_for_check() {
        Ok(config) => match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(hsd::preflight::check(&config)),
            Err(e) => vec![hsd::preflight::Finding {
                severity: Severity::Error,
                text: format!("cannot start the check's runtime: {e}"),
            }],
        },
        // The settings cannot be read: that one finding, as `serve` says it.
        Err(e) => vec![hsd::preflight::Finding {
            severity: Severity::Error,
            text: hsd::preflight::one_line(&format!("{e:#}")),
        }],
    };
    for finding in &findings {
        println!("{finding}");
    }
    if findings.iter().any(|f| f.is_problem()) {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// Each connection is a file descriptor: raise the soft limit towards the hard
/// one so `--max-connections` can be reached, and say so when it cannot.
fn raise_open_file_limit(max_connections: usize) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    // Seated connections and newcomers (see hsd::admission).
    let needed = (max_connections + hsd::newcomer_places(max_connections)) as u64 + 64;
    if lim.rlim_cur < needed {
        tracing::warn!(
            open_files = lim.rlim_cur,
            max_connections,
            needed,
            "the open-file limit is below what --max-connections needs (its seats, up to 1000 connections waiting for a first request, and files); accepts will fail before it is reached"
        );
    }
}
