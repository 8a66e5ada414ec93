//! hsd: a HandlerSocket server for SQLite files and MySQL/MariaDB tables.
//!
//! A request's way through, all on the event loop that owns its connection
//! (`event_loop`; the thread map is in `dispatch`): `connection` (line
//! framing) -> `session` (auth, opened indexes, batching) -> `dispatch`
//! (where it runs: inline, the read batcher, the group committer) -> `exec`
//! (HandlerSocket semantics, answers handed to an `exec::Answer`) ->
//! `backend` (SQL for one database) and back; `hs_answer` encodes the
//! answers as HandlerSocket lines. docs/architecture.md walks a read and a
//! write through these files, and says what a new backend or protocol
//! front implements.
//!
//! The library is the `hsd` command's: what it uses is exported here, and
//! `harness` runs the request path in process for the fuzz targets.
#![warn(unreachable_pub)]

mod accept_backoff;
mod admin;
mod admission;
mod allocator;
mod byte_size;
mod config;
mod config_file;
mod connection;
mod demo;
mod dispatch;
mod event_loop;
mod exec;
mod group_commit;
pub mod harness;
mod hs_answer;
mod job_queue;
mod limits;
pub mod logging;
mod memcached;
mod metrics;
mod port;
pub mod preflight;
mod process_metrics;
mod read_batch;
mod read_threads;
mod readiness;
mod reload;
mod secrets;
mod server;
mod session;
mod shared;
mod shutdown;
mod sql_command;
mod tls;

pub use admission::newcomer_places;
pub use allocator::return_large_blocks;
pub use config::ServeOptions;
pub use demo::DEMO_ROWS;
pub use reload::Reload;
pub use server::run as serve;
pub use sql_command::run as run_sql;
