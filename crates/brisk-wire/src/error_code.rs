//! The S3 error codes brisk speaks, each with the HTTP status S3 answers it with: one table that the
//! server's errors, the SigV4 verifier's errors and the client's parsing all read, so the two ends agree
//! by construction rather than by keeping string literals in step.
//!
//! Statuses follow the S3 API reference's "List of error codes". Two codes are brisk's own, for
//! conditions S3's storage never meets: `InsufficientStorage` (507, a full disk) and
//! `ClientDisconnected` (499, nginx's status for a client that hung up; only ever logged, since no
//! answer can reach that client).

macro_rules! s3_error_codes {
    ($($(#[doc = $doc:literal])* $name:ident = $status:literal,)*) => {
        /// An S3 error code (`<Code>` of an error document) with its HTTP status.
        ///
        /// A server may send codes that are not listed here; a client keeps those as text and
        /// classifies them by status ([`S3ErrorCode::parse`] returns `None` for them).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum S3ErrorCode {
            $($(#[doc = $doc])* $name,)*
        }

        impl S3ErrorCode {
            /// Every code in the table, in the table's order.
            pub const ALL: &'static [S3ErrorCode] = &[$(S3ErrorCode::$name,)*];

            /// The code as it is written in an error document.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(S3ErrorCode::$name => stringify!($name),)*
                }
            }

            /// The HTTP status S3 answers this code with.
            pub const fn http_status(self) -> u16 {
                match self {
                    $(S3ErrorCode::$name => $status,)*
                }
            }

            /// The code named `text`, if it is one of the table's.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $(stringify!($name) => Some(S3ErrorCode::$name),)*
                    _ => None,
                }
            }
        }
    };
}

