//! The streamed download: workers that each stream spans of consecutive ranges with one GET,
//! through two pooled blocks, into the file (see [`Client::download`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use brisk_mem::PooledBlock;
use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer};
use tokio::task::JoinSet;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::local_file::file_error;
use crate::stream_count::StreamCount;
use crate::transfer::{TransferOptions, TransferProgress};

use super::PinnedObject;
use super::check::{Computed, DownloadCheck, RangeCrcs, Ranges};
use super::file_writer::{FileWrite, Written, start_file_writer, stopped};

impl Client {
    /// The S3 body of [`download_to`](Self::download_to): the workers described there.
    pub(super) async fn download_streamed(
        &self,
        target: &PinnedObject<'_>,
        file: &Arc<std::fs::File>,
        temp: &Path,
        options: &TransferOptions,
        check: &DownloadCheck,
        count: bool,
    ) -> Result<Computed> {
        let size = target.size;
        // A worker that has ended may still have a write queued while the one started in its
        // place queues its own: room for two per stream.
        let (writes, writer) = start_file_writer(Arc::clone(file), 2 * options.parts_in_flight);
        // Azure sends the MD5 of a range of up to 4 MiB: one part per GET keeps it, and a stream
        // running alone asks for no more.
        let md5_per_part = self.dialect().sends_range_md5(options.part_size as u64);
        let job = Arc::new(StreamedDownload {
            bucket: target.bucket.to_owned(),
            key: target.key.to_owned(),
            etag: target.etag.to_owned(),
            temp: temp.to_owned(),
            chunk: DOWNLOAD_CHUNK.min(options.part_size),
            algorithm: check.algorithm(),
            progress: options.progress.clone().filter(|_| count),
            parts: std::sync::Mutex::new(PartQueue {
                ranges: Ranges::new(size, options.part_size, check),
                index: 0,
                span_parts: if md5_per_part {
                    1
                } else {
                    span_parts(size, options.part_size as u64, options.parts_in_flight)
                },
                scalable: !md5_per_part,
            }),
            crc: std::sync::Mutex::new(RangeCrcs::new(check, size)),
            streams: StreamCount::new(size, options.parts_in_flight, options.measure_streams),
            file: Arc::clone(file),
            writes,
        });
        let mut workers = JoinSet::new();
        for _ in 0..options.parts_in_flight {
            workers.spawn(stream_ranges(self.clone(), Arc::clone(&job)));
        }
        // The first failure ends the attempt; dropping the set aborts the other workers. Workers
        // that end early leave their spans to the others; more are started when the measuring
        // wants all streams back.
        loop {
            tokio::select! {
                done = workers.join_next() => match done {
                    Some(done) => done.map_err(|e| Error::UnexpectedResponse {
                        what: format!("download worker failed: {e}"),
                    })??,
                    None => break,
                },
                () = job.streams.wants_more() => {
                    for _ in 0..job.streams.to_start() {
                        workers.spawn(stream_ranges(self.clone(), Arc::clone(&job)));
                    }
                }
            }
        }
        // Every worker has ended and dropped its handle: the job is this function's alone.
        let job = Arc::into_inner(job).expect("the workers have ended");
        let crc = job.crc.into_inner().unwrap_or_else(|e| e.into_inner());
        // Dropping the job's sender ends the writer, whose writes the workers have all awaited.
        drop(job.writes);
        writer.await.map_err(|e| Error::UnexpectedResponse {
            what: format!("file writer failed: {e}"),
        })?;
        Ok(crc.finish())
    }
}

/// The blocks a streamed download range passes through, two per range in flight: 1 MiB each, so
/// that four ranges in flight hold 8 MiB instead of a whole 8 MiB part each (a 4 GiB download to
/// tmpfs: 13 MiB peak RSS; BENCHMARKS-log.md, "Download to a file"), with few enough file writes per
/// GiB (1,024) that handing each to the download's writer thread costs nothing measurable.
pub(crate) const DOWNLOAD_CHUNK: usize = 1024 * 1024;

/// How much one GET of a streamed download asks for, at most: consecutive parts up to 64 MiB
/// (8 default parts), so that a 4 GiB download is 64 requests instead of 512. Each request costs
/// the server a lookup and the client a round trip before its first byte; on MinIO the 512 cost
/// more server CPU than the bytes' own transfer did (BENCHMARKS-log.md, "Download to a file").
pub(crate) const DOWNLOAD_SPAN: u64 = 64 * 1024 * 1024;

/// Parts per GET: as many as fit in [`DOWNLOAD_SPAN`], but no more than an even share of the
/// object among the workers, so that a small object still spreads over them; at least one.
fn span_parts(size: u64, part_size: u64, workers: usize) -> u64 {
    let part_size = part_size.max(1);
    let parts = size.div_ceil(part_size);
    (DOWNLOAD_SPAN / part_size)
        .min(parts / workers.max(1) as u64)
        .max(1)
}

