//! MD5 and SHA-256 implementations, and the server's hashing order (per buffer, per 64-byte block),
//! compared on this host.
//!
//! Each candidate streams a buffer through one hasher `reps` times (256 MiB in all): an 8 MiB buffer
//! (larger than L2, so it streams from L3/memory) and a 256 KiB one (the server's read buffer, L2-hot).
//! Throughput is bytes per second of this thread's CPU time (`/proc/thread-self/schedstat`), so other
//! work on a shared machine slows the wall clock but not the figure much. Candidates run interleaved,
//! one warm-up round is discarded, the median of the rest is printed.
//!
//! `md-5` and `sha2` cannot be built both with and without their `asm` feature in one program, so
//! their assembly cores (`md5-asm`, `sha2-asm`, what the features switch to) are called directly.
//!
//!     cargo run --release --manifest-path bench/hash_engines/Cargo.toml

use std::hint::black_box;

fn thread_cpu() -> f64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns: u64 = text.split_whitespace().next().unwrap().parse().unwrap();
    ns as f64 * 1e-9
}

type Run = fn(&[u8], &[[u8; 64]], usize) -> u8;

const MD5_INIT: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
const SHA256_INIT: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
const STRIDE: usize = 16 << 10;

fn md5_soft(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    use md5::Digest;
    let mut h = md5::Md5::new();
    (0..n).for_each(|_| h.update(d));
    h.finalize()[0]
}
fn md5_asm(_: &[u8], b: &[[u8; 64]], n: usize) -> u8 {
    let mut s = MD5_INIT;
    (0..n).for_each(|_| md5_asm::compress(&mut s, b));
    s[0] as u8
}
fn md5_openssl(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    use openssl::hash::{Hasher, MessageDigest};
    let mut h = Hasher::new(MessageDigest::md5()).unwrap();
    (0..n).for_each(|_| h.update(d).unwrap());
    h.finish().unwrap()[0]
}
fn sha_sha2(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    (0..n).for_each(|_| h.update(d));
    h.finalize()[0]
}
fn sha_sha2_asm(_: &[u8], b: &[[u8; 64]], n: usize) -> u8 {
    let mut s = SHA256_INIT;
    (0..n).for_each(|_| sha2_asm::compress256(&mut s, b));
    s[0] as u8
}
fn sha_ring(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    let mut h = ring::digest::Context::new(&ring::digest::SHA256);
    (0..n).for_each(|_| h.update(d));
    h.finish().as_ref()[0]
}
fn sha_aws_lc(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    let mut h = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    (0..n).for_each(|_| h.update(d));
    h.finish().as_ref()[0]
}
fn sha_openssl(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    use openssl::hash::{Hasher, MessageDigest};
    let mut h = Hasher::new(MessageDigest::sha256()).unwrap();
    (0..n).for_each(|_| h.update(d).unwrap());
    h.finish().unwrap()[0]
}
fn crc32(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    let mut h = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32IsoHdlc);
    (0..n).for_each(|_| h.update(d));
    h.finalize() as u8
}
/// What the server runs per read buffer: MD5, SHA-256 and CRC32, each over the whole buffer in turn.
fn three_in_turn(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    use sha2::Digest;
    let (mut s, mut m) = (MD5_INIT, sha2::Sha256::new());
    let mut c = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32IsoHdlc);
    let blocks: Vec<[u8; 64]> = d.chunks_exact(64).map(|c| c.try_into().unwrap()).collect();
    for _ in 0..n {
        md5_asm::compress(&mut s, &blocks);
        m.update(d);
        c.update(d);
    }
    s[0] as u8 ^ m.finalize()[0] ^ c.finalize() as u8
}
/// The same three, interleaved over 16 KiB strides of the buffer (L1-hot for the second and third).
fn three_strided(d: &[u8], _: &[[u8; 64]], n: usize) -> u8 {
    use sha2::Digest;
    let (mut s, mut m) = (MD5_INIT, sha2::Sha256::new());
    let mut c = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32IsoHdlc);
    let blocks: Vec<[u8; 64]> = d.chunks_exact(64).map(|c| c.try_into().unwrap()).collect();
    for _ in 0..n {
        for (bytes, blocks) in d.chunks(STRIDE).zip(blocks.chunks(STRIDE / 64)) {
            md5_asm::compress(&mut s, blocks);
            m.update(bytes);
            c.update(bytes);
        }
    }
    s[0] as u8 ^ m.finalize()[0] ^ c.finalize() as u8
}

