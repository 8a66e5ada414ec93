//! `AsValue`: what the line builders accept as a protocol value, so callers can
//! pass `&str`, `&[u8]`, `Vec<u8>`, `Option<&[u8]>`, `hs_proto::Value`, ...
//! `None` is NULL; `Some(b"")` / `""` is the empty string, a different value.

/// Something that reads as one protocol value: `None` is NULL.
pub trait AsValue {
    fn as_value(&self) -> Option<&[u8]>;
}

impl AsValue for [u8] {
    fn as_value(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl<const N: usize> AsValue for [u8; N] {
    fn as_value(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl AsValue for Vec<u8> {
    fn as_value(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl AsValue for str {
    fn as_value(&self) -> Option<&[u8]> {
        Some(self.as_bytes())
    }
}

impl AsValue for String {
    fn as_value(&self) -> Option<&[u8]> {
        Some(self.as_bytes())
    }
}

impl<T: AsValue + ?Sized> AsValue for &T {
    fn as_value(&self) -> Option<&[u8]> {
        (**self).as_value()
    }
}

/// `None` is NULL; `Some(x)` is `x`'s bytes (covers `hs_proto::Value`).
impl<T: AsRef<[u8]>> AsValue for Option<T> {
    fn as_value(&self) -> Option<&[u8]> {
        self.as_ref().map(AsRef::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v<V: AsValue>(x: V) -> Option<Vec<u8>> {
        x.as_value().map(<[u8]>::to_vec)
    }

    #[test]
    fn null_and_empty_differ() {
        assert_eq!(v(None::<&[u8]>), None);
        assert_eq!(v(Some(b"".as_slice())), Some(Vec::new()));
        assert_eq!(v(""), Some(Vec::new()));
        assert_eq!(v(b"ab"), Some(b"ab".to_vec()));
        assert_eq!(v(String::from("x")), Some(b"x".to_vec()));
        let value: hs_proto::Value = Some(b"q".to_vec());
        assert_eq!(v(&value), Some(b"q".to_vec()));
        assert_eq!(v(Some("s")), Some(b"s".to_vec()));
    }
}
