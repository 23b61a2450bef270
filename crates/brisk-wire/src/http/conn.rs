//! One HTTP/1.1 connection over any tokio stream (TCP, or TLS wrapping it), for either end.
//!
//! # The read buffer
//!
//! Each connection owns one read buffer, allocated once at [`ConnectionConfig::read_buffer_size`]
//! (default [`DEFAULT_READ_BUFFER_SIZE`]) and reused for every message: heads are parsed in it, body
//! bytes pass through it, and bytes read past the end of a message (pipelined requests) stay in it for
//! the next head. It grows only if a head does not fit, once, to at most
//! [`Limits::max_head_bytes`]; it never shrinks or grows while a body is read.
//!
//! # Body paths
//!
//! - [`HttpConnection::read_body`] copies payload already in the read buffer into the caller's slice,
//!   and once the buffer is empty reads *straight from the stream into the caller's slice* (when the
//!   slice is at least as large as the read buffer), bounded by the payload left in the current chunk
//!   or body so that no byte of the next message is consumed. A body much larger than the read buffer
//!   therefore crosses user space once.
//! - [`HttpConnection::body_chunk`] hands out payload slices of the read buffer itself, for a caller
//!   that writes them on (the server: buffer → file), again without an extra copy.
//!
//! # `Expect: 100-continue`
//!
//! A server sends `100 Continue` only when it starts reading the body (or calls
//! [`send_continue`](HttpConnection::send_continue)); if it answers without reading, the client never
//! sent the body, so the connection can not be reused. A client sends the head, waits for `100` with
//! [`await_continue`](HttpConnection::await_continue) for a bounded time, and sends the body anyway
//! after it (RFC 9110 §10.1.1).
//!
//! # Writes
//!
//! Heads are serialised into a reusable write buffer and go out together with the first body bytes in
//! one vectored write (or on [`flush`](HttpConnection::flush)); body bytes are written from where they
//! are, and chunked framing comes from a stack buffer ([`ChunkHeader`]).

use std::io::IoSlice;
use std::ops::Range;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::body::BodyFraming;
use super::chunked::{CHUNK_END, ChunkHeader, ChunkedDecoder, write_last_chunk};
use super::error::HttpError;
use super::head::{ParseStatus, RequestHead, ResponseHead, check_start_line};
use super::headers::Headers;
use super::limits::Limits;
use crate::framing::{BodyDecoder, Decoded, FramingError, LengthDecoder};

/// Default read buffer per connection: 64 KiB.
///
/// Large enough that a read returns what a loopback or LAN socket has ready in one system call (the
/// Linux default socket receive buffer starts around 128 KiB), small enough that thousands of idle
/// keep-alive connections cost little. It is a tunable the benchmark sweeps (4 KiB to 1 MiB); reads into
/// a caller's large destination bypass it anyway.
pub const DEFAULT_READ_BUFFER_SIZE: usize = 64 * 1024;

/// Smallest read buffer accepted: 64 bytes. Smaller buffers still work (the chunked decoder progresses
/// on any split and heads grow the buffer), they only cost more system calls.
pub const MIN_READ_BUFFER_SIZE: usize = 64;

/// Initial size of the write buffer that holds a serialised head: 1 KiB, enough for an S3 request head
/// with SigV4 fields (600 to 900 bytes) or a response head, so it is allocated once and rarely grows.
const INITIAL_WRITE_BUFFER: usize = 1024;

/// The wire form of the interim response a server sends to let a client's body come.
const CONTINUE_RESPONSE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// How a connection is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// Size of the connection's read buffer (at least [`MIN_READ_BUFFER_SIZE`]).
    pub read_buffer_size: usize,
    /// The bounds on heads, bodies and waits.
    pub limits: Limits,
    /// A connection that has waited this long for the next head with nothing buffered gives its
    /// read buffer's pages back to the kernel (`MADV_DONTNEED`: the buffer stays allocated and reads
    /// as zeros; the next read faults in what it fills). `None` (the default) keeps them. For a
    /// server with many keep-alive connections: each otherwise keeps the pages its reads touched
    /// for as long as it stays open.
    pub release_idle_buffer_after: Option<Duration>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            read_buffer_size: DEFAULT_READ_BUFFER_SIZE,
            limits: Limits::default(),
            release_idle_buffer_after: None,
        }
    }
}

/// What a client learnt while waiting for `100 Continue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContinueOutcome {
    /// The server sent `100 Continue`: send the body.
    Continue,
    /// Nothing came in time: send the body anyway; a late `100` is skipped by
    /// [`read_response_head`](HttpConnection::read_response_head).
    TimedOut,
    /// The server answered with a final response (now in the head passed in) without wanting the
    /// body. Do not send it; the connection will not be reused.
    Final,
}

/// The body being received.
#[derive(Debug)]
enum BodyKind {
    None,
    Length {
        decoder: LengthDecoder,
        declared: u64,
    },
    Chunked,
    UntilClose {
        done: bool,
    },
}

