//! Session state changes a server reports at the end of an OK packet, when
//! the client asked for them (CLIENT_SESSION_TRACK).
//!
//! hsd reads one thing there: the GTID of a transaction it just committed,
//! which is how it knows what a replica must have applied before it may
//! answer a read. MariaDB reports it as the system variable `last_gtid`
//! (`SET SESSION session_track_system_variables = 'last_gtid'`), MySQL as a
//! GTID change (`SET SESSION session_track_gtids = OWN_GTID`).
//!
//! Layout of an OK packet with CLIENT_SESSION_TRACK: header, affected rows
//! and last insert id (length-encoded), status (2), warnings (2), then,
//! when anything follows, the info text (length-encoded) and, when the
//! status has SERVER_SESSION_STATE_CHANGED, the state block (length-encoded):
//! a sequence of (type: 1 byte, data: length-encoded string).

use crate::number::{get_lenenc, get_lenenc_str};

/// The client capability asking for session state in OK packets.
pub const CLIENT_SESSION_TRACK: u32 = 0x80_0000;
/// Server status flag: this OK packet carries session state changes.
pub const SERVER_SESSION_STATE_CHANGED: u16 = 0x4000;

const TRACK_SYSTEM_VARIABLES: u8 = 0;
const TRACK_SCHEMA: u8 = 1;
const TRACK_GTIDS: u8 = 3;

/// One reported change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateChange<'a> {
    /// A tracked system variable and its new value.
    SystemVariable { name: &'a [u8], value: &'a [u8] },
    /// The default database changed.
    Schema(&'a [u8]),
    /// MySQL's GTID tracking: the GTIDs (OWN_GTID: of the transaction just
    /// committed), as text.
    Gtids(&'a [u8]),
    /// A kind hsd does not read.
    Other { kind: u8, data: &'a [u8] },
}

/// The state block of an OK packet (`ok` is the whole payload, header
/// byte first), when the packet has one. Only meaningful on a connection
/// that negotiated `CLIENT_SESSION_TRACK`.
pub fn state_block(ok: &[u8]) -> Option<&[u8]> {
    let (_, i) = get_lenenc(ok, 1)?;
    let (_, i) = get_lenenc(ok, i)?;
    let status = u16::from_le_bytes([*ok.get(i)?, *ok.get(i + 1)?]);
    if status & SERVER_SESSION_STATE_CHANGED == 0 {
        return None;
    }
    // status, warnings, info
    let (_, i) = get_lenenc_str(ok, i + 4)?;
    let (block, _) = get_lenenc_str(ok, i)?;
    Some(&ok[block])
}

/// The changes in a state block, in order. A change cut short ends the
/// walk (what came before it is still reported).
pub fn changes(block: &[u8]) -> StateChanges<'_> {
    StateChanges { block, pos: 0 }
}

pub struct StateChanges<'a> {
    block: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for StateChanges<'a> {
    type Item = StateChange<'a>;

    fn next(&mut self) -> Option<StateChange<'a>> {
        let kind = *self.block.get(self.pos)?;
        let Some((range, next)) = get_lenenc_str(self.block, self.pos + 1) else {
            self.pos = self.block.len();
            return None;
        };
        self.pos = next;
        let data = &self.block[range];
        let change = match kind {
            TRACK_SYSTEM_VARIABLES => {
                let (name, i) = get_lenenc_str(data, 0)?;
                let (value, _) = get_lenenc_str(data, i)?;
                StateChange::SystemVariable {
                    name: &data[name],
                    value: &data[value],
                }
            }
            TRACK_SCHEMA => {
                let (name, _) = get_lenenc_str(data, 0)?;
                StateChange::Schema(&data[name])
            }
            // One byte saying how the GTIDs are written (0: as text), then
            // the text.
            TRACK_GTIDS => {
                let (gtids, _) = get_lenenc_str(data, 1)?;
                StateChange::Gtids(&data[gtids])
            }
            kind => StateChange::Other { kind, data },
        };
        Some(change)
    }
}

