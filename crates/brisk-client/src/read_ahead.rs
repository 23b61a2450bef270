//! [`Client::read_ahead`]: an object read front to back by ranged GETs in parallel, handed out in
//! order, for destinations that take bytes only in order (a pipe, a Python file object).
//!
//! One GET is one TCP connection, and on a real network one connection carries far less than the
//! link: its window over the round trip (AWS's performance guidelines for S3 ask for parallel
//! connections for this reason; not measured here against S3). A file can be
//! written at offsets as ranges land ([`Client::download`]); a stream cannot, so here up to
//! `parts_in_flight` ranges of `part_size` are read ahead, each into a pooled block of its own, and
//! the blocks are handed out in order. Through a 2 ms round trip Python's `download_fileobj` read
//! 1 GiB at 1.21 GiB/s this way against 0.59 through one GET (BENCHMARKS-log.md, "`download_fileobj`
//! in parallel ranges").
//!
//! # Consistency and integrity
//!
//! The object's HEAD comes first: its size plans the ranges, and every range is pinned to its ETag
//! with `If-Match`, so an object replaced during the read is [`Error::ObjectChanged`], never a mix
//! of versions. A full-object checksum stored with the object (S3's CRCs of `FULL_OBJECT` type, or
//! any checksum of a single-part object) is computed over the blocks in order as they are handed out
//! and compared after the last one: a mismatch is [`Error::ChecksumMismatch`] in place of the end.
//! Azure ranges of up to 4 MiB are each checked against the MD5 the service sends with them.
//!
//! # Memory
//!
//! At most `parts_in_flight` blocks being filled plus the one the caller holds, each paid from the
//! client's budget.

use std::collections::VecDeque;

use brisk_mem::PooledBlock;
use brisk_wire::checksum::{ChecksumValue, Checksummer};
use tokio::task::JoinHandle;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::transfer::TransferOptions;

/// How many bytes a range's socket holds before its reader wakes: 1 MiB, as for `get_bytes`
/// (see `SO_RCVLOWAT` in the client's notes): without it each of the ranges in flight wakes its
/// task for every segment that arrives.
const RANGE_WAKE_AFTER: usize = 1 << 20;

/// An object being read ahead in parallel ranges; see the [module docs](self).
#[derive(Debug)]
pub struct ReadAhead {
    client: Client,
    bucket: String,
    key: String,
    etag: String,
    size: u64,
    part_size: u64,
    parts_in_flight: usize,
    /// The next range to start.
    next_offset: u64,
    /// The ranges being read, in order.
    pending: VecDeque<JoinHandle<Result<(PooledBlock, usize)>>>,
    /// The stored full-object checksum, and the running one over the blocks handed out.
    checksum: Option<(ChecksumValue, Checksummer)>,
}

impl Client {
    /// Starts reading `bucket`/`key` front to back in parallel ranges (see
    /// [`crate::read_ahead`]): a HEAD, then up to `options.parts_in_flight` ranged GETs of
    /// `options.part_size` ahead of the caller.
    pub async fn read_ahead(
        &self,
        bucket: &str,
        key: &str,
        options: &TransferOptions,
    ) -> Result<ReadAhead> {
        let head = self.head_for_download(bucket, key).await?;
        let etag = head
            .meta
            .etag
            .clone()
            .ok_or_else(|| Error::UnexpectedResponse {
                what: format!("HEAD of {bucket}/{key} answered without an ETag to pin ranges to"),
            })?;
        let checksum = head
            .stored
            .full
            .map(|expected| (expected, Checksummer::new(expected.algorithm())));
        let mut reader = ReadAhead {
            client: self.clone(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            etag,
            size: head.meta.content_length,
            part_size: options.part_size.max(1) as u64,
            parts_in_flight: options.parts_in_flight.max(1),
            next_offset: 0,
            pending: VecDeque::new(),
            checksum,
        };
        reader.start_ranges();
        Ok(reader)
    }
}

impl ReadAhead {
    /// The object's size.
    pub fn content_length(&self) -> u64 {
        self.size
    }

    /// The next block of the object, in order, and how many of its bytes are the object's; `None`
    /// after the last (once its checksum, if it has one, matched).
    pub async fn next_block(&mut self) -> Result<Option<(PooledBlock, usize)>> {
        let Some(front) = self.pending.pop_front() else {
            return self.finish().map(|()| None);
        };
        let (block, len) = front.await.map_err(|e| Error::UnexpectedResponse {
            what: format!("ranged read task failed: {e}"),
        })??;
        self.start_ranges();
        if let Some((_, summer)) = &mut self.checksum {
            summer.update(&block[..len]);
        }
        Ok(Some((block, len)))
    }

    /// Keeps `parts_in_flight` ranges being read.
    fn start_ranges(&mut self) {
        while self.pending.len() < self.parts_in_flight && self.next_offset < self.size {
            let offset = self.next_offset;
            let len = self.part_size.min(self.size - offset);
            self.next_offset += len;
            let (client, bucket, key, etag) = (
                self.client.clone(),
                self.bucket.clone(),
                self.key.clone(),
                self.etag.clone(),
            );
            self.pending.push_back(tokio::spawn(async move {
                let len = len as usize;
                let mut block = client.buffer_pool().get(len).await?;
                let mut stream = client
                    .get_range_stream(&bucket, &key, &etag, offset, len as u64)
                    .await?;
                // Woken per MiB that has arrived, not per segment (as `get_bytes` reads).
                stream.wake_after(RANGE_WAKE_AFTER);
                let mut filled = 0;
                while filled < len {
                    let n = stream.read(&mut block[filled..len]).await?;
                    if n == 0 {
                        return Err(Error::UnexpectedResponse {
                            what: format!(
                                "the range at {offset} of {bucket}/{key} ended after {filled} of {len} bytes"
                            ),
                        });
                    }
                    filled += n;
                }
                // The end of the range: its connection goes back to the pool.
                stream.read(&mut [0u8; 1]).await?;
                Ok((block, len))
            }));
        }
    }

    /// After the last block: the whole object's checksum, if it has one stored.
    fn finish(&mut self) -> Result<()> {
        match self.checksum.take() {
            Some((expected, summer)) => crate::integrity::checksum_matches(
                &self.bucket,
                &self.key,
                &expected,
                summer.finalize(),
            ),
            None => Ok(()),
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        for task in &self.pending {
            task.abort();
        }
    }
}
