//! Server-side verification of header-signed and presigned requests.
//!
//! The checks run in the order S3 applies them, so a client sees the same error it would from S3:
//! malformed authentication, missing or skewed date, unknown access key, session token, unsigned
//! `x-amz-*` headers, and only then the signature itself (compared in constant time). A literal
//! `x-amz-content-sha256` can only be checked once the body has been read: [`PayloadHashVerifier`]
//! hashes it as it streams. The streaming markers select an [`AwsChunkedDecoder`], seeded from the
//! verified signature ([`VerifiedRequest::chunked_decoder`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::checksum::engine::{Digest, Sha256};
use percent_encoding::percent_decode_str;

use super::canonical::{CanonicalRequest, HeaderGroup, SignableRequest, canonical_query_string};
use super::chunked::ChunkSigner;
use super::credentials::{Credentials, SigningKey};
use super::decoder::{AwsChunkedDecoder, ChunkedMode};
use super::error::{AccessDeniedReason, AuthError};
use super::hashing::{constant_time_eq, parse_hex32};
use super::presign::{
    MAX_PRESIGN_EXPIRES, X_AMZ_ALGORITHM, X_AMZ_CREDENTIAL, X_AMZ_DATE, X_AMZ_EXPIRES,
    X_AMZ_SECURITY_TOKEN, X_AMZ_SIGNATURE, X_AMZ_SIGNED_HEADERS,
};
use super::sign::{PayloadHash, signature, string_to_sign};
use super::time::AmzDate;
use super::{ALGORITHM, SCOPE_TERMINATOR};

/// How far `x-amz-date` may be from the server's clock: S3 allows 15 minutes either way.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(15 * 60);

/// Finds the credentials of an access key id.
pub trait CredentialsProvider {
    /// The credentials for `access_key_id`, or `None` if the key is unknown.
    fn credentials(&self, access_key_id: &str) -> Option<Credentials>;
}

impl<F: Fn(&str) -> Option<Credentials>> CredentialsProvider for F {
    fn credentials(&self, access_key_id: &str) -> Option<Credentials> {
        self(access_key_id)
    }
}

impl CredentialsProvider for HashMap<String, Credentials> {
    fn credentials(&self, access_key_id: &str) -> Option<Credentials> {
        self.get(access_key_id).cloned()
    }
}

/// What a successful verification established.
#[derive(Debug, Clone)]
pub struct VerifiedRequest {
    /// The caller's access key id.
    pub access_key_id: String,
    /// What the body is: a hash to check ([`payload_hash_verifier`](Self::payload_hash_verifier)),
    /// unsigned, or aws-chunked ([`chunked_decoder`](Self::chunked_decoder)).
    pub payload: PayloadHash,
    /// Whether the request was presigned (query parameters) rather than header-signed.
    pub presigned: bool,
    /// The request's verified signature (the seed of an aws-chunked chain).
    pub signature: [u8; 32],
    date: AmzDate,
    key: Arc<SigningKey>,
}

impl VerifiedRequest {
    /// The aws-chunked variant the body uses, with its signature chain; `None` for other bodies.
    pub fn chunked_mode(&self) -> Option<ChunkedMode> {
        let chain = || ChunkSigner::new(Arc::clone(&self.key), self.date, self.signature);
        match self.payload {
            PayloadHash::StreamingSigned => Some(ChunkedMode::Signed(chain())),
            PayloadHash::StreamingSignedTrailer => Some(ChunkedMode::SignedWithTrailer(chain())),
            PayloadHash::StreamingUnsignedTrailer => Some(ChunkedMode::UnsignedWithTrailer),
            PayloadHash::Sha256(_) | PayloadHash::Unsigned => None,
        }
    }

    /// The decoder for an aws-chunked body of `decoded_content_length` bytes (the request's
    /// `x-amz-decoded-content-length`); `None` when the body is not aws-chunked.
    pub fn chunked_decoder(&self, decoded_content_length: u64) -> Option<AwsChunkedDecoder> {
        self.chunked_mode()
            .map(|mode| AwsChunkedDecoder::new(mode, decoded_content_length))
    }

