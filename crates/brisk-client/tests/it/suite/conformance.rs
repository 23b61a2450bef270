//! The client against a real server: every operation, the typed errors, connection reuse and the
//! per-host bound. Each function takes the [`Backend`] it runs against; `suite/mod.rs` calls them
//! for each backend that has what they test.

use std::time::Duration;

use brisk_client::{BatchOptions, Client, Destination, ReadRequest};
use brisk_client::{CopyOptions, MetadataDirective, TransferOptions};
use brisk_client::{Credentials, Error, ListOptions, PutOptions};
use brisk_testkit::fault_proxy::{Fault, FaultProxy, Schedule};
use brisk_testkit::http;
use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer};

use super::Backend;
use crate::support::{self, anonymous_brisk_server, bounded, new_bucket, pattern, pattern_file};

const STEP: Duration = Duration::from_secs(60);

/// An object `obj` of `size` bytes of pattern `seed`, uploaded with the defaults into a new bucket
/// named after `name`, and an empty directory for downloads of it.
struct Uploaded {
    bucket: String,
    body: Vec<u8>,
    parts: u32,
    /// Holds the directories while the test runs (a pattern that leaves it out drops it).
    _dir: tempfile::TempDir,
    /// Empty but for what a download puts there.
    out: std::path::PathBuf,
    /// Where a download of `obj` goes, in `out`.
    target: std::path::PathBuf,
}

/// Downloads `obj` with `options` through a proxy that flips the byte at `at` of the first response
/// (the download reads again and the file is exact), then through one that flips it in every
/// response: returns that download's error once it has checked that every attempt was damaged and
/// that no file, temporary or not, is left. The proxy of the second is returned for more use.
async fn damaged_once_then_always(
    b: &Backend,
    object: &Uploaded,
    at: u64,
    options: impl Fn() -> TransferOptions,
    attempts: u32,
) -> (Error, FaultProxy) {
    let (bucket, target) = (&object.bucket, &object.target);
    let once = FaultProxy::start(b.port, Fault::Flip { at }, Schedule::First(1)).await;
    let through = b.through(&once).build().unwrap();
    let size = through
        .download(bucket, "obj", target, options())
        .await
        .unwrap();
    assert_eq!(size, object.body.len() as u64);
    assert_eq!(once.applied(), 1, "one response was damaged");
    assert!(
        std::fs::read(target).unwrap() == object.body,
        "and the file is exact"
    );
    std::fs::remove_file(target).unwrap();

    let always = FaultProxy::start(b.port, Fault::Flip { at }, Schedule::EveryNth(1)).await;
    let through = b.through(&always).build().unwrap();
    let err = through
        .download(bucket, "obj", target, options())
        .await
        .unwrap_err();
    assert!(always.applied() >= attempts, "every attempt was damaged");
    assert_eq!(
        std::fs::read_dir(&object.out).unwrap().count(),
        0,
        "no file left"
    );
    (err, always)
}

async fn uploaded_object(c: &Client, name: &str, size: usize, seed: u8) -> Uploaded {
    let bucket = new_bucket(c, name).await;
    let dir = tempfile::tempdir().unwrap();
    let (source, body) = pattern_file(dir.path(), size, seed);
    let parts = c
        .upload(&bucket, "obj", &source, TransferOptions::default())
        .await
        .unwrap()
        .parts;
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let target = out.join("copy.bin");
    Uploaded {
        bucket,
        body,
        parts,
        _dir: dir,
        out,
        target,
    }
}

pub async fn put_then_get_head_and_delete(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "roundtrip").await;
        let body = pattern(300_000, 1);
        let options = PutOptions {
            content_type: Some("application/x-test".into()),
            ..PutOptions::default()
        };
        let put = c
            .put_with(&bucket, "dir/object one", &body, &options)
            .await
            .unwrap();
        if b.can.s3_checksums {
            assert_eq!(
                put.checksum_crc32c,
                Checksummer::checksum(ChecksumAlgorithm::Crc32c, &body).to_base64()
            );
        }
        assert!(put.etag.is_some());

        let meta = c.head(&bucket, "dir/object one").await.unwrap();
        assert_eq!(meta.content_length, body.len() as u64);
        assert_eq!(meta.etag, put.etag);
        assert_eq!(meta.content_type.as_deref(), Some("application/x-test"));
        assert!(meta.last_modified.is_some());

        let got = c.get_bytes(&bucket, "dir/object one").await.unwrap();
        assert_eq!(got.len(), body.len());
        assert_eq!(got.reservation().size(), body.len());
        assert!(got[..] == body[..]);

        c.delete(&bucket, "dir/object one").await.unwrap();
        assert!(matches!(
            c.head(&bucket, "dir/object one").await,
            Err(Error::NoSuchKey(_))
        ));
        // Deleting what is not there succeeds, as in S3.
        c.delete(&bucket, "dir/object one").await.unwrap();
    })
    .await;
}

pub async fn unsigned_payload_with_checksum_and_empty_objects(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "unsigned").await;
        let body = pattern(70_000, 2);
        let options = PutOptions {
            payload_signing: brisk_client::PayloadSigning::Unsigned,
            ..PutOptions::default()
        };
        c.put_with(&bucket, "u", &body, &options).await.unwrap();
        assert!(c.get_bytes(&bucket, "u").await.unwrap()[..] == body[..]);

        c.put(&bucket, "empty", b"").await.unwrap();
        assert_eq!(c.get_bytes(&bucket, "empty").await.unwrap().len(), 0);
        let mut dst = [0u8; 4];
        assert_eq!(c.get_into(&bucket, "empty", &mut dst).await.unwrap(), 0);
    })
    .await;
}

pub async fn get_into_and_ranges(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "ranges").await;
        let body = pattern(200_000, 3);
        c.put(&bucket, "obj", &body).await.unwrap();

        let mut dst = vec![0u8; 250_000];
        let n = c.get_into(&bucket, "obj", &mut dst).await.unwrap();
        assert_eq!(n, body.len());
        assert!(dst[..n] == body[..]);

        let mut small = vec![0u8; 1000];
        assert!(matches!(
            c.get_into(&bucket, "obj", &mut small).await,
            Err(Error::BufferTooSmall {
                length: 200_000,
                capacity: 1000
            })
        ));

        let n = c
            .get_range_into(&bucket, "obj", 5000, &mut small)
            .await
            .unwrap();
        assert_eq!(n, 1000);
        assert!(small[..] == body[5000..6000]);

        // A range running past the end returns the tail.
        let n = c
            .get_range_into(&bucket, "obj", 199_500, &mut small)
            .await
            .unwrap();
        assert_eq!(n, 500);
        assert!(small[..500] == body[199_500..]);

        if b.can.refuse_a_range_at_the_end {
            assert!(matches!(
                c.get_range_into(&bucket, "obj", 200_000, &mut small).await,
                Err(Error::InvalidRange(_))
            ));
        }
        // The client still works after all those errors.
        assert_eq!(
            c.head(&bucket, "obj").await.unwrap().content_length,
            200_000
        );
    })
    .await;
}

