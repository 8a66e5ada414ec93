//! MySQL backend: values round-trip as the server handles them. Reads must
//! give exactly the text `SELECT col` gives a mysql client; writes must store
//! what a non-strict `INSERT ... VALUES ('<string>')` stores; utf8mb4 and
//! binary columns are byte-exact; comparisons use the server's collations.

mod common;
use common::blocking::*;
use common::mysql_url;

const TYPES_TABLE: &str = "CREATE TABLE ty (
    id INT NOT NULL PRIMARY KEY,
    f FLOAT, d DOUBLE, dc DECIMAL(12,3), dcu DECIMAL(5,0) UNSIGNED,
    dt DATETIME, dt6 DATETIME(6), da DATE, ti TIME, ti3 TIME(3), ts TIMESTAMP NULL, y YEAR,
    e ENUM('a','b','c d'), s SET('x','y','z'), bt BIT(10),
    bi BINARY(4), vb VARBINARY(300), bl BLOB, tx TEXT,
    v VARCHAR(100), l1 VARCHAR(20) CHARACTER SET latin1,
    tiny TINYINT, u BIGINT UNSIGNED, big BIGINT, j JSON
) ENGINE=InnoDB";

const TYPE_COLUMNS: &str =
    "id,f,d,dc,dcu,dt,dt6,da,ti,ti3,ts,y,e,s,bt,bi,vb,bl,tx,v,l1,tiny,u,big,j";

#[test]
fn reads_give_the_servers_own_text() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_types_read");
    exec(&mut sql, "SET SESSION sql_mode = ''");
    // Values as stored, without conversion to the connection's character
    // set: what the original plugin answered (a latin1 column's bytes are
    // latin1), and what hsd answers.
    exec(&mut sql, "SET SESSION character_set_results = NULL");
    exec(&mut sql, TYPES_TABLE);
    exec(
        &mut sql,
        "INSERT INTO ty VALUES
        (1, 1.1, 1.1, 3.5, 7, '2020-01-02 03:04:05', '2020-01-02 03:04:05.123456', '2020-01-02',
         '-838:59:59', '12:00:00.5', '2021-01-01 00:00:00', 2024, 'c d', 'x,z', b'1000000001',
         'ab', 'xyz', 'blob', 'text', 'héllo 😀', 'café', -5, 18446744073709551615,
         -9223372036854775808, '{\"k\": [1, 2]}'),
        (2, 1e20, 1e20, -0.001, 0, '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00',
         '00:00:00', '-00:00:01.25', NULL, 0, '', '', b'0', '', '', '', '', '', '', 0, 0, 0, NULL),
        (3, 123456789, 1.0000000000000002, 123456789.999, 99999, NULL, NULL, NULL, NULL, NULL,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (4, -3.4e38, 2.2250738585072014e-308, 0.5, 1, '9999-12-31 23:59:59',
         '1000-01-01 00:00:00.000001', '1000-01-01', '838:59:59', '00:00:00.001',
         '2038-01-19 03:14:07', 1901, 'a', 'x,y,z', b'1111111111', X'00FF0010',
         X'000102FF', X'FFFE', 'a\tb\nc', 'tab\there', 'Ä', 127, 1, 9223372036854775807, '[]'),
        (5, 0.1, 1e-10, -99999999.999, 0, '2020-02-29 12:00:00', '2020-02-29 12:00:00.100000',
         '2020-02-29', '-00:00:00', '00:00:59.999', '1970-01-01 00:00:01', 2155, 'b', 'y',
         b'0000000001', 'abcd', '', NULL, '', ' trailing ', '', -128, 0, -1, 'null')",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut c = hsd.reader();
    assert_eq!(
        c.q(&format!("P|0|hsdt_types_read|ty|PRIMARY|{TYPE_COLUMNS}")),
        "0|1"
    );
    for id in 1..=5 {
        let got = c.request(&[
            Some(b"0"),
            Some(b"="),
            Some(b"1"),
            Some(id.to_string().as_bytes()),
        ]);
        let want = rows(
            &mut sql,
            &format!("SELECT {TYPE_COLUMNS} FROM ty WHERE id = {id}"),
        );
        assert_eq!(
            got[0].as_deref(),
            Some(&b"0"[..]),
            "row {id}: {}",
            fmt(&got)
        );
        let names: Vec<&str> = TYPE_COLUMNS.split(',').collect();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(
                got[2 + i],
                want[0][i],
                "row {id} column {name}: hsd {:?} vs SQL {:?}",
                got[2 + i]
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned()),
                want[0][i]
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned()),
            );
        }
    }
    // A few spelled out, as a reader of this test expects them. The latin1
    // column's 'café' comes as its stored bytes (0xE9 for é, shown here as
    // U+FFFD by the lossy formatting).
    assert_eq!(
        c.q("0|=|1|1"),
        "0|25|1|1.1|1.1|3.500|7|2020-01-02 03:04:05|2020-01-02 03:04:05.123456|2020-01-02|\
         -838:59:59|12:00:00.500|2021-01-01 00:00:00|2024|c d|x,z|\u{2}\u{1}|ab\0\0|xyz|blob|text|\
         héllo 😀|caf\u{fffd}|-5|18446744073709551615|-9223372036854775808|{\"k\": [1, 2]}"
    );
    assert!(c
        .q("0|=|1|3")
        .starts_with("0|25|3|123457000|1.0000000000000002|123456789.999|99999|~|"));
    // Filters compare with the server's types: DECIMAL, DATETIME, ENUM. As
    // in the original, a filter value is first stored into the column:
    // 3.4999 in a DECIMAL(..,3) is 3.500, which is not > the 3.500 row.
    let mut c2 = hsd.reader();
    assert_eq!(c2.q("P|1|hsdt_types_read|ty|PRIMARY|id|dc,dt6,e"), "0|1");
    assert_eq!(c2.q("1|>=|1|0|10|0|F|>|0|3.4999"), "0|1|3");
    assert_eq!(c2.q("1|>=|1|0|10|0|F|>|0|3.4994"), "0|1|1|3");
    assert_eq!(
        c2.q("1|>=|1|0|10|0|F|>=|1|2020-01-02 03:04:05.123456"),
        "0|1|1|5"
    );
    assert_eq!(c2.q("1|>=|1|0|10|0|F|=|2|b"), "0|1|5");
    // Filtering on BLOB/TEXT columns is refused, as in the original.
    assert_eq!(c2.q("P|2|hsdt_types_read|ty|PRIMARY|id|tx"), "0|1");
    assert_eq!(c2.q("2|>=|1|0|10|0|F|=|0|x"), "2|1|filterblob");
}

