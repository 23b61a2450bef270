//! End-to-end integrity: the checksum sent with every upload and the check of every whole-object
//! download.
//!
//! # Uploads
//!
//! Every PUT and every part carries an `x-amz-checksum-*` header computed over the bytes sent; the
//! server recomputes it and refuses the request (`BadDigest`) if the bytes changed on the way. The
//! algorithm is [`UploadChecksum`]: CRC32C by default (hardware-accelerated, about 20 GiB/s with
//! `crc-fast` on x86-64, so it costs far less than the network), CRC64NVME, or SHA-256 (about
//! 1.4 GiB/s, for stores that require it).
//!
//! Where it travels: a single PUT of in-memory bytes, and any part whose payload is signed (its
//! SHA-256 is needed before the head anyway), carries it as a header. A part sent unsigned
//! (`PayloadSigning::Unsigned`, or `Auto` over TLS) is sent aws-chunked
//! (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`, 1 MiB chunks) with the checksum computed chunk by chunk
//! as the chunks are written and sent as the trailer: one pass over the part instead of two.
//!
//! # Downloads
//!
//! Whole-object GETs ([`Client::get_bytes`](crate::Client::get_bytes),
//! [`Client::get_into`](crate::Client::get_into)) ask for the stored checksum
//! (`x-amz-checksum-mode: ENABLED`). When the server returns a full-object checksum the received
//! bytes are checked against it, and a mismatch is [`Error::ChecksumMismatch`]: the caller never
//! gets damaged bytes as if they were the object. Composite checksums of multipart objects
//! (`<base64>-<parts>`, or `x-amz-checksum-type: COMPOSITE`) are checksums of the parts' checksums;
//! they need the part boundaries, which a HEAD with `partNumber=1` gives when the parts are of equal
//! size (all but the last, as every SDK uploads them; asked once per version of an object, and
//! kept by the client): then each part's CRC is computed and the
//! composite compared (`stored_composite`). SHA composites and parts of unequal size are skipped.
//! `get_stream` checks full-object checksums only.
//!
//! The whole-object reads into memory take the CRC as the bytes land, just after the socket's copy
//! wrote them (`brisk_wire::checksum::BlockCrcs`): one running CRC for a full-object checksum, and
//! for a composite one the CRC of each 1 MiB block, combined into the parts' after the body, instead
//! of reading the buffer again; only parts that are not whole MiB, and SHA checksums, take the
//! second pass.
//!
//! Azure Blob Storage has no per-object CRC to ask for; it keeps the MD5 of a blob written in one
//! Put Blob (and of any blob whose writer set `x-ms-blob-content-md5`). A whole-blob GET returns it
//! as `Content-MD5`, a ranged GET as `x-ms-blob-content-md5` (`stored_blob_md5`); whole reads
//! into memory and downloads to a file check it (a second pass: MD5 cannot be combined from
//! ranges). Blobs committed from blocks without it are not checked end to end, but each block was
//! checked on its way in (`x-ms-content-crc64`).

use brisk_wire::checksum::{
    ChecksumAlgorithm, ChecksumValue, Checksummer, FullObjectCrc, Md5, Md5Digest, MultipartChecksum,
};
use brisk_wire::http::ResponseHead;

use crate::error::{Error, Result};

/// The header asking S3 to return the stored checksum with a GET.
pub const CHECKSUM_MODE_HEADER: &str = "x-amz-checksum-mode";

/// The checksum sent with an upload. CRC32C unless chosen otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UploadChecksum {
    /// CRC32C (`x-amz-checksum-crc32c`): the default, as in the AWS SDKs since 2025.
    #[default]
    Crc32c,
    /// CRC64NVME (`x-amz-checksum-crc64nvme`): a 64-bit CRC, S3's full-object checksum.
    Crc64Nvme,
    /// SHA-256 (`x-amz-checksum-sha256`): cryptographic, about 15 times slower than the CRCs.
    Sha256,
}

impl UploadChecksum {
    /// The wire-level algorithm.
    pub const fn algorithm(self) -> ChecksumAlgorithm {
        match self {
            Self::Crc32c => ChecksumAlgorithm::Crc32c,
            Self::Crc64Nvme => ChecksumAlgorithm::Crc64Nvme,
            Self::Sha256 => ChecksumAlgorithm::Sha256,
        }
    }

    /// The checksum of `data`, base64 as S3 sends it.
    pub fn compute(self, data: &[u8]) -> String {
        Checksummer::checksum(self.algorithm(), data).to_base64()
    }
}

/// The full-object checksum a GET response carries, if any (see the module docs for what is
/// skipped).
pub(crate) fn stored_checksum(head: &ResponseHead) -> Option<ChecksumValue> {
    let headers = head.headers();
    if headers
        .get_str("x-amz-checksum-type")
        .is_some_and(|t| t.eq_ignore_ascii_case("COMPOSITE"))
    {
        return None;
    }
    ChecksumAlgorithm::ALL.into_iter().find_map(|algorithm| {
        let text = headers.get_str(algorithm.header_name())?;
        // `<base64>-<parts>` is a composite checksum; `from_base64` refuses it (wrong length).
        ChecksumValue::from_base64(algorithm, text.trim()).ok()
    })
}

/// The composite (per-part) checksum a HEAD or GET response carries, if any, of an algorithm
/// whose part checksums a downloader can rebuild from ranges (the CRCs: a part's CRC combines from
/// the CRCs of its pieces in any split). `<base64>-<parts>` as S3, MinIO and brisk serve write it.
pub(crate) fn stored_composite(head: &ResponseHead) -> Option<MultipartChecksum> {
    let headers = head.headers();
    ChecksumAlgorithm::ALL.into_iter().find_map(|algorithm| {
        let text = headers.get_str(algorithm.header_name())?;
        FullObjectCrc::new(algorithm).ok()?;
        MultipartChecksum::parse(algorithm, text.trim()).ok()
    })
}

