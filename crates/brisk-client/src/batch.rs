//! Batch reads: many `(key, offset, length, destination)` ranges of one bucket, read at a target
//! queue depth over few keep-alive connections, completed one by one as they finish.
//!
//! ```no_run
//! # async fn demo(client: brisk_client::Client) -> Result<(), brisk_client::Error> {
//! use brisk_client::batch::{BatchOptions, Destination, ReadRequest};
//! let mut reader = client.batch_reader("bucket", BatchOptions::default())?;
//! for i in 0..256u64 {
//!     reader.submit(ReadRequest::new(i, "table.bin", i * 262_144, 262_144, Destination::Pooled));
//! }
//! while let Some(done) = reader.next().await {
//!     match done.data() {
//!         Ok(bytes) => { /* use bytes; the block goes back to the pool when `done` drops */ }
//!         Err(e) => eprintln!("read {} failed: {e}", done.id),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # What is bounded
//!
//! - **Requests in flight**: at most [`BatchOptions::queue_depth`] requests are sent and not yet
//!   handed to the caller, counting the completions waiting in [`BatchReader::next`]: a slot frees
//!   when the caller takes a completion. So a batch holds at most `queue_depth` destinations at a
//!   time however many ranges are submitted, and a caller who stops calling `next` stops the reads.
//! - **Connections**: at most [`BatchOptions::connections`] (and never more than the client's
//!   `max_connections_per_host`, whose bound the batch shares with every other request of the
//!   client); requests are pipelined on them (see [`crate::scheduler`]).
//! - **Threads**: none are started. The engine is a few tasks on the caller's tokio runtime, so the
//!   threads are the runtime's (the number of cores for a default multi-thread runtime, one for a
//!   current-thread runtime).
//! - **Buffers**: none per request. A range is read from the socket straight into its destination:
//!   the caller's buffer (which comes back in the completion, to be reused), or a block of the
//!   client's [`BufferPool`](brisk_mem::BufferPool) taken when the request is sent (so paid from the
//!   memory budget only while in flight) and recycled when the completion is dropped.
//!
//! # Errors
//!
//! Every request completes exactly once, with its bytes or its own error: a range that starts at or
//! past the end of the object is [`Error::InvalidRange`], a missing key [`Error::NoSuchKey`], and so
//! on; the other requests of the batch go on. A range that runs past the end completes with the
//! bytes that exist (fewer than asked, as `pread` does). Transport failures and throttling are
//! retried within the client's [`RetryPolicy`](crate::RetryPolicy).

use std::sync::Arc;

use brisk_mem::{MAX_BLOCK_SIZE, PooledBlock};
use tokio::sync::mpsc;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::request::{check_bucket, check_key};
use crate::scheduler::{Member, Scheduler, SchedulerStats, Work};

/// Default requests in flight: 64, the queue depth the random-read benchmark is quoted at; with
/// 256 KiB ranges that is 16 MiB of destinations in flight.
pub const DEFAULT_QUEUE_DEPTH: usize = 64;

/// Default connections of a batch: 8. With pipelining, 8 connections at depth 8 keep 64 requests in
/// flight, so a batch holds 8 sockets and costs the server 8 tasks and read buffers whatever the
/// queue depth, and a network round trip never leaves a connection idle.
///
/// The price, measured on a 2-core VM over loopback (`docs/random-reads.md`): a second response
/// queued on a connection about doubles the server's CPU per GiB, and at queue depth 64 one
/// connection per request in flight (`connections: 64`, no request pipelined) read 256 KiB ranges
/// at about twice the IOPS for two thirds of the client CPU. Raise `connections` towards the queue
/// depth where sockets are cheap and the server is near.
pub const DEFAULT_BATCH_CONNECTIONS: usize = 8;

/// The largest span one coalesced GET covers: 8 MiB (the pool's largest block), so that a merged
/// request takes no longer than a download part and one slow response does not hold many ranges.
pub const MAX_COALESCED_SPAN: u64 = MAX_BLOCK_SIZE as u64;

/// Whether requests are pipelined on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pipelining {
    /// Pipelined until the server shows it does not keep a connection for a second request
    /// (it answers `Connection: close`, or the connection ends with requests unanswered after at
    /// most one response); from then on, one request at a time per connection.
    #[default]
    Auto,
    /// Pipelined always (a server that closes connections still gets the requests again on a new
    /// connection, but the batch never stops pipelining).
    On,
    /// One request at a time per connection.
    Off,
}

