//! Rows found again exactly, whatever their key's type: a modify reads a
//! row with its locator (primary or unique key values) and changes it by
//! that locator, so the locator must name the stored value, not its text
//! (a FLOAT's `1.1` is not the single-precision value it stores, a BIT's
//! text is raw bytes). Per type class, the same lines go to the original
//! plugin and to hsd on two copies of one table, one at a time and then
//! pipelined as one group: answers and rows must be equal, and the
//! plugin's answers say each modify found and changed its rows.

mod common;

use common::{Backend, TestServer};
use hs_conformance::generate::Port;
use hs_conformance::target::{self, Endpoint};

/// One key type: the table's columns after `k`'s definition, its three
/// rows' keys as SQL, the index `P` opens, the three keys as a client
/// sends them (tab-separated for a key of two columns), a key below all
/// of them for a walk, and how the rows are shown for comparison.
struct Case {
    name: &'static str,
    columns: &'static str,
    rows: [&'static str; 3],
    index: &'static str,
    keys: [&'static str; 3],
    low: &'static str,
    show: &'static str,
    engine: &'static str,
}

const fn case(
    name: &'static str,
    columns: &'static str,
    rows: [&'static str; 3],
    keys: [&'static str; 3],
    low: &'static str,
) -> Case {
    Case {
        name,
        columns,
        rows,
        index: "PRIMARY",
        keys,
        low,
        show: "HEX(k)",
        engine: "InnoDB",
    }
}

fn cases() -> Vec<Case> {
    vec![
        case(
            "float",
            "k FLOAT PRIMARY KEY",
            ["1.1", "2.5", "3.3"],
            ["1.1", "2.5", "3.3"],
            "0",
        ),
        case(
            "float_m_d",
            "k FLOAT(7,4) PRIMARY KEY",
            ["1.1", "2.5", "3.3"],
            ["1.1", "2.5", "3.3"],
            "0",
        ),
        Case {
            index: "uk",
            ..case(
                "float_unique",
                "k FLOAT NOT NULL, UNIQUE KEY uk (k)",
                ["0.1", "-7.7", "1e20"],
                ["0.1", "-7.7", "1e20"],
                "-100",
            )
        },
        case(
            "double",
            "k DOUBLE PRIMARY KEY",
            ["0.1", "0.30000000000000004", "1e300"],
            ["0.1", "0.30000000000000004", "1e300"],
            "0",
        ),
        case(
            "decimal_past_double",
            "k DECIMAL(30,0) PRIMARY KEY",
            [
                "12345678901234567890",
                "12345678901234567891",
                "12345678901234567892",
            ],
            [
                "12345678901234567890",
                "12345678901234567891",
                "12345678901234567892",
            ],
            "0",
        ),
        case(
            "decimal_scale",
            "k DECIMAL(6,3) PRIMARY KEY",
            ["1.5", "-2.25", "999.999"],
            ["1.5", "-2.25", "999.999"],
            "-1000",
        ),
        // The plugin stores a key's bytes into the BIT column: "1" is 49.
        case(
            "bit8",
            "k BIT(8) PRIMARY KEY",
            ["49", "50", "65"],
            ["1", "2", "A"],
            "0",
        ),
        // "x" is 120, which BIT(5) keeps as 31.
        case(
            "bit5",
            "k BIT(5) PRIMARY KEY",
            ["1", "2", "31"],
            ["x", "x", "x"],
            "",
        ),
        case(
            "datetime6",
            "k DATETIME(6) PRIMARY KEY",
            [
                "'2020-01-01 00:00:00.000001'",
                "'2020-01-01 00:00:00.5'",
                "'2021-02-03 04:05:06'",
            ],
            [
                "2020-01-01 00:00:00.000001",
                "2020-01-01 00:00:00.5",
                "2021-02-03 04:05:06",
            ],
            "2000-01-01",
        ),
        case(
            "timestamp3",
            "k TIMESTAMP(3) NOT NULL PRIMARY KEY",
            [
                "'2020-01-01 00:00:00.001'",
                "'2020-06-01 12:00:00'",
                "'2030-01-01 00:00:00.999'",
            ],
            [
                "2020-01-01 00:00:00.001",
                "2020-06-01 12:00:00",
                "2030-01-01 00:00:00.999",
            ],
            "2000-01-01",
        ),
        case(
            "time2",
            "k TIME(2) PRIMARY KEY",
            ["'-01:00:00.5'", "'00:00:00.01'", "'838:59:59'"],
            ["-01:00:00.5", "00:00:00.01", "838:59:59"],
            "-838:00:00",
        ),
        case(
            "date",
            "k DATE PRIMARY KEY",
            ["'0000-00-00'", "'2020-02-29'", "'9999-12-31'"],
            ["0000-00-00", "2020-02-29", "9999-12-31"],
            "0000-00-00",
        ),
        case(
            "year",
            "k YEAR PRIMARY KEY",
            ["0", "1999", "2020"],
            ["0000", "1999", "2020"],
            "0",
        ),
        case(
            "enum",
            "k ENUM('b','a','c') PRIMARY KEY",
            ["'b'", "'a'", "'c'"],
            ["b", "a", "c"],
            "",
        ),
        case(
            "set",
            "k SET('a','b','c') PRIMARY KEY",
            ["'a'", "'a,b'", "'c'"],
            ["a", "a,b", "c"],
            "",
        ),
        case(
            "char_trailing_spaces",
            "k CHAR(5) PRIMARY KEY",
            ["'a'", "'b  '", "'c'"],
            ["a", "b", "c "],
            "",
        ),
        case(
            "varchar_ci_pad",
            "k VARCHAR(10) COLLATE utf8mb4_general_ci PRIMARY KEY",
            ["'a '", "'B'", "'c  '"],
            ["A", "b ", "c"],
            "",
        ),
        case(
            "varchar_nopad",
            "k VARCHAR(10) COLLATE utf8mb4_nopad_bin PRIMARY KEY",
            ["'a'", "'a '", "'a  '"],
            ["a ", "a", "a  "],
            "",
        ),
        case(
            "latin1",
            "k VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_german1_ci PRIMARY KEY",
            ["X'E9'", "X'C4'", "'z'"],
            ["\u{e9}", "\u{c4}", "z"],
            "",
        ),
        case(
            "binary",
            "k BINARY(4) PRIMARY KEY",
            ["'a'", "'b'", "'ab'"],
            ["a", "b", "ab"],
            "",
        ),
        case(
            "varbinary_trailing",
            "k VARBINARY(8) PRIMARY KEY",
            ["'a'", "'a '", "'b'"],
            ["a", "a ", "b"],
            "",
        ),
        Case {
            index: "us",
            ..case(
                "prefix_unique",
                "k VARCHAR(20) NOT NULL, UNIQUE KEY us (k(3))",
                ["'abcdef'", "'abd'", "'xyz12'"],
                ["abc", "abd", "xyz"],
                "",
            )
        },
        case(
            "float_in_two_columns",
            "a INT NOT NULL, k FLOAT NOT NULL, PRIMARY KEY (a, k)",
            ["1.1", "2.2", "3.3"],
            ["1\t1.1", "1\t2.2", "1\t3.3"],
            "1",
        ),
    ]
}

fn endpoint(name: &str, read: String, write: String, db: &str) -> Endpoint {
    Endpoint {
        name: name.into(),
        read_addr: read,
        write_addr: write,
        db: db.into(),
    }
}

/// The lines a case sends: opens, then single-row modifies of each kind
/// and walks over every row.
fn lines(c: &Case, db: &str) -> (Vec<String>, Vec<String>) {
    let nkeys = |k: &str| k.split('\t').count();
    let key = |k: &str| format!("{}\t{k}", nkeys(k));
    let opens = vec![
        format!("P\t1\t{db}\tt\t{}\tn", c.index),
        format!("P\t2\t{db}\tt\t{}\tn,m", c.index),
    ];
    let [k1, k2, k3] = c.keys;
    let low = if nkeys(k1) > 1 {
        format!("1\t{}", c.low)
    } else {
        key(c.low)
    };
    let modifies = vec![
        format!("1\t=\t{}\t1\t0\t+\t1", key(k1)),
        format!("1\t=\t{}\t1\t0\tU?\t7", key(k2)),
        format!("1\t=\t{}\t1\t0\t-?\t1", key(k1)),
        format!("1\t>=\t{low}\t10\t0\t+\t10"),
        format!("2\t=\t{}\t1\t0\tU\t3\t4", key(k3)),
        format!("2\t>=\t{low}\t10\t0\t-?\t2\t1"),
        format!("1\t=\t{}\t1\t0\tD", key(k2)),
        format!("1\t>=\t{low}\t10\t0\tU?\t5"),
        format!("2\t>=\t{low}\t10\t0\tD?"),
    ];
    (opens, modifies)
}

/// Creates the case's table in `db` with its rows (`n` 0, `m` 100).
fn create(server: &TestServer, c: &Case, db: &str) {
    server.sql(&format!("DROP TABLE IF EXISTS `{db}`.t"));
    server.sql(&format!(
        "CREATE TABLE `{db}`.t ({}, n INT NOT NULL DEFAULT 0, m INT NOT NULL DEFAULT 100) \
         ENGINE={}",
        c.columns, c.engine
    ));
    // The two-column case: `a` is 1 for every row.
    let two = c.columns.starts_with("a INT");
    for r in c.rows {
        let (cols, values) = if two {
            ("a, k", format!("1, {r}"))
        } else {
            ("k", r.to_string())
        };
        server.sql(&format!("INSERT INTO `{db}`.t ({cols}) VALUES ({values})"));
    }
}

fn rows(server: &TestServer, c: &Case, db: &str) -> Vec<Vec<Option<String>>> {
    server.sql(&format!("SELECT {}, n, m FROM `{db}`.t ORDER BY k", c.show))
}

/// A line's bytes: a latin1 case's keys are latin1 (every character below
/// U+0100 one byte), the others UTF-8.
fn bytes(c: &Case, line: &str) -> Vec<u8> {
    if c.name == "latin1" {
        line.chars().map(|ch| ch as u32 as u8).collect()
    } else {
        line.as_bytes().to_vec()
    }
}

fn text(answers: Vec<Vec<u8>>) -> Vec<String> {
    answers
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Sends the case's lines one at a time, then again (on fresh rows) as one
/// pipelined group; the answers of both rounds.
fn run(server: &TestServer, c: &Case, e: &Endpoint, db: &str) -> Vec<Vec<String>> {
    let (opens, modifies) = lines(c, db);
    let mut out = Vec::new();
    for pipelined in [false, true] {
        create(server, c, db);
        let mut conn = target::open(e, Port::Write).expect("connect");
        for p in &opens {
            let answer = conn.request(p.as_bytes()).expect("P");
            assert_eq!(answer, b"0\t1", "{}: {p}", c.name);
        }
        let lines: Vec<Vec<u8>> = modifies.iter().map(|l| bytes(c, l)).collect();
        let answers = if pipelined {
            let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
            conn.pipeline(&refs).expect("answers")
        } else {
            lines
                .iter()
                .map(|l| conn.request(l).expect("answer"))
                .collect()
        };
        let mut answers = text(answers);
        // The rows left after the round, as one more "answer".
        answers.push(format!("{:?}", rows(server, c, db)));
        out.push(answers);
    }
    out
}

#[test]
fn modifies_find_their_rows_again_exactly_for_every_key_type() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(server) = TestServer::start(Backend::Mysql, "hst_locators", &[]) else {
        return;
    };
    let orig = "hst_locators_orig";
    server.sql(&format!("DROP DATABASE IF EXISTS {orig}"));
    server.sql(&format!("CREATE DATABASE {orig}"));
    let plugin = endpoint(
        "plugin",
        format!("127.0.0.1:{}", ports.0),
        format!("127.0.0.1:{}", ports.1),
        orig,
    );
    let hsd = endpoint(
        "hsd",
        server.read_addr.clone(),
        server.write_addr.clone(),
        &server.db,
    );
    let mut failures = Vec::new();
    for c in cases() {
        let want = run(&server, &c, &plugin, orig);
        let got = run(&server, &c, &hsd, &server.db);
        // The cases happened: the plugin's first modify found and changed
        // its row (a table where nothing changes would also agree).
        if want[0][0] != "0\t1\t1" {
            failures.push(format!("{}: the plugin's answers {want:?}", c.name));
        } else if got != want {
            failures.push(format!(
                "{}:\n  plugin {:?}\n  hsd    {:?}",
                c.name, want, got
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
