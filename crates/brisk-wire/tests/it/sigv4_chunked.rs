//! aws-chunked: random payloads, random chunk sizes, bodies fed to the decoder split at random points
//! (and partly through direct reads) decode to the same payload with every signature verified; broken
//! bodies are rejected and never decode to a different payload.

use std::sync::Arc;

use brisk_wire::framing::{BodyDecoder, FramingError};
use brisk_wire::sigv4::chunked::{
    signed_encoded_length, signed_trailer_encoded_length, unsigned_trailer_encoded_length,
};
use brisk_wire::sigv4::decoder::{MAX_CHUNK_HEADER_LEN, MIN_SIGNED_CHUNK_SIZE};
use brisk_wire::sigv4::{
    AmzDate, AwsChunkedDecoder, ChunkSigner, ChunkedMode, SigningKey, UnsignedChunkEncoder,
};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Signed,
    SignedTrailer,
    UnsignedTrailer,
}

const TRAILER: (&str, &str) = ("x-amz-checksum-crc64nvme", "AAAAAAAAAAA=");

fn chain() -> ChunkSigner {
    let key = Arc::new(SigningKey::derive("secret", "20240301", "us-east-1", "s3"));
    ChunkSigner::new(key, AmzDate::parse("20240301T000000Z").unwrap(), [0x42; 32])
}

fn mode(variant: Variant) -> ChunkedMode {
    match variant {
        Variant::Signed => ChunkedMode::Signed(chain()),
        Variant::SignedTrailer => ChunkedMode::SignedWithTrailer(chain()),
        Variant::UnsignedTrailer => ChunkedMode::UnsignedWithTrailer,
    }
}

/// Encodes `payload` in chunks of `chunk_size`.
fn encode(variant: Variant, payload: &[u8], chunk_size: usize) -> Vec<u8> {
    let mut signer = chain();
    let mut body = Vec::new();
    for piece in payload.chunks(chunk_size) {
        match variant {
            Variant::UnsignedTrailer => body.extend_from_slice(
                UnsignedChunkEncoder::chunk_header(piece.len() as u64).as_bytes(),
            ),
            _ => body.extend_from_slice(signer.sign_chunk(piece).as_bytes()),
        }
        body.extend_from_slice(piece);
        body.extend_from_slice(b"\r\n");
    }
    match variant {
        Variant::Signed => body.extend_from_slice(signer.final_chunk().as_bytes()),
        Variant::SignedTrailer => {
            body.extend(signer.final_chunk_with_trailers(&[TRAILER]).unwrap())
        }
        Variant::UnsignedTrailer => {
            body.extend(UnsignedChunkEncoder::final_chunk_with_trailers(&[TRAILER]).unwrap())
        }
    }
    body
}

/// Drives `decoder` like a connection would: bytes arrive in pieces of the given sizes into a read
/// buffer; whenever the buffer is empty inside a payload run, up to `direct` bytes are read straight
/// past it with `advance_data`. Returns the payload, or the first error; `Ok(None)` if the body ended
/// before the decoder was done.
fn drive(
    decoder: &mut AwsChunkedDecoder,
    body: &[u8],
    splits: &[usize],
    direct: usize,
) -> Result<Option<Vec<u8>>, FramingError> {
    let mut out = Vec::new();
    let mut buffer: Vec<u8> = Vec::new();
    let mut at = 0;
    let mut split = splits.iter().cycle();
    while !decoder.is_done() {
        if buffer.is_empty() && direct > 0 && decoder.data_remaining() > 0 && at < body.len() {
            let n = (decoder.data_remaining() as usize)
                .min(direct)
                .min(body.len() - at);
            decoder.advance_data(&body[at..at + n])?;
            out.extend_from_slice(&body[at..at + n]);
            at += n;
            continue;
        }
        let d = decoder.decode(&buffer)?;
        if d.consumed > 0 {
            out.extend_from_slice(&buffer[d.data.clone()]);
            buffer.drain(..d.consumed);
            continue;
        }
        if at == body.len() {
            return Ok(None);
        }
        let n = (*split.next().unwrap()).clamp(1, body.len() - at);
        buffer.extend_from_slice(&body[at..at + n]);
        at += n;
    }
    assert!(
        buffer.is_empty() && at == body.len(),
        "decoder stopped before the body's end"
    );
    Ok(Some(out))
}

