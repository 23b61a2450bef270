//! The server's aws-chunked decoder: a sans-IO [`BodyDecoder`] that strips the framing, verifies each
//! chunk signature as the data streams past (hashing it, never holding it), checks the declared
//! `x-amz-decoded-content-length`, and collects the trailers.
//!
//! Memory is constant: one SHA-256 state, one signature chain, and the trailers (at most
//! [`MAX_TRAILERS_LEN`] bytes). A chunk's header must arrive whole in the caller's buffer, so the
//! buffer needs at least [`MAX_CHUNK_HEADER_LEN`] + 2 bytes.

use crate::checksum::engine::{Digest, Sha256};

use super::chunked::{CRLF, ChunkSigner, TRAILER_SIGNATURE_NAME};
use super::hashing::{constant_time_eq, parse_hex32};
use crate::framing::{BodyDecoder, Decoded, FramingError};

/// Longest chunk header line accepted, without its CRLF. A signed header is at most 16 + 17 + 64 = 97
/// bytes; the rest leaves room for leading zeros some encoders write, while keeping a garbage stream
/// from making the caller buffer much.
pub const MAX_CHUNK_HEADER_LEN: usize = 128;
/// Largest trailer section accepted (all lines with their CRLFs). A checksum trailer is under 100
/// bytes and the signature line 90; 4 KiB leaves room for several while bounding what is kept.
pub const MAX_TRAILERS_LEN: usize = 4096;
/// S3's minimum size of every signed chunk but the last: 8 KiB.
pub const MIN_SIGNED_CHUNK_SIZE: u64 = 8 * 1024;

/// Which aws-chunked variant the body uses (chosen by `x-amz-content-sha256`).
#[derive(Debug, Clone)]
pub enum ChunkedMode {
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: every chunk signed, no trailers.
    Signed(ChunkSigner),
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: signed chunks, then trailers signed by
    /// `x-amz-trailer-signature`.
    SignedWithTrailer(ChunkSigner),
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: plain chunk sizes, then unsigned trailers.
    UnsignedWithTrailer,
}

/// One trailer (a `name:value` line after the final chunk), name lower-cased, value trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone)]
enum State {
    /// Expecting a chunk header line.
    Header,
    /// Inside a chunk's data.
    Data {
        remaining: u64,
    },
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the final chunk: trailer lines until an empty line.
    Trailers,
    Done,
    /// A previous call failed; the framing is lost and every later call fails the same way.
    Failed(FramingError),
}

/// A sans-IO aws-chunked body decoder. See the module documentation.
#[derive(Debug, Clone)]
pub struct AwsChunkedDecoder {
    chain: Option<ChunkSigner>,
    trailers_allowed: bool,
    state: State,
    declared_len: u64,
    decoded_len: u64,
    min_chunk_size: u64,
    /// Size of the last data chunk when it was below the minimum: only acceptable if it was the last.
    short_chunk: Option<u64>,
    chunk_hash: Sha256,
    expected_signature: [u8; 32],
    trailers_hash: Sha256,
    trailers_len: usize,
    trailer_signature: Option<[u8; 32]>,
    trailers: Vec<Trailer>,
}

impl AwsChunkedDecoder {
    /// A decoder for a body of `mode` that must decode to exactly `decoded_content_length` bytes.
    /// Signed modes enforce S3's 8 KiB minimum chunk size; unsigned bodies have none.
    pub fn new(mode: ChunkedMode, decoded_content_length: u64) -> Self {
        let (chain, trailers_allowed, min_chunk_size) = match mode {
            ChunkedMode::Signed(c) => (Some(c), false, MIN_SIGNED_CHUNK_SIZE),
            ChunkedMode::SignedWithTrailer(c) => (Some(c), true, MIN_SIGNED_CHUNK_SIZE),
            ChunkedMode::UnsignedWithTrailer => (None, true, 0),
        };
        Self {
            chain,
            trailers_allowed,
            state: State::Header,
            declared_len: decoded_content_length,
            decoded_len: 0,
            min_chunk_size,
            short_chunk: None,
            chunk_hash: Sha256::new(),
            expected_signature: [0; 32],
            trailers_hash: Sha256::new(),
            trailers_len: 0,
            trailer_signature: None,
            trailers: Vec::new(),
        }
    }