/// The GTID an OK packet reports for the transaction it ended: MariaDB's
/// `last_gtid` or MySQL's GTID change; `None` when it reports neither (no
/// transaction was written to the binary log, or tracking is off). The last
/// one wins when several are reported.
pub fn reported_gtid(ok: &[u8]) -> Option<&[u8]> {
    let mut found = None;
    for change in changes(state_block(ok)?) {
        match change {
            StateChange::SystemVariable { name, value }
                if name.eq_ignore_ascii_case(b"last_gtid") && !value.is_empty() =>
            {
                found = Some(value)
            }
            StateChange::Gtids(g) if !g.is_empty() => found = Some(g),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::number::put_lenenc;

    fn lenenc_str(out: &mut Vec<u8>, s: &[u8]) {
        put_lenenc(out, s.len() as u64);
        out.extend_from_slice(s);
    }

    fn ok_with(status: u16, info: &[u8], block: Option<&[u8]>) -> Vec<u8> {
        let mut p = vec![0x00, 0x00, 0x00];
        p.extend_from_slice(&status.to_le_bytes());
        p.extend_from_slice(&[0, 0]);
        lenenc_str(&mut p, info);
        if let Some(b) = block {
            lenenc_str(&mut p, b);
        }
        p
    }

    fn sysvar(name: &[u8], value: &[u8]) -> Vec<u8> {
        let mut data = Vec::new();
        lenenc_str(&mut data, name);
        lenenc_str(&mut data, value);
        let mut entry = vec![TRACK_SYSTEM_VARIABLES];
        lenenc_str(&mut entry, &data);
        entry
    }

    #[test]
    fn mariadb_commit_as_captured() {
        // MariaDB 10.11's answer to COMMIT with last_gtid tracked.
        let p = [
            0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x13, 0x00, 0x11, 0x09, b'l', b'a',
            b's', b't', b'_', b'g', b't', b'i', b'd', 0x06, b'0', b'-', b'1', b'-', b'1', b'3',
        ];
        assert_eq!(reported_gtid(&p), Some(&b"0-1-13"[..]));
    }

    #[test]
    fn mysql_own_gtid() {
        let gtid = b"3e11fa47-71ca-11e1-9e33-c80aa9429562:23";
        let mut data = vec![0];
        lenenc_str(&mut data, gtid);
        let mut block = vec![TRACK_GTIDS];
        lenenc_str(&mut block, &data);
        let p = ok_with(SERVER_SESSION_STATE_CHANGED | 2, b"", Some(&block));
        assert_eq!(reported_gtid(&p), Some(&gtid[..]));
    }

    #[test]
    fn several_changes_and_info_text() {
        let mut block = sysvar(b"autocommit", b"OFF");
        block.push(TRACK_SCHEMA);
        let mut schema = Vec::new();
        lenenc_str(&mut schema, b"hsdtest");
        lenenc_str(&mut block, &schema);
        block.extend(sysvar(b"last_gtid", b"1-2-300,0-1-5"));
        block.extend([5, 1, b'T']);
        let p = ok_with(
            SERVER_SESSION_STATE_CHANGED,
            b"Rows matched: 1",
            Some(&block),
        );
        let all: Vec<_> = changes(state_block(&p).unwrap()).collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all[1], StateChange::Schema(b"hsdtest"));
        assert_eq!(
            all[3],
            StateChange::Other {
                kind: 5,
                data: b"T"
            }
        );
        assert_eq!(reported_gtid(&p), Some(&b"1-2-300,0-1-5"[..]));
    }

    #[test]
    fn nothing_reported() {
        // No state flag: whatever follows is not a state block.
        let p = ok_with(2, b"", Some(&sysvar(b"last_gtid", b"0-1-1")));
        assert_eq!(reported_gtid(&p), None);
        // A short OK packet (MySQL leaves out an empty info).
        assert_eq!(reported_gtid(&[0, 0, 0, 0x00, 0x40, 0, 0]), None);
        assert_eq!(reported_gtid(&[0, 0, 0, 2, 0, 0, 0]), None);
        assert_eq!(reported_gtid(&[0]), None);
        assert_eq!(reported_gtid(&[]), None);
        // Another variable, or an empty last_gtid.
        let p = ok_with(
            SERVER_SESSION_STATE_CHANGED,
            b"",
            Some(&sysvar(b"autocommit", b"ON")),
        );
        assert_eq!(reported_gtid(&p), None);
        let p = ok_with(
            SERVER_SESSION_STATE_CHANGED,
            b"",
            Some(&sysvar(b"last_gtid", b"")),
        );
        assert_eq!(reported_gtid(&p), None);
    }

    #[test]
    fn cut_packets_never_panic() {
        let mut block = sysvar(b"autocommit", b"OFF");
        block.extend(sysvar(b"last_gtid", b"0-1-99"));
        let p = ok_with(SERVER_SESSION_STATE_CHANGED, b"info", Some(&block));
        assert_eq!(reported_gtid(&p), Some(&b"0-1-99"[..]));
        for cut in 0..p.len() {
            let _ = reported_gtid(&p[..cut]);
        }
        // A lying length inside the block stops the walk there.
        let mut bad = sysvar(b"autocommit", b"OFF");
        bad.extend([0, 0xfc, 0xff, 0xff]);
        let p = ok_with(SERVER_SESSION_STATE_CHANGED, b"", Some(&bad));
        assert_eq!(changes(state_block(&p).unwrap()).count(), 1);
        for b in 0..=255u8 {
            let mut p = ok_with(SERVER_SESSION_STATE_CHANGED, b"", Some(&block));
            let at = p.len() / 2;
            p[at] = b;
            let _ = reported_gtid(&p);
        }
    }
}
