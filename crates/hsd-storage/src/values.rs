//! How MariaDB turns bytes into numbers, where hsd must know the answer
//! itself: the integer a string stores as in an integer column (for the
//! embedded store, whose INTEGER columns would otherwise keep the text, and
//! for telling whether an insert gives the auto-increment column a value),
//! and the integer a column's value reads as (`+`/`-`, which add to it).
//!
//! Written from MariaDB's observable behaviour under `sql_mode=''`, which
//! the conformance suite pins against the original plugin.

/// How a column's value reads as an integer (what `+`/`-` add to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntRead {
    /// An integer column: its value (above 2^63 it wraps negative, as a
    /// signed 64-bit read of an unsigned column does).
    Integer,
    /// DECIMAL: rounded half away from zero.
    Decimal,
    /// DOUBLE: rounded half to even.
    Real,
    /// FLOAT: its text (rounded to six digits) is first read back as the
    /// single-precision value it stands for, then rounded as `Real`.
    Float,
    /// DATE, DATETIME, TIMESTAMP, TIME, YEAR: their digits as one number
    /// (`2010-01-02` is 20100102), the fraction of a second dropped,
    /// negative for a negative TIME.
    Temporal,
    /// ENUM: the element's position, from 1 (0 for the empty value).
    Enum(Vec<Vec<u8>>),
    /// SET: the bit mask of its elements.
    Set(Vec<Vec<u8>>),
    /// BIT(n): its bytes as one big-endian number (BIT(64) with the top
    /// bit set reads negative).
    Bit(u32),
    /// Anything else (text, bytes): the leading integer after white space,
    /// no fraction, no exponent, saturating.
    Text,
}

impl IntRead {
    /// The integer the column's value `text` (as the server sends it) reads as.
    pub fn read(&self, text: &[u8]) -> i64 {
        match self {
            IntRead::Integer => {
                let (neg, digits) = match text.split_first() {
                    Some((b'-', rest)) => (true, rest),
                    _ => (false, text),
                };
                let mut n: u64 = 0;
                for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
                    n = n.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
                }
                if neg {
                    (n as i64).wrapping_neg()
                } else {
                    n as i64
                }
            }
            IntRead::Decimal => {
                stored_integer(text, i128::from(i64::MIN), i128::from(i64::MAX)) as i64
            }
            IntRead::Real => {
                let v: f64 = std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0.0);
                f64_to_i64(round_half_even(v))
            }
            IntRead::Float => {
                let v: f32 = std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0.0);
                f64_to_i64(round_half_even(f64::from(v)))
            }
            IntRead::Temporal => {
                let neg = text.first() == Some(&b'-');
                let whole = text.split(|&b| b == b'.').next().unwrap_or(b"");
                let mut n: i64 = 0;
                for &b in whole.iter().filter(|b| b.is_ascii_digit()) {
                    n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
                }
                if neg {
                    -n
                } else {
                    n
                }
            }
            IntRead::Enum(elements) => elements
                .iter()
                .position(|e| e.as_slice() == text)
                .map_or(0, |p| p as i64 + 1),
            IntRead::Set(elements) => {
                if text.is_empty() {
                    return 0;
                }
                text.split(|&b| b == b',').fold(0i64, |mask, part| {
                    match elements.iter().position(|e| e.as_slice() == part) {
                        Some(p) if p < 64 => mask | (1i64 << p),
                        _ => mask,
                    }
                })
            }
            IntRead::Bit(_) => text.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b)) as i64,
            IntRead::Text => leading_integer(text),
        }
    }
}

/// What a BIT(`bits`) column reads back after `+`/`-` stored `n` into it:
/// a number that does not fit its bits (a negative one never does, below
/// 64) stores as all ones.
pub(crate) fn bit_readback(bits: u32, n: i64) -> i64 {
    if bits >= 64 {
        return n;
    }
    let max = (1u64 << bits) - 1;
    if n as u64 > max {
        max as i64
    } else {
        n
    }
}

