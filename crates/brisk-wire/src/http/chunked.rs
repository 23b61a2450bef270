//! The `chunked` transfer coding (RFC 9112 §7.1): a streaming sans-IO decoder and the pieces of an
//! encoder that writes data from where it is.
//!
//! The decoder walks metadata (chunk-size lines, extensions, CRLFs, trailers) byte by byte and keeps
//! its position across calls, so it makes progress on any split of the input, even one byte at a time:
//! a caller with a 4 KiB read buffer never has to hold a whole metadata line. Payload is never copied;
//! a call reports where it lies in the input. Extensions are skipped but bounded by the line limit;
//! trailers are parsed, bounded, and kept for the caller (the only allocation a chunked body can cause,
//! and only when it has trailers).
//!
//! Line endings must be CRLF: accepting a bare LF where another parser does not is how bodies get
//! smuggled.

use std::io::IoSlice;

use super::headers::{Headers, is_token, trim_ows};
use super::limits::Limits;
use crate::framing::{BodyDecoder, Decoded, FramingError, hex_chunk_size};

/// Where the decoder is in the chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a chunk-size line: a hex digit must come.
    SizeStart,
    /// Inside the chunk-size digits.
    Size { size: u64 },
    /// Whitespace after the digits: only `;` (an extension) may follow.
    SizeSpace { size: u64 },
    /// Inside extensions, which are skipped up to the CR.
    Extension { size: u64 },
    /// The CR ending a chunk-size line was seen; LF must follow.
    SizeLf { size: u64 },
    /// Inside a chunk's data.
    Data { remaining: u64 },
    /// After a chunk's data: CR must follow.
    DataCr,
    /// After a chunk's data and CR: LF must follow.
    DataLf,
    /// Inside the trailer section, at or in a field line.
    Trailer,
    /// A trailer line's CR was seen; LF must follow.
    TrailerLf,
    /// The CR of the empty line ending the body was seen; LF must follow.
    FinalLf,
    /// The body is complete.
    Done,
}

/// A decoder of one `Transfer-Encoding: chunked` body. Reuse it for the next body with
/// [`reset`](Self::reset).
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    max_line: usize,
    max_trailer_bytes: usize,
    /// Bytes of the current metadata line so far, line ending excluded.
    line_len: usize,
    /// Bytes of the trailer section so far, line endings included.
    trailer_bytes: usize,
    /// The trailer line being read (trailers are rare; this stays unallocated without them).
    trailer_line: Vec<u8>,
    trailers: Headers,
    payload_len: u64,
}

impl ChunkedDecoder {
    /// A decoder bounded by `limits.max_chunk_line` and `limits.max_trailer_bytes`.
    pub fn new(limits: &Limits) -> Self {
        Self::with_limits(limits.max_chunk_line, limits.max_trailer_bytes)
    }

    /// A decoder with explicit bounds on a metadata line (chunk-size line with extensions, or one
    /// trailer line) and on the whole trailer section.
    pub fn with_limits(max_line: usize, max_trailer_bytes: usize) -> Self {
        Self {
            state: State::SizeStart,
            max_line,
            max_trailer_bytes,
            line_len: 0,
            trailer_bytes: 0,
            trailer_line: Vec::new(),
            trailers: Headers::new(),
            payload_len: 0,
        }
    }

    /// Makes the decoder ready for a new body, keeping its limits and buffers.
    pub fn reset(&mut self) {
        self.state = State::SizeStart;
        self.line_len = 0;
        self.trailer_bytes = 0;
        self.trailer_line.clear();
        self.trailers.clear();
        self.payload_len = 0;
    }

    /// The trailer fields, once the body is complete (empty when it had none).
    pub fn trailers(&self) -> Option<&Headers> {
        (self.state == State::Done).then_some(&self.trailers)
    }

    /// Payload bytes decoded so far.
    pub fn payload_len(&self) -> u64 {
        self.payload_len
    }

    /// Counts one more byte of the current metadata line against the line limit.
    fn count_line_byte(&mut self) -> Result<(), FramingError> {
        self.line_len += 1;
        if self.line_len > self.max_line {
            return Err(FramingError::LineTooLong {
                limit: self.max_line,
            });
        }
        Ok(())
    }

