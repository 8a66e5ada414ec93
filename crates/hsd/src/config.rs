//! Settings for `hsd serve`: command-line flags, environment variables
//! (`HSD_*`) and a TOML file, in that order of precedence, then defaults.

use crate::byte_size::ByteSize;
use crate::secrets::{read_trimmed, Secret};
use anyhow::Context;
use hsd_mysql::cache::{CacheSettings, ReadConsistency};
use hsd_mysql::{MysqlSettings, ReadFrom};
use hsd_sqlite::Synchronous;
use mysql_wire::MysqlUrl;
use serde::Deserialize;
use std::fmt;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;

/// MySQL connections each event loop reads through, unless --mysql-pool
/// says otherwise.
pub(crate) const DEFAULT_MYSQL_LINKS: usize = 2;

/// Where the tables live: `--backend`, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BackendChoice {
    /// The embedded store: `<db>.sqlite` files in `--data-dir`.
    Embedded,
    /// A MySQL or MariaDB server. Its `Debug` and `Display` hide the
    /// password (`MysqlUrl`). Boxed: the URL and its options are large.
    Mysql(Box<MysqlUrl>),
}

impl BackendChoice {
    /// Reads `--backend`; a password file, if given, supplies the password.
    /// No message repeats what was given: it may hold a password.
    fn parse(
        given: &str,
        password_file: Option<&mut PasswordFile<'_>>,
    ) -> anyhow::Result<BackendChoice> {
        let choice = match given {
            "sqlite" => BackendChoice::Embedded,
            url if url.starts_with("mysql://") => BackendChoice::Mysql(Box::new(
                MysqlUrl::parse(url)
                    .map_err(|e| anyhow::anyhow!("--backend: invalid MySQL URL: {e}"))?,
            )),
            other => {
                let scheme = other.split_once(':').map_or(other, |(s, _)| s);
                let scheme = if scheme.len() <= 16 { scheme } else { "?" };
                anyhow::bail!(
                    "--backend {scheme:?}... is not a backend: use sqlite (its files live in \
                     --data-dir) or mysql://user:password@host:port"
                )
            }
        };
        match (choice, password_file) {
            (choice, None) => Ok(choice),
            (BackendChoice::Embedded, Some(_)) => {
                anyhow::bail!("--backend-password-file needs a mysql:// backend")
            }
            (BackendChoice::Mysql(mut url), Some(file)) => {
                file.fill("--backend", given, &mut url, OwnPassword::Refused)?;
                Ok(BackendChoice::Mysql(url))
            }
        }
    }
}

/// `--backend-password-file`: read on first use, once, and put into the
/// URLs that need it by one rule (`fill`).
struct PasswordFile<'a> {
    path: &'a Path,
    password: Option<String>,
}

/// What a URL with a password of its own means when the file is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnPassword {
    /// A mistake (`--backend`: the file would go unused).
    Refused,
    /// That server's own account (`--replica`: the file is the default).
    Kept,
}

impl<'a> PasswordFile<'a> {
    fn new(path: &'a Path) -> PasswordFile<'a> {
        PasswordFile {
            path,
            password: None,
        }
    }

    /// Puts the file's password into `url` (given as `given` to `option`):
    /// the URL must name a user; one without a password takes the file's.
    /// No message repeats the URL as given: it may hold a password.
    fn fill(
        &mut self,
        option: &str,
        given: &str,
        url: &mut MysqlUrl,
        own: OwnPassword,
    ) -> anyhow::Result<()> {
        let what = format!("backend password file {}", self.path.display());
        let named_user = given
            .split('?')
            .next()
            .is_some_and(|u| u.rfind('@').is_some_and(|at| at > "mysql://".len()));
        anyhow::ensure!(
            named_user,
            "the {option} URL names no user: write mysql://USER@host:port with the {what}"
        );
        if !url.password.is_empty() {
            anyhow::ensure!(
                own == OwnPassword::Kept,
                "the {option} URL {url} already has a password: remove it from the URL or drop the {what}"
            );
            return Ok(());
        }
        if self.password.is_none() {
            let password =
                read_trimmed(self.path).map_err(|e| anyhow::anyhow!("cannot read {what} ({e})"))?;
            anyhow::ensure!(
                !password.is_empty(),
                "{what} is empty: put the MySQL password in it"
            );
            self.password = Some(
                String::from_utf8(password).map_err(|_| anyhow::anyhow!("{what} is not UTF-8"))?,
            );
        }
        url.password = self.password.clone().unwrap_or_default();
        Ok(())
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendChoice::Embedded => f.write_str("sqlite"),
            BackendChoice::Mysql(url) => fmt::Display::fmt(url, f),
        }
    }
}

/// Every option of `hsd serve`. All are optional here so that a config file
/// can fill what the command line and environment leave unset. No `Debug`:
/// it holds secrets as given; `Config` holds them redacted.

