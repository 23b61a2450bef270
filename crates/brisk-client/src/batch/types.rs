//! What a batch is made of, shared by the reader ([`super::BatchReader`]), the scheduler and its
//! lanes: the options and their defaults, the requests, destinations and completions the caller
//! sees, and the units of work the scheduler queues ([`Work`], one GET covering one [`Member`] or
//! several coalesced ones). A leaf: nothing here knows how a batch is run.

use std::sync::Arc;

use brisk_mem::{MAX_BLOCK_SIZE, PooledBlock};

use crate::error::{Error, Result};

/// Default requests in flight: 64, the queue depth the random-read benchmark is quoted at; with
/// 256 KiB ranges that is 16 MiB of destinations in flight.
pub const DEFAULT_QUEUE_DEPTH: usize = 64;

/// Default connections of a batch: 64, as many as the default queue depth, so a batch at up to
/// that depth sends each request on a connection of its own and pipelines only past it (QD 256:
/// 4 per connection). The client's `max_connections_per_host` (also 64 by default) bounds it.
///
/// Why not fewer, pipelined (8 until 2026-11-26): servers answer a connection's requests one after
/// the other (`brisk serve`, MinIO's Go `net/http`), so behind a first-byte latency L a connection
/// completes at most one request per L however many are queued on it, and 8 connections capped a
/// batch near 8 / L; on loopback a second response queued on a connection about doubled the
/// server's transmit cost. Measured in `BENCHMARKS-log.md` ("Random reads under latency") with
/// `bench/latency.sh`; the sockets stay bounded, and still fewer than obstore's one per request.
pub const DEFAULT_BATCH_CONNECTIONS: usize = 64;

/// The largest span one coalesced GET covers: 8 MiB (the pool's largest block), so that a merged
/// request takes no longer than a download part and one slow response does not hold many ranges.
pub const MAX_COALESCED_SPAN: u64 = MAX_BLOCK_SIZE as u64;

/// The most requests pipelined on one connection: 16. Each queued request head is under 1 KiB,
/// so 16 of them fit in the smallest socket buffers (Linux starts a TCP receive buffer at 128 KiB)
/// and the server's read buffer: writing them never waits for the server to read, which is what
/// keeps a lane that writes heads and then reads responses from deadlocking against a server that
/// writes a response before reading the next request.
pub(crate) const MAX_PIPELINE_DEPTH: usize = 16;

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
    /// [`BatchReader::submit_all`](super::BatchReader::submit_all), are read with one GET (up to
    /// [`MAX_COALESCED_SPAN`] bytes); overlapping bytes are read once and copied into each
    /// destination that wants them.
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

    /// Makes the pages under `range` resident before a read writes them, when the destination is
    /// an [`ExactBuf`](brisk_mem::ExactBuf) lent to the read (made without populating, as a
    /// batch's exact buffers are: see `ExactBuf::for_overwrite`); nothing for the others, whose
    /// memory is resident already or the caller's. Returns whether there was anything to do.
    pub(crate) fn prepare(&mut self, range: std::ops::Range<usize>) -> bool {
        if let Self::Lent(b) = self {
            let any: &mut dyn std::any::Any = &mut **b;
            if let Some(exact) = any.downcast_mut::<brisk_mem::ExactBuf>() {
                exact.populate(range);
                return exact.is_mapped();
            }
        }
        false
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

/// One range of a batch, with its destination once it has one.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) key: Arc<str>,
    pub(crate) offset: u64,
    pub(crate) length: usize,
    /// `None` until a pooled block is taken for it (when the request is sent).
    pub(crate) buffer: Option<Filled>,
}

impl Member {
    pub(crate) fn end(&self) -> u64 {
        self.offset + self.length as u64
    }
}

#[derive(Debug)]
enum Members {
    One(Member),
    Many(Vec<Member>),
}

/// One GET: a range of a key covering one member, or several coalesced ones (sorted by offset,
/// each starting at or before the end of those before it).
#[derive(Debug)]
pub(crate) struct Work {
    members: Members,
    /// Attempts that failed so far.
    pub(crate) failures: u32,
}

impl Work {
    pub(crate) fn single(member: Member) -> Self {
        Self {
            members: Members::One(member),
            failures: 0,
        }
    }

    pub(crate) fn group(mut members: Vec<Member>) -> Self {
        if members.len() == 1 {
            return Self::single(members.pop().expect("one member"));
        }
        Self {
            members: Members::Many(members),
            failures: 0,
        }
    }

    pub(crate) fn members(&self) -> &[Member] {
        match &self.members {
            Members::One(m) => std::slice::from_ref(m),
            Members::Many(v) => v,
        }
    }

    pub(crate) fn members_mut(&mut self) -> &mut [Member] {
        match &mut self.members {
            Members::One(m) => std::slice::from_mut(m),
            Members::Many(v) => v,
        }
    }

    pub(crate) fn key(&self) -> &Arc<str> {
        &self.members()[0].key
    }

    pub(crate) fn start(&self) -> u64 {
        self.members()[0].offset
    }

    pub(crate) fn end(&self) -> u64 {
        self.members().iter().map(Member::end).max().unwrap_or(0)
    }

    pub(crate) fn into_members(self) -> Vec<Member> {
        match self.members {
            Members::One(m) => vec![m],
            Members::Many(v) => v,
        }
    }
}

/// Counters of one scheduler (see [`BatchStats`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SchedulerStats {
    pub(crate) submitted: u64,
    pub(crate) completed: u64,
    pub(crate) gets_sent: u64,
    pub(crate) pipelined: u64,
    pub(crate) resent: u64,
    pub(crate) fell_back: bool,
    pub(crate) connections_used: u64,
    pub(crate) max_connections: u64,
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
