//! The S3 form of a presigned URL: SigV4 in the query.

use crate::client::Client;
use crate::config::Scheme;
use crate::error::{Error, Result};
use brisk_wire::sigv4::{AmzDate, SignableRequest};
use std::time::{Duration, SystemTime};

impl Client {
    /// The S3 form of [`presign`](Self::presign).
    pub(crate) fn s3_presign(
        &self,
        method: &str,
        bucket: &str,
        key: &str,
        expires: Duration,
        now: SystemTime,
    ) -> Result<String> {
        let target = self.target(Some(bucket), Some(key));
        let headers: [(&str, &[u8]); 1] = [("host", target.host_header.as_bytes())];
        let request = SignableRequest {
            method,
            path: &target.path,
            query: "",
            headers: &headers,
        };
        let Some(signer) = self.signer() else {
            return Err(Error::InvalidArgument {
                what: "an anonymous client has no credentials to presign a URL with".to_owned(),
            });
        };
        let presigned = signer.presign(&request, expires, AmzDate::from_system_time(now)?)?;
        let scheme = match self.config().endpoint.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        Ok(format!(
            "{scheme}://{}{}?{}",
            target.host_header, target.path, presigned.query
        ))
    }
}
