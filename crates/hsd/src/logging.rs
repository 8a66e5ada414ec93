//! hsd's log output on stderr: plain text or one JSON object per line
//! (`--log-format`), filtered by a level (`--log-level`, `-v`, `RUST_LOG`)
//! that a reload (SIGHUP, see `reload`) can change while hsd runs.

use serde::Deserialize;
use std::io::IsTerminal;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

/// `--log-format`: how each log line is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `TIME LEVEL target: message field=value ...`, coloured only at a
    /// terminal.
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, and
    /// `fields` (the `message` and the event's fields).
    Json,
}

impl LogFormat {
    pub(crate) fn name(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// The level when nothing sets one.
pub const DEFAULT_LEVEL: &str = "info";

/// Checks a `--log-level` value: a level (`error`, `warn`, `info`,
/// `debug`, `trace`, `off`) or a filter as `RUST_LOG` takes it
/// (`info,hsd_mysql=debug`).
pub(crate) fn check_level(level: &str) -> Result<(), String> {
    if level.trim().is_empty() {
        return Err("log-level is empty: use error, warn, info, debug or trace".into());
    }
    let refused = |why: String| {
        format!(
            "log-level {level:?} is not a level ({why}): use error, warn, info, debug or trace, or a filter as RUST_LOG takes it (info,hsd_mysql=debug)"
        )
    };
    // A bare word is a target to RUST_LOG ("loud" logs the target loud):
    // here it must be a level, the usual mistake being a misspelt one.
    for directive in level.split(',') {
        let d = directive.trim();
        if !d.contains('=')
            && !d.contains('[')
            && !LEVELS.contains(&d.to_ascii_lowercase().as_str())
        {
            return Err(refused(format!(
                "{d:?} is not one of {}",
                LEVELS.join(", ")
            )));
        }
    }
    EnvFilter::builder()
        .parse(level)
        .map(|_| ())
        .map_err(|e| refused(e.to_string()))
}

/// The level names `--log-level` takes alone.
const LEVELS: [&str; 6] = ["error", "warn", "info", "debug", "trace", "off"];

/// Changes the level of the running process's logs.
pub struct LogHandle {
    filter: reload::Handle<EnvFilter, Registry>,
    /// What decides the level instead of the settings (`RUST_LOG`, `-v`),
    /// so that a reload leaves it alone.
    overridden_by: Option<&'static str>,
}

impl LogHandle {
    /// Sets the level to `level` (checked by `check_level`); an error says
    /// why it stays as it was.
    pub(crate) fn set_level(&self, level: &str) -> Result<(), String> {
        if let Some(by) = self.overridden_by {
            return Err(format!("{by} sets the level, not the config file"));
        }
        let filter = EnvFilter::builder()
            .parse(level)
            .map_err(|e| format!("log-level {level:?}: {e}"))?;
        self.filter
            .reload(filter)
            .map_err(|e| format!("cannot change the log level: {e}"))
    }
}

/// Starts logging to stderr in `format`. The level: `RUST_LOG` when set,
/// else `verbose` (`-v` debug, `-vv` trace) when more than 0, else
/// `level`, else `DEFAULT_LEVEL`.
pub fn init(format: LogFormat, verbose: u8, level: Option<&str>) -> LogHandle {
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .and_then(|v| EnvFilter::builder().parse(v).ok());
    let (filter, overridden_by) = match (from_env, verbose) {
        (Some(f), _) => (f, Some("RUST_LOG")),
        (None, 1) => (EnvFilter::new("debug"), Some("-v")),
        (None, 2..) => (EnvFilter::new("trace"), Some("-vv")),
        (None, 0) => (
            level
                .and_then(|l| EnvFilter::builder().parse(l).ok())
                .unwrap_or_else(|| EnvFilter::new(DEFAULT_LEVEL)),
            None,
        ),
    };
    let (filter, handle) = reload::Layer::new(filter);
    // Colours only for a person at a terminal, not in files and pipes.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let (text, json) = match format {
        LogFormat::Text => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(ansi),
            ),
            None,
        ),
        LogFormat::Json => (
            None,
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(false)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            ),
        ),
    };
    // A second init (a test calling twice) keeps the first subscriber.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(text)
        .with(json)
        .try_init();
    LogHandle {
        filter: handle,
        overridden_by,
    }
}

#[cfg(test)]
mod tests {
    use super::check_level;

    #[test]
    fn levels_and_filters_are_accepted_and_words_refused() {
        for ok in ["info", "debug", "warn", "off", "info,hsd_mysql=debug"] {
            assert_eq!(check_level(ok), Ok(()), "{ok}");
        }
        for bad in ["", "loud", "info,=x=y"] {
            let e = check_level(bad).expect_err(bad);
            assert!(e.contains("error, warn, info, debug or trace"), "{e}");
        }
    }
}
