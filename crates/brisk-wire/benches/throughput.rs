//! Data-path throughput of the wire layer on this machine, in bytes per second next to plain `memcpy`:
//! every checksum brisk computes on a body, aws-chunked signing (client) and verifying (server), and the
//! HTTP chunked decoder. Run with `cargo bench -p brisk-wire --bench throughput` (or `./scripts/bench`);
//! criterion prints GiB/s as `thrpt`.
//!
//! Every case works on the same 4 MiB buffer (larger than L2, so the figures are for memory-resident data
//! as on the data path, not for a cache-hot toy input).

use std::hint::black_box;

use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer, Md5};
use brisk_wire::framing::BodyDecoder;
use brisk_wire::sigv4::{AmzDate, AwsChunkedDecoder, ChunkSigner, ChunkedMode, Credentials};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const BODY: usize = 4 << 20;
/// aws-chunked chunk size the AWS SDKs use (64 KiB); 1 MiB shows the per-chunk overhead going away.
const CHUNK_SIZES: [usize; 2] = [64 << 10, 1 << 20];

fn body() -> Vec<u8> {
    (0..BODY).map(|i| (i * 31 + i / 4096) as u8).collect()
}

fn memcpy(c: &mut Criterion) {
    let src = body();
    let mut dst = vec![0u8; BODY];
    let mut g = c.benchmark_group("memcpy");
    g.throughput(Throughput::Bytes(BODY as u64));
    g.bench_function("copy_from_slice", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    g.finish();
}

fn checksums(c: &mut Criterion) {
    let data = body();
    let mut g = c.benchmark_group("checksum");
    g.throughput(Throughput::Bytes(BODY as u64));
    for algorithm in [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32c,
        ChecksumAlgorithm::Crc64Nvme,
        ChecksumAlgorithm::Sha256,
    ] {
        g.bench_function(algorithm.to_string(), |b| {
            b.iter(|| {
                // Fed in 64 KiB slices, as a body arrives from the read buffer.
                let mut sum = Checksummer::new(algorithm);
                for piece in data.chunks(64 << 10) {
                    sum.update(black_box(piece));
                }
                black_box(sum.finalize())
            })
        });
    }
    g.bench_function("MD5", |b| {
        b.iter(|| {
            let mut md5 = Md5::new();
            for piece in data.chunks(64 << 10) {
                md5.update(black_box(piece));
            }
            black_box(md5.finalize())
        })
    });
    g.finish();
}

fn chunk_signer() -> ChunkSigner {
    let credentials = Credentials::new(
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    );
    let time = AmzDate::from_unix_seconds(1_369_353_600).expect("valid time");
    let key = credentials.signing_key(time.date_str(), "us-east-1", "s3");
    ChunkSigner::new(key, time, [7u8; 32])
}

fn aws_chunked(c: &mut Criterion) {
    let data = body();
    let mut g = c.benchmark_group("aws-chunked");
    g.throughput(Throughput::Bytes(BODY as u64));
    for chunk in CHUNK_SIZES {
        g.bench_with_input(BenchmarkId::new("sign", chunk), &chunk, |b, &chunk| {
            b.iter(|| {
                let mut signer = chunk_signer();
                for piece in data.chunks(chunk) {
                    black_box(signer.sign_chunk(black_box(piece)));
                }
                black_box(signer.final_chunk())
            })
        });

        // The server side: the encoded body is decoded in place and every chunk signature checked.
        let mut encoded = Vec::with_capacity(BODY + 4096);
        let mut signer = chunk_signer();
        for piece in data.chunks(chunk) {
            encoded.extend_from_slice(signer.sign_chunk(piece).as_bytes());
            encoded.extend_from_slice(piece);
            encoded.extend_from_slice(b"\r\n");
        }
        // The final chunk's header already ends the body (its CRLF and the empty line).
        encoded.extend_from_slice(signer.final_chunk().as_bytes());
        g.bench_with_input(BenchmarkId::new("verify", chunk), &chunk, |b, _| {
            b.iter(|| {
                let mut decoder =
                    AwsChunkedDecoder::new(ChunkedMode::Signed(chunk_signer()), BODY as u64);
                let mut input = &encoded[..];
                let mut payload = 0usize;
                while !decoder.is_done() {
                    let d = decoder.decode(input).expect("valid body");
                    payload += d.data.len();
                    input = &input[d.consumed..];
                }
                assert_eq!(payload, BODY);
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = memcpy, checksums, aws_chunked
}
criterion_main!(benches);