/// The incoming body's decoder and progress; the chunked decoder is kept for reuse.
#[derive(Debug)]
struct IncomingBody {
    kind: BodyKind,
    chunked: ChunkedDecoder,
    framing: BodyFraming,
    received: u64,
    /// When the body began (its head was read): [`Limits::min_body_rate`] is measured from here.
    started: Option<std::time::Instant>,
}

impl IncomingBody {
    fn new(limits: &Limits) -> Self {
        Self {
            kind: BodyKind::None,
            chunked: ChunkedDecoder::new(limits),
            framing: BodyFraming::Empty,
            received: 0,
            started: None,
        }
    }

    fn start(&mut self, framing: BodyFraming) {
        self.framing = framing;
        self.received = 0;
        self.started = Some(std::time::Instant::now());
        self.kind = match framing {
            BodyFraming::Empty => BodyKind::None,
            BodyFraming::ContentLength(n) => BodyKind::Length {
                decoder: LengthDecoder::new(n),
                declared: n,
            },
            BodyFraming::Chunked => {
                self.chunked.reset();
                BodyKind::Chunked
            }
            BodyFraming::UntilClose => BodyKind::UntilClose { done: false },
        };
    }

    fn is_done(&self) -> bool {
        match &self.kind {
            BodyKind::None => true,
            BodyKind::Length { decoder, .. } => decoder.is_done(),
            BodyKind::Chunked => self.chunked.is_done(),
            BodyKind::UntilClose { done } => *done,
        }
    }

    fn data_remaining(&self) -> u64 {
        match &self.kind {
            BodyKind::None => 0,
            BodyKind::Length { decoder, .. } => decoder.data_remaining(),
            BodyKind::Chunked => self.chunked.data_remaining(),
            BodyKind::UntilClose { done } => {
                if *done {
                    0
                } else {
                    u64::MAX
                }
            }
        }
    }

    fn decode(&mut self, input: &[u8]) -> Result<Decoded, FramingError> {
        let decoded = match &mut self.kind {
            BodyKind::None => Decoded::default(),
            BodyKind::Length { decoder, .. } => decoder.decode(input)?,
            BodyKind::Chunked => self.chunked.decode(input)?,
            BodyKind::UntilClose { .. } => Decoded {
                consumed: input.len(),
                data: 0..input.len(),
            },
        };
        self.received += decoded.data.len() as u64;
        Ok(decoded)
    }

    fn advance_data(&mut self, data: &[u8]) -> Result<(), FramingError> {
        match &mut self.kind {
            BodyKind::None => {
                if !data.is_empty() {
                    return Err(FramingError::LengthMismatch {
                        declared: 0,
                        actual: data.len() as u64,
                    });
                }
            }
            BodyKind::Length { decoder, .. } => decoder.advance_data(data)?,
            BodyKind::Chunked => self.chunked.advance_data(data)?,
            BodyKind::UntilClose { .. } => {}
        }
        self.received += data.len() as u64;
        Ok(())
    }

    /// The stream ended while the body was not done: the end of an until-close body, an error for the
    /// others.
    fn on_eof(&mut self) -> Result<(), HttpError> {
        match &mut self.kind {
            BodyKind::UntilClose { done } => {
                *done = true;
                Ok(())
            }
            BodyKind::Length { declared, .. } => Err(HttpError::UnexpectedEof {
                expected: *declared,
                received: self.received,
            }),
            BodyKind::Chunked => Err(HttpError::TruncatedChunkedBody {
                received: self.received,
            }),
            BodyKind::None => Ok(()),
        }
    }
}

/// Parsing shared by request and response heads.
trait ParseHead {
    fn parse_head(&mut self, input: &[u8], limits: &Limits) -> Result<ParseStatus, HttpError>;
}

impl ParseHead for RequestHead {
    fn parse_head(&mut self, input: &[u8], limits: &Limits) -> Result<ParseStatus, HttpError> {
        self.parse(input, limits)
    }
}

impl ParseHead for ResponseHead {
    fn parse_head(&mut self, input: &[u8], limits: &Limits) -> Result<ParseStatus, HttpError> {
        self.parse(input, limits)
    }
}

/// An HTTP/1.1 connection over `S`, usable as the client or the server end. See the module
/// documentation for its buffers and body paths.
#[derive(Debug)]
pub struct HttpConnection<S> {
    stream: S,
    limits: Limits,
    /// The read buffer; its whole length is usable (allocated and zeroed once).
    buf: Vec<u8>,
    /// Buffered bytes not yet consumed: `buf[start..end]`.
    start: usize,
    end: usize,
    /// Payload already passed through the decoder but not yet handed to the caller (a sub-range of
    /// `buf[..start]`).
    pending: Range<usize>,
    incoming: IncomingBody,
    /// Serialised head (and chunk framing) waiting to go out with the next write.
    write_buf: Vec<u8>,
    /// Server: the request expects `100 Continue`, which has not been sent yet.
    continue_pending: bool,
    /// The peer will not send (or was not sent) the rest of the exchange: the connection ends after
    /// the current message.
    must_close: bool,
    read_eof: bool,
    broken: bool,
    /// Client: the most bytes one read of the next response head takes from the socket (see
    /// [`HttpConnection::limit_next_head_read`]).
    head_read_limit: Option<usize>,
    /// See [`ConnectionConfig::release_idle_buffer_after`].
    release_idle_buffer_after: Option<Duration>,
    /// The read buffer's pages were given back and nothing has been read since.
    buffer_released: bool,
    /// Times the read buffer's pages were given back.
    idle_releases: u64,
}

