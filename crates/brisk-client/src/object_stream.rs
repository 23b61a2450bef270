//! [`Client::get_stream`]: an object of any size read piece by piece into the caller's buffer.
//!
//! # Memory
//!
//! Nothing is allocated for the body: each [`ObjectStream::read`] reads straight from the socket into
//! the caller's buffer when it is at least as large as the connection's read buffer (64 KiB by
//! default), and otherwise copies from that read buffer, which the connection already owns. A 100 GiB
//! object streams through the same memory as a 1 KiB one: the caller's buffer plus one connection.
//!
//! # Integrity and failures
//!
//! The stored checksum is asked for (`x-amz-checksum-mode: ENABLED`); a full-object checksum is
//! computed over the bytes as they pass and compared at the end, where a mismatch is
//! [`Error::ChecksumMismatch`] instead of the end of the stream. A caller must therefore read to the
//! end (`read` returning 0) before trusting what it has read, as with any streamed checksum.
//!
//! A connection that fails mid-body is resumed as in [`Client::get_bytes`]: a ranged GET for the
//! remaining bytes pinned to the first response's ETag (`If-Match`), within the retry policy's
//! attempts; an object that changed meanwhile is [`Error::ObjectChanged`].

use std::time::Duration;

use brisk_wire::checksum::{ChecksumValue, Checksummer, Md5, Md5Digest};

use crate::client::{Client, Response, body_length, whole_object_get};
use crate::error::{Error, Result};
use crate::request::{RequestSpec, check_bucket, check_key};
use crate::retry::{RetryContext, RetryDecision};

/// An object being read; see the [module docs](self).
pub struct ObjectStream {
    client: Client,
    bucket: String,
    key: String,
    response: Option<Response>,
    /// Where the stream starts in the object: 0 for a whole object, the range's first byte for a
    /// ranged stream.
    start: u64,
    length: u64,
    received: u64,
    etag: Option<String>,
    checksum: Option<(ChecksumValue, Checksummer)>,
    /// Azure: the MD5 the service sent for the range this response carries (asked for with
    /// `x-ms-range-get-content-md5` on ranges up to 4 MiB), and the MD5 of what has arrived of it.
    range_md5: Option<(Md5Digest, Md5)>,
    retry: RetryContext,
    /// The wait decided by the last failure, taken before the resumed read.
    backoff: Duration,
    /// How many bytes the socket should hold before a waiting read wakes (0: the kernel's
    /// default, a byte); see [`wake_after`](Self::wake_after).
    wake_after: usize,
}

impl std::fmt::Debug for ObjectStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStream")
            .field("bucket", &self.bucket)
            .field("key", &self.key)
            .field("length", &self.length)
            .field("received", &self.received)
            .field("etag", &self.etag)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts reading `bucket`/`key` as a stream: the response head has arrived, the body is read
    /// with [`ObjectStream::read`]. Memory does not grow with the object's size.
    pub async fn get_stream(&self, bucket: &str, key: &str) -> Result<ObjectStream> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self.send(&whole_object_get(bucket, key)).await?;
        let length = body_length(&response)?;
        let etag = response.header("etag").map(str::to_owned);
        let checksum = crate::integrity::stored_checksum(response.head())
            .map(|expected| (expected, Checksummer::new(expected.algorithm())));
        let mut stream = ObjectStream::new(self, bucket, key, 0, length, etag);
        stream.response = Some(response);
        stream.checksum = checksum;
        Ok(stream)
    }
}

