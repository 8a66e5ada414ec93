//! MySQL backend: DDL stays possible while hsd serves a table. hsd holds no
//! transaction or metadata lock between requests, so ALTER/RENAME/DROP never
//! queue behind it, and a `P` after the change sees the new columns.

mod common;
use common::blocking::*;
use common::mysql_url;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The database of `ddl_runs_while_serving` (the other test has its own).
const DB: &str = "hsdt_ddl";
const DB2: &str = "hsdt_ddl_columns";

fn setup(url: &str, db: &str) -> mysql::Conn {
    let mut sql = fresh_db(url, db);
    exec(
        &mut sql,
        "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a VARCHAR(20) NOT NULL, b INT, KEY kb (b))",
    );
    let values: Vec<String> = (1..=1000)
        .map(|n| format!("({n}, 'a{n}', {})", n % 10))
        .collect();
    exec(
        &mut sql,
        &format!("INSERT INTO t VALUES {}", values.join(", ")),
    );
    exec(&mut sql, "SET SESSION sql_mode = ''");
    // A DDL that would queue behind a lock fails after 5 s instead of hanging.
    exec(&mut sql, "SET SESSION lock_wait_timeout = 5");
    sql
}

/// Runs `stmt` and says how long it took; it must not wait on hsd.
fn ddl(sql: &mut mysql::Conn, stmt: &str) -> Duration {
    let t = Instant::now();
    exec(sql, stmt);
    let took = t.elapsed();
    eprintln!("{took:>10.3?}  {stmt}");
    assert!(took < Duration::from_secs(4), "{stmt} took {took:?}");
    took
}

