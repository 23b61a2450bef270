//! The storage layer of the embedded S3 server: buckets, objects, metadata and multipart uploads in one
//! directory.
//!
//! Object bodies are files named by a generated id (never by key) under `data/`; everything else — which
//! key points to which file, headers, ETags, part layouts, uploads — lives in one ordered, transactional
//! metadata database (`redb`, a copy-on-write B-tree with MVCC readers). An object becomes visible only
//! through a metadata commit that happens after its body was written, synced and renamed, so a crash at
//! any point leaves either the old version or the new one, never a partial object. `docs/storage.md`
//! describes the layout, the commit protocol and each crash case.
//!
//! The API is synchronous (file I/O and short transactions); the async front end runs it on its
//! blocking pool. Writes go through [`PendingObject`], which takes the front end's reused read buffer
//! with no extra copy; reads hand out an [`ObjectBody`] (the open data file, or one per part of an
//! object completed from several parts) so the front end can `sendfile` from it.

mod error;
mod fault;
mod layout;
mod list;
mod meta;
mod multipart;
mod names;
mod object_body;
mod pending;
mod recovery;
mod tables;

use std::fs::{self, File};
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, WriteTransaction};

pub use error::{Result, StoreError};
#[cfg(feature = "test-support")]
pub use fault::FaultHook;
pub use fault::FaultPoint;
pub use layout::{DATA_DIR, METADATA_FILE, TMP_DIR};
pub use list::{ListPage, ListQuery, MAX_KEYS_PER_PAGE};
pub use meta::{
    Checksum, ChecksumAlgorithm, ChecksumType, NewObject, ObjectAttributes, ObjectInfo,
    ObjectSummary, PartChecksum, PartLayout,
};
pub use multipart::{
    CompletedPart, ExpectedChecksum, MAX_PART_NUMBER, MAX_PARTS_PER_PAGE, MAX_UPLOADS_PER_PAGE,
    MIN_PART_SIZE, PartInfo, PartsPage, UploadInfo, UploadQuery, UploadsPage,
};
pub use names::{MAX_BUCKET_NAME_LEN, MAX_KEY_BYTES, MIN_BUCKET_NAME_LEN};
pub use object_body::ObjectBody;
pub use pending::{PendingObject, PendingPart};

/// What must hold of a key's current version for a write to commit: S3's conditional writes
/// (`If-None-Match: *` and `If-Match: <etag>` on PutObject).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WriteCondition {
    /// Commit whatever the key holds (a plain PUT).
    #[default]
    Always,
    /// Commit only if the key does not exist (`If-None-Match: *`).
    IfAbsent,
    /// Commit only if the key exists with this ETag (`If-Match`; quotes are ignored).
    IfMatch(String),
}

impl WriteCondition {
    /// The header whose condition fails given the key's current ETag (`None`: the key is absent),
    /// or `None` when the write may go ahead.
    pub fn refused_by(&self, current_etag: Option<&str>) -> Option<&'static str> {
        match (self, current_etag) {
            (Self::Always, _) | (Self::IfAbsent, None) => None,
            (Self::IfAbsent, Some(_)) => Some("If-None-Match"),
            (Self::IfMatch(_), None) => Some("If-Match"),
            (Self::IfMatch(expected), Some(etag)) => {
                (etag.trim_matches('"') != expected.trim_matches('"')).then_some("If-Match")
            }
        }
    }
}
pub use recovery::RecoveryReport;

use layout::{DataId, IdGenerator, Layout};
use tables::{BUCKETS, DATA_REFS, EPOCH, OBJECTS, PARTS, STATE, UPLOADS};

/// Default size of the metadata database's page cache. It is a hard cap (redb evicts past it) and the
/// only part of listing memory that is not per page: at ~100 bytes per object record, 32 MiB keeps
/// the index pages of roughly 300,000 objects hot.
pub const DEFAULT_METADATA_CACHE_BYTES: usize = 32 << 20;

/// With fsync off, every this many metadata commits one is made durable anyway. It bounds what a
/// crash can lose in that mode (redb keeps non-durable commits only in memory until a durable one) and
/// costs one fsync per 1024 PUTs.
pub const NON_DURABLE_COMMITS_PER_SYNC: u64 = 1024;

