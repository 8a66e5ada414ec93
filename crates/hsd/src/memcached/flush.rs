//! `flush_all` (and the binary Flush) by the containers' `flush_policy`,
//! as the InnoDB memcached plugin did it: a container whose policy is
//! `innodb_only` (or `caching`) has its table emptied, one with
//! `cache_only` has its items in memory dropped (`memory`), and
//! when every container's is `disabled` the command is refused as a
//! memcached started with `-F` refuses it.
//!
//! A table is emptied by DELETE, never TRUNCATE: a DELETE is a row change
//! like any other write, so replicas, the binlog reader that keeps the
//! row cache right, and SQL triggers all see each row go, and it commits
//! (or not) as one of hsd's write groups; TRUNCATE is DDL (an implicit
//! commit, a metadata lock, no row events). It runs as a HandlerSocket
//! client's find-and-delete from the start of the key's index, at most
//! `ROUND` rows per write, again until a round deletes fewer.
//!
//! `flush_all <delay>` empties the tables when the delay has passed (the
//! delay read as an exptime: up to 30 days relative, beyond a unix time),
//! on the loop that took the command; a later `flush_all` replaces an
//! earlier one still waiting, as in memcached.

use super::answer::McAnswer;
use super::config::{Container, Containers};
use super::item::{expiry_of, now};
use super::memory::MemoryItems;
use super::ops::Failure;
use crate::dispatch::Dispatcher;
use crate::exec::{Done, WriteOp, WriteTask};
use hs_proto::{ErrorKind, FindOp, FindRequest, ModifyOp, ModifySpec};
use hsd_storage::{Backend, ColumnKind};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Rows one write of a flush deletes at most.
const ROUND: u32 = 10_000;
/// The longest sleep of a delayed flush before it looks again.
const MAX_WAIT_SECS: u64 = 3600;
/// Writes one flush of one table runs at most (a table refilled as fast as
/// it is emptied must not keep a flush going for ever).
const MAX_ROUNDS: u32 = 100_000;

/// What `flush_all` does to a container, from the plugin's `flush_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FlushPolicy {
    /// `innodb_only`, `caching`: the table is emptied.
    Empty,
    /// `cache_only`: the items in memory are dropped, the table left.
    MemoryOnly,
    /// `disabled` (and the config file's default): refused.
    #[default]
    Disabled,
}

impl FlushPolicy {
    /// The plugin's name of a policy (`innodb_only`, `caching`,
    /// `cache_only`, `disabled`), in any case.
    pub(crate) fn parse(name: &str) -> Option<FlushPolicy> {
        match name.trim().to_ascii_lowercase().as_str() {
            "innodb_only" | "caching" => Some(FlushPolicy::Empty),
            "cache_only" => Some(FlushPolicy::MemoryOnly),
            "disabled" => Some(FlushPolicy::Disabled),
            _ => None,
        }
    }

    /// What flush_all does to the container, in words for the log.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            FlushPolicy::Empty => "empties the table",
            FlushPolicy::MemoryOnly => "drops the items in memory",
            FlushPolicy::Disabled => "disabled",
        }
    }
}

/// Whether `flush_all` may run at all: some container's policy is not
/// `disabled`.
pub(crate) fn enabled(containers: &Containers) -> bool {
    containers
        .list
        .iter()
        .any(|c| c.flush != FlushPolicy::Disabled)
}

/// The flush waiting for its delay, shared by every loop: a new
/// `flush_all` takes the next generation, and a waiting one runs only if
/// its generation is still the latest.
#[derive(Default)]
pub(crate) struct FlushSchedule(AtomicU64);

impl FlushSchedule {
    fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn is_latest(&self, generation: u64) -> bool {
        self.0.load(Ordering::SeqCst) == generation
    }
}

/// The key from which a find `>=` reaches every row of the key's index.
fn first_key(container_key: &ColumnKind) -> Vec<u8> {
    match container_key {
        ColumnKind::Integer { min, .. } => min.to_string().into_bytes(),
        _ => Vec::new(),
    }
}

