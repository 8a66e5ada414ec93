//! The embedded store the request_path target runs on: db `fz` in a temp
//! dir, with tables that cover hsd's table shapes (rowid with an INTEGER
//! PRIMARY KEY and secondary/unique/composite indexes and a BLOB column, a
//! WITHOUT ROWID table with a composite key, a table with no declared key).
//! `reset` puts the rows back after an input wrote to them.

use hsd::harness::open_store_file;
use rusqlite::Connection;
use std::path::Path;

pub const DB: &str = "fz";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, name TEXT, v INT, d BLOB, r REAL);
CREATE INDEX IF NOT EXISTS t_name_v ON t (name, v);
CREATE UNIQUE INDEX IF NOT EXISTS t_v ON t (v);
CREATE TABLE IF NOT EXISTS kv (k TEXT NOT NULL, j INT NOT NULL, v TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (k, j)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS np (a TEXT, b TEXT);
CREATE INDEX IF NOT EXISTS np_a ON np (a);
";

const ROWS: &str = "
DELETE FROM t; DELETE FROM kv; DELETE FROM np;
INSERT INTO t VALUES
 (1, 'a', -5, x'00ff', 1.5), (2, 'a', 0, NULL, NULL), (3, 'b', 7, x'', -2.0),
 (4, NULL, NULL, NULL, NULL), (5, 'b', 9, x'09', 0.0), (6, 'c', -1, NULL, 3.25),
 (7, 'a' || char(9) || 'b', 12, x'0a', NULL), (8, '', 100, NULL, 1e300),
 (9, 'zz', 2147483647, NULL, NULL), (10, 'zz', -2147483648, NULL, NULL),
 (11, 'x', 3, NULL, NULL), (12, 'x', 4, NULL, NULL);
INSERT INTO kv VALUES ('a', 1, 'one'), ('a', 2, 'two'), ('b', 1, ''), ('b', -3, 'neg'),
 ('c', 0, 'zero'), ('', 0, 'empty');
INSERT INTO np VALUES ('p', 'q'), (NULL, 'r'), ('p', NULL), ('s', 's');
";

/// The fuzz target's side connection to `fz`: creates it and resets rows.
pub struct Store {
    conn: Connection,
}

impl Store {
    pub fn create(data_dir: &Path) -> Store {
        let conn = open_store_file(data_dir, DB).expect("create fz db");
        conn.execute_batch(SCHEMA).expect("schema");
        let mut s = Store { conn };
        s.reset();
        s
    }

    /// SQLite's counter of commits made by other connections: it moves
    /// whenever hsd wrote anything to the file.
    pub fn data_version(&self) -> i64 {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .expect("data_version")
    }

    pub fn reset(&mut self) {
        let tx = self.conn.transaction().expect("begin reset");
        tx.execute_batch(ROWS).expect("reset rows");
        tx.commit().expect("commit reset");
    }
}