/// How a batch is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Requests in flight (sent and not yet taken by the caller), at least 1.
    pub queue_depth: usize,
    /// Connections the batch uses at most, at least 1 (capped at the client's
    /// `max_connections_per_host` and at `queue_depth`).
    pub connections: usize,
    /// Whether requests are pipelined.
    pub pipelining: Pipelining,
    /// Whether ranges of one key that touch or overlap, submitted together with
    /// [`BatchReader::submit_all`], are read with one GET (up to [`MAX_COALESCED_SPAN`] bytes);
    /// overlapping bytes are read once and copied into each destination that wants them.
    pub coalesce: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            queue_depth: DEFAULT_QUEUE_DEPTH,
            connections: DEFAULT_BATCH_CONNECTIONS,
            pipelining: Pipelining::Auto,
            coalesce: false,
        }
    }
}

/// Memory the caller owns and lends to one read, such as a region of a Python `bytearray` or numpy
/// array, or an [`ExactBuf`](brisk_mem::ExactBuf) of a range's size: the read writes into it in
/// place and gives it back in the completion, where the caller can take its own type back
/// (`Box<dyn LentBuffer>` coerces to `Box<dyn Any + Send>` for a downcast). Anything that can be seen
/// as a mutable byte slice and sent to another thread qualifies.
pub trait LentBuffer: AsRef<[u8]> + AsMut<[u8]> + Send + std::fmt::Debug + std::any::Any {}

impl<T: AsRef<[u8]> + AsMut<[u8]> + Send + std::fmt::Debug + std::any::Any> LentBuffer for T {}

/// Where a range is read to.
#[derive(Debug)]
pub enum Destination {
    /// The caller's buffer, at least as long as the range: the range lands in its first `length`
    /// bytes, and the buffer comes back in the completion.
    Buffer(Vec<u8>),
    /// Memory the caller lends, at least as long as the range (see [`LentBuffer`]): the range lands
    /// in its first `length` bytes, straight from the socket.
    Lent(Box<dyn LentBuffer>),
    /// A pooled block the caller holds, at least as long as the range.
    Block(PooledBlock),
    /// A block of the client's buffer pool, taken when the request is sent (at most 8 MiB).
    Pooled,
}

/// A destination holding a completed (or failed) read, given back to the caller.
#[derive(Debug)]
pub enum Filled {
    /// The caller's buffer.
    Buffer(Vec<u8>),
    /// The memory the caller lent.
    Lent(Box<dyn LentBuffer>),
    /// A pooled block (back to the pool when dropped).
    Block(PooledBlock),
}

impl Filled {
    /// The whole destination.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Self::Buffer(b) => b,
            Self::Lent(b) => (**b).as_ref(),
            Self::Block(b) => b,
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            Self::Buffer(b) => b,
            Self::Lent(b) => (**b).as_mut(),
            Self::Block(b) => b,
        }
    }
}

/// One range to read.
#[derive(Debug)]
pub struct ReadRequest {
    /// The caller's name for this request, returned in its completion.
    pub id: u64,
    /// The object's key.
    pub key: Arc<str>,
    /// First byte of the range.
    pub offset: u64,
    /// Bytes to read.
    pub length: usize,
    /// Where the bytes go.
    pub destination: Destination,
}

impl ReadRequest {
    /// A request for `length` bytes of `key` from `offset` into `destination`.
    pub fn new(
        id: u64,
        key: impl Into<Arc<str>>,
        offset: u64,
        length: usize,
        destination: Destination,
    ) -> Self {
        Self {
            id,
            key: key.into(),
            offset,
            length,
            destination,
        }
    }
}

/// A finished request.
#[derive(Debug)]
pub struct Completion {
    /// The request's id.
    pub id: u64,
    /// The request's key.
    pub key: Arc<str>,
    /// The request's offset.
    pub offset: u64,
    /// The bytes asked for.
    pub length: usize,
    /// Bytes read into the destination (fewer than `length` only at the end of the object), or
    /// why the read failed.
    pub result: Result<usize>,
    /// The destination, given back whether the read succeeded or not (`None` only when a pooled
    /// block could not be had).
    pub buffer: Option<Filled>,
    /// Slots of the queue depth this completion frees when the caller takes it.
    pub(crate) releases: usize,
}

impl Completion {
    /// The bytes read, or the request's error.
    pub fn data(&self) -> Result<&[u8], &Error> {
        match &self.result {
            Ok(n) => Ok(self
                .buffer
                .as_ref()
                .map_or(&[][..], |b| &b.as_slice()[..*n])),
            Err(e) => Err(e),
        }
    }
}

