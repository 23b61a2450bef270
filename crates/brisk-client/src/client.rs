//! The client and its operations.
//!
//! # Memory on the data path
//!
//! - [`Client::get_bytes`] reads the response head, takes exactly `Content-Length` bytes from the
//!   memory budget, allocates them once ([`ExactBuf`]: from 1 MiB up an anonymous mapping populated
//!   before the body arrives, so the socket's copy takes no page faults) and reads the body from the
//!   socket straight into them: one buffer per object whatever its size, no intermediate buffer,
//!   nothing grown by doubling.
//! - [`Client::get_into`] and [`Client::get_range_into`] read into the caller's slice: the body path
//!   allocates nothing. When the caller's slice is at least as large as the connection's read buffer
//!   (64 KiB by default) the socket is read straight into it.
//! - [`Client::put`] writes the head and the caller's slice in one vectored write: the payload is not
//!   copied.
//!
//! What does allocate is per request, not per byte: the signed head (a few hundred bytes of strings),
//! and an error body when the server refuses.
//!
//! # Retries and resumed reads
//!
//! A request that fails before its body is read is retried as [`RetryPolicy`](crate::RetryPolicy)
//! says. A GET whose connection fails in the middle of the body is *resumed*: a ranged GET for the
//! bytes still missing, pinned to the first response's ETag with `If-Match`, so the bytes already read
//! and the bytes still to come belong to the same version of the object. If the object changed in
//! between, the read fails with [`Error::ObjectChanged`] instead of mixing two versions.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use brisk_mem::{BufferPool, ExactBuf, MemoryBudget};
use brisk_wire::checksum::{
    ChecksumAlgorithm, ChecksumValue, Checksummer, CompositeChecksum, Md5, MultipartChecksum,
};
use brisk_wire::http::{BodyFraming, ContinueOutcome, ResponseHead};
use brisk_wire::sigv4::chunked::CRLF;
use brisk_wire::sigv4::{AmzDate, PayloadHash, SignableRequest, Signer, UnsignedChunkEncoder};
use brisk_wire::xml::{
    CreateBucketConfiguration, Delete, DeleteResult, ErrorDocument, ObjectIdentifier, XmlDocument,
};

use crate::config::{ClientBuilder, ClientConfig, ConfigError, Scheme};
use crate::error::{Error, Result, ServiceError};
use crate::integrity::{CHECKSUM_MODE_HEADER, UploadChecksum, stored_checksum, verify};
use crate::list::{ListObjects, ListOptions};
use crate::metrics::{ClientMetrics, Counters};
use crate::pool::{ConnectionPool, PoolSettings, PooledConnection};
use crate::request::{
    RequestSpec, Target, check_bucket, check_key, expects_continue, push_query, signed_head, target,
};
use crate::retry::{RetryContext, RetryDecision, is_stale_reuse};

/// How long a request with a large body waits for `100 Continue` before sending the body anyway:
/// 1 s, as botocore (through urllib3) waits. Servers that ignore `Expect` cost this once per request.
pub const CONTINUE_WAIT: Duration = Duration::from_secs(1);

/// The largest error body read to learn the error code: 64 KiB. S3's largest error document
/// (`SignatureDoesNotMatch` with the canonical request and its hex bytes) is a few KiB; a larger body
/// is not an S3 error document, and is not buffered.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// The most keys one DeleteObjects request carries (S3's limit); [`Client::delete_many`] sends
/// larger lists in batches of this size.
pub const DELETE_BATCH: usize = brisk_wire::xml::MAX_DELETE_OBJECTS;

/// An S3 client. Cheap to clone (an `Arc`); clones share the connection pool and counters.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    /// `None` for an anonymous client: its requests are not signed.
    signer: Option<Signer>,
    pool: ConnectionPool,
    buffers: BufferPool,
    counters: Arc<Counters>,
}

/// The checksum an object is stored with, as its HEAD told it.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredChecksum {
    /// A full-object checksum (any algorithm).
    pub(crate) full: Option<ChecksumValue>,
    /// A composite checksum of the parts, of a CRC algorithm.
    pub(crate) composite: Option<MultipartChecksum>,
    /// The algorithm of whatever checksum header came back, checkable or not.
    pub(crate) any: Option<ChecksumAlgorithm>,
}

/// What HEAD says about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Size in bytes.
    pub content_length: u64,
    /// The ETag, with its quotes, as the server sent it.
    pub etag: Option<String>,
    /// `Last-Modified`.
    pub last_modified: Option<SystemTime>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `x-amz-checksum-crc32c`, when the object was stored with one (and the server returns it).
    pub checksum_crc32c: Option<String>,
    /// User metadata (`x-amz-meta-<name>` headers) as (name without the prefix, lower-case; value),
    /// in the order the server sent them.
    pub metadata: Vec<(String, String)>,
}

