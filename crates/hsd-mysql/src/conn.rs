//! A storage connection: one server link (made on first use), its
//! `HANDLER` handles, and the write group's transaction with its retry and
//! fault rules (`after_failure`). Its writes are sent by `conn_writes`.

use super::connector::{Connector, PRESSURE_IDLE};

use super::cache::{AckedWrites, NotedCommit};
use super::conn_writes::without_unchanged_keys;
use super::errors::{doomed, dooms_transaction, refused_error};
use super::handler::Handles;
use super::in_doubt::{resolve, Fate, Session};
use super::link::{Answer, Discard, Failure, Link};
use super::topology::{Commit, Topology};
use super::{fill, meta, scan};
use hsd_storage::{
    CacheRead, Change, CommitFailure, Committed, RowInsert, RowVisitor, RowWrite, Scan,
    StorageConn, StorageError, TableMeta, WriteBatching, ERR_COMMIT_IN_DOUBT,
    ERR_LOCK_WAIT_TIMEOUT, ERR_STATEMENT_TIMEOUT,
};
use mysql_wire::GtidSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often an idle connection looks whether to be given back (see
/// `MysqlConn::idle_deadline`).
const IDLE_LOOK: Duration = Duration::from_secs(1);

/// Where the write group's transaction is.
#[derive(Debug)]
pub(super) enum Txn {
    /// Autocommit (reads, and writes outside a group).
    Off,
    /// `begin` was called; the transaction begins with the group's first
    /// statement (the session runs with autocommit off in groups).
    Wanted,
    Open,
    /// The server rolled the transaction back, or the connection broke: the
    /// rest of the group and its commit fail with this.
    Doomed(StorageError),
}

/// Which server a connection talks to when there are several (`topology`).
pub(super) enum Placement {
    /// The one server there is (no --replica).
    Single,
    /// Whichever server takes writes now: the write port's connections (its
    /// writes, and its finds, which always run on the primary). It moves
    /// only between write groups, never inside one.
    Writer {
        topology: Arc<Topology>,
        /// Per server, its connector.
        servers: Arc<[Arc<Connector>]>,
        /// The server `connector` is for.
        at: usize,
    },
    /// One server, chosen for it by the read port's routing. `causal`: a
    /// Galera node read with `wsrep_sync_wait`, by SELECT only.
    Fixed { causal: bool },
}

pub struct MysqlConn {
    pub(super) connector: Arc<Connector>,
    placement: Placement,
    pub(super) link: Option<Link>,
    pub(super) handles: Handles,
    pub(super) txn: Txn,
    /// Reused for write statements' text.
    pub(super) sql: Vec<u8>,
    /// The modify lock of a table without transactions, while a modify of
    /// it runs (`serialize_modifies`).
    serialized: Option<tokio::sync::OwnedMutexGuard<()>>,
    /// This connection's name in the commit marker table, and the number
    /// of its last group that wrote (`in_doubt`).
    writer: u64,
    group_seq: u64,
    /// The open group sent a write statement.
    pub(super) wrote: bool,
    /// What the writer's topology had noted before this connection's next
    /// commit was sent (`Topology::note_commit_since`).
    noted_before: GtidSet,
    /// With the row cache: where its commits' GTIDs are noted.
    acked: Option<Arc<AckedWrites>>,
}

impl MysqlConn {
    pub(super) fn new(connector: Arc<Connector>, placement: Placement) -> MysqlConn {
        MysqlConn {
            connector,
            placement,
            link: None,
            handles: Handles::default(),
            txn: Txn::Off,
            sql: Vec::with_capacity(256),
            serialized: None,
            writer: writer_id(),
            group_seq: 0,
            wrote: false,
            noted_before: GtidSet::default(),
            acked: None,
        }
    }

    /// Its commits are noted in `acked` too (the row cache's).
    pub(super) fn noting_in(mut self, acked: Option<Arc<AckedWrites>>) -> MysqlConn {
        self.acked = acked;
        self
    }

    /// A connection that follows the writer moves to the server that takes
    /// writes now (`for_write`: a group begins; none, or a conflict, fails
    /// it) or, for a find outside a group, to the primary as last known.
    /// Inside a group it stays where the group began.
    async fn follow_writer(&mut self, for_write: bool) -> Result<(), StorageError> {
        let Placement::Writer {
            topology,
            servers,
            at,
        } = &mut self.placement
        else {
            return Ok(());
        };
        if !for_write && !matches!(self.txn, Txn::Off) {
            return Ok(());
        }
        let want = if for_write {
            topology.writer()?
        } else {
            topology.read_primary()
        };
        if want != *at {
            let Some(connector) = servers.get(want) else {
                return Err(StorageError::Unavailable(format!("no server {want}")));
            };
            tracing::info!(from = %self.connector.target, to = %connector.target, "writes move to the new primary");
            self.connector = connector.clone();
            *at = want;
            self.handles.clear();
            if let Some(old) = self.link.take() {
                old.quit().await;
            }
        }
        Ok(())
    }

    /// After a COMMIT (or an autocommitted write) on a connection that
    /// follows the writer: records the GTID the server reported, before the
    /// writes are answered (reads on replicas wait for it).
    pub(super) fn note_commit(&mut self) {
        // What the server told of the commit: `None` when hsd cannot know
        // (no link: the COMMIT's answer was lost and the server was asked
        // afterwards whether it committed; or a server that does not
        // report GTIDs), else its GTID, or none for a commit that wrote
        // nothing to the binary log.
        let wrote = self.wrote;
        let reported = match self.link.as_mut() {
            Some(link) if link.tracks_gtids() => match link.take_reported_gtid() {
                Some(gtid) => Some(Some(gtid)),
                // A commit that wrote, on a server that numbers every such
                // commit, answered without the GTID that was asked for: the
                // server's tracker is off (an administrator emptied
                // `session_track_system_variables`, ...), not a commit that
                // logged nothing (a group that wrote also changed its
                // commit marker). Unknown, as a lost answer.
                None if wrote && link.numbers_commits() => {
                    untracked_commit_warning();
                    None
                }
                None => Some(None),
            },
            _ => None,
        };
        if let Some(acked) = &self.acked {
            match &reported {
                Some(Some(gtid)) => acked.note(NotedCommit::Gtid(gtid)),
                Some(None) => {}
                None => acked.note(NotedCommit::Untracked),
            }
        }
        let Placement::Writer { topology, at, .. } = &self.placement else {
            return;
        };
        let before = &self.noted_before;
        match &reported {
            None => topology.note_commit_since(*at, Commit::Untracked, before),
            Some(Some(gtid)) => topology.note_commit_since(*at, Commit::Gtid(gtid), before),
            Some(None) => {}
        }
        // The next autocommitted write is sent after this one was noted.
        self.noted_before = topology.noted();
    }

    /// On a Galera node read causally, a read that timed out waited for a
    /// cluster the node cannot reach (its causal wait does not end until
    /// the node leaves the primary component): the node is unusable, not
    /// the read wrong, and the read may run elsewhere.
    fn causal_read_error(&self, e: StorageError) -> StorageError {
        let timed_out = matches!(&e, StorageError::Refused { code, .. }
            if *code == ERR_LOCK_WAIT_TIMEOUT || *code == ERR_STATEMENT_TIMEOUT);
        if timed_out && matches!(self.placement, Placement::Fixed { causal: true }) {
            StorageError::Unavailable(format!("causal read on a Galera node: {e}"))
        } else {
            e
        }
    }

    /// HANDLER reads are allowed: outside a write group (a handle keeps its
    /// table's metadata lock until it is closed, past the group's COMMIT, so
    /// a find in a group reads by SELECT, whose lock the COMMIT ends), and
    /// not on a Galera node read causally.
    fn handler_reads(&self) -> bool {
        matches!(self.txn, Txn::Off) && !matches!(self.placement, Placement::Fixed { causal: true })
    }

    /// The server rolled the whole transaction back with this error
    /// (`errors::dooms_transaction`, with what the server said at login).
    pub(super) fn ends_transaction(&self, e: &StorageError) -> bool {
        dooms_transaction(e, self.connector.rollback_on_timeout())
    }

    /// Refuses a write group while the commit marker table exists but
    /// cannot be trusted, looking at it again now and then (so a table
    /// fixed or dropped by an operator lets writes resume).
    async fn refuse_writes_for_marker(&mut self) -> Result<(), StorageError> {
        if self.connector.writes_refused().is_none() {
            return Ok(());
        }
        if self.connector.marker_recheck_due() {
            let connector = self.connector.clone();
            match self.link().await {
                Ok(link) => {
                    if let Err(f) = connector.recheck_marker(link).await {
                        self.link = None;
                        self.handles.clear();
                        return Err(f.error);
                    }
                }
                Err(f) => return Err(f.error),
            }
        }
        match self.connector.writes_refused() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A live connection, made on demand.
    async fn link(&mut self) -> Result<&mut Link, Failure> {
        live_link(&mut self.link, &mut self.handles, &self.connector).await
    }

    /// Books a failure; `Ok` when the operation may be tried again on a new
    /// connection (`idempotent`, nothing was read yet, first attempt).
    pub(super) fn after_failure(
        &mut self,
        f: Failure,
        idempotent: bool,
        progressed: bool,
        attempt: u32,
    ) -> Result<(), StorageError> {
        if f.link_lost {
            self.link = None;
            self.handles.clear();
            if !f.retryable {
                self.connector.note_timeout();
            }
        }
        let in_txn = matches!(self.txn, Txn::Open);
        if in_txn && (f.link_lost || self.ends_transaction(&f.error)) {
            tracing::warn!(error = %f.error, "write group's transaction lost; the group fails");
            self.txn = Txn::Doomed(f.error.clone());
            return Err(f.error);
        }
        let may_retry = (idempotent || matches!(self.txn, Txn::Wanted))
            && !in_txn
            && f.link_lost
            && f.retryable
            && !progressed
            && attempt < 2;
        if may_retry {
            tracing::debug!(error = %f.error, "connection closed by the server; retrying on a new one");
            Ok(())
        } else {
            Err(f.error)
        }
    }

    /// Puts the session in the mode the next statements need, queued ahead
    /// of them without a round trip of its own: autocommit off inside a
    /// write group (its transaction begins with its first statement, and
    /// when a deadlock rolls it back, statements already sent behind the
    /// failed one run in a new transaction that the group's rollback ends,
    /// instead of committing on their own), on outside one.
    pub(super) async fn ensure_session(&mut self) -> Result<(), Failure> {
        let in_group = matches!(self.txn, Txn::Wanted | Txn::Open);
        let link = self.link().await?;
        if link.autocommit == in_group {
            link.queue_quiet(if in_group {
                b"SET autocommit = 0"
            } else {
                b"SET autocommit = 1"
            });
            link.autocommit = !in_group;
        }
        Ok(())
    }

    /// Closes every HANDLER handle (so a waiting DDL can go on).
    async fn release_handles(&mut self) {
        let Some(link) = self.link.as_mut() else {
            self.handles.clear();
            return;
        };
        let n = self.handles.close_all(link);
        if n == 0 {
            return;
        }
        tracing::trace!(handles = n, "closing idle HANDLER handles");
        let mut ok = true;
        for _ in 0..n {
            if link.answer(&mut Discard).await.is_err() {
                ok = false;
                break;
            }
        }
        if !ok {
            self.link = None;
        }
    }
}

/// The connection in `slot`, made first if there is none (a new server
/// connection has no HANDLER handles open).
pub(super) async fn live_link<'a>(
    slot: &'a mut Option<Link>,
    handles: &mut Handles,
    connector: &Connector,
) -> Result<&'a mut Link, Failure> {
    if slot.is_none() {
        handles.clear();
        *slot = Some(connector.open_link().await?);
    }
    slot.as_mut().ok_or_else(|| Failure {
        error: StorageError::Unavailable("no connection".into()),
        link_lost: true,
        retryable: false,
    })
}

