//! `hsd sql <db> "<statement>"`: run SQL on the embedded store's files, to
//! create tables and indexes, load data, or look at what HandlerSocket wrote.
//! Rows print tab-separated; NULL prints as `NULL`.

use crate::backend::sqlite::{open_db, Synchronous};
use anyhow::Context;
use rusqlite::types::ValueRef;
use std::io::Write;
use std::path::Path;

pub fn run(data_dir: &Path, db: &str, sql: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating data directory {}", data_dir.display()))?;
    let conn = open_db(data_dir, db, true, Synchronous::Full)?;
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
