//! Multipart uploads: create, upload parts, list, complete, abort.
//!
//! Each part is its own data file, written to `tmp/` and renamed into `data/` like an object body, and
//! recorded in the `parts` table; uploading a part number again replaces the record and removes the old
//! file. Completion checks the listed parts and commits, in one transaction, the object (whose body is
//! the listed part files themselves, in order: its segments, read through
//! [`ObjectBody`](super::ObjectBody)), its part layout and the removal of the upload. No byte is
//! copied or written again at completion.

use std::ops::{Bound, RangeInclusive};
use std::sync::Arc;
use std::time::SystemTime;

use brisk_wire::checksum::Md5;
use redb::{ReadableDatabase, ReadableTable, WriteTransaction};

use super::error::{Result, StoreError};
use super::layout::DataId;
use super::meta::{
    self, Checksum, ChecksumAlgorithm, ChecksumType, ObjectAttributes, ObjectInfo, PartChecksum,
    PartLayout, PartRecord, UploadRecord,
};
use super::names;
use super::pending::{PendingPart, TempFile};
use super::tables::{self, BUCKETS, DATA_REFS, PARTS, UPLOADS};
use super::{Inner, Store, WriteCondition};

/// S3's minimum size of every part but the last: 5 MiB.
pub const MIN_PART_SIZE: u64 = 5 << 20;

/// Highest part number S3 accepts (parts are numbered from 1).
pub const MAX_PART_NUMBER: u32 = 10_000;

/// Most parts one `ListParts` page returns, as in S3.
pub const MAX_PARTS_PER_PAGE: usize = 1000;

/// Most uploads one `ListMultipartUploads` page returns, as in S3.
pub const MAX_UPLOADS_PER_PAGE: usize = 1000;

/// One entry of a `CompleteMultipartUpload` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedPart {
    /// Part number, 1..=10000.
    pub part_number: u32,
    /// ETag the client got when it uploaded the part (quotes optional).
    pub etag: String,
}

/// An uploaded part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    /// Part number.
    pub part_number: u32,
    /// Size in bytes.
    pub size: u64,
    /// ETag recorded at upload.
    pub etag: String,
    /// When the part was committed.
    pub last_modified: SystemTime,
    /// The part's checksum (base64), if the client sent one.
    pub checksum: Option<String>,
}

/// One page of `ListParts`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartsPage {
    /// The checksum algorithm the upload was created with: the algorithm of the parts' checksums.
    pub checksum_algorithm: Option<(ChecksumAlgorithm, ChecksumType)>,
    /// Parts in ascending number.
    pub parts: Vec<PartInfo>,
    /// More parts follow.
    pub is_truncated: bool,
    /// Pass as `part_number_marker` for the next page, when truncated.
    pub next_part_number_marker: Option<u32>,
}

/// Parameters of `ListMultipartUploads`.
#[derive(Debug, Clone)]
pub struct UploadQuery {
    /// Only uploads whose key starts with this.
    pub prefix: String,
    /// Only uploads of keys after this one (or of this key with an id after `upload_id_marker`).
    pub key_marker: Option<String>,
    /// With `key_marker`: also uploads of that key whose id is greater than this.
    pub upload_id_marker: Option<String>,
    /// Most uploads to return, capped at [`MAX_UPLOADS_PER_PAGE`] (common prefixes count too).
    pub max_uploads: usize,
    /// Keys holding this after the prefix are rolled up into one common prefix (up to and
    /// including the delimiter), as ListObjects does.
    pub delimiter: Option<String>,
}

impl Default for UploadQuery {
    fn default() -> Self {
        Self {
            prefix: String::new(),
            key_marker: None,
            upload_id_marker: None,
            max_uploads: MAX_UPLOADS_PER_PAGE,
            delimiter: None,
        }
    }
}

/// A multipart upload in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadInfo {
    /// Key the upload will create.
    pub key: String,
    /// Upload id.
    pub upload_id: String,
    /// When the upload was created.
    pub initiated: SystemTime,
    /// Checksum algorithm announced at creation.
    pub checksum_algorithm: Option<(ChecksumAlgorithm, ChecksumType)>,
}

