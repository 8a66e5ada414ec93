//! What hsd-mysql's own tests share with hsd's suites: the private
//! servers' URLs, SQL beside them, and the record of halves a local run
//! skipped. The files live with hsd's harness (crates/hsd/tests/common),
//! written once; this crate's tests include them.
#![allow(dead_code)]

#[path = "../../../hsd/tests/common/servers.rs"]
pub mod servers;
#[path = "../../../hsd/tests/common/skips.rs"]
pub mod skips;
