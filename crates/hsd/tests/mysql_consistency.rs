//! MySQL backend: SQL and HandlerSocket on the same rows, both ways, with no
//! cache in between; index kinds, numeric index positions, keyless tables.

mod common;
use common::blocking::*;
use common::mysql_url;

#[test]
fn hs_writes_are_visible_to_the_next_sql_query() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_cons_hs2sql");
    exec(
        &mut sql,
        "CREATE TABLE kv (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20), n INT)",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut w = hsd.writer();
    assert_eq!(w.q("P|0|hsdt_cons_hs2sql|kv|PRIMARY|id,v,n"), "0|1");
    for i in 1..=50 {
        assert_eq!(w.q(&format!("0|+|3|0|v{i}|{i}")), format!("0|1|{i}"));
        assert_eq!(
            scalar(&mut sql, &format!("SELECT v FROM kv WHERE id = {i}")),
            format!("v{i}")
        );
        assert_eq!(w.q(&format!("0|=|1|{i}|1|0|U|{i}|u{i}|{}", i * 2)), "0|1|1");
        assert_eq!(
            scalar(
                &mut sql,
                &format!("SELECT CONCAT(v, ':', n) FROM kv WHERE id = {i}")
            ),
            format!("u{i}:{}", i * 2)
        );
        assert_eq!(w.q(&format!("0|=|1|{i}|1|0|+|0||5")), "0|1|1");
        assert_eq!(
            scalar(&mut sql, &format!("SELECT n FROM kv WHERE id = {i}")),
            (i * 2 + 5).to_string()
        );
        if i % 2 == 0 {
            assert_eq!(w.q(&format!("0|=|1|{i}|1|0|D")), "0|1|1");
            assert_eq!(
                scalar(&mut sql, &format!("SELECT COUNT(*) FROM kv WHERE id = {i}")),
                "0"
            );
        }
    }
    assert_eq!(scalar(&mut sql, "SELECT COUNT(*) FROM kv"), "25");
}

#[test]
fn sql_commits_are_visible_to_the_next_find() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_cons_sql2hs");
    exec(
        &mut sql,
        "CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR(20))",
    );
    let hsd = Hsd::start(&url, &["--mysql-timeout", "2"]);
    let mut r = hsd.reader();
    let mut w = hsd.writer();
    assert_eq!(r.q("P|0|hsdt_cons_sql2hs|kv|PRIMARY|id,v"), "0|1");
    assert_eq!(w.q("P|0|hsdt_cons_sql2hs|kv|PRIMARY|id,v"), "0|1");
    for i in 1..=50 {
        exec(&mut sql, &format!("INSERT INTO kv VALUES ({i}, 'a{i}')"));
        assert_eq!(r.q(&format!("0|=|1|{i}")), format!("0|2|{i}|a{i}"));
        exec(
            &mut sql,
            &format!("UPDATE kv SET v = 'b{i}' WHERE id = {i}"),
        );
        assert_eq!(r.q(&format!("0|=|1|{i}")), format!("0|2|{i}|b{i}"));
        assert_eq!(w.q(&format!("0|=|1|{i}")), format!("0|2|{i}|b{i}"));
    }
    exec(&mut sql, "DELETE FROM kv WHERE id > 25");
    assert_eq!(r.q("0|>|1|24|10|0"), "0|2|25|b25");

    // An open SQL transaction: its changes are invisible until COMMIT, and
    // the row it locks makes an HS write wait at most the lock timeout
    // while reads go on.
    exec(&mut sql, "START TRANSACTION");
    exec(&mut sql, "UPDATE kv SET v = 'locked' WHERE id = 1");
    exec(&mut sql, "INSERT INTO kv VALUES (100, 'new')");
    assert_eq!(r.q("0|=|1|1"), "0|2|1|b1");
    assert_eq!(r.q("0|=|1|100"), "0|2");
    let t = std::time::Instant::now();
    // The storage engine's lock wait timeout (HA_ERR_LOCK_WAIT_TIMEOUT),
    // the number the original answered.
    assert_eq!(w.q("0|=|1|1|1|0|U|1|hs"), "1|1|146");
    assert!(
        t.elapsed().as_secs_f64() < 3.0,
        "lock wait took {:?}",
        t.elapsed()
    );
    assert_eq!(
        w.q("0|=|1|2|1|0|U|2|hs2"),
        "0|1|1",
        "other rows are not locked"
    );
    exec(&mut sql, "COMMIT");
    assert_eq!(r.q("0|=|1|1"), "0|2|1|locked");
    assert_eq!(r.q("0|=|1|100"), "0|2|100|new");
    assert_eq!(r.q("0|=|1|2"), "0|2|2|hs2");
}