#[derive(clap::Args, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServeOptions {
    /// TOML file with any of these options (kebab-case keys, e.g. `port-wr = 9999`).
    #[arg(long, env = "HSD_CONFIG")]
    #[serde(skip)]
    pub(crate) config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(long, env = "HSD_ADDRESS")]
    pub(crate) address: Option<String>,
    /// Read port: finds only [default: 9998].
    #[arg(long, env = "HSD_PORT")]
    pub(crate) port: Option<u16>,
    /// Write port: finds and writes [default: 9999].
    #[arg(long, env = "HSD_PORT_WR")]
    pub(crate) port_wr: Option<u16>,
    /// Where the embedded store keeps `<db>.sqlite` files [default: ./hsd-data].
    #[arg(long, env = "HSD_DATA_DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// Create the demo table test.user with 100,000 rows unless it exists.
    #[arg(long, env = "HSD_DEMO")]
    #[serde(default)]
    pub(crate) demo: bool,
    /// Storage: `sqlite` (embedded, the default) or `mysql://user:password@host:port`.
    #[arg(long, env = "HSD_BACKEND", hide_env_values = true)]
    pub(crate) backend: Option<String>,
    /// File holding the MySQL password (trailing newline ignored), put into
    /// the --backend URL, which then names a user and no password.
    #[arg(long, env = "HSD_BACKEND_PASSWORD_FILE")]
    pub(crate) backend_password_file: Option<PathBuf>,
    /// Network threads, 1 to 256 [default: number of cores].
    #[arg(long, env = "HSD_THREADS")]
    pub(crate) threads: Option<usize>,
    /// Write-port event loops, each committing groups of writes on its own storage connection, 1 to 64 [default: 1].
    #[arg(long, env = "HSD_THREADS_WR")]
    pub(crate) threads_wr: Option<usize>,
    /// MySQL backend: write groups in flight per write-port loop, each on its
    /// own connection; one runs its statements while the others wait on their
    /// COMMIT, so the server's group commit makes them durable together,
    /// 1 to 16 [default: 2; the embedded store: 1].
    #[arg(long, env = "HSD_WRITE_GROUPS")]
    pub(crate) write_groups: Option<usize>,
    /// Shared secret for the read port (prefer --plain-secret-file: argv is visible in ps).
    #[arg(long, env = "HSD_PLAIN_SECRET", hide_env_values = true)]
    pub(crate) plain_secret: Option<String>,
    /// Shared secret for the write port. Set both secrets, or the port
    /// without one is open to anyone who can connect.
    #[arg(long, env = "HSD_PLAIN_SECRET_WR", hide_env_values = true)]
    pub(crate) plain_secret_wr: Option<String>,
    /// File holding the read port's secret (trailing newline ignored).
    #[arg(long, env = "HSD_PLAIN_SECRET_FILE")]
    pub(crate) plain_secret_file: Option<PathBuf>,
    /// File holding the write port's secret.
    #[arg(long, env = "HSD_PLAIN_SECRET_WR_FILE")]
    pub(crate) plain_secret_wr_file: Option<PathBuf>,
    /// Most client connections at once; more are closed at accept [default: 10000].
    #[arg(long, env = "HSD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Most connections from one IP address at once, both ports together;
    /// more are closed at accept; 0 no limit [default: 0]. Clients behind
    /// one NAT or proxy share an address.
    #[arg(long, env = "HSD_MAX_CONNECTIONS_PER_ADDRESS")]
    pub(crate) max_connections_per_address: Option<usize>,
    /// Serve Prometheus metrics over HTTP on ADDR:PORT.
    #[arg(long, env = "HSD_ADMIN_ADDRESS")]
    pub(crate) admin_address: Option<String>,
    /// Close connections idle this many seconds; 0 never [default: 300].
    #[arg(long, env = "HSD_IDLE_TIMEOUT")]
    pub(crate) idle_timeout: Option<u64>,
    /// Longest request line in bytes; longer closes the connection [default: 16 MiB].
    #[arg(long, env = "HSD_MAX_LINE_SIZE")]
    pub(crate) max_line_size: Option<ByteSize>,
    /// Seconds a client may take to finish a request line it began; 0 no
    /// limit [default: 10].
    #[arg(long, env = "HSD_LINE_TIMEOUT")]
    pub(crate) line_timeout: Option<u64>,
    /// Seconds a client of a port with a secret (or of the memcached port
    /// with SASL) may take to authenticate; 0 no limit [default: 10].
    #[arg(long, env = "HSD_AUTH_TIMEOUT")]
    pub(crate) auth_timeout: Option<u64>,
    /// Bytes of unfinished request lines all connections together may hold
    /// beyond 16 KiB each; a connection that needs more is closed
    /// [default: 128 MiB].
    #[arg(long, env = "HSD_MAX_INPUT_MEMORY")]
    pub(crate) max_input_memory: Option<ByteSize>,
    /// Bytes of answers all connections together may hold while waiting for
    /// their clients to read them; a connection that needs more is closed
    /// [default: 256 MiB].
    #[arg(long, env = "HSD_MAX_OUTPUT_MEMORY")]
    pub(crate) max_output_memory: Option<ByteSize>,
    /// Bytes the answers to one connection's batch of pipelined finds may
    /// hold together; a find whose rows would go past it answers
    /// `1 1 1153` [default: 64 MiB].
    #[arg(long, env = "HSD_MAX_RESPONSE_BYTES")]
    pub(crate) max_response_bytes: Option<ByteSize>,
    /// Embedded store: seconds a statement may run before it is stopped and
    /// its request answered `1 1 1969`; 0 no limit [default: 5].
    #[arg(long, env = "HSD_STATEMENT_TIMEOUT")]
    pub(crate) statement_timeout: Option<u64>,
    /// Seconds shutdown waits for connections to finish what they read
    /// before closing them [default: 30].
    #[arg(long, env = "HSD_DRAIN_TIMEOUT")]
    pub(crate) drain_timeout: Option<u64>,
    /// Embedded store durability: off, normal or full [default: full].
    #[arg(long, env = "HSD_SYNCHRONOUS", value_enum)]
    pub(crate) synchronous: Option<Synchronous>,
    /// Embedded store: MiB of each db file that reads take through a memory
    /// map (0: none, every page by read). Set 0 when the data is much larger
    /// than memory [default: 1024].
    #[arg(long, env = "HSD_SQLITE_MMAP_MIB")]
    pub(crate) sqlite_mmap_mib: Option<usize>,
    /// PEM certificate chain: serve both ports over TLS (with --tls-key).
    #[arg(long, env = "HSD_TLS_CERT", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, env = "HSD_TLS_KEY", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// MySQL backend: read connections per event loop (each loop groups its
    /// clients' reads on them), 1 to 256; each write thread has one more
    /// [default: 2].
    #[arg(long, env = "HSD_MYSQL_POOL")]
    pub(crate) mysql_pool: Option<usize>,
    /// MySQL backend: seconds to wait for the server before answering an error [default: 3].
    #[arg(long, env = "HSD_MYSQL_TIMEOUT")]
    pub(crate) mysql_timeout: Option<u64>,
    /// MySQL backend: a replica of --backend, or another node of its Galera
    /// cluster (same URL form; without a password, the one of
    /// --backend-password-file); repeatable, or several in one value
    /// separated by commas (a comma separates only where the next
    /// `mysql://` begins, so passwords may hold commas). hsd learns from the servers
    /// which one takes writes (read_only = OFF) and sends writes there.
    #[arg(long = "replica", env = "HSD_REPLICAS", hide_env_values = true)]
    #[serde(default)]
    pub(crate) replica: Vec<String>,
    /// With --replica: where the read port's finds run, `primary` or
    /// `replicas` (those that have applied every write hsd acknowledged;
    /// the write port's finds always run on the primary) [default: primary].
    #[arg(long, env = "HSD_READ_FROM", value_enum)]
    pub(crate) read_from: Option<ReadFrom>,
    /// With --replica: seconds between two looks at every server's role and
    /// replication position, 0.05 to 60 [default: 1].
    #[arg(long, env = "HSD_TOPOLOGY_INTERVAL")]
    pub(crate) topology_interval: Option<f64>,
    /// With --read-from replicas: seconds a find waits for a replica to
    /// apply hsd's writes before it runs on the primary, 0 to 60 [default: 1].
    #[arg(long, env = "HSD_REPLICA_WAIT")]
    pub(crate) replica_wait: Option<f64>,
    /// MySQL backend: MiB of memory for the row cache, which answers
    /// lookups by a whole unique key from memory and is kept exact by the
    /// server's binary log (docs/mysql.md); 0 turns it off [default: 0].
    #[arg(long, env = "HSD_ROW_CACHE_MIB")]
    pub(crate) row_cache_mib: Option<u64>,
    /// The replica server id the row cache's binary log reader registers
    /// with, 1 to 4294967295: unique among every replica of the server
    /// (another replica registering the same id takes the stream over)
    /// [default: a random id from 2147483648 up, drawn at start].
    #[arg(long, env = "HSD_ROW_CACHE_SERVER_ID")]
    pub(crate) row_cache_server_id: Option<u32>,
    /// The row cache serves no entry older than this many seconds: the
    /// bound on a row changed where no binary log shows it (a session with
    /// `sql_log_bin = 0`, a restore behind the server's back); 0 for no
    /// bound [default: 60].
    #[arg(long, env = "HSD_ROW_CACHE_MAX_AGE")]
    pub(crate) row_cache_max_age: Option<u32>,
    /// Row cache entries read again from the server per second, to find
    /// rows changed where the binary log does not show it (a found one
    /// drops its table's entries); 0 turns the verifier off [default: 5].
    #[arg(long, env = "HSD_ROW_CACHE_VERIFY")]
    pub(crate) row_cache_verify: Option<u32>,
    /// What a read answered elsewhere than the writer (the row cache, a
    /// replica) must see: `acknowledged` (every write this hsd process
    /// acknowledged before it arrived) or `strict` (every write committed
    /// on the writer before it arrived, from any client or hsd process; one
    /// position query to the writer per batch) [default: acknowledged].
    #[arg(long, env = "HSD_READ_CONSISTENCY", value_enum)]
    pub(crate) read_consistency: Option<ReadConsistency>,
    /// Serve the memcached protocols on ADDR:PORT, over the tables of the
    /// containers (docs/memcached.md). Without --memcached-sasl-user anyone
    /// who can connect reads and writes: bind it to loopback or a private
    /// network [default: off].
    #[arg(long, env = "HSD_MEMCACHED_ADDRESS")]
    pub(crate) memcached_address: Option<String>,
    /// Largest value one memcached store may carry, in bytes [default: 1 MiB].
    #[arg(long, env = "HSD_MEMCACHED_MAX_ITEM_SIZE")]
    pub(crate) memcached_max_item_size: Option<ByteSize>,
    /// SASL PLAIN user of the memcached port: with it, clients must
    /// authenticate on the binary protocol, and the text protocol is
    /// refused, as by memcached -S (needs a password too).
    #[arg(long, env = "HSD_MEMCACHED_SASL_USER")]
    pub(crate) memcached_sasl_user: Option<String>,
    /// That user's password (prefer --memcached-sasl-password-file: argv is
    /// visible in ps).
    #[arg(long, env = "HSD_MEMCACHED_SASL_PASSWORD", hide_env_values = true)]
    pub(crate) memcached_sasl_password: Option<String>,
    /// File holding that password (trailing newline ignored).
    #[arg(long, env = "HSD_MEMCACHED_SASL_PASSWORD_FILE")]
    pub(crate) memcached_sasl_password_file: Option<PathBuf>,
    /// Seconds between sweeps of expired rows, in containers with an expiry
    /// column; 0 no sweep (expired rows are still never returned) [default: 60].
    #[arg(long, env = "HSD_MEMCACHED_SWEEP_INTERVAL")]
    pub(crate) memcached_sweep_interval: Option<u64>,
    /// Expired rows one sweep deletes at most, per container, 1 to 100000
    /// [default: 1000].
    #[arg(long, env = "HSD_MEMCACHED_SWEEP_LIMIT")]
    pub(crate) memcached_sweep_limit: Option<usize>,
    /// Log level: error, warn, info, debug or trace, or a filter as
    /// RUST_LOG takes it (info,hsd_mysql=debug); -v and RUST_LOG win over
    /// it. SIGHUP applies a new one from the config file [default: info].
    #[arg(long, env = "HSD_LOG_LEVEL")]
    pub(crate) log_level: Option<String>,
    /// Log lines as `text` or `json` (one object a line: timestamp, level,
    /// target, fields) [default: text].
    #[arg(long, env = "HSD_LOG_FORMAT", value_enum)]
    pub(crate) log_format: Option<crate::logging::LogFormat>,
    /// The config file's `[memcached]` table: containers and options.
    #[arg(skip)]
    #[serde(default)]
    pub(crate) memcached: Option<crate::memcached::FileSettings>,
}