    /// Overrides the minimum size of every chunk but the last (0 disables the check).
    pub fn with_min_chunk_size(mut self, min: u64) -> Self {
        self.min_chunk_size = min;
        self
    }

    /// The trailers received (complete once [`is_done`](BodyDecoder::is_done)); the signature trailer
    /// is verified and not listed. Checking a checksum trailer against the data is the caller's job.
    pub fn trailers(&self) -> &[Trailer] {
        &self.trailers
    }

    /// The value of trailer `name` (case-insensitive).
    pub fn trailer(&self, name: &str) -> Option<&str> {
        self.trailers
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
            .map(|t| t.value.as_str())
    }

    /// Payload bytes decoded so far.
    pub fn decoded_len(&self) -> u64 {
        self.decoded_len
    }

    fn fail(&mut self, e: FramingError) -> FramingError {
        self.state = State::Failed(e.clone());
        e
    }

    /// Parses a chunk header line (without CRLF) and moves to its data or the trailers.
    fn on_header(&mut self, line: &[u8]) -> Result<(), FramingError> {
        let (size_text, extension) = match line.iter().position(|&b| b == b';') {
            Some(i) => (&line[..i], Some(&line[i + 1..])),
            None => (line, None),
        };
        let size = parse_hex_size(size_text)?;
        match (&self.chain, extension) {
            (Some(_), Some(ext)) => {
                let sig = ext
                    .strip_prefix(b"chunk-signature=")
                    .and_then(parse_hex32)
                    .ok_or(FramingError::InvalidExtension)?;
                self.expected_signature = sig;
            }
            (Some(_), None) | (None, Some(_)) => return Err(FramingError::InvalidExtension),
            (None, None) => {}
        }
        if let Some(small) = self.short_chunk.filter(|_| size > 0) {
            return Err(FramingError::ChunkTooSmall {
                size: small,
                min: self.min_chunk_size,
            });
        }
        let total = self.decoded_len.saturating_add(size);
        if total > self.declared_len || (size == 0 && total != self.declared_len) {
            return Err(FramingError::LengthMismatch {
                declared: self.declared_len,
                actual: total,
            });
        }
        if size < self.min_chunk_size {
            self.short_chunk = Some(size);
        }
        if size == 0 {
            self.end_of_chunk()?;
            self.state = State::Trailers;
        } else {
            self.state = State::Data { remaining: size };
        }
        Ok(())
    }

    /// Feeds payload bytes of the current chunk; verifies the chunk when its data is complete.
    fn on_data(&mut self, data: &[u8]) -> Result<(), FramingError> {
        let State::Data { remaining } = self.state else {
            return Err(FramingError::LengthMismatch {
                declared: 0,
                actual: data.len() as u64,
            });
        };
        let n = data.len() as u64;
        if n > remaining {
            return Err(FramingError::LengthMismatch {
                declared: remaining,
                actual: n,
            });
        }
        if self.chain.is_some() {
            self.chunk_hash.update(data);
        }
        self.decoded_len += n;
        if n == remaining {
            self.end_of_chunk()?;
            self.state = State::DataEnd;
        } else {
            self.state = State::Data {
                remaining: remaining - n,
            };
        }
        Ok(())
    }

    /// Verifies the signature of the chunk whose data just ended.
    fn end_of_chunk(&mut self) -> Result<(), FramingError> {
        if let Some(chain) = self.chain.as_mut() {
            let digest: [u8; 32] = self.chunk_hash.finalize_reset().into();
            let computed = chain.next_signature(&digest);
            if !constant_time_eq(&computed, &self.expected_signature) {
                return Err(FramingError::SignatureMismatch);
            }
        }
        Ok(())
    }