/// How often `open_object` retries when the version it looked up is replaced and its file removed
/// before it could open it. Each retry needs a concurrent overwrite to land within microseconds, so
/// eight consecutive losses mean something else is wrong.
const OPEN_ATTEMPTS: usize = 8;

/// How a [`Store`] behaves.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Sync bodies, directories and metadata commits before a PUT returns. On by default; turn it off
    /// only for benchmarks and throwaway data (a power loss can then lose acknowledged PUTs, a process
    /// crash still never leaves a partial object).
    pub fsync: bool,
    /// Minimum size of every part but the last at completion; S3's is [`MIN_PART_SIZE`] (5 MiB). Tests
    /// lower it.
    pub min_part_size: u64,
    /// Page cache of the metadata database in bytes; see [`DEFAULT_METADATA_CACHE_BYTES`].
    pub metadata_cache_bytes: usize,
    /// Called at each [`FaultPoint`] (crash-safety tests stop the process there).
    #[cfg(feature = "test-support")]
    pub fault_hook: Option<FaultHook>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            fsync: true,
            min_part_size: MIN_PART_SIZE,
            metadata_cache_bytes: DEFAULT_METADATA_CACHE_BYTES,
            #[cfg(feature = "test-support")]
            fault_hook: None,
        }
    }
}

/// A bucket as listed by [`Store::list_buckets`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    /// Bucket name.
    pub name: String,
    /// When it was created.
    pub created: SystemTime,
}

/// Outcome of one key of [`Store::delete_objects`].
pub type DeleteOutcome = Result<()>;

/// Handle to an open store; cheap to clone and share between threads.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    layout: Layout,
    db: Database,
    ids: IdGenerator,
    config: StoreConfig,
    commits: AtomicU64,
    recovery: RecoveryReport,
}

impl Store {
    /// Opens (or creates) the store in `root`, then cleans what an earlier crash left: every file in
    /// `tmp/` and every data file no record points to. Fails if another process has it open.
    pub fn open(root: impl AsRef<Path>, config: StoreConfig) -> Result<Self> {
        let layout = Layout::new(root.as_ref());
        layout::create_dir_all(&layout.data_dir(), config.fsync)?;
        layout::create_dir_all(&layout.tmp_dir(), config.fsync)?;
        let db = Database::builder()
            .set_cache_size(config.metadata_cache_bytes)
            .create(layout.metadata_file())?;
        let epoch = start_epoch(&db)?;
        let recovery = recovery::sweep(&layout, &db)?;
        Ok(Self {
            inner: Arc::new(Inner {
                layout,
                db,
                ids: IdGenerator::new(epoch),
                config,
                commits: AtomicU64::new(0),
                recovery,
            }),
        })
    }