/// MD5 (assembly) and SHA-256 (sha2, SHA-NI) over the same bytes: one whole buffer after the other.
fn md5_sha_in_turn(d: &[u8], b: &[[u8; 64]], n: usize) -> u8 {
    use sha2::Digest;
    let (mut s, mut h) = (MD5_INIT, sha2::Sha256::new());
    for _ in 0..n {
        md5_asm::compress(&mut s, b);
        h.update(d);
    }
    s[0] as u8 ^ h.finalize()[0]
}

/// The same, one 64-byte block of each in turn (what the server does): the CPU runs the SHA-256
/// rounds while MD5's serial chain waits.
fn md5_sha_interleaved(d: &[u8], b: &[[u8; 64]], n: usize) -> u8 {
    use sha2::Digest;
    let (mut s, mut h) = (MD5_INIT, sha2::Sha256::new());
    for _ in 0..n {
        for (block, bytes) in b.iter().zip(d.chunks_exact(64)) {
            md5_asm::compress(&mut s, std::slice::from_ref(block));
            h.update(bytes);
        }
    }
    s[0] as u8 ^ h.finalize()[0]
}

fn main() {
    let candidates: &[(&str, Run)] = &[
        ("MD5: md-5 0.10 (portable)", md5_soft),
        ("MD5: md5-asm 0.5 (md-5 asm)", md5_asm),
        ("MD5: OpenSSL (openssl crate)", md5_openssl),
        ("SHA-256: sha2 0.10 (SHA-NI)", sha_sha2),
        ("SHA-256: sha2-asm 0.6 (sha2 asm)", sha_sha2_asm),
        ("SHA-256: ring 0.17", sha_ring),
        ("SHA-256: aws-lc-rs 1", sha_aws_lc),
        ("SHA-256: OpenSSL (openssl crate)", sha_openssl),
        ("CRC32: crc-fast 1", crc32),
        ("MD5+SHA-256+CRC32, in turn", three_in_turn),
        ("MD5+SHA-256+CRC32, 16 KiB strides", three_strided),
        ("MD5+SHA-256, whole buffer in turn", md5_sha_in_turn),
        ("MD5+SHA-256, interleaved (64-byte turns)", md5_sha_interleaved),
    ];
    let big: Vec<u8> = (0..8usize << 20)
        .map(|i| (i * 31 + (i >> 9)) as u8)
        .collect();
    let small = big[..256 << 10].to_vec();
    let blocks =
        |d: &[u8]| -> Vec<[u8; 64]> { d.chunks_exact(64).map(|c| c.try_into().unwrap()).collect() };
    let (big_blocks, small_blocks) = (blocks(&big), blocks(&small));
    let rounds = 5;
    let mut results = vec![(Vec::new(), Vec::new()); candidates.len()];
    for round in 0..=rounds {
        for (i, (_, run)) in candidates.iter().enumerate() {
            let t = thread_cpu();
            black_box(run(black_box(&big), &big_blocks, 32));
            let b = (32 * big.len()) as f64 / (thread_cpu() - t) / 1e6;
            let t = thread_cpu();
            black_box(run(black_box(&small), &small_blocks, 1024));
            let s = (1024 * small.len()) as f64 / (thread_cpu() - t) / 1e6;
            if round > 0 {
                results[i].0.push(b);
                results[i].1.push(s);
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("MB per thread-CPU-second, median of {rounds} rounds after a warm-up\n");
    println!("| implementation | 8 MiB | 256 KiB | CPU s/GiB (256 KiB) |");
    println!("|---|---|---|---|");
    for ((name, _), (b, s)) in candidates.iter().zip(results.iter_mut()) {
        let (b, s) = (median(b), median(s));
        println!(
            "| {name} | {b:.0} | {s:.0} | {:.2} |",
            (1u64 << 30) as f64 / 1e6 / s
        );
    }
}
