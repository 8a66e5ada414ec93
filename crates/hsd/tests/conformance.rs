//! The differential conformance suite's short run: fixed seeds sent to the
//! original HandlerSocket plugin (loaded in the private MariaDB by
//! scripts/mariadb.sh) and to hsd, every answer compared byte for byte and the
//! tables row by row (crates/hs-conformance). Strict: any difference that is
//! not a documented exception fails, with the reduced transcript. The same
//! with hsd on MySQL 8 (scripts/mysql8.sh) held to hsd on MariaDB, which
//! answers as the plugin (the plugin cannot load into MySQL).
//!
//! Also one named test per documented exception (hs_conformance::exceptions,
//! plugin vs hsd and MariaDB vs MySQL 8).

mod common;

use common::{Backend, TestServer};
use hs_conformance::exceptions;
use hs_conformance::generate::{Port, Step, CONN_PORTS};
use hs_conformance::line::Line;
use hs_conformance::lockstep;
use hs_conformance::runner::{Replay, Runner, Side};
use hs_conformance::store::Store;
use hs_conformance::suite::{self, Config, Mode};
use hs_conformance::target::{self, Endpoint};

/// Requests per backend in the short run, and the seeds it starts from.
const SHORT_RUN_REQUESTS: usize = 3_000;
/// The Vitess run's: its eight tables are reset through vtgate and its
/// segments are short (sharding's exceptions end them), so it sends fewer
/// to stay within seconds; `scripts/conformance.sh vitess` runs long.
const VITESS_SHORT_RUN_REQUESTS: usize = 1_000;
const MYSQL_FIRST_SEED: u64 = 1;
const SQLITE_FIRST_SEED: u64 = 5_000;
const CROSS_BACKEND_FIRST_SEED: u64 = 9_000;
const VITESS_FIRST_SEED: u64 = 13_000;

fn plugin_endpoint(ports: (u16, u16), db: &str) -> Endpoint {
    Endpoint {
        name: "plugin".into(),
        read_addr: format!("127.0.0.1:{}", ports.0),
        write_addr: format!("127.0.0.1:{}", ports.1),
        db: db.into(),
    }
}

fn hsd_endpoint(s: &TestServer) -> Endpoint {
    named_endpoint("hsd", s)
}

fn named_endpoint(name: &str, s: &TestServer) -> Endpoint {
    Endpoint {
        name: name.into(),
        read_addr: s.read_addr.clone(),
        write_addr: s.write_addr.clone(),
        db: s.db.clone(),
    }
}

fn short_run(mode: Mode, first_seed: u64, reference: Side, subject: Side) {
    let requests = match mode {
        Mode::Vitess => VITESS_SHORT_RUN_REQUESTS,
        _ => SHORT_RUN_REQUESTS,
    };
    let names = (
        reference.endpoint.name.clone(),
        subject.endpoint.name.clone(),
    );
    let mut runner = Runner::new(reference, subject, mode);
    let cfg = Config {
        mode,
        first_seed,
        requests,
        segment_len: 200,
        reduce: true,
        reduce_budget: 100,
        max_differences: 1,
    };
    let report = suite::run(&mut runner, &cfg, |_| {}).expect("conformance run");
    let mut msg = report.summary();
    for f in &report.found {
        msg.push_str(&format!(
            "\n{} (seed {}), reduced to {} steps:\n{}",
            f.signature, f.seed, f.reduced_steps, f.transcript
        ));
    }
    assert_eq!(
        report.differing_segments, 0,
        "{} differs from {}:\n{msg}",
        names.1, names.0
    );
    assert!(report.requests >= requests, "{msg}");
    eprintln!("{msg}");
}

/// (a) plugin vs `hsd --backend mysql`: two identical copies of every table
/// type in two databases of the same MariaDB.
#[test]
fn mysql_backend_answers_as_the_original() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(url) = common::mysql_url() else {
        return;
    };
    let server = TestServer::start(Backend::Mysql, "hst_conf_hsd", &[]).expect("hsd on MariaDB");
    let plugin = Side {
        endpoint: plugin_endpoint(ports, "hst_conf_orig"),
        store: Store::mysql(&url, "hst_conf_orig").expect("plugin's database"),
    };
    let hsd = Side {
        endpoint: hsd_endpoint(&server),
        store: Store::mysql(&url, &server.db).expect("hsd's database"),
    };
    short_run(Mode::Mysql, MYSQL_FIRST_SEED, plugin, hsd);
}

/// The same with the row cache on: lookups answered from memory answer
/// byte for byte as the server path (strict: the suite also changes rows
/// through SQL).
#[test]
fn mysql_backend_with_the_row_cache_answers_as_the_original() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(url) = common::mysql_url() else {
        return;
    };
    let cached = ["--row-cache-mib", "16", "--read-consistency", "strict"];
    let server =
        TestServer::start(Backend::Mysql, "hst_conf_cache", &cached).expect("hsd on MariaDB");
    let plugin = Side {
        endpoint: plugin_endpoint(ports, "hst_conf_orig_c"),
        store: Store::mysql(&url, "hst_conf_orig_c").expect("plugin's database"),
    };
    let hsd = Side {
        endpoint: hsd_endpoint(&server),
        store: Store::mysql(&url, &server.db).expect("hsd's database"),
    };
    short_run(Mode::Mysql, MYSQL_FIRST_SEED, plugin, hsd);
}

/// (b) the type-independent part: plugin on MariaDB tables vs hsd's embedded
/// store on equivalent SQLite tables.
#[test]
fn embedded_store_answers_as_the_original() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(url) = common::mysql_url() else {
        return;
    };
    let server = TestServer::start(Backend::Sqlite, "hst_conf_lite", &[]).expect("hsd on SQLite");
    let plugin = Side {
        endpoint: plugin_endpoint(ports, "hst_conf_orig_lite"),
        store: Store::mysql(&url, "hst_conf_orig_lite").expect("plugin's database"),
    };
    let hsd = Side {
        endpoint: hsd_endpoint(&server),
        store: Store::sqlite(server.data_dir(), &server.db).expect("hsd's SQLite file"),
    };
    short_run(Mode::Sqlite, SQLITE_FIRST_SEED, plugin, hsd);
}

/// (c) hsd on MySQL 8 vs hsd on MariaDB: the same segments, on every column
/// type of (a), which both servers share, each table's collation spelt out.
/// Differences that come from how the two servers store a value are the
/// documented exceptions of `exceptions::cross_backend`.
#[test]
fn mysql8_backend_answers_as_the_mariadb_backend() {
    let (Some(mariadb), Some(mysql8)) = (common::mysql_url(), common::mysql8_url()) else {
        return;
    };
    assert!(
        !common::is_mysql(&mariadb),
        "HSD_TEST_MYSQL_URL must name MariaDB for this test"
    );
    assert!(
        common::is_mysql(&mysql8),
        "HSD_TEST_MYSQL8_URL must name MySQL 8"
    );
    let on_mariadb = TestServer::start_at(
        Backend::Mysql,
        Some(mariadb.clone()),
        "hst_conf_x_mariadb",
        &[],
    );
    let on_mysql8 = TestServer::start_at(
        Backend::Mysql,
        Some(mysql8.clone()),
        "hst_conf_x_mysql8",
        &[],
    );
    let reference = Side {
        endpoint: named_endpoint("mariadb", &on_mariadb),
        store: Store::mysql(&mariadb, &on_mariadb.db).expect("MariaDB database"),
    };
    let subject = Side {
        endpoint: named_endpoint("mysql8", &on_mysql8),
        store: Store::mysql(&mysql8, &on_mysql8.db).expect("MySQL 8 database"),
    };
    short_run(
        Mode::CrossBackend,
        CROSS_BACKEND_FIRST_SEED,
        reference,
        subject,
    );
}

/// (d) hsd on Vitess (vtgate, the keyspace `ks` in two shards) vs hsd on
/// one MySQL 8.0.31: the same segments on a table sharded by its key's
/// first column; the documented exceptions are `exceptions::vitess`.
#[test]
fn vitess_backend_answers_as_one_mysql8() {
    let Some((reference, subject, _servers)) = vitess_sides("hst_conf_v_mysql8") else {
        return;
    };
    short_run(Mode::Vitess, VITESS_FIRST_SEED, reference, subject);
}

/// The Vitess runs share the keyspace's one copy of the suite's table:
/// one at a time.
static VITESS_KEYSPACE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What a Vitess run holds while it runs: the keyspace and both servers.
type VitessHeld = (
    std::sync::MutexGuard<'static, ()>,
    TestServer,
    common::blocking::Hsd,
);