/// `--row-cache-max-age`'s default, in seconds: a hot key is read again
/// from the server once a minute, a negligible cost, and a change no
/// binary log shows is served for a minute at most.
const DEFAULT_ROW_CACHE_MAX_AGE: u32 = 60;

/// `--row-cache-verify`'s default, in rows a second: two small
/// statements each on a connection of the verifier's own.
const DEFAULT_ROW_CACHE_VERIFY: u32 = 5;

/// `--row-cache-server-id`'s default: drawn at start from the upper half
/// of the ids (servers' own ids are usually small), so that two hsd
/// processes, on one host or two, share one with odds of 1 in 2^31.
fn random_server_id() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    0x8000_0000 | (h.finish() as u32 & 0x7fff_ffff)
}

/// The default reader id of this process: drawn once, so that reading the
/// settings again (SIGHUP) finds it unchanged.
fn process_server_id() -> u32 {
    static ID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ID.get_or_init(random_server_id)
}

/// The URLs of `--replica` values: one value may hold several, separated
/// by commas, and a comma separates only where a new `mysql://` URL begins
/// (a password may hold commas; splitting at every comma once cut one in
/// two and showed the half in the error).
fn replica_urls(values: &[String]) -> Vec<&str> {
    let mut urls = Vec::new();
    for value in values {
        let mut start = 0;
        for (i, _) in value.match_indices(',') {
            if value[i + 1..].trim_start().starts_with("mysql://") {
                urls.push(value[start..i].trim());
                start = i + 1;
            }
        }
        urls.push(value[start..].trim());
    }
    urls.retain(|u| !u.is_empty());
    urls
}