/// Counters of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchStats {
    /// Requests submitted.
    pub submitted: u64,
    /// Completions handed to the caller.
    pub completed: u64,
    /// GET requests written to a connection (retries and re-sent requests included; a coalesced
    /// GET counts once).
    pub gets_sent: u64,
    /// Responses read on a connection that already had another request in flight behind or before
    /// them: the requests that pipelining overlapped.
    pub pipelined: u64,
    /// Requests sent again on another connection because theirs ended before answering them.
    pub resent: u64,
    /// Whether the batch stopped pipelining because the server does not keep connections.
    pub fell_back: bool,
    /// Connections opened or taken from the pool by the batch.
    pub connections_used: u64,
    /// The most connections the batch held at once.
    pub max_connections: u64,
}

/// A batch of range reads in progress: submit requests, take completions with
/// [`next`](Self::next). Dropping it stops its reads (requests on the wire are abandoned and their
/// connections closed).
#[derive(Debug)]
pub struct BatchReader {
    scheduler: Arc<Scheduler>,
    completions: mpsc::UnboundedReceiver<Completion>,
    outstanding: u64,
    options: BatchOptions,
}

impl Client {
    /// Starts a batch of range reads of `bucket`. Must be called within a tokio runtime: the
    /// engine's tasks run on it.
    pub fn batch_reader(&self, bucket: &str, options: BatchOptions) -> Result<BatchReader> {
        self.pinned_batch_reader(bucket, None, options)
    }

    /// [`batch_reader`](Self::batch_reader) whose every GET carries `If-Match: if_match`, so
    /// that all ranges come from one version of the object (a changed object fails each read with
    /// [`Error::ObjectChanged`]).
    pub(crate) fn pinned_batch_reader(
        &self,
        bucket: &str,
        if_match: Option<Arc<str>>,
        options: BatchOptions,
    ) -> Result<BatchReader> {
        check_bucket(bucket)?;
        if options.queue_depth == 0 || options.connections == 0 {
            return Err(Error::InvalidArgument {
                what: format!(
                    "a batch needs a queue depth and a connection count of at least 1 (got {} and {})",
                    options.queue_depth, options.connections
                ),
            });
        }
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| Error::InvalidArgument {
                what: "batch reads run on a tokio runtime; none is running here".into(),
            })?;
        let (sender, completions) = mpsc::unbounded_channel();
        let scheduler = Scheduler::start(self.clone(), bucket, if_match, options, sender, &runtime);
        Ok(BatchReader {
            scheduler,
            completions,
            outstanding: 0,
            options,
        })
    }
}

impl BatchReader {
    /// Queues one request. Never waits: requests beyond the queue depth wait in the queue (which
    /// holds their descriptions and destinations, no other buffer).
    pub fn submit(&mut self, request: ReadRequest) {
        self.outstanding += 1;
        match self.prepare(request) {
            Ok(member) => self.scheduler.push(Work::single(member)),
            Err(completion) => self.scheduler.complete_now(*completion),
        }
    }

    /// Queues many requests; with [`BatchOptions::coalesce`], ranges of one key that touch or
    /// overlap become one GET.
    pub fn submit_all(&mut self, requests: impl IntoIterator<Item = ReadRequest>) {
        if !self.options.coalesce {
            for request in requests {
                self.submit(request);
            }
            return;
        }
        let mut members = Vec::new();
        for request in requests {
            self.outstanding += 1;
            match self.prepare(request) {
                Ok(member) => members.push(member),
                Err(completion) => self.scheduler.complete_now(*completion),
            }
        }
        for work in coalesce(members) {
            self.scheduler.push(work);
        }
    }

    /// Checks a request; a request that can not be sent completes at once with its error.
    fn prepare(&self, request: ReadRequest) -> Result<Member, Box<Completion>> {
        let ReadRequest {
            id,
            key,
            offset,
            length,
            destination,
        } = request;
        let capacity = match &destination {
            Destination::Buffer(b) => b.len(),
            Destination::Lent(b) => (**b).as_ref().len(),
            Destination::Block(b) => b.capacity(),
            Destination::Pooled => MAX_BLOCK_SIZE,
        };
        let problem = check_key(&key).err().or_else(|| {
            (length > capacity).then_some(Error::BufferTooSmall {
                length: length as u64,
                capacity,
            })
        });
        if let Some(error) = problem {
            return Err(Box::new(Completion {
                id,
                key,
                offset,
                length,
                result: Err(error),
                buffer: match destination {
                    Destination::Buffer(b) => Some(Filled::Buffer(b)),
                    Destination::Lent(b) => Some(Filled::Lent(b)),
                    Destination::Block(b) => Some(Filled::Block(b)),
                    Destination::Pooled => None,
                },
                releases: 0,
            }));
        }
        Ok(Member {
            id,
            key,
            offset,
            length,
            buffer: match destination {
                Destination::Buffer(b) => Some(Filled::Buffer(b)),
                Destination::Lent(b) => Some(Filled::Lent(b)),
                Destination::Block(b) => Some(Filled::Block(b)),
                Destination::Pooled => None,
            },
        })
    }

