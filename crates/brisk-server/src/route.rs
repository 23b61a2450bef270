//! From a request line and `Host` to an S3 operation: path-style (`/bucket/key`) and
//! virtual-hosted-style (`bucket.localhost:9000/key`) addressing, and the query sub-resources that
//! select an operation (`?uploads`, `?uploadId=`, `?partNumber=`, `?delete`, `?list-type=2`,
//! `?location`, `?versions`, `?versioning`).

use percent_encoding::percent_decode_str;

use crate::error::S3Error;
use brisk_wire::S3ErrorCode;

/// The S3 operations the server implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    ListBuckets,
    GetBucketAcl,
    PutBucketAcl,
    GetObjectAcl,
    PutObjectAcl,
    CreateBucket,
    HeadBucket,
    DeleteBucket,
    GetBucketLocation,
    GetBucketVersioning,
    ListObjectVersions,
    ListObjectsV1,
    ListObjectsV2,
    ListMultipartUploads,
    DeleteObjects,
    PutObject,
    CopyObject,
    GetObject,
    GetObjectAttributes,
    HeadObject,
    DeleteObject,
    CreateMultipartUpload,
    UploadPart,
    UploadPartCopy,
    CompleteMultipartUpload,
    AbortMultipartUpload,
    ListParts,
}

/// Query sub-resources S3 defines that select operations this server does not implement; a request
/// naming one gets `501 NotImplemented` rather than being mistaken for a plain GET or PUT.
const UNSUPPORTED_SUBRESOURCES: &[&str] = &[
    "accelerate",
    "analytics",
    "cors",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "legal-hold",
    "lifecycle",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "ownershipControls",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "replication",
    "requestPayment",
    "restore",
    "retention",
    "select",
    "tagging",
    "torrent",
    "website",
];

/// The decoded query of a request: name/value pairs in order, percent-decoded (`+` stays a plus, as
/// S3 reads it).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string (without `?`).
    pub fn parse(raw: &str) -> Self {
        let pairs = raw
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                (decode(name), decode(value))
            })
            .collect();
        Self { pairs }
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `name` is present (with or without a value).
    pub fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(n, _)| n == name)
    }
}

fn decode(text: &str) -> String {
    percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// Where a request points and what it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub operation: Operation,
    /// The bucket (empty for ListBuckets).
    pub bucket: String,
    /// The key (empty for bucket operations).
    pub key: String,
    pub query: Query,
}

/// The raw path and query of a request target (`/a/b?x=1` → (`/a/b`, `x=1`)).
pub fn split_target(target: &str) -> (&str, &str) {
    target.split_once('?').unwrap_or((target, ""))
}

/// The bucket named by a virtual-hosted-style `Host` (`bucket.base_domain[:port]`), if any.
pub fn bucket_from_host<'h>(host: &'h str, base_domain: &str) -> Option<&'h str> {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let bucket = name.strip_suffix(base_domain)?.strip_suffix('.')?;
    (!bucket.is_empty()).then_some(bucket)
}

/// Resolves a request to an operation. `host` is the `Host` field, `base_domain` the configured
/// domain for virtual-hosted-style addressing.
pub fn route(
    method: &str,
    target: &str,
    host: Option<&str>,
    base_domain: &str,
    has_copy_source: bool,
) -> Result<Route, S3Error> {
    let (raw_path, raw_query) = split_target(target);
    if !raw_path.starts_with('/') {
        return Err(S3Error::invalid_request(format!(
            "request target {raw_path:?} is not an absolute path"
        )));
    }
    let path = percent_decode_str(raw_path).decode_utf8().map_err(|_| {
        // S3's words for a path that does not decode ("Couldn't parse the specified URI.").
        S3Error::new(
            S3ErrorCode::InvalidURI,
            "Couldn't parse the specified URI: the percent-decoded path is not UTF-8",
        )
    })?;
    let query = Query::parse(raw_query);
    let (bucket, key) = match host.and_then(|h| bucket_from_host(h, base_domain)) {
        Some(bucket) => (bucket.to_owned(), path[1..].to_owned()),
        None => {
            let rest = &path[1..];
            match rest.split_once('/') {
                Some((bucket, key)) => (bucket.to_owned(), key.to_owned()),
                None => (rest.to_owned(), String::new()),
            }
        }
    };
    // `//key`: a key with no bucket before it. Without this it would read as the service
    // (`GET` would list the buckets).
    if bucket.is_empty() && !key.is_empty() {
        return Err(S3Error::new(
            S3ErrorCode::InvalidBucketName,
            "The specified bucket is not valid: the path has a key but no bucket",
        ));
    }
    if let Some(name) = UNSUPPORTED_SUBRESOURCES.iter().find(|s| query.has(s)) {
        return Err(S3Error::not_implemented(format!(
            "the ?{name} sub-resource is not implemented"
        )));
    }
    // The store keeps one version of each key: a bucket's versioning state and its versions can
    // be read (never enabled; each object the `null` version), not changed.
    if let Some(name) = ["versioning", "versions"]
        .into_iter()
        .find(|s| query.has(s))
        && !(method == "GET" && !bucket.is_empty() && key.is_empty())
    {
        return Err(S3Error::not_implemented(format!(
            "{method} of the ?{name} sub-resource is not implemented: brisk serve keeps one \
             version of each key"
        )));
    }
    let operation = select(method, &bucket, &key, &query, has_copy_source)?;
    Ok(Route {
        operation,
        bucket,
        key,
        query,
    })
}

