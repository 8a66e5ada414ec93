//! One HandlerSocket server under test (the plugin or hsd): its two ports,
//! the database name its copy of the tables lives under, and connections to
//! them (hs-client's blocking connection: one line sent, one answer line
//! read, byte for byte).

use std::time::Duration;

use anyhow::{Context, Result};

pub use hs_client::blocking::Connection;

use crate::generate::Port;

#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `plugin` or `hsd`, for messages.
    pub name: String,
    pub read_addr: String,
    pub write_addr: String,
    /// The database name substituted into `P` lines.
    pub db: String,
}

impl Endpoint {
    pub fn addr(&self, port: Port) -> &str {
        match port {
            Port::Read => &self.read_addr,
            Port::Write => &self.write_addr,
        }
    }
}

/// How long one answer may take before the server counts as not answering.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// A connection to `endpoint`'s `port`.
pub fn open(endpoint: &Endpoint, port: Port) -> Result<Connection> {
    let addr = endpoint.addr(port);
    let options = hs_client::blocking::Options {
        timeout: Some(ANSWER_TIMEOUT),
        nodelay: true,
    };
    Connection::connect_with(addr, options)
        .with_context(|| format!("connect to {} {port:?} port {addr}", endpoint.name))
}
