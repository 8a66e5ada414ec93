//! Build script: records the commit hsd is built from (`HSD_COMMIT`, shown
//! by `hsd --version`). A build without git, or outside a checkout (a
//! source tarball), records `unknown` rather than failing.

use std::process::Command;

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=HSD_COMMIT={commit}");
    // Build again when HEAD moves: a checkout of another branch changes
    // HEAD, a commit changes the branch's ref (loose or packed). Without a
    // checkout, cargo's default (any file of the package) applies.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        // Only files that exist: cargo runs the script on every build for
        // a missing one (a branch whose ref is packed has no file).
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

/// One line of git's output; `None` when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let line = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}
