//! Receiving request bodies: payload slices of the connection's read buffer go straight to their sink
//! (the object's temp file), hashed as they pass, with the aws-chunked decoder layered over the
//! Content-Length (or HTTP chunked) body when the client sent one. No per-chunk allocation: the only
//! buffer besides the read buffer is a small per-connection carry for aws-chunked metadata that
//! straddles two reads (at most [`MAX_CARRY`] bytes, allocated once).
//!
//! # Why file writes happen on the worker thread
//!
//! A body slice (at most one read buffer, 256 KiB by default) is written on the runtime's worker,
//! through the page cache or, for durable bodies of a stage or more, staged and written with
//! `O_DIRECT` (`direct.rs`). A buffered write is a memory copy plus the file system's delayed
//! allocation, about 0.3 CPU s per GiB in the server benchmark (`BENCHMARKS-log.md`, "Server"), i.e.
//! ~75 µs per 256 KiB. Handing each one to another thread (`spawn_blocking`, `block_in_place`) would
//! add a thread hand-off per slice and save no CPU. What waits for the disk — an `O_DIRECT` write,
//! which returns when the device has the bytes, the fsync and rename of the commit, metadata
//! transactions — runs under `block_in_place` instead (see `blocking.rs`, `direct.rs`).

use brisk_wire::S3ErrorCode;

use crate::tls::ServerStream;
use brisk_wire::checksum::{ChecksumAlgorithm, ChecksumValue, Checksummer, Md5, Md5Digest};
use brisk_wire::framing::BodyDecoder;
use brisk_wire::http::{HttpConnection, RequestHead};
use brisk_wire::sigv4::decoder::{MAX_CHUNK_HEADER_LEN, MAX_TRAILERS_LEN};
use brisk_wire::sigv4::{AuthError, AwsChunkedDecoder, PayloadHashVerifier};

use crate::auth::PayloadCheck;
use crate::direct::BodyWriter;
use crate::error::S3Error;

/// Largest object a single PUT (or part) may carry: 5 GiB, S3's limit.
pub const MAX_PUT_SIZE: u64 = 5 << 30;

/// Most aws-chunked metadata bytes held between two reads: a chunk header (≤ 128 bytes) or the whole
/// trailer section (≤ 4 KiB) plus room for a chunk-ending CRLF.
pub const MAX_CARRY: usize = MAX_CHUNK_HEADER_LEN + MAX_TRAILERS_LEN + 64;

/// The connection type of the server.
pub type Connection = HttpConnection<ServerStream>;

/// The checksum a client announced for the body: its value in a header, or an algorithm whose value
/// comes in a trailer.
#[derive(Debug, Clone)]
pub enum DeclaredChecksum {
    /// `x-amz-checksum-<alg>: <base64>` in the head.
    Header(ChecksumValue),
    /// `x-amz-trailer: x-amz-checksum-<alg>`: the value follows the body.
    Trailer(ChecksumAlgorithm),
    /// `x-amz-checksum-algorithm` without a value: compute and store it.
    Compute(ChecksumAlgorithm),
}

impl DeclaredChecksum {
    /// The algorithm of the declared checksum.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        match self {
            Self::Header(v) => v.algorithm(),
            Self::Trailer(a) | Self::Compute(a) => *a,
        }
    }
}

/// Reads the checksum declarations of a request head.
pub fn declared_checksum(head: &RequestHead) -> Result<Option<DeclaredChecksum>, S3Error> {
    let headers = head.headers();
    for algorithm in ChecksumAlgorithm::ALL {
        if let Some(value) = headers.get_str(algorithm.header_name()) {
            let value = ChecksumValue::from_base64(algorithm, value.trim())
                .map_err(|e| S3Error::invalid_request(e.to_string()))?;
            return Ok(Some(DeclaredChecksum::Header(value)));
        }
    }
    if let Some(trailer) = headers.get_str("x-amz-trailer") {
        let name = trailer.trim();
        let algorithm = ChecksumAlgorithm::from_header_name(name)
            .ok_or_else(|| S3Error::invalid_request(format!("unsupported trailer {name:?}")))?;
        return Ok(Some(DeclaredChecksum::Trailer(algorithm)));
    }
    let named = headers
        .get_str("x-amz-checksum-algorithm")
        .or_else(|| headers.get_str("x-amz-sdk-checksum-algorithm"));
    if let Some(name) = named {
        let algorithm: ChecksumAlgorithm =
            name.trim()
                .parse()
                .map_err(|e: brisk_wire::checksum::ChecksumError| {
                    S3Error::invalid_request(e.to_string())
                })?;
        return Ok(Some(DeclaredChecksum::Compute(algorithm)));
    }
    Ok(None)
}

