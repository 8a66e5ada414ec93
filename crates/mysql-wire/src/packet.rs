//! Packet framing: a 3-byte little-endian payload length and a sequence
//! number before every payload. Payloads of 16 MiB - 1 bytes or more are
//! split into several packets, the last one shorter than that.

/// The largest payload one packet carries; a payload this long continues in
/// the next packet.
pub const MAX_PAYLOAD: usize = 0xff_ffff;

/// Builds outgoing packets in a buffer the caller sends. A command's
/// sequence numbers start at 0; each packet takes the next one.
#[derive(Debug, Default)]
pub struct PacketWriter {
    start: usize,
    seq: u8,
}

impl PacketWriter {
    /// Starts a packet with sequence number `seq` at the end of `out`; write
    /// the payload into `out`, then call `finish`.
    pub fn begin(out: &mut Vec<u8>, seq: u8) -> PacketWriter {
        let start = out.len();
        out.extend_from_slice(&[0, 0, 0, seq]);
        PacketWriter { start, seq }
    }

    /// Writes the header(s). A payload longer than `MAX_PAYLOAD` is split
    /// in place into several packets. Returns the next sequence number.
    pub fn finish(self, out: &mut Vec<u8>) -> u8 {
        let payload_start = self.start + 4;
        let len = out.len() - payload_start;
        if len < MAX_PAYLOAD {
            out[self.start..self.start + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
            return self.seq.wrapping_add(1);
        }
        // Rare (values of 16 MiB and more): rebuild the tail with headers.
        let payload = out.split_off(payload_start);
        out.truncate(self.start);
        let mut seq = self.seq;
        let mut rest: &[u8] = &payload;
        loop {
            let n = rest.len().min(MAX_PAYLOAD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            out.push(seq);
            out.extend_from_slice(&rest[..n]);
            seq = seq.wrapping_add(1);
            rest = &rest[n..];
            if n < MAX_PAYLOAD {
                return seq;
            }
        }
    }
}

/// One complete incoming payload found in a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// The payload lies in one packet: `buf[range]`; `consumed` bytes of the
    /// buffer make up the packet.
    Whole {
        seq: u8,
        range: std::ops::Range<usize>,
        consumed: usize,
    },
    /// The payload spans several packets; here it is, joined.
    Joined {
        seq: u8,
        payload: Vec<u8>,
        consumed: usize,
    },
}

/// Finds complete payloads at the front of a receive buffer.
pub struct PacketReader;

impl PacketReader {
    /// The next complete payload starting at `buf[pos..]`, or `None` when
    /// more bytes are needed. `seq` is the last packet's sequence number.
    pub fn next(buf: &[u8], pos: usize) -> Option<Frame> {
        let (len, seq) = header(buf, pos)?;
        if len < MAX_PAYLOAD {
            let end = pos + 4 + len;
            if buf.len() < end {
                return None;
            }
            return Some(Frame::Whole {
                seq,
                range: pos + 4..end,
                consumed: end - pos,
            });
        }
        // A split payload: check that every piece is here before copying.
        let mut at = pos;
        let mut total = 0usize;
        loop {
            let (len, _) = header(buf, at)?;
            if buf.len() < at + 4 + len {
                return None;
            }
            total += len;
            at += 4 + len;
            if len < MAX_PAYLOAD {
                break;
            }
        }
        let mut payload = Vec::with_capacity(total);
        let mut at = pos;
        let seq = loop {
            let (len, s) = header(buf, at)?;
            payload.extend_from_slice(&buf[at + 4..at + 4 + len]);
            at += 4 + len;
            if len < MAX_PAYLOAD {
                break s;
            }
        };
        Some(Frame::Joined {
            seq,
            payload,
            consumed: at - pos,
        })
    }
}

fn header(buf: &[u8], pos: usize) -> Option<(usize, u8)> {
    let h = buf.get(pos..pos + 4)?;
    Some((u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize, h[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_packet_roundtrip() {
        let mut out = Vec::new();
        let w = PacketWriter::begin(&mut out, 7);
        out.extend_from_slice(b"hello");
        assert_eq!(w.finish(&mut out), 8);
        assert_eq!(&out[..4], &[5, 0, 0, 7]);
        match PacketReader::next(&out, 0) {
            Some(Frame::Whole {
                seq: 7,
                range,
                consumed: 9,
            }) => assert_eq!(&out[range], b"hello"),
            other => panic!("{other:?}"),
        }
        assert_eq!(PacketReader::next(&out[..6], 0), None);
    }

    #[test]
    fn huge_payload_is_split_and_joined() {
        let payload: Vec<u8> = (0..MAX_PAYLOAD + 10).map(|i| i as u8).collect();
        let mut out = vec![0xaa];
        let w = PacketWriter::begin(&mut out, 0);
        out.extend_from_slice(&payload);
        assert_eq!(w.finish(&mut out), 2);
        assert_eq!(out.len(), 1 + payload.len() + 8);
        assert_eq!(PacketReader::next(&out[..out.len() - 1], 1), None);
        match PacketReader::next(&out, 1) {
            Some(Frame::Joined {
                seq: 1,
                payload: p,
                consumed,
            }) => {
                assert_eq!(consumed, out.len() - 1);
                assert!(p == payload);
            }
            other => panic!("{:?}", other.map(|_| "unexpected frame")),
        }
    }

    #[test]
    fn exact_multiple_ends_with_an_empty_packet() {
        let payload = vec![1u8; MAX_PAYLOAD];
        let mut out = Vec::new();
        let w = PacketWriter::begin(&mut out, 0);
        out.extend_from_slice(&payload);
        w.finish(&mut out);
        assert_eq!(out.len(), MAX_PAYLOAD + 8);
        assert_eq!(&out[out.len() - 4..], &[0, 0, 0, 1]);
    }
}
