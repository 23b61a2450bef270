//! The one interface every body framing implements, so that the I/O layer (client or server) drives
//! HTTP `chunked`, aws-chunked (signed chunks, unsigned with trailer) and plain Content-Length bodies the
//! same way.
//!
//! A decoder is *sans-IO*: it is handed whatever bytes the connection has buffered and says how many of
//! them it consumed and where, inside them, the payload is. Payload bytes are never copied by a decoder;
//! the caller writes them from where they already are (the server's read buffer straight to the file, the
//! client's read buffer into the caller's destination).
//!
//! When a decoder is in the middle of a payload run it reports how many payload bytes follow
//! ([`BodyDecoder::data_remaining`]). A caller with an empty read buffer and a large destination can then
//! read up to that many bytes straight from the socket into the destination and tell the decoder with
//! [`BodyDecoder::advance_data`]: the bytes cross user space once.

use std::ops::Range;

/// Why a body's framing was rejected. Every variant is a protocol error of the peer: the connection can
/// not be reused after it, because the framing is lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FramingError {
    /// A chunk-size line is not hexadecimal, is empty, or overflows `u64`.
    #[error("invalid chunk size line")]
    InvalidChunkSize,
    /// A metadata line (chunk header, extension or trailer) is longer than the decoder's limit.
    #[error("chunk metadata line longer than {limit} bytes")]
    LineTooLong { limit: usize },
    /// The bytes after a chunk's data are not CRLF.
    #[error("chunk data not followed by CRLF")]
    MissingCrlf,
    /// The trailer section is larger than the decoder's limit.
    #[error("trailers larger than {limit} bytes")]
    TrailersTooLarge { limit: usize },
    /// A trailer line is not `name: value`.
    #[error("malformed trailer line")]
    InvalidTrailer,
    /// A chunk extension is malformed (aws-chunked: a `chunk-signature` that is missing or not 64 hex
    /// digits).
    #[error("malformed chunk extension")]
    InvalidExtension,
    /// The decoded payload is longer or shorter than it was declared to be (for aws-chunked,
    /// `x-amz-decoded-content-length`).
    #[error("decoded length {actual} differs from the declared {declared}")]
    LengthMismatch { declared: u64, actual: u64 },
    /// An aws-chunked chunk signature (or the trailer signature) does not match.
    #[error("chunk signature does not match")]
    SignatureMismatch,
    /// A chunk other than the last is smaller than the protocol allows (aws-chunked: 8 KiB).
    #[error("chunk of {size} bytes is smaller than the minimum {min}")]
    ChunkTooSmall { size: u64, min: u64 },
}

/// What one call to [`BodyDecoder::decode`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decoded {
    /// How many bytes of the input were consumed (framing and payload). The caller drops them from its
    /// buffer; the rest must be offered again on the next call.
    pub consumed: usize,
    /// Where the payload found by this call lies in the input (a sub-range of `0..consumed`; empty when
    /// the call only consumed framing). One call returns at most one contiguous payload run.
    pub data: Range<usize>,
}

/// A sans-IO decoder of one framed body. See the module documentation for how a caller drives it.
pub trait BodyDecoder {
    /// Consumes framing and payload bytes from `input`.
    ///
    /// Returns `consumed == 0` only when `input` holds too few bytes to make progress (an incomplete
    /// metadata line): the caller must read more and call again with the bytes appended. The payload
    /// bytes in `input[data]` are valid once this returns `Ok`; a decoder that checks them (aws-chunked)
    /// reports a mismatch at the end of the chunk, so a caller must not treat the body as good before
    /// [`is_done`](Self::is_done).
    fn decode(&mut self, input: &[u8]) -> Result<Decoded, FramingError>;

    /// How many payload bytes follow before the next framing byte (0 when the decoder is not inside a
    /// payload run).
    fn data_remaining(&self) -> u64;

    /// Tells the decoder that the caller read `data` (the next payload bytes, at most
    /// [`data_remaining`](Self::data_remaining) of them) straight from the transport, bypassing
    /// [`decode`](Self::decode). Decoders that hash or sign the payload look at it here.
    fn advance_data(&mut self, data: &[u8]) -> Result<(), FramingError>;

