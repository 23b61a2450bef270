//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};

use brisk_server::store::{NewObject, Store, StoreConfig};
use tempfile::TempDir;

/// Config for tests that do not test durability: fsync off keeps them fast.
pub fn fast_config() -> StoreConfig {
    StoreConfig {
        fsync: false,
        ..StoreConfig::default()
    }
}

/// A store in a fresh temporary directory, fsync off.
pub fn temp_store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), fast_config()).unwrap();
    (dir, store)
}

/// A store with bucket `b`.
pub fn store_with_bucket() -> (TempDir, Store) {
    let (dir, store) = temp_store();
    store.create_bucket("bkt").unwrap();
    (dir, store)
}

/// Metadata for a PUT whose ETag names the body (the store does not check it).
pub fn new_object(etag: &str) -> NewObject {
    NewObject {
        etag: etag.to_owned(),
        ..NewObject::default()
    }
}

/// The whole body of `bucket`/`key`.
pub fn read_object(store: &Store, bucket: &str, key: &str) -> Vec<u8> {
    let (info, mut file) = store.open_object(bucket, key).unwrap();
    let mut body = Vec::new();
    file.read_to_end(&mut body).unwrap();
    assert_eq!(body.len() as u64, info.size);
    body
}

/// Every regular file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out
}

/// Data files currently under `<root>/data`.
pub fn data_files(root: &Path) -> Vec<PathBuf> {
    files_under(&root.join("data"))
}

/// Files currently under `<root>/tmp`.
pub fn temp_files(root: &Path) -> Vec<PathBuf> {
    files_under(&root.join("tmp"))
}