    /// A verifier of the body against a literal `x-amz-content-sha256`; `None` for other bodies.
    pub fn payload_hash_verifier(&self) -> Option<PayloadHashVerifier> {
        match self.payload {
            PayloadHash::Sha256(d) => Some(PayloadHashVerifier::new(d)),
            _ => None,
        }
    }
}

/// Checks a body against its declared SHA-256 as it streams past, in constant memory.
#[derive(Debug, Clone)]
pub struct PayloadHashVerifier {
    expected: [u8; 32],
    hasher: Sha256,
}

impl PayloadHashVerifier {
    /// A verifier expecting the body to hash to `expected`.
    pub fn new(expected: [u8; 32]) -> Self {
        Self {
            expected,
            hasher: Sha256::new(),
        }
    }

    /// Feeds the next body bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
    }

    /// Feeds the next body bytes to this verifier and to `md5`, block by block in turn: cheaper
    /// than one after the other, because the CPU overlaps the two (see
    /// `checksum::engine::update_md5_and_sha256`).
    pub fn update_with_md5(&mut self, md5: &mut crate::checksum::Md5, data: &[u8]) {
        crate::checksum::engine::update_md5_and_sha256(md5.engine_mut(), &mut self.hasher, data);
    }

    /// Checks the whole body: `XAmzContentSHA256Mismatch` when it differs.
    pub fn finish(self) -> Result<(), AuthError> {
        let computed: [u8; 32] = self.hasher.finalize().into();
        if constant_time_eq(&computed, &self.expected) {
            Ok(())
        } else {
            Err(AuthError::ContentSha256Mismatch {
                declared: hex::encode(self.expected),
                computed: hex::encode(computed),
            })
        }
    }
}

/// The parsed `Credential=AKID/date/region/service/aws4_request`.
struct Scope<'a> {
    access_key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
}

fn parse_credential(credential: &str) -> Option<Scope<'_>> {
    let mut parts = credential.rsplitn(5, '/');
    let terminator = parts.next()?;
    let service = parts.next()?;
    let region = parts.next()?;
    let date = parts.next()?;
    let access_key_id = parts.next()?;
    let ok = terminator == SCOPE_TERMINATOR
        && !service.is_empty()
        && !region.is_empty()
        && !access_key_id.is_empty()
        && date.len() == 8
        && date.bytes().all(|b| b.is_ascii_digit());
    ok.then_some(Scope {
        access_key_id,
        date,
        region,
        service,
    })
}

/// A parsed `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationHeader<'a> {
    /// `AKID/date/region/service/aws4_request`.
    pub credential: &'a str,
    /// Lower-case header names joined by `;`.
    pub signed_headers: &'a str,
    /// The signature.
    pub signature: [u8; 32],
}

impl<'a> AuthorizationHeader<'a> {
    /// Parses an `Authorization` value; the error says what is wrong.
    pub fn parse(value: &'a str) -> Result<Self, AuthError> {
        let malformed = |reason: &str| AuthError::AuthorizationHeaderMalformed {
            reason: reason.to_owned(),
        };
        let rest = value
            .strip_prefix(ALGORITHM)
            .filter(|r| r.starts_with(' '))
            .ok_or_else(|| malformed("the algorithm must be AWS4-HMAC-SHA256"))?;
        let (mut credential, mut signed_headers, mut sig) = (None, None, None);
        for part in rest.split(',') {
            let part = part.trim_matches(' ');
            let (name, v) = part
                .split_once('=')
                .ok_or_else(|| malformed("expected Credential=, SignedHeaders= and Signature="))?;
            let slot = match name {
                "Credential" => &mut credential,
                "SignedHeaders" => &mut signed_headers,
                "Signature" => &mut sig,
                _ => return Err(malformed(&format!("unknown component {name:?}"))),
            };
            if slot.replace(v).is_some() {
                return Err(malformed(&format!("{name} appears twice")));
            }
        }
        let credential = credential.ok_or_else(|| malformed("missing Credential"))?;
        let signed_headers = signed_headers.ok_or_else(|| malformed("missing SignedHeaders"))?;
        let sig = sig.ok_or_else(|| malformed("missing Signature"))?;
        let signature = parse_hex32(sig.as_bytes())
            .ok_or_else(|| malformed("Signature must be 64 hex digits"))?;
        Ok(Self {
            credential,
            signed_headers,
            signature,
        })
    }
}

