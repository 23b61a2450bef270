//! Uploads from files with an unsigned payload over plain HTTP, against `brisk serve` and MinIO: each
//! part's bytes leave the file with `sendfile`, and their CRC32C, taken from the page cache just
//! before, follows as an aws-chunked trailer. The servers store what the file holds, with the
//! checksum the trailer carried; the file is read into memory once, whatever is sent.

use std::time::Duration;

use crate::support::{TestServer, bounded, brisk, builder_of, minio, new_bucket, pattern};
use brisk_client::{PayloadSigning, TransferOptions, UploadChecksum};

const MIB: usize = 1024 * 1024;
const STEP: Duration = Duration::from_secs(120);

async fn file_bodies_arrive_whole(server: &TestServer) {
    let c = builder_of(server).build().unwrap();
    let bucket = new_bucket(&c, "fileup").await;
    let dir = tempfile::tempdir().unwrap();
    let unsigned = || TransferOptions {
        part_size: 5 * MIB,
        parts_in_flight: 3,
        payload_signing: PayloadSigning::Unsigned,
        ..TransferOptions::default()
    };

    // Multipart: four whole parts and a short one, none a whole number of 1 MiB chunks.
    let body = pattern(21 * MIB + 12_345, 3);
    let source = dir.path().join("big");
    std::fs::write(&source, &body).unwrap();
    let before = c.metrics();
    let uploaded = c.upload(&bucket, "big", &source, unsigned()).await.unwrap();
    let after = c.metrics();
    assert_eq!(uploaded.parts, 5);
    assert_eq!(
        after.file_bytes_read - before.file_bytes_read,
        body.len() as u64
    );
    assert_eq!(
        after.file_bytes_sent - before.file_bytes_sent,
        body.len() as u64
    );
    assert_eq!(after.retries, before.retries, "no part was sent twice");
    assert!(c.get_bytes(&bucket, "big").await.unwrap()[..] == body[..]);
    // The object's full-object CRC32C, combined by the server from the parts' trailers.
    let head = c.head(&bucket, "big").await.unwrap();
    assert_eq!(
        head.checksum_crc32c.as_deref(),
        Some(UploadChecksum::Crc32c.compute(&body).as_str()),
        "{}",
        server.name
    );

    // One PUT: a file within one part, of several chunks.
    let small = pattern(3 * MIB + 5, 4);
    let source = dir.path().join("small");
    std::fs::write(&source, &small).unwrap();
    let before = c.metrics();
    let uploaded = c
        .upload(&bucket, "small", &source, unsigned())
        .await
        .unwrap();
    let after = c.metrics();
    assert_eq!(uploaded.parts, 1);
    assert_eq!(
        after.file_bytes_read - before.file_bytes_read,
        small.len() as u64
    );
    assert_eq!(
        after.file_bytes_sent - before.file_bytes_sent,
        small.len() as u64
    );
    assert!(c.get_bytes(&bucket, "small").await.unwrap()[..] == small[..]);
    let head = c.head(&bucket, "small").await.unwrap();
    assert_eq!(
        head.checksum_crc32c.as_deref(),
        Some(UploadChecksum::Crc32c.compute(&small).as_str())
    );

    // Below 1 MiB the body does not wait for `100 Continue`: the head, still queued, leaves with
    // the first size line, ahead of the `sendfile`.
    let tiny = pattern(100_001, 5);
    let tiny_source = dir.path().join("tiny");
    std::fs::write(&tiny_source, &tiny).unwrap();
    let before = c.metrics();
    c.upload(&bucket, "tiny", &tiny_source, unsigned())
        .await
        .unwrap();
    let after = c.metrics();
    assert_eq!(
        after.file_bytes_sent - before.file_bytes_sent,
        tiny.len() as u64
    );
    assert!(c.get_bytes(&bucket, "tiny").await.unwrap()[..] == tiny[..]);

    // A signed payload still reads each part into a block (its SHA-256 is needed before the head):
    // nothing goes through `sendfile`.
    let before = c.metrics();
    let signed = TransferOptions {
        payload_signing: PayloadSigning::Signed,
        ..unsigned()
    };
    c.upload(&bucket, "signed", &source, signed).await.unwrap();
    let after = c.metrics();
    assert_eq!(after.file_bytes_sent, before.file_bytes_sent);
    assert!(c.get_bytes(&bucket, "signed").await.unwrap()[..] == small[..]);
}

#[tokio::test]
async fn file_bodies_arrive_whole_on_brisk_serve() {
    bounded(STEP, file_bodies_arrive_whole(brisk())).await;
}

#[tokio::test]
async fn file_bodies_arrive_whole_on_minio() {
    bounded(STEP, file_bodies_arrive_whole(minio())).await;
}
