//! One streaming hasher over every [`ChecksumAlgorithm`].

use super::engine::{Digest as _, Sha256};
use crc_fast::{CrcAlgorithm, Digest as CrcDigest};
use sha1::Sha1;

use super::{ChecksumAlgorithm, ChecksumValue};

/// The `crc-fast` parameter set behind each CRC algorithm of S3.
pub(crate) const fn crc_params(algorithm: ChecksumAlgorithm) -> Option<CrcAlgorithm> {
    match algorithm {
        ChecksumAlgorithm::Crc32 => Some(CrcAlgorithm::Crc32IsoHdlc),
        ChecksumAlgorithm::Crc32c => Some(CrcAlgorithm::Crc32Iscsi),
        ChecksumAlgorithm::Crc64Nvme => Some(CrcAlgorithm::Crc64Nvme),
        ChecksumAlgorithm::Sha1 | ChecksumAlgorithm::Sha256 => None,
    }
}

/// A streaming checksum of one algorithm: [`update`](Self::update) with each slice as it passes, then
/// [`finalize`](Self::finalize) once.
///
/// The state lives inline (about 200 bytes for SHA-256, less for SHA-1 and the CRCs); dispatch is a
/// `match`, so a chunk costs no allocation and no virtual call.
#[derive(Clone)]
pub enum Checksummer {
    /// CRC32, CRC32C or CRC64NVME (the variant's algorithm is kept beside the `crc-fast` state).
    Crc(ChecksumAlgorithm, CrcDigest),
    /// SHA-1.
    Sha1(Sha1),
    /// SHA-256.
    Sha256(Sha256),
}

impl Checksummer {
    /// A fresh hasher for `algorithm`.
    pub fn new(algorithm: ChecksumAlgorithm) -> Self {
        match (crc_params(algorithm), algorithm) {
            (Some(params), _) => Self::Crc(algorithm, CrcDigest::new(params)),
            (None, ChecksumAlgorithm::Sha1) => Self::Sha1(Sha1::new()),
            (None, _) => Self::Sha256(Sha256::new()),
        }
    }

    /// The algorithm this hasher computes.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        match self {
            Self::Crc(algorithm, _) => *algorithm,
            Self::Sha1(_) => ChecksumAlgorithm::Sha1,
            Self::Sha256(_) => ChecksumAlgorithm::Sha256,
        }
    }

    /// Feeds the next bytes of the payload.
    #[inline]
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Self::Crc(_, digest) => digest.update(data),
            Self::Sha1(digest) => digest.update(data),
            Self::Sha256(digest) => digest.update(data),
        }
    }

    /// The checksum of everything fed so far.
    pub fn finalize(self) -> ChecksumValue {
        match self {
            Self::Crc(algorithm, digest) => ChecksumValue::from_crc(algorithm, digest.finalize()),
            Self::Sha1(digest) => {
                let out = digest.finalize();
                ChecksumValue::from_raw(ChecksumAlgorithm::Sha1, &out)
                    .expect("SHA-1 output is 20 bytes")
            }
            Self::Sha256(digest) => {
                let out = digest.finalize();
                ChecksumValue::from_raw(ChecksumAlgorithm::Sha256, &out)
                    .expect("SHA-256 output is 32 bytes")
            }
        }
    }

    /// The checksum of everything fed so far, leaving the hasher fresh for the next payload (one hasher
    /// per connection instead of one per request).
    pub fn finalize_reset(&mut self) -> ChecksumValue {
        let fresh = Self::new(self.algorithm());
        std::mem::replace(self, fresh).finalize()
    }

    /// One-shot convenience: the checksum of `data`.
    pub fn checksum(algorithm: ChecksumAlgorithm, data: &[u8]) -> ChecksumValue {
        let mut hasher = Self::new(algorithm);
        hasher.update(data);
        hasher.finalize()
    }
}

impl std::fmt::Debug for Checksummer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checksummer")
            .field("algorithm", &self.algorithm())
            .finish_non_exhaustive()
    }
}

impl std::io::Write for Checksummer {
    /// Lets a payload be hashed with `std::io::copy` or written through a tee; never fails.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard check values (the checksum of the ASCII string "123456789") of each CRC, from the
    /// CRC catalogue.
    #[test]
    fn crc_check_values() {
        let check = |alg| Checksummer::checksum(alg, b"123456789").as_crc().unwrap();
        assert_eq!(check(ChecksumAlgorithm::Crc32), 0xCBF4_3926);
        assert_eq!(check(ChecksumAlgorithm::Crc32c), 0xE306_9283);
        assert_eq!(check(ChecksumAlgorithm::Crc64Nvme), 0xAE8B_1486_0A79_9888);
    }

    #[test]
    fn empty_input() {
        let empty = |alg| Checksummer::checksum(alg, b"").to_base64();
        assert_eq!(empty(ChecksumAlgorithm::Crc32), "AAAAAA==");
        assert_eq!(empty(ChecksumAlgorithm::Crc32c), "AAAAAA==");
        assert_eq!(empty(ChecksumAlgorithm::Crc64Nvme), "AAAAAAAAAAA=");
        // SHA-1 of nothing, da39a3ee...0709, in base64.
        assert_eq!(
            empty(ChecksumAlgorithm::Sha1),
            "2jmj7l5rSw0yVb/vlWAYkK/YBwk="
        );
        // SHA-256 of nothing, e3b0c442...b855, in base64.
        assert_eq!(
            empty(ChecksumAlgorithm::Sha256),
            "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
    }

    #[test]
    fn finalize_reset_starts_over() {
        let mut hasher = Checksummer::new(ChecksumAlgorithm::Crc32c);
        hasher.update(b"garbage");
        let _ = hasher.finalize_reset();
        hasher.update(b"123456789");
        assert_eq!(hasher.finalize_reset().as_crc(), Some(0xE306_9283));
        assert_eq!(hasher.finalize().as_crc(), Some(0));
    }
}
