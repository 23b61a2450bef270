//! What a download checks the bytes it wrote against ([`DownloadCheck`]): the object's
//! full-object CRC, combined from its ranges' CRCs as they land ([`RangeCrcs`]); a composite CRC,
//! rebuilt part by part from ranges cut at the parts' boundaries ([`Ranges`]); or a digest taken
//! in a second pass over the file ([`digest_file`]).

use std::collections::BTreeMap;
use std::path::Path;

use brisk_wire::checksum::{
    ChecksumAlgorithm, ChecksumValue, Checksummer, CompositeChecksum, FullObjectCrc, Md5,
    Md5Digest, MultipartChecksum,
};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::local_file::file_error;
use crate::objects::StoredChecksum;
use crate::part_sums::SUMMED_READ;

impl Client {
    /// What a download of an object stored with `stored` can check, and how it must cut its
    /// ranges to do so.
    pub(super) async fn download_check(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
        size: u64,
        stored: StoredChecksum,
        md5_etag: bool,
    ) -> Result<DownloadCheck> {
        if let Some(full) = stored.full {
            let algorithm = full.algorithm().s3_name();
            if FullObjectCrc::new(full.algorithm()).is_ok() {
                tracing::debug!(
                    bucket,
                    key,
                    algorithm,
                    "the download will be checked against the object's full-object checksum"
                );
                return Ok(DownloadCheck::Full(full));
            }
            tracing::debug!(
                bucket,
                key,
                algorithm,
                "the download will be checked against the object's checksum in a second pass over the file"
            );
            return Ok(DownloadCheck::Digest(full));
        }
        if let Some(composite) = stored.composite {
            let layout = self.first_part_layout(bucket, key, etag).await?;
            return Ok(match layout {
                Some((part_size, parts))
                    if parts == composite.parts
                        && part_size > 0
                        && size.div_ceil(part_size) == u64::from(parts) =>
                {
                    tracing::debug!(
                        bucket,
                        key,
                        algorithm = composite.value.algorithm().s3_name(),
                        parts,
                        part_size,
                        "the download will be checked against the object's composite checksum, part by part"
                    );
                    DownloadCheck::Composite {
                        expected: composite,
                        part_size,
                    }
                }
                _ => {
                    tracing::debug!(
                        bucket,
                        key,
                        ?layout,
                        parts = composite.parts,
                        "the object's parts are not of equal size; its composite checksum is not checked"
                    );
                    DownloadCheck::None
                }
            });
        }
        if let Some(md5) = stored.blob_md5 {
            tracing::debug!(
                bucket,
                key,
                "the download will be checked against the blob's Content-MD5 in a second pass over the file"
            );
            return Ok(DownloadCheck::Md5(md5));
        }
        if let Some(algorithm) = stored.any {
            tracing::debug!(
                bucket,
                key,
                algorithm = algorithm.s3_name(),
                "the object's checksum is composite and not a CRC; this download is not checked end to end"
            );
            return Ok(DownloadCheck::None);
        }
        match (md5_etag, etag.trim_matches('"').parse_md5_hex()) {
            (true, Some(md5)) => {
                tracing::debug!(
                    bucket,
                    key,
                    "the object has no stored checksum; the download will be checked against its ETag (MD5) in a second pass"
                );
                Ok(DownloadCheck::Md5(md5))
            }
            (true, None) => {
                tracing::debug!(
                    bucket,
                    key,
                    etag,
                    "the object has no stored checksum and its ETag is not an MD5; this download is not checked end to end"
                );
                Ok(DownloadCheck::None)
            }
            (false, _) => {
                tracing::debug!(
                    bucket,
                    key,
                    "the object has no stored checksum; this download is not checked end to end"
                );
                Ok(DownloadCheck::None)
            }
        }
    }
}

