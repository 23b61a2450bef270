//! Percent-encoding for Azure request URLs.
//!
//! Shared Key signs the path exactly as sent and the query values decoded, so any encoding the server
//! decodes back to the same bytes would do; these encoders pick the one that leaves no room for a
//! server or proxy to normalize: everything but the RFC 3986 unreserved characters is escaped (and the
//! `/` of blob names kept, since it separates virtual directories). In particular `+` is always sent as
//! `%2B`: servers disagree on whether a literal `+` in a query means a space (Azurite reads it so).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but the RFC 3986 unreserved characters.
pub(crate) const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// [`QUERY_VALUE`] keeping `/`.
pub(crate) const BLOB_NAME: &AsciiSet = &QUERY_VALUE.remove(b'/');

/// A blob name (or container name) as a URL path: unreserved characters and `/` kept, every other
/// byte of its UTF-8 escaped (`a b+c/é` becomes `a%20b%2Bc/%C3%A9`).
pub fn encode_blob_name(name: &str) -> String {
    utf8_percent_encode(name, BLOB_NAME).to_string()
}

/// A query parameter value: unreserved characters kept, every other byte escaped (a block id
/// `AAE+/w==` becomes `AAE%2B%2Fw%3D%3D`).
pub fn encode_query_value(value: &str) -> String {
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_slashes_and_unreserved_characters() {
        assert_eq!(
            encode_blob_name("dir/a b+c%?#é~_.-"),
            "dir/a%20b%2Bc%25%3F%23%C3%A9~_.-"
        );
        assert_eq!(encode_query_value("AAE+/w=="), "AAE%2B%2Fw%3D%3D");
        assert_eq!(encode_query_value("a/b c"), "a%2Fb%20c");
    }
}