#[test]
fn writes_store_what_non_strict_sql_stores() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_types_write");
    exec(&mut sql, "SET SESSION sql_mode = ''");
    exec(&mut sql, TYPES_TABLE);
    let hsd = Hsd::start(&url, &[]);
    let mut w = hsd.writer();
    let cols = "id,f,d,dc,dcu,dt,dt6,da,ti,ti3,ts,y,e,s,bt,tiny,u,big,v";
    assert_eq!(
        w.q(&format!("P|0|hsdt_types_write|ty|PRIMARY|{cols}")),
        "0|1"
    );
    // Strings a client might send, sane and not; SQL gets the same as literals.
    let cases: &[[&str; 18]] = &[
        [
            "1.5",
            "2.25",
            "3.14159",
            "42",
            "2020-01-02 03:04:05",
            "2020-01-02 03:04:05.5",
            "2020-01-02",
            "12:34:56",
            "1:2:3.4567",
            "2021-06-01 10:00:00",
            "2024",
            "b",
            "y,x",
            "513",
            "7",
            "18446744073709551615",
            "-1",
            "plain",
        ],
        [
            "12abc",
            "x",
            "1e400",
            "-1",
            "2020-13-45 99:99:99",
            "garbage",
            "20200102",
            "99:99:99",
            "-1",
            "not a time",
            "99",
            "nope",
            "x,nope",
            "abc",
            "300",
            "-5",
            "1e30",
            "",
        ],
        [
            "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "",
        ],
    ];
    for (n, case) in cases.iter().enumerate() {
        let hs_id = 100 + n;
        let sql_id = 200 + n;
        let line = format!("0|+|19|{hs_id}|{}", case.join("|"));
        assert!(w.q(&line).starts_with("0|1"), "insert {line}");
        let literals: Vec<String> = case
            .iter()
            .map(|v| format!("'{}'", v.replace('\'', "''")))
            .collect();
        exec(
            &mut sql,
            &format!(
                "INSERT INTO ty ({cols}) VALUES ({sql_id}, {})",
                literals.join(", ")
            ),
        );
        let by_hs = rows(
            &mut sql,
            &format!("SELECT {cols} FROM ty WHERE id = {hs_id}"),
        );
        let by_sql = rows(
            &mut sql,
            &format!("SELECT {cols} FROM ty WHERE id = {sql_id}"),
        );
        assert_eq!(by_hs[0][1..], by_sql[0][1..], "case {n}: {case:?}");
    }
    // NULL and the empty string stay different; updates too.
    assert_eq!(w.q("P|1|hsdt_types_write|ty|PRIMARY|id,v,tiny"), "0|1");
    assert_eq!(w.q("1|+|3|300|~|~"), "0|1");
    assert_eq!(w.q("1|+|3|301||"), "0|1");
    assert_eq!(w.q("1|=|1|300"), "0|3|300|~|~");
    assert_eq!(w.q("1|=|1|301"), "0|3|301||0");
    assert_eq!(w.q("1|=|1|300|1|0|U|300||5x"), "0|1|1");
    assert_eq!(w.q("1|=|1|300"), "0|3|300||5");
}