/// What storing `bytes` into a BIT(`bits`) column keeps: the bytes as one
/// big-endian number (leading zero bytes dropped), or all ones when it has
/// more bits than the column (`'1'` is 49; `'x'`, 120, is 31 in a BIT(5)).
pub fn stored_bit(bytes: &[u8], bits: u32) -> u64 {
    let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    let bytes = &bytes[start..];
    let all_ones = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    if bytes.len() > 8 {
        return all_ones;
    }
    let n = bytes.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b));
    n.min(all_ones)
}

fn f64_to_i64(v: f64) -> i64 {
    if v.is_nan() {
        0
    } else if v >= 9.223_372_036_854_776e18 {
        i64::MAX
    } else if v <= -9.223_372_036_854_776e18 {
        i64::MIN
    } else {
        v as i64
    }
}

fn round_half_even(v: f64) -> f64 {
    let r = v.round();
    if (v - v.trunc()).abs() == 0.5 {
        2.0 * (v / 2.0).round()
    } else {
        r
    }
}

/// A string's leading integer: white space, a sign, digits (saturating).
fn leading_integer(text: &[u8]) -> i64 {
    let s = trim_start(text);
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    let mut n: i128 = 0;
    for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
        n = (n * 10 + i128::from(b - b'0')).min(i128::from(u64::MAX) + 1);
    }
    let n = if neg { -n } else { n };
    n.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .count();
    &s[n..]
}

/// The integer that storing `bytes` into an integer column with range
/// `min..=max` keeps: white space, a sign, digits, a fraction and an
/// exponent are read, the result rounded half away from zero and clamped to
/// the range; anything unreadable is 0 (`'5abc'` is 5, `'1.5'` 2, `'1e2'`
/// 100, `'abc'` 0).
pub fn stored_integer(bytes: &[u8], min: i128, max: i128) -> i128 {
    let s = trim_start(bytes);
    let (neg, rest) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    let int_len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let (int_digits, mut rest) = rest.split_at(int_len);
    let mut frac_digits: &[u8] = b"";
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        frac_digits = &rest[1..1 + n];
        rest = &rest[1 + n..];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return 0.clamp(min, max);
    }
    let mut exp: i64 = 0;
    if let Some((b'e' | b'E', after)) = rest.split_first() {
        let (eneg, edigits) = match after.split_first() {
            Some((b'-', r)) => (true, r),
            Some((b'+', r)) => (false, r),
            _ => (false, after),
        };
        let n = edigits.iter().take_while(|b| b.is_ascii_digit()).count();
        if n > 0 {
            for &b in &edigits[..n] {
                exp = (exp * 10 + i64::from(b - b'0')).min(100_000);
            }
            if eneg {
                exp = -exp;
            }
        }
    }
    // All digits as one integer, scaled by 10^(exp - fraction length).
    let digits: Vec<u8> = int_digits
        .iter()
        .chain(frac_digits)
        .copied()
        .skip_while(|&b| b == b'0')
        .collect();
    let scale = exp - frac_digits.len() as i64;
    let limit = i128::from(u64::MAX) * 10;
    let magnitude: i128 = if digits.is_empty() {
        0
    } else if scale >= 0 {
        if digits.len() as i64 + scale > 40 {
            limit
        } else {
            let mut n: i128 = 0;
            for &b in &digits {
                n = (n * 10 + i128::from(b - b'0')).min(limit);
            }
            for _ in 0..scale {
                n = (n * 10).min(limit);
            }
            n
        }
    } else {
        // Keep the digits left of the point, round on the first one dropped.
        let drop = (-scale) as usize;
        if drop > digits.len() {
            0
        } else {
            let keep = digits.len() - drop;
            let mut n: i128 = 0;
            for &b in &digits[..keep] {
                n = (n * 10 + i128::from(b - b'0')).min(limit);
            }
            if digits[keep] >= b'5' {
                n = (n + 1).min(limit);
            }
            n
        }
    };
    let v = if neg { -magnitude } else { magnitude };
    v.clamp(min, max)
}