/// `get_range_bytes` reads into a buffer of its own, populated a step ahead of the body: a range
/// of several populating steps, one that runs past the end (the tail, the rest of the buffer
/// zero, also in a buffer whose memory held another object's bytes before), and one past the end.
pub async fn get_range_bytes_reads_a_range_into_an_exact_buffer(b: &Backend) {
    bounded(STEP, async {
        let budget = brisk_mem::MemoryBudget::new(64 * 1024 * 1024);
        let c = b.builder().memory_budget(budget.clone()).build().unwrap();
        let bucket = new_bucket(&c, "rangebytes").await;
        let body = pattern(9 * 1024 * 1024 + 77, 5);
        c.put(&bucket, "obj", &body).await.unwrap();
        // 16 MiB of bytes that are nowhere zero, freed and kept for the range read below.
        let filler = vec![0xa5u8; 16 * 1024 * 1024];
        c.put(&bucket, "filler", &filler).await.unwrap();
        drop(c.get_bytes(&bucket, "filler").await.unwrap());
        assert_eq!(budget.metrics().kept_bytes, filler.len());

        let (buf, n) = c
            .get_range_bytes(&bucket, "obj", 1000, 6 * 1024 * 1024)
            .await
            .unwrap();
        assert_eq!((buf.len(), n), (6 * 1024 * 1024, 6 * 1024 * 1024));
        assert!(buf[..] == body[1000..1000 + n]);

        let offset = 1024 * 1024 + 5;
        let (buf, n) = c
            .get_range_bytes(&bucket, "obj", offset as u64, 16 * 1024 * 1024)
            .await
            .unwrap();
        assert_eq!(n, body.len() - offset);
        assert!(buf[..n] == body[offset..]);
        assert!(buf[n..].iter().all(|&b| b == 0));
        assert_eq!(budget.metrics().kept_reuses, 1, "the filler's memory");

        if b.can.refuse_a_range_at_the_end {
            assert!(matches!(
                c.get_range_bytes(&bucket, "obj", body.len() as u64, 10)
                    .await,
                Err(Error::InvalidRange(_))
            ));
        }
    })
    .await;
}

/// A batch reader fills each range of an object exactly, and a range past the end fails alone.
pub async fn batch_reads_fill_each_range_and_report_per_range_errors(b: &Backend) {
    const MIB: usize = 1024 * 1024;
    bounded(Duration::from_secs(180), async {
        let c = b.client();
        let bucket = new_bucket(&c, "batch-ranges").await;
        let body = pattern(4 * MIB, 5);
        c.put(&bucket, "obj", &body).await.unwrap();
        let mut reader = c
            .batch_reader(
                &bucket,
                BatchOptions {
                    queue_depth: 16,
                    ..BatchOptions::default()
                },
            )
            .unwrap();
        let key: std::sync::Arc<str> = "obj".into();
        let ranges: Vec<(u64, usize)> = (0..64u64)
            .map(|i| {
                (
                    (i * 65_537) % (4 * MIB as u64 - 300_000),
                    256 * 1024 - i as usize,
                )
            })
            .collect();
        for (i, (offset, len)) in ranges.iter().enumerate() {
            reader.submit(ReadRequest::new(
                i as u64,
                std::sync::Arc::clone(&key),
                *offset,
                *len,
                Destination::Pooled,
            ));
        }
        // One range past the end: its own error, the others unaffected.
        reader.submit(ReadRequest::new(
            999,
            std::sync::Arc::clone(&key),
            8 * MIB as u64,
            10,
            Destination::Pooled,
        ));
        let mut done = 0;
        while let Some(completion) = reader.next().await {
            if completion.id == 999 {
                assert!(
                    completion.result.is_err(),
                    "a range past the end fails alone"
                );
                continue;
            }
            let (offset, len) = ranges[completion.id as usize];
            let n = completion.result.unwrap();
            assert_eq!(n, len);
            let Some(brisk_client::Filled::Block(block)) = completion.buffer else {
                panic!("a pooled range comes back in its block");
            };
            assert!(block[..n] == body[offset as usize..offset as usize + n]);
            done += 1;
        }
        assert_eq!(done, ranges.len());
    })
    .await;
}

pub async fn errors_are_typed_by_meaning(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "errors").await;
        let err = c.get_bytes(&bucket, "missing").await.unwrap_err();
        let Error::NoSuchKey(service) = &err else {
            panic!("expected NoSuchKey, got {err:?}");
        };
        assert_eq!(service.code, "NoSuchKey");
        assert_eq!(service.status, 404);
        assert!(service.request_id.is_some(), "{service:?}");

        assert!(matches!(
            c.get_bytes("no-such-bucket-anywhere", "k").await,
            Err(Error::NoSuchBucket(_))
        ));
        // Creating a bucket you own again: S3 in us-east-1 answers 200 (a legacy of that region,
        // which brisk serve follows); MinIO answers 409 BucketAlreadyOwnedByYou as S3's other
        // regions do.
        let again = c.create_bucket(&bucket).await;
        if b.can.recreate_own_bucket {
            assert!(again.is_ok(), "{again:?}");
        } else {
            assert!(
                matches!(again, Err(Error::BucketAlreadyExists(_))),
                "{again:?}"
            );
        }

        c.put(&bucket, "exists", b"x").await.unwrap();

        let wrong_secret = b
            .builder()
            .credentials(Credentials::new(support::ACCESS_KEY, "not-the-secret"))
            .build()
            .unwrap();
        let err = wrong_secret.head(&bucket, "exists").await.unwrap_err();
        // HEAD has no body, so only the status (403) is known.
        assert!(matches!(err, Error::AccessDenied(_)), "{err:?}");
        let err = wrong_secret.get_bytes(&bucket, "exists").await.unwrap_err();
        assert!(matches!(err, Error::SignatureDoesNotMatch(_)), "{err:?}");
        assert!(err.to_string().contains("hint"), "{err}");
        // A large body waits for 100 Continue, so the refusal comes before the body is sent.
        let err = wrong_secret
            .put(&bucket, "large", &pattern(2 * 1024 * 1024, 8))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::SignatureDoesNotMatch(_)), "{err:?}");

        let unknown_key = b
            .builder()
            .credentials(Credentials::new("NOSUCHACCESSKEY", "whatever"))
            .build()
            .unwrap();
        let err = unknown_key.get_bytes(&bucket, "exists").await.unwrap_err();
        assert!(matches!(err, Error::AccessDenied(_)), "{err:?}");
        assert_eq!(err.service_error().unwrap().code, "InvalidAccessKeyId");

        let wrong_region = b.builder().region("eu-west-1").build().unwrap();
        let err = wrong_region.get_bytes(&bucket, "exists").await.unwrap_err();
        assert!(matches!(err, Error::WrongRegion(_)), "{err:?}");
        assert!(err.to_string().contains("us-east-1"), "{err}");
    })
    .await;
}

pub async fn conditional_put_refuses_to_overwrite(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "conditional").await;
        let options = PutOptions {
            if_none_match_any: true,
            ..PutOptions::default()
        };
        c.put_with(&bucket, "once", b"first", &options)
            .await
            .unwrap();
        let err = c
            .put_with(&bucket, "once", b"second", &options)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::PreconditionFailed(_)), "{err:?}");
        assert_eq!(&c.get_bytes(&bucket, "once").await.unwrap()[..], b"first");
    })
    .await;
}

