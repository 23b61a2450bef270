//! The implementations behind the cryptographic hashes brisk computes over payload bytes (MD5 for
//! ETags and `Content-MD5`, SHA-256 for SigV4 payload hashes, chunk signatures and
//! `x-amz-checksum-sha256`), chosen here and nowhere else.
//!
//! Both were picked by measurement: `bench/hash_engines` streams 256 KiB and 8 MiB buffers through
//! every candidate on one host, in one run (figures in `BENCHMARKS-log.md`, "Hash engines"). On a 2-core
//! Xeon with SHA-NI and AVX-512:
//!
//! * **SHA-256: `sha2`, default build.** It detects the SHA extensions at run time; `ring`,
//!   `aws-lc-rs` and OpenSSL run the same instructions and measured within 5 % of it, so a second
//!   crypto library would buy nothing. `sha2`'s `asm` feature must stay off: it replaces the SHA-NI
//!   path with plain x86-64 assembly, 4.6x slower.
//! * **MD5: `md-5` with its `asm` feature** on x86 and x86-64 (`md5-asm`, assembled by `cc`, which the
//!   build already needs for `ring`): 1.27x the portable Rust code and level with OpenSSL's MD5. MD5 is
//!   one serial dependency chain per 64-byte block and no CPU has instructions for it, so this is
//!   about as fast as it gets; elsewhere `md-5` falls back to its portable code.
//!
//! Callers name [`Md5`] and [`Sha256`] from here (with the [`Digest`] trait for their methods), so
//! switching an implementation is a change to this file and `Cargo.toml`.

pub(crate) use md5::Md5;
pub(crate) use sha2::{Digest, Sha256};

/// How many bytes each hasher takes in turn in [`update_md5_and_sha256`]: one block of both.
const INTERLEAVE: usize = 64;

/// Feeds `data` to an MD5 and a SHA-256, one 64-byte block to each in turn.
///
/// MD5 is one serial chain of additions and rotations, bound by their latency; SHA-256 runs on the
/// SHA extensions. Block by block, the CPU runs the SHA-256 rounds in MD5's wait: 2.34 CPU s/GiB for
/// both on a 2-core Xeon, against 2.85 for one whole 256 KiB buffer after the other (1.98 for MD5
/// alone, 0.86 for SHA-256 alone; `bench/hash_engines`, BENCHMARKS-log.md "Hash engines"). In a one-off
/// test, turns of 256 bytes kept about half the gain and turns of 1 KiB almost none.
pub(crate) fn update_md5_and_sha256(md5: &mut Md5, sha256: &mut Sha256, data: &[u8]) {
    for block in data.chunks(INTERLEAVE) {
        md5.update(block);
        sha256.update(block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_hashing_gives_the_digests_of_separate_hashing() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        // A head start leaves each hasher's buffer part full, so the turns fall across blocks.
        for head in [0, 1, 63, 64, 65, 200] {
            for len in [0, 1, 64, 127, 4_096, 9_000] {
                let (mut md5, mut sha) = (Md5::new(), Sha256::new());
                md5.update(&data[..head]);
                sha.update(&data[..head]);
                update_md5_and_sha256(&mut md5, &mut sha, &data[head..head + len]);
                assert_eq!(
                    md5.finalize(),
                    Md5::digest(&data[..head + len]),
                    "MD5, head {head}, len {len}"
                );
                assert_eq!(
                    sha.finalize(),
                    Sha256::digest(&data[..head + len]),
                    "SHA-256, head {head}, len {len}"
                );
            }
        }
    }
}
