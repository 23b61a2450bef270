//! aws-chunked encoding on the client side, in constant memory.
//!
//! A body sent with `Content-Encoding: aws-chunked` is a series of chunks
//! `<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n`, a zero-size final chunk, then (for the `-TRAILER`
//! variants) trailer lines and an empty line. The encoders here never touch the payload except to hash
//! it: they produce the few framing bytes around each chunk in a fixed [`ChunkHeader`] buffer, and the
//! caller writes the payload from where it already is.
//!
//! Signed chunks chain: chunk *n*'s string to sign holds chunk *n − 1*'s signature, starting from the
//! request's own signature (the seed).
//!
//! ```text
//! AWS4-HMAC-SHA256-PAYLOAD \n timestamp \n scope \n previous signature \n hex(SHA-256("")) \n hex(SHA-256(chunk data))
//! AWS4-HMAC-SHA256-TRAILER \n timestamp \n scope \n previous signature \n hex(SHA-256(trailer lines))
//! ```

use std::sync::Arc;

use crate::checksum::engine::{Digest, Sha256};
use hmac::Mac;

use super::EMPTY_SHA256;
use super::canonical::is_token;
use super::credentials::SigningKey;
use super::error::SigningError;
use super::hashing::{HmacSha256, hex32};
use super::time::AmzDate;
use crate::framing::{hex_chunk_size, hex_chunk_size_len};

/// `;chunk-signature=` between the size and the signature of a signed chunk header.
const SIGNATURE_EXTENSION: &[u8] = b";chunk-signature=";
/// The trailer line that carries the signature of the trailers (signed-trailer variant).
pub const TRAILER_SIGNATURE_NAME: &str = "x-amz-trailer-signature";
/// What ends every chunk's data, and the trailer section.
pub const CRLF: &[u8] = b"\r\n";

/// The longest chunk header: 16 hex digits, the extension, 64 hex digits, CRLF, and one more CRLF for
/// the final chunk of a body without trailers.
const CHUNK_HEADER_CAPACITY: usize = 16 + SIGNATURE_EXTENSION.len() + 64 + 2 + 2;

/// The framing bytes that precede a chunk's data (or make up the final chunk), in a fixed buffer.
#[derive(Clone, Copy)]
pub struct ChunkHeader {
    bytes: [u8; CHUNK_HEADER_CAPACITY],
    len: u8,
}

impl ChunkHeader {
    fn new() -> Self {
        Self {
            bytes: [0; CHUNK_HEADER_CAPACITY],
            len: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let at = usize::from(self.len);
        self.bytes[at..at + data.len()].copy_from_slice(data);
        self.len += u8::try_from(data.len()).expect("header pieces are short");
    }

    fn push_hex_size(&mut self, size: u64) {
        let mut digits = [0u8; 16];
        let text = hex_chunk_size(size, &mut digits);
        self.push(text);
    }

    /// The bytes to write.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for ChunkHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ChunkHeader({:?})",
            String::from_utf8_lossy(self.as_bytes())
        )
    }
}

/// The signature chain of a signed aws-chunked body: produces (client) or recomputes (server) each
/// chunk's and the trailer's signature from the previous one.
#[derive(Clone)]
pub struct ChunkSigner {
    /// HMAC keyed with the signing key, cloned per signature (saves re-keying: two compressions).
    keyed: HmacSha256,
    /// `timestamp \n scope \n`, shared by every string to sign of this body.
    date_and_scope: String,
    previous: [u8; 32],
    key: Arc<SigningKey>,
}

impl std::fmt::Debug for ChunkSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkSigner")
            .field("key", &self.key)
            .field("previous", &hex::encode(self.previous))
            .finish_non_exhaustive()
    }
}

impl ChunkSigner {
    /// A chain for the request signed at `time` with `key`, whose signature is `seed_signature`.
    pub fn new(key: Arc<SigningKey>, time: AmzDate, seed_signature: [u8; 32]) -> Self {
        let keyed = HmacSha256::new_from_slice(key.as_bytes()).expect("any key length");
        let date_and_scope = format!("{}\n{}\n", time.as_str(), key.scope());
        Self {
            keyed,
            date_and_scope,
            previous: seed_signature,
            key,
        }
    }

