//! The change feed's thread, `hsd-binlog`: a single-threaded runtime of its
//! own that runs the binary log reader, the feed that applies its events to
//! the row cache, the position asker, the verifier and (with replicas) the
//! task that moves the reader to each new primary.
//!
//! Why a thread of its own: the feed decodes every event of the server's
//! binary log, which under a write-heavy load is steady work. On the main
//! thread it would share a runtime with the accept loops; on an event loop
//! it would delay that loop's clients. The tasks talk to the loops through
//! the cache (locks held briefly) and tokio channels, which work across
//! runtimes.

use std::future::Future;
use std::thread::JoinHandle;

/// The running thread; dropping it stops its runtime, which drops every
/// task on it (the reader's link closes with it).
pub(crate) struct FeedThread {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FeedThread {
    /// Starts the thread and its runtime.
    pub(crate) fn start() -> anyhow::Result<FeedThread> {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("hsd-binlog".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = handle_tx.send(Err(e));
                        return;
                    }
                };
                let _ = handle_tx.send(Ok(rt.handle().clone()));
                // Runs the spawned tasks until told to stop (or until the
                // service that owns the sender is gone).
                rt.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| anyhow::anyhow!("starting the hsd-binlog thread: {e}"))?;
        let handle = handle_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the hsd-binlog thread ended as it started"))?
            .map_err(|e| anyhow::anyhow!("the hsd-binlog thread's runtime: {e}"))?;
        Ok(FeedThread {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Runs `work` on the feed's thread (tasks it spawns stay there) and
    /// waits for its result.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = anyhow::Result<T>> + Send + 'static,
    ) -> anyhow::Result<T> {
        self.handle
            .spawn(work)
            .await
            .map_err(|e| anyhow::anyhow!("the hsd-binlog thread's start: {e}"))?
    }
}

impl Drop for FeedThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Not joined when dropped on the thread itself (its runtime drops
        // the last task holding the service): it ends on its own.
        if let Some(thread) = self.thread.take() {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}