/// One page of `ListMultipartUploads`, ordered by key, then by creation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UploadsPage {
    /// The uploads.
    pub uploads: Vec<UploadInfo>,
    /// More uploads follow.
    pub is_truncated: bool,
    /// `key_marker` for the next page, when truncated.
    pub next_key_marker: Option<String>,
    /// `upload_id_marker` for the next page, when truncated (none when the page ends with a
    /// common prefix).
    pub next_upload_id_marker: Option<String>,
    /// The common prefixes (with a delimiter), in key order.
    pub common_prefixes: Vec<String>,
}

fn validate_part_number(part_number: u32) -> Result<()> {
    if (1..=MAX_PART_NUMBER).contains(&part_number) {
        Ok(())
    } else {
        Err(StoreError::InvalidPartNumber(part_number))
    }
}

/// ETags compare without their surrounding quotes: clients send them either way.
fn same_etag(a: &str, b: &str) -> bool {
    a.trim_matches('"') == b.trim_matches('"')
}

/// S3's multipart ETag: MD5 of the concatenated binary MD5s of the parts, a dash and the part count,
/// quoted. A part ETag that is not a hex MD5 contributes its text instead.
fn multipart_etag<'a>(part_etags: impl ExactSizeIterator<Item = &'a str>) -> String {
    let count = part_etags.len();
    let mut md5 = Md5::new();
    for etag in part_etags {
        let etag = etag.trim_matches('"');
        match hex::decode(etag) {
            Ok(digest) if digest.len() == 16 => md5.update(&digest),
            _ => md5.update(etag.as_bytes()),
        }
    }
    format!("\"{}-{count}\"", md5.finalize().to_hex())
}

/// The full range of part records of one upload.
fn parts_of(upload_id: &str) -> RangeInclusive<(&str, u32)> {
    (upload_id, 0)..=(upload_id, u32::MAX)
}

