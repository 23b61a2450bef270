//! [`Client::download`]: an object downloaded to a file in parallel ranged GETs (the streamed
//! download, `streamed.rs`, with its file writer, `file_writer.rs`), checked against the object's
//! stored checksum (`check.rs`); and the downloads that stream front to back into a writer
//! ([`Client::download_to_writer`]). See [`crate::transfer`] for their memory, copies and
//! failures.

mod check;
mod file_writer;
mod streamed;

use std::path::Path;
use std::sync::Arc;

use brisk_mem::MAX_BLOCK_SIZE;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::local_file::{TempFile, failed_file_task, file_error, is_special_file};
use crate::object_stream::ObjectStream;
use crate::transfer::TransferOptions;

use check::{Computed, DownloadCheck, digest_file};

/// Attempts of a download whose assembled bytes do not match the stored full-object checksum.
const DOWNLOAD_ATTEMPTS: u32 = 2;

/// What a download reads: the object, pinned to the ETag its HEAD returned.
struct PinnedObject<'a> {
    bucket: &'a str,
    key: &'a str,
    etag: &'a str,
    size: u64,
}

impl Client {
    /// Downloads `bucket`/`key` to `path` with up to `parts_in_flight` ranged GETs in flight, each
    /// into a pooled block, all pinned to the object's ETag. The bytes go to a temporary file beside
    /// `path`, renamed over it once complete. Returns the object's size.
    ///
    /// The file is checked against the object's stored checksum with no second pass over it: each
    /// range's CRC is computed as the range is written, and the ranges' CRCs are combined in order.
    /// A full-object CRC (CRC32, CRC32C, CRC64NVME: what brisk's uploads store) is compared with
    /// the combination of all ranges; a composite CRC (per part, `<base64>-<parts>`, what other
    /// tools' multipart uploads may store) is rebuilt from ranges cut on the object's part
    /// boundaries (part 1's size from a HEAD with `partNumber=1`; parts of equal size but the
    /// last, which is how every SDK uploads). A mismatch does not say which range was damaged, so
    /// the object is downloaded once more; a second mismatch is [`Error::ChecksumMismatch`], with no
    /// file left behind. A whole-object SHA-256 or SHA-1 (a single PUT's) is checked in a second
    /// pass over the file, as is an MD5 ETag when `verify_md5_etag` asks for it; composite SHA
    /// checksums, and composite checksums of parts of unequal size, are not checked (the `debug`
    /// event says so). An object of at most one part whose size the caller gave
    /// ([`TransferOptions::known_size`]) is one GET checked as [`Client::get_bytes`] checks it.
    ///
    /// A `path` that exists and is not a regular file (`/dev/null`, a named pipe) is not replaced:
    /// the object is streamed into it front to back, its stored checksum checked at the end.
    pub async fn download(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: TransferOptions,
    ) -> Result<u64> {
        options.check(false)?;
        if is_special_file(path) {
            return self.download_in_place(bucket, key, path, &options).await;
        }
        let known = options
            .known_head
            .as_ref()
            .filter(|h| h.bucket == bucket && h.key == key);
        if options
            .known_size
            .or(known.map(|h| h.meta.content_length))
            .is_some_and(|size| size <= options.part_size as u64)
            && !options.verify_md5_etag
            && let Some(size) = self.download_whole(bucket, key, path, &options).await?
        {
            return Ok(size);
        }
        let (meta, stored) = match known {
            Some(head) => (head.meta.clone(), head.stored.clone()),
            None => self.head_with_checksum(bucket, key).await?,
        };
        let etag = meta.etag.ok_or_else(|| Error::UnexpectedResponse {
            what: "HEAD answered without an ETag; a parallel download can not be pinned".into(),
        })?;
        let size = meta.content_length;
        let check = self
            .download_check(bucket, key, &etag, size, stored, options.verify_md5_etag)
            .await?;
        let target = PinnedObject {
            bucket,
            key,
            etag: &etag,
            size,
        };
        let mut attempts = 0;
        loop {
            attempts += 1;
            let temp = TempFile::beside(path);
            // Progress counts the bytes once: a second attempt is not reported again.
            let downloaded = self
                .download_to(&target, &temp.path, &options, &check, attempts == 1)
                .await;
            let mut computed = match downloaded {
                // A range that did not match the MD5 Azure sent with it (logged where it was
                // found): the attempt is damaged like one whose whole checksum does not match.
                Err(Error::ChecksumMismatch { .. }) if attempts < DOWNLOAD_ATTEMPTS => continue,
                other => other?,
            };
            if let Some(algorithm) = check.second_pass() {
                computed = digest_file(&temp.path, algorithm).await?;
            }
            if let Some((expected, computed)) = check.mismatch(computed) {
                tracing::warn!(
                    bucket, key, attempt = attempts, algorithm = check.algorithm_name(),
                    %expected, %computed,
                    "downloaded bytes do not match the object's checksum"
                );
                if attempts < DOWNLOAD_ATTEMPTS {
                    continue; // `temp` is dropped, and with it the damaged file
                }
                return Err(Error::ChecksumMismatch {
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                    algorithm: check.algorithm_name(),
                    expected,
                    computed,
                });
            }
            temp.persist(path)?;
            return Ok(size);
        }
    }