    /// Handles one trailer-section line (without CRLF); the empty line ends the body.
    fn on_trailer_line(&mut self, line: &[u8]) -> Result<(), FramingError> {
        if line.is_empty() {
            return self.end_of_trailers();
        }
        if !self.trailers_allowed || self.trailer_signature.is_some() {
            // No trailers in this mode, or a trailer after the signature (which must be last).
            return Err(FramingError::InvalidTrailer);
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or(FramingError::InvalidTrailer)?;
        let name = std::str::from_utf8(&line[..colon])
            .map_err(|_| FramingError::InvalidTrailer)?
            .trim();
        let value = std::str::from_utf8(&line[colon + 1..])
            .map_err(|_| FramingError::InvalidTrailer)?
            .trim();
        if !super::canonical::is_token(name) {
            return Err(FramingError::InvalidTrailer);
        }
        if name.eq_ignore_ascii_case(TRAILER_SIGNATURE_NAME) {
            if self.chain.is_none() {
                return Err(FramingError::InvalidTrailer);
            }
            let sig = parse_hex32(value.as_bytes()).ok_or(FramingError::InvalidTrailer)?;
            self.trailer_signature = Some(sig);
            return Ok(());
        }
        let name = name.to_ascii_lowercase();
        self.trailers_hash.update(name.as_bytes());
        self.trailers_hash.update(b":");
        self.trailers_hash.update(value.as_bytes());
        self.trailers_hash.update(b"\n");
        self.trailers.push(Trailer {
            name,
            value: value.to_owned(),
        });
        Ok(())
    }

    fn end_of_trailers(&mut self) -> Result<(), FramingError> {
        if let Some(chain) = self.chain.as_mut().filter(|_| self.trailers_allowed) {
            let expected = self.trailer_signature.ok_or(FramingError::InvalidTrailer)?;
            let digest: [u8; 32] = self.trailers_hash.finalize_reset().into();
            let computed = chain.trailer_signature(&digest);
            if !constant_time_eq(&computed, &expected) {
                return Err(FramingError::SignatureMismatch);
            }
        }
        self.state = State::Done;
        Ok(())
    }

    fn decode_inner(&mut self, input: &[u8]) -> Result<Decoded, FramingError> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match self.state {
                State::Failed(ref e) => return Err(e.clone()),
                State::Done => break,
                State::Header => {
                    let Some(line) = take_line(rest, MAX_CHUNK_HEADER_LEN)? else {
                        break;
                    };
                    self.on_header(line)?;
                    pos += line.len() + 2;
                }
                State::Data { remaining } => {
                    if rest.is_empty() {
                        break;
                    }
                    let n = usize::try_from(remaining)
                        .unwrap_or(usize::MAX)
                        .min(rest.len());
                    self.on_data(&rest[..n])?;
                    return Ok(Decoded {
                        consumed: pos + n,
                        data: pos..pos + n,
                    });
                }
                State::DataEnd => {
                    if rest.len() < 2 {
                        if rest.first().is_some_and(|&b| b != b'\r') {
                            return Err(FramingError::MissingCrlf);
                        }
                        break;
                    }
                    if &rest[..2] != CRLF {
                        return Err(FramingError::MissingCrlf);
                    }
                    pos += 2;
                    self.state = State::Header;
                }
                State::Trailers => {
                    let budget = MAX_TRAILERS_LEN - self.trailers_len;
                    let line = match take_line(rest, budget.saturating_sub(2)) {
                        Ok(Some(line)) => line,
                        Ok(None) => break,
                        Err(FramingError::LineTooLong { .. }) => {
                            return Err(FramingError::TrailersTooLarge {
                                limit: MAX_TRAILERS_LEN,
                            });
                        }
                        Err(e) => return Err(e),
                    };
                    self.trailers_len += line.len() + 2;
                    self.on_trailer_line(line)?;
                    pos += line.len() + 2;
                }
            }
        }
        Ok(Decoded {
            consumed: pos,
            data: pos..pos,
        })
    }
}

