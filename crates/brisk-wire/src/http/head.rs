//! Request and response heads: incremental parsing with `httparse` under [`Limits`], owned reusable
//! head types, the keep-alive and `Expect` decisions, and serialisation into a reusable buffer.
//!
//! Parsing copies the head's text (never a body byte) out of the read buffer into the head's own
//! buffers, so the read buffer can be compacted and reused while the head is still in use. A head that
//! is cleared and refilled for every request of a connection allocates nothing once its buffers have
//! grown to the connection's largest head.

use super::error::HttpError;
use super::headers::{Headers, is_token};
use super::limits::{Limits, MAX_HEADERS_CEILING};

/// The HTTP versions this layer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// HTTP/1.0: no chunked coding, keep-alive only on request.
    Http10,
    /// HTTP/1.1: keep-alive by default.
    #[default]
    Http11,
}

impl Version {
    /// The version as written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http10 => "HTTP/1.0",
            Self::Http11 => "HTTP/1.1",
        }
    }

    fn from_minor(minor: u8) -> Self {
        if minor == 0 {
            Self::Http10
        } else {
            Self::Http11
        }
    }
}

/// Outcome of offering buffered bytes to a head parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseStatus {
    /// A whole head was parsed; it used this many bytes of the input (the body, or the next message,
    /// starts right after).
    Complete(usize),
    /// The input holds the beginning of a head (or nothing): read more bytes and offer them all again.
    Partial,
}

/// An HTTP request head: request line and header fields.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RequestHead {
    /// Method followed by target, so both live in one reusable allocation.
    line: String,
    method_len: usize,
    version: Version,
    headers: Headers,
}

impl std::fmt::Debug for RequestHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHead")
            .field("method", &self.method())
            .field("target", &self.target())
            .field("version", &self.version)
            .field("headers", &self.headers)
            .finish()
    }
}

impl RequestHead {
    /// An empty head to parse into (or to fill with [`set_request_line`](Self::set_request_line)).
    pub fn new() -> Self {
        Self::default()
    }

    /// A HTTP/1.1 head for `method` and `target` with no fields.
    pub fn with_request_line(method: &str, target: &str) -> Result<Self, HttpError> {
        let mut head = Self::new();
        head.set_request_line(method, target)?;
        Ok(head)
    }

    /// Clears the head for reuse (fields removed, HTTP/1.1), keeping its buffers.
    pub fn clear(&mut self) {
        self.line.clear();
        self.method_len = 0;
        self.version = Version::Http11;
        self.headers.clear();
    }

    /// Clears the head and sets its request line. `method` must be a token and `target` non-empty
    /// visible ASCII (no space or control byte), or the head could not be sent.
    pub fn set_request_line(&mut self, method: &str, target: &str) -> Result<(), HttpError> {
        if !is_token(method.as_bytes()) {
            return Err(HttpError::InvalidOutgoing { what: "method" });
        }
        if target.is_empty() || !target.bytes().all(|b| (b'!'..=b'~').contains(&b)) {
            return Err(HttpError::InvalidOutgoing {
                what: "request target",
            });
        }
        self.clear();
        self.line.reserve(method.len() + target.len());
        self.line.push_str(method);
        self.line.push_str(target);
        self.method_len = method.len();
        Ok(())
    }

    /// The method, as received (methods are case-sensitive).
    pub fn method(&self) -> &str {
        &self.line[..self.method_len]
    }

    /// The request target (origin form for S3: path and query).
    pub fn target(&self) -> &str {
        &self.line[self.method_len..]
    }

    /// The protocol version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Sets the protocol version written by [`write_to`](Self::write_to).
    pub fn set_version(&mut self, version: Version) {
        self.version = version;
    }

    /// The header fields.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// The header fields, to add or change some.
    pub fn headers_mut(&mut self) -> &mut Headers {
        &mut self.headers
    }

    /// Whether the connection stays open after this request (see [`keep_alive`]).
    pub fn keep_alive(&self) -> bool {
        keep_alive(self.version, &self.headers)
    }

