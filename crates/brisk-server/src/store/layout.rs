//! Where things live under the store's root directory, and how data files are named.
//!
//! ```text
//! <root>/metadata.redb         buckets, object records, uploads, parts, data-file reference counts
//! <root>/tmp/<id>              bodies being written; removed at every start
//! <root>/data/<xx>/<yy>/<id>   committed bodies of objects and parts, never modified after rename
//! ```
//!
//! Files are named by a [`DataId`], never by key: keys are opaque strings that may contain `..`, `/`,
//! NUL-free control characters or 1024-byte segments, and none of that reaches a path. `tmp/` and
//! `data/` sit on the same file system so `rename` from one to the other is atomic.

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// File name of the metadata database under the root.
pub const METADATA_FILE: &str = "metadata.redb";
/// Directory of committed data files under the root.
pub const DATA_DIR: &str = "data";
/// Directory of files being written under the root.
pub const TMP_DIR: &str = "tmp";

/// Consecutive ids that share a leaf directory. A burst of PUTs then creates one directory per 4096
/// files instead of one per file, and no leaf grows past a few thousand entries per epoch.
const IDS_PER_LEAF_DIR_SHIFT: u32 = 12;

/// Spreads the first leaf directory of successive epochs apart (a large odd multiplier), so short runs
/// of the server do not all fill `data/00/00`.
const EPOCH_SPREAD: u64 = 0x9e37;

/// Name of one data file: the store's epoch (incremented durably at every open) in the high 64 bits and
/// a per-process sequence number in the low 64. Unique by construction, with no randomness: ids of two
/// runs differ in the epoch, ids of one run in the sequence.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataId(pub u128);

impl DataId {
    fn epoch(self) -> u64 {
        (self.0 >> 64) as u64
    }
    fn sequence(self) -> u64 {
        self.0 as u64
    }

    /// The file name: 32 lowercase hex digits.
    pub fn file_name(self) -> String {
        format!("{:032x}", self.0)
    }

    /// Parses a file name made by [`DataId::file_name`]; anything else is `None`.
    pub fn parse(name: &str) -> Option<Self> {
        if name.len() != 32 || !name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        u128::from_str_radix(name, 16).ok().map(Self)
    }

    fn leaf_dir(self) -> (u8, u8) {
        let index = (self.sequence() >> IDS_PER_LEAF_DIR_SHIFT)
            .wrapping_add(self.epoch().wrapping_mul(EPOCH_SPREAD));
        ((index >> 8) as u8, index as u8)
    }
}

impl fmt::Debug for DataId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataId({:032x})", self.0)
    }
}

/// Hands out [`DataId`]s for one epoch.
#[derive(Debug)]
pub struct IdGenerator {
    epoch: u64,
    next: AtomicU64,
}

impl IdGenerator {
    pub fn new(epoch: u64) -> Self {
        Self {
            epoch,
            next: AtomicU64::new(0),
        }
    }

    pub fn next(&self) -> DataId {
        let sequence = self.next.fetch_add(1, Ordering::Relaxed);
        DataId(u128::from(self.epoch) << 64 | u128::from(sequence))
    }
}

