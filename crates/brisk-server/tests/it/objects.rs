//! Buckets and single-PUT objects: round trips, hostile keys, metadata, delete, copy, concurrency.

use std::collections::BTreeSet;
use std::io::Read;
use std::sync::Arc;
use std::thread;

use crate::common::*;
use brisk_server::store::{
    Checksum, ChecksumAlgorithm, ChecksumType, ListQuery, NewObject, ObjectAttributes, Store,
    StoreError, WriteCondition,
};
use proptest::prelude::*;

/// Keys that break stores mapping keys to paths. Every one is a valid S3 key here.
fn hostile_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        "a",
        "a/b",
        "a/b/c",
        "a/",
        "a//b",
        "//",
        "/",
        "/leading",
        "trailing/",
        ".",
        "..",
        "../escape",
        "../../../../../../etc/passwd",
        "a/../../b",
        "./.",
        "a/./b",
        "\u{0}",
        "nul\u{0}inside",
        "\u{1}\u{2}\t\n\r\u{1b}[31m",
        "\u{7f}",
        "unicode/é/日本語/🦀",
        "\u{10ffff}",
        "spaces  and\ttabs",
        "back\\slash\\..\\..",
        "metadata.redb",
        "data",
        "tmp",
        "data/00/00/00000000000000000000000000000000",
        "%2e%2e%2f",
        "CON",
        "name:with:colons",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    keys.push("x".repeat(1024));
    keys.push(format!("{}/{}", "s".repeat(511), "t".repeat(512)));
    keys.push("/".repeat(1024));
    keys.push("é".repeat(512));
    keys
}

/// The store's root may contain only its database, `tmp/` and id-named data files.
fn assert_layout_is_clean(root: &std::path::Path) {
    for path in files_under(root) {
        let rel = path.strip_prefix(root).unwrap();
        let parts: Vec<_> = rel.iter().map(|p| p.to_str().unwrap()).collect();
        let ok = match parts.as_slice() {
            ["metadata.redb"] => true,
            ["data", a, b, id] => {
                a.len() == 2
                    && b.len() == 2
                    && id.len() == 32
                    && id.bytes().all(|c| c.is_ascii_hexdigit())
            }
            _ => false,
        };
        assert!(ok, "unexpected file {rel:?} under the root");
    }
}

#[test]
fn hostile_keys_round_trip_and_stay_inside_the_root() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("root");
    let store = Store::open(&root, fast_config()).unwrap();
    store.create_bucket("bkt").unwrap();
    let keys = hostile_keys();
    for key in &keys {
        store
            .put_object("bkt", key, key.as_bytes(), new_object(key))
            .unwrap_or_else(|e| panic!("PUT {key:?}: {e}"));
    }
    for key in &keys {
        assert_eq!(read_object(&store, "bkt", key), key.as_bytes(), "{key:?}");
        assert_eq!(store.head_object("bkt", key).unwrap().etag, *key);
    }
    // All of them list, each once, in byte order.
    let page = store.list_objects("bkt", &ListQuery::default()).unwrap();
    let listed: Vec<_> = page.objects.iter().map(|o| o.key.clone()).collect();
    let expected: Vec<_> = keys
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(listed, expected);

    // Nothing was created beside the root, and inside it only the store's own layout.
    let beside: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, vec![std::ffi::OsString::from("root")]);
    assert_layout_is_clean(&root);
    assert_eq!(data_files(&root).len(), keys.len());

    for key in &keys {
        assert!(store.delete_object("bkt", key).unwrap());
    }
    assert!(data_files(&root).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn random_keys_round_trip(keys in proptest::collection::vec("(?s).{1,300}", 1..12)) {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("root");
        let store = Store::open(&root, fast_config()).unwrap();
        store.create_bucket("bkt").unwrap();
        for key in &keys {
            store.put_object("bkt", key, key.as_bytes(), new_object("e")).unwrap();
        }
        for key in &keys {
            prop_assert_eq!(read_object(&store, "bkt", key), key.as_bytes());
        }
        let page = store.list_objects("bkt", &ListQuery::default()).unwrap();
        let listed: Vec<_> = page.objects.iter().map(|o| o.key.clone()).collect();
        let expected: Vec<_> = keys.iter().cloned().collect::<BTreeSet<_>>().into_iter().collect();
        prop_assert_eq!(listed, expected);
        assert_layout_is_clean(&root);
        prop_assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 1);
    }
}

