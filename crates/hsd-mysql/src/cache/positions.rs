//! The writer's binlog position, asked on a connection of the cache's
//! own: a read that must see what was committed before it arrived (or
//! before this process's last write) waits for the reader to reach a
//! position asked after that. Concurrent askers share one question; the
//! same connection vets tables (foreign keys whose cascades the binlog
//! does not show). With replicas the connection goes to the server the
//! reader follows (`Target`), and each position says which generation of
//! the feed it is for.

use super::super::binlog::{master_status, query, BinlogPosition};
use super::super::link::{Link, LinkSettings};
use super::MustSee;
use hsd_storage::row_cache::{RowCache, TableState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// A position the server answered, and what it covers.
pub(super) struct Fetched {
    /// The feed generation (the server) it was asked for.
    pub(super) generation: u64,
    /// When it was asked: it covers every commit before.
    pub(super) asked: Instant,
    /// This process's writes finished when it was asked.
    pub(super) writes: u64,
    pub(super) position: BinlogPosition,
}

/// The server positions are asked of, for feed generation `generation`.
#[derive(Clone)]
pub(super) struct Target {
    pub(super) generation: u64,
    pub(super) link: LinkSettings,
}

pub(super) enum Request {
    BinlogPosition(oneshot::Sender<Option<Arc<Fetched>>>),
    Vet(Arc<TableState>),
}

pub(super) struct Positions {
    tx: mpsc::UnboundedSender<Request>,
    latest: Arc<Mutex<Option<Arc<Fetched>>>>,
    /// Batches that waited for the server to be asked (metrics).
    pub(super) asked: AtomicU64,
}

impl Positions {
    pub(super) fn new(
        tx: mpsc::UnboundedSender<Request>,
    ) -> (Positions, Arc<Mutex<Option<Arc<Fetched>>>>) {
        let latest = Arc::new(Mutex::new(None));
        (
            Positions {
                tx,
                latest: latest.clone(),
                asked: AtomicU64::new(0),
            },
            latest,
        )
    }

    /// A position that covers what `must_see` must see: every write of
    /// this process finished before it arrived, and with `strict` every
    /// commit before it arrived, on the server of feed generation
    /// `generation`. `None`: that server could not be asked.
    pub(super) async fn covering(
        &self,
        must_see: &MustSee,
        strict: bool,
        generation: u64,
    ) -> Option<Arc<Fetched>> {
        let known = self
            .latest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(f) = known {
            if f.generation == generation
                && f.writes >= must_see.writes
                && (!strict || f.asked >= must_see.arrived)
            {
                return Some(f);
            }
        }
        self.asked.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.tx.send(Request::BinlogPosition(reply)).ok()?;
        answer
            .await
            .ok()
            .flatten()
            .filter(|f| f.generation == generation)
    }
}

/// Answers the requests until every sender is gone.
pub(super) async fn serve(
    target: tokio::sync::watch::Receiver<Target>,
    mut rx: mpsc::UnboundedReceiver<Request>,
    latest: Arc<Mutex<Option<Arc<Fetched>>>>,
    cache: Arc<RowCache>,
) {
    let mut link: Option<Link> = None;
    let mut linked_generation = None;
    while let Some(first) = rx.recv().await {
        let Target {
            generation,
            link: settings,
        } = target.borrow().clone();
        if linked_generation != Some(generation) {
            // The reader moved: so do the questions.
            if let Some(old) = link.take() {
                old.quit().await;
            }
            linked_generation = Some(generation);
        }
        let mut waiting = Vec::new();
        let mut vets = Vec::new();
        let mut take = |r| match r {
            Request::BinlogPosition(reply) => waiting.push(reply),
            Request::Vet(t) => vets.push(t),
        };
        take(first);
        while let Ok(r) = rx.try_recv() {
            take(r);
        }
        if !waiting.is_empty() {
            let asked = Instant::now();
            let writes = cache.writes();
            let fetched = match position(&settings, &mut link).await {
                Ok(position) => Some(Arc::new(Fetched {
                    generation,
                    asked,
                    writes,
                    position,
                })),
                Err(e) => {
                    tracing::warn!("row cache: the server's binlog position: {e}");
                    None
                }
            };
            if let Some(f) = &fetched {
                *latest.lock().unwrap_or_else(|p| p.into_inner()) = Some(f.clone());
            }
            for reply in waiting {
                let _ = reply.send(fetched.clone());
            }
        }
        for table in vets {
            vet(&settings, &mut link, &cache, &table).await;
        }
    }
}

/// The link, connected first if there is none.
async fn connected<'a>(
    settings: &LinkSettings,
    link: &'a mut Option<Link>,
) -> Result<&'a mut Link, String> {
    if link.is_none() {
        *link = Some(
            Link::connect(settings)
                .await
                .map_err(|e| e.error.to_string())?,
        );
    }
    link.as_mut().ok_or_else(|| "no connection".to_string())
}