/// How a PUT's payload is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PayloadSigning {
    /// Signed over plain HTTP (where nothing else protects the payload), unsigned with a checksum over
    /// TLS (which already does).
    #[default]
    Auto,
    /// The payload's SHA-256 is signed: one more pass over the data (about 1.4 GiB/s).
    Signed,
    /// `UNSIGNED-PAYLOAD`: integrity from the CRC32C checksum header alone.
    Unsigned,
}

/// Options of [`Client::put_with`].
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    /// `Content-Type` stored with the object.
    pub content_type: Option<String>,
    /// How the payload is protected. A checksum header (`checksum`) is always sent, and the server
    /// checks it.
    pub payload_signing: PayloadSigning,
    /// The checksum sent with the body (CRC32C unless chosen otherwise).
    pub checksum: UploadChecksum,
    /// Write only if no object exists under the key (`If-None-Match: *`).
    pub if_none_match_any: bool,
}

/// What a PUT returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// The new object's ETag.
    pub etag: Option<String>,
    /// The CRC32C that was sent (base64), which the server verified; empty when `checksum_algorithm`
    /// is another algorithm.
    pub checksum_crc32c: String,
    /// The algorithm of `checksum`.
    pub checksum_algorithm: UploadChecksum,
    /// The checksum that was sent (base64), which the server verified.
    pub checksum: String,
}

/// A response whose head has been read; its body is still on the connection.
pub(crate) struct Response {
    pub(crate) conn: PooledConnection,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head().headers().get_str(name)
    }

    /// The response head.
    pub(crate) fn head(&self) -> &ResponseHead {
        self.conn.head()
    }

    /// Gives the connection back to the pool (if it can carry another request).
    pub(crate) fn release(self) {
        self.conn.release();
    }
}

impl Client {
    /// A builder (explicit values, then environment, then profile).
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// A client for a resolved configuration. Fails only when an `https://` endpoint's TLS setup does
    /// (no usable roots, an unreadable CA bundle).
    pub fn new(config: ClientConfig) -> Result<Self, ConfigError> {
        let tls = match config.endpoint.scheme {
            Scheme::Https => Some(crate::tls::connector(config.ca_bundle.as_deref())?),
            Scheme::Http => None,
        };
        let counters = Arc::new(Counters::default());
        let pool = ConnectionPool::new(
            PoolSettings {
                max_per_host: config.max_connections_per_host,
                connect_timeout: config.connect_timeout,
                read_buffer_size: config.read_buffer_size,
                read_timeout: config.read_timeout,
                tls,
            },
            Arc::clone(&counters),
        );
        let signer = (!config.anonymous)
            .then(|| Signer::new(config.credentials.clone(), config.region.clone()));
        let global = BufferPool::global();
        let buffers = match config.pool_retention {
            Some(bytes) => BufferPool::with_retention(config.memory_budget.clone(), bytes),
            None if config.memory_budget.same_budget(global.budget()) => global.clone(),
            None => BufferPool::new(config.memory_budget.clone()),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                signer,
                pool,
                buffers,
                counters,
            }),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The budget that pays for [`get_bytes`](Self::get_bytes) buffers.
    pub fn memory_budget(&self) -> &MemoryBudget {
        &self.inner.config.memory_budget
    }

    /// The pool transfers take part buffers from (on the client's memory budget).
    pub fn buffer_pool(&self) -> &BufferPool {
        &self.inner.buffers
    }

    /// Whether a payload is signed under `signing` on this client's endpoint.
    pub(crate) fn signs_payload(&self, signing: PayloadSigning) -> bool {
        match signing {
            PayloadSigning::Signed => true,
            PayloadSigning::Unsigned => false,
            PayloadSigning::Auto => self.inner.config.endpoint.scheme == Scheme::Http,
        }
    }

    /// Counts a read resumed after its connection failed mid-body.
    pub(crate) fn count_resumed_read(&self) {
        Counters::add(&self.inner.counters.resumed_reads);
    }

    /// Counters since the client was built.
    pub fn metrics(&self) -> ClientMetrics {
        self.inner.counters.snapshot()
    }

    /// Idle keep-alive connections held for `bucket`'s host.
    pub fn idle_connections(&self, bucket: &str) -> usize {
        let t = self.target(Some(bucket), None);
        self.inner.pool.idle_count(&t.host_header)
    }

    /// What the batch read engine ([`crate::scheduler`]) drives requests with: the connection pool,
    /// the signer (`None` for an anonymous client) and the counters.
    pub(crate) fn engine_parts(&self) -> (&ConnectionPool, Option<&Signer>, &Counters) {
        (
            &self.inner.pool,
            self.inner.signer.as_ref(),
            &self.inner.counters,
        )
    }

