//! File transfers against the test server: multipart upload from a file and parallel ranged download
//! to a file, within a memory budget.

use std::time::Duration;

use crate::support::{bounded, builder, client, new_bucket, pattern, pattern_file};
use brisk_client::{Error, StreamMeasure, TransferOptions, TransferProgress};

const MIB: usize = 1024 * 1024;
const STEP: Duration = Duration::from_secs(120);

/// A named pipe `dir/pipe`, made with `mkfifo`.
fn named_pipe(dir: &std::path::Path) -> std::path::PathBuf {
    let fifo = dir.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    fifo
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn multipart_upload_then_parallel_download() {
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "transfer").await;
        let dir = tempfile::tempdir().unwrap();
        let (source, body) = pattern_file(dir.path(), 21 * MIB + 12_345, 11);

        let sent = TransferProgress::new();
        let options = TransferOptions {
            part_size: 5 * MIB,
            parts_in_flight: 3,
            progress: Some(sent.clone()),
            ..TransferOptions::default()
        };
        let uploaded = c.upload(&bucket, "big", &source, options).await.unwrap();
        assert_eq!(sent.bytes(), body.len() as u64, "every part counted once");
        assert_eq!(uploaded.parts, 5);
        assert_eq!(uploaded.size, body.len() as u64);
        assert!(
            uploaded.etag.as_deref().unwrap().ends_with("-5\""),
            "{uploaded:?}"
        );
        assert!(c.get_bytes(&bucket, "big").await.unwrap()[..] == body[..]);

        let target = dir.path().join("copy.bin");
        let received = TransferProgress::new();
        let options = TransferOptions {
            part_size: 3 * MIB,
            parts_in_flight: 4,
            progress: Some(received.clone()),
            ..TransferOptions::default()
        };
        let size = c.download(&bucket, "big", &target, options).await.unwrap();
        assert_eq!(size, body.len() as u64);
        assert_eq!(received.bytes(), size, "every part counted once");
        assert!(std::fs::read(&target).unwrap() == body);
        // No temporary file is left beside the result.
        assert_eq!(entries(dir.path()), ["copy.bin", "source.bin"]);
    })
    .await;
}

/// A destination that is not a regular file (here a named pipe; `/dev/null` is another) is
/// written in place, front to back: a temporary file renamed over it would replace it.
#[tokio::test]
async fn a_download_into_a_named_pipe_streams_into_it_and_leaves_it_a_pipe() {
    use std::os::unix::fs::FileTypeExt;
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "transfer-fifo").await;
        let dir = tempfile::tempdir().unwrap();
        let (source, body) = pattern_file(dir.path(), 11 * MIB + 777, 5);
        let options = TransferOptions {
            part_size: 5 * MIB,
            ..TransferOptions::default()
        };
        c.upload(&bucket, "object", &source, options.clone())
            .await
            .unwrap();
        std::fs::remove_file(&source).unwrap();
        let fifo = named_pipe(dir.path());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let received = TransferProgress::new();
        let options = TransferOptions {
            progress: Some(received.clone()),
            ..options
        };
        let size = c.download(&bucket, "object", &fifo, options).await.unwrap();
        // Checked before the reader is waited for: over a replaced pipe it would wait forever.
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "{kind:?}");
        assert_eq!(entries(dir.path()), ["pipe"]);
        assert_eq!(size, body.len() as u64);
        assert_eq!(received.bytes(), size);
        let read = reader.join().unwrap();
        assert!(read == body, "{} bytes read of {}", read.len(), body.len());
    })
    .await;
}

/// A writer for [`Client::download_to_writer`]: keeps what it is given, fails with a broken pipe
/// past `fails_past` bytes, and says whether it was flushed.
#[derive(Clone, Default)]
struct Recorder {
    bytes: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    flushed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    fails_past: Option<usize>,
}

