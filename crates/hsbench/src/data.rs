//! The synthetic data set: row `id` has a deterministic name, email and created
//! timestamp (`YYYY-MM-DD HH:MM:SS`), written straight into output buffers so the
//! hot path does not allocate. None of the values contain bytes below 0x10,
//! quotes or backslashes, so they need no escaping in any protocol.

use crate::keys::splitmix64;

const FIRST: [&str; 32] = [
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Karl",
    "Laura", "Mallory", "Nina", "Oscar", "Peggy", "Quinn", "Rupert", "Sybil", "Trent", "Ursula",
    "Victor", "Wendy", "Xavier", "Yvonne", "Zach", "Jane", "John", "Maria", "Omar", "Priya", "Li",
];
const LAST: [&str; 32] = [
    "Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Johnson", "Davies", "Robinson",
    "Wright", "Thompson", "Evans", "Walker", "White", "Roberts", "Green", "Hall", "Wood",
    "Jackson", "Clarke", "Roe", "Doe", "Garcia", "Martinez", "Nakamura", "Kim", "Nguyen", "Singh",
    "Muller", "Rossi", "Novak", "Silva",
];

/// 2010-01-01 00:00:00 UTC and a ten-year span for `created`.
const EPOCH_2010: u64 = 1_262_304_000;
const SPAN: u64 = 10 * 365 * 86_400;

#[inline]
fn parts(id: u64) -> (&'static str, &'static str, u64) {
    let h = splitmix64(id);
    (
        FIRST[(h & 31) as usize],
        LAST[((h >> 5) & 31) as usize],
        EPOCH_2010 + (h >> 10) % SPAN,
    )
}

/// Appends the decimal form of `n`.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Number of decimal digits of `n`.
#[inline]
pub fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

pub fn push_name(out: &mut Vec<u8>, id: u64) {
    let (f, l, _) = parts(id);
    out.extend_from_slice(f.as_bytes());
    out.push(b' ');
    out.extend_from_slice(l.as_bytes());
}

/// The name written by the update workload: the row's name plus a version.
pub fn push_updated_name(out: &mut Vec<u8>, id: u64, version: u64) {
    push_name(out, id);
    out.extend_from_slice(b" v");
    push_u64(out, version);
}

pub fn push_email(out: &mut Vec<u8>, id: u64) {
    let (f, l, _) = parts(id);
    out.extend(f.bytes().map(|b| b.to_ascii_lowercase()));
    out.push(b'.');
    out.extend(l.bytes().map(|b| b.to_ascii_lowercase()));
    push_u64(out, id);
    out.extend_from_slice(b"@example.com");
}

pub fn push_created(out: &mut Vec<u8>, id: u64) {
    let (_, _, ts) = parts(id);
    let (y, m, d) = civil_from_days((ts / 86_400) as i64);
    let s = ts % 86_400;
    let two = |v: u64, out: &mut Vec<u8>| {
        out.push(b'0' + (v / 10) as u8);
        out.push(b'0' + (v % 10) as u8);
    };
    push_u64(out, y as u64);
    out.push(b'-');
    two(m as u64, out);
    out.push(b'-');
    two(d as u64, out);
    out.push(b' ');
    two(s / 3600, out);
    out.push(b':');
    two(s / 60 % 60, out);
    out.push(b':');
    two(s % 60, out);
}

/// memcached/Redis value of a row: `name\temail\tcreated`.
pub fn push_kv_value(out: &mut Vec<u8>, id: u64, update_version: Option<u64>) {
    match update_version {
        Some(v) => push_updated_name(out, id, v),
        None => push_name(out, id),
    }
    out.push(b'\t');
    push_email(out, id);
    out.push(b'\t');
    push_created(out, id);
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl Fn(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(14_610), (2010, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn rows_are_deterministic_and_well_formed() {
        for id in [1u64, 2, 99, 1_000_000, u32::MAX as u64] {
            let c = s(|v| push_created(v, id));
            assert_eq!(c.len(), 19, "{c}");
            let b = c.as_bytes();
            assert_eq!(
                (b[4], b[7], b[10], b[13], b[16]),
                (b'-', b'-', b' ', b':', b':')
            );
            assert!(c.as_str() >= "2010-01-01 00:00:00" && c.as_str() < "2020-01-01");
            let e = s(|v| push_email(v, id));
            assert!(e.ends_with("@example.com") && e.contains(&id.to_string()));
            let kv = s(|v| push_kv_value(v, id, None));
            assert_eq!(kv.split('\t').count(), 3);
            assert_eq!(kv, s(|v| push_kv_value(v, id, None)));
            assert!(kv.bytes().all(|b| b >= 0x10 || b == b'\t'));
        }
        assert_eq!(s(|v| push_u64(v, 0)), "0");
        assert_eq!(s(|v| push_u64(v, u64::MAX)), u64::MAX.to_string());
        assert_eq!(digits(0), 1);
        assert_eq!(digits(10), 2);
        assert_eq!(digits(u64::MAX), 20);
    }
}