/// `TransferOptions::if_none_match_any` on every upload path: a file below and above the part
/// size (from a block when signed, from the file when unsigned), a stream and an `ObjectWriter`
/// ending within the first part (one PUT with `If-None-Match: *`) or past it (the condition on
/// CompleteMultipartUpload); on Azure, Put Blob within a part and Put Block List past it. Each
/// stores a free key, and refuses one that exists with `PreconditionFailed`, leaving the object
/// that was there.
pub async fn conditional_uploads_store_a_free_key_and_refuse_an_existing_one(b: &Backend) {
    use brisk_client::PayloadSigning;
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "create-only").await;
        let dir = tempfile::tempdir().unwrap();
        let part = 5 * 1024 * 1024;
        for (len, parts) in [(1_000usize, 1u32), (part + 1, 2)] {
            let body = pattern(len, 21);
            let path = dir.path().join(format!("source-{len}"));
            std::fs::write(&path, &body).unwrap();
            for signing in [PayloadSigning::Signed, PayloadSigning::Unsigned] {
                let options = TransferOptions {
                    part_size: part,
                    payload_signing: signing,
                    if_none_match_any: true,
                    ..TransferOptions::default()
                };
                for how in ["file", "stream", "writer"] {
                    let key = format!("{how}-{len}-{signing:?}");
                    let upload = async || match how {
                        "file" => c.upload(&bucket, &key, &path, options.clone()).await,
                        "stream" => {
                            let mut reader = &body[..];
                            c.upload_reader(&bucket, &key, &mut reader, options.clone())
                                .await
                        }
                        _ => {
                            let mut w = c.object_writer(&bucket, &key, options.clone()).unwrap();
                            w.write(&body).await.unwrap();
                            w.finish().await
                        }
                    };
                    let stored = upload().await.unwrap();
                    assert_eq!((stored.size, stored.parts), (len as u64, parts), "{key}");
                    assert!(
                        c.get_bytes(&bucket, &key).await.unwrap()[..] == body[..],
                        "{key}"
                    );

                    c.put(&bucket, &key, b"the object that was there")
                        .await
                        .unwrap();
                    let err = upload().await.unwrap_err();
                    assert!(
                        matches!(err, Error::PreconditionFailed(_)),
                        "{key}: {err:?}"
                    );
                    assert_eq!(
                        &c.get_bytes(&bucket, &key).await.unwrap()[..],
                        b"the object that was there",
                        "{key}"
                    );
                }
            }
        }
    })
    .await;
}

pub async fn listing_pages_prefixes_and_odd_keys(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "listing").await;
        let keys = [
            "a/1",
            "a/2",
            "a/sub/3",
            "b/4",
            "plus+and space",
            "unicode-é-ü-日本",
            "percent%20literal",
        ];
        for key in keys {
            c.put(&bucket, key, key.as_bytes()).await.unwrap();
        }
        let mut pages = c.list(
            &bucket,
            ListOptions {
                max_keys: Some(2),
                ..ListOptions::default()
            },
        );
        let mut listed = Vec::new();
        while let Some(page) = pages.next_page().await.unwrap() {
            assert!(page.objects.len() <= 2);
            listed.extend(page.objects.into_iter().map(|o| (o.key, o.size)));
        }
        assert_eq!(pages.pages_fetched(), 4);
        let mut expected: Vec<_> = keys
            .iter()
            .map(|k| (k.to_string(), k.len() as u64))
            .collect();
        expected.sort();
        assert_eq!(listed, expected);

        let mut grouped = c.list(
            &bucket,
            ListOptions {
                prefix: Some("a/".into()),
                delimiter: Some("/".into()),
                ..ListOptions::default()
            },
        );
        let page = grouped.next_page().await.unwrap().unwrap();
        let names: Vec<_> = page.objects.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(names, ["a/1", "a/2"]);
        assert_eq!(page.common_prefixes, ["a/sub/"]);
        assert!(grouped.next_page().await.unwrap().is_none());

        for key in keys {
            assert!(c.get_bytes(&bucket, key).await.unwrap()[..] == *key.as_bytes());
        }
    })
    .await;
}

pub async fn delete_many_in_batches(b: &Backend) {
    bounded(Duration::from_secs(180), async {
        let c = b.client();
        let bucket = new_bucket(&c, "deletemany").await;
        // One more than a batch, so two DeleteObjects requests are needed.
        let keys: Vec<String> = (0..brisk_client::client::DELETE_BATCH + 1)
            .map(|i| format!("k/{i:05}"))
            .collect();
        let mut puts = tokio::task::JoinSet::new();
        for chunk in keys.chunks(keys.len() / 8 + 1) {
            let (c, bucket, chunk) = (c.clone(), bucket.clone(), chunk.to_vec());
            puts.spawn(async move {
                for key in chunk {
                    c.put(&bucket, &key, b"x").await.unwrap();
                }
            });
        }
        while let Some(done) = puts.join_next().await {
            done.unwrap();
        }
        let listed = c
            .list(&bucket, ListOptions::default())
            .collect_objects()
            .await
            .unwrap();
        assert_eq!(listed.len(), keys.len());

        let result = c.delete_many(&bucket, &keys).await.unwrap();
        assert!(result.errors.is_empty(), "{:?}", result.errors);
        let listed = c
            .list(&bucket, ListOptions::default())
            .collect_objects()
            .await
            .unwrap();
        assert!(listed.is_empty());
        c.delete_bucket(&bucket).await.unwrap();
    })
    .await;
}

pub async fn presigned_urls_work_without_credentials(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "presign").await;
        let put_url = c
            .presign_put(&bucket, "via url", Duration::from_secs(300))
            .unwrap();
        let status = http::request("PUT", &put_url, &[], b"presigned body").status;
        assert_eq!(status, 200, "{put_url}");
        let get_url = c
            .presign_get(&bucket, "via url", Duration::from_secs(300))
            .unwrap();
        let http::Response { status, body, .. } = http::request("GET", &get_url, &[], b"");
        assert_eq!(status, 200);
        assert_eq!(body, b"presigned body");
        // Tampering with the URL breaks the signature.
        let status = http::request("GET", &get_url.replace("via%20url", "other"), &[], b"").status;
        assert_eq!(status, 403);
        assert!(matches!(
            c.presign_get(&bucket, "k", Duration::from_secs(8 * 24 * 3600)),
            Err(Error::Signing(_))
        ));
    })
    .await;
}

pub async fn connections_are_reused(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "reuse").await;
        c.put(&bucket, "k", &pattern(10_000, 4)).await.unwrap();
        let before = c.metrics();
        for _ in 0..10 {
            c.get_bytes(&bucket, "k").await.unwrap();
            c.head(&bucket, "k").await.unwrap();
        }
        let after = c.metrics();
        assert_eq!(after.connections_opened, before.connections_opened);
        assert_eq!(after.connections_reused - before.connections_reused, 20);
        assert_eq!(after.requests_sent - before.requests_sent, 20);
        assert_eq!(c.idle_connections(&bucket), 1);
        // An error response with a body is read to its end, so the connection survives it too.
        assert!(c.get_bytes(&bucket, "missing").await.is_err());
        c.head(&bucket, "k").await.unwrap();
        assert_eq!(c.metrics().connections_opened, before.connections_opened);
    })
    .await;
}