    /// Counts one more byte of the trailer section against the trailer limit.
    fn count_trailer_byte(&mut self) -> Result<(), FramingError> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > self.max_trailer_bytes {
            return Err(FramingError::TrailersTooLarge {
                limit: self.max_trailer_bytes,
            });
        }
        Ok(())
    }

    /// Advances over one metadata byte.
    fn step(&mut self, b: u8) -> Result<(), FramingError> {
        self.state = match self.state {
            State::SizeStart => {
                let digit = hex_value(b).ok_or(FramingError::InvalidChunkSize)?;
                self.line_len = 0;
                self.count_line_byte()?;
                State::Size {
                    size: u64::from(digit),
                }
            }
            State::Size { size } => {
                if b == b'\r' {
                    State::SizeLf { size }
                } else {
                    self.count_line_byte()?;
                    match b {
                        b';' => State::Extension { size },
                        b' ' | b'\t' => State::SizeSpace { size },
                        _ => {
                            let digit = hex_value(b).ok_or(FramingError::InvalidChunkSize)?;
                            let size = size
                                .checked_mul(16)
                                .map(|s| s | u64::from(digit))
                                .ok_or(FramingError::InvalidChunkSize)?;
                            State::Size { size }
                        }
                    }
                }
            }
            State::SizeSpace { size } => {
                self.count_line_byte()?;
                match b {
                    b' ' | b'\t' => State::SizeSpace { size },
                    b';' => State::Extension { size },
                    _ => return Err(FramingError::InvalidChunkSize),
                }
            }
            State::Extension { size } => {
                if b == b'\r' {
                    State::SizeLf { size }
                } else if is_line_byte(b) {
                    self.count_line_byte()?;
                    State::Extension { size }
                } else {
                    return Err(FramingError::InvalidExtension);
                }
            }
            State::SizeLf { size } => {
                if b != b'\n' {
                    return Err(FramingError::InvalidChunkSize);
                }
                self.line_len = 0;
                if size == 0 {
                    State::Trailer
                } else {
                    State::Data { remaining: size }
                }
            }
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataLf if b == b'\n' => State::SizeStart,
            State::DataCr | State::DataLf => return Err(FramingError::MissingCrlf),
            State::Trailer => {
                self.count_trailer_byte()?;
                if b == b'\r' {
                    if self.line_len == 0 {
                        State::FinalLf
                    } else {
                        State::TrailerLf
                    }
                } else if is_line_byte(b) {
                    self.count_line_byte()?;
                    self.trailer_line.push(b);
                    State::Trailer
                } else {
                    return Err(FramingError::InvalidTrailer);
                }
            }
            State::TrailerLf => {
                self.count_trailer_byte()?;
                if b != b'\n' {
                    return Err(FramingError::InvalidTrailer);
                }
                self.finish_trailer_line()?;
                State::Trailer
            }
            State::FinalLf => {
                self.count_trailer_byte()?;
                if b != b'\n' {
                    return Err(FramingError::InvalidTrailer);
                }
                State::Done
            }
            // `decode` never steps in these states.
            State::Data { .. } | State::Done => self.state,
        };
        Ok(())
    }

    /// Parses the complete trailer line as `name: value` and keeps it.
    fn finish_trailer_line(&mut self) -> Result<(), FramingError> {
        let line = &self.trailer_line;
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or(FramingError::InvalidTrailer)?;
        let name = &line[..colon];
        if !is_token(name) {
            return Err(FramingError::InvalidTrailer);
        }
        let name = std::str::from_utf8(name).map_err(|_| FramingError::InvalidTrailer)?;
        self.trailers
            .push_unchecked(name, trim_ows(&line[colon + 1..]));
        self.trailer_line.clear();
        self.line_len = 0;
        Ok(())
    }
}

impl BodyDecoder for ChunkedDecoder {
    fn decode(&mut self, input: &[u8]) -> Result<Decoded, FramingError> {
        let mut pos = 0;
        while pos < input.len() {
            match self.state {
                State::Done => break,
                State::Data { remaining } => {
                    let available = (input.len() - pos) as u64;
                    let take = remaining.min(available);
                    self.advance_run(take);
                    // `take` is at most `available`, a usize.
                    let end = pos + take as usize;
                    return Ok(Decoded {
                        consumed: end,
                        data: pos..end,
                    });
                }
                _ => {
                    self.step(input[pos])?;
                    pos += 1;
                }
            }
        }
        Ok(Decoded {
            consumed: pos,
            data: pos..pos,
        })
    }

