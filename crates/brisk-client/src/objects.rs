//! Object operations: HEAD, whole-object and ranged GETs (with resumption), PUT, DELETE and
//! DeleteObjects, and the types they take and return ([`ObjectMeta`], [`PutOptions`],
//! [`PutResult`], [`PayloadSigning`]). Each builds its request and sends it through the request
//! engine ([`crate::client`]); what is here is what to ask for and where the body goes.
//!
//! # Memory on the data path
//!
//! - [`Client::get_bytes`] reads the response head, takes exactly `Content-Length` bytes from the
//!   memory budget, allocates them once ([`ExactBuf`]: from 1 MiB up an anonymous mapping populated
//!   before the body arrives, so the socket's copy takes no page faults) and reads the body from the
//!   socket straight into them: one buffer per object whatever its size, no intermediate buffer,
//!   nothing grown by doubling.
//! - [`Client::get_into`] and [`Client::get_range_into`] read into the caller's slice: the body path
//!   allocates nothing. When the caller's slice is at least as large as the connection's read buffer
//!   (64 KiB by default) the socket is read straight into it.
//! - [`Client::put`] writes the head and the caller's slice in one vectored write: the payload is not
//!   copied.
//!
//! What does allocate is per request, not per byte: the signed head (a few hundred bytes of strings),
//! and an error body when the server refuses.
//!
//! # Resumed reads
//!
//! A request that fails before its body is read is retried by the engine, as
//! [`RetryPolicy`](crate::RetryPolicy) says. A GET whose connection fails in the middle of the body
//! is *resumed*: a ranged GET for the bytes still missing, pinned to the first response's ETag with
//! `If-Match`, so the bytes already read and the bytes still to come belong to the same version of
//! the object. If the object changed in between, the read fails with [`Error::ObjectChanged`]
//! instead of mixing two versions.

use std::time::SystemTime;

use brisk_mem::{BudgetError, ExactBuf};
use brisk_wire::checksum::{
    BlockCrcs, ChecksumAlgorithm, ChecksumValue, Checksummer, CompositeChecksum, MultipartChecksum,
};
use brisk_wire::object_headers::StandardHeader;
use brisk_wire::xml::DeleteResult;

use crate::client::{Client, Response, body_length, whole_object_get};
use crate::config::Scheme;
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::integrity::{
    CHECKSUM_MODE_HEADER, UploadChecksum, checksum_matches, stored_checksum, verify, verify_md5,
};
use crate::part_sums::PartSums;
use crate::request::{RequestSpec, check_bucket, check_key, push_query};
use crate::retry::{RetryContext, RetryDecision};

pub use crate::request::DELETE_BATCH;

/// The checksum an object is stored with, as its HEAD told it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StoredChecksum {
    /// A full-object checksum (any algorithm).
    pub(crate) full: Option<ChecksumValue>,
    /// A composite checksum of the parts, of a CRC algorithm.
    pub(crate) composite: Option<MultipartChecksum>,
    /// The algorithm of whatever checksum header came back, checkable or not.
    pub(crate) any: Option<ChecksumAlgorithm>,
    /// The MD5 an Azure blob is stored with (`Content-MD5`).
    pub(crate) blob_md5: Option<brisk_wire::checksum::Md5Digest>,
}

