//! Value formats shared by the documents: timestamps, `encoding-type=url`, owners.

use std::str::FromStr;

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// `encoding-type` of a listing request and response. S3 defines one value, `url`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncodingType {
    /// Keys, prefixes, delimiters and markers are percent-encoded in the response.
    Url,
}

impl EncodingType {
    /// The value as S3 writes it.
    pub const fn as_str(self) -> &'static str {
        "url"
    }
}

impl FromStr for EncodingType {
    type Err = ();

    /// Parses `url` (case-insensitively, as S3 accepts `URL`).
    fn from_str(s: &str) -> Result<Self, ()> {
        s.eq_ignore_ascii_case("url").then_some(Self::Url).ok_or(())
    }
}

/// The owner (or initiator) of a bucket, object or upload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Owner {
    /// The canonical user id.
    pub id: String,
    /// The display name (S3 has been dropping it; absent then).
    pub display_name: Option<String>,
}

/// The length of an S3 timestamp, `2009-10-12T17:50:30.000Z`.
pub(crate) const TIMESTAMP_LEN: usize = 24;

/// Formats `t` as S3 writes timestamps in XML: UTC, milliseconds, `Z` (`2009-10-12T17:50:30.000Z`).
/// Sub-millisecond precision is truncated.
pub fn format_timestamp(t: OffsetDateTime) -> String {
    let mut buf = [0u8; TIMESTAMP_LEN];
    String::from_utf8_lossy(write_timestamp(t, &mut buf)).into_owned()
}

/// Formats into `buf` without allocating; returns the written bytes.
pub(crate) fn write_timestamp(t: OffsetDateTime, buf: &mut [u8; TIMESTAMP_LEN]) -> &[u8] {
    let t = t.to_offset(UtcOffset::UTC);
    let (year, month, day) = (t.year(), u8::from(t.month()), t.day());
    let clamped_year = year.clamp(0, 9999) as u32;
    let fields = [
        (0, 4, clamped_year),
        (5, 2, month.into()),
        (8, 2, day.into()),
        (11, 2, t.hour().into()),
        (14, 2, t.minute().into()),
        (17, 2, t.second().into()),
        (20, 3, t.millisecond().into()),
    ];
    buf.copy_from_slice(b"0000-00-00T00:00:00.000Z");
    for (start, width, mut value) in fields {
        for i in (start..start + width).rev() {
            buf[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    &buf[..]
}

/// Parses an XML timestamp: RFC 3339 with any number of fractional digits and any offset (S3 writes
/// milliseconds and `Z`; other servers differ). A timestamp without any offset (as in some examples of
/// the S3 API reference) is taken as UTC, the only zone S3 uses.
pub fn parse_timestamp(text: &str) -> Option<OffsetDateTime> {
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return Some(t);
    }
    let local = format_description!(
        version = 2,
        "[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]"
    );
    PrimitiveDateTime::parse(text, local)
        .ok()
        .map(PrimitiveDateTime::assume_utc)
}

/// Whether `b` is left as is by `encoding-type=url`: RFC 3986 unreserved characters and `/` (S3 keeps the
/// slashes of keys and prefixes readable).
fn is_url_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// Percent-encodes `text` into `out` (cleared first) as `encoding-type=url` listings do. Space becomes
/// `%20` rather than `+`: both decode to a space with form decoding (which botocore uses), only `%20` with
/// plain percent-decoding.
pub(crate) fn url_encode_into(text: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.clear();
    for &b in text.as_bytes() {
        if is_url_safe(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xF)] as char);
        }
    }
}

/// Decodes an `encoding-type=url` value: `%XX` escapes, and `+` as a space (S3 itself writes spaces as
/// `+`). Fails on a malformed escape or when the bytes are not UTF-8.
pub fn url_decode(text: &str) -> Result<String, &'static str> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).ok_or("truncated %-escape")?;
                let hi = (hex[0] as char).to_digit(16).ok_or("invalid %-escape")?;
                let lo = (hex[1] as char).to_digit(16).ok_or("invalid %-escape")?;
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "decodes to bytes that are not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn timestamps_are_written_as_s3_does() {
        assert_eq!(
            format_timestamp(datetime!(2009-10-12 17:50:30.123_456 UTC)),
            "2009-10-12T17:50:30.123Z"
        );
        assert_eq!(
            format_timestamp(datetime!(2024-02-29 23:59:59 +02:00)),
            "2024-02-29T21:59:59.000Z"
        );
    }

    #[test]
    fn timestamps_parse_with_any_precision() {
        let t = datetime!(2009-10-12 17:50:30 UTC);
        assert_eq!(parse_timestamp("2009-10-12T17:50:30.000Z"), Some(t));
        assert_eq!(parse_timestamp("2009-10-12T17:50:30Z"), Some(t));
        assert_eq!(parse_timestamp("2009-10-12T19:50:30.000000+02:00"), Some(t));
        assert_eq!(parse_timestamp("2009-10-12T17:50:30"), Some(t));
        assert_eq!(parse_timestamp("2009-10-12T17:50:30.000"), Some(t));
        assert_eq!(parse_timestamp("2009-10-12 17:50:30"), None);
        assert_eq!(parse_timestamp("2009-10-12T17:50:30.000Zjunk"), None);
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn url_encoding_round_trips_and_keeps_slashes() {
        let mut out = String::new();
        url_encode_into("a b+c/한/%\u{1}&", &mut out);
        assert_eq!(out, "a%20b%2Bc/%ED%95%9C/%25%01%26");
        assert_eq!(url_decode(&out).unwrap(), "a b+c/한/%\u{1}&");
        // S3's own form: spaces as '+'.
        assert_eq!(url_decode("run+books/x.txt").unwrap(), "run books/x.txt");
        assert!(url_decode("%E").is_err());
        assert!(url_decode("%zz").is_err());
        assert!(url_decode("%FF").is_err());
    }
}