    /// What the sweep at open removed.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        self.inner.layout.root()
    }

    // ---- buckets ----

    /// Creates a bucket after checking its name against S3's rules.
    pub fn create_bucket(&self, name: &str) -> Result<BucketInfo> {
        names::validate_bucket_name(name)?;
        let created = SystemTime::now();
        let txn = self.inner.begin_write()?;
        {
            let mut buckets = txn.open_table(BUCKETS)?;
            if buckets.get(name)?.is_some() {
                return Err(StoreError::BucketAlreadyOwnedByYou(name.to_owned()));
            }
            buckets.insert(name, meta::encode_time(created))?;
        }
        self.inner.commit(txn)?;
        Ok(BucketInfo {
            name: name.to_owned(),
            created,
        })
    }

    /// The bucket, or `NoSuchBucket`.
    pub fn head_bucket(&self, name: &str) -> Result<BucketInfo> {
        let txn = self.inner.db.begin_read()?;
        let buckets = txn.open_table(BUCKETS)?;
        let created = buckets
            .get(name)?
            .ok_or_else(|| StoreError::NoSuchBucket(name.to_owned()))?
            .value();
        Ok(BucketInfo {
            name: name.to_owned(),
            created: meta::nanos_to_time(created),
        })
    }

    /// Deletes an empty bucket (`BucketNotEmpty` otherwise). Multipart uploads still in progress in it
    /// are aborted with it, so their parts do not outlive the bucket.
    pub fn delete_bucket(&self, name: &str) -> Result<()> {
        let txn = self.inner.begin_write()?;
        let released = {
            let mut buckets = txn.open_table(BUCKETS)?;
            if buckets.get(name)?.is_none() {
                return Err(StoreError::NoSuchBucket(name.to_owned()));
            }
            let objects = txn.open_table(OBJECTS)?;
            let (start, end) = tables::prefix_range(name, "");
            if objects
                .range::<&[u8]>(start.as_slice()..end.as_slice())?
                .next()
                .is_some()
            {
                return Err(StoreError::BucketNotEmpty(name.to_owned()));
            }
            buckets.remove(name)?;
            multipart::remove_bucket_uploads(&txn, name)?
        };
        self.inner.commit(txn)?;
        self.inner.remove_data_files(&released);
        Ok(())
    }

    /// All buckets, sorted by name.
    pub fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let txn = self.inner.db.begin_read()?;
        let buckets = txn.open_table(BUCKETS)?;
        buckets
            .iter()?
            .map(|entry| {
                let (name, created) = entry?;
                Ok(BucketInfo {
                    name: name.value().to_owned(),
                    created: meta::nanos_to_time(created.value()),
                })
            })
            .collect()
    }

    // ---- objects ----

    /// Starts a PUT of `key` into `bucket`: the body goes to a new file in `tmp/`, invisible until
    /// [`PendingObject::commit`].
    pub fn begin_put(&self, bucket: &str, key: &str) -> Result<PendingObject> {
        names::validate_key(key)?;
        self.head_bucket(bucket)?;
        Ok(PendingObject {
            temp: pending::TempFile::create(Arc::clone(&self.inner))?,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// PUT of a body that is already in memory in one piece.
    pub fn put_object(
        &self,
        bucket: &str,
        key: &str,
        body: &[u8],
        new: NewObject,
    ) -> Result<ObjectInfo> {
        let mut pending = self.begin_put(bucket, key)?;
        pending.write_all(body)?;
        pending.commit(new)
    }

    /// The object's metadata, without opening its data.
    pub fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectInfo> {
        names::validate_key(key)?;
        let txn = self.inner.db.begin_read()?;
        let objects = txn.open_table(OBJECTS)?;
        match objects.get(tables::object_key(bucket, key).as_slice())? {
            Some(record) => meta::decode_object(key, record.value()),
            None => Err(self.inner.missing_key(&txn, bucket, key)?),
        }
    }

    /// The object's metadata and its whole body, opened for reading. The body stays readable and
    /// unchanged even if the key is overwritten or deleted while it is open.
    pub fn open_object(&self, bucket: &str, key: &str) -> Result<(ObjectInfo, ObjectBody)> {
        let (info, (), body) =
            self.open_object_span(bucket, key, |info| Ok::<_, StoreError>(((), 0..info.size)))?;
        Ok((info, body))
    }

    /// The object's metadata and the part of its body a request reads, opened for reading.
    /// `plan` decides, from the metadata, what the request does (its `T`: preconditions met, the
    /// range it resolved, ...) and which bytes it will read; only the data files holding those
    /// bytes are opened. A ranged GET of an object completed from many parts opens the one or two
    /// files its range falls in (opening all 128 parts of a 1 GiB object for every 256 KiB read
    /// cost the server more than the read itself), and a HEAD, or a GET answered 304, opens none.
    ///
    /// `plan` runs again if the version it saw is replaced, and its files removed, before they
    /// could be opened. What was opened stays readable and unchanged, like [`Store::open_object`]'s.
    pub fn open_object_span<T, E: From<StoreError>>(
        &self,
        bucket: &str,
        key: &str,
        mut plan: impl FnMut(&ObjectInfo) -> Result<(T, Range<u64>), E>,
    ) -> Result<(ObjectInfo, T, ObjectBody), E> {
        let mut last_error = None;
        'attempt: for _ in 0..OPEN_ATTEMPTS {
            let info = self.head_object(bucket, key)?;
            let (planned, span) = plan(&info)?;
            let mut body = ObjectBody::empty();
            for (&id, size) in info.data_ids().iter().zip(info.segment_sizes()) {
                let start = body.len();
                if !(start < span.end && span.start < start + size) {
                    body.skip(size);
                    continue;
                }
                match File::open(self.inner.layout.data_path(id)) {
                    Ok(file) => body.push(file, size),
                    // Replaced (and its files removed) between the lookup and the open: look up
                    // again.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        last_error = Some(e);
                        continue 'attempt;
                    }
                    Err(e) => return Err(StoreError::from(e).into()),
                }
            }
            return Ok((info, planned, body));
        }
        Err(StoreError::from(last_error.expect("at least one attempt was made")).into())
    }

    /// Deletes `key`; `Ok(false)` if it did not exist (S3 answers both with 204).
    pub fn delete_object(&self, bucket: &str, key: &str) -> Result<bool> {
        let mut outcomes = self.delete_keys(bucket, &[key])?;
        let (existed, outcome) = outcomes.pop().expect("one key in, one outcome out");
        outcome.map(|()| existed)
    }

    /// Deletes many keys in one transaction (S3 `DeleteObjects`): one outcome per key, in order. A key
    /// that did not exist counts as deleted, as in S3.
    pub fn delete_objects(&self, bucket: &str, keys: &[&str]) -> Result<Vec<DeleteOutcome>> {
        Ok(self
            .delete_keys(bucket, keys)?
            .into_iter()
            .map(|(_, outcome)| outcome)
            .collect())
    }

    fn delete_keys(&self, bucket: &str, keys: &[&str]) -> Result<Vec<(bool, DeleteOutcome)>> {
        let txn = self.inner.begin_write()?;
        let mut released = Vec::new();
        let mut outcomes = Vec::with_capacity(keys.len());
        {
            self.inner.require_bucket_in(&txn, bucket)?;
            let mut objects = txn.open_table(OBJECTS)?;
            let mut refs = txn.open_table(DATA_REFS)?;
            for key in keys {
                if let Err(e) = names::validate_key(key) {
                    outcomes.push((false, Err(e)));
                    continue;
                }
                let removed = objects.remove(tables::object_key(bucket, key).as_slice())?;
                let existed = match removed {
                    Some(record) => {
                        let info = meta::decode_object(key, record.value())?;
                        for &id in info.data_ids() {
                            if tables::release_ref(&mut refs, id)? {
                                released.push(id);
                            }
                        }
                        true
                    }
                    None => false,
                };
                outcomes.push((existed, Ok(())));
            }
        }
        self.inner.commit(txn)?;
        self.inner.remove_data_files(&released);
        Ok(outcomes)
    }

    /// Server-side copy. The new object shares the source's data file (files are never modified after
    /// commit), so no body bytes are copied whatever the size. `attributes: None` keeps the source's
    /// headers and user metadata (S3 `x-amz-metadata-directive: COPY`), `Some` replaces them
    /// (`REPLACE`). ETag, checksum and part layout are the source's.
    pub fn copy_object(
        &self,
        source_bucket: &str,
        source_key: &str,
        bucket: &str,
        key: &str,
        attributes: Option<ObjectAttributes>,
    ) -> Result<ObjectInfo> {
        self.copy_object_if(source_bucket, source_key, bucket, key, attributes, |_| None)
    }

    /// [`Store::copy_object`] when `refused` (the copy-source conditions) passes the source as
    /// read in the copy's own transaction, so the condition and the copy see one version; a
    /// condition that fails (`Some(name)`) is [`StoreError::PreconditionFailed`].
    pub fn copy_object_if(
        &self,
        source_bucket: &str,
        source_key: &str,
        bucket: &str,
        key: &str,
        attributes: Option<ObjectAttributes>,
        refused: impl FnOnce(&ObjectInfo) -> Option<&'static str>,
    ) -> Result<ObjectInfo> {
        names::validate_key(source_key)?;
        names::validate_key(key)?;
        let txn = self.inner.begin_write()?;
        let source = {
            let objects = txn.open_table(OBJECTS)?;
            let record = objects.get(tables::object_key(source_bucket, source_key).as_slice())?;
            match record {
                Some(record) => meta::decode_object(source_key, record.value())?,
                None => {
                    drop(record);
                    return Err(self.inner.missing_key_in(&txn, source_bucket, source_key)?);
                }
            }
        };
        if let Some(condition) = refused(&source) {
            return Err(StoreError::PreconditionFailed { condition });
        }
        self.inner.require_bucket_in(&txn, bucket)?;
        let info = ObjectInfo {
            key: key.to_owned(),
            last_modified: SystemTime::now(),
            attributes: attributes.unwrap_or(source.attributes),
            ..source
        };
        let released = self.inner.put_record(&txn, bucket, &info)?;
        self.inner.commit(txn)?;
        self.inner.remove_data_files(&released);
        Ok(info)
    }
}

