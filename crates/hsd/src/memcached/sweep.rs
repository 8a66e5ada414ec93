//! The sweep of expired rows (`--memcached-sweep-interval`,
//! `--memcached-sweep-limit`): every interval, in each container with an
//! expiry column, one find-and-delete a HandlerSocket client could send:
//! `>= ''` on the key's index, filtered to rows whose expiry is set and
//! past (`F > 0`, `F <= now`), `D`, limited to the sweep limit. It runs on
//! the first memcached loop through that loop's `Dispatcher`, so it is a
//! write as any other: grouped, committed, replicated. The filter is
//! evaluated where the row is deleted, in the same transaction, so a row
//! touched or stored again meanwhile stays.

use super::answer::McAnswer;
use super::config::{Containers, SweepSettings};
use super::item::{now, Layout};
use crate::dispatch::Dispatcher;
use crate::exec::{Done, WriteOp, WriteTask};
use crate::shutdown::Shutdown;
use hs_proto::{FilterKind, FilterOp, FilterSpec, FindOp, FindRequest, ModifyOp, ModifySpec};
use hsd_storage::{Backend, OpenedIndex};
use std::sync::Arc;

/// The find-and-delete of one sweep of a container whose expiry is the
/// opened column `expire` (filter columns are the opened columns after
/// the key).
fn sweep_request(expire: usize, limit: usize, now: u64) -> FindRequest {
    let filter = |op, value: u64| FilterSpec {
        kind: FilterKind::Skip,
        op,
        column: (expire - 1) as u32,
        value: Some(value.to_string().into_bytes()),
    };
    FindRequest {
        op: FindOp::Ge,
        // The plugin's keys are CHAR/VARCHAR: '' is where the index starts.
        keys: vec![Some(Vec::new())],
        limit: u32::try_from(limit).unwrap_or(u32::MAX),
        offset: 0,
        in_clause: None,
        filters: vec![filter(FilterOp::Gt, 0), filter(FilterOp::Le, now)],
        modify: Some(ModifySpec {
            op: Some(ModifyOp::Delete),
            returning: false,
            values: Vec::new(),
        }),
    }
}

/// Sweeps every `settings.interval` until shutdown.
pub(crate) async fn run<B: Backend>(
    settings: SweepSettings,
    containers: Arc<Containers>,
    dispatcher: std::rc::Rc<Dispatcher<B, McAnswer>>,
    mut shutdown: Shutdown,
) {
    let mut opened: Vec<Option<Arc<OpenedIndex>>> = vec![None; containers.list.len()];
    loop {
        tokio::select! {
            _ = tokio::time::sleep(settings.interval) => {}
            _ = shutdown.recv() => return,
        }
        for (i, container) in containers.list.iter().enumerate() {
            let Some(expire) = Layout::of(container).expire else {
                continue;
            };
            if !container.policies.reaches_table() {
                continue;
            }
            if shutdown.is_triggered() {
                return;
            }
            let name = String::from_utf8_lossy(&container.name);
            let index = match &opened[i] {
                Some(index) => index.clone(),
                None => match dispatcher.open(container.open_request()).await {
                    Ok(index) => opened[i].insert(index).clone(),
                    Err(kind) => {
                        tracing::warn!(container = %name, ?kind, "sweep: cannot open the container's table; trying again next sweep");
                        continue;
                    }
                },
            };
            let task = WriteTask {
                index,
                op: WriteOp::Modify(sweep_request(expire, settings.limit, now())),
            };
            let answer = dispatcher.writes(vec![task]).await.pop();
            match answer.as_ref().map(|a| (a.failure(), a.done())) {
                Some((None, Some(Done::Modified(n)))) => {
                    tracing::debug!(container = %name, deleted = n, "sweep of expired rows");
                }
                Some((Some(kind), _)) => {
                    // The table may have been dropped and made again: open
                    // it anew next time.
                    opened[i] = None;
                    tracing::warn!(container = %name, ?kind, "sweep of expired rows failed; trying again next sweep");
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_is_a_bounded_filtered_delete() {
        // Key, value, flags, cas, expiry: the expiry is filter column 3.
        let req = sweep_request(4, 250, 1_700_000_000);
        assert_eq!(req.op, FindOp::Ge);
        assert_eq!(req.keys, vec![Some(Vec::new())]);
        assert_eq!(req.limit, 250);
        let filters: Vec<_> = req
            .filters
            .iter()
            .map(|f| (f.kind, f.op, f.column, f.value.clone()))
            .collect();
        assert_eq!(
            filters,
            vec![
                (FilterKind::Skip, FilterOp::Gt, 3, Some(b"0".to_vec())),
                (
                    FilterKind::Skip,
                    FilterOp::Le,
                    3,
                    Some(b"1700000000".to_vec())
                ),
            ]
        );
        assert_eq!(
            req.modify.and_then(|m| m.op),
            Some(ModifyOp::Delete),
            "a delete"
        );
    }
}