/// What a download checks the bytes it wrote against.
pub(super) enum DownloadCheck {
    /// Nothing: the object has no checksum a download can rebuild.
    None,
    /// The CRC of the whole object.
    Full(ChecksumValue),
    /// A composite CRC: the CRC of the concatenated CRCs of parts of `part_size` bytes.
    Composite {
        expected: MultipartChecksum,
        part_size: u64,
    },
    /// A digest that cannot be combined from ranges (SHA-256, SHA-1): a second pass over the file.
    Digest(ChecksumValue),
    /// The ETag of a single-part object, the MD5 of its bytes: a second pass over the file.
    Md5(Md5Digest),
}

/// What a download computed over the bytes it wrote.
pub(super) enum Computed {
    Nothing,
    Full(ChecksumValue),
    Composite(MultipartChecksum),
    Md5(Md5Digest),
}

/// The algorithm of a second pass over a downloaded file.
#[derive(Clone, Copy)]
pub(super) enum SecondPass {
    Checksum(ChecksumAlgorithm),
    Md5,
}

/// Reads the file at `path` from the start and digests it, on the blocking pool.
pub(super) async fn digest_file(path: &Path, algorithm: SecondPass) -> Result<Computed> {
    use std::io::Read;
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || -> std::io::Result<Computed> {
        let mut file = std::fs::File::open(&owned)?;
        let mut buf = vec![0u8; SUMMED_READ];
        match algorithm {
            SecondPass::Checksum(algorithm) => {
                let mut sum = Checksummer::new(algorithm);
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        return Ok(Computed::Full(sum.finalize()));
                    }
                    sum.update(&buf[..n]);
                }
            }
            SecondPass::Md5 => {
                let mut sum = Md5::new();
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        return Ok(Computed::Md5(sum.finalize()));
                    }
                    sum.update(&buf[..n]);
                }
            }
        }
    })
    .await
    .map_err(|e| Error::UnexpectedResponse {
        what: format!("digest task failed: {e}"),
    })?
    .map_err(|e| file_error(path, "reading back", e))
}

/// An ETag that is the MD5 of a single-part object's bytes: 32 hex digits.
trait Md5Etag {
    fn parse_md5_hex(&self) -> Option<Md5Digest>;
}

impl Md5Etag for str {
    fn parse_md5_hex(&self) -> Option<Md5Digest> {
        (self.len() == 32)
            .then(|| Md5Digest::from_hex(self).ok())
            .flatten()
    }
}

impl DownloadCheck {
    /// The CRC computed next to each range's write, if any.
    pub(super) fn algorithm(&self) -> Option<ChecksumAlgorithm> {
        match self {
            Self::None | Self::Digest(_) | Self::Md5(_) => None,
            Self::Full(value) => Some(value.algorithm()),
            Self::Composite { expected, .. } => Some(expected.value.algorithm()),
        }
    }

    /// What a second pass over the finished file must compute, if anything.
    pub(super) fn second_pass(&self) -> Option<SecondPass> {
        match self {
            Self::Digest(value) => Some(SecondPass::Checksum(value.algorithm())),
            Self::Md5(_) => Some(SecondPass::Md5),
            _ => None,
        }
    }

    pub(super) fn algorithm_name(&self) -> &'static str {
        match self {
            Self::Md5(_) => "MD5 (ETag)",
            Self::Digest(value) => value.algorithm().s3_name(),
            _ => self.algorithm().map_or("none", ChecksumAlgorithm::s3_name),
        }
    }

    /// The part boundaries ranges must not cross.
    fn part_size(&self) -> Option<u64> {
        match self {
            Self::Composite { part_size, .. } => Some(*part_size),
            _ => None,
        }
    }

    /// `(expected, computed)` as S3 writes them when `computed` differs from what is stored.
    pub(super) fn mismatch(&self, computed: Computed) -> Option<(String, String)> {
        match (self, computed) {
            (Self::Full(expected), Computed::Full(got)) if got != *expected => {
                Some((expected.to_base64(), got.to_base64()))
            }
            (Self::Composite { expected, .. }, Computed::Composite(got)) if got != *expected => {
                Some((expected.to_string(), got.to_string()))
            }
            (Self::Digest(expected), Computed::Full(got)) if got != *expected => {
                Some((expected.to_base64(), got.to_base64()))
            }
            (Self::Md5(expected), Computed::Md5(got)) if got != *expected => {
                Some((expected.to_hex(), got.to_hex()))
            }
            _ => None,
        }
    }
}

