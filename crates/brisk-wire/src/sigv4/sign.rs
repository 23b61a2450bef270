//! Header signing: the `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`
//! request, with `x-amz-date`, `x-amz-content-sha256` and (temporary credentials) `x-amz-security-token`.

use std::borrow::Cow;
use std::sync::Arc;

use super::canonical::{CanonicalRequest, SignableRequest, group_headers};
use super::chunked::ChunkSigner;
use super::credentials::{Credentials, SigningKey};
use super::error::SigningError;
use super::hashing::{hex32, hmac, sha256};
use super::time::AmzDate;
use super::{
    ALGORITHM, STREAMING_PAYLOAD, STREAMING_PAYLOAD_TRAILER, STREAMING_UNSIGNED_PAYLOAD_TRAILER,
    UNSIGNED_PAYLOAD,
};

/// What `x-amz-content-sha256` says about the body, and therefore how the body is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadHash {
    /// The SHA-256 of the whole body (use [`PayloadHash::of`] for in-memory bodies).
    Sha256([u8; 32]),
    /// `UNSIGNED-PAYLOAD`: the body is not covered by the signature.
    Unsigned,
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: aws-chunked body with signed chunks ([`ChunkSigner`]).
    StreamingSigned,
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: signed chunks then signed trailers.
    StreamingSignedTrailer,
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: unsigned chunks then trailers (a checksum, typically).
    StreamingUnsignedTrailer,
}

impl PayloadHash {
    /// The hash of an in-memory body.
    pub fn of(body: &[u8]) -> Self {
        Self::Sha256(sha256(body))
    }

    /// The `x-amz-content-sha256` value.
    pub fn header_value(&self) -> String {
        match self {
            Self::Sha256(d) => String::from_utf8(hex32(d).to_vec()).expect("hex is ASCII"),
            Self::Unsigned => UNSIGNED_PAYLOAD.into(),
            Self::StreamingSigned => STREAMING_PAYLOAD.into(),
            Self::StreamingSignedTrailer => STREAMING_PAYLOAD_TRAILER.into(),
            Self::StreamingUnsignedTrailer => STREAMING_UNSIGNED_PAYLOAD_TRAILER.into(),
        }
    }

    /// Parses an `x-amz-content-sha256` value (64 hex digits or one of the markers).
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            UNSIGNED_PAYLOAD => Self::Unsigned,
            STREAMING_PAYLOAD => Self::StreamingSigned,
            STREAMING_PAYLOAD_TRAILER => Self::StreamingSignedTrailer,
            STREAMING_UNSIGNED_PAYLOAD_TRAILER => Self::StreamingUnsignedTrailer,
            hex => Self::Sha256(super::hashing::parse_hex32(hex.as_bytes())?),
        })
    }
}

/// `AWS4-HMAC-SHA256 \n timestamp \n scope \n hex(SHA-256(canonical request))`.
pub(crate) fn string_to_sign(date: &AmzDate, scope: &str, canonical_request: &[u8]) -> String {
    let hash = hex32(&sha256(canonical_request));
    let mut s = String::with_capacity(ALGORITHM.len() + 16 + scope.len() + 64 + 3);
    s.push_str(ALGORITHM);
    s.push('\n');
    s.push_str(date.as_str());
    s.push('\n');
    s.push_str(scope);
    s.push('\n');
    s.push_str(std::str::from_utf8(&hash).expect("hex is ASCII"));
    s
}

/// The signature of a string to sign.
pub(crate) fn signature(key: &SigningKey, string_to_sign: &str) -> [u8; 32] {
    hmac(key.as_bytes(), string_to_sign.as_bytes())
}

/// Signs requests for one set of credentials, region and service.
#[derive(Debug, Clone)]
pub struct Signer {
    credentials: Credentials,
    region: String,
    service: String,
}

impl Signer {
    /// A signer for `region` and the service `s3`.
    pub fn new(credentials: Credentials, region: impl Into<String>) -> Self {
        Self::for_service(credentials, region, "s3")
    }

    /// A signer for another service name in the scope (S3-compatible stores sometimes use their own).
    pub fn for_service(
        credentials: Credentials,
        region: impl Into<String>,
        service: impl Into<String>,
    ) -> Self {
        Self {
            credentials,
            region: region.into(),
            service: service.into(),
        }
    }

    /// The credentials this signer uses.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// The cached signing key for the date of `time` (its scope string with it).
    pub(crate) fn signing_key(&self, time: &AmzDate) -> Arc<SigningKey> {
        self.credentials
            .signing_key(time.date_str(), &self.region, &self.service)
    }

