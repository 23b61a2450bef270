//! The part layouts of multipart objects this client has asked for, by bucket, key and ETag.
//!
//! Why: a whole read checks a composite checksum part by part, and learns where the parts end with a
//! `HEAD ?partNumber=1` after the body; a download asks the same before its ranges. A process that
//! reads the same objects again (a data loader's epochs, a checkpoint loaded by several steps) asked
//! again each time: one more request, one more round trip after the body. A layout cannot change
//! while the ETag stays (the HEAD is pinned to it with `If-Match`; a new upload is a new ETag), so
//! the answer is kept.
//!
//! Bounded at [`MAX_LAYOUTS`] objects (emptied when full: the entries are a few hundred bytes and
//! a miss costs one HEAD). A lookup allocates nothing; an insert allocates the three names.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

/// The most objects whose layout is kept.
pub(crate) const MAX_LAYOUTS: usize = 1024;

/// What `first_part_layout` answered: the first part's length and the part count, or `None` when
/// the server did not say.
pub(crate) type Layout = Option<(u64, u32)>;

#[derive(Debug, Default)]
pub(crate) struct PartLayouts {
    /// By the hash of bucket, key and ETag; the entry holds them to tell a collision apart.
    entries: Mutex<HashMap<u64, KnownLayout>>,
}

#[derive(Debug)]
struct KnownLayout {
    bucket: Box<str>,
    key: Box<str>,
    etag: Box<str>,
    layout: Layout,
}

fn id(bucket: &str, key: &str, etag: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    (bucket, key, etag).hash(&mut hasher);
    hasher.finish()
}

impl PartLayouts {
    /// The layout kept for this version of the object, if any.
    pub(crate) fn get(&self, bucket: &str, key: &str, etag: &str) -> Option<Layout> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(&id(bucket, key, etag))?;
        (&*entry.bucket == bucket && &*entry.key == key && &*entry.etag == etag)
            .then_some(entry.layout)
    }

    /// Keep the layout of this version of the object.
    pub(crate) fn insert(&self, bucket: &str, key: &str, etag: &str, layout: Layout) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_LAYOUTS {
            entries.clear();
        }
        entries.insert(
            id(bucket, key, etag),
            KnownLayout {
                bucket: bucket.into(),
                key: key.into(),
                etag: etag.into(),
                layout,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_is_kept_per_version_and_the_map_stays_bounded() {
        let layouts = PartLayouts::default();
        assert_eq!(layouts.get("b", "k", "\"v1\""), None);
        layouts.insert("b", "k", "\"v1\"", Some((8 << 20, 3)));
        layouts.insert("b", "other", "\"v1\"", None);
        assert_eq!(layouts.get("b", "k", "\"v1\""), Some(Some((8 << 20, 3))));
        assert_eq!(layouts.get("b", "other", "\"v1\""), Some(None));
        assert_eq!(layouts.get("b", "k", "\"v2\""), None, "another version");
        assert_eq!(layouts.get("c", "k", "\"v1\""), None, "another bucket");
        for i in 0..MAX_LAYOUTS + 5 {
            layouts.insert("b", &format!("k{i}"), "e", Some((1, 1)));
        }
        assert!(layouts.entries.lock().unwrap().len() <= MAX_LAYOUTS);
    }
}