/// hsd on one MySQL 8 (database `db`) and hsd on Vitess (keyspace `ks`),
/// with what to hold while they run.
fn vitess_sides(db: &str) -> Option<(Side, Side, VitessHeld)> {
    let (Some(mysql8), Some(vitess)) = (common::mysql8_url(), common::vitess_url()) else {
        return None;
    };
    let turn = VITESS_KEYSPACE.lock().unwrap_or_else(|p| p.into_inner());
    let on_mysql8 = TestServer::start_at(Backend::Mysql, Some(mysql8.clone()), db, &[]);
    let on_vitess = common::blocking::Hsd::start(&vitess, &[]);
    let reference = Side {
        endpoint: named_endpoint("mysql8", &on_mysql8),
        store: Store::mysql(&mysql8, &on_mysql8.db).expect("MySQL 8 database"),
    };
    let subject = Side {
        endpoint: Endpoint {
            name: "vitess".into(),
            read_addr: on_vitess.read.clone(),
            write_addr: on_vitess.write.clone(),
            db: "ks".into(),
        },
        store: Store::vitess(&vitess, "ks").expect("the keyspace ks"),
    };
    Some((reference, subject, (turn, on_mysql8, on_vitess)))
}

/// Exception `vitess_vindex_column_change`: a modify that gives the row
/// another `a` (the column `vitess_pairs` is sharded by) changes it on one
/// MySQL 8 and answers vtgate's 1235 on Vitess; one that would meet a
/// duplicate key there answers 121 and 1235.
#[test]
fn vitess_exception_vindex_column_change() {
    let Some((reference, subject, _servers)) = vitess_sides("hst_v_vindex") else {
        return;
    };
    let mut runner = Runner::new(reference, subject, Mode::Vitess);
    let open = (Port::Write, "P|0|DB|vitess_pairs|PRIMARY|a,b,v", None);
    let moved = cross_steps(&[
        open,
        (Port::Write, "0|=|2|1|a|1|0|U|7|a|10", Some("vitess_pairs")),
    ]);
    let replay = run_excepted(&mut runner, &moved, Some("vitess_vindex_column_change"));
    assert_eq!(answers(&replay, 1), ("0\t1\t1".into(), "1\t1\t1235".into()));
    let taken = cross_steps(&[
        open,
        (Port::Write, "0|=|2|1|b|1|0|U|2|a|1", Some("vitess_pairs")),
    ]);
    let replay = run_excepted(&mut runner, &taken, Some("vitess_vindex_column_change"));
    assert_eq!(
        answers(&replay, 1),
        ("1\t1\t121".into(), "1\t1\t1235".into())
    );
    // The same `a`: no exception, both change the row.
    let kept = cross_steps(&[
        open,
        (Port::Write, "0|=|2|1|a|1|0|U|1|a|11", Some("vitess_pairs")),
    ]);
    let replay = run_excepted(&mut runner, &kept, None);
    assert_eq!(answers(&replay, 1), ("0\t1\t1".into(), "0\t1\t1".into()));
}

/// Exception `vitess_insert_without_the_vindex_column`: an insert through
/// an index opened without `a` (the column `vitess_pairs` is sharded by,
/// with `hash`) stores `a = 0` on one MySQL 8 (hsd's sessions are not
/// strict) and names no shard on Vitess (1105); `latin`, sharded by
/// `unicode_loose_xxhash(code)`, gets a shard for the NULL vtgate puts in
/// and the shard refuses it (1048).
#[test]
fn vitess_exception_insert_without_the_vindex_column() {
    let Some((reference, subject, _servers)) = vitess_sides("hst_v_insert") else {
        return;
    };
    let mut runner = Runner::new(reference, subject, Mode::Vitess);
    let steps = cross_steps(&[
        (Port::Write, "P|0|DB|vitess_pairs|k_v|b,v", None),
        (Port::Write, "0|+|2|n999|3", Some("vitess_pairs")),
    ]);
    let replay = run_excepted(
        &mut runner,
        &steps,
        Some("vitess_insert_without_the_vindex_column"),
    );
    assert_eq!(answers(&replay, 1), ("0\t1".into(), "1\t1\t1105".into()));
    let steps = cross_steps(&[
        (Port::Write, "P|0|DB|latin|k_name_n|name,n", None),
        (Port::Write, "0|+|2|zed|9", Some("latin")),
    ]);
    let replay = run_excepted(
        &mut runner,
        &steps,
        Some("vitess_insert_without_the_vindex_column"),
    );
    assert_eq!(answers(&replay, 1), ("0\t1".into(), "1\t1\t1048".into()));
    // With the column given, both store the row.
    let steps = cross_steps(&[
        (Port::Write, "P|0|DB|latin|PRIMARY|code,name,n", None),
        (Port::Write, "0|+|3|zz|zed|9", Some("latin")),
    ]);
    let replay = run_excepted(&mut runner, &steps, None);
    assert_eq!(answers(&replay, 1), ("0\t1".into(), "0\t1".into()));
}

/// Exception `vitess_unique_index_per_shard`: `ints.u_ii` is unique, and
/// the row with `ii = 42` has id 7, on shard `80-` (`hash(7)`). A row with
/// id 102 (shard `-80`) and `ii = 42` is refused by one MySQL 8 (121) and
/// stored on Vitess; with id 11 (shard `80-`, as 7) both refuse it.
#[test]
fn vitess_exception_unique_index_per_shard() {
    let Some((reference, subject, _servers)) = vitess_sides("hst_v_unique") else {
        return;
    };
    let mut runner = Runner::new(reference, subject, Mode::Vitess);
    let open = (Port::Write, "P|0|DB|ints|PRIMARY|id,mi,ii", None);
    let other_shard = cross_steps(&[open, (Port::Write, "0|+|3|102|1|42", Some("ints"))]);
    let replay = run_excepted(
        &mut runner,
        &other_shard,
        Some("vitess_unique_index_per_shard"),
    );
    assert_eq!(answers(&replay, 1), ("1\t1\t121".into(), "0\t1\t0".into()));
    let same_shard = cross_steps(&[open, (Port::Write, "0|+|3|11|1|42", Some("ints"))]);
    let replay = run_excepted(&mut runner, &same_shard, None);
    assert_eq!(
        answers(&replay, 1),
        ("1\t1\t121".into(), "1\t1\t121".into())
    );
}

/// Exception `vitess_sequence_is_no_auto_increment_counter`: `ints` is
/// numbered from 10 (its seed rows end at 9). After a row given id 100,
/// one MySQL 8 numbers the next row 101, the sequence 10; before it both
/// number it 10. (`ii` is given: left out it would store 0, which row 6
/// holds, and `u_ii` is unique per shard only.)
#[test]
fn vitess_exception_sequence_is_no_auto_increment_counter() {
    let Some((reference, subject, _servers)) = vitess_sides("hst_v_sequence") else {
        return;
    };
    let mut runner = Runner::new(reference, subject, Mode::Vitess);
    let numbered = (Port::Write, "P|1|DB|ints|PRIMARY|mi,ii", None);
    let steps = cross_steps(&[numbered, (Port::Write, "1|+|2|5|500", Some("ints"))]);
    let replay = run_excepted(&mut runner, &steps, None);
    assert_eq!(answers(&replay, 1), ("0\t1\t10".into(), "0\t1\t10".into()));
    let steps = cross_steps(&[
        (Port::Write, "P|0|DB|ints|PRIMARY|id,mi,ii", None),
        (Port::Write, "0|+|3|100|5|700", Some("ints")),
        numbered,
        (Port::Write, "1|+|2|6|600", Some("ints")),
    ]);
    let replay = run_excepted(
        &mut runner,
        &steps,
        Some("vitess_sequence_is_no_auto_increment_counter"),
    );
    assert_eq!(answers(&replay, 1).0, answers(&replay, 1).1);
    assert_eq!(answers(&replay, 3), ("0\t1\t101".into(), "0\t1\t10".into()));
}

/// Exception `vitess_non_utf8_vindex_text`: `latin` is sharded by
/// `unicode_loose_xxhash(code)`, a latin1 column. A row whose code is the
/// bytes `c3 a9` (two latin1 characters, `Ã©`) is placed by the hash of
/// those bytes read as UTF-8 (`é`); a delete through `k_name_n` finds it
/// by its name and names it by the locator hsd reads back through vtgate,
/// the UTF-8 of `Ã©`, which the row does not hold (and which may hash to
/// the other shard): the row stays, where one MySQL 8 deletes it. An
/// ASCII code is deleted on both.
#[test]
fn vitess_exception_non_utf8_vindex_text() {
    let Some((reference, subject, _servers)) = vitess_sides("hst_v_latin") else {
        return;
    };
    let mut runner = Runner::new(reference, subject, Mode::Vitess);
    let open = (Port::Write, "P|0|DB|latin|k_name_n|code,name,n", None);
    let steps = cross_steps(&[
        open,
        (Port::Write, "0|+|3|é|zed|9", Some("latin")),
        (Port::Write, "0|=|2|zed|9|1|0|D", Some("latin")),
    ]);
    let replay = run_excepted(&mut runner, &steps, Some("vitess_non_utf8_vindex_text"));
    assert_eq!(answers(&replay, 1), ("0\t1".into(), "0\t1".into()));
    assert_eq!(answers(&replay, 2), ("0\t1\t1".into(), "0\t1\t1".into()));
    let steps = cross_steps(&[
        open,
        (Port::Write, "0|+|3|zz|zed|9", Some("latin")),
        (Port::Write, "0|=|2|zed|9|1|0|D", Some("latin")),
    ]);
    let replay = run_excepted(&mut runner, &steps, None);
    assert_eq!(answers(&replay, 2), ("0\t1\t1".into(), "0\t1\t1".into()));
}