/// What the workers of one streamed download attempt share.
struct StreamedDownload {
    bucket: String,
    key: String,
    etag: String,
    temp: PathBuf,
    /// The size of each worker's block.
    chunk: usize,
    algorithm: Option<ChecksumAlgorithm>,
    /// Where progress is counted, on the attempt that counts it.
    progress: Option<TransferProgress>,
    /// The parts not yet taken.
    parts: std::sync::Mutex<PartQueue>,
    crc: std::sync::Mutex<RangeCrcs>,
    /// How many workers run (see [`StreamCount`]).
    streams: StreamCount,
    /// The file, for the writes a worker running alone makes itself.
    file: Arc<std::fs::File>,
    /// The download's one file writer (see [`start_file_writer`]).
    writes: std::sync::mpsc::SyncSender<FileWrite>,
}

impl StreamedDownload {
    /// The next span for a worker: as long as all workers' spans together while it runs alone
    /// (the same bytes in flight, a quarter of the requests, each of which leaves the one
    /// connection idle for a round trip).
    fn next_span(&self) -> Option<(u64, u64, u64)> {
        let scale = self.streams.span_scale();
        self.parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_span(scale)
    }

    fn parts_of(&self, offset: u64, len: u64) -> Ranges {
        self.parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .parts_of(offset, len)
    }
}

/// A streamed download's parts (`part_size` ranges, cut at the stored parts' boundaries) not yet
/// taken, handed out a span of consecutive parts at a time.
struct PartQueue {
    ranges: Ranges,
    /// The index of the next part.
    index: u64,
    /// How many consecutive parts one GET asks for (see [`DOWNLOAD_SPAN`]).
    span_parts: u64,
    /// Whether a span may be longer while one stream runs alone (not where each GET must stay
    /// one part).
    scalable: bool,
}

impl PartQueue {
    /// The next span, of `scale` times the usual parts where spans may be longer: the index of
    /// its first part, its offset and its length.
    fn next_span(&mut self, scale: usize) -> Option<(u64, u64, u64)> {
        let (offset, mut len) = self.ranges.next()?;
        let first = self.index;
        self.index += 1;
        let parts = if self.scalable {
            self.span_parts * scale as u64
        } else {
            self.span_parts
        };
        while self.index - first < parts {
            let Some((_, more)) = self.ranges.next() else {
                break;
            };
            len += more;
            self.index += 1;
        }
        Some((first, offset, len))
    }

    /// The parts of the span at `offset`, `len` bytes long, one by one: the ones
    /// [`next_span`](Self::next_span) joined into it.
    fn parts_of(&self, offset: u64, len: u64) -> Ranges {
        Ranges {
            size: offset + len,
            next: offset,
            ..self.ranges
        }
    }
}

/// A write made by a worker running alone that takes longer than this (1 MiB to the page cache
/// takes 0.15–0.6 ms) says the storage is throttling writers: the worker hands its blocks to the
/// writer thread from then on, so that the runtime's thread does not wait on storage.
const SLOW_WRITE_HERE: std::time::Duration = std::time::Duration::from_millis(5);

/// A worker writing its own blocks yields to the runtime's other tasks once per this many blocks
/// (8 MiB: a few milliseconds).
const WRITES_HERE_PER_YIELD: u32 = 8;

/// The low-water mark a streamed download's worker sets while it waits for the file writer: 4 MiB,
/// which Linux caps at half the largest receive buffer (3 MiB by default). Measured against
/// leaving the mark at a block's worth: from MinIO, about half the wake-ups again.
const WAKE_AFTER_WHILE_WRITING: usize = 4 << 20;

/// One worker of a streamed download: ranges one after another on one connection, each read
/// through the worker's two blocks into the file at its offset.
///
/// The worker fills one block from the socket, summing each read as it lands (the bytes are still
/// in the CPU's cache), hands it to a blocking write and fills the other meanwhile, so the socket
/// and the file are busy at once. A worker holds at most two blocks and one write in flight. A
/// worker running alone (see [`StreamCount`]) writes each block itself instead, and ends between
/// spans when fewer streams are wanted.
async fn stream_ranges(client: Client, job: Arc<StreamedDownload>) -> Result<()> {
    // The block is taken with the first range: a worker that finds no range holds none.
    let Some(first) = job.next_span() else {
        job.streams.ended();
        return Ok(());
    };
    let block = client.buffer_pool().get(job.chunk).await?;
    let mut writer = ChunkWriter::new(Arc::clone(&job));
    let streamed = stream_ranges_through(&client, &job, first, block, &mut writer).await;
    // The last write is awaited even when a read failed, so that no write to the file outlives
    // the attempt.
    let written = writer.finish().await;
    streamed.and(written)
}