    /// Signs `request` at `time`. Every header of `request` is signed, plus the `x-amz-date`,
    /// `x-amz-content-sha256` and `x-amz-security-token` headers this adds; send all of them with the
    /// returned `Authorization` ([`SignedRequest::headers`]).
    pub fn sign(
        &self,
        request: &SignableRequest<'_>,
        payload: PayloadHash,
        time: AmzDate,
    ) -> Result<SignedRequest, SigningError> {
        let content_sha256 = payload.header_value();
        let own: [(&str, &[u8]); 3] = [
            ("x-amz-date", time.as_str().as_bytes()),
            ("x-amz-content-sha256", content_sha256.as_bytes()),
            (
                "x-amz-security-token",
                self.credentials.session_token().unwrap_or("").as_bytes(),
            ),
        ];
        let with_token = usize::from(self.credentials.session_token().is_some());
        let groups = group_headers(
            request
                .headers
                .iter()
                .copied()
                .chain(own[..2 + with_token].iter().copied()),
        )?;
        let canonical_query = super::canonical::canonical_query_string(request.query, None);
        let canonical = CanonicalRequest::build(
            request.method,
            request.path,
            &canonical_query,
            &groups,
            &content_sha256,
        );
        let key = self.signing_key(&time);
        let scope = key.scope();
        let sts = string_to_sign(&time, scope, &canonical.bytes);
        let sig = signature(&key, &sts);
        let sig_hex = hex32(&sig);
        let access_key_id = self.credentials.access_key_id();
        let parts = [
            ALGORITHM,
            " Credential=",
            access_key_id,
            "/",
            scope,
            ", SignedHeaders=",
            &canonical.signed_headers,
            ", Signature=",
            std::str::from_utf8(&sig_hex).expect("hex is ASCII"),
        ];
        // One allocation of the exact length: `format!` grew it in several.
        let mut authorization = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        parts.iter().for_each(|p| authorization.push_str(p));
        Ok(SignedRequest {
            authorization,
            amz_date: time,
            content_sha256,
            security_token: self.credentials.session_token().map(str::to_owned),
            signature: sig,
            key,
            canonical_request: canonical.bytes,
            string_to_sign: sts,
        })
    }
}

/// The result of [`Signer::sign`]: the headers to send, and what a streaming body needs to continue
/// the signature chain.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    /// The `Authorization` header value.
    pub authorization: String,
    /// The `x-amz-date` header value.
    pub amz_date: AmzDate,
    /// The `x-amz-content-sha256` header value.
    pub content_sha256: String,
    /// The `x-amz-security-token` header value (temporary credentials only).
    pub security_token: Option<String>,
    /// The request's signature: the seed of an aws-chunked signature chain.
    pub signature: [u8; 32],
    key: Arc<SigningKey>,
    /// Kept as built (text is made only when asked for, which a client rarely does).
    canonical_request: Vec<u8>,
    string_to_sign: String,
}

impl SignedRequest {
    /// The headers to add to the request, in the order `Authorization`, `x-amz-date`,
    /// `x-amz-content-sha256`, and `x-amz-security-token` when present.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("authorization", self.authorization.as_str()),
            ("x-amz-date", self.amz_date.as_str()),
            ("x-amz-content-sha256", self.content_sha256.as_str()),
        ]
        .into_iter()
        .chain(
            self.security_token
                .as_deref()
                .map(|t| ("x-amz-security-token", t)),
        )
    }

    /// The signature as 64 lower-case hex digits.
    pub fn signature_hex(&self) -> String {
        hex::encode(self.signature)
    }

    /// The canonical request that was signed (for debugging signature mismatches; a header value
    /// that is not UTF-8 shows with replacement characters).
    pub fn canonical_request(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.canonical_request)
    }

    /// The string to sign that was signed.
    pub fn string_to_sign(&self) -> &str {
        &self.string_to_sign
    }

    /// A [`ChunkSigner`] continuing this request's signature chain, for a body sent as
    /// [`PayloadHash::StreamingSigned`] or [`PayloadHash::StreamingSignedTrailer`].
    pub fn chunk_signer(&self) -> ChunkSigner {
        ChunkSigner::new(Arc::clone(&self.key), self.amz_date, self.signature)
    }
}

#[cfg(test)]
mod tests {
    //! The header-signing examples of the S3 API reference ("Signature Calculations for the
    //! Authorization Header: Transferring Payload in a Single Chunk"): credentials
    //! AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, 2013-05-24, us-east-1.
    use super::*;

