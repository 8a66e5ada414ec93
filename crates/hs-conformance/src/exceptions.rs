//! Documented exceptions: the only places where hsd may answer differently
//! from the original, each because matching it would crash the server, open a
//! hole or corrupt data. Each has a name, a reason and a predicate on
//! (request line, plugin answer, hsd answer); each is also a named test in
//! crates/hsd/tests/conformance.rs. Nothing else belongs here.

pub struct Exception {
    pub name: &'static str,
    pub reason: &'static str,
    /// True when this difference is the documented one.
    pub applies: fn(request: &[u8], plugin: &[u8], hsd: &[u8]) -> bool,
}

pub fn exceptions() -> Vec<Exception> {
    vec![
        Exception {
            name: "index_id_above_65535",
            reason: "the original sizes a per-connection table by the index id a client \
                     sends (P 4294967295 makes mariadbd allocate about 4 billion entries \
                     and abort); hsd refuses ids above 65535 with 2 1 stmtnum",
            applies: |request, _plugin, hsd| {
                hsd == b"2\t1\tstmtnum" && index_id(request).is_some_and(|id| id > 65_535)
            },
        },
        Exception {
            name: "view_open_crashes_original",
            reason: "opening a view through the original crashes mariadbd (seen with \
                     P 0 mysql user ...); hsd answers 1 1 open_table",
            applies: |request, plugin, hsd| {
                request.starts_with(b"P\t") && plugin.is_empty() && hsd == b"1\t1\topen_table"
            },
        },
        Exception {
            name: "counts_beyond_the_line",
            reason: "the original allocates every key and IN value a count asks for before \
                     reading them (keys on its stack), so a count in the millions crashes \
                     mariadbd; hsd reads at most 4096 values beyond those the line holds",
            applies: |request, plugin, _hsd| plugin.is_empty() && counts_beyond_the_line(request),
        },
        Exception {
            name: "explicit_ids_after_an_error",
            reason: "once the original's write thread has met any error (a P on a missing \
                     table, from any client), it answers 1 1 167 to every insert that gives \
                     the auto-increment column a value, until the server restarts: one \
                     client's typo would decide another's inserts. hsd answers as the \
                     original does before that: the row stored, 0 1 0",
            applies: |request, plugin, hsd| {
                plugin == b"1\t1\t167"
                    && hsd == b"0\t1\t0"
                    && matches!(
                        hs_proto::parse_request(request),
                        Ok(hs_proto::Request::Exec(e)) if e.op == hs_proto::ExecOp::Insert
                    )
            },
        },
        Exception {
            name: "line_starting_with_q_or_slash",
            reason: "on the original a read buffer starting with Q shuts the listener \
                     down for every client and one starting with / drops the connection; \
                     hsd answers 2 1 cmd",
            applies: |request, _plugin, hsd| {
                matches!(request.first(), Some(b'Q' | b'/')) && hsd == b"2\t1\tcmd"
            },
        },
    ]
}

/// Whether a find/insert line's key count, or its IN clause's count, asks
/// for more than 4096 values beyond those the line holds.
pub fn counts_beyond_the_line(request: &[u8]) -> bool {
    let Ok(hs_proto::Request::Exec(e)) = hs_proto::parse_request(request) else {
        return false;
    };
    let beyond = |count: u32, held: usize| count as usize > held + hs_proto::MAX_PADDED_VALUES;
    beyond(e.key_count, e.keys.len())
        || e.in_clause
            .as_ref()
            .is_some_and(|i| beyond(i.count, i.given()))
}

/// The index id a `P` or find/insert line names, read as the original reads
/// numbers (its digits, wrapping at 2^32).
pub fn index_id(request: &[u8]) -> Option<u32> {
    let mut tokens = request.split(|&b| b == b'\t');
    let first = tokens.next()?;
    let token = if first == b"P" {
        tokens.next()?
    } else if first.first().is_some_and(u8::is_ascii_digit) {
        first
    } else {
        return None;
    };
    Some(wrapping_u32(token))
}

/// The token's decimal digits (others skipped), wrapping at 2^32, as the
/// original's number reader.
pub fn wrapping_u32(token: &[u8]) -> u32 {
    hs_proto::parse_u32(token)
}

/// The first exception that covers this difference, if any.
pub fn matching(request: &[u8], plugin: &[u8], hsd: &[u8]) -> Option<&'static str> {
    exceptions()
        .into_iter()
        .find(|e| (e.applies)(request, plugin, hsd))
        .map(|e| e.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_index_ids_are_excepted_only_when_hsd_says_stmtnum() {
        let p = b"P\t65536\tdb\tt\tPRIMARY\tid";
        assert_eq!(
            matching(p, b"0\t1", b"2\t1\tstmtnum"),
            Some("index_id_above_65535")
        );
        assert_eq!(matching(p, b"0\t1", b"0\t1"), None);
        let small = b"P\t65535\tdb\tt\tPRIMARY\tid";
        assert_eq!(matching(small, b"0\t1", b"2\t1\tstmtnum"), None);
        // 4294967296 wraps to 0 on the original: not a big id, no exception.
        let wrapped = b"4294967296\t=\t1\t1";
        assert_eq!(matching(wrapped, b"0\t1\t1", b"2\t1\tstmtnum"), None);
        assert_eq!(
            matching(b"65537\t=\t1\t1", b"0\t1\t1", b"2\t1\tstmtnum"),
            Some("index_id_above_65535")
        );
    }

    #[test]
    fn view_and_q_lines() {
        assert_eq!(
            matching(b"P\t0\tmysql\tuser\t\tUser", b"", b"1\t1\topen_table"),
            Some("view_open_crashes_original")
        );
        assert_eq!(
            matching(b"Q", b"", b"2\t1\tcmd"),
            Some("line_starting_with_q_or_slash")
        );
        assert_eq!(
            matching(b"/x", b"", b"2\t1\tcmd"),
            Some("line_starting_with_q_or_slash")
        );
        assert_eq!(matching(b"X", b"2\t1\tcmd", b"2\t1\top"), None);
    }

    #[test]
    fn wrapping_numbers() {
        assert_eq!(wrapping_u32(b"4294967297"), 1);
        assert_eq!(wrapping_u32(b"12ab"), 12);
        assert_eq!(wrapping_u32(b"1x2"), 12);
        assert_eq!(wrapping_u32(b"x"), 0);
    }

    #[test]
    fn every_exception_has_a_reason() {
        for e in exceptions() {
            assert!(e.reason.len() > 40, "{}", e.name);
        }
    }
}
