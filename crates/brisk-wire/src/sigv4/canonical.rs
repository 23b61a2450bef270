//! The canonical request, as S3 computes it.
//!
//! ```text
//! METHOD \n
//! path exactly as sent (S3 neither normalises `.`/`..` nor double-encodes) \n
//! query pairs, each name and value percent-decoded then re-encoded with the unreserved set
//!   `A-Za-z0-9-._~`, sorted by name then value, joined by `&` \n
//! lower-cased header name ":" value trimmed, inner runs of blanks collapsed, repeats joined by "," \n ...
//! \n
//! signed header names joined by ";" \n
//! payload hash
//! ```

use percent_encoding::percent_decode;
use std::borrow::Cow;

use super::error::SigningError;

/// The parts of a request that SigV4 signs, independent of any HTTP library.
#[derive(Debug, Clone, Copy)]
pub struct SignableRequest<'a> {
    /// The method, e.g. `GET` (upper-cased into the canonical request).
    pub method: &'a str,
    /// The request path exactly as sent on the wire, already percent-encoded (see [`encode_key_path`]).
    pub path: &'a str,
    /// The raw query string without the leading `?` (empty when there is none).
    pub query: &'a str,
    /// The request headers, in wire order, repeated names allowed. When signing, every header given here
    /// is signed (include `host`); `x-amz-date`, `x-amz-content-sha256` and `x-amz-security-token` are
    /// added by the signer and must not be passed.
    pub headers: &'a [(&'a str, &'a [u8])],
}

/// Is `b` in the SigV4 unreserved set, the only bytes left unencoded?
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Appends `bytes` percent-encoded with the SigV4 rules (upper-case hex; `/` kept when `keep_slash`).
pub(crate) fn uri_encode_into(out: &mut String, bytes: &[u8], keep_slash: bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if is_unreserved(b) || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
}

/// The request path for an S3 object key: `/` followed by the key with every byte outside
/// `A-Za-z0-9-._~/` percent-encoded as UTF-8. `/` stays, so `a/b` stays two path segments, exactly as
/// the AWS SDKs send it. Prefix a path-style bucket yourself: `format!("/{bucket}{}", encode_key_path(key))`.
pub fn encode_key_path(key: &str) -> String {
    let mut out = String::with_capacity(1 + key.len() * 3);
    out.push('/');
    uri_encode_into(&mut out, key.as_bytes(), true);
    out
}

/// Re-encodes one raw query component: percent-decoded (a `%` not followed by two hex digits stays
/// literal; `+` is a literal plus, not a space) then encoded with the unreserved set.
fn canonical_query_component(raw: &str, out: &mut String) {
    let decoded: Vec<u8> = percent_decode(raw.as_bytes()).collect();
    uri_encode_into(out, &decoded, false);
}

/// The canonical query string of a raw query. Pairs whose canonical name equals `skip` (the presigned
/// `X-Amz-Signature`) are left out; empty `&&` segments are ignored.
pub fn canonical_query_string(raw_query: &str, skip: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for segment in raw_query.split('&').filter(|s| !s.is_empty()) {
        let (name, value) = segment.split_once('=').unwrap_or((segment, ""));
        let mut n = String::with_capacity(name.len());
        canonical_query_component(name, &mut n);
        if skip == Some(n.as_str()) {
            continue;
        }
        let mut v = String::with_capacity(value.len());
        canonical_query_component(value, &mut v);
        pairs.push((n, v));
    }
    if pairs.is_empty() {
        // The usual GET or PUT of an object: no query, and no allocation for it.
        return String::new();
    }
    pairs.sort_unstable();
    let mut out = String::with_capacity(raw_query.len() + 16);
    for (i, (n, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(n);
        out.push('=');
        out.push_str(v);
    }
    out
}

/// Appends a header value trimmed of leading and trailing blanks (space, tab) with inner runs of
/// blanks collapsed to one space (SigV4's `Trimall`).
fn push_trimmed_value(out: &mut Vec<u8>, value: &[u8]) {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let mut pending_space = false;
    let mut started = false;
    for b in value {
        if blank(b) {
            pending_space = started;
        } else {
            if pending_space {
                out.push(b' ');
                pending_space = false;
            }
            out.push(*b);
            started = true;
        }
    }
}

/// Is `name` an HTTP token (RFC 9110 `tchar`s)? The HTTP codec's definition, for `&str` names.
pub(crate) fn is_token(name: &str) -> bool {
    crate::http::headers::is_token(name.as_bytes())
}

/// One signed header: its lower-case name and its values in request order.
#[derive(Debug)]
pub(crate) struct HeaderGroup<'a> {
    /// Borrowed from the request when it is lower-case already (a verified `SignedHeaders` list, or
    /// the lower-case names brisk sends), lower-cased into a copy otherwise.
    pub name: Cow<'a, str>,
    pub values: HeaderValues<'a>,
}