/// The digests computed while a body streams, and what they are checked against afterwards.
#[derive(Debug)]
pub struct BodyDigests {
    md5: Option<Md5>,
    etag_crc: Option<Checksummer>,
    sha256: Option<PayloadHashVerifier>,
    checksum: Option<Checksummer>,
    content_md5: Option<Md5Digest>,
    declared: Option<DeclaredChecksum>,
}

/// What a completely received and verified body produced.
#[derive(Debug, Clone)]
pub struct BodyOutcome {
    /// The quoted ETag (MD5, or CRC-64/NVME with MD5 ETags off).
    pub etag: String,
    /// The verified (or computed) `x-amz-checksum-*`, if the client asked for one.
    pub checksum: Option<ChecksumValue>,
}

impl BodyDigests {
    /// Digests for a body announced by `head`, verified as `payload` says.
    pub fn new(
        head: &RequestHead,
        payload: &PayloadCheck,
        md5_etag: bool,
    ) -> Result<Self, S3Error> {
        Self::with_declared(head, payload, md5_etag, declared_checksum(head)?)
    }

    /// Digests for the XML body of a CompleteMultipartUpload, whose `x-amz-checksum-<algorithm>`
    /// is the whole object's (checked against its parts, and possibly a composite's
    /// `<base64>-<parts>`), not the body's: the body is covered by the signature or `Content-MD5`.
    pub fn for_completion(head: &RequestHead, payload: &PayloadCheck) -> Result<Self, S3Error> {
        Self::with_declared(head, payload, false, None)
    }

    fn with_declared(
        head: &RequestHead,
        payload: &PayloadCheck,
        md5_etag: bool,
        declared: Option<DeclaredChecksum>,
    ) -> Result<Self, S3Error> {
        let content_md5 = match head.headers().get_str("content-md5") {
            Some(v) => Some(Md5Digest::from_base64(v.trim()).map_err(|_| {
                S3Error::new(
                    S3ErrorCode::InvalidDigest,
                    "The Content-MD5 you specified is not valid base64 of 16 bytes",
                )
            })?),
            None => None,
        };
        Ok(Self {
            md5: (md5_etag || content_md5.is_some()).then(Md5::new),
            etag_crc: (!md5_etag).then(|| Checksummer::new(ChecksumAlgorithm::Crc64Nvme)),
            sha256: match payload {
                PayloadCheck::Sha256(d) => Some(PayloadHashVerifier::new(*d)),
                _ => None,
            },
            checksum: declared.as_ref().map(|d| Checksummer::new(d.algorithm())),
            content_md5,
            declared,
        })
    }

    /// Computes (and reports in [`BodyOutcome::checksum`]) a checksum of `algorithm` when the
    /// request declared none: a part of a multipart upload created with a checksum algorithm gets
    /// one, so the object's checksum can be combined at completion.
    pub fn compute_if_undeclared(mut self, algorithm: Option<ChecksumAlgorithm>) -> Self {
        if let (None, Some(algorithm)) = (&self.declared, algorithm) {
            self.declared = Some(DeclaredChecksum::Compute(algorithm));
            self.checksum = Some(Checksummer::new(algorithm));
        }
        self
    }

    /// Hashes the next payload bytes.
    pub fn update(&mut self, data: &[u8]) {
        match (&mut self.md5, &mut self.sha256) {
            // Both (an MD5 ETag of a signed payload): block by block in turn, which the CPU
            // overlaps (about 17 % less than one after the other).
            (Some(md5), Some(sha)) => sha.update_with_md5(md5, data),
            (md5, sha) => {
                if let Some(h) = md5 {
                    h.update(data);
                }
                if let Some(h) = sha {
                    h.update(data);
                }
            }
        }
        if let Some(h) = &mut self.etag_crc {
            h.update(data);
        }
        if let Some(h) = &mut self.checksum {
            h.update(data);
        }
    }

