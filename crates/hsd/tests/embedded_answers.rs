//! The embedded store answers as the original plugin does for the same
//! table on MariaDB, where clients were found to break on a difference
//! (issue 19, E1 and E2): an insert answers an id only for an
//! auto-increment key, and a REAL reads as MariaDB prints a DOUBLE.

mod common;
use common::{q, t, Backend, TestServer};
use mysql::prelude::Queryable;

fn sqlite(db: &str) -> TestServer {
    TestServer::start(Backend::Sqlite, db, &[]).expect("sqlite server")
}

/// E1: `INTEGER PRIMARY KEY` is a plain key (the original answers `0 1`
/// for a key that is not AUTO_INCREMENT); `AUTOINCREMENT` is hsd's
/// counterpart of AUTO_INCREMENT and answers the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e1_an_insert_into_a_plain_integer_primary_key_answers_no_id() {
    let s = sqlite("hst_e1");
    s.sql("CREATE TABLE plain (id INTEGER PRIMARY KEY, k TEXT, v TEXT, n INTEGER)");
    s.sql("CREATE TABLE auto (id INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT)");
    let mut w = s.writer().await;
    assert_eq!(
        q(&mut w, "P|1|hst_e1|plain|PRIMARY|id,k,v,n").await,
        t("0|1")
    );
    // The request from the issue, as php-handlersocket sent it.
    assert_eq!(q(&mut w, "1|+|4|11|k|eleven|110").await, t("0|1"));
    // The key left out: SQLite picks the next rowid, the answer is still
    // the plugin's for a plain key.
    assert_eq!(q(&mut w, "P|2|hst_e1|plain|PRIMARY|k,v").await, t("0|1"));
    assert_eq!(q(&mut w, "2|+|2|k2|twelve").await, t("0|1"));
    assert_eq!(
        s.sql("SELECT id, k, v, n FROM plain ORDER BY id"),
        vec![
            vec![
                Some("11".into()),
                Some("k".into()),
                Some("eleven".into()),
                Some("110".into())
            ],
            vec![
                Some("12".into()),
                Some("k2".into()),
                Some("twelve".into()),
                Some("0".into())
            ],
        ]
    );
    // AUTOINCREMENT: the generated id, and 0 for an explicit one (as
    // AUTO_INCREMENT answers).
    assert_eq!(q(&mut w, "P|3|hst_e1|auto|PRIMARY|k").await, t("0|1"));
    assert_eq!(q(&mut w, "3|+|1|a").await, t("0|1|1"));
    assert_eq!(q(&mut w, "3|+|1|b").await, t("0|1|2"));
    assert_eq!(q(&mut w, "P|4|hst_e1|auto|PRIMARY|id,k").await, t("0|1"));
    assert_eq!(q(&mut w, "4|+|2|10|c").await, t("0|1|0"));
}

/// E2: a whole-number REAL reads `12345` and `0` (SQLite's own text is
/// `12345.0`), and exponents as MariaDB writes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2_a_real_reads_as_mariadb_prints_a_double() {
    let s = sqlite("hst_e2");
    s.sql(
        "CREATE TABLE r (id INTEGER PRIMARY KEY, x REAL, d DOUBLE, f FLOAT, t TEXT);
         INSERT INTO r VALUES
           (1, 12345.0, 0.0, -0.0, '12345.0'),
           (2, 1e15, 1e14, 1.5e-16, 'x'),
           (3, 123456789012345680.0, 0.1, 1e-15, NULL),
           (4, -12.5, 5e-324, 1.7976931348623157e308, ''),
           (5, 'text in a REAL column', NULL, 7, '7')",
    );
    let mut r = s.reader().await;
    assert_eq!(q(&mut r, "P|0|hst_e2|r|PRIMARY|x,d,f,t").await, t("0|1"));
    let rows = q(&mut r, "0|>=|1|1|10|0").await;
    assert_eq!(
        rows,
        t("0|4|12345|0|0|12345.0\
           |1e15|100000000000000|1.5e-16|x\
           |1.2345678901234568e17|0.1|0.000000000000001|<NULL>\
           |-12.5|5e-324|1.7976931348623157e308|\
           |text in a REAL column|<NULL>|7|7"),
        "a TEXT column keeps its text"
    );
    // Written through hsd: a whole number stored into a REAL reads whole.
    let mut w = s.writer().await;
    assert_eq!(q(&mut w, "P|1|hst_e2|r|PRIMARY|id,x").await, t("0|1"));
    assert_eq!(q(&mut w, "1|+|2|6|42").await, t("0|1"));
    assert_eq!(q(&mut w, "1|=|1|6").await, t("0|2|6|42"));
    assert_eq!(q(&mut w, "1|=|1|6|1|0|+|0|8").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|6").await, t("0|2|6|50"));
}

