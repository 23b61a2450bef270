//! One error type whose variants say what happened, so callers never match on HTTP status codes:
//! `Err(Error::NoSuchKey(_))`, not `status == 404 && code == "NoSuchKey"`.
//!
//! Every error the server reported carries a [`ServiceError`]: the status, the S3 code, the message,
//! the request id (for support cases), and a hint where the cause is clear (a wrong region, a skewed
//! clock, a secret that does not match).

use std::fmt;
use std::time::Duration;

use brisk_wire::S3ErrorCode;
use brisk_wire::http::HttpError;
use brisk_wire::xml::ErrorDocument;

use crate::config::ConfigError;

/// What the server said when it refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    /// HTTP status of the response.
    pub status: u16,
    /// The S3 error code (`NoSuchKey`, `SlowDown`, ...); for responses without a body (HEAD) a code
    /// derived from the status (`NotFound`, `Forbidden`, ...).
    pub code: String,
    /// The server's message (empty when it sent none).
    pub message: String,
    /// `x-amz-request-id` (or the document's `RequestId`), for support cases.
    pub request_id: Option<String>,
    /// The bucket or key the error is about, when the server said.
    pub resource: Option<String>,
    /// What probably went wrong and how to fix it, when that is clear.
    pub hint: Option<String>,
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (HTTP {})", self.code, self.status)?;
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if let Some(resource) = &self.resource {
            write!(f, " [resource {resource}]")?;
        }
        if let Some(id) = &self.request_id {
            write!(f, " [request id {id}]")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "; hint: {hint}")?;
        }
        Ok(())
    }
}

impl ServiceError {
    /// Builds the error from a response's status, its parsed error document (if any) and its request
    /// id header. `region` is the region the request was signed for (for the wrong-region hint).
    pub fn new(
        status: u16,
        document: Option<ErrorDocument>,
        request_id: Option<String>,
        region: &str,
    ) -> Self {
        let (code, message, resource, doc_request_id, extra) = match document {
            Some(d) => (d.code, d.message, d.resource, d.request_id, d.extra),
            None => (
                code_for_status(status)
                    .map_or("UnknownError", S3ErrorCode::as_str)
                    .to_owned(),
                String::new(),
                None,
                None,
                Vec::new(),
            ),
        };
        let field = |name: &str| {
            extra
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let hint = match S3ErrorCode::parse(&code) {
            Some(
                S3ErrorCode::AuthorizationHeaderMalformed
                | S3ErrorCode::PermanentRedirect
                | S3ErrorCode::IllegalLocationConstraintException,
            ) => Some(match field("Region").or(field("Endpoint")) {
                Some(expected) => format!(
                    "the bucket is not in {region:?} (the server names {expected:?}); set the region to match"
                ),
                None => format!("the bucket is probably not in {region:?}; set the region it lives in"),
            }),
            Some(S3ErrorCode::RequestTimeTooSkewed) => Some(
                "this machine's clock differs from the server's by more than 15 minutes; fix the clock (NTP)"
                    .to_owned(),
            ),
            Some(S3ErrorCode::SignatureDoesNotMatch) => Some(
                "the secret access key does not match the access key id, or a proxy altered the request"
                    .to_owned(),
            ),
            Some(S3ErrorCode::InvalidAccessKeyId) => {
                Some("the server does not know this access key id".to_owned())
            }
            _ => None,
        };
        Self {
            status,
            code,
            message,
            request_id: request_id.or(doc_request_id),
            resource,
            hint,
        }
    }
}

/// The code S3 uses for an error response without a body (a HEAD request).
fn code_for_status(status: u16) -> Option<S3ErrorCode> {
    Some(match status {
        301 => S3ErrorCode::PermanentRedirect,
        304 => S3ErrorCode::NotModified,
        400 => S3ErrorCode::BadRequest,
        403 => S3ErrorCode::Forbidden,
        404 => S3ErrorCode::NotFound,
        409 => S3ErrorCode::Conflict,
        412 => S3ErrorCode::PreconditionFailed,
        416 => S3ErrorCode::InvalidRange,
        500 => S3ErrorCode::InternalError,
        503 => S3ErrorCode::ServiceUnavailable,
        _ => return None,
    })
}

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key does not exist in the bucket (`NoSuchKey`; `NotFound` on HEAD).
    #[error("no such key: {0}")]
    NoSuchKey(Box<ServiceError>),
    /// The bucket does not exist (`NoSuchBucket`).
    #[error("no such bucket: {0}")]
    NoSuchBucket(Box<ServiceError>),
    /// The credentials may not do this (`AccessDenied`, `Forbidden`, `InvalidAccessKeyId`, ...).
    #[error("access denied: {0}")]
    AccessDenied(Box<ServiceError>),
    /// The server computed a different signature (`SignatureDoesNotMatch`).
    #[error("signature does not match: {0}")]
    SignatureDoesNotMatch(Box<ServiceError>),
    /// The client's clock is too far from the server's (`RequestTimeTooSkewed`).
    #[error("clock skew: {0}")]
    ClockSkew(Box<ServiceError>),
    /// The request went to the wrong region (`AuthorizationHeaderMalformed` naming a region,
    /// `PermanentRedirect`).
    #[error("wrong region: {0}")]
    WrongRegion(Box<ServiceError>),
    /// A condition (`If-Match`, `If-None-Match`, ...) did not hold (`PreconditionFailed`).
    #[error("precondition failed: {0}")]
    PreconditionFailed(Box<ServiceError>),
    /// `If-None-Match`/`If-Modified-Since` matched: the caller's copy is current (304).
    #[error("not modified: {0}")]
    NotModified(Box<ServiceError>),
    /// The requested range lies outside the object (`InvalidRange`).
    #[error("invalid range: {0}")]
    InvalidRange(Box<ServiceError>),
    /// The bucket name is taken (`BucketAlreadyExists`, `BucketAlreadyOwnedByYou`).
    #[error("bucket already exists: {0}")]
    BucketAlreadyExists(Box<ServiceError>),
    /// The bucket still holds objects (`BucketNotEmpty`).
    #[error("bucket not empty: {0}")]
    BucketNotEmpty(Box<ServiceError>),
    /// The server asks the client to slow down (`SlowDown`, 503). Retried.
    #[error("throttled: {0}")]
    Throttled(Box<ServiceError>),
    /// The server failed (`InternalError`, other 5xx). Retried.
    #[error("server error: {0}")]
    ServerError(Box<ServiceError>),
    /// Any other error the server reported.
    #[error("{0}")]
    Service(Box<ServiceError>),

