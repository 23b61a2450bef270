//! [`Client::upload`]: a file uploaded in parts read into pooled blocks (or sent from the file with
//! `sendfile`), with a bounded number of parts in flight; see [`crate::transfer`] for its memory,
//! copies and failures.

use std::path::Path;
use std::sync::Arc;

use brisk_mem::PooledBlock;
use brisk_wire::xml::CompletedPart;
use tokio::task::JoinSet;

use crate::client::{Client, finish};
use crate::error::{Error, Result};
use crate::integrity::UploadChecksum;
use crate::local_file::{failed_file_task, file_error, is_special_file};
use crate::multipart::next_finished_part;
use crate::objects::PayloadSigning;
use crate::part_sums::{PartSummer, PartSums, SUMMED_READ};
use crate::request::{FileBody, RequestSpec, TrailingChecksum, check_bucket, check_key};
use crate::transfer::{MAX_PARTS, TransferOptions, UPLOAD_READ_AHEAD, UploadResult};

impl Client {
    /// Uploads the file at `path` to `bucket`/`key`: one PUT if it fits in one part, else a multipart
    /// upload with up to `parts_in_flight` parts in flight, each from a pooled block. On failure the
    /// multipart upload is aborted.
    ///
    /// A `path` that is not a regular file (a named pipe such as `/dev/stdin` or a shell's
    /// `<(command)`, a device) has no size to plan parts from and cannot be read at offsets: it is
    /// read front to back to its end, as [`Client::upload_reader`] reads a stream.
    pub async fn upload(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        check_bucket(bucket)?;
        check_key(key)?;
        options.check(true)?;
        if is_special_file(path) {
            return self.upload_in_order(bucket, key, path, options).await;
        }
        let options = self.with_dialect_checksum(options);
        let file = std::fs::File::open(path).map_err(|e| file_error(path, "opening", e))?;
        let size = file
            .metadata()
            .map_err(|e| file_error(path, "reading the size of", e))?
            .len();
        let file = Arc::new(file);
        let part_size = options.part_size as u64;
        if size <= part_size && size > 0 && self.sends_from_files(options.payload_signing) {
            let body = FileBody::new(Arc::clone(&file), path, 0, size, self.buffer_pool());
            let etag = self.put_file_body(bucket, key, &body, &options).await?;
            options.count(size);
            return Ok(UploadResult {
                etag,
                size,
                parts: 1,
            });
        }
        if size <= part_size {
            let block = self.buffer_pool().get(size as usize).await?;
            let signed = self.signs_payload(options.payload_signing);
            let (block, sums) = read_part_summed(
                &file,
                path,
                0,
                block,
                size as usize,
                options.checksum,
                signed,
            )
            .await?;
            let put = self
                .put_summed(
                    bucket,
                    key,
                    &block[..size as usize],
                    &options.put_options(),
                    Some(sums),
                )
                .await?;
            options.count(size);
            return Ok(UploadResult {
                etag: put.etag,
                size,
                parts: 1,
            });
        }
        let parts = size.div_ceil(part_size);
        if parts > MAX_PARTS {
            return Err(Error::InvalidArgument {
                what: format!(
                    "{size} bytes in parts of {part_size} would need {parts} parts; S3 allows {MAX_PARTS}"
                ),
            });
        }
        let upload_id = self.create_multipart_upload(bucket, key, &options).await?;
        let uploaded = self
            .upload_parts(bucket, key, &upload_id, &file, path, size, &options)
            .await;
        let completed = match uploaded {
            Ok(parts) => {
                self.complete_multipart_upload(bucket, key, &upload_id, parts, Some(&options))
                    .await
            }
            Err(e) => Err(e),
        };
        match completed {
            Ok(etag) => Ok(UploadResult {
                etag: Some(etag),
                size,
                parts: parts as u32,
            }),
            Err(e) => {
                // Best effort: the upload's failure is what the caller needs to see.
                let _ = self.abort_multipart_upload(bucket, key, &upload_id).await;
                Err(e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn upload_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        file: &Arc<std::fs::File>,
        path: &Path,
        size: u64,
        options: &TransferOptions,
    ) -> Result<Vec<CompletedPart>> {
        let part_size = options.part_size as u64;
        let count = size.div_ceil(part_size);
        let mut done = Vec::with_capacity(count as usize);
        let mut tasks: JoinSet<Result<CompletedPart>> = JoinSet::new();
        let mut next = 0u64;
        let signed = self.signs_payload(options.payload_signing);
        let from_files = self.sends_from_files(options.payload_signing);
        // Parts read into blocks are read and summed ahead of their turn to send; parts sent from
        // the file read as they go.
        let sending = Arc::new(tokio::sync::Semaphore::new(options.parts_in_flight));
        let most_tasks = if from_files {
            options.parts_in_flight
        } else {
            options.parts_in_flight + UPLOAD_READ_AHEAD
        };
        while next < count || !tasks.is_empty() {
            while next < count && tasks.len() < most_tasks {
                let offset = next * part_size;
                let len = part_size.min(size - offset) as usize;
                let part_number = (next + 1) as u32;
                let checksum = options.checksum;
                let progress = options.progress.clone();
                let (client, bucket, key, upload_id, file, path) = (
                    self.clone(),
                    bucket.to_owned(),
                    key.to_owned(),
                    upload_id.to_owned(),
                    Arc::clone(file),
                    path.to_owned(),
                );
                if from_files {
                    tasks.spawn(async move {
                        let body =
                            FileBody::new(file, &path, offset, len as u64, client.buffer_pool());
                        let part = client
                            .upload_part_file(
                                &bucket,
                                &key,
                                &upload_id,
                                part_number,
                                &body,
                                checksum,
                            )
                            .await?;
                        if let Some(progress) = progress {
                            progress.add(len as u64);
                        }
                        Ok(part)
                    });
                    next += 1;
                    continue;
                }
                let sending = Arc::clone(&sending);
                tasks.spawn(async move {
                    // Once it has its block, the part queues for its turn to send while it
                    // reads, so parts are sent in the order they got their blocks (the semaphore
                    // is fair) whichever read ends first. A turn is only ever held with a block,
                    // so a budget with room for fewer blocks than parts cannot leave every turn
                    // waiting for a block held by a part waiting for a turn. A part that fails
                    // closes the semaphore before giving up its turn, so the part read ahead is
                    // not sent after the upload has failed.
                    let block = client.buffer_pool().get(len).await?;
                    let (read, turn) = tokio::join!(
                        read_part_summed(&file, &path, offset, block, len, checksum, signed),
                        sending.acquire()
                    );
                    let (block, sums) = read?;
                    let Ok(_turn) = turn else {
                        return Err(Error::UnexpectedResponse {
                            what: format!("part {part_number} not sent: an earlier part failed"),
                        });
                    };
                    let part = client
                        .upload_part(
                            &bucket,
                            &key,
                            &upload_id,
                            part_number,
                            &block[..len],
                            signed,
                            checksum,
                            Some(sums),
                        )
                        .await
                        .inspect_err(|_| sending.close())?;
                    if let Some(progress) = progress {
                        progress.add(len as u64);
                    }
                    Ok(part)
                });
                next += 1;
            }
            if let Some(part) = next_finished_part(&mut tasks, "upload").await? {
                done.push(part);
            }
        }
        done.sort_by_key(|p| p.part_number);
        Ok(done)
    }

    /// PutObject of the file range `body` (a whole file that fits in one part), sent as
    /// [`upload_part_file`](Self::upload_part_file) sends a part; returns the ETag.
    async fn put_file_body(
        &self,
        bucket: &str,
        key: &str,
        body: &FileBody,
        options: &TransferOptions,
    ) -> Result<Option<String>> {
        let trailer = TrailingChecksum::new(options.checksum);
        let mut spec =
            RequestSpec::new("PUT", Some(bucket), Some(key)).aws_chunked_file(body, &trailer);
        spec = options
            .headers
            .add_to(spec, options.content_type.as_deref(), false);
        if options.if_none_match_any {
            spec = spec.header("if-none-match", "*");
        }
        let response = self.send(&spec).await?;
        let etag = response.header("etag").map(str::to_owned);
        finish(response).await?;
        Ok(etag)
    }

    /// Whether uploads from files under `signing` send their bodies from the file with `sendfile`
    /// and the checksum as an aws-chunked trailer: unsigned payloads to an S3 endpoint over plain
    /// HTTP. A signed payload needs its SHA-256 before the head (a pass over the bytes in user space
    /// anyway), TLS encrypts in user space, and Azure takes blocks with a CRC-64 header.
    pub(crate) fn sends_from_files(&self, signing: PayloadSigning) -> bool {
        !self.signs_payload(signing)
            && self.dialect().takes_trailing_checksums()
            && self.config().endpoint.scheme == crate::config::Scheme::Http
    }

    /// [`upload`](Self::upload) of a source that is not a regular file: its size reads as 0 and it
    /// cannot be read at offsets, so planning parts from the size uploaded an empty object and said
    /// it had succeeded. It is streamed instead, as `upload_reader` streams stdin.
    async fn upload_in_order(
        &self,
        bucket: &str,
        key: &str,
        path: &Path,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        // Opening a named pipe waits for its writer: on the blocking pool.
        let source = path.to_owned();
        let file = tokio::task::spawn_blocking(move || std::fs::File::open(source))
            .await
            .map_err(failed_file_task)?
            .map_err(|e| file_error(path, "opening", e))?;
        self.upload_from_read(bucket, key, file, options).await
    }
}

/// Reads `len` bytes at `offset` of `file` into the start of `block` and computes their checksum,
/// and with `signed` the payload's SHA-256 too, piece by piece as each piece arrives, on the
/// blocking pool (file reads block); the block moves to the blocking thread and back, which moves
/// a handle, not the bytes.
///
/// The SHA-256 of a signed part is taken here rather than when the part is sent: there it held
/// the runtime's thread for the whole part (about 5 ms per 8 MiB) and read the part from memory a
/// second time. Neither showed in the time or CPU of a 2 GiB upload on loopback (BENCHMARKS-log.md
/// "Upload parts without `100 Continue`"); it keeps the runtime's thread free for the sockets.
async fn read_part_summed(
    file: &Arc<std::fs::File>,
    path: &Path,
    offset: u64,
    mut block: PooledBlock,
    len: usize,
    algorithm: UploadChecksum,
    signed: bool,
) -> Result<(PooledBlock, PartSums)> {
    use std::os::unix::fs::FileExt;
    let file = Arc::clone(file);
    let (block, result) = tokio::task::spawn_blocking(move || {
        let mut summer = PartSummer::new(algorithm, signed);
        let mut at = 0;
        let result = loop {
            if at == len {
                break Ok(summer.finish());
            }
            let end = (at + SUMMED_READ).min(len);
            if let Err(e) = file.read_exact_at(&mut block[at..end], offset + at as u64) {
                break Err(e);
            }
            summer.update(&block[at..end]);
            at = end;
        };
        (block, result)
    })
    .await
    .map_err(|e| Error::UnexpectedResponse {
        what: format!("file read task failed: {e}"),
    })?;
    let sums = result.map_err(|e| file_error(path, "reading", e))?;
    Ok((block, sums))
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::sigv4::PayloadHash;

    const MIB: u64 = 1024 * 1024;

    /// A part read for a signed upload carries its payload's SHA-256, taken in the same pass as
    /// its checksum (or the checksum itself, when that is SHA-256); one read for an unsigned
    /// upload carries none. Parts longer and shorter than the 256 KiB read, at an offset.
    #[tokio::test]
    async fn reading_a_part_sums_it_for_its_header_and_its_signature() {
        let bytes: Vec<u8> = (0..3 * SUMMED_READ + 77)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let path = file.path().to_owned();
        let handle = Arc::new(std::fs::File::open(&path).unwrap());
        let pool = brisk_mem::BufferPool::new(brisk_mem::MemoryBudget::new(64 * MIB as usize));
        for (offset, len) in [
            (0, bytes.len()),
            (5, SUMMED_READ - 9),
            (1000, 2 * SUMMED_READ),
        ] {
            let part = &bytes[offset..offset + len];
            for algorithm in [UploadChecksum::Crc32c, UploadChecksum::Sha256] {
                for signed in [false, true] {
                    let block = pool.get(len).await.unwrap();
                    let (block, sums) = read_part_summed(
                        &handle,
                        &path,
                        offset as u64,
                        block,
                        len,
                        algorithm,
                        signed,
                    )
                    .await
                    .unwrap();
                    assert_eq!(&block[..len], part);
                    assert_eq!(sums.checksum, algorithm.compute(part), "{algorithm:?}");
                    let expected = signed.then(|| PayloadHash::of(part));
                    assert_eq!(sums.payload, expected, "{algorithm:?}, signed {signed}");
                    // A body already in memory is summed the same way.
                    assert_eq!(PartSums::of(algorithm, part, signed), sums);
                    let declared = sums.payload_hash(signed, part);
                    let unsigned = PayloadHash::Unsigned;
                    assert_eq!(declared, expected.unwrap_or(unsigned));
                }
            }
        }
    }
}