#[test]
fn binary_and_utf8mb4_are_byte_exact() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_types_binary");
    exec(
        &mut sql,
        "CREATE TABLE b (k VARBINARY(64) NOT NULL PRIMARY KEY, vb VARBINARY(300), bl BLOB,
         v VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, t TEXT, UNIQUE KEY vu (v))",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut w = hsd.writer();
    assert_eq!(w.q("P|0|hsdt_types_binary|b|PRIMARY|k,vb,bl,v,t"), "0|1");
    let all: Vec<u8> = (0..=255u8).collect();
    let text = "tab\there\nnl\0nul \u{1F600} ü\r\u{1}".as_bytes().to_vec();
    let keys: [&[u8]; 3] = [b"\x00\x01\xff", b"\xfe\t\n", b"plain"];
    for (i, k) in keys.iter().enumerate() {
        let v = format!("{}{i}", String::from_utf8_lossy(&text));
        let r = w.request(&[
            Some(b"0"),
            Some(b"+"),
            Some(b"5"),
            Some(k),
            Some(&all),
            Some(&all[..=i]),
            Some(v.as_bytes()),
            Some(&text),
        ]);
        assert_eq!(fmt(&r), "0|1");
    }
    let mut r = hsd.reader();
    assert_eq!(r.q("P|0|hsdt_types_binary|b|PRIMARY|k,vb,bl,v,t"), "0|1");
    for (i, k) in keys.iter().enumerate() {
        let got = r.request(&[Some(b"0"), Some(b"="), Some(b"1"), Some(k)]);
        assert_eq!(got.len(), 7, "{}", fmt(&got));
        assert_eq!(got[2].as_deref(), Some(*k));
        assert_eq!(got[3].as_deref(), Some(&all[..]));
        assert_eq!(got[4].as_deref(), Some(&all[..=i]));
        let v = format!("{}{i}", String::from_utf8_lossy(&text));
        assert_eq!(got[5].as_deref(), Some(v.as_bytes()));
        assert_eq!(got[6].as_deref(), Some(&text[..]));
        // And SQL sees the very same bytes.
        let hex: String = k.iter().map(|b| format!("{b:02X}")).collect();
        let s = rows(
            &mut sql,
            &format!("SELECT vb, bl, t FROM b WHERE k = X'{hex}'"),
        );
        assert_eq!(s[0][0].as_deref(), Some(&all[..]));
        assert_eq!(s[0][1].as_deref(), Some(&all[..=i]));
        assert_eq!(s[0][2].as_deref(), Some(&text[..]));
    }
    // Binary keys order bytewise: everything >= 0xfe.
    let got = r.request(&[
        Some(b"0"),
        Some(b">="),
        Some(b"1"),
        Some(b"\xfe"),
        Some(b"10"),
        Some(b"0"),
    ]);
    assert_eq!(got[1].as_deref(), Some(&b"5"[..]));
    assert_eq!(got.len(), 2 + 5, "{}", fmt(&got));
    assert_eq!(got[2].as_deref(), Some(&b"\xfe\t\n"[..]));
}

