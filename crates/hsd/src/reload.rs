//! SIGHUP: read the settings again (the `--config` file, with the command
//! line and environment as at start), apply what can change while hsd
//! runs (the log level; the TLS certificate and key, for new connections),
//! and log every other setting that changed as needing a restart. A file that no longer reads is logged as an error
//! and the settings stay as they were. SIGHUP never stops hsd.

use crate::config::{Config, ServeOptions};
use crate::logging::LogHandle;
use tracing::level_filters::LevelFilter;

/// What a reload needs from the start: the options as given (command
/// line and environment) and the handle that changes the log level.
pub struct Reload {
    pub options: ServeOptions,
    pub log: LogHandle,
}

/// Listens for SIGHUP until the process ends. Registered before anything
/// else starts, so that from then on SIGHUP reloads instead of killing.
pub(crate) fn listen() -> Option<tokio::signal::unix::Signal> {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP: the settings cannot be reloaded");
            None
        }
    }
}

/// Reloads on each SIGHUP. `running` is the settings hsd runs with.
pub(crate) async fn on_hangup(
    mut hup: tokio::signal::unix::Signal,
    reload: Reload,
    mut running: Config,
) {
    while hup.recv().await.is_some() {
        let Some(path) = running.config_file.clone() else {
            tracing::info!("SIGHUP: no --config file to read again; nothing changes");
            continue;
        };
        tracing::info!(file = %path.display(), "SIGHUP: reading the settings again");
        let options = reload.options.clone();
        // Reading them reads files (the config, secrets, TLS): off the
        // accepting thread.
        let resolved = tokio::task::spawn_blocking(move || options.resolve()).await;
        let new = match resolved {
            Ok(Ok(new)) => new,
            Ok(Err(e)) => {
                tracing::error!(
                    file = %path.display(),
                    "SIGHUP: the settings were not changed: {}",
                    crate::preflight::one_line(&format!("{e:#}"))
                );
                continue;
            }
            Err(e) => {
                tracing::error!(error = %e, "SIGHUP: reading the settings failed; they were not changed");
                continue;
            }
        };
        apply(&reload.log, &mut running, new);
    }
}

/// Applies what changed between `running` and `new`, and updates
/// `running` to what now runs (a setting that needs a restart keeps its
/// old value there, so a later SIGHUP names it again).
fn apply(log: &LogHandle, running: &mut Config, new: Config) {
    let before = running.settings();
    let after = new.settings();
    let mut changed = 0;
    for ((name, old), (_, value)) in before.iter().zip(&after) {
        if old == value {
            continue;
        }
        changed += 1;
        match *name {
            "log-level" => {}
            "tls-cert and tls-key" => {
                rotate_tls(running, &new, name);
                continue;
            }
            _ => {
                tracing::warn!("SIGHUP: {name} changed; needs a restart");
                continue;
            }
        }
        let level = new
            .log_level
            .clone()
            .unwrap_or_else(|| crate::logging::DEFAULT_LEVEL.to_string());
        // Said under whichever level shows it: the old one when it shows
        // INFO lines (a change to warn), else the new one.
        let said_before = LevelFilter::current() >= LevelFilter::INFO;
        let say = || tracing::info!("SIGHUP: log-level changed from {old} to {level}");
        if said_before {
            say();
        }
        match log.set_level(&level) {
            Ok(()) => {
                if !said_before {
                    say();
                }
                running.log_level = new.log_level.clone();
            }
            Err(e) => tracing::warn!("SIGHUP: log-level {level} not applied: {e}"),
        }
    }
    if changed == 0 {
        tracing::info!("SIGHUP: no setting changed");
    }
}

/// New TLS files (loaded and checked as `new` was read): new handshakes
/// present them from now on, on every port; connections already made keep
/// theirs. Turning TLS on or off needs a restart.
fn rotate_tls(running: &mut Config, new: &Config, name: &str) {
    match (&mut running.tls, &new.tls) {
        (Some(now), Some(next)) => {
            now.keys.take_from(&next.keys);
            now.cert = next.cert.clone();
            now.key = next.key.clone();
            now.loaded = next.loaded.clone();
            tracing::info!(
                cert = %now.cert.display(),
                key = %now.key.display(),
                "SIGHUP: {name} changed; new connections get the new certificate"
            );
        }
        _ => tracing::warn!("SIGHUP: TLS turned on or off; needs a restart"),
    }
}
