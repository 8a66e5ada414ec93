//! The server's GTID tracker switched off by its administrator
//! (`SET GLOBAL session_track_system_variables = ''` on MariaDB): hsd's
//! commits then come back without their GTID although hsd asked for it. A
//! commit that wrote and reports none is of unknown position (as one whose
//! answer was lost), never "logged nothing": reads right after hsd's own
//! writes, through the row cache in `acknowledged` mode, ask the server's
//! position and see every write. At login hsd finds out that the tracker
//! is off (a tracked variable set again comes back as no change) and says
//! so once, `hsd check` and `hsd serve` in the same words. A MariaDB of this
//! test's own (scripts/mariadb.sh with its own data dir), since the setting
//! is global.

mod common;
use common::blocking::*;
use common::{hsd_bin, mysql_url, run_hsd, PrivateMariadb};

#[test]
fn commits_without_their_gtid_are_waited_for_not_trusted() {
    if mysql_url().is_none() {
        return;
    }
    let inst = PrivateMariadb::start("mariadb-tracking");
    let db = "hsdt_tracking";
    let mut sql = fresh_db(&inst.url, db);
    exec(
        &mut sql,
        "CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
    );
    exec(&mut sql, "INSERT INTO kv VALUES (1, 'a'), (2, 'b')");
    let old = scalar(&mut sql, "SELECT @@GLOBAL.session_track_system_variables");
    exec(&mut sql, "SET GLOBAL session_track_system_variables = ''");
    let hsd = Hsd::start(
        &inst.url,
        &[
            "--row-cache-mib",
            "8",
            "--read-consistency",
            "acknowledged",
            "--admin-address",
            "127.0.0.1:0",
        ],
    );
    let admin = hsd.admin.clone().expect("admin address");
    let mut r = hsd.reader();
    let mut w = hsd.writer();
    assert_eq!(r.q(&format!("P|0|{db}|kv|PRIMARY|id,v")), "0|1");
    assert_eq!(w.q(&format!("P|0|{db}|kv|PRIMARY|id,v")), "0|1");
    let waits_before = metric(&admin, "hsd_row_cache_position_waits_total");
    let mut stale = Vec::new();
    for i in 0..100 {
        let key = 1 + i % 2;
        // The key is read (and cached) before each write.
        let _ = r.q(&format!("0|=|1|{key}"));
        let _ = r.q(&format!("0|=|1|{key}"));
        assert_eq!(w.q(&format!("0|=|1|{key}|1|0|U|{key}|w{i}")), "0|1|1");
        let got = r.q(&format!("0|=|1|{key}"));
        if got != format!("0|2|{key}|w{i}") {
            stale.push(format!("write {i}: read back {got}"));
        }
    }
    let waits = metric(&admin, "hsd_row_cache_position_waits_total") - waits_before;
    // What `hsd check` and `hsd serve` say at login, in the same words.
    let checked = std::process::Command::new(hsd_bin())
        .args(["check", "--backend", &inst.url, "--row-cache-mib", "8"])
        .env_remove("HSD_CONFIG")
        .output()
        .expect("run hsd check");
    let check_out = String::from_utf8_lossy(&checked.stdout).into_owned();
    let served = run_hsd(
        &[
            "serve",
            "--address",
            "127.0.0.1",
            "--port",
            "0",
            "--port-wr",
            "0",
            "--backend",
            &inst.url,
            "--row-cache-mib",
            "8",
        ],
        &[("RUST_LOG", "warn")],
    );
    exec(
        &mut sql,
        &format!("SET GLOBAL session_track_system_variables = '{old}'"),
    );
    let said = "the server does not report the GTID of commits although hsd asked";
    let line = check_out
        .lines()
        .find(|l| l.contains(said))
        .unwrap_or_else(|| panic!("hsd check does not say the tracker is off:\n{check_out}"));
    assert!(line.starts_with("warning: --backend "), "{line}");
    assert_eq!(checked.status.code(), Some(1), "{check_out}");
    let words = &line[line.find(said).unwrap_or_default()..];
    assert!(
        served.stderr.contains(words),
        "hsd serve does not log {words:?}:\n{}",
        served.stderr
    );
    eprintln!("{} of 100 reads stale, {waits} position waits", stale.len());
    assert!(
        stale.is_empty(),
        "{} of 100 reads stale: {stale:?}",
        stale.len()
    );
    assert!(waits >= 1.0, "no read asked the server's position");
}