#[test]
fn invalid_utf8_is_stored_as_the_server_stores_it() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_types_badutf8");
    exec(
        &mut sql,
        "CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(20) CHARACTER SET utf8mb4)",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut w = hsd.writer();
    assert_eq!(w.q("P|0|hsdt_types_badutf8|u|PRIMARY|id,v"), "0|1");
    let bad: &[u8] = b"ab\xff\xfecd";
    let r = w.request(&[Some(b"0"), Some(b"+"), Some(b"2"), Some(b"1"), Some(bad)]);
    assert_eq!(fmt(&r), "0|1");
    // The same bytes bound as a string parameter by a SQL client, non-strict.
    exec(&mut sql, "SET SESSION sql_mode = ''");
    sql.exec_drop(
        "INSERT INTO u VALUES (2, ?)",
        (mysql::Value::Bytes(bad.to_vec()),),
    )
    .expect("insert");
    let got = rows(&mut sql, "SELECT v FROM u ORDER BY id");
    if common::is_mysql(&url) {
        // MySQL cuts a literal's value at the first invalid byte (warning
        // 1366), as it does hsd's; a bound parameter gets '?' there.
        assert_eq!(got[0][0].as_deref(), Some(&b"ab"[..]));
    } else {
        assert_eq!(got[0], got[1], "hsd stores what SQL stores");
        // MariaDB replaces each invalid byte with '?' (warning 1366).
        assert_eq!(got[0][0].as_deref(), Some(&b"ab??cd"[..]));
    }
}

use mysql::prelude::Queryable;

#[test]
fn collations_are_the_servers() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_types_collation");
    exec(
        &mut sql,
        "CREATE TABLE c (id INT PRIMARY KEY, name VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL,
         UNIQUE KEY uname (name))",
    );
    exec(
        &mut sql,
        "INSERT INTO c VALUES (1, 'alice'), (2, 'bob'), (3, 'Carol'), (4, 'dave')",
    );
    let hsd = Hsd::start(&url, &[]);
    let mut r = hsd.reader();
    assert_eq!(r.q("P|0|hsdt_types_collation|c|uname|id,name"), "0|1");
    // Case-insensitive and PAD SPACE: the server decides what is equal.
    assert_eq!(r.q("0|=|1|BOB"), "0|2|2|bob");
    assert_eq!(r.q("0|=|1|bob  "), "0|2|2|bob");
    assert_eq!(r.q("0|>=|1|c|2|0"), "0|2|3|Carol|4|dave");
    // Pipelined lookups are grouped into one statement; keys equal for the
    // server but not byte-identical must each still get their row.
    let lines: Vec<String> = ["bob", "BOB", "Bob ", "zed", "ALICE", "bob", "carol"]
        .iter()
        .map(|k| format!("0|=|1|{k}"))
        .collect();
    assert_eq!(
        r.pipeline(&lines),
        vec![
            "0|2|2|bob",
            "0|2|2|bob",
            "0|2|2|bob",
            "0|2",
            "0|2|1|alice",
            "0|2|2|bob",
            "0|2|3|Carol"
        ]
    );
    assert_eq!(
        r.q("0|=|1|x|10|0|@|0|4|BOB|bob|nobody|aLiCe"),
        "0|2|2|bob|2|bob|1|alice"
    );
}

