//! Command-line definitions (clap derive) for `hsbench` and `hsbench load`,
//! plus the resolution of per-system defaults (ports, database, columns).

use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use mysql_wire::MysqlUrl;

#[derive(Parser, Debug)]
#[command(
    name = "hsbench",
    version,
    about = "Load generator for HandlerSocket (hsd), memcached, Redis and MySQL/MariaDB",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    /// Without a subcommand, hsbench runs a benchmark (same as `hsbench run`).
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run a benchmark (the default).
    Run(RunArgs),
    /// Populate the synthetic data set (rows 1..=N) into a system.
    Load(LoadArgs),
    /// Relay TCP to another address, holding each chunk DELAY µs in each
    /// direction (a server on another host, without netem).
    DelayProxy(DelayArgs),
}

#[derive(Args, Debug)]
pub struct DelayArgs {
    /// Where to listen (ADDR:PORT; port 0: any free port, printed).
    #[arg(long)]
    pub listen: String,
    /// Where to relay to (HOST:PORT).
    #[arg(long)]
    pub to: String,
    /// Microseconds each chunk waits, in each direction.
    #[arg(long, default_value_t = 100)]
    pub delay_us: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum System {
    /// HandlerSocket (hsd)
    Hs,
    /// memcached text protocol
    Memcached,
    /// Redis RESP
    Redis,
    /// MySQL/MariaDB client protocol
    Mysql,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// one primary-key lookup per request
    Get,
    /// ten distinct keys per request (HS IN, memcached multi-get, MGET, SQL IN)
    Multiget10,
    /// single-row insert with an id above the key space
    Insert,
    /// set `name` of one existing row
    Update,
    /// each request a get or, --update-percent of the time, an update (on
    /// the write port: one connection does both, as a client would)
    Mixed,
}

impl Workload {
    pub fn is_write(self) -> bool {
        matches!(self, Workload::Insert | Workload::Update | Workload::Mixed)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dist {
    Uniform,
    Zipf,
}

/// Where to connect and what the data set looks like; shared by run and load.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// Protocol / system to drive.
    #[arg(long, value_enum, default_value = "hs")]
    pub system: System,
    /// Server address (loopback by default; for mysql the URL's host is used unless given).
    #[arg(long)]
    pub host: Option<String>,
    /// Server port. Defaults: hs 9998 (reads) / 9999 (writes and load),
    /// memcached 11211, redis 6379, mysql from the URL (3306).
    #[arg(long)]
    pub port: Option<u16>,
    /// Database name (HS `db`, MySQL schema). Default: the URL's database, else `test`.
    #[arg(long)]
    pub db: Option<String>,
    /// Table name.
    #[arg(long, default_value = "user")]
    pub table: String,
    /// The four column names, in order: id,name,email,created
    /// (for `hsd serve --demo`: user_id,user_name,user_email,created).
    #[arg(long, default_value = "id,name,email,created")]
    pub cols: String,
    /// HS: send `A 1 <secret>` before opening the index.
    #[arg(long)]
    pub secret: Option<String>,
    /// memcached/redis key prefix; key k is `<prefix><k>`.
    #[arg(long, default_value = "key:")]
    pub key_prefix: String,
    /// MySQL: mysql://user:pass@host:port[/db]
    #[arg(
        long,
        env = "HSD_TEST_MYSQL_URL",
        hide_env_values = true,
        default_value = "mysql://root@127.0.0.1:3306"
    )]
    pub mysql_url: String,
    /// MySQL: use prepared statements (binary protocol) instead of text queries.
    #[arg(long)]
    pub mysql_prepared: bool,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// What each request does.
    #[arg(long, value_enum, default_value = "get")]
    pub workload: Workload,
    /// For --workload mixed: the share of requests that are updates.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub update_percent: u32,
    /// Number of connections (one tokio task each).
    #[arg(long, short = 'c', default_value_t = 8)]
    pub connections: usize,
    /// Requests in flight per connection (pipeline depth; must be 1 for mysql).
    #[arg(long, short = 'd', default_value_t = 1)]
    pub depth: usize,
    /// Measured phase length in seconds (ignored when --requests is given).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Stop after this many measured requests instead of after --duration.
    #[arg(long)]
    pub requests: Option<u64>,
    /// Unmeasured warm-up before the measured phase, in seconds.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Key space: keys are 1..=N (must match what was loaded).
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Key distribution.
    #[arg(long, value_enum, default_value = "uniform")]
    pub dist: Dist,
    /// Zipf exponent (key 1 is the hottest).
    #[arg(long, default_value_t = 0.99)]
    pub zipf_theta: f64,
    /// RNG seed; connection i uses a seed derived from (seed, i).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// First id used by the insert workload. Default: keys+1 plus a time-derived
    /// offset (a multiple of 10^9), so that repeated runs do not collide.
    #[arg(long)]
    pub insert_start: Option<u64>,
    /// Server process id(s) whose CPU time (utime+stime) is measured over the
    /// measured phase; repeatable or comma separated.
    #[arg(long, value_delimiter = ',')]
    pub server_pid: Vec<u32>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// tokio worker threads for the load generator (1 = current-thread runtime).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Abort when no response arrives for this many seconds.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Exit 0 even when error responses were counted (default: exit 2).
    #[arg(long)]
    pub allow_errors: bool,
}

