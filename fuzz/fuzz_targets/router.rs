//! The server's router (`route`: method, request target, `Host` and whether `x-amz-copy-source` is
//! present → bucket, key, query and S3 operation) on arbitrary request targets and `Host` fields.
//!
//! Checked: nothing panics; a refusal is `400 InvalidRequest` or `501 NotImplemented`; and a route
//! is consistent with its request: the decoded path is `/bucket/key` (path style) or `/key` with the
//! bucket from `Host` (virtual-hosted style), the query is the parsed query string, the operation is
//! one of the request's method, bucket operations have no key and object operations have one, and
//! only a request with `x-amz-copy-source` copies.
#![no_main]

use brisk_server::fuzzing::{Operation, Query, route};
use libfuzzer_sys::fuzz_target;
use percent_encoding::percent_decode_str;

const METHODS: [&str; 8] = [
    "GET", "PUT", "HEAD", "DELETE", "POST", "OPTIONS", "PATCH", "get",
];
const BASE_DOMAIN: &str = "localhost";

/// The method an operation is reached by, and whether it names an object (has a key).
fn shape(op: Operation) -> (&'static str, bool) {
    use Operation::*;
    match op {
        ListBuckets | GetBucketLocation | GetBucketVersioning | ListObjectVersions
        | ListObjectsV1 | ListObjectsV2 | ListMultipartUploads | GetBucketAcl => ("GET", false),
        CreateBucket | PutBucketAcl => ("PUT", false),
        HeadBucket => ("HEAD", false),
        DeleteBucket => ("DELETE", false),
        DeleteObjects => ("POST", false),
        PutObject | CopyObject | UploadPart | UploadPartCopy | PutObjectAcl => ("PUT", true),
        GetObject | GetObjectAttributes | GetObjectAcl | ListParts => ("GET", true),
        HeadObject => ("HEAD", true),
        DeleteObject | AbortMultipartUpload => ("DELETE", true),
        CreateMultipartUpload | CompleteMultipartUpload => ("POST", true),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(input);
    // The input is the request target, then optionally a newline and the `Host` field.
    let (target, host_field) = match text.split_once('\n') {
        Some((target, host)) => (target, Some(host)),
        None => (&*text, None),
    };
    let method = METHODS[usize::from(control) % METHODS.len()];
    let host = match (control >> 3) % 4 {
        0 => None,
        1 => Some("127.0.0.1:9000"),
        2 => Some("photos.localhost:9000"),
        _ => host_field,
    };
    let copy = control & 0x80 != 0;

    let route = match route(method, target, host, BASE_DOMAIN, copy) {
        Ok(route) => route,
        Err(e) => {
            assert!(
                matches!(
                    (e.code.as_str(), e.status),
                    ("InvalidRequest", 400) | ("NotImplemented", 501)
                ),
                "{e:?}"
            );
            return;
        }
    };

    let (raw_path, raw_query) = target.split_once('?').unwrap_or((target, ""));
    let path = percent_decode_str(raw_path)
        .decode_utf8()
        .expect("a routed path is UTF-8");
    assert!(path.starts_with('/'));
    let path_style = (route.key.is_empty() && path == format!("/{}", route.bucket))
        || path == format!("/{}/{}", route.bucket, route.key);
    let virtual_style = !route.bucket.is_empty()
        && path[1..] == route.key
        && host.is_some_and(|h| h.starts_with(&format!("{}.", route.bucket)));
    match host {
        None | Some("127.0.0.1:9000") => assert!(path_style, "{route:?} for {path:?}"),
        Some("photos.localhost:9000") => {
            assert!(virtual_style && route.bucket == "photos", "{route:?}");
        }
        Some(_) => assert!(
            path_style || virtual_style,
            "{route:?} for {path:?} {host:?}"
        ),
    }
    if !virtual_style {
        assert!(!route.bucket.contains('/'), "{route:?}");
    }
    assert_eq!(route.query, Query::parse(raw_query));

    let (op_method, has_key) = shape(route.operation);
    assert_eq!(op_method, method, "{route:?}");
    assert_eq!(
        route.operation == Operation::ListBuckets,
        route.bucket.is_empty()
    );
    if route.operation != Operation::ListBuckets {
        assert_eq!(has_key, !route.key.is_empty(), "{route:?}");
    }
    if matches!(
        route.operation,
        Operation::CopyObject | Operation::UploadPartCopy
    ) {
        assert!(copy);
    }
    if copy && method == "PUT" && has_key {
        assert!(matches!(
            route.operation,
            Operation::CopyObject | Operation::UploadPartCopy
        ));
    }
});
