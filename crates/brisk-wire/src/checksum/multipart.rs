//! The checksums S3 gives multipart objects.
//!
//! * **Composite** (CRC32, CRC32C, SHA-1, SHA-256): the checksum of the concatenated raw part
//!   checksums, written `<base64>-<part count>`. It proves each part, not the object's bytes as a
//!   whole.
//! * **Full object** (CRC32, CRC32C, CRC64NVME): the CRC of the whole object, combined from the parts'
//!   CRCs and lengths without reading the data again (CRCs are linear: `crc(A‖B)` follows from `crc(A)`,
//!   `crc(B)` and `len(B)`, in O(log len) by `checksum/combine.rs`). This is what S3
//!   uses for CRC64NVME and what lets a downloader verify a multipart object end to end.

use std::fmt;

use super::checksummer::crc_params;
use super::md5::parse_part_count;
use super::{ChecksumAlgorithm, ChecksumError, ChecksumType, ChecksumValue, Checksummer};

/// A composite checksum with its part count, as in `x-amz-checksum-crc32: pm11MA==-2`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct MultipartChecksum {
    /// The checksum of the concatenated part checksums.
    pub value: ChecksumValue,
    /// How many parts went in.
    pub parts: u32,
}

impl MultipartChecksum {
    /// Parses `<base64>-<parts>`.
    pub fn parse(algorithm: ChecksumAlgorithm, text: &str) -> Result<Self, ChecksumError> {
        let invalid = || ChecksumError::InvalidPartCount {
            value: text.to_owned(),
        };
        let (value, parts) = text.rsplit_once('-').ok_or_else(invalid)?;
        let parts = parse_part_count(parts).ok_or_else(invalid)?;
        Ok(Self {
            value: ChecksumValue::from_base64(algorithm, value)?,
            parts,
        })
    }
}

impl fmt::Display for MultipartChecksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.value, self.parts)
    }
}

/// Accumulates a composite checksum part by part (in part-number order).
#[derive(Debug, Clone)]
pub struct CompositeChecksum {
    hasher: Checksummer,
    parts: u32,
}

impl CompositeChecksum {
    /// Fails for CRC64NVME, which S3 defines as full-object only.
    pub fn new(algorithm: ChecksumAlgorithm) -> Result<Self, ChecksumError> {
        if !algorithm.supports(ChecksumType::Composite) {
            return Err(ChecksumError::UnsupportedCombination {
                algorithm,
                checksum_type: ChecksumType::Composite,
            });
        }
        Ok(Self {
            hasher: Checksummer::new(algorithm),
            parts: 0,
        })
    }

    /// Adds the next part's checksum; it must be of the same algorithm.
    pub fn push_part(&mut self, part: &ChecksumValue) -> Result<(), ChecksumError> {
        check_algorithm(self.hasher.algorithm(), part)?;
        self.hasher.update(part.as_bytes());
        self.parts += 1;
        Ok(())
    }

    /// The composite checksum of the parts pushed so far.
    pub fn finish(self) -> MultipartChecksum {
        MultipartChecksum {
            parts: self.parts,
            value: self.hasher.finalize(),
        }
    }
}

/// Combines part CRCs into the CRC of the whole object (S3's `FULL_OBJECT` checksum type).
#[derive(Debug, Clone, Copy)]
pub struct FullObjectCrc {
    algorithm: ChecksumAlgorithm,
    crc: u64,
    len: u64,
}

impl FullObjectCrc {
    /// Fails for the SHAs, whose digests cannot be combined.
    pub fn new(algorithm: ChecksumAlgorithm) -> Result<Self, ChecksumError> {
        if crc_params(algorithm).is_none() {
            return Err(ChecksumError::UnsupportedCombination {
                algorithm,
                checksum_type: ChecksumType::FullObject,
            });
        }
        Ok(Self {
            algorithm,
            crc: 0,
            len: 0,
        })
    }

    /// Appends the next part: its CRC and its length in bytes.
    pub fn push_part(&mut self, part: &ChecksumValue, part_len: u64) -> Result<(), ChecksumError> {
        check_algorithm(self.algorithm, part)?;
        let part_crc = part.as_crc().expect("CRC algorithm checked");
        self.crc = if self.len == 0 {
            part_crc
        } else {
            super::combine::combine(self.algorithm, self.crc, part_crc, part_len)
                .expect("CRC algorithm checked in new")
        };
        self.len += part_len;
        Ok(())
    }

    /// The object's length so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no bytes were appended yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The CRC of the whole object (the CRC of no bytes, 0, when nothing was pushed).
    pub fn finish(&self) -> ChecksumValue {
        ChecksumValue::from_crc(self.algorithm, self.crc)
    }
}

fn check_algorithm(expected: ChecksumAlgorithm, part: &ChecksumValue) -> Result<(), ChecksumError> {
    if part.algorithm() == expected {
        Ok(())
    } else {
        Err(ChecksumError::AlgorithmMismatch {
            expected,
            actual: part.algorithm(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_object_crc_equals_one_shot_for_every_crc() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 31 % 251) as u8).collect();
        for alg in [
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::Crc32c,
            ChecksumAlgorithm::Crc64Nvme,
        ] {
            let mut combined = FullObjectCrc::new(alg).unwrap();
            for part in [
                &data[..1],
                &data[1..40_000],
                &data[40_000..40_000],
                &data[40_000..],
            ] {
                combined
                    .push_part(&Checksummer::checksum(alg, part), part.len() as u64)
                    .unwrap();
            }
            assert_eq!(
                combined.finish(),
                Checksummer::checksum(alg, &data),
                "{alg}"
            );
            assert_eq!(combined.len(), data.len() as u64);
        }
    }

    #[test]
    fn combinations_s3_does_not_define_are_refused() {
        assert!(matches!(
            FullObjectCrc::new(ChecksumAlgorithm::Sha256),
            Err(ChecksumError::UnsupportedCombination { .. })
        ));
        assert!(CompositeChecksum::new(ChecksumAlgorithm::Crc64Nvme).is_err());
        let mut composite = CompositeChecksum::new(ChecksumAlgorithm::Crc32).unwrap();
        let wrong = Checksummer::checksum(ChecksumAlgorithm::Crc32c, b"x");
        assert_eq!(
            composite.push_part(&wrong),
            Err(ChecksumError::AlgorithmMismatch {
                expected: ChecksumAlgorithm::Crc32,
                actual: ChecksumAlgorithm::Crc32c
            })
        );
    }

    #[test]
    fn multipart_checksum_text_round_trips() {
        let parsed = MultipartChecksum::parse(ChecksumAlgorithm::Crc32, "pm11MA==-2").unwrap();
        assert_eq!(parsed.parts, 2);
        assert_eq!(parsed.to_string(), "pm11MA==-2");
        assert!(MultipartChecksum::parse(ChecksumAlgorithm::Crc32, "pm11MA==").is_err());
        assert!(MultipartChecksum::parse(ChecksumAlgorithm::Crc32, "pm11MA==-0").is_err());
        assert!(MultipartChecksum::parse(ChecksumAlgorithm::Sha256, "pm11MA==-2").is_err());
    }
}
