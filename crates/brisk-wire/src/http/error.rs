//! The one error type of the HTTP layer. Each limit and each rejected framing has its own variant so the
//! server can answer with the right status ([`HttpError::status_hint`]) and logs say exactly what
//! was wrong.

use std::time::Duration;

use crate::framing::FramingError;

/// Why reading or writing an HTTP/1.1 message failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The transport failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// The head is not valid HTTP/1.1 (`what` names the part that is wrong).
    #[error("malformed HTTP head: {what}")]
    MalformedHead { what: &'static str },
    /// The head is larger than [`Limits::max_head_bytes`](super::Limits::max_head_bytes).
    #[error("head larger than the limit of {limit} bytes")]
    HeadTooLarge { limit: usize },
    /// The head has more header lines than [`Limits::max_headers`](super::Limits::max_headers).
    #[error("more than {limit} header lines")]
    TooManyHeaders { limit: usize },
    /// The request line or status line is longer than
    /// [`Limits::max_start_line`](super::Limits::max_start_line).
    #[error("request or status line longer than {limit} bytes")]
    StartLineTooLong { limit: usize },
    /// One header line is longer than [`Limits::max_header_line`](super::Limits::max_header_line).
    #[error("header line longer than {limit} bytes")]
    HeaderLineTooLong { limit: usize },
    /// No complete head arrived within [`Limits::head_timeout`](super::Limits::head_timeout).
    #[error("no complete head within {timeout:?}")]
    HeadTimeout { timeout: Duration },
    /// A body read waited longer than [`Limits::body_read_timeout`](super::Limits::body_read_timeout).
    #[error("no body bytes within {timeout:?}")]
    BodyTimeout { timeout: Duration },
    /// A body arrived more slowly than [`Limits::min_body_rate`](super::Limits::min_body_rate).
    #[error(
        "body arriving at {received} bytes in {elapsed:?}, below the minimum of {min_rate} bytes/s"
    )]
    BodyTooSlow {
        received: u64,
        elapsed: Duration,
        min_rate: u64,
    },
    /// The peer closed the connection in the middle of a head.
    #[error("connection closed after {received} bytes of an incomplete head")]
    IncompleteHead { received: usize },

    /// Both `Content-Length` and `Transfer-Encoding` are present: the body length is ambiguous (the
    /// classic request-smuggling vector), so the message is rejected.
    #[error("both Content-Length and Transfer-Encoding present")]
    ConflictingFraming,
    /// A `Content-Length` value is not a plain decimal number that fits in 64 bits.
    #[error("invalid Content-Length value")]
    InvalidContentLength,
    /// Several `Content-Length` values disagree.
    #[error("differing Content-Length values")]
    DifferingContentLengths,
    /// `Transfer-Encoding` is anything other than exactly `chunked` (another coding, or chunked not
    /// final, or chunked twice).
    #[error("unsupported Transfer-Encoding (only a lone `chunked` is accepted)")]
    UnsupportedTransferCoding,
    /// An HTTP/1.0 message carries `Transfer-Encoding`, which HTTP/1.0 does not define (RFC 9112 §6.1
    /// requires treating its framing as faulty).
    #[error("Transfer-Encoding in an HTTP/1.0 message")]
    TransferEncodingInHttp10,
    /// The body's chunked framing is broken or exceeds a limit.
    #[error("body framing: {0}")]
    Framing(#[from] FramingError),

    /// The peer closed the connection before the `expected` bytes of a Content-Length body arrived.
    #[error("connection closed after {received} of {expected} body bytes")]
    UnexpectedEof { expected: u64, received: u64 },
    /// The peer closed the connection before the end of a chunked body.
    #[error("connection closed after {received} bytes of a chunked body, before its last chunk")]
    TruncatedChunkedBody { received: u64 },
    /// The body does not fit in the destination it is read into.
    #[error("body larger than the {capacity}-byte destination")]
    DestinationTooSmall { capacity: usize },

    /// A head being built for sending has an invalid part (`what` names it); sending it would let a
    /// value inject header lines.
    #[error("invalid {what} in an outgoing head")]
    InvalidOutgoing { what: &'static str },
    /// The previous message's body was not read and can not be skipped: it is larger than
    /// [`Limits::max_drain_bytes`](super::Limits::max_drain_bytes), runs until close, or was never sent
    /// because `100 Continue` was withheld. The connection must be closed.
    #[error("unread body of the previous message can not be drained within {limit} bytes")]
    UndrainedBody { limit: u64 },
    /// The connection was left in an unknown state by an earlier error and can not be used.
    #[error("connection unusable after an earlier error")]
    ConnectionBroken,
    /// A body operation was called while no body is being received.
    #[error("no message body is being received")]
    NoBody,
}

impl HttpError {
    /// The status a server should answer with when this error comes from reading a request, or `None`
    /// when no answer makes sense (the transport failed or the peer is gone).
    pub fn status_hint(&self) -> Option<u16> {
        match self {
            Self::MalformedHead { .. }
            | Self::ConflictingFraming
            | Self::InvalidContentLength
            | Self::DifferingContentLengths
            | Self::TransferEncodingInHttp10
            | Self::Framing(_) => Some(400),
            Self::HeadTimeout { .. } | Self::BodyTimeout { .. } | Self::BodyTooSlow { .. } => {
                Some(408)
            }
            Self::StartLineTooLong { .. } => Some(414),
            Self::HeadTooLarge { .. }
            | Self::TooManyHeaders { .. }
            | Self::HeaderLineTooLong { .. } => Some(431),
            Self::UnsupportedTransferCoding => Some(501),
            Self::DestinationTooSmall { .. } => Some(413),
            Self::Io(_)
            | Self::IncompleteHead { .. }
            | Self::UnexpectedEof { .. }
            | Self::TruncatedChunkedBody { .. }
            | Self::InvalidOutgoing { .. }
            | Self::UndrainedBody { .. }
            | Self::ConnectionBroken
            | Self::NoBody => None,
        }
    }

    /// Maps an `httparse` error to the part of the head it names.
    pub(crate) fn from_httparse(err: httparse::Error) -> Self {
        let what = match err {
            httparse::Error::HeaderName => "header name",
            httparse::Error::HeaderValue => "header value",
            httparse::Error::NewLine => "line ending",
            httparse::Error::Status => "status code",
            httparse::Error::Token => "method token",
            httparse::Error::Version => "HTTP version",
            // The caller maps TooManyHeaders to its own variant with the limit; this arm only keeps
            // the match total.
            httparse::Error::TooManyHeaders => "header count",
        };
        Self::MalformedHead { what }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_errors_name_their_limit_and_map_to_the_right_status() {
        let err = HttpError::HeadTooLarge { limit: 1024 };
        assert_eq!(err.to_string(), "head larger than the limit of 1024 bytes");
        assert_eq!(err.status_hint(), Some(431));
        assert_eq!(
            HttpError::StartLineTooLong { limit: 8 }.status_hint(),
            Some(414)
        );
        assert_eq!(
            HttpError::HeadTimeout {
                timeout: Duration::from_secs(1)
            }
            .status_hint(),
            Some(408)
        );
        assert_eq!(HttpError::ConflictingFraming.status_hint(), Some(400));
        assert_eq!(
            HttpError::UnsupportedTransferCoding.status_hint(),
            Some(501)
        );
        let eof = HttpError::UnexpectedEof {
            expected: 10,
            received: 3,
        };
        assert_eq!(
            eof.to_string(),
            "connection closed after 3 of 10 body bytes"
        );
        assert_eq!(eof.status_hint(), None);
    }
}