    /// Checks every declared digest against the body; `trailer` looks up a trailer by name.
    pub fn finish<'t>(
        self,
        trailer: impl Fn(&str) -> Option<&'t str>,
    ) -> Result<BodyOutcome, S3Error> {
        if let Some(sha) = self.sha256 {
            sha.finish().map_err(|e: AuthError| S3Error::from(e))?;
        }
        let md5 = self.md5.map(Md5::finalize);
        if let (Some(expected), Some(actual)) = (self.content_md5, md5)
            && expected != actual
        {
            return Err(S3Error::bad_digest(
                "The Content-MD5 you specified did not match what we received",
            ));
        }
        let checksum = match (self.checksum, self.declared) {
            (Some(h), Some(declared)) => {
                let computed = h.finalize();
                let expected = match declared {
                    DeclaredChecksum::Header(v) => Some(v),
                    DeclaredChecksum::Trailer(algorithm) => {
                        let text = trailer(algorithm.header_name()).ok_or_else(|| {
                            S3Error::invalid_request(format!(
                                "the announced trailer {} did not arrive",
                                algorithm.header_name()
                            ))
                        })?;
                        Some(
                            ChecksumValue::from_base64(algorithm, text.trim())
                                .map_err(|e| S3Error::invalid_request(e.to_string()))?,
                        )
                    }
                    DeclaredChecksum::Compute(_) => None,
                };
                if let Some(expected) = expected
                    && expected != computed
                {
                    return Err(S3Error::bad_digest(format!(
                        "The {} you specified did not match the calculated checksum",
                        computed.algorithm().s3_name()
                    )));
                }
                Some(computed)
            }
            _ => None,
        };
        let etag = match (md5, self.etag_crc) {
            (_, Some(crc)) => format!("\"{}\"", hex::encode(crc.finalize().as_bytes())),
            (Some(md5), None) => md5.to_etag(),
            (None, None) => unreachable!("an ETag digest is always computed"),
        };
        Ok(BodyOutcome { etag, checksum })
    }
}

/// The payload length of the request body, from `x-amz-decoded-content-length` for aws-chunked
/// bodies, else the framing; `MissingContentLength` (411) when neither says, `EntityTooLarge` past
/// `max`.
pub fn payload_length(
    head: &RequestHead,
    conn: &Connection,
    chunked: bool,
    max: u64,
) -> Result<Option<u64>, S3Error> {
    let len = if chunked {
        let v = head
            .headers()
            .get_str("x-amz-decoded-content-length")
            .ok_or_else(|| {
                S3Error::new(
                    S3ErrorCode::MissingContentLength,
                    "aws-chunked bodies need x-amz-decoded-content-length",
                )
            })?;
        Some(v.trim().parse::<u64>().map_err(|_| {
            S3Error::invalid_argument(format!(
                "x-amz-decoded-content-length {v:?} is not a number"
            ))
        })?)
    } else {
        conn.incoming_framing().known_length()
    };
    if let Some(n) = len
        && n > max
    {
        return Err(S3Error::new(
            S3ErrorCode::EntityTooLarge,
            format!("Your proposed upload of {n} bytes exceeds the maximum allowed size of {max}"),
        ));
    }
    Ok(len)
}

/// Reads the whole request body, handing payload to `sink` from where it lies in the read buffer (or
/// in the small carry, for payload adjacent to aws-chunked metadata). Returns the payload length.
pub async fn read_body<F>(
    conn: &mut Connection,
    mut decoder: Option<&mut AwsChunkedDecoder>,
    carry: &mut Vec<u8>,
    max: u64,
    mut sink: F,
) -> Result<u64, S3Error>
where
    F: FnMut(&[u8]) -> Result<(), S3Error>,
{
    carry.clear();
    let mut total = 0u64;
    let mut counted = |data: &[u8]| -> Result<(), S3Error> {
        total += data.len() as u64;
        if total > max {
            return Err(body_too_large(max));
        }
        if data.is_empty() {
            return Ok(());
        }
        sink(data)
    };
    while let Some(slice) = conn.body_chunk().await? {
        match decoder.as_deref_mut() {
            None => counted(slice)?,
            Some(d) => feed(d, carry, slice, &mut counted)?,
        }
    }
    if let Some(d) = decoder
        && (!d.is_done() || !carry.is_empty())
    {
        return Err(S3Error::new(
            S3ErrorCode::IncompleteBody,
            "the aws-chunked body ended before its final chunk",
        ));
    }
    Ok(total)
}

/// Reads a body without aws-chunked framing straight into `writer`'s stage, so its bytes are copied
/// once, from the socket into the stage, and hashed there (`hash`) while cache-hot. Returns the
/// payload length.
pub async fn read_body_staged(
    conn: &mut Connection,
    writer: &mut BodyWriter<'_>,
    max: u64,
    mut hash: impl FnMut(&[u8]),
) -> Result<u64, S3Error> {
    let want = conn.read_buffer_capacity();
    let mut total = 0u64;
    loop {
        let spare = writer.spare(want)?.expect("a staged writer");
        let n = conn.read_body(spare).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
        if total > max {
            return Err(body_too_large(max));
        }
        hash(&spare[..n]);
        writer.advance(n);
    }
}

/// A body that ran past `max` bytes while it was read.
fn body_too_large(max: u64) -> S3Error {
    S3Error::new(
        S3ErrorCode::EntityTooLarge,
        format!("the body is larger than the maximum allowed size of {max} bytes"),
    )
}

