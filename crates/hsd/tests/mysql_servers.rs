//! What differs between the two servers the MySQL backend serves, MariaDB
//! (scripts/mariadb.sh) and MySQL 8 (scripts/mysql8.sh): each test runs on
//! both and says what each answers. JSON columns, static and generated
//! defaults, an idle link the server closed, CHECK constraints, the write
//! time bound, and refusals of servers hsd does not support.

mod common;
use common::blocking::*;
use mysql::prelude::Queryable;
use std::time::{Duration, Instant};

/// Both servers' URLs: (MariaDB, MySQL 8). In CI both must be there.
fn servers() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(u) = common::mysql_url() {
        out.push(("mariadb", u));
    }
    if let Some(u) = common::mysql8_url() {
        out.push(("mysql8", u));
    }
    out
}

#[test]
fn json_columns_store_valid_json_and_refuse_the_rest() {
    let Some(url) = common::mysql8_url() else {
        return;
    };
    let mut sql = fresh_db(&url, "hsdt_json");
    exec(
        &mut sql,
        "CREATE TABLE j (id INT PRIMARY KEY, doc JSON, n INT, tag VARCHAR(10) DEFAULT 'none')",
    );
    exec(
        &mut sql,
        "INSERT INTO j VALUES (1, '{\"a\": [1, 2]}', 1, 'x')",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut w = hsd.writer();
    assert_eq!(w.q("P|0|hsdt_json|j|PRIMARY|id,doc,n"), "0|1");
    // Reads: MySQL's own text form.
    assert_eq!(w.q("0|=|1|1"), "0|3|1|{\"a\": [1, 2]}|1");
    // Valid JSON is stored, as MySQL normalises it.
    assert_eq!(w.q("0|+|3|2|{\"b\":true,  \"a\":null}|2"), "0|1");
    assert_eq!(w.q("0|=|1|2"), "0|3|2|{\"a\": null, \"b\": true}|2");
    // Invalid JSON: an error (3140), nothing stored.
    assert_eq!(w.q("0|+|3|3|{nope|3"), "1|1|3140");
    assert_eq!(w.q("0|=|1|3"), "0|3");
    assert_eq!(scalar(&mut sql, "SELECT COUNT(*) FROM j WHERE id = 3"), "0");
    // An insert that leaves the column out stores its default (NULL): a
    // JSON column has no zero value to store.
    assert_eq!(w.q("P|1|hsdt_json|j|PRIMARY|id,n"), "0|1");
    assert_eq!(w.q("1|+|2|4|4"), "0|1");
    assert_eq!(w.q("0|=|1|4"), "0|3|4|~|4");
    // Updates: valid JSON stored, invalid refused and the row unchanged.
    assert_eq!(w.q("0|=|1|2|1|0|U|2|[1,\"x\"]|5"), "0|1|1");
    assert_eq!(w.q("0|=|1|2"), "0|3|2|[1, \"x\"]|5");
    assert_eq!(w.q("0|=|1|2|1|0|U|2|[1,|6"), "1|1|3140");
    assert_eq!(w.q("0|=|1|2"), "0|3|2|[1, \"x\"]|5");
    // +/- on a JSON column: as on any non-numeric column, the text is read
    // as a number (a document reads as 0, the JSON number 7 as 7) and the
    // sum stored, here as a JSON number.
    assert_eq!(w.q("P|2|hsdt_json|j|PRIMARY|doc"), "0|1");
    assert_eq!(w.q("2|=|1|2|1|0|+|3"), "0|1|1");
    assert_eq!(w.q("0|=|1|2"), "0|3|2|3|5");
    assert_eq!(w.q("2|=|1|2|1|0|+|4"), "0|1|1");
    assert_eq!(w.q("0|=|1|2"), "0|3|2|7|5");
    // 7 - 10 would change the sign: left alone, as on any column.
    assert_eq!(w.q("2|=|1|2|1|0|-|10"), "0|1|0");
    assert_eq!(w.q("2|=|1|2|1|0|-|7"), "0|1|1");
    assert_eq!(w.q("0|=|1|2"), "0|3|2|0|5");
    // And SQL sees JSON values, not text.
    assert_eq!(
        scalar(&mut sql, "SELECT JSON_TYPE(doc) FROM j WHERE id = 2"),
        "INTEGER"
    );
    // A table with a JSON column takes writes that leave it out, too.
    assert_eq!(w.q("1|=|1|1|1|0|U|1|9"), "0|1|1");
    assert_eq!(w.q("1|=|1|1|1|0|D"), "0|1|1");
}

/// The same table, the same requests, the same answers on both servers:
/// static defaults stored, expressions and NULL defaults as the original
/// stored them (the type's zero value), generated columns computed by the
/// server, never written.
#[test]
fn defaults_on_insert_are_the_same_on_both_servers() {
    let mut answers = Vec::new();
    for (name, url) in servers() {
        let mut sql = fresh_db(&url, "hsdt_defaults");
        exec(
            &mut sql,
            "CREATE TABLE d (
               id INT PRIMARY KEY,
               name VARCHAR(20) NOT NULL DEFAULT 'dflt',
               quoted VARCHAR(20) DEFAULT 'it''s',
               word VARCHAR(20) DEFAULT 'NULL',
               n INT DEFAULT 7,
               neg DECIMAL(5,2) DEFAULT -1.5,
               vb VARBINARY(4) DEFAULT 0x41,
               b BIT(3) DEFAULT b'101',
               e ENUM('p','q') NOT NULL,
               e2 ENUM('p','q') DEFAULT 'q',
               nul INT DEFAULT NULL,
               nothing VARCHAR(5),
               ts TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP,
               dt DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
               twice INT AS (n * 2) VIRTUAL,
               plus INT AS (n + 1) STORED
             )",
        );
        let hsd = Hsd::start(&url, &[]);
        let mut w = hsd.writer();
        assert_eq!(w.q("P|0|hsdt_defaults|d|PRIMARY|id"), "0|1");
        assert_eq!(w.q("0|+|1|1"), "0|1", "{name}");
        // A generated column opened and written: the value is not stored.
        assert_eq!(w.q("P|1|hsdt_defaults|d|PRIMARY|id,n,twice"), "0|1");
        assert_eq!(w.q("1|+|3|2|5|99"), "0|1", "{name}");
        assert_eq!(w.q("1|=|1|2|1|0|U|2|6|98"), "0|1|1", "{name}");
        let cols = "id,name,quoted,word,n,neg,vb,b,e,e2,nul,nothing,ts,dt,twice,plus";
        assert_eq!(w.q(&format!("P|2|hsdt_defaults|d|PRIMARY|{cols}")), "0|1");
        // Row 2 was updated: its dt took ON UPDATE's time, so leave it out.
        let no_dt = cols.replace(",dt,", ",");
        assert_eq!(w.q(&format!("P|3|hsdt_defaults|d|PRIMARY|{no_dt}")), "0|1");
        let got = (w.q("2|=|1|1"), w.q("3|=|1|2"));
        answers.push((name, got));
    }
    // b'101' reads as the byte 0x05.
    let want = (
        "0|16|1|dflt|it's|NULL|7|-1.50|A|\u{5}|p|q|0||0000-00-00 00:00:00|0000-00-00 00:00:00.000|14|8"
            .replace('|', "\t"),
        "0|15|2|dflt|it's|NULL|6|-1.50|A|\u{5}|p|q|0||0000-00-00 00:00:00|12|7"
            .replace('|', "\t"),
    );
    for (name, got) in &answers {
        assert_eq!(
            got.0.replace('|', "\t"),
            want.0,
            "{name}: insert of the key alone"
        );
        assert_eq!(
            got.1.replace('|', "\t"),
            want.1,
            "{name}: generated columns"
        );
    }
}

