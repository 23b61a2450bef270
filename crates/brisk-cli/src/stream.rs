//! `-` as a source or destination: objects streamed in memory bounded by `--max-memory` whatever
//! their size, on `brisk-client`'s streaming API.
//!
//! - To stdout: [`Client::download_to_writer`](brisk_client::Client::download_to_writer) (one GET,
//!   resumed with `Range` + `If-Match` if the connection fails, the stored checksum verified at the
//!   end) read into one pooled block of `min(--part-size, 8 MiB)` from the budget and written to
//!   stdout from that block. Memory: the block.
//! - Between services (`s3://` to `az://` and back): the same GET, read by the destination's
//!   streaming upload straight into its parts ([`relay`]).
//! - From stdin: [`Client::upload_from_read`](brisk_client::Client::upload_from_read), each part
//!   read on the blocking pool straight into its block: one PUT if stdin ends
//!   within the first part, else a multipart upload of pooled blocks with `--concurrency` parts in
//!   flight while the next is read; any failure aborts it. Memory: `(concurrency + 1) × part`, and
//!   never more than the budget (parts wait for blocks).

use std::os::fd::AsFd;

use brisk_client::{Error, TransferProgress};

use crate::context::Context;
use crate::exit::CliError;
use crate::location::ObjectUrl;
use crate::progress::Progress;

/// Writes `url` to stdout; returns the bytes written. The library writes each block from where
/// it landed, on the blocking pool, into a duplicate of the stdout descriptor (tokio's `Stdout`
/// would copy every piece into a buffer of its own first). A reader that goes away (a broken
/// pipe: `brisk cat ... | head`) ends the copy quietly, as `cat` does.
pub async fn object_to_stdout(ctx: &Context, url: &ObjectUrl) -> Result<u64, CliError> {
    // The GET itself, with no HEAD before it: its head gives the length for the bar (one round
    // trip, not two); a 404 is told apart as a missing key or bucket.
    let object = ctx
        .get_stream(url)
        .await
        .map_err(|e| CliError::s3(format!("read {url}"), e))?;
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| CliError::local("write to stdout", e))?;
    let progress = Progress::new(Some(object.content_length()), &url.to_string(), ctx.quiet);
    let counter = progress.counter();
    let result = ctx
        .client(url)?
        .write_object_stream(
            object,
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

/// Copies `from` to `to` between two services (S3 and Azure): the destination's streaming upload
/// reads each part from the source's connection straight into its pooled block
/// ([`Client::upload_object_stream`](brisk_client::Client::upload_object_stream)). Memory: the
/// upload's parts in flight and the one being filled, whatever the object's size. A source that
/// fails or does not match its stored checksum fails the upload, which is aborted. Returns the
/// bytes copied.
pub async fn relay(
    ctx: &Context,
    from: &ObjectUrl,
    to: &ObjectUrl,
    progress: &TransferProgress,
) -> Result<u64, CliError> {
    let source = ctx
        .get_stream(from)
        .await
        .map_err(|e| CliError::s3(format!("read {from}"), e))?;
    let uploaded = ctx
        .client(to)?
        .upload_object_stream(
            &to.bucket,
            &to.key,
            source,
            ctx.transfer_options(Some(progress.clone())),
        )
        .await
        .map_err(|e| CliError::s3(format!("copy {from} to {to}"), e))?;
    Ok(uploaded.size)
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