    /// The body is complete (the final chunk and trailers, if any, have been consumed and verified).
    fn is_done(&self) -> bool;
}

/// A body of exactly `len` bytes (Content-Length framing): all payload, no framing.
#[derive(Debug, Clone)]
pub struct LengthDecoder {
    remaining: u64,
}

impl LengthDecoder {
    /// A decoder for a body of `len` bytes.
    pub fn new(len: u64) -> Self {
        Self { remaining: len }
    }
}

impl BodyDecoder for LengthDecoder {
    fn decode(&mut self, input: &[u8]) -> Result<Decoded, FramingError> {
        let take = usize::try_from(self.remaining)
            .unwrap_or(usize::MAX)
            .min(input.len());
        self.remaining -= take as u64;
        Ok(Decoded {
            consumed: take,
            data: 0..take,
        })
    }

    fn data_remaining(&self) -> u64 {
        self.remaining
    }

    fn advance_data(&mut self, data: &[u8]) -> Result<(), FramingError> {
        let n = data.len() as u64;
        if n > self.remaining {
            return Err(FramingError::LengthMismatch {
                declared: self.remaining,
                actual: n,
            });
        }
        self.remaining -= n;
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.remaining == 0
    }
}

/// Lower-case hex of a chunk `size` without leading zeros ("0" for zero), written into `buf`: the size
/// line of both HTTP `chunked` and aws-chunked bodies.
pub fn hex_chunk_size(size: u64, buf: &mut [u8; 16]) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = hex_chunk_size_len(size);
    for (i, slot) in buf[..digits].iter_mut().enumerate() {
        let shift = 4 * (digits - 1 - i);
        *slot = HEX[((size >> shift) & 0xf) as usize];
    }
    &buf[..digits]
}

/// How many hex digits [`hex_chunk_size`] writes for `size` (1 for zero): what encoded-length
/// computations need without formatting.
pub fn hex_chunk_size_len(size: u64) -> usize {
    (64 - size.leading_zeros() as usize).div_ceil(4).max(1)
}

/// Runs `decoder` over a whole in-memory body and returns the payload. For tests, fuzzing and small
/// bodies; the data path drives decoders incrementally instead.
pub fn decode_all<D: BodyDecoder + ?Sized>(
    decoder: &mut D,
    mut input: &[u8],
) -> Result<(Vec<u8>, usize), FramingError> {
    let mut out = Vec::new();
    let mut total = 0;
    while !decoder.is_done() {
        let d = decoder.decode(input)?;
        if d.consumed == 0 {
            break;
        }
        out.extend_from_slice(&input[d.data]);
        input = &input[d.consumed..];
        total += d.consumed;
    }
    Ok((out, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_chunk_sizes() {
        let mut b = [0u8; 16];
        assert_eq!(hex_chunk_size(0, &mut b), b"0");
        assert_eq!(hex_chunk_size(0xabc, &mut b), b"abc");
        assert_eq!(hex_chunk_size(0x10000, &mut b), b"10000");
        assert_eq!(hex_chunk_size(u64::MAX, &mut b), b"ffffffffffffffff");
        assert_eq!(hex_chunk_size_len(0xfff), 3);
        assert_eq!(hex_chunk_size_len(0x1000), 4);
    }

    #[test]
    fn length_decoder_stops_at_its_length() {
        let mut d = LengthDecoder::new(5);
        let got = d.decode(b"helloGET /").unwrap();
        assert_eq!(got.consumed, 5);
        assert_eq!(got.data, 0..5);
        assert!(d.is_done());
        assert_eq!(d.decode(b"more").unwrap().consumed, 0);
    }

    #[test]
    fn length_decoder_accepts_direct_reads_up_to_its_length() {
        let mut d = LengthDecoder::new(4);
        d.advance_data(b"ab").unwrap();
        assert_eq!(d.data_remaining(), 2);
        assert!(d.advance_data(b"cde").is_err());
        d.advance_data(b"cd").unwrap();
        assert!(d.is_done());
    }
}