#[cfg(feature = "test-support")]
impl Store {
    /// Copies `source_key` to every key of `keys` in one transaction, all sharing the source's data
    /// file. Listing tests use it to build an index of 100,000 keys in a second instead of making
    /// 100,000 files; it is the same record and reference-count path as [`Store::copy_object`].
    pub fn bulk_copy_for_tests<'k>(
        &self,
        bucket: &str,
        source_key: &str,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<usize> {
        let source = self.head_object(bucket, source_key)?;
        let txn = self.inner.begin_write()?;
        let mut released = Vec::new();
        let mut copied = 0;
        {
            let mut objects = txn.open_table(OBJECTS)?;
            let mut refs = txn.open_table(DATA_REFS)?;
            let mut info = source;
            for key in keys {
                names::validate_key(key)?;
                key.clone_into(&mut info.key);
                put_record_in(&mut objects, &mut refs, bucket, &info, &mut released)?;
                copied += 1;
            }
        }
        self.inner.commit(txn)?;
        self.inner.remove_data_files(&released);
        Ok(copied)
    }
}

/// [`Inner::put_record`] with the tables already open; released files are appended to `released`.
fn put_record_in(
    objects: &mut redb::Table<&[u8], &[u8]>,
    refs: &mut redb::Table<u128, u64>,
    bucket: &str,
    info: &ObjectInfo,
    released: &mut Vec<DataId>,
) -> Result<()> {
    for &id in info.data_ids() {
        tables::add_ref(refs, id)?;
    }
    let replaced = objects.insert(
        tables::object_key(bucket, &info.key).as_slice(),
        meta::encode_object(info).as_slice(),
    )?;
    if let Some(old) = replaced {
        let old = meta::decode_object(&info.key, old.value())?;
        for &id in old.data_ids() {
            if tables::release_ref(refs, id)? {
                released.push(id);
            }
        }
    }
    Ok(())
}