/// What both authentication styles reduce to before the signature check. The header style borrows
/// its fields from the request; the presigned style owns them (they are percent-decoded).
struct Claim<'a> {
    /// `AKID/date/region/service/aws4_request`, checked by [`parse_credential`] when the claim was
    /// made.
    credential: Cow<'a, str>,
    signed_headers: Cow<'a, str>,
    signature: [u8; 32],
    date: AmzDate,
    payload: PayloadHash,
    security_token: Option<String>,
    canonical_query: String,
    presigned: bool,
}

/// Verifies SigV4 requests against a [`CredentialsProvider`].
#[derive(Debug, Clone)]
pub struct Verifier<P> {
    provider: P,
    region: Option<String>,
    service: String,
    max_skew: Duration,
}

impl Claim<'_> {
    fn scope(&self) -> Scope<'_> {
        parse_credential(&self.credential)
            .expect("the credential was parsed when the claim was made")
    }
}

impl<P: CredentialsProvider> Verifier<P> {
    /// A verifier for the service `s3` that accepts any region in the credential scope.
    pub fn new(provider: P) -> Self {
        Self {
            provider,
            region: None,
            service: "s3".into(),
            max_skew: MAX_CLOCK_SKEW,
        }
    }

    /// Requires the credential scope to name `region`.
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Verifies `request` at the server time `now`.
    pub fn verify(
        &self,
        request: &SignableRequest<'_>,
        now: AmzDate,
    ) -> Result<VerifiedRequest, AuthError> {
        let claim = if let Some(auth) = header(request, "authorization") {
            let auth =
                std::str::from_utf8(auth).map_err(|_| AuthError::AuthorizationHeaderMalformed {
                    reason: "not UTF-8".into(),
                })?;
            self.header_claim(request, auth, now)?
        } else if query_has(request.query, X_AMZ_ALGORITHM) {
            self.presigned_claim(request, now)?
        } else {
            return Err(AuthError::AccessDenied(
                AccessDeniedReason::MissingAuthentication,
            ));
        };
        self.check_claim(request, claim)
    }

    fn check_scope(&self, scope: &Scope<'_>, date: &AmzDate) -> Result<(), String> {
        if scope.date != date.date_str() {
            return Err(format!(
                "the credential date {} is not the date of the request time {date}",
                scope.date
            ));
        }
        if let Some(region) = self.region.as_deref().filter(|r| *r != scope.region) {
            return Err(format!(
                "the region '{}' is wrong; expecting '{region}'",
                scope.region
            ));
        }
        if scope.service != self.service {
            return Err(format!(
                "the service '{}' is wrong; expecting '{}'",
                scope.service, self.service
            ));
        }
        Ok(())
    }

