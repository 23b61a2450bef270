//! The request engine: [`Client`], and the one path every operation's requests take.
//!
//! A [`Client`] holds the resolved configuration, the service's dialect (how requests are addressed,
//! signed and their errors read: the `dialect` module, docs/azure.md), the keep-alive connection pool, the
//! buffer pool and the counters, behind one `Arc` that clones share. An operation describes its
//! request (method, bucket, key, query, headers, body) and hands it to the engine, which signs it,
//! writes it on a pooled connection (a large body only after `100 Continue`, or after
//! [`CONTINUE_WAIT`]), reads the response head, retries what may be retried, and turns an error
//! status into the matching [`Error`]. A 2xx response comes back with its body still on the
//! connection, for the operation to read where it wants the bytes.
//!
//! The operations live in their own modules and depend on this one, not the other way round:
//! objects ([`crate::objects`]), buckets ([`crate::buckets`]), listings ([`crate::list`]), copies
//! ([`crate::copy`]), transfers ([`crate::transfer`], [`crate::upload_reader`]), streams
//! ([`crate::object_stream`]), batch reads ([`crate::batch`]) and presigned URLs.
//!
//! # Retries
//!
//! A request that fails before its body is read is retried as [`RetryPolicy`](crate::RetryPolicy)
//! says. A kept-alive connection that the server had closed while it sat idle is not the server
//! failing: the request goes once more, at once, on a new connection.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use brisk_mem::{BufferPool, MemoryBudget};
use brisk_wire::checksum::Checksummer;
use brisk_wire::http::{BodyFraming, ContinueOutcome, ResponseHead};
use brisk_wire::sigv4::chunked::CRLF;
use brisk_wire::sigv4::{Signer, UnsignedChunkEncoder};

use crate::config::{ClientBuilder, ClientConfig, ConfigError, Scheme};
use crate::dialect::{AzureDialect, Dialect, S3Dialect};
use crate::error::{Error, Result};
use crate::integrity::CHECKSUM_MODE_HEADER;
use crate::metrics::{ClientMetrics, Counters};
use crate::pool::{ConnectionPool, PoolSettings, PooledConnection};
use crate::request::{AWS_CHUNK_SIZE, Address, RequestSpec};
use crate::retry::{RetryContext, RetryDecision, is_stale_reuse};

// Defined with the object operations; still public here, where callers first found it.
pub use crate::request::DELETE_BATCH;
// The size from which a body waits for `100 Continue` (at most CONTINUE_WAIT); the request
// builder that decides it is private.
pub use crate::request::EXPECT_CONTINUE_THRESHOLD;

/// How long a request with a large body waits for `100 Continue` before sending the body anyway:
/// 1 s, as botocore (through urllib3) waits. Servers that ignore `Expect` cost this once per request.
pub const CONTINUE_WAIT: Duration = Duration::from_secs(1);

/// The largest error body read to learn the error code: 64 KiB. S3's largest error document
/// (`SignatureDoesNotMatch` with the canonical request and its hex bytes) is a few KiB; a larger body
/// is not an S3 error document, and is not buffered.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// An S3 client. Cheap to clone (an `Arc`); clones share the connection pool and counters.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    /// S3 or Azure Blob: how requests are addressed and signed, and errors read.
    dialect: Dialect,
    pool: ConnectionPool,
    buffers: BufferPool,
    counters: Arc<Counters>,
    /// Multipart objects' part layouts asked for before, by ETag.
    part_layouts: crate::part_layouts::PartLayouts,
}