    /// [`download`](Self::download) to a destination that exists and is not a regular file
    /// (`/dev/null`, a named pipe, a terminal): the object is streamed into it front to back, as
    /// `cat` would ([`download_to_writer`](Self::download_to_writer)). A temporary file renamed
    /// over it would replace the device or pipe with a plain file (or, without the right to
    /// write beside it, fail).
    async fn download_in_place(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: &TransferOptions,
    ) -> Result<u64> {
        // The GET first: a missing object fails before a named pipe's open waits for its reader
        // (on the blocking pool).
        let object = self.get_stream(bucket, key).await?;
        let target = path.to_owned();
        let file = tokio::task::spawn_blocking(move || {
            std::fs::OpenOptions::new().write(true).open(target)
        })
        .await
        .map_err(failed_file_task)?
        .map_err(|e| file_error(path, "opening", e))?;
        self.write_stream(object, file, &path.display().to_string(), options)
            .await
    }

    /// Streams `bucket`/`key` into `out` front to back (stdout, a pipe, a socket, a file opened
    /// by the caller) through one pooled block of at most the part size, counting on the
    /// options' progress; returns the bytes written. Writes run on the blocking pool, with the
    /// block moved there and back, so the bytes are written from where they landed (tokio's
    /// `Stdout` or `File` copies each piece into a buffer of its own first: `brisk cat` of 1 GiB
    /// into `/dev/null` took 0.24–0.26 CPU s that way, 0.17–0.18 written in place: BENCHMARKS-log.md,
    /// "`brisk cat` written from the block"), and a
    /// slow reader never holds up the runtime. A connection that fails mid-body is resumed and
    /// the stored checksum is verified as the stream ends ([`Client::get_stream`]); what was
    /// written before a failure stays written. A write that fails is [`Error::File`] with the
    /// `io::Error` as its source (a reader that went away: `ErrorKind::BrokenPipe`).
    pub async fn download_to_writer<W>(
        &self,
        bucket: &str,
        key: &str,
        out: W,
        options: TransferOptions,
    ) -> Result<u64>
    where
        W: std::io::Write + Send + 'static,
    {
        options.check(false)?;
        let object = self.get_stream(bucket, key).await?;
        self.write_object_stream(object, out, options).await
    }

    /// [`download_to_writer`](Self::download_to_writer) of an object whose GET the caller has
    /// already started ([`Client::get_stream`]): its length is known from the response head
    /// before a byte is written (for a progress bar's total), with no HEAD before the GET.
    pub async fn write_object_stream<W>(
        &self,
        object: ObjectStream,
        out: W,
        options: TransferOptions,
    ) -> Result<u64>
    where
        W: std::io::Write + Send + 'static,
    {
        options.check(false)?;
        self.write_stream(object, out, "the writer", &options).await
    }