    fn data_remaining(&self) -> u64 {
        match self.state {
            State::Data { remaining } => remaining,
            _ => 0,
        }
    }

    fn advance_data(&mut self, data: &[u8]) -> Result<(), FramingError> {
        let n = data.len() as u64;
        let remaining = self.data_remaining();
        if n > remaining {
            return Err(FramingError::LengthMismatch {
                declared: remaining,
                actual: n,
            });
        }
        if n > 0 {
            self.advance_run(n);
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.state == State::Done
    }
}

impl ChunkedDecoder {
    /// Moves `n` bytes (at most the rest of the chunk) through the current data run.
    fn advance_run(&mut self, n: u64) {
        if let State::Data { remaining } = self.state {
            let left = remaining - n;
            self.payload_len += n;
            self.state = if left == 0 {
                State::DataCr
            } else {
                State::Data { remaining: left }
            };
        }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// A byte allowed inside an extension or a trailer line: tab, visible ASCII, space, obs-text.
fn is_line_byte(b: u8) -> bool {
    b == b'\t' || (b' '..=0x7e).contains(&b) || b >= 0x80
}

/// Longest chunk header [`ChunkHeader`] writes: 16 hex digits and CRLF.
pub const MAX_CHUNK_HEADER_LEN: usize = 18;

/// What follows each chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";

/// The last chunk and the empty trailer section that end a chunked body without trailers.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// The size line of one chunk, formatted on the stack so that a chunk goes out as three slices
/// (`header`, the data where it already is, [`CHUNK_END`]) in one vectored write.
#[derive(Debug, Clone, Copy)]
pub struct ChunkHeader {
    bytes: [u8; MAX_CHUNK_HEADER_LEN],
    len: u8,
}

impl ChunkHeader {
    /// The header of a chunk of `size` bytes (lowercase hex, no extension). A size of 0 is the last
    /// chunk, which ends the body: callers skip empty data instead.
    pub fn new(size: u64) -> Self {
        let mut digits = [0u8; 16];
        let digits = hex_chunk_size(size, &mut digits);
        let count = digits.len();
        let mut bytes = [0u8; MAX_CHUNK_HEADER_LEN];
        bytes[..count].copy_from_slice(digits);
        bytes[count..count + 2].copy_from_slice(b"\r\n");
        Self {
            bytes,
            len: (count + 2) as u8,
        }
    }

    /// The header bytes, CRLF included.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The three slices that send one chunk of `data` (whose length this header must describe).
    pub fn slices<'a>(&'a self, data: &'a [u8]) -> [IoSlice<'a>; 3] {
        [
            IoSlice::new(self.as_bytes()),
            IoSlice::new(data),
            IoSlice::new(CHUNK_END),
        ]
    }
}

/// Appends the last chunk followed by `trailers` (which may be empty) and the final empty line.
pub fn write_last_chunk(trailers: &Headers, out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n");
    trailers.write_to(out);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::decode_all;

    fn decoder() -> ChunkedDecoder {
        ChunkedDecoder::new(&Limits::default())
    }

    /// Decodes `input` fed one byte at a time, the hardest split.
    fn decode_bytewise(d: &mut ChunkedDecoder, input: &[u8]) -> Result<Vec<u8>, FramingError> {
        let mut out = Vec::new();
        for i in 0..input.len() {
            let got = d.decode(&input[i..=i])?;
            out.extend_from_slice(&input[i..=i][got.data]);
        }
        Ok(out)
    }

    #[test]
    fn decodes_a_body_and_stops_before_the_next_message() {
        let input = b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        let mut d = decoder();
        let (payload, consumed) = decode_all(&mut d, input).unwrap();
        assert_eq!(payload, b"hello, world");
        assert_eq!(&input[consumed..], b"GET / HTTP/1.1\r\n");
        assert!(d.is_done());
        assert_eq!(d.payload_len(), 12);
        assert!(d.trailers().unwrap().is_empty());
    }

    #[test]
    fn one_call_returns_one_payload_run_and_points_into_the_input() {
        let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let mut d = decoder();
        let first = d.decode(input).unwrap();
        assert_eq!(first.consumed, 6);
        assert_eq!(first.data, 3..6);
        let second = d.decode(&input[6..]).unwrap();
        assert_eq!(&input[6..][second.data], b"de");
    }

    #[test]
    fn progresses_on_any_split_including_single_bytes() {
        let input =
            b"A;name=\"quoted;value\"\r\n0123456789\r\n1 ; ext\r\nx\r\n0\r\nX-Sum: abc \r\n\r\n";
        let mut d = decoder();
        assert_eq!(decode_bytewise(&mut d, input).unwrap(), b"0123456789x");
        assert!(d.is_done());
        assert_eq!(d.trailers().unwrap().get_str("x-sum"), Some("abc"));
    }

    #[test]
    fn hex_sizes_in_either_case_and_leading_zeros() {
        let payload = vec![b'z'; 0x1f];
        let mut input = b"001F\r\n".to_vec();
        input.extend_from_slice(&payload);
        input.extend_from_slice(b"\r\n0000\r\n\r\n");
        let (got, _) = decode_all(&mut decoder(), &input).unwrap();
        assert_eq!(got, payload);
    }

    #[test]
    fn direct_reads_move_through_the_chunk() {
        let mut d = decoder();
        let header = d.decode(b"8\r\n").unwrap();
        assert_eq!(header.consumed, 3);
        assert_eq!(d.data_remaining(), 8);
        d.advance_data(b"12345").unwrap();
        assert_eq!(d.data_remaining(), 3);
        assert!(matches!(
            d.advance_data(b"6789"),
            Err(FramingError::LengthMismatch {
                declared: 3,
                actual: 4
            })
        ));
        d.advance_data(b"678").unwrap();
        assert_eq!(d.data_remaining(), 0);
        let (rest, _) = decode_all(&mut d, b"\r\n0\r\n\r\n").unwrap();
        assert!(rest.is_empty());
        assert!(d.is_done());
        assert_eq!(d.payload_len(), 8);
    }

    #[test]
    fn rejects_invalid_chunk_sizes() {
        for input in [
            &b"\r\n"[..],
            b"g\r\n",
            b"-1\r\n",
            b"+1\r\n",
            b"0x5\r\n",
            b" 5\r\n",
            b"5 \r\n",
            b"5\n",
            b"5\rx",
            b"10000000000000000\r\n",
        ] {
            assert_eq!(
                decode_all(&mut decoder(), input),
                Err(FramingError::InvalidChunkSize),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
        // The largest size that fits is accepted (the data then never comes).
        let mut d = decoder();
        d.decode(b"ffffffffffffffff\r\n").unwrap();
        assert_eq!(d.data_remaining(), u64::MAX);
    }

    #[test]
    fn rejects_missing_crlf_after_data() {
        for input in [&b"3\r\nabcX"[..], b"3\r\nabc\rX", b"3\r\nabc\n0\r\n\r\n"] {
            assert_eq!(
                decode_all(&mut decoder(), input),
                Err(FramingError::MissingCrlf)
            );
        }
    }

    #[test]
    fn rejects_control_bytes_in_extensions() {
        assert_eq!(
            decode_all(&mut decoder(), b"3;a=\x00\r\nabc\r\n"),
            Err(FramingError::InvalidExtension)
        );
        assert_eq!(
            decode_all(&mut decoder(), b"3;a\nabc\r\n"),
            Err(FramingError::InvalidExtension)
        );
    }

    #[test]
    fn limit_chunk_line_bounds_extensions() {
        let mut d = ChunkedDecoder::with_limits(8, 1024);
        // "3;abcdef" is 8 bytes: at the limit.
        assert!(decode_all(&mut d, b"3;abcdef\r\nxyz\r\n").is_ok());
        let mut d = ChunkedDecoder::with_limits(8, 1024);
        assert_eq!(
            decode_all(&mut d, b"3;abcdefg\r\nxyz\r\n"),
            Err(FramingError::LineTooLong { limit: 8 })
        );
        // Fed byte by byte the error comes as soon as the line passes the limit, not at its end.
        let mut d = ChunkedDecoder::with_limits(8, 1024);
        let long = [b"3;".as_slice(), &[b'a'; 100]].concat();
        assert_eq!(
            decode_bytewise(&mut d, &long),
            Err(FramingError::LineTooLong { limit: 8 })
        );
        // Leading zeros count too.
        let mut d = ChunkedDecoder::with_limits(8, 1024);
        assert_eq!(
            decode_all(&mut d, b"0000000003\r\n"),
            Err(FramingError::LineTooLong { limit: 8 })
        );
    }

    #[test]
    fn limit_trailer_bytes_and_trailer_line() {
        // "X-A: 1\r\n" (8) + "\r\n" (2) = 10 bytes of trailer section.
        let body = b"0\r\nX-A: 1\r\n\r\n";
        let mut d = ChunkedDecoder::with_limits(64, 10);
        assert!(decode_all(&mut d, body).is_ok());
        assert_eq!(d.trailers().unwrap().get_str("x-a"), Some("1"));
        let mut d = ChunkedDecoder::with_limits(64, 9);
        assert_eq!(
            decode_all(&mut d, body),
            Err(FramingError::TrailersTooLarge { limit: 9 })
        );
        let mut d = ChunkedDecoder::with_limits(5, 1024);
        assert_eq!(
            decode_all(&mut d, body),
            Err(FramingError::LineTooLong { limit: 5 })
        );
    }

    #[test]
    fn rejects_malformed_trailers() {
        for input in [
            &b"0\r\nno-colon\r\n\r\n"[..],
            b"0\r\nbad name: v\r\n\r\n",
            b"0\r\n: empty-name\r\n\r\n",
            b"0\r\nA: b\r\n folded\r\n\r\n",
            b"0\r\nA: b\n\r\n",
            b"0\r\nA: b\rx",
            b"0\r\n\rx",
            b"0\r\nA: \x01\r\n\r\n",
        ] {
            assert_eq!(
                decode_all(&mut decoder(), input),
                Err(FramingError::InvalidTrailer),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn several_trailers_are_kept_in_order() {
        let mut d = decoder();
        decode_all(
            &mut d,
            b"1\r\na\r\n0\r\nx-amz-checksum-crc32c: sOO8/Q==\r\nX-Other:v\r\n\r\n",
        )
        .unwrap();
        let t = d.trailers().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.get_str("X-Amz-Checksum-Crc32c"), Some("sOO8/Q=="));
        assert_eq!(t.get_str("x-other"), Some("v"));
    }

    #[test]
    fn incomplete_body_is_not_done_and_reset_reuses() {
        let mut d = decoder();
        let (payload, consumed) = decode_all(&mut d, b"5\r\nhel").unwrap();
        assert_eq!((payload.as_slice(), consumed), (&b"hel"[..], 6));
        assert!(!d.is_done());
        assert!(d.trailers().is_none());
        d.reset();
        let (payload, _) = decode_all(&mut d, b"2\r\nok\r\n0\r\n\r\n").unwrap();
        assert_eq!(payload, b"ok");
        assert_eq!(d.payload_len(), 2);
    }

    #[test]
    fn chunk_headers_are_lowercase_hex_with_crlf() {
        assert_eq!(ChunkHeader::new(0).as_bytes(), b"0\r\n");
        assert_eq!(ChunkHeader::new(255).as_bytes(), b"ff\r\n");
        assert_eq!(ChunkHeader::new(65536).as_bytes(), b"10000\r\n");
        assert_eq!(
            ChunkHeader::new(u64::MAX).as_bytes(),
            b"ffffffffffffffff\r\n"
        );
        let header = ChunkHeader::new(3);
        let slices = header.slices(b"abc");
        let joined: Vec<u8> = slices.iter().flat_map(|s| s.iter().copied()).collect();
        assert_eq!(joined, b"3\r\nabc\r\n");
    }

    #[test]
    fn encoded_body_with_trailers_decodes() {
        let mut out = Vec::new();
        for part in [&b"hello "[..], b"world"] {
            let header = ChunkHeader::new(part.len() as u64);
            for slice in header.slices(part) {
                out.extend_from_slice(&slice);
            }
        }
        let mut trailers = Headers::new();
        trailers.append("x-amz-checksum-sha256", "abc=").unwrap();
        write_last_chunk(&trailers, &mut out);
        let mut d = decoder();
        let (payload, consumed) = decode_all(&mut d, &out).unwrap();
        assert_eq!(payload, b"hello world");
        assert_eq!(consumed, out.len());
        assert_eq!(d.trailers().unwrap(), &trailers);
        let mut plain = Vec::new();
        write_last_chunk(&Headers::new(), &mut plain);
        assert_eq!(plain, LAST_CHUNK);
    }
}