/// Whether storing `bytes` into a DATE, DATETIME or TIMESTAMP column
/// (`with_time`: the latter two) stores the zero value because it is no
/// valid date: no date in it, a month above 12, a day beyond its month, a
/// time beyond 23:59:59. (The server's own CAST cannot tell: compared with
/// an indexed column, it reads invalid dates leniently.)
#[cfg(test)]
fn invalid_date(bytes: &[u8], with_time: bool) -> bool {
    date_check(bytes, with_time) == DateCheck::Invalid
}

/// What storing a string into a DATE/DATETIME/TIMESTAMP column makes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateCheck {
    /// No valid date: the zero value.
    Invalid,
    /// A date with a zero month or day (or the zero date itself).
    ZeroInDate,
    Valid,
}

/// See `invalid_date`.
pub fn date_check(bytes: &[u8], with_time: bool) -> DateCheck {
    use DateCheck::*;
    let s = trim_start(bytes);
    let first = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if first == 0 {
        return Invalid;
    }
    let mut parts: Vec<u64> = Vec::new();
    if matches!(first, 8 | 14)
        && !s
            .get(first)
            .is_some_and(|&b| matches!(b, b'-' | b'/' | b'.' | b':'))
    {
        // YYYYMMDD[HHMMSS]
        let digits = &s[..first];
        for (a, b) in [(0, 4), (4, 6), (6, 8), (8, 10), (10, 12), (12, 14)] {
            if b <= digits.len() {
                parts.push(number(&digits[a..b]));
            }
        }
    } else {
        // Delimited: year, month, day, then hour, minute, second.
        let mut i = 0;
        while parts.len() < 6 && i < s.len() {
            let n = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            if n == 0 {
                break;
            }
            parts.push(number(&s[i..i + n]));
            i += n;
            // One separator between parts; a space or T between date and time.
            match s.get(i) {
                Some(b)
                    if b.is_ascii_punctuation()
                        || (parts.len() == 3 && matches!(b, b' ' | b'T')) =>
                {
                    i += 1
                }
                _ => break,
            }
            if parts.len() == 3 {
                while s.get(i) == Some(&b' ') {
                    i += 1;
                }
            }
        }
    }
    if parts.len() < 3 {
        return Invalid;
    }
    let (y, m, d) = (parts[0], parts[1], parts[2]);
    if y > 9999 || m > 12 || d > 31 {
        return Invalid;
    }
    if m > 0 && d > days_in_month(y, m) {
        return Invalid;
    }
    if with_time {
        let t = |i: usize| parts.get(i).copied().unwrap_or(0);
        if t(3) > 23 || t(4) > 59 || t(5) > 59 {
            return Invalid;
        }
    }
    if m == 0 || d == 0 {
        ZeroInDate
    } else {
        Valid
    }
}

