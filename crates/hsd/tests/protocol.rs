//! The HandlerSocket protocol over real TCP, against both backends: every
//! command, every error line, find order and limits, IN, filters, modify,
//! insert ids, pipelining, auth, the read-only port, and SQL beside HS.

mod common;

use common::{q, t, Backend, TestServer};
use hs_client::ResponseExt;

/// A table with a composite non-unique index `ab` on (a, b):
///
/// | id | a    | b    | c  |
/// | 1  | x    | 1    | c1 |
/// | 2  | x    | 2    | c2 |
/// | 3  | x    | 2    | c3 |
/// | 4  | y    | 1    | c4 |
/// | 5  | y    | 3    | c5 |
/// | 6  | NULL | 0    | c6 |
/// | 7  | z    | NULL | c7 |
fn create_t(s: &TestServer) {
    s.sql(
        "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a VARCHAR(32), b INTEGER, c VARCHAR(32), d BLOB)",
    );
    s.sql("CREATE INDEX ab ON t (a, b)");
    s.sql(
        "INSERT INTO t (id, a, b, c) VALUES (1,'x',1,'c1'),(2,'x',2,'c2'),(3,'x',2,'c3'),\
         (4,'y',1,'c4'),(5,'y',3,'c5'),(6,NULL,0,'c6'),(7,'z',NULL,'c7')",
    );
}

async fn find_order_and_limits(s: &mut TestServer) {
    create_t(s);
    let mut c = s.reader().await;
    let db = s.db.clone();
    assert_eq!(q(&mut c, &format!("P|1|{db}|t|ab|id")).await, t("0|1"));
    let cases = [
        ("1|=|1|x|10|0", "0|1|1|2|3"),
        ("1|=|2|x|2|10|0", "0|1|2|3"),
        ("1|>=|1|x|10|0", "0|1|1|2|3|4|5|7"),
        ("1|>|1|x|10|0", "0|1|4|5|7"),
        ("1|>|2|x|1|10|0", "0|1|2|3|4|5|7"),
        ("1|>=|2|x|2|10|0", "0|1|2|3|4|5|7"),
        ("1|<=|1|x|10|0", "0|1|3|2|1|6"),
        ("1|<|1|y|10|0", "0|1|3|2|1|6"),
        ("1|<|2|x|2|10|0", "0|1|1|6"),
        ("1|<=|2|y|1|10|0", "0|1|4|3|2|1|6"),
        // limit and offset
        ("1|>=|1|x|2|1", "0|1|2|3"),
        ("1|>=|1|x|2|5", "0|1|7"),
        ("1|>=|1|x|2|6", "0|1"),
        ("1|<=|1|z|3|2", "0|1|4|3|2"),
        // limit 0 means 1; no limit means 1
        ("1|>=|1|x|0|0", "0|1|1"),
        ("1|>=|1|x", "0|1|1"),
        // NULL keys sort first
        ("1|=|1|~|10|0", "0|1|6"),
        ("1|>=|1|~|3|0", "0|1|6|1|2"),
        ("1|>|1|~|2|0", "0|1|1|2"),
        ("1|<|1|~|5|0", "0|1"),
        ("1|=|2|z|~|5|0", "0|1|7"),
        // nothing there
        ("1|=|1|nope|10|0", "0|1"),
    ];
    for (req, want) in cases {
        assert_eq!(q(&mut c, req).await, t(want), "request {req}");
    }
    // Same through the primary key, with several columns.
    assert_eq!(
        q(&mut c, &format!("P|2|{db}|t|PRIMARY|a,b,c")).await,
        t("0|1")
    );
    assert_eq!(q(&mut c, "2|=|1|6").await, t("0|3|<NULL>|0|c6"));
    assert_eq!(
        q(&mut c, "2|>|1|5|10|0").await,
        t("0|3|<NULL>|0|c6|z|<NULL>|c7")
    );
    assert_eq!(q(&mut c, "2|<|1|3|10|0").await, t("0|3|x|2|c2|x|1|c1"));
    // An empty index name is PRIMARY; a number is a position in the index list.
    assert_eq!(q(&mut c, &format!("P|3|{db}|t||c")).await, t("0|1"));
    assert_eq!(q(&mut c, "3|=|1|4").await, t("0|1|c4"));
    assert_eq!(q(&mut c, &format!("P|4|{db}|t|0|c")).await, t("0|1"));
    assert_eq!(q(&mut c, "4|=|1|5").await, t("0|1|c5"));
    // Empty column list: one empty row per match.
    assert_eq!(q(&mut c, &format!("P|5|{db}|t|ab|")).await, t("0|1"));
    assert_eq!(q(&mut c, "5|=|1|x|10|0").await, t("0|0"));
    // Reopening an id replaces it.
    assert_eq!(q(&mut c, &format!("P|1|{db}|t|PRIMARY|c")).await, t("0|1"));
    assert_eq!(q(&mut c, "1|=|1|2").await, t("0|1|c2"));
}
both_backends!(find_order_and_limits, &[]);