/// E2 against MariaDB itself: the same doubles, stored in a MariaDB
/// DOUBLE and in an embedded REAL, read back the same text (random bit
/// patterns, whole numbers and powers of ten around the notation's edges).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2_reals_read_as_mariadb_reads_the_same_doubles() {
    let Some(url) = common::mysql_url() else {
        return;
    };
    // A small xorshift: the same values every run.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut values: Vec<f64> = Vec::new();
    while values.len() < 2000 {
        let x = f64::from_bits(next());
        if x.is_finite() {
            values.push(x);
        }
    }
    for e in -330..=310 {
        values.push(10f64.powi(e));
        values.push(-1.5 * 10f64.powi(e));
        values.push((next() % 1_000_000) as f64 * 10f64.powi(e));
    }
    for _ in 0..500 {
        values.push((next() % (1 << 53)) as f64);
        values.push((next() % 100_000) as f64 / 8.0);
    }
    values.retain(|x| x.is_finite());
    let literals: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, x)| format!("({}, {x:e})", i + 1))
        .collect();

    let mut my = mysql::Conn::new(mysql::Opts::from_url(&url).expect("url")).expect("connect");
    my.query_drop("DROP DATABASE IF EXISTS hst_e2_maria")
        .expect("drop");
    my.query_drop("CREATE DATABASE hst_e2_maria")
        .expect("create");
    my.query_drop("CREATE TABLE hst_e2_maria.d (id INT PRIMARY KEY, x DOUBLE)")
        .expect("table");
    for chunk in literals.chunks(500) {
        my.query_drop(format!(
            "INSERT INTO hst_e2_maria.d VALUES {}",
            chunk.join(",")
        ))
        .expect("insert");
    }
    let maria: Vec<(u32, Vec<u8>)> = my
        .query("SELECT id, CONCAT(x) FROM hst_e2_maria.d ORDER BY id")
        .expect("select");

    let s = sqlite("hst_e2_rand");
    s.sql("CREATE TABLE d (id INTEGER PRIMARY KEY, x REAL)");
    for chunk in literals.chunks(500) {
        s.sql(&format!("INSERT INTO d VALUES {}", chunk.join(",")));
    }
    let mut r = s.reader().await;
    assert_eq!(q(&mut r, "P|0|hst_e2_rand|d|PRIMARY|id,x").await, t("0|1"));
    let answer = r
        .request(format!("0\t>=\t1\t1\t{}\t0", values.len()).as_bytes())
        .await
        .expect("find");
    assert_eq!(answer.values.len(), 2 * maria.len());
    let mut differ = Vec::new();
    for (k, (id, text)) in maria.iter().enumerate() {
        let ours = answer.values[2 * k + 1].as_deref().unwrap_or(b"<NULL>");
        if ours != text.as_slice() {
            differ.push(format!(
                "{id}: {:e}: MariaDB {} hsd {}",
                values[*id as usize - 1],
                String::from_utf8_lossy(text),
                String::from_utf8_lossy(ours)
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} doubles read differently, e.g. {:?}",
        differ.len(),
        maria.len(),
        &differ[..differ.len().min(10)]
    );
    my.query_drop("DROP DATABASE hst_e2_maria").expect("drop");
}
