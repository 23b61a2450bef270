//! Where a command reads or writes: `s3://bucket/key`, `az://container/blob`, a local path, or `-`
//! (stdin/stdout).

use std::path::PathBuf;

/// The service an object URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// `s3://`: S3 and S3-compatible servers.
    S3,
    /// `az://`: Azure Blob Storage (the container is the bucket, the blob the key).
    Azure,
}

impl Service {
    /// The URL scheme with its `://`.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::S3 => "s3://",
            Self::Azure => "az://",
        }
    }
}

/// An `s3://bucket[/key]` or `az://container[/blob]` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    pub service: Service,
    /// The bucket, or the Azure container.
    pub bucket: String,
    /// The key or prefix (the blob name); empty for the bucket itself.
    pub key: String,
}

impl ObjectUrl {
    /// Parses `s3://bucket`, `s3://bucket/`, `s3://bucket/key/with/slashes`, and the same with
    /// `az://`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (service, rest) = if let Some(rest) = text.strip_prefix("s3://") {
            (Service::S3, rest)
        } else if let Some(rest) = text.strip_prefix("az://") {
            (Service::Azure, rest)
        } else {
            return Err(format!("{text:?} is not an s3:// or az:// URL"));
        };
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!(
                "{text:?} names no bucket (expected {}bucket/key)",
                service.prefix()
            ));
        }
        Ok(Self {
            service,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// The URL of `key` in the same bucket.
    pub fn with_key(&self, key: impl Into<String>) -> Self {
        Self {
            service: self.service,
            bucket: self.bucket.clone(),
            key: key.into(),
        }
    }

    /// The last segment of the key (what a download names its file).
    pub fn file_name(&self) -> &str {
        self.key.rsplit('/').next().unwrap_or(&self.key)
    }
}

impl std::fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}/{}", self.service.prefix(), self.bucket, self.key)
    }
}

/// One end of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An object (or prefix) in S3 or Azure Blob Storage.
    Remote(ObjectUrl),
    Local(PathBuf),
    /// `-`: stdin as a source, stdout as a destination.
    Stream,
}

impl Location {
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == "-" {
            Ok(Self::Stream)
        } else if text.starts_with("s3://") || text.starts_with("az://") {
            ObjectUrl::parse(text).map(Self::Remote)
        } else if text.contains("://") {
            Err(format!(
                "{text:?}: only s3:// and az:// URLs, local paths and - are understood"
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
        let u = ObjectUrl::parse("s3://b/dir/a.txt").unwrap();
        assert_eq!((u.bucket.as_str(), u.key.as_str()), ("b", "dir/a.txt"));
        assert_eq!(u.file_name(), "a.txt");
        assert_eq!(ObjectUrl::parse("s3://b").unwrap().key, "");
        assert_eq!(ObjectUrl::parse("s3://b/").unwrap().key, "");
        assert!(ObjectUrl::parse("s3://").is_err());
        assert!(ObjectUrl::parse("b/k").is_err());
    }

    #[test]
    fn az_urls_name_a_container_and_a_blob() {
        let u = ObjectUrl::parse("az://photos/2026/a b.jpg").unwrap();
        assert_eq!(u.service, Service::Azure);
        assert_eq!(
            (u.bucket.as_str(), u.key.as_str()),
            ("photos", "2026/a b.jpg")
        );
        assert_eq!(u.to_string(), "az://photos/2026/a b.jpg");
        assert_eq!(u.with_key("x").service, Service::Azure);
        assert!(
            ObjectUrl::parse("az://")
                .unwrap_err()
                .contains("az://bucket/key")
        );
        assert!(matches!(
            Location::parse("az://c/k"),
            Ok(Location::Remote(_))
        ));
    }

    #[test]
    fn locations_are_told_apart() {
        assert_eq!(Location::parse("-"), Ok(Location::Stream));
        assert!(matches!(
            Location::parse("s3://b/k"),
            Ok(Location::Remote(_))
        ));
        assert_eq!(
            Location::parse("./x"),
            Ok(Location::Local(PathBuf::from("./x")))
        );
        assert!(Location::parse("http://x/y").is_err());
    }
}
