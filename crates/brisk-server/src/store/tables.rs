//! The tables of the metadata database and how their keys are built.
//!
//! Object keys are stored as `bucket NUL key` byte strings. Bucket names never contain NUL, so all of
//! a bucket's objects are contiguous and ordered by the key's UTF-8 bytes, which is S3's listing order.
//! Byte strings (not `&str`) let a listing seek to the first key after a whole common prefix: the
//! prefix's successor is not always valid UTF-8.

use redb::{ReadableTable, Table, TableDefinition};

use super::error::Result;
use super::layout::DataId;

/// Bucket name → creation time (nanoseconds since the Unix epoch).
pub const BUCKETS: TableDefinition<&str, u64> = TableDefinition::new("buckets");

/// `bucket NUL key` → encoded object record (see `meta::encode_object`).
pub const OBJECTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");

/// (`bucket NUL key`, upload id) → encoded upload record. The tuple orders uploads by key first, then
/// by upload id, which is creation order because ids grow.
pub const UPLOADS: TableDefinition<(&[u8], &str), &[u8]> = TableDefinition::new("uploads");

/// (upload id, part number) → encoded part record.
pub const PARTS: TableDefinition<(&str, u32), &[u8]> = TableDefinition::new("parts");

/// Data file id → number of records (objects and parts) that point to it. A copied object shares its
/// source's file, so a file is removed only when its count drops to zero. The startup sweep removes
/// every data file that has no entry here.
pub const DATA_REFS: TableDefinition<u128, u64> = TableDefinition::new("data_refs");

/// Small store-wide values, e.g. [`EPOCH`].
pub const STATE: TableDefinition<&str, u64> = TableDefinition::new("state");

/// Key in [`STATE`] of the counter incremented at every open; it forms the high half of data ids.
pub const EPOCH: &str = "epoch";

/// Separator between bucket and key in [`OBJECTS`] and [`UPLOADS`] keys.
const BUCKET_SEPARATOR: u8 = 0;

/// `bucket NUL key`.
pub fn object_key(bucket: &str, key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + 1 + key.len());
    out.extend_from_slice(bucket.as_bytes());
    out.push(BUCKET_SEPARATOR);
    out.extend_from_slice(key.as_bytes());
    out
}

/// Length of the `bucket NUL` prefix of every object key of `bucket`.
pub fn bucket_prefix_len(bucket: &str) -> usize {
    bucket.len() + 1
}

/// The smallest byte string greater than every string that starts with `prefix`, or `None` when no
/// such string exists (`prefix` empty or all `0xff`).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut out = prefix[..=keep].to_vec();
    out[keep] += 1;
    Some(out)
}

/// `[start, end)` covering all object keys of `bucket` that start with `prefix`.
pub fn prefix_range(bucket: &str, prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = object_key(bucket, prefix);
    let end = prefix_successor(&start).expect("`bucket NUL` always has a successor");
    (start, end)
}

/// Records one more reference to `id`.
pub fn add_ref(refs: &mut Table<u128, u64>, id: DataId) -> Result<()> {
    let count = refs.get(id.0)?.map_or(0, |g| g.value());
    refs.insert(id.0, count + 1)?;
    Ok(())
}

/// Drops one reference to `id`; `true` when it was the last one, so the file can be removed once the
/// transaction has committed.
pub fn release_ref(refs: &mut Table<u128, u64>, id: DataId) -> Result<bool> {
    let count = refs.get(id.0)?.map_or(0, |g| g.value());
    if count <= 1 {
        refs.remove(id.0)?;
        Ok(true)
    } else {
        refs.insert(id.0, count - 1)?;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor_bounds_every_extension() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
        let succ = prefix_successor(b"a/").unwrap();
        for ext in [&b""[..], b"\x00", b"zzz", b"\xf4\x8f\xbf\xbf"] {
            let mut s = b"a/".to_vec();
            s.extend_from_slice(ext);
            assert!(s < succ);
        }
        assert!(b"a0".as_slice() >= succ.as_slice());
    }

    #[test]
    fn buckets_do_not_interleave() {
        // "abc" objects (even with keys starting with bytes above '-') sort before "abc-d" objects.
        let (_, end) = prefix_range("abc", "");
        assert!(object_key("abc", "\u{10ffff}") < end);
        assert!(object_key("abc-d", "") >= end);
        assert!(object_key("abc", "a") < object_key("abc", "a\u{0}"));
    }
}
