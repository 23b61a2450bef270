//! [`ObjectWriter`]: an object written piece by piece, as a file is, in bounded memory.
//!
//! A program that produces an object a few bytes at a time (a Parquet writer, a compressor, a
//! Python file object handed to a library) cannot say how long it will be, and should not need the
//! whole of it in memory or in a temporary file first. The writer copies what it is given into a
//! pooled block, one part at a time; a full part is sent while the next one fills. If everything
//! fits in the first part, the object is one PUT made on [`ObjectWriter::finish`]; otherwise it is
//! a multipart upload (S3) or staged blocks (Azure) with up to `parts_in_flight` parts in flight.
//! Part sizes follow [`stream_part_size`], as for [`Client::upload_reader`]: a stream of unknown
//! length can reach about 78 GiB.
//!
//! A caller that reads from somewhere else can read straight into the part instead of copying:
//! [`ObjectWriter::spare`] lends the unfilled rest of the current part, and
//! [`ObjectWriter::advance`] counts what was put there.
//!
//! # Memory
//!
//! At most `parts_in_flight + 1` blocks: the parts being sent and the one being filled, each paid
//! from the client's budget before it is taken (a write waits for the budget when it is full).
//!
//! # Failure and cancellation
//!
//! A failed write, a failed part or a cancelled call (a future dropped before it finished) leaves
//! the writer failed: every later call returns an error, and [`ObjectWriter::finish`] aborts the
//! multipart upload instead of completing it, so no truncated object is ever stored. The
//! CreateMultipartUpload runs as a task of its own, so a call cancelled while it is in flight
//! does not lose the upload it creates: that one is aborted too.
//! [`ObjectWriter::abort`] gives up on purpose. A writer dropped without either aborts its
//! multipart upload in the background when dropped inside a tokio runtime; elsewhere the parts stay
//! until the bucket's lifecycle rule for incomplete uploads removes them.

use brisk_mem::{MAX_BLOCK_SIZE, PooledBlock};
use brisk_wire::xml::CompletedPart;
use tokio::task::JoinSet;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::multipart::next_finished_part;
use crate::request::{check_bucket, check_key};
use crate::transfer::{MAX_PARTS, TransferOptions, UploadResult, check_upload_options};

/// Parts between doublings of the part size of a stream of unknown length: 1,000. With 5 MiB parts
/// the size reaches the 8 MiB block limit at part 1,001; a stream never runs out of parts before it
/// runs into the 78 GiB ceiling.
pub const PART_SIZE_DOUBLING_INTERVAL: u32 = 1_000;

/// The size of part `part_number` (1-based) of a stream whose first parts are `first` bytes.
pub fn stream_part_size(first: usize, part_number: u32) -> usize {
    let doublings = (part_number.saturating_sub(1) / PART_SIZE_DOUBLING_INTERVAL).min(8);
    first
        .saturating_mul(1usize << doublings)
        .min(MAX_BLOCK_SIZE)
}

/// An object being written; see the [module docs](self).
#[derive(Debug)]
pub struct ObjectWriter {
    client: Client,
    bucket: String,
    key: String,
    options: TransferOptions,
    /// Whether parts carry a signed payload hash.
    signed: bool,
    /// The part being filled; none before the first byte and right after a part was sent.
    block: Option<PooledBlock>,
    /// Bytes of `block` filled.
    filled: usize,
    /// The number of the part being filled (1-based).
    part_number: u32,
    /// Bytes in parts handed to the upload so far.
    sent: u64,
    /// The multipart upload, once a first part has been sent.
    upload_id: Option<String>,
    /// The CreateMultipartUpload in flight, as a task of its own: a call cancelled while it runs
    /// leaves it here, so that the upload it creates is still known, and aborted, instead of being
    /// left at the service.
    creating: Option<tokio::task::JoinHandle<Result<String>>>,
    tasks: JoinSet<Result<CompletedPart>>,
    done: Vec<CompletedPart>,
    /// Why the writer cannot go on, once something failed.
    failure: Option<String>,
    /// Set while an async call runs (or a part is taken out): found set at the start of the next
    /// call, it means the last one was cancelled part way (its future dropped), and what it was
    /// doing is lost.
    busy: bool,
}