/// Reads one `--replica` URL; a password file, if given, supplies the
/// password of a URL without one (the same account on every server).
/// No message repeats the URL: it may hold a password.
fn parse_replica(
    given: &str,
    password_file: Option<&mut PasswordFile<'_>>,
) -> anyhow::Result<MysqlUrl> {
    anyhow::ensure!(
        given.starts_with("mysql://"),
        "--replica takes mysql://user:password@host:port URLs"
    );
    let mut url =
        MysqlUrl::parse(given).map_err(|e| anyhow::anyhow!("--replica: invalid MySQL URL: {e}"))?;
    if let Some(file) = password_file {
        file.fill("--replica", given, &mut url, OwnPassword::Kept)?;
    }
    Ok(url)
}

/// A number of seconds in `range`.
fn seconds(name: &str, value: f64, range: RangeInclusive<f64>) -> anyhow::Result<Duration> {
    anyhow::ensure!(
        range.contains(&value),
        "{name} must be {} to {} seconds, not {value}",
        range.start(),
        range.end()
    );
    Ok(Duration::from_secs_f64(value))
}

/// `--threads`: read-port event loops.
pub(crate) const THREADS: RangeInclusive<usize> = 1..=256;
/// `--threads-wr`: write-port event loops, each committing on its own storage connection.
pub(crate) const THREADS_WR: RangeInclusive<usize> = 1..=64;
/// `--write-groups`: MySQL write groups in flight per write-port loop.
pub(crate) const WRITE_GROUPS: RangeInclusive<usize> = 1..=16;
/// `--write-groups` on MySQL unless told: a second group runs its statements
/// while the first waits on its COMMIT (docs/benchmarks.md).
pub(crate) const DEFAULT_MYSQL_WRITE_GROUPS: usize = 2;
/// `--mysql-pool`: read connections to the MySQL server per event loop.
pub(crate) const MYSQL_POOL: RangeInclusive<usize> = 1..=256;
/// `--sqlite-mmap-mib`: SQLite maps at most 2 GiB of a file (its build's
/// SQLITE_MAX_MMAP_SIZE) whatever is asked.
pub(crate) const SQLITE_MMAP_MIB: RangeInclusive<usize> = 0..=2048;

/// `--max-response-bytes` unless set.
pub(crate) const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;
/// Below this, ordinary answers would not fit.
pub(crate) const MIN_MAX_RESPONSE_BYTES: usize = 4096;

/// Settings after merging, with defaults applied and checked: thread counts
/// in range, secrets non-empty, TLS files loaded, the data dir writable.
/// Printing it shows no secret (see `secrets`).
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) address: String,
    pub(crate) port: u16,
    pub(crate) port_wr: u16,
    pub(crate) data_dir: PathBuf,
    pub(crate) demo: bool,
    pub(crate) backend: BackendChoice,
    pub(crate) threads: usize,
    pub(crate) threads_wr: usize,
    /// Write groups in flight per write-port loop (1 on the embedded store).
    pub(crate) write_groups: usize,
    pub(crate) secret: Option<Secret>,
    pub(crate) secret_wr: Option<Secret>,
    pub max_connections: usize,
    /// `--max-connections-per-address`; None when 0 (no limit).
    pub(crate) max_connections_per_address: Option<usize>,
    pub(crate) admin_address: Option<String>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) max_line_size: usize,
    pub(crate) line_timeout: Option<Duration>,
    pub(crate) auth_timeout: Option<Duration>,
    pub(crate) max_input_memory: usize,
    pub(crate) max_output_memory: usize,
    pub(crate) max_response_bytes: usize,
    pub(crate) statement_timeout: Option<Duration>,
    pub(crate) drain_timeout: Duration,
    pub(crate) synchronous: Synchronous,
    /// Bytes of each db file read through a memory map.
    pub(crate) sqlite_mmap_bytes: i64,
    pub(crate) mysql_pool: Option<usize>,
    pub(crate) mysql_timeout: Duration,
    /// `--replica` servers (empty: one server).
    pub(crate) replicas: Vec<MysqlUrl>,
    pub(crate) read_from: ReadFrom,
    pub(crate) topology_interval: Duration,
    pub(crate) replica_wait: Duration,
    /// `--row-cache-mib` (more than 0) and `--read-consistency`.
    pub(crate) row_cache: Option<CacheSettings>,
    /// `--read-consistency` (the replicas' reads; the cache's is above).
    pub(crate) read_consistency: ReadConsistency,
    /// Certificate, key and the acceptor built from them when TLS is on.
    pub(crate) tls: Option<Tls>,
    /// `--memcached-address` and what goes with it (None: off).
    pub(crate) memcached: Option<crate::memcached::MemcachedConfig>,
    /// The warning to log at start when the embedded store's data dir is on
    /// a full disk (see `check_data_dir`).
    data_disk_full: Option<String>,
    /// Warnings for files holding a secret that every user may read.
    secrets_exposed: Vec<String>,
    /// `hsd check`: the data directory does not exist yet (`serve` would
    /// make it; `could_create_dir` found that it can).
    data_dir_missing: bool,
    /// `--config`: the file SIGHUP reads again.
    pub(crate) config_file: Option<PathBuf>,
    /// `--log-level` (None: `logging::DEFAULT_LEVEL`).
    pub(crate) log_level: Option<String>,
    pub(crate) log_format: crate::logging::LogFormat,
}

/// TLS settings, loaded and checked before anything listens.
#[derive(Clone)]
pub(crate) struct Tls {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
    pub(crate) acceptor: TlsAcceptor,
    /// What the acceptor's handshakes present: a reload replaces it.
    pub(crate) keys: Arc<crate::tls::Rotating>,
    /// A digest of the certificate and key files as loaded.
    pub(crate) loaded: String,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The MySQL backend's settings from the configuration: the one place
    /// `hsd serve` (to start the backend) and `hsd check` (to check the
    /// servers) take them from.
    pub(crate) fn mysql_settings(&self, url: &MysqlUrl) -> MysqlSettings {
        MysqlSettings {
            target: url.to_string(),
            url: url.clone(),
            timeout: self.mysql_timeout,
            links_per_loop: self.mysql_pool.unwrap_or(DEFAULT_MYSQL_LINKS),
            replicas: self
                .replicas
                .iter()
                .map(|u| (u.clone(), u.to_string()))
                .collect(),
            read_from: self.read_from,
            topology_interval: self.topology_interval,
            replica_wait: self.replica_wait,
            row_cache: self.row_cache.clone(),
            read_consistency: self.read_consistency,
        }
    }

