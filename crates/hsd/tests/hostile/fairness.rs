//! One client's long scan never holds up another's lookups: scans that
//! may pass over many rows run beside the event loops, not on them.

use crate::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn long_filtered_scans_do_not_hold_up_lookups() {
    // One loop per port: every connection shares it.
    let mut s = Hsd::start(&["--threads", "1", "--statement-timeout", "60"]);
    // A find that passes over the whole table for one answer: 127 filters
    // that hold everywhere and one that holds nowhere. It once ran inside
    // one SQLite step on the loop's thread, and every lookup of the loop
    // waited for it (3.3 s each over a million rows).
    let mut filters = String::new();
    for _ in 0..127 {
        filters.push_str("|F|!=|0|x");
    }
    filters.push_str("|F|=|0|nobody");
    let long_find = format!("0|>=|1|0|1|0{filters}");
    let stop = Arc::new(AtomicBool::new(false));
    let scanners: Vec<_> = (0..2)
        .map(|_| {
            let (addr, stop, find) = (s.read.clone(), stop.clone(), long_find.clone());
            std::thread::spawn(move || {
                let mut c = Conn::open(&addr);
                assert_eq!(c.req("P|0|test|user|PRIMARY|user_id|user_name"), "0|1");
                let mut scans = 0;
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(c.req(&find), "0|1");
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut c = Conn::open(&s.read);
    assert_eq!(c.req("P|1|test|user|PRIMARY|user_name"), "0|1");
    let mut took: Vec<Duration> = (0..200)
        .map(|i| {
            let started = Instant::now();
            let answer = c.req(&format!("1|=|1|{}", 1 + i * 37));
            assert!(answer.starts_with("0|1|"), "{answer}");
            started.elapsed()
        })
        .collect();
    stop.store(true, Ordering::Relaxed);
    let scans: usize = scanners
        .into_iter()
        .map(|t| t.join().expect("scanner"))
        .sum();
    took.sort();
    let (median, p95) = (took[took.len() / 2], took[took.len() * 95 / 100]);
    eprintln!(
        "hostile: lookups beside 2 clients' whole-table filtered scans ({scans} scans): \
         median {median:?}, p95 {p95:?}"
    );
    assert!(scans >= 2, "the scans did not run ({scans})");
    assert!(median < Duration::from_millis(20), "median {median:?}");
    assert!(p95 < Duration::from_millis(200), "p95 {p95:?}");
    s.case_done("long filtered scans beside lookups");
}