    pub(crate) fn target(&self, bucket: Option<&str>, key: Option<&str>) -> Target {
        let c = &self.inner.config;
        target(&c.endpoint, c.addressing, bucket, key)
    }

    // ----- the request engine ------------------------------------------------------------------

    /// Sends `spec` and reads the response head, retrying retryable failures. A 2xx response is
    /// returned with its body unread; any other status becomes the matching [`Error`].
    pub(crate) async fn send(&self, spec: &RequestSpec<'_>) -> Result<Response> {
        let mut retry = RetryContext::new(self.inner.config.retry);
        let mut fresh = false;
        loop {
            match self.send_once(spec, fresh).await {
                Ok(response) => return Ok(response),
                Err(Attempt { error, stale_reuse }) => {
                    if stale_reuse && !fresh {
                        // A kept-alive connection the server had closed: try once more at once on a
                        // new connection; it is not the server failing.
                        tracing::debug!(
                            method = spec.method, bucket = spec.bucket, key = spec.key, %error,
                            "a kept-alive connection was closed by the server; resending on a new one"
                        );
                        fresh = true;
                        Counters::add(&self.inner.counters.retries);
                        continue;
                    }
                    let attempt = retry.attempt();
                    match retry.failed(&error) {
                        RetryDecision::RetryAfter(backoff) => {
                            tracing::debug!(
                                method = spec.method, bucket = spec.bucket, key = spec.key, attempt,
                                backoff_ms = backoff.as_millis() as u64, %error,
                                "retrying request"
                            );
                            tokio::time::sleep(backoff).await;
                            Counters::add(&self.inner.counters.retries);
                        }
                        RetryDecision::GiveUp { exhausted } => {
                            if exhausted {
                                tracing::debug!(
                                    method = spec.method, bucket = spec.bucket, key = spec.key, attempt, %error,
                                    "giving up: no attempts left"
                                );
                            }
                            return Err(error);
                        }
                    }
                }
            }
        }
    }

    async fn send_once(&self, spec: &RequestSpec<'_>, fresh: bool) -> Result<Response, Attempt> {
        let target = self.target(spec.bucket, spec.key);
        let head = signed_head(self.inner.signer.as_ref(), spec, &target, SystemTime::now())?;
        let mut conn = self
            .inner
            .pool
            .checkout(&target.host_header, &target.host, target.port, fresh)
            .await?;
        Counters::add(&self.inner.counters.requests_sent);
        let reused = conn.was_reused();
        let usual_head_timeout = conn.conn().limits().head_timeout;
        if spec.slow_answer {
            let slow = usual_head_timeout.map(|t| t.max(crate::request::SLOW_ANSWER_TIMEOUT));
            conn.conn().set_head_timeout(slow);
        }
        let exchange = async {
            let (c, response_head) = conn.parts();
            if !expects_continue(spec.body.len()) {
                c.queue_request_head(&head);
                write_body(c, spec).await?;
                c.flush().await?;
                return c.read_response_head(response_head, spec.method).await;
            }
            c.queue_request_head(&head);
            match c
                .await_continue(response_head, spec.method, CONTINUE_WAIT)
                .await?
            {
                // The server answered without wanting the body: that answer is the response.
                ContinueOutcome::Final => Ok(()),
                ContinueOutcome::Continue | ContinueOutcome::TimedOut => {
                    write_body(c, spec).await?;
                    c.flush().await?;
                    c.read_response_head(response_head, spec.method).await
                }
            }
        }
        .await;
        if spec.slow_answer {
            conn.conn().set_head_timeout(usual_head_timeout);
        }
        if let Err(e) = exchange {
            // Nothing of a response arrived on a reused connection: the server closed it while idle.
            let stale_reuse = is_stale_reuse(reused, false, &e);
            return Err(Attempt {
                error: Error::Http(e),
                stale_reuse,
            });
        }
        let mut response = Response { conn };
        let status = response.head().status();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let error = self.error_from(&mut response).await;
        // The error body was read to its end (when small): the connection stays usable.
        response.release();
        Err(Attempt::from(error))
    }

    /// Reads an error response's body (bounded) and turns it into an [`Error`].
    pub(crate) async fn error_from(&self, response: &mut Response) -> Error {
        let status = response.head().status();
        let request_id = response.header("x-amz-request-id").map(str::to_owned);
        let body = read_error_body(response).await;
        let document = body
            .as_deref()
            .filter(|b| !b.is_empty())
            .and_then(|b| ErrorDocument::parse(b).ok());
        Error::from_service(ServiceError::new(
            status,
            document,
            request_id,
            &self.inner.config.region,
        ))
    }

    // ----- objects -----------------------------------------------------------------------------

