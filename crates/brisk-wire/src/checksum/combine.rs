//! The CRC of `A ‖ B` from `crc(A)`, `crc(B)` and `len(B)`, for the three CRCs S3 defines.
//!
//! `crc-fast`'s `checksum_combine` builds zlib's old GF(2) matrix operator on every call (a 32×32
//! or 64×64 matrix squared once per bit of the length): about 60 µs for an 8 MiB part here, which
//! was 1.7 % of a 4 GiB download's client CPU when every part's CRC was combined into the whole
//! object's. This is zlib's newer method instead: the operator for `len(B)` zero bytes is the
//! polynomial `x^(8·len(B)) mod P`, found by square-and-multiply, and applying it is one
//! carry-less multiplication modulo `P`; a few microseconds.
//!
//! All three CRCs are reflected, with the initial value and the final XOR both all ones, so the
//! conditioning cancels and the combination works on the finished CRC values directly (as zlib's
//! `crc32_combine` does).

use super::ChecksumAlgorithm;

/// The reflected polynomial and the width in bits of a CRC algorithm; `None` for the SHAs.
const fn reflected_poly(algorithm: ChecksumAlgorithm) -> Option<(u64, u32)> {
    match algorithm {
        ChecksumAlgorithm::Crc32 => Some((0xEDB8_8320, 32)),
        ChecksumAlgorithm::Crc32c => Some((0x82F6_3B78, 32)),
        ChecksumAlgorithm::Crc64Nvme => Some((0x9A6C_9329_AC4B_C9B5, 64)),
        ChecksumAlgorithm::Sha1 | ChecksumAlgorithm::Sha256 => None,
    }
}

/// `a · b mod P` in the reflected representation, where bit `width - 1` is `x^0`.
fn multiply_mod(a: u64, mut b: u64, poly: u64, width: u32) -> u64 {
    let mut m = 1u64 << (width - 1);
    let mut product = 0;
    while m != 0 {
        if a & m != 0 {
            product ^= b;
            if a & (m - 1) == 0 {
                break;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ poly } else { b >> 1 };
    }
    product
}

/// `x^(8·len) mod P`: the operator that appends `len` zero bytes to a CRC's register.
fn zeros_operator(len: u64, poly: u64, width: u32) -> u64 {
    let mut result = 1u64 << (width - 1); // x^0
    let mut power = result >> 8; // x^8, one zero byte
    let mut n = len;
    while n != 0 {
        if n & 1 != 0 {
            result = multiply_mod(power, result, poly, width);
        }
        power = multiply_mod(power, power, poly, width);
        n >>= 1;
    }
    result
}

/// The CRC of `A ‖ B`, given `crc(A)`, `crc(B)` and `len(B)`; `None` for an algorithm that is not
/// a CRC.
pub(crate) fn combine(
    algorithm: ChecksumAlgorithm,
    crc_a: u64,
    crc_b: u64,
    len_b: u64,
) -> Option<u64> {
    let (poly, width) = reflected_poly(algorithm)?;
    Some(multiply_mod(zeros_operator(len_b, poly, width), crc_a, poly, width) ^ crc_b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::checksummer::crc_params;

    const CRCS: [ChecksumAlgorithm; 3] = [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32c,
        ChecksumAlgorithm::Crc64Nvme,
    ];

    fn crc(algorithm: ChecksumAlgorithm, data: &[u8]) -> u64 {
        crc_fast::checksum(crc_params(algorithm).unwrap(), data)
    }

    #[test]
    fn the_crc_of_two_pieces_joined_is_the_crc_of_the_whole() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for algorithm in CRCS {
            for cut in [0, 1, 7, 8, 9, 4_096, 65_537, data.len() - 1, data.len()] {
                let (a, b) = data.split_at(cut);
                assert_eq!(
                    combine(
                        algorithm,
                        crc(algorithm, a),
                        crc(algorithm, b),
                        b.len() as u64
                    ),
                    Some(crc(algorithm, &data)),
                    "{algorithm:?} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn agrees_with_crc_fast_for_lengths_up_to_exabytes() {
        let lengths = [
            0u64,
            1,
            3,
            8 << 20,
            (8 << 20) + 3,
            5 << 30,
            (1 << 32) + 7,
            u64::MAX / 3,
            u64::MAX,
        ];
        let mut seed = 0x1234_5678_9abc_def0u64;
        for algorithm in CRCS {
            let mask = if algorithm == ChecksumAlgorithm::Crc64Nvme {
                u64::MAX
            } else {
                u32::MAX as u64
            };
            for len in lengths {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let (a, b) = (seed & mask, seed.rotate_left(29) & mask);
                assert_eq!(
                    combine(algorithm, a, b, len),
                    Some(crc_fast::checksum_combine(
                        crc_params(algorithm).unwrap(),
                        a,
                        b,
                        len
                    )),
                    "{algorithm:?}, len {len}"
                );
            }
        }
    }

    #[test]
    fn the_shas_do_not_combine() {
        assert_eq!(combine(ChecksumAlgorithm::Sha256, 1, 2, 3), None);
        assert_eq!(combine(ChecksumAlgorithm::Sha1, 1, 2, 3), None);
    }
}
