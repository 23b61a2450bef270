//! Sending a request body from a file: aws-chunked, the kernel sending each chunk from the page
//! cache with `sendfile`, the checksum sent as the trailer.
//!
//! A [`FileBody`] (an upload part, or a whole small file, with an unsigned payload over plain HTTP)
//! is never held in memory. Its bytes are read once in user space, through one small scratch block
//! ([`FILE_SCRATCH_SIZE`]), only to take the checksum while they sit in the CPU's cache; that read
//! also brings them into the page cache, from which `sendfile` sends the same range with no copy
//! through user space.
//!
//! # One reader per body
//!
//! The reads block (a file may be on a slow disk), so they run on a blocking-pool thread: one
//! thread for the whole body, reading and summing chunk after chunk ahead of the sender and telling
//! it through a channel when each chunk is in the page cache ([`ChunkSums`]). The channel holds one
//! message, so the reader is at most two chunks (2 MiB) ahead. This replaced a blocking task per
//! 1 MiB chunk, which cost a task's scheduling and two wake-ups per chunk and left the socket idle
//! while each chunk was read (BENCHMARKS-log.md, "Upload from a file: one reader per part").

use std::sync::Arc;

use brisk_mem::PooledBlock;
use brisk_wire::checksum::Checksummer;
use brisk_wire::http::HttpError;
use brisk_wire::sigv4::UnsignedChunkEncoder;
use brisk_wire::sigv4::chunked::CRLF;
use tokio::io::Interest;

use crate::error::{Error, Result};
use crate::metrics::Counters;
use crate::pool::Transport;
use crate::request::{AWS_CHUNK_SIZE, FILE_SCRATCH_SIZE, FileBody, TrailingChecksum};

/// Sends `body` aws-chunked with its checksum as the trailer. For each chunk: wait until the reader
/// has read and summed it ([`ChunkSums`]), send the previous chunk's CRLF and this chunk's size line
/// with `MSG_MORE`, and let the kernel send the chunk from the page cache with `sendfile`. Over TLS,
/// or where the file system has no `sendfile`, the rest of the body is read again into the scratch
/// block, once the reader has finished with it, and written from there.
pub(crate) async fn write_file_body(
    c: &mut crate::pool::Connection,
    body: &FileBody,
    trailer: &TrailingChecksum,
    counters: &Counters,
) -> Result<()> {
    let scratch = body.pool.get(FILE_SCRATCH_SIZE).await?;
    let mut sums = ChunkSums::start(
        body,
        scratch,
        Checksummer::new(trailer.algorithm.algorithm()),
    );
    let end = body.offset + body.len;
    let mut at = body.offset;
    // Where the bytes stop going out with `sendfile` and start being copied, if they do, and where
    // the chunks whose framing has gone out end.
    let mut copy_from = (!body.sendfile || !matches!(c.get_ref(), Transport::Tcp(_)))
        .then_some((body.offset, body.offset));
    // Bounded: each pass moves `at` forward by one chunk of at least one byte.
    while copy_from.is_none() && at < end {
        let len = sums.next().await.map_err(|e| file_read_error(body, e))?;
        Counters::add_bytes(&counters.file_bytes_read, len);
        let (framing, n) = chunk_framing(at == body.offset, len);
        send_more(c, &framing[..n]).await?;
        let Transport::Tcp(stream) = c.get_ref() else {
            unreachable!("sendfile is tried on plain TCP only")
        };
        match sendfile_range(stream, &body.file, at, len).await {
            Ok(None) => Counters::add_bytes(&counters.file_bytes_sent, len),
            Ok(Some(unsent_from)) => {
                Counters::add_bytes(&counters.file_bytes_sent, unsent_from - at);
                copy_from = Some((unsent_from, at + len));
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(file_read_error(body, e));
            }
            Err(e) => return Err(HttpError::Io(e).into()),
        }
        at += len;
    }
    let (scratch, summer) = sums.finish(body, counters).await?;
    if let Some(from) = copy_from {
        copy_rest(c, body, from, scratch, counters).await?;
    } else {
        drop(scratch);
    }
    let value = trailer.outgoing(summer.finalize().to_base64());
    let mut last = if body.len > 0 {
        CRLF.to_vec()
    } else {
        Vec::new()
    };
    last.extend_from_slice(
        &UnsignedChunkEncoder::final_chunk_with_trailers(&[(
            trailer.algorithm.algorithm().header_name(),
            &value,
        )])
        .expect("a checksum header name and a base64 value are a valid trailer"),
    );
    c.write_body(&last).await?;
    trailer.set(value);
    Ok(())
}

