//! What a statement logged as text (a QUERY event) means for cached rows.
//! Under ROW format the server logs data changes as row events; the text
//! it still logs is transaction control and DDL. A statement this module
//! does not recognise counts as "anything may have changed": a data change
//! logged as text (a session that set binlog_format=STATEMENT), a stored
//! routine, XA COMMIT. Dropping everything is always exact, only slower.

use super::Change;

/// A QUERY event's effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Statement {
    /// BEGIN, START TRANSACTION, XA START: the changes until the end
    /// belong to one transaction.
    Begin,
    /// COMMIT or ROLLBACK of the open transaction.
    End,
    /// Changes no cached row (GRANT, CREATE USER, SAVEPOINT, ...).
    Neutral,
    /// These changes, part of the open transaction if any, else a
    /// transaction of their own (DDL).
    Changes(Vec<Change>),
    /// These changes, and the open transaction ends with them (XA PREPARE).
    EndWith(Vec<Change>),
}

/// Classifies `query`, run with `schema` as the default database.
pub(super) fn classify(schema: &str, query: &[u8]) -> Statement {
    let text = String::from_utf8_lossy(query);
    let Some(words) = tokens(&text) else {
        return everything(&text);
    };
    let word = |i: usize| {
        words
            .get(i)
            .map_or(String::new(), |w| w.to_ascii_uppercase())
    };
    let tables = |names: Vec<(String, String)>| {
        Statement::Changes(
            names
                .into_iter()
                .map(|(db, table)| Change::Table { db, table })
                .collect(),
        )
    };
    let names = |from: usize| names_after(&words, from, schema);
    match (word(0).as_str(), word(1).as_str()) {
        ("BEGIN", _) | ("START", "TRANSACTION") | ("XA", "START") | ("XA", "BEGIN") => {
            Statement::Begin
        }
        ("COMMIT", _) => Statement::End,
        ("ROLLBACK", "TO") => Statement::Neutral,
        ("ROLLBACK", _) => Statement::End,
        ("SAVEPOINT", _) | ("RELEASE", "SAVEPOINT") | ("XA", "END") => Statement::Neutral,
        ("XA", _) => Statement::EndWith(vec![everything_change(&text)]),
        ("GRANT", _) | ("REVOKE", _) | ("FLUSH", _) | ("SET", "PASSWORD") => Statement::Neutral,
        ("ALTER", "TABLE") => {
            alter_names(&words, 2, schema).map_or_else(|| everything(&text), tables)
        }
        ("ALTER", "ONLINE" | "IGNORE") if word(2) == "TABLE" => {
            alter_names(&words, 3, schema).map_or_else(|| everything(&text), tables)
        }
        ("ALTER", "DATABASE" | "SCHEMA" | "USER") => Statement::Neutral,
        ("DROP" | "CREATE", "USER" | "ROLE" | "VIEW" | "FUNCTION" | "PROCEDURE" | "EVENT")
        | ("DROP" | "CREATE", "TRIGGER" | "SERVER")
        | ("CREATE", "DATABASE" | "SCHEMA")
        | ("RENAME", "USER") => Statement::Neutral,
        ("DROP", "TABLE") => tables(names(2)),
        ("DROP", "TEMPORARY") if word(2) == "TABLE" => tables(names(3)),
        ("DROP", "INDEX") => tables(names_after_on(&words, schema)),
        ("CREATE", "TABLE") => tables(names(2)),
        ("CREATE", "TEMPORARY") if word(2) == "TABLE" => tables(names(3)),
        ("CREATE", "OR") if word(2) == "REPLACE" && word(3) == "TABLE" => tables(names(4)),
        ("CREATE", "INDEX" | "UNIQUE" | "FULLTEXT" | "SPATIAL") => {
            tables(names_after_on(&words, schema))
        }
        ("RENAME", "TABLE") => tables(names(2)),
        ("TRUNCATE", "TABLE") => tables(names(2)),
        ("TRUNCATE", _) => tables(names(1)),
        ("OPTIMIZE" | "ANALYZE" | "REPAIR", "TABLE") => tables(names(2)),
        _ => everything(&text),
    }
}

fn everything(text: &str) -> Statement {
    Statement::Changes(vec![everything_change(text)])
}

fn everything_change(text: &str) -> Change {
    let short: String = text.trim().chars().take(60).collect();
    Change::Everything {
        reason: format!("statement logged as text: {short}"),
    }
}