async fn stream_ranges_through(
    client: &Client,
    job: &StreamedDownload,
    mut span: (u64, u64, u64),
    mut block: PooledBlock,
    writer: &mut ChunkWriter,
) -> Result<()> {
    loop {
        let (mut index, offset, len) = span;
        let mut stream = client
            .get_range_stream(&job.bucket, &job.key, &job.etag, offset, len)
            .await?;
        // A block is filled from the socket at a time: a wake-up for less is one too many.
        stream.wake_after(job.chunk);
        // Each part is summed on its own: the parts' CRCs are what the object's checksum is
        // rebuilt from.
        for (part_offset, part_len) in job.parts_of(offset, len) {
            let mut sum = job.algorithm.map(Checksummer::new);
            let end = part_offset + part_len;
            let mut at = part_offset;
            while at < end {
                let want = (end - at).min(job.chunk as u64) as usize;
                let mut filled = 0;
                while filled < want {
                    let n = stream.read(&mut block[filled..want]).await?;
                    if n == 0 {
                        return Err(Error::UnexpectedResponse {
                            what: format!(
                                "range at {offset} ended after {} of {len} bytes",
                                at - offset + filled as u64
                            ),
                        });
                    }
                    if let Some(sum) = &mut sum {
                        sum.update(&block[filled..filled + n]);
                    }
                    filled += n;
                }
                if !(job.streams.alone() && writer.write_here(&block, at, filled).await?) {
                    // While the worker waits for the writer, the segments that keep arriving
                    // would each wake it for nothing.
                    stream.wake_after(WAKE_AFTER_WHILE_WRITING);
                    block = writer.write(client, block, at, filled).await?;
                    stream.wake_after(job.chunk);
                }
                at += filled as u64;
                if let Some(progress) = &job.progress {
                    progress.add(filled as u64);
                }
                job.streams.landed(filled as u64);
            }
            job.crc.lock().unwrap_or_else(|e| e.into_inner()).landed(
                index,
                sum.map(Checksummer::finalize),
                part_offset,
                part_len,
            );
            index += 1;
        }
        // The end of the stream gives its connection back to the pool.
        let rest = stream.read(&mut block[..1]).await?;
        debug_assert_eq!(rest, 0);
        if job.streams.retire() {
            return Ok(());
        }
        match job.next_span() {
            Some(next) => span = next,
            None => {
                job.streams.ended();
                return Ok(());
            }
        }
    }
}

/// A streamed-download worker's side of the file writer: at most one of its writes in flight.
struct ChunkWriter {
    job: Arc<StreamedDownload>,
    /// Where the writer gives this worker's blocks back: one channel for the whole worker, so a
    /// write costs no allocation.
    done: tokio::sync::mpsc::Sender<Written>,
    written: tokio::sync::mpsc::Receiver<Written>,
    /// Whether a write is in flight.
    pending: bool,
    /// The worker's second block, back from the writer, while the worker writes its blocks itself.
    spare: Option<PooledBlock>,
    /// Whether one of the worker's own writes was slow (storage throttling writers): it then
    /// hands every block to the writer thread, as the runtime's thread must not wait on storage.
    slow_here: bool,
    /// Blocks the worker has written itself.
    written_here: u32,
}

impl ChunkWriter {
    fn new(job: Arc<StreamedDownload>) -> Self {
        let (done, written) = tokio::sync::mpsc::channel(1);
        Self {
            job,
            done,
            written,
            pending: false,
            spare: None,
            slow_here: false,
            written_here: 0,
        }
    }

    /// Writes `block[..len]` at `offset` on this thread, while the worker runs alone: one stream
    /// from a server that is the bound, where handing each block to the writer thread costs a
    /// wake-up on each side and a cache's worth of copying across cores, and the client needs one
    /// thread, not two (BENCHMARKS-log.md, "Download streams chosen by measurement"). Returns false,
    /// having written nothing, once a write here has taken longer than [`SLOW_WRITE_HERE`].
    async fn write_here(&mut self, block: &PooledBlock, offset: u64, len: usize) -> Result<bool> {
        use std::os::unix::fs::FileExt;
        if self.slow_here {
            return Ok(false);
        }
        if self.pending {
            // The block handed off before: kept for when blocks are handed off again.
            self.spare = Some(self.join().await?);
        }
        let started = std::time::Instant::now();
        self.job
            .file
            .write_all_at(&block[..len], offset)
            .map_err(|e| file_error(&self.job.temp, "writing", e))?;
        if started.elapsed() > SLOW_WRITE_HERE {
            self.slow_here = true;
        }
        // A socket with data waiting does not yield: let the runtime's other tasks run, every
        // few blocks (on a multi-thread runtime each yield can wake an idle worker thread to
        // steal the task).
        self.written_here += 1;
        if self.written_here.is_multiple_of(WRITES_HERE_PER_YIELD) {
            tokio::task::yield_now().await;
        }
        Ok(true)
    }

