//! A finished checksum: raw digest bytes plus the base64 form S3 puts in headers and XML.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::{ChecksumAlgorithm, ChecksumError};

/// The longest raw digest of a [`ChecksumAlgorithm`] (SHA-256).
pub const MAX_DIGEST_LEN: usize = 32;

/// The longest base64 text a valid value can have: ⌈32 / 3⌉ × 4 = 44 characters. Longer header values are
/// rejected before decoding, so a hostile header costs no decoding work.
const MAX_BASE64_LEN: usize = MAX_DIGEST_LEN.div_ceil(3) * 4;

/// A checksum value of one algorithm, held inline (no heap allocation): the raw digest bytes, big-endian
/// for the CRCs as S3 transmits them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChecksumValue {
    algorithm: ChecksumAlgorithm,
    bytes: [u8; MAX_DIGEST_LEN],
}

impl ChecksumValue {
    /// A value from its raw digest bytes; fails when `raw` has the wrong length for `algorithm`.
    pub fn from_raw(algorithm: ChecksumAlgorithm, raw: &[u8]) -> Result<Self, ChecksumError> {
        if raw.len() != algorithm.digest_len() {
            return Err(ChecksumError::WrongLength {
                algorithm,
                expected: algorithm.digest_len(),
                actual: raw.len(),
            });
        }
        let mut bytes = [0; MAX_DIGEST_LEN];
        bytes[..raw.len()].copy_from_slice(raw);
        Ok(Self { algorithm, bytes })
    }

    /// A CRC value from the integer a CRC engine returns (only the low 32 bits are used for the CRC32s).
    pub(crate) fn from_crc(algorithm: ChecksumAlgorithm, crc: u64) -> Self {
        let mut bytes = [0; MAX_DIGEST_LEN];
        match algorithm.digest_len() {
            4 => bytes[..4].copy_from_slice(&(crc as u32).to_be_bytes()),
            8 => bytes[..8].copy_from_slice(&crc.to_be_bytes()),
            other => unreachable!("CRC of {other} bytes"),
        }
        Self { algorithm, bytes }
    }

    /// Parses the value of an `x-amz-checksum-*` header or `Checksum*` XML element: standard base64 with
    /// padding, decoding to exactly [`ChecksumAlgorithm::digest_len`] bytes. Surrounding whitespace is
    /// not accepted (header parsing trims it already).
    pub fn from_base64(algorithm: ChecksumAlgorithm, text: &str) -> Result<Self, ChecksumError> {
        let mut raw = [0u8; MAX_DIGEST_LEN + 3];
        if text.len() > MAX_BASE64_LEN {
            return Err(ChecksumError::WrongLength {
                algorithm,
                expected: algorithm.digest_len(),
                actual: text.len() / 4 * 3,
            });
        }
        let len =
            BASE64
                .decode_slice(text, &mut raw)
                .map_err(|_| ChecksumError::InvalidBase64 {
                    value: text.to_owned(),
                })?;
        Self::from_raw(algorithm, &raw[..len])
    }

    /// The algorithm this value belongs to.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        self.algorithm
    }

    /// The raw digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.algorithm.digest_len()]
    }

    /// The CRC as an integer (`None` for the SHAs).
    pub fn as_crc(&self) -> Option<u64> {
        let raw = self.as_bytes();
        match self.algorithm {
            ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::Crc32c => {
                Some(u32::from_be_bytes(raw.try_into().ok()?).into())
            }
            ChecksumAlgorithm::Crc64Nvme => Some(u64::from_be_bytes(raw.try_into().ok()?)),
            ChecksumAlgorithm::Sha1 | ChecksumAlgorithm::Sha256 => None,
        }
    }

    /// The header / XML form: standard base64 of the raw bytes.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.as_bytes())
    }

    /// Appends the base64 form to `out` (no allocation when `out` has room).
    pub fn append_base64(&self, out: &mut String) {
        BASE64.encode_string(self.as_bytes(), out);
    }
}

impl fmt::Display for ChecksumValue {
    /// Formats as the header value (base64).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; MAX_BASE64_LEN];
        let len = BASE64
            .encode_slice(self.as_bytes(), &mut buf)
            .map_err(|_| fmt::Error)?;
        f.write_str(std::str::from_utf8(&buf[..len]).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for ChecksumValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({self})", self.algorithm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_for_every_algorithm() {
        for alg in ChecksumAlgorithm::ALL {
            let raw: Vec<u8> = (0..alg.digest_len() as u8).collect();
            let value = ChecksumValue::from_raw(alg, &raw).unwrap();
            assert_eq!(
                ChecksumValue::from_base64(alg, &value.to_base64()),
                Ok(value)
            );
            assert_eq!(value.to_string(), value.to_base64());
        }
    }

    #[test]
    fn wrong_lengths_and_bad_base64_are_rejected() {
        let crc32 = ChecksumAlgorithm::Crc32;
        // 8 bytes where CRC32 wants 4.
        assert_eq!(
            ChecksumValue::from_base64(crc32, "AAAAAAAAAAA="),
            Err(ChecksumError::WrongLength {
                algorithm: crc32,
                expected: 4,
                actual: 8
            })
        );
        assert!(matches!(
            ChecksumValue::from_base64(crc32, "not base64!"),
            Err(ChecksumError::InvalidBase64 { .. })
        ));
        // Unpadded form of a valid value is rejected (S3 always pads).
        assert!(ChecksumValue::from_base64(crc32, "y/Q5Jg").is_err());
        assert!(ChecksumValue::from_base64(crc32, "").is_err());
        let long = "A".repeat(10_000);
        assert!(matches!(
            ChecksumValue::from_base64(ChecksumAlgorithm::Sha256, &long),
            Err(ChecksumError::WrongLength { .. })
        ));
    }

    #[test]
    fn crc_integers_are_big_endian() {
        let v = ChecksumValue::from_crc(ChecksumAlgorithm::Crc32, 0xCBF4_3926);
        assert_eq!(v.as_bytes(), &[0xCB, 0xF4, 0x39, 0x26]);
        assert_eq!(v.as_crc(), Some(0xCBF4_3926));
        assert_eq!(v.to_base64(), "y/Q5Jg==");
    }
}
