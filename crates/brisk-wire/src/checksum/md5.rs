//! MD5, for `Content-MD5` (base64) and S3 ETags (hex), including the ETag of a multipart object.

use std::fmt;

use super::engine::Digest as _;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::{ChecksumError, MAX_PARTS};

/// A streaming MD5: [`update`](Self::update) with each slice, then [`finalize`](Self::finalize).
#[derive(Clone, Default)]
pub struct Md5(super::engine::Md5);

impl Md5 {
    /// A fresh hasher.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes.
    #[inline]
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The digest of everything fed so far.
    pub fn finalize(self) -> Md5Digest {
        Md5Digest(self.0.finalize().into())
    }

    /// The digest of everything fed so far, leaving the hasher fresh.
    pub fn finalize_reset(&mut self) -> Md5Digest {
        Md5Digest(self.0.finalize_reset().into())
    }

    /// The hasher behind this one, for feeding it beside another (see
    /// `engine::update_md5_and_sha256`).
    pub(crate) fn engine_mut(&mut self) -> &mut super::engine::Md5 {
        &mut self.0
    }

    /// One-shot convenience: the digest of `data`.
    pub fn digest(data: &[u8]) -> Md5Digest {
        let mut hasher = Self::new();
        hasher.update(data);
        hasher.finalize()
    }
}

impl fmt::Debug for Md5 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Md5").finish_non_exhaustive()
    }
}

impl std::io::Write for Md5 {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A 16-byte MD5 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Md5Digest(pub [u8; 16]);

impl Md5Digest {
    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Lower-case hex, the body of a single-part ETag.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The ETag as S3 sends it in headers and XML: the hex digest in double quotes.
    pub fn to_etag(&self) -> String {
        format!("\"{}\"", self.to_hex())
    }

    /// Base64, the form of the `Content-MD5` header.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.0)
    }

    /// Parses 32 hex digits, optionally in double quotes (an ETag as S3 sends it, or as a client echoes
    /// it in a CompleteMultipartUpload body).
    pub fn from_hex(text: &str) -> Result<Self, ChecksumError> {
        let unquoted = strip_quotes(text);
        let mut out = [0u8; 16];
        hex::decode_to_slice(unquoted, &mut out).map_err(|_| ChecksumError::InvalidMd5Hex {
            value: text.to_owned(),
        })?;
        Ok(Self(out))
    }

    /// Parses a `Content-MD5` header value (base64 of the 16 bytes).
    pub fn from_base64(text: &str) -> Result<Self, ChecksumError> {
        let mut out = [0u8; 18];
        let len =
            BASE64
                .decode_slice(text, &mut out)
                .map_err(|_| ChecksumError::InvalidBase64 {
                    value: text.to_owned(),
                })?;
        let bytes: [u8; 16] = out[..len]
            .try_into()
            .map_err(|_| ChecksumError::InvalidBase64 {
                value: text.to_owned(),
            })?;
        Ok(Self(bytes))
    }
}

impl fmt::Debug for Md5Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Md5Digest({})", self.to_hex())
    }
}

fn strip_quotes(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

/// The ETag S3 gives an object assembled by CompleteMultipartUpload: the hex MD5 of the concatenated
/// binary MD5 digests of the parts, then `-` and the part count (`"16329fb6...0528-2"`).
///
/// Part digests are hashed as they are pushed, so computing the ETag of 10,000 parts keeps 16 bytes of
/// state per part nowhere.
#[derive(Clone, Debug, Default)]
pub struct MultipartEtag {
    hasher: Md5,
    parts: u32,
}

impl MultipartEtag {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next part's MD5 (in part-number order).
    pub fn push_part(&mut self, part_md5: &Md5Digest) {
        self.hasher.update(&part_md5.0);
        self.parts += 1;
    }

    /// Adds the next part by its ETag text (as listed in a CompleteMultipartUpload body).
    pub fn push_part_etag(&mut self, etag: &str) -> Result<(), ChecksumError> {
        self.push_part(&Md5Digest::from_hex(etag)?);
        Ok(())
    }

    /// How many parts were pushed.
    pub fn parts(&self) -> u32 {
        self.parts
    }

    /// The ETag without quotes: `<hex>-<parts>`.
    pub fn finish(self) -> String {
        let parts = self.parts;
        format!("{}-{parts}", self.hasher.finalize().to_hex())
    }

    /// Splits a multipart ETag (quoted or not) into its digest and part count.
    pub fn parse(text: &str) -> Result<(Md5Digest, u32), ChecksumError> {
        let unquoted = strip_quotes(text);
        let invalid = || ChecksumError::InvalidPartCount {
            value: text.to_owned(),
        };
        let (digest, count) = unquoted.rsplit_once('-').ok_or_else(invalid)?;
        let count = parse_part_count(count).ok_or_else(invalid)?;
        Ok((Md5Digest::from_hex(digest)?, count))
    }
}

/// Parses a decimal part count in `1..=MAX_PARTS`, digits only.
pub(crate) fn parse_part_count(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let count: u32 = text.parse().ok()?;
    (1..=MAX_PARTS).contains(&count).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test suite of RFC 1321, appendix A.5.
    #[test]
    fn rfc1321_vectors() {
        let cases: [(&[u8], &str); 7] = [
            (b"", "d41d8cd98f00b204e9800998ecf8427e"),
            (b"a", "0cc175b9c0f1b6a831c399e269772661"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                b"abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        for (input, hex) in cases {
            assert_eq!(Md5::digest(input).to_hex(), hex);
        }
    }

    #[test]
    fn content_md5_and_etag_forms() {
        let d = Md5::digest(b"");
        assert_eq!(d.to_base64(), "1B2M2Y8AsgTpgAmY7PhCfg==");
        assert_eq!(d.to_etag(), "\"d41d8cd98f00b204e9800998ecf8427e\"");
        assert_eq!(Md5Digest::from_base64(&d.to_base64()), Ok(d));
        assert_eq!(Md5Digest::from_hex(&d.to_etag()), Ok(d));
        assert_eq!(Md5Digest::from_hex(&d.to_hex().to_uppercase()), Ok(d));
        assert!(Md5Digest::from_hex("d41d8cd98f00b204e9800998ecf8427").is_err());
        assert!(Md5Digest::from_hex("\"d41d8cd98f00b204e9800998ecf8427e").is_err());
        assert!(Md5Digest::from_base64("AAAA").is_err());
    }

    #[test]
    fn multipart_etag_parse() {
        let (digest, parts) =
            MultipartEtag::parse("\"16329fb6004d64a4fbc5bbb983fa0528-2\"").unwrap();
        assert_eq!(digest.to_hex(), "16329fb6004d64a4fbc5bbb983fa0528");
        assert_eq!(parts, 2);
        for bad in [
            "16329fb6004d64a4fbc5bbb983fa0528",
            "16329fb6004d64a4fbc5bbb983fa0528-0",
            "16329fb6004d64a4fbc5bbb983fa0528-10001",
            "16329fb6004d64a4fbc5bbb983fa0528-+2",
            "16329fb6004d64a4fbc5bbb983fa0528-",
        ] {
            assert!(MultipartEtag::parse(bad).is_err(), "{bad}");
        }
    }
}