impl Store {
    /// Starts a multipart upload and returns its id. The headers and user metadata are those the
    /// completed object will carry.
    pub fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        attributes: ObjectAttributes,
        checksum_algorithm: Option<(ChecksumAlgorithm, ChecksumType)>,
    ) -> Result<String> {
        names::validate_key(key)?;
        let upload_id = self.inner.ids.next().file_name();
        let record = UploadRecord {
            initiated: SystemTime::now(),
            attributes,
            checksum_algorithm,
        };
        let txn = self.inner.begin_write()?;
        {
            self.inner.require_bucket_in(&txn, bucket)?;
            let mut uploads = txn.open_table(UPLOADS)?;
            let object_key = tables::object_key(bucket, key);
            uploads.insert(
                (object_key.as_slice(), upload_id.as_str()),
                meta::encode_upload(&record).as_slice(),
            )?;
        }
        self.inner.commit(txn)?;
        Ok(upload_id)
    }

    /// Starts the upload of one part; write it and [`PendingPart::commit`].
    pub fn begin_upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
    ) -> Result<PendingPart> {
        names::validate_key(key)?;
        validate_part_number(part_number)?;
        let upload = {
            let txn = self.inner.db.begin_read()?;
            self.inner.read_upload(&txn, bucket, key, upload_id)?
        };
        Ok(PendingPart {
            temp: TempFile::create(Arc::clone(&self.inner))?,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            upload_id: upload_id.to_owned(),
            part_number,
            checksum_algorithm: upload.checksum_algorithm.map(|(algorithm, _)| algorithm),
        })
    }

    /// Parts of an upload with numbers above `part_number_marker`, at most `max_parts`
    /// (capped at [`MAX_PARTS_PER_PAGE`]).
    pub fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number_marker: u32,
        max_parts: usize,
    ) -> Result<PartsPage> {
        let max_parts = max_parts.min(MAX_PARTS_PER_PAGE);
        let txn = self.inner.db.begin_read()?;
        let upload = self.inner.read_upload(&txn, bucket, key, upload_id)?;
        let parts = txn.open_table(PARTS)?;
        let mut page = PartsPage {
            checksum_algorithm: upload.checksum_algorithm,
            ..PartsPage::default()
        };
        let range = parts.range::<(&str, u32)>((
            Bound::Excluded((upload_id, part_number_marker)),
            Bound::Included((upload_id, u32::MAX)),
        ))?;
        for entry in range {
            let (id, record) = entry?;
            let part_number = id.value().1;
            if page.parts.len() == max_parts {
                page.is_truncated = true;
                page.next_part_number_marker = page.parts.last().map(|p| p.part_number);
                break;
            }
            let record = meta::decode_part(record.value())?;
            page.parts.push(PartInfo {
                part_number,
                size: record.size,
                etag: record.etag,
                last_modified: record.last_modified,
                checksum: record.checksum,
            });
        }
        Ok(page)
    }

    /// Uploads in progress in `bucket`, ordered by key then by creation.
    pub fn list_multipart_uploads(&self, bucket: &str, query: &UploadQuery) -> Result<UploadsPage> {
        let max_uploads = query.max_uploads.min(MAX_UPLOADS_PER_PAGE);
        let txn = self.inner.db.begin_read()?;
        if txn.open_table(BUCKETS)?.get(bucket)?.is_none() {
            return Err(StoreError::NoSuchBucket(bucket.to_owned()));
        }
        let uploads = txn.open_table(UPLOADS)?;
        let (start, end) = tables::prefix_range(bucket, &query.prefix);
        let key_offset = tables::bucket_prefix_len(bucket);

        // Lower bound from the markers: after (key, upload id), or after every upload of the key.
        let marker_key = query
            .key_marker
            .as_deref()
            .map(|k| tables::object_key(bucket, k));
        let mut after_key = None;
        let mut lower: Bound<(&[u8], &str)> = Bound::Included((start.as_slice(), ""));
        if let Some(marker_key) = marker_key.as_deref().filter(|m| *m >= start.as_slice()) {
            match query.upload_id_marker.as_deref() {
                Some(id) => lower = Bound::Excluded((marker_key, id)),
                None => {
                    // The smallest key greater than the marker is the marker followed by NUL.
                    let mut next = marker_key.to_vec();
                    next.push(0);
                    after_key = Some(next);
                }
            }
        }
        if let Some(next) = after_key.as_deref() {
            lower = Bound::Included((next, ""));
        }

        let mut page = UploadsPage::default();
        let delimiter = query.delimiter.as_deref().filter(|d| !d.is_empty());
        // A key marker that is a common prefix (the last entry of the previous page) skips every
        // key under it.
        let skip_under = query
            .key_marker
            .as_deref()
            .filter(|m| delimiter.is_some_and(|d| m.ends_with(d)));
        // The page's last entry: an upload (key, id) or a common prefix (prefix, None).
        let mut last: Option<(String, Option<String>)> = None;
        let range =
            uploads.range::<(&[u8], &str)>((lower, Bound::Excluded((end.as_slice(), ""))))?;
        for entry in range {
            let (id, record) = entry?;
            let (object_key, upload_id) = id.value();
            let key = std::str::from_utf8(&object_key[key_offset..])
                .map_err(|_| StoreError::CorruptMetadata("key is not UTF-8"))?;
            if skip_under.is_some_and(|m| key.starts_with(m)) {
                continue;
            }
            let rolled_up = delimiter.and_then(|d| {
                let rest = &key[query.prefix.len()..];
                rest.find(d)
                    .map(|at| key[..query.prefix.len() + at + d.len()].to_owned())
            });
            if let Some(common) = &rolled_up
                && page.common_prefixes.last() == Some(common)
            {
                continue;
            }
            if page.uploads.len() + page.common_prefixes.len() == max_uploads {
                page.is_truncated = true;
                let (key, id) = last.take().expect("max_uploads > 0 when truncated");
                page.next_key_marker = Some(key);
                page.next_upload_id_marker = id;
                break;
            }
            if let Some(common) = rolled_up {
                last = Some((common.clone(), None));
                page.common_prefixes.push(common);
                continue;
            }
            last = Some((key.to_owned(), Some(upload_id.to_owned())));
            let record = meta::decode_upload(record.value())?;
            page.uploads.push(UploadInfo {
                key: key.to_owned(),
                upload_id: upload_id.to_owned(),
                initiated: record.initiated,
                checksum_algorithm: record.checksum_algorithm,
            });
        }
        Ok(page)
    }

    /// The object a CompleteMultipartUpload of `parts` already made, for a completion sent again
    /// after the upload is gone (a client retrying a completion whose answer it lost): the object
    /// at `key` if it is a multipart object with as many parts and the ETag those part ETags give.
    /// S3 answers such a repeat with the same result.
    pub fn already_completed(
        &self,
        bucket: &str,
        key: &str,
        parts: &[CompletedPart],
        expected: Option<&ExpectedChecksum>,
    ) -> Result<Option<ObjectInfo>> {
        let info = match self.head_object(bucket, key) {
            Ok(info) => info,
            Err(StoreError::NoSuchKey { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let etag = multipart_etag(parts.iter().map(|p| p.etag.as_str()));
        let same = info.parts.len() == parts.len() && same_etag(&info.etag, &etag);
        if same && let Some(expected) = expected {
            expected.check(info.checksum.as_ref(), parts.len())?;
        }
        Ok(same.then_some(info))
    }

    /// Completes an upload from the client's ordered part list: each part must exist with a matching
    /// ETag (`InvalidPart`), numbers must ascend (`InvalidPartOrder`), every part but the last must be
    /// at least the minimum part size (`EntityTooSmall`). The listed part files become the object's
    /// body as they are (its segments, in order: nothing is copied); parts uploaded but not listed
    /// are discarded.
    pub fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[CompletedPart],
        expected: Option<&ExpectedChecksum>,
    ) -> Result<ObjectInfo> {
        self.complete_multipart_upload_if(
            bucket,
            key,
            upload_id,
            parts,
            expected,
            &WriteCondition::Always,
        )
    }

    /// [`complete_multipart_upload`](Self::complete_multipart_upload) that commits only if
    /// `condition` holds of the key's current version (S3's `If-None-Match: *` and
    /// `If-Match: <etag>` on CompleteMultipartUpload), checked in the completion's own
    /// transaction. A refused completion changes nothing: the upload and its parts stay, to be
    /// completed later.
    pub fn complete_multipart_upload_if(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[CompletedPart],
        expected: Option<&ExpectedChecksum>,
        condition: &WriteCondition,
    ) -> Result<ObjectInfo> {
        names::validate_key(key)?;
        if parts.is_empty() {
            return Err(StoreError::NoParts);
        }
        for pair in parts.windows(2) {
            if pair[1].part_number <= pair[0].part_number {
                return Err(StoreError::InvalidPartOrder {
                    previous: pair[0].part_number,
                    next: pair[1].part_number,
                });
            }
        }
        let records = self.inner.listed_parts(bucket, key, upload_id, parts)?;
        let min = self.inner.config.min_part_size;
        for (listed, record) in parts.iter().zip(&records).take(records.len() - 1) {
            if record.size < min {
                return Err(StoreError::EntityTooSmall {
                    part_number: listed.part_number,
                    size: record.size,
                    min,
                });
            }
        }

        // The part files become the object's body as they are: one part is its one file, more are
        // its segments in order. Nothing is copied and nothing new is written or synced (each part
        // was synced when it was acknowledged), so completing a 4 GiB upload costs one metadata
        // commit rather than a second 4 GiB write.
        let size = records.iter().map(|r| r.size).sum();
        let data_id = records[0].data_id;
        let segments = if records.len() > 1 {
            records.iter().map(|r| r.data_id).collect()
        } else {
            Vec::new()
        };

        let txn = self.inner.begin_write()?;
        self.inner.require_bucket_in(&txn, bucket)?;
        // Returning before the commit drops the transaction: the upload is left as it was.
        self.inner
            .check_write_condition(&txn, bucket, key, condition)?;
        let object_key = tables::object_key(bucket, key);
        let upload = {
            let mut uploads = txn.open_table(UPLOADS)?;
            let removed = uploads.remove((object_key.as_slice(), upload_id))?;
            let record = removed.ok_or_else(|| StoreError::NoSuchUpload(upload_id.to_owned()))?;
            meta::decode_upload(record.value())?
        };
        // The object's checksum: the one S3 gives a multipart object created with a checksum
        // algorithm, combined from the parts' checksums; what the client declared of it must be
        // that, or nothing is committed.
        let checksum = upload
            .checksum_algorithm
            .and_then(|(algorithm, kind)| combined_checksum(algorithm, kind, &records));
        if let Some(expected) = expected {
            expected.check(checksum.as_ref(), records.len())?;
        }
        // Every part record of the upload goes, listed or not; the listed ones must still be the
        // versions that were assembled (a concurrent re-upload would have replaced them).
        let mut stored_parts = Vec::new();
        {
            let mut part_table = txn.open_table(PARTS)?;
            for entry in
                part_table.extract_from_if::<(&str, u32), _>(parts_of(upload_id), |_, _| true)?
            {
                let (id, record) = entry?;
                stored_parts.push((id.value().1, meta::decode_part(record.value())?.data_id));
            }
        }
        for (listed, record) in parts.iter().zip(&records) {
            let still_there = stored_parts
                .iter()
                .any(|&(n, id)| n == listed.part_number && id == record.data_id);
            if !still_there {
                return Err(StoreError::InvalidPart {
                    part_number: listed.part_number,
                    etag: listed.etag.clone(),
                });
            }
        }
        let info = ObjectInfo {
            key: key.to_owned(),
            size,
            etag: multipart_etag(records.iter().map(|r| r.etag.as_str())),
            last_modified: SystemTime::now(),
            attributes: upload.attributes,
            checksum,
            parts: records
                .iter()
                .map(|r| {
                    Ok(PartLayout {
                        size: r.size,
                        checksum: r
                            .checksum
                            .as_deref()
                            .map(PartChecksum::from_record)
                            .transpose()?,
                    })
                })
                .collect::<Result<_>>()?,
            data_id,
            segments,
        };
        let mut released = self.inner.put_record(&txn, bucket, &info)?;
        {
            let mut refs = txn.open_table(DATA_REFS)?;
            for &(_, id) in &stored_parts {
                if tables::release_ref(&mut refs, id)? {
                    released.push(id);
                }
            }
        }
        self.inner.commit(txn)?;
        self.inner.fault(super::FaultPoint::MetadataCommitted);
        self.inner.remove_data_files(&released);
        Ok(info)
    }

    /// Aborts an upload and removes its parts.
    pub fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        names::validate_key(key)?;
        let txn = self.inner.begin_write()?;
        self.inner.require_bucket_in(&txn, bucket)?;
        let released = {
            let mut uploads = txn.open_table(UPLOADS)?;
            let object_key = tables::object_key(bucket, key);
            if uploads
                .remove((object_key.as_slice(), upload_id))?
                .is_none()
            {
                return Err(StoreError::NoSuchUpload(upload_id.to_owned()));
            }
            remove_parts(&txn, upload_id)?
        };
        self.inner.commit(txn)?;
        self.inner.remove_data_files(&released);
        Ok(())
    }
}