    /// Metadata of `bucket`/`key` (HEAD, asking for the stored checksum).
    pub async fn head(&self, bucket: &str, key: &str) -> Result<ObjectMeta> {
        Ok(self.head_with_checksum(bucket, key).await?.0)
    }

    /// [`head`](Self::head), with the object's stored checksum: full-object, or composite (per
    /// part, of a CRC algorithm: see [`crate::integrity`]).
    pub(crate) async fn head_with_checksum(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(ObjectMeta, StoredChecksum)> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self
            .send(
                &RequestSpec::new("HEAD", Some(bucket), Some(key))
                    .header(CHECKSUM_MODE_HEADER, "ENABLED"),
            )
            .await?;
        let checksum = StoredChecksum {
            full: stored_checksum(response.head()),
            composite: crate::integrity::stored_composite(response.head()),
            any: ChecksumAlgorithm::ALL
                .into_iter()
                .find(|a| response.header(a.header_name()).is_some()),
        };
        let meta = ObjectMeta {
            content_length: response
                .head()
                .content_length()?
                .ok_or(Error::UnknownLength)?,
            etag: response.header("etag").map(str::to_owned),
            last_modified: response
                .header("last-modified")
                .and_then(|v| httpdate::parse_http_date(v).ok()),
            content_type: response.header("content-type").map(str::to_owned),
            checksum_crc32c: response.header("x-amz-checksum-crc32c").map(str::to_owned),
            metadata: response
                .head()
                .headers()
                .iter()
                .filter_map(|(name, value)| {
                    const PREFIX: &str = "x-amz-meta-";
                    let prefix = name.get(..PREFIX.len())?;
                    prefix.eq_ignore_ascii_case(PREFIX).then(|| {
                        (
                            name[PREFIX.len()..].to_ascii_lowercase(),
                            String::from_utf8_lossy(value).into_owned(),
                        )
                    })
                })
                .collect(),
        };
        response.release();
        Ok((meta, checksum))
    }

    /// The size of part 1 of a multipart object and its part count (HEAD `?partNumber=1`, pinned
    /// to `etag`): how a downloader finds the part boundaries a composite checksum was made on.
    /// `None` for an object the server does not describe as multipart.
    pub(crate) async fn first_part_layout(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
    ) -> Result<Option<(u64, u32)>> {
        let mut spec = RequestSpec::new("HEAD", Some(bucket), Some(key)).header("if-match", etag);
        push_query(&mut spec.query, "partNumber", "1");
        let response = self.send(&spec).await?;
        let length = response.head().content_length()?;
        let parts = response
            .header("x-amz-mp-parts-count")
            .and_then(|v| v.trim().parse::<u32>().ok());
        response.release();
        Ok(length.zip(parts))
    }

    /// Checks a whole object read into memory against its composite CRC: the parts' boundaries
    /// from [`first_part_layout`](Self::first_part_layout), each part's CRC over its bytes, the
    /// composite over the parts' CRCs. Parts of unequal size cannot be told apart and are not
    /// checked (a `debug` event says so).
    async fn verify_composite(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
        expected: &MultipartChecksum,
        data: &[u8],
    ) -> Result<()> {
        let layout = self.first_part_layout(bucket, key, etag).await?;
        let Some(part_size) = layout
            .filter(|&(p, n)| {
                n == expected.parts && p > 0 && (data.len() as u64).div_ceil(p) == u64::from(n)
            })
            .map(|(p, _)| p as usize)
        else {
            tracing::debug!(
                bucket,
                key,
                ?layout,
                parts = expected.parts,
                "the object's parts are not of equal size; its composite checksum is not checked"
            );
            return Ok(());
        };
        let algorithm = expected.value.algorithm();
        let mut composite =
            CompositeChecksum::new(algorithm).map_err(|e| Error::UnexpectedResponse {
                what: format!("composite checksum of {bucket}/{key}: {e}"),
            })?;
        for part in data.chunks(part_size) {
            composite
                .push_part(&Checksummer::checksum(algorithm, part))
                .expect("one algorithm");
        }
        let computed = composite.finish();
        if computed == *expected {
            return Ok(());
        }
        tracing::warn!(
            bucket, key, algorithm = algorithm.s3_name(), expected = %expected, computed = %computed,
            "received bytes do not match the object's composite checksum"
        );
        Err(Error::ChecksumMismatch {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            algorithm: algorithm.s3_name(),
            expected: expected.to_string(),
            computed: computed.to_string(),
        })
    }

