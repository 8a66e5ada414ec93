//! The benchmark run: connect N connections, warm up, measure for a duration or a
//! request count, stop, merge the per-connection statistics.
//!
//! Each connection is one tokio task running a hand-written closed loop: keep
//! `depth` requests in flight, write all newly generated requests with one write,
//! read whatever arrived, parse every complete response in place, refill. No
//! channels, no per-request allocation, no framing library: the load generator
//! must not be the bottleneck, least of all on a 2-core machine it shares with
//! the server.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use tokio::task::JoinSet;

use crate::args::{Dist, RunArgs, System, Workload};
use crate::cpu;
use crate::keys::{KeyGen, Rng, Zipf};
use crate::net::Conn;
use crate::proto::{self, Codec, Op};
use crate::stats::{ConnStats, Report, RunInfo};

/// Connections opened concurrently at a time (below MySQL's default accept backlog).
const CONNECT_WAVE: usize = 32;

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

struct Shared {
    phase: AtomicU8,
    /// Measured requests still to send (only with --requests).
    tickets: AtomicU64,
    limited: bool,
    /// Bumped by every connection on every read; watched for stalls.
    progress: AtomicU64,
    next_insert: AtomicU64,
}

impl Shared {
    #[inline]
    fn take_ticket(&self) -> bool {
        self.tickets
            .fetch_update(Relaxed, Relaxed, |t| t.checked_sub(1))
            .is_ok()
    }
}

struct Cfg {
    workload: Workload,
    /// Mixed: updates per hundred requests.
    update_percent: u64,
    depth: usize,
    keys: KeyGen,
    seed: u64,
    /// The first version an update writes, less one. Taken from the clock
    /// so that no run writes a value a row already holds: runs with the
    /// same seed update the same keys, and an UPDATE that changes nothing
    /// is cheaper (InnoDB then writes no redo, no binary log event, and its
    /// commit waits for no fsync), which flattered whichever system ran
    /// later on the same table.
    version_start: u64,
}

type TaskResult = Result<(ConnStats, Instant)>;