/// The values of one signed header in request order. A header is nearly always sent once, so the
/// first value is held inline and only repeats go into a `Vec`, which stays unallocated otherwise:
/// grouping a request's headers costs no allocation per header.
#[derive(Debug, Default)]
pub(crate) struct HeaderValues<'a> {
    first: Option<&'a [u8]>,
    more: Vec<&'a [u8]>,
}

impl<'a> HeaderValues<'a> {
    /// One value.
    pub fn one(value: &'a [u8]) -> Self {
        Self {
            first: Some(value),
            more: Vec::new(),
        }
    }

    /// Appends the next value.
    pub fn push(&mut self, value: &'a [u8]) {
        match self.first {
            None => self.first = Some(value),
            Some(_) => self.more.push(value),
        }
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.first.into_iter().chain(self.more.iter().copied())
    }
}

impl<'a> FromIterator<&'a [u8]> for HeaderValues<'a> {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(values: I) -> Self {
        let mut all = Self::default();
        for value in values {
            all.push(value);
        }
        all
    }
}

/// Groups `(name, value)` headers by lower-cased name, sorted by name, values in their original order.
pub(crate) fn group_headers<'a>(
    headers: impl Iterator<Item = (&'a str, &'a [u8])>,
) -> Result<Vec<HeaderGroup<'a>>, SigningError> {
    let mut flat: Vec<(Cow<'a, str>, &'a [u8])> = Vec::with_capacity(headers.size_hint().0);
    for (name, value) in headers {
        if !is_token(name) {
            return Err(SigningError::InvalidHeaderName { name: name.into() });
        }
        if value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(SigningError::InvalidHeaderValue { name: name.into() });
        }
        // brisk's own requests name their headers in lower case: borrowed, no copy per header.
        let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(name.to_ascii_lowercase())
        } else {
            Cow::Borrowed(name)
        };
        flat.push((name, value));
    }
    // Stable: repeated headers keep their wire order, which the joined value depends on.
    flat.sort_by(|a, b| a.0.cmp(&b.0));
    let mut groups: Vec<HeaderGroup<'a>> = Vec::with_capacity(flat.len());
    for (name, value) in flat {
        match groups.last_mut() {
            Some(g) if g.name == name => g.values.push(value),
            _ => groups.push(HeaderGroup {
                name,
                values: HeaderValues::one(value),
            }),
        }
    }
    Ok(groups)
}

/// A canonical request and the `SignedHeaders` list it contains.
#[derive(Debug, Clone)]
pub(crate) struct CanonicalRequest {
    pub bytes: Vec<u8>,
    pub signed_headers: String,
}

