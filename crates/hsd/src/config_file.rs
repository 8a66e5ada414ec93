//! Reads the `--config` TOML file into `ServeOptions`, and words what is
//! wrong with it as an operator reads it: one short line naming the key,
//! the file and the line, with a suggestion (`unknown key "prot" in
//! hsd.toml line 1; did you mean "port"?`, `port: 70000 is not a port
//! number (1-65535, or 0 for a free one) in hsd.toml line 3`), instead of
//! serde's Rust words (`invalid value: integer 70000, expected u16`).

use serde::de::DeserializeOwned;
use std::path::Path;

/// Parses `text`, the contents of the config file `path`, as `T`.
pub(crate) fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> anyhow::Result<T> {
    let text = &kebab_case_top_level_keys(text);
    toml::from_str::<T>(text).map_err(|e| anyhow::anyhow!(explain(path, text, &e)))
}

/// One rule for every option's key: its `--name` without the dashes, and
/// the same with `_` for `-` (`port_wr = 9999` is `port-wr = 9999`). The
/// keys before the first `[table]` are written with `-` before parsing;
/// the tables' own keys (`[[memcached.containers]]`: the plugin's
/// `db_schema`, ...) are left as they are. The text keeps its length, so
/// error positions still point at the file's lines.
pub(crate) fn kebab_case_top_level_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut top_level = true;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            top_level = false;
        }
        let key_len = trimmed
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(trimmed.len());
        let is_key = key_len > 0 && trimmed[key_len..].trim_start().starts_with('=');
        if top_level && is_key {
            let indent = line.len() - trimmed.len();
            out.push_str(&line[..indent]);
            out.push_str(&trimmed[..key_len].replace('_', "-"));
            out.push_str(&trimmed[key_len..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// One line for a parse error of the file.
fn explain(path: &Path, text: &str, e: &toml::de::Error) -> String {
    let file = path.display();
    let (line_no, line) = match e.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let line_no = text[..start].matches('\n').count() + 1;
            let line = text.lines().nth(line_no - 1).unwrap_or_default();
            (Some(line_no), line)
        }
        None => (None, ""),
    };
    let place = match line_no {
        Some(n) => format!("{file} line {n}"),
        None => file.to_string(),
    };
    let message = e.message();
    if let Some((unknown, expected)) = unknown_field(message) {
        return match suggest(&unknown, &expected) {
            Some(near) => format!("unknown key {unknown:?} in {place}; did you mean {near:?}?"),
            None => format!(
                "unknown key {unknown:?} in {place}: `hsd serve --help` and docs/operations.md list the keys"
            ),
        };
    }
    // The key is what the line sets (a value's span is on its line).
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    match (key, in_words(message)) {
        (Some(key), Some(words)) => {
            let words = match (key.as_str(), words) {
                ("port" | "port-wr", Words::Whole(value, _)) => {
                    format!("{value} is not a port number (1-65535, or 0 for a free one)")
                }
                (_, w) => w.to_string(),
            };
            format!("{key}: {words} in {place}")
        }
        // Not TOML at all: toml's own words, on one line.
        _ => format!(
            "{place} is not valid TOML: {}",
            crate::preflight::one_line(message).trim_end_matches('.')
        ),
    }
}

/// serde's `unknown field `x`, expected one of `a`, `b`` (or
/// `expected `a``, or `there are no fields`): the field and the known ones.
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((field.to_string(), expected))
}

/// The known key nearest `unknown`, when near enough to be a slip: the
/// same with `-` for `_`, a transposition, a letter or two wrong.
fn suggest(unknown: &str, known: &[String]) -> Option<String> {
    let dashed = unknown.replace('_', "-");
    if let Some(k) = known.iter().find(|k| **k == dashed) {
        return Some(k.clone());
    }
    // An alias with `_` beside its dashed form: the dashed one is the
    // documented one.
    let (best, distance) = known
        .iter()
        .filter(|k| !k.contains('_') || !known.contains(&k.replace('_', "-")))
        .map(|k| (k, distance(&dashed, k)))
        .min_by_key(|(_, d)| *d)?;
    let allowed = (dashed.chars().count() / 3).clamp(1, 3);
    (distance <= allowed).then(|| best.clone())
}

