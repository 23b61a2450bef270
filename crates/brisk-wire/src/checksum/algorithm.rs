//! The names S3 gives its checksum algorithms and multipart checksum types.

use std::fmt;
use std::str::FromStr;

use super::ChecksumError;

/// A checksum algorithm of S3's `x-amz-checksum-*` family.
///
/// SHA-1 is there because S3 accepts it and other clients send it (boto3's `ChecksumAlgorithm="SHA1"`),
/// so brisk serve verifies and stores it; brisk's own uploads never choose it: it is the slowest of the
/// family and cryptographically broken, and CRCs detect transmission errors as well as the SHAs do for
/// S3's purposes while running an order of magnitude faster with carry-less multiplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumAlgorithm {
    /// CRC-32/ISO-HDLC (the zlib / Ethernet CRC), `x-amz-checksum-crc32`.
    Crc32,
    /// CRC-32C (Castagnoli, iSCSI), `x-amz-checksum-crc32c`.
    Crc32c,
    /// CRC-64/NVME, `x-amz-checksum-crc64nvme`: S3's default for objects uploaded without a checksum.
    Crc64Nvme,
    /// SHA-1, `x-amz-checksum-sha1`.
    Sha1,
    /// SHA-256, `x-amz-checksum-sha256`.
    Sha256,
}

impl ChecksumAlgorithm {
    /// Every supported algorithm, in the order S3 documents them.
    pub const ALL: [ChecksumAlgorithm; 5] = [
        Self::Crc32,
        Self::Crc32c,
        Self::Crc64Nvme,
        Self::Sha1,
        Self::Sha256,
    ];

    /// What brisk's client sends when the caller does not choose. CRC32 is what the AWS SDKs send by
    /// default (since their 2025 "flexible checksums" change), so every S3-compatible server that serves
    /// current SDKs accepts it, and with `crc-fast` it costs no more than CRC32C.
    pub const DEFAULT: ChecksumAlgorithm = Self::Crc32;

    /// The name S3 uses in `x-amz-checksum-algorithm`, `x-amz-sdk-checksum-algorithm` and the
    /// `ChecksumAlgorithm` XML element.
    pub const fn s3_name(self) -> &'static str {
        match self {
            Self::Crc32 => "CRC32",
            Self::Crc32c => "CRC32C",
            Self::Crc64Nvme => "CRC64NVME",
            Self::Sha1 => "SHA1",
            Self::Sha256 => "SHA256",
        }
    }

    /// The header (lower case, as HTTP/2 and SigV4 canonical requests want it) that carries a value of this
    /// algorithm: `x-amz-checksum-crc32`, ...
    pub const fn header_name(self) -> &'static str {
        match self {
            Self::Crc32 => "x-amz-checksum-crc32",
            Self::Crc32c => "x-amz-checksum-crc32c",
            Self::Crc64Nvme => "x-amz-checksum-crc64nvme",
            Self::Sha1 => "x-amz-checksum-sha1",
            Self::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// The XML element of S3 bodies that carries a value of this algorithm (`ChecksumCRC32`, ...).
    pub const fn xml_element(self) -> &'static str {
        match self {
            Self::Crc32 => "ChecksumCRC32",
            Self::Crc32c => "ChecksumCRC32C",
            Self::Crc64Nvme => "ChecksumCRC64NVME",
            Self::Sha1 => "ChecksumSHA1",
            Self::Sha256 => "ChecksumSHA256",
        }
    }

    /// How many bytes the raw digest has (4 for the CRC32s, 8 for CRC64NVME, 20 for SHA-1, 32 for
    /// SHA-256).
    pub const fn digest_len(self) -> usize {
        match self {
            Self::Crc32 | Self::Crc32c => 4,
            Self::Crc64Nvme => 8,
            Self::Sha1 => 20,
            Self::Sha256 => 32,
        }
    }

    /// Whether S3 defines multipart checksums of `checksum_type` for this algorithm: CRC64NVME is
    /// full-object only, the SHAs composite only, the CRC32s both.
    pub const fn supports(self, checksum_type: ChecksumType) -> bool {
        matches!(
            (self, checksum_type),
            (Self::Crc32 | Self::Crc32c, _)
                | (Self::Crc64Nvme, ChecksumType::FullObject)
                | (Self::Sha1 | Self::Sha256, ChecksumType::Composite)
        )
    }

    /// The multipart checksum type S3 uses for this algorithm when the upload does not say
    /// (`x-amz-checksum-type` absent): full-object for CRC64NVME, composite for the others.
    pub const fn default_type(self) -> ChecksumType {
        match self {
            Self::Crc64Nvme => ChecksumType::FullObject,
            _ => ChecksumType::Composite,
        }
    }

    /// Finds the algorithm whose checksum header is `name` (case-insensitive), for scanning a request's
    /// or response's headers.
    pub fn from_header_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.header_name().eq_ignore_ascii_case(name))
    }
}

