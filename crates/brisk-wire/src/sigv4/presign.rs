//! Presigned URLs: the signature travels in the query string (`X-Amz-Algorithm`, `X-Amz-Credential`,
//! `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Security-Token`, `X-Amz-Signature`) and
//! the payload is always `UNSIGNED-PAYLOAD`, since the URL is made before the body exists.

use std::time::Duration;

use super::canonical::{
    CanonicalRequest, SignableRequest, canonical_query_string, group_headers, uri_encode_into,
};
use super::error::SigningError;
use super::sign::{Signer, signature, string_to_sign};
use super::time::AmzDate;
use super::{ALGORITHM, UNSIGNED_PAYLOAD};

/// The longest lifetime S3 accepts for a presigned URL: 7 days (604 800 s).
pub const MAX_PRESIGN_EXPIRES: Duration = Duration::from_secs(7 * 24 * 3600);
/// The shortest lifetime: 1 s (`X-Amz-Expires=0` is rejected by S3).
pub const MIN_PRESIGN_EXPIRES: Duration = Duration::from_secs(1);

pub(crate) const X_AMZ_ALGORITHM: &str = "X-Amz-Algorithm";
pub(crate) const X_AMZ_CREDENTIAL: &str = "X-Amz-Credential";
pub(crate) const X_AMZ_DATE: &str = "X-Amz-Date";
pub(crate) const X_AMZ_EXPIRES: &str = "X-Amz-Expires";
pub(crate) const X_AMZ_SIGNED_HEADERS: &str = "X-Amz-SignedHeaders";
pub(crate) const X_AMZ_SECURITY_TOKEN: &str = "X-Amz-Security-Token";
pub(crate) const X_AMZ_SIGNATURE: &str = "X-Amz-Signature";

/// A presigned request's query string.
#[derive(Debug, Clone)]
pub struct PresignedQuery {
    /// The complete query string (without `?`): the request's own parameters, then the
    /// `X-Amz-*` authentication parameters, `X-Amz-Signature` last.
    pub query: String,
    /// The signature.
    pub signature: [u8; 32],
    canonical_request: String,
}

impl PresignedQuery {
    /// The canonical request that was signed (for debugging).
    pub fn canonical_request(&self) -> &str {
        &self.canonical_request
    }
}

fn push_param(query: &mut String, name: &str, value: &str) {
    if !query.is_empty() {
        query.push('&');
    }
    query.push_str(name);
    query.push('=');
    uri_encode_into(query, value.as_bytes(), false);
}

impl Signer {
    /// Presigns `request` at `time` for `expires` (whole seconds, 1 s to 7 days). The headers of
    /// `request` (at least `host`) are signed and must be sent unchanged by whoever uses the URL.
    pub fn presign(
        &self,
        request: &SignableRequest<'_>,
        expires: Duration,
        time: AmzDate,
    ) -> Result<PresignedQuery, SigningError> {
        if expires < MIN_PRESIGN_EXPIRES || expires > MAX_PRESIGN_EXPIRES {
            return Err(SigningError::InvalidExpires {
                seconds: expires.as_secs(),
                max: MAX_PRESIGN_EXPIRES.as_secs(),
            });
        }
        let groups = group_headers(request.headers.iter().copied())?;
        let signed_headers = groups
            .iter()
            .map(|g| g.name.as_ref())
            .collect::<Vec<_>>()
            .join(";");
        let key = self.signing_key(&time);
        let scope = key.scope();
        let credential = format!("{}/{scope}", self.credentials().access_key_id());

        let mut query = String::with_capacity(request.query.len() + 400);
        query.push_str(request.query);
        push_param(&mut query, X_AMZ_ALGORITHM, ALGORITHM);
        push_param(&mut query, X_AMZ_CREDENTIAL, &credential);
        push_param(&mut query, X_AMZ_DATE, time.as_str());
        push_param(&mut query, X_AMZ_EXPIRES, &expires.as_secs().to_string());
        push_param(&mut query, X_AMZ_SIGNED_HEADERS, &signed_headers);
        if let Some(token) = self.credentials().session_token() {
            push_param(&mut query, X_AMZ_SECURITY_TOKEN, token);
        }

        let canonical_query = canonical_query_string(&query, None);
        let canonical = CanonicalRequest::build(
            request.method,
            request.path,
            &canonical_query,
            &groups,
            UNSIGNED_PAYLOAD,
        );
        let sts = string_to_sign(&time, scope, &canonical.bytes);
        let sig = signature(&key, &sts);
        push_param(&mut query, X_AMZ_SIGNATURE, &hex::encode(sig));
        Ok(PresignedQuery {
            query,
            signature: sig,
            canonical_request: canonical.to_text(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sigv4::Credentials;

    fn example_signer() -> Signer {
        Signer::new(
            Credentials::new(
                "AKIAIOSFODNN7EXAMPLE",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
            "us-east-1",
        )
    }

    #[test]
    fn aws_presigned_url_example() {
        // S3 API reference, "Authenticating Requests: Using Query Parameters": GET /test.txt, 86400 s.
        let headers: [(&str, &[u8]); 1] = [("Host", b"examplebucket.s3.amazonaws.com")];
        let req = SignableRequest {
            method: "GET",
            path: "/test.txt",
            query: "",
            headers: &headers,
        };
        let p = example_signer()
            .presign(
                &req,
                Duration::from_secs(86400),
                AmzDate::parse("20130524T000000Z").unwrap(),
            )
            .unwrap();
        assert_eq!(
            p.canonical_request(),
            "GET\n/test.txt\nX-Amz-Algorithm=AWS4-HMAC-SHA256&\
             X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&\
             X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\n\
             host:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD"
        );
        assert_eq!(
            p.query,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256&\
             X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&\
             X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&\
             X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        );
    }

    #[test]
    fn expiry_outside_one_second_to_seven_days_is_refused() {
        let headers: [(&str, &[u8]); 1] = [("host", b"h")];
        let req = SignableRequest {
            method: "GET",
            path: "/",
            query: "",
            headers: &headers,
        };
        let t = AmzDate::parse("20130524T000000Z").unwrap();
        let s = example_signer();
        assert!(s.presign(&req, MAX_PRESIGN_EXPIRES, t).is_ok());
        assert!(s.presign(&req, MIN_PRESIGN_EXPIRES, t).is_ok());
        for bad in [
            Duration::ZERO,
            Duration::from_millis(999),
            MAX_PRESIGN_EXPIRES + Duration::from_secs(1),
        ] {
            assert!(matches!(
                s.presign(&req, bad, t),
                Err(SigningError::InvalidExpires { .. })
            ));
        }
    }

    #[test]
    fn existing_query_and_session_token_are_kept_and_signed() {
        let signer = Signer::new(
            Credentials::with_session_token("AKID", "secret", "tok/en+="),
            "us-west-2",
        );
        let headers: [(&str, &[u8]); 1] = [("host", b"h")];
        let req = SignableRequest {
            method: "PUT",
            path: "/k",
            query: "partNumber=1&uploadId=abc",
            headers: &headers,
        };
        let p = signer
            .presign(
                &req,
                Duration::from_secs(60),
                AmzDate::parse("20240101T000000Z").unwrap(),
            )
            .unwrap();
        assert!(
            p.query
                .starts_with("partNumber=1&uploadId=abc&X-Amz-Algorithm=")
        );
        assert!(p.query.contains("&X-Amz-Security-Token=tok%2Fen%2B%3D&"));
        assert!(
            p.canonical_request()
                .contains("X-Amz-Security-Token=tok%2Fen%2B%3D")
        );
    }
}