    /// Whether the client waits for `100 Continue` before sending the body: `Expect: 100-continue`
    /// in an HTTP/1.1 request (RFC 9110 §10.1.1 has HTTP/1.0 requests' expectation ignored).
    pub fn expects_continue(&self) -> bool {
        self.version == Version::Http11
            && self
                .headers
                .get("expect")
                .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"))
    }

    /// Parses a request head from the start of `input` into `self` (replacing its content), under
    /// `limits`. On [`ParseStatus::Partial`] or an error `self` is left cleared.
    pub fn parse(&mut self, input: &[u8], limits: &Limits) -> Result<ParseStatus, HttpError> {
        self.clear();
        check_start_line(input, limits)?;
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS_CEILING];
        let slots = &mut slots[..limits.effective_max_headers()];
        let mut req = httparse::Request::new(slots);
        let status = req.parse(input).map_err(|e| map_parse_error(e, limits))?;
        let len = match status {
            httparse::Status::Partial => return partial(input, limits),
            httparse::Status::Complete(len) => len,
        };
        check_complete(input, len, req.headers, limits)?;
        // A complete parse sets all three; treat their absence as malformed rather than panic.
        let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
            return Err(HttpError::MalformedHead {
                what: "request line",
            });
        };
        self.line.push_str(method);
        self.line.push_str(target);
        self.method_len = method.len();
        self.version = Version::from_minor(minor);
        for h in req.headers.iter() {
            self.headers.push_unchecked(h.name, h.value);
        }
        Ok(ParseStatus::Complete(len))
    }

    /// Appends the head as sent on the wire (`METHOD target HTTP/1.x`, fields, empty line) to `out`.
    /// With a reused `out` this allocates nothing once `out` has grown.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.method().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.target().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.version.as_str().as_bytes());
        out.extend_from_slice(b"\r\n");
        self.headers.write_to(out);
        out.extend_from_slice(b"\r\n");
    }
}

/// An HTTP response head: status line and header fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    status: u16,
    reason: String,
    version: Version,
    headers: Headers,
}

impl Default for ResponseHead {
    fn default() -> Self {
        Self {
            status: 200,
            reason: String::new(),
            version: Version::Http11,
            headers: Headers::new(),
        }
    }
}

impl ResponseHead {
    /// An empty `200` head to parse into or to fill.
    pub fn new() -> Self {
        Self::default()
    }

    /// An HTTP/1.1 head with `status` and its standard reason phrase.
    pub fn with_status(status: u16) -> Result<Self, HttpError> {
        let mut head = Self::new();
        head.set_status(status, canonical_reason(status))?;
        Ok(head)
    }

    /// Clears the head for reuse (`200`, no reason, no fields, HTTP/1.1), keeping its buffers.
    pub fn clear(&mut self) {
        self.status = 200;
        self.reason.clear();
        self.version = Version::Http11;
        self.headers.clear();
    }