    /// When only one port has a secret, the other is open to anyone who can
    /// connect (the original HandlerSocket's semantics, kept): the warning
    /// to log at start, naming that port.
    pub fn unprotected_port(&self) -> Option<String> {
        match (&self.secret, &self.secret_wr) {
            (Some(_), None) => Some(format!(
                "only the read port has a secret: the write port {}:{} takes reads AND writes from anyone who can connect, with no A; set --plain-secret-wr (or --plain-secret-wr-file) to protect it",
                self.address, self.port_wr
            )),
            (None, Some(_)) => Some(format!(
                "only the write port has a secret: the read port {}:{} serves reads to anyone who can connect, with no A; set --plain-secret (or --plain-secret-file) if reads must be protected",
                self.address, self.port
            )),
            _ => None,
        }
    }

    /// Every setting by its config key, in a form that differs when the
    /// setting does (secrets and TLS files by a digest of their bytes, never
    /// shown): what a reload compares. Not for logs.
    pub(crate) fn settings(&self) -> Vec<(&'static str, String)> {
        use sha2::{Digest, Sha256};
        let digest = |bytes: &[u8]| format!("{:x}", Sha256::digest(bytes));
        let secret = |s: &Option<Secret>| {
            s.as_ref()
                .map(|s| digest(&s.clone().into_bytes()))
                .unwrap_or_default()
        };
        let backend = match &self.backend {
            BackendChoice::Mysql(url) => format!("{url} {}", digest(url.password.as_bytes())),
            other => other.to_string(),
        };
        let replicas: Vec<String> = self
            .replicas
            .iter()
            .map(|u| format!("{u} {}", digest(u.password.as_bytes())))
            .collect();
        vec![
            ("address", self.address.clone()),
            ("port", self.port.to_string()),
            ("port-wr", self.port_wr.to_string()),
            ("data-dir", self.data_dir.display().to_string()),
            ("demo", self.demo.to_string()),
            ("backend", backend),
            ("threads", self.threads.to_string()),
            ("threads-wr", self.threads_wr.to_string()),
            ("write-groups", self.write_groups.to_string()),
            ("plain-secret", secret(&self.secret)),
            ("plain-secret-wr", secret(&self.secret_wr)),
            ("max-connections", self.max_connections.to_string()),
            (
                "max-connections-per-address",
                format!("{:?}", self.max_connections_per_address),
            ),
            ("admin-address", format!("{:?}", self.admin_address)),
            ("idle-timeout", format!("{:?}", self.idle_timeout)),
            ("max-line-size", self.max_line_size.to_string()),
            ("line-timeout", format!("{:?}", self.line_timeout)),
            ("auth-timeout", format!("{:?}", self.auth_timeout)),
            ("max-input-memory", self.max_input_memory.to_string()),
            ("max-output-memory", self.max_output_memory.to_string()),
            ("max-response-bytes", self.max_response_bytes.to_string()),
            ("statement-timeout", format!("{:?}", self.statement_timeout)),
            ("drain-timeout", format!("{:?}", self.drain_timeout)),
            ("synchronous", format!("{:?}", self.synchronous)),
            ("sqlite-mmap-mib", self.sqlite_mmap_bytes.to_string()),
            ("mysql-pool", format!("{:?}", self.mysql_pool)),
            ("mysql-timeout", format!("{:?}", self.mysql_timeout)),
            ("replica", replicas.join(",")),
            ("read-from", format!("{:?}", self.read_from)),
            ("topology-interval", format!("{:?}", self.topology_interval)),
            ("replica-wait", format!("{:?}", self.replica_wait)),
            ("row-cache", format!("{:?}", self.row_cache)),
            ("read-consistency", format!("{:?}", self.read_consistency)),
            // Both files, as loaded: a reload replaces them together.
            (
                "tls-cert and tls-key",
                self.tls
                    .as_ref()
                    .map(|t| format!("{} {} {}", t.cert.display(), t.key.display(), t.loaded))
                    .unwrap_or_default(),
            ),
            ("memcached", format!("{:?}", self.memcached)),
            ("log-format", self.log_format.name().to_string()),
            (
                "log-level",
                self.log_level
                    .clone()
                    .unwrap_or_else(|| crate::logging::DEFAULT_LEVEL.to_string()),
            ),
        ]
    }

    /// When the embedded store's disk is full: the warning to log at start
    /// (hsd serves reads; writes fail until space is freed).
    pub fn data_disk_full(&self) -> Option<&str> {
        self.data_disk_full.as_deref()
    }

    /// `hsd check` found no data directory, which `hsd serve` would make.
    pub fn data_dir_missing(&self) -> bool {
        self.data_dir_missing
    }

    /// One warning per file holding a secret that every user may read.
    pub fn secrets_exposed(&self) -> &[String] {
        &self.secrets_exposed
    }
}