#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Number of rows: ids 1..=N.
    #[arg(long, alias = "keys", default_value_t = 100_000)]
    pub rows: u64,
    /// Parallel connections.
    #[arg(long, short = 'c', default_value_t = 4)]
    pub connections: usize,
    /// Rows per batch: pipelined requests per write (hs/memcached/redis), rows per
    /// multi-row INSERT (mysql).
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// MySQL: empty the table first (TRUNCATE) so that a reload does not collide.
    #[arg(long)]
    pub truncate: bool,
    /// tokio worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// The resolved connection target.
#[derive(Debug, Clone)]
pub struct Target {
    pub system: System,
    pub host: String,
    pub port: u16,
    pub db: String,
    pub table: String,
    /// id, name, email, created
    pub cols: [String; 4],
    pub secret: Option<String>,
    pub key_prefix: String,
    pub mysql: Option<MysqlUrl>,
    pub prepared: bool,
}

impl TargetArgs {
    /// Resolves defaults. `write` selects the HS write port.
    pub fn resolve(&self, write: bool) -> Result<Target> {
        let cols: Vec<String> = self.cols.split(',').map(|c| c.trim().to_string()).collect();
        let cols: [String; 4] = match cols.try_into() {
            Ok(c) => c,
            Err(_) => bail!("--cols needs exactly four names: id,name,email,created"),
        };
        if cols.iter().any(|c| c.is_empty()) {
            bail!("--cols: empty column name");
        }
        let mut mysql = None;
        let mut url_db = None;
        let (host, port) = match self.system {
            System::Hs => ("127.0.0.1".to_string(), if write { 9999 } else { 9998 }),
            System::Memcached => ("127.0.0.1".to_string(), 11211),
            System::Redis => ("127.0.0.1".to_string(), 6379),
            System::Mysql => {
                let u = MysqlUrl::parse(&self.mysql_url)
                    .map_err(|e| anyhow::anyhow!("--mysql-url: {e}"))?;
                let hp = (u.host.clone(), u.port);
                url_db = u.database.clone();
                mysql = Some(u);
                hp
            }
        };
        if self.mysql_prepared && self.system != System::Mysql {
            bail!("--mysql-prepared only applies to --system mysql");
        }
        Ok(Target {
            system: self.system,
            host: self.host.clone().unwrap_or(host),
            port: self.port.unwrap_or(port),
            db: self.db.clone().or(url_db).unwrap_or_else(|| "test".into()),
            table: self.table.clone(),
            cols,
            secret: self.secret.clone(),
            key_prefix: self.key_prefix.clone(),
            mysql,
            prepared: self.mysql_prepared,
        })
    }
}