#[test]
fn every_index_kind_and_position() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_cons_indexes");
    exec(
        &mut sql,
        "CREATE TABLE t (
            id INT NOT NULL PRIMARY KEY,
            a INT NOT NULL, b VARCHAR(10) NOT NULL, c INT NULL, email VARCHAR(30),
            KEY a_b (a, b),
            UNIQUE KEY uemail (email),
            KEY c (c)
        ) ENGINE=InnoDB",
    );
    exec(
        &mut sql,
        "INSERT INTO t VALUES
         (1, 1, 'x', NULL, 'one@x'), (2, 1, 'y', 5, 'two@x'), (3, 2, 'x', 5, NULL),
         (4, 2, 'x', NULL, 'four@x'), (5, 3, 'a', 7, NULL), (6, 1, 'y', 5, 'six@x')",
    );
    // The server's key order: PRIMARY, unique keys, then the others.
    let order: Vec<String> = rows(&mut sql, "SHOW INDEX FROM t")
        .into_iter()
        .filter(|r| r[3].as_deref() == Some(b"1"))
        .map(|r| String::from_utf8_lossy(r[2].as_deref().unwrap_or_default()).into_owned())
        .collect();
    assert_eq!(order, ["PRIMARY", "uemail", "a_b", "c"]);
    let hsd = Hsd::start(&url, &[]);
    let mut r = hsd.reader();
    for (pos, name) in order.iter().enumerate() {
        assert_eq!(r.q(&format!("P|{pos}|hsdt_cons_indexes|t|{pos}|id")), "0|1");
        assert_eq!(
            r.q(&format!("P|1{pos}|hsdt_cons_indexes|t|{name}|id")),
            "0|1"
        );
    }
    assert_eq!(r.q("P|9|hsdt_cons_indexes|t|4|id"), "2|1|idxnum");
    assert_eq!(r.q("P|9|hsdt_cons_indexes|t||id"), "0|1", "empty = PRIMARY");
    // uemail: unique with NULLs (which sort first).
    assert_eq!(r.q("1|=|1|two@x"), "0|1|2");
    assert_eq!(r.q("1|>=|1|~|10|0"), "0|1|3|5|4|1|6|2");
    assert_eq!(r.q("1|=|1|~|10|0"), "0|1|3|5");
    // a_b: composite, non-unique; ties in primary key order.
    assert_eq!(r.q("2|=|1|1|10|0"), "0|1|1|2|6");
    assert_eq!(r.q("2|=|2|1|y|10|0"), "0|1|2|6");
    assert_eq!(r.q("2|>|2|1|y|10|0"), "0|1|3|4|5");
    assert_eq!(r.q("2|<=|2|2|x|10|0"), "0|1|4|3|6|2|1");
    assert_eq!(r.q("2|<|1|2|2|1"), "0|1|2|1");
    assert_eq!(r.q("2|>=|2|1|y|2|1"), "0|1|6|3");
    assert_eq!(r.q("2|=|2|1|x|10|0|@|1|3|y|z|x"), "0|1|2|1");
    // c: nullable, non-unique.
    assert_eq!(r.q("3|<|1|6|10|0"), "0|1|6|3|2|4|1");
    assert_eq!(r.q("3|=|1|5|10|0"), "0|1|2|3|6");
    // PRIMARY with IN, limits and filters.
    assert_eq!(r.q("P|20|hsdt_cons_indexes|t|PRIMARY|id,b|a,c"), "0|1");
    assert_eq!(r.q("20|=|1|0|10|0|@|0|4|6|1|9|3"), "0|2|6|y|1|x|3|x");
    assert_eq!(r.q("20|>=|1|1|10|0|F|=|0|1"), "0|2|1|x|2|y|6|y");
    assert_eq!(r.q("20|>=|1|1|10|0|W|<|0|2"), "0|2|1|x|2|y");
    assert_eq!(r.q("20|>=|1|1|10|0|F|=|1|~"), "0|2|1|x|4|x");
    assert_eq!(r.q("20|>=|1|1|2|1|F|>|1|~"), "0|2|3|x|5|a");
}

