//! The server's GTID tracker switched off by its administrator
//! (`SET GLOBAL session_track_system_variables = ''` on MariaDB): hsd's
//! commits then come back without their GTID although hsd asked for it. A
//! commit that wrote and reports none is of unknown position (as one whose
//! answer was lost), never "logged nothing": reads right after hsd's own
//! writes, through the row cache in `acknowledged` mode, ask the server's
//! position and see every write. A MariaDB of this test's own
//! (scripts/mariadb.sh with its own data dir), since the setting is global.

mod common;
use common::blocking::*;
use common::{mysql_url, PrivateMariadb};

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
    exec(
        &mut sql,
        &format!("SET GLOBAL session_track_system_variables = '{old}'"),
    );
    eprintln!("{} of 100 reads stale, {waits} position waits", stale.len());
    assert!(
        stale.is_empty(),
        "{} of 100 reads stale: {stale:?}",
        stale.len()
    );
    assert!(waits >= 1.0, "no read asked the server's position");
}