pub async fn connections_per_host_are_bounded(b: &Backend) {
    bounded(STEP, async {
        let c = b.builder().max_connections_per_host(2).build().unwrap();
        let bucket = new_bucket(&c, "bound").await;
        c.put(&bucket, "k", &pattern(500_000, 5)).await.unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..12 {
            let (c, bucket) = (c.clone(), bucket.clone());
            tasks.spawn(async move { c.get_bytes(&bucket, "k").await.map(|b| b.len()) });
        }
        while let Some(result) = tasks.join_next().await {
            assert_eq!(result.unwrap().unwrap(), 500_000);
        }
        let m = c.metrics();
        assert!(m.connections_opened <= 2, "{m:?}");
        assert_eq!(m.connections_opened + m.connections_reused, m.requests_sent);
    })
    .await;
}

pub async fn memory_budget_pays_for_get_bytes(b: &Backend) {
    bounded(STEP, async {
        let budget = brisk_mem::MemoryBudget::new(1 << 20);
        let c = b.builder().memory_budget(budget.clone()).build().unwrap();
        let bucket = new_bucket(&c, "budget").await;
        c.put(&bucket, "fits", &pattern(600_000, 6)).await.unwrap();
        c.put(&bucket, "too-big", &pattern(2 << 20, 7))
            .await
            .unwrap();
        let held = c.get_bytes(&bucket, "fits").await.unwrap();
        assert_eq!(budget.reserved(), 600_000);
        let err = c.get_bytes(&bucket, "too-big").await.unwrap_err();
        assert!(matches!(err, Error::Memory(_)), "{err:?}");
        drop(held);
        assert_eq!(budget.reserved(), 0);
    })
    .await;
}

/// Every upload checksum the client offers, as a single PUT and as a multipart upload; each object
/// then reads back through the verifying GETs.
pub async fn every_upload_checksum_is_accepted_and_reads_back(b: &Backend) {
    use brisk_client::{PayloadSigning, TransferOptions, UploadChecksum};
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "checksums").await;
        let body = pattern(200_000, 7);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("eleven-mib");
        let large = pattern(11 * 1024 * 1024 + 17, 8);
        std::fs::write(&file, &large).unwrap();
        for choice in [
            UploadChecksum::Crc32c,
            UploadChecksum::Crc64Nvme,
            UploadChecksum::Sha256,
        ] {
            let key = format!("single-{choice:?}");
            let options = PutOptions {
                checksum: choice,
                ..PutOptions::default()
            };
            let put = c.put_with(&bucket, &key, &body, &options).await.unwrap();
            assert_eq!(put.checksum_algorithm, choice);
            assert_eq!(
                put.checksum,
                Checksummer::checksum(choice.algorithm(), &body).to_base64()
            );
            assert!(c.get_bytes(&bucket, &key).await.unwrap()[..] == body[..]);

            // Signed parts carry the checksum in a header; unsigned ones are sent aws-chunked
            // (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`) with the checksum as a trailer.
            for signing in [PayloadSigning::Signed, PayloadSigning::Unsigned] {
                let key = format!("multipart-{choice:?}-{signing:?}");
                let options = TransferOptions {
                    part_size: 5 * 1024 * 1024,
                    checksum: choice,
                    payload_signing: signing,
                    ..TransferOptions::default()
                };
                let uploaded = c.upload(&bucket, &key, &file, options).await.unwrap();
                assert_eq!(uploaded.parts, 3, "{choice:?} {signing:?}");
                let got = c.get_bytes(&bucket, &key).await.unwrap();
                assert!(got[..] == large[..], "{choice:?} {signing:?}");
            }
        }
    })
    .await;
}

/// A checksum that does not match the body is refused by the server, not stored.
pub async fn the_server_refuses_a_body_that_does_not_match_its_checksum(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "baddigest").await;
        // The checksum travels in a header computed from the slice; damaging the slice after
        // computing it needs the presigned path, which sends exactly what it is given.
        let url = c
            .presign_put(&bucket, "damaged", Duration::from_secs(60))
            .unwrap();
        let good = Checksummer::checksum(ChecksumAlgorithm::Crc32c, b"hello").to_base64();
        let status =
            http::request("PUT", &url, &[("x-amz-checksum-crc32c", &good)], b"hellO").status;
        assert_eq!(status / 100, 4, "a damaged body is refused (got {status})");
        assert!(matches!(
            c.head(&bucket, "damaged").await,
            Err(Error::NoSuchKey(_))
        ));
    })
    .await;
}

/// `get_stream` reassembles objects whatever the caller's buffer size, and ends cleanly on empty ones.
pub async fn streamed_reads_reassemble_the_object(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "stream").await;
        let body = pattern(3 * 1024 * 1024 + 5, 9);
        c.put(&bucket, "s", &body).await.unwrap();
        for buffer in [1000usize, 64 * 1024, 1024 * 1024] {
            let mut stream = c.get_stream(&bucket, "s").await.unwrap();
            assert_eq!(stream.content_length(), body.len() as u64);
            let mut got = Vec::with_capacity(body.len());
            let mut buf = vec![0u8; buffer];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert!(got == body, "buffer of {buffer} bytes");
            assert_eq!(stream.received(), body.len() as u64);
        }
        c.put(&bucket, "empty", b"").await.unwrap();
        let mut stream = c.get_stream(&bucket, "empty").await.unwrap();
        assert_eq!(stream.read(&mut [0u8; 16]).await.unwrap(), 0);
        assert!(matches!(
            c.get_stream(&bucket, "missing").await,
            Err(Error::NoSuchKey(_))
        ));
        // From an offset: the rest of the object, byte for byte; at the end, InvalidRange.
        for offset in [1u64, 1000, body.len() as u64 - 1] {
            let mut stream = c.get_stream_from(&bucket, "s", offset).await.unwrap();
            assert_eq!(stream.content_length(), body.len() as u64 - offset);
            let mut got = Vec::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert!(got[..] == body[offset as usize..], "from {offset}");
        }
        if b.can.refuse_a_range_at_the_end {
            assert!(matches!(
                c.get_stream_from(&bucket, "s", body.len() as u64).await,
                Err(Error::InvalidRange(_))
            ));
        }
        // Every stream gave its connection back.
        assert!(c.metrics().connections_opened <= 2, "{:?}", c.metrics());
    })
    .await;
}

/// `upload_reader` and `upload_from_read` (a blocking reader, read on the blocking pool): a stream
/// that ends within the first part is one PUT; a longer one is a multipart upload whose last part
/// is the rest.
pub async fn uploads_from_a_reader_of_unknown_length(b: &Backend) {
    use brisk_client::{TransferOptions, TransferProgress};
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "reader").await;
        let sent = TransferProgress::new();
        let options = TransferOptions {
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 2,
            progress: Some(sent.clone()),
            ..TransferOptions::default()
        };
        let mut total = 0u64;
        for (len, parts) in [(0usize, 1u32), (1_000, 1), (12 * 1024 * 1024 + 3, 3)] {
            for blocking in [false, true] {
                let body = pattern(len, 11);
                let key = format!("r{len}-{blocking}");
                let result = if blocking {
                    let reader = std::io::Cursor::new(body.clone());
                    c.upload_from_read(&bucket, &key, reader, options.clone())
                        .await
                } else {
                    let mut reader = &body[..];
                    c.upload_reader(&bucket, &key, &mut reader, options.clone())
                        .await
                }
                .unwrap();
                assert_eq!((result.size, result.parts), (len as u64, parts));
                assert_eq!(sent.bytes(), total + len as u64, "counted once, as sent");
                total += len as u64;
                assert!(c.get_bytes(&bucket, &key).await.unwrap()[..] == body[..]);
            }
        }
    })
    .await;
}

