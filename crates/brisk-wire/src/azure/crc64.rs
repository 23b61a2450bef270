//! The CRC-64 of Azure's `x-ms-content-crc64` header (and of `Content-CRC64` in listings).
//!
//! Azure's CRC-64 is the same function as S3's CRC-64/NVME (reflected polynomial
//! `0x9A6C9329AC4BC9B5`, initial value and final XOR all ones; the check value of `b"123456789"` is
//! `0xae8b14860a799888` in both), so it goes through the same `crc-fast` implementation as
//! [`crate::checksum`]. Only the header differs: Azure sends the 8 bytes **little-endian** in base64,
//! where `x-amz-checksum-crc64nvme` is big-endian. The same payload therefore has two different header
//! values, and copying one into the other is a checksum mismatch, not a format error.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use crc_fast::{CrcAlgorithm, Digest};

const ALGORITHM: CrcAlgorithm = CrcAlgorithm::Crc64Nvme;

/// A streaming CRC-64: [`update`](Self::update) with each slice as it passes, [`finish`](Self::finish)
/// whenever the value is needed.
#[derive(Debug, Clone, Copy)]
pub struct Crc64(Digest);

impl Crc64 {
    /// The CRC of nothing yet.
    pub fn new() -> Self {
        Self(Digest::new(ALGORITHM))
    }

    /// Feeds the next bytes.
    #[inline]
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The CRC of everything fed so far (feeding may continue).
    pub fn finish(&self) -> u64 {
        self.0.finalize()
    }
}

impl Default for Crc64 {
    fn default() -> Self {
        Self::new()
    }
}

/// The CRC-64 of `data` in one call.
pub fn crc64(data: &[u8]) -> u64 {
    crc_fast::checksum(ALGORITHM, data)
}

/// The `x-ms-content-crc64` value of `crc`: base64 of its 8 little-endian bytes.
pub fn crc64_header_value(crc: u64) -> String {
    STANDARD.encode(crc.to_le_bytes())
}

/// Reads an `x-ms-content-crc64` (or `Content-CRC64`) value: padded base64 of exactly 8 bytes,
/// little-endian. Surrounding whitespace is ignored.
pub fn parse_crc64_header(value: &str) -> Option<u64> {
    let mut bytes = [0u8; 8];
    // An 8-byte value is 12 base64 characters; decoding into a 9-byte buffer would accept 9 bytes.
    let value = value.trim();
    if value.len() != 12 {
        return None;
    }
    match STANDARD.decode_slice(value, &mut bytes) {
        Ok(8) => Some(u64::from_le_bytes(bytes)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{ChecksumAlgorithm, Checksummer};

    const CHECK: u64 = 0xae8b_1486_0a79_9888;

    #[test]
    fn check_value_and_header_byte_order() {
        assert_eq!(crc64(b"123456789"), CHECK);
        // Little-endian: the low byte 0x88 first. S3's big-endian value of the same CRC differs.
        assert_eq!(crc64_header_value(CHECK), "iJh5CoYUi64=");
        let s3 = Checksummer::checksum(ChecksumAlgorithm::Crc64Nvme, b"123456789");
        assert_eq!(s3.as_crc(), Some(CHECK));
        assert_ne!(s3.to_base64(), crc64_header_value(CHECK));
        assert_eq!(crc64(b""), 0);
        assert_eq!(crc64_header_value(0), "AAAAAAAAAAA=");
    }

    #[test]
    fn header_values_round_trip_and_junk_is_refused() {
        for crc in [0, 1, CHECK, u64::MAX, 0x0102_0304_0506_0708] {
            assert_eq!(parse_crc64_header(&crc64_header_value(crc)), Some(crc));
        }
        assert_eq!(parse_crc64_header(" iJh5CoYUi64=\t"), Some(CHECK));
        assert_eq!(parse_crc64_header("iJh5CoYUi64"), None, "unpadded");
        assert_eq!(parse_crc64_header("iJh5CoYUi6=="), None, "7 bytes");
        assert_eq!(parse_crc64_header("iJh5CoYUi64AAA=="), None, "10 bytes");
        assert_eq!(parse_crc64_header("!!!!!!!!!!!="), None);
        assert_eq!(parse_crc64_header(""), None);
    }

    #[test]
    fn streaming_equals_one_shot() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        for split in [0, 1, 7, 64, 4095, 9_999, 10_000] {
            let mut crc = Crc64::default();
            crc.update(&data[..split]);
            crc.update(&data[split..]);
            assert_eq!(crc.finish(), crc64(&data), "split at {split}");
        }
        let mut crc = Crc64::new();
        crc.update(b"1234");
        assert_eq!(crc.finish(), crc64(b"1234"));
        crc.update(b"56789");
        assert_eq!(crc.finish(), CHECK);
    }
}
