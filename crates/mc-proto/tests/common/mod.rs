//! Helpers of the differential test: a real memcached, and a model server
//! that answers with this crate's parsers and encoders.

pub mod binary_model;
pub mod memcached;
pub mod model;
