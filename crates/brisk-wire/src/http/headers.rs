//! An owned, reusable list of header fields.
//!
//! All names live in one `String` and all values in one `Vec<u8>`, with a small vector of ranges into
//! them: a head costs three allocations the first time and none afterwards when the same `Headers` is
//! cleared and refilled for the next request on a connection.

use std::fmt;
use std::ops::Range;

use super::error::HttpError;

/// Where one field's name and value lie in the shared buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: Range<usize>,
    value: Range<usize>,
}

/// Header fields in the order they were received or added. Lookups are case-insensitive (ASCII), as
/// field names are (RFC 9110 §5.1).
#[derive(Clone, Default)]
pub struct Headers {
    names: String,
    values: Vec<u8>,
    entries: Vec<Entry>,
}

impl Headers {
    /// An empty list; allocates nothing until the first field is added.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list with room for `count` fields totalling `bytes` bytes of names and values.
    pub fn with_capacity(count: usize, bytes: usize) -> Self {
        Self {
            names: String::with_capacity(bytes / 4),
            values: Vec::with_capacity(bytes),
            entries: Vec::with_capacity(count),
        }
    }

    /// Removes every field, keeping the buffers for reuse.
    pub fn clear(&mut self) {
        self.names.clear();
        self.values.clear();
        self.entries.clear();
    }

    /// Makes room for `count` more fields with `name_bytes` of names and `value_bytes` of values,
    /// so that a head whose size is known ahead is built in one allocation per buffer instead of
    /// growing through several.
    pub fn reserve(&mut self, count: usize, name_bytes: usize, value_bytes: usize) {
        self.entries.reserve(count);
        self.names.reserve(name_bytes);
        self.values.reserve(value_bytes);
    }

    /// Number of fields (a repeated name counts once per line).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No fields at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds a field after checking that it can be sent as is: `name` must be a token (RFC 9110 §5.6.2),
    /// `value` must hold no control bytes other than tab and must not start or end with whitespace
    /// (which the receiver would strip). A CR or LF in either would let the value inject header lines.
    pub fn append(&mut self, name: &str, value: impl AsRef<[u8]>) -> Result<(), HttpError> {
        let value = value.as_ref();
        if !is_token(name.as_bytes()) {
            return Err(HttpError::InvalidOutgoing {
                what: "header name",
            });
        }
        if !is_field_value(value) {
            return Err(HttpError::InvalidOutgoing {
                what: "header value",
            });
        }
        self.push_unchecked(name, value);
        Ok(())
    }

    /// Replaces every field named `name` by one field with `value`.
    pub fn set(&mut self, name: &str, value: impl AsRef<[u8]>) -> Result<(), HttpError> {
        let value = value.as_ref();
        // Validate before removing so a rejected value leaves the list unchanged.
        if !is_token(name.as_bytes()) || !is_field_value(value) {
            return self.append(name, value);
        }
        self.remove(name);
        self.push_unchecked(name, value);
        Ok(())
    }

    /// Sets `Content-Length` to `len` without allocating (the digits are formatted on the stack).
    pub fn set_content_length(&mut self, len: u64) {
        let mut digits = [0u8; 20];
        let text = format_decimal(len, &mut digits);
        self.remove("content-length");
        self.push_unchecked("Content-Length", text);
    }

    /// Removes every field named `name`; returns how many were removed. Their bytes are removed from
    /// the buffers too, so setting a field again and again on a reused head does not grow them.
    pub fn remove(&mut self, name: &str) -> usize {
        let mut removed = 0;
        let mut i = self.entries.len();
        while i > 0 {
            i -= 1;
            if !self.names[self.entries[i].name.clone()].eq_ignore_ascii_case(name) {
                continue;
            }
            let entry = self.entries.remove(i);
            self.names.drain(entry.name.clone());
            self.values.drain(entry.value.clone());
            // Fields after it were appended later, so their bytes lie after its bytes.
            for later in &mut self.entries[i..] {
                later.name = later.name.start - entry.name.len()..later.name.end - entry.name.len();
                later.value =
                    later.value.start - entry.value.len()..later.value.end - entry.value.len();
            }
            removed += 1;
        }
        removed
    }

    /// The value of the first field named `name`.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.get_all(name).next()
    }

    /// The value of the first field named `name`, if it is UTF-8.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Whether a field named `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The values of every field named `name`, in order.
    pub fn get_all<'a, 'n>(
        &'a self,
        name: &'n str,
    ) -> impl Iterator<Item = &'a [u8]> + use<'a, 'n> {
        self.iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Every field as `(name, value)`, in order, names as received.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.entries
            .iter()
            .map(|e| (&self.names[e.name.clone()], &self.values[e.value.clone()]))
    }

    /// Whether the comma-separated lists of every `name` field contain `token` (case-insensitive), as
    /// for `Connection: close` or `Connection: keep-alive`.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.get_all(name).any(|v| {
            v.split(|&b| b == b',')
                .any(|item| trim_ows(item).eq_ignore_ascii_case(token.as_bytes()))
        })
    }

    /// Appends a field the parser has already validated.
    pub(crate) fn push_unchecked(&mut self, name: &str, value: &[u8]) {
        let name_start = self.names.len();
        self.names.push_str(name);
        let value_start = self.values.len();
        self.values.extend_from_slice(value);
        self.entries.push(Entry {
            name: name_start..self.names.len(),
            value: value_start..self.values.len(),
        });
    }

    /// Writes every field as `name: value\r\n`.
    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        for (name, value) in self.iter() {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
    }
}

