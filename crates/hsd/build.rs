//! Build script: records the commit hsd is built from (`HSD_COMMIT`, shown
//! by `hsd --version`). A build without git, or outside a checkout (a
//! source tarball), records `unknown` rather than failing.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=HSD_COMMIT={commit}");
    // Build again when HEAD moves: a checkout of another branch changes
    // HEAD, a commit changes the branch's ref (loose or packed). Only paths
    // that exist: cargo runs the script on every build for a missing one.
    // A branch whose ref is packed has no file yet: its folder (refs/heads,
    // a few files) shows the commit that makes one. Without a checkout,
    // cargo's default (any file of the package) applies.
    for name in ["HEAD", "packed-refs"] {
        if let Some(path) = git_path(name).filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|b| git_path(&b)) {
        let watch = if branch.exists() {
            Some(branch.as_path())
        } else {
            branch.parent().filter(|p| p.exists())
        };
        if let Some(watch) = watch {
            println!("cargo:rerun-if-changed={}", watch.display());
        }
    }
}

/// Where git keeps `name` (HEAD, a ref) for this checkout.
fn git_path(name: &str) -> Option<PathBuf> {
    git(&["rev-parse", "--git-path", name]).map(PathBuf::from)
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