/// The server's position; a failure drops the link. File and offset are
/// what the reader's positions compare by; the GTID state is not needed
/// (one statement, not two).
async fn position(
    settings: &LinkSettings,
    link: &mut Option<Link>,
) -> Result<BinlogPosition, String> {
    let answer = match connected(settings, link).await {
        Ok(l) => master_status(l).await,
        Err(e) => Err(e),
    };
    if answer.is_err() {
        *link = None;
    }
    answer
}

/// Whether `table`'s rows can change where the feed does not see: its
/// engine is not InnoDB (a MERGE table's rows change under its underlying
/// tables' names, FEDERATED, CONNECT and SPIDER rows on other servers; only
/// InnoDB is shown by a test to log its own changes under its own name), it
/// is system-versioned (its lookups answer history rows a fill's SELECT
/// does not), or a foreign key's cascade (CASCADE, SET NULL, SET DEFAULT
/// on delete or update) changes it: InnoDB applies those below the binary
/// log, which shows only the parent's row.
async fn vet(
    settings: &LinkSettings,
    link: &mut Option<Link>,
    cache: &RowCache,
    table: &TableState,
) {
    let hex = |s: &str| -> String { s.bytes().map(|b| format!("{b:02x}")).collect() };
    let kind = format!(
        "SELECT ENGINE, TABLE_TYPE FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = CONVERT(X'{}' USING utf8mb4) AND TABLE_NAME = CONVERT(X'{}' USING utf8mb4)",
        hex(table.db()),
        hex(table.name())
    );
    let answer = match connected(settings, link).await {
        Ok(l) => query(l, &kind).await,
        Err(e) => Err(e),
    };
    if answer.is_err() {
        *link = None;
    }
    match answer {
        Ok(rows) => {
            let value = |i: usize| {
                rows.iter()
                    .find(|r| r.len() > i)
                    .and_then(|r| r[i].clone())
                    .unwrap_or_default()
            };
            let (engine, kind) = (value(0), value(1));
            if !engine.eq_ignore_ascii_case("InnoDB") {
                let why =
                    format!(
                    "its engine is {}: the row cache holds InnoDB tables only (another engine's \
                     rows may change with no row event naming the table)",
                    if engine.is_empty() { "unknown" } else { &engine }
                );
                cache.vetted(table, Some(&why));
                return;
            }
            if kind.eq_ignore_ascii_case("SYSTEM VERSIONED") {
                cache.vetted(
                    table,
                    Some("it is system-versioned: its lookups answer history rows"),
                );
                return;
            }
        }
        Err(e) => {
            tracing::warn!(
                "row cache: could not read {}.{}'s engine ({e}); not cached for now",
                table.db(),
                table.name()
            );
            cache.table_changed(table.db(), table.name());
            return;
        }
    }
    let sql = format!(
        "SELECT CONSTRAINT_NAME, DELETE_RULE, UPDATE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS \
         WHERE CONSTRAINT_SCHEMA = CONVERT(X'{}' USING utf8mb4) AND TABLE_NAME = CONVERT(X'{}' USING utf8mb4) \
         AND (DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION') OR UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION'))",
        hex(table.db()),
        hex(table.name())
    );
    let answer = match connected(settings, link).await {
        Ok(l) => query(l, &sql).await,
        Err(e) => Err(e),
    };
    if answer.is_err() {
        *link = None;
    }
    match answer {
        Ok(rows) if rows.is_empty() => cache.vetted(table, None),
        Ok(rows) => {
            let name = rows
                .first()
                .and_then(|r| r.first().cloned().flatten())
                .unwrap_or_default();
            let why = format!(
                "its foreign key {name} cascades, and InnoDB's cascades are not in the binary log"
            );
            cache.vetted(table, Some(&why));
        }
        Err(e) => {
            tracing::warn!(
                "row cache: could not read {}.{}'s foreign keys ({e}); not cached for now",
                table.db(),
                table.name()
            );
            cache.table_changed(table.db(), table.name());
        }
    }
}
