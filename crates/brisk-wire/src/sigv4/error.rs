//! Errors of signing (a caller's mistake) and of verifying (the peer's request is not acceptable; one
//! variant per S3 error code so the server renders the S3 error document without guessing).

use super::time::AmzDate;
use crate::S3ErrorCode;

/// Why a request could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigningError {
    /// The instant is outside the years 0000..=9999 that `YYYYMMDDTHHMMSSZ` can express.
    #[error("time is outside the range an x-amz-date can express")]
    TimeOutOfRange,
    /// A presigned URL's lifetime is outside what S3 accepts.
    #[error("presigned URL expiry of {seconds} s is outside 1..={max} s")]
    InvalidExpires { seconds: u64, max: u64 },
    /// A header name is empty or holds characters HTTP does not allow in a token.
    #[error("header name {name:?} is not a valid HTTP token")]
    InvalidHeaderName { name: String },
    /// A header value holds a CR, LF or NUL, which would let it forge further headers.
    #[error("value of header {name:?} holds a CR, LF or NUL byte")]
    InvalidHeaderValue { name: String },
    /// An aws-chunked trailer name or value would break the trailer framing.
    #[error("trailer {name:?} has a name or value that cannot be framed")]
    InvalidTrailer { name: String },
}

/// Why `AccessDenied` was returned (S3 uses one code for several causes; the message tells them apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessDeniedReason {
    /// The request carries no `Authorization` header and no presigned query parameters.
    MissingAuthentication,
    /// Neither `x-amz-date` (header signing) nor `X-Amz-Date` (presigned) is present.
    MissingDate,
    /// A presigned URL is used after `X-Amz-Date + X-Amz-Expires` (or has `X-Amz-Expires=0`).
    Expired {
        expires: u64,
        expired_at: AmzDate,
        now: AmzDate,
    },
    /// A presigned URL dated more than the allowed skew in the future.
    NotYetValid { valid_from: AmzDate, now: AmzDate },
    /// `x-amz-*` headers were sent without being signed: S3 refuses them so that a third party cannot
    /// add, say, `x-amz-acl` to a signed request.
    HeadersNotSigned { headers: String },
}

impl std::fmt::Display for AccessDeniedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MissingAuthentication => f.write_str("the request is not authenticated"),
            Self::MissingDate => {
                f.write_str("AWS authentication requires a valid Date or x-amz-date header")
            }
            // S3's message; the instants go in the error document's own elements.
            Self::Expired { .. } => f.write_str("Request has expired"),
            Self::NotYetValid { valid_from, now } => {
                write!(
                    f,
                    "Request is not valid yet (valid from {valid_from}, now {now})"
                )
            }
            Self::HeadersNotSigned { headers } => write!(
                f,
                "There were headers present in the request which were not signed: {headers}"
            ),
        }
    }
}

/// Why a request failed authentication. Each variant is one S3 error code ([`AuthError::s3_code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The signature is well formed but wrong. Carries what the server computed, as S3 does in its error
    /// document, so that a client can diff it against its own canonical request.
    #[error(
        "The request signature we calculated does not match the signature you provided. \
         Canonical request:\n{canonical_request}\nString to sign:\n{string_to_sign}"
    )]
    SignatureDoesNotMatch {
        canonical_request: String,
        string_to_sign: String,
    },
    /// `x-amz-date` is further than the allowed skew from the server's clock.
    #[error(
        "The difference between the request time ({request_time}) and the server's time \
         ({server_time}) is too large"
    )]
    RequestTimeTooSkewed {
        request_time: AmzDate,
        server_time: AmzDate,
    },
    /// Authentication is missing, expired, not yet valid or incomplete.
    #[error("Access Denied: {0}")]
    AccessDenied(AccessDeniedReason),
    /// The access key is unknown to the server.
    #[error("The AWS access key Id {access_key_id:?} does not exist in our records")]
    InvalidAccessKeyId { access_key_id: String },
    /// The `Authorization` header cannot be parsed or its scope is not acceptable.
    #[error("The authorization header is malformed: {reason}")]
    AuthorizationHeaderMalformed { reason: String },
    /// The presigned query parameters cannot be parsed or are out of bounds.
    #[error("{reason}")]
    AuthorizationQueryParametersError { reason: String },
    /// A header the request needs is absent (the security token of temporary credentials,
    /// `x-amz-content-sha256` for header signing).
    #[error("Your request was missing a required header: {header}")]
    MissingSecurityHeader { header: &'static str },
    /// The session token does not belong to the access key.
    #[error("The provided token is malformed or otherwise invalid")]
    InvalidToken,
    /// `x-amz-content-sha256` is neither 64 hex digits nor one of the known markers.
    #[error(
        "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a streaming marker, or a SHA-256 hex digest, got {value:?}"
    )]
    InvalidContentSha256 { value: String },
    /// The body's SHA-256 differs from the declared `x-amz-content-sha256`.
    #[error(
        "The provided 'x-amz-content-sha256' header does not match what was computed (declared {declared}, computed {computed})"
    )]
    ContentSha256Mismatch { declared: String, computed: String },
}

impl AuthError {
    /// The S3 error code to put in the `<Code>` element.
    pub fn s3_code(&self) -> S3ErrorCode {
        match self {
            Self::SignatureDoesNotMatch { .. } => S3ErrorCode::SignatureDoesNotMatch,
            Self::RequestTimeTooSkewed { .. } => S3ErrorCode::RequestTimeTooSkewed,
            Self::AccessDenied(_) => S3ErrorCode::AccessDenied,
            Self::InvalidAccessKeyId { .. } => S3ErrorCode::InvalidAccessKeyId,
            Self::AuthorizationHeaderMalformed { .. } => S3ErrorCode::AuthorizationHeaderMalformed,
            Self::AuthorizationQueryParametersError { .. } => {
                S3ErrorCode::AuthorizationQueryParametersError
            }
            Self::MissingSecurityHeader { .. } => S3ErrorCode::MissingSecurityHeader,
            Self::InvalidToken => S3ErrorCode::InvalidToken,
            Self::InvalidContentSha256 { .. } => S3ErrorCode::InvalidArgument,
            Self::ContentSha256Mismatch { .. } => S3ErrorCode::XAmzContentSHA256Mismatch,
        }
    }

    /// The HTTP status S3 answers this error with: its code's.
    pub fn http_status(&self) -> u16 {
        self.s3_code().http_status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_statuses_follow_s3() {
        let e = AuthError::SignatureDoesNotMatch {
            canonical_request: "GET\n/".into(),
            string_to_sign: "AWS4-HMAC-SHA256".into(),
        };
        assert_eq!(
            (e.s3_code(), e.http_status()),
            (S3ErrorCode::SignatureDoesNotMatch, 403)
        );
        assert!(e.to_string().contains("GET\n/"));
        let e = AuthError::MissingSecurityHeader {
            header: "x-amz-security-token",
        };
        assert_eq!(
            (e.s3_code(), e.http_status()),
            (S3ErrorCode::MissingSecurityHeader, 400)
        );
        let now = AmzDate::parse("20130524T000000Z").unwrap();
        let e = AuthError::AccessDenied(AccessDeniedReason::Expired {
            expires: 60,
            expired_at: now,
            now,
        });
        assert!(e.to_string().contains("Request has expired"));
        assert_eq!(e.s3_code(), "AccessDenied");
    }
}
