//! Multipart uploads: the happy path, every error, abort, listing, and part ranges.

use std::io::{Read, Seek, SeekFrom};

use brisk_server::store::{
    ChecksumAlgorithm, ChecksumType, CompletedPart, ObjectAttributes, Store, StoreConfig,
    StoreError, UploadQuery, WriteCondition,
};
use tempfile::TempDir;

use crate::common::*;

/// Parts of at least this size pass the minimum-size check in these tests.
const MIN_PART: u64 = 1024;

fn store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = reopen(dir.path());
    store.create_bucket("bkt").unwrap();
    (dir, store)
}

/// Opens the store in `root` with the tests' settings (fsync off, small minimum part size).
fn reopen(root: &std::path::Path) -> Store {
    Store::open(
        root,
        StoreConfig {
            fsync: false,
            min_part_size: MIN_PART,
            ..StoreConfig::default()
        },
    )
    .unwrap()
}

fn upload_part(store: &Store, key: &str, upload_id: &str, number: u32, body: &[u8]) -> String {
    let mut pending = store
        .begin_upload_part("bkt", key, upload_id, number)
        .unwrap();
    pending.write_all(body).unwrap();
    let etag = format!("\"{:032x}\"", u128::from(number) << 64 | body.len() as u128);
    pending.commit(etag.clone(), None).unwrap().etag
}

fn completed(parts: &[(u32, &str)]) -> Vec<CompletedPart> {
    parts
        .iter()
        .map(|&(part_number, etag)| CompletedPart {
            part_number,
            etag: etag.to_owned(),
        })
        .collect()
}

#[test]
fn three_parts_uploaded_out_of_order_with_a_reupload() {
    let (dir, store) = store();
    let attributes = ObjectAttributes {
        content_type: Some("video/mp4".into()),
        ..ObjectAttributes::default()
    };
    let id = store
        .create_multipart_upload(
            "bkt",
            "movie",
            attributes.clone(),
            Some((ChecksumAlgorithm::Crc32c, ChecksumType::Composite)),
        )
        .unwrap();
    let p1 = vec![1u8; 1500];
    let p2 = vec![2u8; 1024];
    let p3 = vec![3u8; 10];
    let e3 = upload_part(&store, "movie", &id, 3, &p3);
    let _stale = upload_part(&store, "movie", &id, 1, &[9u8; 2000]);
    let e2 = upload_part(&store, "movie", &id, 2, &p2);
    let e1 = upload_part(&store, "movie", &id, 1, &p1); // replaces the first upload of part 1
    assert_eq!(
        data_files(dir.path()).len(),
        3,
        "the replaced part's file is gone"
    );

    let listed = store.list_parts("bkt", "movie", &id, 0, 1000).unwrap();
    let numbers: Vec<_> = listed
        .parts
        .iter()
        .map(|p| (p.part_number, p.size))
        .collect();
    assert_eq!(numbers, [(1, 1500), (2, 1024), (3, 10)]);
    assert!(!listed.is_truncated);
    let first_two = store.list_parts("bkt", "movie", &id, 0, 2).unwrap();
    assert!(first_two.is_truncated);
    assert_eq!(first_two.next_part_number_marker, Some(2));
    let rest = store.list_parts("bkt", "movie", &id, 2, 2).unwrap();
    assert_eq!(rest.parts.len(), 1);
    assert_eq!(rest.parts[0].part_number, 3);

    // Invisible until complete.
    assert!(matches!(
        store.head_object("bkt", "movie"),
        Err(StoreError::NoSuchKey { .. })
    ));
    let info = store
        .complete_multipart_upload(
            "bkt",
            "movie",
            &id,
            &completed(&[(1, &e1), (2, e2.trim_matches('"')), (3, &e3)]),
            None,
        )
        .unwrap();
    assert_eq!(info.size, 1500 + 1024 + 10);
    assert!(info.etag.ends_with("-3\""), "{}", info.etag);
    assert_eq!(info.attributes, attributes);
    assert_eq!(info.parts_count(), 3);
    assert_eq!(info.part_range(1), Some(0..1500));
    assert_eq!(info.part_range(2), Some(1500..2524));
    assert_eq!(info.part_range(3), Some(2524..2534));
    assert_eq!(info.part_range(4), None);

    let mut expected = p1.clone();
    expected.extend_from_slice(&p2);
    expected.extend_from_slice(&p3);
    assert_eq!(read_object(&store, "bkt", "movie"), expected);
    // GetObject?partNumber=2 serves that range of the body, here the second part's own file.
    let (head, mut file) = store.open_object("bkt", "movie").unwrap();
    assert_eq!(
        file.segment_count(),
        3,
        "the part files are the body, not copied"
    );
    let range = head.part_range(2).unwrap();
    file.seek(SeekFrom::Start(range.start)).unwrap();
    let mut part = vec![0; (range.end - range.start) as usize];
    file.read_exact(&mut part).unwrap();
    assert_eq!(part, p2);

    // The three listed parts' files are the object's; the replaced upload of part 2 is gone, nothing
    // was assembled in tmp/, and the upload is closed.
    assert_eq!(data_files(dir.path()).len(), 3);
    assert!(temp_files(dir.path()).is_empty());
    assert!(matches!(
        store.list_parts("bkt", "movie", &id, 0, 10),
        Err(StoreError::NoSuchUpload(_))
    ));
    assert!(
        store
            .list_multipart_uploads("bkt", &UploadQuery::default())
            .unwrap()
            .uploads
            .is_empty()
    );
}

