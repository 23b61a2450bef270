//! Presigned URLs: a GET or PUT of one object that anyone holding the URL can make until it
//! expires, signed with the client's credentials (SigV4 query parameters, `host` the only signed
//! header). Nothing is sent: presigning is computed from the configuration alone, so it sits apart
//! from the request engine.

use std::time::{Duration, SystemTime};

use crate::client::Client;
use crate::dialect::Dialect;
use crate::error::Result;
use crate::request::{check_bucket, check_key};

impl Client {
    /// A URL anyone can GET `bucket`/`key` with, for `expires` (1 s to 7 days).
    pub fn presign_get(&self, bucket: &str, key: &str, expires: Duration) -> Result<String> {
        self.presign("GET", bucket, key, expires, SystemTime::now())
    }

    /// A URL anyone can PUT `bucket`/`key` with (the body unsigned), for `expires` (1 s to 7 days).
    pub fn presign_put(&self, bucket: &str, key: &str, expires: Duration) -> Result<String> {
        self.presign("PUT", bucket, key, expires, SystemTime::now())
    }

    /// A presigned URL for `method` on `bucket`/`key`, signed at `now`. An anonymous client has
    /// nothing to sign with: [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn presign(
        &self,
        method: &str,
        bucket: &str,
        key: &str,
        expires: Duration,
        now: SystemTime,
    ) -> Result<String> {
        check_bucket(bucket)?;
        check_key(key)?;
        match self.dialect() {
            Dialect::S3(_) => self.s3_presign(method, bucket, key, expires, now),
            Dialect::Azure(_) => self.azure_presign(method, bucket, key, expires, now),
        }
    }
}