/// A server that closes idle connections (wait_timeout; MySQL 8.0.24+
/// says why first, error 4031): every kind of request on a link it closed
/// reconnects and answers as if nothing happened.
#[test]
fn an_idle_link_the_server_closed_is_reconnected_for_every_request_kind() {
    for (name, url) in servers() {
        let mut sql = fresh_db(&url, "hsdt_idle");
        exec(
            &mut sql,
            "CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR(10), n INT, KEY vk (v))",
        );
        exec(
            &mut sql,
            "INSERT INTO t VALUES (1,'a',1),(2,'b',2),(3,'c',3)",
        );
        // An account whose sessions time out after 1 s of idleness: the
        // server runs init_connect for accounts without the admin
        // privileges, and only this one gets the short timeout.
        exec(&mut sql, "DROP USER IF EXISTS 'hsd_idle'@'127.0.0.1'");
        exec(
            &mut sql,
            "CREATE USER 'hsd_idle'@'127.0.0.1' IDENTIFIED BY 'idle'",
        );
        exec(
            &mut sql,
            "GRANT SELECT, INSERT, UPDATE, DELETE ON hsdt_idle.* TO 'hsd_idle'@'127.0.0.1'",
        );
        exec(
            &mut sql,
            "GRANT SELECT ON mysql.* TO 'hsd_idle'@'127.0.0.1'",
        );
        exec(
            &mut sql,
            "SET GLOBAL init_connect = \
             'SET SESSION wait_timeout = \
             CAST(IF(USER() LIKE ''hsd_idle@%'', 1, @@SESSION.wait_timeout) AS UNSIGNED)'",
        );
        let idle_url = url.replacen("hsd:hsd@", "hsd_idle:idle@", 1);
        let hsd = Hsd::start(&idle_url, &["--mysql-pool", "1"]);
        let mut w = hsd.writer();
        let mut r = hsd.reader();
        let connections = |sql: &mut mysql::Conn| {
            scalar(
                sql,
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'hsd_idle'",
            )
        };
        let steps = [
            (false, "P|0|hsdt_idle|t|PRIMARY|k,v,n|n", "0|1"),
            (false, "0|=|1|2", "0|3|2|b|2"),
            (false, "0|>=|1|1|10|0|F|>|0|1", "0|3|2|b|2|3|c|3"),
            (false, "P|1|hsdt_idle|t|vk|v", "0|1"),
            (false, "1|=|1|c", "0|1|c"),
            (true, "P|2|hsdt_idle|t|PRIMARY|k,v,n", "0|1"),
            (true, "2|+|3|4|d|4", "0|1"),
            (true, "P|3|hsdt_idle|t|PRIMARY|n", "0|1"),
            (true, "3|=|1|4|1|0|+|10", "0|1|1"),
            (true, "2|=|1|1|1|0|D", "0|1|1"),
        ];
        for (write, request, want) in steps {
            let c = if write { &mut w } else { &mut r };
            // Until the server has closed every link of the account.
            let deadline = Instant::now() + Duration::from_secs(20);
            std::thread::sleep(Duration::from_millis(1100));
            while connections(&mut sql) != "0" {
                assert!(
                    Instant::now() < deadline,
                    "{name}: the server kept hsd's idle links open"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            assert_eq!(c.q(request), want, "{name}: {request} on a closed link");
        }
        assert_eq!(
            rows(&mut sql, "SELECT k, n FROM t ORDER BY k"),
            vec![
                vec![Some(b"2".to_vec()), Some(b"2".to_vec())],
                vec![Some(b"3".to_vec()), Some(b"3".to_vec())],
                vec![Some(b"4".to_vec()), Some(b"14".to_vec())],
            ],
            "{name}"
        );
        exec(&mut sql, "SET GLOBAL init_connect = ''");
        exec(&mut sql, "DROP USER 'hsd_idle'@'127.0.0.1'");
    }
}

/// CHECK constraints: MariaDB's are turned off for hsd's session (the
/// original wrote below them); MySQL has no such switch, so there the
/// server enforces them and a violating write answers 3819
/// (ER_CHECK_CONSTRAINT_VIOLATED), storing nothing.
#[test]
fn check_constraints_are_the_servers() {
    for (name, url) in servers() {
        let mut sql = fresh_db(&url, "hsdt_check");
        exec(
            &mut sql,
            "CREATE TABLE c (k INT PRIMARY KEY, n INT, CONSTRAINT positive CHECK (n > 0))",
        );
        let hsd = Hsd::start(&url, &[]);
        let mut w = hsd.writer();
        assert_eq!(w.q("P|0|hsdt_check|c|PRIMARY|k,n"), "0|1");
        assert_eq!(w.q("0|+|2|1|5"), "0|1");
        let mysql = common::is_mysql(&url);
        let (insert, update) = if mysql {
            ("1|1|3819", "1|1|3819")
        } else {
            ("0|1", "0|1|1")
        };
        assert_eq!(w.q("0|+|2|2|-1"), insert, "{name}: insert");
        assert_eq!(w.q("0|=|1|1|1|0|U|1|-7"), update, "{name}: update");
        let stored = rows(&mut sql, "SELECT k, n FROM c ORDER BY k");
        let want: Vec<Vec<Option<Vec<u8>>>> = if mysql {
            vec![vec![Some(b"1".to_vec()), Some(b"5".to_vec())]]
        } else {
            vec![
                vec![Some(b"1".to_vec()), Some(b"-7".to_vec())],
                vec![Some(b"2".to_vec()), Some(b"-1".to_vec())],
            ]
        };
        assert_eq!(stored, want, "{name}");
    }
}

/// Writes have a time bound on both servers: a row lock held elsewhere
/// makes a write wait `innodb_lock_wait_timeout` (--mysql-timeout less a
/// second, here 1 s) and answer the lock wait timeout (1 1 146), long
/// before the link's own timeout.
#[test]
fn a_write_waits_for_a_row_lock_at_most_the_lock_wait_timeout() {
    for (name, url) in servers() {
        let mut sql = fresh_db(&url, "hsdt_lockwait");
        exec(&mut sql, "CREATE TABLE t (k INT PRIMARY KEY, n INT)");
        exec(&mut sql, "INSERT INTO t VALUES (1, 1)");
        let hsd = Hsd::start(&url, &["--mysql-timeout", "2"]);
        let mut w = hsd.writer();
        assert_eq!(w.q("P|0|hsdt_lockwait|t|PRIMARY|k,n"), "0|1");
        let mut holder = sql_conn(&url);
        holder.query_drop("USE hsdt_lockwait").expect("use");
        holder.query_drop("BEGIN").expect("begin");
        holder
            .query_drop("SELECT * FROM t WHERE k = 1 FOR UPDATE")
            .expect("lock the row");
        let started = Instant::now();
        let got = w.q("0|=|1|1|1|0|U|1|2");
        let waited = started.elapsed();
        holder.query_drop("ROLLBACK").expect("rollback");
        assert_eq!(got, "1|1|146", "{name}");
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_millis(1900),
            "{name}: waited {waited:?}"
        );
        assert_eq!(w.q("0|=|1|1|1|0|U|1|2"), "0|1|1", "{name}: after the lock");
    }
}

/// The caching_sha2_password exchange with a real MySQL 8 whose cache is
/// empty (FLUSH PRIVILEGES): over TLS the password goes as it is; over a
/// plain link it goes only to a key the URL allows (fetched, or pinned),
/// and without either the login is refused with what to configure.
#[test]
fn caching_sha2_full_authentication_follows_the_url() {
    let Some(url) = common::mysql8_url() else {
        return;
    };
    let mut sql = sql_conn(&url);
    let key_path = std::env::temp_dir().join(format!("hsd-mysql8-key-{}.pem", std::process::id()));
    let pem: Option<(String, String)> = sql
        .query_first("SHOW STATUS LIKE 'Caching_sha2_password_rsa_public_key'")
        .expect("the server's public key");
    let (_, pem) = pem.expect("a public key");
    std::fs::write(&key_path, &pem).expect("write the key");
    let key_arg = format!("server-public-key-path={}", key_path.display());
    let cases = [
        ("", true),
        ("ssl-mode=REQUIRED", true),
        ("ssl-mode=DISABLED", false),
        ("ssl-mode=DISABLED&get-server-public-key=true", true),
        (key_arg.as_str(), true),
    ];
    for (options, works) in cases {
        let plain = options.contains("DISABLED") || options.starts_with("server-public");
        let options = if options.starts_with("server-public") {
            format!("ssl-mode=DISABLED&{options}")
        } else {
            options.to_string()
        };
        // An empty cache: the next login is a full authentication.
        exec(&mut sql, "FLUSH PRIVILEGES");
        let target = if options.is_empty() {
            url.clone()
        } else {
            format!("{url}?{options}")
        };
        let run = common::run_hsd(
            &[
                "serve",
                "--address",
                "127.0.0.1",
                "--port",
                "0",
                "--port-wr",
                "0",
                "--data-dir",
                std::env::temp_dir().to_str().expect("temp dir"),
                "--backend",
                &target,
            ],
            &[],
        );
        if works {
            assert!(run.ready.is_some(), "{options}: {}", run.stderr);
            assert!(
                run.stderr.contains(&format!("tls={}", !plain)),
                "{options}: {}",
                run.stderr
            );
        } else {
            assert!(run.ready.is_none(), "{options} logged in");
            assert!(
                run.stderr.contains("server-public-key-path=FILE")
                    && run.stderr.contains("get-server-public-key=true"),
                "{options}: {}",
                run.stderr
            );
            assert!(!run.stderr.contains("hsd:hsd"), "the password in a message");
        }
    }
    let _ = std::fs::remove_file(&key_path);
}