#[test]
fn single_part_upload_reuses_the_part_file_and_unlisted_parts_are_dropped() {
    let (dir, store) = store();
    let id = store
        .create_multipart_upload("bkt", "k", ObjectAttributes::default(), None)
        .unwrap();
    let e1 = upload_part(&store, "k", &id, 1, b"only part");
    upload_part(&store, "k", &id, 2, b"never listed");
    let info = store
        .complete_multipart_upload("bkt", "k", &id, &completed(&[(1, &e1)]), None)
        .unwrap();
    assert_eq!(info.parts_count(), 1);
    assert_eq!(read_object(&store, "bkt", "k"), b"only part");
    assert_eq!(data_files(dir.path()).len(), 1);
}

#[test]
fn completion_errors() {
    let (_dir, store) = store();
    let id = store
        .create_multipart_upload("bkt", "k", ObjectAttributes::default(), None)
        .unwrap();
    let e1 = upload_part(&store, "k", &id, 1, &[1; 1024]);
    let e2 = upload_part(&store, "k", &id, 2, &[2; 100]);
    let e3 = upload_part(&store, "k", &id, 3, &[3; 100]);

    let complete = |parts: &[(u32, &str)]| {
        store.complete_multipart_upload("bkt", "k", &id, &completed(parts), None)
    };
    assert!(matches!(complete(&[]), Err(StoreError::NoParts)));
    assert!(matches!(
        complete(&[(2, &e2), (1, &e1)]),
        Err(StoreError::InvalidPartOrder {
            previous: 2,
            next: 1
        })
    ));
    assert!(matches!(
        complete(&[(1, &e1), (1, &e1)]),
        Err(StoreError::InvalidPartOrder { .. })
    ));
    assert!(matches!(
        complete(&[(1, &e1), (4, &e3)]),
        Err(StoreError::InvalidPart { part_number: 4, .. })
    ));
    assert!(matches!(
        complete(&[(1, &e1), (2, &e3)]),
        Err(StoreError::InvalidPart { part_number: 2, .. })
    ));
    // Part 2 (100 bytes) is not last here.
    assert!(matches!(
        complete(&[(1, &e1), (2, &e2), (3, &e3)]),
        Err(StoreError::EntityTooSmall {
            part_number: 2,
            size: 100,
            min: MIN_PART
        })
    ));
    // A failed completion leaves the upload usable.
    let info = complete(&[(1, &e1), (3, &e3)]).unwrap();
    assert_eq!(info.size, 1124);
    assert!(matches!(
        complete(&[(1, &e1)]),
        Err(StoreError::NoSuchUpload(_))
    ));

    assert!(matches!(
        store.begin_upload_part("bkt", "k", &id, 1),
        Err(StoreError::NoSuchUpload(_))
    ));
    let other = store
        .create_multipart_upload("bkt", "k", ObjectAttributes::default(), None)
        .unwrap();
    for bad in [0, 10_001] {
        assert!(matches!(
            store.begin_upload_part("bkt", "k", &other, bad),
            Err(StoreError::InvalidPartNumber(n)) if n == bad
        ));
    }
    // The upload id belongs to key "k", not "other-key".
    assert!(matches!(
        store.begin_upload_part("bkt", "other-key", &other, 1),
        Err(StoreError::NoSuchUpload(_))
    ));
    assert!(matches!(
        store.create_multipart_upload("nope", "k", ObjectAttributes::default(), None),
        Err(StoreError::NoSuchBucket(_))
    ));
}