impl StorageConn for MysqlConn {
    async fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        self.follow_writer(false).await?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = async {
                self.ensure_session().await?;
                let link = self.link().await?;
                meta::describe(link, db, table).await
            }
            .await;
            match result {
                // Handles need nothing here: the server reopens a handle on
                // a changed table, rows are read by column name, and the
                // lease bounds how long one lives.
                Ok(meta) => return Ok(meta),
                Err(f) => self.after_failure(f, true, false, attempt)?,
            }
        }
    }

    async fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        if let Txn::Doomed(e) = &self.txn {
            return Err(doomed(e));
        }
        self.follow_writer(false).await?;
        let handler_reads = self.handler_reads();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut progressed = false;
            let result = async {
                self.ensure_session().await?;
                let link = live_link(&mut self.link, &mut self.handles, &self.connector).await?;
                scan::scan_many(
                    link,
                    &mut self.handles,
                    scans,
                    visit,
                    &mut progressed,
                    handler_reads,
                )
                .await
            }
            .await;
            let answered =
                result.is_ok() || progressed || matches!(&result, Err(f) if !f.link_lost);
            if answered && matches!(self.txn, Txn::Wanted) {
                self.txn = Txn::Open;
            }
            match result {
                Ok(()) => return Ok(()),
                Err(f) if !f.link_lost => {
                    // A statement failed; the link is fine and in step.
                    if matches!(self.txn, Txn::Open) && self.ends_transaction(&f.error) {
                        self.txn = Txn::Doomed(f.error.clone());
                    }
                    return Err(self.causal_read_error(f.error));
                }
                Err(f) => self.after_failure(f, true, progressed, attempt)?,
            }
        }
    }

    /// Locking reads that do not wait (`fill`), outside any transaction
    /// only: inside one, the share locks would last until its commit.
    async fn read_for_cache(&mut self, scans: &[Scan<'_>]) -> Result<Vec<CacheRead>, StorageError> {
        if !matches!(self.txn, Txn::Off) || scans.is_empty() {
            return Ok(vec![None; scans.len()]);
        }
        // With replicas: on the primary, where the cache's reader is.
        self.follow_writer(false).await?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = async {
                self.ensure_session().await?;
                let link = live_link(&mut self.link, &mut self.handles, &self.connector).await?;
                fill::read_locked(link, scans).await
            }
            .await;
            match result {
                Ok(read) => return Ok(read),
                Err(f) if !f.link_lost => return Err(f.error),
                Err(f) => self.after_failure(f, true, false, attempt)?,
            }
        }
    }

    /// Every statement is a round trip: write groups come in batches.
    fn write_batching(&self) -> WriteBatching {
        WriteBatching::Batched
    }

    /// Sent in runs, merged where safe (`insert_in_runs`).
    async fn insert_rows(
        &mut self,
        rows: &[RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>> {
        self.insert_in_runs(rows).await
    }

    /// Sent in runs, merged where safe (`write_in_runs`); behind vtgate,
    /// without the key columns a write by key sets to their own values
    /// (`without_unchanged_keys`).
    async fn write_rows(&mut self, writes: &[RowWrite<'_>]) -> Vec<Result<u64, StorageError>> {
        if self.link.is_none() {
            // Made now to learn the server's kind; a failure shows again
            // in the writes, which handle it.
            let _ = self.link().await;
        }
        if !self.link.as_ref().is_some_and(|l| l.server.is_vitess()) {
            // A run of updates by key: one statement when every key finds
            // its row (vtgate has its own rules for UPDATEs and savepoints).
            if writes.len() > 2 && self.update_by_keys_if_all_found(writes).await {
                return writes.iter().map(|_| Ok(1)).collect();
            }
            return self.write_in_runs(writes).await;
        }
        let kept: Vec<_> = writes.iter().map(without_unchanged_keys).collect();
        let rewritten: Vec<RowWrite<'_>> = writes
            .iter()
            .zip(&kept)
            .map(|(w, kept)| match kept {
                Some((columns, values)) => RowWrite {
                    table: w.table,
                    target: w.target,
                    change: Change::Update { columns, values },
                },
                None => *w,
            })
            .collect();
        self.write_in_runs(&rewritten).await
    }

    async fn serialize_modifies(&mut self, table: &TableMeta) -> Result<(), StorageError> {
        self.serialized = None;
        self.serialized = Some(self.connector.serialize_modifies(&table.table_sql).await?);
        Ok(())
    }

    fn end_serialized(&mut self) {
        self.serialized = None;
    }

    async fn begin(&mut self) -> Result<(), StorageError> {
        if matches!(self.txn, Txn::Open | Txn::Doomed(_)) {
            // A group was left open (should not happen): end it first.
            self.rollback().await;
        }
        self.follow_writer(true).await?;
        self.refuse_writes_for_marker().await?;
        if let Placement::Writer { topology, .. } = &self.placement {
            self.noted_before = topology.noted();
        }
        self.txn = Txn::Wanted;
        self.wrote = false;
        Ok(())
    }

    /// COMMIT returns once InnoDB made the group durable (as configured by
    /// innodb_flush_log_at_trx_commit). One transaction: all or nothing.
    /// A group that wrote marks its commit in the same transaction, so that
    /// a COMMIT whose answer is lost can be resolved (`in_doubt`).
    async fn commit(&mut self) -> Committed {
        match std::mem::replace(&mut self.txn, Txn::Off) {
            Txn::Off | Txn::Wanted => Committed::done(),
            Txn::Open => {
                if let Some(e) = self.connector.writes_refused().filter(|_| self.wrote) {
                    // The marker table was found untrusted when this
                    // group's connection was made: nothing of it stands.
                    self.roll_back_link().await;
                    return Committed::failed(CommitFailure::all(e));
                }
                let rollback_on_timeout = self.connector.rollback_on_timeout();
                let Some(link) = self.link.as_mut() else {
                    return Committed::failed(CommitFailure::all(StorageError::Unavailable(
                        "connection lost before commit".into(),
                    )));
                };
                let marker = self.connector.marker().filter(|_| self.wrote);
                if let Some(m) = marker {
                    self.group_seq += 1;
                    let (writer, seq) = (self.writer, self.group_seq);
                    link.queue(|sql| m.push_mark(sql, writer, seq));
                }
                link.queue(|sql| sql.extend_from_slice(b"COMMIT"));
                let session = Session {
                    connection_id: link.connection_id,
                    run: link.server_run,
                };
                let vitess = link.server.is_vitess();
                let mut marked = marker.is_some();
                // A marker refused for a deadlock (on Galera, a certification
                // conflict surfaces at the statement before COMMIT) means
                // the server rolled the transaction back: the COMMIT that
                // follows commits nothing.
                let mut rolled_back_at_marker = None;
                let answer = async {
                    if marker.is_some() {
                        if let Answer::Refused(e) = link.answer(&mut Discard).await? {
                            let error = refused_error(&e);
                            if dooms_transaction(&error, rollback_on_timeout) {
                                rolled_back_at_marker = Some(error);
                            } else {
                                tracing::warn!(error = %e, "the commit marker was not written");
                            }
                            marked = false;
                        }
                    }
                    link.answer(&mut Discard).await
                }
                .await;
                if let Some(error) = rolled_back_at_marker {
                    if answer.is_err() {
                        self.link = None;
                        self.handles.clear();
                    }
                    return Committed::failed(CommitFailure::all(error));
                }
                match answer {
                    Ok(Answer::Done(_)) => {
                        self.note_commit();
                        Committed::done()
                    }
                    Ok(Answer::Refused(e)) if vitess && self.wrote => {
                        // A COMMIT over several shards that vtgate refuses
                        // may have committed some (MULTI commits them one
                        // after another) or all (TWOPC after its decision).
                        self.roll_back_link().await;
                        tracing::error!(error = %e, "vtgate refused a COMMIT; its writes are answered 1 1 {ERR_COMMIT_IN_DOUBT}");
                        Committed::failed(CommitFailure::all(StorageError::Refused {
                            code: ERR_COMMIT_IN_DOUBT,
                            message: format!(
                                "commit outcome unknown: vtgate refused the COMMIT ({}), and \
                                 the shards it had committed stay committed",
                                refused_error(&e)
                            ),
                        }))
                    }
                    Ok(Answer::Refused(e)) => {
                        // A COMMIT the server refused (interrupted at the
                        // statement time bound while it waited) may leave
                        // the transaction open: were it not ended here, the
                        // next group's COMMIT would commit these writes too.
                        self.roll_back_link().await;
                        Committed::failed(CommitFailure::all(refused_error(&e)))
                    }
                    Err(f) => {
                        self.link = None;
                        self.handles.clear();
                        if !self.wrote {
                            // Nothing to commit: the answers are true.
                            return Committed::done();
                        }
                        self.settle_in_doubt(f.error, session, marked, vitess).await
                    }
                }
            }
            Txn::Doomed(e) => {
                self.roll_back_link().await;
                Committed::failed(CommitFailure::all(doomed(&e)))
            }
        }
    }

    async fn rollback(&mut self) {
        let was_open = matches!(self.txn, Txn::Open | Txn::Doomed(_));
        self.txn = Txn::Off;
        if was_open {
            self.roll_back_link().await;
        }
    }

    /// HANDLER handles are given back once their lease ends; a connection
    /// looks now and then whether the server began refusing connections
    /// for its limits (every `IDLE_LOOK`, every `PRESSURE_IDLE` once it
    /// has), so that an idle one is given back soon after another loop was
    /// refused (`release_idle`), however long ago this loop last ran.
    fn idle_deadline(&self) -> Option<Instant> {
        let handles = self.handles.next_expiry();
        if self.link.is_some() {
            let every = if self.connector.ever_limited() {
                PRESSURE_IDLE
            } else {
                IDLE_LOOK
            };
            let look = Instant::now() + every;
            return Some(handles.map_or(look, |h| h.min(look)));
        }
        handles
    }

    /// Closes the HANDLER handles once their lease ended; while the server
    /// refuses connections for its limits, gives the connection back too,
    /// so that a loop without one can have it (this one connects again on
    /// its next use).
    async fn release_idle(&mut self) {
        let under_pressure = self.connector.under_pressure();
        let lease_over = self
            .handles
            .next_expiry()
            .is_some_and(|t| t <= Instant::now());
        if lease_over || under_pressure {
            self.release_handles().await;
        }
        if under_pressure && matches!(self.txn, Txn::Off) {
            if let Some(link) = self.link.take() {
                tracing::debug!("giving an idle connection back to the server");
                self.handles.clear();
                link.quit().await;
            }
        }
    }
}

/// Says once per process that commits come without their GTID although
/// tracking was asked for: each such commit then costs reads a question of
/// the server's position.
fn untracked_commit_warning() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        tracing::warn!(
            "the server answered a commit that wrote without its GTID although hsd asked to \
             track it (is session_track_system_variables or session_track_gtids off at the \
             server?): such commits are treated as of unknown position, and reads that must \
             see them ask the server's position first"
        )
    });
}