async fn in_and_filters(s: &mut TestServer) {
    create_t(s);
    let mut c = s.reader().await;
    let db = s.db.clone();
    assert_eq!(q(&mut c, &format!("P|1|{db}|t|ab|id|b,c")).await, t("0|1"));
    let cases = [
        // IN: one row per value, in the order given; a value with no row is skipped.
        ("1|=|1|_|10|0|@|0|3|y|q|x", "0|1|4|1"),
        ("1|=|1|_|1|0|@|0|3|y|q|x", "0|1|4"),
        ("1|=|1|_|10|1|@|0|3|y|q|x", "0|1|1"),
        // IN on the second key column.
        ("1|=|2|x|0|10|0|@|1|3|2|9|1", "0|1|2|1"),
        ("1|>=|1|_|10|0|@|0|2|x|y", "0|1|1|4"),
        ("1|<|1|_|10|0|@|0|1|y", "0|1|3"),
        // IN with F: the landed row is skipped, the seek does not go on.
        ("1|=|1|_|10|0|@|0|3|y|x|z|F|>|0|1", "0|1"),
        ("1|=|1|_|10|0|@|0|3|y|x|z|F|>=|0|1", "0|1|4|1"),
        // IN with W: the first failing row ends everything.
        ("1|=|1|_|10|0|@|0|3|y|x|z|W|=|0|1", "0|1|4|1"),
        ("1|=|1|_|10|0|@|0|3|z|y|x|W|=|0|1", "0|1"),
        // Filters on a scan.
        ("1|>=|1|x|10|0|F|=|0|2", "0|1|2|3"),
        ("1|>=|1|x|10|0|W|=|0|1", "0|1|1"),
        ("1|>=|1|x|10|0|F|!=|1|c2|W|<|0|3", "0|1|1|3|4"),
        ("1|>=|1|x|10|1|F|!=|1|c2|W|<|0|3", "0|1|3|4"),
        ("1|>=|1|x|1|0|F|>|0|1", "0|1|2"),
        ("1|>=|1|~|10|0|F|<|0|1", "0|1|6|7"),
        ("1|>=|1|~|10|0|F|=|0|~", "0|1|7"),
        ("1|>=|1|~|10|0|F|!=|0|~", "0|1|6|1|2|3|4|5"),
        ("1|>=|1|~|10|0|F|>|0|~", "0|1|6|1|2|3|4|5"),
        ("1|>=|1|~|10|0|F|<=|0|~", "0|1|7"),
        ("1|>=|1|~|10|0|F|>=|1|c5", "0|1|6|5|7"),
        ("1|>=|1|~|10|0|F|<=|1|c2", "0|1|1|2"),
        // Unknown filter operators, by the original's rules (verified
        // against it): one byte, or two ending in `=`, is false; anything
        // else (`<>`, `=>`, three bytes) is true.
        ("1|>=|1|x|10|0|F|!|0|1", "0|1"),
        ("1|>=|1|x|10|0|W|==|0|1", "0|1"),
        ("1|>=|1|x|10|0|F|<>|0|1", "0|1|1|2|3|4|5|7"),
        ("1|>=|1|x|10|0|W|abc|0|1", "0|1|1|2|3|4|5|7"),
    ];
    for (req, want) in cases {
        assert_eq!(q(&mut c, req).await, t(want), "request {req}");
    }
}
both_backends!(in_and_filters, &[]);