/// The line at the start of `input` without its CRLF, `None` if the CRLF has not arrived yet, or an
/// error when no CRLF can be within `limit` bytes. A bare LF or a CR not followed by LF is an error.
fn take_line(input: &[u8], limit: usize) -> Result<Option<&[u8]>, FramingError> {
    let window = &input[..input.len().min(limit + 2)];
    match window.iter().position(|&b| b == b'\n' || b == b'\r') {
        Some(i) if window[i] == b'\n' => Err(FramingError::MissingCrlf),
        Some(i) if i + 1 < window.len() => {
            if window[i + 1] == b'\n' {
                Ok(Some(&input[..i]))
            } else {
                Err(FramingError::MissingCrlf)
            }
        }
        Some(i) if i > limit => Err(FramingError::LineTooLong { limit }),
        Some(_) => Ok(None),
        None if window.len() > limit => Err(FramingError::LineTooLong { limit }),
        None => Ok(None),
    }
}

/// A chunk size: 1 to 16 hex digits.
fn parse_hex_size(text: &[u8]) -> Result<u64, FramingError> {
    if text.is_empty() || text.len() > 16 {
        return Err(FramingError::InvalidChunkSize);
    }
    text.iter().try_fold(0u64, |acc, &b| {
        let d = (b as char)
            .to_digit(16)
            .ok_or(FramingError::InvalidChunkSize)?;
        Ok((acc << 4) | u64::from(d))
    })
}

impl BodyDecoder for AwsChunkedDecoder {
    fn decode(&mut self, input: &[u8]) -> Result<Decoded, FramingError> {
        self.decode_inner(input).map_err(|e| self.fail(e))
    }

    fn data_remaining(&self) -> u64 {
        match self.state {
            State::Data { remaining } => remaining,
            _ => 0,
        }
    }

    fn advance_data(&mut self, data: &[u8]) -> Result<(), FramingError> {
        if let State::Failed(ref e) = self.state {
            return Err(e.clone());
        }
        self.on_data(data).map_err(|e| self.fail(e))
    }

    fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::framing::decode_all;
    use crate::sigv4::{AmzDate, SigningKey};

    fn chain(seed: &str) -> ChunkSigner {
        let key = Arc::new(SigningKey::derive(
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "20130524",
            "us-east-1",
            "s3",
        ));
        let mut s = [0u8; 32];
        hex::decode_to_slice(seed, &mut s).unwrap();
        ChunkSigner::new(key, AmzDate::parse("20130524T000000Z").unwrap(), s)
    }

    const SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
    const TRAILER_SEED: &str = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";