impl ServeOptions {
    /// The log format and level as given, read before the other settings
    /// so that what reading them logs is already in that format. A file
    /// that cannot be read gives none here (`resolve` says why).
    pub fn log_settings(&self) -> (crate::logging::LogFormat, Option<String>) {
        #[derive(Default, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        struct LogKeys {
            log_level: Option<String>,
            log_format: Option<crate::logging::LogFormat>,
        }
        let file = self
            .config
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| {
                toml::from_str::<LogKeys>(&crate::config_file::kebab_case_top_level_keys(&text))
                    .ok()
            })
            .unwrap_or_default();
        (
            self.log_format.or(file.log_format).unwrap_or_default(),
            self.log_level.clone().or(file.log_level),
        )
    }

    /// Merges flags/environment with the config file, applies defaults and
    /// checks the result; every error is one line saying what to change.
    /// Makes the embedded store's data directory when it is missing.
    pub fn resolve(self) -> anyhow::Result<Config> {
        self.resolve_with(DataDir::Create)
    }

    /// The same for `hsd check`, which changes nothing on disk: a missing
    /// data directory is judged by whether it could be made.
    pub fn resolve_for_check(self) -> anyhow::Result<Config> {
        self.resolve_with(DataDir::LookOnly)
    }

    fn resolve_with(self, data_dir: DataDir) -> anyhow::Result<Config> {
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading config file {}", path.display()))?;
                crate::config_file::parse::<ServeOptions>(path, &text)?
            }
            None => ServeOptions::default(),
        };
        let secrets_exposed = secrets_exposed(&self, &file);
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let secret = read_secret(
            "--plain-secret",
            self.plain_secret.or(file.plain_secret),
            self.plain_secret_file.or(file.plain_secret_file),
        )?;
        let secret_wr = read_secret(
            "--plain-secret-wr",
            self.plain_secret_wr.or(file.plain_secret_wr),
            self.plain_secret_wr_file.or(file.plain_secret_wr_file),
        )?;
        let password_path = self.backend_password_file.or(file.backend_password_file);
        let mut password_file = password_path.as_deref().map(PasswordFile::new);
        let backend = BackendChoice::parse(
            self.backend.or(file.backend).as_deref().unwrap_or("sqlite"),
            password_file.as_mut(),
        )?;
        let replica_values = if self.replica.is_empty() {
            file.replica
        } else {
            self.replica
        };
        let replicas = replica_urls(&replica_values)
            .into_iter()
            .map(|u| parse_replica(u, password_file.as_mut()))
            .collect::<anyhow::Result<Vec<MysqlUrl>>>()?;
        anyhow::ensure!(
            replicas.is_empty() || matches!(backend, BackendChoice::Mysql(_)),
            "--replica needs a mysql:// --backend (the embedded store has no replicas)"
        );
        let topology_interval = seconds(
            "--topology-interval",
            self.topology_interval
                .or(file.topology_interval)
                .unwrap_or(1.0),
            0.05..=60.0,
        )?;
        let replica_wait = seconds(
            "--replica-wait",
            self.replica_wait.or(file.replica_wait).unwrap_or(1.0),
            0.0..=60.0,
        )?;
        let row_cache_mib = self.row_cache_mib.or(file.row_cache_mib).unwrap_or(0);
        anyhow::ensure!(
            row_cache_mib <= 1 << 20,
            "--row-cache-mib {row_cache_mib}: at most 1048576 (1 TiB)"
        );
        anyhow::ensure!(
            row_cache_mib == 0 || matches!(backend, BackendChoice::Mysql(_)),
            "--row-cache-mib needs a mysql:// --backend (the embedded store reads at memory speed already)"
        );
        let consistency = self
            .read_consistency
            .or(file.read_consistency)
            .unwrap_or(ReadConsistency::Acknowledged);
        let server_id = self.row_cache_server_id.or(file.row_cache_server_id);
        anyhow::ensure!(
            server_id != Some(0),
            "--row-cache-server-id 0: a replica id is 1 to 4294967295 (0 is no replica)"
        );
        let max_age = self
            .row_cache_max_age
            .or(file.row_cache_max_age)
            .unwrap_or(DEFAULT_ROW_CACHE_MAX_AGE);
        let verify = self
            .row_cache_verify
            .or(file.row_cache_verify)
            .unwrap_or(DEFAULT_ROW_CACHE_VERIFY);
        anyhow::ensure!(
            verify <= 10_000,
            "--row-cache-verify {verify}: at most 10000 rows a second"
        );
        let row_cache = (row_cache_mib > 0).then_some(CacheSettings {
            server_id: server_id.unwrap_or_else(process_server_id),
            bytes: (row_cache_mib as usize) << 20,
            consistency,
            max_age: (max_age > 0).then_some(max_age),
            verify_per_second: (verify > 0).then_some(verify),
        });
        let threads = in_range(
            "--threads",
            self.threads
                .or(file.threads)
                .unwrap_or(cores.min(*THREADS.end())),
            THREADS,
        )?;
        let threads_wr = in_range(
            "--threads-wr",
            self.threads_wr.or(file.threads_wr).unwrap_or(1),
            THREADS_WR,
        )?;
        let write_groups = match (self.write_groups.or(file.write_groups), &backend) {
            (Some(n), BackendChoice::Mysql(_)) => in_range("--write-groups", n, WRITE_GROUPS)?,
            (None, BackendChoice::Mysql(_)) => DEFAULT_MYSQL_WRITE_GROUPS,
            (Some(n), BackendChoice::Embedded) if n != 1 => anyhow::bail!(
                "--write-groups applies to a MySQL backend: the embedded store has one writer per db file"
            ),
            (_, BackendChoice::Embedded) => 1,
        };
        let mysql_pool = match self.mysql_pool.or(file.mysql_pool) {
            Some(n) => Some(in_range("--mysql-pool", n, MYSQL_POOL)?),
            None => None,
        };
        let idle = self.idle_timeout.or(file.idle_timeout).unwrap_or(300);
        let line_timeout = self.line_timeout.or(file.line_timeout).unwrap_or(10);
        let auth_timeout = self.auth_timeout.or(file.auth_timeout).unwrap_or(10);
        let drain_timeout = self.drain_timeout.or(file.drain_timeout).unwrap_or(30);
        let sqlite_mmap_mib = in_range(
            "--sqlite-mmap-mib",
            self.sqlite_mmap_mib
                .or(file.sqlite_mmap_mib)
                .unwrap_or(1024),
            SQLITE_MMAP_MIB,
        )?;
        let max_input_memory = self
            .max_input_memory
            .or(file.max_input_memory)
            .map_or(128 << 20, |s| s.0);
        let max_output_memory = self
            .max_output_memory
            .or(file.max_output_memory)
            .map_or(256 << 20, |s| s.0);
        let max_response_bytes = self
            .max_response_bytes
            .or(file.max_response_bytes)
            .map_or(DEFAULT_MAX_RESPONSE_BYTES, |s| s.0);
        anyhow::ensure!(
            max_response_bytes >= MIN_MAX_RESPONSE_BYTES,
            "--max-response-bytes must be at least {MIN_MAX_RESPONSE_BYTES}, not {max_response_bytes}"
        );
        let statement_timeout = self
            .statement_timeout
            .or(file.statement_timeout)
            .unwrap_or(5);
        let tls = match (
            self.tls_cert.or(file.tls_cert),
            self.tls_key.or(file.tls_key),
        ) {
            (Some(cert), Some(key)) => {
                let (acceptor, keys, loaded) = crate::tls::acceptor(&cert, &key)?;
                Some(Tls {
                    acceptor,
                    keys,
                    loaded,
                    cert,
                    key,
                })
            }
            (None, None) => None,
            _ => anyhow::bail!("TLS needs both tls-cert and tls-key"),
        };
        let memcached_sasl = match (
            self.memcached_sasl_user.or(file.memcached_sasl_user),
            read_secret(
                "--memcached-sasl-password",
                self.memcached_sasl_password
                    .or(file.memcached_sasl_password),
                self.memcached_sasl_password_file
                    .or(file.memcached_sasl_password_file),
            )?,
        ) {
            (Some(user), Some(password)) => {
                Some(crate::memcached::SaslLogin::new(user, password)?)
            }
            (None, None) => None,
            (Some(_), None) => anyhow::bail!(
                "--memcached-sasl-user needs --memcached-sasl-password or --memcached-sasl-password-file"
            ),
            (None, Some(_)) => {
                anyhow::bail!("--memcached-sasl-password needs --memcached-sasl-user")
            }
        };
        let memcached = crate::memcached::MemcachedConfig::resolve(
            crate::memcached::MemcachedOptions {
                address: self.memcached_address.or(file.memcached_address),
                max_item_size: self
                    .memcached_max_item_size
                    .or(file.memcached_max_item_size)
                    .map(|s| s.0),
                sasl: memcached_sasl,
                sweep_interval: self
                    .memcached_sweep_interval
                    .or(file.memcached_sweep_interval),
                sweep_limit: self.memcached_sweep_limit.or(file.memcached_sweep_limit),
            },
            file.memcached,
        )?;
        let log_level = self.log_level.or(file.log_level);
        if let Some(level) = &log_level {
            crate::logging::check_level(level).map_err(|e| anyhow::anyhow!(e))?;
        }
        let mut config = Config {
            config_file: self.config.clone(),
            log_level,
            log_format: self.log_format.or(file.log_format).unwrap_or_default(),
            memcached,
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
            backend,
            threads,
            threads_wr,
            write_groups,
            secret,
            secret_wr,
            max_connections: self
                .max_connections
                .or(file.max_connections)
                .unwrap_or(10_000)
                .max(1),
            max_connections_per_address: self
                .max_connections_per_address
                .or(file.max_connections_per_address)
                .filter(|&n| n > 0),
            admin_address: self.admin_address.or(file.admin_address),
            idle_timeout: (idle > 0).then(|| Duration::from_secs(idle)),
            line_timeout: (line_timeout > 0).then(|| Duration::from_secs(line_timeout)),
            auth_timeout: (auth_timeout > 0).then(|| Duration::from_secs(auth_timeout)),
            max_input_memory,
            max_output_memory,
            max_response_bytes,
            statement_timeout: (statement_timeout > 0)
                .then(|| Duration::from_secs(statement_timeout)),
            drain_timeout: Duration::from_secs(drain_timeout),
            max_line_size: self
                .max_line_size
                .or(file.max_line_size)
                .map_or(16 << 20, |s| s.0)
                .max(1024),
            synchronous: self
                .synchronous
                .or(file.synchronous)
                .unwrap_or(Synchronous::Full),
            // At most 2048 MiB (checked above): fits an i64.
            sqlite_mmap_bytes: (sqlite_mmap_mib as i64) << 20,
            mysql_pool,
            replicas,
            read_from: self
                .read_from
                .or(file.read_from)
                .unwrap_or(ReadFrom::Primary),
            topology_interval,
            replica_wait,
            row_cache,
            read_consistency: consistency,
            mysql_timeout: Duration::from_secs(
                self.mysql_timeout
                    .or(file.mysql_timeout)
                    .unwrap_or(3)
                    .max(1),
            ),
            data_disk_full: None,
            secrets_exposed,
            data_dir_missing: false,
        };
        if config.backend == BackendChoice::Embedded {
            if data_dir == DataDir::LookOnly && !config.data_dir.exists() {
                could_create_dir(&config.data_dir)?;
                config.data_dir_missing = true;
            } else {
                config.data_disk_full = check_data_dir(&config.data_dir)?;
            }
        }
        Ok(config)
    }
}