async fn errors(s: &mut TestServer) {
    create_t(s);
    let db = s.db.clone();
    let mut r = s.reader().await;
    let mut w = s.writer().await;
    assert_eq!(
        q(&mut r, &format!("P|1|{db}|t|ab|id,c|b,d")).await,
        t("0|1")
    );
    assert_eq!(
        q(&mut w, &format!("P|1|{db}|t|PRIMARY|id,c")).await,
        t("0|1")
    );
    let read_cases = [
        ("", "2|1|cmd"),
        ("hello", "2|1|cmd"),
        ("9|=|1|1", "2|1|stmtnum"),
        ("1|!|1|x", "2|1|op"),
        ("1|=|0", "2|1|klen"),
        ("1|=|3|x|1|1", "2|1|kpnum"),
        ("1|=|1|x|1|0|@|0|0", "2|1|invalueslen"),
        // IN at a position beyond the keys given: one seek per value with
        // the keys as given (the original's answer).
        ("1|=|1|x|1|0|@|5|1|x", "0|2|1|c1"),
        ("1|=|1|x|1|0|FF|=|0|1", "2|1|filtertype"),
        ("1|=|1|x|1|0|F|=|7|1", "2|1|filterfld"),
        ("1|=|1|x|1|0|F|=|1|1", "2|1|filterblob"),
        ("1|=|1|x|1|0|U|a", "2|1|readonly"),
        ("1|+|2|9|c9", "2|1|readonly"),
        // On the read port any modify token is readonly before it is checked.
        ("1|=|1|x|1|0|Z|a", "2|1|readonly"),
        ("A|2|secret", "3|1|authtype"),
        (&format!("P|2|{db}|nosuch|PRIMARY|id"), "1|1|open_table"),
        ("P|2|nosuchdb|t|PRIMARY|id", "1|1|open_table"),
        (&format!("P|2|{db}|t|nosuch|id"), "2|1|idxnum"),
        (&format!("P|2|{db}|t|9|id"), "2|1|idxnum"),
        (&format!("P|2|{db}|t|PRIMARY|id,nosuch"), "2|1|fld"),
        (&format!("P|2|{db}|t|PRIMARY|id|nosuch"), "2|1|fld"),
        ("P|99999999|x|t|PRIMARY|id", "2|1|stmtnum"),
    ];
    for (req, want) in read_cases {
        assert_eq!(q(&mut r, req).await, t(want), "request {req:?}");
    }
    // The connection is still usable after every error.
    assert_eq!(q(&mut r, "1|=|1|y|1|0").await, t("0|2|4|c4"));
    // Write-side errors.
    assert_eq!(q(&mut w, "1|+|2|1|dup").await, t("1|1|121"));
    assert_eq!(q(&mut w, "1|=|1|1|1|0|X").await, t("2|1|modop"));
    assert_eq!(q(&mut w, "1|+|2|8|c8").await, t("0|1"));
    assert_eq!(q(&mut w, "1|=|1|8").await, t("0|2|8|c8"));
}
both_backends!(errors, &[]);

