//! Fuzz target: hs-proto on arbitrary bytes (the checks live in
//! `hsd_fuzz::targets::parse_request`, which the stable replay test also runs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hsd_fuzz::targets::parse_request::run(data));
