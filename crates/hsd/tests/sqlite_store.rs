//! The embedded store's own hazards: a user column that shadows SQLite's
//! rowid names, and a write group spread over several db files when one of
//! them fails (a full disk). Each checks the rows left behind, not only the
//! answers.

mod common;

use common::{q, t, Backend, SmallDisk, TestServer};
use hs_client::insert_line;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

async fn sqlite_server(db: &str) -> TestServer {
    TestServer::start(Backend::Sqlite, db, &[]).expect("sqlite server")
}

/// A modify through a secondary index changes exactly the rows the scan
/// chose, whatever user columns are called (`rowid`, `oid`, `_rowid_` are
/// also SQLite's names for the row id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_named_like_the_rowid_do_not_redirect_writes() {
    let s = sqlite_server("hst_rowid_names").await;
    let tables = [
        (
            "t_rowid",
            "rowid TEXT, owner TEXT, balance INTEGER",
            "rowid",
        ),
        ("t_oid", "oid TEXT, owner TEXT, balance INTEGER", "oid"),
        (
            "t_under",
            "_rowid_ TEXT, owner TEXT, balance INTEGER",
            "_rowid_",
        ),
        (
            "t_two",
            "rowid TEXT, _rowid_ TEXT, owner TEXT, balance INTEGER",
            "rowid",
        ),
    ];
    for (table, columns, shadow) in tables {
        s.sql(&format!("CREATE TABLE {table} ({columns})"));
        s.sql(&format!("CREATE INDEX {table}_owner ON {table} (owner)"));
        s.sql(&format!(
            "INSERT INTO {table} ({shadow}, owner, balance) VALUES ('same','alice',10),('same','bob',20),('same','carol',30)"
        ));
        let mut c = s.writer().await;
        let db = &s.db;
        assert_eq!(
            q(
                &mut c,
                &format!("P|1|{db}|{table}|{table}_owner|owner,balance")
            )
            .await,
            t("0|1")
        );
        assert_eq!(q(&mut c, "1|=|1|alice|1|0|U|alice|0").await, t("0|1|1"));
        assert_eq!(q(&mut c, "1|=|1|bob|1|0|+|~|5").await, t("0|1|1"));
        assert_eq!(q(&mut c, "1|=|1|carol|1|0|D").await, t("0|1|1"));
        let rows = s.sql(&format!(
            "SELECT owner, balance FROM {table} ORDER BY owner"
        ));
        assert_eq!(
            rows,
            vec![
                vec![Some("alice".into()), Some("0".into())],
                vec![Some("bob".into()), Some("25".into())],
            ],
            "table {table}: only the chosen rows may change"
        );
        // Reads through PRIMARY still reach the row id.
        assert_eq!(
            q(&mut c, &format!("P|2|{db}|{table}|PRIMARY|owner")).await,
            t("0|1")
        );
        assert_eq!(q(&mut c, "2|>=|1|0|5|0").await, t("0|1|alice|bob"));
    }
}

/// All three rowid names taken and no primary key: there is no way to name
/// one row, so a modify is refused instead of guessing, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_whose_rowid_cannot_be_named_refuses_modify() {
    let s = sqlite_server("hst_rowid_hidden").await;
    s.sql("CREATE TABLE hidden (rowid TEXT, oid TEXT, _rowid_ TEXT, owner TEXT)");
    s.sql("CREATE INDEX hidden_owner ON hidden (owner)");
    s.sql("INSERT INTO hidden VALUES ('a','a','a','alice'),('a','a','a','bob')");
    let mut c = s.writer().await;
    let db = &s.db;
    assert_eq!(
        q(&mut c, &format!("P|1|{db}|hidden|hidden_owner|owner")).await,
        t("0|1")
    );
    assert_eq!(q(&mut c, "1|=|1|alice").await, t("0|1|alice"));
    assert_eq!(q(&mut c, "1|=|1|alice|1|0|U|zed").await, t("1|1|1173"));
    assert_eq!(q(&mut c, "1|=|1|bob|1|0|D").await, t("1|1|1173"));
    assert_eq!(
        s.sql("SELECT owner FROM hidden ORDER BY owner"),
        vec![vec![Some("alice".into())], vec![Some("bob".into())]]
    );
}