/// The MD5 of the whole blob an Azure response carries: `x-ms-blob-content-md5` (ranged GETs), else
/// `Content-MD5` (HEAD and whole-blob GETs).
pub(crate) fn stored_blob_md5(head: &ResponseHead) -> Option<Md5Digest> {
    let headers = head.headers();
    let text = headers
        .get_str("x-ms-blob-content-md5")
        .or_else(|| headers.get_str("content-md5"))?;
    Md5Digest::from_base64(text.trim()).ok()
}

/// The largest range whose MD5 Azure returns (`x-ms-range-get-content-md5`): 4 MiB.
pub(crate) const TRANSACTIONAL_MD5_MAX: u64 = 4 * 1024 * 1024;

/// The MD5 a partial answer (206) carries for the range it sent (`Content-MD5`, which Azure
/// returns when `request::ask_range_md5` asked for it).
pub(crate) fn sent_range_md5(head: &ResponseHead) -> Option<Md5Digest> {
    if head.status() != 206 {
        return None;
    }
    let text = head.headers().get_str("content-md5")?;
    Md5Digest::from_base64(text.trim()).ok()
}

/// Checks `data` against the MD5 its blob is stored with.
pub(crate) fn verify_md5(bucket: &str, key: &str, expected: &Md5Digest, data: &[u8]) -> Result<()> {
    md5_matches(
        bucket,
        key,
        expected,
        Md5::digest(data),
        "the blob's Content-MD5",
    )
}

/// Compares an MD5 `computed` over received bytes with the one the service sent (`sent`: which, in
/// the warning a mismatch logs).
pub(crate) fn md5_matches(
    bucket: &str,
    key: &str,
    expected: &Md5Digest,
    computed: Md5Digest,
    sent: &str,
) -> Result<()> {
    if computed == *expected {
        return Ok(());
    }
    tracing::warn!(
        bucket, key, expected = %expected.to_base64(), computed = %computed.to_base64(),
        "received bytes do not match {sent}"
    );
    Err(Error::ChecksumMismatch {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        algorithm: "MD5",
        expected: expected.to_base64(),
        computed: computed.to_base64(),
    })
}

/// Checks `data` against `expected`.
pub(crate) fn verify(bucket: &str, key: &str, expected: &ChecksumValue, data: &[u8]) -> Result<()> {
    checksum_matches(
        bucket,
        key,
        expected,
        Checksummer::checksum(expected.algorithm(), data),
    )
}

/// Compares a checksum `computed` over received bytes with the object's.
pub(crate) fn checksum_matches(
    bucket: &str,
    key: &str,
    expected: &ChecksumValue,
    computed: ChecksumValue,
) -> Result<()> {
    if computed == *expected {
        return Ok(());
    }
    tracing::warn!(
        bucket, key, algorithm = expected.algorithm().s3_name(),
        expected = %expected.to_base64(), computed = %computed.to_base64(),
        "received bytes do not match the object's checksum"
    );
    Err(Error::ChecksumMismatch {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        algorithm: expected.algorithm().s3_name(),
        expected: expected.to_base64(),
        computed: computed.to_base64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(headers: &[(&str, &str)]) -> ResponseHead {
        let mut head = ResponseHead::with_status(200).unwrap();
        for (name, value) in headers {
            head.headers_mut().append(name, value).unwrap();
        }
        head
    }

    #[test]
    fn each_algorithm_round_trips_through_verify() {
        for choice in [
            UploadChecksum::Crc32c,
            UploadChecksum::Crc64Nvme,
            UploadChecksum::Sha256,
        ] {
            let sent = choice.compute(b"hello");
            let stored = ChecksumValue::from_base64(choice.algorithm(), &sent).unwrap();
            verify("b", "k", &stored, b"hello").unwrap();
            let err = verify("b", "k", &stored, b"hellO").unwrap_err();
            assert!(
                matches!(err, Error::ChecksumMismatch { algorithm, .. } if algorithm == choice.algorithm().s3_name()),
                "{err}"
            );
        }
    }

    #[test]
    fn the_default_is_crc32c() {
        assert_eq!(
            UploadChecksum::default().algorithm(),
            ChecksumAlgorithm::Crc32c
        );
        // Known value: CRC32C("hello") = 0x9a71bb4c.
        assert_eq!(UploadChecksum::Crc32c.compute(b"hello"), "mnG7TA==");
    }

    #[test]
    fn full_object_checksums_are_found() {
        let crc = UploadChecksum::Crc32c.compute(b"hello");
        let found = stored_checksum(&head(&[("x-amz-checksum-crc32c", &crc)])).unwrap();
        assert_eq!(found.algorithm(), ChecksumAlgorithm::Crc32c);
        assert_eq!(found.to_base64(), crc);
        assert!(stored_checksum(&head(&[])).is_none());
    }

    #[test]
    fn composite_checksums_are_skipped() {
        assert!(stored_checksum(&head(&[("x-amz-checksum-crc32c", "mnG7TA==-3")])).is_none());
        assert!(
            stored_checksum(&head(&[
                ("x-amz-checksum-crc32c", "mnG7TA=="),
                ("x-amz-checksum-type", "COMPOSITE"),
            ]))
            .is_none()
        );
    }
}
