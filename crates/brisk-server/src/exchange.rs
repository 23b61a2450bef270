//! One connection's reusable state and the response side of a request: the response head, the XML
//! body buffer, the aws-chunked carry, and the writes (in-memory bodies, and files with `sendfile`).
//! Everything here is allocated once per connection and reused by every request on it, except the
//! scratch buffer, which the server's pool lends to the request that needs one (`scratch.rs`).

use brisk_wire::S3ErrorCode;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::time::{Duration, SystemTime};

use brisk_wire::http::{Headers, HttpError, ResponseHead, canonical_reason};
use brisk_wire::xml::{ErrorDocument, XmlDocument};
use tokio::io::{AsyncWriteExt, Interest};

use crate::body::Connection;
use crate::error::S3Error;
use crate::scratch::{Scratch, ScratchPool};
use crate::store::ObjectBody;

/// Initial capacity of the XML body buffer: a listing page of 1,000 keys is 200–400 KiB, most
/// responses are under 1 KiB; the buffer grows to what the connection needs and stays there.
const INITIAL_XML_BUFFER: usize = 4 * 1024;

/// Most bytes one `sendfile` call is asked to move: 4 MiB, so a large GET yields to other
/// connections between calls instead of holding its worker for a whole object.
const MAX_SENDFILE_CHUNK: usize = 4 << 20;

/// A connection with the buffers its requests reuse.
#[derive(Debug)]
pub struct Exchange {
    pub conn: Connection,
    pub response: ResponseHead,
    /// XML response bodies are written here.
    pub xml: Vec<u8>,
    /// aws-chunked metadata cut across two reads (see `body::MAX_CARRY`).
    pub carry: Vec<u8>,
    /// Bounce buffer of the read+write fallback, of part copies that must be hashed and of durable
    /// bodies' stages: lent by the server's pool on first use in a request and given back when the
    /// request ends ([`release_scratch`](Self::release_scratch)), so an idle connection holds none.
    scratch: Option<Scratch>,
    pool: ScratchPool,
    /// Whether the current response's head went out (an error can then no longer be reported).
    pub response_started: bool,
    /// Whether the connection must end after this response.
    pub closing: bool,
    write_timeout: Duration,
}

impl Exchange {
    pub fn new(conn: Connection, pool: ScratchPool, write_timeout: Duration) -> Self {
        Self {
            conn,
            response: ResponseHead::new(),
            xml: Vec::with_capacity(INITIAL_XML_BUFFER),
            carry: Vec::new(),
            scratch: None,
            pool,
            response_started: false,
            closing: false,
            write_timeout,
        }
    }

    /// Starts a response: status line and the fields every S3 response carries.
    pub fn begin(&mut self, status: u16, request_id: &str) {
        self.response.clear();
        self.response
            .set_status(status, canonical_reason(status))
            .expect("a valid status");
        let h = self.response.headers_mut();
        set(h, "x-amz-request-id", request_id);
        set(h, "x-amz-id-2", request_id);
        set(h, "date", &httpdate::fmt_http_date(SystemTime::now()));
        set(h, "server", "brisk");
        if self.closing {
            set(h, "connection", "close");
        }
    }

    /// The response's fields.
    pub fn headers(&mut self) -> &mut Headers {
        self.response.headers_mut()
    }

    /// Sends the response with an empty body (`Content-Length: 0`).
    pub async fn send_empty(&mut self) -> Result<(), S3Error> {
        self.response.headers_mut().set_content_length(0);
        self.response_started = true;
        self.conn.write_response(&self.response, &[]).await?;
        Ok(())
    }

    /// Sends only the head: for HEAD requests and 304, whose fields describe a body never sent.
    pub async fn send_head_only(&mut self) -> Result<(), S3Error> {
        self.response_started = true;
        self.conn.queue_response_head(&self.response);
        self.conn.flush().await?;
        Ok(())
    }

    /// Serialises `doc` and sends it as an XML body.
    pub async fn send_xml<D: XmlDocument>(&mut self, doc: &D) -> Result<(), S3Error> {
        self.xml.clear();
        doc.write(&mut self.xml)
            .map_err(|e| S3Error::internal(e.to_string()))?;
        self.send_xml_buffer().await
    }

