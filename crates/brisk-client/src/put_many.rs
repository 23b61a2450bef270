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

use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;

use crate::bounded::BoundedTasks;
use crate::client::Client;
use crate::error::Result;
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

/// Object writes in progress: [`submit`](Self::submit) objects, take results with
/// [`next`](Self::next) as they complete. Dropping it aborts the writes in flight (a multipart
/// upload aborted that way is aborted on the service too, as [`Client::upload`]'s is).
pub struct ObjectWrites<B> {
    client: Client,
    options: Arc<TransferOptions>,
    /// Writes in flight, finished but not yet taken, and queued (with their bodies).
    tasks: BoundedTasks<Result<UploadResult>>,
    body: PhantomData<fn(B)>,
}

impl<B> std::fmt::Debug for ObjectWrites<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectWrites")
            .field("tasks", &self.tasks)
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
        crate::transfer::check_upload_options(&options)?;
        Ok(ObjectWrites {
            client: self.clone(),
            options: Arc::new(self.with_dialect_checksum(options)),
            tasks: BoundedTasks::new(queue_depth, "put_many")?,
            body: PhantomData,
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
        let (client, options) = (self.client.clone(), Arc::clone(&self.options));
        let (bucket, key): (Arc<str>, Arc<str>) = (bucket.into(), key.into());
        self.tasks.submit(id, async move {
            write(client, &bucket, &key, body, &options).await
        });
    }

    /// Whether an object submitted now would start at once (fewer than `queue_depth` objects in
    /// flight or waiting to be taken, none queued).
    pub fn has_room(&self) -> bool {
        self.tasks.has_room()
    }

    /// Objects submitted whose results have not been taken yet.
    pub fn outstanding(&self) -> usize {
        self.tasks.outstanding()
    }

    /// Aborts the writes in flight, drops those finished and not taken, and forgets the objects
    /// queued: nothing is outstanding afterwards.
    pub fn cancel(&mut self) {
        self.tasks.cancel();
    }

    /// The next finished write, in the order they finish; `None` when none is outstanding.
    /// Taking a result frees its slot. Cancel-safe: dropping the future loses no result.
    pub async fn next(&mut self) -> Option<ObjectWrite> {
        self.tasks.next().await
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