impl Client {
    /// A writer for `bucket`/`key` (see [`crate::object_writer`]). Nothing is sent until the first
    /// part is full or the writer is finished; the bucket and key are checked now.
    pub fn object_writer(
        &self,
        bucket: &str,
        key: &str,
        options: TransferOptions,
    ) -> Result<ObjectWriter> {
        check_bucket(bucket)?;
        check_key(key)?;
        check_upload_options(&options)?;
        let options = self.with_dialect_checksum(options);
        Ok(ObjectWriter {
            client: self.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            signed: self.signs_payload(options.payload_signing),
            options,
            block: None,
            filled: 0,
            part_number: 1,
            sent: 0,
            upload_id: None,
            creating: None,
            tasks: JoinSet::new(),
            done: Vec::new(),
            failure: None,
            busy: false,
        })
    }
}

impl ObjectWriter {
    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.sent + self.filled as u64
    }

    /// The size of the part being filled.
    fn part_size(&self) -> usize {
        stream_part_size(self.options.part_size, self.part_number)
    }

    /// Copies as much of `data` as fits in the part being filled, without waiting: 0 when there is
    /// no part with room (before the first byte, or when the part is full). For small writes this
    /// is the whole call; [`write`](Self::write) does the rest.
    pub fn write_buffered(&mut self, data: &[u8]) -> usize {
        if self.failure.is_some() || self.busy {
            return 0;
        }
        let size = self.part_size();
        let Some(block) = self.block.as_mut() else {
            return 0;
        };
        let n = data.len().min(size - self.filled);
        block[self.filled..self.filled + n].copy_from_slice(&data[..n]);
        self.filled += n;
        n
    }

    /// Writes all of `data`: copies it into parts, sending each full part (and waiting for a slot
    /// among `parts_in_flight`, or for the budget) before filling the next.
    pub async fn write(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let n = self.write_buffered(data);
            data = &data[n..];
            if !data.is_empty() {
                self.spare().await?;
            }
        }
        Ok(())
    }

    /// The unfilled rest of the part being filled, for a read straight into it; follow with
    /// [`advance`](Self::advance) by the bytes put there. Sends the current part first if it is
    /// full, and takes a block for the next one (waiting for the budget).
    pub async fn spare(&mut self) -> Result<&mut [u8]> {
        self.enter()?;
        let ready = self.make_room().await;
        self.leave(ready)?;
        let size = self.part_size();
        let block = self
            .block
            .as_mut()
            .expect("make_room leaves a block with room");
        Ok(&mut block[self.filled..size])
    }

    /// Counts `n` bytes put into the slice [`spare`](Self::spare) returned.
    ///
    /// # Panics
    ///
    /// If `n` is more than that slice's length.
    pub fn advance(&mut self, n: usize) {
        assert!(
            self.block.is_some() && self.filled + n <= self.part_size(),
            "advance({n}) past the spare room of the part"
        );
        self.filled += n;
    }

    /// The part being filled, taken out for a read elsewhere (the blocking pool): its block, the
    /// bytes already in it, and the part's size. Until [`put_part_back`](Self::put_part_back) the
    /// writer counts as busy, so a caller that never gives it back (a cancelled future) fails the
    /// writer rather than losing the part's bytes unnoticed.
    pub(crate) async fn take_part(&mut self) -> Result<(PooledBlock, usize, usize)> {
        self.spare().await?;
        self.busy = true;
        let block = self.block.take().expect("spare leaves a block with room");
        Ok((block, self.filled, self.part_size()))
    }

    /// Gives back the block [`take_part`](Self::take_part) took, with `filled` bytes in it now.
    pub(crate) fn put_part_back(&mut self, block: PooledBlock, filled: usize) {
        debug_assert!(filled <= self.part_size());
        self.block = Some(block);
        self.filled = filled;
        self.busy = false;
    }

    /// Gives up the part being filled without returning its block to the pool, and fails the
    /// writer: for a caller that lent the block's memory (from [`spare`](Self::spare)) to code that
    /// may still hold on to it. The block's memory stays mapped, and its share of the budget
    /// taken, for the rest of the process.
    pub fn abandon_part(&mut self, why: &str) {
        if let Some(block) = self.block.take() {
            std::mem::forget(block);
        }
        self.filled = 0;
        self.failure.get_or_insert_with(|| why.to_owned());
    }

    /// Sends what is left and completes the object; returns its ETag, size and part count. A
    /// writer that failed aborts its multipart upload instead and returns the failure.
    pub async fn finish(mut self) -> Result<UploadResult> {
        let finished = match self.enter() {
            Ok(()) => self.complete().await,
            Err(e) => Err(e),
        };
        if finished.is_err() {
            // Best effort: the failure is what the caller needs to see.
            let _ = self.abort_upload().await;
        }
        finished
    }

    /// Gives up: stops the parts in flight and aborts the multipart upload, if one was started.
    /// Nothing is stored.
    pub async fn abort(mut self) -> Result<()> {
        self.abort_upload().await
    }

    /// Starts an async call: refused if the writer failed or a previous call was cancelled.
    fn enter(&mut self) -> Result<()> {
        if self.busy {
            self.failure.get_or_insert_with(|| {
                "an earlier write was cancelled before it finished".to_owned()
            });
        }
        if let Some(why) = &self.failure {
            return Err(Error::InvalidArgument {
                what: format!(
                    "writing {}/{}: the writer failed earlier ({why}); nothing will be stored",
                    self.bucket, self.key
                ),
            });
        }
        self.busy = true;
        Ok(())
    }

    /// Ends an async call, recording its failure.
    fn leave<T>(&mut self, outcome: Result<T>) -> Result<T> {
        self.busy = false;
        if let Err(e) = &outcome {
            self.failure.get_or_insert_with(|| e.to_string());
        }
        outcome
    }

    /// Makes sure the part being filled has room: sends it if full, then takes a block.
    async fn make_room(&mut self) -> Result<()> {
        if self.block.is_some() && self.filled == self.part_size() {
            self.send_part().await?;
        }
        if self.block.is_none() {
            let block = self.client.buffer_pool().get(self.part_size()).await?;
            self.block = Some(block);
            self.filled = 0;
        }
        Ok(())
    }

    /// Hands the part being filled to a task of its own, starting the multipart upload first if
    /// this is the first part, and waiting for a slot among `parts_in_flight`.
    async fn send_part(&mut self) -> Result<()> {
        if u64::from(self.part_number) > MAX_PARTS {
            return Err(Error::InvalidArgument {
                what: format!(
                    "the object is longer than {MAX_PARTS} parts ({} bytes sent so far); S3 allows {MAX_PARTS}",
                    self.sent
                ),
            });
        }
        let upload_id = match &self.upload_id {
            Some(id) => id.clone(),
            None => {
                let creating = self.creating.get_or_insert_with(|| {
                    let (client, bucket, key, options) = (
                        self.client.clone(),
                        self.bucket.clone(),
                        self.key.clone(),
                        self.options.clone(),
                    );
                    tokio::spawn(async move {
                        client
                            .create_multipart_upload(&bucket, &key, &options)
                            .await
                    })
                });
                let created = creating.await;
                self.creating = None;
                let id = created.map_err(|e| Error::UnexpectedResponse {
                    what: format!("the task creating the multipart upload failed: {e}"),
                })??;
                self.upload_id = Some(id.clone());
                id
            }
        };
        while self.tasks.len() >= self.options.parts_in_flight {
            if let Some(part) = next_finished_part(&mut self.tasks, "upload").await? {
                self.done.push(part);
            }
        }
        let block = self
            .block
            .take()
            .expect("send_part is called with a part being filled");
        let len = self.filled;
        let (client, bucket, key) = (self.client.clone(), self.bucket.clone(), self.key.clone());
        let (number, signed, checksum) = (self.part_number, self.signed, self.options.checksum);
        let progress = self.options.progress.clone();
        self.tasks.spawn(async move {
            let part = client
                .upload_part(
                    &bucket,
                    &key,
                    &upload_id,
                    number,
                    &block[..len],
                    signed,
                    checksum,
                    None,
                )
                .await?;
            // Counted once the service has the part.
            if let Some(progress) = progress {
                progress.add(len as u64);
            }
            Ok(part)
        });
        self.sent += len as u64;
        self.filled = 0;
        self.part_number += 1;
        Ok(())
    }

    /// One PUT if no part was sent, else the last part and CompleteMultipartUpload.
    async fn complete(&mut self) -> Result<UploadResult> {
        if self.upload_id.is_none() {
            let len = self.filled;
            let body: &[u8] = match &self.block {
                Some(block) => &block[..len],
                None => &[],
            };
            let put = self
                .client
                .put_with(&self.bucket, &self.key, body, &self.options.put_options())
                .await?;
            self.options.count(len as u64);
            self.block = None;
            return Ok(UploadResult {
                etag: put.etag,
                size: len as u64,
                parts: 1,
            });
        }
        if self.filled > 0 {
            self.send_part().await?;
        }
        self.block = None;
        while let Some(part) = next_finished_part(&mut self.tasks, "upload").await? {
            self.done.push(part);
        }
        let mut parts = std::mem::take(&mut self.done);
        parts.sort_by_key(|p| p.part_number);
        let count = parts.len() as u32;
        let upload_id = self.upload_id.clone().unwrap_or_default();
        let etag = self
            .client
            .complete_multipart_upload(
                &self.bucket,
                &self.key,
                &upload_id,
                parts,
                Some(&self.options),
            )
            .await?;
        self.upload_id = None;
        Ok(UploadResult {
            etag: Some(etag),
            size: self.sent,
            parts: count,
        })
    }

    async fn abort_upload(&mut self) -> Result<()> {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        self.block = None;
        if let Some(creating) = self.creating.take()
            && let Ok(Ok(id)) = creating.await
        {
            self.upload_id = Some(id);
        }
        match self.upload_id.take() {
            Some(id) => {
                self.client
                    .abort_multipart_upload(&self.bucket, &self.key, &id)
                    .await
            }
            None => Ok(()),
        }
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        // Finished and aborted writers have no upload left: `complete` and `abort_upload` take it
        // (and the creation in flight, if a call was cancelled during it).
        let creating = self.creating.take();
        if self.upload_id.is_none() && creating.is_none() {
            return;
        }
        let upload_id = self.upload_id.take();
        self.tasks.abort_all();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (client, bucket, key) =
                (self.client.clone(), self.bucket.clone(), self.key.clone());
            runtime.spawn(async move {
                let upload_id = match (upload_id, creating) {
                    (Some(id), _) => id,
                    (None, Some(creating)) => match creating.await {
                        Ok(Ok(id)) => id,
                        _ => return,
                    },
                    (None, None) => return,
                };
                let _ = client
                    .abort_multipart_upload(&bucket, &key, &upload_id)
                    .await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::{DEFAULT_PART_SIZE, MIN_PART_SIZE};

    #[test]
    fn part_size_grows_to_the_block_limit() {
        let mib = 1024 * 1024;
        assert_eq!(stream_part_size(MIN_PART_SIZE, 1), 5 * mib);
        assert_eq!(stream_part_size(MIN_PART_SIZE, 1_000), 5 * mib);
        assert_eq!(stream_part_size(MIN_PART_SIZE, 1_001), 8 * mib);
        assert_eq!(stream_part_size(DEFAULT_PART_SIZE, 10_000), 8 * mib);
        assert_eq!(stream_part_size(MIN_PART_SIZE, u32::MAX), 8 * mib);
    }

    #[test]
    fn ten_thousand_parts_hold_78_gib() {
        let total: u64 = (1..=MAX_PARTS as u32)
            .map(|n| stream_part_size(MIN_PART_SIZE, n) as u64)
            .sum();
        assert!(total > 75 * (1u64 << 30), "{total}");
    }
}
