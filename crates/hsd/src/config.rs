//! Settings for `hsd serve`: command-line flags, environment variables
//! (`HSD_*`) and a TOML file, in that order of precedence, then defaults.

use crate::backend::sqlite::Synchronous;
use anyhow::Context;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Every option of `hsd serve`. All are optional here so that a config file
/// can fill what the command line and environment leave unset.
#[derive(clap::Args, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServeOptions {
    /// TOML file with any of these options (kebab-case keys, e.g. `port-wr = 9999`).
    #[arg(long, env = "HSD_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(long, env = "HSD_ADDRESS")]
    pub address: Option<String>,
    /// Read port: finds only [default: 9998].
    #[arg(long, env = "HSD_PORT")]
    pub port: Option<u16>,
    /// Write port: finds and writes [default: 9999].
    #[arg(long, env = "HSD_PORT_WR")]
    pub port_wr: Option<u16>,
    /// Where the embedded store keeps `<db>.sqlite` files [default: ./hsd-data].
    #[arg(long, env = "HSD_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Create the demo table test.user with 100,000 rows unless it exists.
    #[arg(long, env = "HSD_DEMO")]
    #[serde(default)]
    pub demo: bool,
    /// Storage: `sqlite` (embedded, the default) or `mysql://user:password@host:port`.
    #[arg(long, env = "HSD_BACKEND")]
    pub backend: Option<String>,
    /// Read worker threads [default: number of cores].
    #[arg(long, env = "HSD_THREADS")]
    pub threads: Option<usize>,
    /// Write worker threads, each committing groups of writes [default: 1].
    #[arg(long, env = "HSD_THREADS_WR")]
    pub threads_wr: Option<usize>,
    /// Shared secret for the read port (prefer --plain-secret-file: argv is visible in ps).
    #[arg(long, env = "HSD_PLAIN_SECRET", hide_env_values = true)]
    pub plain_secret: Option<String>,
    /// Shared secret for the write port.
    #[arg(long, env = "HSD_PLAIN_SECRET_WR", hide_env_values = true)]
    pub plain_secret_wr: Option<String>,
    /// File holding the read port's secret (trailing newline ignored).
    #[arg(long, env = "HSD_PLAIN_SECRET_FILE")]
    pub plain_secret_file: Option<PathBuf>,
    /// File holding the write port's secret.
    #[arg(long, env = "HSD_PLAIN_SECRET_WR_FILE")]
    pub plain_secret_wr_file: Option<PathBuf>,
    /// Most client connections at once; more are closed at accept [default: 10000].
    #[arg(long, env = "HSD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Serve Prometheus metrics over HTTP on ADDR:PORT.
    #[arg(long, env = "HSD_ADMIN_ADDRESS")]
    pub admin_address: Option<String>,
    /// Close connections idle this many seconds; 0 never [default: 300].
    #[arg(long, env = "HSD_IDLE_TIMEOUT")]
    pub idle_timeout: Option<u64>,
    /// Longest request line in bytes; longer closes the connection [default: 16 MiB].
    #[arg(long, env = "HSD_MAX_LINE_SIZE")]
    pub max_line_size: Option<usize>,
    /// Embedded store durability: off, normal or full [default: full].
    #[arg(long, env = "HSD_SYNCHRONOUS", value_enum)]
    pub synchronous: Option<Synchronous>,
    /// PEM certificate chain: serve both ports over TLS (with --tls-key).
    #[arg(long, env = "HSD_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, env = "HSD_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// MySQL backend: read connections, one per read worker thread (replaces
    /// --threads); writes use --threads-wr more [default: threads].
    #[arg(long, env = "HSD_MYSQL_POOL")]
    pub mysql_pool: Option<usize>,
    /// MySQL backend: seconds to wait for the server before answering an error [default: 3].
    #[arg(long, env = "HSD_MYSQL_TIMEOUT")]
    pub mysql_timeout: Option<u64>,
}