impl Client {
    /// Starts reading `bucket`/`key` from byte `offset` to its end as a stream: one GET with
    /// `Range: bytes=offset-`, and a read resumed after a failure is pinned to that response's ETag.
    /// From offset 0 this is [`get_stream`](Self::get_stream), whose stored checksum is checked at
    /// the end; from elsewhere no checksum is (a range has none stored). An `offset` at or past the
    /// end is [`Error::InvalidRange`], as S3 answers it. The stream's
    /// [`content_length`](ObjectStream::content_length) is the bytes from `offset` to the end.
    pub async fn get_stream_from(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
    ) -> Result<ObjectStream> {
        if offset == 0 {
            return self.get_stream(bucket, key).await;
        }
        check_bucket(bucket)?;
        check_key(key)?;
        let spec = RequestSpec::new("GET", Some(bucket), Some(key))
            .header("range", format!("bytes={offset}-"));
        let response = self.send(&spec).await?;
        let length = body_length(&response)?;
        if response.head().status() != 206 {
            return Err(Error::UnexpectedResponse {
                what: format!(
                    "a read from byte {offset} got status {}, expected 206",
                    response.head().status()
                ),
            });
        }
        let etag = response.header("etag").map(str::to_owned);
        let mut stream = ObjectStream::new(self, bucket, key, offset, length, etag);
        stream.response = Some(response);
        Ok(stream)
    }

    /// Starts reading `len` bytes of `bucket`/`key` from `offset` as a stream, every GET (the first
    /// and any resumed one) pinned to `etag` with `If-Match`: a changed object is
    /// [`Error::ObjectChanged`]. No checksum is checked (a range has no stored checksum of its own);
    /// the caller sums what it reads. `len` must be at least 1.
    pub async fn get_range_stream(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
        offset: u64,
        len: u64,
    ) -> Result<ObjectStream> {
        let mut stream = ObjectStream::new(self, bucket, key, offset, len, Some(etag.to_owned()));
        stream.request_rest().await?;
        Ok(stream)
    }
}

impl ObjectStream {
    /// A stream of `length` bytes from `start`, nothing received yet, no response and no checksum.
    fn new(
        client: &Client,
        bucket: &str,
        key: &str,
        start: u64,
        length: u64,
        etag: Option<String>,
    ) -> Self {
        Self {
            client: client.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            response: None,
            start,
            length,
            received: 0,
            etag,
            checksum: None,
            range_md5: None,
            retry: RetryContext::new(client.config().retry),
            backoff: Duration::ZERO,
            wake_after: 0,
        }
    }

    /// The object's size (`Content-Length`); for a ranged stream, the range's.
    pub fn content_length(&self) -> u64 {
        self.length
    }

    /// The object's ETag, which resumed reads are pinned to.
    pub fn etag(&self) -> Option<&str> {
        self.etag.as_deref()
    }

    /// Bytes read so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Reads the next bytes of the object into `dst` and returns how many; 0 at the end of the
    /// object, once its checksum (if the server sent one) has been verified.
    pub async fn read(&mut self, dst: &mut [u8]) -> Result<usize> {
        if dst.is_empty() {
            return Ok(0);
        }
        loop {
            if self.received == self.length {
                return self.finish().map(|()| 0);
            }
            self.apply_wake_after();
            let Some(response) = self.response.as_mut() else {
                self.resume().await?;
                continue;
            };
            let want = dst.len().min((self.length - self.received) as usize);
            match response.conn.conn().read_body(&mut dst[..want]).await {
                Ok(0) => {
                    self.response = None;
                    self.fail_or_resume(Error::UnexpectedResponse {
                        what: format!(
                            "body ended after {} of {} bytes",
                            self.received, self.length
                        ),
                    })?;
                }
                Ok(n) => {
                    self.received += n as u64;
                    if let Some((_, summer)) = &mut self.checksum {
                        summer.update(&dst[..n]);
                    }
                    if let Some((_, md5)) = &mut self.range_md5 {
                        md5.update(&dst[..n]);
                    }
                    return Ok(n);
                }
                Err(e) => {
                    self.response = None;
                    self.fail_or_resume(Error::Http(e))?;
                }
            }
        }
    }

    /// Lets a read that waits on the socket sleep until `bytes` have arrived, or what is left of
    /// the response if that is less (0 goes back to waking for every byte). For a reader that takes
    /// large blocks, and that is sometimes busy elsewhere while the server keeps sending: each
    /// segment that arrives would otherwise wake it for nothing (`SO_RCVLOWAT`). Applies
    /// to plain TCP on Linux; elsewhere nothing changes.
    pub fn wake_after(&mut self, bytes: usize) {
        self.wake_after = bytes;
        self.apply_wake_after();
    }