fn variant_strategy() -> impl Strategy<Value = Variant> {
    prop_oneof![
        Just(Variant::Signed),
        Just(Variant::SignedTrailer),
        Just(Variant::UnsignedTrailer)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn encoded_bodies_decode_to_the_same_payload(
        variant in variant_strategy(),
        len in 0usize..70_000,
        seed in any::<u8>(),
        chunk_extra in 0usize..20_000,
        splits in prop::collection::vec(1usize..30_000, 1..8),
        direct in prop_oneof![Just(0usize), 1usize..40_000],
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(seed | 1)).collect();
        let min = if variant == Variant::UnsignedTrailer { 1 } else { MIN_SIGNED_CHUNK_SIZE as usize };
        let chunk = min + chunk_extra;
        let body = encode(variant, &payload, chunk);
        let trailer = [(TRAILER.0, TRAILER.1.len())];
        let expected_len = match variant {
            Variant::Signed => signed_encoded_length(len as u64, chunk as u64),
            Variant::SignedTrailer => signed_trailer_encoded_length(len as u64, chunk as u64, &trailer),
            Variant::UnsignedTrailer => unsigned_trailer_encoded_length(len as u64, chunk as u64, &trailer),
        };
        prop_assert_eq!(body.len() as u64, expected_len);

        let mut decoder = AwsChunkedDecoder::new(mode(variant), len as u64);
        let decoded = drive(&mut decoder, &body, &splits, direct).unwrap().expect("complete body");
        prop_assert_eq!(decoded, payload);
        prop_assert!(decoder.is_done());
        if variant != Variant::Signed {
            prop_assert_eq!(decoder.trailer(TRAILER.0), Some(TRAILER.1));
        }
    }

    #[test]
    fn truncated_bodies_never_complete(
        variant in variant_strategy(),
        len in 1usize..30_000,
        cut_permille in 0usize..1000,
        splits in prop::collection::vec(1usize..5_000, 1..4),
    ) {
        let payload = vec![0x5a; len];
        let body = encode(variant, &payload, MIN_SIGNED_CHUNK_SIZE as usize);
        let cut = body.len() * cut_permille / 1000;
        let mut decoder = AwsChunkedDecoder::new(mode(variant), len as u64);
        let got = drive(&mut decoder, &body[..cut], &splits, 0);
        prop_assert!(matches!(got, Ok(None)), "{:?}", got.map(|o| o.map(|v| v.len())));
        prop_assert!(!decoder.is_done());
    }

    #[test]
    fn corrupted_signed_bodies_never_yield_a_different_payload(
        trailer in any::<bool>(),
        len in 1usize..30_000,
        at_permille in 0usize..1000,
        xor in 1u8..=255,
        splits in prop::collection::vec(1usize..10_000, 1..4),
    ) {
        let variant = if trailer { Variant::SignedTrailer } else { Variant::Signed };
        let payload: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        let mut body = encode(variant, &payload, MIN_SIGNED_CHUNK_SIZE as usize);
        let at = body.len() * at_permille / 1000;
        body[at] ^= xor;
        let mut decoder = AwsChunkedDecoder::new(mode(variant), len as u64);
        if let Ok(Some(decoded)) = drive(&mut decoder, &body, &splits, 0) {
            // Only changes that keep the meaning (hex digit case) may pass.
            prop_assert_eq!(decoded, payload);
        }
    }
}