/// Increments the epoch durably; every data id of this run carries it.
fn start_epoch(db: &Database) -> Result<u64> {
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)
        .map_err(redb::Error::from)?;
    let epoch = {
        // Create every table so readers never meet a missing one.
        txn.open_table(BUCKETS)?;
        txn.open_table(OBJECTS)?;
        txn.open_table(UPLOADS)?;
        txn.open_table(PARTS)?;
        txn.open_table(DATA_REFS)?;
        let mut state = txn.open_table(STATE)?;
        let epoch = state.get(EPOCH)?.map_or(0, |g| g.value()) + 1;
        state.insert(EPOCH, epoch)?;
        epoch
    };
    txn.commit()?;
    Ok(epoch)
}

impl Inner {
    fn begin_write(&self) -> Result<WriteTransaction> {
        Ok(self.db.begin_write()?)
    }

    /// Commits with the durability the configuration asks for.
    fn commit(&self, mut txn: WriteTransaction) -> Result<()> {
        let n = self.commits.fetch_add(1, Ordering::Relaxed) + 1;
        let durability = if self.config.fsync || n.is_multiple_of(NON_DURABLE_COMMITS_PER_SYNC) {
            Durability::Immediate
        } else {
            Durability::None
        };
        txn.set_durability(durability).map_err(redb::Error::from)?;
        txn.commit()?;
        Ok(())
    }

    fn fault(&self, _point: FaultPoint) {
        #[cfg(feature = "test-support")]
        if let Some(hook) = &self.config.fault_hook {
            (hook.0)(_point);
        }
    }

    /// Removes data files whose last reference a committed transaction dropped. Failures are left to
    /// the sweep at the next start: the files are unreachable either way.
    fn remove_data_files(&self, ids: &[DataId]) {
        for &id in ids {
            let _ = fs::remove_file(self.layout.data_path(id));
        }
    }