    /// Sets the connection's low-water mark for the next read, never above the bytes still to come.
    fn apply_wake_after(&mut self) {
        let Some(response) = self.response.as_mut() else {
            return;
        };
        response
            .conn
            .wake_for(self.length - self.received, self.wake_after);
    }

    /// At the end: gives the connection back and checks the checksum.
    fn finish(&mut self) -> Result<()> {
        if let Some(response) = self.response.take() {
            response.release();
        }
        if let Some((expected, md5)) = self.range_md5.take() {
            crate::integrity::md5_matches(
                &self.bucket,
                &self.key,
                &expected,
                md5.finalize(),
                "the MD5 the service sent with the range",
            )?;
        }
        match self.checksum.take() {
            // The bytes have gone to the caller: compare the value computed as they passed.
            Some((expected, summer)) => crate::integrity::checksum_matches(
                &self.bucket,
                &self.key,
                &expected,
                summer.finalize(),
            ),
            None => Ok(()),
        }
    }

    /// Whether `error` ends the read (returned) or the missing bytes are fetched again.
    fn fail_or_resume(&mut self, error: Error) -> Result<()> {
        if self.etag.is_none() {
            return Err(error);
        }
        match self.retry.failed(&error) {
            RetryDecision::RetryAfter(backoff) => {
                self.backoff = backoff;
                Ok(())
            }
            RetryDecision::GiveUp { .. } => Err(error),
        }
    }

    /// A ranged GET for the bytes not yet read, pinned to the first response's ETag.
    async fn resume(&mut self) -> Result<()> {
        tokio::time::sleep(std::mem::take(&mut self.backoff)).await;
        self.client.count_resumed_read();
        tracing::debug!(
            bucket = %self.bucket, key = %self.key, attempt = self.retry.attempt(), resume_at = self.start + self.received,
            "stream read failed mid-body; resuming with a ranged GET pinned to the ETag"
        );
        self.request_rest().await
    }

    /// Sends the ranged GET for the bytes of the stream not yet read, pinned to the ETag.
    async fn request_rest(&mut self) -> Result<()> {
        let etag = self.etag.clone().unwrap_or_default();
        let (from, last) = (self.start + self.received, self.start + self.length - 1);
        let spec = RequestSpec::new("GET", Some(&self.bucket), Some(&self.key))
            .header("if-match", etag.clone())
            .header("range", format!("bytes={from}-{last}"));
        let (spec, range_md5) = self.client.dialect().ask_range_md5(spec, last - from + 1);
        let response = match self.client.send(&spec).await {
            Ok(r) => r,
            Err(Error::PreconditionFailed(_)) => return Err(Error::ObjectChanged { etag }),
            Err(e) => return Err(e),
        };
        let length = body_length(&response)?;
        if response.head().status() != 206 || length != last - from + 1 {
            return Err(Error::UnexpectedResponse {
                what: format!(
                    "ranged read got status {} with {length} bytes, expected 206 with {}",
                    response.head().status(),
                    last - from + 1
                ),
            });
        }
        // A resumed range is checked from where it resumed: the bytes before came with the MD5 of
        // a range that did not arrive whole.
        self.range_md5 = range_md5
            .then(|| crate::integrity::sent_range_md5(response.head()))
            .flatten()
            .map(|expected| (expected, Md5::new()));
        self.response = Some(response);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrity::{UploadChecksum, verify};

    /// `verify` is the one-shot form of the comparison in `finish`; both must agree.
    #[test]
    fn running_checksum_equals_one_shot() {
        let data = vec![7u8; 100_000];
        let expected = ChecksumValue::from_base64(
            brisk_wire::checksum::ChecksumAlgorithm::Crc32c,
            &UploadChecksum::Crc32c.compute(&data),
        )
        .unwrap();
        let mut summer = Checksummer::new(expected.algorithm());
        for piece in data.chunks(4096) {
            summer.update(piece);
        }
        assert!(summer.finalize() == expected);
        verify("b", "k", &expected, &data).unwrap();
    }
}