/// Exception `vitess_reads_keys_handler_refuses`: an empty key for a
/// DATETIME is refused by MySQL 8's HANDLER READ (1210); on Vitess hsd
/// reads with SELECT, which seeks the zero date and finds no row.
#[test]
fn vitess_exception_reads_keys_handler_refuses() {
    let Some((reference, subject, _servers)) = vitess_sides("hst_v_handler") else {
        return;
    };
    let mut runner = Runner::new(reference, subject, Mode::Vitess);
    let steps = cross_steps(&[
        (Port::Read, "P|0|DB|times|k_dt_tm|id", None),
        (Port::Read, "0|=|1|", None),
        (Port::Read, "0|=|1|2010-01-02 03:04:05", None),
    ]);
    let replay = run_excepted(
        &mut runner,
        &steps,
        Some("vitess_reads_keys_handler_refuses"),
    );
    assert_eq!(answers(&replay, 1), ("1\t1\t1210".into(), "0\t1".into()));
    assert_eq!(answers(&replay, 2), ("0\t1\t1".into(), "0\t1\t1".into()));
}

/// hsd on MariaDB and hsd on MySQL 8, each on its own database, in a
/// cross-backend runner over the suite's tables.
struct CrossPair {
    runner: Runner,
    _servers: (TestServer, TestServer),
}

fn cross_pair(db: &str) -> Option<CrossPair> {
    let (Some(mariadb), Some(mysql8)) = (common::mysql_url(), common::mysql8_url()) else {
        return None;
    };
    let on_mariadb = TestServer::start_at(
        Backend::Mysql,
        Some(mariadb.clone()),
        &format!("{db}_m"),
        &[],
    );
    let on_mysql8 = TestServer::start_at(
        Backend::Mysql,
        Some(mysql8.clone()),
        &format!("{db}_x"),
        &[],
    );
    let reference = Side {
        endpoint: named_endpoint("mariadb", &on_mariadb),
        store: Store::mysql(&mariadb, &on_mariadb.db).expect("MariaDB database"),
    };
    let subject = Side {
        endpoint: named_endpoint("mysql8", &on_mysql8),
        store: Store::mysql(&mysql8, &on_mysql8.db).expect("MySQL 8 database"),
    };
    Some(CrossPair {
        runner: Runner::new(reference, subject, Mode::CrossBackend),
        _servers: (on_mariadb, on_mysql8),
    })
}

