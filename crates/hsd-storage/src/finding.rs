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
    pub fn ok(text: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Ok,
            text: text.into(),
        }
    }

    pub fn note(text: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Note,
            text: text.into(),
        }
    }

    pub fn warning(text: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Warning,
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Finding {
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

/// A message as one line: a TOML error's quoted lines (`1 | prot = 1`,
/// `| ^^^^`) dropped, the others joined with `: `. Logs and `hsd check`
/// then show one line per problem.
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_quoted_source(l))
        .collect::<Vec<_>>()
        .join(": ")
}

/// `|`, `| ^^^^` or `12 | text`: a parser quoting the input.
fn is_quoted_source(line: &str) -> bool {
    line.starts_with('|')
        || line
            .split_once(" |")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match self.severity {
            Severity::Ok => "ok",
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{label}: {}", one_line(&self.text))
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_toml_error_becomes_one_line() {
        let text = "parsing config file bad.toml: TOML parse error at line 1, column 1\n  |\n1 | prot = 1\n  | ^^^^\nunknown field `prot`, expected one of `address`";
        assert_eq!(
            one_line(text),
            "parsing config file bad.toml: TOML parse error at line 1, column 1: unknown field `prot`, expected one of `address`"
        );
        assert_eq!(
            one_line("already one line | with a bar"),
            "already one line | with a bar"
        );
    }
}