    /// The whole object in one buffer of exactly its size, paid for by the client's memory budget
    /// (waiting while the budget is full). The buffer is sized from the response's `Content-Length`,
    /// so nothing is reserved before the head arrives; it is one allocation whatever the size (from
    /// [`brisk_mem::MAPPED_MIN_LEN`] up a populated mapping, no heap), and the body goes from the
    /// socket straight into it. A full-object checksum returned by the server is verified
    /// ([`Error::ChecksumMismatch`]).
    pub async fn get_bytes(&self, bucket: &str, key: &str) -> Result<ExactBuf> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self.send(&whole_object_get(bucket, key)).await?;
        let expected = stored_checksum(response.head());
        let composite = composite_with_etag(&response);
        let length = body_length(&response)?;
        let length = usize::try_from(length).map_err(|_| Error::BufferTooSmall {
            length,
            capacity: usize::MAX,
        })?;
        let mut buf = ExactBuf::new(&self.inner.config.memory_budget, length).await?;
        self.read_resuming(bucket, key, response, 0, &mut buf)
            .await?;
        if let Some(expected) = expected {
            verify(bucket, key, &expected, &buf)?;
        }
        if let Some((composite, etag)) = composite {
            self.verify_composite(bucket, key, &etag, &composite, &buf)
                .await?;
        }
        Ok(buf)
    }

    /// Reads the whole object into `dst` and returns its length. Fails with
    /// [`Error::BufferTooSmall`] (before reading any of it) if the object is larger than `dst`. The
    /// body path allocates nothing. A full-object checksum returned by the server is verified
    /// ([`Error::ChecksumMismatch`]; `dst` then holds bytes that must not be used).
    pub async fn get_into(&self, bucket: &str, key: &str, dst: &mut [u8]) -> Result<usize> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self.send(&whole_object_get(bucket, key)).await?;
        let expected = stored_checksum(response.head());
        let composite = composite_with_etag(&response);
        let length = body_length(&response)?;
        if length > dst.len() as u64 {
            return Err(Error::BufferTooSmall {
                length,
                capacity: dst.len(),
            });
        }
        let length = length as usize;
        self.read_resuming(bucket, key, response, 0, &mut dst[..length])
            .await?;
        if let Some(expected) = expected {
            verify(bucket, key, &expected, &dst[..length])?;
        }
        if let Some((composite, etag)) = composite {
            self.verify_composite(bucket, key, &etag, &composite, &dst[..length])
                .await?;
        }
        Ok(length)
    }

    /// Reads up to `dst.len()` bytes of the object starting at byte `offset` into `dst` (a ranged
    /// GET) and returns how many were read: fewer than `dst.len()` only at the end of the object.
    /// An `offset` at or past the end is [`Error::InvalidRange`].
    pub async fn get_range_into(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<usize> {
        self.get_range_pinned(bucket, key, offset, dst, None).await
    }

    /// [`get_range_into`](Self::get_range_into), only if the object's ETag is still `etag`
    /// (`If-Match`): the parts of a parallel download all come from one version of the object.
    /// A changed object is [`Error::ObjectChanged`].
    pub async fn get_range_if_match(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        dst: &mut [u8],
        etag: &str,
    ) -> Result<usize> {
        self.get_range_pinned(bucket, key, offset, dst, Some(etag))
            .await
    }

    async fn get_range_pinned(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        dst: &mut [u8],
        etag: Option<&str>,
    ) -> Result<usize> {
        check_bucket(bucket)?;
        check_key(key)?;
        if dst.is_empty() {
            return Ok(0);
        }
        let last = offset + dst.len() as u64 - 1;
        let mut spec = RequestSpec::new("GET", Some(bucket), Some(key))
            .header("range", format!("bytes={offset}-{last}"));
        if let Some(etag) = etag {
            spec = spec.header("if-match", etag);
        }
        let response = match self.send(&spec).await {
            Err(Error::PreconditionFailed(_)) if etag.is_some() => {
                return Err(Error::ObjectChanged {
                    etag: etag.unwrap_or_default().to_owned(),
                });
            }
            other => other?,
        };
        if response.head().status() != 206 && offset != 0 {
            return Err(Error::UnexpectedResponse {
                what: format!(
                    "status {} to a ranged GET (expected 206 Partial Content)",
                    response.head().status()
                ),
            });
        }
        let length = body_length(&response)?;
        if length > dst.len() as u64 {
            return Err(Error::BufferTooSmall {
                length,
                capacity: dst.len(),
            });
        }
        let length = length as usize;
        self.read_resuming(bucket, key, response, offset, &mut dst[..length])
            .await?;
        Ok(length)
    }

    /// Reads `response`'s body, which holds the object's bytes from `offset` on, into all of `dst`.
    /// If the connection fails midway, the missing bytes are fetched with a ranged GET pinned to the
    /// response's ETag (`If-Match`), within the retry policy's attempts.
    async fn read_resuming(
        &self,
        bucket: &str,
        key: &str,
        response: Response,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let etag = response.header("etag").map(str::to_owned);
        let mut retry = RetryContext::new(self.inner.config.retry);
        let mut response = response;
        let mut filled = 0usize;
        loop {
            let (read, outcome) = read_body_exact(&mut response, &mut dst[filled..]).await;
            filled += read;
            let error = match outcome {
                Ok(()) => {
                    response.release();
                    return Ok(());
                }
                Err(e) => e,
            };
            drop(response);
            let Some(etag) = etag.as_deref() else {
                return Err(error);
            };
            let RetryDecision::RetryAfter(backoff) = retry.failed(&error) else {
                return Err(error);
            };
            tokio::time::sleep(backoff).await;
            Counters::add(&self.inner.counters.resumed_reads);
            let from = offset + filled as u64;
            tracing::debug!(
                bucket, key, attempt = retry.attempt(), resume_at = from, %error,
                "read failed mid-body; resuming with a ranged GET pinned to the ETag"
            );
            let last = offset + dst.len() as u64 - 1;
            let spec = RequestSpec::new("GET", Some(bucket), Some(key))
                .header("if-match", etag)
                .header("range", format!("bytes={from}-{last}"));
            response = match self.send(&spec).await {
                Ok(r) => r,
                Err(Error::PreconditionFailed(_)) => {
                    return Err(Error::ObjectChanged {
                        etag: etag.to_owned(),
                    });
                }
                Err(e) => return Err(e),
            };
            let expected = (last - from + 1) as usize;
            let length = body_length(&response)?;
            if response.head().status() != 206 || length != expected as u64 {
                return Err(Error::UnexpectedResponse {
                    what: format!(
                        "resumed read got status {} with {length} bytes, expected 206 with {expected}",
                        response.head().status()
                    ),
                });
            }
        }
    }

    /// Stores `body` under `bucket`/`key` in one PUT (up to 5 GiB), with a CRC32C checksum header.
    pub async fn put(&self, bucket: &str, key: &str, body: &[u8]) -> Result<PutResult> {
        self.put_with(bucket, key, body, &PutOptions::default())
            .await
    }

    /// [`put`](Self::put) with options.
    pub async fn put_with(
        &self,
        bucket: &str,
        key: &str,
        body: &[u8],
        options: &PutOptions,
    ) -> Result<PutResult> {
        self.put_summed(bucket, key, body, options, None).await
    }

    /// [`Client::put_with`] with the body's checksum already computed (`known`, base64, of
    /// `options.checksum`'s algorithm), as `upload` computes it while reading the file.
    pub(crate) async fn put_summed(
        &self,
        bucket: &str,
        key: &str,
        body: &[u8],
        options: &PutOptions,
        known: Option<String>,
    ) -> Result<PutResult> {
        check_bucket(bucket)?;
        check_key(key)?;
        let checksum = known.unwrap_or_else(|| options.checksum.compute(body));
        let signed = self.signs_payload(options.payload_signing);
        let mut spec = RequestSpec::new("PUT", Some(bucket), Some(key))
            .header(options.checksum.algorithm().header_name(), checksum.clone());
        if let Some(ct) = &options.content_type {
            spec = spec.header("content-type", ct.clone());
        }
        if options.if_none_match_any {
            spec = spec.header("if-none-match", "*");
        }
        spec.payload = if signed {
            PayloadHash::of(body)
        } else {
            PayloadHash::Unsigned
        };
        spec.body = body;
        let response = self.send(&spec).await?;
        let etag = response.header("etag").map(str::to_owned);
        finish(response).await?;
        Ok(PutResult {
            etag,
            checksum_crc32c: if options.checksum == UploadChecksum::Crc32c {
                checksum.clone()
            } else {
                String::new()
            },
            checksum_algorithm: options.checksum,
            checksum,
        })
    }

    /// Deletes `bucket`/`key`. Deleting a key that does not exist succeeds, as in S3.
    pub async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self
            .send(&RequestSpec::new("DELETE", Some(bucket), Some(key)))
            .await?;
        finish(response).await
    }

    /// Deletes `keys` from `bucket` with DeleteObjects, [`DELETE_BATCH`] keys per request. Keys
    /// the server could not delete are listed in the result's `errors`; keys that did not exist count
    /// as deleted.
    pub async fn delete_many<K: AsRef<str>>(
        &self,
        bucket: &str,
        keys: &[K],
    ) -> Result<DeleteResult> {
        check_bucket(bucket)?;
        let mut total = DeleteResult::default();
        for batch in keys.chunks(DELETE_BATCH) {
            let document = Delete {
                quiet: true,
                objects: batch
                    .iter()
                    .map(|k| ObjectIdentifier {
                        key: k.as_ref().to_owned(),
                        version_id: None,
                    })
                    .collect(),
            };
            let body = document.to_vec()?;
            let mut spec = RequestSpec::new("POST", Some(bucket), None)
                .header("content-md5", Md5::digest(&body).to_base64())
                .header("content-type", "application/xml");
            spec.query = "delete=".to_owned();
            spec.payload = PayloadHash::of(&body);
            spec.body = &body;
            let mut response = self.send(&spec).await?;
            let xml = read_small_body(&mut response).await?;
            response.release();
            let result = DeleteResult::parse(&xml)?;
            total.deleted.extend(result.deleted);
            total.errors.extend(result.errors);
        }
        Ok(total)
    }

    /// Lists `bucket` (ListObjectsV2), page by page: call [`ListObjects::next_page`] until it returns
    /// `None`.
    pub fn list(&self, bucket: &str, options: ListOptions) -> ListObjects {
        ListObjects::new(self.clone(), bucket.to_owned(), options)
    }

    /// Sends one ListObjectsV2 request (used by [`ListObjects`]).
    pub(crate) async fn list_page(
        &self,
        bucket: &str,
        options: &ListOptions,
        continuation_token: Option<&str>,
    ) -> Result<brisk_wire::xml::ListBucketResult> {
        check_bucket(bucket)?;
        let mut query = String::new();
        if let Some(token) = continuation_token {
            push_query(&mut query, "continuation-token", token);
        }
        if let Some(delimiter) = &options.delimiter {
            push_query(&mut query, "delimiter", delimiter);
        }
        push_query(&mut query, "encoding-type", "url");
        push_query(&mut query, "list-type", "2");
        if let Some(max) = options.max_keys {
            push_query(&mut query, "max-keys", &max.to_string());
        }
        if let Some(prefix) = &options.prefix {
            push_query(&mut query, "prefix", prefix);
        }
        if let Some(after) = &options.start_after {
            push_query(&mut query, "start-after", after);
        }
        let mut spec = RequestSpec::new("GET", Some(bucket), None);
        spec.query = query;
        let mut response = self.send(&spec).await?;
        let xml = read_small_body(&mut response).await?;
        response.release();
        Ok(brisk_wire::xml::ListBucketResult::parse(&xml)?)
    }

    // ----- buckets -----------------------------------------------------------------------------

    /// Creates `bucket` in the client's region. A bucket that exists already is
    /// [`Error::BucketAlreadyExists`] (whoever owns it).
    pub async fn create_bucket(&self, bucket: &str) -> Result<()> {
        check_bucket(bucket)?;
        let region = &self.inner.config.region;
        // us-east-1 is S3's default location and must not be named in the body.
        let body = if region == crate::config::DEFAULT_REGION {
            Vec::new()
        } else {
            CreateBucketConfiguration {
                location_constraint: Some(region.clone()),
            }
            .to_vec()?
        };
        let mut spec = RequestSpec::new("PUT", Some(bucket), None);
        spec.payload = PayloadHash::of(&body);
        spec.body = &body;
        let response = self.send(&spec).await?;
        finish(response).await
    }

    /// Deletes the empty bucket `bucket`.
    pub async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        check_bucket(bucket)?;
        let response = self
            .send(&RequestSpec::new("DELETE", Some(bucket), None))
            .await?;
        finish(response).await
    }

    // ----- presigned URLs ----------------------------------------------------------------------

    /// A URL anyone can GET `bucket`/`key` with, for `expires` (1 s to 7 days).
    pub fn presign_get(&self, bucket: &str, key: &str, expires: Duration) -> Result<String> {
        self.presign("GET", bucket, key, expires, SystemTime::now())
    }

    /// A URL anyone can PUT `bucket`/`key` with (the body unsigned), for `expires` (1 s to 7 days).
    pub fn presign_put(&self, bucket: &str, key: &str, expires: Duration) -> Result<String> {
        self.presign("PUT", bucket, key, expires, SystemTime::now())
    }

    /// A presigned URL for `method` on `bucket`/`key`, signed at `now`. An anonymous client has
    /// nothing to sign with: [`Error::InvalidArgument`].
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
        let target = self.target(Some(bucket), Some(key));
        let headers: [(&str, &[u8]); 1] = [("host", target.host_header.as_bytes())];
        let request = SignableRequest {
            method,
            path: &target.path,
            query: "",
            headers: &headers,
        };
        let Some(signer) = &self.inner.signer else {
            return Err(Error::InvalidArgument {
                what: "an anonymous client has no credentials to presign a URL with".to_owned(),
            });
        };
        let presigned = signer.presign(&request, expires, AmzDate::from_system_time(now)?)?;
        let scheme = match self.inner.config.endpoint.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        Ok(format!(
            "{scheme}://{}{}?{}",
            target.host_header, target.path, presigned.query
        ))
    }
}

