//! What every event loop shares: the backend that makes storage
//! connections, the catalog of opened indexes, the metrics, and the limit
//! on the answers of one client batch.

use crate::backend::Backend;
use crate::exec::Catalog;
use crate::metrics::Metrics;
use std::sync::Arc;

pub(crate) struct Shared<B: Backend> {
    pub(crate) backend: Arc<B>,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) metrics: Arc<Metrics>,
    /// `--max-response-bytes`: what the answers of one client batch of
    /// finds may hold together, and the rows one `?` modify answers.
    pub(crate) max_response_bytes: usize,
}

impl<B: Backend> Clone for Shared<B> {
    fn clone(&self) -> Self {
        Shared {
            backend: self.backend.clone(),
            catalog: self.catalog.clone(),
            metrics: self.metrics.clone(),
            max_response_bytes: self.max_response_bytes,
        }
    }
}