    /// Starts writing `block[..len]` at `offset` and returns the block to fill next: the one the
    /// previous write gave back (waiting for it), or on the first write a second block.
    ///
    /// The second block is taken only if the memory budget has room now: a worker waiting for it
    /// while holding its first could wait forever on workers doing the same. Without it the worker
    /// waits for each write before reading on, as with a single block.
    async fn write(
        &mut self,
        client: &Client,
        block: PooledBlock,
        offset: u64,
        len: usize,
    ) -> Result<PooledBlock> {
        let next = if let Some(spare) = self.spare.take() {
            spare
        } else if self.pending {
            self.join().await?
        } else {
            match client.buffer_pool().try_get(self.job.chunk) {
                Ok(second) => second,
                Err(_) => {
                    self.send(block, offset, len)?;
                    return self.join().await;
                }
            }
        };
        self.send(block, offset, len)?;
        // The write handed off before is often done by now, and a socket with data waiting does
        // not yield either: without this a download on a current-thread runtime could run through
        // a whole span before anything else ran (or before a drop could take effect).
        tokio::task::yield_now().await;
        Ok(next)
    }

    fn send(&mut self, block: PooledBlock, offset: u64, len: usize) -> Result<()> {
        self.job
            .writes
            .send(FileWrite {
                block,
                offset,
                len,
                done: self.done.clone(),
            })
            .map_err(|_| stopped())?;
        self.pending = true;
        Ok(())
    }

    /// Waits for the write in flight and takes its block back.
    async fn join(&mut self) -> Result<PooledBlock> {
        self.pending = false;
        self.written
            .recv()
            .await
            .ok_or_else(stopped)?
            .map_err(|e| file_error(&self.job.temp, "writing", e))
    }

    /// Waits for the write in flight, if any.
    async fn finish(mut self) -> Result<()> {
        if self.pending {
            self.join().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn a_span_is_up_to_64_mib_of_parts_and_an_even_share_at_most() {
        assert_eq!(
            span_parts(4096 * MIB, 8 * MIB, 4),
            8,
            "64 MiB of 8 MiB parts"
        );
        assert_eq!(
            span_parts(40 * MIB, 8 * MIB, 4),
            1,
            "5 parts over 4 workers"
        );
        assert_eq!(
            span_parts(100 * MIB, 8 * MIB, 4),
            3,
            "13 parts over 4 workers"
        );
        assert_eq!(
            span_parts(4096 * MIB, 100 * MIB, 4),
            1,
            "a part larger than a span"
        );
        assert_eq!(span_parts(0, 8 * MIB, 4), 1);
        assert!(span_parts(10, 0, 0) >= 1, "no division by zero");
    }

    #[test]
    fn spans_split_back_into_exactly_the_parts_they_joined() {
        // 8 MiB steps cut at 5 MiB stored parts: the parts are uneven, and spans must still cover
        // them in order, each part once, with consecutive indices; longer while one stream runs
        // alone (scale 4), except where each GET must stay its spans' parts.
        let size = 97 * MIB + 3;
        let ranges = Ranges {
            size,
            step: 8 * MIB,
            boundary: Some(5 * MIB),
            next: 0,
        };
        let expected: Vec<(u64, u64)> = Ranges { ..ranges }.collect();
        for (scalable, scales) in [(true, [1, 1]), (true, [1, 4]), (false, [4, 4])] {
            let mut queue = PartQueue {
                ranges: Ranges { ..ranges },
                index: 0,
                span_parts: 3,
                scalable,
            };
            let mut seen = Vec::new();
            let mut spans = 0;
            let mut longest = 0;
            while let Some((first, offset, len)) = queue.next_span(scales[spans % 2]) {
                assert_eq!(first, seen.len() as u64, "indices run on from span to span");
                let parts: Vec<_> = queue.parts_of(offset, len).collect();
                let most = if scalable { 3 * scales[spans % 2] } else { 3 };
                assert!(!parts.is_empty() && parts.len() <= most, "{parts:?}");
                assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), len);
                longest = longest.max(parts.len());
                seen.extend(parts);
                spans += 1;
            }
            assert_eq!(seen, expected);
            if !(scalable && scales[1] == 4) {
                assert_eq!(spans, expected.len().div_ceil(3), "spans of 3 parts");
            }
            let expect_longest = if scalable && scales[1] == 4 { 12 } else { 3 };
            assert_eq!(
                longest, expect_longest,
                "scalable {scalable}, scales {scales:?}"
            );
        }
    }
}