    fn header_claim<'a>(
        &self,
        request: &SignableRequest<'a>,
        auth: &'a str,
        now: AmzDate,
    ) -> Result<Claim<'a>, AuthError> {
        let parsed = AuthorizationHeader::parse(auth)?;
        let scope = parse_credential(parsed.credential).ok_or_else(|| {
            AuthError::AuthorizationHeaderMalformed {
                reason: format!(
                    "Credential {:?} is not AKID/YYYYMMDD/region/service/aws4_request",
                    parsed.credential
                ),
            }
        })?;
        let date = request_date(request)
            .ok_or(AuthError::AccessDenied(AccessDeniedReason::MissingDate))?;
        self.check_scope(&scope, &date)
            .map_err(|reason| AuthError::AuthorizationHeaderMalformed { reason })?;
        if date.distance(&now) > self.max_skew {
            return Err(AuthError::RequestTimeTooSkewed {
                request_time: date,
                server_time: now,
            });
        }
        let content =
            header(request, "x-amz-content-sha256").ok_or(AuthError::MissingSecurityHeader {
                header: "x-amz-content-sha256",
            })?;
        let content = String::from_utf8_lossy(content);
        let payload =
            PayloadHash::parse(content.trim()).ok_or_else(|| AuthError::InvalidContentSha256 {
                value: content.clone().into_owned(),
            })?;
        let security_token = header(request, "x-amz-security-token")
            .map(|t| String::from_utf8_lossy(t).trim().to_owned());
        Ok(Claim {
            credential: Cow::Borrowed(parsed.credential),
            signed_headers: Cow::Borrowed(parsed.signed_headers),
            signature: parsed.signature,
            date,
            payload,
            security_token,
            canonical_query: canonical_query_string(request.query, None),
            presigned: false,
        })
    }

    fn presigned_claim(
        &self,
        request: &SignableRequest<'_>,
        now: AmzDate,
    ) -> Result<Claim<'static>, AuthError> {
        let bad = |reason: String| AuthError::AuthorizationQueryParametersError { reason };
        let param = |name: &str| query_param(request.query, name);
        let require = |name: &str| param(name).ok_or_else(|| bad(format!("{name} is missing")));
        if require(X_AMZ_ALGORITHM)? != ALGORITHM {
            return Err(bad(format!("{X_AMZ_ALGORITHM} must be {ALGORITHM}")));
        }
        let credential = require(X_AMZ_CREDENTIAL)?;
        let date_text = require(X_AMZ_DATE)?;
        let expires_text = require(X_AMZ_EXPIRES)?;
        let signed_headers = require(X_AMZ_SIGNED_HEADERS)?;
        let sig_text = require(X_AMZ_SIGNATURE)?;
        let signature = parse_hex32(sig_text.as_bytes())
            .ok_or_else(|| bad(format!("{X_AMZ_SIGNATURE} must be 64 hex digits")))?;
        let date = AmzDate::parse(&date_text)
            .ok_or_else(|| bad(format!("{X_AMZ_DATE} must be in the ISO8601 long format")))?;
        // S3's answers: a negative or over-a-week lifetime is a 400 with these messages; 0 is
        // accepted and has expired at once (403 AccessDenied, "Request has expired").
        let max = MAX_PRESIGN_EXPIRES.as_secs();
        let expires: i64 = expires_text
            .parse()
            .map_err(|_| bad(format!("{X_AMZ_EXPIRES} should be a number")))?;
        if expires < 0 {
            return Err(bad(format!("{X_AMZ_EXPIRES} must be non-negative")));
        }
        let expires = expires as u64;
        if expires > max {
            return Err(bad(format!(
                "{X_AMZ_EXPIRES} must be less than a week (in seconds); that is, the given \
                 {X_AMZ_EXPIRES} must be less than {max} seconds"
            )));
        }
        let scope = parse_credential(&credential).ok_or_else(|| {
            bad(format!(
                "Error parsing the {X_AMZ_CREDENTIAL} parameter; it is not AKID/YYYYMMDD/region/service/aws4_request"
            ))
        })?;
        self.check_scope(&scope, &date).map_err(bad)?;
        if date.unix_seconds() > now.unix_seconds() + self.max_skew.as_secs() as i64 {
            return Err(AuthError::AccessDenied(AccessDeniedReason::NotYetValid {
                valid_from: date,
                now,
            }));
        }
        let expired_at = date
            .add_seconds(expires as i64)
            .ok_or_else(|| bad(format!("{X_AMZ_EXPIRES} overflows")))?;
        if now.unix_seconds() > expired_at.unix_seconds() || expires == 0 {
            return Err(AuthError::AccessDenied(AccessDeniedReason::Expired {
                expires,
                expired_at,
                now,
            }));
        }
        Ok(Claim {
            credential: Cow::Owned(credential),
            signed_headers: Cow::Owned(signed_headers),
            signature,
            date,
            payload: PayloadHash::Unsigned,
            security_token: param(X_AMZ_SECURITY_TOKEN),
            canonical_query: canonical_query_string(request.query, Some(X_AMZ_SIGNATURE)),
            presigned: true,
        })
    }

    fn check_claim(
        &self,
        request: &SignableRequest<'_>,
        claim: Claim<'_>,
    ) -> Result<VerifiedRequest, AuthError> {
        let scope = claim.scope();
        let credentials = self
            .provider
            .credentials(scope.access_key_id)
            .ok_or_else(|| AuthError::InvalidAccessKeyId {
                access_key_id: scope.access_key_id.to_owned(),
            })?;
        match (credentials.session_token(), claim.security_token.as_deref()) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(AuthError::MissingSecurityHeader {
                    header: "x-amz-security-token",
                });
            }
            (Some(expected), Some(got))
                if constant_time_eq(expected.as_bytes(), got.as_bytes()) => {}
            _ => return Err(AuthError::InvalidToken),
        }

        let signed: Vec<&str> = claim.signed_headers.split(';').collect();
        let malformed_list = || {
            let reason = format!(
                "SignedHeaders {:?} must be lower-case header names separated by ';', including host",
                claim.signed_headers
            );
            if claim.presigned {
                AuthError::AuthorizationQueryParametersError { reason }
            } else {
                AuthError::AuthorizationHeaderMalformed { reason }
            }
        };
        if !signed.contains(&"host")
            || signed.iter().any(|n| {
                !super::canonical::is_token(n) || n.bytes().any(|b| b.is_ascii_uppercase())
            })
        {
            return Err(malformed_list());
        }
        // Compared without lower-casing a copy of every header name: the list is built only for
        // the error.
        let is_unsigned = |name: &str| {
            name.get(..6)
                .is_some_and(|p| p.eq_ignore_ascii_case("x-amz-"))
                && !signed.iter().any(|s| s.eq_ignore_ascii_case(name))
        };
        if request.headers.iter().any(|(n, _)| is_unsigned(n)) {
            let unsigned: Vec<String> = request
                .headers
                .iter()
                .filter(|(n, _)| is_unsigned(n))
                .map(|(n, _)| n.to_ascii_lowercase())
                .collect();
            return Err(AuthError::AccessDenied(
                AccessDeniedReason::HeadersNotSigned {
                    headers: unsigned.join(";"),
                },
            ));
        }

        let groups: Vec<HeaderGroup<'_>> = signed
            .iter()
            .map(|name| HeaderGroup {
                // Checked lower-case above: borrowed as it is.
                name: Cow::Borrowed(*name),
                values: request
                    .headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| *v)
                    .collect(),
            })
            .collect();
        let payload_text = claim.payload.header_value();
        let canonical = CanonicalRequest::build(
            request.method,
            request.path,
            &claim.canonical_query,
            &groups,
            &payload_text,
        );
        let key = credentials.signing_key(scope.date, scope.region, scope.service);
        let sts = string_to_sign(&claim.date, key.scope(), &canonical.bytes);
        let computed = signature(&key, &sts);
        if !constant_time_eq(&computed, &claim.signature) {
            return Err(AuthError::SignatureDoesNotMatch {
                canonical_request: canonical.to_text(),
                string_to_sign: sts,
            });
        }
        Ok(VerifiedRequest {
            access_key_id: credentials.access_key_id().to_owned(),
            payload: claim.payload,
            presigned: claim.presigned,
            signature: computed,
            date: claim.date,
            key,
        })
    }
}

