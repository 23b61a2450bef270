//! Many objects stored at a bounded queue depth: [`ObjectWrites`], fed one object at a time, each
//! from bytes the caller owns or from a file. Results come back as they complete, each with the
//! id it was submitted under, and an object that fails (a key that exists under
//! `if_none_match_any`, a missing file, a refused request) is a result like any other: the set
//! goes on.
//!
//! ```no_run
//! # async fn demo(client: brisk_client::Client) -> Result<(), brisk_client::Error> {
//! use brisk_client::{PutSource, TransferOptions};
//! let mut writes = client.object_writes(64, TransferOptions::default())?;
//! for i in 0..10_000u64 {
//!     while !writes.has_room() {
//!         if let Some((id, Err(e))) = writes.next().await {
//!             eprintln!("object {id}: {e}");
//!         }
//!     }
//!     let body = vec![i as u8; 16 * 1024];
//!     writes.submit(i, "bucket", format!("samples/{i:06}"), PutSource::Bytes(body));
//! }
//! while let Some((id, result)) = writes.next().await {
//!     result.map_err(|e| { eprintln!("object {id}: {e}"); e }).ok();
//! }
//! # Ok(()) }
//! ```
//!
//! # What is bounded
//!
//! - **Bodies held**: the set holds the bodies of at most `queue_depth` objects in flight or
//!   queued by a caller who submitted past [`has_room`](ObjectWrites::has_room); a caller who
//!   submits only while there is room (as the Python binding's `put_many` does, taking items from
//!   its iterable one at a time) holds `queue_depth` bodies whatever the count.
//! - **Connections**: each write in flight holds one connection of the client's pool (a file
//!   larger than a part, its `parts_in_flight`), within the client's `max_connections_per_host`.
//! - **Memory**: bytes are sent from the caller's memory as they are (no copy, nothing taken from
//!   the budget); a file is read as [`Client::upload`] reads it, into pooled blocks on the
//!   budget, waiting while the budget is full.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::task::JoinSet;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::transfer::{TransferOptions, UploadResult};

/// Where one object's bytes come from.
#[derive(Debug)]
pub enum PutSource<B> {
    /// Bytes in memory, sent in one PUT (up to 5 GiB) straight from them.
    Bytes(B),
    /// A file, uploaded as [`Client::upload`] uploads it: one PUT if it fits in a part, else a
    /// multipart upload.
    File(PathBuf),
}

/// One finished write: the id it was submitted under, and what the service stored (`parts` is 1
/// for a single PUT), or why it was not stored.
pub type ObjectWrite = (u64, Result<UploadResult>);

/// A write submitted beyond the queue depth: its id, bucket, key and body, not started.
type Queued<B> = (u64, Arc<str>, Arc<str>, PutSource<B>);

/// Object writes in progress: [`submit`](Self::submit) objects, take results with
/// [`next`](Self::next) as they complete. Dropping it aborts the writes in flight (a multipart
/// upload aborted that way is aborted on the service too, as [`Client::upload`]'s is).
pub struct ObjectWrites<B> {
    client: Client,
    runtime: Handle,
    options: Arc<TransferOptions>,
    /// Writes in flight and writes finished but not yet taken.
    tasks: JoinSet<ObjectWrite>,
    /// Objects submitted beyond the queue depth.
    queued: VecDeque<Queued<B>>,
    queue_depth: usize,
}

impl<B> std::fmt::Debug for ObjectWrites<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectWrites")
            .field("in_flight_or_done", &self.tasks.len())
            .field("queued", &self.queued.len())
            .field("queue_depth", &self.queue_depth)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts a set of object writes with at most `queue_depth` (at least 1) objects in flight or
    /// waiting to be taken, each stored with `options` (content type, headers and metadata,
    /// checksum, `if_none_match_any`; part size and parts in flight for files larger than a
    /// part). Must be called within a tokio runtime: the writes run on it.
    pub fn object_writes<B>(
        &self,
        queue_depth: usize,
        options: TransferOptions,
    ) -> Result<ObjectWrites<B>> {
        if queue_depth == 0 {
            return Err(Error::InvalidArgument {
                what: "put_many needs a queue depth of at least 1".into(),
            });
        }
        crate::transfer::check_upload_options(&options)?;
        let runtime = Handle::try_current().map_err(|_| Error::InvalidArgument {
            what: "put_many runs on a tokio runtime; none is running here".into(),
        })?;
        Ok(ObjectWrites {
            client: self.clone(),
            runtime,
            options: Arc::new(self.with_dialect_checksum(options)),
            tasks: JoinSet::new(),
            queued: VecDeque::new(),
            queue_depth,
        })
    }
}

impl<B: AsRef<[u8]> + Send + 'static> ObjectWrites<B> {
    /// Queues a write of `body` to `bucket`/`key`, named `id` in its result. Never waits:
    /// objects past the queue depth wait (with their bodies) until a slot frees.
    pub fn submit(
        &mut self,
        id: u64,
        bucket: impl Into<Arc<str>>,
        key: impl Into<Arc<str>>,
        body: PutSource<B>,
    ) {
        self.queued.push_back((id, bucket.into(), key.into(), body));
        self.start_queued();
    }

    /// Whether an object submitted now would start at once (fewer than `queue_depth` objects in
    /// flight or waiting to be taken, none queued).
    pub fn has_room(&self) -> bool {
        self.queued.is_empty() && self.tasks.len() < self.queue_depth
    }

    /// Objects submitted whose results have not been taken yet.
    pub fn outstanding(&self) -> usize {
        self.queued.len() + self.tasks.len()
    }

    /// Aborts the writes in flight, drops those finished and not taken, and forgets the objects
    /// queued: nothing is outstanding afterwards.
    pub fn cancel(&mut self) {
        self.queued.clear();
        self.tasks.abort_all();
        self.tasks.detach_all();
    }

    fn start_queued(&mut self) {
        while self.tasks.len() < self.queue_depth {
            let Some((id, bucket, key, body)) = self.queued.pop_front() else {
                return;
            };
            let client = self.client.clone();
            let options = Arc::clone(&self.options);
            self.tasks.spawn_on(
                async move { (id, write(client, &bucket, &key, body, &options).await) },
                &self.runtime,
            );
        }
    }

    /// The next finished write, in the order they finish; `None` when none is outstanding.
    /// Taking a result frees its slot. Cancel-safe: dropping the future loses no result.
    pub async fn next(&mut self) -> Option<ObjectWrite> {
        loop {
            let joined = self.tasks.join_next().await?;
            self.start_queued();
            match joined {
                Ok(write) => return Some(write),
                // A panic in a write is a bug; it has no id to report it under, so it is raised here.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // Cancelled: only when the runtime shuts down, and nobody waits for it then.
                Err(_) => continue,
            }
        }
    }
}

/// Stores one object: bytes in one PUT, a file as [`Client::upload`] does.
async fn write<B: AsRef<[u8]>>(
    client: Client,
    bucket: &str,
    key: &str,
    body: PutSource<B>,
    options: &TransferOptions,
) -> Result<UploadResult> {
    match body {
        PutSource::Bytes(bytes) => {
            let bytes = bytes.as_ref();
            let put = client
                .put_with(bucket, key, bytes, &options.put_options())
                .await?;
            options.count(bytes.len() as u64);
            Ok(UploadResult {
                etag: put.etag,
                size: bytes.len() as u64,
                parts: 1,
            })
        }
        PutSource::File(path) => client.upload(bucket, key, &path, options.clone()).await,
    }
}
