//! Many whole objects, each into a buffer of exactly its size, at a bounded queue depth:
//! [`Client::get_many`] over an iterator of `(bucket, key)`, or [`ObjectReads`] fed one key at a
//! time. Results come back as they complete, each with the index of its key, and a key that
//! fails (a missing key, a read the memory budget can never hold) is a result like any other:
//! the batch goes on.
//!
//! ```no_run
//! # async fn demo(client: brisk_client::Client) -> Result<(), brisk_client::Error> {
//! let keys = (0..10_000_000u64).map(|i| ("bucket", format!("images/{i:08}.jpg")));
//! let mut reads = client.get_many(keys, 64)?;
//! while let Some((index, result)) = reads.next().await {
//!     match result {
//!         Ok(bytes) => { /* bytes: an ExactBuf of the object's size, on the budget */ }
//!         Err(e) => eprintln!("key {index}: {e}"),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # What is bounded
//!
//! - **Objects held**: at most `queue_depth` reads are in flight or finished and not yet taken
//!   with `next`, so a batch holds at most `queue_depth` objects' buffers besides those the caller
//!   keeps; a caller who stops calling `next` stops the reads. [`Client::get_many`] pulls a key
//!   from its iterator only when a slot is free: ten million keys stream through in the memory
//!   of `queue_depth` objects and their names.
//! - **Connections**: each read in flight holds one connection of the client's pool, so at most
//!   `queue_depth` (and never more than the client's `max_connections_per_host`) are opened.
//! - **Memory**: each object is read as [`Client::get_bytes`] reads it: exactly `Content-Length`
//!   bytes, reserved on the client's budget once the response's head says how many, waiting while
//!   the budget is full. An object larger than the whole budget is [`Error::Memory`] at once for
//!   that key. A caller that keeps every object until the end (a list) says so with
//!   [`ObjectReads::hold_all`]: an object that would take the set past the budget's capacity is
//!   then [`Error::Memory`] too, where waiting would never end.
//!
//! # Why not the range batch engine
//!
//! [`crate::batch`] reads ranges whose lengths are known when they are sent: it takes their
//! destinations (pooled blocks or exact buffers) before the request and pipelines requests on
//! its connections. A whole-object read learns its size from the response's head, and must take
//! its buffer from the budget between the head and the body; a pipelined connection would hold
//! every response behind one that waits for memory. So each read here is one
//! [`Client::get_bytes`] (sizing, budget, checksum checks and resumed reads included) on a
//! connection of its own from the client's pool, one request in flight per connection, which is
//! what the batch engine does by default up to 64 requests in flight
//! ([`DEFAULT_BATCH_CONNECTIONS`](crate::batch::DEFAULT_BATCH_CONNECTIONS)).
//!
//! [`Client::object_reads_with`] reads each object some other way: into memory the caller
//! chooses once the object's length is known ([`Client::get_into_chosen`]), such as the next
//! region of one large buffer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use brisk_mem::{BudgetError, ExactBuf};

use crate::bounded::BoundedTasks;
use crate::client::Client;
use crate::error::{Error, Result};

/// One finished read: the index of its key and the object (an [`ExactBuf`] unless the set reads
/// elsewhere, see [`Client::object_reads_with`]), or why it could not be read.
pub type ObjectRead<T = ExactBuf> = (u64, Result<T>);

/// What reads one object of a set: given the client, the bucket and the key.
type ReadFn<T> = Arc<
    dyn Fn(Client, Arc<str>, Arc<str>) -> Pin<Box<dyn Future<Output = Result<T>> + Send>>
        + Send
        + Sync,
>;

/// Whole-object reads in progress: [`submit`](Self::submit) keys, take results with
/// [`next`](Self::next) as they complete. Dropping it aborts the reads in flight.
pub struct ObjectReads<T = ExactBuf> {
    client: Client,
    read: ReadFn<T>,
    /// Reads in flight, finished but not yet taken, and queued (names only, no buffer).
    tasks: BoundedTasks<Result<T>>,
}

