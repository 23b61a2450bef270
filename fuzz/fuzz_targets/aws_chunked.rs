//! The aws-chunked decoder, in each of its modes (with and without signature checking), fed arbitrary
//! bytes split at arbitrary points, partly through direct reads, must never panic, never stall, never
//! make its caller buffer without bound, and never report more payload than declared.
//!
//! Random bytes almost never carry a valid chunk signature, so half of the inputs are first encoded
//! as a valid body (the fuzz bytes are the payload) and then have one byte flipped, which drives the
//! decoder through its verifying paths too.
#![no_main]

use std::sync::Arc;

use brisk_wire::framing::BodyDecoder;
use brisk_wire::sigv4::{
    AmzDate, AwsChunkedDecoder, ChunkSigner, ChunkedMode, SigningKey, UnsignedChunkEncoder,
};
use libfuzzer_sys::fuzz_target;

fn chain() -> ChunkSigner {
    let key = Arc::new(SigningKey::derive("secret", "20240301", "us-east-1", "s3"));
    ChunkSigner::new(key, AmzDate::parse("20240301T000000Z").unwrap(), [7; 32])
}

/// A valid body of `payload` in `mode` (0 signed, 1 signed with trailer, 2 unsigned with trailer).
fn encode(mode: u8, payload: &[u8], chunk: usize) -> Vec<u8> {
    let mut signer = chain();
    let mut body = Vec::new();
    for piece in payload.chunks(chunk) {
        if mode == 2 {
            body.extend_from_slice(
                UnsignedChunkEncoder::chunk_header(piece.len() as u64).as_bytes(),
            );
        } else {
            body.extend_from_slice(signer.sign_chunk(piece).as_bytes());
        }
        body.extend_from_slice(piece);
        body.extend_from_slice(b"\r\n");
    }
    let trailers = [("x-amz-checksum-crc32c", "sOO8/Q==")];
    match mode {
        0 => body.extend_from_slice(signer.final_chunk().as_bytes()),
        1 => body.extend(signer.final_chunk_with_trailers(&trailers).unwrap()),
        _ => body.extend(UnsignedChunkEncoder::final_chunk_with_trailers(&trailers).unwrap()),
    }
    body
}

/// Drives the decoder like a connection; returns the payload length seen and whether it finished.
fn run(
    decoder: &mut AwsChunkedDecoder,
    body: &[u8],
    step: usize,
    direct: bool,
    declared: u64,
) -> (u64, bool) {
    let mut buffer: Vec<u8> = Vec::new();
    let mut at = 0;
    let mut payload = 0u64;
    // Each iteration consumes input or ends; the bound catches a decoder that stops making progress.
    for _ in 0..4 * (body.len() + 16) {
        if decoder.is_done() {
            break;
        }
        if direct && buffer.is_empty() && decoder.data_remaining() > 0 && at < body.len() {
            let n = (decoder.data_remaining() as usize)
                .min(step)
                .min(body.len() - at);
            if decoder.advance_data(&body[at..at + n]).is_err() {
                return (payload, false);
            }
            payload += n as u64;
            at += n;
            continue;
        }
        match decoder.decode(&buffer) {
            Err(_) => return (payload, false),
            Ok(d) if d.consumed > 0 => {
                assert!(d.data.start <= d.data.end && d.data.end <= d.consumed);
                assert!(d.consumed <= buffer.len());
                payload += d.data.len() as u64;
                buffer.drain(..d.consumed);
            }
            Ok(d) => {
                assert!(d.data.is_empty());
                if at == body.len() {
                    break;
                }
                let n = step.min(body.len() - at);
                buffer.extend_from_slice(&body[at..at + n]);
                at += n;
            }
        }
        assert!(payload <= declared, "more payload than declared");
        assert!(
            buffer.len() <= 8192,
            "decoder made the caller buffer without bound"
        );
    }
    if decoder.is_done() {
        assert_eq!(payload, declared);
    }
    (payload, decoder.is_done())
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (control, rest) = data.split_at(4);
    let mode_byte = control[0] % 3;
    let mode = match mode_byte {
        0 => ChunkedMode::Signed(chain()),
        1 => ChunkedMode::SignedWithTrailer(chain()),
        _ => ChunkedMode::UnsignedWithTrailer,
    };
    let step = usize::from(control[3] % 64) + 1;
    let direct = control[0] & 0x40 != 0;
    let relaxed = control[0] & 0x80 != 0;

    let (body, declared, flipped) = if control[0] & 0x20 != 0 {
        // Structured: a valid encoding of `rest`, then maybe one byte changed.
        let chunk = if relaxed {
            usize::from(control[1]) + 1
        } else {
            8192
        };
        let mut body = encode(mode_byte, rest, chunk);
        let flip = control[2];
        if flip != 0 {
            let at = (usize::from(control[1]) * 257 + usize::from(flip)) % body.len();
            body[at] ^= flip;
        }
        (body, rest.len() as u64, flip != 0)
    } else {
        let declared = u64::from(u16::from_le_bytes([control[1], control[2]]));
        (rest.to_vec(), declared, true)
    };
    let mut decoder = AwsChunkedDecoder::new(mode, declared);
    if relaxed {
        decoder = decoder.with_min_chunk_size(0);
    }
    let (_, done) = run(&mut decoder, &body, step, direct, declared);
    if !flipped {
        assert!(done, "a valid body was rejected");
    }
});