/// A name for a write connection in the commit marker table, unique
/// among hsd processes (the standard library's per-process random keys,
/// the time and a counter).
fn writer_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

impl MysqlConn {
    /// The COMMIT of a group that wrote went out and its answer did not
    /// come back (`error`): learns from another connection what became of
    /// it (`in_doubt::resolve`), when the group marked its commit.
    async fn settle_in_doubt(
        &mut self,
        error: StorageError,
        session: Session,
        marked: bool,
        vitess: bool,
    ) -> Committed {
        let marker = self.connector.marker().filter(|_| marked);
        let fate = match marker {
            Some(m) => {
                tracing::warn!(%error, "a COMMIT went unanswered; asking the server whether it committed");
                resolve(&self.connector, m, session, self.writer, self.group_seq).await
            }
            None if vitess => Fate::Unknown(
                "the backend is Vitess, where hsd keeps no commit marker (docs/vitess.md)".into(),
            ),
            None => Fate::Unknown("the group has no commit marker".into()),
        };
        match fate {
            Fate::Committed => {
                tracing::info!("the unanswered COMMIT had committed; its writes are answered done");
                self.note_commit();
                Committed::done()
            }
            Fate::RolledBack => {
                tracing::info!(
                    "the unanswered COMMIT was rolled back; its writes are answered 2013"
                );
                Committed::failed(CommitFailure::all(StorageError::Unavailable(format!(
                    "the group was rolled back ({error})"
                ))))
            }
            Fate::Untrusted(u) => {
                self.connector.distrust_marker(&u.0);
                self.note_commit();
                Committed::failed(CommitFailure::all(StorageError::Refused {
                    code: ERR_COMMIT_IN_DOUBT,
                    message: format!(
                        "commit outcome unknown: {error}; the commit marker table {}",
                        u.0
                    ),
                }))
            }
            Fate::Unknown(why) => {
                // It may have committed: replicas must not serve reads
                // that could miss it.
                self.note_commit();
                tracing::error!(%error, %why, "a COMMIT went unanswered and its outcome is unknown; its writes are answered 1 1 {ERR_COMMIT_IN_DOUBT}");
                Committed::failed(CommitFailure::all(StorageError::Refused {
                    code: ERR_COMMIT_IN_DOUBT,
                    message: format!("commit outcome unknown: {error}; {why}"),
                }))
            }
        }
    }

    async fn roll_back_link(&mut self) {
        if let Some(link) = self.link.as_mut() {
            link.queue(|sql| sql.extend_from_slice(b"ROLLBACK"));
            if link.answer(&mut Discard).await.is_err() {
                self.link = None;
                self.handles.clear();
            }
        }
    }
}