    fn require_bucket_in(&self, txn: &WriteTransaction, bucket: &str) -> Result<()> {
        if txn.open_table(BUCKETS)?.get(bucket)?.is_none() {
            return Err(StoreError::NoSuchBucket(bucket.to_owned()));
        }
        Ok(())
    }

    /// `NoSuchBucket` or `NoSuchKey`, whichever explains a failed lookup (read transaction).
    fn missing_key(
        &self,
        txn: &redb::ReadTransaction,
        bucket: &str,
        key: &str,
    ) -> Result<StoreError> {
        Ok(if txn.open_table(BUCKETS)?.get(bucket)?.is_none() {
            StoreError::NoSuchBucket(bucket.to_owned())
        } else {
            StoreError::NoSuchKey {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            }
        })
    }

    /// Same as [`missing_key`](Self::missing_key) inside a write transaction.
    fn missing_key_in(
        &self,
        txn: &WriteTransaction,
        bucket: &str,
        key: &str,
    ) -> Result<StoreError> {
        Ok(match self.require_bucket_in(txn, bucket) {
            Err(e) => e,
            Ok(()) => StoreError::NoSuchKey {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            },
        })
    }

    /// Whether `condition` holds of the current version of `bucket`/`key`, read inside the write
    /// transaction `txn` that is about to replace it: `PreconditionFailed`, or `NoSuchKey` for an
    /// `If-Match` on a missing key.
    fn check_write_condition(
        &self,
        txn: &WriteTransaction,
        bucket: &str,
        key: &str,
        condition: &WriteCondition,
    ) -> Result<()> {
        if *condition == WriteCondition::Always {
            return Ok(());
        }
        let objects = txn.open_table(OBJECTS)?;
        let current = match objects.get(tables::object_key(bucket, key).as_slice())? {
            Some(record) => Some(meta::decode_summary(key, record.value())?.0.etag),
            None => None,
        };
        // S3 answers an `If-Match` write of a missing key with NoSuchKey, not PreconditionFailed.
        if current.is_none() && matches!(condition, WriteCondition::IfMatch(_)) {
            return Err(StoreError::NoSuchKey {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            });
        }
        match condition.refused_by(current.as_deref()) {
            None => Ok(()),
            Some(failed) => Err(StoreError::PreconditionFailed { condition: failed }),
        }
    }

    /// Points `bucket`/`info.key` at `info` (taking a reference to its data file) and drops the
    /// replaced version's reference; returns the files whose last reference went.
    fn put_record(
        &self,
        txn: &WriteTransaction,
        bucket: &str,
        info: &ObjectInfo,
    ) -> Result<Vec<DataId>> {
        let mut objects = txn.open_table(OBJECTS)?;
        let mut refs = txn.open_table(DATA_REFS)?;
        let mut released = Vec::new();
        put_record_in(&mut objects, &mut refs, bucket, info, &mut released)?;
        Ok(released)
    }

    /// The metadata commit of a PUT whose body is already installed in `data/`.
    fn commit_object(
        &self,
        bucket: &str,
        key: &str,
        data_id: DataId,
        size: u64,
        new: NewObject,
        condition: &WriteCondition,
    ) -> Result<ObjectInfo> {
        let txn = self.begin_write()?;
        self.require_bucket_in(&txn, bucket)?;
        // Checked inside the write transaction: no other commit of this key can slip in between the
        // check and the write, so two `If-None-Match: *` PUTs of one key never both succeed.
        self.check_write_condition(&txn, bucket, key, condition)?;
        let info = ObjectInfo {
            key: key.to_owned(),
            size,
            etag: new.etag,
            // Taken inside the write transaction, so versions of one key get increasing times in
            // commit order.
            last_modified: SystemTime::now(),
            attributes: new.attributes,
            checksum: new.checksum,
            parts: Vec::new(),
            data_id,
            segments: Vec::new(),
        };
        let released = self.put_record(&txn, bucket, &info)?;
        self.commit(txn)?;
        self.fault(FaultPoint::MetadataCommitted);
        self.remove_data_files(&released);
        Ok(info)
    }
}