/// Removes every part record of `upload_id`; returns the data files whose last reference went.
fn remove_parts(txn: &WriteTransaction, upload_id: &str) -> Result<Vec<DataId>> {
    let mut parts = txn.open_table(PARTS)?;
    let mut refs = txn.open_table(DATA_REFS)?;
    let mut released = Vec::new();
    for entry in parts.extract_from_if::<(&str, u32), _>(parts_of(upload_id), |_, _| true)? {
        let (_, record) = entry?;
        let id = meta::decode_part(record.value())?.data_id;
        if tables::release_ref(&mut refs, id)? {
            released.push(id);
        }
    }
    Ok(released)
}

/// Removes every upload of `bucket` and its parts (the bucket is being deleted).
pub(crate) fn remove_bucket_uploads(txn: &WriteTransaction, bucket: &str) -> Result<Vec<DataId>> {
    let (start, end) = tables::prefix_range(bucket, "");
    let mut upload_ids = Vec::new();
    {
        let mut uploads = txn.open_table(UPLOADS)?;
        let range = (
            Bound::Included((start.as_slice(), "")),
            Bound::Excluded((end.as_slice(), "")),
        );
        for entry in uploads.extract_from_if::<(&[u8], &str), _>(range, |_, _| true)? {
            let (id, _) = entry?;
            upload_ids.push(id.value().1.to_owned());
        }
    }
    let mut released = Vec::new();
    for upload_id in &upload_ids {
        released.extend(remove_parts(txn, upload_id)?);
    }
    Ok(released)
}