/// The ranges of a download, in order: `step` bytes each, never across a multiple of `boundary`
/// (the object's part boundaries, when a composite checksum is rebuilt part by part).
pub(super) struct Ranges {
    pub(super) size: u64,
    pub(super) step: u64,
    pub(super) boundary: Option<u64>,
    pub(super) next: u64,
}

impl Ranges {
    /// The `part_size` ranges of an object of `size` bytes, cut where `check`'s parts end.
    pub(super) fn new(size: u64, part_size: usize, check: &DownloadCheck) -> Self {
        Self {
            size,
            step: part_size as u64,
            boundary: check.part_size(),
            next: 0,
        }
    }
}

impl Iterator for Ranges {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.next >= self.size {
            return None;
        }
        let limit = self
            .boundary
            .map_or(u64::MAX, |p| (self.next / p + 1).saturating_mul(p));
        let end = self
            .next
            .saturating_add(self.step.max(1))
            .min(limit)
            .min(self.size);
        let range = (self.next, end - self.next);
        self.next = end;
        Some(range)
    }
}

/// The CRCs of a download's ranges, combined in range order as they land in any order: into one
/// CRC of the whole object, or into one CRC per part whose CRCs make the composite checksum.
/// Ranges land at most a window out of order (the parts of one span per worker, 32 by default), so
/// the ranges waiting for an earlier one are few whatever the object's size.
pub(super) struct RangeCrcs {
    /// The CRC of the bytes combined so far (of the current part, for a composite).
    combined: Option<FullObjectCrc>,
    /// The composite so far and the part size, when rebuilding one.
    composite: Option<(CompositeChecksum, u64)>,
    size: u64,
    waiting: BTreeMap<u64, (ChecksumValue, u64, u64)>,
    next: u64,
}

impl RangeCrcs {
    pub(super) fn new(check: &DownloadCheck, size: u64) -> Self {
        let algorithm = check.algorithm();
        Self {
            combined: algorithm.map(|a| FullObjectCrc::new(a).expect("a CRC algorithm")),
            composite: match check {
                DownloadCheck::Composite {
                    expected,
                    part_size,
                } => Some((
                    CompositeChecksum::new(expected.value.algorithm())
                        .expect("a composite CRC algorithm"),
                    *part_size,
                )),
                _ => None,
            },
            size,
            waiting: BTreeMap::new(),
            next: 0,
        }
    }

    /// Range `index` (counted from 0) of `len` bytes at `offset` landed with this CRC.
    pub(super) fn landed(&mut self, index: u64, crc: Option<ChecksumValue>, offset: u64, len: u64) {
        let (Some(_), Some(crc)) = (self.combined.as_ref(), crc) else {
            return;
        };
        self.waiting.insert(index, (crc, offset, len));
        while let Some((crc, offset, len)) = self.waiting.remove(&self.next) {
            let combined = self.combined.as_mut().expect("checked above");
            combined
                .push_part(&crc, len)
                .expect("every range's CRC is of the same algorithm");
            self.next += 1;
            let end = offset + len;
            if let Some((composite, part_size)) = self.composite.as_mut()
                && (end % *part_size == 0 || end == self.size)
            {
                // A part is complete: its CRC goes into the composite, the next part starts anew.
                let algorithm = crc.algorithm();
                let part = std::mem::replace(
                    combined,
                    FullObjectCrc::new(algorithm).expect("a CRC algorithm"),
                );
                composite
                    .push_part(&part.finish())
                    .expect("every part's CRC is of the same algorithm");
            }
        }
    }

    pub(super) fn finish(self) -> Computed {
        debug_assert!(self.waiting.is_empty(), "every range was combined");
        match (self.combined, self.composite) {
            (None, _) => Computed::Nothing,
            (Some(_), Some((composite, _))) => Computed::Composite(composite.finish()),
            (Some(combined), None) => Computed::Full(combined.finish()),
        }
    }
}