/// Strings a FLOAT column is compared with: numbers of every shape, digits
/// past the thirtieth significant one (which the server's reader drops),
/// values near the midpoint of two floats (read as a double, then rounded
/// again to single precision), past FLOAT's range and below its smallest
/// value, and text around them.
fn float_inputs() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = [
        "0.1",
        "3.14159",
        "1e39",
        "-1e39",
        "1e400",
        "-1e400",
        "1e-400",
        "12abc",
        " 1.5",
        "1.5 ",
        "\t\n\r\x0b\x0c-1.5",
        "-0",
        "-0.0e-5x",
        "",
        "abc",
        "-",
        ".",
        ".5",
        "5.",
        "1e",
        "1e+",
        "1.5E-3",
        "+2.5e+2",
        "0x1f",
        "nan",
        "inf",
        "1e-45",
        "1e-46",
        "1.17549435e-38",
        "3.4028235e38",
        "3.4028236e38",
        "-3.40282356779733661637539395458142568448e38",
        "999.99995",
        "-999.99995",
        "1.00005",
        "-1.00005",
        "-0.00005",
        "16777217",
        "1.000000059604644886412927462515654042363166809082031251",
        "123456789012345678901234567890.5",
        "0.000000000000000000000000000000000000000000001",
        "1e0000000000000000002",
        "1e99999999999",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let mut rng = hs_conformance::rng::Rng::new(20_261_124);
    let digits = |rng: &mut hs_conformance::rng::Rng, n: usize| -> String {
        (0..n)
            .map(|_| char::from(b'0' + rng.below(10) as u8))
            .collect()
    };
    for _ in 0..300 {
        let mut s = String::new();
        if rng.chance(20) {
            s.push(' ');
        }
        if rng.chance(40) {
            s.push('-');
        }
        // Leading zeros now and then, up to 35 integer digits, up to 45
        // fraction digits: the thirty kept digits fall on both sides of the
        // point.
        if rng.chance(20) {
            s.push_str("000");
        }
        let n = rng.below(36);
        s.push_str(&digits(&mut rng, n));
        if rng.chance(80) {
            s.push('.');
            if rng.chance(30) {
                s.push_str(&"0".repeat(rng.below(12)));
            }
            let n = rng.below(46);
            s.push_str(&digits(&mut rng, n));
        }
        if rng.chance(40) {
            s.push(*rng.pick(&['e', 'E']));
            s.push_str(rng.pick::<&str>(&["", "-", "+"]));
            let n = rng.range(1, 3);
            s.push_str(&digits(&mut rng, n));
        }
        if rng.chance(15) {
            s.push_str(rng.pick::<&str>(&["abc", " ", "e", ".", "x1", "-1"]));
        }
        out.push(s.into_bytes());
    }
    // A double midpoint beside a float midpoint, written exactly (some 60
    // to 90 digits) and carried on past it: read in full it rounds to the
    // double on its far side and on to the next float, cut at thirty
    // digits it does not.
    for _ in 0..80 {
        let (digits, point) = midpoint_near_a_float(&mut rng);
        let mut text = decimal_text(&digits, point);
        text.push_str(rng.pick::<&str>(&["1", "0000001", "", "9"]));
        if rng.chance(30) {
            text.insert(0, '-');
        }
        out.push(text.into_bytes());
    }
    // Such a midpoint whose 29th and 30th digits are zeros, its 31st made
    // a 9: zeros count only once a digit the reader keeps follows them, so
    // the 9 is kept, which puts the value past the midpoint.
    let mut found = 0;
    for _ in 0..20_000 {
        let (digits, point) = midpoint_near_a_float(&mut rng);
        let lead = digits.iter().take_while(|&&d| d == 0).count();
        let significant = &digits[lead..];
        if significant.len() > 31 && significant[28..30] == [0, 0] && significant[30] < 9 {
            let mut changed = digits[..lead + 31].to_vec();
            changed[lead + 30] = 9;
            let point = point - (digits.len() - changed.len());
            let text = decimal_text(&changed, point);
            // Only where the 9 decides the float.
            let float = |t: &str| t.parse::<f64>().map(|d| d as f32).ok();
            if float(&text) == float(&text[..text.len() - 1]) {
                continue;
            }
            out.push(text.into_bytes());
            found += 1;
            if found == 6 {
                break;
            }
        }
    }
    assert!(
        found > 0,
        "no midpoint with zeros at its 29th and 30th digits"
    );
    // The midpoint of a float and the next one, written exactly, then cut
    // or carried on with more digits: above, below or on the tie.
    for _ in 0..100 {
        let bits = (rng.next_u64() as u32) & 0x7f7f_ffff;
        let lo = f32::from_bits(bits);
        let hi = f32::from_bits(bits + 1);
        let mid = (f64::from(lo) + f64::from(hi)) / 2.0;
        let exact = format!("{mid:.60e}");
        let (mantissa, exponent) = exact.split_once('e').unwrap_or((&exact, "0"));
        let mantissa = mantissa.trim_end_matches('0');
        let cut = rng.range(20, mantissa.len().max(21));
        let tail = rng.pick(&["", "1", "0000000001", "9", "49999"]);
        out.push(format!("{}{tail}e{exponent}", &mantissa[..cut.min(mantissa.len())]).into_bytes());
    }
    out
}

