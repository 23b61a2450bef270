//! Request and response head parsers, and the framing decision, on arbitrary bytes: they must never
//! panic, and a head that parses must serialise back into bytes that parse to the same head.

#![no_main]

use brisk_wire::http::{Limits, ParseStatus, RequestHead, ResponseHead};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    // Half of the inputs run under tight limits so that every limit check is reached.
    let limits = if selector & 1 == 0 {
        Limits::default()
    } else {
        Limits {
            max_head_bytes: 256,
            max_headers: 4,
            max_start_line: 64,
            max_header_line: 48,
            ..Limits::default()
        }
    };

    let mut request = RequestHead::new();
    if let Ok(ParseStatus::Complete(len)) = request.parse(input, &limits) {
        assert!(len <= input.len());
        let _ = request.body_framing();
        let _ = request.keep_alive();
        let _ = request.expects_continue();
        let _ = request.content_length();
        let mut wire = Vec::new();
        request.write_to(&mut wire);
        let mut again = RequestHead::new();
        let reparsed = again.parse(&wire, &Limits::default());
        assert_eq!(reparsed.ok(), Some(ParseStatus::Complete(wire.len())));
        assert_eq!(again, request);
    }

    let mut response = ResponseHead::new();
    if let Ok(ParseStatus::Complete(len)) = response.parse(input, &limits) {
        assert!(len <= input.len());
        for method in ["GET", "HEAD"] {
            let _ = response.body_framing(method);
        }
        let _ = response.keep_alive();
        let mut wire = Vec::new();
        response.write_to(&mut wire);
        let mut again = ResponseHead::new();
        let reparsed = again.parse(&wire, &Limits::default());
        assert_eq!(reparsed.ok(), Some(ParseStatus::Complete(wire.len())));
        assert_eq!(again, response);
    }
});
