//! The differential conformance suite's short run: fixed seeds sent to the
//! original HandlerSocket plugin (loaded in the private MariaDB by
//! scripts/mariadb.sh) and to hsd, every answer compared byte for byte and the
//! tables row by row (crates/hs-conformance). Strict: any difference that is
//! not a documented exception fails, with the reduced transcript.
//!
//! Also one named test per documented exception (hs_conformance::exceptions).

mod common;

use common::{Backend, TestServer};
use hs_conformance::exceptions;
use hs_conformance::generate::Port;
use hs_conformance::runner::{Runner, Side};
use hs_conformance::store::Store;
use hs_conformance::suite::{self, Config, Mode};
use hs_conformance::target::{Connection, Endpoint};

/// Requests per backend in the short run, and the seeds it starts from.
const SHORT_RUN_REQUESTS: usize = 3_000;
const MYSQL_FIRST_SEED: u64 = 1;
const SQLITE_FIRST_SEED: u64 = 5_000;

fn plugin_endpoint(ports: (u16, u16), db: &str) -> Endpoint {
    Endpoint {
        name: "plugin".into(),
        read_addr: format!("127.0.0.1:{}", ports.0),
        write_addr: format!("127.0.0.1:{}", ports.1),
        db: db.into(),
    }
}

fn hsd_endpoint(s: &TestServer) -> Endpoint {
    Endpoint {
        name: "hsd".into(),
        read_addr: s.read_addr.clone(),
        write_addr: s.write_addr.clone(),
        db: s.db.clone(),
    }
}

fn short_run(mode: Mode, first_seed: u64, plugin: Side, hsd: Side) {
    let mut runner = Runner::new(plugin, hsd, mode.tables());
    let cfg = Config {
        mode,
        first_seed,
        requests: SHORT_RUN_REQUESTS,
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
        "hsd differs from the original:\n{msg}"
    );
    assert!(report.requests >= SHORT_RUN_REQUESTS, "{msg}");
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

fn ask(endpoint: &Endpoint, port: Port, lines: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut c = Connection::open(endpoint, port).expect("connect");
    lines
        .iter()
        .map(|l| c.request(l).expect("answer"))
        .collect()
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