/// The first value of header `name` (case-insensitive).
/// The instant a header-signed request was signed at: `x-amz-date` when present (it takes
/// precedence), else the `Date` header, in SigV4's `YYYYMMDDTHHMMSSZ` or an HTTP date
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), as S3 accepts. Either way the string to sign carries it in
/// SigV4's format.
fn request_date(request: &SignableRequest<'_>) -> Option<AmzDate> {
    let text = |name| {
        header(request, name)
            .and_then(|d| std::str::from_utf8(d).ok())
            .map(str::trim)
    };
    // `x-amz-date` wins when it holds anything; an empty one leaves the `Date` header to date
    // the request.
    if let Some(amz) = text("x-amz-date").filter(|d| !d.is_empty()) {
        return AmzDate::parse(amz);
    }
    let date = text("date")?;
    AmzDate::parse(date).or_else(|| http_date(date))
}

/// A `Date` header: HTTP's IMF-fixdate (and its two obsolete forms), or RFC 2822 with a numeric
/// zone, which is how Python's `email.utils.formatdate` writes it (`Sat, 28 Nov 2026 12:20:00
/// -0000`), as botocore does when a request carries a `Date` header.
fn http_date(date: &str) -> Option<AmzDate> {
    if let Ok(t) = httpdate::parse_http_date(date) {
        return AmzDate::from_system_time(t).ok();
    }
    let t = ::time::OffsetDateTime::parse(date, &::time::format_description::well_known::Rfc2822)
        .ok()?;
    AmzDate::from_unix_seconds(t.unix_timestamp()).ok()
}