impl std::io::Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = self.bytes.lock().unwrap();
        if self
            .fails_past
            .is_some_and(|limit| bytes.len() + buf.len() > limit)
        {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flushed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// `download_to_writer` streams an object into any writer front to back, flushes it, counts its
/// progress; a missing object fails before a byte is written, and a writer that fails (a reader
/// gone: a broken pipe) ends the download with that error as the source of `Error::File`.
#[tokio::test]
async fn a_download_to_a_writer_streams_flushes_and_passes_the_writers_error_on() {
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "transfer-writer").await;
        let body = pattern(11 * MIB + 321, 9);
        c.put(&bucket, "object", &body).await.unwrap();
        let options = TransferOptions {
            part_size: 5 * MIB,
            ..TransferOptions::default()
        };

        let received = TransferProgress::new();
        let out = Recorder::default();
        let size = c
            .download_to_writer(
                &bucket,
                "object",
                out.clone(),
                TransferOptions {
                    progress: Some(received.clone()),
                    ..options.clone()
                },
            )
            .await
            .unwrap();
        assert_eq!(size, body.len() as u64);
        assert_eq!(received.bytes(), size);
        assert!(*out.bytes.lock().unwrap() == body);
        assert!(out.flushed.load(std::sync::atomic::Ordering::SeqCst));

        let out = Recorder::default();
        let missing = c
            .download_to_writer(&bucket, "missing", out.clone(), options.clone())
            .await;
        assert!(matches!(missing, Err(Error::NoSuchKey(_))), "{missing:?}");
        assert!(out.bytes.lock().unwrap().is_empty());

        let out = Recorder {
            fails_past: Some(6 * MIB),
            ..Recorder::default()
        };
        let failed = c
            .download_to_writer(&bucket, "object", out.clone(), options)
            .await;
        match failed {
            Err(Error::File { source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::BrokenPipe)
            }
            other => panic!("{other:?}"),
        }
        assert!(out.bytes.lock().unwrap().len() <= 6 * MIB);
    })
    .await;
}

/// A source that is not a regular file (a named pipe, as `/dev/stdin` or a shell's `<(command)`
/// is) has no size and no offsets: it is read to its end, not planned from a size of 0 (which
/// uploaded an empty object and reported success).
#[tokio::test]
async fn an_upload_from_a_named_pipe_reads_it_to_its_end() {
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "transfer-fifo-up").await;
        let dir = tempfile::tempdir().unwrap();
        let fifo = named_pipe(dir.path());
        let body = pattern(11 * MIB + 321, 9);
        let writer = {
            let (fifo, body) = (fifo.clone(), body.clone());
            // A reader that stops early makes the write fail: not this thread's to judge.
            std::thread::spawn(move || {
                let _ = std::fs::write(fifo, body);
            })
        };
        let sent = TransferProgress::new();
        let options = TransferOptions {
            part_size: 5 * MIB,
            progress: Some(sent.clone()),
            ..TransferOptions::default()
        };
        let uploaded = c.upload(&bucket, "piped", &fifo, options).await.unwrap();
        writer.join().unwrap();
        assert_eq!(uploaded.size, body.len() as u64, "{uploaded:?}");
        assert_eq!(uploaded.parts, 3, "{uploaded:?}");
        assert_eq!(sent.bytes(), body.len() as u64);
        assert!(c.get_bytes(&bucket, "piped").await.unwrap()[..] == body[..]);
    })
    .await;
}

/// A download that measures its streams with windows of a few MiB: three of its four streams end
/// once their first 64 MiB spans do, and then either come back to take the last spans, or the
/// one left asks for the rest of the object in one GET (which depends on what the windows
/// measure; the first round makes one stream win only at twice the rate, so that its streams come
/// back). Every byte lands once, checked against the object's CRC rebuilt from its parts.
#[tokio::test]
async fn a_download_that_measures_its_streams_lands_every_byte_once() {
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "measured").await;
        let dir = tempfile::tempdir().unwrap();
        let (source, body) = pattern_file(dir.path(), 448 * MIB + 4321, 23);
        let options = TransferOptions {
            part_size: 8 * MIB,
            ..TransferOptions::default()
        };
        c.upload(&bucket, "big", &source, options).await.unwrap();
        std::fs::remove_file(&source).unwrap();

        for round in 0..2 {
            let target = dir.path().join("copy.bin");
            let received = TransferProgress::new();
            let options = TransferOptions {
                parts_in_flight: 4,
                progress: Some(received.clone()),
                measure_streams: Some(StreamMeasure {
                    min_size: 0,
                    settle: MIB as u64,
                    all_window: 8 * MIB as u64,
                    one_window: 4 * MIB as u64,
                    keep_one_percent: if round == 0 { 200 } else { 90 },
                    min_busy_percent: 0,
                    ..StreamMeasure::default()
                }),
                ..TransferOptions::default()
            };
            let size = c.download(&bucket, "big", &target, options).await.unwrap();
            assert_eq!(size, body.len() as u64, "round {round}");
            assert_eq!(
                received.bytes(),
                size,
                "round {round}: every byte counted once"
            );
            assert!(std::fs::read(&target).unwrap() == body, "round {round}");
        }
        assert_eq!(entries(dir.path()), ["copy.bin"]);
    })
    .await;
}

