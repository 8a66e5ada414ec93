//! hsd's fuzz targets as a library: the checks of each target (`targets`),
//! a request encoder (the inverse of `hs_proto::parse_request`, for
//! round-trip checks), a response-shape checker, and the small embedded
//! store the request-path target runs on.

pub mod encode;
pub mod store;
pub mod targets;

use hs_proto::Response;

/// Checks one response line (without LF) against section 2 of the spec:
/// a known code, `ncols` 1 and at most one reason on errors, and on success a
/// value count that is a multiple of `ncols`. Panics with the line otherwise.
pub fn assert_response_shape(line: &[u8]) {
    let r = Response::parse(line)
        .unwrap_or_else(|| panic!("unparsable response line {:?}", show(line)));
    match r.code {
        0 => {
            if r.ncols == 0 {
                assert!(r.values.is_empty(), "values with ncols 0: {:?}", show(line));
            } else {
                assert_eq!(
                    r.values.len() % r.ncols,
                    0,
                    "value count not a multiple of ncols: {:?}",
                    show(line)
                );
            }
        }
        1..=3 => {
            assert_eq!(r.ncols, 1, "error with ncols != 1: {:?}", show(line));
            assert!(
                r.values.len() <= 1,
                "error with extra tokens: {:?}",
                show(line)
            );
        }
        _ => panic!("unknown response code in {:?}", show(line)),
    }
}

/// A line for panic messages: printable, TABs shown as `|`, cut short.
pub fn show(line: &[u8]) -> String {
    let cut = &line[..line.len().min(200)];
    String::from_utf8_lossy(cut).replace('\t', "|")
}
