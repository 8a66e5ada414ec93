//! `--read-consistency strict` with replicas: a read must see every write
//! committed on the writer before it arrived, from any client or hsd
//! process, so the frontier of this process's own commits is not enough.
//! A batch asks the writer's position (MariaDB `gtid_binlog_pos`, MySQL
//! `gtid_executed`) on a connection of its own, asked after the batch
//! arrived, and runs on a replica that covers it (`route_read`), else on
//! the writer. Concurrent batches share one question: an answer asked
//! after a batch arrived serves it too.

use super::Topology;
use crate::binlog::query;
use crate::link::Link;
use mysql_wire::GtidSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// The writer's position, and when it was asked: it holds every write
/// committed on the writer before then.
struct Asked {
    at: Instant,
    position: Arc<GtidSet>,
}

type Reply = oneshot::Sender<Option<Arc<Asked>>>;

pub(crate) struct WriterPositions {
    tx: mpsc::UnboundedSender<Reply>,
    latest: Arc<Mutex<Option<Arc<Asked>>>>,
}

impl WriterPositions {
    /// Starts the asker on the calling runtime; it ends when this is
    /// dropped.
    pub(crate) fn start(topology: Arc<Topology>) -> Arc<WriterPositions> {
        let (tx, rx) = mpsc::unbounded_channel();
        let latest = Arc::new(Mutex::new(None));
        tokio::spawn(serve(topology, rx, latest.clone()));
        Arc::new(WriterPositions { tx, latest })
    }

    /// The writer's position asked at `arrived` or later; `None` when the
    /// writer could not be asked (the read then runs on the writer).
    pub(crate) async fn since(&self, arrived: Instant) -> Option<Arc<GtidSet>> {
        let known = self
            .latest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(a) = known.filter(|a| a.at >= arrived) {
            return Some(a.position.clone());
        }
        let (reply, answer) = oneshot::channel();
        self.tx.send(reply).ok()?;
        answer.await.ok().flatten().map(|a| a.position.clone())
    }
}

/// Answers the questions, one at a time, each answer for all that waited.
async fn serve(
    topology: Arc<Topology>,
    mut rx: mpsc::UnboundedReceiver<Reply>,
    latest: Arc<Mutex<Option<Arc<Asked>>>>,
) {
    // The connection, and which server it is to.
    let mut link: Option<(usize, Link)> = None;
    while let Some(first) = rx.recv().await {
        let mut waiting = vec![first];
        while let Ok(r) = rx.try_recv() {
            waiting.push(r);
        }
        let at = Instant::now();
        let asked = match ask(&topology, &mut link).await {
            Ok(position) => Some(Arc::new(Asked {
                at,
                position: Arc::new(position),
            })),
            Err(e) => {
                tracing::warn!("--read-consistency strict: the writer's position: {e}");
                None
            }
        };
        if let Some(a) = &asked {
            *latest.lock().unwrap_or_else(|p| p.into_inner()) = Some(a.clone());
        }
        for reply in waiting {
            let _ = reply.send(asked.clone());
        }
    }
}

/// The position of the server that takes writes now; a failure drops the
/// connection.
async fn ask(topology: &Topology, link: &mut Option<(usize, Link)>) -> Result<GtidSet, String> {
    let writer = topology.writer().map_err(|e| e.to_string())?;
    if link.as_ref().is_none_or(|(at, _)| *at != writer) {
        let settings = &topology.servers[writer].spec.link;
        let connected = Link::connect(settings)
            .await
            .map_err(|f| f.error.to_string())?;
        *link = Some((writer, connected));
    }
    let Some((_, l)) = link.as_mut() else {
        return Err("no connection".into());
    };
    let flavor = l.server.flavor;
    let sql = if flavor.is_mariadb() {
        "SELECT @@GLOBAL.gtid_binlog_pos"
    } else {
        "SELECT @@GLOBAL.gtid_executed"
    };
    let rows = match query(l, sql).await {
        Ok(rows) => rows,
        Err(e) => {
            *link = None;
            return Err(e);
        }
    };
    let text = rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .unwrap_or_default();
    let parsed = if flavor.is_mariadb() {
        GtidSet::parse_mariadb(&text)
    } else {
        GtidSet::parse_mysql(&text)
    };
    parsed.map_err(|e| format!("{sql} answered {text:?}: {e}"))
}