/// `ObjectWriter`: writes of any size (one byte, a few, more than a part at once) make an object
/// of exactly those bytes; one that ends within the first part is one PUT, a longer one a
/// multipart upload. Reading straight into `spare` makes the same object.
pub async fn an_object_writer_stores_what_was_written(b: &Backend) {
    use brisk_client::{TransferOptions, TransferProgress};
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "writer").await;
        let sent = TransferProgress::new();
        let options = TransferOptions {
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 2,
            progress: Some(sent.clone()),
            ..TransferOptions::default()
        };
        let part = 5 * 1024 * 1024;
        let mut total = 0u64;
        for (len, parts) in [
            (0usize, 1u32),
            (1_000, 1),
            (part, 1),
            (part + 1, 2),
            (12 * 1024 * 1024 + 3, 3),
        ] {
            let body = pattern(len, 13);
            let key = format!("w{len}");
            let mut w = c.object_writer(&bucket, &key, options.clone()).unwrap();
            // Writes of 1, 7, 1 MiB + 3, then the rest at once.
            let mut at = 0;
            for step in [1, 7, 1024 * 1024 + 3, usize::MAX] {
                let n = step.min(len - at);
                w.write(&body[at..at + n]).await.unwrap();
                at += n;
            }
            assert_eq!(w.written(), len as u64);
            let result = w.finish().await.unwrap();
            assert_eq!((result.size, result.parts), (len as u64, parts), "{key}");
            assert_eq!(sent.bytes(), total + len as u64, "counted once, as sent");
            total += len as u64;
            assert!(
                c.get_bytes(&bucket, &key).await.unwrap()[..] == body[..],
                "{key}"
            );

            // The same bytes read straight into the parts.
            let mut w = c.object_writer(&bucket, &key, options.clone()).unwrap();
            let mut rest = &body[..];
            while !rest.is_empty() {
                let spare = w.spare().await.unwrap();
                let n = spare.len().min(rest.len()).min(300_000);
                spare[..n].copy_from_slice(&rest[..n]);
                w.advance(n);
                rest = &rest[n..];
            }
            let result = w.finish().await.unwrap();
            assert_eq!(
                (result.size, result.parts),
                (len as u64, parts),
                "{key} by spare"
            );
            total += len as u64;
            assert!(
                c.get_bytes(&bucket, &key).await.unwrap()[..] == body[..],
                "{key} by spare"
            );
        }
    })
    .await;
}

/// `TransferOptions::content_type` and `headers` are stored with the object on every upload path:
/// a file sent in one PUT (from a block when signed, from the file aws-chunked when unsigned, where
/// `Content-Encoding` joins `aws-chunked`) or in parts, a stream, and an `ObjectWriter`, whether
/// they end within a part or not; HEAD gives them back.
pub async fn uploads_store_the_content_type_asked_for(b: &Backend) {
    use brisk_client::{ObjectHeaders, PayloadSigning, TransferOptions};
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "ctype").await;
        let dir = tempfile::tempdir().unwrap();
        let kind = "text/html; charset=utf-8";
        let headers = ObjectHeaders {
            cache_control: Some("max-age=60".into()),
            content_disposition: Some("attachment; filename=\"a.html\"".into()),
            content_encoding: Some("gzip".into()),
            content_language: Some("en".into()),
            expires: Some("Wed, 21 Oct 2037 07:28:00 GMT".into()),
            metadata: vec![("origin".into(), "test".into())],
        };
        for len in [1_000usize, 11 * 1024 * 1024] {
            let (path, body) = pattern_file(dir.path(), len, 3);
            for signing in [PayloadSigning::Signed, PayloadSigning::Unsigned] {
                let options = TransferOptions {
                    part_size: 5 * 1024 * 1024,
                    payload_signing: signing,
                    content_type: Some(kind.to_owned()),
                    headers: headers.clone(),
                    ..TransferOptions::default()
                };
                let key = format!("file-{len}-{signing:?}");
                c.upload(&bucket, &key, &path, options.clone())
                    .await
                    .unwrap();
                let key2 = format!("stream-{len}-{signing:?}");
                let mut reader = &body[..];
                c.upload_reader(&bucket, &key2, &mut reader, options.clone())
                    .await
                    .unwrap();
                let key3 = format!("writer-{len}-{signing:?}");
                let mut w = c.object_writer(&bucket, &key3, options).unwrap();
                w.write(&body).await.unwrap();
                w.finish().await.unwrap();
                for key in [key, key2, key3] {
                    let meta = c.head(&bucket, &key).await.unwrap();
                    assert_eq!(meta.content_type.as_deref(), Some(kind), "{key}");
                    assert_eq!(meta.content_length, len as u64, "{key}");
                    let stored = ObjectHeaders {
                        metadata: Vec::new(),
                        expires: headers.expires.clone().filter(|_| b.can.store_expires),
                        ..headers.clone()
                    };
                    assert_eq!(meta.headers, stored, "{key}");
                    assert_eq!(meta.metadata, headers.metadata, "{key}");
                }
            }
        }
    })
    .await;
}

/// An `ObjectWriter` given up with `abort`, or whose write was cancelled part way, stores nothing:
/// not the parts already sent, not a truncated object.
pub async fn an_object_writer_that_gives_up_stores_nothing(b: &Backend) {
    use brisk_client::TransferOptions;
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "writer-abort").await;
        let options = TransferOptions {
            part_size: 5 * 1024 * 1024,
            ..TransferOptions::default()
        };
        let body = pattern(11 * 1024 * 1024, 2);

        let mut w = c
            .object_writer(&bucket, "aborted", options.clone())
            .unwrap();
        w.write(&body).await.unwrap();
        w.abort().await.unwrap();
        assert!(matches!(
            c.head(&bucket, "aborted").await,
            Err(Error::NoSuchKey(_))
        ));

        // A write that has to start the multipart upload is pending on its first poll; dropping it
        // there loses what it held, so everything after it fails and nothing is stored.
        let mut w = c
            .object_writer(&bucket, "cancelled", options.clone())
            .unwrap();
        let cancelled = tokio::select! {
            biased;
            _ = w.write(&body) => false,
            () = std::future::ready(()) => true,
        };
        assert!(cancelled, "the write waits on the network");
        let again = w.write(b"more").await.unwrap_err();
        assert!(again.to_string().contains("cancelled"), "{again}");
        assert!(w.finish().await.is_err());
        assert!(matches!(
            c.head(&bucket, "cancelled").await,
            Err(Error::NoSuchKey(_))
        ));
    })
    .await;
}

