//! Batch reads: many `(key, offset, length, destination)` ranges of one bucket, read at a target
//! queue depth over keep-alive connections (by default one per request in flight up to 64,
//! pipelined only past that), completed one by one as they finish.
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
//!   client): by default one per request in flight up to 64; requests are pipelined only when
//!   the queue depth is larger than the connections, at most 16 on one connection.
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

mod pipeline;
mod scheduler;
mod types;

use std::sync::Arc;

use brisk_mem::MAX_BLOCK_SIZE;
use tokio::sync::mpsc;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::request::{check_bucket, check_key};
use scheduler::Scheduler;
use types::{Member, Work};

pub use types::{
    BatchOptions, BatchStats, Completion, DEFAULT_BATCH_CONNECTIONS, DEFAULT_QUEUE_DEPTH,
    Destination, Filled, LentBuffer, MAX_COALESCED_SPAN, Pipelining, ReadRequest,
};

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
        let scheduler = Scheduler::start(
            self.clone(),
            bucket,
            options,
            sender,
            &runtime,
            pipeline::run_lane,
        );
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