/// The length of the aws-chunked chunk at `at` of a body ending at `end`: [`AWS_CHUNK_SIZE`], or
/// what is left. The reader and the sender cut the body the same way.
fn chunk_len(at: u64, end: u64) -> u64 {
    (end - at).min(AWS_CHUNK_SIZE as u64)
}

/// The longest chunk size line: 16 hex digits and CRLF.
const MAX_CHUNK_HEADER: usize = 18;

/// What goes before a chunk of `len` bytes: the previous chunk's CRLF (unless this is the first)
/// and this chunk's size line, as one small write. Returns the buffer and how much of it is used.
fn chunk_framing(first: bool, len: u64) -> ([u8; 2 + MAX_CHUNK_HEADER], usize) {
    let mut framing = [0u8; 2 + MAX_CHUNK_HEADER];
    let mut n = 0;
    if !first {
        framing[..2].copy_from_slice(CRLF);
        n = 2;
    }
    let header = UnsignedChunkEncoder::chunk_header(len);
    framing[n..n + header.as_bytes().len()].copy_from_slice(header.as_bytes());
    (framing, n + header.as_bytes().len())
}

/// Writes the body from `from` to its end through `scratch`, chunk by chunk with the framing of
/// each chunk that starts at or after `framed_to` (TLS, or a file system with no `sendfile`): each
/// piece read on the blocking pool, then written.
async fn copy_rest(
    c: &mut crate::pool::Connection,
    body: &FileBody,
    (from, framed_to): (u64, u64),
    mut scratch: PooledBlock,
    counters: &Counters,
) -> Result<()> {
    let end = body.offset + body.len;
    for piece in rest_of_body(body.offset, end, from, framed_to) {
        if let Some((first, len)) = piece.framing {
            let (framing, n) = chunk_framing(first, len);
            c.write_body(&framing[..n]).await?;
        }
        scratch = copy_file_range(c, body, piece.from, piece.to, scratch, counters).await?;
    }
    Ok(())
}

/// One chunk's share of what [`copy_rest`] writes: the chunk's framing (whether it is the body's
/// first chunk, and its length) unless it went out already, then the file's bytes `from..to`.
#[derive(Debug, PartialEq)]
struct RestPiece {
    framing: Option<(bool, u64)>,
    from: u64,
    to: u64,
}

/// What is left of the body `offset..end` when its bytes before `from` have gone out, and the
/// framing of every chunk that starts before `framed_to`: the chunk `from` falls in (its framing is
/// out if `sendfile` failed part way through it) and every chunk after it.
fn rest_of_body(
    offset: u64,
    end: u64,
    from: u64,
    framed_to: u64,
) -> impl Iterator<Item = RestPiece> {
    let mut chunk_at = offset;
    std::iter::from_fn(move || {
        // Bounded: each pass moves `chunk_at` forward by one chunk of at least one byte.
        while chunk_at < end {
            let (at, len) = (chunk_at, chunk_len(chunk_at, end));
            chunk_at += len;
            if at + len > from {
                return Some(RestPiece {
                    framing: (at >= framed_to).then_some((at == offset, len)),
                    from: from.max(at),
                    to: at + len,
                });
            }
        }
        None
    })
}