struct Traffic {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Readers (point, range, secondary index) and writers looping on `t`.
fn traffic(hsd: &Hsd) -> Traffic {
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for n in 0..6 {
        let addr = if n < 4 {
            hsd.read.clone()
        } else {
            hsd.write.clone()
        };
        let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
        threads.push(std::thread::spawn(move || {
            let mut c = Hs::connect(&addr);
            assert_eq!(c.q(&format!("P|0|{DB}|t|PRIMARY|id,a")), "0|1");
            assert_eq!(c.q(&format!("P|1|{DB}|t|kb|id")), "0|1");
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let id = 1 + (i * 37 + n * 101) % 1000;
                let line = match n {
                    0 | 1 => format!("0|=|1|{id}"),
                    2 => format!("0|>=|1|{id}|5|0"),
                    3 => format!("1|=|1|{}|3|0", id % 10),
                    _ => format!("0|=|1|{id}|1|0|U|{id}|w{i}"),
                };
                // The last writer pipelines a find behind its update (one
                // group: what the group read must not outlive its COMMIT).
                let answers = if n == 5 {
                    c.pipeline(&[line, format!("0|=|1|{id}")])
                } else {
                    vec![c.q(&line)]
                };
                for a in answers {
                    if a.starts_with("0|") {
                        ok.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    Traffic {
        stop,
        ok,
        failed,
        threads,
    }
}

impl Traffic {
    fn finish(self) -> (usize, usize) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().expect("traffic thread");
        }
        (
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

#[test]
fn ddl_runs_while_serving() {
    let Some(url) = mysql_url() else { return };
    let mut sql = setup(&url, DB);
    let hsd = Hsd::start(&url, &[]);
    let load = traffic(&hsd);
    std::thread::sleep(Duration::from_millis(300));
    let ok_before = load.ok.load(Ordering::Relaxed);
    ddl(
        &mut sql,
        "ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 7",
    );
    ddl(&mut sql, "ALTER TABLE t ADD INDEX kc (c)");
    ddl(&mut sql, "ALTER TABLE t MODIFY a VARCHAR(40) NOT NULL");
    ddl(&mut sql, "ALTER TABLE t FORCE");
    ddl(&mut sql, "ANALYZE TABLE t");
    ddl(&mut sql, "CREATE TABLE t2 LIKE t");
    ddl(&mut sql, "INSERT INTO t2 SELECT * FROM t");
    ddl(&mut sql, "RENAME TABLE t TO t_tmp, t2 TO t, t_tmp TO t2");
    ddl(&mut sql, "DROP TABLE t2");
    // A new P sees the new column and index; the old openings kept working.
    let mut c = hsd.reader();
    assert_eq!(c.q(&format!("P|0|{DB}|t|kc|id,c")), "0|1");
    assert_eq!(c.q("0|=|1|7|2|0"), "0|2|1|7|2|7");
    std::thread::sleep(Duration::from_millis(300));
    let (ok, failed) = load.finish();
    eprintln!("traffic during DDL: {ok} ok, {failed} failed");
    assert!(ok > ok_before + 100, "traffic stalled: {ok_before} -> {ok}");
    assert_eq!(failed, 0, "no request should fail on these changes");

    // Idle hsd after reads and writes holds nothing: DDL that needs an
    // exclusive lock at once succeeds at once.
    exec(&mut sql, "SET SESSION lock_wait_timeout = 1");
    ddl(&mut sql, "ALTER TABLE t ADD COLUMN d INT, ALGORITHM=COPY");
    ddl(&mut sql, "ALTER TABLE t DROP COLUMN d");
}

#[test]
fn changed_columns_are_seen_not_served_stale() {
    let Some(url) = mysql_url() else { return };
    let mut sql = setup(&url, DB2);
    exec(
        &mut sql,
        "CREATE TABLE u (id INT PRIMARY KEY, a VARCHAR(20), b INT)",
    );
    exec(
        &mut sql,
        "INSERT INTO u VALUES (1, 'one', 10), (2, 'two', 20)",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut r = hsd.reader();
    let mut w = hsd.writer();
    assert_eq!(r.q(&format!("P|0|{DB2}|u|PRIMARY|id,a,b")), "0|1");
    assert_eq!(w.q(&format!("P|0|{DB2}|u|PRIMARY|id,a,b")), "0|1");
    assert_eq!(r.q("0|=|1|1"), "0|3|1|one|10");

    // A column added: the open index is unchanged, a new P sees it.
    ddl(
        &mut sql,
        "ALTER TABLE u ADD COLUMN c VARCHAR(10) DEFAULT 'new'",
    );
    assert_eq!(r.q("0|=|1|1"), "0|3|1|one|10");
    assert_eq!(r.q(&format!("P|1|{DB2}|u|PRIMARY|id,c")), "0|1");
    assert_eq!(r.q("1|=|1|2"), "0|2|2|new");

    // A column's type changed: values come as the new type's text.
    ddl(&mut sql, "ALTER TABLE u MODIFY b DECIMAL(6,2)");
    assert_eq!(r.q("0|=|1|1"), "0|3|1|one|10.00");
    ddl(&mut sql, "ALTER TABLE u MODIFY a DATE");
    assert_eq!(r.q("0|=|1|1"), "0|3|1|0000-00-00|10.00");

    // An opened column dropped: an error, never a stale column list; a new P
    // answers from the new metadata.
    ddl(&mut sql, "ALTER TABLE u DROP COLUMN b");
    assert_eq!(r.q("0|=|1|1"), "1|1|1054");
    assert_eq!(w.q("0|=|1|1|1|0|U|1|2020-01-01|5"), "1|1|1054");
    assert_eq!(r.q(&format!("P|0|{DB2}|u|PRIMARY|id,a,b")), "2|1|fld");
    assert_eq!(r.q(&format!("P|0|{DB2}|u|PRIMARY|id,a,c")), "0|1");
    assert_eq!(r.q("0|=|1|1"), "0|3|1|0000-00-00|new");
    assert_eq!(w.q(&format!("P|0|{DB2}|u|PRIMARY|id,a,c")), "0|1");
    assert_eq!(w.q("0|=|1|1|1|0|U|1|2020-01-01|x"), "0|1|1");

    // Renamed and dropped tables.
    ddl(&mut sql, "RENAME TABLE u TO u2");
    assert_eq!(r.q("0|=|1|1"), "1|1|1146");
    assert_eq!(r.q(&format!("P|0|{DB2}|u2|PRIMARY|id,a,c")), "0|1");
    assert_eq!(r.q("0|=|1|1"), "0|3|1|2020-01-01|x");
    ddl(&mut sql, "DROP TABLE u2");
    assert_eq!(r.q("0|=|1|1"), "1|1|1146");
    assert_eq!(r.q(&format!("P|0|{DB2}|u2|PRIMARY|id")), "1|1|open_table");
    // Re-created under the old name: a new P serves the new table.
    ddl(&mut sql, "CREATE TABLE u (id INT PRIMARY KEY, z TEXT)");
    exec(&mut sql, "INSERT INTO u VALUES (1, 'again')");
    assert_eq!(r.q(&format!("P|0|{DB2}|u|PRIMARY|id,z")), "0|1");
    assert_eq!(r.q("0|=|1|1"), "0|2|1|again");
}
