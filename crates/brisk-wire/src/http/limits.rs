//! Every bound the HTTP layer enforces, with its default and the reason for it.
//!
//! A peer controls every byte it sends; each of these limits turns a hostile or broken peer into a clear
//! error (mapped by the server to 400, 408, 414 or 431) instead of unbounded memory or a connection held
//! forever. All of them can be overridden through [`Limits`].

use std::time::Duration;

/// Default cap on a whole head (start line, header lines and the final empty line): 64 KiB.
///
/// S3 caps a request's headers at 8 KiB and its user metadata at 2 KiB; a presigned URL with a session
/// token and a 1024-byte key percent-encoded (up to 3 KiB) stays under 8 KiB as well. 64 KiB leaves room
/// for S3-compatible peers that send more, while a connection's head never costs more than this.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 64 * 1024;

/// Default cap on the number of header lines in one head: 100.
///
/// An S3 request carries 10 to 30 headers (SigV4 headers, checksums, a few `x-amz-meta-*`); 100 is the
/// common server default (hyper, Go's net/http effective limit) and keeps the parser's stack array small.
pub const DEFAULT_MAX_HEADERS: usize = 100;

/// The largest header count the parser can be configured for: 256.
///
/// The parser's header slots live in a stack array of this size (32 bytes each, 8 KiB in all) so that
/// parsing a head allocates nothing; a configured [`Limits::max_headers`] above it is clamped to it.
pub const MAX_HEADERS_CEILING: usize = 256;

/// Default cap on the request line (method, target, version) or the status line: 16 KiB.
///
/// A presigned URL carries the signature, credential scope and a session token (often 1 to 4 KiB when
/// percent-encoded) on top of a key of up to 3 KiB percent-encoded.
pub const DEFAULT_MAX_START_LINE: usize = 16 * 1024;

/// Default cap on one header line (`name: value`): 16 KiB.
///
/// The largest legitimate S3 header is `x-amz-security-token` (a few KiB); the whole S3 request head is
/// capped at 8 KiB, so one line can not usefully be larger.
pub const DEFAULT_MAX_HEADER_LINE: usize = 16 * 1024;

/// Default time a peer has to deliver a complete head, counted from the start of the wait: 30 s.
///
/// It also bounds how long an idle keep-alive connection is held open waiting for its next request, and
/// how long a client waits for a response head. S3 answers even slow operations (CompleteMultipartUpload,
/// CopyObject) with a head at once and keeps the body alive with whitespace.
pub const DEFAULT_HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Default time one read of a body may wait for bytes: 30 s.
///
/// It is an inactivity timeout, not a deadline: a 5 GiB upload may take minutes, but a peer that stops
/// sending frees its connection after this long.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default cap on a chunk-size line including its extensions: 4 KiB.
///
/// A plain chunk-size line is at most 16 hex digits; aws-chunked adds `;chunk-signature=` and 64 hex
/// digits (about 90 bytes in all). Extensions are ignored, so anything much longer is abuse.
pub const DEFAULT_MAX_CHUNK_LINE: usize = 4 * 1024;

/// Default cap on the trailer section of a chunked body: 16 KiB.
///
/// S3 trailers carry one checksum (`x-amz-checksum-crc32c: ...`, under 100 bytes) and perhaps a trailer
/// signature; 16 KiB is generous and bounds the only allocation a chunked body can cause.
pub const DEFAULT_MAX_TRAILER_BYTES: usize = 16 * 1024;

/// Default cap on how many unread body bytes are read and thrown away to keep a connection: 256 KiB.
///
/// Draining a small body costs less than a new TCP (and TLS) handshake; a larger one costs more, so the
/// connection is closed instead.
pub const DEFAULT_MAX_DRAIN_BYTES: u64 = 256 * 1024;

/// The slowest a body may arrive, on average since its first byte was awaited, once `grace` has
/// passed: a peer that trickles a byte just inside every [`Limits::body_read_timeout`] would otherwise
/// hold a connection (and a server's read buffer) for as long as it likes. Apache's
/// `mod_reqtimeout` applies the same kind of rule (`MinRate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinBodyRate {
    /// Bytes per second, averaged over the body so far.
    pub bytes_per_second: u64,
    /// Time before the rate is enforced (slow starts and small bodies are never cut).
    pub grace: Duration,
}

/// The bounds applied to one connection's heads and bodies. Build it with [`Limits::default`] and
/// override fields as needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest head in bytes, start line and final empty line included.
    pub max_head_bytes: usize,
    /// Largest number of header lines in a head (clamped to [`MAX_HEADERS_CEILING`]).
    pub max_headers: usize,
    /// Longest request line or status line in bytes, line ending excluded.
    pub max_start_line: usize,
    /// Longest single header line (`name: value`) in bytes, line ending excluded.
    pub max_header_line: usize,
    /// Time allowed for a complete head to arrive; `None` waits forever.
    pub head_timeout: Option<Duration>,
    /// Time allowed for each read while receiving a body; `None` waits forever.
    pub body_read_timeout: Option<Duration>,
    /// Slowest average rate a body may arrive at after a grace period; `None` (the default) has no
    /// such bound, only [`body_read_timeout`](Self::body_read_timeout).
    pub min_body_rate: Option<MinBodyRate>,
    /// Longest chunk-size line (extensions included) in a chunked body.
    pub max_chunk_line: usize,
    /// Largest trailer section of a chunked body.
    pub max_trailer_bytes: usize,
    /// Most unread body bytes discarded to keep a connection open; beyond it the connection is closed.
    pub max_drain_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_head_bytes: DEFAULT_MAX_HEAD_BYTES,
            max_headers: DEFAULT_MAX_HEADERS,
            max_start_line: DEFAULT_MAX_START_LINE,
            max_header_line: DEFAULT_MAX_HEADER_LINE,
            head_timeout: Some(DEFAULT_HEAD_TIMEOUT),
            body_read_timeout: Some(DEFAULT_BODY_READ_TIMEOUT),
            min_body_rate: None,
            max_chunk_line: DEFAULT_MAX_CHUNK_LINE,
            max_trailer_bytes: DEFAULT_MAX_TRAILER_BYTES,
            max_drain_bytes: DEFAULT_MAX_DRAIN_BYTES,
        }
    }
}

impl Limits {
    /// The header count the parser enforces: [`max_headers`](Self::max_headers), clamped to
    /// [`MAX_HEADERS_CEILING`].
    pub fn effective_max_headers(&self) -> usize {
        self.max_headers.min(MAX_HEADERS_CEILING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_count_is_clamped_to_the_parser_ceiling() {
        let limits = Limits {
            max_headers: 10_000,
            ..Limits::default()
        };
        assert_eq!(limits.effective_max_headers(), MAX_HEADERS_CEILING);
        assert_eq!(
            Limits::default().effective_max_headers(),
            DEFAULT_MAX_HEADERS
        );
    }
}
