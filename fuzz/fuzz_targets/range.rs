//! The server's `Range` parser (`RangeRequest::parse`, also used for `x-amz-copy-source-range`) on
//! arbitrary bytes, and the resolution of what it parses against an object size taken from the
//! input.
//!
//! Checked: nothing panics; a parsed range prints back as `bytes=...` into the same range; a resolved
//! range is non-empty, lies within the object, and is the one the request names (from `first` to
//! `last` or the end, or the last `n` bytes); and a range is refused (416 `InvalidRange`) only when it
//! starts at or past the end, or is an empty suffix, or the object is empty.
#![no_main]

use brisk_server::fuzzing::RangeRequest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (size, value) = data.split_at(8);
    let size = u64::from_le_bytes(size.try_into().unwrap());
    // Half of the inputs use a small object, where ranges past the end are common.
    let size = if size & 1 == 0 {
        size >> 1
    } else {
        (size >> 1) % 4096
    };
    let Ok(value) = std::str::from_utf8(value) else {
        return;
    };
    let Some(range) = RangeRequest::parse(value) else {
        return;
    };

    let printed = match range {
        RangeRequest::From { first, last: None } => format!("bytes={first}-"),
        RangeRequest::From {
            first,
            last: Some(last),
        } => {
            assert!(first <= last, "{value:?} parsed as {range:?}");
            format!("bytes={first}-{last}")
        }
        RangeRequest::Suffix(n) => format!("bytes=-{n}"),
    };
    assert_eq!(RangeRequest::parse(&printed), Some(range));

    match (range, range.resolve(size)) {
        (_, Ok(span)) => {
            assert!(
                span.start < span.end && span.end <= size,
                "{range:?} of {size}: {span:?}"
            );
            match range {
                RangeRequest::From { first, last } => {
                    assert_eq!(span.start, first);
                    assert_eq!(
                        span.end,
                        last.map_or(size, |l| size.min(l.saturating_add(1)))
                    );
                }
                RangeRequest::Suffix(n) => {
                    assert_eq!(span.end, size);
                    assert_eq!(span.end - span.start, n.min(size));
                }
            }
        }
        (RangeRequest::From { first, .. }, Err(e)) => {
            assert_eq!((e.code.as_str(), e.status), ("InvalidRange", 416));
            assert!(first >= size);
        }
        (RangeRequest::Suffix(n), Err(e)) => {
            assert_eq!((e.code.as_str(), e.status), ("InvalidRange", 416));
            assert!(n == 0 || size == 0);
        }
    }
});
