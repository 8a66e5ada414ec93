//! What every event loop shares: the backend that makes storage
//! connections, the catalog of opened indexes, the metrics, and the limit
//! on the answers of one client batch.

use crate::exec::{Catalog, WriteLimits, MAX_WALK_ROWS, WALK_SLICE, WALK_WHOLE_ROWS};
use crate::metrics::Metrics;
use crate::read_threads::ReadThreads;
use hsd_storage::Backend;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Shared<B: Backend> {
    pub(crate) backend: Arc<B>,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) metrics: Arc<Metrics>,
    /// `--max-response-bytes`: what the answers of one client batch of
    /// finds may hold together, and the rows one `?` modify answers.
    pub(crate) max_response_bytes: usize,
    /// `--statement-timeout`: how long a modify walk may take as a whole.
    pub(crate) walk_time: Option<Duration>,
    /// The threads long scans run on, where the backend wants them
    /// (`LongReads::Threads`).
    pub(crate) read_threads: Option<Arc<ReadThreads<B>>>,
    /// `--write-groups`: groups in flight per write loop, each on its own
    /// storage connection (`group_commit`).
    pub(crate) write_groups: usize,
}

impl<B: Backend> Shared<B> {
    /// What one write may cost.
    pub(crate) fn write_limits(&self) -> WriteLimits {
        WriteLimits {
            max_answer: self.max_response_bytes,
            walk_time: self.walk_time,
            walk_rows: MAX_WALK_ROWS,
            walk_slice: Some(WALK_SLICE),
            walk_whole_rows: WALK_WHOLE_ROWS,
        }
    }
}

impl<B: Backend> Clone for Shared<B> {
    fn clone(&self) -> Self {
        Shared {
            backend: self.backend.clone(),
            catalog: self.catalog.clone(),
            metrics: self.metrics.clone(),
            max_response_bytes: self.max_response_bytes,
            walk_time: self.walk_time,
            read_threads: self.read_threads.clone(),
            write_groups: self.write_groups,
        }
    }
}

/// What the unit tests of the loops' batcher and committer share: a
/// `Shared` over the memory seam, a single-threaded runtime with a
/// `LocalSet` (the loops' own kind), and answers as text.
#[cfg(test)]
pub(crate) mod testing {
    use super::Shared;
    use crate::exec::Catalog;
    use crate::metrics::Metrics;
    use hs_proto::ResponseWriter;
    use hsd_storage::memory::MemoryStore;
    use std::sync::Arc;

    pub(crate) fn shared(store: MemoryStore) -> Shared<MemoryStore> {
        Shared {
            backend: Arc::new(store),
            catalog: Arc::new(Catalog::default()),
            metrics: Metrics::new().expect("metrics"),
            max_response_bytes: 1 << 20,
            walk_time: None,
            read_threads: None,
            write_groups: 1,
        }
    }

    pub(crate) fn local<F: std::future::Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    pub(crate) fn text(answers: &[ResponseWriter]) -> Vec<String> {
        answers
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned())
            .collect()
    }
}