#[test]
fn key_limits_are_enforced() {
    let (_dir, store) = store_with_bucket();
    let long = "k".repeat(1025);
    assert!(matches!(
        store.begin_put("bkt", &long),
        Err(StoreError::KeyTooLong { len: 1025, .. })
    ));
    assert!(matches!(
        store.begin_put("bkt", ""),
        Err(StoreError::EmptyKey)
    ));
}

#[test]
fn buckets() {
    let (_dir, store) = temp_store();
    assert!(matches!(
        store.create_bucket("Bad_Name"),
        Err(StoreError::InvalidBucketName { .. })
    ));
    store.create_bucket("zeta").unwrap();
    store.create_bucket("alpha").unwrap();
    store.create_bucket("mid.dle").unwrap();
    assert!(matches!(
        store.create_bucket("alpha"),
        Err(StoreError::BucketAlreadyOwnedByYou(_))
    ));
    let names: Vec<_> = store
        .list_buckets()
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["alpha", "mid.dle", "zeta"]);
    let created = store.head_bucket("alpha").unwrap().created;
    assert!(created.elapsed().unwrap().as_secs() < 60);
    assert!(matches!(
        store.head_bucket("nope"),
        Err(StoreError::NoSuchBucket(_))
    ));

    store
        .put_object("alpha", "k", b"v", new_object("e"))
        .unwrap();
    assert!(matches!(
        store.delete_bucket("alpha"),
        Err(StoreError::BucketNotEmpty(_))
    ));
    store.delete_object("alpha", "k").unwrap();
    store.delete_bucket("alpha").unwrap();
    assert!(matches!(
        store.delete_bucket("alpha"),
        Err(StoreError::NoSuchBucket(_))
    ));
    assert!(matches!(
        store.begin_put("alpha", "k"),
        Err(StoreError::NoSuchBucket(_))
    ));
    assert!(matches!(
        store.list_objects("alpha", &ListQuery::default()),
        Err(StoreError::NoSuchBucket(_))
    ));
}

#[test]
fn bucket_names_sort_apart_from_keys() {
    // "abc" and "abc-d" must not see each other's objects.
    let (_dir, store) = temp_store();
    store.create_bucket("abc").unwrap();
    store.create_bucket("abc-d").unwrap();
    store
        .put_object("abc", "\u{10ffff}", b"1", new_object("e"))
        .unwrap();
    store
        .put_object("abc-d", "a", b"2", new_object("e"))
        .unwrap();
    let keys = |b| {
        store
            .list_objects(b, &ListQuery::default())
            .unwrap()
            .objects
            .into_iter()
            .map(|o| o.key)
            .collect::<Vec<_>>()
    };
    assert_eq!(keys("abc"), ["\u{10ffff}"]);
    assert_eq!(keys("abc-d"), ["a"]);
    assert!(matches!(
        store.head_object("abc", "a"),
        Err(StoreError::NoSuchKey { .. })
    ));
}