/// Writes `spec`'s body after the queued head: as it is (one vectored write with the head), or
/// aws-chunked with its checksum computed chunk by chunk as the chunks go out and sent as the
/// trailer. The payload is written from where it is in both cases.
async fn write_body(
    c: &mut crate::pool::Connection,
    spec: &RequestSpec<'_>,
) -> Result<(), brisk_wire::http::HttpError> {
    let Some(trailer) = spec.trailer else {
        return c.write_body(spec.body).await;
    };
    let mut summer = brisk_wire::checksum::Checksummer::new(trailer.algorithm.algorithm());
    for chunk in spec.body.chunks(crate::request::AWS_CHUNK_SIZE) {
        summer.update(chunk);
        c.write_body(UnsignedChunkEncoder::chunk_header(chunk.len() as u64).as_bytes())
            .await?;
        c.write_body(chunk).await?;
        c.write_body(CRLF).await?;
    }
    let value = summer.finalize().to_base64();
    let last = UnsignedChunkEncoder::final_chunk_with_trailers(&[(
        trailer.algorithm.algorithm().header_name(),
        &value,
    )])
    .expect("a checksum header name and a base64 value are a valid trailer");
    c.write_body(&last).await?;
    trailer.set(value);
    Ok(())
}

/// A failed attempt, and whether it failed only because a reused connection was dead.
struct Attempt {
    error: Error,
    stale_reuse: bool,
}