    /// Clears the head and sets its status line. `status` must be three digits (100 to 999) and
    /// `reason` tab, space and visible ASCII only.
    pub fn set_status(&mut self, status: u16, reason: &str) -> Result<(), HttpError> {
        if !(100..=999).contains(&status) {
            return Err(HttpError::InvalidOutgoing { what: "status" });
        }
        if !reason
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
        {
            return Err(HttpError::InvalidOutgoing {
                what: "reason phrase",
            });
        }
        self.clear();
        self.status = status;
        self.reason.push_str(reason);
        Ok(())
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The reason phrase (empty when the peer sent none or sent non-ASCII bytes).
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The protocol version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Sets the protocol version written by [`write_to`](Self::write_to).
    pub fn set_version(&mut self, version: Version) {
        self.version = version;
    }

    /// The header fields.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// The header fields, to add or change some.
    pub fn headers_mut(&mut self) -> &mut Headers {
        &mut self.headers
    }

    /// A `1xx` interim response (`100 Continue`, `103 Early Hints`): a final response follows.
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status)
    }

    /// Whether the connection stays open after this response (see [`keep_alive`]). A response whose
    /// body runs until close also ends the connection; the connection layer checks that separately.
    pub fn keep_alive(&self) -> bool {
        keep_alive(self.version, &self.headers)
    }

    /// Parses a response head from the start of `input` into `self` (replacing its content), under
    /// `limits`. On [`ParseStatus::Partial`] or an error `self` is left cleared.
    pub fn parse(&mut self, input: &[u8], limits: &Limits) -> Result<ParseStatus, HttpError> {
        self.clear();
        check_start_line(input, limits)?;
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS_CEILING];
        let slots = &mut slots[..limits.effective_max_headers()];
        let mut resp = httparse::Response::new(slots);
        let status = resp.parse(input).map_err(|e| map_parse_error(e, limits))?;
        let len = match status {
            httparse::Status::Partial => return partial(input, limits),
            httparse::Status::Complete(len) => len,
        };
        check_complete(input, len, resp.headers, limits)?;
        let (Some(code), Some(minor)) = (resp.code, resp.version) else {
            return Err(HttpError::MalformedHead {
                what: "status line",
            });
        };
        if code < 100 {
            return Err(HttpError::MalformedHead {
                what: "status code",
            });
        }
        self.status = code;
        self.reason.push_str(resp.reason.unwrap_or(""));
        self.version = Version::from_minor(minor);
        for h in resp.headers.iter() {
            self.headers.push_unchecked(h.name, h.value);
        }
        Ok(ParseStatus::Complete(len))
    }

    /// Appends the head as sent on the wire (`HTTP/1.x status reason`, fields, empty line) to `out`.
    /// With a reused `out` this allocates nothing once `out` has grown.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut digits = [0u8; 20];
        out.extend_from_slice(self.version.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(super::headers::format_decimal(
            u64::from(self.status),
            &mut digits,
        ));
        out.push(b' ');
        out.extend_from_slice(self.reason.as_bytes());
        out.extend_from_slice(b"\r\n");
        self.headers.write_to(out);
        out.extend_from_slice(b"\r\n");
    }
}

/// The keep-alive decision of RFC 9112 §9.3: a `close` connection option ends the connection; otherwise
/// HTTP/1.1 stays open and HTTP/1.0 stays open only with the `keep-alive` option.
pub fn keep_alive(version: Version, headers: &Headers) -> bool {
    if headers.has_token("connection", "close") {
        return false;
    }
    match version {
        Version::Http11 => true,
        Version::Http10 => headers.has_token("connection", "keep-alive"),
    }
}

/// The standard reason phrase of the statuses an S3 endpoint uses; empty for others (the reason
/// phrase is optional, RFC 9112 §4).
pub fn canonical_reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        507 => "Insufficient Storage",
        _ => "",
    }
}

/// Rejects a start line longer than the limit, whether or not its line ending has arrived. Empty lines
/// before the start line (which RFC 9112 §2.2 lets a server skip) are not part of it.
pub(crate) fn check_start_line(input: &[u8], limits: &Limits) -> Result<(), HttpError> {
    let begin = input
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(input.len());
    let rest = &input[begin..];
    let window = &rest[..rest.len().min(limits.max_start_line.saturating_add(2))];
    let line_len = match window.iter().position(|&b| b == b'\n') {
        Some(lf) => lf - usize::from(lf > 0 && window[lf - 1] == b'\r'),
        // No line ending yet: a trailing CR may be the start of it.
        None => window.len() - usize::from(window.last() == Some(&b'\r')),
    };
    if line_len > limits.max_start_line {
        return Err(HttpError::StartLineTooLong {
            limit: limits.max_start_line,
        });
    }
    Ok(())
}

fn map_parse_error(err: httparse::Error, limits: &Limits) -> HttpError {
    match err {
        httparse::Error::TooManyHeaders => HttpError::TooManyHeaders {
            limit: limits.effective_max_headers(),
        },
        other => HttpError::from_httparse(other),
    }
}