impl PartialEq for Headers {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Headers {}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|(n, v)| (n, String::from_utf8_lossy(v).into_owned())),
            )
            .finish()
    }
}

/// RFC 9110 §5.6.2 `tchar`.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A non-empty run of `tchar`.
pub(crate) fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|&b| is_tchar(b))
}

/// A field value as it survives a round trip: no CTL except HTAB, no leading or trailing SP/HTAB.
pub(crate) fn is_field_value(value: &[u8]) -> bool {
    let allowed = |b: u8| b == b'\t' || (b' '..=0x7e).contains(&b) || b >= 0x80;
    let edge_ok = |b: Option<&u8>| !matches!(b, Some(b' ' | b'\t'));
    value.iter().all(|&b| allowed(b)) && edge_ok(value.first()) && edge_ok(value.last())
}

/// Strips optional whitespace (SP and HTAB) from both ends.
pub(crate) fn trim_ows(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// Formats `n` in decimal into `buf` and returns the digits.
pub(crate) fn format_decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_is_case_insensitive_and_keeps_order() {
        let mut h = Headers::new();
        h.append("Host", "example.com").unwrap();
        h.append("X-Amz-Meta-A", "1").unwrap();
        h.append("x-amz-meta-a", "2").unwrap();
        assert_eq!(h.get("HOST"), Some(&b"example.com"[..]));
        assert_eq!(h.get_str("X-AMZ-META-A"), Some("1"));
        let all: Vec<&[u8]> = h.get_all("x-amz-meta-a").collect();
        assert_eq!(all, vec![&b"1"[..], &b"2"[..]]);
        assert!(h.get("missing").is_none());
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn append_rejects_what_would_inject_lines() {
        let mut h = Headers::new();
        assert!(h.append("X-Evil", "a\r\nInjected: yes").is_err());
        assert!(h.append("Bad Name", "v").is_err());
        assert!(h.append("", "v").is_err());
        assert!(h.append("X-Pad", " padded").is_err());
        assert!(h.append("X-Nul", b"a\0b").is_err());
        assert!(h.is_empty());
        h.append("X-Tab", "a\tb").unwrap();
        h.append("X-Empty", "").unwrap();
        h.append("X-Obs", [0xC3, 0xA9]).unwrap();
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn set_replaces_and_remove_removes_every_match() {
        let mut h = Headers::new();
        h.append("A", "1").unwrap();
        h.append("a", "2").unwrap();
        h.append("B", "3").unwrap();
        h.set("A", "9").unwrap();
        assert_eq!(h.get_all("a").count(), 1);
        assert_eq!(h.get("a"), Some(&b"9"[..]));
        assert!(h.set("A", "bad\n").is_err());
        assert_eq!(h.get("a"), Some(&b"9"[..]));
        assert_eq!(h.remove("b"), 1);
        assert!(!h.contains("B"));
        assert_eq!(h.iter().count(), 1);
    }

    #[test]
    fn removing_keeps_the_other_fields_intact_and_frees_their_bytes() {
        let mut h = Headers::new();
        for (n, v) in [
            ("A", "1"),
            ("Bb", "22"),
            ("a", "333"),
            ("C", "4444"),
            ("A", "5"),
        ] {
            h.append(n, v).unwrap();
        }
        assert_eq!(h.remove("a"), 3);
        let left: Vec<(&str, &[u8])> = h.iter().collect();
        assert_eq!(left, vec![("Bb", &b"22"[..]), ("C", &b"4444"[..])]);
        assert_eq!((h.names.len(), h.values.len()), (3, 6));
        for len in 0..100 {
            h.set_content_length(len);
        }
        assert_eq!(h.get_str("content-length"), Some("99"));
        assert_eq!(h.values.len(), 8);
    }

    #[test]
    fn content_length_is_formatted_in_decimal() {
        let mut h = Headers::new();
        h.set_content_length(0);
        assert_eq!(h.get("content-length"), Some(&b"0"[..]));
        h.set_content_length(u64::MAX);
        assert_eq!(h.get_str("content-length"), Some("18446744073709551615"));
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn tokens_in_comma_lists_are_found() {
        let mut h = Headers::new();
        h.append("Connection", "Upgrade ,  Close").unwrap();
        assert!(h.has_token("connection", "close"));
        assert!(!h.has_token("connection", "keep-alive"));
    }

    #[test]
    fn reuse_after_clear_does_not_allocate() {
        let mut h = Headers::new();
        h.append("Content-Type", "application/octet-stream")
            .unwrap();
        h.append("ETag", "\"abc\"").unwrap();
        let caps = (
            h.names.capacity(),
            h.values.capacity(),
            h.entries.capacity(),
        );
        h.clear();
        h.append("Content-Type", "text/plain").unwrap();
        h.append("ETag", "\"def\"").unwrap();
        assert_eq!(
            caps,
            (
                h.names.capacity(),
                h.values.capacity(),
                h.entries.capacity()
            )
        );
    }
}