fn framing_error(e: brisk_wire::framing::FramingError) -> S3Error {
    use brisk_wire::framing::FramingError;
    match e {
        FramingError::SignatureMismatch => S3Error::new(
            S3ErrorCode::SignatureDoesNotMatch,
            "The chunk signature we calculated does not match the signature you provided",
        ),
        FramingError::LengthMismatch { .. } => {
            S3Error::new(S3ErrorCode::IncompleteBody, e.to_string())
        }
        other => S3Error::invalid_request(format!("malformed aws-chunked body: {other}")),
    }
}

/// Runs the aws-chunked decoder over one slice of the outer body. Metadata cut by the slice's end is
/// kept in `carry` (bounded) and completed from the next slice.
fn feed<F>(
    decoder: &mut AwsChunkedDecoder,
    carry: &mut Vec<u8>,
    mut input: &[u8],
    sink: &mut F,
) -> Result<(), S3Error>
where
    F: FnMut(&[u8]) -> Result<(), S3Error>,
{
    while !input.is_empty() {
        if decoder.is_done() {
            return Err(S3Error::invalid_request(
                "bytes follow the end of the aws-chunked body",
            ));
        }
        if carry.is_empty() {
            let d = decoder.decode(input).map_err(framing_error)?;
            if d.consumed == 0 {
                if input.len() > MAX_CARRY {
                    return Err(S3Error::invalid_request("aws-chunked metadata too long"));
                }
                carry.extend_from_slice(input);
                return Ok(());
            }
            sink(&input[d.data])?;
            input = &input[d.consumed..];
        } else {
            let old = carry.len();
            let take = input.len().min(MAX_CARRY - old.min(MAX_CARRY)).max(1);
            carry.extend_from_slice(&input[..take]);
            let d = decoder.decode(carry).map_err(framing_error)?;
            if d.consumed == 0 {
                if carry.len() >= MAX_CARRY {
                    return Err(S3Error::invalid_request("aws-chunked metadata too long"));
                }
                input = &input[take..];
                continue;
            }
            sink(&carry[d.data])?;
            if d.consumed >= old {
                input = &input[d.consumed - old..];
                carry.clear();
            } else {
                carry.truncate(old);
                carry.drain(..d.consumed);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::sigv4::{ChunkedMode, UnsignedChunkEncoder};

    /// An unsigned aws-chunked body with a CRC32 trailer, fed in slices of every size from 1 byte up:
    /// the payload comes out whole and the trailer is read, whatever the split.
    #[test]
    fn layered_decoding_survives_every_split() {
        let payload: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
        let mut body = Vec::new();
        for chunk in payload.chunks(8192) {
            body.extend_from_slice(
                UnsignedChunkEncoder::chunk_header(chunk.len() as u64).as_bytes(),
            );
            body.extend_from_slice(chunk);
            body.extend_from_slice(b"\r\n");
        }
        let crc = Checksummer::checksum(ChecksumAlgorithm::Crc32, &payload).to_base64();
        body.extend_from_slice(
            &UnsignedChunkEncoder::final_chunk_with_trailers(&[("x-amz-checksum-crc32", &crc)])
                .unwrap(),
        );
        for split in [1, 2, 3, 7, 100, 4096, 8193, body.len()] {
            let mut decoder =
                AwsChunkedDecoder::new(ChunkedMode::UnsignedWithTrailer, payload.len() as u64);
            let mut carry = Vec::new();
            let mut out = Vec::new();
            for slice in body.chunks(split) {
                feed(&mut decoder, &mut carry, slice, &mut |d: &[u8]| {
                    out.extend_from_slice(d);
                    Ok(())
                })
                .unwrap();
            }
            assert!(decoder.is_done(), "split {split}");
            assert!(carry.is_empty(), "split {split}");
            assert_eq!(out, payload, "split {split}");
            assert_eq!(decoder.trailer("x-amz-checksum-crc32"), Some(crc.as_str()));
        }
    }

    #[test]
    fn bytes_after_the_final_chunk_are_refused() {
        let mut body = Vec::new();
        body.extend_from_slice(UnsignedChunkEncoder::chunk_header(3).as_bytes());
        body.extend_from_slice(b"abc\r\n");
        body.extend_from_slice(&UnsignedChunkEncoder::final_chunk_with_trailers(&[]).unwrap());
        body.extend_from_slice(b"junk");
        let mut decoder = AwsChunkedDecoder::new(ChunkedMode::UnsignedWithTrailer, 3);
        let mut carry = Vec::new();
        let e = feed(&mut decoder, &mut carry, &body, &mut |_: &[u8]| Ok(())).unwrap_err();
        assert_eq!(e.code, "InvalidRequest");
    }
}
