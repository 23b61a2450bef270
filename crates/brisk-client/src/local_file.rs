//! A transfer's local file: the temporary file a download writes and renames into place
//! ([`TempFile`]), which paths are not regular files, and the errors that name a file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Whether `path` exists and is neither a regular file nor a directory (following symbolic
/// links): a device such as `/dev/null`, a named pipe, a socket. Such a destination is written in
/// place, never replaced.
pub(crate) fn is_special_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// A download's temporary file, removed when this is dropped unless it was renamed into place:
/// on an error, and also when the download's future is dropped part way (a cancelled task, Ctrl-C
/// in Python, a progress callback that raised), where no error result is ever seen.
pub(crate) struct TempFile {
    pub(crate) path: PathBuf,
    renamed: bool,
}

impl TempFile {
    pub(crate) fn beside(path: &Path) -> Self {
        Self {
            path: temp_path(path),
            renamed: false,
        }
    }

    /// Renames the file over `path`; it is then no longer this guard's to remove.
    pub(crate) fn persist(mut self, path: &Path) -> Result<()> {
        std::fs::rename(&self.path, path).map_err(|e| file_error(path, "renaming into", e))?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A temporary name beside `path`, unique within the process.
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.brisk-{}-{n}.part", std::process::id()))
}

/// A task on the blocking pool that wrote or opened a file panicked or was cancelled.
pub(crate) fn failed_file_task(e: tokio::task::JoinError) -> Error {
    Error::UnexpectedResponse {
        what: format!("file task failed: {e}"),
    }
}

pub(crate) fn file_error(path: &Path, doing: &str, source: std::io::Error) -> Error {
    Error::File {
        what: format!("{doing} {}", path.display()),
        source,
    }
}
