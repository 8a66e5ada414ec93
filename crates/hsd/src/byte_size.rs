//! Sizes written as `--help` shows them: a number of bytes, or a number
//! with a binary unit (`16 MiB`, `16MiB`, `64 KiB`, `1 GiB`; `K`, `M`,
//! `G` for the same), taken alike on the command line, in `HSD_*`
//! variables and in the config file (an integer, or a string with a unit).

use serde::de::{self, Deserializer, Unexpected, Visitor};
use std::fmt;
use std::str::FromStr;

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteSize(pub(crate) usize);

/// What the config file's error line says a size must look like.
pub(crate) const SIZE_WORDS: &str = "a size: bytes, or a number with KiB, MiB or GiB";

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<ByteSize, String> {
        let text = text.trim();
        let digits = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let number: usize = text[..digits]
            .parse()
            .map_err(|_| format!("{text:?} is not {SIZE_WORDS} (16 MiB)"))?;
        let shift = match text[digits..].trim() {
            "" | "B" => 0,
            "K" | "k" | "KiB" => 10,
            "M" | "MiB" => 20,
            "G" | "GiB" => 30,
            _ => return Err(format!("{text:?} is not {SIZE_WORDS} (16 MiB)")),
        };
        number
            .checked_mul(1 << shift)
            .map(ByteSize)
            .ok_or_else(|| format!("{text:?} is more bytes than this machine can count"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'de> serde::Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ByteSize, D::Error> {
        struct Size;
        impl Visitor<'_> for Size {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(SIZE_WORDS)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                usize::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                usize::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse()
                    .map_err(|_: String| E::invalid_value(Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_any(Size)
    }
}

#[cfg(test)]
mod tests {
    use super::ByteSize;

    #[test]
    fn sizes_as_help_shows_them() {
        for (text, bytes) in [
            ("16777216", 16 << 20),
            ("16 MiB", 16 << 20),
            ("16MiB", 16 << 20),
            ("64 KiB", 64 << 10),
            ("1G", 1 << 30),
            (" 7 ", 7),
        ] {
            assert_eq!(text.parse::<ByteSize>(), Ok(ByteSize(bytes)), "{text}");
        }
        for bad in [
            "",
            "MiB",
            "16 MB",
            "-1",
            "1.5 MiB",
            "99999999999999999999 GiB",
        ] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad}");
        }
    }
}
