//! `-` as a source or destination: objects streamed in memory bounded by `--max-memory` whatever
//! their size, on `brisk-client`'s streaming API.
//!
//! - To stdout: [`Client::get_stream`](brisk_client::Client::get_stream) (one GET, resumed with
//!   `Range` + `If-Match` if the connection fails, the stored checksum verified at the end) read into
//!   one pooled block of `min(--part-size, 8 MiB)` from the budget and written to stdout. Memory: that
//!   block, plus tokio's stdout buffer (2 MiB).
//! - From stdin: [`Client::upload_reader`](brisk_client::Client::upload_reader): one PUT if stdin ends
//!   within the first part, else a multipart upload of pooled blocks with `--concurrency` parts in
//!   flight while the next is read; any failure aborts it. Memory: `(concurrency + 1) × part`, and
//!   never more than the budget (parts wait for blocks).

use brisk_client::Error;
use tokio::io::AsyncWriteExt;

use crate::context::{Context, MAX_STREAM_PART};
use crate::exit::CliError;
use crate::location::S3Url;
use crate::progress::Progress;

/// Writes `url` to stdout; returns the bytes written.
pub async fn object_to_stdout(ctx: &Context, url: &S3Url) -> Result<u64, CliError> {
    let action = || format!("read {url}");
    // The one-key listing behind `ctx.head` names a missing bucket; GET alone cannot.
    ctx.head(&url.bucket, &url.key)
        .await
        .map_err(|e| CliError::s3(action(), e))?;
    let mut object = ctx
        .client
        .get_stream(&url.bucket, &url.key)
        .await
        .map_err(|e| CliError::s3(action(), e))?;
    let len = ctx.part_size.clamp(1, MAX_STREAM_PART);
    let mut block = ctx
        .client
        .buffer_pool()
        .get(len)
        .await
        .map_err(|e| CliError::s3(action(), Error::Memory(e)))?;
    let buf = &mut block.unfilled_mut()[..len];
    let progress = Progress::new(Some(object.content_length()), &url.to_string(), ctx.quiet);
    let mut out = tokio::io::stdout();
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
                progress.finish();
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
    progress.finish();
    Ok(written)
}

/// Uploads stdin to `url`; returns the bytes read.
pub async fn stdin_to_object(ctx: &Context, url: &S3Url) -> Result<u64, CliError> {
    let progress = Progress::new(None, &url.to_string(), ctx.quiet);
    let result = ctx
        .client
        .upload_reader(
            &url.bucket,
            &url.key,
            &mut tokio::io::stdin(),
            ctx.transfer_options(Some(progress.counter())),
        )
        .await;
    progress.finish();
    result
        .map(|r| r.size)
        .map_err(|e| CliError::s3(format!("upload - to {url}"), e))
}