    /// Sends what is in the XML buffer.
    pub async fn send_xml_buffer(&mut self) -> Result<(), S3Error> {
        let h = self.response.headers_mut();
        set(h, "content-type", "application/xml");
        h.set_content_length(self.xml.len() as u64);
        self.response_started = true;
        match self.conn.write_response(&self.response, &self.xml).await {
            Err(HttpError::ConnectionBroken) => self.write_past_broken_framing().await,
            result => Ok(result?),
        }
    }

    /// Writes the response head and XML body straight to the socket. After a read error (a body
    /// that stalled past the request timeout, a malformed chunk) the HTTP layer refuses the
    /// connection because its framing is lost, yet the peer is usually still reading: it gets its
    /// `408 RequestTimeout` or `400` document before the connection closes (the head says
    /// `Connection: close`, since such a connection is never reusable). Error path only: the bytes
    /// are assembled in a buffer of their own.
    async fn write_past_broken_framing(&mut self) -> Result<(), S3Error> {
        let mut wire = Vec::with_capacity(self.xml.len() + 1024);
        self.response.write_to(&mut wire);
        wire.extend_from_slice(&self.xml);
        let stream = self.conn.get_mut();
        within(self.write_timeout, async {
            stream.write_all(&wire).await?;
            stream.flush().await
        })
        .await
    }

    /// Sends an S3 error document (head only for HEAD requests, as S3 does).
    pub async fn send_error(
        &mut self,
        error: &S3Error,
        resource: &str,
        request_id: &str,
        head_request: bool,
    ) -> Result<(), S3Error> {
        self.begin(error.status, request_id);
        if head_request {
            self.response.headers_mut().set_content_length(0);
            return self.send_head_only().await;
        }
        let doc = ErrorDocument {
            code: error.code.as_str().to_owned(),
            message: error.message.clone(),
            resource: Some(resource.to_owned()),
            request_id: Some(request_id.to_owned()),
            host_id: None,
            extra: error.extra.clone(),
        };
        self.send_xml(&doc).await
    }

    /// Sends the bytes `span` of `body` as the response body (the head, with its Content-Length,
    /// must be set). The head is flushed, then the kernel moves the bytes file → socket with
    /// `sendfile`, one data file after the other for a body made of several; if the file system
    /// does not support it, a read+write loop through the scratch buffer takes over.
    pub async fn send_body(&mut self, body: &ObjectBody, span: Range<u64>) -> Result<(), S3Error> {
        self.response_started = true;
        self.conn.queue_response_head(&self.response);
        if span.is_empty() {
            self.conn.flush().await?;
        } else {
            self.send_head_before_body().await?;
        }
        let mut sent = 0;
        for (file, offset, len) in body.pieces(span.clone()) {
            self.send_file_range(file, offset, len).await?;
            sent += len;
        }
        if sent != span.end - span.start {
            return Err(S3Error::internal("object body ended early"));
        }
        Ok(())
    }