#[test]
fn modify_needs_a_primary_or_unique_not_null_key() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_cons_keyless");
    exec(
        &mut sql,
        "CREATE TABLE nokey (a INT, b VARCHAR(10), KEY ka (a))",
    );
    exec(
        &mut sql,
        "CREATE TABLE nullable_unique (a INT, b VARCHAR(10), UNIQUE KEY ua (a))",
    );
    exec(
        &mut sql,
        "CREATE TABLE notnull_unique (a INT NOT NULL, b VARCHAR(10), UNIQUE KEY ua (a), KEY kb (b))",
    );
    for t in ["nokey", "nullable_unique", "notnull_unique"] {
        exec(
            &mut sql,
            &format!("INSERT INTO {t} VALUES (1, 'x'), (2, 'y')"),
        );
    }
    let hsd = Hsd::start(&url, &[]);
    let mut w = hsd.writer();
    for (i, t) in ["nokey", "nullable_unique"].iter().enumerate() {
        let idx = if *t == "nokey" { "ka" } else { "ua" };
        assert_eq!(
            w.q(&format!("P|{i}|hsdt_cons_keyless|{t}|{idx}|a,b")),
            "0|1"
        );
        // Reads and inserts work; a modify answers an error and changes nothing.
        assert_eq!(w.q(&format!("{i}|=|1|1")), "0|2|1|x");
        assert_eq!(w.q(&format!("{i}|+|2|3|z")), "0|1");
        let err = w.q(&format!("{i}|=|1|1|1|0|U|1|changed"));
        assert_eq!(err, "1|1|1173", "{t}: no key to modify rows by");
        assert_eq!(w.q(&format!("{i}|=|1|2|1|0|D")), err, "{t}");
        assert_eq!(
            scalar(
                &mut sql,
                &format!("SELECT GROUP_CONCAT(b ORDER BY a) FROM {t}")
            ),
            "x,y,z"
        );
    }
    // A UNIQUE key on NOT NULL columns identifies rows: modify works, by any index.
    assert_eq!(w.q("P|5|hsdt_cons_keyless|notnull_unique|kb|a,b"), "0|1");
    assert_eq!(w.q("5|=|1|x|1|0|U|1|changed"), "0|1|1");
    assert_eq!(w.q("5|=|1|y|1|0|D?"), "0|2|2|y");
    assert_eq!(
        scalar(
            &mut sql,
            "SELECT GROUP_CONCAT(b ORDER BY a) FROM notnull_unique"
        ),
        "changed"
    );
}

#[test]
fn modify_forms_and_insert_ids() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_cons_modify");
    exec(
        &mut sql,
        "CREATE TABLE m (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
         name VARCHAR(10) NOT NULL, n INT, UNIQUE KEY uname (name)) AUTO_INCREMENT = 1000",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut w = hsd.writer();
    assert_eq!(w.q("P|0|hsdt_cons_modify|m|PRIMARY|id,name,n"), "0|1");
    assert_eq!(w.q("P|1|hsdt_cons_modify|m|uname|name,n"), "0|1");
    assert_eq!(w.q("P|2|hsdt_cons_modify|m|uname|n"), "0|1");
    assert_eq!(w.q("1|+|2|a|1"), "0|1|1000");
    assert_eq!(w.q("1|+|2|b|2"), "0|1|1001");
    // An explicit auto-increment value is stored and answered with id 0
    // (nothing was generated); InnoDB's counter moves past it.
    assert_eq!(w.q("0|+|3|5000|c|3"), "0|1|0", "an explicit id");
    assert_eq!(w.q("1|+|2|d|-4"), "0|1|5001");
    // The duplicate uses up id 5002, as InnoDB does for the original too.
    assert_eq!(w.q("1|+|2|a|9"), "1|1|121", "duplicate key");
    // NULL into NOT NULL: the id is generated, the name is ''.
    assert_eq!(w.q("0|+|3|~|~|1"), "0|1|5003", "NULL into NOT NULL");
    let e = w.q("1|+|1|e");
    assert!(
        e.starts_with("0|1|500"),
        "missing columns take defaults: {e}"
    );
    // Pipelined writes commit together; one failing does not fail the others.
    let lines: Vec<String> = ["1|+|2|f|6", "1|+|2|a|0", "1|+|2|g|7"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let got = w.pipeline(&lines);
    assert!(
        got[0].starts_with("0|1|500") && got[2].starts_with("0|1|500"),
        "{got:?}"
    );
    assert_eq!(got[1], "1|1|121");
    assert_eq!(
        scalar(&mut sql, "SELECT GROUP_CONCAT(name ORDER BY id) FROM m"),
        "a,b,c,d,,e,f,g"
    );
    assert_eq!(w.q("1|=|1|a|1|0|U?|a|10"), "0|2|a|1");
    assert_eq!(w.q("2|=|1|a|1|0|+?|5"), "0|1|10");
    assert_eq!(w.q("2|=|1|a|1|0|-|3"), "0|1|1");
    assert_eq!(w.q("1|=|1|a"), "0|2|a|12");
    assert_eq!(w.q("2|=|1|d|1|0|-|1"), "0|1|1", "negative stays negative");
    assert_eq!(w.q("2|=|1|b|1|0|-|5"), "0|1|0", "sign change: not modified");
    assert_eq!(w.q("1|=|1|d"), "0|2|d|-5");
    assert_eq!(w.q("1|=|1|x|10|0|@|0|3|b|c|zz|D?"), "0|2|b|2|c|3");
    assert_eq!(w.q("0|>|1|0|100|0|D"), "0|1|6");
    assert_eq!(scalar(&mut sql, "SELECT COUNT(*) FROM m"), "0");
    // An update to a duplicate key is refused like an insert.
    assert!(w.q("1|+|2|p|1").starts_with("0|1|"));
    assert!(w.q("1|+|2|q|1").starts_with("0|1|"));
    assert_eq!(w.q("1|=|1|q|1|0|U|p|1"), "1|1|121");
}

