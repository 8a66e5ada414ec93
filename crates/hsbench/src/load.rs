//! `hsbench load`: populates rows 1..=N of the synthetic data set.
//! memcached/Redis/HS: pipelined set/SET/insert, `--batch` requests per write;
//! MySQL: CREATE TABLE IF NOT EXISTS, then multi-row INSERTs of `--batch` rows.
//! Batches are handed out from a shared counter to `--connections` tasks.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use tokio::task::JoinSet;

use crate::args::{LoadArgs, System, Target, Workload};
use crate::data::{push_created, push_email, push_name, push_u64};
use crate::net::Conn;
use crate::proto::mysql::{ident, push_sql_str, MyResp};
use crate::proto::mysql_conn::{exec, handshake, query};
use crate::proto::{self, Op, Outcome};

#[derive(Default)]
struct Tally {
    rows: u64,
    errors: u64,
    first_error: Option<String>,
}

struct Plan {
    rows: u64,
    batch: u64,
    next: AtomicU64,
}

impl Plan {
    /// The next batch of ids, or None when all are handed out.
    fn take(&self) -> Option<std::ops::RangeInclusive<u64>> {
        let b = self.next.fetch_add(1, Relaxed);
        let first = b.checked_mul(self.batch)?.checked_add(1)?;
        (first <= self.rows).then(|| first..=(first + self.batch - 1).min(self.rows))
    }
}

pub async fn load(a: &LoadArgs) -> Result<()> {
    if a.rows == 0 || a.batch == 0 || a.connections == 0 {
        bail!("--rows, --batch and --connections must be at least 1");
    }
    let t = a.target.resolve(true)?;
    let start = Instant::now();
    if t.system == System::Mysql {
        create_table(&t, a.truncate).await?;
    } else if a.truncate {
        bail!("--truncate only applies to mysql");
    }
    let plan = Arc::new(Plan {
        rows: a.rows,
        batch: a.batch as u64,
        next: AtomicU64::new(0),
    });
    let mut set = JoinSet::new();
    for i in 0..a.connections {
        let (t, plan) = (t.clone(), plan.clone());
        set.spawn(async move {
            let r = if t.system == System::Mysql {
                load_mysql(&t, &plan).await
            } else {
                load_pipelined(&t, &plan).await
            };
            r.with_context(|| format!("load connection {i}"))
        });
    }
    let mut total = Tally::default();
    while let Some(r) = set.join_next().await {
        let r = r.context("load task failed")??;
        total.rows += r.rows;
        total.errors += r.errors;
        if total.first_error.is_none() {
            total.first_error = r.first_error;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let into = match t.system {
        System::Memcached | System::Redis => {
            format!("keys {}1..{}{}", t.key_prefix, t.key_prefix, a.rows)
        }
        _ => format!("{}.{}", t.db, t.table),
    };
    println!(
        "loaded {} rows into {:?} {into} at {}:{} in {:.2} s ({:.0} rows/s), errors {}",
        total.rows,
        t.system,
        t.host,
        t.port,
        secs,
        total.rows as f64 / secs,
        total.errors
    );
    if total.errors > 0 {
        bail!(
            "{} rows failed to load; first: {}",
            total.errors,
            total.first_error.unwrap_or_default()
        );
    }
    Ok(())
}

async fn mysql_conn(t: &Target, db: Option<&str>) -> Result<Conn> {
    let Some(url) = &t.mysql else {
        bail!("mysql: no URL");
    };
    let mut conn = Conn::connect(&t.host, t.port).await?;
    handshake(&mut conn, url, db).await?;
    Ok(conn)
}

async fn create_table(t: &Target, truncate: bool) -> Result<()> {
    let mut c = mysql_conn(t, None).await?;
    let db = ident(&t.db);
    // May be refused to an account limited to an existing schema: USE decides.
    let created = query(&mut c, &format!("CREATE DATABASE IF NOT EXISTS {db}")).await?;
    if let Err(e) = exec(&mut c, &format!("USE {db}")).await {
        if let MyResp::Err(ce) = created {
            bail!("{e}\n(and CREATE DATABASE failed: {ce})");
        }
        return Err(e);
    }
    let [id, name, email, created] = t.cols.each_ref().map(|c| ident(c));
    let table = ident(&t.table);
    exec(
        &mut c,
        &format!(
            "CREATE TABLE IF NOT EXISTS {table} ({id} BIGINT PRIMARY KEY, {name} VARCHAR(64), \
             {email} VARCHAR(128), {created} DATETIME) ENGINE=InnoDB"
        ),
    )
    .await?;
    if truncate {
        exec(&mut c, &format!("TRUNCATE TABLE {table}")).await?;
    }
    Ok(())
}

async fn load_mysql(t: &Target, plan: &Plan) -> Result<Tally> {
    let mut c = mysql_conn(t, Some(&t.db)).await?;
    let [id, name, email, created] = t.cols.each_ref().map(|c| ident(c));
    let head = format!(
        "INSERT INTO {} ({id},{name},{email},{created}) VALUES ",
        ident(&t.table)
    );
    let mut tally = Tally::default();
    let mut sql = Vec::with_capacity(head.len() + plan.batch as usize * 96);
    let mut v = Vec::with_capacity(64);
    while let Some(ids) = plan.take() {
        sql.clear();
        sql.extend_from_slice(head.as_bytes());
        let n = ids.end() - ids.start() + 1;
        for i in ids {
            if sql.len() > head.len() {
                sql.push(b',');
            }
            sql.push(b'(');
            push_u64(&mut sql, i);
            for f in [push_name, push_email, push_created] {
                sql.push(b',');
                v.clear();
                f(&mut v, i);
                push_sql_str(&mut sql, &v);
            }
            sql.push(b')');
        }
        // Generated text is ASCII.
        let text = std::str::from_utf8(&sql)?;
        match exec(&mut c, text).await {
            Ok(MyResp::Ok { affected }) if affected == n => tally.rows += n,
            Ok(r) => bail!("unexpected INSERT result {r:?}"),
            Err(e) => {
                let hint = if e.to_string().contains("1062") {
                    " (rows already there? use --truncate)"
                } else {
                    ""
                };
                bail!("{e}{hint}")
            }
        }
    }
    Ok(tally)
}

/// hs/memcached/redis: the insert workload's encoder, `batch` requests per write.
async fn load_pipelined(t: &Target, plan: &Plan) -> Result<Tally> {
    let (mut conn, mut codec) = proto::connect(t, Workload::Insert).await?;
    let mut tally = Tally::default();
    let mut wbuf = Vec::with_capacity(plan.batch as usize * 128);
    while let Some(ids) = plan.take() {
        wbuf.clear();
        let n = ids.end() - ids.start() + 1;
        for i in ids {
            codec.encode(&Op::Insert(i), &mut wbuf);
        }
        conn.write_all(&wbuf).await?;
        let mut got = 0;
        while got < n {
            conn.fill().await?;
            while got < n {
                let Some((used, outcome)) = codec.parse(conn.pending())? else {
                    break;
                };
                got += 1;
                if outcome == Outcome::Ok {
                    tally.rows += 1;
                } else {
                    tally.errors += 1;
                    if tally.first_error.is_none() {
                        let raw = &conn.pending()[..used.min(200)];
                        tally.first_error = Some(format!("{:?}", String::from_utf8_lossy(raw)));
                    }
                }
                conn.consume(used);
            }
        }
    }
    Ok(tally)
}