/// The table names from word `from` on, each qualified with its
/// database: a name (`a`, `db`.`b`; `db . b` arrives as three words), then
/// more after `,` or `TO` (DROP TABLE a, b; RENAME TABLE a TO b); whatever
/// follows is a clause, not a name.
fn names_after(words: &[String], from: usize, schema: &str) -> Vec<(String, String)> {
    const BEFORE_NAME: &[&str] = &["IF", "NOT", "EXISTS", "NO_WRITE_TO_BINLOG", "LOCAL"];
    let mut out = Vec::new();
    let mut i = from;
    loop {
        while words
            .get(i)
            .is_some_and(|w| BEFORE_NAME.contains(&w.to_ascii_uppercase().as_str()))
        {
            i += 1;
        }
        let Some((name, used)) = one_name(words, i, schema) else {
            return out;
        };
        out.push(name);
        i += used;
        match words.get(i) {
            Some(w) if w == "," || w.eq_ignore_ascii_case("TO") => i += 1,
            _ => return out,
        }
    }
}

/// The tables an ALTER TABLE from word `from` changes: the one it names,
/// and every other table a clause names: `EXCHANGE PARTITION p WITH TABLE
/// x` swaps rows with x, MariaDB's `CONVERT TABLE y TO PARTITION` moves y's
/// rows in (y is gone) and `CONVERT PARTITION p TO TABLE y` out, `RENAME
/// [TO | AS] u` moves the table. `None` (drop everything) when a clause
/// that moves rows between tables names no table this reader can read.
fn alter_names(words: &[String], from: usize, schema: &str) -> Option<Vec<(String, String)>> {
    let mut out = names_after(words, from, schema);
    let mut moves_rows = false;
    let mut named = false;
    let mut i = from + 1;
    while i < words.len() {
        let w = words[i].to_ascii_uppercase();
        match w.as_str() {
            "EXCHANGE" | "CONVERT" => moves_rows = moves_rows || w == "EXCHANGE",
            "TABLE" | "RENAME" => {
                let mut at = i + 1;
                if w == "RENAME"
                    && words.get(at).is_some_and(|t| {
                        t.eq_ignore_ascii_case("TO") || t.eq_ignore_ascii_case("AS")
                    })
                {
                    at += 1;
                }
                let (name, _) = one_name(words, at, schema)?;
                out.push(name);
                named = true;
                // A table named by a clause: CONVERT moves rows too.
                moves_rows = true;
            }
            _ => {}
        }
        i += 1;
    }
    if moves_rows && !named {
        return None;
    }
    Some(out)
}

/// One table name at word `at` (`t`, `db`.`t`), qualified, and how many
/// words it took.
fn one_name(words: &[String], at: usize, schema: &str) -> Option<((String, String), usize)> {
    let w = words
        .get(at)
        .filter(|w| !matches!(w.as_str(), "(" | "," | "." | ")" | "="))?;
    if words.get(at + 1).is_some_and(|d| d == ".") {
        let table = words.get(at + 2)?;
        Some(((unquote(w), unquote(table)), 3))
    } else {
        Some(((schema.to_string(), unquote(w)), 1))
    }
}

/// The names after the first ON (CREATE INDEX i ON t, DROP INDEX i ON t).
fn names_after_on(words: &[String], schema: &str) -> Vec<(String, String)> {
    match words.iter().position(|w| w.eq_ignore_ascii_case("ON")) {
        Some(on) => names_after(words, on + 1, schema),
        None => Vec::new(),
    }
}

fn unquote(word: &str) -> String {
    match word.strip_prefix('`').and_then(|w| w.strip_suffix('`')) {
        Some(inner) => inner.replace("``", "`"),
        None => match word.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
            Some(inner) => inner.replace("\"\"", "\""),
            None => word.to_string(),
        },
    }
}