pub async fn run(a: &RunArgs) -> Result<Report> {
    if a.connections == 0 || a.depth == 0 {
        bail!("--connections and --depth must be at least 1");
    }
    if a.target.system == System::Mysql && a.depth != 1 {
        bail!("mysql cannot pipeline: --depth must be 1 for --system mysql");
    }
    if a.keys == 0 {
        bail!("--keys must be at least 1");
    }
    if a.workload == Workload::Multiget10 && a.keys < 10 {
        bail!("multiget10 needs --keys >= 10 (ten distinct keys per request)");
    }
    if a.requests.is_none() && a.duration.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        bail!("--duration must be positive");
    }
    if !(a.warmup >= 0.0 && a.timeout > 0.0) {
        bail!("--warmup must be >= 0 and --timeout > 0");
    }
    let keys = match a.dist {
        Dist::Uniform => KeyGen::Uniform(a.keys),
        Dist::Zipf => {
            if !(a.zipf_theta > 0.0 && a.zipf_theta.is_finite()) {
                bail!("--zipf-theta must be > 0");
            }
            KeyGen::Zipf(Zipf::new(a.keys, a.zipf_theta))
        }
    };
    let target = a.target.resolve(a.workload.is_write())?;
    let insert_start = a.insert_start.unwrap_or_else(|| {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        a.keys + 1 + (ms % 1_000_000_000) * 1_000_000_000
    });
    let sh = Arc::new(Shared {
        phase: AtomicU8::new(WARMUP),
        tickets: AtomicU64::new(a.requests.unwrap_or(0)),
        limited: a.requests.is_some(),
        progress: AtomicU64::new(0),
        next_insert: AtomicU64::new(insert_start),
    });
    let cfg = Arc::new(Cfg {
        workload: a.workload,
        update_percent: u64::from(a.update_percent),
        depth: a.depth,
        keys,
        seed: a.seed,
        version_start: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64),
    });
    let tck = cpu::clk_tck();
    // Each pid once, in the order given: the report splits the CPU by it.
    let mut pids: Vec<u32> = Vec::with_capacity(a.server_pid.len());
    for &p in &a.server_pid {
        if !pids.contains(&p) {
            pids.push(p);
        }
    }
    // Every connection is made (and its index opened / statement prepared)
    // before any starts sending, CONNECT_WAVE at a time: made one by one
    // while the first ones already ran, the last ones would queue behind
    // their traffic and setup would take seconds at 256 connections.
    let mut ready = Vec::with_capacity(a.connections);
    for wave in (0..a.connections).collect::<Vec<_>>().chunks(CONNECT_WAVE) {
        let mut opening = JoinSet::new();
        for &i in wave {
            let (target, workload) = (target.clone(), a.workload);
            opening.spawn(async move {
                let r = proto::connect(&target, workload)
                    .await
                    .with_context(|| format!("connection {i} to {}:{}", target.host, target.port));
                (i, r)
            });
        }
        while let Some(r) = opening.join_next().await {
            let (i, r) = r.context("connect task failed")?;
            ready.push((i, r?));
        }
    }
    ready.sort_by_key(|(i, _)| *i);
    let mut set = JoinSet::new();
    for (i, (conn, codec)) in ready {
        let (cfg, sh) = (cfg.clone(), sh.clone());
        set.spawn(async move {
            conn_loop(i, conn, codec, &cfg, &sh)
                .await
                .with_context(|| format!("connection {i}"))
        });
    }
    let mut w = Waiter {
        set,
        done: Vec::new(),
        sh: sh.clone(),
        timeout: Duration::from_secs_f64(a.timeout),
        last: 0,
        since: Instant::now(),
    };
    w.wait(Some(Duration::from_secs_f64(a.warmup))).await?;
    let server0 = cpu::ticks_each(&pids)?;
    let client0 = cpu::ticks("self")?;
    sh.phase.store(MEASURE, Relaxed);
    let start = Instant::now();
    if a.requests.is_none() {
        w.wait(Some(Duration::from_secs_f64(a.duration))).await?;
        sh.phase.store(STOP, Relaxed);
    }
    w.wait(None).await?;
    let server1 = cpu::ticks_each(&pids)?;
    let client1 = cpu::ticks("self")?;
    let mut total = ConnStats::new();
    let mut end = start;
    for (s, e) in w.done {
        total.merge(s)?;
        end = end.max(e);
    }
    let info = RunInfo {
        system: format!("{:?}", a.target.system).to_lowercase()
            + if target.prepared { "-prepared" } else { "" },
        workload: format!("{:?}", a.workload).to_lowercase(),
        connections: a.connections,
        depth: a.depth,
        keys: a.keys,
        dist: match a.dist {
            Dist::Uniform => "uniform".into(),
            Dist::Zipf => format!("zipf {}", a.zipf_theta),
        },
    };
    let server: Vec<(u32, u64)> = pids
        .iter()
        .zip(server1.iter().zip(&server0))
        .map(|(&pid, (&t1, &t0))| (pid, t1.saturating_sub(t0)))
        .collect();
    let secs = (end - start).as_secs_f64();
    Ok(Report::build(
        info,
        &total,
        secs,
        &server,
        client1.saturating_sub(client0),
        tck,
    ))
}

/// Waits on the connection tasks, collecting finished ones, failing fast on a
/// task error and on a stall (no response on any connection for `timeout`).
struct Waiter {
    set: JoinSet<TaskResult>,
    done: Vec<(ConnStats, Instant)>,
    sh: Arc<Shared>,
    timeout: Duration,
    last: u64,
    since: Instant,
}

