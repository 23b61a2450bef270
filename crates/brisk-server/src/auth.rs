//! Request authentication: every request is SigV4-verified (by `Authorization` header or presigned
//! query) against the one configured key pair, unless the server runs anonymously.

use std::time::SystemTime;

use brisk_wire::http::RequestHead;
use brisk_wire::sigv4::{
    AmzDate, AwsChunkedDecoder, ChunkedMode, Credentials, PayloadHash, SignableRequest,
    VerifiedRequest, Verifier,
};

use crate::config::AccessKey;
use crate::error::S3Error;
use crate::route::split_target;

/// The one key pair the server knows.
#[derive(Debug, Clone)]
struct SingleKey(Credentials);

impl brisk_wire::sigv4::CredentialsProvider for SingleKey {
    fn credentials(&self, access_key_id: &str) -> Option<Credentials> {
        (access_key_id == self.0.access_key_id()).then(|| self.0.clone())
    }
}

/// How the request's body is to be read, from `x-amz-content-sha256` and the signature.
#[derive(Debug)]
pub enum PayloadCheck {
    /// Nothing to verify (`UNSIGNED-PAYLOAD`, or no body hash given to an anonymous server).
    None,
    /// The body's SHA-256 must equal this.
    Sha256([u8; 32]),
    /// The body is aws-chunked in this mode (signed chunks, or unsigned with a trailer).
    Chunked(ChunkedMode),
}

impl PayloadCheck {
    /// An aws-chunked decoder for a body of `decoded_len` payload bytes, if the body is aws-chunked.
    pub fn chunked_decoder(self, decoded_len: u64) -> Option<AwsChunkedDecoder> {
        match self {
            Self::Chunked(mode) => Some(AwsChunkedDecoder::new(mode, decoded_len)),
            _ => None,
        }
    }
}

/// Verifies requests, or lets everything through when anonymous.
#[derive(Debug)]
pub struct Authenticator {
    verifier: Option<Verifier<SingleKey>>,
}

impl Authenticator {
    /// `None` credentials make the server anonymous.
    pub fn new(credentials: Option<&AccessKey>, region: &str) -> Self {
        Self {
            verifier: credentials.map(|key| {
                Verifier::new(SingleKey(Credentials::new(
                    key.access_key_id.clone(),
                    key.secret_access_key.clone(),
                )))
                .with_region(region)
            }),
        }
    }

    /// Authenticates `head` and says how its body must be checked.
    pub fn authenticate(&self, head: &RequestHead) -> Result<PayloadCheck, S3Error> {
        let Some(verifier) = &self.verifier else {
            return anonymous_payload(head);
        };
        let (path, query) = split_target(head.target());
        let headers: Vec<(&str, &[u8])> = head.headers().iter().collect();
        let request = SignableRequest {
            method: head.method(),
            path,
            query,
            headers: &headers,
        };
        let now = AmzDate::from_system_time(SystemTime::now())
            .map_err(|e| S3Error::internal(format!("server clock: {e}")))?;
        let verified = verifier.verify(&request, now)?;
        Ok(verified_payload(&verified))
    }
}

fn verified_payload(verified: &VerifiedRequest) -> PayloadCheck {
    if let Some(mode) = verified.chunked_mode() {
        return PayloadCheck::Chunked(mode);
    }
    match verified.payload {
        PayloadHash::Sha256(digest) => PayloadCheck::Sha256(digest),
        _ => PayloadCheck::None,
    }
}

/// Without verification the body is still framed and hashed as the client says: a declared SHA-256 is
/// checked, an unsigned aws-chunked body is decoded. Signed aws-chunked bodies can not be decoded
/// without the key that signed them.
fn anonymous_payload(head: &RequestHead) -> Result<PayloadCheck, S3Error> {
    let Some(value) = head.headers().get_str("x-amz-content-sha256") else {
        return Ok(PayloadCheck::None);
    };
    match PayloadHash::parse(value.trim()) {
        Some(PayloadHash::Sha256(digest)) => Ok(PayloadCheck::Sha256(digest)),
        Some(PayloadHash::StreamingUnsignedTrailer) => {
            Ok(PayloadCheck::Chunked(ChunkedMode::UnsignedWithTrailer))
        }
        Some(PayloadHash::StreamingSigned | PayloadHash::StreamingSignedTrailer) => {
            Err(S3Error::not_implemented(
                "signed aws-chunked bodies need a server with credentials (not --anonymous)",
            ))
        }
        Some(PayloadHash::Unsigned) | None => Ok(PayloadCheck::None),
    }
}
