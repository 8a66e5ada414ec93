//! hsd: a HandlerSocket server for SQLite files and MySQL/MariaDB tables.
//!
//! A request's way through: `connection` (line framing) -> `session` (auth,
//! opened indexes, batching) -> `workers` (threads, group commit) -> `exec`
//! (HandlerSocket semantics) -> `backend` (SQL for one database) and back.

pub mod backend;
pub mod config;
pub mod connection;
pub mod demo;
pub mod exec;
pub mod metrics;
pub mod secrets;
pub mod server;
pub mod session;
pub mod shutdown;
pub mod sql_command;
pub mod tls;
pub mod workers;
