//! Replays every committed fuzz corpus input through its target's checks,
//! on the stable toolchain, as part of the ordinary test run: an input that
//! once found a bug, or reached new code, keeps being run (the fuzzing
//! itself is `scripts/fuzz.sh`).

use std::path::PathBuf;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    inputs.sort();
    assert!(
        inputs.len() > 100,
        "the {target} corpus has only {} inputs",
        inputs.len()
    );
    for path in &inputs {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let outcome = std::panic::catch_unwind(|| run(&data));
        if let Err(e) = outcome {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{target} corpus input {} failed: {why}", path.display());
        }
    }
    eprintln!("{target}: {} corpus inputs replayed", inputs.len());
}

#[test]
fn parse_request_corpus() {
    replay("parse_request", hsd_fuzz::targets::parse_request::run);
}

#[test]
fn request_path_corpus() {
    replay("request_path", hsd_fuzz::targets::request_path::run);
}
