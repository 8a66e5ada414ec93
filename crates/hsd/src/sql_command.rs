//! `hsd sql <db> "<statement>"`: run SQL on the embedded store's files, to
//! create tables and indexes, load data, or look at what HandlerSocket wrote.
//! Rows print tab-separated; NULL prints as `NULL`.
//!
//! A db that does not exist is created only when the statement begins with
//! `CREATE`; anything else on a missing db (a mistyped name) is an error that
//! lists the dbs there are, and creates no file.

use anyhow::Context;
use hsd_sqlite::{db_path, open_db, valid_db_name, Synchronous};
use rusqlite::types::ValueRef;
use std::io::Write;
use std::path::Path;

pub fn run(data_dir: &Path, db: &str, sql: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        valid_db_name(db),
        "invalid db name {db:?}: use letters, digits, _, - and $"
    );
    let create = !db_path(data_dir, db).exists();
    if create {
        anyhow::ensure!(
            creates_something(sql),
            "no database {db:?} in {} ({}); a new db is made only by a CREATE statement",
            data_dir.display(),
            existing_dbs(data_dir)
        );
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating data directory {}", data_dir.display()))?;
    }
    let conn = open_db(data_dir, db, create, Synchronous::Full)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut batch = rusqlite::Batch::new(&conn, sql);
    while let Some(mut stmt) = batch.next().context("SQL error")? {
        let ncols = stmt.column_count();
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().context("SQL error")? {
            for i in 0..ncols {
                if i > 0 {
                    out.write_all(b"\t")?;
                }
                match row.get_ref(i)? {
                    ValueRef::Null => out.write_all(b"NULL")?,
                    ValueRef::Integer(n) => write!(out, "{n}")?,
                    ValueRef::Real(f) => write!(out, "{f}")?,
                    ValueRef::Text(t) | ValueRef::Blob(t) => out.write_all(t)?,
                }
            }
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Whether the first statement is a CREATE (after blanks and comments).
fn creates_something(sql: &str) -> bool {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    rest.get(..6)
        .is_some_and(|word| word.eq_ignore_ascii_case("create"))
        && !rest[6..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
}

/// "dbs there: a, b" (sorted), or "it holds no db", for the error message.
fn existing_dbs(data_dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(data_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".sqlite")
                .map(str::to_string)
        })
        .collect();
    names.sort();
    if names.is_empty() {
        "it holds no db".to_string()
    } else {
        format!("dbs there: {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::creates_something;

    #[test]
    fn create_statements_are_recognised() {
        for yes in [
            "CREATE TABLE t (x)",
            "  create index i on t(x)",
            "-- schema\nCreate Table t (x)",
            "/* a */ /* b */CREATE TABLE t (x)",
            "CREATE",
        ] {
            assert!(creates_something(yes), "{yes:?}");
        }
        for no in [
            "SELECT 1",
            "",
            "   ",
            "-- CREATE TABLE t (x)",
            "/* CREATE TABLE t (x)",
            "CREATED",
            "INSERT INTO t VALUES (1); CREATE TABLE u (x)",
        ] {
            assert!(!creates_something(no), "{no:?}");
        }
    }
}