#[test]
fn metadata_round_trips_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let new = NewObject {
        etag: "\"9e107d9d372bb6826bd81d3542a419d6\"".into(),
        attributes: ObjectAttributes {
            content_type: Some("application/json".into()),
            content_encoding: Some("gzip".into()),
            content_disposition: Some("inline".into()),
            content_language: Some("de-CH".into()),
            cache_control: Some("max-age=60".into()),
            expires: Some("Thu, 01 Dec 1994 16:00:00 GMT".into()),
            user_metadata: vec![("a".into(), "1".into()), ("b".into(), "zwei".into())],
        },
        checksum: Some(Checksum {
            algorithm: ChecksumAlgorithm::Crc32c,
            checksum_type: ChecksumType::FullObject,
            value: "yZRlqg==".into(),
        }),
    };
    let put = {
        let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
        store.create_bucket("bkt").unwrap();
        store
            .put_object("bkt", "doc.json", b"{}", new.clone())
            .unwrap()
    };
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let head = store.head_object("bkt", "doc.json").unwrap();
    assert_eq!(head, put);
    assert_eq!(head.attributes, new.attributes);
    assert_eq!(head.checksum, new.checksum);
    assert_eq!(head.etag, new.etag);
    assert_eq!(head.size, 2);
    assert_eq!(head.parts_count(), 0);
    assert_eq!(head.part_range(1), Some(0..2));
    assert_eq!(read_object(&store, "bkt", "doc.json"), b"{}");
    assert_eq!(store.recovery_report().temp_files_removed, 0);
    assert_eq!(store.recovery_report().orphan_data_files_removed, 0);
}

use brisk_server::store::StoreConfig;