#[test]
fn rejects_malformed_framing() {
    let decode = |variant: Variant, declared: u64, body: &[u8]| {
        let mut d = AwsChunkedDecoder::new(mode(variant), declared);
        drive(&mut d, body, &[7], 0)
    };
    // Oversize header line.
    let long = format!("{}\r\n", "0".repeat(MAX_CHUNK_HEADER_LEN + 1));
    assert_eq!(
        decode(Variant::UnsignedTrailer, 0, long.as_bytes()),
        Err(FramingError::LineTooLong {
            limit: MAX_CHUNK_HEADER_LEN
        })
    );
    // Bad hex.
    assert_eq!(
        decode(Variant::UnsignedTrailer, 0, b"0x10\r\n"),
        Err(FramingError::InvalidChunkSize)
    );
    // A small chunk that is not the last.
    let payload = vec![1u8; 3 * 1024];
    let body = encode(Variant::Signed, &payload, 1024);
    assert_eq!(
        decode(Variant::Signed, payload.len() as u64, &body),
        Err(FramingError::ChunkTooSmall {
            size: 1024,
            min: MIN_SIGNED_CHUNK_SIZE
        })
    );
    // Declared length shorter and longer than the body.
    let body = encode(Variant::UnsignedTrailer, &payload, 1024);
    assert!(matches!(
        decode(Variant::UnsignedTrailer, 100, &body),
        Err(FramingError::LengthMismatch { declared: 100, .. })
    ));
    assert!(matches!(
        decode(Variant::UnsignedTrailer, 5000, &body),
        Err(FramingError::LengthMismatch {
            declared: 5000,
            actual: 3072
        })
    ));
    // Trailers where none are allowed, and a signed-trailer body without its signature.
    let mut d = AwsChunkedDecoder::new(mode(Variant::Signed), 0);
    let mut body = chain().final_chunk().as_bytes().to_vec();
    body.truncate(body.len() - 2);
    body.extend_from_slice(b"x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
    assert_eq!(
        drive(&mut d, &body, &[100], 0),
        Err(FramingError::InvalidTrailer)
    );
    let mut signed = chain();
    let mut body = signed.final_chunk().as_bytes().to_vec();
    body.truncate(body.len() - 2);
    body.extend_from_slice(b"x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
    let mut d = AwsChunkedDecoder::new(mode(Variant::SignedTrailer), 0);
    assert_eq!(
        drive(&mut d, &body, &[100], 0),
        Err(FramingError::InvalidTrailer)
    );
}

/// Runs a decoder over a whole in-memory body without copying the payload out (what a server writing
/// straight from its read buffer does); returns the payload length.
fn decode_in_place(decoder: &mut AwsChunkedDecoder, body: &[u8]) -> usize {
    let (mut at, mut payload) = (0, 0);
    while !decoder.is_done() {
        let d = decoder.decode(&body[at..]).unwrap();
        assert!(d.consumed > 0, "stalled at {at}");
        payload += d.data.len();
        at += d.consumed;
    }
    payload
}

/// Rough single-core throughput of the streaming paths, printed rather than asserted (timings vary
/// with the machine). Run with
/// `cargo test --release -p brisk-wire --test it sigv4_chunked:: -- --ignored --nocapture`.
#[test]
#[ignore = "measurement, run on demand in release mode"]
fn measure_streaming_throughput() {
    use std::time::Instant;
    const TOTAL: usize = 64 << 20;
    const CHUNK: usize = 64 << 10;
    let payload = vec![0xa5u8; TOTAL];
    let mib = (TOTAL >> 20) as f64;

    let mut signer = chain();
    let started = Instant::now();
    let mut framing = 0;
    for piece in payload.chunks(CHUNK) {
        framing += signer.sign_chunk(piece).as_bytes().len();
    }
    framing += signer.final_chunk().as_bytes().len();
    let sign = mib / started.elapsed().as_secs_f64();
    assert!(framing > 0);

    let body = encode(Variant::Signed, &payload, CHUNK);
    let started = Instant::now();
    let mut d = AwsChunkedDecoder::new(mode(Variant::Signed), TOTAL as u64);
    assert_eq!(decode_in_place(&mut d, &body), TOTAL);
    let verify = mib / started.elapsed().as_secs_f64();

    let body = encode(Variant::UnsignedTrailer, &payload, CHUNK);
    let started = Instant::now();
    let mut d = AwsChunkedDecoder::new(mode(Variant::UnsignedTrailer), TOTAL as u64);
    assert_eq!(decode_in_place(&mut d, &body), TOTAL);
    let unsigned_us = started.elapsed().as_secs_f64() * 1e6;

    println!(
        "64 MiB in 64 KiB chunks, one core: sign chunks {sign:.0} MiB/s, \
         decode + verify signed {verify:.0} MiB/s, decode unsigned (framing only, payload untouched) {unsigned_us:.0} µs in all"
    );
}
