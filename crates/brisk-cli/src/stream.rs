//! `-` as a source or destination: objects streamed through pooled blocks, in memory bounded by
//! `--max-memory` whatever the object's size.
//!
//! - To stdout: HEAD for size and ETag, then ranged GETs of one block each, pinned to that ETag with
//!   `If-Match` (a changed object fails instead of mixing versions), up to `--concurrency` in flight,
//!   written in order. Memory: `in flight × block` (8 MiB blocks by default), taken from the budget,
//!   so a 16 MiB budget runs two ranges at a time and the others wait.
//! - From stdin: the first block is filled; if stdin ends within it, one PUT. Otherwise a multipart
//!   upload whose parts are pooled blocks, up to `--concurrency` in flight while the next one is read;
//!   any failure aborts the upload so no parts are left behind.

use std::collections::VecDeque;

use brisk_client::Error;
use brisk_mem::{BudgetError, PooledBlock};
use brisk_wire::xml::CompletedPart;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

use crate::context::{Context, MAX_STREAM_PART};
use crate::exit::CliError;
use crate::location::S3Url;
use crate::progress::Progress;

/// S3's smallest part (all but the last).
const MIN_PART: usize = brisk_client::transfer::MIN_PART_SIZE;

/// S3's largest part number.
const MAX_PARTS: u32 = brisk_client::transfer::MAX_PARTS as u32;

/// Writes `url` to stdout; returns the bytes written.
pub async fn object_to_stdout(ctx: &Context, url: &S3Url) -> Result<u64, CliError> {
    let action = || format!("read {url}");
    let meta = ctx
        .head(&url.bucket, &url.key)
        .await
        .map_err(|e| CliError::s3(action(), e))?;
    let size = meta.content_length;
    let etag = meta.etag.clone();
    let block = ctx.part_size.clamp(1, MAX_STREAM_PART);
    let progress = Progress::new(Some(size), &url.to_string(), ctx.quiet);
    let mut out = tokio::io::stdout();
    let mut pending: Tasks<PooledBlock> = Tasks::default();
    let mut next = 0u64;
    loop {
        while pending.len() < ctx.concurrency && next < size {
            let len = (size - next).min(block as u64) as usize;
            // Blocks are taken here, in order, and only without waiting while earlier ranges are
            // pending: those hold the budget until they are written, so waiting for it here (or in
            // the tasks, which may take blocks out of order) could wait forever.
            let mut buf = match ctx.client.buffer_pool().try_get(len) {
                Ok(buf) => buf,
                Err(BudgetError::WouldWait { .. }) if !pending.is_empty() => break,
                Err(_) => ctx
                    .client
                    .buffer_pool()
                    .get(len)
                    .await
                    .map_err(|e| CliError::s3(action(), Error::Memory(e)))?,
            };
            let (client, bucket, key, etag) = (
                ctx.client.clone(),
                url.bucket.clone(),
                url.key.clone(),
                etag.clone(),
            );
            let offset = next;
            pending.push_back(tokio::spawn(async move {
                let dst = &mut buf.unfilled_mut()[..len];
                let mut got = 0;
                while got < len {
                    let at = offset + got as u64;
                    let n = match &etag {
                        Some(tag) => {
                            client
                                .get_range_if_match(&bucket, &key, at, &mut dst[got..], tag)
                                .await?
                        }
                        None => {
                            client
                                .get_range_into(&bucket, &key, at, &mut dst[got..])
                                .await?
                        }
                    };
                    if n == 0 {
                        return Err(Error::UnexpectedResponse {
                            what: format!("the object ended at {at} bytes, HEAD said {size}"),
                        });
                    }
                    got += n;
                }
                buf.set_filled_len(len);
                Ok(buf)
            }));
            next += len as u64;
        }
        let Some(task) = pending.pop_front() else {
            break;
        };
        let buf = joined(task).await.map_err(|e| CliError::s3(action(), e))?;
        match out.write_all(buf.filled()).await {
            // The reader has gone (`brisk cat ... | head`): stop quietly, as `cat` does.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                progress.finish();
                return Ok(next);
            }
            other => other.map_err(|e| CliError::local("write to stdout", e))?,
        }
        progress.add(buf.filled_len() as u64);
    }
    out.flush()
        .await
        .map_err(|e| CliError::local("write to stdout", e))?;
    progress.finish();
    Ok(size)
}

/// Uploads stdin to `url`; returns the bytes read.
pub async fn stdin_to_object(ctx: &Context, url: &S3Url) -> Result<u64, CliError> {
    upload_stream(ctx, url, tokio::io::stdin()).await
}