/// The smallest head read [`HttpConnection::limit_next_head_read`] allows: 4 KiB holds the head of
/// any S3 response to a GET (a few hundred bytes to 1 KiB), so one read still takes a whole head.
pub const MIN_HEAD_READ: usize = 4096;

impl<S> HttpConnection<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// A connection with the default configuration.
    pub fn new(stream: S) -> Self {
        Self::with_config(stream, ConnectionConfig::default())
    }

    /// A connection with its read buffer of `config.read_buffer_size` bytes, allocated now.
    pub fn with_config(stream: S, config: ConnectionConfig) -> Self {
        let size = config.read_buffer_size.max(MIN_READ_BUFFER_SIZE);
        Self {
            stream,
            incoming: IncomingBody::new(&config.limits),
            limits: config.limits,
            buf: vec![0; size],
            start: 0,
            end: 0,
            pending: 0..0,
            write_buf: Vec::with_capacity(INITIAL_WRITE_BUFFER),
            continue_pending: false,
            must_close: false,
            read_eof: false,
            broken: false,
            head_read_limit: None,
            release_idle_buffer_after: config.release_idle_buffer_after,
            buffer_released: false,
            idle_releases: 0,
        }
    }

    /// Times this connection gave its idle read buffer's pages back to the kernel (see
    /// [`ConnectionConfig::release_idle_buffer_after`]).
    pub fn idle_releases(&self) -> u64 {
        self.idle_releases
    }

    /// Client: the reads of the next response head take at most `limit` bytes (at least
    /// [`MIN_HEAD_READ`]) from the socket, instead of all the read buffer can hold. For a response
    /// whose body is larger than the read buffer: a full-buffer read would pull up to a buffer of
    /// its body in with the head, to be copied into the destination a second time, whereas the body
    /// after a short head read goes from the socket straight into the destination. With pipelined
    /// responses waiting in the socket this is what every head read would otherwise do. Applies to
    /// the next head only.
    pub fn limit_next_head_read(&mut self, limit: usize) {
        self.head_read_limit = Some(limit.max(MIN_HEAD_READ));
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Changes how long a head may take to arrive, for the exchanges whose answer is known to come
    /// late (an S3 CompleteMultipartUpload or CopyObject is answered only once the server has
    /// assembled or copied the object). The caller sets it back for the next exchange.
    pub fn set_head_timeout(&mut self, timeout: Option<Duration>) {
        self.limits.head_timeout = timeout;
    }

    /// The read buffer's current size.
    pub fn read_buffer_capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes read from the stream but not consumed yet (the start of the next message, when pipelined).
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The underlying stream, mutably. Reading from it directly desynchronises the connection.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Gives the stream back; bytes in [`buffered`](Self::buffered) are lost.
    pub fn into_inner(self) -> S {
        self.stream
    }

    /// How the body of the last head read is framed.
    pub fn incoming_framing(&self) -> BodyFraming {
        self.incoming.framing
    }

    /// Payload bytes of the current incoming body received so far.
    pub fn body_received(&self) -> u64 {
        self.incoming.received
    }

    /// Whether the whole incoming body has been received (always true without a body).
    pub fn body_done(&self) -> bool {
        self.incoming.is_done() && self.pending.is_empty()
    }

    /// The trailers of a chunked body, once it has been read to its end.
    pub fn trailers(&self) -> Option<&Headers> {
        match self.incoming.kind {
            BodyKind::Chunked => self.incoming.chunked.trailers(),
            _ => None,
        }
    }

    /// Whether another message can follow on this connection as far as framing goes: no error, the
    /// peer has not closed, the current body is complete and nothing was left unsent. The
    /// `Connection` fields are the caller's to check ([`RequestHead::keep_alive`]).
    pub fn is_reusable(&self) -> bool {
        !self.broken && !self.read_eof && !self.must_close && self.body_done()
    }

    fn check_usable(&self) -> Result<(), HttpError> {
        if self.broken {
            return Err(HttpError::ConnectionBroken);
        }
        Ok(())
    }

    /// Marks the connection broken when `result` is an error.
    fn track<T>(&mut self, result: Result<T, HttpError>) -> Result<T, HttpError> {
        if result.is_err() {
            self.broken = true;
        }
        result
    }

    // ----- heads -------------------------------------------------------------------------------

    /// Server: reads the next request head into `head` and prepares its body. Returns `Ok(false)`
    /// when the peer closed the connection cleanly between requests.
    ///
    /// An unread body of the previous request is drained first (up to
    /// [`Limits::max_drain_bytes`]); if it can not be, this fails with [`HttpError::UndrainedBody`]
    /// and the connection must be closed. The whole head must arrive within
    /// [`Limits::head_timeout`], waiting time for an idle keep-alive connection included.
    pub async fn read_request_head(&mut self, head: &mut RequestHead) -> Result<bool, HttpError> {
        self.check_usable()?;
        self.finish_previous_body().await?;
        let result = self.read_head_with_timeout(head).await;
        let got = self.track(result)?;
        if !got {
            return Ok(false);
        }
        let framing = head.body_framing();
        let framing = self.track(framing)?;
        self.incoming.start(framing);
        self.continue_pending = head.expects_continue() && framing != BodyFraming::Empty;
        self.must_close = false;
        Ok(true)
    }

    /// Client: reads the response to a `request_method` request into `head`, skipping interim `1xx`
    /// responses (a late `100 Continue`, `103 Early Hints`), and prepares its body.
    pub async fn read_response_head(
        &mut self,
        head: &mut ResponseHead,
        request_method: &str,
    ) -> Result<(), HttpError> {
        self.check_usable()?;
        self.finish_previous_body().await?;
        let result = self.read_final_response(head, request_method).await;
        self.head_read_limit = None;
        self.track(result)
    }

    async fn read_final_response(
        &mut self,
        head: &mut ResponseHead,
        request_method: &str,
    ) -> Result<(), HttpError> {
        loop {
            if !self.read_head_with_timeout(head).await? {
                return Err(HttpError::IncompleteHead { received: 0 });
            }
            if head.is_interim() && head.status() != 101 {
                continue;
            }
            self.incoming.start(head.body_framing(request_method)?);
            return Ok(());
        }
    }

    /// Client: sends the queued request head (which carries `Expect: 100-continue`) and waits up to
    /// `wait` for the server's `100 Continue`. See [`ContinueOutcome`] for what to do next.
    pub async fn await_continue(
        &mut self,
        head: &mut ResponseHead,
        request_method: &str,
        wait: Duration,
    ) -> Result<ContinueOutcome, HttpError> {
        self.check_usable()?;
        self.flush().await?;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let read = tokio::time::timeout_at(deadline, self.read_head(head)).await;
            let got = match read {
                Err(_elapsed) => return Ok(ContinueOutcome::TimedOut),
                Ok(result) => self.track(result)?,
            };
            if !got {
                self.broken = true;
                return Err(HttpError::IncompleteHead { received: 0 });
            }
            if head.status() == 100 {
                return Ok(ContinueOutcome::Continue);
            }
            if head.is_interim() && head.status() != 101 {
                continue;
            }
            let framing = head.body_framing(request_method);
            let framing = self.track(framing)?;
            self.incoming.start(framing);
            self.must_close = true;
            return Ok(ContinueOutcome::Final);
        }
    }

    async fn read_head_with_timeout<H: ParseHead>(
        &mut self,
        head: &mut H,
    ) -> Result<bool, HttpError> {
        match self.limits.head_timeout {
            Some(limit) => tokio::time::timeout(limit, self.read_head(head))
                .await
                .map_err(|_| HttpError::HeadTimeout { timeout: limit })?,
            None => self.read_head(head).await,
        }
    }

    /// Reads until a whole head is buffered and parses it. Cancel-safe: bytes read stay buffered, so a
    /// timed-out wait can be resumed.
    async fn read_head<H: ParseHead>(&mut self, head: &mut H) -> Result<bool, HttpError> {
        // Bytes of the window already searched for the empty line that ends a head: a head can only
        // be complete once one is there, so partial heads are not re-parsed on every read.
        let mut scanned: usize = 0;
        loop {
            let window = &self.buf[self.start..self.end];
            if contains_head_end(window, scanned.saturating_sub(2)) {
                if let ParseStatus::Complete(len) = head.parse_head(window, &self.limits)? {
                    self.start += len;
                    return Ok(true);
                }
            } else {
                if window.len() >= self.limits.max_head_bytes {
                    return Err(HttpError::HeadTooLarge {
                        limit: self.limits.max_head_bytes,
                    });
                }
                check_start_line(window, &self.limits)?;
            }
            scanned = window.len();
            if self.read_eof {
                return self.eof_in_head();
            }
            self.make_room_for_head();
            let room = self.buf.len() - self.end;
            let want = self.head_read_limit.map_or(room, |limit| limit.min(room));
            let read = self.stream.read(&mut self.buf[self.end..self.end + want]);
            let idle_wait = self
                .release_idle_buffer_after
                .filter(|_| self.start == self.end && !self.buffer_released);
            let n = match idle_wait {
                // A read of a stream is cancel-safe: nothing is lost when it is dropped pending.
                Some(wait) => match tokio::time::timeout(wait, read).await {
                    Ok(n) => n?,
                    Err(_idle) => {
                        release_pages(&mut self.buf);
                        self.buffer_released = true;
                        self.idle_releases += 1;
                        continue;
                    }
                },
                None => read.await?,
            };
            if n == 0 {
                self.read_eof = true;
                return self.eof_in_head();
            }
            self.buffer_released = false;
            self.end += n;
        }
    }

    fn eof_in_head(&self) -> Result<bool, HttpError> {
        let window = &self.buf[self.start..self.end];
        // Empty lines between messages are allowed (RFC 9112 §2.2); only real bytes make a head.
        if window.iter().all(|&b| b == b'\r' || b == b'\n') {
            Ok(false)
        } else {
            Err(HttpError::IncompleteHead {
                received: window.len(),
            })
        }
    }

    /// Frees space at the end of the buffer for a head: moves the partial head to the front, or grows
    /// the buffer once to the head limit when the head fills it.
    fn make_room_for_head(&mut self) {
        self.compact();
        if self.end == self.buf.len() && self.buf.len() < self.limits.max_head_bytes {
            self.buf.resize(self.limits.max_head_bytes, 0);
        }
    }

    /// Moves the unconsumed bytes to the front of the buffer when the end is full. Only head bytes
    /// (or undecodable framing) are ever moved: bodies are consumed before more is read.
    fn compact(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Before a new head: gets rid of the previous body, or fails if it can not be.
    async fn finish_previous_body(&mut self) -> Result<(), HttpError> {
        if self.body_done() {
            return Ok(());
        }
        if self.discard_body().await? {
            Ok(())
        } else {
            self.broken = true;
            Err(HttpError::UndrainedBody {
                limit: self.limits.max_drain_bytes,
            })
        }
    }

    // ----- bodies ------------------------------------------------------------------------------

    /// Server: sends `100 Continue` if the request asked for it and it has not been sent. Reading the
    /// body does this by itself.
    pub async fn send_continue(&mut self) -> Result<(), HttpError> {
        if !self.continue_pending {
            return Ok(());
        }
        self.continue_pending = false;
        let result = async {
            self.stream.write_all(CONTINUE_RESPONSE).await?;
            self.stream.flush().await
        }
        .await;
        self.track(result.map_err(HttpError::from))
    }

    /// Reads body payload into `dst`; returns how many bytes were written to it, 0 at the end of the
    /// body (or when `dst` is empty).
    ///
    /// Buffered payload is copied first; with the buffer empty and `dst` at least as large as the read
    /// buffer, or large enough for the rest of the payload run, the stream is read straight into
    /// `dst` (never past the run).
    pub async fn read_body(&mut self, dst: &mut [u8]) -> Result<usize, HttpError> {
        self.check_usable()?;
        let result = self.read_body_inner(dst).await;
        self.track(result)
    }

    async fn read_body_inner(&mut self, dst: &mut [u8]) -> Result<usize, HttpError> {
        if dst.is_empty() {
            return Ok(0);
        }
        self.send_continue().await?;
        loop {
            if !self.pending.is_empty() {
                let n = self.pending.len().min(dst.len());
                let from = self.pending.start;
                dst[..n].copy_from_slice(&self.buf[from..from + n]);
                self.pending.start += n;
                return Ok(n);
            }
            if self.incoming.is_done() {
                return Ok(0);
            }
            let remaining = self.incoming.data_remaining();
            if self.start < self.end {
                if remaining > 0 {
                    // Inside a payload run: take it from the buffer without a decode call.
                    let n = clamp(remaining, (self.end - self.start).min(dst.len()));
                    dst[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
                    self.incoming.advance_data(&dst[..n])?;
                    self.start += n;
                    return Ok(n);
                }
                if self.decode_buffered()? {
                    continue;
                }
            }
            // Straight into `dst` when it is large, or when it takes all that is left of the
            // payload run: going through the buffer would then read past the run into the next
            // message (a pipelined response), whose bytes would be copied twice.
            if self.start == self.end
                && remaining > 0
                && (dst.len() >= self.buf.len() || dst.len() as u64 >= remaining)
            {
                let want = clamp(remaining, dst.len());
                let n = read_with_timeout(
                    &mut self.stream,
                    &mut dst[..want],
                    self.limits.body_read_timeout,
                )
                .await?;
                self.check_body_rate(n)?;
                if n == 0 {
                    self.read_eof = true;
                    self.incoming.on_eof()?;
                    continue;
                }
                self.incoming.advance_data(&dst[..n])?;
                return Ok(n);
            }
            self.fill_buffer().await?;
        }
    }

    /// Reads the whole body into `dst` and returns its length. Fails with
    /// [`HttpError::DestinationTooSmall`] if the body is longer than `dst` (before reading anything
    /// when the length is declared).
    pub async fn read_body_into(&mut self, dst: &mut [u8]) -> Result<usize, HttpError> {
        self.check_usable()?;
        if let BodyKind::Length { decoder, .. } = &self.incoming.kind {
            let left = decoder.data_remaining() + self.pending.len() as u64;
            if left > dst.len() as u64 {
                return Err(HttpError::DestinationTooSmall {
                    capacity: dst.len(),
                });
            }
        }
        let mut filled = 0;
        while filled < dst.len() {
            let n = self.read_body(&mut dst[filled..]).await?;
            if n == 0 {
                return Ok(filled);
            }
            filled += n;
        }
        // `dst` is full: the body must end here (a chunked body still has its last chunk to read).
        let mut probe = [0u8; 1];
        if self.read_body(&mut probe).await? > 0 {
            self.broken = true;
            return Err(HttpError::DestinationTooSmall {
                capacity: dst.len(),
            });
        }
        Ok(filled)
    }

    /// Returns the next run of payload as a slice of the read buffer, or `None` at the end of the
    /// body. The slice is valid until the next call on the connection; nothing is copied.
    pub async fn body_chunk(&mut self) -> Result<Option<&[u8]>, HttpError> {
        self.check_usable()?;
        let result = self.next_payload_range().await;
        let range = self.track(result)?;
        Ok(range.map(|r| &self.buf[r]))
    }

    async fn next_payload_range(&mut self) -> Result<Option<Range<usize>>, HttpError> {
        self.send_continue().await?;
        loop {
            if !self.pending.is_empty() {
                let range = self.pending.clone();
                self.pending = 0..0;
                return Ok(Some(range));
            }
            if self.incoming.is_done() {
                return Ok(None);
            }
            if self.start < self.end && self.decode_buffered()? {
                continue;
            }
            self.fill_buffer().await?;
        }
    }

    /// Runs the decoder over the buffered bytes; the payload found becomes `pending`. Returns whether
    /// it made progress.
    fn decode_buffered(&mut self) -> Result<bool, HttpError> {
        let decoded = self.incoming.decode(&self.buf[self.start..self.end])?;
        self.pending = self.start + decoded.data.start..self.start + decoded.data.end;
        self.start += decoded.consumed;
        Ok(decoded.consumed > 0)
    }

    /// Fails with [`HttpError::BodyTooSlow`] when the body's average rate since it began is below
    /// [`Limits::min_body_rate`] after its grace. What has arrived is derived, not counted apart:
    /// the payload decoded so far, what waits in the read buffer, and `just_read`, the bytes of the
    /// read that was just made (not yet in either).
    fn check_body_rate(&self, just_read: usize) -> Result<(), HttpError> {
        let (Some(min), Some(started)) = (self.limits.min_body_rate, self.incoming.started) else {
            return Ok(());
        };
        let elapsed = started.elapsed();
        if elapsed <= min.grace {
            return Ok(());
        }
        let arrived = self.incoming.received + (self.end - self.start + just_read) as u64;
        let needed = u128::from(min.bytes_per_second) * elapsed.as_millis() / 1000;
        if u128::from(arrived) < needed {
            return Err(HttpError::BodyTooSlow {
                received: arrived,
                elapsed,
                min_rate: min.bytes_per_second,
            });
        }
        Ok(())
    }

    /// Reads more bytes of the body into the read buffer; the end of the stream ends an until-close
    /// body and is an error for any other.
    async fn fill_buffer(&mut self) -> Result<(), HttpError> {
        if self.read_eof {
            return self.incoming.on_eof();
        }
        self.compact();
        if self.end == self.buf.len() {
            // The decoder made no progress on a full buffer: a metadata line longer than the buffer.
            return Err(FramingError::LineTooLong {
                limit: self.buf.len(),
            }
            .into());
        }
        let n = read_with_timeout(
            &mut self.stream,
            &mut self.buf[self.end..],
            self.limits.body_read_timeout,
        )
        .await?;
        self.check_body_rate(n)?;
        if n == 0 {
            self.read_eof = true;
            return self.incoming.on_eof();
        }
        self.end += n;
        Ok(())
    }

    /// Reads and discards the rest of the incoming body so the connection can carry the next message.
    /// Returns `Ok(false)` without reading when that is not worth it or not possible: more than
    /// [`Limits::max_drain_bytes`] left, a body that runs until close, or a client still waiting for
    /// `100 Continue`. The connection must then be closed.
    pub async fn discard_body(&mut self) -> Result<bool, HttpError> {
        self.check_usable()?;
        self.pending = 0..0;
        if self.incoming.is_done() {
            return Ok(true);
        }
        if self.continue_pending || self.must_close {
            return Ok(false);
        }
        let budget = self.limits.max_drain_bytes;
        match self.incoming.kind {
            BodyKind::UntilClose { .. } => return Ok(false),
            BodyKind::Length { ref decoder, .. } if decoder.data_remaining() > budget => {
                return Ok(false);
            }
            _ => {}
        }
        let mut discarded = 0u64;
        while let Some(range) = {
            let result = self.next_payload_range().await;
            self.track(result)?
        } {
            discarded += range.len() as u64;
            if discarded > budget {
                return Ok(false);
            }
        }
        Ok(true)
    }

    // ----- writes ------------------------------------------------------------------------------

    /// Client: queues a request head; it is sent with the first body bytes or by
    /// [`flush`](Self::flush).
    pub fn queue_request_head(&mut self, head: &RequestHead) {
        head.write_to(&mut self.write_buf);
    }

    /// Server: queues a response head; it is sent with the first body bytes or by
    /// [`flush`](Self::flush). Answering a request that waits for `100 Continue` without having read
    /// its body means the body will never come: the connection is then not reused.
    pub fn queue_response_head(&mut self, head: &ResponseHead) {
        if self.continue_pending {
            self.continue_pending = false;
            self.must_close = true;
        }
        head.write_to(&mut self.write_buf);
    }

    /// Writes body bytes (of a Content-Length body) from where they are, after anything queued, in one
    /// vectored write.
    pub async fn write_body(&mut self, data: &[u8]) -> Result<(), HttpError> {
        self.check_usable()?;
        let mut slices = [IoSlice::new(&self.write_buf), IoSlice::new(data)];
        let result = write_all_vectored(&mut self.stream, &mut slices).await;
        self.write_buf.clear();
        self.track(result.map_err(HttpError::from))
    }

    /// Writes one chunk of a chunked body: its size line (from the stack), `data` where it is, CRLF,
    /// after anything queued, in one vectored write. Empty data writes nothing (an empty chunk would
    /// end the body).
    pub async fn write_chunk(&mut self, data: &[u8]) -> Result<(), HttpError> {
        self.check_usable()?;
        if data.is_empty() {
            return Ok(());
        }
        let header = ChunkHeader::new(data.len() as u64);
        let mut slices = [
            IoSlice::new(&self.write_buf),
            IoSlice::new(header.as_bytes()),
            IoSlice::new(data),
            IoSlice::new(CHUNK_END),
        ];
        let result = write_all_vectored(&mut self.stream, &mut slices).await;
        self.write_buf.clear();
        self.track(result.map_err(HttpError::from))
    }

    /// Ends a chunked body with the last chunk and `trailers` (may be empty), and flushes.
    pub async fn finish_chunked(&mut self, trailers: &Headers) -> Result<(), HttpError> {
        write_last_chunk(trailers, &mut self.write_buf);
        self.flush().await
    }

    /// The bytes queued to go out with the next write (a response head, chunk framing), for a
    /// caller that sends them itself: a server sends a head with `MSG_MORE` ahead of a `sendfile`
    /// body, so that the head leaves in the body's first segment rather than in a packet of its own.
    /// Report what was sent with [`output_sent`](Self::output_sent).
    pub fn queued_output(&self) -> &[u8] {
        &self.write_buf
    }

    /// Drops the first `n` bytes of [`queued_output`](Self::queued_output), which the caller sent.
    pub fn output_sent(&mut self, n: usize) {
        self.write_buf.drain(..n.min(self.write_buf.len()));
    }

    /// Writes anything queued and flushes the stream.
    pub async fn flush(&mut self) -> Result<(), HttpError> {
        self.check_usable()?;
        let result = async {
            if !self.write_buf.is_empty() {
                self.stream.write_all(&self.write_buf).await?;
                self.write_buf.clear();
            }
            self.stream.flush().await
        }
        .await;
        self.track(result.map_err(HttpError::from))
    }

    /// Client: sends a request with a body held in memory (head and body in one vectored write).
    pub async fn write_request(
        &mut self,
        head: &RequestHead,
        body: &[u8],
    ) -> Result<(), HttpError> {
        self.queue_request_head(head);
        self.write_body(body).await?;
        self.flush().await
    }

    /// Server: sends a response with a body held in memory (head and body in one vectored write).
    pub async fn write_response(
        &mut self,
        head: &ResponseHead,
        body: &[u8],
    ) -> Result<(), HttpError> {
        self.queue_response_head(head);
        self.write_body(body).await?;
        self.flush().await
    }
}

/// Whether `window[from..]` (plus the two bytes before `from`) holds the empty line that ends a head:
/// an LF followed by LF or by CRLF.
fn contains_head_end(window: &[u8], from: usize) -> bool {
    let from = from.min(window.len());
    window[from..].iter().enumerate().any(|(i, &b)| {
        let at = from + i;
        b == b'\n'
            && (window.get(at + 1) == Some(&b'\n')
                || (window.get(at + 1) == Some(&b'\r') && window.get(at + 2) == Some(&b'\n')))
    })
}

/// `limit` as a usize, capped at `cap`.
fn clamp(limit: u64, cap: usize) -> usize {
    usize::try_from(limit).map_or(cap, |l| l.min(cap))
}

async fn read_with_timeout<S: AsyncRead + Unpin>(
    stream: &mut S,
    dst: &mut [u8],
    limit: Option<Duration>,
) -> Result<usize, HttpError> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, stream.read(dst))
            .await
            .map_err(|_| HttpError::BodyTimeout { timeout: limit })?
            .map_err(HttpError::from),
        None => Ok(stream.read(dst).await?),
    }
}