#[test]
fn streamed_put_is_invisible_until_commit_and_drop_aborts() {
    let (dir, store) = store_with_bucket();
    let mut pending = store.begin_put("bkt", "big").unwrap();
    let block = vec![7u8; 64 * 1024];
    for _ in 0..16 {
        pending.write_all(&block).unwrap();
    }
    assert!(matches!(
        store.head_object("bkt", "big"),
        Err(StoreError::NoSuchKey { .. })
    ));
    assert_eq!(temp_files(dir.path()).len(), 1);
    drop(pending);
    assert!(temp_files(dir.path()).is_empty());
    assert!(data_files(dir.path()).is_empty());
    assert!(matches!(
        store.head_object("bkt", "big"),
        Err(StoreError::NoSuchKey { .. })
    ));

    let mut pending = store.begin_put("bkt", "big").unwrap();
    std::io::copy(&mut &block[..], &mut pending).unwrap();
    let info = pending.commit(new_object("e")).unwrap();
    assert_eq!(info.size, block.len() as u64);
    assert_eq!(read_object(&store, "bkt", "big"), block);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn commit_into_a_deleted_bucket_fails_and_cleans_up() {
    let (dir, store) = store_with_bucket();
    let mut pending = store.begin_put("bkt", "k").unwrap();
    pending.write_all(b"data").unwrap();
    store.delete_bucket("bkt").unwrap();
    assert!(matches!(
        pending.commit(new_object("e")),
        Err(StoreError::NoSuchBucket(_))
    ));
    assert!(data_files(dir.path()).is_empty());
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn overwrite_replaces_the_file_and_open_readers_keep_the_old_version() {
    let (dir, store) = store_with_bucket();
    store
        .put_object("bkt", "k", b"old version", new_object("1"))
        .unwrap();
    let (info, mut old_file) = store.open_object("bkt", "k").unwrap();
    assert_eq!(info.etag, "1");
    store
        .put_object("bkt", "k", b"new", new_object("2"))
        .unwrap();
    // One data file remains: the old one was unlinked, but the open descriptor still reads it.
    assert_eq!(data_files(dir.path()).len(), 1);
    let mut body = Vec::new();
    old_file.read_to_end(&mut body).unwrap();
    assert_eq!(body, b"old version");
    assert_eq!(read_object(&store, "bkt", "k"), b"new");
    assert_eq!(store.head_object("bkt", "k").unwrap().etag, "2");
}

#[test]
fn delete_and_delete_many() {
    let (dir, store) = store_with_bucket();
    for key in ["a", "b", "c"] {
        store
            .put_object("bkt", key, key.as_bytes(), new_object("e"))
            .unwrap();
    }
    assert!(store.delete_object("bkt", "a").unwrap());
    assert!(
        !store.delete_object("bkt", "a").unwrap(),
        "absent key is still a success"
    );
    let long = "k".repeat(2000);
    let outcomes = store
        .delete_objects("bkt", &["b", "missing", &long, "c"])
        .unwrap();
    assert!(outcomes[0].is_ok());
    assert!(outcomes[1].is_ok());
    assert!(matches!(outcomes[2], Err(StoreError::KeyTooLong { .. })));
    assert!(outcomes[3].is_ok());
    assert!(
        store
            .list_objects("bkt", &ListQuery::default())
            .unwrap()
            .objects
            .is_empty()
    );
    assert!(data_files(dir.path()).is_empty());
    assert!(matches!(
        store.delete_object("nope", "a"),
        Err(StoreError::NoSuchBucket(_))
    ));
}

#[test]
fn copy_shares_the_data_file_until_the_last_reference_goes() {
    let (dir, store) = store_with_bucket();
    store.create_bucket("other").unwrap();
    let attributes = ObjectAttributes {
        content_type: Some("text/plain".into()),
        user_metadata: vec![("k".into(), "v".into())],
        ..ObjectAttributes::default()
    };
    let source = store
        .put_object(
            "bkt",
            "src",
            b"payload",
            NewObject {
                etag: "\"e\"".into(),
                attributes: attributes.clone(),
                checksum: None,
            },
        )
        .unwrap();
    let kept = store
        .copy_object("bkt", "src", "other", "same-meta", None)
        .unwrap();
    assert_eq!(kept.attributes, attributes);
    assert_eq!(kept.etag, source.etag);
    let replacement = ObjectAttributes {
        content_type: Some("image/png".into()),
        ..ObjectAttributes::default()
    };
    let replaced = store
        .copy_object("bkt", "src", "bkt", "new-meta", Some(replacement.clone()))
        .unwrap();
    assert_eq!(replaced.attributes, replacement);
    assert_eq!(data_files(dir.path()).len(), 1, "copies share the file");

    store.delete_object("bkt", "src").unwrap();
    assert_eq!(read_object(&store, "other", "same-meta"), b"payload");
    store.delete_object("other", "same-meta").unwrap();
    assert_eq!(read_object(&store, "bkt", "new-meta"), b"payload");
    store.delete_object("bkt", "new-meta").unwrap();
    assert!(data_files(dir.path()).is_empty());

    assert!(matches!(
        store.copy_object("bkt", "src", "bkt", "x", None),
        Err(StoreError::NoSuchKey { .. })
    ));
    assert!(matches!(
        store.copy_object("nope", "src", "bkt", "x", None),
        Err(StoreError::NoSuchBucket(_))
    ));
    store
        .put_object("bkt", "src", b"p", new_object("e"))
        .unwrap();
    assert!(matches!(
        store.copy_object("bkt", "src", "nope", "x", None),
        Err(StoreError::NoSuchBucket(_))
    ));
    // Copy onto itself (S3 allows it to change metadata) keeps the data.
    store
        .copy_object(
            "bkt",
            "src",
            "bkt",
            "src",
            Some(ObjectAttributes::default()),
        )
        .unwrap();
    assert_eq!(read_object(&store, "bkt", "src"), b"p");
    assert_eq!(data_files(dir.path()).len(), 1);
}

#[test]
fn concurrent_puts_of_one_key_never_tear() {
    const WRITERS: usize = 6;
    const ROUNDS: usize = 20;
    const BODY: usize = 256 * 1024;
    let (dir, store) = store_with_bucket();
    let store = Arc::new(store);
    let readers_done = Arc::new(std::sync::atomic::AtomicBool::new(false));

    // Each writer's body is its id repeated; a torn object would mix ids or have the wrong length.
    let check = |body: &[u8], etag: &str| {
        assert_eq!(body.len(), BODY, "whole body");
        let id = body[0];
        assert!(body.iter().all(|&b| b == id), "body from one writer");
        assert_eq!(etag, format!("w{id}"), "metadata from the same writer");
    };

    thread::scope(|s| {
        let reader = {
            let store = Arc::clone(&store);
            let done = Arc::clone(&readers_done);
            s.spawn(move || {
                let mut reads = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok((info, mut file)) = store.open_object("bkt", "hot") {
                        let mut body = Vec::new();
                        file.read_to_end(&mut body).unwrap();
                        check(&body, &info.etag);
                        reads += 1;
                    }
                }
                reads
            })
        };
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    let body = vec![w as u8; BODY];
                    for _ in 0..ROUNDS {
                        let mut pending = store.begin_put("bkt", "hot").unwrap();
                        for chunk in body.chunks(16 * 1024) {
                            pending.write_all(chunk).unwrap();
                        }
                        pending.commit(new_object(&format!("w{w}"))).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        readers_done.store(true, std::sync::atomic::Ordering::Relaxed);
        let reads = reader.join().unwrap();
        assert!(reads > 0, "the reader observed the key while writers ran");
    });
    let (info, mut file) = store.open_object("bkt", "hot").unwrap();
    let mut body = Vec::new();
    file.read_to_end(&mut body).unwrap();
    check(&body, &info.etag);
    // Every replaced version's file is gone: one object, one file, no temp files.
    assert_eq!(data_files(dir.path()).len(), 1);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn conditional_commits_check_the_version_they_replace() {
    let (dir, store) = store_with_bucket();
    let put_if = |body: &[u8], etag: &str, condition: &WriteCondition| {
        let mut pending = store.begin_put("bkt", "k").unwrap();
        pending.write_all(body).unwrap();
        pending.commit_if(new_object(etag), condition)
    };
    // Replace-only on a missing key: NoSuchKey, as S3 answers.
    assert!(matches!(
        put_if(b"x", "0", &WriteCondition::IfMatch("1".into())),
        Err(StoreError::NoSuchKey { .. })
    ));
    put_if(b"first", "\"1\"", &WriteCondition::IfAbsent).unwrap();
    assert!(matches!(
        put_if(b"x", "2", &WriteCondition::IfAbsent),
        Err(StoreError::PreconditionFailed {
            condition: "If-None-Match"
        })
    ));
    assert!(matches!(
        put_if(b"x", "2", &WriteCondition::IfMatch("\"9\"".into())),
        Err(StoreError::PreconditionFailed {
            condition: "If-Match"
        })
    ));
    // Quotes around the ETag do not matter.
    put_if(b"second", "\"2\"", &WriteCondition::IfMatch("1".into())).unwrap();
    assert_eq!(read_object(&store, "bkt", "k"), b"second");
    // Refused writes leave no file behind: one data file, no temp files.
    assert_eq!(data_files(dir.path()).len(), 1);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn concurrent_create_only_writes_of_one_key_have_one_winner() {
    const WRITERS: usize = 8;
    let (dir, store) = store_with_bucket();
    let store = Arc::new(store);
    let barrier = Arc::new(std::sync::Barrier::new(WRITERS));
    let winners: Vec<usize> = thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = Arc::clone(&store);
                let barrier = Arc::clone(&barrier);
                s.spawn(move || {
                    let mut pending = store.begin_put("bkt", "once").unwrap();
                    pending.write_all(&[w as u8; 4096]).unwrap();
                    barrier.wait();
                    match pending.commit_if(new_object(&format!("w{w}")), &WriteCondition::IfAbsent)
                    {
                        Ok(_) => Some(w),
                        Err(StoreError::PreconditionFailed { .. }) => None,
                        Err(e) => panic!("unexpected error {e}"),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(winners.len(), 1, "exactly one create-only write commits");
    let body = read_object(&store, "bkt", "once");
    assert_eq!(body, vec![winners[0] as u8; 4096]);
    assert_eq!(data_files(dir.path()).len(), 1);
}