#[tokio::test]
async fn a_small_file_is_one_put() {
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "smallfile").await;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("small");
        std::fs::write(&source, b"small file").unwrap();
        // One counter shared by several transfers adds them up.
        let shared = TransferProgress::new();
        let counted = TransferOptions {
            progress: Some(shared.clone()),
            ..TransferOptions::default()
        };
        let uploaded = c
            .upload(&bucket, "s", &source, counted.clone())
            .await
            .unwrap();
        assert_eq!((uploaded.parts, uploaded.size), (1, 10));
        assert_eq!(shared.bytes(), 10);
        c.download(&bucket, "s", &dir.path().join("s-copy"), counted)
            .await
            .unwrap();
        assert_eq!(shared.bytes(), 20);
        assert_eq!(&c.get_bytes(&bucket, "s").await.unwrap()[..], b"small file");

        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        c.upload(&bucket, "e", &empty, TransferOptions::default())
            .await
            .unwrap();
        let target = dir.path().join("empty-copy");
        assert_eq!(
            c.download(&bucket, "e", &target, TransferOptions::default())
                .await
                .unwrap(),
            0
        );
        assert_eq!(std::fs::read(&target).unwrap().len(), 0);
    })
    .await;
}

#[tokio::test]
async fn transfers_stay_within_the_memory_budget() {
    bounded(STEP, async {
        // Two 8 MiB blocks' worth: a transfer asking for 6 parts in flight runs 2 at a time.
        let budget = brisk_mem::MemoryBudget::new(16 * MIB);
        let c = builder().memory_budget(budget.clone()).build().unwrap();
        let bucket = new_bucket(&c, "budgeted").await;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let body = pattern(40 * MIB, 12);
        std::fs::write(&source, &body).unwrap();
        let options = TransferOptions {
            part_size: 8 * MIB,
            parts_in_flight: 6,
            ..TransferOptions::default()
        };
        c.upload(&bucket, "k", &source, options.clone())
            .await
            .unwrap();
        let target = dir.path().join("target");
        c.download(&bucket, "k", &target, options).await.unwrap();
        assert!(std::fs::read(&target).unwrap() == body);
        let m = budget.metrics();
        assert!(m.peak_reserved_bytes <= 16 * MIB, "{m:?}");
        assert!(m.waits > 0, "the budget never made a part wait: {m:?}");
        // One block per part up (5 of 8 MiB), two per download worker that found a range (5 × 2
        // of 1 MiB: the 6th finds none; each fills one while the other is written). While parts
        // wait, returned blocks are freed rather than cached (the pool never makes anyone wait for
        // its cache), so some are allocated anew.
        assert_eq!(m.pool_blocks_allocated + m.pool_hits, 15, "{m:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_whose_budget_holds_one_part_completes() {
    bounded(STEP, async {
        // Room for one 8 MiB block, 4 parts in flight and one read ahead: a part takes its turn
        // to send only once it holds a block, or the parts holding turns would wait for the one
        // block, held by a part waiting for a turn. Signed parts go from blocks.
        let budget = brisk_mem::MemoryBudget::new(8 * MIB);
        let c = builder().memory_budget(budget.clone()).build().unwrap();
        let bucket = new_bucket(&c, "onepart").await;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let body = pattern(45 * MIB + 3, 14);
        std::fs::write(&source, &body).unwrap();
        let options = TransferOptions {
            part_size: 8 * MIB,
            parts_in_flight: 4,
            payload_signing: brisk_client::PayloadSigning::Signed,
            ..TransferOptions::default()
        };
        c.upload(&bucket, "k", &source, options).await.unwrap();
        let m = budget.metrics();
        let reader = builder().build().unwrap();
        assert!(reader.get_bytes(&bucket, "k").await.unwrap()[..] == body[..]);
        assert!(m.peak_reserved_bytes <= 8 * MIB, "{m:?}");
        assert!(m.waits > 0, "the budget never made a part wait: {m:?}");
    })
    .await;
}

#[tokio::test]
async fn a_download_whose_budget_holds_one_block_per_worker_completes() {
    bounded(STEP, async {
        // Four workers take one 1 MiB block each and fill the budget: none may wait for a second
        // block while holding its first, or all four would wait for ever.
        let budget = brisk_mem::MemoryBudget::new(4 * MIB);
        let c = builder().memory_budget(budget.clone()).build().unwrap();
        let bucket = new_bucket(&c, "onebuffer").await;
        let body = pattern(22 * MIB + 5, 13);
        c.put(&bucket, "k", &body).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        let options = TransferOptions {
            part_size: 5 * MIB,
            parts_in_flight: 4,
            ..TransferOptions::default()
        };
        c.download(&bucket, "k", &target, options).await.unwrap();
        assert!(std::fs::read(&target).unwrap() == body);
        let m = budget.metrics();
        assert!(m.peak_reserved_bytes <= 4 * MIB, "{m:?}");
        assert_eq!(m.pool_blocks_allocated, 4, "one block per worker: {m:?}");
    })
    .await;
}

#[tokio::test]
async fn a_failed_download_leaves_nothing_behind() {
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "faileddl").await;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("never");
        let err = c
            .download(&bucket, "missing", &target, TransferOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::NoSuchKey(_)), "{err:?}");
        assert!(entries(dir.path()).is_empty());

        let bad = TransferOptions {
            part_size: 1024,
            ..TransferOptions::default()
        };
        assert!(matches!(
            c.upload(&bucket, "k", &dir.path().join("x"), bad).await,
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            c.upload(
                &bucket,
                "k",
                &dir.path().join("absent"),
                TransferOptions::default()
            )
            .await,
            Err(Error::File { .. })
        ));
    })
    .await;
}