impl<E: Into<Error>> From<E> for Attempt {
    fn from(error: E) -> Self {
        Self {
            error: error.into(),
            stale_reuse: false,
        }
    }
}

/// A whole-object response's composite CRC and the ETag to pin the part-layout HEAD to; `None`
/// (and no allocation) for every other response.
fn composite_with_etag(response: &Response) -> Option<(MultipartChecksum, String)> {
    let composite = crate::integrity::stored_composite(response.head())?;
    Some((composite, response.header("etag")?.to_owned()))
}

/// A GET of a whole object that asks for its stored checksum.
pub(crate) fn whole_object_get<'a>(bucket: &'a str, key: &'a str) -> RequestSpec<'a> {
    RequestSpec::new("GET", Some(bucket), Some(key)).header(CHECKSUM_MODE_HEADER, "ENABLED")
}

/// The declared body length of a GET response.
pub(crate) fn body_length(response: &Response) -> Result<u64> {
    match response.conn_framing() {
        BodyFraming::ContentLength(n) => Ok(n),
        BodyFraming::Empty => Ok(0),
        BodyFraming::Chunked | BodyFraming::UntilClose => Err(Error::UnknownLength),
    }
}

impl Response {
    fn conn_framing(&self) -> BodyFraming {
        // `incoming_framing` needs no mutable access; the pooled wrapper only hands out `&mut`.
        self.head()
            .body_framing("GET")
            .unwrap_or(BodyFraming::UntilClose)
    }
}

