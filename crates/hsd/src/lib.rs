//! hsd: a HandlerSocket server for SQLite files and MySQL/MariaDB tables.
//!
//! A request's way through, all on the event loop that owns its connection
//! (`event_loop`; the thread map is in `dispatch`): `connection` (line
//! framing) -> `session` (auth, opened indexes, batching) -> `dispatch`
//! (where it runs: inline, the read batcher, the group committer) -> `exec`
//! (HandlerSocket semantics) -> `backend` (SQL for one database) and back.

mod accept_backoff;
pub mod admission;
pub mod allocator;
pub mod backend;
pub mod config;
pub mod connection;
pub mod demo;
pub mod dispatch;
pub mod event_loop;
pub mod exec;
pub mod group_commit;
mod job_queue;
pub mod limits;
pub mod metrics;
pub mod port;
pub mod read_batch;
pub mod secrets;
pub mod server;
pub mod session;
pub mod shared;
pub mod shutdown;
pub mod sql_command;
mod storage_pool;
pub mod tls;