/// A double midpoint one double-midpoint step beside the midpoint of two
/// floats (either side), about 2^-29 to 2^31: its exact decimal digits and
/// how many of them stand after the point.
fn midpoint_near_a_float(rng: &mut hs_conformance::rng::Rng) -> (Vec<u8>, usize) {
    let significand = (1u64 << 23) + rng.below(1 << 23) as u64;
    // The float midpoint in units of the double midpoint's step.
    let float_mid = (2 * significand + 1) << 29;
    let n = if rng.chance(50) {
        float_mid + 1
    } else {
        float_mid - 1
    };
    exact_binary_fraction(n, rng.range(23, 83) as u32)
}

/// `n * 2^-halvings` exactly: its decimal digits (at least one before the
/// point) and how many stand after the point (`halvings`).
fn exact_binary_fraction(n: u64, halvings: u32) -> (Vec<u8>, usize) {
    // n * 5^halvings, the point `halvings` digits from the right.
    let mut digits: Vec<u8> = n.to_string().bytes().map(|b| b - b'0').collect();
    for _ in 0..halvings {
        let mut carry = 0;
        for d in digits.iter_mut().rev() {
            let v = *d * 5 + carry;
            *d = v % 10;
            carry = v / 10;
        }
        if carry > 0 {
            digits.insert(0, carry);
        }
    }
    let point = halvings as usize;
    if digits.len() <= point {
        let mut padded = vec![0; point + 1 - digits.len()];
        padded.extend(digits);
        digits = padded;
    }
    (digits, point)
}

/// Digits with the point `point` digits from the right.
fn decimal_text(digits: &[u8], point: usize) -> String {
    let text: String = digits.iter().map(|&d| char::from(b'0' + d)).collect();
    let (whole, fraction) = text.split_at(text.len() - point);
    format!("{whole}.{fraction}")
}

/// A FLOAT filter compares with the value the column stores: each string
/// stored by SQL (non-strict) into a FLOAT, FLOAT UNSIGNED, FLOAT(7,4) and
/// FLOAT(30,20) UNSIGNED; hsd's `F = <string>` on the row finds it (hsd
/// computes what the column stores, then compares exactly). On MariaDB
/// this is what the original compared; MySQL 8 stores these alike.
#[test]
fn float_filters_compare_with_what_the_column_stores() {
    let Some(url) = mysql_url() else { return };
    let mut sql = fresh_db(&url, "hsdt_types_float");
    exec(&mut sql, "SET SESSION sql_mode = ''");
    exec(
        &mut sql,
        "CREATE TABLE fl (id INT PRIMARY KEY, s VARBINARY(200), f FLOAT, fu FLOAT UNSIGNED,
         fmd FLOAT(7,4), fmdu FLOAT(30,20) UNSIGNED)",
    );
    let inputs = float_inputs();
    for (i, s) in inputs.iter().enumerate() {
        let v = || mysql::Value::Bytes(s.clone());
        sql.exec_drop(
            "INSERT INTO fl VALUES (?, ?, ?, ?, ?, ?)",
            (i as i64 + 1, v(), v(), v(), v(), v()),
        )
        .expect("insert");
    }
    let hsd = Hsd::start(&url, &[]);
    let mut r = hsd.reader();
    assert_eq!(
        r.q("P|0|hsdt_types_float|fl|PRIMARY|id|f,fu,fmd,fmdu"),
        "0|1"
    );
    let columns = ["f", "fu", "fmd", "fmdu"];
    let mut failures = Vec::new();
    for (i, s) in inputs.iter().enumerate() {
        let id = (i + 1).to_string();
        for (c, name) in columns.iter().enumerate() {
            let c = c.to_string();
            let got = r.request(&[
                Some(b"0"),
                Some(b"="),
                Some(b"1"),
                Some(id.as_bytes()),
                Some(b"1"),
                Some(b"0"),
                Some(b"F"),
                Some(b"="),
                Some(c.as_bytes()),
                Some(s),
            ]);
            if fmt(&got) != format!("0|1|{id}") {
                let stored = scalar(
                    &mut sql,
                    &format!("SELECT CAST({name} AS DOUBLE) FROM fl WHERE id = {id}"),
                );
                failures.push(format!(
                    "{name} = {:?} (stored {stored}): {}",
                    String::from_utf8_lossy(s),
                    fmt(&got)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        inputs.len() * columns.len(),
        failures.join("\n")
    );
}