#[test]
fn grouped_scans_answer_as_they_do_alone() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_cons_grouped");
    exec(
        &mut sql,
        "CREATE TABLE g (id INT NOT NULL PRIMARY KEY, a INT, b VARCHAR(5) NOT NULL,
         KEY ka (a), KEY kab (a, b), UNIQUE KEY ub (b, id))",
    );
    let values: Vec<String> = (1..=200)
        .map(|n| {
            let a = if n % 17 == 0 {
                "NULL".to_string()
            } else {
                (n % 13).to_string()
            };
            format!("({n}, {a}, '{}')", ["x", "y", "X", "z ", "w"][n % 5])
        })
        .collect();
    exec(
        &mut sql,
        &format!("INSERT INTO g VALUES {}", values.join(", ")),
    );
    let hsd = Hsd::start(&url, &[]);
    let mut c = hsd.reader();
    assert_eq!(c.q("P|0|hsdt_cons_grouped|g|ka|id,a,b|a,b"), "0|1");
    assert_eq!(c.q("P|1|hsdt_cons_grouped|g|kab|id|a,b"), "0|1");
    assert_eq!(c.q("P|2|hsdt_cons_grouped|g|ub|id,b"), "0|1");
    assert_eq!(c.q("P|3|hsdt_cons_grouped|g|PRIMARY|id,a"), "0|1");
    // A deterministic mix: every op, limits, offsets, NULL keys, filters, IN.
    let ops = ["=", ">=", ">", "<", "<="];
    let mut lines = Vec::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for _ in 0..300 {
        let op = ops[rnd(5) as usize];
        let key = if rnd(10) == 0 {
            "~".to_string()
        } else {
            rnd(14).to_string()
        };
        let limit = 1 + rnd(4);
        let offset = rnd(3);
        let line = match rnd(8) {
            0 => format!("0|{op}|1|{key}|{limit}|{offset}"),
            1 => format!("0|{op}|1|{key}|{limit}|{offset}|F|=|1|x"),
            2 => format!("0|{op}|1|{key}|{limit}|{offset}|W|!=|0|{}", rnd(13)),
            3 => format!(
                "1|{op}|2|{key}|{}|{limit}|{offset}",
                ["x", "y", "X", "z"][rnd(4) as usize]
            ),
            4 => format!(
                "0|{op}|1|{key}|{limit}|{offset}|@|0|3|{}|{}|~",
                rnd(13),
                rnd(13)
            ),
            5 => format!(
                "2|{op}|2|{}|{}",
                ["x", "y", "z", "Z"][rnd(4) as usize],
                rnd(200)
            ),
            6 => format!("3|=|1|{}", rnd(210)),
            _ => format!("3|{op}|1|{}|{limit}|{offset}|F|>|0|{}", rnd(210), rnd(13)),
        };
        lines.push(line);
    }
    let before = global_status(&mut sql, "Com_stmt_execute");
    let alone: Vec<String> = lines.iter().map(|l| c.q(l)).collect();
    let middle = global_status(&mut sql, "Com_stmt_execute");
    for round in 0..3 {
        let together = c.pipeline(&lines);
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(together[i], alone[i], "round {round}: {l}");
        }
    }
    let after = global_status(&mut sql, "Com_stmt_execute");
    eprintln!(
        "{} scans: {} statements alone, {} per pipelined round",
        lines.len(),
        middle - before,
        (after - middle) / 3
    );
    // Some of them must have found rows, or this proves little.
    assert!(alone.iter().filter(|r| r.split('|').count() > 3).count() > 150);
}
