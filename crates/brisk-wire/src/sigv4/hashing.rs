//! Small SHA-256 / HMAC helpers shared by the signing and verifying code.

use crate::checksum::engine::{Digest, Sha256};
use hmac::{Hmac, Mac};

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 of `data` under `key`.
pub(crate) fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// SHA-256 of `data`.
pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Lower-case hex of a 32-byte digest, without allocating.
pub(crate) fn hex32(digest: &[u8; 32]) -> [u8; 64] {
    let mut out = [0u8; 64];
    hex::encode_to_slice(digest, &mut out).expect("64 bytes hold 32 bytes of hex");
    out
}

/// Parses exactly 64 hex digits (either case) into a digest.
pub(crate) fn parse_hex32(text: &[u8]) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// Compares two byte strings in time that depends only on their lengths, so a forger cannot learn
/// how many leading bytes of a guessed signature were right.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sha256_matches_the_published_constant() {
        assert_eq!(&hex32(&sha256(b"")), super::super::EMPTY_SHA256.as_bytes());
    }

    #[test]
    fn hex_round_trips_and_rejects_bad_input() {
        let d = sha256(b"abc");
        assert_eq!(parse_hex32(&hex32(&d)), Some(d));
        assert_eq!(parse_hex32(b"00"), None);
        assert_eq!(parse_hex32(&[b'g'; 64]), None);
    }

    #[test]
    fn constant_time_eq_compares_contents_and_lengths() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