/// What HEAD says about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Size in bytes.
    pub content_length: u64,
    /// The ETag, with its quotes, as the server sent it.
    pub etag: Option<String>,
    /// `Last-Modified`.
    pub last_modified: Option<SystemTime>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Cache-Control`, `Content-Disposition`, `Content-Encoding`, `Content-Language` and
    /// `Expires`, as stored ([`ObjectHeaders`]; its `metadata` is empty: see `metadata` below).
    pub headers: ObjectHeaders,
    /// `x-amz-checksum-crc32c`, when the object was stored with one (and the server returns it).
    pub checksum_crc32c: Option<String>,
    /// User metadata (`x-amz-meta-<name>` headers) as (name without the prefix, lower-case; value),
    /// in the order the server sent them.
    pub metadata: Vec<(String, String)>,
}

/// An object's HEAD as a download needs it ([`Client::head_for_download`]): what
/// [`Client::head`] says, and the checksum the object is stored with. Given back in
/// [`TransferOptions::known_head`](crate::TransferOptions::known_head), it spares
/// [`Client::download`] a HEAD of its own (the ranges are still pinned to its ETag, so an object
/// replaced in between fails with [`Error::ObjectChanged`] rather than mixing versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadHead {
    pub(crate) meta: ObjectMeta,
    pub(crate) stored: StoredChecksum,
    pub(crate) bucket: String,
    pub(crate) key: String,
}

impl DownloadHead {
    /// What [`Client::head`] would have said.
    pub fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
}

/// How a PUT's payload is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PayloadSigning {
    /// Signed over plain HTTP (where nothing else protects the payload), unsigned with a checksum over
    /// TLS (which already does).
    #[default]
    Auto,
    /// The payload's SHA-256 is signed: one more pass over the data (about 1.4 GiB/s).
    Signed,
    /// `UNSIGNED-PAYLOAD`: integrity from the CRC32C checksum header alone.
    Unsigned,
}

/// What an upload stores with an object besides its bytes and its `Content-Type` (a field of its
/// own in [`PutOptions`] and [`TransferOptions`](crate::TransferOptions)): the headers a GET of the
/// object gives back, and its user metadata. S3 takes them on the PUT or the CreateMultipartUpload;
/// Azure as `x-ms-blob-*` and `x-ms-meta-*` on Put Blob or Put Block List.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectHeaders {
    /// `Cache-Control`.
    pub cache_control: Option<String>,
    /// `Content-Disposition`.
    pub content_disposition: Option<String>,
    /// `Content-Encoding` (e.g. `gzip` for bytes stored compressed).
    pub content_encoding: Option<String>,
    /// `Content-Language`.
    pub content_language: Option<String>,
    /// `Expires` (an HTTP date).
    pub expires: Option<String>,
    /// User metadata as (name, value): `x-amz-meta-<name>` (Azure: `x-ms-meta-<name>`).
    pub metadata: Vec<(String, String)>,
}

/// The order an upload sends the standard headers in, as it always has (the table's order is
/// the one brisk serve answers in).
const SENT_ORDER: [StandardHeader; 6] = [
    StandardHeader::ContentType,
    StandardHeader::CacheControl,
    StandardHeader::ContentDisposition,
    StandardHeader::ContentEncoding,
    StandardHeader::ContentLanguage,
    StandardHeader::Expires,
];

impl ObjectHeaders {
    /// The field that holds `header`; `None` for `Content-Type`, which an upload takes in a field
    /// of its own ([`PutOptions::content_type`]).
    pub fn field_mut(&mut self, header: StandardHeader) -> Option<&mut Option<String>> {
        match header {
            StandardHeader::ContentType => None,
            StandardHeader::ContentEncoding => Some(&mut self.content_encoding),
            StandardHeader::ContentDisposition => Some(&mut self.content_disposition),
            StandardHeader::ContentLanguage => Some(&mut self.content_language),
            StandardHeader::CacheControl => Some(&mut self.cache_control),
            StandardHeader::Expires => Some(&mut self.expires),
        }
    }

    /// The value of `header`, `content_type` for `Content-Type`.
    fn value<'s>(
        &'s self,
        header: StandardHeader,
        content_type: Option<&'s str>,
    ) -> Option<&'s str> {
        match header {
            StandardHeader::ContentType => content_type,
            StandardHeader::ContentEncoding => self.content_encoding.as_deref(),
            StandardHeader::ContentDisposition => self.content_disposition.as_deref(),
            StandardHeader::ContentLanguage => self.content_language.as_deref(),
            StandardHeader::CacheControl => self.cache_control.as_deref(),
            StandardHeader::Expires => self.expires.as_deref(),
        }
    }

    /// The standard headers (not the user metadata) a response carries.
    fn from_response(response: &Response) -> Self {
        let mut headers = Self::default();
        for header in StandardHeader::ALL {
            if let Some(field) = headers.field_mut(header) {
                *field = response.header(header.name()).map(str::to_owned);
            }
        }
        headers
    }

    /// `spec` with `content_type` and these headers, named for S3 or for Azure.
    pub(crate) fn add_to<'a>(
        &self,
        mut spec: RequestSpec<'a>,
        content_type: Option<&str>,
        azure: bool,
    ) -> RequestSpec<'a> {
        for header in SENT_ORDER {
            // Azure keeps no Expires of its own.
            let name = if azure {
                header.azure_name()
            } else {
                Some(header.name())
            };
            if let (Some(name), Some(value)) = (name, self.value(header, content_type)) {
                spec = spec.header_joined(name, value);
            }
        }
        let prefix = if azure { "x-ms-meta-" } else { "x-amz-meta-" };
        for (name, value) in &self.metadata {
            spec = spec.header_named(
                format!("{prefix}{}", name.to_ascii_lowercase()),
                value.clone(),
            );
        }
        spec
    }
}

/// Options of [`Client::put_with`].
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    /// `Content-Type` stored with the object.
    pub content_type: Option<String>,
    /// The other headers and the user metadata stored with the object.
    pub headers: ObjectHeaders,
    /// How the payload is protected. A checksum header (`checksum`) is always sent, and the server
    /// checks it.
    pub payload_signing: PayloadSigning,
    /// The checksum sent with the body (CRC32C unless chosen otherwise).
    pub checksum: UploadChecksum,
    /// Write only if no object exists under the key (`If-None-Match: *`).
    pub if_none_match_any: bool,
}

/// What a PUT returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// The new object's ETag.
    pub etag: Option<String>,
    /// The CRC32C that was sent (base64), which the server verified; empty when `checksum_algorithm`
    /// is another algorithm.
    pub checksum_crc32c: String,
    /// The algorithm of `checksum`.
    pub checksum_algorithm: UploadChecksum,
    /// The checksum that was sent (base64), which the server verified.
    pub checksum: String,
}

impl Client {
    /// Whether a payload is signed under `signing` on this client's endpoint.
    pub(crate) fn signs_payload(&self, signing: PayloadSigning) -> bool {
        match signing {
            PayloadSigning::Signed => true,
            PayloadSigning::Unsigned => false,
            PayloadSigning::Auto => self.config().endpoint.scheme == Scheme::Http,
        }
    }

    /// Metadata of `bucket`/`key` (HEAD, asking for the stored checksum).
    pub async fn head(&self, bucket: &str, key: &str) -> Result<ObjectMeta> {
        Ok(self.head_with_checksum(bucket, key).await?.0)
    }

    /// HEAD of `bucket`/`key` for a download that follows: [`head`](Self::head)'s answer and the
    /// stored checksum, to hand to [`download`](Self::download) in
    /// [`TransferOptions::known_head`](crate::TransferOptions::known_head) (one HEAD, not two,
    /// when the caller needs the object's size before it downloads).
    pub async fn head_for_download(&self, bucket: &str, key: &str) -> Result<DownloadHead> {
        let (meta, stored) = self.head_with_checksum(bucket, key).await?;
        Ok(DownloadHead {
            meta,
            stored,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// [`head`](Self::head), with the object's stored checksum: full-object, or composite (per
    /// part, of a CRC algorithm: see [`crate::integrity`]).
    pub(crate) async fn head_with_checksum(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(ObjectMeta, StoredChecksum)> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self
            .send(
                &RequestSpec::new("HEAD", Some(bucket), Some(key))
                    .header(CHECKSUM_MODE_HEADER, "ENABLED"),
            )
            .await?;
        let checksum = StoredChecksum {
            blob_md5: self.dialect().stored_blob_md5(response.head()),
            full: stored_checksum(response.head()),
            composite: crate::integrity::stored_composite(response.head()),
            any: ChecksumAlgorithm::ALL
                .into_iter()
                .find(|a| response.header(a.header_name()).is_some()),
        };
        let meta = ObjectMeta {
            content_length: response
                .head()
                .content_length()?
                .ok_or(Error::UnknownLength)?,
            etag: response.header("etag").map(str::to_owned),
            last_modified: response
                .header("last-modified")
                .and_then(|v| httpdate::parse_http_date(v).ok()),
            content_type: response.header("content-type").map(str::to_owned),
            headers: ObjectHeaders::from_response(&response),
            checksum_crc32c: response.header("x-amz-checksum-crc32c").map(str::to_owned),
            metadata: response
                .head()
                .headers()
                .iter()
                .filter_map(|(name, value)| {
                    let prefix = self.dialect().metadata_prefix();
                    name.get(..prefix.len())?
                        .eq_ignore_ascii_case(prefix)
                        .then(|| {
                            (
                                name[prefix.len()..].to_ascii_lowercase(),
                                String::from_utf8_lossy(value).into_owned(),
                            )
                        })
                })
                .collect(),
        };
        response.release();
        Ok((meta, checksum))
    }

    /// The size of part 1 of a multipart object and its part count (HEAD `?partNumber=1`, pinned
    /// to `etag`): how a downloader finds the part boundaries a composite checksum was made on.
    /// `None` for an object the server does not describe as multipart. Asked once per version of
    /// the object: the answer is kept (`part_layouts`).
    pub(crate) async fn first_part_layout(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
    ) -> Result<Option<(u64, u32)>> {
        if let Some(layout) = self.part_layouts().get(bucket, key, etag) {
            return Ok(layout);
        }
        let mut spec = RequestSpec::new("HEAD", Some(bucket), Some(key)).header("if-match", etag);
        push_query(&mut spec.query, "partNumber", "1");
        let response = self.send(&spec).await?;
        let length = response.head().content_length()?;
        let parts = response
            .header("x-amz-mp-parts-count")
            .and_then(|v| v.trim().parse::<u32>().ok());
        response.release();
        let layout = length.zip(parts);
        self.part_layouts().insert(bucket, key, etag, layout);
        Ok(layout)
    }

    /// Checks a whole object read into memory against its composite CRC: the parts' boundaries
    /// from `layout` ([`first_part_layout`](Self::first_part_layout)), each part's CRC, the
    /// composite over the parts' CRCs. Parts of unequal size cannot be told apart and are not
    /// checked (a `debug` event says so).
    fn verify_composite(
        bucket: &str,
        key: &str,
        layout: Option<(u64, u32)>,
        expected: &MultipartChecksum,
        data: &[u8],
        sums: Option<&BlockCrcs>,
    ) -> Result<()> {
        let Some(part_size) = layout
            .filter(|&(p, n)| {
                n == expected.parts && p > 0 && (data.len() as u64).div_ceil(p) == u64::from(n)
            })
            .map(|(p, _)| p as usize)
        else {
            tracing::debug!(
                bucket,
                key,
                ?layout,
                parts = expected.parts,
                "the object's parts are not of equal size; its composite checksum is not checked"
            );
            return Ok(());
        };
        let algorithm = expected.value.algorithm();
        let mut composite =
            CompositeChecksum::new(algorithm).map_err(|e| Error::UnexpectedResponse {
                what: format!("composite checksum of {bucket}/{key}: {e}"),
            })?;
        // The parts' CRCs from the blocks taken as the body arrived, where the part size is a
        // whole number of blocks; else a pass over the bytes.
        match sums
            .filter(|s| s.algorithm() == algorithm)
            .and_then(|s| s.parts(part_size as u64))
        {
            Some(parts) => {
                for part in parts {
                    composite.push_part(&part).expect("one algorithm");
                }
            }
            None => {
                for part in data.chunks(part_size) {
                    composite
                        .push_part(&Checksummer::checksum(algorithm, part))
                        .expect("one algorithm");
                }
            }
        }
        let computed = composite.finish();
        if computed == *expected {
            return Ok(());
        }
        tracing::warn!(
            bucket, key, algorithm = algorithm.s3_name(), expected = %expected, computed = %computed,
            "received bytes do not match the object's composite checksum"
        );
        Err(Error::ChecksumMismatch {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            algorithm: algorithm.s3_name(),
            expected: expected.to_string(),
            computed: computed.to_string(),
        })
    }

    /// The MD5 an Azure blob is stored with, from a whole-blob GET's response (S3: `None`).
    fn blob_md5(&self, response: &Response) -> Option<brisk_wire::checksum::Md5Digest> {
        self.dialect().stored_blob_md5(response.head())
    }

    /// The whole object in one buffer of exactly its size, paid for by the client's memory budget
    /// (waiting while the budget is full). The buffer is sized from the response's `Content-Length`,
    /// so nothing is reserved before the head arrives; it is one allocation whatever the size (from
    /// [`brisk_mem::MAPPED_MIN_LEN`] up a populated mapping, no heap), and the body goes from the
    /// socket straight into it. A full-object checksum returned by the server is verified
    /// ([`Error::ChecksumMismatch`]).
    pub async fn get_bytes(&self, bucket: &str, key: &str) -> Result<ExactBuf> {
        self.get_whole(bucket, key, "read", u64::MAX)
            .await?
            .ok_or_else(|| Error::UnexpectedResponse {
                what: "an object larger than any length".into(),
            })
    }

    /// [`get_bytes`](Self::get_bytes) of an object of at most `max_len` bytes: `None`, with nothing
    /// read and the connection closed, when the response says it is larger. Its `debug` event
    /// calls it a `reading` (a read, or a download that goes through it).
    pub(crate) async fn get_whole(
        &self,
        bucket: &str,
        key: &str,
        reading: &'static str,
        max_len: u64,
    ) -> Result<Option<ExactBuf>> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self.send(&whole_object_get(bucket, key)).await?;
        let length = body_length(&response)?;
        if length > max_len {
            return Ok(None);
        }
        let length = usize::try_from(length).map_err(|_| Error::BufferTooSmall {
            length,
            capacity: usize::MAX,
        })?;
        // Populated a step ahead of the body rather than all before it (see `ReadTarget`).
        let mut buf = ExactBuf::for_overwrite(self.memory_budget(), length).await?;
        self.read_checked(bucket, key, reading, response, &mut buf)
            .await?;
        Ok(Some(buf))
    }

    /// [`get_bytes`](Self::get_bytes), calling `admit` with the object's length (from the
    /// response's head) before its buffer is reserved: an error from `admit` is the read's, with
    /// nothing reserved and the connection closed.
    pub(crate) async fn get_bytes_admitted(
        &self,
        bucket: &str,
        key: &str,
        admit: impl FnOnce(usize) -> Result<()>,
    ) -> Result<ExactBuf> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self.send(&whole_object_get(bucket, key)).await?;
        let length = body_length(&response)?;
        let length = usize::try_from(length).map_err(|_| Error::BufferTooSmall {
            length,
            capacity: usize::MAX,
        })?;
        admit(length)?;
        let mut buf = ExactBuf::for_overwrite(self.memory_budget(), length).await?;
        self.read_checked(bucket, key, "read", response, &mut buf)
            .await?;
        Ok(buf)
    }

    /// The whole object read into the destination `choose` gives for its length (from the
    /// response's head, before any byte of the body is read): at least that long, or
    /// [`Error::BufferTooSmall`]. An error from `choose` is the read's, with the connection
    /// closed. Checked and resumed as [`get_into`](Self::get_into) is; returns the destination
    /// and the object's length.
    pub async fn get_into_chosen<D: AsMut<[u8]>>(
        &self,
        bucket: &str,
        key: &str,
        choose: impl FnOnce(usize) -> Result<D>,
    ) -> Result<(D, usize)> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self.send(&whole_object_get(bucket, key)).await?;
        let length = body_length(&response)?;
        let length = usize::try_from(length).map_err(|_| Error::BufferTooSmall {
            length,
            capacity: usize::MAX,
        })?;
        let mut dst = choose(length)?;
        let capacity = dst.as_mut().len();
        let Some(target) = dst.as_mut().get_mut(..length) else {
            return Err(Error::BufferTooSmall {
                length: length as u64,
                capacity,
            });
        };
        self.read_checked(bucket, key, "read", response, target)
            .await?;
        Ok((dst, length))
    }

    /// Reads a whole object's body (`response`, of `dst`'s length) into `dst`, resuming if the
    /// connection fails, and checks it against the checksum the response carries, if any.
    ///
    /// A CRC (full-object, or composite of parts) is taken block by block as the bytes land, just
    /// after the socket's copy wrote them ([`BlockCrcs`]); the check after the body then combines
    /// the blocks' CRCs instead of reading the whole buffer again from memory.
    async fn read_checked<T: ReadTarget + ?Sized>(
        &self,
        bucket: &str,
        key: &str,
        reading: &'static str,
        response: Response,
        dst: &mut T,
    ) -> Result<()> {
        let expected = stored_checksum(response.head());
        let composite = composite_with_etag(&response);
        let blob_md5 = self.blob_md5(&response);
        describe_check(bucket, key, reading, &expected, &composite, &blob_md5);
        let algorithm = match (&expected, &composite) {
            (Some(full), _) => Some(full.algorithm()),
            (None, Some((composite, _))) => Some(composite.value.algorithm()),
            (None, None) => None,
        };
        let len = dst.bytes().len();
        // Blocks only for a composite, whose parts are combined from them; a full-object CRC is one
        // running CRC (and no allocation).
        let block = if composite.is_some() {
            CHECKSUM_BLOCK
        } else {
            usize::MAX
        };
        let mut sums = algorithm.and_then(|a| BlockCrcs::new(a, block, len as u64));
        let read = async {
            match &mut sums {
                Some(sums) => {
                    let mut summing = Summing {
                        target: &mut *dst,
                        sums,
                    };
                    self.read_resuming(bucket, key, response, 0, &mut summing)
                        .await
                }
                None => {
                    self.read_resuming(bucket, key, response, 0, &mut *dst)
                        .await
                }
            }
        };
        // A composite's part layout is asked for while the body arrives, not after its last byte.
        let ask_layout = async {
            match &composite {
                Some((_, etag)) => self.first_part_layout(bucket, key, etag).await.map(Some),
                None => Ok(None),
            }
        };
        let (read, layout) = tokio::join!(read, ask_layout);
        read?;
        let layout = layout?;
        let data = dst.bytes();
        if let Some(expected) = expected {
            match &sums {
                Some(sums) => checksum_matches(bucket, key, &expected, sums.whole())?,
                None => verify(bucket, key, &expected, data)?,
            }
        }
        if let Some((composite, _)) = composite {
            Self::verify_composite(
                bucket,
                key,
                layout.flatten(),
                &composite,
                data,
                sums.as_ref(),
            )?;
        }
        if let Some(md5) = blob_md5 {
            verify_md5(bucket, key, &md5, data)?;
        }
        Ok(())
    }

    /// Reads the whole object into `dst` and returns its length. Fails with
    /// [`Error::BufferTooSmall`] (before reading any of it) if the object is larger than `dst`. The
    /// body path allocates nothing. A full-object checksum returned by the server is verified
    /// ([`Error::ChecksumMismatch`]; `dst` then holds bytes that must not be used).
    pub async fn get_into(&self, bucket: &str, key: &str, dst: &mut [u8]) -> Result<usize> {
        check_bucket(bucket)?;
        check_key(key)?;
        let response = self.send(&whole_object_get(bucket, key)).await?;
        let length = body_length(&response)?;
        if length > dst.len() as u64 {
            return Err(Error::BufferTooSmall {
                length,
                capacity: dst.len(),
            });
        }
        let length = length as usize;
        self.read_checked(bucket, key, "read", response, &mut dst[..length])
            .await?;
        Ok(length)
    }

    /// Reads up to `dst.len()` bytes of the object starting at byte `offset` into `dst` (a ranged
    /// GET) and returns how many were read: fewer than `dst.len()` only at the end of the object.
    /// An `offset` at or past the end is [`Error::InvalidRange`].
    pub async fn get_range_into(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<usize> {
        self.get_range_pinned(bucket, key, offset, dst, None).await
    }

    /// Reads up to `len` bytes of the object from byte `offset` (a ranged GET) into a new buffer of
    /// exactly `len` bytes, paid for by the client's memory budget, and returns it with how many
    /// bytes arrived: fewer than `len` only at the end of the object, and the rest of the buffer
    /// is then zero. An `offset` at or past the end is [`Error::InvalidRange`]. Unlike [`get_range_into`](Self::get_range_into) with an
    /// [`ExactBuf`] of one's own, the buffer's pages are made resident a step ahead of the body,
    /// as [`get_bytes`](Self::get_bytes) does, not all before the first byte arrives.
    pub async fn get_range_bytes(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        len: usize,
    ) -> Result<(ExactBuf, usize)> {
        let mut buf = ExactBuf::for_overwrite(self.memory_budget(), len).await?;
        let n = self
            .get_range_pinned(bucket, key, offset, &mut buf, None)
            .await?;
        // A reused buffer holds an earlier object's bytes where this range fell short.
        buf[n..].fill(0);
        Ok((buf, n))
    }

    /// [`get_range_bytes`](Self::get_range_bytes) only if its buffer can be had from the memory
    /// budget now: `None`, with no request made, when the budget would make it wait (or the range
    /// is larger than the whole budget). For a reader that hands its buffers to a consumer that
    /// may hold them all (pyarrow caching a file's column chunks): waiting for buffers only that
    /// consumer would give back never ends, so such a reader reads into memory of its own instead.
    pub async fn try_get_range_bytes(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        len: usize,
    ) -> Result<Option<(ExactBuf, usize)>> {
        let mut buf = match ExactBuf::try_for_overwrite(self.memory_budget(), len) {
            Ok(buf) => buf,
            Err(BudgetError::WouldWait { .. } | BudgetError::ExceedsCapacity { .. }) => {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let n = self
            .get_range_pinned(bucket, key, offset, &mut buf, None)
            .await?;
        buf[n..].fill(0);
        Ok(Some((buf, n)))
    }

    /// [`get_range_into`](Self::get_range_into), only if the object's ETag is still `etag`
    /// (`If-Match`): the parts of a parallel download all come from one version of the object.
    /// A changed object is [`Error::ObjectChanged`].
    pub async fn get_range_if_match(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        dst: &mut [u8],
        etag: &str,
    ) -> Result<usize> {
        self.get_range_pinned(bucket, key, offset, dst, Some(etag))
            .await
    }

    async fn get_range_pinned<T: ReadTarget + ?Sized>(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        dst: &mut T,
        etag: Option<&str>,
    ) -> Result<usize> {
        check_bucket(bucket)?;
        check_key(key)?;
        let capacity = dst.bytes().len();
        if capacity == 0 {
            return Ok(0);
        }
        let last = offset + capacity as u64 - 1;
        let mut spec = RequestSpec::new("GET", Some(bucket), Some(key))
            .header("range", format!("bytes={offset}-{last}"));
        if let Some(etag) = etag {
            spec = spec.header("if-match", etag);
        }
        let response = match self.send(&spec).await {
            Err(Error::PreconditionFailed(_)) if etag.is_some() => {
                return Err(Error::ObjectChanged {
                    etag: etag.unwrap_or_default().to_owned(),
                });
            }
            other => other?,
        };
        if response.head().status() != 206 && offset != 0 {
            return Err(Error::UnexpectedResponse {
                what: format!(
                    "status {} to a ranged GET (expected 206 Partial Content)",
                    response.head().status()
                ),
            });
        }
        let length = body_length(&response)?;
        if length > capacity as u64 {
            return Err(Error::BufferTooSmall { length, capacity });
        }
        let length = length as usize;
        let mut head = Head {
            target: dst,
            length,
        };
        self.read_resuming(bucket, key, response, offset, &mut head)
            .await?;
        Ok(length)
    }

    /// Reads `response`'s body, which holds the object's bytes from `offset` on, into all of `dst`.
    /// If the connection fails midway, the missing bytes are fetched with a ranged GET pinned to the
    /// response's ETag (`If-Match`), within the retry policy's attempts.
    async fn read_resuming<T: ReadTarget + ?Sized>(
        &self,
        bucket: &str,
        key: &str,
        response: Response,
        offset: u64,
        dst: &mut T,
    ) -> Result<()> {
        let etag = response.header("etag").map(str::to_owned);
        let mut retry = RetryContext::new(self.config().retry);
        let mut response = response;
        let mut filled = 0usize;
        loop {
            let (read, outcome) = read_body_exact(&mut response, dst, filled).await;
            filled += read;
            let error = match outcome {
                Ok(()) => {
                    response.release();
                    return Ok(());
                }
                Err(e) => e,
            };
            drop(response);
            let Some(etag) = etag.as_deref() else {
                return Err(error);
            };
            let RetryDecision::RetryAfter(backoff) = retry.failed(&error) else {
                return Err(error);
            };
            tokio::time::sleep(backoff).await;
            self.count_resumed_read();
            let from = offset + filled as u64;
            tracing::debug!(
                bucket, key, attempt = retry.attempt(), resume_at = from, %error,
                "read failed mid-body; resuming with a ranged GET pinned to the ETag"
            );
            let last = offset + dst.bytes().len() as u64 - 1;
            let spec = RequestSpec::new("GET", Some(bucket), Some(key))
                .header("if-match", etag)
                .header("range", format!("bytes={from}-{last}"));
            response = match self.send(&spec).await {
                Ok(r) => r,
                Err(Error::PreconditionFailed(_)) => {
                    return Err(Error::ObjectChanged {
                        etag: etag.to_owned(),
                    });
                }
                Err(e) => return Err(e),
            };
            let expected = (last - from + 1) as usize;
            let length = body_length(&response)?;
            if response.head().status() != 206 || length != expected as u64 {
                return Err(Error::UnexpectedResponse {
                    what: format!(
                        "resumed read got status {} with {length} bytes, expected 206 with {expected}",
                        response.head().status()
                    ),
                });
            }
        }
    }

    /// Stores `body` under `bucket`/`key` in one PUT (up to 5 GiB), with a CRC32C checksum header.
    pub async fn put(&self, bucket: &str, key: &str, body: &[u8]) -> Result<PutResult> {
        self.put_with(bucket, key, body, &PutOptions::default())
            .await
    }

    /// [`put`](Self::put) with options.
    pub async fn put_with(
        &self,
        bucket: &str,
        key: &str,
        body: &[u8],
        options: &PutOptions,
    ) -> Result<PutResult> {
        self.put_summed(bucket, key, body, options, None).await
    }

    /// [`Client::put_with`] with the body's checksum (base64, of `options.checksum`'s algorithm)
    /// and perhaps its SHA-256 already computed (`known`), as `upload` computes them while
    /// reading the file.
    pub(crate) async fn put_summed(
        &self,
        bucket: &str,
        key: &str,
        body: &[u8],
        options: &PutOptions,
        known: Option<PartSums>,
    ) -> Result<PutResult> {
        check_bucket(bucket)?;
        check_key(key)?;
        match self.dialect() {
            Dialect::S3(_) => self.s3_put_summed(bucket, key, body, options, known).await,
            Dialect::Azure(_) => self.azure_put_blob(bucket, key, body, options, known).await,
        }
    }

    /// Deletes `bucket`/`key`. Deleting a key that does not exist succeeds, as in S3.
    pub async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        check_bucket(bucket)?;
        check_key(key)?;
        match self.dialect() {
            Dialect::S3(_) => self.s3_delete(bucket, key).await,
            Dialect::Azure(_) => self.azure_delete_blob(bucket, key).await,
        }
    }

    /// Deletes `keys` from `bucket` with DeleteObjects, [`DELETE_BATCH`] keys per request. Keys
    /// the server could not delete are listed in the result's `errors`; keys that did not exist count
    /// as deleted.
    pub async fn delete_many<K: AsRef<str>>(
        &self,
        bucket: &str,
        keys: &[K],
    ) -> Result<DeleteResult> {
        check_bucket(bucket)?;
        match self.dialect() {
            Dialect::S3(_) => self.s3_delete_many(bucket, keys).await,
            Dialect::Azure(_) => self.azure_delete_blobs(bucket, keys).await,
        }
    }
}

/// The `debug` event of a whole-object read: what its bytes will be checked against, if anything
/// (the same words as a streamed download's, so `--debug` tells the same story for both).
fn describe_check(
    bucket: &str,
    key: &str,
    reading: &'static str,
    full: &Option<ChecksumValue>,
    composite: &Option<(MultipartChecksum, String)>,
    blob_md5: &Option<brisk_wire::checksum::Md5Digest>,
) {
    if let Some(full) = full {
        tracing::debug!(
            bucket,
            key,
            algorithm = full.algorithm().s3_name(),
            "the {reading} will be checked against the object's full-object checksum"
        );
    } else if let Some((composite, _)) = composite {
        tracing::debug!(
            bucket,
            key,
            algorithm = composite.value.algorithm().s3_name(),
            parts = composite.parts,
            "the {reading} will be checked against the object's composite checksum, part by part"
        );
    } else if blob_md5.is_some() {
        tracing::debug!(
            bucket,
            key,
            "the {reading} will be checked against the blob's Content-MD5"
        );
    } else {
        tracing::debug!(
            bucket,
            key,
            "the object has no stored checksum; this {reading} is not checked end to end"
        );
    }
}

/// A whole-object response's composite CRC and the ETag to pin the part-layout HEAD to; `None`
/// (and no allocation) for every other response.
fn composite_with_etag(response: &Response) -> Option<(MultipartChecksum, String)> {
    let composite = crate::integrity::stored_composite(response.head())?;
    Some((composite, response.header("etag")?.to_owned()))
}

/// Where an exact read lands: a caller's slice, or a buffer of this client's own whose pages are
/// made resident a step ahead of the bytes.
///
/// Why ahead rather than first: populating a fresh buffer of 1 GiB takes about 0.3 s on this
/// project's VMs, and done before the first body byte is read, the server waits on a full socket
/// all that time; done in [`POPULATE_AHEAD`] steps as the body arrives, it overlaps the server's
/// sending. Populated rather than faulted by the socket's copy: a page fault inside the kernel's
/// copy costs far more than populating (`brisk_mem::exact`), and faulting from user space cost
/// 5–20 % more CPU here (BENCHMARKS-log.md).
trait ReadTarget {
    /// The bytes the body is read into, all of them.
    fn bytes(&mut self) -> &mut [u8];
    /// Makes the pages under `range` resident before the body's bytes are read into them; false
    /// for memory that is resident (or the caller's) already, which there is no need to step
    /// through.
    fn prepare(&mut self, _range: std::ops::Range<usize>) -> bool {
        false
    }
    /// The bytes under `range` have just been read in (in order, each once).
    fn landed(&mut self, _range: std::ops::Range<usize>) {}
}

/// The blocks whole-object reads take CRCs of as they land ([`BlockCrcs`]): 1 MiB, a divisor of
/// every SDK's part size, and about what one read of the socket brings (its wake-up mark).
const CHECKSUM_BLOCK: usize = 1 << 20;

/// A [`ReadTarget`] whose bytes are summed as they land.
struct Summing<'a, T: ?Sized> {
    target: &'a mut T,
    sums: &'a mut BlockCrcs,
}

impl<T: ReadTarget + ?Sized> ReadTarget for Summing<'_, T> {
    fn bytes(&mut self) -> &mut [u8] {
        self.target.bytes()
    }

    fn prepare(&mut self, range: std::ops::Range<usize>) -> bool {
        self.target.prepare(range)
    }

    fn landed(&mut self, range: std::ops::Range<usize>) {
        self.sums.update(&self.target.bytes()[range.clone()]);
        self.target.landed(range);
    }
}

impl ReadTarget for [u8] {
    fn bytes(&mut self) -> &mut [u8] {
        self
    }
}

impl ReadTarget for ExactBuf {
    fn bytes(&mut self) -> &mut [u8] {
        self
    }

    fn prepare(&mut self, range: std::ops::Range<usize>) -> bool {
        self.populate(range);
        self.is_mapped()
    }
}

/// The first `length` bytes of a [`ReadTarget`]: a range shorter than the buffer it is read into.
struct Head<'a, T: ?Sized> {
    target: &'a mut T,
    length: usize,
}

impl<T: ReadTarget + ?Sized> ReadTarget for Head<'_, T> {
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.target.bytes()[..self.length]
    }

    fn prepare(&mut self, range: std::ops::Range<usize>) -> bool {
        self.target.prepare(range.start..range.end.min(self.length))
    }

    fn landed(&mut self, range: std::ops::Range<usize>) {
        self.target.landed(range);
    }
}

/// How far ahead of the body a [`ReadTarget`] is populated: 2 MiB at a time, once less than that
/// is left populated ahead of the bytes read, so at most 4 MiB (about 1 ms of populating here,
/// which a socket's buffer absorbs).
const POPULATE_AHEAD: usize = 2 << 20;

/// How far a destination has been made resident ahead of the bytes read into it: each read of an
/// exact read (here and in the batch pipeline) asks it where to stop.
pub(crate) struct PopulateAhead {
    ready: usize,
}

impl PopulateAhead {
    /// Nothing resident yet from `start` on.
    pub(crate) fn from(start: usize) -> Self {
        PopulateAhead { ready: start }
    }

    /// The end of the next read into `filled..end`. Once less than [`POPULATE_AHEAD`] is resident
    /// ahead of `filled`, `populate` makes the next step resident first; where it says there is
    /// nothing to populate (memory resident already), the read may run to `end`. A read never
    /// runs past what is resident: the kernel's copy would fault.
    pub(crate) fn next_read_end(
        &mut self,
        filled: usize,
        end: usize,
        populate: impl FnOnce(std::ops::Range<usize>) -> bool,
    ) -> usize {
        if self.ready < end && self.ready.saturating_sub(filled) < POPULATE_AHEAD {
            let step = (self.ready + POPULATE_AHEAD).min(end);
            self.ready = if populate(self.ready..step) {
                step
            } else {
                end
            };
        }
        self.ready.max(filled + 1).min(end)
    }
}

/// How many bytes a socket holds before it wakes a read into an exact buffer: 1 MiB. A get of
/// 1 GiB from MinIO was woken about 7,000 times with the kernel's default of a byte, and about
/// 1,100 times with this, for about 4 % less CPU (BENCHMARKS-log.md).
const EXACT_READ_WAKE_AFTER: usize = 1 << 20;

/// Reads the body into all of `dst` from position `from` on, returning how many bytes arrived and
/// whether it completed. `dst[from..]` is exactly what is left of the body (callers size it from
/// `Content-Length`): the socket's low-water mark is kept within it.
async fn read_body_exact<T: ReadTarget + ?Sized>(
    response: &mut Response,
    dst: &mut T,
    from: usize,
) -> (usize, Result<()>) {
    let len = dst.bytes().len();
    let mut filled = from;
    let mut ahead = PopulateAhead::from(from);
    while filled < len {
        let until = ahead.next_read_end(filled, len, |range| dst.prepare(range));
        // A wake-up per MiB (or for the whole body, if less), not per segment.
        response
            .conn
            .wake_for((len - filled) as u64, EXACT_READ_WAKE_AFTER);
        match response
            .conn
            .conn()
            .read_body(&mut dst.bytes()[filled..until])
            .await
        {
            Ok(0) => {
                return (
                    filled - from,
                    Err(Error::UnexpectedResponse {
                        what: format!("body ended after {filled} of {len} bytes"),
                    }),
                );
            }
            Ok(n) => {
                dst.landed(filled..filled + n);
                filled += n;
            }
            Err(e) => return (filled - from, Err(Error::Http(e))),
        }
    }
    (filled - from, Ok(()))
}
