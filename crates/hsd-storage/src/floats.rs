//! What storing a string into a FLOAT column keeps, computed by hsd. The
//! original stored every key and filter value into its column before
//! comparing, so a FLOAT is compared with the single-precision value the
//! column would hold (`0.1` is 0.10000000149011612). The server cannot be
//! asked for it alike everywhere: MariaDB's `CAST(v AS FLOAT)` narrows,
//! MySQL 8's keeps the double (`fl = 0.1` finds nothing) and refuses a
//! value beyond FLOAT's range (1690). hsd writes the narrowed value itself,
//! exactly, and both servers compare the column with the same double.
//!
//! Written from MariaDB's reader (`my_strtod`, correctly rounded over the
//! digits it keeps) and its FLOAT store (`truncate_double`, then a cast to
//! single precision), which MySQL 8 shares; `tests/mysql_types.rs` holds it
//! to what each server stores, the conformance suite to the plugin.

/// Significant digits the reader keeps: after the point it drops every
/// digit once it holds this many (`2 * DBL_DIG`); before it, none.
const KEPT_DIGITS: usize = 30;

/// Exponents beyond this count as this (the reader's guard against
/// overflowing its exponent).
const MAX_EXPONENT: i64 = 19_999;

/// A FLOAT(M,D)'s precision: M digits, D of them after the point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatScale {
    pub digits: u32,
    pub decimals: u32,
}

impl FloatScale {
    /// `(7,4)` of a column type `float(7,4) unsigned`; None for a plain
    /// FLOAT.
    pub fn of_column_type(column_type: &str) -> Option<FloatScale> {
        let open = column_type.find('(')?;
        let inner = &column_type[open + 1..];
        let inner = &inner[..inner.find(')')?];
        let (m, d) = inner.split_once(',')?;
        Some(FloatScale {
            digits: m.trim().parse().ok()?,
            decimals: d.trim().parse().ok()?,
        })
    }
}

/// The single-precision value that storing `bytes` into a FLOAT column
/// (FLOAT(M,D) with `scale`, UNSIGNED with `unsigned`) keeps: the number
/// the reader makes of the bytes; 0 if it is negative and the column
/// unsigned; rounded half to even to D decimals and held within the
/// largest value of M digits for a FLOAT(M,D); held within FLOAT's range
/// (`1e39` is 3.4028234663852886e38); then rounded to single precision.
pub fn stored_float(bytes: &[u8], scale: Option<FloatScale>, unsigned: bool) -> f32 {
    let mut v = read_double(bytes);
    if unsigned && v < 0.0 {
        return 0.0;
    }
    let mut max = f64::from(f32::MAX);
    if let Some(FloatScale { digits, decimals }) = scale {
        let unit = power_of_ten(decimals);
        max = max.min(power_of_ten(digits.saturating_sub(decimals)) - 1.0 / unit);
        // The reader never answers an infinity (see `read_double`).
        let whole = v.floor();
        v = whole + ((v - whole) * unit).round_ties_even() / unit;
    }
    // `as` rounds to nearest, ties to even, as the server's cast does.
    v.clamp(-max, max) as f32
}

/// 10^n as the double the server's table of powers holds (a literal,
/// correctly rounded); an infinity past the double's range.
fn power_of_ten(n: u32) -> f64 {
    format!("1e{n}").parse().unwrap_or(f64::INFINITY)
}

/// The double MariaDB's reader makes of `bytes`: white space (space, tab,
/// CR, LF, VT, FF), a sign, digits with a point, an exponent; it stops at
/// the first byte that does not fit (`12abc` is 12) and reads no digits as
/// 0 (a `-` before zeros keeps its sign, `-0` is -0.0). What it keeps of
/// the digits (`Number`) converts correctly rounded; an overflow is the
/// largest double of its sign.
pub(crate) fn read_double(bytes: &[u8]) -> f64 {
    let n = Number::read(bytes);
    if n.digits.is_empty() {
        return if n.negative && n.zero_seen { -0.0 } else { 0.0 };
    }
    let magnitude = match format!("{}e{}", n.digits, n.exponent).parse::<f64>() {
        Ok(m) if m.is_finite() => m,
        _ => f64::MAX,
    };
    if n.negative {
        -magnitude
    } else {
        magnitude
    }
}