async fn modify(s: &mut TestServer) {
    create_t(s);
    let db = s.db.clone();
    let mut w = s.writer().await;
    assert_eq!(
        q(&mut w, &format!("P|1|{db}|t|PRIMARY|a,b,c")).await,
        t("0|1")
    );
    // U? answers the rows as they were; U answers the count.
    assert_eq!(q(&mut w, "1|=|1|1|1|0|U?|xx|10|n1").await, t("0|3|x|1|c1"));
    assert_eq!(q(&mut w, "1|=|1|1").await, t("0|3|xx|10|n1"));
    assert_eq!(q(&mut w, "1|>=|1|2|2|0|U|x|2|same").await, t("0|1|2"));
    assert_eq!(q(&mut w, "1|>=|1|2|2|0").await, t("0|3|x|2|same|x|2|same"));
    // A row counts as modified even when nothing changes.
    assert_eq!(q(&mut w, "1|=|1|2|1|0|U|x|2|same").await, t("0|1|1"));
    // NULL can be written; missing trailing values are empty strings.
    assert_eq!(q(&mut w, "1|=|1|2|1|0|U|~").await, t("0|1|1"));
    let row = s.sql("SELECT a, c FROM t WHERE id = 2");
    assert_eq!(row, vec![vec![None, Some(String::new())]]);
    // D and D?
    assert_eq!(q(&mut w, "1|=|1|3|1|0|D?").await, t("0|3|x|2|same"));
    assert_eq!(q(&mut w, "1|=|1|3").await, t("0|3"));
    assert_eq!(q(&mut w, "1|>|1|5|10|0|D").await, t("0|1|2"));
    assert_eq!(
        s.sql("SELECT count(*) FROM t"),
        vec![vec![Some("4".to_string())]]
    );
    // Modify through a secondary index with a filter.
    assert_eq!(q(&mut w, &format!("P|2|{db}|t|ab|c|b")).await, t("0|1"));
    assert_eq!(q(&mut w, "2|=|1|y|10|0|F|=|0|3|U|via-ab").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|5").await, t("0|3|y|3|via-ab"));
    // Nothing matched: zero modified.
    assert_eq!(q(&mut w, "1|=|1|999|1|0|U|a|1|b").await, t("0|1|0"));
}
both_backends!(modify, &[]);

async fn increment_and_sign_rule(s: &mut TestServer) {
    create_t(s);
    let db = s.db.clone();
    let mut w = s.writer().await;
    assert_eq!(q(&mut w, &format!("P|1|{db}|t|PRIMARY|b")).await, t("0|1"));
    assert_eq!(q(&mut w, "1|=|1|4|1|0|+|5").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|4").await, t("0|1|6"));
    assert_eq!(q(&mut w, "1|=|1|4|1|0|+?|1").await, t("0|1|6"));
    assert_eq!(q(&mut w, "1|=|1|4").await, t("0|1|7"));
    // 7 - 10 would change the sign: the row is left alone and not counted.
    assert_eq!(q(&mut w, "1|=|1|4|1|0|-|10").await, t("0|1|0"));
    assert_eq!(q(&mut w, "1|=|1|4").await, t("0|1|7"));
    assert_eq!(q(&mut w, "1|=|1|4|1|0|-|7").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|4").await, t("0|1|0"));
    // From zero to negative is not a sign change.
    assert_eq!(q(&mut w, "1|=|1|4|1|0|-|2").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|4").await, t("0|1|-2"));
    // -2 - (-5) = 3 changes sign: left alone.
    assert_eq!(q(&mut w, "1|=|1|4|1|0|-|-5").await, t("0|1|0"));
    // Across rows: ids 4 (b=-2), 5 (b=3), 6 (b=0): -2-1=-3 ok, 3-1=2 ok, 0-1 ok.
    assert_eq!(q(&mut w, "1|>=|1|4|3|0|-|1").await, t("0|1|3"));
    assert_eq!(q(&mut w, "1|>=|1|4|3|0").await, t("0|1|-3|2|-1"));
    // A sign change still uses up one of the limit: 4: -3-(-4)=1 flips, 5: 2-(-4)=6.
    assert_eq!(q(&mut w, "1|>=|1|4|1|0|-|-4").await, t("0|1|0"));
    assert_eq!(q(&mut w, "1|>=|1|4|2|0|-|-4").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|5").await, t("0|1|6"));
    // NULL stays NULL; garbage reads as 0.
    assert_eq!(q(&mut w, "1|=|1|7|1|0|+|5").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|7").await, t("0|1|<NULL>"));
    assert_eq!(q(&mut w, "1|=|1|5|1|0|+|abc").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|=|1|5").await, t("0|1|6"));
}
both_backends!(increment_and_sign_rule, &[]);

async fn insert_ids(s: &mut TestServer) {
    let db = s.db.clone();
    s.sql(&format!(
        "CREATE TABLE u (id {}, v VARCHAR(16))",
        s.autoinc_pk()
    ));
    create_t(s);
    let mut w = s.writer().await;
    assert_eq!(q(&mut w, &format!("P|1|{db}|u|PRIMARY|v")).await, t("0|1"));
    assert_eq!(q(&mut w, "1|+|1|first").await, t("0|1|1"));
    assert_eq!(q(&mut w, "1|+|1|second").await, t("0|1|2"));
    assert_eq!(
        q(&mut w, &format!("P|2|{db}|u|PRIMARY|id,v")).await,
        t("0|1")
    );
    // An explicit auto-increment value is stored and answered with id 0
    // (nothing was generated); the next generated id follows it; 0 takes
    // the next id.
    assert_eq!(q(&mut w, "2|+|2|100|hundred").await, t("0|1|0"));
    assert_eq!(q(&mut w, "2|+|2|0|zero").await, t("0|1|101"));
    assert_eq!(q(&mut w, "1|+|1|next").await, t("0|1|102"));
    // Values beyond the opened columns are ignored; a column not given
    // whose default is NULL stores its zero value (the empty string).
    assert_eq!(q(&mut w, "1|+|3|extra|ignored|too").await, t("0|1|103"));
    assert_eq!(q(&mut w, "2|+|1|0").await, t("0|1|104"));
    assert_eq!(q(&mut w, "2|+|0").await, t("2|1|klen"));
    assert_eq!(q(&mut w, "2|=|1|103").await, t("0|2|103|extra"));
    assert_eq!(q(&mut w, "2|=|1|104").await, t("0|2|104|"));
    assert_eq!(q(&mut w, "2|=|1|100").await, t("0|2|100|hundred"));
    // No auto-increment column: a bare 0 1.
    assert_eq!(
        q(&mut w, &format!("P|3|{db}|t|PRIMARY|id,c")).await,
        t("0|1")
    );
    assert_eq!(q(&mut w, "3|+|2|50|c50").await, t("0|1"));
    assert_eq!(q(&mut w, "3|+|2|50|again").await, t("1|1|121"));
}
both_backends!(insert_ids, &[]);

async fn binary_values(s: &mut TestServer) {
    let db = s.db.clone();
    s.sql("CREATE TABLE bin (id BIGINT NOT NULL PRIMARY KEY, v VARBINARY(600), n VARCHAR(10))");
    let mut w = s.writer().await;
    w.open_index(1, &db, "bin", "PRIMARY", &["id", "v", "n"], &[])
        .await
        .unwrap()
        .check()
        .unwrap();
    let all: Vec<u8> = (0u8..=255).collect();
    let r = w
        .insert(1, &[Some(&b"1"[..]), Some(&all[..]), None])
        .await
        .unwrap();
    assert!(r.is_ok(), "{r:?}");
    let r = w
        .insert(1, &[Some(&b"2"[..]), Some(&b""[..]), Some(&b""[..])])
        .await
        .unwrap();
    assert!(r.is_ok(), "{r:?}");
    let rows = w
        .find(&hs_client::Find::new(1, ">=", &["1"]).limit(2))
        .await
        .unwrap()
        .check()
        .unwrap()
        .into_rows();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][1].as_deref(), Some(&all[..]), "every byte survives");
    assert_eq!(rows[0][2], None, "NULL stays NULL");
    assert_eq!(rows[1][1].as_deref(), Some(&b""[..]), "empty stays empty");
    assert_eq!(rows[1][2].as_deref(), Some(&b""[..]));
}
both_backends!(binary_values, &[]);

async fn pipelining(s: &mut TestServer) {
    create_t(s);
    let db = s.db.clone();
    let mut c = s.writer().await;
    assert_eq!(q(&mut c, &format!("P|1|{db}|t|PRIMARY|c")).await, t("0|1"));
    let mut lines = Vec::new();
    for i in 0..1000 {
        let id = i % 9 + 1; // ids 8 and 9 do not exist
        lines.push(format!("1\t=\t1\t{id}").into_bytes());
        if i == 500 {
            // A write in the middle is ordered with the reads around it.
            lines.push(b"1\t=\t1\t1\t1\t0\tU\tchanged".to_vec());
        }
    }
    let responses = c.pipeline(&lines).await.unwrap();
    assert_eq!(responses.len(), 1001);
    let mut k = 0;
    for i in 0..1000 {
        let id = i % 9 + 1;
        let want = match id {
            8 | 9 => "0\t1".to_string(),
            1 if i > 500 => "0\t1\tchanged".to_string(),
            n => format!("0\t1\tc{n}"),
        };
        assert_eq!(common::fmt(&responses[k]), want, "response {k}");
        k += 1;
        if i == 500 {
            assert_eq!(common::fmt(&responses[k]), "0\t1\t1");
            k += 1;
        }
    }
}
both_backends!(pipelining, &[]);

async fn auth_on_both_ports(s: &mut TestServer) {
    create_t(s);
    let db = s.db.clone();
    let open = format!("P|1|{db}|t|PRIMARY|c");
    let mut r = s.reader().await;
    assert_eq!(q(&mut r, &open).await, t("3|1|unauth"));
    assert_eq!(q(&mut r, "1|=|1|1").await, t("3|1|unauth"));
    assert_eq!(q(&mut r, "A|1|wsecret").await, t("3|1|unauth"));
    assert_eq!(q(&mut r, "A|2|rsecret").await, t("3|1|authtype"));
    assert_eq!(q(&mut r, "A|1|rsecret").await, t("0|1"));
    assert_eq!(q(&mut r, &open).await, t("0|1"));
    assert_eq!(q(&mut r, "1|=|1|1").await, t("0|1|c1"));
    // A failed A drops the authentication again.
    assert_eq!(q(&mut r, "A|1|bad").await, t("3|1|unauth"));
    assert_eq!(q(&mut r, "1|=|1|1").await, t("3|1|unauth"));

    let mut w = s.writer().await;
    assert_eq!(q(&mut w, "A|1|rsecret").await, t("3|1|unauth"));
    assert_eq!(q(&mut w, "1|+|2|9|c9").await, t("3|1|unauth"));
    assert_eq!(q(&mut w, "A|1|wsecret").await, t("0|1"));
    assert_eq!(
        q(&mut w, &format!("P|1|{db}|t|PRIMARY|id,c")).await,
        t("0|1")
    );
    assert_eq!(q(&mut w, "1|+|2|9|c9").await, t("0|1"));
}
both_backends!(
    auth_on_both_ports,
    &["--plain-secret", "rsecret", "--plain-secret-wr", "wsecret"]
);

async fn sql_and_hs_see_each_other(s: &mut TestServer) {
    create_t(s);
    let db = s.db.clone();
    let mut w = s.writer().await;
    let mut r = s.reader().await;
    assert_eq!(
        q(&mut w, &format!("P|1|{db}|t|PRIMARY|id,c")).await,
        t("0|1")
    );
    assert_eq!(
        q(&mut r, &format!("P|1|{db}|t|PRIMARY|id,c")).await,
        t("0|1")
    );
    // HS write, SQL read.
    assert_eq!(q(&mut w, "1|+|2|20|from-hs").await, t("0|1"));
    assert_eq!(
        s.sql("SELECT c FROM t WHERE id = 20"),
        vec![vec![Some("from-hs".to_string())]]
    );
    // SQL write, HS read (both ports).
    s.sql("INSERT INTO t (id, c) VALUES (21, 'from-sql')");
    assert_eq!(q(&mut r, "1|=|1|21").await, t("0|2|21|from-sql"));
    s.sql("UPDATE t SET c = 'sql-updated' WHERE id = 20");
    assert_eq!(q(&mut w, "1|=|1|20").await, t("0|2|20|sql-updated"));
    s.sql("DELETE FROM t WHERE id = 21");
    assert_eq!(q(&mut r, "1|=|1|21").await, t("0|2"));
}
both_backends!(sql_and_hs_see_each_other, &[]);

/// The spec's section 10, on the demo table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_session() {
    let s = TestServer::start(Backend::Sqlite, "test", &["--demo"]).expect("server");
    let mut c = s.reader().await;
    assert_eq!(
        q(&mut c, "P|0|test|user|PRIMARY|user_name,user_email,created").await,
        t("0|1")
    );
    let one = q(&mut c, "0|=|1|101").await;
    let fields: Vec<&str> = one.split('\t').collect();
    assert_eq!(&fields[..2], &["0", "3"]);
    assert!(fields[3].ends_with("@example.com"), "{one}");
    assert_eq!(fields[4].len(), "YYYY-MM-DD HH:MM:SS".len(), "{one}");
    let two = q(&mut c, "0|>=|1|100|2|0").await;
    assert_eq!(two.split('\t').count(), 2 + 6, "{two}");
    assert_eq!(
        s.sql_count("SELECT count(*) FROM user"),
        hsd::DEMO_ROWS as u64
    );
    assert_eq!(
        q(&mut c, "P|1|test|user|user_email|user_id").await,
        t("0|1")
    );
}

trait Count {
    fn sql_count(&self, stmt: &str) -> u64;
}

impl Count for TestServer {
    fn sql_count(&self, stmt: &str) -> u64 {
        self.sql(stmt)[0][0]
            .as_deref()
            .and_then(|v| v.parse().ok())
            .expect("a count")
    }
}
