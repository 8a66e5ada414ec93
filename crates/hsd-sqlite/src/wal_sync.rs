//! How the embedded store makes commits durable and keeps its WAL small.
//!
//! With `--synchronous full` (the default) a write is answered only once it
//! is on disk. hsd's connections commit with SQLite's NORMAL mode (the WAL
//! is appended, not synced, and never checkpointed inside COMMIT); the group
//! committer then runs the group's sync step (`WalSyncer::step`), which
//! fdatasyncs the WAL of each file the group wrote. That is what FULL mode
//! does inside COMMIT, minus what made COMMIT slow: checkpoints.
//!
//! Checkpoints (copying WAL frames into the db file, and syncing it) run on
//! a thread of their own, as PASSIVE checkpoints that never block a writer,
//! at most every `CHECKPOINT_EVERY` per file. SQLite rewinds the WAL only
//! when a writer begins right after a complete checkpoint, which a busy
//! committer never does by itself; so after each checkpoint the committer is
//! asked (`restart_due`) to run a RESTART checkpoint before its next
//! transaction on that file: it copies the few frames written since and
//! rewinds the WAL, which then stays small and is overwritten in place (a
//! sync of overwritten blocks is about half the cost of one that grows the
//! file).
//!
//! Why acknowledged writes are durable: a commit's frames are in the WAL
//! file when COMMIT returns, and its answer waits for an fdatasync of that
//! file that started after the commit. A crash before it can lose only
//! unanswered writes, and WAL recovery drops a torn tail by its checksums.

use super::{db_path, open_db, Synchronous};
use hsd_storage::{CommitFailure, StorageError, SyncStep};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the WAL of a busy db is checkpointed (PASSIVE).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// The WAL files of every db, shared by the backend's connections.
pub struct WalSyncer {
    data_dir: PathBuf,
    files: Mutex<HashMap<String, Arc<WalFile>>>,
    /// The checkpoint thread's queue (started on first use).
    checkpoints: Mutex<Option<mpsc::Sender<Arc<WalFile>>>>,
}

/// One db's WAL: how many commits were appended, how many are on disk.
struct WalFile {
    db: String,
    committed: AtomicU64,
    synced: AtomicU64,
    /// A checkpoint finished: the writer should rewind the WAL.
    restart_wanted: AtomicBool,
    /// A checkpoint was asked for and has not run yet.
    checkpoint_queued: AtomicBool,
    /// The WAL file, open for syncing, and when a checkpoint was last asked.
    sync: Mutex<SyncState>,
}

struct SyncState {
    wal: Option<File>,
    last_checkpoint: Instant,
}

/// A commit to make durable: its file and its number there.
pub(crate) struct Ticket {
    file: Arc<WalFile>,
    n: u64,
}

impl WalSyncer {
    pub(crate) fn new(data_dir: &Path) -> WalSyncer {
        WalSyncer {
            data_dir: data_dir.to_path_buf(),
            files: Mutex::new(HashMap::new()),
            checkpoints: Mutex::new(None),
        }
    }

    /// Whether the writer should rewind `db`'s WAL before its next
    /// transaction there; answers each request once.
    pub(crate) fn restart_due(&self, db: &str) -> bool {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files
            .get(db)
            .is_some_and(|f| f.restart_wanted.swap(false, Ordering::AcqRel))
    }

    /// Notes a commit just made on `db`.
    pub(crate) fn committed(&self, db: &str) -> Ticket {
        let file = {
            let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
            files
                .entry(db.to_string())
                .or_insert_with(|| {
                    Arc::new(WalFile {
                        db: db.to_string(),
                        committed: AtomicU64::new(0),
                        synced: AtomicU64::new(0),
                        restart_wanted: AtomicBool::new(false),
                        checkpoint_queued: AtomicBool::new(false),
                        sync: Mutex::new(SyncState {
                            wal: None,
                            last_checkpoint: Instant::now(),
                        }),
                    })
                })
                .clone()
        };
        let n = file.committed.fetch_add(1, Ordering::AcqRel) + 1;
        Ticket { file, n }
    }

    /// The step that makes these commits durable (the committer runs it
    /// before answering).
    pub(crate) fn step(self: &Arc<Self>, tickets: Vec<Ticket>) -> SyncStep {
        let syncer = self.clone();
        Box::new(move || syncer.sync(&tickets))
    }

