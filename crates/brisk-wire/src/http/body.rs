//! How long a message body is: the framing decision of RFC 9112 §6.3, strict where the RFC allows a
//! choice.
//!
//! Two parties that disagree on where a body ends disagree on where the next request starts (request
//! smuggling), so everything ambiguous is rejected: `Content-Length` together with `Transfer-Encoding`,
//! differing lengths, any coding other than a lone `chunked`, lengths with signs, spaces or overflow.

use super::error::HttpError;
use super::head::{RequestHead, ResponseHead, Version};
use super::headers::{Headers, trim_ows};

/// How a message's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body at all.
    Empty,
    /// Exactly this many bytes follow the head (a length of 0 is [`Empty`](Self::Empty)).
    ContentLength(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// The body runs until the server closes the connection (responses only).
    UntilClose,
}

impl BodyFraming {
    /// The exact body length when it is known from the head.
    pub fn known_length(self) -> Option<u64> {
        match self {
            Self::Empty => Some(0),
            Self::ContentLength(n) => Some(n),
            Self::Chunked | Self::UntilClose => None,
        }
    }
}

impl RequestHead {
    /// The request's `Content-Length`, validated (see [`content_length`]).
    pub fn content_length(&self) -> Result<Option<u64>, HttpError> {
        content_length(self.headers())
    }

    /// How the request's body is delimited: chunked, Content-Length, or no body (RFC 9112 §6.3 rules
    /// 4 to 7; a request never runs until close).
    pub fn body_framing(&self) -> Result<BodyFraming, HttpError> {
        framing_from_fields(self.version(), self.headers(), BodyFraming::Empty)
    }
}

impl ResponseHead {
    /// The response's `Content-Length`, validated (see [`content_length`]).
    pub fn content_length(&self) -> Result<Option<u64>, HttpError> {
        content_length(self.headers())
    }

    /// How the response's body is delimited, given the method of the request it answers: no body for
    /// `HEAD`, `1xx`, `204` and `304` whatever the fields say (RFC 9112 §6.3 rule 1), otherwise chunked,
    /// Content-Length, or until the connection closes.
    pub fn body_framing(&self, request_method: &str) -> Result<BodyFraming, HttpError> {
        let status = self.status();
        if request_method == "HEAD" || self.is_interim() || status == 204 || status == 304 {
            return Ok(BodyFraming::Empty);
        }
        framing_from_fields(self.version(), self.headers(), BodyFraming::UntilClose)
    }
}

/// The framing the fields of a message announce; `absent` is used when they announce none.
fn framing_from_fields(
    version: Version,
    headers: &Headers,
    absent: BodyFraming,
) -> Result<BodyFraming, HttpError> {
    let has_te = headers.contains("transfer-encoding");
    let length = content_length(headers)?;
    if has_te {
        if length.is_some() {
            return Err(HttpError::ConflictingFraming);
        }
        if version == Version::Http10 {
            return Err(HttpError::TransferEncodingInHttp10);
        }
        check_lone_chunked(headers)?;
        return Ok(BodyFraming::Chunked);
    }
    Ok(match length {
        Some(0) => BodyFraming::Empty,
        Some(n) => BodyFraming::ContentLength(n),
        None => absent,
    })
}

/// Accepts only a transfer-coding list that is exactly `chunked` (case-insensitive, spread over any
/// number of field lines, empty list elements ignored as RFC 9110 §5.6.1 allows).
fn check_lone_chunked(headers: &Headers) -> Result<(), HttpError> {
    let mut codings = headers
        .get_all("transfer-encoding")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(trim_ows)
        .filter(|c| !c.is_empty());
    match (codings.next(), codings.next()) {
        (Some(only), None) if only.eq_ignore_ascii_case(b"chunked") => Ok(()),
        _ => Err(HttpError::UnsupportedTransferCoding),
    }
}

/// The `Content-Length` of a message, or `None` when it has none.
///
/// Each value must be `1*DIGIT` fitting in a `u64` (no sign, no inner whitespace). Repeated fields and
/// comma-separated lists are accepted only when every element is the same number (RFC 9110 §8.6);
/// anything else is an error.
pub fn content_length(headers: &Headers) -> Result<Option<u64>, HttpError> {
    let mut found: Option<u64> = None;
    for value in headers.get_all("content-length") {
        for element in value.split(|&b| b == b',') {
            let n = parse_decimal(trim_ows(element)).ok_or(HttpError::InvalidContentLength)?;
            match found {
                Some(previous) if previous != n => return Err(HttpError::DifferingContentLengths),
                _ => found = Some(n),
            }
        }
    }
    Ok(found)
}