fn number(digits: &[u8]) -> u64 {
    digits.iter().fold(0u64, |n, &b| {
        n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    })
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The year storing `bytes` into a YEAR column keeps (0 for 0000): one or
/// two digits (or three zeros) are 2000..2069 / 1970..1999, four digits
/// 1901..2155, anything else 0.
pub fn stored_year(bytes: &[u8]) -> i64 {
    let s = trim_start(bytes);
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return 0;
    }
    let mut nr: i64 = 0;
    for &b in &s[..digits] {
        nr = nr.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if (100..=1900).contains(&nr) || nr > 2155 {
        return 0;
    }
    if nr != 0 || s.len() != 4 {
        if nr < 70 {
            nr += 2000;
        } else if nr < 100 {
            nr += 1900;
        }
    }
    nr
}

/// The position (from 1; 0 for the empty value) storing `bytes` into an
/// ENUM column keeps: the element it names (trailing spaces ignored, case
/// too under a case-insensitive collation), else a number up to the count
/// of elements, else 0.
pub fn stored_enum(bytes: &[u8], elements: &[Vec<u8>], case_insensitive: bool) -> i64 {
    let trim = |s: &[u8]| -> usize { s.len() - s.iter().rev().take_while(|&&b| b == b' ').count() };
    let v = &bytes[..trim(bytes)];
    let same = |e: &[u8]| {
        let e = &e[..trim(e)];
        if case_insensitive {
            e.eq_ignore_ascii_case(v)
        } else {
            e == v
        }
    };
    if let Some(p) = elements.iter().position(|e| same(e)) {
        return p as i64 + 1;
    }
    if !v.is_empty() && v.iter().all(u8::is_ascii_digit) && v.len() < 10 {
        let n: i64 = std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if n as usize <= elements.len() {
            return n;
        }
    }
    0
}

/// The integer a column reads back after `+`/`-` stored `n` into it (what a
/// second opening of the same column in one request starts from): clamped
/// to an integer type, cut to a text column's length, zero for a number
/// that is no valid date or time.
pub(crate) fn stored_readback(kind: &super::ColumnKind, n: i64) -> i64 {
    use super::ColumnKind as K;
    match kind {
        K::Integer { min, max } => i128::from(n).clamp(*min, *max) as i64,
        K::Text { max_chars, .. } => {
            let text = n.to_string();
            let keep = (*max_chars).min(text.len() as u64) as usize;
            IntRead::Text.read(&text.as_bytes()[..keep])
        }
        K::Bytes { max_len, .. } => {
            let text = n.to_string();
            let keep = (*max_len).min(text.len() as u64) as usize;
            IntRead::Text.read(&text.as_bytes()[..keep])
        }
        K::Temporal { cast, .. } if cast.starts_with("TIME") => {
            if (10_000_000..100_000_000_000_000).contains(&n) {
                // Eight to fourteen digits are a date-time: the TIME keeps
                // its time of day (the zero time if it is no date-time).
                return stored_date_number(n, true) % 1_000_000;
            }
            let a = n.unsigned_abs();
            if a % 100 > 59 || (a / 100) % 100 > 59 {
                0
            } else if a / 10000 > 838 {
                n.signum() * 8_385_959
            } else {
                n
            }
        }
        K::Temporal {
            cast, timestamp, ..
        } => {
            let stored = stored_date_number(n, cast.starts_with("DATETIME"));
            if *timestamp && !timestamp_holds(stored) {
                0
            } else {
                stored
            }
        }
        K::Bit { bits } => bit_readback(*bits, n),
        K::Year => match n {
            0 => 0,
            1..=69 => n + 2000,
            70..=99 => n + 1900,
            1901..=2155 => n,
            _ => 0,
        },
        K::Enum { elements, .. } => {
            if (0..=elements.len() as i64).contains(&n) {
                n
            } else {
                0
            }
        }
        K::Float { unsigned, .. } => {
            // `as` rounds to nearest, as storing into a FLOAT does.
            let n = f64_to_i64(round_half_even(f64::from(n as f32)));
            if *unsigned {
                n.max(0)
            } else {
                n
            }
        }
        K::Other {
            cast: Some(cast),
            unsigned,
        } => {
            let n = number_readback(cast, n);
            if *unsigned {
                n.max(0)
            } else {
                n
            }
        }
        K::Other { cast: None, .. } => n,
    }
}

/// What a DATE or DATETIME column reads back as an integer after storing
/// the number `n` (YYYYMMDD, or YYYYMMDDhhmmss with a time): the server
/// reads a number as a date by its digit count (six digits are YYMMDD,
/// years 70..99 in the 1900s and 00..69 in the 2000s, twelve are
/// YYMMDDhhmmss likewise, eight and fourteen are whole), refuses the ranges
/// between those shapes, and keeps zero months and days; anything it
/// refuses or cannot hold stores the zero date, which reads as 0.
fn stored_date_number(n: i64, with_time: bool) -> i64 {
    let whole: i64 = match n {
        ..=100 => return 0,
        101..=691_231 => (n + 20_000_000) * 1_000_000,
        691_232..=700_100 => return 0,
        700_101..=991_231 => (n + 19_000_000) * 1_000_000,
        991_232..=10_000_100 => return 0,
        10_000_101..=99_991_231 => n * 1_000_000,
        99_991_232..=100_999_999 => return 0,
        101_000_000..=691_231_235_959 => n + 20_000_000_000_000,
        691_231_235_960..=700_100_999_999 => return 0,
        700_101_000_000..=991_231_235_959 => n + 19_000_000_000_000,
        _ => n,
    };
    let (date, time) = (whole / 1_000_000, whole % 1_000_000);
    let (y, m, d) = (date / 10_000, date / 100 % 100, date % 100);
    let (h, mi, sec) = (time / 10_000, time / 100 % 100, time % 100);
    let fits = y <= 9999 && m <= 12 && d <= 31 && h <= 23 && mi <= 59 && sec <= 59;
    // A zero month or day is kept; a day the month does not have is not.
    let real_day = m == 0 || d == 0 || d as u64 <= days_in_month(y as u64, m as u64);
    match (fits && real_day, with_time) {
        (false, _) => 0,
        (true, true) => whole,
        (true, false) => date,
    }
}

/// Whether a TIMESTAMP holds the date-time `stored` (YYYYMMDDhhmmss, 0
/// for the zero value): no zero month or day, and within its range. The
/// range is taken in UTC; under another server time zone its two ends move
/// by the zone's offset.
fn timestamp_holds(stored: i64) -> bool {
    let date = stored / 1_000_000;
    stored == 0
        || (date % 100 != 0
            && date / 100 % 100 != 0
            && (19_700_101_000_001..=20_380_119_031_407).contains(&stored))
}

/// What a DOUBLE or DECIMAL(M,D) column reads back as an integer after
/// storing `n`: the nearest value the type holds (a DECIMAL clamps to its
/// largest, which may then round up), read as `IntRead` reads it.
fn number_readback(cast: &str, n: i64) -> i64 {
    if cast == "DOUBLE" {
        return f64_to_i64(n as f64);
    }
    let Some(params) = cast
        .strip_prefix("DECIMAL(")
        .and_then(|p| p.strip_suffix(')'))
    else {
        return n;
    };
    let mut parts = params.split(',').map(|p| p.trim().parse::<u32>().ok());
    let Some(m) = parts.next().flatten() else {
        return n;
    };
    let d = parts.next().flatten().unwrap_or(0).min(m);
    // Integer digits the type holds; its largest value is 10^(m-d) - 10^-d,
    // which reads back as 10^(m-d) when there is a fraction, 10^m - 1 when
    // there is none.
    let Some(limit) = 10i128.checked_pow(m - d) else {
        return n;
    };
    let largest = if d > 0 { limit } else { limit - 1 };
    if i128::from(n).abs() < limit {
        n
    } else {
        (largest * i128::from(n.signum())) as i64
    }
}

/// `atoll` as the original reads a `+`/`-` amount: an optional sign, then
/// digits up to the first other byte, wrapping; no white space skipped.
pub fn modify_amount(s: &[u8]) -> i64 {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
        let d = i64::from(b - b'0');
        n = n.wrapping_mul(10);
        n = if neg {
            n.wrapping_sub(d)
        } else {
            n.wrapping_add(d)
        };
    }
    n
}