/// Reads the body into all of `dst`, returning how many bytes arrived and whether it completed.
async fn read_body_exact(response: &mut Response, dst: &mut [u8]) -> (usize, Result<()>) {
    let conn = response.conn.conn();
    let mut filled = 0;
    while filled < dst.len() {
        match conn.read_body(&mut dst[filled..]).await {
            Ok(0) => {
                return (
                    filled,
                    Err(Error::UnexpectedResponse {
                        what: format!("body ended after {filled} of {} bytes", dst.len()),
                    }),
                );
            }
            Ok(n) => filled += n,
            Err(e) => return (filled, Err(Error::Http(e))),
        }
    }
    (filled, Ok(()))
}

/// Reads a small response body (a listing, a DeleteResult) into a new vector: these are documents,
/// not payload, and S3 bounds them (1,000 entries).
pub(crate) async fn read_small_body(response: &mut Response) -> Result<Vec<u8>> {
    /// The largest document accepted: 16 MiB, enough for 1,000 entries of 1,024-byte keys
    /// url-encoded (3 KiB each) with room to spare.
    const MAX_DOCUMENT: usize = 16 * 1024 * 1024;
    let conn = response.conn.conn();
    let mut out = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = conn.read_body(&mut chunk).await?;
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > MAX_DOCUMENT {
            return Err(Error::UnexpectedResponse {
                what: format!("response document larger than {MAX_DOCUMENT} bytes"),
            });
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Reads an error body up to [`MAX_ERROR_BODY`]; `None` if it could not be read or is larger.
async fn read_error_body(response: &mut Response) -> Option<Vec<u8>> {
    let conn = response.conn.conn();
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match conn.read_body(&mut chunk).await {
            Ok(0) => return Some(out),
            Ok(n) if out.len() + n <= MAX_ERROR_BODY => out.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
}

/// Reads and drops a success response's (small) body, then returns the connection to the pool.
pub(crate) async fn finish(mut response: Response) -> Result<()> {
    let conn = response.conn.conn();
    if !conn.discard_body().await? {
        drop(response);
        return Ok(());
    }
    response.release();
    Ok(())
}
