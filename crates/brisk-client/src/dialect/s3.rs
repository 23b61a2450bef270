//! The S3 dialect: SigV4 (or no signature, for anonymous clients), path-style or virtual-hosted
//! buckets, S3's `<Error>` documents.

use std::time::SystemTime;

use brisk_wire::http::{Headers, RequestHead};
use brisk_wire::sigv4::Signer;
use brisk_wire::xml::{ErrorDocument, XmlDocument};

use crate::config::{Addressing, Endpoint};
use crate::error::{Error, ServiceError};
use crate::request::{Address, RequestSpec, signed_head, target};

/// How S3 requests are addressed and signed.
#[derive(Debug)]
pub(crate) struct S3Dialect {
    /// `None` for an anonymous client: its requests are not signed.
    pub(crate) signer: Option<Signer>,
    pub(crate) addressing: Addressing,
    /// The region requests are signed for (named in the wrong-region hint).
    pub(crate) region: String,
}

impl S3Dialect {
    pub(crate) fn target(
        &self,
        endpoint: &Endpoint,
        bucket: Option<&str>,
        key: Option<&str>,
    ) -> Address {
        target(endpoint, self.addressing, bucket, key)
    }

    pub(crate) fn head(
        &self,
        spec: &RequestSpec<'_>,
        target: &Address,
        now: SystemTime,
    ) -> Result<RequestHead, Error> {
        signed_head(self.signer.as_ref(), spec, target, now)
    }

    pub(crate) fn error(&self, status: u16, headers: &Headers, body: Option<&[u8]>) -> Error {
        let request_id = headers.get_str("x-amz-request-id").map(str::to_owned);
        let document = body
            .filter(|b| !b.is_empty())
            .and_then(|b| ErrorDocument::parse(b).ok());
        Error::from_service(ServiceError::new(
            status,
            document,
            request_id,
            &self.region,
        ))
    }
}