impl FromStr for ChecksumAlgorithm {
    type Err = ChecksumError;

    /// Parses an S3 algorithm name case-insensitively (`crc32c` and `CRC32C` both name CRC32C).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|a| a.s3_name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ChecksumError::UnknownAlgorithm(s.to_owned()))
    }
}

impl fmt::Display for ChecksumAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.s3_name())
    }
}

/// How the checksum of a multipart object relates to its parts (`x-amz-checksum-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    /// The checksum of the concatenated part checksums, suffixed `-<part count>`; it cannot be checked
    /// against the whole object's bytes, only part by part.
    Composite,
    /// The checksum of the whole object's bytes, as if it had been uploaded in one piece (CRCs only: they
    /// can be combined from the parts' CRCs and lengths).
    FullObject,
}

impl ChecksumType {
    /// The name S3 uses in `x-amz-checksum-type` and the `ChecksumType` XML element.
    pub const fn s3_name(self) -> &'static str {
        match self {
            Self::Composite => "COMPOSITE",
            Self::FullObject => "FULL_OBJECT",
        }
    }
}

impl FromStr for ChecksumType {
    type Err = ChecksumError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::Composite, Self::FullObject]
            .into_iter()
            .find(|t| t.s3_name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ChecksumError::UnknownType(s.to_owned()))
    }
}

impl fmt::Display for ChecksumType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.s3_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_case_insensitively() {
        for alg in ChecksumAlgorithm::ALL {
            assert_eq!(alg.s3_name().parse::<ChecksumAlgorithm>(), Ok(alg));
            assert_eq!(
                alg.s3_name().to_lowercase().parse::<ChecksumAlgorithm>(),
                Ok(alg)
            );
            assert_eq!(
                ChecksumAlgorithm::from_header_name(&alg.header_name().to_uppercase()),
                Some(alg)
            );
        }
        assert_eq!("crc64NVME".parse(), Ok(ChecksumAlgorithm::Crc64Nvme));
    }

    #[test]
    fn unknown_names_are_errors_that_name_the_input() {
        let err = "MD5".parse::<ChecksumAlgorithm>().unwrap_err();
        assert_eq!(err, ChecksumError::UnknownAlgorithm("MD5".into()));
        assert!(err.to_string().contains("MD5"));
        assert!(" CRC32".parse::<ChecksumAlgorithm>().is_err());
        assert!("".parse::<ChecksumAlgorithm>().is_err());
        assert_eq!(
            ChecksumAlgorithm::from_header_name("x-amz-checksum-md5"),
            None
        );
        assert_eq!(
            ChecksumAlgorithm::from_header_name("x-amz-checksum-sha1"),
            Some(ChecksumAlgorithm::Sha1)
        );
    }

    #[test]
    fn checksum_types_parse_and_match_what_s3_allows() {
        assert_eq!("full_object".parse(), Ok(ChecksumType::FullObject));
        assert_eq!("COMPOSITE".parse(), Ok(ChecksumType::Composite));
        assert!("FULL".parse::<ChecksumType>().is_err());
        assert!(!ChecksumAlgorithm::Crc64Nvme.supports(ChecksumType::Composite));
        assert!(!ChecksumAlgorithm::Sha256.supports(ChecksumType::FullObject));
        assert!(!ChecksumAlgorithm::Sha1.supports(ChecksumType::FullObject));
        for alg in ChecksumAlgorithm::ALL {
            assert!(alg.supports(alg.default_type()));
        }
    }
}
