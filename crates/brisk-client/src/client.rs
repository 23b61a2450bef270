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
//! ([`crate::copy`]), transfers ([`crate::transfer`], [`crate::upload_stream`]), streams
//! ([`crate::stream`]), batch reads ([`crate::batch`]) and presigned URLs.
//!
//! # Retries
//!
//! A request that fails before its body is read is retried as [`RetryPolicy`](crate::RetryPolicy)
//! says. A kept-alive connection that the server had closed while it sat idle is not the server
//! failing: the request goes once more, at once, on a new connection.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::io::Interest;

use brisk_mem::{BufferPool, MemoryBudget, PooledBlock};
use brisk_wire::checksum::Checksummer;
use brisk_wire::http::{BodyFraming, ContinueOutcome, HttpError, ResponseHead};
use brisk_wire::sigv4::chunked::CRLF;
use brisk_wire::sigv4::{Signer, UnsignedChunkEncoder};

use crate::config::{ClientBuilder, ClientConfig, ConfigError, Scheme};
use crate::dialect::{AzureDialect, Dialect, S3Dialect};
use crate::error::{Error, Result};
use crate::integrity::CHECKSUM_MODE_HEADER;
use crate::metrics::{ClientMetrics, Counters};
use crate::pool::Transport;
use crate::pool::{ConnectionPool, PoolSettings, PooledConnection};
use crate::request::{
    AWS_CHUNK_SIZE, FILE_SCRATCH_SIZE, FileBody, RequestSpec, Target, TrailingChecksum,
    expects_continue,
};
use crate::retry::{RetryContext, RetryDecision, is_stale_reuse};