fn select(
    method: &str,
    bucket: &str,
    key: &str,
    query: &Query,
    has_copy_source: bool,
) -> Result<Operation, S3Error> {
    use Operation::*;
    let unsupported =
        || S3Error::not_implemented(format!("{method} on this resource is not implemented"));
    if bucket.is_empty() {
        return match method {
            "GET" => Ok(ListBuckets),
            _ => Err(unsupported()),
        };
    }
    if key.is_empty() {
        return Ok(match method {
            "GET" if query.has("acl") => GetBucketAcl,
            "PUT" if query.has("acl") => PutBucketAcl,
            "PUT" => CreateBucket,
            "HEAD" => HeadBucket,
            "DELETE" => DeleteBucket,
            "GET" if query.has("location") => GetBucketLocation,
            "GET" if query.has("versioning") => GetBucketVersioning,
            "GET" if query.has("versions") => ListObjectVersions,
            "GET" if query.has("uploads") => ListMultipartUploads,
            "GET" if query.get("list-type") == Some("2") => ListObjectsV2,
            "GET" => ListObjectsV1,
            "POST" if query.has("delete") => DeleteObjects,
            _ => return Err(unsupported()),
        });
    }
    let upload = query.has("uploadId");
    Ok(match method {
        "GET" if query.has("acl") => GetObjectAcl,
        "PUT" if query.has("acl") => PutObjectAcl,
        "PUT" if upload && has_copy_source => UploadPartCopy,
        "PUT" if upload => UploadPart,
        "PUT" if has_copy_source => CopyObject,
        "PUT" => PutObject,
        "GET" if query.has("attributes") => GetObjectAttributes,
        "GET" if upload => ListParts,
        "GET" => GetObject,
        "HEAD" => HeadObject,
        "DELETE" if upload => AbortMultipartUpload,
        "DELETE" => DeleteObject,
        "POST" if query.has("uploads") => CreateMultipartUpload,
        "POST" if upload => CompleteMultipartUpload,
        _ => return Err(unsupported()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(method: &str, target: &str) -> Operation {
        route(method, target, Some("127.0.0.1:9000"), "localhost", false)
            .unwrap()
            .operation
    }

    #[test]
    fn path_style_selects_by_method_and_subresource() {
        assert_eq!(op("GET", "/"), Operation::ListBuckets);
        assert_eq!(op("PUT", "/b"), Operation::CreateBucket);
        assert_eq!(op("PUT", "/b/"), Operation::CreateBucket);
        assert_eq!(
            op("GET", "/b?list-type=2&prefix=a"),
            Operation::ListObjectsV2
        );
        assert_eq!(op("GET", "/b"), Operation::ListObjectsV1);
        assert_eq!(op("GET", "/b?location"), Operation::GetBucketLocation);
        assert_eq!(op("GET", "/b?versioning"), Operation::GetBucketVersioning);
        assert_eq!(op("GET", "/b?acl"), Operation::GetBucketAcl);
        assert_eq!(op("PUT", "/b/k?acl"), Operation::PutObjectAcl);
        assert_eq!(op("PUT", "/b?acl"), Operation::PutBucketAcl);
        assert_eq!(
            op("GET", "/b?versions&prefix=a"),
            Operation::ListObjectVersions
        );
        assert_eq!(op("GET", "/b?uploads"), Operation::ListMultipartUploads);
        assert_eq!(op("POST", "/b?delete"), Operation::DeleteObjects);
        assert_eq!(op("POST", "/b/k?uploads"), Operation::CreateMultipartUpload);
        assert_eq!(
            op("PUT", "/b/k?partNumber=1&uploadId=x"),
            Operation::UploadPart
        );
        assert_eq!(
            op("POST", "/b/k?uploadId=x"),
            Operation::CompleteMultipartUpload
        );
        assert_eq!(
            op("DELETE", "/b/k?uploadId=x"),
            Operation::AbortMultipartUpload
        );
        assert_eq!(op("GET", "/b/k?uploadId=x"), Operation::ListParts);
        assert_eq!(op("GET", "/b/k?x-id=GetObject"), Operation::GetObject);
        assert_eq!(op("GET", "/b/k?attributes"), Operation::GetObjectAttributes);
    }

    #[test]
    fn a_key_without_a_bucket_is_refused_not_read_as_the_service() {
        for target in ["//foo", "//foo/bar", "/%2Ffoo"] {
            let err = route("GET", target, None, "localhost", false).unwrap_err();
            assert_eq!(
                (err.status, err.code),
                (400, S3ErrorCode::InvalidBucketName),
                "{target}"
            );
        }
        assert_eq!(op("GET", "/"), Operation::ListBuckets);
    }

    #[test]
    fn keys_are_percent_decoded_and_keep_their_slashes() {
        let r = route("GET", "/b/a%20b/c%2Bd//e", None, "localhost", false).unwrap();
        assert_eq!((r.bucket.as_str(), r.key.as_str()), ("b", "a b/c+d//e"));
    }

    #[test]
    fn c1_controls_are_key_characters_and_bytes_that_are_not_utf8_are_refused() {
        // U+00AE U+008A '-', as boto3 sends s3-tests' "\xae\x8a-": a key like any other.
        let r = route("GET", "/b/%C2%AE%C2%8A-", None, "localhost", false).unwrap();
        assert_eq!(r.key, "\u{ae}\u{8a}-");
        // The same bytes unencoded as UTF-8 (what the test sent under Python 2): S3's words.
        let err = route("GET", "/b/%AE%8A-", None, "localhost", false).unwrap_err();
        assert_eq!((err.status, err.code), (400, S3ErrorCode::InvalidURI));
        assert!(
            err.message.starts_with("Couldn't parse the specified URI"),
            "{}",
            err.message
        );
    }

    #[test]
    fn virtual_hosted_style_takes_the_bucket_from_host() {
        let r = route(
            "GET",
            "/dir/k",
            Some("photos.localhost:9000"),
            "localhost",
            false,
        )
        .unwrap();
        assert_eq!((r.bucket.as_str(), r.key.as_str()), ("photos", "dir/k"));
        assert_eq!(bucket_from_host("localhost:9000", "localhost"), None);
        assert_eq!(bucket_from_host("a.b.localhost", "localhost"), Some("a.b"));
        assert_eq!(bucket_from_host("xlocalhost", "localhost"), None);
    }

    #[test]
    fn copy_source_turns_put_into_copy() {
        let r = route("PUT", "/b/k", None, "localhost", true).unwrap();
        assert_eq!(r.operation, Operation::CopyObject);
        let r = route(
            "PUT",
            "/b/k?uploadId=u&partNumber=2",
            None,
            "localhost",
            true,
        )
        .unwrap();
        assert_eq!(r.operation, Operation::UploadPartCopy);
    }

    #[test]
    fn unknown_operations_are_not_implemented() {
        for (m, t) in [
            ("GET", "/b?policy"),
            ("PUT", "/b/k?tagging"),
            ("PUT", "/b?versioning"),
            ("GET", "/b/k?versions"),
            ("POST", "/b/k"),
            ("PATCH", "/b"),
        ] {
            let e = route(m, t, None, "localhost", false).unwrap_err();
            assert_eq!(
                (e.code, e.status),
                (S3ErrorCode::NotImplemented, 501),
                "{m} {t}"
            );
        }
    }

    #[test]
    fn query_values_are_decoded_and_plus_stays_plus() {
        let q = Query::parse("prefix=a%2Fb+c&delimiter=%2F&uploads");
        assert_eq!(q.get("prefix"), Some("a/b+c"));
        assert_eq!(q.get("delimiter"), Some("/"));
        assert!(q.has("uploads"));
    }
}