/// Writes to two db files go through one group committer. Only `b` lives on
/// a disk that fills up (its file is a symlink into a small tmpfs), so once
/// it is full, groups commit in `a` and fail in `b`: every write must be
/// answered OK exactly when its row was committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_exactly_the_writes_it_lost() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let disk = SmallDisk::mount(&tmp.path().join("small"), 512 << 10);
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let hsd = env!("CARGO_BIN_EXE_hsd");
    let sql = |dir: &Path, db: &str, stmt: &str| {
        let out = Command::new(hsd)
            .args(["sql", "--data-dir"])
            .arg(dir)
            .args([db, stmt])
            .output()
            .expect("hsd sql");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let schema = "CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT)";
    sql(&data, "a", schema);
    sql(&disk.dir, "b", schema);
    std::os::unix::fs::symlink(disk.dir.join("b.sqlite"), data.join("b.sqlite"))
        .expect("symlink b");

    let mut server = TestServer::start(Backend::Sqlite, "unused", &[]).expect("server");
    server.restart_with_data_dir(&data);
    // One writer per db file, pipelining rounds of inserts at the same time,
    // so most groups carry writes to both files.
    let mut tasks = Vec::new();
    for (n, db) in ["a", "b"].into_iter().enumerate() {
        let mut c = server.writer().await;
        assert_eq!(q(&mut c, &format!("P|1|{db}|kv||k,v")).await, t("0|1"));
        tasks.push(tokio::spawn(async move {
            let value = "x".repeat(2000);
            let mut answered: Vec<(&str, u64, bool)> = Vec::new();
            let mut next_key = 1 + n as u64 * 1_000_000;
            for _round in 0..60 {
                let lines: Vec<Vec<u8>> = (0..16)
                    .map(|i| insert_line(1, &[(next_key + i).to_string(), value.clone()]))
                    .collect();
                let responses = c.pipeline(&lines).await.expect("pipeline");
                for (i, r) in responses.iter().enumerate() {
                    answered.push((db, next_key + i as u64, r.is_ok()));
                }
                next_key += 16;
            }
            answered
        }));
    }
    let mut answered = Vec::new();
    for task in tasks {
        answered.extend(task.await.expect("writer task"));
    }
    let count = |db: &str, ok: bool| {
        answered
            .iter()
            .filter(|(d, _, o)| *d == db && *o == ok)
            .count()
    };
    eprintln!(
        "a: {} ok, {} failed; b: {} ok, {} failed",
        count("a", true),
        count("a", false),
        count("b", true),
        count("b", false)
    );
    assert!(
        count("b", false) > 0,
        "b never failed: its disk did not fill"
    );
    assert!(count("a", true) > 0, "a never committed");

    server.kill9();
    for (db, dir) in [("a", &data), ("b", &disk.dir)] {
        let stored: BTreeSet<u64> = sql(dir, db, "SELECT k FROM kv")
            .lines()
            .map(|l| l.trim().parse().expect("key"))
            .collect();
        let acknowledged: BTreeSet<u64> = answered
            .iter()
            .filter(|(d, _, ok)| *d == db && *ok)
            .map(|(_, k, _)| *k)
            .collect();
        let lost: Vec<_> = acknowledged.difference(&stored).collect();
        let unacknowledged: Vec<_> = stored.difference(&acknowledged).collect();
        assert!(
            lost.is_empty() && unacknowledged.is_empty(),
            "db {db}: answered OK but not stored: {lost:?}; stored but answered with an error: {unacknowledged:?}"
        );
    }
}

/// Finds read through a transaction kept open between batches (a read
/// lease). A write committed by anyone before a find must be seen by it:
/// here by another process (`hsd sql`) and through hsd's own write port,
/// each followed at once by a find on a connection whose lease is open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finds_see_every_commit_before_them() {
    let s = sqlite_server("hst_read_lease").await;
    s.sql("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
    s.sql("INSERT INTO kv VALUES (1, 'v0')");
    let mut r = s.reader().await;
    let mut w = s.writer().await;
    let db = &s.db;
    assert_eq!(q(&mut r, &format!("P|1|{db}|kv||v")).await, t("0|1"));
    assert_eq!(q(&mut w, &format!("P|1|{db}|kv||v")).await, t("0|1"));
    for i in 1..=20 {
        // A lease is open after this find...
        let before = q(&mut r, "1|=|1|1").await;
        assert!(before.starts_with("0\t1\t"), "{before}");
        // ...and the next find still sees a write made meanwhile.
        if i % 2 == 0 {
            s.sql(&format!("UPDATE kv SET v = 'sql{i}' WHERE k = 1"));
            assert_eq!(q(&mut r, "1|=|1|1").await, t(&format!("0|1|sql{i}")));
        } else {
            assert_eq!(q(&mut w, &format!("1|=|1|1|1|0|U|hs{i}")).await, t("0|1|1"));
            assert_eq!(q(&mut r, "1|=|1|1").await, t(&format!("0|1|hs{i}")));
        }
    }
}