    /// The next completion, in the order they finish; `None` once every submitted request has
    /// completed. Taking a completion frees its slot of the queue depth.
    pub async fn next(&mut self) -> Option<Completion> {
        if self.outstanding == 0 {
            return None;
        }
        let completion = self.completions.recv().await?;
        self.outstanding -= 1;
        self.scheduler.delivered(completion.releases);
        Some(completion)
    }

    /// Requests submitted and not yet taken with [`next`](Self::next).
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// The batch's counters so far.
    pub fn stats(&self) -> BatchStats {
        self.scheduler.stats().into()
    }

    /// The options in force.
    pub fn options(&self) -> BatchOptions {
        self.options
    }
}

impl Drop for BatchReader {
    fn drop(&mut self) {
        self.scheduler.shut_down();
    }
}

impl From<SchedulerStats> for BatchStats {
    fn from(s: SchedulerStats) -> Self {
        Self {
            submitted: s.submitted,
            completed: s.completed,
            gets_sent: s.gets_sent,
            pipelined: s.pipelined,
            resent: s.resent,
            fell_back: s.fell_back,
            connections_used: s.connections_used,
            max_connections: s.max_connections,
        }
    }
}

/// Groups ranges of one key that touch or overlap into GETs of at most [`MAX_COALESCED_SPAN`]
/// bytes; the others stay one GET each.
fn coalesce(mut members: Vec<Member>) -> Vec<Work> {
    members.sort_by(|a, b| (&a.key, a.offset).cmp(&(&b.key, b.offset)));
    let mut works = Vec::new();
    let mut run: Vec<Member> = Vec::new();
    let mut run_end = 0u64;
    for member in members {
        let end = member.offset + member.length as u64;
        let joins = run.first().is_some_and(|first| {
            first.key == member.key
                && member.offset <= run_end
                && end.max(run_end) - first.offset <= MAX_COALESCED_SPAN
        });
        if !joins && !run.is_empty() {
            works.push(Work::group(std::mem::take(&mut run)));
        }
        run_end = if run.is_empty() {
            end
        } else {
            run_end.max(end)
        };
        run.push(member);
    }
    if !run.is_empty() {
        works.push(Work::group(run));
    }
    works
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(key: &str, offset: u64, length: usize) -> Member {
        Member {
            id: offset,
            key: key.into(),
            offset,
            length,
            buffer: None,
        }
    }

    fn spans(works: &[Work]) -> Vec<(String, u64, u64, usize)> {
        works
            .iter()
            .map(|w| (w.key().to_string(), w.start(), w.end(), w.members().len()))
            .collect()
    }

    #[test]
    fn touching_and_overlapping_ranges_of_one_key_merge() {
        let works = coalesce(vec![
            member("a", 100, 50), // 100..150
            member("a", 0, 100),  // 0..100, touches the first
            member("a", 120, 60), // 120..180, overlaps
            member("a", 181, 10), // a gap of one byte: not merged
            member("b", 180, 10), // another key
        ]);
        assert_eq!(
            spans(&works),
            vec![
                ("a".into(), 0, 180, 3),
                ("a".into(), 181, 191, 1),
                ("b".into(), 180, 190, 1),
            ]
        );
    }

    #[test]
    fn a_merged_get_stays_within_the_span_limit() {
        let len = (MAX_COALESCED_SPAN / 2) as usize;
        let works = coalesce((0..5).map(|i| member("k", i * len as u64, len)).collect());
        assert_eq!(
            spans(&works)
                .iter()
                .map(|s| (s.1, s.2, s.3))
                .collect::<Vec<_>>(),
            vec![
                (0, 2 * len as u64, 2),
                (2 * len as u64, 4 * len as u64, 2),
                (4 * len as u64, 5 * len as u64, 1),
            ]
        );
    }
}
