//! What the store records per object, per multipart upload and per part, and the compact binary
//! encoding of those records in the metadata database.
//!
//! The encoding is hand-written: a version byte, then fixed-width little-endian integers and
//! length-prefixed strings in a fixed order. The fields a listing needs (size, ETag, last-modified)
//! come first so a listing decodes only them. A typical object record is 60–150 bytes.

use std::ops::Range;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use brisk_wire::checksum::{ChecksumAlgorithm, ChecksumType};
use brisk_wire::object_headers::StandardHeader;

use super::error::{Result, StoreError};
use super::layout::DataId;

/// Version byte of every record; a record with another version is rejected as corrupt rather than
/// misread.
const RECORD_VERSION: u8 = 1;

/// The standard headers and user metadata stored with an object, as the client sent them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectAttributes {
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Content-Encoding`.
    pub content_encoding: Option<String>,
    /// `Content-Disposition`.
    pub content_disposition: Option<String>,
    /// `Content-Language`.
    pub content_language: Option<String>,
    /// `Cache-Control`.
    pub cache_control: Option<String>,
    /// `Expires`, kept as the client's string (S3 returns it verbatim).
    pub expires: Option<String>,
    /// `x-amz-meta-*` headers: names without the `x-amz-meta-` prefix, in the order given.
    pub user_metadata: Vec<(String, String)>,
}

impl ObjectAttributes {
    /// The field that holds `header`.
    pub fn field(&self, header: StandardHeader) -> Option<&str> {
        match header {
            StandardHeader::ContentType => self.content_type.as_deref(),
            StandardHeader::ContentEncoding => self.content_encoding.as_deref(),
            StandardHeader::ContentDisposition => self.content_disposition.as_deref(),
            StandardHeader::ContentLanguage => self.content_language.as_deref(),
            StandardHeader::CacheControl => self.cache_control.as_deref(),
            StandardHeader::Expires => self.expires.as_deref(),
        }
    }

    /// The field that holds `header`, to set.
    pub fn field_mut(&mut self, header: StandardHeader) -> &mut Option<String> {
        match header {
            StandardHeader::ContentType => &mut self.content_type,
            StandardHeader::ContentEncoding => &mut self.content_encoding,
            StandardHeader::ContentDisposition => &mut self.content_disposition,
            StandardHeader::ContentLanguage => &mut self.content_language,
            StandardHeader::CacheControl => &mut self.cache_control,
            StandardHeader::Expires => &mut self.expires,
        }
    }
}

/// An algorithm's code in a record. The codes are the record format's own, not the order of
/// [`ChecksumAlgorithm::ALL`]: records written before keep decoding whatever the wire's enum
/// becomes.
fn algorithm_code(algorithm: ChecksumAlgorithm) -> u8 {
    match algorithm {
        ChecksumAlgorithm::Crc32 => 1,
        ChecksumAlgorithm::Crc32c => 2,
        ChecksumAlgorithm::Crc64Nvme => 3,
        ChecksumAlgorithm::Sha1 => 4,
        ChecksumAlgorithm::Sha256 => 5,
    }
}

fn algorithm_from_code(code: u8) -> Option<ChecksumAlgorithm> {
    Some(match code {
        1 => ChecksumAlgorithm::Crc32,
        2 => ChecksumAlgorithm::Crc32c,
        3 => ChecksumAlgorithm::Crc64Nvme,
        4 => ChecksumAlgorithm::Sha1,
        5 => ChecksumAlgorithm::Sha256,
        _ => return None,
    })
}

/// A checksum as computed by the front end while it streamed the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    /// Which algorithm.
    pub algorithm: ChecksumAlgorithm,
    /// Full object or composite.
    pub checksum_type: ChecksumType,
    /// The base64 value, as S3 sends it in `x-amz-checksum-*`.
    pub value: String,
}

/// One part of a multipart object, as recorded when the upload was completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartLayout {
    /// Size of the part in bytes; offsets follow from the sizes of the parts before it.
    pub size: u64,
    /// The part's own checksum, when the client sent one.
    pub checksum: Option<PartChecksum>,
}

/// A part's checksum as S3 shows it (base64), held inline: every GET decodes the object's record,
/// and with a heap string per part a ranged GET of an object completed from 128 checksummed parts
/// made 129 allocations for its layout alone, most of the server's mallocs per request.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PartChecksum {
    len: u8,
    bytes: [u8; PartChecksum::MAX_LEN],
}

impl PartChecksum {
    /// The longest value: SHA-256's 32 bytes in base64, the longest of S3's checksums.
    pub const MAX_LEN: usize = 44;

    /// The empty value, which a decoder fills in place.
    const EMPTY: Self = Self {
        len: 0,
        bytes: [0; Self::MAX_LEN],
    };

    /// The checksum `base64`; `None` if it is longer than any S3 checksum.
    pub fn new(base64: &str) -> Option<Self> {
        let len = base64.len();
        if len > Self::MAX_LEN {
            return None;
        }
        let mut bytes = [0; Self::MAX_LEN];
        bytes[..len].copy_from_slice(base64.as_bytes());
        Some(Self {
            len: len as u8,
            bytes,
        })
    }

    /// The base64 value.
    pub fn as_str(&self) -> &str {
        // Made from a `&str` and never changed: always UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }

    /// A part's checksum read from a record: one too long to be an S3 checksum means the record
    /// is damaged.
    pub(crate) fn from_record(base64: &str) -> Result<Self> {
        Self::new(base64).ok_or_else(|| {
            StoreError::CorruptMetadata("a part checksum is longer than any S3 checksum")
        })
    }
}

impl std::fmt::Debug for PartChecksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// What the caller of a PUT supplies besides the bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewObject {
    /// The ETag, computed by the front end as it streamed the body (hex MD5, with quotes or without:
    /// the store records it as given).
    pub etag: String,
    /// Standard headers and user metadata.
    pub attributes: ObjectAttributes,
    /// Checksum of the body, if the client asked for one.
    pub checksum: Option<Checksum>,
}

/// Everything the store knows about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// The object's key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// ETag as recorded at commit.
    pub etag: String,
    /// Time of the metadata commit that made this version visible.
    pub last_modified: SystemTime,
    /// Standard headers and user metadata.
    pub attributes: ObjectAttributes,
    /// Checksum of the object, if any.
    pub checksum: Option<Checksum>,
    /// Part layout for objects made by a multipart upload; empty for single PUTs.
    pub parts: Vec<PartLayout>,
    /// The data file of the body, or of its first segment.
    pub(crate) data_id: DataId,
    /// The body's data files in order, one per part, for an object completed from several parts
    /// (the part files themselves: completion copies nothing); empty when `data_id` holds it all.
    pub(crate) segments: Vec<DataId>,
}

impl ObjectInfo {
    /// Every data file the body is made of, in order.
    pub(crate) fn data_ids(&self) -> &[DataId] {
        if self.segments.is_empty() {
            std::slice::from_ref(&self.data_id)
        } else {
            &self.segments
        }
    }

    /// The sizes of the body's data files, in the order of [`ObjectInfo::data_ids`].
    pub(crate) fn segment_sizes(&self) -> impl Iterator<Item = u64> + '_ {
        let (whole, parts) = if self.segments.is_empty() {
            (Some(self.size), &[][..])
        } else {
            (None, &self.parts[..])
        };
        whole.into_iter().chain(parts.iter().map(|p| p.size))
    }

    /// Number of parts (`x-amz-mp-parts-count`), 0 for objects made by a single PUT.
    pub fn parts_count(&self) -> usize {
        self.parts.len()
    }

    /// Byte range of part `part_number` (1-based) for `GetObject?partNumber=N`. A single-PUT object
    /// has one part, the whole object, as S3 treats it.
    pub fn part_range(&self, part_number: u32) -> Option<Range<u64>> {
        let index = usize::try_from(part_number).ok()?.checked_sub(1)?;
        if self.parts.is_empty() {
            return (index == 0).then_some(0..self.size);
        }
        let part = self.parts.get(index)?;
        let start: u64 = self.parts[..index].iter().map(|p| p.size).sum();
        Some(start..start + part.size)
    }
}

/// The fields a listing shows per key, decoded from the front of an object record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectSummary {
    /// The object's key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// ETag as recorded at commit.
    pub etag: String,
    /// Time of the commit.
    pub last_modified: SystemTime,
}

/// Record of a multipart upload in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UploadRecord {
    pub initiated: SystemTime,
    pub attributes: ObjectAttributes,
    pub checksum_algorithm: Option<(ChecksumAlgorithm, ChecksumType)>,
}

/// Record of one uploaded part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartRecord {
    pub data_id: DataId,
    pub size: u64,
    pub etag: String,
    pub last_modified: SystemTime,
    pub checksum: Option<String>,
}

pub(crate) fn encode_object(info: &ObjectInfo) -> Vec<u8> {
    let mut w = Writer::with_capacity(64 + info.etag.len());
    w.u8(RECORD_VERSION);
    w.u64(info.size);
    w.str(&info.etag);
    w.time(info.last_modified);
    w.u128(info.data_id.0);
    w.attributes(&info.attributes);
    w.checksum(info.checksum.as_ref());
    w.u32(info.parts.len() as u32);
    for part in &info.parts {
        w.u64(part.size);
        w.opt_str(part.checksum.as_ref().map(PartChecksum::as_str));
    }
    // Appended last, and only for segmented bodies, so records written before segments existed
    // (which end after the parts) still decode.
    if !info.segments.is_empty() {
        w.u32(info.segments.len() as u32);
        for id in &info.segments {
            w.u128(id.0);
        }
    }
    w.0
}

pub(crate) fn decode_object(key: &str, bytes: &[u8]) -> Result<ObjectInfo> {
    let mut r = Reader::new(bytes)?;
    let size = r.u64()?;
    let etag = r.string()?;
    let last_modified = r.time()?;
    let data_id = DataId(r.u128()?);
    let attributes = r.attributes()?;
    let checksum = r.checksum()?;
    let count = r.u32()? as usize;
    let mut parts = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let size = r.u64()?;
        match r.part_checksum()? {
            None => parts.push(PartLayout {
                size,
                checksum: None,
            }),
            // Zeroed in the vector and the bytes copied there: a checksum assembled on the stack
            // and then moved in was read back, in wide loads, from narrower stores just made,
            // which stalled the loop on every part (most of the decoder's time).
            Some(bytes) => {
                parts.push(PartLayout {
                    size,
                    checksum: Some(PartChecksum::EMPTY),
                });
                if let Some(PartLayout {
                    checksum: Some(inline),
                    ..
                }) = parts.last_mut()
                {
                    inline.bytes[..bytes.len()].copy_from_slice(bytes);
                    inline.len = bytes.len() as u8;
                }
            }
        }
    }
    let mut segments = Vec::new();
    if !r.0.is_empty() {
        let count = r.u32()? as usize;
        if count != parts.len() {
            return Err(StoreError::CorruptMetadata(
                "segment count differs from part count",
            ));
        }
        segments.reserve(count);
        for _ in 0..count {
            segments.push(DataId(r.u128()?));
        }
    }
    r.finish()?;
    Ok(ObjectInfo {
        key: key.to_owned(),
        size,
        etag,
        last_modified,
        attributes,
        checksum,
        parts,
        data_id,
        segments,
    })
}

/// Decodes only the listing fields and the data id at the front of an object record.
pub(crate) fn decode_summary(key: &str, bytes: &[u8]) -> Result<(ObjectSummary, DataId)> {
    let mut r = Reader::new(bytes)?;
    let size = r.u64()?;
    let etag = r.string()?;
    let last_modified = r.time()?;
    let data_id = DataId(r.u128()?);
    Ok((
        ObjectSummary {
            key: key.to_owned(),
            size,
            etag,
            last_modified,
        },
        data_id,
    ))
}

pub(crate) fn encode_upload(upload: &UploadRecord) -> Vec<u8> {
    let mut w = Writer::with_capacity(64);
    w.u8(RECORD_VERSION);
    w.time(upload.initiated);
    w.attributes(&upload.attributes);
    match upload.checksum_algorithm {
        None => w.u8(0),
        Some((algorithm, kind)) => {
            w.u8(algorithm_code(algorithm));
            w.u8(kind_code(kind));
        }
    }
    w.0
}

pub(crate) fn decode_upload(bytes: &[u8]) -> Result<UploadRecord> {
    let mut r = Reader::new(bytes)?;
    let initiated = r.time()?;
    let attributes = r.attributes()?;
    let checksum_algorithm = match r.u8()? {
        0 => None,
        code => Some((
            algorithm_from_code(code).ok_or(CORRUPT_CHECKSUM)?,
            kind_from_code(r.u8()?)?,
        )),
    };
    r.finish()?;
    Ok(UploadRecord {
        initiated,
        attributes,
        checksum_algorithm,
    })
}

pub(crate) fn encode_part(part: &PartRecord) -> Vec<u8> {
    let mut w = Writer::with_capacity(64);
    w.u8(RECORD_VERSION);
    w.u128(part.data_id.0);
    w.u64(part.size);
    w.str(&part.etag);
    w.time(part.last_modified);
    w.opt_str(part.checksum.as_deref());
    w.0
}

pub(crate) fn decode_part(bytes: &[u8]) -> Result<PartRecord> {
    let mut r = Reader::new(bytes)?;
    let part = PartRecord {
        data_id: DataId(r.u128()?),
        size: r.u64()?,
        etag: r.string()?,
        last_modified: r.time()?,
        checksum: r.opt_string()?,
    };
    r.finish()?;
    Ok(part)
}

const CORRUPT_CHECKSUM: StoreError = StoreError::CorruptMetadata("unknown checksum algorithm");

fn kind_code(kind: ChecksumType) -> u8 {
    match kind {
        ChecksumType::FullObject => 1,
        ChecksumType::Composite => 2,
    }
}

fn kind_from_code(code: u8) -> Result<ChecksumType> {
    match code {
        1 => Ok(ChecksumType::FullObject),
        2 => Ok(ChecksumType::Composite),
        _ => Err(StoreError::CorruptMetadata("unknown checksum type")),
    }
}

/// Nanoseconds since the Unix epoch; times before 1970 are stored as the epoch.
fn time_to_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

pub(crate) fn nanos_to_time(nanos: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(nanos)
}

pub(crate) fn encode_time(t: SystemTime) -> u64 {
    time_to_nanos(t)
}

struct Writer(Vec<u8>);

impl Writer {
    fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u128(&mut self, v: u128) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn time(&mut self, t: SystemTime) {
        self.u64(time_to_nanos(t));
    }
    fn str(&mut self, s: &str) {
        // Every string the store keeps is bounded well below 4 GiB by the HTTP header limits.
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    fn attributes(&mut self, a: &ObjectAttributes) {
        for field in [
            &a.content_type,
            &a.content_encoding,
            &a.content_disposition,
            &a.content_language,
            &a.cache_control,
            &a.expires,
        ] {
            self.opt_str(field.as_deref());
        }
        self.u32(a.user_metadata.len() as u32);
        for (name, value) in &a.user_metadata {
            self.str(name);
            self.str(value);
        }
    }
    fn checksum(&mut self, c: Option<&Checksum>) {
        match c {
            None => self.u8(0),
            Some(c) => {
                self.u8(algorithm_code(c.algorithm));
                self.u8(kind_code(c.checksum_type));
                self.str(&c.value);
            }
        }
    }
}

struct Reader<'a>(&'a [u8]);

const TRUNCATED: StoreError = StoreError::CorruptMetadata("record is truncated");

/// Record bytes as text.
fn text(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|_| StoreError::CorruptMetadata("string is not UTF-8"))
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Result<Self> {
        match bytes.split_first() {
            Some((&RECORD_VERSION, rest)) => Ok(Self(rest)),
            Some(_) => Err(StoreError::CorruptMetadata("unknown record version")),
            None => Err(TRUNCATED),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(TRUNCATED);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("take returned N bytes"))
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn u128(&mut self) -> Result<u128> {
        Ok(u128::from_le_bytes(self.array()?))
    }
    fn time(&mut self) -> Result<SystemTime> {
        Ok(nanos_to_time(self.u64()?))
    }
    fn string(&mut self) -> Result<String> {
        self.str().map(str::to_owned)
    }
    /// Length-prefixed bytes borrowed from the record, without a copy.
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }
    /// A string borrowed from the record, without a copy.
    fn str(&mut self) -> Result<&'a str> {
        text(self.bytes()?)
    }
    fn opt_string(&mut self) -> Result<Option<String>> {
        Ok(self.opt_str()?.map(str::to_owned))
    }
    /// Optional bytes: a tag (0 none, 1 some), then the bytes.
    fn opt_bytes(&mut self) -> Result<Option<&'a [u8]>> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.bytes().map(Some),
            _ => Err(StoreError::CorruptMetadata("bad option tag")),
        }
    }
    fn opt_str(&mut self) -> Result<Option<&'a str>> {
        self.opt_bytes()?.map(text).transpose()
    }
    /// A part's optional checksum, borrowed from the record. Every GET decodes every part of the
    /// object's record, so this is the decoder's inner loop: base64 is checked as ASCII (all a
    /// `&str` needs) rather than parsed as UTF-8, and no error is made unless one is returned.
    fn part_checksum(&mut self) -> Result<Option<&'a [u8]>> {
        let bytes = self.opt_bytes()?;
        match bytes {
            Some(b) if b.len() > PartChecksum::MAX_LEN => Err(StoreError::CorruptMetadata(
                "a part checksum is longer than any S3 checksum",
            )),
            Some(b) if !b.is_ascii() => Err(StoreError::CorruptMetadata(
                "a part checksum is not base64 text",
            )),
            _ => Ok(bytes),
        }
    }
    fn attributes(&mut self) -> Result<ObjectAttributes> {
        let mut a = ObjectAttributes {
            content_type: self.opt_string()?,
            content_encoding: self.opt_string()?,
            content_disposition: self.opt_string()?,
            content_language: self.opt_string()?,
            cache_control: self.opt_string()?,
            expires: self.opt_string()?,
            user_metadata: Vec::new(),
        };
        let count = self.u32()? as usize;
        // Each pair takes at least 8 bytes, so a corrupt count cannot make us reserve more than the
        // record could hold.
        a.user_metadata.reserve(count.min(self.0.len() / 8));
        for _ in 0..count {
            a.user_metadata.push((self.string()?, self.string()?));
        }
        Ok(a)
    }
    fn checksum(&mut self) -> Result<Option<Checksum>> {
        match self.u8()? {
            0 => Ok(None),
            code => Ok(Some(Checksum {
                algorithm: algorithm_from_code(code).ok_or(CORRUPT_CHECKSUM)?,
                checksum_type: kind_from_code(self.u8()?)?,
                value: self.string()?,
            })),
        }
    }
    fn finish(&self) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(StoreError::CorruptMetadata("trailing bytes after record"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ObjectInfo {
        ObjectInfo {
            key: "k".into(),
            size: 12_345,
            etag: "\"0123456789abcdef0123456789abcdef-3\"".into(),
            last_modified: nanos_to_time(1_700_000_000_123_456_789),
            attributes: ObjectAttributes {
                content_type: Some("text/plain".into()),
                content_encoding: None,
                content_disposition: Some("attachment; filename=\"a b\"".into()),
                content_language: Some("en".into()),
                cache_control: Some("no-cache".into()),
                expires: Some("Wed, 21 Oct 2015 07:28:00 GMT".into()),
                user_metadata: vec![("color".into(), "blue".into()), ("é".into(), "".into())],
            },
            checksum: Some(Checksum {
                algorithm: ChecksumAlgorithm::Crc64Nvme,
                checksum_type: ChecksumType::Composite,
                value: "AAAAAAAAAAA=".into(),
            }),
            parts: vec![
                PartLayout {
                    size: 5,
                    checksum: PartChecksum::new("x"),
                },
                PartLayout {
                    size: 7,
                    checksum: None,
                },
            ],
            data_id: DataId(0xdead_beef_u128 << 64 | 42),
            segments: Vec::new(),
        }
    }

    #[test]
    fn part_checksums_are_held_inline_up_to_sha256s_length() {
        let sha256 = "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=";
        assert_eq!(sha256.len(), PartChecksum::MAX_LEN);
        assert_eq!(PartChecksum::new(sha256).unwrap().as_str(), sha256);
        assert_eq!(PartChecksum::new("AAAAAA==").unwrap().as_str(), "AAAAAA==");
        assert!(PartChecksum::new(&format!("{sha256}=")).is_none());
        let record = |checksum: &[u8]| {
            let mut w = Writer::with_capacity(64);
            w.u8(RECORD_VERSION);
            w.u64(1);
            w.str("etag");
            w.time(SystemTime::UNIX_EPOCH);
            w.u128(7);
            w.attributes(&ObjectAttributes::default());
            w.checksum(None);
            w.u32(2);
            w.u64(1);
            w.u8(1);
            w.u32(checksum.len() as u32);
            w.0.extend_from_slice(checksum);
            w.u64(2);
            w.opt_str(Some("AAAAAA=="));
            w.0
        };
        // Filled in place, each part its own bytes whatever the length of the one before.
        let info = decode_object("k", &record(sha256.as_bytes())).unwrap();
        let checksums: Vec<_> = info
            .parts
            .iter()
            .map(|p| p.checksum.as_ref().map(PartChecksum::as_str))
            .collect();
        assert_eq!(checksums, [Some(sha256), Some("AAAAAA==")]);
        // A record whose part checksum is longer than any S3 checksum, or not text, is damaged,
        // not truncated.
        for damaged in [
            "A".repeat(45).as_bytes(),
            b"AAA\xffAA==",
            "AAAé==".as_bytes(),
        ] {
            assert!(matches!(
                decode_object("k", &record(damaged)),
                Err(StoreError::CorruptMetadata(_))
            ));
        }
    }

    /// Records as the store has written them since version 1, laid out byte by byte here rather
    /// than by the encoder: a change of the checksum enums or of the encoder that would misread
    /// the records already on disk fails this test.
    #[test]
    fn records_written_before_still_decode() {
        let mut object = vec![RECORD_VERSION];
        let put_str = |b: &mut Vec<u8>, s: &str| {
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        };
        object.extend_from_slice(&12_345_u64.to_le_bytes());
        put_str(&mut object, "\"etag-2\"");
        object.extend_from_slice(&1_700_000_000_123_456_789_u64.to_le_bytes());
        object.extend_from_slice(&42_u128.to_le_bytes());
        // Content-Type, -Encoding, -Disposition, -Language, Cache-Control, Expires.
        let attributes = |b: &mut Vec<u8>| {
            for field in [
                Some("text/plain"),
                None,
                None,
                Some("en"),
                None,
                Some("never"),
            ] {
                match field {
                    None => b.push(0),
                    Some(v) => {
                        b.push(1);
                        put_str(b, v);
                    }
                }
            }
            b.extend_from_slice(&1_u32.to_le_bytes());
            put_str(b, "color");
            put_str(b, "blue");
        };
        attributes(&mut object);
        // CRC64NVME (3), composite (2), then the value.
        object.extend_from_slice(&[3, 2]);
        put_str(&mut object, "AAAAAAAAAAA=-2");
        object.extend_from_slice(&2_u32.to_le_bytes());
        object.extend_from_slice(&5_u64.to_le_bytes());
        object.push(1);
        put_str(&mut object, "AAAAAAAAAAA=");
        object.extend_from_slice(&7_u64.to_le_bytes());
        object.push(0);
        let info = decode_object("k", &object).unwrap();
        assert_eq!(info.size, 12_345);
        assert_eq!(info.etag, "\"etag-2\"");
        assert_eq!(info.data_id, DataId(42));
        assert_eq!(
            info.attributes,
            ObjectAttributes {
                content_type: Some("text/plain".into()),
                content_language: Some("en".into()),
                expires: Some("never".into()),
                user_metadata: vec![("color".into(), "blue".into())],
                ..ObjectAttributes::default()
            }
        );
        assert_eq!(
            info.checksum,
            Some(Checksum {
                algorithm: ChecksumAlgorithm::Crc64Nvme,
                checksum_type: ChecksumType::Composite,
                value: "AAAAAAAAAAA=-2".into(),
            })
        );
        assert_eq!(info.parts.len(), 2);
        assert_eq!(encode_object(&info), object);

        for (code, algorithm) in [
            (1, ChecksumAlgorithm::Crc32),
            (2, ChecksumAlgorithm::Crc32c),
            (3, ChecksumAlgorithm::Crc64Nvme),
            (4, ChecksumAlgorithm::Sha1),
            (5, ChecksumAlgorithm::Sha256),
        ] {
            for (kind_code, kind) in [(1, ChecksumType::FullObject), (2, ChecksumType::Composite)] {
                let mut upload = vec![RECORD_VERSION];
                upload.extend_from_slice(&5_u64.to_le_bytes());
                attributes(&mut upload);
                upload.extend_from_slice(&[code, kind_code]);
                let record = decode_upload(&upload).unwrap();
                assert_eq!(record.checksum_algorithm, Some((algorithm, kind)));
                assert_eq!(encode_upload(&record), upload);
            }
        }
    }

    #[test]
    fn object_record_round_trips() {
        let info = sample();
        let bytes = encode_object(&info);
        assert_eq!(decode_object("k", &bytes).unwrap(), info);
        let (summary, id) = decode_summary("k", &bytes).unwrap();
        assert_eq!(summary.size, info.size);
        assert_eq!(summary.etag, info.etag);
        assert_eq!(summary.last_modified, info.last_modified);
        assert_eq!(id, info.data_id);
    }

    #[test]
    fn segmented_records_round_trip_and_plain_ones_decode_as_before() {
        let mut info = sample();
        info.segments = vec![DataId(42), DataId(43)];
        let bytes = encode_object(&info);
        assert_eq!(decode_object("k", &bytes).unwrap(), info);
        assert_eq!(info.data_ids(), [DataId(42), DataId(43)]);
        assert_eq!(info.segment_sizes().collect::<Vec<_>>(), [5, 7]);
        // A record without the segment section is one file, as records were before segments.
        let plain = encode_object(&sample());
        assert!(bytes.starts_with(&plain));
        let decoded = decode_object("k", &plain).unwrap();
        assert_eq!(decoded.data_ids(), [decoded.data_id]);
        assert_eq!(decoded.segment_sizes().collect::<Vec<_>>(), [decoded.size]);
        for len in plain.len()..bytes.len() {
            assert!(decode_object("k", &bytes[..len]).is_err() || len == plain.len());
        }
        // A segment count that does not match the parts is corrupt.
        info.segments.pop();
        assert!(decode_object("k", &encode_object(&info)).is_err());
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = encode_object(&sample());
        for len in 0..bytes.len() {
            assert!(decode_object("k", &bytes[..len]).is_err(), "length {len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_object("k", &longer).is_err());
        let mut other_version = bytes;
        other_version[0] = 99;
        assert!(decode_object("k", &other_version).is_err());
    }

    #[test]
    fn upload_and_part_records_round_trip() {
        let upload = UploadRecord {
            initiated: nanos_to_time(5),
            attributes: sample().attributes,
            checksum_algorithm: Some((ChecksumAlgorithm::Sha256, ChecksumType::FullObject)),
        };
        assert_eq!(decode_upload(&encode_upload(&upload)).unwrap(), upload);
        let part = PartRecord {
            data_id: DataId(7),
            size: 5 << 20,
            etag: "\"abc\"".into(),
            last_modified: nanos_to_time(9),
            checksum: Some("q==".into()),
        };
        assert_eq!(decode_part(&encode_part(&part)).unwrap(), part);
    }

    #[test]
    fn part_ranges() {
        let mut info = sample();
        assert_eq!(info.part_range(0), None);
        assert_eq!(info.part_range(1), Some(0..5));
        assert_eq!(info.part_range(2), Some(5..12));
        assert_eq!(info.part_range(3), None);
        info.parts.clear();
        assert_eq!(info.part_range(1), Some(0..info.size));
        assert_eq!(info.part_range(2), None);
    }
}