#[test]
fn conditional_completion_checks_the_key_in_its_own_transaction_and_keeps_a_refused_upload() {
    let (_dir, store) = store();
    let id = store
        .create_multipart_upload("bkt", "k", ObjectAttributes::default(), None)
        .unwrap();
    let e1 = upload_part(&store, "k", &id, 1, b"assembled");
    let parts = completed(&[(1, &e1)]);
    let complete = |condition: &WriteCondition| {
        store.complete_multipart_upload_if("bkt", "k", &id, &parts, None, condition)
    };
    // No object at the key yet: If-Match has nothing to match (S3: 404 NoSuchKey).
    assert!(matches!(
        complete(&WriteCondition::IfMatch("\"0000\"".into())),
        Err(StoreError::NoSuchKey { .. })
    ));
    store
        .put_object("bkt", "k", b"current", new_object("\"current-etag\""))
        .unwrap();
    assert!(matches!(
        complete(&WriteCondition::IfAbsent),
        Err(StoreError::PreconditionFailed {
            condition: "If-None-Match"
        })
    ));
    assert!(matches!(
        complete(&WriteCondition::IfMatch("\"other\"".into())),
        Err(StoreError::PreconditionFailed {
            condition: "If-Match"
        })
    ));
    // Each refusal left the object and the upload as they were.
    assert_eq!(read_object(&store, "bkt", "k"), b"current");
    assert_eq!(
        store
            .list_parts("bkt", "k", &id, 0, 1000)
            .unwrap()
            .parts
            .len(),
        1
    );
    // With the current ETag the completion replaces the object.
    let info = complete(&WriteCondition::IfMatch("current-etag".into())).unwrap();
    assert_eq!(info.parts_count(), 1);
    assert_eq!(read_object(&store, "bkt", "k"), b"assembled");
    assert!(matches!(
        store.list_parts("bkt", "k", &id, 0, 1000),
        Err(StoreError::NoSuchUpload(_))
    ));
}

#[test]
fn default_minimum_part_size_is_5_mib() {
    let (_dir, store) = store_with_bucket();
    let id = store
        .create_multipart_upload("bkt", "k", ObjectAttributes::default(), None)
        .unwrap();
    let e1 = upload_part(&store, "k", &id, 1, &vec![0; (5 << 20) - 1]);
    let e2 = upload_part(&store, "k", &id, 2, b"x");
    assert!(matches!(
        store.complete_multipart_upload("bkt", "k", &id, &completed(&[(1, &e1), (2, &e2)]), None),
        Err(StoreError::EntityTooSmall { min, .. }) if min == 5 << 20
    ));
}

#[test]
fn abort_leaves_nothing_behind() {
    let (dir, store) = store();
    let id = store
        .create_multipart_upload("bkt", "k", ObjectAttributes::default(), None)
        .unwrap();
    upload_part(&store, "k", &id, 1, &[1; 2048]);
    upload_part(&store, "k", &id, 2, &[2; 2048]);
    // A part still being written when the upload is aborted fails at commit and removes its file.
    let mut late = store.begin_upload_part("bkt", "k", &id, 3).unwrap();
    late.write_all(b"late").unwrap();
    assert_eq!(data_files(dir.path()).len(), 2);

    store.abort_multipart_upload("bkt", "k", &id).unwrap();
    assert!(data_files(dir.path()).is_empty());
    assert!(matches!(
        late.commit("\"e\"".into(), None),
        Err(StoreError::NoSuchUpload(_))
    ));
    assert!(data_files(dir.path()).is_empty());
    assert!(temp_files(dir.path()).is_empty());
    assert!(matches!(
        store.abort_multipart_upload("bkt", "k", &id),
        Err(StoreError::NoSuchUpload(_))
    ));
    assert!(matches!(
        store.list_parts("bkt", "k", &id, 0, 10),
        Err(StoreError::NoSuchUpload(_))
    ));
}