/// A number as the reader keeps it: `digits` (from the first significant
/// one, the point left out) times 10^`exponent`.
#[derive(Debug, PartialEq, Eq)]
struct Number {
    negative: bool,
    digits: String,
    exponent: i64,
    /// A zero digit was read: with no other digit the value is a signed 0,
    /// where a lone sign or point is an unsigned one.
    zero_seen: bool,
}

impl Number {
    /// Integer digits are all kept; a fraction digit only while fewer than
    /// `KEPT_DIGITS` significant ones are held (zeros count once a kept
    /// digit follows them), the rest dropped, not rounded.
    fn read(bytes: &[u8]) -> Number {
        let mut at = bytes
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
            .count();
        let sign_at = |at: &mut usize| match bytes.get(*at) {
            Some(b'-') => {
                *at += 1;
                true
            }
            Some(b'+') => {
                *at += 1;
                false
            }
            _ => false,
        };
        let digit_at = |at: usize| bytes.get(at).copied().filter(u8::is_ascii_digit);
        let negative = sign_at(&mut at);
        let mut zero_seen = false;
        while bytes.get(at) == Some(&b'0') {
            zero_seen = true;
            at += 1;
        }
        let mut digits = String::new();
        while let Some(d) = digit_at(at) {
            digits.push(char::from(d));
            at += 1;
        }
        let mut significant = digits.len();
        // Fraction digits up to the last kept one.
        let mut fraction = 0;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            let start = at;
            let mut zeros = 0;
            while let Some(d) = digit_at(at) {
                at += 1;
                if significant >= KEPT_DIGITS {
                    continue;
                }
                if d == b'0' {
                    zero_seen = true;
                    zeros += 1;
                    continue;
                }
                // Leading zeros of a value below 1 are not significant.
                significant = if significant == 0 {
                    1
                } else {
                    significant + zeros + 1
                };
                zeros = 0;
                fraction = at - start;
            }
            let kept = &bytes[start..start + fraction];
            let leading_zeros = if digits.is_empty() {
                kept.iter().take_while(|&&d| d == b'0').count()
            } else {
                0
            };
            digits.extend(kept[leading_zeros..].iter().map(|&d| char::from(d)));
        }
        let mut exponent = 0;
        if !digits.is_empty() && matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            let exp_negative = sign_at(&mut at);
            while bytes.get(at) == Some(&b'0') {
                at += 1;
            }
            let first = at;
            let mut n: i64 = 0;
            while let Some(d) = digit_at(at) {
                if at - first < 9 {
                    n = n * 10 + i64::from(d - b'0');
                }
                at += 1;
            }
            if at - first > 8 || n > MAX_EXPONENT {
                n = MAX_EXPONENT;
            }
            exponent = if exp_negative { -n } else { n };
        }
        Number {
            negative,
            exponent: exponent - fraction as i64,
            digits,
            zero_seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> f64 {
        read_double(s.as_bytes())
    }

    #[test]
    fn the_reader_takes_what_the_server_takes() {
        assert_eq!(read("12abc"), 12.0);
        assert_eq!(read(" \t\n\r\x0b\x0c1.5 "), 1.5);
        assert_eq!(read("+5"), 5.0);
        assert_eq!(read(".5"), 0.5);
        assert_eq!(read("5."), 5.0);
        assert_eq!(read("1e"), 1.0);
        assert_eq!(read("1e+"), 1.0);
        assert_eq!(read("1e-2"), 0.01);
        assert_eq!(read("000012.5e0001"), 125.0);
        assert_eq!(read("0.0501"), 0.0501);
        for zero in [
            "", "abc", "-", "- 1", "--1", ".", "-.", "e5", "0x1f", "nan", "inf",
        ] {
            let v = read(zero);
            assert!(v == 0.0 && v.is_sign_positive(), "{zero:?}: {v}");
        }
        for negative_zero in ["-0", "-0.0", "-.000", "-0e5", "-1e-400"] {
            let v = read(negative_zero);
            assert!(v == 0.0 && v.is_sign_negative(), "{negative_zero:?}: {v}");
        }
        assert_eq!(read("1e400"), f64::MAX);
        assert_eq!(read("-1e99999999999"), -f64::MAX);
        assert_eq!(read("1e-400"), 0.0);
        assert_eq!(read("1e0000000000000000002"), 100.0);
    }

    #[test]
    fn fraction_digits_past_thirty_are_dropped() {
        // Just above the midpoint of 1 + 2^-24 and the double after it:
        // read in full it rounds up, cut at 30 digits down (both servers
        // store 1 into a FLOAT).
        let s = "1.000000059604644886412927462515654042363166809082031251";
        assert_eq!(read(s), 1.000_000_059_604_644_8);
        assert_eq!(stored_float(s.as_bytes(), None, false), 1.0);
        // Zeros count once a digit follows them: 29 digits, then zeros and
        // a 5 that is the 34th, which is kept; a digit after it is not.
        let int29 = format!("1{}", "2".repeat(28));
        let kept = Number::read(format!("{int29}.00005").as_bytes());
        assert_eq!(kept.digits, format!("{int29}00005"));
        assert_eq!(kept.exponent, -5);
        assert_eq!(Number::read(format!("{int29}.000059").as_bytes()), kept);
        // 30 digits: nothing after the point is kept.
        let full = Number::read(format!("{int29}3.5e2").as_bytes());
        assert_eq!((full.digits.len(), full.exponent), (30, 2));
        // Leading zeros of a value below 1 are not counted.
        let small = Number::read(format!("-0.000{}", "7".repeat(40)).as_bytes());
        assert_eq!(small.digits, "7".repeat(30));
        assert_eq!(small.exponent, -33);
        assert!(small.negative);
        // Integer digits are never dropped.
        let long = format!("1{}", "0".repeat(40));
        assert_eq!(read(&long), 1e40);
    }

    #[test]
    fn floats_store_as_the_server_stores_them() {
        let plain = |s: &str| f64::from(stored_float(s.as_bytes(), None, false));
        assert_eq!(plain("0.1"), 0.100_000_001_490_116_12);
        assert_eq!(plain("3.14159"), 3.141_590_118_408_203);
        assert_eq!(plain("1e39"), 3.402_823_466_385_288_6e38);
        assert_eq!(plain("-1e400"), -3.402_823_466_385_288_6e38);
        assert_eq!(plain("1e-45"), 1.401_298_464_324_817e-45);
        assert_eq!(plain("1e-46"), 0.0);
        assert_eq!(plain("16777217"), 16_777_216.0);
        assert_eq!(plain("-1e-5"), -0.000_009_999_999_747_378_752);
        let unsigned = |s: &str| f64::from(stored_float(s.as_bytes(), None, true));
        assert_eq!(unsigned("-1e39"), 0.0);
        assert_eq!(unsigned("1e39"), 3.402_823_466_385_288_6e38);
        let m_d = Some(FloatScale {
            digits: 7,
            decimals: 4,
        });
        let scaled = |s: &str, u| f64::from(stored_float(s.as_bytes(), m_d, u));
        assert_eq!(scaled("3.14159", false), 3.141_599_893_569_946_3);
        assert_eq!(scaled("123.45678", false), 123.456_802_368_164_06);
        assert_eq!(scaled("1000", false), 999.999_877_929_687_5);
        assert_eq!(scaled("-1e39", false), -999.999_877_929_687_5);
        assert_eq!(scaled("1.00005", false), 1.000_100_016_593_933);
        assert_eq!(scaled("-1.00005", false), -1.000_100_016_593_933);
        assert_eq!(scaled("-0.00005", false), 0.0);
        assert_eq!(scaled("-0.00004", true), 0.0);
        assert_eq!(scaled("1e400", true), 999.999_877_929_687_5);
    }

    #[test]
    fn scales_come_from_the_column_type() {
        assert_eq!(
            FloatScale::of_column_type("float(7,4) unsigned zerofill"),
            Some(FloatScale {
                digits: 7,
                decimals: 4
            })
        );
        assert_eq!(FloatScale::of_column_type("float"), None);
        assert_eq!(FloatScale::of_column_type("float unsigned"), None);
    }
}
