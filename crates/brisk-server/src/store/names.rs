//! Which bucket names and keys the store accepts.
//!
//! Bucket names follow S3's rules for general purpose buckets because they travel in host names
//! (virtual-hosted-style requests). Keys are opaque: any UTF-8 string of 1 to [`MAX_KEY_BYTES`] bytes is
//! valid, including `..`, `.`, empty segments, leading slashes and control characters. Keys never become
//! file names (object data files are named by a generated id), so no key can reach outside the root.

use super::error::{Result, StoreError};

/// Longest key S3 accepts, in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// Shortest bucket name S3 accepts.
pub const MIN_BUCKET_NAME_LEN: usize = 3;

/// Longest bucket name S3 accepts.
pub const MAX_BUCKET_NAME_LEN: usize = 63;

/// Prefixes S3 reserves for its own bucket kinds.
const RESERVED_PREFIXES: &[&str] = &["xn--", "sthree-", "amzn-s3-demo-"];

/// Suffixes S3 reserves for access point aliases and other bucket kinds.
const RESERVED_SUFFIXES: &[&str] = &["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];

/// Checks `key` against S3's key rules: not empty, at most [`MAX_KEY_BYTES`] bytes.
pub fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(StoreError::EmptyKey);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::KeyTooLong {
            len: key.len(),
            max: MAX_KEY_BYTES,
        });
    }
    Ok(())
}

/// Checks `name` against S3's rules for general purpose bucket names.
pub fn validate_bucket_name(name: &str) -> Result<()> {
    bucket_name_problem(name).map_or(Ok(()), |reason| {
        Err(StoreError::InvalidBucketName {
            name: name.to_owned(),
            reason,
        })
    })
}

fn bucket_name_problem(name: &str) -> Option<&'static str> {
    let bytes = name.as_bytes();
    if bytes.len() < MIN_BUCKET_NAME_LEN || bytes.len() > MAX_BUCKET_NAME_LEN {
        return Some("must be 3 to 63 characters long");
    }
    if !bytes
        .iter()
        .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Some("may contain only lowercase letters, digits, '-' and '.'");
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return Some("must begin and end with a letter or digit");
    }
    if name.contains("..") {
        return Some("must not contain two adjacent periods");
    }
    if looks_like_ipv4(name) {
        return Some("must not be formatted as an IP address");
    }
    if RESERVED_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return Some("starts with a prefix S3 reserves");
    }
    if RESERVED_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return Some("ends with a suffix S3 reserves");
    }
    None
}

/// `true` for four dot-separated groups of 1 to 3 digits, the form S3 rejects (`192.168.5.4`).
fn looks_like_ipv4(name: &str) -> bool {
    let groups: Vec<&str> = name.split('.').collect();
    groups.len() == 4
        && groups
            .iter()
            .all(|g| (1..=3).contains(&g.len()) && g.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_bucket_names() {
        for name in [
            "abc",
            "my-bucket",
            "my.bucket.example",
            "a1b2",
            "123",
            "1.2.3",
            "1.2.3.4.5",
            &"a".repeat(63),
        ] {
            validate_bucket_name(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn rejects_invalid_bucket_names() {
        for name in [
            "",
            "ab",
            &"a".repeat(64),
            "MyBucket",
            "my_bucket",
            "-abc",
            "abc-",
            ".abc",
            "abc.",
            "a..b",
            "192.168.5.4",
            "1.2.3.4",
            "xn--abc",
            "sthree-abc",
            "amzn-s3-demo-x",
            "abc-s3alias",
            "abc--ol-s3",
            "abc.mrap",
            "abc--x-s3",
            "abc--table-s3",
            "ab c",
            "abc/",
            "äbc",
        ] {
            assert!(
                matches!(
                    validate_bucket_name(name),
                    Err(StoreError::InvalidBucketName { .. })
                ),
                "{name:?} was accepted"
            );
        }
    }

    #[test]
    fn key_limits() {
        assert!(matches!(validate_key(""), Err(StoreError::EmptyKey)));
        validate_key("a").unwrap();
        validate_key(&"k".repeat(MAX_KEY_BYTES)).unwrap();
        assert!(matches!(
            validate_key(&"k".repeat(MAX_KEY_BYTES + 1)),
            Err(StoreError::KeyTooLong {
                len: 1025,
                max: 1024
            })
        ));
        // 342 three-byte characters are 1026 bytes: the limit is in bytes, not characters.
        assert!(validate_key(&"€".repeat(342)).is_err());
        for key in ["..", ".", "a//b", "/lead", "\u{1}\n\t", "../../etc/passwd"] {
            validate_key(key).unwrap();
        }
    }
}