    /// The loop of [`download_to_writer`](Self::download_to_writer); `what` names `out` in errors.
    async fn write_stream<W>(
        &self,
        mut object: ObjectStream,
        mut out: W,
        what: &str,
        options: &TransferOptions,
    ) -> Result<u64>
    where
        W: std::io::Write + Send + 'static,
    {
        let len = options.part_size.clamp(1, MAX_BLOCK_SIZE);
        let mut block = self.buffer_pool().get(len).await.map_err(Error::Memory)?;
        let write_error = |doing: &str, source| Error::File {
            what: format!("{doing} {what}"),
            source,
        };
        let mut written = 0u64;
        loop {
            let n = object.read(&mut block.unfilled_mut()[..len]).await?;
            if n == 0 {
                break;
            }
            let wrote;
            (out, block, wrote) = tokio::task::spawn_blocking(move || {
                let wrote = out.write_all(&block.unfilled_mut()[..n]);
                (out, block, wrote)
            })
            .await
            .map_err(failed_file_task)?;
            wrote.map_err(|e| write_error("writing", e))?;
            written += n as u64;
            options.count(n as u64);
        }
        drop(block);
        tokio::task::spawn_blocking(move || out.flush())
            .await
            .map_err(failed_file_task)?
            .map_err(|e| write_error("flushing", e))?;
        Ok(written)
    }

    /// [`download`](Self::download) of an object known to fit in one part: one GET into an exact
    /// buffer of its size (checked against its stored checksum as it is read, and read again once
    /// if the check fails, as a streamed download is), then written to a temporary file beside
    /// `path`, synced and renamed over it. The file is created here and written on the blocking
    /// pool, so a dropped download leaves nothing: its file is removed and the write, if it is
    /// still running, goes to the removed file. `None`, with nothing written, when the GET says the
    /// object has grown past one part since its size was taken: it is then streamed as any other.
    async fn download_whole(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: &TransferOptions,
    ) -> Result<Option<u64>> {
        let mut attempts = 0;
        let bytes = loop {
            attempts += 1;
            match self
                .get_whole(bucket, key, "download", options.part_size as u64)
                .await
            {
                Err(Error::ChecksumMismatch {
                    algorithm,
                    expected,
                    computed,
                    ..
                }) if attempts < DOWNLOAD_ATTEMPTS => {
                    tracing::warn!(
                        bucket, key, attempt = attempts, algorithm, %expected, %computed,
                        "downloaded bytes do not match the object's checksum"
                    );
                }
                read => match read? {
                    Some(bytes) => break bytes,
                    None => return Ok(None),
                },
            }
        };
        let temp = TempFile::beside(path);
        let file =
            std::fs::File::create(&temp.path).map_err(|e| file_error(&temp.path, "creating", e))?;
        let size = bytes.len() as u64;
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut file = file;
            file.write_all(&bytes).and_then(|()| file.sync_all())
        })
        .await
        .map_err(|e| Error::UnexpectedResponse {
            what: format!("file write task failed: {e}"),
        })?
        .map_err(|e| file_error(&temp.path, "writing", e))?;
        temp.persist(path)?;
        options.count(size);
        Ok(Some(size))
    }

    /// One attempt of [`download`](Self::download) into `temp`; returns what `check` computed
    /// over the bytes written.
    ///
    /// S3: `parts_in_flight` workers, each with one connection and two pooled blocks of
    /// [`DOWNLOAD_CHUNK`](streamed::DOWNLOAD_CHUNK) bytes, take the next span of consecutive
    /// `part_size` ranges (up to [`DOWNLOAD_SPAN`](streamed::DOWNLOAD_SPAN)), stream it with one
    /// GET through the blocks (socket → block, summed range by range as it lands; block → file
    /// while the other block fills) and take the next. The memory held is `parts_in_flight × 2 ×
    /// DOWNLOAD_CHUNK` (8 MiB by default) instead of a whole part per range. One thread makes the
    /// writes to the file, in turn.
    async fn download_to(
        &self,
        target: &PinnedObject<'_>,
        temp: &Path,
        options: &TransferOptions,
        check: &DownloadCheck,
        count: bool,
    ) -> Result<Computed> {
        let size = target.size;
        let file = std::fs::File::create(temp).map_err(|e| file_error(temp, "creating", e))?;
        file.set_len(size)
            .map_err(|e| file_error(temp, "sizing", e))?;
        let file = Arc::new(file);
        let computed = self
            .download_streamed(target, &file, temp, options, check, count)
            .await?;
        tokio::task::spawn_blocking(move || file.sync_all())
            .await
            .map_err(|e| Error::UnexpectedResponse {
                what: format!("sync task failed: {e}"),
            })?
            .map_err(|e| file_error(temp, "syncing", e))?;
        Ok(computed)
    }
}