    /// The signature of the last chunk (or the seed, before the first chunk).
    pub fn previous_signature(&self) -> [u8; 32] {
        self.previous
    }

    /// The next chunk's signature given the SHA-256 of its data; advances the chain.
    pub fn next_signature(&mut self, data_sha256: &[u8; 32]) -> [u8; 32] {
        let mut mac = self.keyed.clone();
        mac.update(b"AWS4-HMAC-SHA256-PAYLOAD\n");
        mac.update(self.date_and_scope.as_bytes());
        mac.update(&hex32(&self.previous));
        mac.update(b"\n");
        mac.update(EMPTY_SHA256.as_bytes());
        mac.update(b"\n");
        mac.update(&hex32(data_sha256));
        self.previous = mac.finalize().into_bytes().into();
        self.previous
    }

    /// The trailer signature given the SHA-256 of the canonical trailer lines (`name:value\n` each);
    /// advances the chain.
    pub fn trailer_signature(&mut self, trailers_sha256: &[u8; 32]) -> [u8; 32] {
        let mut mac = self.keyed.clone();
        mac.update(b"AWS4-HMAC-SHA256-TRAILER\n");
        mac.update(self.date_and_scope.as_bytes());
        mac.update(&hex32(&self.previous));
        mac.update(b"\n");
        mac.update(&hex32(trailers_sha256));
        self.previous = mac.finalize().into_bytes().into();
        self.previous
    }

    /// Signs one chunk of `data` (not copied; hashed once) and returns the header to write before it.
    /// Write `data` and [`CRLF`] after it. `data` must not be empty: the empty chunk is
    /// [`final_chunk`](Self::final_chunk).
    pub fn sign_chunk(&mut self, data: &[u8]) -> ChunkHeader {
        debug_assert!(!data.is_empty(), "the empty chunk ends the body");
        let digest: [u8; 32] = Sha256::digest(data).into();
        let sig = self.next_signature(&digest);
        signed_header(data.len() as u64, &sig, false)
    }

    /// The final, empty chunk of a body without trailers, including the CRLF that ends the body.
    pub fn final_chunk(&mut self) -> ChunkHeader {
        let sig = self.next_signature(&super::hashing::sha256(b""));
        signed_header(0, &sig, true)
    }

