//! `Client::object_writes` (put_many) against a backend: every object stored whole from bytes and
//! from files, failures in place, the queue depth as a bound on writes in flight and connections
//! opened.

use std::collections::HashMap;
use std::time::Duration;

use super::Backend;
use crate::support::{bounded, new_bucket, pattern};
use brisk_client::{Client, Error, PutSource, TransferOptions};
use brisk_mem::MemoryBudget;

const MIB: usize = 1024 * 1024;
const STEP: Duration = Duration::from_secs(120);

fn client(b: &Backend) -> Client {
    b.builder()
        .memory_budget(MemoryBudget::new(256 * MIB))
        .build()
        .unwrap()
}

fn size_of(i: usize) -> usize {
    match i % 4 {
        0 => 0,
        1 => 1 + i,
        2 => 64 * 1024 + i,
        _ => 300 * 1024 + 7 * i,
    }
}

pub async fn bytes_and_files_are_stored_whole_and_failures_stay_in_place(b: &Backend) {
    bounded(STEP, async {
        let c = client(b);
        let bucket = new_bucket(&c, "putmany").await;
        let dir = tempfile::tempdir().unwrap();
        let mut expected = HashMap::new();
        let mut writes = c.object_writes(6, TransferOptions::default()).unwrap();
        for i in 0..40usize {
            let key = format!("k{i}");
            let body = pattern(size_of(i), i as u8);
            let source = if i % 3 == 0 {
                let path = dir.path().join(format!("f{i}"));
                std::fs::write(&path, &body).unwrap();
                PutSource::File(path)
            } else {
                PutSource::Bytes(body.clone())
            };
            writes.submit(i as u64, bucket.as_str(), key.as_str(), source);
            expected.insert(i as u64, (key, body));
        }
        // A file that does not exist, and a bucket that does not: each fails alone.
        writes.submit(
            100,
            bucket.as_str(),
            "nofile",
            PutSource::File(dir.path().join("absent")),
        );
        writes.submit(
            101,
            "brisk-no-such-bucket-put-many",
            "k",
            PutSource::Bytes(vec![1u8; 10]),
        );
        assert!(!writes.has_room());
        let mut seen = HashMap::new();
        while let Some((id, result)) = writes.next().await {
            assert!(seen.insert(id, ()).is_none(), "object {id} completed twice");
            match id {
                100 => assert!(result.is_err(), "a missing file was stored: {result:?}"),
                101 => assert!(
                    matches!(result, Err(Error::NoSuchBucket(_)) | Err(Error::Service(_))),
                    "{result:?}"
                ),
                _ => {
                    let stored = result.unwrap();
                    assert_eq!(stored.size as usize, expected[&id].1.len());
                    assert!(stored.etag.is_some());
                }
            }
        }
        assert_eq!(seen.len(), 42);
        assert_eq!(writes.outstanding(), 0);
        for (key, body) in expected.values() {
            let got = c.get_bytes(&bucket, key).await.unwrap();
            assert!(got[..] == body[..], "{key} differs");
        }
        // At most the queue depth's connections (writes hold one each; these files are one part).
        assert!(
            c.metrics().connections_opened <= 6 + 1,
            "{} connections",
            c.metrics().connections_opened
        );
        assert!(c.head(&bucket, "nofile").await.is_err());
    })
    .await;
}

pub async fn a_file_larger_than_a_part_is_a_multipart_upload_and_create_only_keeps_what_exists(
    b: &Backend,
) {
    bounded(STEP, async {
        let c = client(b);
        let bucket = new_bucket(&c, "putmanymp").await;
        let dir = tempfile::tempdir().unwrap();
        let big = pattern(12 * MIB + 5, 9);
        let path = dir.path().join("big");
        std::fs::write(&path, &big).unwrap();
        c.put(&bucket, "taken", b"first").await.unwrap();
        let options = TransferOptions {
            if_none_match_any: true,
            ..TransferOptions::default()
        };
        let mut writes = c.object_writes::<Vec<u8>>(4, options).unwrap();
        writes.submit(0, bucket.as_str(), "big", PutSource::File(path));
        writes.submit(
            1,
            bucket.as_str(),
            "taken",
            PutSource::Bytes(b"second".to_vec()),
        );
        writes.submit(
            2,
            bucket.as_str(),
            "free",
            PutSource::Bytes(b"third".to_vec()),
        );
        let mut results = HashMap::new();
        while let Some((id, result)) = writes.next().await {
            results.insert(id, result);
        }
        assert_eq!(results[&0].as_ref().unwrap().parts, 2);
        assert!(
            matches!(results[&1], Err(Error::PreconditionFailed(_))),
            "{:?}",
            results[&1]
        );
        assert!(results[&2].is_ok());
        assert!(c.get_bytes(&bucket, "big").await.unwrap()[..] == big[..]);
        assert_eq!(&c.get_bytes(&bucket, "taken").await.unwrap()[..], b"first");
        assert_eq!(&c.get_bytes(&bucket, "free").await.unwrap()[..], b"third");
    })
    .await;
}

pub async fn a_zero_queue_depth_is_refused(b: &Backend) {
    let c = client(b);
    let err = c
        .object_writes::<Vec<u8>>(0, TransferOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("queue depth"), "{err}");
}