/// Empties the table of each container whose policy says so (a table
/// shared by several containers once); the rows deleted.
pub(crate) async fn empty_tables<B: Backend>(
    dispatcher: &Dispatcher<B, McAnswer>,
    containers: &Containers,
) -> Result<u64, Failure> {
    let mut done: Vec<&Container> = Vec::new();
    let mut deleted = 0;
    for container in &containers.list {
        if container.flush != FlushPolicy::Empty || done.iter().any(|d| d.same_table(container)) {
            continue;
        }
        done.push(container);
        let index = dispatcher
            .open(container.open_request())
            .await
            .map_err(Failure::Storage)?;
        let start = index
            .columns
            .first()
            .and_then(|&c| index.table.columns.get(c))
            .map(|c| first_key(&c.kind))
            .unwrap_or_default();
        for _ in 0..MAX_ROUNDS {
            let find = FindRequest {
                op: FindOp::Ge,
                keys: vec![Some(start.clone())],
                limit: ROUND,
                offset: 0,
                in_clause: None,
                filters: Vec::new(),
                modify: Some(ModifySpec {
                    op: Some(ModifyOp::Delete),
                    returning: false,
                    values: Vec::new(),
                }),
            };
            let task = WriteTask {
                index: index.clone(),
                op: WriteOp::Modify(find),
            };
            let answer = dispatcher.writes(vec![task]).await.pop();
            let n = match answer.as_ref().map(|a| (a.failure(), a.done())) {
                Some((None, Some(Done::Modified(n)))) => n,
                Some((Some(kind), _)) => return Err(Failure::Storage(kind)),
                _ => return Err(Failure::Storage(ErrorKind::Storage(0))),
            };
            deleted += n;
            if n < u64::from(ROUND) {
                break;
            }
        }
    }
    Ok(deleted)
}

/// Drops the items in memory of each container whose policy is
/// `cache_only`.
fn empty_memory(memory: &MemoryItems, containers: &Containers) {
    for (i, container) in containers.list.iter().enumerate() {
        if container.flush == FlushPolicy::MemoryOnly {
            let dropped = memory.clear(i);
            tracing::info!(
                dropped,
                container = %String::from_utf8_lossy(&container.name),
                "memcached flush_all dropped a cache_only container's items"
            );
        }
    }
}

/// `flush_all <delay>`: now (a delay of 0 or less), or on this loop once
/// the delay has passed; either replaces a flush still waiting. Refused
/// (`false`) when every container's policy is `disabled`.
pub(crate) async fn flush<B: Backend>(
    dispatcher: &Rc<Dispatcher<B, McAnswer>>,
    containers: &Arc<Containers>,
    memory: &Arc<MemoryItems>,
    schedule: &Arc<FlushSchedule>,
    delay: i64,
) -> Result<bool, Failure> {
    if !enabled(containers) {
        return Ok(false);
    }
    let generation = schedule.next();
    if delay <= 0 {
        empty_memory(memory, containers);
        let deleted = empty_tables(dispatcher, containers).await?;
        tracing::info!(
            deleted,
            "memcached flush_all emptied the containers' tables"
        );
        return Ok(true);
    }
    let at = expiry_of(i32::try_from(delay).unwrap_or(i32::MAX), now());
    let (dispatcher, containers, memory, schedule) = (
        dispatcher.clone(),
        containers.clone(),
        memory.clone(),
        schedule.clone(),
    );
    tokio::task::spawn_local(async move {
        // At most an hour at a time: a flush replaced meanwhile ends at
        // the next look, and no timer is asked for years ahead.
        loop {
            if !schedule.is_latest(generation) {
                return;
            }
            let left = at.saturating_sub(now());
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_secs(left.min(MAX_WAIT_SECS))).await;
        }
        empty_memory(&memory, &containers);
        match empty_tables(&dispatcher, &containers).await {
            Ok(deleted) => {
                tracing::info!(deleted, "memcached flush_all (delayed) emptied the tables")
            }
            Err(e) => tracing::warn!(?e, "memcached flush_all (delayed) failed"),
        }
    });
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_by_the_plugins_names() {
        assert_eq!(FlushPolicy::parse("innodb_only"), Some(FlushPolicy::Empty));
        assert_eq!(FlushPolicy::parse("CACHING"), Some(FlushPolicy::Empty));
        assert_eq!(
            FlushPolicy::parse("cache_only"),
            Some(FlushPolicy::MemoryOnly)
        );
        assert_eq!(FlushPolicy::parse("disabled"), Some(FlushPolicy::Disabled));
        assert_eq!(FlushPolicy::parse("truncate"), None);
        assert_eq!(FlushPolicy::default(), FlushPolicy::Disabled);
        assert_eq!(
            first_key(&ColumnKind::Integer {
                min: -128,
                max: 127
            }),
            b"-128"
        );
        let schedule = FlushSchedule::default();
        let first = schedule.next();
        assert!(schedule.is_latest(first));
        let second = schedule.next();
        assert!(!schedule.is_latest(first) && schedule.is_latest(second));
    }
}