    fn example_signer() -> Signer {
        Signer::new(
            Credentials::new(
                "AKIAIOSFODNN7EXAMPLE",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
            "us-east-1",
        )
    }

    fn example_time() -> AmzDate {
        AmzDate::parse("20130524T000000Z").unwrap()
    }

    #[test]
    fn aws_example_get_object_with_range() {
        let headers: [(&str, &[u8]); 2] = [
            ("Host", b"examplebucket.s3.amazonaws.com"),
            ("Range", b"bytes=0-9"),
        ];
        let req = SignableRequest {
            method: "GET",
            path: "/test.txt",
            query: "",
            headers: &headers,
        };
        let signed = example_signer()
            .sign(&req, PayloadHash::of(b""), example_time())
            .unwrap();
        assert_eq!(
            signed.canonical_request(),
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n\
             x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
             x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n\
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            signed.string_to_sign(),
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n\
             7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
        );
        assert_eq!(
            signed.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn aws_example_put_object() {
        let headers: [(&str, &[u8]); 3] = [
            ("Host", b"examplebucket.s3.amazonaws.com"),
            ("Date", b"Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-storage-class", b"REDUCED_REDUNDANCY"),
        ];
        let req = SignableRequest {
            method: "PUT",
            path: "/test%24file.text",
            query: "",
            headers: &headers,
        };
        let signed = example_signer()
            .sign(
                &req,
                PayloadHash::of(b"Welcome to Amazon S3."),
                example_time(),
            )
            .unwrap();
        assert_eq!(
            signed.content_sha256,
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        );
        assert_eq!(
            signed.signature_hex(),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        );
        assert!(signed.authorization.contains(
            "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"
        ));
    }

    #[test]
    fn aws_example_get_bucket_lifecycle() {
        let headers: [(&str, &[u8]); 1] = [("Host", b"examplebucket.s3.amazonaws.com")];
        let req = SignableRequest {
            method: "GET",
            path: "/",
            query: "lifecycle",
            headers: &headers,
        };
        let signed = example_signer()
            .sign(&req, PayloadHash::of(b""), example_time())
            .unwrap();
        assert_eq!(
            signed.signature_hex(),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
        );
    }

    #[test]
    fn aws_example_list_objects() {
        let headers: [(&str, &[u8]); 1] = [("Host", b"examplebucket.s3.amazonaws.com")];
        let req = SignableRequest {
            method: "GET",
            path: "/",
            query: "max-keys=2&prefix=J",
            headers: &headers,
        };
        let signed = example_signer()
            .sign(&req, PayloadHash::of(b""), example_time())
            .unwrap();
        assert_eq!(
            signed.signature_hex(),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        );
    }

    #[test]
    fn aws_example_streaming_seed_signature() {
        // "Transferring Payload in Multiple Chunks": the request whose signature seeds the chain.
        let headers: [(&str, &[u8]); 5] = [
            ("Host", b"s3.amazonaws.com"),
            ("x-amz-storage-class", b"REDUCED_REDUNDANCY"),
            ("Content-Encoding", b"aws-chunked"),
            ("x-amz-decoded-content-length", b"66560"),
            ("Content-Length", b"66824"),
        ];
        let req = SignableRequest {
            method: "PUT",
            path: "/examplebucket/chunkObject.txt",
            query: "",
            headers: &headers,
        };
        let signed = example_signer()
            .sign(&req, PayloadHash::StreamingSigned, example_time())
            .unwrap();
        assert_eq!(
            signed.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;\
             x-amz-decoded-content-length;x-amz-storage-class, \
             Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
        );
        // The chain continues from it: the example's first chunk signature.
        let mut chain = signed.chunk_signer();
        assert!(chain.sign_chunk(&[b'a'; 65536]).as_bytes().starts_with(
            b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
        ));
    }

    #[test]
    fn session_token_is_sent_and_signed() {
        let signer = Signer::new(
            Credentials::with_session_token("AKID", "secret", "the token"),
            "eu-west-1",
        );
        let headers: [(&str, &[u8]); 1] = [("host", b"h")];
        let req = SignableRequest {
            method: "GET",
            path: "/",
            query: "",
            headers: &headers,
        };
        let signed = signer
            .sign(&req, PayloadHash::Unsigned, example_time())
            .unwrap();
        assert!(
            signed
                .canonical_request()
                .contains("x-amz-security-token:the token\n")
        );
        assert!(
            signed.authorization.contains(
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
            )
        );
        let sent: Vec<_> = signed.headers().map(|(n, _)| n).collect();
        assert_eq!(
            sent,
            [
                "authorization",
                "x-amz-date",
                "x-amz-content-sha256",
                "x-amz-security-token"
            ]
        );
    }

    #[test]
    fn payload_hash_markers_round_trip() {
        for p in [
            PayloadHash::of(b"x"),
            PayloadHash::Unsigned,
            PayloadHash::StreamingSigned,
            PayloadHash::StreamingSignedTrailer,
            PayloadHash::StreamingUnsignedTrailer,
        ] {
            assert_eq!(PayloadHash::parse(&p.header_value()), Some(p));
        }
        assert_eq!(PayloadHash::parse("STREAMING-FOO"), None);
    }
}
