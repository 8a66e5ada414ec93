//! One line of what was found before serving (`preflight`): `hsd check`
//! prints each, `hsd serve` refuses to start on an error and logs a
//! warning, so both say the same words.

use std::fmt;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Checked and fine.
    Ok,
    /// Worth knowing, no problem (e.g. whose permissions were checked).
    Note,
    /// hsd serves, but something will not work as configured.
    Warning,
    /// `hsd serve` refuses to start.
    Error,
}

/// A checked thing and what was found, as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub text: String,
}

impl Finding {
    pub(crate) fn ok(text: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Ok,
            text: text.into(),
        }
    }

    pub(crate) fn note(text: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Note,
            text: text.into(),
        }
    }

    pub(crate) fn warning(text: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Warning,
            text: text.into(),
        }
    }

    pub(crate) fn error(text: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Error,
            text: text.into(),
        }
    }

    /// A warning or an error: what makes `hsd check` exit non-zero.
    pub fn is_problem(&self) -> bool {
        self.severity >= Severity::Warning
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match self.severity {
            Severity::Ok => "ok",
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{label}: {}", self.text)
    }
}