async fn upload_stream<R: AsyncRead + Unpin>(
    ctx: &Context,
    url: &S3Url,
    mut input: R,
) -> Result<u64, CliError> {
    let part = ctx.part_size;
    if !(MIN_PART..=MAX_STREAM_PART).contains(&part) {
        return Err(CliError::Usage(format!(
            "--part-size must be between {MIN_PART} and {MAX_STREAM_PART} bytes to upload from stdin (it is {part})"
        )));
    }
    let action = || format!("upload - to {url}");
    let progress = Progress::new(None, &url.to_string(), ctx.quiet);
    let first = fill(ctx, &mut input, part).await?;
    progress.add(first.filled_len() as u64);
    if first.filled_len() < part {
        ctx.client
            .put(&url.bucket, &url.key, first.filled())
            .await
            .map_err(|e| CliError::s3(action(), e))?;
        progress.finish();
        return Ok(first.filled_len() as u64);
    }
    let upload_id = ctx
        .raw
        .create_multipart(&url.bucket, &url.key)
        .await
        .map_err(|e| CliError::s3(action(), e))?;
    let result = upload_parts(ctx, url, &upload_id, first, input, &progress).await;
    progress.finish();
    match result {
        Ok(total) => Ok(total),
        Err(e) => {
            // Best effort: the upload already failed, and that is the error to report.
            let _ = ctx
                .raw
                .abort_multipart(&url.bucket, &url.key, &upload_id)
                .await;
            Err(e)
        }
    }
}

async fn upload_parts<R: AsyncRead + Unpin>(
    ctx: &Context,
    url: &S3Url,
    upload_id: &str,
    first: PooledBlock,
    mut input: R,
    progress: &Progress,
) -> Result<u64, CliError> {
    let action = || format!("upload - to {url}");
    let part = ctx.part_size;
    let mut in_flight: Tasks<CompletedPart> = Tasks::default();
    let mut parts = Vec::new();
    let mut total = 0u64;
    let mut number = 0u32;
    let mut block = first;
    loop {
        let len = block.filled_len();
        if len == 0 {
            break;
        }
        number += 1;
        if number > MAX_PARTS {
            return Err(CliError::Usage(format!(
                "stdin is longer than {MAX_PARTS} parts of {part} bytes; give a larger --part-size"
            )));
        }
        total += len as u64;
        let (raw, bucket, key, id) = (
            ctx.raw.clone(),
            url.bucket.clone(),
            url.key.clone(),
            upload_id.to_owned(),
        );
        in_flight.push_back(tokio::spawn(async move {
            raw.upload_part(&bucket, &key, &id, number, block.filled())
                .await
        }));
        while in_flight.len() >= ctx.concurrency {
            let done = in_flight.pop_front().expect("not empty");
            parts.push(joined(done).await.map_err(|e| CliError::s3(action(), e))?);
        }
        if len < part {
            break;
        }
        block = fill(ctx, &mut input, part).await?;
        progress.add(block.filled_len() as u64);
    }
    while let Some(done) = in_flight.pop_front() {
        parts.push(joined(done).await.map_err(|e| CliError::s3(action(), e))?);
    }
    ctx.raw
        .complete_multipart(&url.bucket, &url.key, upload_id, parts)
        .await
        .map_err(|e| CliError::s3(action(), e))?;
    Ok(total)
}

/// A pooled block filled from `input` up to `len` bytes (fewer only at the end of the input).
async fn fill<R: AsyncRead + Unpin>(
    ctx: &Context,
    input: &mut R,
    len: usize,
) -> Result<PooledBlock, CliError> {
    let mut block = ctx
        .client
        .buffer_pool()
        .get(len)
        .await
        .map_err(|e| CliError::s3("take a part buffer", Error::Memory(e)))?;
    let mut got = 0;
    let dst = &mut block.unfilled_mut()[..len];
    while got < len {
        let n = input
            .read(&mut dst[got..])
            .await
            .map_err(|e| CliError::local("read stdin", e))?;
        if n == 0 {
            break;
        }
        got += n;
    }
    block.set_filled_len(got);
    Ok(block)
}

/// Spawned transfer tasks in order, cancelled if dropped before they are awaited: a failed stream
/// stops its other requests (and an aborted multipart upload receives no parts after the abort).
struct Tasks<T>(VecDeque<JoinHandle<Result<T, Error>>>);

impl<T> Default for Tasks<T> {
    fn default() -> Self {
        Self(VecDeque::new())
    }
}

impl<T> std::ops::Deref for Tasks<T> {
    type Target = VecDeque<JoinHandle<Result<T, Error>>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Tasks<T> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<T> Drop for Tasks<T> {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// The result of a spawned transfer task (a panic in one is reported, not propagated).
async fn joined<T>(task: JoinHandle<Result<T, Error>>) -> Result<T, Error> {
    match task.await {
        Ok(result) => result,
        Err(e) => Err(Error::UnexpectedResponse {
            what: format!("a transfer task failed: {e}"),
        }),
    }
}