/// Settings after merging, with defaults applied.
#[derive(Debug, Clone)]
pub struct Config {
    pub address: String,
    pub port: u16,
    pub port_wr: u16,
    pub data_dir: PathBuf,
    pub demo: bool,
    pub backend: String,
    pub threads: usize,
    pub threads_wr: usize,
    pub secret: Option<Vec<u8>>,
    pub secret_wr: Option<Vec<u8>>,
    pub max_connections: usize,
    pub admin_address: Option<String>,
    pub idle_timeout: Option<Duration>,
    pub max_line_size: usize,
    pub synchronous: Synchronous,
    pub mysql_pool: Option<usize>,
    pub mysql_timeout: Duration,
    /// Certificate and key files when TLS is on.
    pub tls: Option<(PathBuf, PathBuf)>,
}

impl ServeOptions {
    /// Merges flags/environment with the config file and applies defaults.
    pub fn resolve(self) -> anyhow::Result<Config> {
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading config file {}", path.display()))?;
                toml::from_str::<ServeOptions>(&text)
                    .with_context(|| format!("parsing config file {}", path.display()))?
            }
            None => ServeOptions::default(),
        };
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let secret = read_secret(
            self.plain_secret.or(file.plain_secret),
            self.plain_secret_file.or(file.plain_secret_file),
        )?;
        let secret_wr = read_secret(
            self.plain_secret_wr.or(file.plain_secret_wr),
            self.plain_secret_wr_file.or(file.plain_secret_wr_file),
        )?;
        let idle = self.idle_timeout.or(file.idle_timeout).unwrap_or(300);
        let tls = match (
            self.tls_cert.or(file.tls_cert),
            self.tls_key.or(file.tls_key),
        ) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => anyhow::bail!("TLS needs both tls-cert and tls-key"),
        };
        Ok(Config {
            tls,
            address: self
                .address
                .or(file.address)
                .unwrap_or_else(|| "127.0.0.1".into()),
            port: self.port.or(file.port).unwrap_or(9998),
            port_wr: self.port_wr.or(file.port_wr).unwrap_or(9999),
            data_dir: self
                .data_dir
                .or(file.data_dir)
                .unwrap_or_else(|| "hsd-data".into()),
            demo: self.demo || file.demo,
            backend: self
                .backend
                .or(file.backend)
                .unwrap_or_else(|| "sqlite".into()),
            threads: self.threads.or(file.threads).unwrap_or(cores).max(1),
            threads_wr: self.threads_wr.or(file.threads_wr).unwrap_or(1).max(1),
            secret,
            secret_wr,
            max_connections: self
                .max_connections
                .or(file.max_connections)
                .unwrap_or(10_000)
                .max(1),
            admin_address: self.admin_address.or(file.admin_address),
            idle_timeout: (idle > 0).then(|| Duration::from_secs(idle)),
            max_line_size: self
                .max_line_size
                .or(file.max_line_size)
                .unwrap_or(16 << 20)
                .max(1024),
            synchronous: self
                .synchronous
                .or(file.synchronous)
                .unwrap_or(Synchronous::Full),
            mysql_pool: self.mysql_pool.or(file.mysql_pool),
            mysql_timeout: Duration::from_secs(
                self.mysql_timeout
                    .or(file.mysql_timeout)
                    .unwrap_or(3)
                    .max(1),
            ),
        })
    }
}

fn read_secret(inline: Option<String>, file: Option<PathBuf>) -> anyhow::Result<Option<Vec<u8>>> {
    match (inline, file) {
        (Some(_), Some(_)) => anyhow::bail!("give a secret inline or in a file, not both"),
        (Some(s), None) => Ok(Some(s.into_bytes())),
        (None, Some(path)) => Ok(Some(read_secret_file(&path)?)),
        (None, None) => Ok(None),
    }
}

fn read_secret_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    let mut s =
        std::fs::read(path).with_context(|| format!("reading secret file {}", path.display()))?;
    while matches!(s.last(), Some(b'\n' | b'\r')) {
        s.pop();
    }
    Ok(s)
}
