//! The implementations behind the cryptographic hashes brisk computes over payload bytes (MD5 for
//! ETags and `Content-MD5`, SHA-256 for SigV4 payload hashes, chunk signatures and
//! `x-amz-checksum-sha256`), chosen here and nowhere else.
//!
//! Both were picked by measurement: `bench/hash_engines` streams 256 KiB and 8 MiB buffers through
//! every candidate on one host, in one run (figures in `BENCHMARKS.md`, "Hash engines"). On a 2-core
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
