//! hs-client: an async (tokio) HandlerSocket client, used by hsd's integration
//! tests and by hsbench, and a blocking one for tests and tools.
//!
//! - `Client` (client.rs): connect, typed requests, raw `request`, `pipeline`,
//!   `send`/`recv`, and reconnect that re-sends auth and re-opens indexes
//!   (read client.rs's module doc for exactly what is retried).
//! - `Find`, `auth_line`, `open_index_line`, `insert_line` (request.rs):
//!   correctly encoded request lines.
//! - `ResponseExt` (response.rs): `check`, `into_rows`, `number` on
//!   `hs_proto::Response`.
//! - `blocking::Connection` (blocking.rs): a blocking connection that sends
//!   raw lines, tokens or pipelines and hands back each answer line exactly
//!   (hsd's integration tests and `hs-conformance`).
//!
//! ```no_run
//! # async fn demo() -> hs_client::Result<()> {
//! use hs_client::{Client, Find, ResponseExt};
//! let mut c = Client::connect("127.0.0.1:9999").await?;
//! c.open_index(0, "test", "user", "PRIMARY", &["name", "email"], &[]).await?.check()?;
//! c.insert(0, &[Some("jane"), None]).await?.check()?;
//! let rows = c.find(&Find::new(0, ">=", &["a"]).limit(10)).await?.check()?.into_rows();
//! # let _ = rows; Ok(()) }
//! ```

pub mod blocking;
mod client;
mod conn;
mod error;
mod kind;
mod options;
pub mod request;
mod response;
mod value;

pub use client::Client;
pub use error::{ClientError, Result};
pub use hs_proto::{Response, Value};
pub use options::ClientOptions;
pub use request::{auth_line, insert_line, open_index_line, Find};
pub use response::ResponseExt;
pub use value::AsValue;