#[test]
fn deleting_a_bucket_aborts_its_uploads() {
    let (dir, store) = store();
    let id = store
        .create_multipart_upload("bkt", "k", ObjectAttributes::default(), None)
        .unwrap();
    upload_part(&store, "k", &id, 1, b"part");
    store.delete_bucket("bkt").unwrap();
    assert!(data_files(dir.path()).is_empty());
    store.create_bucket("bkt").unwrap();
    assert!(matches!(
        store.list_parts("bkt", "k", &id, 0, 10),
        Err(StoreError::NoSuchUpload(_))
    ));
}

#[test]
fn list_uploads_with_prefix_and_markers() {
    let (_dir, store) = store();
    let mut ids = Vec::new();
    for key in ["a/1", "a/2", "a/2", "b/1", "a", "a\u{0}"] {
        let id = store
            .create_multipart_upload("bkt", key, ObjectAttributes::default(), None)
            .unwrap();
        ids.push((key.to_owned(), id));
    }
    let list = |query: UploadQuery| {
        store
            .list_multipart_uploads("bkt", &query)
            .unwrap()
            .uploads
            .into_iter()
            .map(|u| (u.key, u.upload_id))
            .collect::<Vec<_>>()
    };
    // Ordered by key, then by creation.
    let mut expected = ids.clone();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(list(UploadQuery::default()), expected);

    let a_slash: Vec<_> = expected
        .iter()
        .filter(|(k, _)| k.starts_with("a/"))
        .cloned()
        .collect();
    assert_eq!(
        list(UploadQuery {
            prefix: "a/".into(),
            ..UploadQuery::default()
        }),
        a_slash
    );
    // key-marker alone: only keys after it.
    assert_eq!(
        list(UploadQuery {
            key_marker: Some("a/2".into()),
            ..UploadQuery::default()
        }),
        vec![ids[3].clone()]
    );
    // key-marker with upload-id-marker: the later upload of the same key too.
    assert_eq!(
        list(UploadQuery {
            key_marker: Some("a/2".into()),
            upload_id_marker: Some(ids[1].1.clone()),
            ..UploadQuery::default()
        }),
        vec![ids[2].clone(), ids[3].clone()]
    );
    // Paging with the returned markers visits every upload once.
    let mut query = UploadQuery {
        max_uploads: 2,
        ..UploadQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = store.list_multipart_uploads("bkt", &query).unwrap();
        seen.extend(page.uploads.into_iter().map(|u| (u.key, u.upload_id)));
        if !page.is_truncated {
            break;
        }
        query.key_marker = page.next_key_marker;
        query.upload_id_marker = page.next_upload_id_marker;
    }
    assert_eq!(seen, expected);
}

/// With a delimiter, uploads of keys under a common prefix are rolled up into it, prefixes and
/// uploads share the page size, and paging with the returned markers visits every entry once.
#[test]
fn list_uploads_with_a_delimiter() {
    let (_dir, store) = store();
    for key in ["a/1", "a/2", "a/x/3", "b", "c/1", "c/2", "d"] {
        store
            .create_multipart_upload("bkt", key, ObjectAttributes::default(), None)
            .unwrap();
    }
    let whole = store
        .list_multipart_uploads(
            "bkt",
            &UploadQuery {
                delimiter: Some("/".into()),
                ..UploadQuery::default()
            },
        )
        .unwrap();
    assert_eq!(whole.common_prefixes, ["a/", "c/"]);
    let keys: Vec<_> = whole.uploads.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(keys, ["b", "d"]);

    let under_a = store
        .list_multipart_uploads(
            "bkt",
            &UploadQuery {
                prefix: "a/".into(),
                delimiter: Some("/".into()),
                ..UploadQuery::default()
            },
        )
        .unwrap();
    assert_eq!(under_a.common_prefixes, ["a/x/"]);
    let keys: Vec<_> = under_a.uploads.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(keys, ["a/1", "a/2"]);

    // Pages of 1: a/, b, c/, d, each once.
    let mut query = UploadQuery {
        delimiter: Some("/".into()),
        max_uploads: 1,
        ..UploadQuery::default()
    };
    let mut seen = Vec::new();
    for _ in 0..10 {
        let page = store.list_multipart_uploads("bkt", &query).unwrap();
        seen.extend(page.common_prefixes.iter().cloned());
        seen.extend(page.uploads.iter().map(|u| u.key.clone()));
        if !page.is_truncated {
            break;
        }
        query.key_marker = page.next_key_marker;
        query.upload_id_marker = page.next_upload_id_marker;
    }
    assert_eq!(seen, ["a/", "b", "c/", "d"]);
}