// Defined with the object operations; still public here, where callers first found it.
pub use crate::objects::DELETE_BATCH;
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

    pub(crate) fn target(&self, bucket: Option<&str>, key: Option<&str>) -> Target {
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
            if !expects_continue(spec.body_len()) {
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
/// [`write_file_body`].
async fn write_body(
    c: &mut crate::pool::Connection,
    spec: &RequestSpec<'_>,
    counters: &Counters,
) -> Result<()> {
    let Some(trailer) = spec.trailer else {
        return Ok(c.write_body(spec.body).await?);
    };
    if let Some(file) = spec.file {
        return write_file_body(c, file, trailer, counters).await;
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

/// Sends a file range aws-chunked with its checksum as the trailer. For each chunk: the chunk's
/// bytes are read through a small scratch block on the blocking pool and summed there while they
/// are in the CPU's cache (the read is also the read-ahead: the bytes are in the page cache
/// afterwards, so the send that follows does not wait for a disk on the async worker); then the
/// chunk's size line goes out with `MSG_MORE` and the kernel sends the chunk from the page cache
/// with `sendfile`, with no copy through user space. Over TLS, or where the file system has no
/// `sendfile`, the chunk is read again into the scratch block and written from there.
async fn write_file_body(
    c: &mut crate::pool::Connection,
    body: &FileBody,
    trailer: &TrailingChecksum,
    counters: &Counters,
) -> Result<()> {
    let mut scratch = body.pool.get(FILE_SCRATCH_SIZE).await?;
    let mut summer = Checksummer::new(trailer.algorithm.algorithm());
    let mut sendfile_works = matches!(c.get_ref(), Transport::Tcp(_));
    let end = body.offset + body.len;
    let mut at = body.offset;
    // Bounded: each pass moves `at` forward by one chunk of at least one byte.
    while at < end {
        let len = (end - at).min(AWS_CHUNK_SIZE as u64) as usize;
        let summed;
        (scratch, summer, summed) = sum_file_range(body, at, len, scratch, summer).await?;
        summed.map_err(|e| file_read_error(body, e))?;
        Counters::add_bytes(&counters.file_bytes_read, len as u64);
        // The previous chunk's CRLF and this chunk's size line, in one small write.
        let mut framing = [0u8; 2 + MAX_CHUNK_HEADER];
        let mut n = 0;
        if at > body.offset {
            framing[..2].copy_from_slice(CRLF);
            n = 2;
        }
        let header = UnsignedChunkEncoder::chunk_header(len as u64);
        framing[n..n + header.as_bytes().len()].copy_from_slice(header.as_bytes());
        n += header.as_bytes().len();
        let mut copy_from = at;
        if sendfile_works {
            send_more(c, &framing[..n]).await?;
            let Transport::Tcp(stream) = c.get_ref() else {
                unreachable!("sendfile is tried on plain TCP only")
            };
            match sendfile_range(stream, &body.file, at, len as u64).await {
                Ok(None) => {
                    Counters::add_bytes(&counters.file_bytes_sent, len as u64);
                    copy_from = at + len as u64;
                }
                Ok(Some(unsent_from)) => {
                    Counters::add_bytes(&counters.file_bytes_sent, unsent_from - at);
                    sendfile_works = false;
                    copy_from = unsent_from;
                }
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return Err(file_read_error(body, e));
                }
                Err(e) => return Err(HttpError::Io(e).into()),
            }
        } else {
            c.write_body(&framing[..n]).await?;
        }
        scratch = copy_file_range(c, body, copy_from, at + len as u64, scratch, counters).await?;
        at += len as u64;
    }
    drop(scratch);
    let value = trailer.outgoing(summer.finalize().to_base64());
    let mut last = if body.len > 0 {
        CRLF.to_vec()
    } else {
        Vec::new()
    };
    last.extend_from_slice(
        &UnsignedChunkEncoder::final_chunk_with_trailers(&[(
            trailer.algorithm.algorithm().header_name(),
            &value,
        )])
        .expect("a checksum header name and a base64 value are a valid trailer"),
    );
    c.write_body(&last).await?;
    trailer.set(value);
    Ok(())
}

/// The longest chunk size line: 16 hex digits and CRLF.
const MAX_CHUNK_HEADER: usize = 18;

fn file_read_error(body: &FileBody, source: std::io::Error) -> Error {
    Error::File {
        what: format!("reading {}", body.path.display()),
        source,
    }
}

/// Reads `len` bytes of the body's file at `at` through `scratch`, one `pread` of at most the
/// scratch block's size at a time, and adds them to `summer`, on the blocking pool (file reads
/// block); the block and the checksum state move to the blocking thread and back.
async fn sum_file_range(
    body: &FileBody,
    at: u64,
    len: usize,
    mut scratch: PooledBlock,
    mut summer: Checksummer,
) -> Result<(PooledBlock, Checksummer, std::io::Result<()>)> {
    use std::os::unix::fs::FileExt;
    let file = Arc::clone(&body.file);
    tokio::task::spawn_blocking(move || {
        let piece = scratch.len().min(FILE_SCRATCH_SIZE);
        let mut done = 0;
        let mut result = Ok(());
        while done < len {
            let n = piece.min(len - done);
            if let Err(e) = file.read_exact_at(&mut scratch[..n], at + done as u64) {
                result = Err(e);
                break;
            }
            summer.update(&scratch[..n]);
            done += n;
        }
        (scratch, summer, result)
    })
    .await
    .map_err(|e| Error::UnexpectedResponse {
        what: format!("file read task failed: {e}"),
    })
}

/// Writes the body's file from `from` to `to` through `scratch` (TLS, or no `sendfile`): each piece
/// read on the blocking pool, then written.
async fn copy_file_range(
    c: &mut crate::pool::Connection,
    body: &FileBody,
    mut from: u64,
    to: u64,
    mut scratch: PooledBlock,
    counters: &Counters,
) -> Result<PooledBlock> {
    use std::os::unix::fs::FileExt;
    // Bounded: each pass moves `from` forward by one piece of at least one byte.
    while from < to {
        let n = (to - from).min(scratch.len().min(FILE_SCRATCH_SIZE) as u64) as usize;
        let file = Arc::clone(&body.file);
        let read;
        (scratch, read) = tokio::task::spawn_blocking(move || {
            let read = file.read_exact_at(&mut scratch[..n], from);
            (scratch, read)
        })
        .await
        .map_err(|e| Error::UnexpectedResponse {
            what: format!("file read task failed: {e}"),
        })?;
        read.map_err(|e| file_read_error(body, e))?;
        Counters::add_bytes(&counters.file_bytes_read, n as u64);
        c.write_body(&scratch[..n]).await?;
        from += n as u64;
    }
    Ok(scratch)
}

/// Sends whatever the connection has queued (the request head, when it did not wait for `100
/// Continue`) and then `bytes`, with `MSG_MORE`: the kernel holds them until the `sendfile` that
/// follows adds the chunk's bytes, so a size line does not leave in a packet of its own.
async fn send_more(c: &mut crate::pool::Connection, bytes: &[u8]) -> Result<()> {
    // Bounded: each pass sends at least one byte or waits for the socket to take more.
    while !c.queued_output().is_empty() {
        let n = send_more_once(c, c.queued_output()).await?;
        c.output_sent(n);
    }
    let mut sent = 0;
    while sent < bytes.len() {
        sent += send_more_once(c, &bytes[sent..]).await?;
    }
    Ok(())
}

/// One `send` with `MSG_MORE` once the socket is writable; 0 bytes when it was not after all.
async fn send_more_once(c: &crate::pool::Connection, bytes: &[u8]) -> Result<usize> {
    let Transport::Tcp(stream) = c.get_ref() else {
        unreachable!("MSG_MORE is used on plain TCP only")
    };
    stream.writable().await.map_err(HttpError::Io)?;
    match stream.try_io(Interest::WRITABLE, || {
        rustix::net::send(stream, bytes, rustix::net::SendFlags::MORE).map_err(std::io::Error::from)
    }) {
        Ok(n) => Ok(n),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(HttpError::Io(e).into()),
    }
}

/// `sendfile` of `len` bytes of `file` from `offset` to `stream`. `Ok(Some(position))` when the
/// file system does not support `sendfile` (`EINVAL`/`ENOSYS`) after the bytes before `position`
/// went out; an error of kind `UnexpectedEof` when the file is shorter than it was.
async fn sendfile_range(
    stream: &tokio::net::TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
) -> std::io::Result<Option<u64>> {
    // "sendfile can not do this here".
    let unsupported =
        [rustix::io::Errno::INVAL, rustix::io::Errno::NOSYS].map(|e| e.raw_os_error());
    let end = offset + len;
    let mut position = offset;
    // Bounded: each pass sends at least one byte, waits for the socket, or ends.
    while position < end {
        stream.writable().await?;
        let count = usize::try_from(end - position).unwrap_or(usize::MAX);
        match stream.try_io(Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, file, Some(&mut position), count)
                .map_err(std::io::Error::from)
        }) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the file ended at {position}, before {end}"),
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.raw_os_error().is_some_and(|n| unsupported.contains(&n)) => {
                return Ok(Some(position));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
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

#[cfg(test)]
mod file_body_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use brisk_testkit::minio::MinioProcess;
    use brisk_testkit::serve::InProcessServe;
    use brisk_wire::sigv4::Credentials;

    use super::*;
    use crate::RetryPolicy;
    use crate::integrity::UploadChecksum;

    fn client_of(endpoint: &str) -> Client {
        Client::builder()
            .endpoint(endpoint)
            .region(brisk_testkit::REGION)
            .credentials(Credentials::new(
                brisk_testkit::ACCESS_KEY,
                brisk_testkit::SECRET_KEY,
            ))
            .retry(RetryPolicy {
                max_attempts: 1,
                initial_backoff: Duration::from_millis(5),
                max_backoff: Duration::from_millis(5),
            })
            .build()
            .unwrap()
    }

    /// A file body whose trailer does not match its bytes is refused and stores nothing; the same
    /// body with its true trailer is stored.
    async fn a_wrong_trailer_is_refused(endpoint: &str, bucket: &str) {
        let client = client_of(endpoint);
        client.create_bucket(bucket).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..2 * AWS_CHUNK_SIZE + 3)
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        let body = FileBody::new(file, &path, 0, bytes.len() as u64, client.buffer_pool());

        let mut trailer = TrailingChecksum::new(UploadChecksum::Crc32c);
        trailer.corrupt = true;
        let spec =
            RequestSpec::new("PUT", Some(bucket), Some("k")).aws_chunked_file(&body, &trailer);
        let error = client.send(&spec).await.map(|_| ()).unwrap_err();
        let refused = error.service_error().expect("a refusal by the server");
        assert_eq!(refused.status, 400, "{error}");
        assert!(
            matches!(client.head(bucket, "k").await, Err(Error::NoSuchKey(_))),
            "nothing was stored"
        );

        let trailer = TrailingChecksum::new(UploadChecksum::Crc32c);
        let spec =
            RequestSpec::new("PUT", Some(bucket), Some("k")).aws_chunked_file(&body, &trailer);
        let response = client.send(&spec).await.unwrap();
        crate::client::finish(response).await.unwrap();
        assert_eq!(
            trailer.value().as_deref(),
            Some(UploadChecksum::Crc32c.compute(&bytes).as_str())
        );
        assert!(client.get_bytes(bucket, "k").await.unwrap()[..] == bytes[..]);
    }

    #[tokio::test]
    async fn a_wrong_trailer_is_refused_by_brisk_serve() {
        let serve = InProcessServe::start(false);
        a_wrong_trailer_is_refused(&serve.url, "trailer").await;
    }

    #[tokio::test]
    async fn a_wrong_trailer_is_refused_by_minio() {
        let minio = MinioProcess::until_exit().unwrap_or_else(|e| panic!("starting MinIO: {e}"));
        a_wrong_trailer_is_refused(&minio.url, &format!("trailer-{}", std::process::id())).await;
    }
}