/// A partial head that already fills the head limit can never complete within it.
fn partial(input: &[u8], limits: &Limits) -> Result<ParseStatus, HttpError> {
    if input.len() >= limits.max_head_bytes {
        return Err(HttpError::HeadTooLarge {
            limit: limits.max_head_bytes,
        });
    }
    Ok(ParseStatus::Partial)
}

/// Checks the head size and each header line's length of a completely parsed head.
fn check_complete(
    input: &[u8],
    len: usize,
    headers: &[httparse::Header<'_>],
    limits: &Limits,
) -> Result<(), HttpError> {
    if len > limits.max_head_bytes {
        return Err(HttpError::HeadTooLarge {
            limit: limits.max_head_bytes,
        });
    }
    let base = input.as_ptr() as usize;
    for h in headers {
        // Both slices point into `input`; the line runs from the name's first byte to the value's
        // last (trailing whitespace excluded, which httparse strips).
        let name_start = h.name.as_ptr() as usize - base;
        let value_end = (h.value.as_ptr() as usize - base) + h.value.len();
        let line_len = value_end.max(name_start + h.name.len()) - name_start;
        if line_len > limits.max_header_line {
            return Err(HttpError::HeaderLineTooLong {
                limit: limits.max_header_line,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_req(input: &[u8]) -> Result<(ParseStatus, RequestHead), HttpError> {
        parse_req_with(input, &Limits::default())
    }

    fn parse_req_with(
        input: &[u8],
        limits: &Limits,
    ) -> Result<(ParseStatus, RequestHead), HttpError> {
        let mut head = RequestHead::new();
        let status = head.parse(input, limits)?;
        Ok((status, head))
    }

    fn parse_resp(input: &[u8]) -> Result<(ParseStatus, ResponseHead), HttpError> {
        let mut head = ResponseHead::new();
        let status = head.parse(input, &Limits::default())?;
        Ok((status, head))
    }

    #[test]
    fn parses_a_complete_request_and_reports_where_the_body_starts() {
        let input = b"PUT /bucket/key?x-id=PutObject HTTP/1.1\r\nHost: s3.local\r\nContent-Length: 5\r\n\r\nhello";
        let (status, head) = parse_req(input).unwrap();
        assert_eq!(status, ParseStatus::Complete(input.len() - 5));
        assert_eq!(head.method(), "PUT");
        assert_eq!(head.target(), "/bucket/key?x-id=PutObject");
        assert_eq!(head.version(), Version::Http11);
        assert_eq!(head.headers().get_str("host"), Some("s3.local"));
        assert_eq!(head.headers().len(), 2);
    }

    #[test]
    fn every_prefix_of_a_head_is_partial() {
        let input = b"GET /k HTTP/1.1\r\nHost: h\r\nRange: bytes=0-9\r\n\r\n";
        for end in 0..input.len() {
            let (status, head) = parse_req(&input[..end]).unwrap();
            assert_eq!(status, ParseStatus::Partial, "prefix of {end} bytes");
            assert_eq!(head.method(), "");
        }
        assert_eq!(
            parse_req(input).unwrap().0,
            ParseStatus::Complete(input.len())
        );
    }

    #[test]
    fn parses_a_response_with_and_without_reason() {
        let (status, head) =
            parse_resp(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert_eq!(status, ParseStatus::Complete(45));
        assert_eq!(head.status(), 404);
        assert_eq!(head.reason(), "Not Found");
        let (_, head) = parse_resp(b"HTTP/1.0 200\r\n\r\n").unwrap();
        assert_eq!(head.status(), 200);
        assert_eq!(head.reason(), "");
        assert_eq!(head.version(), Version::Http10);
    }

    #[test]
    fn rejects_malformed_heads_with_the_part_that_is_wrong() {
        let cases: &[(&[u8], &str)] = &[
            (b"GET / HTTP/2.0\r\n\r\n", "HTTP version"),
            (b"G@T / HTTP/1.1\r\n\r\n", "method token"),
            (b"GET / HTTP/1.1\r\nBad Name: v\r\n\r\n", "header name"),
            (b"GET / HTTP/1.1\r\nName: a\x01b\r\n\r\n", "header value"),
            (b"GET / HTTP/1.1\r\nName: v\r\r\n\r\n", "header value"),
        ];
        for (input, what) in cases {
            match parse_req(input) {
                Err(HttpError::MalformedHead { what: got }) => {
                    assert_eq!(got, *what, "{:?}", String::from_utf8_lossy(input))
                }
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
            }
        }
        assert!(matches!(
            parse_resp(b"HTTP/1.1 2x0 OK\r\n\r\n"),
            Err(HttpError::MalformedHead {
                what: "status code"
            })
        ));
        assert!(matches!(
            parse_resp(b"HTTP/1.1 099 Low\r\n\r\n"),
            Err(HttpError::MalformedHead {
                what: "status code"
            })
        ));
    }

    #[test]
    fn obsolete_line_folding_is_rejected() {
        assert!(parse_req(b"GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n").is_err());
        assert!(parse_resp(b"HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n").is_err());
    }

    #[test]
    fn limit_head_bytes() {
        let limits = Limits {
            max_head_bytes: 64,
            ..Limits::default()
        };
        let big = format!("GET / HTTP/1.1\r\nX-Pad: {}\r\n\r\n", "a".repeat(60));
        // Complete but too large.
        assert!(matches!(
            parse_req_with(big.as_bytes(), &limits),
            Err(HttpError::HeadTooLarge { limit: 64 })
        ));
        // Incomplete and already at the limit: it can never fit.
        assert!(matches!(
            parse_req_with(&big.as_bytes()[..64], &limits),
            Err(HttpError::HeadTooLarge { limit: 64 })
        ));
        assert_eq!(
            parse_req_with(&big.as_bytes()[..63], &limits).unwrap().0,
            ParseStatus::Partial
        );
    }

    #[test]
    fn limit_header_count() {
        let limits = Limits {
            max_headers: 3,
            ..Limits::default()
        };
        let three = b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
        assert!(parse_req_with(three, &limits).is_ok());
        let four = b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
        assert!(matches!(
            parse_req_with(four, &limits),
            Err(HttpError::TooManyHeaders { limit: 3 })
        ));
        let mut resp = ResponseHead::new();
        assert!(matches!(
            resp.parse(
                b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n",
                &limits
            ),
            Err(HttpError::TooManyHeaders { limit: 3 })
        ));
    }

    #[test]
    fn limit_start_line_even_before_it_ends() {
        let limits = Limits {
            max_start_line: 20,
            ..Limits::default()
        };
        // "GET /0123456 HTTP/1.1" is 21 bytes.
        let long = b"GET /0123456 HTTP/1.1\r\n\r\n";
        assert!(matches!(
            parse_req_with(long, &limits),
            Err(HttpError::StartLineTooLong { limit: 20 })
        ));
        assert!(matches!(
            parse_req_with(&long[..21], &limits),
            Err(HttpError::StartLineTooLong { limit: 20 })
        ));
        // Exactly at the limit, with the CR of the line ending already in: still fine.
        let fits = b"GET /012345 HTTP/1.1\r\n\r\n";
        assert!(parse_req_with(fits, &limits).is_ok());
        assert_eq!(
            parse_req_with(&fits[..21], &limits).unwrap().0,
            ParseStatus::Partial
        );
        let mut resp = ResponseHead::new();
        assert!(matches!(
            resp.parse(b"HTTP/1.1 200 A very long reason\r\n\r\n", &limits),
            Err(HttpError::StartLineTooLong { limit: 20 })
        ));
    }

    #[test]
    fn limit_header_line() {
        let limits = Limits {
            max_header_line: 10,
            ..Limits::default()
        };
        // "X-A: 12345" is 10 bytes, "X-A: 123456" is 11.
        assert!(parse_req_with(b"GET / HTTP/1.1\r\nX-A: 12345\r\n\r\n", &limits).is_ok());
        assert!(matches!(
            parse_req_with(b"GET / HTTP/1.1\r\nX-A: 123456\r\n\r\n", &limits),
            Err(HttpError::HeaderLineTooLong { limit: 10 })
        ));
        assert!(matches!(
            parse_req_with(b"GET / HTTP/1.1\r\nX-Long-Name-Here:\r\n\r\n", &limits),
            Err(HttpError::HeaderLineTooLong { limit: 10 })
        ));
    }

    #[test]
    fn keep_alive_follows_version_and_connection_options() {
        let ka = |input: &[u8]| parse_req(input).unwrap().1.keep_alive();
        assert!(ka(b"GET / HTTP/1.1\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nConnection: TE, Close\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n"
        ));
        let (_, resp) = parse_resp(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").unwrap();
        assert!(!resp.keep_alive());
    }

    #[test]
    fn expect_continue_only_in_http11() {
        let ec = |input: &[u8]| parse_req(input).unwrap().1.expects_continue();
        assert!(ec(b"PUT / HTTP/1.1\r\nExpect: 100-Continue\r\n\r\n"));
        assert!(!ec(b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n"));
        assert!(!ec(b"PUT / HTTP/1.1\r\n\r\n"));
        assert!(!ec(b"PUT / HTTP/1.1\r\nExpect: something-else\r\n\r\n"));
    }

    #[test]
    fn serialises_heads_that_parse_back_identically() {
        let mut req = RequestHead::with_request_line("PUT", "/b/k%20x?partNumber=1").unwrap();
        req.headers_mut().append("Host", "127.0.0.1:9000").unwrap();
        req.headers_mut().set_content_length(42);
        let mut out = Vec::new();
        req.write_to(&mut out);
        assert_eq!(
            out,
            b"PUT /b/k%20x?partNumber=1 HTTP/1.1\r\nHost: 127.0.0.1:9000\r\nContent-Length: 42\r\n\r\n"
        );
        let (status, parsed) = parse_req(&out).unwrap();
        assert_eq!(status, ParseStatus::Complete(out.len()));
        assert_eq!(parsed, req);

        let mut resp = ResponseHead::with_status(206).unwrap();
        resp.headers_mut().append("ETag", "\"x\"").unwrap();
        out.clear();
        resp.write_to(&mut out);
        assert_eq!(out, b"HTTP/1.1 206 Partial Content\r\nETag: \"x\"\r\n\r\n");
        assert_eq!(parse_resp(&out).unwrap().1, resp);
    }

    #[test]
    fn outgoing_request_and_status_lines_are_validated() {
        assert!(RequestHead::with_request_line("GE T", "/").is_err());
        assert!(RequestHead::with_request_line("GET", "/a b").is_err());
        assert!(RequestHead::with_request_line("GET", "/a\r\nX: y").is_err());
        assert!(RequestHead::with_request_line("GET", "").is_err());
        assert!(ResponseHead::with_status(99).is_err());
        assert!(ResponseHead::with_status(1000).is_err());
        let mut resp = ResponseHead::new();
        assert!(resp.set_status(200, "OK\r\nX: y").is_err());
    }

    #[test]
    fn reparsing_into_a_used_head_reuses_its_buffers() {
        let mut head = RequestHead::new();
        let first = b"GET /a-long-target-name HTTP/1.1\r\nHost: example\r\nX-Amz-Date: 20240101T000000Z\r\n\r\n";
        head.parse(first, &Limits::default()).unwrap();
        let line_cap = head.line.capacity();
        let second = b"PUT /short HTTP/1.1\r\nHost: ex\r\n\r\n";
        head.parse(second, &Limits::default()).unwrap();
        assert_eq!(head.method(), "PUT");
        assert_eq!(head.headers().len(), 1);
        assert_eq!(head.line.capacity(), line_cap);
    }
}