/// Edit distance (optimal string alignment): insertions, deletions,
/// substitutions and transpositions of neighbours each count 1.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// A value of the wrong type or range, in words: what it is not.
enum Words {
    /// The value given, and the most a whole number may be here.
    Whole(String, Option<u64>),
    Number(String),
    Text(String),
    Bool(String),
    List(String),
    Table(String),
    Size(String),
    /// The value, and the words it may be.
    OneOf(String, Vec<String>),
}

impl std::fmt::Display for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Words::Whole(v, Some(max)) => {
                write!(f, "{v} is not a whole number from 0 to {max}{}", unquote(v))
            }
            Words::Whole(v, None) => write!(f, "{v} is not a whole number{}", unquote(v)),
            Words::Number(v) => write!(f, "{v} is not a number{}", unquote(v)),
            Words::Text(v) => write!(f, "{v} is not text: write it in double quotes"),
            Words::Bool(v) => write!(f, "{v} is not true or false"),
            Words::List(v) => write!(f, "{v} is not a list: write [\"...\", \"...\"]"),
            Words::Table(v) => write!(f, "{v} is not a table"),
            Words::Size(v) => write!(f, "{v} is not {} (16 MiB)", crate::byte_size::SIZE_WORDS),
            Words::OneOf(v, choices) => {
                write!(f, "{v} is not one of {}", choices.join(", "))
            }
        }
    }
}

/// For a number written in quotes: how to write it.
fn unquote(value: &str) -> &'static str {
    let inner = value.strip_prefix('"').and_then(|v| v.strip_suffix('"'));
    if inner.is_some_and(|v| v.trim().parse::<f64>().is_ok()) {
        ": write it without quotes"
    } else {
        ""
    }
}

/// serde's `invalid type: X, expected Y`, `invalid value: X, expected Y`
/// and `unknown variant `x`, expected one of ...`, in words.
fn in_words(message: &str) -> Option<Words> {
    let message = message.lines().next().unwrap_or_default();
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let (value, rest) = rest.split_once('`')?;
        let choices = rest
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        return Some(Words::OneOf(format!("{value:?}"), choices));
    }
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    let (given, expected) = rest.rsplit_once(", expected ")?;
    let value = given_value(given);
    let max = |bits: u32| {
        Some(if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        })
    };
    Some(match expected.trim() {
        "u8" => Words::Whole(value, max(8)),
        "u16" => Words::Whole(value, max(16)),
        "u32" => Words::Whole(value, max(32)),
        "u64" | "usize" => Words::Whole(value, None),
        "i64" | "i32" | "isize" => Words::Whole(value, None),
        "f64" | "f32" => Words::Number(value),
        "a string" | "a borrowed string" | "path string" | "a path" => Words::Text(value),
        "a boolean" => Words::Bool(value),
        "a sequence" => Words::List(value),
        e if e.starts_with("struct ") || e == "a map" => Words::Table(value),
        crate::byte_size::SIZE_WORDS => Words::Size(value),
        _ => return None,
    })
}