impl ClientBuilder {
    /// Resolves the configuration (as [`resolve`](Self::resolve)) and builds the client.
    pub fn build(self) -> Result<Client, ConfigError> {
        Client::new(self.resolve()?)
    }
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
        let dialect = match &config.azure {
            Some(azure) => Dialect::Azure(AzureDialect::new(azure.clone())),
            None => Dialect::S3(S3Dialect {
                signer: (!config.anonymous)
                    .then(|| Signer::new(config.credentials.clone(), config.region.clone())),
                addressing: config.addressing,
                region: config.region.clone(),
            }),
        };
        let global = BufferPool::global();
        let buffers = match config.pool_retention {
            Some(bytes) => BufferPool::with_retention(config.memory_budget.clone(), bytes),
            None if config.memory_budget.same_budget(global.budget()) => global.clone(),
            None => BufferPool::new(config.memory_budget.clone()),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                dialect,
                pool,
                buffers,
                counters,
                part_layouts: Default::default(),
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

    /// The part layouts this client has asked for.
    pub(crate) fn part_layouts(&self) -> &crate::part_layouts::PartLayouts {
        &self.inner.part_layouts
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

    /// What the batch read engine ([`crate::batch`]) drives requests with: the connection pool,
    /// the dialect and the counters.
    pub(crate) fn engine_parts(&self) -> (&ConnectionPool, &Dialect, &Counters) {
        (&self.inner.pool, &self.inner.dialect, &self.inner.counters)
    }

    /// The service's dialect.
    pub(crate) fn dialect(&self) -> &Dialect {
        &self.inner.dialect
    }

    /// Whether the client speaks Azure Blob Storage (else S3).
    pub fn is_azure(&self) -> bool {
        self.inner.dialect.azure().is_some()
    }

    /// The SigV4 signer of an S3 client; `None` for an anonymous or an Azure client.
    pub(crate) fn signer(&self) -> Option<&Signer> {
        match &self.inner.dialect {
            Dialect::S3(s3) => s3.signer.as_ref(),
            Dialect::Azure(_) => None,
        }
    }

    pub(crate) fn target(&self, bucket: Option<&str>, key: Option<&str>) -> Address {
        self.inner
            .dialect
            .target(&self.inner.config.endpoint, bucket, key)
    }

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
        let head = self.inner.dialect.head(spec, &target, SystemTime::now())?;
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
        // Whether the body went out: a server that answers before `100 Continue` never got it.
        let mut body_unsent = false;
        let counters = &self.inner.counters;
        let exchange: Result<(), Error> = async {
            let (c, response_head) = conn.parts();
            if !spec.expects_continue() {
                c.queue_request_head(&head);
                write_body(c, spec, counters).await?;
                c.flush().await?;
                return Ok(c.read_response_head(response_head, spec.method).await?);
            }
            c.queue_request_head(&head);
            match c
                .await_continue(response_head, spec.method, CONTINUE_WAIT)
                .await?
            {
                // The server answered without wanting the body: that answer is the response.
                ContinueOutcome::Final => {
                    body_unsent = true;
                    Ok(())
                }
                ContinueOutcome::Continue | ContinueOutcome::TimedOut => {
                    write_body(c, spec, counters).await?;
                    c.flush().await?;
                    Ok(c.read_response_head(response_head, spec.method).await?)
                }
            }
        }
        .await;
        if spec.slow_answer {
            conn.conn().set_head_timeout(usual_head_timeout);
        }
        if let Err(error) = exchange {
            // Nothing of a response arrived on a reused connection: the server closed it while idle.
            let stale_reuse = matches!(&error, Error::Http(e) if is_stale_reuse(reused, false, e));
            return Err(Attempt { error, stale_reuse });
        }
        let mut response = Response { conn };
        let status = response.head().status();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let error = self.error_from(&mut response).await;
        if body_unsent {
            // The server still expects the declared body on this connection (RFC 9110 10.1.1: the
            // client either sends it or closes): the next request must not follow on it.
            drop(response);
        } else {
            // The error body was read to its end (when small): the connection stays usable.
            response.release();
        }
        Err(Attempt::from(error))
    }

    /// Reads an error response's body (bounded) and turns it into an [`Error`].
    pub(crate) async fn error_from(&self, response: &mut Response) -> Error {
        let body = read_error_body(response).await;
        let head = response.head();
        self.inner
            .dialect
            .error(head.status(), head.headers(), body.as_deref())
    }
}

/// Writes `spec`'s body after the queued head: as it is (one vectored write with the head), or
/// aws-chunked with its checksum computed chunk by chunk as the chunks go out and sent as the
/// trailer. The payload is written from where it is in both cases; a file body is sent by
/// [`crate::file_send`].
async fn write_body(
    c: &mut crate::pool::Connection,
    spec: &RequestSpec<'_>,
    counters: &Counters,
) -> Result<()> {
    let Some(trailer) = spec.trailer else {
        return Ok(c.write_body(spec.body).await?);
    };
    if let Some(file) = spec.file {
        return crate::file_send::write_file_body(c, file, trailer, counters).await;
    }
    let mut summer = Checksummer::new(trailer.algorithm.algorithm());
    for chunk in spec.body.chunks(AWS_CHUNK_SIZE) {
        summer.update(chunk);
        c.write_body(UnsignedChunkEncoder::chunk_header(chunk.len() as u64).as_bytes())
            .await?;
        c.write_body(chunk).await?;
        c.write_body(CRLF).await?;
    }
    let value = trailer.outgoing(summer.finalize().to_base64());
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
