//! CRCs of a byte stream's fixed-size blocks, taken as the bytes arrive, from which the CRC of the
//! whole stream or of any run of whole blocks (a part of a multipart object) is combined after.
//!
//! Why: checking a whole-object read after it has landed reads the buffer a second time, from
//! memory; for 1 GiB that second pass was a quarter of an in-memory GET's CPU samples once the
//! buffer's pages no longer had to be faulted in (BENCHMARKS-log.md). Taking each piece's CRC right
//! after the socket's copy wrote it finds much of it still in the caches: the CRC's share fell to
//! a fifth, and the reads' user CPU by half. (Reads cut to a block, so that each is summed from L2,
//! cost more in wake-ups and window updates than they saved.) The part boundaries of a
//! multipart object are only known after the body (a HEAD with `partNumber=1`), so the pieces are
//! fixed-size blocks, combined into parts of any size that is a whole number of blocks
//! ([`parts`](BlockCrcs::parts)), as every SDK's part sizes are (whole MiB).

use super::combine::combine;
use super::{ChecksumAlgorithm, ChecksumValue, Checksummer, FullObjectCrc};

/// The CRCs of a stream's consecutive blocks of `block` bytes (the last one possibly shorter).
#[derive(Debug, Clone)]
pub struct BlockCrcs {
    algorithm: ChecksumAlgorithm,
    block: usize,
    /// The CRC of every finished block, in order.
    done: Vec<u64>,
    /// The block being filled.
    current: Checksummer,
    in_current: usize,
}

impl BlockCrcs {
    /// For a stream of about `expected_len` bytes (the blocks' list is sized for it once, and not
    /// allocated at all for one block: a block of `usize::MAX` keeps the whole stream's CRC alone)
    /// in blocks of `block` bytes; `None` for the SHAs, whose digests cannot be combined, or a
    /// block of 0.
    pub fn new(algorithm: ChecksumAlgorithm, block: usize, expected_len: u64) -> Option<Self> {
        FullObjectCrc::new(algorithm).ok()?;
        if block == 0 {
            return None;
        }
        let blocks = usize::try_from(expected_len.div_ceil(block as u64)).unwrap_or(0);
        Some(BlockCrcs {
            algorithm,
            block,
            done: if blocks > 1 {
                Vec::with_capacity(blocks)
            } else {
                Vec::new()
            },
            current: Checksummer::new(algorithm),
            in_current: 0,
        })
    }

    /// The algorithm of the CRCs.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        self.algorithm
    }

    /// Feeds the stream's next bytes.
    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let take = (self.block - self.in_current).min(data.len());
            let (now, rest) = data.split_at(take);
            self.current.update(now);
            self.in_current += take;
            data = rest;
            if self.in_current == self.block {
                let crc = self.current.finalize_reset().as_crc();
                self.done.push(crc.expect("a CRC algorithm"));
                self.in_current = 0;
            }
        }
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.done.len() as u64 * self.block as u64 + self.in_current as u64
    }

    /// Whether nothing was fed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CRC of everything fed.
    pub fn whole(&self) -> ChecksumValue {
        self.run(0, usize::MAX)
    }

    /// The CRC of each run of `part_size` bytes from the start (the last run shorter, as a
    /// multipart object's last part), in order; `None` when `part_size` is not a whole number of
    /// blocks.
    pub fn parts(&self, part_size: u64) -> Option<impl Iterator<Item = ChecksumValue> + '_> {
        let block = self.block as u64;
        if part_size == 0 || !part_size.is_multiple_of(block) {
            return None;
        }
        let per_part = usize::try_from(part_size / block).ok()?;
        let blocks = self.done.len() + usize::from(self.in_current > 0);
        Some(
            (0..blocks.div_ceil(per_part))
                .map(move |i| self.run(i * per_part, (i + 1).saturating_mul(per_part))),
        )
    }

    /// The CRC of blocks `first..end` (clamped; the unfinished block counts as the last).
    fn run(&self, first: usize, end: usize) -> ChecksumValue {
        let whole = end.min(self.done.len());
        let block = self.block as u64;
        let mut crc = None::<u64>;
        let mut add = |next: u64, len: u64| {
            crc = Some(match crc {
                None => next,
                Some(crc) => combine(self.algorithm, crc, next, len).expect("a CRC algorithm"),
            });
        };
        for &next in self.done.get(first..whole).unwrap_or(&[]) {
            add(next, block);
        }
        if end > self.done.len() && self.in_current > 0 {
            let current = self.current.clone().finalize().as_crc();
            add(current.expect("a CRC algorithm"), self.in_current as u64);
        }
        let crc = crc.unwrap_or_else(|| {
            Checksummer::new(self.algorithm)
                .finalize()
                .as_crc()
                .expect("a CRC algorithm")
        });
        ChecksumValue::from_crc(self.algorithm, crc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::checksummer::crc_params;

    fn data(len: usize) -> Vec<u8> {
        (0..len as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    }

    #[test]
    fn the_whole_and_every_part_match_a_pass_over_the_bytes_however_they_arrive() {
        let block = 1000;
        let crcs = ChecksumAlgorithm::ALL
            .into_iter()
            .filter(|&a| crc_params(a).is_some());
        for algorithm in crcs {
            for len in [0, 1, 999, 1000, 1001, 5000, 7_777] {
                let bytes = data(len);
                for piece in [1, 7, 1000, 3001, 10_000] {
                    let mut sums = BlockCrcs::new(algorithm, block, len as u64).unwrap();
                    for chunk in bytes.chunks(piece) {
                        sums.update(chunk);
                    }
                    assert_eq!(sums.len(), len as u64);
                    assert_eq!(
                        sums.whole(),
                        Checksummer::checksum(algorithm, &bytes),
                        "{algorithm:?} {len} in pieces of {piece}"
                    );
                    for part in [1000, 2000, 3000] {
                        let parts: Vec<_> = sums.parts(part as u64).unwrap().collect();
                        let expected: Vec<_> = bytes
                            .chunks(part)
                            .map(|p| Checksummer::checksum(algorithm, p))
                            .collect();
                        assert_eq!(parts, expected, "{algorithm:?} {len}, parts of {part}");
                    }
                }
            }
        }
    }

    #[test]
    fn parts_that_are_not_whole_blocks_and_shas_are_refused() {
        let mut sums = BlockCrcs::new(ChecksumAlgorithm::Crc32c, 1024, 10_000).unwrap();
        sums.update(&data(10_000));
        assert!(sums.parts(1500).is_none());
        assert!(sums.parts(0).is_none());
        assert!(sums.parts(2048).is_some());
        assert!(BlockCrcs::new(ChecksumAlgorithm::Sha256, 1024, 10).is_none());
        assert!(BlockCrcs::new(ChecksumAlgorithm::Sha1, 1024, 10).is_none());
        assert!(BlockCrcs::new(ChecksumAlgorithm::Crc32, 0, 10).is_none());

        // One block the size of everything: the whole stream's CRC, and no parts.
        let bytes = data(70_000);
        let mut whole = BlockCrcs::new(ChecksumAlgorithm::Crc64Nvme, usize::MAX, 70_000).unwrap();
        for piece in bytes.chunks(4096) {
            whole.update(piece);
        }
        assert_eq!(whole.done.capacity(), 0, "nothing allocated");
        assert_eq!(
            whole.whole(),
            Checksummer::checksum(ChecksumAlgorithm::Crc64Nvme, &bytes)
        );
        assert!(whole.parts(1 << 20).is_none());
    }
}