/// Writes the body's file from `from` to `to` through `scratch`: each piece read on the blocking
/// pool, then written.
async fn copy_file_range(
    c: &mut crate::pool::Connection,
    body: &FileBody,
    mut from: u64,
    to: u64,
    mut scratch: PooledBlock,
    counters: &Counters,
) -> Result<PooledBlock> {
    use std::os::unix::fs::FileExt;
    // Bounded: each pass moves `from` forward by one piece of at least one byte.
    while from < to {
        let n = (to - from).min(scratch.len().min(FILE_SCRATCH_SIZE) as u64) as usize;
        let file = Arc::clone(&body.file);
        let read;
        (scratch, read) = tokio::task::spawn_blocking(move || {
            let read = file.read_exact_at(&mut scratch[..n], from);
            (scratch, read)
        })
        .await
        .map_err(|e| Error::UnexpectedResponse {
            what: format!("file read task failed: {e}"),
        })?;
        read.map_err(|e| file_read_error(body, e))?;
        Counters::add_bytes(&counters.file_bytes_read, n as u64);
        c.write_body(&scratch[..n]).await?;
        from += n as u64;
    }
    Ok(scratch)
}

/// A file body's reader: one blocking-pool thread that reads the body chunk by chunk through the
/// scratch block, `pread` by `pread` of at most [`FILE_SCRATCH_SIZE`], adds each piece to the
/// checksum while it is in the CPU's cache, and reports each chunk when it is done.
///
/// Dropping it (the request failed) stops the thread at its next report; it holds the scratch
/// block until then.
struct ChunkSums {
    /// One report per chunk read and summed, in order; the first failure is the last report.
    ready: tokio::sync::mpsc::Receiver<std::io::Result<()>>,
    reader: tokio::task::JoinHandle<(PooledBlock, Checksummer)>,
    /// Where the next chunk to be reported starts, and where the body ends.
    next_at: u64,
    end: u64,
}

impl ChunkSums {
    fn start(body: &FileBody, mut scratch: PooledBlock, mut summer: Checksummer) -> Self {
        use std::os::unix::fs::FileExt;
        // One report waiting and one chunk being read: the reader is at most two chunks ahead.
        let (report, ready) = tokio::sync::mpsc::channel(1);
        let file = Arc::clone(&body.file);
        let (mut at, end) = (body.offset, body.offset + body.len);
        let reader = tokio::task::spawn_blocking(move || {
            let piece = scratch.len().min(FILE_SCRATCH_SIZE) as u64;
            // Bounded: each pass moves `at` forward by one chunk, or ends at the first failure.
            while at < end {
                let chunk_end = at + chunk_len(at, end);
                let mut read = Ok(());
                while at < chunk_end {
                    let n = piece.min(chunk_end - at) as usize;
                    read = file.read_exact_at(&mut scratch[..n], at);
                    if read.is_err() {
                        break;
                    }
                    summer.update(&scratch[..n]);
                    at += n as u64;
                }
                let failed = read.is_err();
                if report.blocking_send(read).is_err() || failed {
                    break;
                }
            }
            (scratch, summer)
        });
        Self {
            ready,
            reader,
            next_at: body.offset,
            end,
        }
    }

    /// Waits until the next chunk has been read and summed; returns its length.
    async fn next(&mut self) -> std::io::Result<u64> {
        self.ready
            .recv()
            .await
            .unwrap_or_else(|| Err(std::io::Error::other("the file's reader stopped")))?;
        let len = chunk_len(self.next_at, self.end);
        self.next_at += len;
        Ok(len)
    }

    /// Lets the reader finish the body, counting the chunks not yet taken as read, and takes the
    /// scratch block and the checksum of the whole body back.
    async fn finish(
        mut self,
        body: &FileBody,
        counters: &Counters,
    ) -> Result<(PooledBlock, Checksummer)> {
        // Bounded: one pass per chunk of the body.
        while self.next_at < self.end {
            let len = self.next().await.map_err(|e| file_read_error(body, e))?;
            Counters::add_bytes(&counters.file_bytes_read, len);
        }
        self.reader.await.map_err(|e| Error::UnexpectedResponse {
            what: format!("file read task failed: {e}"),
        })
    }
}