s3_error_codes! {
    /// Access denied: missing, expired or not yet valid authentication, or a denied request.
    AccessDenied = 403,
    /// An ACL other than the owner's full control, on a bucket whose ACLs are disabled.
    AccessControlListNotSupported = 400,
    /// All access to this bucket has been disabled.
    AllAccessDisabled = 403,
    /// The `Authorization` header is malformed (or names another region).
    AuthorizationHeaderMalformed = 400,
    /// The presigned query parameters are malformed or out of range.
    AuthorizationQueryParametersError = 400,
    /// A declared digest (`Content-MD5`, `x-amz-checksum-*`) does not match the body.
    BadDigest = 400,
    /// A request that cannot be understood (also CORS preflight without `Origin`).
    BadRequest = 400,
    /// The bucket name is taken by another account.
    BucketAlreadyExists = 409,
    /// The bucket already exists and is yours (outside us-east-1).
    BucketAlreadyOwnedByYou = 409,
    /// The bucket still holds objects.
    BucketNotEmpty = 409,
    /// A bodiless 409 (a HEAD request's answer has no document to name its code).
    Conflict = 409,
    /// The client closed the connection before the answer (brisk's own; logged only).
    ClientDisconnected = 499,
    /// A CORS preflight for a bucket without a CORS configuration.
    CORSResponse = 403,
    /// The body is larger than allowed.
    EntityTooLarge = 400,
    /// A multipart part other than the last is smaller than 5 MiB.
    EntityTooSmall = 400,
    /// A bodiless 403.
    Forbidden = 403,
    /// `LocationConstraint` does not fit the endpoint.
    IllegalLocationConstraintException = 400,
    /// The body ended before its declared length.
    IncompleteBody = 400,
    /// The server's disk is full (brisk's own).
    InsufficientStorage = 507,
    /// An internal error: try again.
    InternalError = 500,
    /// The access key id is unknown.
    InvalidAccessKeyId = 403,
    /// An argument is invalid.
    InvalidArgument = 400,
    /// A bucket created with an ACL other than the owner's, where ACLs are disabled.
    InvalidBucketAclWithObjectOwnership = 400,
    /// The bucket name breaks the naming rules.
    InvalidBucketName = 400,
    /// `Content-MD5` is not a valid MD5 in base64.
    InvalidDigest = 400,
    /// A part of a CompleteMultipartUpload is missing or its ETag differs.
    InvalidPart = 400,
    /// `partNumber` is beyond the object's parts.
    InvalidPartNumber = 416,
    /// CompleteMultipartUpload lists its parts out of order.
    InvalidPartOrder = 400,
    /// The range cannot be satisfied.
    InvalidRange = 416,
    /// The request is invalid in its combination of parameters.
    InvalidRequest = 400,
    /// The security token is invalid.
    InvalidToken = 400,
    /// The request's path does not decode (percent-decoded, it is not UTF-8): "Couldn't parse the
    /// specified URI."
    InvalidURI = 400,
    /// The key is longer than 1,024 bytes.
    KeyTooLongError = 400,
    /// The XML body is not well formed or not the expected document.
    MalformedXML = 400,
    /// User metadata is larger than 2 KiB.
    MetadataTooLarge = 400,
    /// A header or parameter the request needs is missing.
    MissingContentLength = 411,
    /// A required security header is missing.
    MissingSecurityHeader = 400,
    /// The bucket does not exist.
    NoSuchBucket = 404,
    /// The key does not exist.
    NoSuchKey = 404,
    /// The multipart upload does not exist (aborted or completed).
    NoSuchUpload = 404,
    /// The version named by `versionId` does not exist.
    NoSuchVersion = 404,
    /// A bodiless 404 (a HEAD of a missing key or bucket).
    NotFound = 404,
    /// A conditional GET's condition held: nothing changed.
    NotModified = 304,
    /// The operation is not implemented.
    NotImplemented = 501,
    /// The bucket is in another region: use the endpoint given.
    PermanentRedirect = 301,
    /// A precondition (`If-Match`, `If-None-Match`, ...) failed.
    PreconditionFailed = 412,
    /// The request's header section is too large.
    RequestHeaderSectionTooLarge = 400,
    /// Too many requests: another AWS service's spelling of `SlowDown`, sent by some S3-compatible
    /// services.
    RequestLimitExceeded = 503,
    /// The request's clock is too far from the server's.
    RequestTimeTooSkewed = 403,
    /// The connection was idle too long while reading the request.
    RequestTimeout = 400,
    /// The service is unavailable: slow down and try again.
    ServiceUnavailable = 503,
    /// The signature does not match.
    SignatureDoesNotMatch = 403,
    /// Too many requests: slow down.
    SlowDown = 503,
    /// Too many requests: another AWS service's spelling of `SlowDown`, sent by some S3-compatible
    /// services (AWS answers it with 400).
    Throttling = 400,
    /// The payload's SHA-256 does not match `x-amz-content-sha256`.
    XAmzContentSHA256Mismatch = 400,
}

/// `code == "NoSuchKey"`: what an error document says compared with a known code.
impl PartialEq<&str> for S3ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for S3ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl std::fmt::Display for S3ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_parses_back_to_itself() {
        for &code in S3ErrorCode::ALL {
            assert_eq!(S3ErrorCode::parse(code.as_str()), Some(code));
            assert!(
                (300..600).contains(&code.http_status()),
                "{code}: {}",
                code.http_status()
            );
        }
        assert_eq!(S3ErrorCode::parse("NoSuchThing"), None);
        assert_eq!(
            S3ErrorCode::parse("nosuchkey"),
            None,
            "codes are case-sensitive"
        );
    }

    #[test]
    fn statuses_follow_the_s3_reference() {
        assert_eq!(S3ErrorCode::NoSuchKey.http_status(), 404);
        assert_eq!(S3ErrorCode::SignatureDoesNotMatch.http_status(), 403);
        assert_eq!(S3ErrorCode::InvalidRange.http_status(), 416);
        assert_eq!(S3ErrorCode::SlowDown.http_status(), 503);
        assert_eq!(S3ErrorCode::MissingContentLength.http_status(), 411);
        assert_eq!(S3ErrorCode::RequestTimeout.http_status(), 400);
        assert_eq!(S3ErrorCode::BucketNotEmpty.to_string(), "BucketNotEmpty");
    }
}