/// `read_ahead`: parallel ranges handed out in order make the object byte for byte; an object
/// replaced during the read is `ObjectChanged`; a byte damaged on the way fails the stored
/// checksum at the end.
pub async fn read_ahead_hands_out_the_object_in_order(b: &Backend) {
    use brisk_client::TransferOptions;
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "readahead").await;
        let options = TransferOptions {
            part_size: 1024 * 1024,
            parts_in_flight: 3,
            ..TransferOptions::default()
        };
        for len in [0usize, 1000, 7 * 1024 * 1024 + 11] {
            let body = pattern(len, 5);
            c.put(&bucket, "r", &body).await.unwrap();
            let mut reader = c.read_ahead(&bucket, "r", &options).await.unwrap();
            assert_eq!(reader.content_length(), len as u64);
            let mut got = Vec::new();
            while let Some((block, n)) = reader.next_block().await.unwrap() {
                got.extend_from_slice(&block[..n]);
            }
            assert!(got == body, "{len} bytes");
        }

        // Replaced after the first block: the ranges still to start are refused.
        let body = pattern(7 * 1024 * 1024, 6);
        c.put(&bucket, "changing", &body).await.unwrap();
        let one = TransferOptions {
            parts_in_flight: 1,
            ..options.clone()
        };
        let mut reader = c.read_ahead(&bucket, "changing", &one).await.unwrap();
        reader.next_block().await.unwrap().unwrap();
        c.put(&bucket, "changing", &pattern(7 * 1024 * 1024, 7))
            .await
            .unwrap();
        let mut failed = None;
        for _ in 0..8 {
            match reader.next_block().await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        assert!(
            matches!(failed, Some(Error::ObjectChanged { .. })),
            "{failed:?}"
        );

        // Every response damaged at its byte 100: the stored CRC32C does not match at the end.
        let proxy = FaultProxy::start(b.port, Fault::Flip { at: 100 }, Schedule::EveryNth(1)).await;
        let through = b.through(&proxy).build().unwrap();
        c.put(&bucket, "damaged", &body).await.unwrap();
        let mut reader = through
            .read_ahead(&bucket, "damaged", &options)
            .await
            .unwrap();
        let end = loop {
            match reader.next_block().await {
                Ok(Some(_)) => {}
                other => break other,
            }
        };
        assert!(
            matches!(end, Err(Error::ChecksumMismatch { .. })),
            "{end:?}"
        );
    })
    .await;
}

/// `upload_object_stream`: an object read with `get_stream` is uploaded part by part from the
/// source's connection (here one server to itself, as between two services), byte for byte.
pub async fn an_object_stream_uploads_as_a_copy(b: &Backend) {
    use brisk_client::TransferOptions;
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "restream").await;
        let body = pattern(11 * 1024 * 1024 + 5, 4);
        c.put(&bucket, "source", &body).await.unwrap();
        let source = c.get_stream(&bucket, "source").await.unwrap();
        let options = TransferOptions {
            part_size: 5 * 1024 * 1024,
            ..TransferOptions::default()
        };
        let copied = c
            .upload_object_stream(&bucket, "copy", source, options)
            .await
            .unwrap();
        assert_eq!((copied.size, copied.parts), (body.len() as u64, 3));
        assert!(c.get_bytes(&bucket, "copy").await.unwrap()[..] == body[..]);
    })
    .await;
}

pub async fn list_buckets_sees_a_created_bucket(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let bucket = new_bucket(&c, "listed").await;
        let buckets = c.list_buckets().await.unwrap();
        let found = buckets
            .iter()
            .find(|b| b.name == bucket)
            .unwrap_or_else(|| panic!("{bucket} not in {buckets:?}"));
        let age = time::OffsetDateTime::now_utc() - found.creation_date;
        assert!(
            age < time::Duration::minutes(10) && age > -time::Duration::minutes(10),
            "creation date {} is not about now",
            found.creation_date
        );
        c.delete_bucket(&bucket).await.unwrap();
        assert!(
            !c.list_buckets()
                .await
                .unwrap()
                .iter()
                .any(|b| b.name == bucket)
        );
    })
    .await;
}

