//! What a text query (COM_QUERY) answers: an OK packet, an ERR packet, or a
//! result set (column count, column definitions, text rows, end packet).

use crate::number::{get_le, get_lenenc, get_lenenc_str};
use std::ops::Range;

/// Server status flag: another result of the same command follows.
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
/// Server status flag: a transaction is open.
pub const SERVER_STATUS_IN_TRANS: u16 = 0x0001;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OkPacket {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
}

impl OkPacket {
    /// Parses an OK packet (header 0x00, or 0xfe at the end of a result
    /// set when EOF packets are deprecated).
    pub fn parse(p: &[u8]) -> OkPacket {
        let Some((affected_rows, i)) = get_lenenc(p, 1) else {
            return OkPacket::default();
        };
        let Some((last_insert_id, i)) = get_lenenc(p, i) else {
            return OkPacket {
                affected_rows,
                ..OkPacket::default()
            };
        };
        OkPacket {
            affected_rows,
            last_insert_id,
            status: get_le(p, i, 2).unwrap_or(0) as u16,
            warnings: get_le(p, i + 2, 2).unwrap_or(0) as u16,
        }
    }

    /// An old-style EOF packet: warnings, then status.
    pub fn parse_eof(p: &[u8]) -> OkPacket {
        OkPacket {
            warnings: get_le(p, 1, 2).unwrap_or(0) as u16,
            status: get_le(p, 3, 2).unwrap_or(0) as u16,
            ..OkPacket::default()
        }
    }

    pub fn more_results(&self) -> bool {
        self.status & SERVER_MORE_RESULTS_EXISTS != 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrPacket {
    pub code: u16,
    pub sql_state: String,
    pub message: String,
}

impl ErrPacket {
    pub fn parse(p: &[u8]) -> ErrPacket {
        let code = get_le(p, 1, 2).unwrap_or(0) as u16;
        let (sql_state, msg) = if p.get(3) == Some(&b'#') {
            (
                String::from_utf8_lossy(p.get(4..9).unwrap_or(&[])).into_owned(),
                p.get(9..).unwrap_or(&[]),
            )
        } else {
            (String::new(), p.get(3..).unwrap_or(&[]))
        };
        ErrPacket {
            code,
            sql_state,
            message: String::from_utf8_lossy(msg).into_owned(),
        }
    }
}

impl std::fmt::Display for ErrPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (error {})", self.message, self.code)
    }
}

/// The first packet of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Ok(OkPacket),
    Err(ErrPacket),
    /// A result set with this many columns follows.
    ResultSet(u64),
}

impl Response {
    pub fn parse(p: &[u8]) -> Result<Response, String> {
        match p.first() {
            Some(0x00) => Ok(Response::Ok(OkPacket::parse(p))),
            Some(0xff) => Ok(Response::Err(ErrPacket::parse(p))),
            Some(0xfb) => Err("the server asked for a local file; refused".into()),
            Some(_) => get_lenenc(p, 0)
                .map(|(n, _)| Response::ResultSet(n))
                .ok_or_else(|| "unreadable result header".to_string()),
            None => Err("empty packet where an answer was expected".into()),
        }
    }
}

/// The parts of a column definition hsd uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    /// The column's name as the result shows it (its alias, if any).
    pub name: Vec<u8>,
    pub column_type: u8,
    pub flags: u16,
    pub charset: u16,
}

impl ColumnDef {
    pub fn parse(p: &[u8]) -> Result<ColumnDef, String> {
        let bad = || "unreadable column definition".to_string();
        // catalog, schema, table, org_table, name, org_name
        let mut i = 0;
        let mut name = 0..0;
        for n in 0..6 {
            let (r, next) = get_lenenc_str(p, i).ok_or_else(bad)?;
            if n == 4 {
                name = r;
            }
            i = next;
        }
        // length of fixed fields (0x0c), charset(2), length(4), type(1), flags(2), decimals(1)
        let charset = get_le(p, i + 1, 2).ok_or_else(bad)? as u16;
        let column_type = *p.get(i + 7).ok_or_else(bad)?;
        let flags = get_le(p, i + 8, 2).ok_or_else(bad)? as u16;
        Ok(ColumnDef {
            name: p[name].to_vec(),
            column_type,
            flags,
            charset,
        })
    }
}

/// A packet inside a result set, after the column definitions.
#[derive(Debug, PartialEq, Eq)]
pub enum RowPacket {
    /// A row: parse it with `TextRow::parse`.
    Row,
    /// The end of the rows.
    End(OkPacket),
    /// The statement failed while sending rows.
    Err(ErrPacket),
}

