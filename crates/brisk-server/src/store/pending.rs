//! Bodies being written: a file in `tmp/` that becomes visible only through [`PendingObject::commit`]
//! (or [`PendingPart::commit`] for multipart parts). Dropping either without committing removes the
//! file, so an abandoned request leaves nothing behind.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use super::error::Result;
use super::fault::FaultPoint;
use super::layout::{self, DataId};
use super::meta::{ChecksumAlgorithm, NewObject, ObjectInfo};
use super::multipart::PartInfo;
use super::{Inner, WriteCondition};

/// Where the body file currently is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// In `tmp/`, being written.
    Writing,
    /// Renamed into `data/`, not yet referenced by metadata.
    Installed,
    /// Referenced by a committed record; no longer ours to remove.
    Committed,
}

/// A data file being written, owned by one request.
#[derive(Debug)]
pub(crate) struct TempFile {
    inner: Arc<Inner>,
    id: DataId,
    tmp_path: PathBuf,
    file: File,
    stage: Stage,
}

impl TempFile {
    pub(crate) fn create(inner: Arc<Inner>) -> Result<Self> {
        let id = inner.ids.next();
        let tmp_path = inner.layout.tmp_path(id);
        let file = OpenOptions::new()
            .write(true)
            .read(true)
            .create_new(true)
            .open(&tmp_path)?;
        Ok(Self {
            inner,
            id,
            tmp_path,
            file,
            stage: Stage::Writing,
        })
    }

    pub(crate) fn id(&self) -> DataId {
        self.id
    }

    pub(crate) fn file_mut(&mut self) -> &mut File {
        &mut self.file
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// Syncs the body (when fsync is on) and renames it into `data/`; returns its size.
    pub(crate) fn install(&mut self) -> Result<u64> {
        debug_assert_eq!(self.stage, Stage::Writing);
        let durable = self.inner.config.fsync;
        self.file.flush()?;
        let size = self.file.metadata()?.len();
        if durable {
            self.file.sync_data()?;
        }
        let leaf = self.inner.layout.data_leaf_dir(self.id);
        layout::create_dir_all(&leaf, durable)?;
        fs::rename(&self.tmp_path, self.inner.layout.data_path(self.id))?;
        self.stage = Stage::Installed;
        if durable {
            layout::sync_dir(&leaf)?;
        }
        self.inner.fault(FaultPoint::DataRenamed);
        Ok(size)
    }

    /// Marks the file as owned by committed metadata.
    pub(crate) fn committed(&mut self) {
        self.stage = Stage::Committed;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // Errors are ignored: whatever is left is removed by the sweep at the next start.
        match self.stage {
            Stage::Writing => {
                let _ = fs::remove_file(&self.tmp_path);
            }
            Stage::Installed => {
                let _ = fs::remove_file(self.inner.layout.data_path(self.id));
            }
            Stage::Committed => {}
        }
    }
}

/// An object PUT in progress. Write the body with [`write_all`](Self::write_all) (or through
/// [`file_mut`](Self::file_mut), e.g. to `std::io::copy` or `splice` into it), then
/// [`commit`](Self::commit). Dropping it instead aborts the PUT and removes the file.
#[derive(Debug)]
pub struct PendingObject {
    pub(crate) temp: TempFile,
    pub(crate) bucket: String,
    pub(crate) key: String,
}

impl PendingObject {
    /// Appends `buf` to the body, straight from the caller's buffer.
    pub fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.temp.file_mut().write_all(buf)?;
        Ok(())
    }

    /// The body file, for callers that write with their own I/O (its length at commit is the size).
    pub fn file_mut(&mut self) -> &mut File {
        self.temp.file_mut()
    }

    /// Bucket this PUT targets.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Key this PUT targets.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Makes the object visible: sync, rename into `data/`, then one metadata transaction that points
    /// the key at the new file. A concurrent PUT of the same key that commits later wins; readers that
    /// opened the previous version keep reading it.
    pub fn commit(self, new: NewObject) -> Result<ObjectInfo> {
        self.commit_if(new, &WriteCondition::Always)
    }

    /// Like [`commit`](Self::commit), but only if `condition` holds of the key's current version at
    /// the moment of the commit; otherwise the new data is discarded and the key left as it was.
    pub fn commit_if(mut self, new: NewObject, condition: &WriteCondition) -> Result<ObjectInfo> {
        let size = self.temp.install()?;
        let inner = Arc::clone(self.temp.inner());
        let info = inner.commit_object(
            &self.bucket,
            &self.key,
            self.temp.id(),
            size,
            new,
            condition,
        )?;
        self.temp.committed();
        Ok(info)
    }
}

impl Write for PendingObject {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.temp.file_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.temp.file_mut().flush()
    }
}

/// A multipart part upload in progress; like [`PendingObject`], dropping it removes the file.
#[derive(Debug)]
pub struct PendingPart {
    pub(crate) temp: TempFile,
    pub(crate) bucket: String,
    pub(crate) key: String,
    pub(crate) upload_id: String,
    pub(crate) part_number: u32,
    pub(crate) checksum_algorithm: Option<ChecksumAlgorithm>,
}

impl PendingPart {
    /// Appends `buf` to the part.
    pub fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.temp.file_mut().write_all(buf)?;
        Ok(())
    }

    /// The part's file, for callers that write with their own I/O.
    pub fn file_mut(&mut self) -> &mut File {
        self.temp.file_mut()
    }

    /// The checksum algorithm the upload was created with, which each part's checksum must use.
    pub fn checksum_algorithm(&self) -> Option<ChecksumAlgorithm> {
        self.checksum_algorithm
    }

    /// Records the part, replacing an earlier upload of the same part number. Fails with
    /// `NoSuchUpload` if the upload was completed or aborted meanwhile.
    pub fn commit(mut self, etag: String, checksum: Option<String>) -> Result<PartInfo> {
        let size = self.temp.install()?;
        let inner = Arc::clone(self.temp.inner());
        let info = inner.commit_part(&self, size, etag, checksum)?;
        self.temp.committed();
        Ok(info)
    }
}

impl Write for PendingPart {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.temp.file_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.temp.file_mut().flush()
    }
}