impl Waiter {
    /// Waits `d`, or until every task has finished when `d` is None.
    async fn wait(&mut self, d: Option<Duration>) -> Result<()> {
        let deadline = d.map(|d| Instant::now() + d);
        loop {
            let slice = match deadline {
                Some(dl) => {
                    let now = Instant::now();
                    if now >= dl {
                        return Ok(());
                    }
                    (dl - now).min(Duration::from_millis(200))
                }
                None => Duration::from_millis(200),
            };
            if self.set.is_empty() {
                if deadline.is_none() {
                    return Ok(());
                }
                tokio::time::sleep(slice).await;
                continue;
            }
            match tokio::time::timeout(slice, self.set.join_next()).await {
                Ok(Some(r)) => self.done.push(r.context("connection task failed")??),
                Ok(None) => {}
                Err(_) => {
                    let p = self.sh.progress.load(Relaxed);
                    if p != self.last {
                        self.last = p;
                        self.since = Instant::now();
                    } else if self.since.elapsed() > self.timeout {
                        bail!(
                            "no response from the server for {:.0} s; giving up",
                            self.timeout.as_secs_f64()
                        );
                    }
                }
            }
        }
    }
}

async fn conn_loop(
    idx: usize,
    mut conn: Conn,
    mut codec: Codec,
    cfg: &Cfg,
    sh: &Shared,
) -> TaskResult {
    let mut rng = Rng::for_stream(cfg.seed, idx as u64);
    let mut stats = ConnStats::new();
    // Send time and "measured" flag of each request in flight, oldest first.
    let mut inflight: VecDeque<(Instant, bool)> = VecDeque::with_capacity(cfg.depth);
    let mut wbuf = Vec::with_capacity(64 * cfg.depth.min(4096));
    let mut multi = [0u64; 10];
    let mut version = cfg.version_start;
    let mut stopping = false;
    loop {
        if !stopping {
            let phase = sh.phase.load(Relaxed);
            if phase == STOP {
                stopping = true;
            } else {
                let measured = phase == MEASURE;
                let mut n = 0;
                while inflight.len() + n < cfg.depth {
                    if measured && sh.limited && !sh.take_ticket() {
                        stopping = true;
                        break;
                    }
                    let op = match cfg.workload {
                        Workload::Get => Op::Get(cfg.keys.next(&mut rng)),
                        Workload::Multiget10 => {
                            cfg.keys.distinct(&mut rng, &mut multi);
                            Op::Multi(&multi)
                        }
                        Workload::Insert => Op::Insert(sh.next_insert.fetch_add(1, Relaxed)),
                        Workload::Update => {
                            version += 1;
                            Op::Update {
                                key: cfg.keys.next(&mut rng),
                                version,
                            }
                        }
                        Workload::Mixed => {
                            let update = rng.range1(100) <= cfg.update_percent;
                            let key = cfg.keys.next(&mut rng);
                            if update {
                                version += 1;
                                Op::Update { key, version }
                            } else {
                                Op::Get(key)
                            }
                        }
                    };
                    codec.encode(&op, &mut wbuf);
                    n += 1;
                }
                if n > 0 {
                    let t = Instant::now();
                    conn.write_all(&wbuf).await?;
                    wbuf.clear();
                    inflight.extend(std::iter::repeat_n((t, measured), n));
                }
            }
        }
        if inflight.is_empty() {
            break;
        }
        conn.fill().await?;
        let now = Instant::now();
        while let Some((used, outcome)) = codec.parse(conn.pending())? {
            let Some((sent, measured)) = inflight.pop_front() else {
                bail!(
                    "response without a request: {:?}",
                    String::from_utf8_lossy(conn.pending())
                );
            };
            if measured {
                let ns = now.saturating_duration_since(sent).as_nanos() as u64;
                stats.record(ns, outcome, &conn.pending()[..used]);
            }
            conn.consume(used);
        }
        sh.progress.fetch_add(1, Relaxed);
    }
    Ok((stats, Instant::now()))
}
