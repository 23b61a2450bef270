//! The Azure Blob dialect against Azurite, Microsoft's emulator: every operation of the client's
//! public API, the engine's guarantees (exact-size reads, bounded parts, resumed reads pinned to
//! the ETag, per-range errors in batches, verified downloads), and errors by meaning.

use std::time::{Duration, SystemTime};

use brisk_client::{
    AzureSettings, BatchOptions, Client, Destination, Error, ListOptions, PutOptions, ReadRequest,
    TransferOptions, TransferProgress,
};
use brisk_testkit::azurite;
use brisk_testkit::fault_proxy::{Fault, FaultProxy, Schedule};
use brisk_testkit::http;

use crate::support::{
    azure_builder, azure_client, azure_client_through, azurite, bounded, new_bucket, pattern,
    pattern_file,
};

const MIB: usize = 1024 * 1024;
const STEP: Duration = Duration::from_secs(180);

#[tokio::test]
async fn put_get_head_and_errors_by_meaning() {
    bounded(STEP, async {
        let c = azure_client();
        assert!(c.is_azure());
        let container = new_bucket(&c, "az-basics").await;
        let body = pattern(300_001, 3);
        let key = "dir/ünï code & spaces+plus.bin";
        let put = c
            .put_with(
                &container,
                key,
                &body,
                &PutOptions {
                    content_type: Some("application/x-test".into()),
                    ..PutOptions::default()
                },
            )
            .await
            .unwrap();
        assert!(put.etag.is_some());

        let got = c.get_bytes(&container, key).await.unwrap();
        assert_eq!(got.len(), body.len(), "exactly the blob's size");
        assert!(got[..] == body[..]);
        let mut into = vec![0u8; body.len() + 10];
        assert_eq!(
            c.get_into(&container, key, &mut into).await.unwrap(),
            body.len()
        );
        assert!(into[..body.len()] == body[..]);
        let mut range = vec![0u8; 1000];
        assert_eq!(
            c.get_range_into(&container, key, 5000, &mut range)
                .await
                .unwrap(),
            1000
        );
        assert!(range[..] == body[5000..6000]);

        let meta = c.head(&container, key).await.unwrap();
        assert_eq!(meta.content_length, body.len() as u64);
        assert_eq!(meta.content_type.as_deref(), Some("application/x-test"));
        assert_eq!(meta.etag, put.etag);

        // Errors by meaning, with Azure's code kept.
        let missing = c.get_bytes(&container, "nope").await.unwrap_err();
        assert!(
            matches!(&missing, Error::NoSuchKey(e) if e.code == "BlobNotFound"),
            "{missing}"
        );
        assert!(matches!(
            c.head(&container, "nope").await,
            Err(Error::NoSuchKey(_))
        ));
        let no_container = c.get_bytes("no-such-container", "k").await.unwrap_err();
        assert!(
            matches!(&no_container, Error::NoSuchBucket(e) if e.code == "ContainerNotFound"),
            "{no_container}"
        );
        let wrong_key = azure_builder()
            .azure(
                AzureSettings::new()
                    .account(azurite::ACCOUNT)
                    .key("d3Jvbmcga2V5IHdyb25nIGtleQ=="),
            )
            .build()
            .unwrap();
        let denied = wrong_key.get_bytes(&container, key).await.unwrap_err();
        assert!(
            matches!(denied, Error::SignatureDoesNotMatch(_)),
            "{denied}"
        );
        let exists = c
            .put_with(
                &container,
                key,
                b"x",
                &PutOptions {
                    if_none_match_any: true,
                    ..PutOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert!(matches!(exists, Error::PreconditionFailed(_)), "{exists}");
    })
    .await;
}

#[tokio::test]
async fn block_upload_then_parallel_download_in_bounded_parts() {
    bounded(STEP, async {
        let c = azure_client();
        let container = new_bucket(&c, "az-transfer").await;
        let dir = tempfile::tempdir().unwrap();
        let (source, body) = pattern_file(dir.path(), 21 * MIB + 12_345, 11);

        let sent = TransferProgress::new();
        let uploaded = c
            .upload(
                &container,
                "big",
                &source,
                TransferOptions {
                    part_size: 5 * MIB,
                    parts_in_flight: 3,
                    progress: Some(sent.clone()),
                    ..TransferOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(uploaded.parts, 5, "five Put Blocks, one Put Block List");
        assert_eq!(sent.bytes(), body.len() as u64);
        assert!(c.get_bytes(&container, "big").await.unwrap()[..] == body[..]);

        let target = dir.path().join("copy.bin");
        let received = TransferProgress::new();
        let size = c
            .download(
                &container,
                "big",
                &target,
                TransferOptions {
                    part_size: 3 * MIB,
                    parts_in_flight: 4,
                    progress: Some(received.clone()),
                    ..TransferOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(size, body.len() as u64);
        assert_eq!(received.bytes(), size);
        assert!(std::fs::read(&target).unwrap() == body);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");

        // A streamed upload (unknown length) stages blocks the same way.
        let mut reader = &body[..];
        let streamed = c
            .upload_reader(
                &container,
                "streamed",
                &mut reader,
                TransferOptions {
                    part_size: 5 * MIB,
                    ..TransferOptions::default()
                },
            )
            .await
            .unwrap();
        assert!(streamed.parts > 1);
        assert!(c.get_bytes(&container, "streamed").await.unwrap()[..] == body[..]);

        // So does an object written piece by piece.
        let mut w = c
            .object_writer(
                &container,
                "written",
                TransferOptions {
                    part_size: 5 * MIB,
                    ..TransferOptions::default()
                },
            )
            .unwrap();
        for piece in body.chunks(3 * MIB + 1) {
            w.write(piece).await.unwrap();
        }
        assert!(w.finish().await.unwrap().parts > 1);
        assert!(c.get_bytes(&container, "written").await.unwrap()[..] == body[..]);

        // A content type goes with a single Put Blob and with the block list.
        for (key, piece) in [("typed-small", &body[..100]), ("typed-blocks", &body[..])] {
            let mut reader = piece;
            c.upload_reader(
                &container,
                key,
                &mut reader,
                TransferOptions {
                    part_size: 5 * MIB,
                    content_type: Some("image/png".to_owned()),
                    headers: brisk_client::ObjectHeaders {
                        cache_control: Some("no-cache".into()),
                        metadata: vec![("origin".into(), "test".into())],
                        ..Default::default()
                    },
                    ..TransferOptions::default()
                },
            )
            .await
            .unwrap();
            let meta = c.head(&container, key).await.unwrap();
            assert_eq!(meta.content_type.as_deref(), Some("image/png"), "{key}");
            assert_eq!(
                meta.headers.cache_control.as_deref(),
                Some("no-cache"),
                "{key}"
            );
            assert_eq!(
                meta.metadata,
                [("origin".to_owned(), "test".to_owned())],
                "{key}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn listing_pages_prefixes_delete_and_copy() {
    bounded(STEP, async {
        let c = azure_client();
        let container = new_bucket(&c, "az-list").await;
        let keys = ["a/1", "a/2", "a/b/3", "c", "d e/ü"];
        for k in keys {
            c.put(&container, k, k.as_bytes()).await.unwrap();
        }
        // Pages of two: the marker is followed to the end.
        let mut listing = c.list(
            &container,
            ListOptions {
                max_keys: Some(2),
                ..ListOptions::default()
            },
        );
        let mut seen = Vec::new();
        while let Some(page) = listing.next_page().await.unwrap() {
            assert!(page.objects.len() <= 2);
            seen.extend(page.objects.into_iter().map(|o| (o.key, o.size)));
        }
        assert!(listing.pages_fetched() >= 3);
        let expected: Vec<_> = keys
            .iter()
            .map(|k| (k.to_string(), k.len() as u64))
            .collect();
        assert_eq!(seen, expected);

        let page = c
            .list(
                &container,
                ListOptions {
                    prefix: Some("a/".into()),
                    delimiter: Some("/".into()),
                    ..ListOptions::default()
                },
            )
            .next_page()
            .await
            .unwrap()
            .unwrap();
        let names: Vec<_> = page.objects.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(names, ["a/1", "a/2"]);
        assert_eq!(page.common_prefixes, ["a/b/"]);
        assert!(page.objects[0].etag.starts_with('"'));

        let copied = c
            .copy_object(
                &container,
                "a/1",
                &container,
                "copy of a1",
                Default::default(),
            )
            .await
            .unwrap();
        assert!(!copied.etag.is_empty());
        assert_eq!(
            &c.get_bytes(&container, "copy of a1").await.unwrap()[..],
            b"a/1"
        );

        c.delete(&container, "c").await.unwrap();
        c.delete(&container, "c").await.unwrap(); // a missing blob counts as deleted
        let result = c
            .delete_many(&container, &["a/1", "a/2", "never"])
            .await
            .unwrap();
        assert_eq!(result.deleted.len(), 3);
        assert!(result.errors.is_empty());

        let containers = c.list_buckets().await.unwrap();
        assert!(containers.iter().any(|b| b.name == container));
        let not_empty = c.delete_bucket(&container).await.unwrap_err();
        assert!(matches!(not_empty, Error::BucketNotEmpty(_)), "{not_empty}");
        let rest = c
            .list(&container, ListOptions::default())
            .collect_objects()
            .await
            .unwrap();
        let rest: Vec<_> = rest.into_iter().map(|o| o.key).collect();
        c.delete_many(&container, &rest).await.unwrap();
        c.delete_bucket(&container).await.unwrap();
        assert!(matches!(
            c.create_bucket(&container).await,
            Ok(()) | Err(Error::BucketAlreadyExists(_)) | Err(Error::Service(_))
        ));
        let twice = new_bucket(&c, "az-twice").await;
        assert!(matches!(
            c.create_bucket(&twice).await,
            Err(Error::BucketAlreadyExists(_))
        ));
    })
    .await;
}

#[tokio::test]
async fn a_read_cut_mid_body_resumes_pinned_to_the_etag_and_a_flipped_byte_is_caught() {
    bounded(STEP, async {
        let c = azure_client();
        let container = new_bucket(&c, "az-faults").await;
        let body = pattern(3 * MIB + 7, 9);
        c.put(&container, "obj", &body).await.unwrap();
        let port = azurite().port;
        let through = |proxy: &FaultProxy| azure_client_through(&proxy.endpoint);

        let reset =
            FaultProxy::start(port, Fault::ResetAt { at: MIB as u64 }, Schedule::First(1)).await;
        let client = through(&reset);
        let got = client.get_bytes(&container, "obj").await.unwrap();
        assert!(got[..] == body[..]);
        assert_eq!(reset.applied(), 1);
        assert_eq!(client.metrics().resumed_reads, 1, "resumed, not restarted");

        // Put Blob stores the blob's MD5; a byte flipped on the way fails the read.
        let flip = FaultProxy::start(port, Fault::Flip { at: 1234 }, Schedule::First(1)).await;
        let err = through(&flip)
            .get_bytes(&container, "obj")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::ChecksumMismatch { algorithm, .. } if *algorithm == "MD5"),
            "{err}"
        );

        // Batch reads of ranges up to 4 MiB ask for each range's MD5: a flipped byte is caught
        // and the range read again.
        let flip = FaultProxy::start(port, Fault::Flip { at: 10 }, Schedule::First(1)).await;
        let mut reader = through(&flip)
            .batch_reader(&container, BatchOptions::default())
            .unwrap();
        let key: std::sync::Arc<str> = "obj".into();
        for i in 0..8u64 {
            reader.submit(ReadRequest::new(
                i,
                std::sync::Arc::clone(&key),
                i * 100_000,
                65_536,
                Destination::Pooled,
            ));
        }
        while let Some(done) = reader.next().await {
            let n = done.result.unwrap();
            let Some(brisk_client::Filled::Block(block)) = done.buffer else {
                panic!("a pooled range comes back in its block");
            };
            let at = (done.id * 100_000) as usize;
            assert!(
                block[..n] == body[at..at + n],
                "range {} came back damaged",
                done.id
            );
        }
        assert_eq!(flip.applied(), 1);
        assert_eq!(
            reader.stats().gets_sent,
            9,
            "the damaged range was read again"
        );

        // A download is checked against it too: a damaged attempt is retried once.
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("obj");
        let flip = FaultProxy::start(port, Fault::Flip { at: 100 }, Schedule::First(1)).await;
        through(&flip)
            .download(&container, "obj", &target, TransferOptions::default())
            .await
            .unwrap();
        assert!(std::fs::read(&target).unwrap() == body);
        assert_eq!(flip.applied(), 1);
    })
    .await;
}

/// A blob made of blocks has no MD5 of its own, so what checks a download of it is the MD5 Azure
/// sends with each range of up to 4 MiB: ranges streamed to the file are summed as they pass, a
/// damaged attempt is downloaded again, and a download damaged every time fails with nothing left.
/// Ranges larger than 4 MiB come with no MD5, so the same damage then goes unnoticed.
#[tokio::test]
async fn a_download_checks_each_range_against_the_md5_azure_sends() {
    bounded(STEP, async {
        let c = azure_client();
        let container = new_bucket(&c, "az-range-md5").await;
        let dir = tempfile::tempdir().unwrap();
        let (source, body) = pattern_file(dir.path(), 6 * MIB + 99, 12);
        let five_mib_blocks = TransferOptions {
            part_size: 5 * MIB,
            ..TransferOptions::default()
        };
        let uploaded = c
            .upload(&container, "blocks", &source, five_mib_blocks)
            .await
            .unwrap();
        assert_eq!(uploaded.parts, 2);
        let port = azurite().port;
        let through = |proxy: &FaultProxy| azure_client_through(&proxy.endpoint);
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let target = out.join("copy.bin");
        let ranges_of = |part_size: usize| TransferOptions {
            part_size,
            ..TransferOptions::default()
        };

        let once = FaultProxy::start(port, Fault::Flip { at: 100 }, Schedule::First(1)).await;
        through(&once)
            .download(&container, "blocks", &target, ranges_of(MIB))
            .await
            .unwrap();
        assert_eq!(once.applied(), 1);
        assert!(std::fs::read(&target).unwrap() == body, "read again, exact");
        std::fs::remove_file(&target).unwrap();

        let always = FaultProxy::start(port, Fault::Flip { at: 100 }, Schedule::EveryNth(1)).await;
        let err = through(&always)
            .download(&container, "blocks", &target, ranges_of(MIB))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::ChecksumMismatch { algorithm, .. } if *algorithm == "MD5"),
            "{err:?}"
        );
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "no file left");

        // 8 MiB ranges: Azure sends no MD5 for them and the blob has none, so nothing can tell.
        through(&always)
            .download(&container, "blocks", &target, ranges_of(8 * MIB))
            .await
            .unwrap();
        assert!(
            std::fs::read(&target).unwrap() != body,
            "damaged, and not detectable"
        );
    })
    .await;
}

#[tokio::test]
async fn sas_tokens_presigned_urls_and_connection_strings() {
    bounded(STEP, async {
        let c = azure_client();
        let container = new_bucket(&c, "az-sas").await;
        c.put(&container, "k", b"shared").await.unwrap();

        // A presigned GET is a blob SAS URL that works with no credentials at all.
        let url = c
            .presign(
                "GET",
                &container,
                "k",
                Duration::from_secs(600),
                SystemTime::now(),
            )
            .unwrap();
        assert!(url.contains("sig=") && url.contains("sr=b"), "{url}");
        let http::Response { status, body, .. } = http::request("GET", &url, &[], b"");
        assert_eq!((status, body.as_slice()), (200, &b"shared"[..]));
        let expired = c
            .presign(
                "GET",
                &container,
                "k",
                Duration::from_secs(1),
                SystemTime::now() - Duration::from_secs(3600),
            )
            .unwrap();
        assert_eq!(http::request("GET", &expired, &[], b"").status, 403);

        // A client given a SAS token (here a container SAS with every permission).
        let token = url.split_once('?').unwrap().1.to_owned();
        let sas_client = azure_builder()
            .azure(
                AzureSettings::new()
                    .account(azurite::ACCOUNT)
                    .sas_token(token),
            )
            .build()
            .unwrap();
        assert_eq!(
            &sas_client.get_bytes(&container, "k").await.unwrap()[..],
            b"shared"
        );
        // The blob SAS reads that one blob only.
        assert!(matches!(
            sas_client.put(&container, "other", b"x").await,
            Err(Error::AccessDenied(_) | Error::SignatureDoesNotMatch(_))
        ));

        // The connection string the emulator documents.
        let from_string = Client::builder()
            .azure(AzureSettings::new().connection_string(azurite().connection_string()))
            .build()
            .unwrap();
        assert_eq!(
            &from_string.get_bytes(&container, "k").await.unwrap()[..],
            b"shared"
        );

        // Anonymous: refused on a private container, with the hint.
        let anonymous = azure_builder().anonymous(true).build().unwrap();
        let err = anonymous.get_bytes(&container, "k").await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::AccessDenied(_) | Error::NoSuchKey(_) | Error::NoSuchBucket(_)
            ),
            "{err}"
        );
    })
    .await;
}