/// The statement's words: names (quoted ones keep their quotes), and
/// `.`, `,`, `(` as words of their own; comments skipped. `None` for
/// text this reader will not interpret (an executable `/*! */` comment,
/// an unclosed quote).
fn tokens(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || c == b';' {
            i += 1;
        } else if b[i..].starts_with(b"/*!") {
            return None;
        } else if b[i..].starts_with(b"/*") {
            i += text[i..].find("*/")? + 2;
        } else if c == b'#' || b[i..].starts_with(b"-- ") {
            i += text[i..].find('\n').unwrap_or(text.len() - i);
        } else if matches!(c, b'`' | b'"' | b'\'') {
            let start = i;
            i += 1;
            loop {
                let at = i + text.get(i..)?.find(c as char)?;
                i = at + 1;
                if b.get(i) == Some(&c) {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(text[start..i].to_string());
        } else if matches!(c, b'.' | b',' | b'(' | b')' | b'=') {
            out.push((c as char).to_string());
            i += 1;
        } else {
            let start = i;
            while i < b.len()
                && !b[i].is_ascii_whitespace()
                && !matches!(
                    b[i],
                    b'.' | b',' | b'(' | b')' | b'=' | b';' | b'`' | b'"' | b'\''
                )
            {
                i += 1;
            }
            out.push(text[start..i].to_string());
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(list: &[(&str, &str)]) -> Statement {
        Statement::Changes(
            list.iter()
                .map(|(db, table)| Change::Table {
                    db: db.to_string(),
                    table: table.to_string(),
                })
                .collect(),
        )
    }

    fn c(q: &str) -> Statement {
        classify("app", q.as_bytes())
    }

    #[test]
    fn transaction_control() {
        assert_eq!(c("BEGIN"), Statement::Begin);
        assert_eq!(c("START TRANSACTION"), Statement::Begin);
        assert_eq!(c("COMMIT"), Statement::End);
        assert_eq!(c("ROLLBACK"), Statement::End);
        assert_eq!(c("ROLLBACK TO SAVEPOINT s"), Statement::Neutral);
        assert_eq!(c("SAVEPOINT s"), Statement::Neutral);
        assert_eq!(c("XA START 'x'"), Statement::Begin);
        assert!(matches!(c("XA COMMIT 'x'"), Statement::EndWith(_)));
    }

    #[test]
    fn ddl_names_its_tables() {
        assert_eq!(c("ALTER TABLE t ADD COLUMN x INT"), tables(&[("app", "t")]));
        assert_eq!(
            c("ALTER TABLE `other`.`we``ird` DROP COLUMN x"),
            tables(&[("other", "we`ird")])
        );
        assert_eq!(
            c("DROP TABLE IF EXISTS `a`,b.c /* generated by server */"),
            tables(&[("app", "a"), ("b", "c")])
        );
        assert_eq!(
            c("RENAME TABLE a TO b, x.c to d"),
            tables(&[("app", "a"), ("app", "b"), ("x", "c"), ("app", "d")])
        );
        assert_eq!(c("TRUNCATE TABLE `t`"), tables(&[("app", "t")]));
        assert_eq!(c("truncate t"), tables(&[("app", "t")]));
        assert_eq!(
            c("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY)"),
            tables(&[("app", "t")])
        );
        assert_eq!(
            c("CREATE OR REPLACE TABLE d.t LIKE d.u"),
            tables(&[("d", "t")])
        );
        assert_eq!(
            c("CREATE UNIQUE INDEX k ON t (a, b)"),
            tables(&[("app", "t")])
        );
        assert_eq!(c("DROP INDEX k ON d.t"), tables(&[("d", "t")]));
        assert_eq!(
            c("-- note\n/* why */ ALTER ONLINE TABLE t FORCE"),
            tables(&[("app", "t")])
        );
    }

    #[test]
    fn an_alter_names_every_table_whose_rows_it_moves() {
        assert_eq!(
            c("ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE x WITHOUT VALIDATION"),
            tables(&[("app", "p"), ("app", "x")])
        );
        assert_eq!(
            c("alter table d.p exchange partition p0 with table `e`.`x`"),
            tables(&[("d", "p"), ("e", "x")])
        );
        assert_eq!(
            c("ALTER TABLE p CONVERT TABLE y TO PARTITION p9 VALUES LESS THAN (100)"),
            tables(&[("app", "p"), ("app", "y")])
        );
        assert_eq!(
            c("ALTER TABLE p CONVERT PARTITION p0 TO TABLE y"),
            tables(&[("app", "p"), ("app", "y")])
        );
        assert_eq!(
            c("ALTER TABLE t RENAME TO u"),
            tables(&[("app", "t"), ("app", "u")])
        );
        assert_eq!(
            c("ALTER TABLE t ADD COLUMN x INT, RENAME AS d.u"),
            tables(&[("app", "t"), ("d", "u")])
        );
        // Not a move: the charset of t's own columns.
        assert_eq!(
            c("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4"),
            tables(&[("app", "t")])
        );
        // A move whose other table cannot be read: everything.
        assert!(matches!(
            &c("ALTER TABLE p EXCHANGE PARTITION p0 WITH"),
            Statement::Changes(v) if matches!(v.as_slice(), [Change::Everything { .. }])
        ));
    }

    #[test]
    fn neutral_and_unknown() {
        assert_eq!(c("GRANT SELECT ON *.* TO u"), Statement::Neutral);
        assert_eq!(c("CREATE DATABASE x"), Statement::Neutral);
        assert_eq!(c("DROP USER u"), Statement::Neutral);
        for q in [
            "UPDATE t SET a = 1",
            "INSERT INTO t VALUES (1)",
            "DROP DATABASE app",
            "/*!40000 ALTER TABLE t DISABLE KEYS */",
            "CREATE DEFINER=`root`@`%` TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET @a = 1",
            "ALTER TABLE `unclosed",
        ] {
            assert!(
                matches!(&c(q), Statement::Changes(v) if matches!(v.as_slice(), [Change::Everything { .. }])),
                "{q}"
            );
        }
    }
}