/// Sends whatever the connection has queued (the request head, when it did not wait for `100
/// Continue`) and then `bytes`, with `MSG_MORE`: the kernel holds them until the `sendfile` that
/// follows adds the chunk's bytes, so a size line does not leave in a packet of its own.
async fn send_more(c: &mut crate::pool::Connection, bytes: &[u8]) -> Result<()> {
    // Bounded: each pass sends at least one byte or waits for the socket to take more.
    while !c.queued_output().is_empty() {
        let n = send_more_once(c, c.queued_output()).await?;
        c.output_sent(n);
    }
    let mut sent = 0;
    while sent < bytes.len() {
        sent += send_more_once(c, &bytes[sent..]).await?;
    }
    Ok(())
}

/// One `send` with `MSG_MORE` once the socket is writable; 0 bytes when it was not after all.
async fn send_more_once(c: &crate::pool::Connection, bytes: &[u8]) -> Result<usize> {
    let Transport::Tcp(stream) = c.get_ref() else {
        unreachable!("MSG_MORE is used on plain TCP only")
    };
    stream.writable().await.map_err(HttpError::Io)?;
    match stream.try_io(Interest::WRITABLE, || {
        rustix::net::send(stream, bytes, rustix::net::SendFlags::MORE).map_err(std::io::Error::from)
    }) {
        Ok(n) => Ok(n),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(HttpError::Io(e).into()),
    }
}