impl Inner {
    /// The upload record, or `NoSuchBucket` / `NoSuchUpload`.
    fn read_upload(
        &self,
        txn: &redb::ReadTransaction,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<UploadRecord> {
        if txn.open_table(BUCKETS)?.get(bucket)?.is_none() {
            return Err(StoreError::NoSuchBucket(bucket.to_owned()));
        }
        let uploads = txn.open_table(UPLOADS)?;
        let object_key = tables::object_key(bucket, key);
        let record = uploads
            .get((object_key.as_slice(), upload_id))?
            .ok_or_else(|| StoreError::NoSuchUpload(upload_id.to_owned()))?;
        meta::decode_upload(record.value())
    }

    /// The records of the listed parts, checking each exists with the listed ETag.
    fn listed_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        listed: &[CompletedPart],
    ) -> Result<Vec<PartRecord>> {
        let txn = self.db.begin_read()?;
        self.read_upload(&txn, bucket, key, upload_id)?;
        let parts = txn.open_table(PARTS)?;
        let mut records = Vec::with_capacity(listed.len());
        for part in listed {
            let record = parts
                .get((upload_id, part.part_number))?
                .map(|r| meta::decode_part(r.value()))
                .transpose()?
                .filter(|r| same_etag(&r.etag, &part.etag))
                .ok_or_else(|| StoreError::InvalidPart {
                    part_number: part.part_number,
                    etag: part.etag.clone(),
                })?;
            records.push(record);
        }
        Ok(records)
    }