/// Writes every slice, looping over partial vectored writes.
async fn write_all_vectored<S: AsyncWrite + Unpin>(
    stream: &mut S,
    mut slices: &mut [IoSlice<'_>],
) -> std::io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        let n = stream.write_vectored(slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// Gives the whole pages inside `buf` back to the kernel: they read as zeros afterwards and are
/// faulted in again by the next write. The bytes are not needed (nothing is buffered).
fn release_pages(buf: &mut [u8]) {
    const PAGE: usize = 4096;
    let start = buf.as_mut_ptr().align_offset(PAGE).min(buf.len());
    let len = (buf.len() - start) / PAGE * PAGE;
    if len == 0 {
        return;
    }
    // SAFETY: the range is whole pages inside `buf`, which this function borrows exclusively, so
    // nothing else reads or writes them meanwhile; MADV_DONTNEED on private anonymous memory (the
    // heap or an anonymous mapping, where the allocator put the buffer) only replaces their
    // contents with zeros, which any `u8` may hold. It never unmaps, so the allocation stays valid.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::madvise(buf.as_mut_ptr().add(start).cast(), len, libc::MADV_DONTNEED) };
    // Advice only: a refusal leaves the pages where they were.
    let _ = rc;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_end_is_an_lf_followed_by_an_empty_line() {
        assert!(contains_head_end(b"GET / HTTP/1.1\r\n\r\n", 0));
        assert!(contains_head_end(b"GET / HTTP/1.1\n\n", 0));
        assert!(!contains_head_end(b"GET / HTTP/1.1\r\nHost: x\r\n", 0));
        assert!(!contains_head_end(b"GET / HTTP/1.1\r\n\r", 0));
        // A search resumed two bytes before the previous end still sees a terminator that straddles it.
        let head = b"GET / HTTP/1.1\r\n\r\n";
        assert!(contains_head_end(head, head.len() - 1 - 2));
    }

    /// The tail of a body, smaller than the read buffer, is read straight into the caller's slice:
    /// the pipelined response behind it stays in the stream instead of passing through the buffer.
    #[test]
    fn a_body_tail_is_read_without_reading_the_next_response() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, mut server) = tokio::io::duplex(64 * 1024);
            let mut conn = HttpConnection::with_config(
                client,
                ConnectionConfig {
                    read_buffer_size: 4096,
                    limits: Limits::default(),
                    release_idle_buffer_after: None,
                },
            );
            let body: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
            server
                .write_all(b"HTTP/1.1 206 Partial Content\r\ncontent-length: 3000\r\n\r\n")
                .await
                .unwrap();
            server.write_all(&body[..100]).await.unwrap();
            let mut head = ResponseHead::new();
            conn.read_response_head(&mut head, "GET").await.unwrap();
            // The rest of the body and a whole second response arrive together.
            server.write_all(&body[100..]).await.unwrap();
            server
                .write_all(b"HTTP/1.1 206 Partial Content\r\ncontent-length: 2\r\n\r\nok")
                .await
                .unwrap();
            let mut dst = vec![0u8; 3000];
            let mut filled = 0;
            while filled < dst.len() {
                filled += conn.read_body(&mut dst[filled..]).await.unwrap();
            }
            assert_eq!(dst, body);
            assert!(
                conn.buffered().is_empty(),
                "{} bytes read past the body",
                conn.buffered().len()
            );
            conn.read_response_head(&mut head, "GET").await.unwrap();
            let mut second = [0u8; 2];
            assert_eq!(conn.read_body(&mut second).await.unwrap(), 2);
            assert_eq!(&second, b"ok");
        });
    }

    /// A limited head read leaves a large body in the stream, to be read into the destination
    /// once; an unlimited one takes a buffer of it with the head. The limit is for one head only.
    #[test]
    fn a_limited_head_read_leaves_the_body_in_the_stream() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, mut server) = tokio::io::duplex(1 << 20);
            let mut conn = HttpConnection::with_config(
                client,
                ConnectionConfig {
                    read_buffer_size: 64 * 1024,
                    limits: Limits::default(),
                    release_idle_buffer_after: None,
                },
            );
            let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
            for _ in 0..2 {
                server
                    .write_all(b"HTTP/1.1 206 Partial Content\r\ncontent-length: 200000\r\n\r\n")
                    .await
                    .unwrap();
                server.write_all(&body).await.unwrap();
            }
            let mut head = ResponseHead::new();
            let mut dst = vec![0u8; body.len()];
            conn.limit_next_head_read(1);
            conn.read_response_head(&mut head, "GET").await.unwrap();
            assert!(
                conn.buffered().len() <= MIN_HEAD_READ,
                "{} bytes buffered",
                conn.buffered().len()
            );
            assert_eq!(conn.read_body_into(&mut dst).await.unwrap(), body.len());
            assert_eq!(dst, body);
            // The next head is read without a limit: the buffer fills with the body behind it.
            conn.read_response_head(&mut head, "GET").await.unwrap();
            assert!(conn.buffered().len() > MIN_HEAD_READ);
            assert_eq!(conn.read_body_into(&mut dst).await.unwrap(), body.len());
            assert_eq!(dst, body);
        });
    }

    #[test]
    fn clamp_caps_at_the_usize_bound() {
        assert_eq!(clamp(u64::MAX, 10), 10);
        assert_eq!(clamp(3, 10), 3);
    }
}
