//! Where a command reads or writes: `s3://bucket/key`, a local path, or `-` (stdin/stdout).

use std::path::PathBuf;

/// An `s3://bucket[/key]` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Url {
    pub bucket: String,
    /// The key or prefix; empty for the bucket itself.
    pub key: String,
}

impl S3Url {
    /// Parses `s3://bucket`, `s3://bucket/`, `s3://bucket/key/with/slashes`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let rest = text
            .strip_prefix("s3://")
            .ok_or_else(|| format!("{text:?} is not an s3:// URL"))?;
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!(
                "{text:?} names no bucket (expected s3://bucket/key)"
            ));
        }
        Ok(Self {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// The URL of `key` in the same bucket.
    pub fn with_key(&self, key: impl Into<String>) -> Self {
        Self {
            bucket: self.bucket.clone(),
            key: key.into(),
        }
    }

    /// The last segment of the key (what a download names its file).
    pub fn file_name(&self) -> &str {
        self.key.rsplit('/').next().unwrap_or(&self.key)
    }
}

impl std::fmt::Display for S3Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// One end of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    S3(S3Url),
    Local(PathBuf),
    /// `-`: stdin as a source, stdout as a destination.
    Stream,
}

impl Location {
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == "-" {
            Ok(Self::Stream)
        } else if text.starts_with("s3://") {
            S3Url::parse(text).map(Self::S3)
        } else if text.contains("://") {
            Err(format!(
                "{text:?}: only s3:// URLs, local paths and - are understood"
            ))
        } else {
            Ok(Self::Local(PathBuf::from(text)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_urls_split_into_bucket_and_key() {
        let u = S3Url::parse("s3://b/dir/a.txt").unwrap();
        assert_eq!((u.bucket.as_str(), u.key.as_str()), ("b", "dir/a.txt"));
        assert_eq!(u.file_name(), "a.txt");
        assert_eq!(S3Url::parse("s3://b").unwrap().key, "");
        assert_eq!(S3Url::parse("s3://b/").unwrap().key, "");
        assert!(S3Url::parse("s3://").is_err());
        assert!(S3Url::parse("b/k").is_err());
    }

    #[test]
    fn locations_are_told_apart() {
        assert_eq!(Location::parse("-"), Ok(Location::Stream));
        assert!(matches!(Location::parse("s3://b/k"), Ok(Location::S3(_))));
        assert_eq!(
            Location::parse("./x"),
            Ok(Location::Local(PathBuf::from("./x")))
        );
        assert!(Location::parse("http://x/y").is_err());
    }
}