    /// The object changed while it was being read in several requests: a resumed read pinned to the
    /// first response's ETag with `If-Match` was refused.
    #[error("object changed during the read (ETag was {etag}); start the read again")]
    ObjectChanged { etag: String },
    /// The object (or range) is larger than the buffer it was to be read into.
    #[error("object of {length} bytes does not fit in a {capacity}-byte buffer")]
    BufferTooSmall { length: u64, capacity: usize },
    /// The bytes received do not have the checksum the server stored with the object: they were
    /// damaged on the way (or the server holds damaged data). The bytes must not be used.
    #[error(
        "{algorithm} checksum mismatch on {bucket}/{key}: the server stored {expected}, the bytes received give {computed}"
    )]
    ChecksumMismatch {
        bucket: String,
        key: String,
        algorithm: &'static str,
        expected: String,
        computed: String,
    },
    /// The response did not say how long its body is, so no exact buffer could be sized.
    #[error(
        "the response has no Content-Length; brisk reads objects only into buffers sized in advance"
    )]
    UnknownLength,
    /// The server answered something S3 does not (`what` says what).
    #[error("unexpected response: {what}")]
    UnexpectedResponse { what: String },

    /// Connecting to the endpoint failed.
    #[error("connecting to {address}: {source}")]
    Connect {
        address: String,
        source: std::io::Error,
    },
    /// Connecting took longer than the connect timeout.
    #[error("connecting to {address} took longer than {timeout:?}")]
    ConnectTimeout { address: String, timeout: Duration },
    /// The TLS handshake failed (an untrusted or mismatched certificate, a protocol error).
    #[error("TLS handshake with {address}: {source}")]
    TlsHandshake {
        address: String,
        source: std::io::Error,
    },
    /// The HTTP exchange failed (connection reset, timeout, malformed response, ...).
    #[error("HTTP: {0}")]
    Http(#[from] HttpError),
    /// A response body is not the XML document expected.
    #[error("response body: {0}")]
    Xml(#[from] brisk_wire::xml::XmlParseError),
    /// A request body could not be written as XML.
    #[error("request body: {0}")]
    XmlWrite(#[from] brisk_wire::xml::XmlWriteError),
    /// Signing failed (an invalid header value, a time out of range, an invalid presign lifetime).
    #[error("signing: {0}")]
    Signing(#[from] brisk_wire::sigv4::SigningError),
    /// The memory budget can never hold the buffer asked for.
    #[error("memory budget: {0}")]
    Memory(#[from] brisk_mem::BudgetError),
    /// The configuration is unusable.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// A local file could not be read or written (`what` says which and how).
    #[error("{what}: {source}")]
    File {
        what: String,
        source: std::io::Error,
    },
    /// A key, bucket or option is not valid (`what` says why).
    #[error("invalid argument: {what}")]
    InvalidArgument { what: String },
}

impl Error {
    /// Classifies a service error by its code (and status, for bodiless responses).
    pub fn from_service(error: ServiceError) -> Self {
        use S3ErrorCode as C;
        let boxed = Box::new(error);
        // Codes outside the table (another service's own) are classified by status alone.
        match (S3ErrorCode::parse(&boxed.code), boxed.status) {
            (Some(C::NoSuchKey), _) | (Some(C::NotFound), 404) => Self::NoSuchKey(boxed),
            (Some(C::NoSuchBucket), _) => Self::NoSuchBucket(boxed),
            (Some(C::SignatureDoesNotMatch), _) => Self::SignatureDoesNotMatch(boxed),
            (Some(C::RequestTimeTooSkewed), _) => Self::ClockSkew(boxed),
            (Some(C::AuthorizationHeaderMalformed), _) if boxed.message.contains("region") => {
                Self::WrongRegion(boxed)
            }
            (Some(C::PermanentRedirect | C::IllegalLocationConstraintException), _) => {
                Self::WrongRegion(boxed)
            }
            (
                Some(C::AccessDenied | C::Forbidden | C::InvalidAccessKeyId | C::AllAccessDisabled),
                _,
            ) => Self::AccessDenied(boxed),
            (Some(C::PreconditionFailed), _) => Self::PreconditionFailed(boxed),
            (Some(C::NotModified), _) => Self::NotModified(boxed),
            (Some(C::InvalidRange), _) => Self::InvalidRange(boxed),
            (Some(C::BucketAlreadyExists | C::BucketAlreadyOwnedByYou), _) => {
                Self::BucketAlreadyExists(boxed)
            }
            (Some(C::BucketNotEmpty), _) => Self::BucketNotEmpty(boxed),
            (
                Some(C::SlowDown | C::ServiceUnavailable | C::Throttling | C::RequestLimitExceeded),
                _,
            )
            | (_, 503) => Self::Throttled(boxed),
            (_, 500..=599) => Self::ServerError(boxed),
            _ => Self::Service(boxed),
        }
    }

    /// The server's report, when the server refused the request.
    pub fn service_error(&self) -> Option<&ServiceError> {
        match self {
            Self::NoSuchKey(e)
            | Self::NoSuchBucket(e)
            | Self::AccessDenied(e)
            | Self::SignatureDoesNotMatch(e)
            | Self::ClockSkew(e)
            | Self::WrongRegion(e)
            | Self::PreconditionFailed(e)
            | Self::NotModified(e)
            | Self::InvalidRange(e)
            | Self::BucketAlreadyExists(e)
            | Self::BucketNotEmpty(e)
            | Self::Throttled(e)
            | Self::ServerError(e)
            | Self::Service(e) => Some(e),
            _ => None,
        }
    }

    /// Whether trying the same request again may succeed: throttling, server errors, `RequestTimeout`,
    /// and transport failures (reset, refused, timed out, closed early).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Throttled(_) | Self::ServerError(_) => true,
            Self::Service(e) => matches!(
                S3ErrorCode::parse(&e.code),
                Some(S3ErrorCode::RequestTimeout | S3ErrorCode::InternalError)
            ),
            Self::Connect { .. } | Self::ConnectTimeout { .. } => true,
            Self::Http(e) => is_transient_http(e),
            _ => false,
        }
    }
}

/// Transport failures worth a new attempt on a new connection.
fn is_transient_http(error: &HttpError) -> bool {
    matches!(
        error,
        HttpError::Io(_)
            | HttpError::HeadTimeout { .. }
            | HttpError::BodyTimeout { .. }
            | HttpError::IncompleteHead { .. }
            | HttpError::UnexpectedEof { .. }
            | HttpError::TruncatedChunkedBody { .. }
            | HttpError::UndrainedBody { .. }
    )
}

/// Results of client operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(code: &str, message: &str) -> ErrorDocument {
        ErrorDocument {
            code: code.into(),
            message: message.into(),
            ..ErrorDocument::default()
        }
    }

    #[test]
    fn codes_map_to_meanings() {
        let classify = |status, code: &str, message: &str| {
            Error::from_service(ServiceError::new(
                status,
                Some(doc(code, message)),
                None,
                "us-east-1",
            ))
        };
        assert!(matches!(
            classify(404, "NoSuchKey", ""),
            Error::NoSuchKey(_)
        ));
        assert!(matches!(
            classify(404, "NoSuchBucket", ""),
            Error::NoSuchBucket(_)
        ));
        assert!(matches!(
            classify(403, "AccessDenied", ""),
            Error::AccessDenied(_)
        ));
        assert!(matches!(
            classify(403, "SignatureDoesNotMatch", ""),
            Error::SignatureDoesNotMatch(_)
        ));
        assert!(matches!(
            classify(412, "PreconditionFailed", ""),
            Error::PreconditionFailed(_)
        ));
        assert!(matches!(classify(503, "SlowDown", ""), Error::Throttled(_)));
        assert!(matches!(
            classify(500, "InternalError", ""),
            Error::ServerError(_)
        ));
        assert!(matches!(
            classify(502, "BadGateway", ""),
            Error::ServerError(_)
        ));
        assert!(matches!(
            classify(409, "BucketAlreadyOwnedByYou", ""),
            Error::BucketAlreadyExists(_)
        ));
        assert!(matches!(
            classify(
                400,
                "AuthorizationHeaderMalformed",
                "the region 'us-east-1' is wrong; expecting 'eu-west-1'"
            ),
            Error::WrongRegion(_)
        ));
        assert!(matches!(
            classify(400, "InvalidArgument", ""),
            Error::Service(_)
        ));
    }

    #[test]
    fn bodiless_responses_get_a_code_from_the_status() {
        let e = Error::from_service(ServiceError::new(
            404,
            None,
            Some("RID".into()),
            "us-east-1",
        ));
        assert!(matches!(e, Error::NoSuchKey(_)));
        let service = e.service_error().unwrap();
        assert_eq!(service.code, "NotFound");
        assert_eq!(service.request_id.as_deref(), Some("RID"));
        let e = Error::from_service(ServiceError::new(403, None, None, "us-east-1"));
        assert!(matches!(e, Error::AccessDenied(_)));
    }

    #[test]
    fn hints_and_request_ids_show_in_the_message() {
        let mut d = doc(
            "AuthorizationHeaderMalformed",
            "the region 'us-east-1' is wrong",
        );
        d.extra.push(("Region".into(), "eu-central-1".into()));
        d.request_id = Some("DOCRID".into());
        let e = Error::from_service(ServiceError::new(400, Some(d), None, "us-east-1"));
        let text = e.to_string();
        assert!(text.contains("eu-central-1"), "{text}");
        assert!(text.contains("DOCRID"), "{text}");
        let e = Error::from_service(ServiceError::new(
            403,
            Some(doc("RequestTimeTooSkewed", "too skewed")),
            Some("HDRRID".into()),
            "us-east-1",
        ));
        assert!(matches!(e, Error::ClockSkew(_)));
        assert!(e.to_string().contains("clock"));
        assert!(e.to_string().contains("HDRRID"));
    }

    #[test]
    fn retryable_errors() {
        let service = |status, code: &str| {
            Error::from_service(ServiceError::new(status, Some(doc(code, "")), None, "r"))
        };
        assert!(service(503, "SlowDown").is_retryable());
        assert!(service(500, "InternalError").is_retryable());
        assert!(service(400, "RequestTimeout").is_retryable());
        assert!(!service(404, "NoSuchKey").is_retryable());
        assert!(!service(403, "AccessDenied").is_retryable());
        assert!(
            Error::Http(HttpError::UnexpectedEof {
                expected: 10,
                received: 3
            })
            .is_retryable()
        );
        assert!(!Error::Http(HttpError::InvalidContentLength).is_retryable());
    }
}
