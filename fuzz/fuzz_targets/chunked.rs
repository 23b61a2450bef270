//! The chunked decoder on arbitrary bytes split at arbitrary points: it must never panic, and the
//! outcome (payload, bytes consumed, trailers, or the error) must not depend on how the input was
//! split or on whether payload was taken through `decode` or the direct-read path.

#![no_main]

use brisk_wire::framing::{BodyDecoder, FramingError};
use brisk_wire::http::{ChunkedDecoder, Headers};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
struct Outcome {
    payload: Vec<u8>,
    consumed: usize,
    done: bool,
    trailers: Option<Headers>,
}

/// Feeds `input` in pieces whose lengths come from `split_seed` (a whole piece when it is 0), keeping
/// unconsumed bytes as a connection's buffer would.
fn run(
    input: &[u8],
    split_seed: u32,
    direct: bool,
    limits: (usize, usize),
) -> Result<Outcome, FramingError> {
    let mut decoder = ChunkedDecoder::with_limits(limits.0, limits.1);
    let mut buffer = Vec::new();
    let mut payload = Vec::new();
    let mut consumed = 0;
    let mut fed = 0;
    let mut state = split_seed;
    while fed < input.len() && !decoder.is_done() {
        let piece = if split_seed == 0 {
            input.len()
        } else {
            // xorshift: cheap, deterministic piece lengths of 1 to 16 bytes.
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            1 + (state % 16) as usize
        };
        let end = (fed + piece).min(input.len());
        buffer.extend_from_slice(&input[fed..end]);
        fed = end;
        while !decoder.is_done() && !buffer.is_empty() {
            let remaining = decoder.data_remaining();
            if direct && remaining > 0 {
                let n = usize::try_from(remaining)
                    .unwrap_or(usize::MAX)
                    .min(buffer.len());
                decoder.advance_data(&buffer[..n])?;
                payload.extend_from_slice(&buffer[..n]);
                buffer.drain(..n);
                consumed += n;
                continue;
            }
            let got = decoder.decode(&buffer)?;
            assert!(got.data.start <= got.data.end && got.data.end <= got.consumed);
            assert!(got.consumed <= buffer.len());
            if got.consumed == 0 {
                break;
            }
            payload.extend_from_slice(&buffer[got.data.clone()]);
            buffer.drain(..got.consumed);
            consumed += got.consumed;
        }
    }
    assert_eq!(decoder.payload_len(), payload.len() as u64);
    Ok(Outcome {
        payload,
        consumed,
        done: decoder.is_done(),
        trailers: decoder.trailers().cloned(),
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let (header, input) = data.split_at(5);
    let split_seed = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let limits = if header[4] & 1 == 0 {
        (4096, 16 * 1024)
    } else {
        (16, 64)
    };
    let whole = run(input, 0, false, limits);
    let split = run(input, split_seed | 1, header[4] & 2 != 0, limits);
    assert_eq!(whole, split);
});