    fn sync(&self, tickets: &[Ticket]) -> Result<(), CommitFailure> {
        let mut failed: Vec<String> = Vec::new();
        let mut first_error = None;
        for Ticket { file, n } in tickets {
            if file.synced.load(Ordering::Acquire) >= *n {
                continue;
            }
            if let Err(e) = self.sync_file(file, *n) {
                failed.push(file.db.clone());
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            None => Ok(()),
            Some(error) => Err(CommitFailure {
                error,
                dbs: Some(failed),
            }),
        }
    }

    fn sync_file(&self, file: &Arc<WalFile>, n: u64) -> Result<(), StorageError> {
        let mut state = file.sync.lock().unwrap_or_else(|p| p.into_inner());
        // Another writer's sync may have covered this commit meanwhile.
        if file.synced.load(Ordering::Acquire) >= n {
            return Ok(());
        }
        // Every commit counted so far has its frames in the file.
        let upto = file.committed.load(Ordering::Acquire);
        if state.wal.is_none() {
            state.wal = Some(self.open_wal(&file.db)?);
        }
        if let Some(wal) = &state.wal {
            wal.sync_data()
                .map_err(|e| io_error("syncing the WAL", &e))?;
        }
        file.synced.fetch_max(upto, Ordering::AcqRel);
        if state.last_checkpoint.elapsed() >= CHECKPOINT_EVERY
            && !file.checkpoint_queued.swap(true, Ordering::AcqRel)
        {
            state.last_checkpoint = Instant::now();
            self.queue_checkpoint(file.clone());
        }
        Ok(())
    }

    fn open_wal(&self, db: &str) -> Result<File, StorageError> {
        // SQLite keeps the WAL beside the real file when the db file is a
        // symbolic link.
        let db_file = db_path(&self.data_dir, db);
        let real = std::fs::canonicalize(&db_file).unwrap_or(db_file);
        let mut path = real.into_os_string();
        path.push("-wal");
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("opening the WAL", &e))
    }

    /// Hands a checkpoint to the checkpoint thread, starting it if needed.
    fn queue_checkpoint(&self, file: Arc<WalFile>) {
        let mut tx = self.checkpoints.lock().unwrap_or_else(|p| p.into_inner());
        if tx.is_none() {
            match start_checkpointer(self.data_dir.clone()) {
                Ok(sender) => *tx = Some(sender),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the checkpoint thread");
                    file.checkpoint_queued.store(false, Ordering::Release);
                    return;
                }
            }
        }
        if let Some(sender) = tx.as_ref() {
            if let Err(mpsc::SendError(file)) = sender.send(file) {
                file.checkpoint_queued.store(false, Ordering::Release);
                *tx = None;
            }
        }
    }
}

/// The checkpoint thread: one connection per db, PASSIVE checkpoints.
fn start_checkpointer(data_dir: PathBuf) -> std::io::Result<mpsc::Sender<Arc<WalFile>>> {
    let (tx, rx) = mpsc::channel::<Arc<WalFile>>();
    std::thread::Builder::new()
        .name("hsd-checkpoint".into())
        .spawn(move || {
            let mut conns: HashMap<String, rusqlite::Connection> = HashMap::new();
            while let Ok(file) = rx.recv() {
                file.checkpoint_queued.store(false, Ordering::Release);
                if checkpoint(&data_dir, &file.db, &mut conns) {
                    file.restart_wanted.store(true, Ordering::Release);
                }
            }
        })?;
    Ok(tx)
}

/// Copies what it can of the WAL into the db file without blocking anyone;
/// failures only delay the next one. Returns whether it copied every frame
/// (the WAL may be rewound).
fn checkpoint(
    data_dir: &Path,
    db: &str,
    conns: &mut HashMap<String, rusqlite::Connection>,
) -> bool {
    if !conns.contains_key(db) {
        match open_db(data_dir, db, false, Synchronous::Normal) {
            Ok(c) => {
                conns.insert(db.to_string(), c);
            }
            Err(e) => {
                tracing::debug!(db, error = %e, "cannot open a connection to checkpoint");
                return false;
            }
        }
    }
    let Some(c) = conns.get(db) else {
        return false;
    };
    let result = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    });
    match result {
        Ok((busy, frames, copied)) => {
            tracing::trace!(db, busy, frames, copied, "checkpoint");
            busy == 0 && frames == copied && frames > 0
        }
        Err(e) => {
            tracing::debug!(db, error = %e, "checkpoint failed; tried again later");
            false
        }
    }
}

fn io_error(what: &str, e: &std::io::Error) -> StorageError {
    StorageError::Refused {
        // SQLite's SQLITE_IOERR, what a failed sync inside COMMIT answered.
        code: 10,
        message: format!("{what}: {e}"),
    }
}