/// What reading the settings may do to the embedded store's data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataDir {
    /// `hsd serve`: make it when missing.
    Create,
    /// `hsd check`: look only.
    LookOnly,
}

/// Whether `create_dir_all(dir)` would succeed, asked without making
/// anything: the nearest existing ancestor must be a directory this user
/// may write into. The error is the one the making would give, in the same
/// words as `check_data_dir`'s.
fn could_create_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let d = dir.display();
    let hint = "fix its permissions or choose another --data-dir";
    let refused =
        |e: std::io::Error| anyhow::anyhow!("cannot create data directory {d} ({e}): {hint}");
    let absolute = std::path::absolute(dir).map_err(refused)?;
    let Some(existing) = absolute.ancestors().skip(1).find(|a| a.exists()) else {
        return Ok(());
    };
    if !existing.is_dir() {
        return Err(refused(std::io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    let path = std::ffi::CString::new(existing.as_os_str().as_bytes())
        .map_err(|_| refused(std::io::Error::from_raw_os_error(libc::EINVAL)))?;
    // SAFETY: access only reads the NUL-terminated path it is given.
    if unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(refused(std::io::Error::last_os_error()));
    }
    Ok(())
}

fn in_range(name: &str, value: usize, range: RangeInclusive<usize>) -> anyhow::Result<usize> {
    anyhow::ensure!(
        range.contains(&value),
        "{name} must be {} to {}, not {value}",
        range.start(),
        range.end()
    );
    Ok(value)
}

/// The files that hold a secret (the secret and password files, and the
/// config file when it holds one itself) that every user of the machine
/// may read: a warning for each, naming the fix. A file that cannot be
/// looked at is left to the code that reads it.
fn secrets_exposed(given: &ServeOptions, file: &ServeOptions) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let pick = |a: &Option<PathBuf>, b: &Option<PathBuf>| a.clone().or_else(|| b.clone());
    let mut holders = vec![
        (
            "--plain-secret-file",
            pick(&given.plain_secret_file, &file.plain_secret_file),
        ),
        (
            "--plain-secret-wr-file",
            pick(&given.plain_secret_wr_file, &file.plain_secret_wr_file),
        ),
        (
            "--backend-password-file",
            pick(&given.backend_password_file, &file.backend_password_file),
        ),
        (
            "--memcached-sasl-password-file",
            pick(
                &given.memcached_sasl_password_file,
                &file.memcached_sasl_password_file,
            ),
        ),
    ];
    let url_has_password = |u: &str| MysqlUrl::parse(u).is_ok_and(|u| !u.password.is_empty());
    let config_holds_secret = file.plain_secret.is_some()
        || file.plain_secret_wr.is_some()
        || file.memcached_sasl_password.is_some()
        || file.backend.as_deref().is_some_and(url_has_password)
        || file.replica.iter().any(|u| url_has_password(u));
    if config_holds_secret {
        holders.push(("--config", given.config.clone()));
    }
    holders
        .into_iter()
        .filter_map(|(what, path)| {
            let path = path?;
            let mode = std::fs::metadata(&path).ok()?.permissions().mode();
            (mode & 0o004 != 0).then(|| {
                format!(
                    "{} ({what}) holds a secret and every user may read it (mode {:04o}): \
                     chmod o-rwx {}",
                    path.display(),
                    mode & 0o7777,
                    path.display()
                )
            })
        })
        .collect()
}

