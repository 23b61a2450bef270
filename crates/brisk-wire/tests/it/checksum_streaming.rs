//! Streaming equals one-shot: feeding a payload in arbitrary slices gives the checksum of the whole.

use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer, Md5};
use proptest::prelude::*;

/// Cuts `data` at the given (unsorted, possibly repeated) positions.
fn pieces(data: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
    cuts.iter_mut().for_each(|c| *c %= data.len() + 1);
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([data.len()]) {
        out.push(&data[start..cut]);
        start = cut;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn incremental_equals_one_shot(
        data in proptest::collection::vec(any::<u8>(), 0..20_000),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let pieces = pieces(&data, cuts);
        for alg in ChecksumAlgorithm::ALL {
            let mut hasher = Checksummer::new(alg);
            for piece in &pieces {
                hasher.update(piece);
            }
            prop_assert_eq!(hasher.finalize(), Checksummer::checksum(alg, &data));
        }
        let mut md5 = Md5::new();
        for piece in &pieces {
            md5.update(piece);
        }
        prop_assert_eq!(md5.finalize(), Md5::digest(&data));
    }
}

#[test]
fn io_write_feeds_the_hasher() {
    use std::io::Write;
    let data: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let mut hasher = Checksummer::new(ChecksumAlgorithm::Crc64Nvme);
    std::io::copy(&mut &data[..], &mut hasher).unwrap();
    hasher.flush().unwrap();
    assert_eq!(
        hasher.finalize(),
        Checksummer::checksum(ChecksumAlgorithm::Crc64Nvme, &data)
    );
}
