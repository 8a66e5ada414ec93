//! The fuzz targets' checks, as plain functions: the `cargo fuzz` binaries
//! (fuzz_targets/, nightly) call them on generated inputs, and the stable
//! test `tests/replay.rs` calls them on every committed corpus input.

pub mod parse_request;
pub mod request_path;