/// `sendfile` of `len` bytes of `file` from `offset` to `stream`. `Ok(Some(position))` when the
/// file system does not support `sendfile` (`EINVAL`/`ENOSYS`) after the bytes before `position`
/// went out; an error of kind `UnexpectedEof` when the file is shorter than it was.
async fn sendfile_range(
    stream: &tokio::net::TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
) -> std::io::Result<Option<u64>> {
    // "sendfile can not do this here".
    let unsupported =
        [rustix::io::Errno::INVAL, rustix::io::Errno::NOSYS].map(|e| e.raw_os_error());
    let end = offset + len;
    let mut position = offset;
    // Bounded: each pass sends at least one byte, waits for the socket, or ends.
    while position < end {
        stream.writable().await?;
        let count = usize::try_from(end - position).unwrap_or(usize::MAX);
        match stream.try_io(Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, file, Some(&mut position), count)
                .map_err(std::io::Error::from)
        }) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the file ended at {position}, before {end}"),
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.raw_os_error().is_some_and(|n| unsupported.contains(&n)) => {
                return Ok(Some(position));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

fn file_read_error(body: &FileBody, source: std::io::Error) -> Error {
    Error::File {
        what: format!("reading {}", body.path.display()),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use brisk_testkit::minio::MinioProcess;
    use brisk_testkit::serve::InProcessServe;
    use brisk_wire::sigv4::Credentials;

    use super::*;
    use crate::RetryPolicy;
    use crate::client::Client;
    use crate::integrity::UploadChecksum;
    use crate::request::RequestSpec;

    fn client_of(endpoint: &str) -> Client {
        Client::builder()
            .endpoint(endpoint)
            .region(brisk_testkit::REGION)
            .credentials(Credentials::new(
                brisk_testkit::ACCESS_KEY,
                brisk_testkit::SECRET_KEY,
            ))
            .retry(RetryPolicy {
                max_attempts: 1,
                initial_backoff: Duration::from_millis(5),
                max_backoff: Duration::from_millis(5),
            })
            .build()
            .unwrap()
    }

    /// A file of `len` bytes counting up modulo `modulo`, in a temporary directory (kept while the
    /// first value is), with its path, its bytes and the file opened for reading.
    fn patterned_file(
        len: usize,
        modulo: usize,
    ) -> (
        tempfile::TempDir,
        std::path::PathBuf,
        Vec<u8>,
        Arc<std::fs::File>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..len).map(|i| (i % modulo) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        (dir, path, bytes, file)
    }

    /// A file body whose trailer does not match its bytes is refused and stores nothing; the same
    /// body with its true trailer is stored.
    async fn a_wrong_trailer_is_refused(endpoint: &str, bucket: &str) {
        let client = client_of(endpoint);
        client.create_bucket(bucket).await.unwrap();
        let (_dir, path, bytes, file) = patterned_file(2 * AWS_CHUNK_SIZE + 3, 251);
        let body = FileBody::new(file, &path, 0, bytes.len() as u64, client.buffer_pool());

        let mut trailer = TrailingChecksum::new(UploadChecksum::Crc32c);
        trailer.corrupt = true;
        let spec =
            RequestSpec::new("PUT", Some(bucket), Some("k")).aws_chunked_file(&body, &trailer);
        let error = client.send(&spec).await.map(|_| ()).unwrap_err();
        let refused = error.service_error().expect("a refusal by the server");
        assert_eq!(refused.status, 400, "{error}");
        assert!(
            matches!(client.head(bucket, "k").await, Err(Error::NoSuchKey(_))),
            "nothing was stored"
        );

        let trailer = TrailingChecksum::new(UploadChecksum::Crc32c);
        let spec =
            RequestSpec::new("PUT", Some(bucket), Some("k")).aws_chunked_file(&body, &trailer);
        let response = client.send(&spec).await.unwrap();
        crate::client::finish(response).await.unwrap();
        assert_eq!(
            trailer.value().as_deref(),
            Some(UploadChecksum::Crc32c.compute(&bytes).as_str())
        );
        assert!(client.get_bytes(bucket, "k").await.unwrap()[..] == bytes[..]);
    }

    #[tokio::test]
    async fn a_wrong_trailer_is_refused_by_brisk_serve() {
        let serve = InProcessServe::start(false);
        a_wrong_trailer_is_refused(&serve.url, "trailer").await;
    }

    #[tokio::test]
    async fn a_wrong_trailer_is_refused_by_minio() {
        let minio = MinioProcess::until_exit().unwrap_or_else(|e| panic!("starting MinIO: {e}"));
        a_wrong_trailer_is_refused(&minio.url, &format!("trailer-{}", std::process::id())).await;
    }

    /// A body copied through the scratch block instead of sent with `sendfile` (what TLS and file
    /// systems without `sendfile` get) arrives whole, with the right trailer; it is read twice,
    /// once for the checksum and once to be written, and nothing goes out with `sendfile`.
    async fn a_copied_body_arrives_whole(endpoint: &str, bucket: &str) {
        let client = client_of(endpoint);
        client.create_bucket(bucket).await.unwrap();
        let (_dir, path, bytes, file) = patterned_file(3 * AWS_CHUNK_SIZE + 17, 241);
        // The body is the file but its first 5 bytes: it starts part way into the file.
        let len = bytes.len() as u64 - 5;
        let mut body = FileBody::new(file, &path, 5, len, client.buffer_pool());
        body.sendfile = false;
        let trailer = TrailingChecksum::new(UploadChecksum::Crc32c);
        let spec =
            RequestSpec::new("PUT", Some(bucket), Some("k")).aws_chunked_file(&body, &trailer);
        let before = client.metrics();
        let response = client.send(&spec).await.unwrap();
        crate::client::finish(response).await.unwrap();
        let after = client.metrics();
        assert_eq!(after.file_bytes_read - before.file_bytes_read, 2 * len);
        assert_eq!(after.file_bytes_sent, before.file_bytes_sent);
        assert_eq!(
            trailer.value().as_deref(),
            Some(UploadChecksum::Crc32c.compute(&bytes[5..]).as_str())
        );
        assert!(client.get_bytes(bucket, "k").await.unwrap()[..] == bytes[5..]);
    }

    #[tokio::test]
    async fn a_copied_body_arrives_whole_at_brisk_serve() {
        let serve = InProcessServe::start(false);
        a_copied_body_arrives_whole(&serve.url, "copied").await;
    }

    #[tokio::test]
    async fn a_copied_body_arrives_whole_at_minio() {
        let minio = MinioProcess::until_exit().unwrap_or_else(|e| panic!("starting MinIO: {e}"));
        a_copied_body_arrives_whole(&minio.url, &format!("copied-{}", std::process::id())).await;
    }

    /// A file that is shorter than the body it was to give (it shrank after the upload began) is a
    /// file error naming the file, for `sendfile` and for the copy, and nothing is stored.
    #[tokio::test]
    async fn a_file_shorter_than_its_body_is_a_file_error() {
        let serve = InProcessServe::start(false);
        let client = client_of(&serve.url);
        client.create_bucket("short").await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; AWS_CHUNK_SIZE + 10]).unwrap();
        for sendfile in [true, false] {
            let file = Arc::new(std::fs::File::open(&path).unwrap());
            let mut body = FileBody::new(
                file,
                &path,
                0,
                3 * AWS_CHUNK_SIZE as u64,
                client.buffer_pool(),
            );
            body.sendfile = sendfile;
            let trailer = TrailingChecksum::new(UploadChecksum::Crc32c);
            let spec =
                RequestSpec::new("PUT", Some("short"), Some("k")).aws_chunked_file(&body, &trailer);
            let error = client.send(&spec).await.map(|_| ()).unwrap_err();
            assert!(
                matches!(&error, Error::File { what, .. } if what.contains("reading")),
                "sendfile {sendfile}: {error:?}"
            );
            assert!(matches!(
                client.head("short", "k").await,
                Err(Error::NoSuchKey(_))
            ));
        }
    }

    /// The copy that takes over from `sendfile` writes each byte once, and each chunk's framing
    /// once, whether it starts at the body's beginning or part way into any chunk.
    #[test]
    fn the_rest_of_a_body_completes_what_sendfile_sent() {
        let (offset, end) = (3u64, 3 + 2 * AWS_CHUNK_SIZE as u64 + 100);
        // The body as the wire carries it: each chunk's framing, then its bytes (as their offsets).
        let mut whole = Vec::new();
        let mut at = offset;
        while at < end {
            let len = chunk_len(at, end);
            whole.push(format!("frame {} {len}", at == offset));
            whole.push(format!("bytes {at}..{}", at + len));
            at += len;
        }
        let chunk = AWS_CHUNK_SIZE as u64;
        let starts = [
            offset,
            offset + 1,
            offset + chunk - 1,
            offset + chunk,
            offset + chunk + 50,
            offset + 2 * chunk,
            end - 1,
        ];
        for from in starts {
            // What the `sendfile` loop sent before it stopped at `from`: whole chunks, then the
            // framing of the chunk `from` is in and its bytes before `from`.
            let mut sent = Vec::new();
            let mut at = offset;
            let mut framed_to = offset;
            while at < end {
                let len = chunk_len(at, end);
                sent.push(format!("frame {} {len}", at == offset));
                framed_to = at + len;
                if from < at + len {
                    if from > at {
                        sent.push(format!("bytes {at}..{from}"));
                    }
                    break;
                }
                sent.push(format!("bytes {at}..{}", at + len));
                at += len;
            }
            for piece in rest_of_body(offset, end, from, framed_to) {
                if let Some((first, len)) = piece.framing {
                    sent.push(format!("frame {first} {len}"));
                }
                sent.push(format!("bytes {}..{}", piece.from, piece.to));
            }
            // Adjacent byte ranges of one chunk, split where `sendfile` stopped, joined again.
            let mut joined: Vec<String> = Vec::new();
            for item in sent {
                if let (Some(last), Some(rest)) = (joined.last_mut(), item.strip_prefix("bytes "))
                    && let Some(prev) = last.strip_prefix("bytes ")
                {
                    let (a, b) = prev.split_once("..").unwrap();
                    let (c, d) = rest.split_once("..").unwrap();
                    if b == c {
                        *last = format!("bytes {a}..{d}");
                        continue;
                    }
                }
                joined.push(item);
            }
            assert_eq!(joined, whole, "from {from}");
        }
        // Copying from the start, with no framing sent: the whole body.
        let copied: Vec<RestPiece> = rest_of_body(offset, end, offset, offset).collect();
        assert_eq!(copied.len(), 3);
        assert_eq!(copied[0].framing, Some((true, chunk)));
        assert_eq!(copied[2].framing, Some((false, 100)));
        assert_eq!(rest_of_body(offset, offset, offset, offset).count(), 0);
    }
}
