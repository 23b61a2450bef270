//! xorshift64: offsets and choices spread evenly without a dependency, for the random-read points
//! (`random_point`, which brisk-client's `random_read` example also includes) and the mixed load
//! (`mixed`).

/// A xorshift64 generator.
#[derive(Debug, Clone)]
pub(super) struct XorShift(u64);

impl XorShift {
    /// Seeded: the seed is spread over the word and made odd (a state of zero would stay zero).
    pub(super) fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1).
    pub(super) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// In [0, n) (0 when `n` is 0).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_cover_every_block() {
        let mut random = XorShift::new(0x5eed);
        let mut seen = [false; 64];
        for _ in 0..4096 {
            seen[random.below(64) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