fn header<'a>(request: &SignableRequest<'a>, name: &str) -> Option<&'a [u8]> {
    request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// Splits a raw query into (raw name, raw value) pairs.
fn raw_pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|s| s.split_once('=').unwrap_or((s, "")))
}

fn decode(raw: &str) -> std::borrow::Cow<'_, str> {
    percent_decode_str(raw).decode_utf8_lossy()
}

fn query_has(query: &str, name: &str) -> bool {
    raw_pairs(query).any(|(n, _)| decode(n) == name)
}

/// The decoded value of the first query parameter called `name`.
fn query_param(query: &str, name: &str) -> Option<String> {
    raw_pairs(query)
        .find(|(n, _)| decode(n) == name)
        .map(|(_, v)| decode(v).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dated(headers: &[(&'static str, &'static str)]) -> Option<String> {
        let headers: Vec<(&str, &[u8])> = headers.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
        let request = SignableRequest {
            method: "PUT",
            path: "/b/k",
            query: "",
            headers: &headers,
        };
        request_date(&request).map(|d| d.as_str().to_owned())
    }

    #[test]
    fn the_date_header_may_be_http_or_rfc_2822() {
        for date in [
            "Sat, 28 Nov 2026 12:20:00 GMT",
            "Sat, 28 Nov 2026 12:20:00 -0000",
            "Sat, 28 Nov 2026 12:20:00 +0000",
            "Sat, 28 Nov 2026 13:20:00 +0100",
            "20261128T122000Z",
        ] {
            assert_eq!(
                dated(&[("date", date)]).as_deref(),
                Some("20261128T122000Z"),
                "{date}"
            );
        }
        for bad in ["", "yesterday", "Sat, 31 Nov 2026 12:20:00 -0000"] {
            assert_eq!(dated(&[("date", bad)]), None, "{bad:?}");
        }
    }

    #[test]
    fn x_amz_date_wins_unless_empty() {
        let both = [
            ("date", "Sat, 28 Nov 2026 12:20:00 GMT"),
            ("x-amz-date", "20261128T122005Z"),
        ];
        assert_eq!(dated(&both).as_deref(), Some("20261128T122005Z"));
        let empty = [
            ("date", "Sat, 28 Nov 2026 12:20:00 GMT"),
            ("x-amz-date", ""),
        ];
        assert_eq!(dated(&empty).as_deref(), Some("20261128T122000Z"));
        // A malformed x-amz-date is not replaced by the Date header.
        let bad = [
            ("date", "Sat, 28 Nov 2026 12:20:00 GMT"),
            ("x-amz-date", "Sat, 28 Nov 2026 12:20:00 GMT"),
        ];
        assert_eq!(dated(&bad), None);
        assert_eq!(dated(&[("date", "")]), None);
    }
}