/// The paths of one store root.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn metadata_file(&self) -> PathBuf {
        self.path(&[METADATA_FILE])
    }

    pub fn data_dir(&self) -> PathBuf {
        self.path(&[DATA_DIR])
    }

    pub fn tmp_dir(&self) -> PathBuf {
        self.path(&[TMP_DIR])
    }

    pub fn tmp_path(&self, id: DataId) -> PathBuf {
        self.path(&[TMP_DIR, hex_str(&mut [0; 32], id.0)])
    }

    pub fn data_leaf_dir(&self, id: DataId) -> PathBuf {
        let (a, b) = id.leaf_dir();
        self.path(&[
            DATA_DIR,
            hex_str(&mut [0; 2], u128::from(a)),
            hex_str(&mut [0; 2], u128::from(b)),
        ])
    }

    pub fn data_path(&self, id: DataId) -> PathBuf {
        let (a, b) = id.leaf_dir();
        self.path(&[
            DATA_DIR,
            hex_str(&mut [0; 2], u128::from(a)),
            hex_str(&mut [0; 2], u128::from(b)),
            hex_str(&mut [0; 32], id.0),
        ])
    }

    /// `root/<components>` in one allocation, sized up front. Every PUT names a temporary and a
    /// data file and every GET a data file; `join` per component copied the path each time and each
    /// name was formatted into a `String` first, a dozen allocations per path.
    fn path(&self, components: &[&str]) -> PathBuf {
        let len =
            self.root.as_os_str().len() + components.iter().map(|c| c.len() + 1).sum::<usize>();
        let mut path = PathBuf::with_capacity(len);
        path.push(&self.root);
        for component in components {
            path.push(component);
        }
        path
    }
}

/// Makes a directory's entries (a rename into it, a new subdirectory) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates `dir` and its parents; with `durable`, also syncs each directory created and the parent
/// that gained it, so the path survives a power loss.
pub fn create_dir_all(dir: &Path, durable: bool) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dir_all(parent, durable)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {
            if durable && let Some(parent) = dir.parent() {
                sync_dir(parent)?;
            }
            Ok(())
        }
        // Another writer created it between the check and here.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// The low `out.len()` hex digits of `value`, lower-case and zero-padded, written into `out`.
fn hex_str(out: &mut [u8], mut value: u128) -> &str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for digit in out.iter_mut().rev() {
        *digit = DIGITS[(value & 0xf) as usize];
        value >>= 4;
    }
    std::str::from_utf8(out).expect("hex digits are ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_paths_are_root_data_two_hex_levels_and_the_id() {
        let layout = Layout::new(Path::new("/srv/brisk"));
        let generator = IdGenerator::new(7);
        for id in [
            DataId(0),
            DataId(u128::MAX),
            generator.next(),
            generator.next(),
        ] {
            let (a, b) = id.leaf_dir();
            let expected = Path::new("/srv/brisk")
                .join(DATA_DIR)
                .join(format!("{a:02x}"))
                .join(format!("{b:02x}"));
            assert_eq!(layout.data_leaf_dir(id), expected);
            assert_eq!(
                layout.data_path(id),
                expected.join(format!("{:032x}", id.0))
            );
            assert_eq!(
                layout.tmp_path(id),
                Path::new("/srv/brisk").join(TMP_DIR).join(id.file_name())
            );
        }
    }

    #[test]
    fn ids_are_unique_and_parse_back() {
        let generator = IdGenerator::new(3);
        let a = generator.next();
        let b = generator.next();
        assert_ne!(a, b);
        assert_eq!(DataId::parse(&a.file_name()), Some(a));
        assert_eq!(a.file_name().len(), 32);
        assert_eq!(DataId::parse("not-an-id"), None);
        assert_eq!(
            DataId::parse(&"A".repeat(32)),
            None,
            "uppercase is not ours"
        );
        assert_eq!(DataId::parse(&"0".repeat(31)), None);
    }

    #[test]
    fn consecutive_ids_share_a_leaf_directory() {
        let layout = Layout::new(Path::new("/r"));
        let generator = IdGenerator::new(1);
        let first = generator.next();
        let dir = layout.data_leaf_dir(first);
        for _ in 1..(1 << IDS_PER_LEAF_DIR_SHIFT) {
            assert_eq!(layout.data_leaf_dir(generator.next()), dir);
        }
        assert_ne!(layout.data_leaf_dir(generator.next()), dir);
        assert!(layout.data_path(first).starts_with("/r/data"));
    }

    #[test]
    fn epochs_start_in_different_directories() {
        let layout = Layout::new(Path::new("/r"));
        let a = layout.data_leaf_dir(IdGenerator::new(1).next());
        let b = layout.data_leaf_dir(IdGenerator::new(2).next());
        assert_ne!(a, b);
    }
}