/// Steps from lines written with `|` for TAB, `DB` for the database name
/// and `~` for NULL, each on the read or the write port (a write names the
/// table it may change).
fn cross_steps(lines: &[(Port, &str, Option<&'static str>)]) -> Vec<Step> {
    lines
        .iter()
        .map(|(port, text, writes)| {
            let mut line = Line::new();
            for t in text.split('|') {
                line = match t {
                    "DB" => line.db(),
                    "~" => line.value(None),
                    _ => line.raw(t),
                };
            }
            Step::Send {
                conn: CONN_PORTS.iter().position(|p| p == port).expect("a port"),
                line,
                writes: *writes,
            }
        })
        .collect()
}

/// Runs `steps` on both servers: no unexcepted difference, and `exception`
/// among those met (None: none met). Returns the exchanges.
fn cross_run(pair: &mut CrossPair, steps: &[Step], exception: Option<&str>) -> Replay {
    run_excepted(&mut pair.runner, steps, exception)
}

/// As `cross_run`, on any runner.
fn run_excepted(runner: &mut Runner, steps: &[Step], exception: Option<&str>) -> Replay {
    let replay = runner.run(steps).expect("cross-backend run");
    assert!(
        replay.difference.is_none(),
        "{:?}\n{}",
        replay.difference,
        hs_conformance::runner::transcript(&replay)
    );
    match exception {
        Some(name) => assert!(
            replay.excepted.contains(&name),
            "{name} not met: {:?}\n{}",
            replay.excepted,
            hs_conformance::runner::transcript(&replay)
        ),
        None => assert!(replay.excepted.is_empty(), "{:?}", replay.excepted),
    }
    replay
}

/// The answers of exchange `i`: (MariaDB's, MySQL 8's), as text.
fn answers(replay: &Replay, i: usize) -> (String, String) {
    let ex = &replay.transcript[i];
    (
        String::from_utf8_lossy(&ex.reference).into_owned(),
        String::from_utf8_lossy(&ex.subject).into_owned(),
    )
}

/// Exception `fraction_rounded_by_mysql8`: a key with a fraction of a
/// second finds row 1 (03:04:05) on MariaDB, which cuts the fraction, and
/// nothing on MySQL 8, which rounds it to 03:04:06; a write stores 05 on
/// MariaDB and 06 on MySQL 8.
#[test]
fn cross_exception_fraction_rounded_by_mysql8() {
    let Some(mut pair) = cross_pair("hst_x_frac") else {
        return;
    };
    let find = cross_steps(&[
        (Port::Read, "P|0|DB|times|k_ts|id", None),
        (Port::Read, "0|=|1|2010-01-02 03:04:05", None),
        (Port::Read, "0|=|1|2010-01-02 03:04:05.678", None),
    ]);
    let replay = cross_run(&mut pair, &find, Some("fraction_rounded_by_mysql8"));
    assert_eq!(answers(&replay, 1), ("0\t1\t1".into(), "0\t1\t1".into()));
    assert_eq!(answers(&replay, 2), ("0\t1\t1".into(), "0\t1".into()));
    let write = cross_steps(&[
        (Port::Write, "P|1|DB|times|PRIMARY|id,tm", None),
        (Port::Write, "1|+|2|100|01:02:03.5", Some("times")),
        (Port::Read, "P|2|DB|times|PRIMARY|tm", None),
    ]);
    let replay = cross_run(&mut pair, &write, Some("fraction_rounded_by_mysql8"));
    assert_eq!(replay.transcript.len(), 2, "the segment ends at the rows");
}

/// Exception `mysql8_handler_read_refuses_the_key`: a key its column cannot
/// store as it is (`abc` for a DATE, an empty string for a YEAR) finds
/// rows on MariaDB and answers `1 1 1210` on MySQL 8; a clean key answers
/// alike.
#[test]
fn cross_exception_mysql8_handler_read_refuses_the_key() {
    let Some(mut pair) = cross_pair("hst_x_1210") else {
        return;
    };
    let steps = cross_steps(&[
        (Port::Read, "P|0|DB|times|k_da|id,da", None),
        (Port::Read, "0|=|1|2010-01-02|10|0", None),
        (Port::Read, "0|>=|1|abc|2|0", None),
        (Port::Read, "P|1|DB|nums|k_yr_db|id,yr", None),
        (Port::Read, "1|>|1||1|0", None),
    ]);
    let replay = cross_run(
        &mut pair,
        &steps,
        Some("mysql8_handler_read_refuses_the_key"),
    );
    let same = answers(&replay, 1);
    assert_eq!(same.0, same.1);
    assert_eq!(same.0, "0\t2\t1\t2010-01-02\t2\t2010-01-02");
    assert_eq!(
        answers(&replay, 2),
        (
            "0\t2\t6\t1000-01-01\t3\t1999-12-31".into(),
            "1\t1\t1210".into()
        )
    );
    assert_eq!(answers(&replay, 4).1, "1\t1\t1210");
    assert_eq!(replay.excepted.len(), 2, "{:?}", replay.excepted);
}

/// Exception `auto_increment_at_its_maximum`: with the counter at INT's
/// largest value, an insert that leaves the id out is refused by MariaDB
/// (`1 1 167`); MySQL 8 takes the largest value again (taken: `1 1 121`).
#[test]
fn cross_exception_auto_increment_at_its_maximum() {
    let Some(mut pair) = cross_pair("hst_x_autoinc") else {
        return;
    };
    let steps = cross_steps(&[
        // ii is unique: the seed rows hold 0, which a left-out ii would be.
        (Port::Write, "P|0|DB|ints|PRIMARY|id,mi,ii", None),
        (Port::Write, "0|+|3|2147483647|1|77", Some("ints")),
        (Port::Write, "P|1|DB|ints|PRIMARY|mi,ii", None),
        (Port::Write, "1|+|2|2|78", Some("ints")),
    ]);
    let replay = cross_run(&mut pair, &steps, Some("auto_increment_at_its_maximum"));
    assert_eq!(answers(&replay, 1), ("0\t1\t0".into(), "0\t1\t0".into()));
    assert_eq!(
        answers(&replay, 3),
        ("1\t1\t167".into(), "1\t1\t121".into())
    );
}

/// Exception `auto_increment_after_a_failed_modify` (seed 490981433 of a
/// long run, reduced): a walk that adds 20000000 to ids and fails on a
/// duplicate name on both, an update, then an insert that leaves the id out:
/// MariaDB gives it 20000006, MySQL 8 20000007.
#[test]
fn cross_exception_auto_increment_after_a_failed_modify() {
    let Some(mut pair) = cross_pair("hst_x_autoinc2") else {
        return;
    };
    let steps = cross_steps(&[
        (Port::Write, "P|2|DB|strs|k_en|en|id,en", None),
        (
            Port::Write,
            "P|3|DB|strs|u_vc|bl,vc,id,vb,ch,tx,bn,en",
            None,
        ),
        (
            Port::Write,
            "3|>=|1|\u{e9}|3|0|-?|-100|5|-20000000|5|-100|-100",
            Some("strs"),
        ),
        (
            Port::Write,
            "3|>|1|zz |1|0|@|0|4|Abdxyz|Abd|q|zz |U|hello|\u{e9}|8|\u{1}A|abc  |HELLO|~|B",
            Some("strs"),
        ),
        (Port::Write, "3|=|1|q|2x|", Some("strs")),
        (Port::Write, "2|+|3|n994|9|9", Some("strs")),
    ]);
    let replay = cross_run(
        &mut pair,
        &steps,
        Some("auto_increment_after_a_failed_modify"),
    );
    assert_eq!(
        answers(&replay, 2),
        ("1\t1\t121".into(), "1\t1\t121".into())
    );
    assert_eq!(
        answers(&replay, 5),
        ("0\t1\t20000006".into(), "0\t1\t20000007".into())
    );
}

/// Exception `invalid_utf8_cut_by_mysql8`: `zz` and a lone UTF-8 lead
/// byte is `zz?` on MariaDB (no such name) and `zz` on MySQL 8 (row 4's
/// `zz `, equal under PAD SPACE).
#[test]
fn cross_exception_invalid_utf8_cut_by_mysql8() {
    let Some(mut pair) = cross_pair("hst_x_utf8") else {
        return;
    };
    let mut steps = cross_steps(&[(Port::Read, "P|0|DB|strs|u_vc|id", None)]);
    steps.push(Step::Send {
        conn: 0,
        line: Line::new()
            .raw("0")
            .raw("=")
            .raw("1")
            .value(Some(b"zz\xc3".to_vec())),
        writes: None,
    });
    let replay = cross_run(&mut pair, &steps, Some("invalid_utf8_cut_by_mysql8"));
    assert_eq!(answers(&replay, 1), ("0\t1".into(), "0\t1\t4".into()));
}

/// FLOAT values compared with a FLOAT column (filters, keys read by SELECT,
/// the rows a modify reads and walks) answer alike on MySQL 8 and MariaDB:
/// hsd writes the single-precision value the column would store, exactly,
/// where it once wrote `CAST(v AS FLOAT)`, which MySQL 8 leaves a double
/// (`fl > 3.14159` found the row holding 3.14159, `fl = 0.1` none, `1e39`
/// answered `1 1 1690`). No exception is met, and the rows agree after
/// the writes (seed 490981392 of a long run changed another row).
#[test]
fn mysql8_float_values_compare_as_on_mariadb() {
    let Some(mut pair) = cross_pair("hst_x_float") else {
        return;
    };
    // nums.fl holds 1.5, 0.1, 3.14159, NULL, -2.5, 100000 and 0 (ids 1 to
    // 8, no 6). A filter makes a find on k_fl a SELECT.
    let steps = cross_steps(&[
        (Port::Read, "P|0|DB|nums|PRIMARY|id|fl", None),
        (Port::Read, "0|>=|1|0|10|0|F|=|0|0.1", None),
        (Port::Read, "0|>=|1|0|10|0|F|>|0|3.14159", None),
        (Port::Read, "0|>=|1|0|10|0|F|>=|0|3.14159", None),
        (Port::Read, "0|>=|1|0|10|0|F|<|0|1e39", None),
        (Port::Read, "0|>=|1|0|10|0|F|>|0|-1e39", None),
        (Port::Read, "0|>=|1|0|10|0|F|<|0|12abc", None),
        (Port::Read, "0|>=|1|0|10|0|F|=|0| 1.5", None),
        (Port::Read, "0|>=|1|0|10|0|F|=|0|-0", None),
        (Port::Read, "P|1|DB|nums|k_fl|id,fl|id", None),
        (Port::Read, "1|=|1|0.1|10|0|F|>|0|0", None),
        (Port::Read, "1|>|1|3.14159|10|0|F|>|0|0", None),
        (Port::Read, "1|<=|1|1e39|10|0|F|>|0|0", None),
        (Port::Read, "1|<|1|12abc|10|0|F|>|0|0", None),
        (Port::Read, "1|=|1| 1.5|10|0|F|>|0|0", None),
        (Port::Read, "1|=|1|-0|10|0|F|>|0|0", None),
    ]);
    let replay = cross_run(&mut pair, &steps, None);
    // NULL compares below every value in a filter, as in the original.
    let want = [
        "0\t1\t2",
        "0\t1\t7",
        "0\t1\t3\t7",
        "0\t1\t1\t2\t3\t4\t5\t7\t8",
        "0\t1\t1\t2\t3\t5\t7\t8",
        "0\t1\t1\t2\t3\t4\t5\t8",
        "0\t1\t1",
        "0\t1\t8",
        "0\t1",
        "0\t2\t2\t0.1",
        "0\t2\t7\t100000",
        "0\t2\t7\t100000\t3\t3.14159\t1\t1.5\t2\t0.1\t8\t0\t5\t-2.5\t4\t\0",
        "0\t2\t3\t3.14159\t1\t1.5\t2\t0.1\t8\t0\t5\t-2.5\t4\t\0",
        "0\t2\t1\t1.5",
        "0\t2\t8\t0",
    ];
    for (i, want) in want.iter().enumerate() {
        assert_eq!(
            answers(&replay, i + 1),
            (want.to_string(), want.to_string())
        );
    }
    // Modifies that read their rows by a FLOAT key, one at a time and
    // walking; the runner compares the rows after them.
    let writes = cross_steps(&[
        (Port::Write, "P|2|DB|nums|k_fl|fl,db|du", None),
        (Port::Write, "2|=|1|0.1|1|0|U|0.1|7", Some("nums")),
        (Port::Write, "2|<=|1|3.14159|1|0|-|~|2", Some("nums")),
        (Port::Write, "2|=|1| 1.5|1|0|+|0|1", Some("nums")),
        (Port::Write, "2|=|1|-0|1|0|+|0|1", Some("nums")),
        (Port::Write, "2|<|1|1e39|2|0|+|0|10", Some("nums")),
        (Port::Write, "2|<|1|12abc|10|0|F|>|0|0|-|0|1", Some("nums")),
    ]);
    let replay = cross_run(&mut pair, &writes, None);
    assert_eq!(replay.transcript.len(), writes.len());
    let want = [
        "0\t1\t1", "0\t1\t1", "0\t1\t1", "0\t1\t1", "0\t1\t2", "0\t1\t4",
    ];
    for (i, want) in want.iter().enumerate() {
        assert_eq!(
            answers(&replay, i + 1),
            (want.to_string(), want.to_string())
        );
    }
}

/// Exception `time_from_a_number_out_of_range`: 838:59:59 + 123456789 is
/// 00:00:00 on MariaDB and 838:59:59 on MySQL 8 (both answer `0 1 1`).
#[test]
fn cross_exception_time_from_a_number_out_of_range() {
    let Some(mut pair) = cross_pair("hst_x_time") else {
        return;
    };
    let steps = cross_steps(&[
        (Port::Write, "P|0|DB|times|PRIMARY|tm", None),
        (Port::Write, "0|=|1|3|1|0|+|123456789", Some("times")),
        (Port::Read, "P|1|DB|times|PRIMARY|tm", None),
    ]);
    let replay = cross_run(&mut pair, &steps, Some("time_from_a_number_out_of_range"));
    assert_eq!(answers(&replay, 1), ("0\t1\t1".into(), "0\t1\t1".into()));
    assert_eq!(replay.transcript.len(), 2, "the segment ends at the rows");
    // TIME opened twice (seed 580670804 of a long run, reduced): MariaDB's
    // second change starts from its 00:00:00 and leaves 00:00:05.
    let twice = cross_steps(&[
        (Port::Write, "P|5|DB|times|PRIMARY|id|dt,da,ts,id", None),
        (Port::Write, "P|3|DB|times|k_da|dt,ts,tm,id,da,tm", None),
        (
            Port::Write,
            "4294967301|<|1|4294967296|5|0|F|>|1|1000-01-01|D|16777216",
            Some("times"),
        ),
        (
            Port::Write,
            "3|<=|1|~|5|0|U|1970-01-01 00:00:01|2011-06-07 08:09:10|03:04:05|4|2010-02-30|838:59:59|extra|extra",
            Some("times"),
        ),
        (Port::Write, "5|>=|1|3|1|0|-|2|2|1.9", Some("times")),
        (
            Port::Write,
            "3|=|1|2010-13-01|2|0|+||9007199254740993|5|1|~|~",
            Some("times"),
        ),
    ]);
    let replay = cross_run(&mut pair, &twice, Some("time_from_a_number_out_of_range"));
    assert_eq!(answers(&replay, 5), ("0\t1\t2".into(), "0\t1\t2".into()));
    // One `-` storing numbers into a TIME and a DATE (seed 946503114 of a
    // long run, reduced): the rows differ in both kinds of cell at once.
    let both = cross_steps(&[
        (
            Port::Write,
            "P|0|DB|times|k_dt_tm|da,dt,ts,tm|da,tm,id,dt",
            None,
        ),
        (
            Port::Write,
            "0|<=|2|2038-01-19 03:14:07|abc|5|1|-|100|123456789|-1|-100",
            Some("times"),
        ),
    ]);
    let replay = cross_run(&mut pair, &both, Some("time_from_a_number_out_of_range"));
    assert_eq!(answers(&replay, 1), ("0\t1\t5".into(), "0\t1\t5".into()));
    // An IN of 839:00:00 (stored 838:59:59) and 00:00:00 with `+` on the
    // TIME key (seed 946503171, reduced): the row the first value changed is
    // 00:00:00 on MariaDB, which the second value finds again, and
    // 838:59:59 on MySQL 8, which it does not.
    let again = cross_steps(&[
        (
            Port::Write,
            "P|3|DB|times|k_dt_tm|tm,da,id,dt|da,dt,ts",
            None,
        ),
        (
            Port::Write,
            "3|+|4|839:00:00|1000-01-01|94|2010-01-02 03:04:05",
            Some("times"),
        ),
        (
            Port::Write,
            "3|=|2|2010-01-02 03:04:05|00:00:00|3|0|@|1|2|839:00:00|00:00:00|+|16777217|",
            Some("times"),
        ),
    ]);
    let replay = cross_run(&mut pair, &again, Some("time_from_a_number_out_of_range"));
    assert_eq!(answers(&replay, 2), ("0\t1\t2".into(), "0\t1\t1".into()));
}

/// Exception `date_from_a_number_mariadb_cannot_read`: 1000-01-01 -
/// 100 is 10000001: the zero date on MariaDB, 1000-00-01 on MySQL 8; a
/// DATETIME 2010-01-02 03:04:05 - 20100101000000 is 1030405: the zero date
/// on MariaDB, 0103-04-05 00:00:00 on MySQL 8.
#[test]
fn cross_exception_date_from_a_number_mariadb_cannot_read() {
    let Some(mut pair) = cross_pair("hst_x_date") else {
        return;
    };
    let steps = cross_steps(&[
        (Port::Write, "P|0|DB|times|PRIMARY|da", None),
        (Port::Write, "0|=|1|6|1|0|-|100", Some("times")),
        (Port::Read, "P|1|DB|times|PRIMARY|da", None),
    ]);
    let short = cross_steps(&[
        (Port::Write, "P|0|DB|times|PRIMARY|dt", None),
        (Port::Write, "0|=|1|1|1|0|-|20100101000000", Some("times")),
    ]);
    let replay = cross_run(
        &mut pair,
        &short,
        Some("date_from_a_number_mariadb_cannot_read"),
    );
    assert_eq!(answers(&replay, 1), ("0\t1\t1".into(), "0\t1\t1".into()));
    let replay = cross_run(
        &mut pair,
        &steps,
        Some("date_from_a_number_mariadb_cannot_read"),
    );
    assert_eq!(answers(&replay, 1), ("0\t1\t1".into(), "0\t1\t1".into()));
}

fn ask(endpoint: &Endpoint, port: Port, lines: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut c = target::open(endpoint, port).expect("connect");
    lines
        .iter()
        .map(|l| c.request(l).expect("answer"))
        .collect()
}

/// A modify whose filter reads a column that the modify before it in the
/// same group changed sees the change, as on the original (hsd's batched
/// read of the group's rows once answered `0 1 0` here: the filter dropped
/// the row before the first change was made).
#[test]
fn filtered_modify_after_a_change_of_its_row_answers_as_the_original() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(server) = TestServer::start(Backend::Mysql, "hst_conf_filtered", &[]) else {
        return;
    };
    let orig = "hst_conf_filtered_orig";
    server.sql(&format!("DROP DATABASE IF EXISTS {orig}"));
    server.sql(&format!("CREATE DATABASE {orig}"));
    for db in [orig, server.db.as_str()] {
        server.sql(&format!(
            "CREATE TABLE {db}.r (id INT PRIMARY KEY, n INT NOT NULL, s VARCHAR(10))"
        ));
        server.sql(&format!(
            "INSERT INTO {db}.r VALUES (5, 0, 'a'), (6, 0, 'b'), (7, 3, 'c')"
        ));
    }
    let send = |endpoint: &Endpoint, db: &str| {
        let mut c = target::open(endpoint, Port::Write).expect("connect");
        let opens = [
            format!("P\t1\t{db}\tr\tPRIMARY\tn"),
            format!("P\t2\t{db}\tr\tPRIMARY\ts\tn"),
        ];
        for p in &opens {
            assert_eq!(c.request(p.as_bytes()).expect("P"), b"0\t1");
        }
        // One group: each pair changes a row, then a filtered modify of
        // the same row reads the changed column.
        let lines: [&[u8]; 6] = [
            b"1\t=\t1\t6\t1\t0\t+\t2",
            b"2\t=\t1\t6\t1\t0\tF\t>=\t0\t1\tU\tx",
            b"1\t=\t1\t7\t1\t0\t-\t3",
            b"2\t=\t1\t7\t1\t0\tF\t>\t0\t0\tU?\ty",
            b"1\t=\t1\t5\t1\t0\t+\t1",
            b"2\t=\t1\t5\t1\t0\tW\t=\t0\t1\tD",
        ];
        c.pipeline(&lines).expect("answers")
    };
    let text = |answers: Vec<Vec<u8>>| {
        answers
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
    };
    let plugin_answers = text(send(&plugin_endpoint(ports, orig), orig));
    let hsd_answers = text(send(&hsd_endpoint(&server), &server.db));
    assert_eq!(hsd_answers, plugin_answers);
    assert_eq!(
        plugin_answers,
        ["0\t1\t1", "0\t1\t1", "0\t1\t1", "0\t1", "0\t1\t1", "0\t1\t1"]
    );
    let rows = |db: &str| server.sql(&format!("SELECT id, n, s FROM {db}.r ORDER BY id"));
    assert_eq!(rows(&server.db), rows(orig));
}

/// Exception `index_id_above_65535`: the original opens id 65536, hsd refuses it.
#[test]
fn exception_index_id_above_65535() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(url) = common::mysql_url() else {
        return;
    };
    let server = TestServer::start(Backend::Mysql, "hst_conf_bigid", &[]).expect("hsd on MariaDB");
    server.sql("CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    server.sql("INSERT INTO t VALUES (1, 10)");
    let _ = url;
    let open = b"P\t65536\thst_conf_bigid\tt\tPRIMARY\tid,v".as_slice();
    let find = b"65536\t=\t1\t1".as_slice();
    let plugin = ask(
        &plugin_endpoint(ports, "hst_conf_bigid"),
        Port::Read,
        &[open, find],
    );
    let hsd = ask(&hsd_endpoint(&server), Port::Read, &[open, find]);
    assert_eq!(plugin, vec![b"0\t1".to_vec(), b"0\t2\t1\t10".to_vec()]);
    assert_eq!(
        hsd,
        vec![b"2\t1\tstmtnum".to_vec(), b"2\t1\tstmtnum".to_vec()]
    );
    for (line, (p, h)) in [open, find].iter().zip(plugin.iter().zip(&hsd)) {
        assert_eq!(
            exceptions::matching(line, p, h),
            Some("index_id_above_65535"),
            "{line:?}"
        );
    }
    // The id just below the limit is no exception: both open it.
    let open_max = b"P\t65535\thst_conf_bigid\tt\tPRIMARY\tid,v".as_slice();
    assert_eq!(
        ask(&hsd_endpoint(&server), Port::Read, &[open_max]),
        vec![b"0\t1".to_vec()]
    );
}

/// Exception `view_open_crashes_original`: hsd answers open_table for a view.
/// Never sent to the original, which crashes on it.
#[test]
fn exception_view_open_crashes_original() {
    let Some(server) = TestServer::start(Backend::Mysql, "hst_conf_view", &[]) else {
        return;
    };
    server.sql("CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    server.sql("CREATE VIEW vw AS SELECT id, v FROM t");
    let open = b"P\t0\thst_conf_view\tvw\tPRIMARY\tid,v".as_slice();
    let answers = ask(
        &hsd_endpoint(&server),
        Port::Read,
        &[open, b"P\t1\tmysql\tuser\t\tUser"],
    );
    assert_eq!(
        answers,
        vec![b"1\t1\topen_table".to_vec(), b"1\t1\topen_table".to_vec()]
    );
    assert_eq!(
        exceptions::matching(open, b"", &answers[0]),
        Some("view_open_crashes_original")
    );
}

/// Exception `line_starting_with_q_or_slash`: hsd answers `2 1 cmd` and keeps
/// serving. Never sent to the original (Q stops its listener).
#[test]
fn exception_line_starting_with_q_or_slash() {
    let server = TestServer::start(Backend::Sqlite, "hst_conf_q", &[]).expect("hsd");
    let ep = hsd_endpoint(&server);
    for port in [Port::Read, Port::Write] {
        let answers = ask(&ep, port, &[b"Q", b"/", b"Quit\t1", b"A\t1"]);
        assert_eq!(
            answers,
            vec![
                b"2\t1\tcmd".to_vec(),
                b"2\t1\tcmd".to_vec(),
                b"2\t1\tcmd".to_vec(),
                b"0\t1".to_vec()
            ]
        );
        assert_eq!(
            exceptions::matching(b"Q", b"", &answers[0]),
            Some("line_starting_with_q_or_slash")
        );
    }
}

/// Exception `counts_beyond_the_line`: counts far beyond the values a line
/// holds are answered at once. Never sent to the original, which allocates
/// them all first.
#[test]
fn exception_counts_beyond_the_line() {
    let server = TestServer::start(Backend::Sqlite, "hst_conf_counts", &[]).expect("hsd");
    server.sql("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
    server.sql("INSERT INTO t VALUES (1, 'a')");
    let ep = hsd_endpoint(&server);
    let open = format!("P\t0\t{}\tt\tPRIMARY\tid,v", server.db);
    let huge_keys = b"0\t=\t4294967295\t1".as_slice();
    let huge_in = b"0\t=\t1\t1\t4294967295\t0\t@\t0\t4294967295\t1".as_slice();
    let answers = ask(&ep, Port::Read, &[open.as_bytes(), huge_keys, huge_in]);
    assert_eq!(answers[0], b"0\t1".to_vec());
    assert_eq!(answers[1], b"2\t1\tkpnum".to_vec());
    // The value the line holds finds the row; the 4096 empty ones find nothing.
    assert_eq!(answers[2], b"0\t2\t1\ta".to_vec());
    for line in [huge_keys, huge_in] {
        assert_eq!(
            exceptions::matching(line, b"", &answers[1]),
            Some("counts_beyond_the_line")
        );
    }
}

/// Exception `explicit_ids_after_an_error`. On a private MariaDB (the shared
/// one must never meet it: the state lasts until the server restarts), the
/// plugin stores an explicit auto-increment value and answers `0 1 0`, as
/// hsd does; after one `P` on a missing table on its write port, it answers
/// `1 1 167` and stores nothing, while hsd goes on storing.
#[test]
fn exception_explicit_ids_after_an_error() {
    if common::mysql_url().is_none() {
        return;
    }
    let instance = common::PrivateMariadb::start("mariadb-sticky-error");
    let server = TestServer::start_at(
        Backend::Mysql,
        Some(instance.url.clone()),
        "hst_conf_sticky",
        &[],
    );
    server.sql("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(8))");
    let plugin = plugin_endpoint(instance.hs_ports, "hst_conf_sticky");
    let hsd = hsd_endpoint(&server);
    let open = b"P\t0\thst_conf_sticky\tt\tPRIMARY\tid,v".as_slice();
    let missing = b"P\t1\thst_conf_sticky\tno_such_table\tPRIMARY\tid".as_slice();
    let before = |id: &str| format!("0\t+\t2\t{id}\tbefore").into_bytes();
    let after = |id: &str| format!("0\t+\t2\t{id}\tafter").into_bytes();

    let answers = ask(&plugin, Port::Write, &[open, &before("100")]);
    assert_eq!(
        answers[1],
        b"0\t1\t0".to_vec(),
        "the fresh plugin stores it"
    );
    let answers = ask(&hsd, Port::Write, &[open, &before("200")]);
    assert_eq!(answers[1], b"0\t1\t0".to_vec());

    let plugin_after = ask(&plugin, Port::Write, &[missing, open, &after("300")]);
    assert_eq!(plugin_after[0], b"1\t1\topen_table".to_vec());
    assert_eq!(
        plugin_after[2],
        b"1\t1\t167".to_vec(),
        "the plugin's sticky error"
    );
    let hsd_after = ask(&hsd, Port::Write, &[missing, open, &after("400")]);
    assert_eq!(hsd_after[0], b"1\t1\topen_table".to_vec());
    assert_eq!(hsd_after[2], b"0\t1\t0".to_vec());
    assert_eq!(
        exceptions::matching(&after("400"), &plugin_after[2], &hsd_after[2]),
        Some("explicit_ids_after_an_error")
    );
    let ids: Vec<String> = server
        .sql("SELECT id FROM t ORDER BY id")
        .into_iter()
        .filter_map(|r| r[0].clone())
        .collect();
    assert_eq!(ids, ["100", "200", "400"]);
}

/// `+`/`-` add to the value a column stores, and a column opened twice
/// starts its second change from what the first stored: a FLOAT whose
/// six-digit text is not its value, a DOUBLE past 2^53, a DECIMAL clamped
/// to its largest value, DATE/DATETIME numbers that read back as dates of
/// another shape (10101 is 2001-01-01), a TIME given a date-time, a BIT
/// read as a big-endian number and saturating. Same lines to the plugin and to
/// hsd, on two copies of one table; answers and rows must be equal.
#[test]
fn arithmetic_on_stored_values_answers_as_the_original() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(server) = TestServer::start(Backend::Mysql, "hst_conf_arith", &[]) else {
        return;
    };
    let orig = "hst_conf_arith_orig";
    server.sql(&format!("DROP DATABASE IF EXISTS {orig}"));
    server.sql(&format!("CREATE DATABASE {orig}"));
    for db in [orig, server.db.as_str()] {
        server.sql(&format!(
            "CREATE TABLE {db}.n (id INT PRIMARY KEY, v FLOAT, d DOUBLE, de DECIMAL(7,2), \
             dt DATETIME, dd DATE, ts TIMESTAMP NULL, tm TIME, bi BIT(8))"
        ));
        server.sql(&format!(
            "INSERT INTO {db}.n VALUES \
             (1, 123456792, 9007199254740992, 12345.67, '2010-01-02 03:04:05', '2010-01-02', '2010-01-02 03:04:05', '00:00:05', 5), \
             (2, 9223372036854775807, 1e19, 99999.99, '2010-01-02 03:04:05', '2010-01-02', '2010-01-02 03:04:05', '00:00:05', 65), \
             (3, 1.5, 2.5, 0.5, '2010-01-02 03:04:05', '2010-01-02', '2010-01-02 03:04:05', '00:00:05', 255)"
        ));
    }
    let lines = |db: &str| -> Vec<Vec<u8>> {
        [
            format!("P\t1\t{db}\tn\tPRIMARY\tv,v,d,d,de,de"),
            "1\t=\t1\t1\t1\t0\t+?\t1\t1\t1\t1\t99999999\t-1".into(),
            "1\t=\t1\t2\t1\t0\t+?\t1\t0\t1\t1\t-99999999\t1".into(),
            "1\t=\t1\t3\t1\t0\t-?\t1\t1\t1\t1\t1\t1".into(),
            format!("P\t2\t{db}\tn\tPRIMARY\tdt,dt,dd,dd,ts,ts,tm,tm"),
            "2\t=\t1\t1\t1\t0\t+\t-20100102030304\t0\t-20100101\t0\t-20100102030304\t0\t20000000\t-2".into(),
            "2\t=\t1\t2\t1\t0\t+\t-20100101030405\t0\t-20090102\t0\t-20100101030405\t0\t20100102030400\t0".into(),
            "2\t=\t1\t3\t1\t0\t+\t-20100102020304\t1\t-20100102\t101\t-20100102020304\t1\t-1\t-1".into(),
            format!("P\t3\t{db}\tn\tPRIMARY\tbi,bi"),
            "3\t>=\t1\t1\t3\t0\t+\t200\t1".into(),
        ]
        .into_iter()
        .map(String::into_bytes)
        .collect()
    };
    let send = |endpoint: &Endpoint, db: &str| {
        let owned = lines(db);
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        ask(endpoint, Port::Write, &refs)
    };
    let plugin_answers = send(&plugin_endpoint(ports, orig), orig);
    let hsd_answers = send(&hsd_endpoint(&server), &server.db);
    assert_eq!(
        hsd_answers
            .iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>(),
        plugin_answers
            .iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>()
    );
    let rows = |db: &str| {
        server.sql(&format!(
            "SELECT id, v, d, de, dt, dd, ts, tm, bi + 0 FROM {db}.n ORDER BY id"
        ))
    };
    let (plugin_rows, hsd_rows) = (rows(orig), rows(&server.db));
    assert_eq!(hsd_rows, plugin_rows);
    // The cases happened as described (a run where nothing changed would
    // also agree): 2^63 in a FLOAT reads as i64::MAX, + 1 wraps; a DECIMAL
    // clamped to 99999.99 reads back as 100000; 10000 and 10101 are
    // 2001-00-00 and 2001-01-01.
    let cell = |r: usize, c: usize| plugin_rows[r][c].clone().unwrap_or_default();
    assert_eq!(cell(1, 1), "-9.22337e18", "{plugin_rows:?}");
    assert_eq!(cell(0, 3), "99999.00", "{plugin_rows:?}");
    assert_eq!(cell(1, 5), "2001-00-00", "{plugin_rows:?}");
    assert_eq!(cell(2, 4), "2001-01-01 00:00:01", "{plugin_rows:?}");
    // A TIME given 20000005 keeps the time of 2000-00-05 00:00:00.
    assert_eq!(cell(0, 7), "-00:00:02", "{plugin_rows:?}");
    // BIT(8): 65 + 200 saturates at 255, which + 1 leaves at 255; 5 + 200
    // + 1 is 206.
    assert_eq!((cell(0, 8), cell(1, 8)), ("206".into(), "255".into()));
}

/// Values a FLOAT column is compared with, each stored into the column
/// first as the original stores it: text past the number, white space, an
/// exponent, past FLOAT's range (held at its largest), below its smallest
/// (0), a negative zero, digits past the thirtieth (dropped, not rounded),
/// a negative value in an UNSIGNED column, a FLOAT(7,4)'s rounding.
const FLOAT_INPUTS: [&str; 18] = [
    "0.1",
    "3.14159",
    "1e39",
    "-1e39",
    "1e400",
    "12abc",
    " 1.5",
    "1.5 ",
    "-0",
    "-2.5",
    "1.00005",
    "1.000000059604644886412927462515654042363166809082031251",
    "1e-45",
    "1e-46",
    "3.4028235e38",
    "",
    "abc",
    "999.99995",
];

/// FLOAT keys, filters and the rows modifies read by a FLOAT key answer as
/// on the original, for a FLOAT, a FLOAT(7,4) and a FLOAT UNSIGNED: hsd
/// writes the single-precision value the column stores itself (see
/// `hsd_storage::floats`). Finds by key go both through HANDLER and (with a
/// filter) through SELECT. Same lines to the plugin and to hsd, on two
/// copies of one table; answers and rows must be equal.
#[test]
fn float_values_compare_as_the_original() {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(server) = TestServer::start(Backend::Mysql, "hst_conf_float", &[]) else {
        return;
    };
    let orig = "hst_conf_float_orig";
    server.sql(&format!("DROP DATABASE IF EXISTS {orig}"));
    server.sql(&format!("CREATE DATABASE {orig}"));
    for db in [orig, server.db.as_str()] {
        server.sql(&format!(
            "CREATE TABLE {db}.f (id INT PRIMARY KEY, f FLOAT, fmd FLOAT(7,4), \
             fu FLOAT UNSIGNED, n INT NOT NULL DEFAULT 0, \
             KEY k_f (f), KEY k_fmd (fmd), KEY k_fu (fu))"
        ));
        let values: Vec<String> = FLOAT_INPUTS
            .iter()
            .enumerate()
            .map(|(i, v)| format!("({}, '{v}', '{v}', '{v}')", i + 1))
            .collect();
        // Non-strict, as the plugin stores: out-of-range values are held.
        server.sql(&format!(
            "SET SESSION sql_mode = ''; INSERT INTO {db}.f (id, f, fmd, fu) VALUES {}",
            values.join(", ")
        ));
    }
    let reads = |db: &str| -> Vec<Vec<u8>> {
        let mut lines = vec![
            format!("P\t1\t{db}\tf\tPRIMARY\tid\tf,fmd,fu"),
            format!("P\t2\t{db}\tf\tk_f\tid\tid"),
            format!("P\t3\t{db}\tf\tk_fmd\tid\tid"),
            format!("P\t4\t{db}\tf\tk_fu\tid\tid"),
        ];
        for v in FLOAT_INPUTS {
            for column in 0..3 {
                for op in ["=", ">", "<="] {
                    lines.push(format!("1\t>=\t1\t0\t100\t0\tF\t{op}\t{column}\t{v}"));
                }
            }
            for index in 2..=4 {
                lines.push(format!("{index}\t=\t1\t{v}\t100\t0"));
                lines.push(format!("{index}\t=\t1\t{v}\t100\t0\tF\t>\t0\t0"));
                lines.push(format!("{index}\t>\t1\t{v}\t3\t0\tF\t>\t0\t0"));
                lines.push(format!("{index}\t<=\t1\t{v}\t3\t0"));
            }
        }
        lines.into_iter().map(String::into_bytes).collect()
    };
    let writes = |db: &str| -> Vec<Vec<u8>> {
        let mut lines = vec![
            format!("P\t5\t{db}\tf\tk_f\tn"),
            format!("P\t6\t{db}\tf\tk_fmd\tn"),
            format!("P\t7\t{db}\tf\tk_fu\tn"),
        ];
        for (i, v) in FLOAT_INPUTS.iter().enumerate() {
            let bit = 1 << (i % 20);
            lines.push(format!("5\t=\t1\t{v}\t100\t0\t+\t{bit}"));
            lines.push(format!("6\t=\t1\t{v}\t100\t0\t+\t{}", bit * 2));
            lines.push(format!("7\t>=\t1\t{v}\t2\t0\t-\t{bit}"));
        }
        lines.into_iter().map(String::into_bytes).collect()
    };
    let send = |endpoint: &Endpoint, db: &str| {
        let text = |port, owned: Vec<Vec<u8>>| {
            let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
            ask(endpoint, port, &refs)
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
        };
        (text(Port::Read, reads(db)), text(Port::Write, writes(db)))
    };
    let plugin_answers = send(&plugin_endpoint(ports, orig), orig);
    let hsd_answers = send(&hsd_endpoint(&server), &server.db);
    let read_lines = reads(orig);
    for (i, (want, got)) in plugin_answers.0.iter().zip(&hsd_answers.0).enumerate() {
        assert_eq!(
            got,
            want,
            "{}",
            String::from_utf8_lossy(&read_lines[i]).replace('\t', "|")
        );
    }
    assert_eq!(hsd_answers.1, plugin_answers.1);
    let rows = |db: &str| {
        server.sql(&format!(
            "SELECT id, CAST(f AS DOUBLE), CAST(fmd AS DOUBLE), CAST(fu AS DOUBLE), n \
             FROM {db}.f ORDER BY id"
        ))
    };
    assert_eq!(rows(&server.db), rows(orig));
    // The cases happened as described (a run where nothing matched would
    // also agree): the filter `f = v` on the first row finds the row
    // holding v itself; `f > 3.14159` leaves out the row holding 3.14159.
    let by_filter = |v: &str, column: usize, op: &str| {
        let line = format!("1\t>=\t1\t0\t100\t0\tF\t{op}\t{column}\t{v}");
        let at = read_lines
            .iter()
            .position(|l| *l == line.as_bytes())
            .expect("a line sent");
        plugin_answers.0[at].clone()
    };
    let ids = |answer: String| -> Vec<String> {
        answer
            .split('\t')
            .skip(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    for (v, want) in [
        ("0.1", vec!["1"]),
        ("1e39", vec!["3", "5", "15"]),
        ("12abc", vec!["6"]),
        (" 1.5", vec!["7", "8"]),
        ("-0", vec!["9", "14", "16", "17"]),
    ] {
        assert_eq!(ids(by_filter(v, 0, "=")), want, "f = {v:?}");
    }
    assert!(!ids(by_filter("3.14159", 0, ">")).contains(&"2".to_string()));
    // FLOAT(7,4): 1.00005 is 1.0001, 999.99995 and 1e39 999.9999.
    assert_eq!(ids(by_filter("1.00005", 1, "=")), ["11"]);
    assert_eq!(ids(by_filter("1e39", 1, "=")), ["3", "5", "15", "18"]);
    // UNSIGNED: -2.5 and -1e39 are 0.
    assert_eq!(
        ids(by_filter("-2.5", 2, "=")),
        ["4", "9", "10", "14", "16", "17"]
    );
}

/// Writers per side in `concurrent_writers_answer_as_the_original`, requests
/// per writer, and how many of them each pipelined chunk carries.
const WRITERS: usize = 8;
const WRITES_PER_WRITER: usize = 96;
const CHUNK: usize = 16;

/// One writer's seeded requests, on its own keys only (ids `w*100+1..`,
/// unique names `w<w>_..`), so its answers do not depend on how the
/// writers interleave: inserts (some duplicates), U/D/+/- and their `?`
/// forms by primary key and by unique index, updates of columns no unique
/// key holds (merged into one statement), short ranges, finds.
fn writer_stream(seed: u64, w: usize) -> Vec<String> {
    let mut rng = hs_conformance::rng::Rng::new(seed * 1_000 + w as u64);
    let lo = w * 100 + 1;
    let id = |rng: &mut hs_conformance::rng::Rng| lo + rng.below(40);
    let name = |rng: &mut hs_conformance::rng::Rng| format!("w{w}_{}", rng.below(50));
    (0..WRITES_PER_WRITER)
        .map(|_| match rng.below(14) {
            0 | 1 => format!(
                "0\t+\t4\t{}\t{}\t{}\tt{}",
                id(&mut rng),
                name(&mut rng),
                rng.below(9),
                rng.below(99)
            ),
            2 => format!(
                "0\t=\t1\t{}\t1\t0\tU\t{}\t{}\t{}\tu{}",
                id(&mut rng),
                id(&mut rng),
                name(&mut rng),
                rng.below(9),
                rng.below(99)
            ),
            3 => format!("0\t=\t1\t{}\t1\t0\tD", id(&mut rng)),
            4 => format!("0\t=\t1\t{}\t1\t0\tD?", id(&mut rng)),
            5 => format!("2\t=\t1\t{}\t1\t0\t+\t{}", id(&mut rng), rng.below(5)),
            6 => format!("2\t=\t1\t{}\t1\t0\t-\t{}", id(&mut rng), rng.below(5)),
            7 => format!("2\t=\t1\t{}\t1\t0\t+?\t1", id(&mut rng)),
            8 => format!(
                "1\t=\t1\t{}\t1\t0\tU?\t{}\t{}",
                name(&mut rng),
                name(&mut rng),
                rng.below(9)
            ),
            9 => format!("1\t=\t1\t{}\t1\t0\tD", name(&mut rng)),
            // W stops the walk at the writer's last key.
            10 => format!(
                "2\t>=\t1\t{}\t3\t0\tW\t<=\t0\t{}\t+\t1",
                id(&mut rng),
                lo + 98
            ),
            11 => format!(
                "3\t=\t1\t{}\t1\t0\tU\t{}\tv{}",
                id(&mut rng),
                rng.below(9),
                rng.below(99)
            ),
            _ => format!("0\t=\t1\t{}", id(&mut rng)),
        })
        .collect()
}

/// Sends every writer's stream to `addr` at once, in pipelined chunks;
/// returns each writer's answers.
fn run_writers(addr: &str, db: &str, streams: &[Vec<String>]) -> Vec<Vec<String>> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let mut tasks = Vec::new();
        for stream in streams {
            let addr = addr.to_string();
            let open: Vec<String> = vec![
                format!("P\t0\t{db}\tcw\tPRIMARY\tid,u,n,t"),
                format!("P\t1\t{db}\tcw\tuu\tu,n"),
                format!("P\t2\t{db}\tcw\tPRIMARY\tn\tid"),
                format!("P\t3\t{db}\tcw\tPRIMARY\tn,t"),
            ];
            let stream = stream.clone();
            tasks.push(tokio::spawn(async move {
                let mut client = hs_client::Client::connect(&addr).await.expect("connect");
                for r in client.pipeline(&open).await.expect("open") {
                    assert_eq!(common::fmt(&r), "0\t1", "P");
                }
                let mut answers = Vec::new();
                for chunk in stream.chunks(CHUNK) {
                    let got = client.pipeline(chunk).await.expect("pipeline");
                    answers.extend(got.iter().map(common::fmt));
                }
                answers
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.push(t.await.expect("writer task"));
        }
        all
    })
}

/// The conformance suite sends one request at a time; this runs writes as
/// applications do, several connections pipelining at once, so that hsd
/// groups them (multi-row INSERTs, pipelined statements, shared commits).
/// The same streams go to the plugin and to hsd, each on its own copy of
/// the table: every answer and the final rows must be the same.
#[test]
fn concurrent_writers_answer_as_the_original() {
    writers_match("hst_conf_writers", &[], 1..=3);
}

/// The same with two write threads, whose groups can deadlock with each
/// other inside InnoDB: a deadlocked group runs again, and no client sees
/// `1 1 149`/1213.
#[test]
fn concurrent_writers_on_two_write_threads_answer_as_the_original() {
    writers_match("hst_conf_writers2", &["--threads-wr", "2"], 4..=6);
}

fn writers_match(db: &str, args: &[&str], seeds: std::ops::RangeInclusive<u64>) {
    let Some(ports) = common::original_ports() else {
        return;
    };
    let Some(server) = TestServer::start(Backend::Mysql, db, args) else {
        return;
    };
    let plugin_db = format!("{db}_plugin");
    let table = "CREATE TABLE cw (id INT PRIMARY KEY, u VARCHAR(16) NOT NULL, \
                 n INT NOT NULL, t VARCHAR(20), UNIQUE KEY uu (u))";
    let fill: String = (1..=WRITERS * 100)
        .filter(|id| id % 100 <= 30)
        .map(|id| format!("({id}, 'w{}_{}', {}, 'r{id}')", id / 100, id % 50, id % 7))
        .collect::<Vec<_>>()
        .join(", ");
    server.sql(&format!("DROP DATABASE IF EXISTS {plugin_db}"));
    server.sql(&format!("CREATE DATABASE {plugin_db}"));
    for db in [server.db.as_str(), plugin_db.as_str()] {
        server.sql(&format!("USE {db}; {table}"));
        server.sql(&format!("USE {db}; INSERT INTO cw VALUES {fill}"));
    }
    for seed in seeds {
        let streams: Vec<Vec<String>> = (0..WRITERS).map(|w| writer_stream(seed, w)).collect();
        let plugin = run_writers(&format!("127.0.0.1:{}", ports.1), &plugin_db, &streams);
        let hsd = run_writers(&server.write_addr, &server.db, &streams);
        for (w, (p, h)) in plugin.iter().zip(&hsd).enumerate() {
            for (k, (pa, ha)) in p.iter().zip(h).enumerate() {
                if pa != ha {
                    let transcript: Vec<String> = (0..=k)
                        .map(|j| format!("{:?} -> plugin {:?} hsd {:?}", streams[w][j], p[j], h[j]))
                        .collect();
                    panic!(
                        "seed {seed}, writer {w}, request {k} answered differently:\n{}",
                        transcript.join("\n")
                    );
                }
            }
        }
        let plugin_rows = server.sql(&format!("SELECT * FROM {plugin_db}.cw ORDER BY id"));
        let hsd_rows = server.sql(&format!("SELECT * FROM {}.cw ORDER BY id", server.db));
        assert_eq!(plugin_rows, hsd_rows, "seed {seed}: rows differ");
        assert!(plugin_rows.len() > 100, "the streams left rows to compare");
    }
    server.sql(&format!("DROP DATABASE {plugin_db}"));
}

/// Many clients at depth 1 mixing reads and writes on the same rows, all
/// at once: hsd runs what arrives together together (lookups in one pass
/// or statement, writes in one group); the answers must be the plugin's.
fn lockstep_matches(backend: Backend, db: &str) {
    let (Some(ports), Some(url)) = (common::original_ports(), common::mysql_url()) else {
        return;
    };
    let Some(server) = TestServer::start(backend, db, &[]) else {
        return;
    };
    let plugin_db = format!("{db}_plugin");
    let rows = lockstep::seed_rows();
    let mut sql = common::blocking::fresh_db(&url, &plugin_db);
    common::blocking::exec(&mut sql, lockstep::TABLE_SQL);
    common::blocking::exec(
        &mut sql,
        &format!("INSERT INTO ls VALUES {}", rows.join(", ")),
    );
    let table = match backend {
        Backend::Sqlite => {
            "CREATE TABLE ls (id INT NOT NULL PRIMARY KEY, n INT NOT NULL, s TEXT NOT NULL)"
        }
        Backend::Mysql => lockstep::TABLE_SQL,
    };
    server.sql(table);
    server.sql(&format!("INSERT INTO ls VALUES {}", rows.join(", ")));
    let seed = 7;
    let plugin = lockstep::answers(&plugin_endpoint(ports, &plugin_db), seed);
    let hsd = lockstep::answers(&hsd_endpoint(&server), seed);
    for (c, (p, h)) in plugin.iter().zip(&hsd).enumerate() {
        for (k, (pa, ha)) in p.iter().zip(h).enumerate() {
            assert_eq!(
                ha, pa,
                "client {c}, step {k}: hsd's answer differs from the plugin's"
            );
        }
    }
    // The reads saw writes of earlier steps (the test means something).
    let changed_reads = plugin
        .iter()
        .flatten()
        .filter(|a| a.starts_with("0\t=") && !a.contains("\ts"))
        .count();
    assert!(changed_reads > 0, "no read met a changed row");
    let final_rows = |endpoint: &Endpoint| {
        let mut c = target::open(endpoint, Port::Read).expect("connect");
        let db = &endpoint.db;
        assert_eq!(
            c.request(format!("P\t9\t{db}\tls\tPRIMARY\tid,n,s").as_bytes())
                .expect("P"),
            b"0\t1"
        );
        c.request(b"9\t>=\t1\t0\t1000\t0").expect("rows")
    };
    assert_eq!(
        final_rows(&hsd_endpoint(&server)),
        final_rows(&plugin_endpoint(ports, &plugin_db))
    );
}

#[test]
fn many_depth_one_clients_answer_as_the_original_on_mariadb() {
    lockstep_matches(Backend::Mysql, "hst_conf_lockstep");
}

#[test]
fn many_depth_one_clients_answer_as_the_original_on_the_embedded_store() {
    lockstep_matches(Backend::Sqlite, "hst_conf_lockstep_lite");
}
