//! `-` as a source or destination: objects streamed in memory bounded by `--max-memory` whatever
//! their size, on `brisk-client`'s streaming API.
//!
//! - To stdout: [`Client::download_to_writer`](brisk_client::Client::download_to_writer) (one GET,
//!   resumed with `Range` + `If-Match` if the connection fails, the stored checksum verified at the
//!   end) read into one pooled block of `min(--part-size, 8 MiB)` from the budget and written to
//!   stdout from that block. Memory: the block.
//! - Between services (`s3://` to `az://` and back): the same GET read into one pooled block and
//!   written into a 1 MiB pipe that the destination's streaming upload reads its parts from
//!   ([`relay`]).
//! - From stdin: [`Client::upload_from_read`](brisk_client::Client::upload_from_read), each part
//!   read on the blocking pool straight into its block: one PUT if stdin ends
//!   within the first part, else a multipart upload of pooled blocks with `--concurrency` parts in
//!   flight while the next is read; any failure aborts it. Memory: `(concurrency + 1) × part`, and
//!   never more than the budget (parts wait for blocks).

use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use brisk_client::{Error, TransferProgress};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::context::{Context, MAX_STREAM_PART};
use crate::exit::CliError;
use crate::location::ObjectUrl;
use crate::progress::Progress;

/// Writes `url` to stdout; returns the bytes written. The library writes each block from where
/// it landed, on the blocking pool, into a duplicate of the stdout descriptor (tokio's `Stdout`
/// would copy every piece into a buffer of its own first). A reader that goes away (a broken
/// pipe: `brisk cat ... | head`) ends the copy quietly, as `cat` does.
pub async fn object_to_stdout(ctx: &Context, url: &ObjectUrl) -> Result<u64, CliError> {
    // The one-key listing behind `ctx.head` names a missing bucket; GET alone cannot.
    let meta = ctx
        .head(url)
        .await
        .map_err(|e| CliError::s3(format!("read {url}"), e))?;
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| CliError::local("write to stdout", e))?;
    let progress = Progress::new(Some(meta.content_length), &url.to_string(), ctx.quiet);
    let counter = progress.counter();
    let result = ctx
        .client(url)?
        .download_to_writer(
            &url.bucket,
            &url.key,
            std::fs::File::from(stdout),
            ctx.transfer_options(Some(counter.clone())),
        )
        .await;
    progress.finish();
    match result {
        Ok(n) => Ok(n),
        Err(Error::File { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(counter.bytes())
        }
        Err(Error::File { source, .. }) => Err(CliError::local("write to stdout", source)),
        Err(e) => Err(CliError::s3(format!("read {url}"), e)),
    }
}

/// Writes `url` into `out`, the writing end of a [`relay`]'s pipe, through one pooled block,
/// counting on `progress`; returns the bytes written.
async fn object_to_writer(
    ctx: &Context,
    url: &ObjectUrl,
    mut out: impl AsyncWrite + Unpin,
    progress: &TransferProgress,
) -> Result<u64, CliError> {
    let action = || format!("read {url}");
    let client = ctx.client(url)?;
    let mut object = client
        .get_stream(&url.bucket, &url.key)
        .await
        .map_err(|e| CliError::s3(action(), e))?;
    let len = ctx.part_size.clamp(1, MAX_STREAM_PART);
    let mut block = client
        .buffer_pool()
        .get(len)
        .await
        .map_err(|e| CliError::s3(action(), Error::Memory(e)))?;
    let buf = &mut block.unfilled_mut()[..len];
    let mut written = 0u64;
    loop {
        let n = object
            .read(buf)
            .await
            .map_err(|e| CliError::s3(action(), e))?;
        if n == 0 {
            break;
        }
        match out.write_all(&buf[..n]).await {
            // The reader has gone (`brisk cat ... | head`): stop quietly, as `cat` does.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(written);
            }
            other => other.map_err(|e| CliError::local("write to stdout", e))?,
        }
        written += n as u64;
        progress.add(n as u64);
    }
    out.flush()
        .await
        .map_err(|e| CliError::local("write to stdout", e))?;
    Ok(written)
}

/// Copies `from` to `to` between two services (S3 and Azure): the source is read as a stream
/// into one pooled block and written into a pipe of [`RELAY_PIPE`] bytes, from which the
/// destination's streaming upload takes its parts. Memory: that block, the pipe, and the upload's
/// parts in flight, whatever the object's size. Returns the bytes copied.
pub async fn relay(
    ctx: &Context,
    from: &ObjectUrl,
    to: &ObjectUrl,
    progress: &TransferProgress,
) -> Result<u64, CliError> {
    let (writer, reader) = tokio::io::duplex(RELAY_PIPE);
    let source_failed = Arc::new(AtomicBool::new(false));
    let mut reader = FailableEnd {
        inner: reader,
        failed: Arc::clone(&source_failed),
    };
    let destination = ctx.client(to)?;
    // The upload owns the pipe's reading end: if it fails, the end is dropped and the source's
    // writes stop with a broken pipe instead of waiting on a full pipe. Progress counts the bytes
    // read from the source; the upload's own count would add them twice.
    let upload = async move {
        destination
            .upload_reader(&to.bucket, &to.key, &mut reader, ctx.transfer_options(None))
            .await
    };
    // `writer` moves into the reading side and is dropped when it ends. A source that failed sets
    // the flag in that same poll, before the upload can see the end, so the upload fails (and
    // aborts) instead of committing a truncated object.
    let read = async {
        let result = object_to_writer(ctx, from, writer, progress).await;
        if result.is_err() {
            source_failed.store(true, Ordering::SeqCst);
        }
        result
    };
    let (read, uploaded) = tokio::join!(read, upload);
    let n = read?;
    let uploaded = uploaded.map_err(|e| CliError::s3(format!("copy {from} to {to}"), e))?;
    if uploaded.size != n {
        return Err(CliError::s3(
            format!("copy {from} to {to}"),
            Error::UnexpectedResponse {
                what: format!("read {n} bytes but uploaded {}", uploaded.size),
            },
        ));
    }
    Ok(n)
}

/// The pipe between the two sides of a [`relay`]: 1 MiB.
const RELAY_PIPE: usize = 1024 * 1024;

/// The reading end of a relay's pipe: its end of stream is an error when the source failed.
struct FailableEnd {
    inner: tokio::io::DuplexStream,
    failed: Arc<AtomicBool>,
}

impl AsyncRead for FailableEnd {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled
            && buf.filled().len() == before
            && self.failed.load(Ordering::SeqCst)
        {
            return Poll::Ready(Err(std::io::Error::other(
                "the source of the copy failed before its end",
            )));
        }
        polled
    }
}

/// Uploads stdin to `url`; returns the bytes read. Each part is read from a duplicate of the stdin
/// descriptor on the blocking pool, straight into its pooled block (tokio's `Stdin` would read
/// into a buffer of its own and copy from it).
pub async fn stdin_to_object(ctx: &Context, url: &ObjectUrl) -> Result<u64, CliError> {
    let stdin = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| CliError::local("read stdin", e))?;
    let progress = Progress::new(None, &url.to_string(), ctx.quiet);
    let result = ctx
        .client(url)?
        .upload_from_read(
            &url.bucket,
            &url.key,
            std::fs::File::from(stdin),
            ctx.transfer_options(Some(progress.counter())),
        )
        .await;
    progress.finish();
    result
        .map(|r| r.size)
        .map_err(|e| CliError::s3(format!("upload - to {url}"), e))
}
