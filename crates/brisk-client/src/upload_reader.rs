//! [`Client::upload_reader`]: uploads from an [`AsyncRead`] whose length is not known in advance;
//! [`Client::upload_from_read`] from a blocking [`std::io::Read`] (stdin, a pipe, a device);
//! [`Client::upload_object_stream`] from an object being read (a copy between services).
//!
//! The reader is read straight into the part an [`ObjectWriter`] is filling
//! ([`ObjectWriter::spare`]): an async reader on the runtime, a blocking one on the blocking pool
//! with the part's block moved there and back, so its bytes land in the part straight from the
//! read (tokio's `Stdin` or `File` would read into a buffer of their own and copy from it). The
//! writer does the rest: one PUT if the stream ends within the first part, otherwise a multipart
//! upload with up to `parts_in_flight` parts being sent while the next one is read.
//!
//! # Part size
//!
//! The length is unknown, so the part size cannot be chosen from it. Parts start at
//! `options.part_size` and double every [`PART_SIZE_DOUBLING_INTERVAL`] parts up to the pool's largest
//! block ([`MAX_BLOCK_SIZE`](brisk_mem::MAX_BLOCK_SIZE), 8 MiB), which keeps small streams in small parts and lets large ones
//! reach 10,000 × 8 MiB ≈ 78 GiB, S3's part limit times the largest block. A stream longer than that
//! fails with [`Error::InvalidArgument`] before part 10,001 is sent (and the upload is aborted).
//!
//! # Memory
//!
//! At most `parts_in_flight + 1` blocks are held: the ones being sent and the one being filled,
//! each paid from the client's budget (a part waits for its block when the budget is full).
//!
//! # Failure
//!
//! A failure of the reader or of any request aborts the multipart upload, so no parts linger.

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::object_stream::ObjectStream;
use crate::object_writer::ObjectWriter;
use crate::transfer::{TransferOptions, UploadResult};

pub use crate::object_writer::{PART_SIZE_DOUBLING_INTERVAL, stream_part_size};

impl Client {
    /// Uploads everything `reader` yields to `bucket`/`key`: one PUT if it ends within the first
    /// part, else a multipart upload (see [`crate::upload_reader`]). Returns the bytes read.
    pub async fn upload_reader<R: AsyncRead + Unpin>(
        &self,
        bucket: &str,
        key: &str,
        reader: &mut R,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        self.upload_source(bucket, key, Source::Async(reader), options)
            .await
    }

    /// [`upload_reader`](Self::upload_reader) from a blocking reader (stdin, a named pipe, a
    /// device, a socket): each part is read on the blocking pool straight into its pooled block,
    /// so a slow reader never holds up the runtime and no bytes pass through a buffer of the
    /// reader's own. Returns what `upload_reader` returns.
    pub async fn upload_from_read<R: std::io::Read + Send + 'static>(
        &self,
        bucket: &str,
        key: &str,
        reader: R,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        let source: Source<'_, tokio::io::Empty> = Source::Blocking(Some(Box::new(reader)));
        self.upload_source(bucket, key, source, options).await
    }

    /// Uploads what `source` (an object being read, from this client or another: another
    /// service, account or endpoint) yields to `bucket`/`key`, each part read from the source's
    /// connection straight into its pooled block: a copy between services with no buffer between
    /// the two sides. The source's stored checksum is checked as it ends (before the upload
    /// completes), and a source that fails, or whose bytes do not match, fails the upload, which
    /// is aborted. Returns what [`upload_reader`](Self::upload_reader) returns.
    pub async fn upload_object_stream(
        &self,
        bucket: &str,
        key: &str,
        source: ObjectStream,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        let source: Source<'_, tokio::io::Empty> = Source::Object(Box::new(source));
        self.upload_source(bucket, key, source, options).await
    }

    async fn upload_source<R: AsyncRead + Unpin>(
        &self,
        bucket: &str,
        key: &str,
        mut source: Source<'_, R>,
        options: TransferOptions,
    ) -> Result<UploadResult> {
        let mut writer = self.object_writer(bucket, key, options)?;
        match source.copy_into(&mut writer).await {
            Ok(()) => writer.finish().await,
            Err(e) => {
                // Best effort: the reader's failure is what the caller needs to see.
                let _ = writer.abort().await;
                Err(e)
            }
        }
    }
}

/// Where a stream upload's parts come from.
enum Source<'r, R> {
    /// An async reader, read on the runtime.
    Async(&'r mut R),
    /// A blocking reader, read on the blocking pool (taken out while a read runs there).
    Blocking(Option<Box<dyn std::io::Read + Send>>),
    /// An object being read.
    Object(Box<ObjectStream>),
}

impl<R: AsyncRead + Unpin> Source<'_, R> {
    /// Reads everything to the end of the stream into `writer`'s parts, straight into each.
    async fn copy_into(&mut self, writer: &mut ObjectWriter) -> Result<()> {
        let failed = |written: u64, source| Error::File {
            what: format!("reading the upload stream after {written} bytes"),
            source,
        };
        loop {
            let written = writer.written();
            let ended = match self {
                Self::Async(reader) => {
                    let n = reader
                        .read(writer.spare().await?)
                        .await
                        .map_err(|e| failed(written, e))?;
                    writer.advance(n);
                    n == 0
                }
                Self::Object(stream) => {
                    let n = stream.read(writer.spare().await?).await?;
                    writer.advance(n);
                    n == 0
                }
                Self::Blocking(slot) => {
                    let reader = slot.take().ok_or_else(|| Error::UnexpectedResponse {
                        what: "the upload stream's reader was lost by a failed read".into(),
                    })?;
                    let (reader, ended) = fill_on_blocking_pool(reader, writer).await?;
                    *slot = Some(reader);
                    ended.map_err(|e| failed(written, e))?
                }
            };
            if ended {
                return Ok(());
            }
        }
    }
}

/// Fills the rest of `writer`'s part from a blocking reader on the blocking pool, the part's block
/// moved there and back; returns the reader and whether the stream ended (a reader is not read
/// again after it said so: a terminal would wait for a second end of file), or the read's error.
async fn fill_on_blocking_pool(
    mut reader: Box<dyn std::io::Read + Send>,
    writer: &mut ObjectWriter,
) -> Result<(Box<dyn std::io::Read + Send>, std::io::Result<bool>)> {
    let (mut block, start, end) = writer.take_part().await?;
    let (reader, block, filled, read) = tokio::task::spawn_blocking(move || {
        let mut filled = start;
        let read = loop {
            if filled == end {
                break Ok(false);
            }
            match reader.read(&mut block[filled..end]) {
                Ok(0) => break Ok(true),
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        (reader, block, filled, read)
    })
    .await
    .map_err(|e| Error::UnexpectedResponse {
        what: format!("upload stream read task failed: {e}"),
    })?;
    writer.put_part_back(block, filled);
    Ok((reader, read))
}
