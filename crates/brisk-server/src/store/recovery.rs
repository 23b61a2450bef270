//! The sweep at open: removes what a crash left behind.
//!
//! - Files in `tmp/` belong to PUTs that never reached rename: nothing can reference them.
//! - Data files that no record references were renamed into `data/` by a PUT that crashed before its
//!   metadata commit, or lost their last reference in a commit that crashed before the unlink.
//!
//! Memory stays bounded: directories are read as streams and each data file is looked up on its own
//! in one read transaction, so nothing proportional to the number of objects is held.

use std::fs;
use std::io;
use std::path::Path;

use redb::{Database, ReadableDatabase};

use super::error::Result;
use super::layout::{DataId, Layout};
use super::tables::DATA_REFS;

/// What the sweep at open removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Files removed from `tmp/` (bodies of PUTs and parts that never committed).
    pub temp_files_removed: usize,
    /// Data files removed because no record pointed to them.
    pub orphan_data_files_removed: usize,
}

pub(crate) fn sweep(layout: &Layout, db: &Database) -> Result<RecoveryReport> {
    let mut report = RecoveryReport::default();
    for entry in fs::read_dir(layout.tmp_dir())? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(entry.path())?;
        } else {
            remove_if_present(&entry.path())?;
        }
        report.temp_files_removed += 1;
    }

    let txn = db.begin_read()?;
    let refs = txn.open_table(DATA_REFS)?;
    for first in fs::read_dir(layout.data_dir())? {
        let first = first?;
        if !first.file_type()?.is_dir() {
            continue;
        }
        for second in fs::read_dir(first.path())? {
            let second = second?;
            if !second.file_type()?.is_dir() {
                continue;
            }
            for file in fs::read_dir(second.path())? {
                let file = file?;
                // Only files named like ours are considered; anything else is not the store's to remove.
                let Some(id) = file.file_name().to_str().and_then(DataId::parse) else {
                    continue;
                };
                if refs.get(id.0)?.is_none() {
                    remove_if_present(&file.path())?;
                    report.orphan_data_files_removed += 1;
                }
            }
        }
    }
    Ok(report)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