pub async fn copy_object_keeps_or_replaces_metadata(b: &Backend) {
    bounded(STEP, async {
        let c = b.client();
        let src_bucket = new_bucket(&c, "copy-src").await;
        let dst_bucket = new_bucket(&c, "copy-dst").await;
        let body = pattern(100_000, 9);
        let options = PutOptions {
            content_type: Some("text/x-original".into()),
            ..PutOptions::default()
        };
        c.put_with(&src_bucket, "from key", &body, &options)
            .await
            .unwrap();

        let kept = c
            .copy_object(
                &src_bucket,
                "from key",
                &dst_bucket,
                "kept/é",
                CopyOptions::default(),
            )
            .await
            .unwrap();
        assert!(kept.etag.starts_with('"'), "{kept:?}");
        let meta = c.head(&dst_bucket, "kept/é").await.unwrap();
        assert_eq!(meta.etag.as_deref(), Some(kept.etag.as_str()));
        assert_eq!(meta.content_type.as_deref(), Some("text/x-original"));
        assert!(c.get_bytes(&dst_bucket, "kept/é").await.unwrap()[..] == body[..]);

        let replaced = c
            .copy_object(
                &src_bucket,
                "from key",
                &src_bucket,
                "replaced",
                CopyOptions {
                    metadata_directive: MetadataDirective::Replace,
                    content_type: Some("application/x-replaced".into()),
                    metadata: vec![("Colour".into(), "blue".into())],
                    ..CopyOptions::default()
                },
            )
            .await
            .unwrap();
        let meta = c.head(&src_bucket, "replaced").await.unwrap();
        assert_eq!(meta.etag.as_deref(), Some(replaced.etag.as_str()));
        assert_eq!(meta.content_type.as_deref(), Some("application/x-replaced"));
        assert!(c.get_bytes(&src_bucket, "replaced").await.unwrap()[..] == body[..]);

        // Metadata without REPLACE is refused before anything is sent.
        assert!(matches!(
            c.copy_object(
                &src_bucket,
                "from key",
                &src_bucket,
                "x",
                CopyOptions {
                    content_type: Some("a/b".into()),
                    ..CopyOptions::default()
                },
            )
            .await,
            Err(Error::InvalidArgument { .. })
        ));
        let missing = c
            .copy_object(
                &src_bucket,
                "missing",
                &dst_bucket,
                "x",
                CopyOptions::default(),
            )
            .await
            .unwrap_err();
        assert!(matches!(missing, Error::NoSuchKey(_)), "{missing:?}");

        // Above the threshold (5 GiB by default, 5 MiB here) the copy is made of UploadPartCopy
        // ranges, and the source's content type and user metadata come along.
        let in_parts = CopyOptions {
            multipart_threshold: 5 * 1024 * 1024,
            part_size: 5 * 1024 * 1024,
            parts_in_flight: 2,
            ..CopyOptions::default()
        };
        let large = pattern(12 * 1024 * 1024 + 7, 23);
        c.put_with(
            &src_bucket,
            "large",
            &large,
            &brisk_client::PutOptions {
                content_type: Some("application/x-large".into()),
                headers: brisk_client::ObjectHeaders {
                    cache_control: Some("max-age=60".into()),
                    content_disposition: Some("attachment; filename=large.bin".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
        // Copied in parts with the metadata kept, the standard headers come along too, as one
        // CopyObject keeps them.
        c.copy_object(
            &src_bucket,
            "large",
            &dst_bucket,
            "large kept",
            in_parts.clone(),
        )
        .await
        .unwrap();
        let kept = c.head(&dst_bucket, "large kept").await.unwrap();
        assert_eq!(kept.content_type.as_deref(), Some("application/x-large"));
        assert_eq!(kept.headers.cache_control.as_deref(), Some("max-age=60"));
        assert_eq!(
            kept.headers.content_disposition.as_deref(),
            Some("attachment; filename=large.bin")
        );
        c.copy_object(
            &src_bucket,
            "large",
            &src_bucket,
            "large-with-meta",
            CopyOptions {
                metadata_directive: MetadataDirective::Replace,
                content_type: Some("application/x-large".into()),
                metadata: vec![("origin".into(), "conformance".into())],
                ..CopyOptions::default()
            },
        )
        .await
        .unwrap();
        let copied = c
            .copy_object(
                &src_bucket,
                "large-with-meta",
                &dst_bucket,
                "large copy",
                in_parts.clone(),
            )
            .await
            .unwrap();
        assert!(copied.etag.ends_with("-3\""), "three parts: {copied:?}");
        let meta = c.head(&dst_bucket, "large copy").await.unwrap();
        assert_eq!(meta.etag.as_deref(), Some(copied.etag.as_str()));
        assert_eq!(meta.content_length, large.len() as u64);
        assert_eq!(meta.content_type.as_deref(), Some("application/x-large"));
        assert_eq!(
            meta.metadata,
            [("origin".to_owned(), "conformance".to_owned())]
        );
        assert!(c.get_bytes(&dst_bucket, "large copy").await.unwrap()[..] == large[..]);
        // Replacing the metadata works in parts too.
        c.copy_object(
            &src_bucket,
            "large",
            &dst_bucket,
            "large replaced",
            CopyOptions {
                metadata_directive: MetadataDirective::Replace,
                content_type: Some("text/x-new".into()),
                metadata: vec![("k".into(), "v".into())],
                ..in_parts.clone()
            },
        )
        .await
        .unwrap();
        let meta = c.head(&dst_bucket, "large replaced").await.unwrap();
        assert_eq!(meta.content_type.as_deref(), Some("text/x-new"));
        assert_eq!(meta.metadata, [("k".to_owned(), "v".to_owned())]);
        assert!(c.get_bytes(&dst_bucket, "large replaced").await.unwrap()[..] == large[..]);

        // A caller that knows the size (from a listing) saves the HEAD: one request per copy.
        let c2 = b.client();
        let before = c2.metrics().requests_sent;
        c2.copy_object(
            &src_bucket,
            "from key",
            &dst_bucket,
            "known size",
            CopyOptions {
                source_size: Some(body.len() as u64),
                ..CopyOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(c2.metrics().requests_sent - before, 1, "CopyObject alone");
        assert!(c.get_bytes(&dst_bucket, "known size").await.unwrap()[..] == body[..]);
    })
    .await;
}

/// An anonymous client sends no `Authorization`: an anonymous `brisk serve` serves it, and a server
/// that authenticates refuses it as anonymous (`AccessDenied`), not as a bad signature.
pub async fn anonymous_client_sends_unsigned_requests(b: &Backend) {
    bounded(STEP, async {
        let signed = b.client();
        let bucket = new_bucket(&signed, "anon-refused").await;
        signed.put(&bucket, "private", b"secret").await.unwrap();
        let anonymous = b.builder().anonymous(true).build().unwrap();
        let refused = anonymous.get_bytes(&bucket, "private").await.unwrap_err();
        assert!(
            matches!(refused, Error::AccessDenied(_)),
            "{} refused an unsigned GET with {refused:?}",
            b.name
        );

        let open = brisk_client::Client::builder()
            .endpoint(anonymous_brisk_server().endpoint.clone())
            .region("us-east-1")
            .anonymous(true)
            .build()
            .unwrap();
        let bucket = new_bucket(&open, "anon").await;
        let body = pattern(3 * 1024 * 1024 + 5, 4);
        open.put(&bucket, "big", &body).await.unwrap();
        open.put(&bucket, "small", b"hello").await.unwrap();
        assert!(open.get_bytes(&bucket, "big").await.unwrap()[..] == body[..]);
        assert_eq!(
            &open.get_bytes(&bucket, "small").await.unwrap()[..],
            b"hello"
        );
        let page = open
            .list(&bucket, ListOptions::default())
            .next_page()
            .await
            .unwrap()
            .unwrap();
        let keys: Vec<&str> = page.objects.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["big", "small"]);
        assert!(
            open.list_buckets()
                .await
                .unwrap()
                .iter()
                .any(|b| b.name == bucket)
        );
        assert!(matches!(
            open.presign_get(&bucket, "small", Duration::from_secs(60)),
            Err(Error::InvalidArgument { .. })
        ));
    })
    .await;
}

/// Virtual-hosted addressing (`http://bucket.localhost:PORT/key`) against the server itself: the
/// client connects to the loopback address for `*.localhost` (RFC 6761) and the server finds the
/// bucket in the `Host` header (MinIO with `MINIO_DOMAIN=localhost`, `brisk serve` with its default
/// base domain). Bucket names that are not DNS labels fall back to path style.
pub async fn virtual_hosted_addressing_reaches_the_bucket_through_the_host(b: &Backend) {
    bounded(STEP, async {
        let port = b.port;
        let c = b
            .builder()
            .endpoint(format!("http://localhost:{port}"))
            .addressing(brisk_client::Addressing::VirtualHosted)
            .build()
            .unwrap();
        let bucket = new_bucket(&c, "vhost").await;
        let body = pattern(70_000, 5);
        c.put(&bucket, "dir/key one", &body).await.unwrap();
        assert!(c.get_bytes(&bucket, "dir/key one").await.unwrap()[..] == body[..]);
        assert_eq!(
            c.head(&bucket, "dir/key one").await.unwrap().content_length,
            70_000
        );
        // The same object is there for a path-style client: one bucket, two ways to address it.
        assert!(b.client().get_bytes(&bucket, "dir/key one").await.unwrap()[..] == body[..]);
        let page = c
            .list(&bucket, ListOptions::default())
            .next_page()
            .await
            .unwrap()
            .expect("one page");
        assert_eq!(page.objects.len(), 1);
        assert_eq!(page.objects[0].key, "dir/key one");
        c.delete(&bucket, "dir/key one").await.unwrap();
        c.delete_bucket(&bucket).await.unwrap();
    })
    .await;
}

/// Multipart uploads store a full-object CRC32C, and a parallel download checks the bytes it
/// assembled against it: a response damaged once (one flipped byte, right length and framing) is
/// downloaded again and the file is exact; damaged every time, the download fails with
/// `ChecksumMismatch` and leaves no file, temporary or not.
pub async fn downloads_are_checked_against_the_full_object_checksum(b: &Backend) {
    const MIB: usize = 1024 * 1024;
    bounded(STEP, async {
        let c = b.client();
        let object = uploaded_object(&c, "verified", 20 * MIB + 5, 3).await;
        let (bucket, body, target) = (&object.bucket, &object.body, &object.target);
        assert_eq!(object.parts, 3);
        let whole = Checksummer::checksum(ChecksumAlgorithm::Crc32c, body).to_base64();
        let meta = c.head(bucket, "obj").await.unwrap();
        assert_eq!(
            meta.checksum_crc32c.as_deref(),
            Some(whole.as_str()),
            "the multipart object's checksum is the CRC32C of its whole bytes"
        );

        // Inside the body of the first part each connection carries (parts are 8 MiB).
        let at = 3 * MIB as u64 + 17;
        let (err, always) =
            damaged_once_then_always(b, &object, at, TransferOptions::default, 2).await;
        assert!(
            matches!(&err, Error::ChecksumMismatch { algorithm, expected, .. }
                if *algorithm == "CRC32C" && *expected == whole),
            "{err:?}"
        );

        // Once the damage stops, a download through the same proxy is exact.
        always.stop();
        let fresh = b.through(&always).build().unwrap();
        fresh
            .download(bucket, "obj", target, TransferOptions::default())
            .await
            .unwrap();
        assert!(std::fs::read(target).unwrap() == *body);
    })
    .await;
}

/// A download told the object's size (as `cp --recursive` is, by the listing) fetches an object of
/// one part with one GET and no HEAD, checks it as a streamed download does (damaged once: read
/// again and exact; damaged every time: `ChecksumMismatch` and no file), and writes what the GET
/// returned even when the size it was told is wrong.
pub async fn a_small_download_of_known_size_is_one_checked_get(b: &Backend) {
    const MIB: usize = 1024 * 1024;
    bounded(STEP, async {
        let c = b.client();
        let object = uploaded_object(&c, "one-get", 3 * MIB + 11, 5).await;
        let (bucket, body, target) = (&object.bucket, &object.body, &object.target);
        let known = |size: usize| TransferOptions {
            known_size: Some(size as u64),
            ..TransferOptions::default()
        };

        let before = c.metrics();
        let size = c
            .download(bucket, "obj", target, known(body.len()))
            .await
            .unwrap();
        let after = c.metrics();
        assert_eq!(size, body.len() as u64);
        assert_eq!(
            after.requests_sent - before.requests_sent,
            1,
            "one GET, no HEAD"
        );
        assert!(std::fs::read(target).unwrap() == *body);
        std::fs::remove_file(target).unwrap();

        // A size that is no longer true (the object grew after the listing) only picked the path:
        // within one part the file holds what the GET returned; past one part the GET is dropped
        // unread and the object is streamed in ranges.
        c.download(bucket, "obj", target, known(10)).await.unwrap();
        assert!(std::fs::read(target).unwrap() == *body);
        std::fs::remove_file(target).unwrap();
        let one_mib_parts = TransferOptions {
            part_size: MIB,
            ..known(10)
        };
        let before = c.metrics();
        c.download(bucket, "obj", target, one_mib_parts)
            .await
            .unwrap();
        let after = c.metrics();
        assert!(std::fs::read(target).unwrap() == *body);
        assert_eq!(
            after.requests_sent - before.requests_sent,
            6,
            "the whole GET (dropped), then a HEAD and a ranged GET per part (3 MiB and 11 bytes: 4)"
        );
        std::fs::remove_file(target).unwrap();

        let at = MIB as u64 + 17;
        let known_size = || known(body.len());
        let (err, always) = damaged_once_then_always(b, &object, at, known_size, 2).await;
        assert!(matches!(&err, Error::ChecksumMismatch { .. }), "{err:?}");
        assert_eq!(always.applied(), 2, "two attempts, no more");
    })
    .await;
}

/// Every read path ends with the exact bytes or a clear error, never wrong bytes and never a partial
/// file, whatever the network does: resets in the middle of bodies (once, or on every second
/// response), a storm of `503 SlowDown`, a stalled body, and each of those without end.
pub async fn reads_through_a_faulty_network_are_exact_or_fail_clearly(b: &Backend) {
    const MIB: usize = 1024 * 1024;
    bounded(Duration::from_secs(240), async {
        let c = b.client();
        let Uploaded {
            bucket,
            body,
            out,
            target,
            _dir,
            ..
        } = uploaded_object(&c, "faults", 20 * MIB + 5, 4).await;
        let at = 3 * MIB as u64 + 17;
        let port = b.port;
        // A read timeout well under the stalls, so a stalled body is noticed and read again, and
        // well above what a loaded 2-core machine takes to answer (800 ms was hit under load).
        let through = |proxy: &FaultProxy| {
            b.through(proxy)
                .read_timeout(Duration::from_secs(2))
                .build()
                .unwrap()
        };

        // Faults the client rides out: every read path returns the exact bytes.
        let recoverable = [
            ("reset once", Fault::ResetAt { at }, Schedule::First(1)),
            (
                "reset on every 2nd response",
                Fault::ResetAt { at },
                Schedule::EveryNth(2),
            ),
            ("two 503 SlowDown", Fault::SlowDown, Schedule::First(2)),
            (
                "a 5 s stall once",
                Fault::Stall {
                    at,
                    pause: Duration::from_secs(5),
                },
                Schedule::First(1),
            ),
        ];
        for (what, fault, schedule) in recoverable {
            for read in ["download", "get_bytes", "get_into"] {
                // `download` reads parts through the batch engine; the others read one stream.
                let schedule = match read {
                    "download" => schedule.for_parallel_parts(),
                    _ => schedule,
                };
                let proxy = FaultProxy::start(port, fault, schedule).await;
                let client = through(&proxy);
                match read {
                    "download" => {
                        let size = client
                            .download(&bucket, "obj", &target, TransferOptions::default())
                            .await
                            .unwrap_or_else(|e| panic!("{what}, {read}: {e}"));
                        assert_eq!(size, body.len() as u64);
                        assert!(std::fs::read(&target).unwrap() == body, "{what}, {read}");
                        std::fs::remove_file(&target).unwrap();
                    }
                    "get_bytes" => {
                        let got = client
                            .get_bytes(&bucket, "obj")
                            .await
                            .unwrap_or_else(|e| panic!("{what}, {read}: {e}"));
                        assert!(got[..] == body[..], "{what}, {read}");
                    }
                    _ => {
                        let mut dst = vec![0u8; body.len()];
                        let n = client
                            .get_into(&bucket, "obj", &mut dst)
                            .await
                            .unwrap_or_else(|e| panic!("{what}, {read}: {e}"));
                        assert_eq!(n, body.len());
                        assert!(dst == body, "{what}, {read}");
                    }
                }
                assert!(proxy.applied() >= 1, "{what}, {read}: the fault happened");
            }
        }

        // Faults without end: a clear error, and no file of any kind left by `download`. They strike
        // a few bytes into every body: a read resumed from where it failed (a download streams each
        // range and resumes it mid-body) must make no progress either, or it rides them out.
        let at = 17;
        let endless = [
            (
                "reset on every response",
                Fault::ResetAt { at },
                Schedule::EveryNth(1),
            ),
            (
                "503 SlowDown on every connection",
                Fault::SlowDown,
                Schedule::EveryNth(1),
            ),
            (
                "every body stalls",
                Fault::Stall {
                    at,
                    pause: Duration::from_secs(4),
                },
                Schedule::EveryNth(1),
            ),
        ];
        for (what, fault, schedule) in endless {
            let proxy = FaultProxy::start(port, fault, schedule).await;
            let client = through(&proxy);
            let err = client
                .download(&bucket, "obj", &target, TransferOptions::default())
                .await
                .expect_err(what);
            let text = err.to_string();
            match fault {
                // The first request of a download is a HEAD, whose 503 has no body to name the code.
                Fault::SlowDown => assert!(
                    matches!(&err, Error::Throttled(e) if e.status == 503),
                    "{what}: {err:?}"
                ),
                _ => assert!(err.is_retryable(), "{what}: a network error, not {err:?}"),
            }
            assert!(!text.is_empty());
            assert_eq!(
                std::fs::read_dir(&out).unwrap().count(),
                0,
                "{what}: no file left"
            );
            let err = client.get_bytes(&bucket, "obj").await.expect_err(what);
            assert!(err.is_retryable(), "{what}: {err:?}");
        }
    })
    .await;
}