impl RowPacket {
    /// Classifies `p`; `deprecate_eof` is whether the session ends result
    /// sets with OK packets. `whole_len` is the payload's length (a row
    /// may start with 0xfe when its first value is 16 MiB or longer).
    pub fn classify(p: &[u8], deprecate_eof: bool) -> RowPacket {
        match p.first() {
            Some(0xfe)
                if p.len() < crate::packet::MAX_PAYLOAD && (deprecate_eof || p.len() < 9) =>
            {
                RowPacket::End(if deprecate_eof {
                    OkPacket::parse(p)
                } else {
                    OkPacket::parse_eof(p)
                })
            }
            Some(0xff) => RowPacket::Err(ErrPacket::parse(p)),
            _ => RowPacket::Row,
        }
    }
}

/// Where each value of a text row lies in its payload; `None` is NULL.
/// Reused between rows so that reading rows allocates nothing.
#[derive(Debug, Default)]
pub struct TextRow {
    values: Vec<Option<Range<usize>>>,
}

impl TextRow {
    /// Parses a row of `columns` values.
    pub fn parse(&mut self, p: &[u8], columns: usize) -> Result<(), String> {
        self.values.clear();
        let mut i = 0;
        for _ in 0..columns {
            if p.get(i) == Some(&0xfb) {
                self.values.push(None);
                i += 1;
                continue;
            }
            let (r, next) = get_lenenc_str(p, i).ok_or("unreadable row")?;
            self.values.push(Some(r));
            i = next;
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Value `i` of the row in payload `p`, or `None` for NULL (and for a
    /// column the row does not have).
    pub fn get<'p>(&self, p: &'p [u8], i: usize) -> Option<&'p [u8]> {
        self.values.get(i)?.clone().map(|r| &p[r])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::number::put_lenenc;

    #[test]
    fn ok_and_err() {
        let mut p = vec![0];
        put_lenenc(&mut p, 3);
        put_lenenc(&mut p, 70000);
        p.extend_from_slice(&[2, 0, 1, 0]);
        assert_eq!(
            Response::parse(&p).unwrap(),
            Response::Ok(OkPacket {
                affected_rows: 3,
                last_insert_id: 70000,
                status: 2,
                warnings: 1
            })
        );
        let mut e = vec![0xff, 0x3e, 0x04, b'#'];
        e.extend_from_slice(b"23000Duplicate entry");
        match Response::parse(&e).unwrap() {
            Response::Err(err) => {
                assert_eq!(err.code, 1086);
                assert_eq!(err.sql_state, "23000");
                assert_eq!(err.message, "Duplicate entry");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(Response::parse(&[2]).unwrap(), Response::ResultSet(2));
    }

    #[test]
    fn rows_with_null_and_empty() {
        let p = [1, b'a', 0xfb, 0];
        let mut row = TextRow::default();
        row.parse(&p, 3).unwrap();
        assert_eq!(row.get(&p, 0), Some(&b"a"[..]));
        assert_eq!(row.get(&p, 1), None);
        assert_eq!(row.get(&p, 2), Some(&b""[..]));
        assert!(row.parse(&p, 4).is_err());
    }

    #[test]
    fn end_packets() {
        assert_eq!(
            RowPacket::classify(&[0xfe, 0, 0, 2, 0], false),
            RowPacket::End(OkPacket {
                status: 2,
                ..OkPacket::default()
            })
        );
        assert!(matches!(
            RowPacket::classify(&[0xfe, 0, 0, 0x0a, 0, 0, 0], true),
            RowPacket::End(_)
        ));
        assert_eq!(RowPacket::classify(&[1, b'x'], true), RowPacket::Row);
    }

    #[test]
    fn column_definition() {
        let mut p = Vec::new();
        for s in [&b"def"[..], b"db", b"t", b"t", b"name", b"name"] {
            put_lenenc(&mut p, s.len() as u64);
            p.extend_from_slice(s);
        }
        p.extend_from_slice(&[0x0c, 45, 0, 0, 1, 0, 0, 253, 1, 0, 0, 0, 0]);
        let c = ColumnDef::parse(&p).unwrap();
        assert_eq!(c.name, b"name");
        assert_eq!(c.column_type, 253);
        assert_eq!(c.charset, 45);
        assert_eq!(c.flags, 1);
    }
}