impl CanonicalRequest {
    /// Builds the canonical request from already canonical parts. `groups` are written in the given
    /// order, which is also the order of the signed header list.
    pub fn build(
        method: &str,
        path: &str,
        canonical_query: &str,
        groups: &[HeaderGroup<'_>],
        payload_hash: &str,
    ) -> Self {
        let values_len: usize = groups
            .iter()
            .map(|g| g.name.len() + 2 + g.values.iter().map(|v| v.len() + 1).sum::<usize>())
            .sum();
        let mut bytes = Vec::with_capacity(
            method.len() + path.len() + canonical_query.len() + 2 * values_len + 80,
        );
        for b in method.bytes() {
            bytes.push(b.to_ascii_uppercase());
        }
        bytes.push(b'\n');
        bytes.extend_from_slice(path.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(canonical_query.as_bytes());
        bytes.push(b'\n');
        let mut signed_headers = String::with_capacity(values_len);
        for (i, g) in groups.iter().enumerate() {
            bytes.extend_from_slice(g.name.as_bytes());
            bytes.push(b':');
            for (j, v) in g.values.iter().enumerate() {
                if j > 0 {
                    bytes.push(b',');
                }
                push_trimmed_value(&mut bytes, v);
            }
            bytes.push(b'\n');
            if i > 0 {
                signed_headers.push(';');
            }
            signed_headers.push_str(&g.name);
        }
        bytes.push(b'\n');
        bytes.extend_from_slice(signed_headers.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(payload_hash.as_bytes());
        Self {
            bytes,
            signed_headers,
        }
    }

    /// The canonical request as text (lossy for non-UTF-8 header bytes), for error reports.
    pub fn to_text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_keep_slashes_and_encode_everything_else() {
        assert_eq!(encode_key_path("test.txt"), "/test.txt");
        assert_eq!(encode_key_path("a b/c+d=e"), "/a%20b/c%2Bd%3De");
        assert_eq!(encode_key_path("~x_y-z.~"), "/~x_y-z.~");
        assert_eq!(encode_key_path("%41"), "/%2541");
        assert_eq!(encode_key_path("é/../"), "/%C3%A9/../");
        assert_eq!(encode_key_path("/lead"), "//lead");
        assert_eq!(encode_key_path(""), "/");
    }

    #[test]
    fn query_is_decoded_reencoded_and_sorted() {
        assert_eq!(
            canonical_query_string("prefix=J&max-keys=2", None),
            "max-keys=2&prefix=J"
        );
        assert_eq!(canonical_query_string("lifecycle", None), "lifecycle=");
        assert_eq!(canonical_query_string("", None), "");
        // Repeated names sort by value; reserved characters and `+` are encoded; `%7E` decodes to `~`.
        assert_eq!(
            canonical_query_string("a=z&a=b&x=%7E/:@+&b=%zz", None),
            "a=b&a=z&b=%25zz&x=~%2F%3A%40%2B"
        );
        // Lower-case hex escapes are normalised to upper case.
        assert_eq!(canonical_query_string("k=%c3%a9", None), "k=%C3%A9");
        assert_eq!(
            canonical_query_string("X-Amz-Signature=abc&a=1", Some("X-Amz-Signature")),
            "a=1"
        );
        assert_eq!(canonical_query_string("a&&b=", None), "a=&b=");
    }

    #[test]
    fn header_values_are_trimmed_and_collapsed() {
        let mut out = Vec::new();
        push_trimmed_value(&mut out, b"  a   b \t c  ");
        assert_eq!(out, b"a b c");
        out.clear();
        push_trimmed_value(&mut out, b" \t ");
        assert_eq!(out, b"");
    }

    #[test]
    fn headers_group_by_lowercase_name_in_wire_order() {
        let headers: [(&str, &[u8]); 4] = [
            ("X-Amz-Meta-A", b"2"),
            ("Host", b"h"),
            ("x-amz-meta-a", b" 1 "),
            ("Content-Type", b"t"),
        ];
        let groups = group_headers(headers.iter().copied()).unwrap();
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_ref()).collect();
        assert_eq!(names, ["content-type", "host", "x-amz-meta-a"]);
        let cr = CanonicalRequest::build("get", "/", "", &groups, "UNSIGNED-PAYLOAD");
        assert_eq!(
            cr.to_text(),
            "GET\n/\n\ncontent-type:t\nhost:h\nx-amz-meta-a:2,1\n\n\
             content-type;host;x-amz-meta-a\nUNSIGNED-PAYLOAD"
        );
    }

    #[test]
    fn lower_case_names_are_borrowed_and_mixed_case_ones_lowered_alike() {
        let lower: [(&str, &[u8]); 2] = [("x-amz-date", b"d"), ("host", b"h")];
        let mixed: [(&str, &[u8]); 2] = [("X-Amz-Date", b"d"), ("Host", b"h")];
        let borrowed = group_headers(lower.iter().copied()).unwrap();
        assert!(
            borrowed.iter().all(|g| matches!(g.name, Cow::Borrowed(_))),
            "no copy of a name already in lower case"
        );
        let owned = group_headers(mixed.iter().copied()).unwrap();
        assert!(owned.iter().all(|g| matches!(g.name, Cow::Owned(_))));
        let text = |groups: &[HeaderGroup<'_>]| {
            CanonicalRequest::build("GET", "/", "", groups, "UNSIGNED-PAYLOAD").to_text()
        };
        assert_eq!(text(&borrowed), text(&owned));
    }

    #[test]
    fn invalid_header_names_and_values_are_rejected() {
        let bad_name: [(&str, &[u8]); 1] = [("Bad Name", b"v")];
        assert!(matches!(
            group_headers(bad_name.iter().copied()),
            Err(SigningError::InvalidHeaderName { .. })
        ));
        let bad_value: [(&str, &[u8]); 1] = [("x-a", b"v\r\nInjected: 1")];
        assert!(matches!(
            group_headers(bad_value.iter().copied()),
            Err(SigningError::InvalidHeaderValue { .. })
        ));
    }
}
