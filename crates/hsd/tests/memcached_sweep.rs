//! The sweep of expired rows (`--memcached-sweep-interval`,
//! `--memcached-sweep-limit`): rows whose expiry has passed disappear from
//! the table as SQL sees it, at most the limit per sweep, while rows that
//! never expire (0 or NULL) or expire later stay. On the embedded store,
//! MariaDB (`HSD_TEST_MYSQL_URL`) and MySQL 8 (`HSD_TEST_MYSQL8_URL`).

mod common;
mod memcached;

use memcached::{Front, Store};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const EXPIRED: usize = 25;
const LIMIT: usize = 10;

fn count(front: &Front, condition: &str) -> usize {
    let rows = front
        .server
        .sql(&format!("SELECT COUNT(*) FROM demo_test WHERE {condition}"));
    rows.first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count, not {rows:?}"))
}

fn expired_rows_are_swept_a_bounded_number_at_a_time(store: Store, db: &str) {
    let Some(front) = Front::start_with(
        store,
        db,
        &[
            "--memcached-sweep-interval",
            "2",
            "--memcached-sweep-limit",
            &LIMIT.to_string(),
        ],
    ) else {
        return;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let mut values = Vec::new();
    for i in 0..EXPIRED {
        values.push(format!(
            "('gone{i:02}', 'old', 0, 1, {})",
            now - 100 - i as u64
        ));
    }
    for i in 0..5 {
        values.push(format!("('later{i}', 'new', 0, 1, {})", now + 3600));
    }
    for i in 0..3 {
        values.push(format!("('never{i}', 'kept', 0, 1, 0)"));
    }
    for i in 0..2 {
        values.push(format!("('null{i}', 'kept', 0, 1, NULL)"));
    }
    front.server.sql(&format!(
        "INSERT INTO demo_test (c1, c2, c3, c4, c5) VALUES {}",
        values.join(", ")
    ));
    let expired = format!("c5 > 0 AND c5 <= {now}");
    // What SQL sees, sampled far more often than the sweep runs.
    let mut seen = vec![count(&front, &expired)];
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.last() != Some(&0) {
        assert!(Instant::now() < deadline, "expired rows left: {seen:?}");
        std::thread::sleep(Duration::from_millis(100));
        let n = count(&front, &expired);
        if seen.last() != Some(&n) {
            seen.push(n);
        }
    }
    assert_eq!(seen[0], EXPIRED, "{seen:?}");
    for pair in seen.windows(2) {
        assert!(
            pair[0] > pair[1] && pair[0] - pair[1] <= LIMIT,
            "a sweep deleted more than {LIMIT} rows: {seen:?}"
        );
    }
    assert!(
        seen.len() > EXPIRED.div_ceil(LIMIT),
        "at least three sweeps: {seen:?}"
    );
    assert_eq!(
        count(&front, "1 = 1"),
        10,
        "the rows that had not expired stay"
    );
    assert_eq!(count(&front, &format!("c5 > {now}")), 5);
    assert_eq!(count(&front, "c5 = 0"), 3);
    assert_eq!(count(&front, "c5 IS NULL"), 2);
    // The front still serves what is left.
    let mut conn = front.conn();
    assert_eq!(
        conn.ask("get later0\r\n"),
        "VALUE later0 0 3\r\nnew\r\nEND\r\n"
    );
    assert_eq!(conn.ask("get gone00\r\n"), "END\r\n");
}

#[test]
fn sqlite() {
    expired_rows_are_swept_a_bounded_number_at_a_time(Store::Sqlite, "hst_mc_sweep");
}

#[test]
fn mariadb() {
    expired_rows_are_swept_a_bounded_number_at_a_time(Store::Mariadb, "hst_mc_sweep");
}

#[test]
fn mysql8() {
    expired_rows_are_swept_a_bounded_number_at_a_time(Store::Mysql8, "hst_mc_sweep");
}