/// Whether `key` is written exactly as a column of `kind` stores it (an
/// integer without sign or zero padding, text and bytes within the
/// column's length), so that comparing it with the column in SQL finds
/// what storing it first (as the plugin and `HANDLER` do) finds. Only such
/// keys may be grouped or written by key.
pub fn is_stored_form(kind: &super::ColumnKind, key: &[u8]) -> bool {
    match kind {
        super::ColumnKind::Integer { min, max } => {
            let digits = key.strip_prefix(b"-").unwrap_or(key);
            if digits.is_empty()
                || digits.len() > 20
                || !digits.iter().all(u8::is_ascii_digit)
                || (digits.len() > 1 && digits[0] == b'0')
                || key == b"-0"
            {
                return false;
            }
            std::str::from_utf8(key)
                .ok()
                .and_then(|s| s.parse::<i128>().ok())
                .is_some_and(|n| n >= *min && n <= *max)
        }
        super::ColumnKind::Text { charset, max_chars } => {
            let chars = if charset.starts_with("utf8") {
                match std::str::from_utf8(key) {
                    Ok(s) => s.chars().count() as u64,
                    Err(_) => return false,
                }
            } else if charset == "latin1" || charset == "ascii" {
                key.len() as u64
            } else {
                return false;
            };
            chars <= *max_chars
        }
        super::ColumnKind::Bytes { max_len, fixed } => {
            let n = key.len() as u64;
            if *fixed {
                n == *max_len
            } else {
                n <= *max_len
            }
        }
        super::ColumnKind::Temporal { .. }
        | super::ColumnKind::Year
        | super::ColumnKind::Bit { .. }
        | super::ColumnKind::Enum { .. }
        | super::ColumnKind::Float { .. }
        | super::ColumnKind::Other { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ColumnKind;

    const I64: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);

    #[test]
    fn strings_stored_as_integers() {
        let s = |v: &[u8]| stored_integer(v, I64.0, I64.1);
        assert_eq!(s(b"5abc"), 5);
        assert_eq!(s(b"1.5"), 2);
        assert_eq!(s(b"-1.5"), -2);
        assert_eq!(s(b"0.4"), 0);
        assert_eq!(s(b"1e2"), 100);
        assert_eq!(s(b"15e-1"), 2);
        assert_eq!(s(b" 7"), 7);
        assert_eq!(s(b""), 0);
        assert_eq!(s(b"abc"), 0);
        assert_eq!(s(b".5"), 1);
        assert_eq!(s(b"99999999999999999999999"), i128::from(i64::MAX));
        assert_eq!(stored_integer(b"-5", 0, 255), 0);
        assert_eq!(stored_integer(b"300", -128, 127), 127);
    }

    #[test]
    fn strings_stored_as_bits() {
        assert_eq!(stored_bit(b"1", 8), 49);
        assert_eq!(stored_bit(b"x", 5), 31);
        assert_eq!(stored_bit(b"\0\0\x01\x02", 16), 0x102);
        assert_eq!(stored_bit(b"\x01\x02", 8), 255);
        assert_eq!(stored_bit(b"", 5), 0);
        assert_eq!(stored_bit(b"123456789", 64), u64::MAX);
        assert_eq!(stored_bit(b"12345678", 64), 0x3132_3334_3536_3738);
    }

    #[test]
    fn values_read_as_integers() {
        // Verified against the original with `+ 0` on each type.
        assert_eq!(IntRead::Decimal.read(b"1.50"), 2);
        assert_eq!(IntRead::Decimal.read(b"-1.50"), -2);
        assert_eq!(IntRead::Decimal.read(b"0.49"), 0);
        assert_eq!(IntRead::Real.read(b"2.9"), 3);
        assert_eq!(IntRead::Real.read(b"0.5"), 0);
        assert_eq!(IntRead::Real.read(b"-2.5"), -2);
        assert_eq!(IntRead::Real.read(b"1.5"), 2);
        assert_eq!(IntRead::Real.read(b"1e100"), i64::MAX);
        assert_eq!(IntRead::Float.read(b"0.5"), 0);
        assert_eq!(IntRead::Float.read(b"2.9"), 3);
    }

    #[test]
    fn numbers_stored_as_dates_read_back_as_mariadb_stores_them() {
        // (n, DATETIME, DATE), as `UPDATE t SET dt = n, dd = n` and
        // `SELECT dt + 0, dd + 0` answered on MariaDB 10.11 (sql_mode '').
        let seen: [(i64, i64, i64); 17] = [
            (-1, 0, 0),
            (101, 20000101000000, 20000101),
            (10000, 20010000000000, 20010000),
            (10101, 20010101000000, 20010101),
            (691231, 20691231000000, 20691231),
            (691232, 0, 0),
            (700101, 19700101000000, 19700101),
            (991231, 19991231000000, 19991231),
            (1000000, 0, 0),
            (20000229, 20000229000000, 20000229),
            (20100230, 0, 0),
            (101000000, 20000101000000, 20000101),
            (691231235959, 20691231235959, 20691231),
            (700101000000, 19700101000000, 19700101),
            (1000000000000, 1000000000000, 1000000),
            (20100102036000, 0, 0),
            (i64::MAX, 0, 0),
        ];
        for (n, datetime, date) in seen {
            assert_eq!(stored_date_number(n, true), datetime, "{n} as DATETIME");
            assert_eq!(stored_date_number(n, false), date, "{n} as DATE");
        }
    }

    #[test]
    fn numbers_stored_as_times_read_back_as_mariadb_stores_them() {
        // (n, TIME), as `UPDATE t SET tm = n` and `SELECT tm + 0` answered
        // on MariaDB 10.11 (sql_mode ''): eight to fourteen positive digits
        // are a date-time whose time of day is kept.
        let seen: [(i64, i64); 13] = [
            (-1, -1),
            (5959, 5959),
            (6000, 0),
            (1000000, 1000000),
            (8385960, 0),
            (8390000, 8385959),
            (9999999, 0),
            (10000000, 0),
            (-20000000, -8385959),
            (20100102030405, 30405),
            (99991231235960, 0),
            (100000000000000, 8385959),
            (115686483879929, 0),
        ];
        let time = super::super::ColumnKind::Temporal {
            cast: "TIME".into(),
            zero: "00:00:00",
            timestamp: false,
        };
        for (n, stored) in seen {
            assert_eq!(stored_readback(&time, n), stored, "{n} as TIME");
        }
    }

    #[test]
    fn bits_read_as_big_endian_numbers_and_saturate() {
        // As MariaDB 10.11 stored 300, -1 and 2^63 - 1 into BIT(8), BIT(3)
        // and BIT(64) (`SELECT b + 0`).
        assert_eq!(IntRead::Bit(8).read(&[0x05]), 5);
        assert_eq!(IntRead::Bit(16).read(&[0x01, 0x00]), 256);
        assert_eq!(IntRead::Bit(64).read(&[0xff; 8]), -1);
        assert_eq!(bit_readback(8, 300), 255);
        assert_eq!(bit_readback(8, -1), 255);
        assert_eq!(bit_readback(3, 8), 7);
        assert_eq!(bit_readback(3, 6), 6);
        assert_eq!(bit_readback(64, -1), -1);
    }

    #[test]
    fn numbers_read_back_as_their_type_stores_them() {
        use super::super::ColumnKind;
        let other = |cast: &str| ColumnKind::Other {
            cast: Some(cast.into()),
            unsigned: false,
        };
        // 2^53 + 1 has no double; a float keeps 24 bits.
        assert_eq!(
            stored_readback(&other("DOUBLE"), 9_007_199_254_740_993),
            9_007_199_254_740_992
        );
        let float = ColumnKind::Float {
            scale: None,
            unsigned: false,
        };
        assert_eq!(stored_readback(&float, 123_456_793), 123_456_792);
        assert_eq!(stored_readback(&float, i64::MAX), i64::MAX);
        // DECIMAL(7,2) holds up to 99999.99, which reads back as 100000.
        assert_eq!(stored_readback(&other("DECIMAL(7,2)"), 99_999), 99_999);
        assert_eq!(
            stored_readback(&other("DECIMAL(7,2)"), 100_012_345),
            100_000
        );
        assert_eq!(stored_readback(&other("DECIMAL(7,2)"), -100_000), -100_000);
        assert_eq!(stored_readback(&other("DECIMAL(3,0)"), 5_000), 999);
        assert_eq!(stored_readback(&other("DECIMAL(3,0)"), -5_000), -999);
        assert_eq!(IntRead::Temporal.read(b"2010-01-02"), 20100102);
        assert_eq!(
            IntRead::Temporal.read(b"2010-01-02 03:04:05.600000"),
            20100102030405
        );
        assert_eq!(IntRead::Temporal.read(b"-01:02:03"), -10203);
        assert_eq!(IntRead::Text.read(b" 12.7abc"), 12);
        assert_eq!(IntRead::Text.read(b"-3e2"), -3);
        assert_eq!(IntRead::Text.read(b"12\x00"), 12);
        assert_eq!(IntRead::Integer.read(b"18446744073709551615"), -1);
        let e = IntRead::Enum(vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!((e.read(b"b"), e.read(b"")), (2, 0));
        let s = IntRead::Set(vec![b"x".to_vec(), b"y".to_vec()]);
        assert_eq!(s.read(b"x,y"), 3);
    }

    #[test]
    fn invalid_dates() {
        for v in ["2010-02-30", "2010-13-01", "abc", "", "2010-01-02 25:00:00"] {
            assert!(invalid_date(v.as_bytes(), true), "{v}");
        }
        for v in [
            "2010-01-02",
            "2010-01-02 03:04:05.678",
            "20100102",
            "20100102030405",
            "2010-1-2",
            "0000-00-00",
            "2010-01-02x",
            "2012-02-29",
            "2010-01-02 03:04",
        ] {
            assert!(!invalid_date(v.as_bytes(), true), "{v}");
        }
        assert!(invalid_date(b"2011-02-29", false));
    }

    #[test]
    fn years_and_enums() {
        // Verified by storing each into a YEAR / ENUM('a','b','c') column.
        for (v, y) in [
            ("2010", 2010),
            ("2156", 0),
            ("1900", 0),
            ("0", 2000),
            ("00", 2000),
            ("000", 2000),
            ("0000", 0),
            ("70", 1970),
            ("69", 2069),
            ("1", 2001),
            ("abc", 0),
            ("", 0),
        ] {
            assert_eq!(stored_year(v.as_bytes()), y, "{v}");
        }
        let e = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        for (v, n) in [
            ("a", 1),
            ("B", 2),
            ("d", 0),
            ("0", 0),
            ("3", 3),
            ("4", 0),
            ("", 0),
        ] {
            assert_eq!(stored_enum(v.as_bytes(), &e, true), n, "{v}");
        }
        assert_eq!(stored_enum(b"B", &e, false), 0);
    }

    #[test]
    fn amounts_like_atoll() {
        assert_eq!(modify_amount(b"42abc"), 42);
        assert_eq!(modify_amount(b"-7"), -7);
        assert_eq!(modify_amount(b" 3"), 0);
        assert_eq!(modify_amount(b"x"), 0);
        assert_eq!(modify_amount(b"12.9"), 12);
        assert_eq!(modify_amount(b"9223372036854775808"), i64::MIN);
    }
    #[test]
    fn keys_in_stored_form() {
        let int = ColumnKind::Integer {
            min: -128,
            max: 127,
        };
        for ok in ["0", "127", "-128", "5"] {
            assert!(is_stored_form(&int, ok.as_bytes()), "{ok}");
        }
        for no in ["", "-", "-0", "007", "128", "-129", "1a", " 1", "+1", "1.0"] {
            assert!(!is_stored_form(&int, no.as_bytes()), "{no}");
        }
        let text = ColumnKind::Text {
            charset: "utf8mb4".into(),
            max_chars: 3,
        };
        assert!(is_stored_form(&text, "aé€".as_bytes()));
        assert!(!is_stored_form(&text, b"abcd"));
        assert!(!is_stored_form(&text, b"\xff"));
        let bin = ColumnKind::Bytes {
            max_len: 4,
            fixed: true,
        };
        assert!(is_stored_form(&bin, b"abcd") && !is_stored_form(&bin, b"abc"));
        assert!(!is_stored_form(
            &ColumnKind::Other {
                cast: None,
                unsigned: false
            },
            b"2020-01-01"
        ));
    }
}
