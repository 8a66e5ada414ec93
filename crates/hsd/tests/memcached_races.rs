//! Memcached writes from many connections at once over keys no row holds
//! yet: whatever hsd answers must be what the table kept. A `set` answered
//! `STORED` must leave its key readable, holding the value of one of the
//! sets that were answered `STORED` for it (the last to commit wins, as in
//! memcached); a key whose every set was answered with an error must
//! read back nothing. On the embedded store, MariaDB and MySQL 8.

mod common;
mod memcached;

use memcached::{Front, Store};
use std::collections::{HashMap, HashSet};

/// One test per store: `name::sqlite`, `name::mariadb`, `name::mysql8`.
macro_rules! every_store {
    ($name:ident, $body:ident, $db:expr) => {
        mod $name {
            #[test]
            fn sqlite() {
                super::$body(super::Store::Sqlite, $db);
            }
            #[test]
            fn mariadb() {
                super::$body(super::Store::Mariadb, $db);
            }
            #[test]
            fn mysql8() {
                super::$body(super::Store::Mysql8, $db);
            }
        }
    };
}

/// Connections setting the same new keys at once.
const CLIENTS: usize = 6;
/// New keys per round; every client sets each of them once.
const KEYS: usize = 150;
/// Rounds, each over keys no row holds yet.
const ROUNDS: usize = 3;

/// `set` of new keys from `CLIENTS` connections at once, each client in its
/// own key order so that updates and inserts of one key meet.
fn concurrent_sets_of_new_keys(store: Store, db: &str) {
    let Some(front) = Front::start(store, db) else {
        return;
    };
    let mut stored_total = 0usize;
    for round in 0..ROUNDS {
        // (key, value) of every set answered STORED, and every other answer.
        let answers: Vec<Vec<(String, String, String)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..CLIENTS)
                .map(|client| {
                    let front = &front;
                    scope.spawn(move || {
                        let mut c = front.conn();
                        let mut out = Vec::with_capacity(KEYS);
                        for i in 0..KEYS {
                            // Odd clients walk the keys backwards.
                            let k = if client % 2 == 0 { i } else { KEYS - 1 - i };
                            let key = format!("r{round}k{k}");
                            let value = format!("c{client}-{k}");
                            let answer =
                                c.ask(&format!("set {key} 0 0 {}\r\n{value}\r\n", value.len()));
                            out.push((key, value, answer));
                        }
                        out
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a client thread"))
                .collect()
        });
        let mut stored: HashMap<String, HashSet<String>> = HashMap::new();
        let mut given: HashMap<String, HashSet<String>> = HashMap::new();
        for (key, value, answer) in answers.into_iter().flatten() {
            given.entry(key.clone()).or_default().insert(value.clone());
            if answer == "STORED\r\n" {
                stored.entry(key).or_default().insert(value);
            } else {
                assert!(
                    answer.starts_with("SERVER_ERROR"),
                    "set {key} answered {answer:?}"
                );
            }
        }
        let mut c = front.conn();
        let mut lost = Vec::new();
        for k in 0..KEYS {
            let key = format!("r{round}k{k}");
            let answer = c.ask(&format!("get {key}\r\n"));
            let value = answer
                .strip_prefix(&format!("VALUE {key} 0 "))
                .and_then(|rest| rest.split_once("\r\n"))
                .map(|(_, rest)| rest.trim_end_matches("\r\nEND\r\n").to_string());
            match (stored.get(&key), value) {
                (Some(values), Some(v)) if values.contains(&v) => {}
                (Some(values), v) => lost.push(format!(
                    "{key}: STORED as {values:?}, reads back {v:?} ({answer:?})"
                )),
                (None, Some(v)) => lost.push(format!(
                    "{key}: every set failed ({:?}), reads back {v:?}",
                    given[&key]
                )),
                (None, None) => {}
            }
        }
        assert!(
            lost.is_empty(),
            "round {round}: {} of {KEYS} keys do not read back what was answered: {:?}",
            lost.len(),
            &lost[..lost.len().min(5)]
        );
        stored_total += stored.values().map(HashSet::len).sum::<usize>();
    }
    // The test means something only if most sets were answered STORED.
    assert!(
        stored_total * 2 > ROUNDS * KEYS * CLIENTS,
        "only {stored_total} of {} sets answered STORED",
        ROUNDS * KEYS * CLIENTS
    );
}

every_store!(
    concurrent_new_key_sets,
    concurrent_sets_of_new_keys,
    "hst_mc_set_race"
);

/// A container whose table has another unique index besides the key's.
const UNIQUE_VALUES: &str = r#"
[[memcached.containers]]
name = "default"
db_schema = "{db}"
db_table = "unique_values"
key_columns = "c1"
value_columns = "c2"
flags = "c3"
cas_column = "c4"
expire_time_column = "c5"
unique_idx_name_on_key = "PRIMARY"
"#;

/// A `set` whose insert meets a duplicate in another unique index (the
/// value column's) writes nothing: it must not be answered `STORED`, and
/// the key must stay missing. The same path as a `set` racing another
/// `set` of its key, where the row that refused the insert is not there
/// when the update looks for it.
fn set_refused_by_another_unique_index(store: Store, db: &str) {
    let Some(front) = Front::start_containers(store, db, UNIQUE_VALUES) else {
        return;
    };
    front.server.sql(
        "CREATE TABLE unique_values (c1 VARCHAR(32) NOT NULL PRIMARY KEY, c2 VARCHAR(64), \
         c3 INT, c4 BIGINT UNSIGNED, c5 INT, UNIQUE (c2))",
    );
    let mut c = front.conn();
    assert_eq!(c.ask("set first 0 0 4\r\nsame\r\n"), "STORED\r\n");
    let answer = c.ask("set second 0 0 4\r\nsame\r\n");
    assert!(
        answer.starts_with("SERVER_ERROR"),
        "a set the table refused answered {answer:?}"
    );
    assert_eq!(c.ask("get second\r\n"), "END\r\n");
    assert_eq!(c.ask("get first\r\n"), "VALUE first 0 4\r\nsame\r\nEND\r\n");
    // Once the other row moves away, the same set is kept.
    assert_eq!(c.ask("set first 0 0 5\r\nother\r\n"), "STORED\r\n");
    assert_eq!(c.ask("set second 0 0 4\r\nsame\r\n"), "STORED\r\n");
    assert_eq!(
        c.ask("get second\r\n"),
        "VALUE second 0 4\r\nsame\r\nEND\r\n"
    );
}

every_store!(
    set_meeting_another_unique_index,
    set_refused_by_another_unique_index,
    "hst_mc_set_unique"
);