impl<T> std::fmt::Debug for ObjectReads<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectReads")
            .field("tasks", &self.tasks)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts a set of whole-object reads with at most `queue_depth` (at least 1) objects in flight
    /// or waiting to be taken, each into an [`ExactBuf`] ([`get_bytes`](Self::get_bytes)). Must be
    /// called within a tokio runtime: the reads run on it.
    pub fn object_reads(&self, queue_depth: usize) -> Result<ObjectReads> {
        self.object_reads_with(queue_depth, |client, bucket, key| async move {
            client.get_bytes(&bucket, &key).await
        })
    }

    /// [`object_reads`](Self::object_reads) whose objects are read by `read` (given the client,
    /// the bucket and the key): into the caller's memory with
    /// [`get_into_chosen`](Self::get_into_chosen), for example.
    pub fn object_reads_with<T, F, Fut>(
        &self,
        queue_depth: usize,
        read: F,
    ) -> Result<ObjectReads<T>>
    where
        T: Send + 'static,
        F: Fn(Client, Arc<str>, Arc<str>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        Ok(ObjectReads {
            client: self.clone(),
            read: Arc::new(move |client, bucket, key| Box::pin(read(client, bucket, key))),
            tasks: BoundedTasks::new(queue_depth, "get_many")?,
        })
    }

    /// Reads every object `keys` names (`(bucket, key)` pairs), each into an [`ExactBuf`] of its
    /// size ([`get_bytes`](Self::get_bytes)), at most `queue_depth` at a time; results come out
    /// of [`GetMany::next`] as they complete, with the index of their key in `keys`. Keys are
    /// taken from the iterator only as slots free up. Must be called within a tokio runtime.
    pub fn get_many<I, B, K>(&self, keys: I, queue_depth: usize) -> Result<GetMany<I::IntoIter>>
    where
        I: IntoIterator<Item = (B, K)>,
        B: Into<Arc<str>>,
        K: Into<Arc<str>>,
    {
        Ok(GetMany {
            reads: self.object_reads(queue_depth)?,
            keys: keys.into_iter(),
            next_index: 0,
        })
    }
}

impl ObjectReads<ExactBuf> {
    /// For a caller that keeps every object until the last is read (a list of them): a read whose
    /// object would take the objects of this set past the budget's capacity fails at once with
    /// [`Error::Memory`] (`ExceedsCapacity`, the set's total and this object's), with nothing
    /// reserved, instead of waiting for memory that only the caller would free, for ever. Objects
    /// of the set that fit are read; a read that fails gives its share back. Call it before
    /// submitting keys.
    pub fn hold_all(mut self) -> Self {
        let held = Arc::new(AtomicUsize::new(0));
        self.read = Arc::new(move |client, bucket, key| {
            let held = Arc::clone(&held);
            Box::pin(async move {
                let capacity = client.memory_budget().capacity();
                let mut claimed = 0;
                let admit = |length: usize| {
                    held.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| {
                        (h.saturating_add(length) <= capacity).then_some(h + length)
                    })
                    .map(|_| claimed = length)
                    .map_err(|h| {
                        Error::Memory(BudgetError::ExceedsCapacity {
                            requested: h.saturating_add(length),
                            capacity,
                        })
                    })
                };
                let read = client.get_bytes_admitted(&bucket, &key, admit).await;
                if read.is_err() {
                    held.fetch_sub(claimed, Ordering::SeqCst);
                }
                read
            })
        });
        self
    }
}

impl<T: Send + 'static> ObjectReads<T> {
    /// Queues a read of `bucket`/`key`, named `id` in its result. Never waits: keys past the queue
    /// depth wait (as names) until a slot frees.
    pub fn submit(&mut self, id: u64, bucket: impl Into<Arc<str>>, key: impl Into<Arc<str>>) {
        // Not polled until a slot frees: until then the future holds the names alone.
        let read = (self.read)(self.client.clone(), bucket.into(), key.into());
        self.tasks.submit(id, read);
    }

    /// Whether a key submitted now would start at once (fewer than `queue_depth` objects in
    /// flight or waiting to be taken, none queued).
    pub fn has_room(&self) -> bool {
        self.tasks.has_room()
    }

    /// Keys submitted whose results have not been taken yet.
    pub fn outstanding(&self) -> usize {
        self.tasks.outstanding()
    }

    /// The queue depth.
    pub fn queue_depth(&self) -> usize {
        self.tasks.queue_depth()
    }

    /// Aborts the reads in flight, drops those finished and not taken, and forgets the keys
    /// queued: nothing is outstanding afterwards.
    pub fn cancel(&mut self) {
        self.tasks.cancel();
    }

    /// The next finished read, in the order they finish; `None` when none is outstanding. Taking a
    /// result frees its slot. Cancel-safe: dropping the future loses no result.
    pub async fn next(&mut self) -> Option<ObjectRead<T>> {
        self.tasks.next().await
    }
}

/// [`Client::get_many`] in progress: results as reads complete. Dropping it aborts the reads in
/// flight.
#[derive(Debug)]
pub struct GetMany<I> {
    reads: ObjectReads,
    keys: I,
    next_index: u64,
}

impl<I, B, K> GetMany<I>
where
    I: Iterator<Item = (B, K)>,
    B: Into<Arc<str>>,
    K: Into<Arc<str>>,
{
    /// The next finished read, with the index of its key; `None` once every key has been read.
    /// Takes keys from the iterator until `queue_depth` reads are outstanding.
    pub async fn next(&mut self) -> Option<ObjectRead> {
        while self.reads.has_room() {
            let Some((bucket, key)) = self.keys.next() else {
                break;
            };
            self.reads.submit(self.next_index, bucket, key);
            self.next_index += 1;
        }
        self.reads.next().await
    }

    /// Keys taken from the iterator so far.
    pub fn keys_taken(&self) -> u64 {
        self.next_index
    }
}