    /// The final, empty chunk followed by `trailers` (name, value) and their signature, for
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`. Returns everything that follows the last data
    /// chunk. Trailer names are lower-cased.
    pub fn final_chunk_with_trailers(
        &mut self,
        trailers: &[(&str, &str)],
    ) -> Result<Vec<u8>, SigningError> {
        validate_trailers(trailers)?;
        let zero = signed_header(0, &self.next_signature(&super::hashing::sha256(b"")), false);
        let mut canonical = Sha256::new();
        for (name, value) in trailers {
            canonical.update(name.to_ascii_lowercase().as_bytes());
            canonical.update(b":");
            canonical.update(value.trim().as_bytes());
            canonical.update(b"\n");
        }
        let sig = self.trailer_signature(&canonical.finalize().into());
        let mut out = Vec::with_capacity(zero.as_bytes().len() + trailer_lines_len(trailers) + 100);
        out.extend_from_slice(zero.as_bytes());
        write_trailer_lines(&mut out, trailers);
        out.extend_from_slice(TRAILER_SIGNATURE_NAME.as_bytes());
        out.push(b':');
        out.extend_from_slice(&hex32(&sig));
        out.extend_from_slice(CRLF);
        out.extend_from_slice(CRLF);
        Ok(out)
    }
}

fn signed_header(size: u64, sig: &[u8; 32], end_of_body: bool) -> ChunkHeader {
    let mut h = ChunkHeader::new();
    h.push_hex_size(size);
    h.push(SIGNATURE_EXTENSION);
    h.push(&hex32(sig));
    h.push(CRLF);
    if end_of_body {
        h.push(CRLF);
    }
    h
}

fn validate_trailers(trailers: &[(&str, &str)]) -> Result<(), SigningError> {
    for (name, value) in trailers {
        if !is_token(name)
            || name.eq_ignore_ascii_case(TRAILER_SIGNATURE_NAME)
            || value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0))
        {
            return Err(SigningError::InvalidTrailer {
                name: (*name).into(),
            });
        }
    }
    Ok(())
}

fn trailer_lines_len(trailers: &[(&str, &str)]) -> usize {
    trailers
        .iter()
        .map(|(n, v)| n.len() + 1 + v.trim().len() + 2)
        .sum()
}

fn write_trailer_lines(out: &mut Vec<u8>, trailers: &[(&str, &str)]) {
    for (name, value) in trailers {
        out.extend_from_slice(name.to_ascii_lowercase().as_bytes());
        out.push(b':');
        out.extend_from_slice(value.trim().as_bytes());
        out.extend_from_slice(CRLF);
    }
}

/// Framing of `STREAMING-UNSIGNED-PAYLOAD-TRAILER` bodies: plain sizes, then trailers (typically one
/// checksum, announced by `x-amz-trailer`, whose value the caller computed while sending).
#[derive(Debug, Clone, Copy, Default)]
pub struct UnsignedChunkEncoder;

impl UnsignedChunkEncoder {
    /// The header before a chunk of `size` bytes (`<hex size>\r\n`); write the data and [`CRLF`] after.
    pub fn chunk_header(size: u64) -> ChunkHeader {
        let mut h = ChunkHeader::new();
        h.push_hex_size(size);
        h.push(CRLF);
        h
    }

    /// The final chunk, `trailers` (name, value; names lower-cased) and the empty line ending the body.
    pub fn final_chunk_with_trailers(trailers: &[(&str, &str)]) -> Result<Vec<u8>, SigningError> {
        validate_trailers(trailers)?;
        let mut out = Vec::with_capacity(5 + trailer_lines_len(trailers));
        out.extend_from_slice(b"0\r\n");
        write_trailer_lines(&mut out, trailers);
        out.extend_from_slice(CRLF);
        Ok(out)
    }
}

/// Bytes of framing around `decoded_len` bytes cut into `chunk_size` chunks, excluding the final
/// chunk: `per_chunk_fixed` bytes per data chunk plus its hex size.
fn data_chunks_len(decoded_len: u64, chunk_size: u64, per_chunk_fixed: u64) -> u64 {
    assert!(chunk_size > 0, "chunk size must be positive");
    let full = decoded_len / chunk_size;
    let rest = decoded_len % chunk_size;
    let mut total = decoded_len + full * (hex_chunk_size_len(chunk_size) as u64 + per_chunk_fixed);
    if rest > 0 {
        total += hex_chunk_size_len(rest) as u64 + per_chunk_fixed;
    }
    total
}

/// Fixed bytes of a signed data chunk besides its hex size: extension, signature, 2 CRLFs.
const SIGNED_CHUNK_FIXED: u64 = SIGNATURE_EXTENSION.len() as u64 + 64 + 4;

/// The `Content-Length` of a `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` body carrying `decoded_len` bytes
/// (the `x-amz-decoded-content-length`) in chunks of `chunk_size` (the last one shorter). Panics if
/// `chunk_size` is 0.
pub fn signed_encoded_length(decoded_len: u64, chunk_size: u64) -> u64 {
    data_chunks_len(decoded_len, chunk_size, SIGNED_CHUNK_FIXED) + 1 + SIGNED_CHUNK_FIXED
}

/// The length of the trailer lines for trailers given as (name, value length in bytes).
fn trailers_len(trailers: &[(&str, usize)]) -> u64 {
    trailers
        .iter()
        .map(|(n, v)| (n.len() + 1 + v + 2) as u64)
        .sum()
}

/// The `Content-Length` of a `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER` body; `trailers` are
/// (name, value length), e.g. `("x-amz-checksum-crc32c", 8)`. Panics if `chunk_size` is 0.
pub fn signed_trailer_encoded_length(
    decoded_len: u64,
    chunk_size: u64,
    trailers: &[(&str, usize)],
) -> u64 {
    let zero_chunk = 1 + SIGNED_CHUNK_FIXED - 2;
    let signature_line = (TRAILER_SIGNATURE_NAME.len() + 1 + 64 + 2) as u64;
    data_chunks_len(decoded_len, chunk_size, SIGNED_CHUNK_FIXED)
        + zero_chunk
        + trailers_len(trailers)
        + signature_line
        + 2
}

/// The `Content-Length` of a `STREAMING-UNSIGNED-PAYLOAD-TRAILER` body; `trailers` are
/// (name, value length). Panics if `chunk_size` is 0.
pub fn unsigned_trailer_encoded_length(
    decoded_len: u64,
    chunk_size: u64,
    trailers: &[(&str, usize)],
) -> u64 {
    data_chunks_len(decoded_len, chunk_size, 4) + 3 + trailers_len(trailers) + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn example_chain(seed: &str) -> ChunkSigner {
        let key = Arc::new(SigningKey::derive(SECRET, "20130524", "us-east-1", "s3"));
        let mut s = [0u8; 32];
        hex::decode_to_slice(seed, &mut s).unwrap();
        ChunkSigner::new(key, AmzDate::parse("20130524T000000Z").unwrap(), s)
    }

    #[test]
    fn aws_streaming_example_chunk_signatures() {
        // S3 API reference, "Transferring Payload in Multiple Chunks": 65 536 + 1 024 bytes of 'a'.
        let mut chain =
            example_chain("4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
        let first = chain.sign_chunk(&[b'a'; 65536]);
        assert_eq!(
            first.as_bytes(),
            b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n"
        );
        let second = chain.sign_chunk(&[b'a'; 1024]);
        assert_eq!(
            second.as_bytes(),
            b"400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n"
        );
        let last = chain.final_chunk();
        assert_eq!(
            last.as_bytes(),
            b"0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n"
        );
        assert_eq!(signed_encoded_length(66560, 65536), 66824);
    }

    #[test]
    fn aws_signed_trailer_example() {
        // S3 API reference, "Signature calculations for trailing headers": same body, CRC32C trailer.
        let mut chain =
            example_chain("106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
        assert_eq!(
            chain.sign_chunk(&[b'a'; 65536]).as_bytes(),
            b"10000;chunk-signature=b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2\r\n"
        );
        assert_eq!(
            chain.sign_chunk(&[b'a'; 1024]).as_bytes(),
            b"400;chunk-signature=1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7\r\n"
        );
        let tail = chain
            .final_chunk_with_trailers(&[("x-amz-checksum-crc32c", "sOO8/Q==")])
            .unwrap();
        assert_eq!(
            std::str::from_utf8(&tail).unwrap(),
            "0;chunk-signature=2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992\r\n\
             x-amz-checksum-crc32c:sOO8/Q==\r\n\
             x-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n"
        );
        let total =
            65536 + 1024 + 2 * 2 + (5 + 17 + 64 + 2) + (3 + 17 + 64 + 2) + tail.len() as u64;
        assert_eq!(
            signed_trailer_encoded_length(66560, 65536, &[("x-amz-checksum-crc32c", 8)]),
            total
        );
    }

    #[test]
    fn unsigned_framing_and_lengths() {
        assert_eq!(
            UnsignedChunkEncoder::chunk_header(0x2000).as_bytes(),
            b"2000\r\n"
        );
        assert_eq!(UnsignedChunkEncoder::chunk_header(0).as_bytes(), b"0\r\n");
        let tail = UnsignedChunkEncoder::final_chunk_with_trailers(&[(
            "X-Amz-Checksum-CRC32",
            "AAAAAA==",
        )])
        .unwrap();
        assert_eq!(tail, b"0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n");
        // 10 000 bytes in 8 KiB chunks: "2000\r\n" + 8192 + CRLF, "710\r\n" + 1808 + CRLF, then the tail.
        let expected = (6 + 8192 + 2) + (5 + 1808 + 2) + tail.len() as u64;
        assert_eq!(
            unsigned_trailer_encoded_length(10_000, 8192, &[("x-amz-checksum-crc32", 8)]),
            expected
        );
        assert_eq!(unsigned_trailer_encoded_length(0, 8192, &[]), 5);
        assert_eq!(signed_encoded_length(0, 8192), 86);
    }

    #[test]
    fn trailers_that_would_break_framing_are_refused() {
        for bad in [
            ("x-a", "v\r\nx-injected:1"),
            ("bad name", "v"),
            ("x-amz-trailer-signature", "0"),
        ] {
            assert!(UnsignedChunkEncoder::final_chunk_with_trailers(&[bad]).is_err());
        }
    }
}