    /// The metadata commit of an uploaded part.
    pub(crate) fn commit_part(
        &self,
        part: &PendingPart,
        size: u64,
        etag: String,
        checksum: Option<String>,
    ) -> Result<PartInfo> {
        let txn = self.begin_write()?;
        self.require_bucket_in(&txn, &part.bucket)?;
        {
            let uploads = txn.open_table(UPLOADS)?;
            let object_key = tables::object_key(&part.bucket, &part.key);
            if uploads
                .get((object_key.as_slice(), part.upload_id.as_str()))?
                .is_none()
            {
                return Err(StoreError::NoSuchUpload(part.upload_id.clone()));
            }
        }
        let record = PartRecord {
            data_id: part.temp.id(),
            size,
            etag,
            last_modified: SystemTime::now(),
            checksum,
        };
        let mut released = Vec::new();
        {
            let mut parts = txn.open_table(PARTS)?;
            let mut refs = txn.open_table(DATA_REFS)?;
            tables::add_ref(&mut refs, record.data_id)?;
            let replaced = parts.insert(
                (part.upload_id.as_str(), part.part_number),
                meta::encode_part(&record).as_slice(),
            )?;
            if let Some(old) = replaced {
                let old_id = meta::decode_part(old.value())?.data_id;
                if tables::release_ref(&mut refs, old_id)? {
                    released.push(old_id);
                }
            }
        }
        self.commit(txn)?;
        self.remove_data_files(&released);
        Ok(PartInfo {
            part_number: part.part_number,
            size: record.size,
            etag: record.etag,
            last_modified: record.last_modified,
            checksum: record.checksum,
        })
    }
}