/// An idle hsd holds no read transaction: shortly after its last find,
/// another process can checkpoint and truncate the WAL, which needs every
/// reader gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_hsd_holds_no_snapshot() {
    let s = sqlite_server("hst_idle_lease").await;
    s.sql("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
    s.sql("INSERT INTO kv VALUES (1, 'a'), (2, 'b')");
    let mut r = s.reader().await;
    let db = &s.db;
    assert_eq!(q(&mut r, &format!("P|1|{db}|kv||v")).await, t("0|1"));
    assert_eq!(q(&mut r, "1|>=|1|1|10|0").await, t("0|1|a|b"));
    // A write after the find: the WAL now has frames the lease would pin.
    s.sql("UPDATE kv SET v = 'c' WHERE k = 2");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let result = s.sql("PRAGMA wal_checkpoint(TRUNCATE)");
    assert_eq!(
        result[0][0].as_deref(),
        Some("0"),
        "the checkpoint was blocked by a reader: {result:?}"
    );
    let wal = s.data_dir().join(format!("{db}.sqlite-wal"));
    let len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert_eq!(len, 0, "the WAL was not truncated");
    // And hsd still reads the newest state afterwards.
    assert_eq!(q(&mut r, "1|>=|1|1|10|0").await, t("0|1|a|c"));
}

/// Another process holds a write lock on one db file (`BEGIN IMMEDIATE`
/// in an SQLite shell, say). Writes to other files go on at their usual
/// pace, with one writer or two; the writes to the locked file wait and
/// succeed once it is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_db_locked_from_outside_does_not_stall_the_others() {
    for threads_wr in ["1", "2"] {
        let s = TestServer::start(Backend::Sqlite, "hst_lock_a", &["--threads-wr", threads_wr])
            .expect("sqlite server");
        s.sql("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
        let locked_path = s.data_dir().join("hst_lock_b.sqlite");
        let outside = rusqlite::Connection::open(&locked_path).expect("open b");
        outside
            .execute_batch(
                "PRAGMA journal_mode=WAL; CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT);",
            )
            .expect("create b");
        // Every write connection opens both tables.
        let mut writers = Vec::new();
        for _ in 0..4 {
            let mut w = s.writer().await;
            assert_eq!(q(&mut w, "P|1|hst_lock_a|kv||k,v").await, t("0|1"));
            assert_eq!(q(&mut w, "P|2|hst_lock_b|kv||k,v").await, t("0|1"));
            writers.push(w);
        }
        outside
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO kv VALUES (1000, 'outside');")
            .expect("lock b");
        // Writes into the locked file, queued first, from two connections.
        let mut blocked = Vec::new();
        for (i, mut w) in writers.drain(..2).enumerate() {
            blocked.push(tokio::spawn(async move {
                q(&mut w, &format!("2|+|2|{}|waited", i + 1)).await
            }));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // Inserts into the other file, timed one by one.
        let mut took = Vec::new();
        for n in 0..40 {
            let w = &mut writers[n % 2];
            let started = std::time::Instant::now();
            let answer = q(w, &format!("1|+|2|{}|x", n + 1)).await;
            assert!(answer.starts_with("0\t1"), "insert into a: {answer:?}");
            took.push(started.elapsed());
        }
        took.sort();
        let (median, worst) = (took[took.len() / 2], took[took.len() - 1]);
        eprintln!(
            "sqlite_store: --threads-wr {threads_wr}, b locked from outside: inserts into a median {median:?}, worst {worst:?}"
        );
        assert!(
            median <= std::time::Duration::from_millis(100),
            "inserts into a waited on b's lock: median {median:?}"
        );
        assert!(worst < std::time::Duration::from_secs(1), "worst {worst:?}");
        // The writes into b were held, not lost: they land once b is free.
        outside.execute_batch("COMMIT").expect("unlock b");
        for b in blocked {
            let answer = b.await.expect("blocked writer");
            assert!(answer.starts_with("0\t1"), "insert into b: {answer:?}");
        }
        let rows = outside
            .query_row("SELECT count(*) FROM kv", [], |r| r.get::<_, i64>(0))
            .expect("count b");
        assert_eq!(rows, 3, "b has the outside row and both waiting inserts");
        let rows = s.sql("SELECT count(*) FROM kv");
        assert_eq!(rows[0][0].as_deref(), Some("40"));
    }
}

/// `--sqlite-mmap-mib 0` reads every page with a system call (for data much
/// larger than memory, where mapped reads thrash); the default maps the db
/// file. Seen from outside: whether the file is in hsd's memory map after a
/// find, and the same answers either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_files_are_mapped_unless_told_not_to() {
    for (extra, mapped) in [(&[][..], true), (&["--sqlite-mmap-mib", "0"][..], false)] {
        let s = TestServer::start(Backend::Sqlite, "hst_mmap", extra).expect("sqlite server");
        s.sql("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
        s.sql("INSERT INTO kv VALUES (1, 'one'), (2, 'two')");
        let mut r = s.reader().await;
        assert_eq!(q(&mut r, "P|0|hst_mmap|kv|PRIMARY|k,v").await, t("0|1"));
        assert_eq!(q(&mut r, "0|>=|1|1|5|0").await, t("0|2|1|one|2|two"));
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", s.pid())).expect("maps");
        let file_mapped = maps.lines().any(|l| l.ends_with("/hst_mmap.sqlite"));
        assert_eq!(file_mapped, mapped, "{extra:?}: {maps}");
    }
}