fn read_secret(
    flag: &str,
    inline: Option<String>,
    file: Option<PathBuf>,
) -> anyhow::Result<Option<Secret>> {
    match (inline, file) {
        (Some(_), Some(_)) => anyhow::bail!("give {flag} inline or in a file, not both"),
        (Some(s), None) => {
            let var = format!("HSD_{}", flag[2..].replace('-', "_").to_uppercase());
            Ok(Some(Secret::new(
                s.into_bytes(),
                &format!("{flag} ({var})"),
            )?))
        }
        (None, Some(path)) => Ok(Some(Secret::from_file(&path, &format!("{flag}-file"))?)),
        (None, None) => Ok(None),
    }
}

/// The embedded store creates `<db>.sqlite` and its `-wal` and `-shm` files
/// in the data dir and writes the db files: check now, while the error can
/// still stop the start, that it can. Otherwise every `P` would fail later.
///
/// A full disk (or a spent quota) is not a reason to stop: the files are
/// there and readable, so hsd starts and serves reads, and each write
/// answers the error a full disk gives it, as it would had the disk filled
/// up while hsd ran. Stopping would leave the data unreadable until space is
/// freed. The warning to log at start is returned.
fn check_data_dir(dir: &Path) -> anyhow::Result<Option<String>> {
    let d = dir.display();
    let hint = "fix its permissions or choose another --data-dir";
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create data directory {d} ({e}): {hint}"))?;
    let probe = dir.join(format!(".hsd-write-check-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"hsd"));
    // Removed even when the write failed: creating it may have worked.
    let removed = std::fs::remove_file(&probe);
    let disk_full = match written {
        Err(e) if is_disk_full(&e) => Some(format!(
            "data directory {d} is on a full disk ({e}): hsd serves reads, but writes fail until space is freed"
        )),
        written => {
            written.and(removed).map_err(|e| {
                anyhow::anyhow!("data directory {d} is not writable ({e}): {hint}")
            })?;
            None
        }
    };
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot list data directory {d} ({e}): {hint}"))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "sqlite") && path.is_file() {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "database file {} is not writable ({e}): fix its permissions",
                        path.display()
                    )
                })?;
        }
    }
    Ok(disk_full)
}

/// No space left, or the user's quota spent: what freeing space cures, not
/// a wrong setting.
fn is_disk_full(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

#[cfg(test)]
mod tests {
    use super::{
        is_disk_full, parse_replica, random_server_id, replica_urls, BackendChoice, PasswordFile,
    };
    use std::io::Error;

    /// The reader's default id is in the upper half (clear of servers'
    /// usual small ids) and drawn anew each time.
    #[test]
    fn default_reader_ids_are_random_in_the_upper_half() {
        let ids: std::collections::HashSet<u32> = (0..16).map(|_| random_server_id()).collect();
        assert!(ids.iter().all(|id| *id >= 0x8000_0000), "{ids:?}");
        assert!(ids.len() > 1, "{ids:?}");
    }

    /// HSD_REPLICAS holds several URLs; a password's commas stay in it,
    /// and no error shows any part of a password.
    #[test]
    fn replica_urls_split_only_where_a_url_begins() {
        let values = vec![
            "mysql://u:S3,cr3t@h1:3307, mysql://u:p,w@h2:3308".to_string(),
            "mysql://u:x@h3".to_string(),
        ];
        let urls = replica_urls(&values);
        assert_eq!(
            urls,
            [
                "mysql://u:S3,cr3t@h1:3307",
                "mysql://u:p,w@h2:3308",
                "mysql://u:x@h3"
            ]
        );
        let parsed: Vec<_> = urls
            .iter()
            .map(|u| parse_replica(u, None).expect("a URL"))
            .collect();
        assert_eq!(parsed[0].password, "S3,cr3t");
        assert_eq!(parsed[1].password, "p,w");
        for bad in [
            "mysql://u:S3cr3tPW@h:12x",
            "mysql://u:S3cr3t?PW@h:3306?nosuch=1",
            "mysql://u:S3cr3t?PW@h:3306?ssl-mode=ON",
        ] {
            let e = parse_replica(bad, None).expect_err(bad).to_string();
            assert!(!e.contains("S3cr3t"), "{e}");
        }
    }

    /// One rule for every URL: it must name a user; one without a password
    /// takes the file's, read once; a --replica's own password stays, a
    /// --backend's is refused.
    #[test]
    fn the_password_file_fills_every_url_by_one_rule() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("pw");
        std::fs::write(&path, "secret\n").expect("write");
        let mut file = PasswordFile::new(&path);
        let backend = BackendChoice::parse("mysql://u@h:1", Some(&mut file)).expect("backend");
        let BackendChoice::Mysql(url) = backend else {
            panic!("not mysql");
        };
        assert_eq!(url.password, "secret");
        // Read once: the replicas take what the backend read.
        std::fs::remove_file(&path).expect("remove");
        let replica = parse_replica("mysql://u@h:2", Some(&mut file)).expect("replica");
        assert_eq!(replica.password, "secret");
        let own = parse_replica("mysql://u:mine@h:3", Some(&mut file)).expect("own");
        assert_eq!(own.password, "mine");
        let e = parse_replica("mysql://h:4", Some(&mut file)).expect_err("no user");
        assert!(
            e.to_string().contains("the --replica URL names no user"),
            "{e}"
        );
        let e = BackendChoice::parse("mysql://u:mine@h:1", Some(&mut file)).expect_err("own");
        assert!(e.to_string().contains("already has a password"), "{e}");
    }

    /// A full disk and a spent quota start hsd for reads; anything else
    /// (permissions, a read-only file system) stops it.
    #[test]
    fn only_a_full_disk_or_quota_counts_as_full() {
        for (errno, full) in [
            (libc::ENOSPC, true),
            (libc::EDQUOT, true),
            (libc::EACCES, false),
            (libc::EPERM, false),
            (libc::EROFS, false),
            (libc::EIO, false),
        ] {
            assert_eq!(
                is_disk_full(&Error::from_raw_os_error(errno)),
                full,
                "errno {errno}"
            );
        }
    }
}