/// A multipart object's checksum from its parts' checksums, as S3 computes it at completion:
/// FULL_OBJECT is the CRC of the whole object, combined from each part's CRC and size (no pass
/// over the data); COMPOSITE is the checksum of the concatenated part checksums, `<base64>-<parts>`.
/// `None` when a part was sent without a checksum, or for a combination S3 does not define.
/// The whole object's checksum a client declared when completing an upload
/// (`x-amz-checksum-<algorithm>`, and `x-amz-checksum-type` if it said): S3 reads it as the
/// object's, not as the completion request's XML, and refuses the completion if the parts do not
/// combine into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedChecksum {
    /// The algorithm its header named.
    pub algorithm: ChecksumAlgorithm,
    /// The type, if the request named one.
    pub checksum_type: Option<ChecksumType>,
    /// Its base64 value; a composite one with or without its `-<parts>` suffix.
    pub value: String,
}

impl ExpectedChecksum {
    /// Checks it against `combined`, the checksum the completion makes of `parts` parts.
    fn check(&self, combined: Option<&Checksum>, parts: usize) -> Result<()> {
        let Some(combined) = combined else {
            return Err(StoreError::ChecksumNotCheckable(format!(
                "the upload was created without a checksum algorithm; its {} cannot be checked",
                self.algorithm.s3_name()
            )));
        };
        if combined.algorithm != self.algorithm {
            return Err(StoreError::ChecksumNotCheckable(format!(
                "the upload was created with the {} checksum algorithm, not {}",
                combined.algorithm.s3_name(),
                self.algorithm.s3_name()
            )));
        }
        if self
            .checksum_type
            .is_some_and(|kind| kind != combined.checksum_type)
        {
            return Err(StoreError::ChecksumNotCheckable(format!(
                "the upload was created with the {} checksum type",
                combined.checksum_type.s3_name()
            )));
        }
        let value = self.value.trim();
        let suffixed = format!("{value}-{parts}");
        let same = combined.value == value
            || (combined.checksum_type == ChecksumType::Composite && combined.value == suffixed);
        if !same {
            return Err(StoreError::ChecksumMismatch {
                algorithm: self.algorithm.s3_name(),
            });
        }
        Ok(())
    }
}

fn combined_checksum(
    algorithm: ChecksumAlgorithm,
    kind: ChecksumType,
    records: &[PartRecord],
) -> Option<Checksum> {
    use brisk_wire::checksum::{ChecksumValue, CompositeChecksum, FullObjectCrc};
    let part = |r: &PartRecord| ChecksumValue::from_base64(algorithm, r.checksum.as_deref()?).ok();
    let value = match kind {
        ChecksumType::FullObject => {
            let mut whole = FullObjectCrc::new(algorithm).ok()?;
            for r in records {
                whole.push_part(&part(r)?, r.size).ok()?;
            }
            whole.finish().to_base64()
        }
        ChecksumType::Composite => {
            let mut composite = CompositeChecksum::new(algorithm).ok()?;
            for r in records {
                composite.push_part(&part(r)?).ok()?;
            }
            composite.finish().to_string()
        }
    };
    Some(Checksum {
        algorithm,
        checksum_type: kind,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_etag_matches_s3() {
        // MD5 of the binary MD5s of "a" and "b", then "-2" (computed with Python's hashlib).
        let a = "0cc175b9c0f1b6a831c399e269772661";
        let b = "\"92eb5ffee6ae2fec3ad71c777531578f\"";
        assert_eq!(
            multipart_etag([a, b].into_iter()),
            "\"96e024ba2074fe77e8e965ba43a704be-2\""
        );
    }

    #[test]
    fn etags_compare_without_quotes() {
        assert!(same_etag("\"abc\"", "abc"));
        assert!(!same_etag("\"abc\"", "abd"));
    }

    #[test]
    fn part_numbers() {
        assert!(validate_part_number(0).is_err());
        assert!(validate_part_number(1).is_ok());
        assert!(validate_part_number(10_000).is_ok());
        assert!(validate_part_number(10_001).is_err());
    }
}