    /// Sends the queued response head with `MSG_MORE`: the kernel holds it until the body's first
    /// bytes join it, and the `sendfile` that follows ends with a push. Head and body start in one
    /// segment: one packet, and one wake-up of the client, fewer per response than a head flushed
    /// on its own (with `TCP_NODELAY` that head left at once, alone).
    async fn send_head_before_body(&mut self) -> Result<(), S3Error> {
        if self.conn.get_ref().plain().is_none() {
            // TLS: the head is encrypted and sent as it is; the body's records follow.
            self.conn.flush().await?;
            return Ok(());
        }
        while !self.conn.queued_output().is_empty() {
            let stream = self.conn.get_ref().plain().expect("a plain connection");
            within(self.write_timeout, stream.writable()).await?;
            let head = self.conn.queued_output();
            let sent = stream.try_io(Interest::WRITABLE, || {
                rustix::net::send(stream, head, rustix::net::SendFlags::MORE)
                    .map_err(io::Error::from)
            });
            match sent {
                Ok(n) => self.conn.output_sent(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// `sendfile` of `len` bytes of `file` from `offset`, after the head.
    async fn send_file_range(&mut self, file: &File, offset: u64, len: u64) -> Result<(), S3Error> {
        if self.conn.get_ref().plain().is_none() {
            // TLS is encrypted in user space: the bytes must pass through it.
            return self.copy_file(file, offset, len).await;
        }
        let end = offset + len;
        let mut position = offset;
        while position < end {
            let count = usize::try_from(end - position)
                .unwrap_or(usize::MAX)
                .min(MAX_SENDFILE_CHUNK);
            let stream = self.conn.get_ref().plain().expect("a plain connection");
            within(self.write_timeout, stream.writable()).await?;
            let sent = stream.try_io(Interest::WRITABLE, || {
                rustix::fs::sendfile(stream, file, Some(&mut position), count)
                    .map_err(io::Error::from)
            });
            match sent {
                Ok(0) => {
                    return Err(S3Error::internal("object file ended early"));
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc_errno::EINVAL | libc_errno::ENOSYS)
                    ) =>
                {
                    return self.copy_file(file, position, end - position).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn copy_file(&mut self, file: &File, offset: u64, len: u64) -> Result<(), S3Error> {
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        let mut lent = self.take_scratch()?;
        let scratch = self.pool.slice(&mut lent);
        let mut left = len;
        let copied = async {
            while left > 0 {
                let want = usize::try_from(left)
                    .unwrap_or(usize::MAX)
                    .min(scratch.len());
                let n = file.read(&mut scratch[..want])?;
                if n == 0 {
                    return Err(S3Error::internal("object file ended early"));
                }
                within(
                    self.write_timeout,
                    self.conn.get_mut().write_all(&scratch[..n]),
                )
                .await?;
                left -= n as u64;
            }
            Ok(())
        }
        .await;
        self.put_scratch(lent);
        copied?;
        // A TLS stream may hold the last record until flushed.
        within(self.write_timeout, self.conn.get_mut().flush()).await
    }

    /// The scratch buffer moved out, for use beside `conn` (give it back with
    /// [`put_scratch`](Self::put_scratch); [`scratch_slice`](Self::scratch_slice) is the part to
    /// use): lent by the server's pool if this request has none yet.
    pub fn take_scratch(&mut self) -> io::Result<Scratch> {
        match self.scratch.take() {
            Some(scratch) => Ok(scratch),
            None => self.pool.take(),
        }
    }

    /// The part of a lent scratch buffer to use: the read buffer's size and one
    /// [`ALIGN`](crate::direct::ALIGN) block, page-aligned, so an aligned stage of that size fits
    /// (see `direct.rs`).
    pub fn scratch_slice<'a>(&self, scratch: &'a mut Scratch) -> &'a mut [u8] {
        self.pool.slice(scratch)
    }

    /// Returns the buffer [`take_scratch`](Self::take_scratch) lent, for the rest of the request.
    pub fn put_scratch(&mut self, scratch: Scratch) {
        self.scratch = Some(scratch);
    }

    /// Gives the scratch buffer back to the server's pool: the request that used it has ended.
    /// (Dropping the exchange gives it back too.)
    pub fn release_scratch(&mut self) {
        self.scratch = None;
    }
}

/// The errno values that mean "sendfile can not do this here"; rustix's `Errno` gives them as raw
/// OS errors.
mod libc_errno {
    pub const EINVAL: i32 = 22;
    pub const ENOSYS: i32 = 38;
}

/// Runs `write` within the write timeout: a client that takes nothing for that long is answered
/// with the timeout's error instead of holding the connection.
async fn within<T>(
    timeout: Duration,
    write: impl Future<Output = io::Result<T>>,
) -> Result<T, S3Error> {
    Ok(tokio::time::timeout(timeout, write)
        .await
        .map_err(|_| write_stalled(timeout))??)
}

fn write_stalled(timeout: Duration) -> S3Error {
    S3Error::at_status(
        S3ErrorCode::RequestTimeout,
        408,
        format!("the client read nothing for {timeout:?}"),
    )
}

/// Sets a field whose value is known to be valid.
pub fn set(headers: &mut Headers, name: &str, value: &str) {
    headers
        .set(name, value)
        .expect("server-generated header fields are valid");
}