/// Parses `1*DIGIT` into a `u64`; `None` on an empty string, any other byte, or overflow. Leading
/// zeros are digits like any other (the header line limit bounds how many there can be).
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Limits;

    fn request(fields: &str) -> RequestHead {
        request_version("1.1", fields)
    }

    fn request_version(version: &str, fields: &str) -> RequestHead {
        let text = format!("PUT /k HTTP/{version}\r\n{fields}\r\n");
        let mut head = RequestHead::new();
        head.parse(text.as_bytes(), &Limits::default()).unwrap();
        head
    }

    fn response(status_and_fields: &str) -> ResponseHead {
        let text = format!("HTTP/1.1 {status_and_fields}\r\n");
        let mut head = ResponseHead::new();
        head.parse(text.as_bytes(), &Limits::default()).unwrap();
        head
    }

    #[test]
    fn request_framings() {
        assert_eq!(request("").body_framing().unwrap(), BodyFraming::Empty);
        assert_eq!(
            request("Content-Length: 0\r\n").body_framing().unwrap(),
            BodyFraming::Empty
        );
        assert_eq!(
            request("Content-Length: 1234\r\n").body_framing().unwrap(),
            BodyFraming::ContentLength(1234)
        );
        assert_eq!(
            request("Transfer-Encoding: Chunked\r\n")
                .body_framing()
                .unwrap(),
            BodyFraming::Chunked
        );
        assert_eq!(
            request("Content-Length: 18446744073709551615\r\n")
                .body_framing()
                .unwrap(),
            BodyFraming::ContentLength(u64::MAX)
        );
    }

    #[test]
    fn response_framings() {
        let ok_len = response("200 OK\r\nContent-Length: 7\r\n");
        assert_eq!(
            ok_len.body_framing("GET").unwrap(),
            BodyFraming::ContentLength(7)
        );
        assert_eq!(ok_len.body_framing("HEAD").unwrap(), BodyFraming::Empty);
        assert_eq!(
            response("200 OK\r\n").body_framing("GET").unwrap(),
            BodyFraming::UntilClose
        );
        assert_eq!(
            response("200 OK\r\nTransfer-Encoding: chunked\r\n")
                .body_framing("GET")
                .unwrap(),
            BodyFraming::Chunked
        );
        for status in ["100 Continue", "204 No Content", "304 Not Modified"] {
            let head = response(&format!("{status}\r\nContent-Length: 10\r\n"));
            assert_eq!(head.body_framing("GET").unwrap(), BodyFraming::Empty);
        }
    }

    #[test]
    fn rejects_content_length_with_transfer_encoding() {
        let head = request("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n");
        assert!(matches!(
            head.body_framing(),
            Err(HttpError::ConflictingFraming)
        ));
        let head = response("200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n");
        assert!(matches!(
            head.body_framing("GET"),
            Err(HttpError::ConflictingFraming)
        ));
    }

    #[test]
    fn rejects_every_coding_but_a_lone_chunked() {
        for te in [
            "gzip",
            "gzip, chunked",
            "chunked, gzip",
            "chunked, chunked",
            "identity",
            "chunkedx",
            "",
        ] {
            let head = request(&format!("Transfer-Encoding: {te}\r\n"));
            assert!(
                matches!(
                    head.body_framing(),
                    Err(HttpError::UnsupportedTransferCoding)
                ),
                "{te:?}"
            );
        }
        let split = request("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n");
        assert!(matches!(
            split.body_framing(),
            Err(HttpError::UnsupportedTransferCoding)
        ));
        let twice = request("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n");
        assert!(matches!(
            twice.body_framing(),
            Err(HttpError::UnsupportedTransferCoding)
        ));
        // Empty list elements are not codings.
        let sparse = request("Transfer-Encoding: , chunked ,\r\n");
        assert_eq!(sparse.body_framing().unwrap(), BodyFraming::Chunked);
    }

    #[test]
    fn rejects_transfer_encoding_in_http10() {
        let head = request_version("1.0", "Transfer-Encoding: chunked\r\n");
        assert!(matches!(
            head.body_framing(),
            Err(HttpError::TransferEncodingInHttp10)
        ));
    }

    #[test]
    fn rejects_malformed_content_lengths() {
        for value in [
            "-1",
            "+5",
            "5 5",
            "0x10",
            "abc",
            "1.0",
            "5;",
            "18446744073709551616",
            "99999999999999999999",
            ",",
            "5,",
            "\u{663}",
        ] {
            let head = request(&format!("Content-Length: {value}\r\n"));
            assert!(
                matches!(head.body_framing(), Err(HttpError::InvalidContentLength)),
                "{value:?}: {:?}",
                head.body_framing()
            );
        }
        let empty = request("Content-Length: \r\n");
        assert!(matches!(
            empty.body_framing(),
            Err(HttpError::InvalidContentLength)
        ));
    }

    #[test]
    fn identical_repeats_are_accepted_and_differing_ones_rejected() {
        let same = request("Content-Length: 42\r\ncontent-length: 42\r\n");
        assert_eq!(same.body_framing().unwrap(), BodyFraming::ContentLength(42));
        let list = request("Content-Length: 42 , 42,42\r\n");
        assert_eq!(list.body_framing().unwrap(), BodyFraming::ContentLength(42));
        let leading_zeros = request("Content-Length: 0000000000000000000000042\r\n");
        assert_eq!(
            leading_zeros.body_framing().unwrap(),
            BodyFraming::ContentLength(42)
        );
        let differing = request("Content-Length: 42\r\nContent-Length: 43\r\n");
        assert!(matches!(
            differing.body_framing(),
            Err(HttpError::DifferingContentLengths)
        ));
        let differing_list = request("Content-Length: 42, 7\r\n");
        assert!(matches!(
            differing_list.body_framing(),
            Err(HttpError::DifferingContentLengths)
        ));
        assert_eq!(same.content_length().unwrap(), Some(42));
        assert_eq!(request("").content_length().unwrap(), None);
    }
}