/// serde's `integer `70000``, `string "x"`, `floating point `1.5``,
/// `boolean `true``: the value as written in the file.
fn given_value(given: &str) -> String {
    let given = given.trim();
    for kind in ["integer ", "floating point ", "boolean ", "string "] {
        if let Some(v) = given.strip_prefix(kind) {
            return v.trim_matches('`').to_string();
        }
    }
    match given {
        "sequence" => "a list".into(),
        "map" => "a table".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{distance, parse};
    use crate::config::ServeOptions;
    use std::path::Path;

    fn error(text: &str) -> String {
        match parse::<ServeOptions>(Path::new("hsd.toml"), text) {
            Ok(_) => panic!("{text:?} parsed"),
            Err(e) => e.to_string(),
        }
    }

    /// Every option's key is taken with `-` or `_` alike (before, twelve
    /// keys took `_` and the others refused it); the keys of the tables
    /// below are the tables' own.
    #[test]
    fn every_key_takes_dashes_or_underscores() {
        let text = "port_wr = 9000\nmax_input_memory = 1024\nrow-cache-mib = 0\n\
                    [memcached]\ntable_map_delimiter = \".\"\n";
        let parsed = parse::<ServeOptions>(Path::new("hsd.toml"), text).expect("parses");
        assert_eq!(parsed.port_wr, Some(9000));
        assert_eq!(
            parsed.max_input_memory,
            Some(crate::byte_size::ByteSize(1024))
        );
        assert_eq!(
            super::kebab_case_top_level_keys("a_b = 1\n  c_d=\"x_y\"\n[t]\ne_f = 2\n"),
            "a-b = 1\n  c-d=\"x_y\"\n[t]\ne_f = 2\n"
        );
    }

    #[test]
    fn edit_distance_counts_a_transposition_once() {
        assert_eq!(distance("prot", "port"), 1);
        assert_eq!(distance("port", "port"), 0);
        assert_eq!(distance("thread", "threads"), 1);
        assert_eq!(distance("", "abc"), 3);
    }

    /// Each error is one line: the key, the file and line, what to write.
    #[test]
    fn config_file_errors_are_one_line_in_words() {
        for (text, want) in [
            (
                "prot = 1\n",
                "unknown key \"prot\" in hsd.toml line 1; did you mean \"port\"?",
            ),
            (
                "address = \"x\"\nport_wrr = 1\n",
                "unknown key \"port-wrr\" in hsd.toml line 2; did you mean \"port-wr\"?",
            ),
            (
                "# settings\nthread = 4\n",
                "unknown key \"thread\" in hsd.toml line 2; did you mean \"threads\"?",
            ),
            (
                "zzzzzz = 1\n",
                "unknown key \"zzzzzz\" in hsd.toml line 1: `hsd serve --help` and docs/operations.md list the keys",
            ),
            (
                "address = \"x\"\n\nport = 70000\n",
                "port: 70000 is not a port number (1-65535, or 0 for a free one) in hsd.toml line 3",
            ),
            (
                "port-wr = -1\n",
                "port-wr: -1 is not a port number (1-65535, or 0 for a free one) in hsd.toml line 1",
            ),
            (
                "threads = \"4\"\n",
                "threads: \"4\" is not a whole number: write it without quotes in hsd.toml line 1",
            ),
            (
                "address = 127\n",
                "address: 127 is not text: write it in double quotes in hsd.toml line 1",
            ),
            (
                "demo = \"yes\"\n",
                "demo: \"yes\" is not true or false in hsd.toml line 1",
            ),
            (
                "synchronous = \"fast\"\n",
                "synchronous: \"fast\" is not one of off, normal, full in hsd.toml line 1",
            ),
            (
                "log-format = \"yaml\"\n",
                "log-format: \"yaml\" is not one of text, json in hsd.toml line 1",
            ),
            (
                "topology-interval = \"1s\"\n",
                "topology-interval: \"1s\" is not a number in hsd.toml line 1",
            ),
            (
                "row-cache-mib = -5\n",
                "row-cache-mib: -5 is not a whole number in hsd.toml line 1",
            ),
            (
                "[memcached]\ntable-map-delimiter = \",\"\n",
                "unknown key \"table-map-delimiter\" in hsd.toml line 2; did you mean \"table_map_delimiter\"?",
            ),
            (
                "[memcached]\nseparater = \",\"\n",
                "unknown key \"separater\" in hsd.toml line 2; did you mean \"separator\"?",
            ),
            ("port = \n", "hsd.toml line 1 is not valid TOML: invalid string: expected `\"`, `'`"),
        ] {
            let got = error(text);
            assert_eq!(got, want, "{text:?}");
            assert!(!got.contains('\n'), "{got}");
        }
    }
}
