//! hs-conformance: the differential conformance suite. The same seeded request
//! streams go to the original HandlerSocket plugin (the reference) and to hsd;
//! every answer is compared byte for byte and, after writes, the two copies of
//! the tables row by row. A failing stream is reduced to a short transcript.
//! The cross-backend mode holds hsd on MySQL 8 to hsd on MariaDB the same way
//! (the plugin cannot load into MySQL).
//!
//! - `tables`, `schema`, `values`: what the requests run on and with.
//! - `generate`: the seeded generator (segments of steps on two connections).
//! - `target`, `store`: the servers' HandlerSocket ports and SQL copies.
//! - `vschema`: how the Vitess run shards each table and numbers its rows.
//! - `runner`: replays steps on both and finds the first difference.
//! - `reduce`: shrinks a failing segment.
//! - `exceptions`: the documented differences allowed (plugin vs hsd, and
//!   MariaDB vs MySQL 8).
//! - `suite`: long and short runs over many seeds.
//! - `launcher`: starts hsd and reads its ready line (also used by hsd's
//!   integration tests).
//! - `lockstep`: many depth-1 clients taking steps together, whose answers
//!   are fixed whatever order a server runs a step in.

pub mod exceptions;
pub mod generate;
pub mod launcher;
pub mod line;
pub mod lockstep;
pub mod reduce;
pub mod rng;
pub mod runner;
pub mod schema;
pub mod store;
pub mod suite;
pub mod tables;
pub mod target;
pub mod values;
pub mod vschema;