    fn aws_example_body() -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n");
        body.extend_from_slice(&[b'a'; 65536]);
        body.extend_from_slice(b"\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n");
        body.extend_from_slice(&[b'a'; 1024]);
        body.extend_from_slice(b"\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n");
        body
    }

    #[test]
    fn verifies_the_aws_streaming_example() {
        let body = aws_example_body();
        assert_eq!(body.len(), 66824, "the example's Content-Length");
        let mut d = AwsChunkedDecoder::new(ChunkedMode::Signed(chain(SEED)), 66560);
        let (payload, used) = decode_all(&mut d, &body).unwrap();
        assert!(d.is_done());
        assert_eq!(used, body.len());
        assert_eq!(payload, vec![b'a'; 66560]);
    }

    #[test]
    fn rejects_the_aws_example_with_one_payload_byte_changed() {
        let mut body = aws_example_body();
        body[88 + 40_000] = b'b';
        let mut d = AwsChunkedDecoder::new(ChunkedMode::Signed(chain(SEED)), 66560);
        assert_eq!(
            decode_all(&mut d, &body).unwrap_err(),
            FramingError::SignatureMismatch
        );
        assert_eq!(
            d.decode(b"0\r\n").unwrap_err(),
            FramingError::SignatureMismatch,
            "a failed decoder stays failed"
        );
    }

    #[test]
    fn verifies_the_aws_signed_trailer_example() {
        let mut body = Vec::new();
        body.extend_from_slice(b"10000;chunk-signature=b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2\r\n");
        body.extend_from_slice(&[b'a'; 65536]);
        body.extend_from_slice(b"\r\n400;chunk-signature=1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7\r\n");
        body.extend_from_slice(&[b'a'; 1024]);
        body.extend_from_slice(b"\r\n0;chunk-signature=2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992\r\n");
        body.extend_from_slice(b"x-amz-checksum-crc32c:sOO8/Q==\r\n");
        body.extend_from_slice(b"x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n");
        let mut d =
            AwsChunkedDecoder::new(ChunkedMode::SignedWithTrailer(chain(TRAILER_SEED)), 66560);
        let (payload, _) = decode_all(&mut d, &body).unwrap();
        assert!(d.is_done());
        assert_eq!(payload.len(), 66560);
        assert_eq!(d.trailer("X-Amz-Checksum-Crc32c"), Some("sOO8/Q=="));
        assert_eq!(d.trailers().len(), 1);

        // The same body with the checksum value altered fails the trailer signature.
        let text = body.clone();
        let at = text.windows(8).position(|w| w == b"sOO8/Q==").unwrap();
        body[at] = b'X';
        let mut d =
            AwsChunkedDecoder::new(ChunkedMode::SignedWithTrailer(chain(TRAILER_SEED)), 66560);
        assert_eq!(
            decode_all(&mut d, &body).unwrap_err(),
            FramingError::SignatureMismatch
        );
    }

    #[test]
    fn unsigned_trailer_body_decodes_with_small_chunks() {
        let body = b"3\r\nabc\r\n4\r\ndefg\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n";
        let mut d = AwsChunkedDecoder::new(ChunkedMode::UnsignedWithTrailer, 7);
        let (payload, used) = decode_all(&mut d, body).unwrap();
        assert_eq!(payload, b"abcdefg");
        assert_eq!(used, body.len());
        assert_eq!(d.trailer("x-amz-checksum-crc32"), Some("AAAAAA=="));
    }

    #[test]
    fn direct_reads_bypass_decode() {
        let body = aws_example_body();
        let mut d = AwsChunkedDecoder::new(ChunkedMode::Signed(chain(SEED)), 66560);
        // Header only: no payload bytes offered.
        const HEADER: usize = 5 + 17 + 64 + 2;
        let got = d.decode(&body[..HEADER]).unwrap();
        assert_eq!((got.consumed, got.data.len()), (HEADER, 0));
        assert_eq!(d.data_remaining(), 65536);
        d.advance_data(&body[HEADER..HEADER + 65536]).unwrap();
        assert_eq!(d.data_remaining(), 0);
        let (rest, _) = decode_all(&mut d, &body[HEADER + 65536..]).unwrap();
        assert_eq!(rest.len(), 1024);
        assert!(d.is_done());
    }

    #[test]
    fn framing_errors_are_specific() {
        let unsigned = || AwsChunkedDecoder::new(ChunkedMode::UnsignedWithTrailer, 3);
        let cases: [(&[u8], FramingError); 7] = [
            (b"zz\r\n", FramingError::InvalidChunkSize),
            (b"\r\n", FramingError::InvalidChunkSize),
            (b"10000000000000000\r\n", FramingError::InvalidChunkSize),
            (b"3;x=y\r\n", FramingError::InvalidExtension),
            (b"3\r\nabcXY", FramingError::MissingCrlf),
            (
                b"4\r\n",
                FramingError::LengthMismatch {
                    declared: 3,
                    actual: 4,
                },
            ),
            (
                b"0\r\n",
                FramingError::LengthMismatch {
                    declared: 3,
                    actual: 0,
                },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                decode_all(&mut unsigned(), input).unwrap_err(),
                want,
                "{input:?}"
            );
        }
        let long = vec![b'1'; MAX_CHUNK_HEADER_LEN + 10];
        assert_eq!(
            decode_all(&mut unsigned(), &long).unwrap_err(),
            FramingError::LineTooLong {
                limit: MAX_CHUNK_HEADER_LEN
            }
        );
        let mut big_trailer = b"3\r\nabc\r\n0\r\nx-a:".to_vec();
        big_trailer.extend(std::iter::repeat_n(b'v', MAX_TRAILERS_LEN));
        assert_eq!(
            decode_all(&mut unsigned(), &big_trailer).unwrap_err(),
            FramingError::TrailersTooLarge {
                limit: MAX_TRAILERS_LEN
            }
        );
        assert_eq!(
            decode_all(&mut unsigned(), b"3\r\nabc\r\n0\r\nno colon\r\n").unwrap_err(),
            FramingError::InvalidTrailer
        );
        assert_eq!(
            decode_all(&mut unsigned(), b"3\r\nabc\r\n0\r\nx-a:1\n\r\n").unwrap_err(),
            FramingError::MissingCrlf
        );
    }

    #[test]
    fn signed_chunks_need_signatures_and_minimum_sizes() {
        let mut d = AwsChunkedDecoder::new(ChunkedMode::Signed(chain(SEED)), 10);
        assert_eq!(
            decode_all(&mut d, b"5\r\n").unwrap_err(),
            FramingError::InvalidExtension
        );
        let mut d = AwsChunkedDecoder::new(ChunkedMode::Signed(chain(SEED)), 10);
        assert_eq!(
            decode_all(&mut d, b"5;chunk-signature=abc\r\n").unwrap_err(),
            FramingError::InvalidExtension
        );
        // A correctly signed 5-byte chunk followed by another data chunk: too small.
        let mut signer = chain(SEED);
        let mut body = signer.sign_chunk(b"hello").as_bytes().to_vec();
        body.extend_from_slice(b"hello\r\n");
        body.extend_from_slice(signer.sign_chunk(b"world").as_bytes());
        let mut d = AwsChunkedDecoder::new(ChunkedMode::Signed(chain(SEED)), 10);
        assert_eq!(
            decode_all(&mut d, &body).unwrap_err(),
            FramingError::ChunkTooSmall {
                size: 5,
                min: MIN_SIGNED_CHUNK_SIZE
            }
        );
        let mut d =
            AwsChunkedDecoder::new(ChunkedMode::Signed(chain(SEED)), 10).with_min_chunk_size(0);
        body.extend_from_slice(b"world\r\n");
        body.extend_from_slice(signer.final_chunk().as_bytes());
        assert_eq!(decode_all(&mut d, &body).unwrap().0, b"helloworld");
    }

    #[test]
    fn incomplete_input_makes_no_progress_until_more_arrives() {
        let mut d = AwsChunkedDecoder::new(ChunkedMode::UnsignedWithTrailer, 3);
        assert_eq!(d.decode(b"3").unwrap().consumed, 0);
        assert_eq!(d.decode(b"3\r").unwrap().consumed, 0);
        let got = d.decode(b"3\r\nab").unwrap();
        assert_eq!((got.consumed, got.data), (5, 3..5));
        let got = d.decode(b"c\r").unwrap();
        assert_eq!((got.consumed, got.data), (1, 0..1));
        assert_eq!(d.decode(b"\r").unwrap().consumed, 0);
        assert_eq!(d.decode(b"\r\n0\r\n\r\n").unwrap().consumed, 7);
        assert!(d.is_done());
    }
}
