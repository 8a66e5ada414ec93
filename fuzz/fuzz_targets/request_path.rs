//! Fuzz target: hsd's whole request path without the network (the checks
//! live in `hsd_fuzz::targets::request_path`, which the stable replay test
//! also runs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsd_fuzz::targets::request_path::run(data));
