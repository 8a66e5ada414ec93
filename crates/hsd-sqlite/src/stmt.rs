//! A prepared statement that hsd owns, through SQLite's C API.
//!
//! rusqlite keeps prepared statements in a cache keyed by their SQL text, so
//! each use hashes the text and borrows the connection. On the lookup path
//! that cost is measurable (it showed in profiles of pipelined gets), so
//! statements for scans are prepared once per opened index and shape and
//! kept here, next to the connection they belong to. Everything else uses
//! rusqlite.
//!
//! Safety: a `RawStatement` must be finalized (dropped) before its
//! connection closes; `conn::DbFile` declares its statements before its
//! connection so they drop first. Values bound with `bind_text` must stay
//! alive until `reset`, which every scan calls when it is done.

use super::refused_code;
use hsd_storage::StorageError;
use rusqlite::{ffi, Connection};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;

pub(super) struct RawStatement {
    raw: NonNull<ffi::sqlite3_stmt>,
}

/// What a step produced.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    Row,
    Done,
}

impl RawStatement {
    /// Prepares `sql` on `conn` for repeated use.
    pub(super) fn prepare(conn: &Connection, sql: &str) -> Result<RawStatement, StorageError> {
        // SAFETY: the handle is valid while `conn` lives; the statement is
        // finalized before the connection closes (see the module comment).
        let db = unsafe { conn.handle() };
        let mut stmt: *mut ffi::sqlite3_stmt = std::ptr::null_mut();
        let len = c_int::try_from(sql.len()).map_err(|_| StorageError::Refused {
            code: 1,
            message: "statement too long".into(),
        })?;
        // SAFETY: `sql` is valid for `len` bytes; `stmt` receives the result.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast::<c_char>(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(db_error(db));
        }
        NonNull::new(stmt)
            .map(|raw| RawStatement { raw })
            .ok_or_else(|| StorageError::Refused {
                code: 1,
                message: "empty statement".into(),
            })
    }

    /// Binds parameter `i` (from 1) to text bytes or NULL, without copying:
    /// the bytes must outlive the next `reset`.
    pub(super) fn bind_text(&mut self, i: usize, value: Option<&[u8]>) -> Result<(), StorageError> {
        let i = i as c_int;
        // SAFETY: valid statement; SQLITE_STATIC is sound because callers
        // keep the value alive until `reset` (module comment).
        let rc = unsafe {
            match value {
                None => ffi::sqlite3_bind_null(self.raw.as_ptr(), i),
                Some(b) => ffi::sqlite3_bind_text(
                    self.raw.as_ptr(),
                    i,
                    b.as_ptr().cast::<c_char>(),
                    c_int::try_from(b.len()).unwrap_or(c_int::MAX),
                    ffi::SQLITE_STATIC(),
                ),
            }
        };
        self.check(rc)
    }

    pub(super) fn bind_int(&mut self, i: usize, value: i64) -> Result<(), StorageError> {
        // SAFETY: valid statement.
        let rc = unsafe { ffi::sqlite3_bind_int64(self.raw.as_ptr(), i as c_int, value) };
        self.check(rc)
    }

    pub(super) fn step(&mut self) -> Result<Step, StorageError> {
        // SAFETY: valid statement.
        match unsafe { ffi::sqlite3_step(self.raw.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(Step::Row),
            ffi::SQLITE_DONE => Ok(Step::Done),
            _ => Err(self.error()),
        }
    }

    /// Column `i` (from 0) of the current row as bytes; `None` for NULL.
    /// Integers and reals are turned into their text by SQLite.
    pub(super) fn column(&self, i: usize) -> Option<&[u8]> {
        let stmt = self.raw.as_ptr();
        let i = i as c_int;
        // SAFETY: valid statement positioned on a row; the pointer SQLite
        // returns stays valid until the next step or reset, which need
        // `&mut self`, so the borrow cannot outlive it.
        unsafe {
            if ffi::sqlite3_column_type(stmt, i) == ffi::SQLITE_NULL {
                return None;
            }
            let ptr = ffi::sqlite3_column_blob(stmt, i);
            let len = ffi::sqlite3_column_bytes(stmt, i);
            if ptr.is_null() || len <= 0 {
                return Some(&[]);
            }
            Some(std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize))
        }
    }

    /// Heap bytes SQLite holds for this prepared statement.
    pub(super) fn memory_used(&self) -> usize {
        // SAFETY: valid statement; reading a counter changes nothing.
        let n = unsafe {
            ffi::sqlite3_stmt_status(self.raw.as_ptr(), ffi::SQLITE_STMTSTATUS_MEMUSED, 0)
        };
        usize::try_from(n).unwrap_or(0)
    }

    pub(super) fn column_int(&self, i: usize) -> i64 {
        // SAFETY: valid statement positioned on a row.
        unsafe { ffi::sqlite3_column_int64(self.raw.as_ptr(), i as c_int) }
    }

    /// Ends the current execution and forgets the bound values.
    pub(super) fn reset(&mut self) {
        // SAFETY: valid statement. Errors of the last step were reported by
        // `step` already.
        unsafe {
            ffi::sqlite3_reset(self.raw.as_ptr());
            ffi::sqlite3_clear_bindings(self.raw.as_ptr());
        }
    }

    fn check(&self, rc: c_int) -> Result<(), StorageError> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn error(&self) -> StorageError {
        // SAFETY: valid statement; its connection is alive.
        db_error(unsafe { ffi::sqlite3_db_handle(self.raw.as_ptr()) })
    }
}

fn db_error(db: *mut ffi::sqlite3) -> StorageError {
    // SAFETY: `db` is a valid connection handle; errmsg returns a string
    // owned by SQLite that we copy at once.
    let (code, message) = unsafe {
        let code = ffi::sqlite3_extended_errcode(db);
        let msg = ffi::sqlite3_errmsg(db);
        let message = if msg.is_null() {
            String::from("unknown SQLite error")
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        };
        (code, message)
    };
    refused_code(code, message)
}

impl Drop for RawStatement {
    fn drop(&mut self) {
        // SAFETY: finalized once, before the connection closes.
        unsafe {
            ffi::sqlite3_finalize(self.raw.as_ptr());
        }
    }
}