/// An object completed from several parts is its part files (segments): a copy shares them, a
/// ranged read crosses them, reopening the store keeps them (the recovery sweep sees them
/// referenced), and they go only when the last object using them goes.
#[test]
fn segmented_bodies_are_shared_by_copies_and_freed_with_the_last_reference() {
    let (dir, store) = store();
    let id = store
        .create_multipart_upload("bkt", "seg", ObjectAttributes::default(), None)
        .unwrap();
    let parts: Vec<Vec<u8>> = (0..3u8)
        .map(|n| {
            (0..1500u32)
                .map(|i| (i as u8) ^ n.wrapping_mul(77))
                .collect()
        })
        .collect();
    let etags: Vec<String> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| upload_part(&store, "seg", &id, i as u32 + 1, p))
        .collect();
    let listed: Vec<(u32, &str)> = etags
        .iter()
        .enumerate()
        .map(|(i, e)| (i as u32 + 1, e.as_str()))
        .collect();
    store
        .complete_multipart_upload("bkt", "seg", &id, &completed(&listed), None)
        .unwrap();
    let whole = parts.concat();
    assert_eq!(read_object(&store, "bkt", "seg"), whole);
    // A read across the boundary between parts 1 and 2, and one across all three.
    let (_, mut body) = store.open_object("bkt", "seg").unwrap();
    for (start, len) in [(1490u64, 20usize), (10, 4480)] {
        body.seek(SeekFrom::Start(start)).unwrap();
        let mut got = vec![0; len];
        body.read_exact(&mut got).unwrap();
        assert_eq!(got, whole[start as usize..start as usize + len]);
    }
    drop(body);
    // A span opens only the files it falls in: a HEAD none, a range inside part 2 one, a range
    // across parts 1 and 2 two; their bytes read back as the object's.
    for (span, opened) in [(0..0, 0), (1600..1700, 1), (1490..1510, 2), (0..4500, 3)] {
        let (_, (), mut body) = store
            .open_object_span("bkt", "seg", |_| {
                Ok::<_, brisk_server::store::StoreError>(((), span.clone()))
            })
            .unwrap();
        assert_eq!(body.segment_count(), opened, "files opened for {span:?}");
        assert_eq!(body.len(), 4500);
        body.seek(SeekFrom::Start(span.start)).unwrap();
        let mut got = vec![0; (span.end - span.start) as usize];
        body.read_exact(&mut got).unwrap();
        assert_eq!(got, whole[span.start as usize..span.end as usize]);
    }

    store
        .copy_object("bkt", "seg", "bkt", "seg-copy", None)
        .unwrap();
    assert_eq!(
        data_files(dir.path()).len(),
        3,
        "the copy shares the segments"
    );
    store.delete_object("bkt", "seg").unwrap();
    assert_eq!(data_files(dir.path()).len(), 3, "the copy still uses them");
    drop(store);
    let store = reopen(dir.path());
    assert_eq!(
        data_files(dir.path()).len(),
        3,
        "recovery keeps referenced segments"
    );
    assert_eq!(read_object(&store, "bkt", "seg-copy"), whole);
    // Overwriting the last user frees every segment.
    store
        .put_object("bkt", "seg-copy", b"small", Default::default())
        .unwrap();
    assert_eq!(data_files(dir.path()).len(), 1);
    store.delete_object("bkt", "seg-copy").unwrap();
    assert!(data_files(dir.path()).is_empty());
}