/// A download whose future is dropped part way (a cancelled task, Ctrl-C in a binding) sees no
/// error result, yet must still remove its temporary file.
#[tokio::test]
async fn a_download_dropped_part_way_leaves_nothing_behind() {
    bounded(STEP, async {
        let c = client();
        let bucket = new_bucket(&c, "droppeddl").await;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source.bin");
        std::fs::write(&source, pattern(24 * MIB, 5)).unwrap();
        c.upload(&bucket, "big", &source, TransferOptions::default())
            .await
            .unwrap();
        std::fs::remove_file(&source).unwrap();

        let target = dir.path().join("copy.bin");
        let received = TransferProgress::new();
        let options = TransferOptions {
            part_size: MIB,
            parts_in_flight: 1,
            progress: Some(received.clone()),
            ..TransferOptions::default()
        };
        let download = c.download(&bucket, "big", &target, options);
        let part_way = async {
            while received.bytes() == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        tokio::select! {
            result = download => panic!("finished before it could be dropped: {result:?}"),
            () = part_way => {}
        }
        // The future is dropped here, with at least one part written and more to come.
        assert!(received.bytes() < 24 * MIB as u64);
        assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    })
    .await;
}

/// A download raises its sockets' receive low-water mark (a read wakes only once a block's worth
/// has arrived); the mark must be back at one byte when the connection goes back to the pool, or
/// the next small response on it would not wake its reader until the read timeout. (Two things
/// bring it back: the mark never exceeds what is left of the body, and releasing a connection
/// resets it; with both taken out this test fails.) One connection, a 2 s read timeout: a small
/// GET and a HEAD after the download answer on the same connection.
#[tokio::test]
async fn a_connection_reused_after_a_download_reads_small_answers() {
    bounded(STEP, async {
        let c = builder()
            .max_connections_per_host(1)
            .read_timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let bucket = new_bucket(&c, "lowwater").await;
        let body = pattern(5 * MIB + 123, 17);
        c.put(&bucket, "big", &body).await.unwrap();
        c.put(&bucket, "small", b"ten bytes!").await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("big");
        let options = TransferOptions {
            part_size: MIB,
            parts_in_flight: 1,
            ..TransferOptions::default()
        };
        c.download(&bucket, "big", &target, options).await.unwrap();
        assert!(std::fs::read(&target).unwrap() == body);
        let opened = c.metrics().connections_opened;
        assert_eq!(
            &c.get_bytes(&bucket, "small").await.unwrap()[..],
            b"ten bytes!"
        );
        assert_eq!(c.head(&bucket, "small").await.unwrap().content_length, 10);
        assert_eq!(
            c.metrics().connections_opened,
            opened,
            "the small answers came on the download's connection, without a timeout"
        );
    })
    .await;
}
