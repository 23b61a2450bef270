//! The `brisk` CLI and brisk-client against MinIO in distributed mode: 4 nodes of 2 drives, one
//! erasure set at EC:4, in a network namespace of its own, each node reached through a loopback
//! forwarder (brisk-testkit's [`minio_cluster`](brisk_testkit::minio_cluster), which says why).
//!
//! - A healthy cluster: a multi-part `cp` up and down, batch random reads (in process and
//!   `brisk bench random`), `sync` of a tree up and down, each checked byte for byte.
//! - One node killed with SIGKILL in the middle of a multi-part upload, of a download and of a
//!   batch of random reads, a different node each time and never the one the client talks to:
//!   each completes and is checked byte for byte. MinIO's write quorum with 8 drives at EC:4 is 5
//!   drives, so writes go on with one node (2 drives) down. Each node comes back on its drives, and
//!   everything written, also while a node was down, is read back whole, through the client's node
//!   and through the node that missed the upload (MinIO answers `404 NoSuchKey` to those reads for
//!   a few seconds after the node is back: see [`read_back`]).
//!
//! Each kill costs the objects read under it one node's shards and no more: the download and the
//! random reads are of an object written with every node up, and the upload with a kill comes
//! last. An object written while a node was down lacks that node's shards until MinIO heals it
//! (set off by a read, in its own time: not within 2 minutes in one run here); losing a second
//! node then leaves it at its read quorum (4 of 8 drives), where MinIO was seen answering
//! `404 NoSuchKey` to reads in flight when the node died. The first object is deleted before the
//! second is written, and its data removed from MinIO's trash (which MinIO purges only later), so
//! that the drives never hold both.
//!
//! The object of the kill test is 512 MiB (64 parts of 8 MiB), not the 1 GiB the issue names: a
//! cluster keeps twice an object's size on its drives (EC:4), and a 1 GiB object with its source
//! or downloaded file beside it would hold 3 GiB, over the 2.5 GiB these tests may take on a CI
//! machine. At 512 MiB the kill test holds at most about 1.5 GiB (the object on the drives and one
//! file, removed as soon as it is checked), the healthy-cluster test under 0.3 GiB beside it.
//! Downloads are compared with the regenerated pattern, never with a kept copy.
//!
//! The clients are given one endpoint, [`CLIENT_NODE`]'s, because brisk takes one today. When a
//! client takes several, [`client_endpoints`] is the one place to give it all four.
//!
//! Where the machine cannot make a network namespace (not root, no `ip`), each test says so on
//! standard error, past the harness's capture, and passes without running.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisk_client::batch::{BatchOptions, Destination, ReadRequest};
use brisk_client::{Client, Credentials};
use brisk_testkit::minio_cluster::MinioCluster;

use crate::support::{ACCESS_KEY, SECRET_KEY, run_with_timeout};

/// The node whose endpoint the clients are given; the killed nodes are always others.
const CLIENT_NODE: usize = 0;
/// Size of the kill test's object (see the module docs for why not 1 GiB).
const BIG: u64 = 512 << 20;
/// Multipart part size of the uploads: the kill test's object is 64 parts.
const PART: &str = "8MiB";
/// Bounds any one command here; a 512 MiB transfer takes seconds to tens of seconds.
const COMMAND_LIMIT: Duration = Duration::from_secs(300);
/// Bounds the waits for a transfer to reach the point where a node is killed.
const PROGRESS_LIMIT: Duration = Duration::from_secs(180);
/// Bounds the time a node that came back may answer reads of what it missed with errors.
const REJOIN_LIMIT: Duration = Duration::from_secs(90);
/// The pattern is generated and compared in pieces of this size.
const CHUNK: usize = 1 << 20;

/// The endpoints a client of `cluster` is given (see the module docs).
fn client_endpoints(cluster: &MinioCluster) -> Vec<String> {
    vec![cluster.endpoint(CLIENT_NODE).to_owned()]
}

/// `brisk` with `endpoints` and the test user, no AWS configuration files, `--quiet` progress.
fn brisk_at(endpoints: &[String], args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    for endpoint in endpoints {
        cmd.args(["--endpoint-url", endpoint]);
    }
    cmd.args(args)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("AWS_REGION", brisk_testkit::REGION)
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ENDPOINT_URL_S3")
        .env_remove("AWS_PROFILE")
        .env_remove("BRISK_MAX_MEMORY")
        .env_remove("RUST_LOG");
    cmd
}

#[track_caller]
fn succeeded(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[track_caller]
fn run(endpoints: &[String], args: &[&str]) -> Output {
    succeeded(run_with_timeout(brisk_at(endpoints, args), COMMAND_LIMIT))
}

/// `brisk cp SOURCE DESTINATION` with the given parts, payload sent unsigned with a CRC32C trailer
/// (signing 512 MiB with SHA-256 in a debug build takes minutes).
fn cp(endpoints: &[String], source: &str, destination: &str) -> Command {
    brisk_at(
        endpoints,
        &[
            "cp",
            "--quiet",
            "--part-size",
            PART,
            "--payload-signing",
            "unsigned",
            source,
            destination,
        ],
    )
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Fills `buf` with the bytes at `offset` of the pattern named `seed`: no period a misplaced
/// part or range could hide behind.
fn pattern_at(seed: u64, offset: u64, buf: &mut [u8]) {
    let mut at = offset;
    let mut rest = &mut buf[..];
    while !rest.is_empty() {
        let word = splitmix(seed.wrapping_mul(0x1000_0000_0000) ^ (at / 8)).to_le_bytes();
        let skip = (at % 8) as usize;
        let n = (8 - skip).min(rest.len());
        rest[..n].copy_from_slice(&word[skip..skip + n]);
        rest = &mut rest[n..];
        at += n as u64;
    }
}

/// Writes `len` bytes of pattern `seed` to `path`.
fn write_pattern(path: &Path, seed: u64, len: u64) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut buf = vec![0u8; CHUNK];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(CHUNK as u64) as usize;
        pattern_at(seed, at, &mut buf[..n]);
        file.write_all(&buf[..n]).unwrap();
        at += n as u64;
    }
    file.flush().unwrap();
}

/// Checks that `reader` yields exactly `len` bytes of pattern `seed`; names the first difference.
#[track_caller]
fn check_pattern(mut reader: impl Read, seed: u64, len: u64, what: &str) {
    let mut got = vec![0u8; CHUNK];
    let mut want = vec![0u8; CHUNK];
    let mut at = 0u64;
    loop {
        let mut filled = 0;
        while filled < CHUNK {
            match reader.read(&mut got[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("{what}: reading at {}: {e}", at + filled as u64),
            }
        }
        if filled == 0 {
            break;
        }
        pattern_at(seed, at, &mut want[..filled]);
        if got[..filled] != want[..filled] {
            let i = (0..filled).find(|&i| got[i] != want[i]).unwrap();
            panic!("{what}: byte {} differs from the pattern", at + i as u64);
        }
        at += filled as u64;
        assert!(at <= len, "{what}: longer than {len} bytes");
    }
    assert_eq!(at, len, "{what}: length");
}

/// Checks the file at `path` against pattern `seed`, then removes it.
#[track_caller]
fn check_file_and_remove(path: &Path, seed: u64, len: u64) {
    let file = std::fs::File::open(path).unwrap();
    check_pattern(
        std::io::BufReader::new(file),
        seed,
        len,
        &path.display().to_string(),
    );
    std::fs::remove_file(path).unwrap();
}

/// Downloads `s3://bucket/key` through `endpoints` to standard output and checks the bytes as they
/// arrive: a whole read back without a file on disk.
#[track_caller]
fn check_object_streamed(endpoints: &[String], url: &str, seed: u64, len: u64) {
    let mut child = cp(endpoints, url, "-")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // A hang is ended by killing the command, which ends its output and so the comparison.
    let pid = child.id();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let limit = std::thread::spawn(move || {
        let until = Instant::now() + COMMAND_LIMIT;
        while Instant::now() < until && !stop.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
        }
        if !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    });
    let compared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_pattern(std::io::BufReader::new(stdout), seed, len, url);
    }));
    let status = child.wait().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    limit.join().unwrap();
    let stderr = errors.join().unwrap();
    assert!(
        status.success(),
        "{url} through {endpoints:?}: {status}\n{stderr}"
    );
    if let Err(panic) = compared {
        std::panic::resume_unwind(panic);
    }
}

/// Runs `cmd` on another thread and, once `cluster`'s forwarder has carried `threshold` more bytes
/// for the client's node in the direction `progress` reads, kills node `victim`; returns the
/// command's output. Fails when the command ends before that point: the kill would not have been
/// in the middle.
fn kill_midway(
    cluster: &mut MinioCluster,
    victim: usize,
    cmd: Command,
    progress: fn(brisk_testkit::minio_cluster::Traffic) -> u64,
    threshold: u64,
) -> Output {
    assert_ne!(victim, CLIENT_NODE);
    let start = progress(cluster.traffic(CLIENT_NODE));
    std::thread::scope(|scope| {
        let transfer = scope.spawn(move || run_with_timeout(cmd, COMMAND_LIMIT));
        let until = Instant::now() + PROGRESS_LIMIT;
        loop {
            let carried = progress(cluster.traffic(CLIENT_NODE)) - start;
            if carried >= threshold {
                break;
            }
            if transfer.is_finished() {
                let out = transfer.join().unwrap();
                panic!(
                    "the transfer ended after {carried} bytes, before node {} was killed: {}\n{}",
                    victim + 1,
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(
                Instant::now() < until,
                "the transfer carried {carried} bytes in {PROGRESS_LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        cluster.kill(victim);
        let out = transfer.join().unwrap();
        // What the client met (with --debug: its retries and resumed reads), for the log.
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!(
            "node {} killed midway; the client retried {} requests:\n{}",
            victim + 1,
            stderr.matches("retrying").count(),
            &stderr[..stderr.len().min(4096)]
        );
        out
    })
}

fn client_of(cluster: &MinioCluster) -> Client {
    let endpoints = client_endpoints(cluster);
    Client::builder()
        .endpoint(endpoints[0].as_str())
        .region(brisk_testkit::REGION)
        .credentials(Credentials::new(ACCESS_KEY, SECRET_KEY))
        .build()
        .unwrap()
}

/// Reads `count` random ranges (1 byte to `max_len`) of `key` (`len` bytes of pattern `seed`) in
/// one batch at queue depth 32, checking each against the pattern. When `kill` is given, a node is
/// killed (by calling `kill`) once a third of the ranges have completed. Returns how many completed
/// after the kill.
async fn random_reads(
    client: &Client,
    bucket: &str,
    key: &str,
    (seed, len): (u64, u64),
    (count, max_len): (u64, usize),
    mut kill: Option<&mut dyn FnMut()>,
) -> u64 {
    let mut reader = client
        .batch_reader(
            bucket,
            BatchOptions {
                queue_depth: 32,
                ..BatchOptions::default()
            },
        )
        .unwrap();
    let key: Arc<str> = Arc::from(key);
    let mut state = seed ^ 0x5eed;
    for id in 0..count {
        state = splitmix(state);
        let length = 1 + (state % max_len as u64) as usize;
        let offset = splitmix(state) % (len - length as u64 + 1);
        reader.submit(ReadRequest::new(
            id,
            Arc::clone(&key),
            offset,
            length,
            Destination::Buffer(vec![0u8; length]),
        ));
    }
    let (mut done, mut after_kill, mut killed) = (0u64, 0u64, false);
    let mut want = Vec::new();
    while let Some(completion) = reader.next().await {
        let data = completion.data().unwrap_or_else(|e| {
            panic!(
                "range {}+{} of {key}: {e}",
                completion.offset, completion.length
            )
        });
        assert_eq!(
            data.len(),
            completion.length,
            "range at {}",
            completion.offset
        );
        want.resize(data.len(), 0);
        pattern_at(seed, completion.offset, &mut want);
        assert!(
            data == &want[..],
            "range {}+{} of {key} differs from the pattern",
            completion.offset,
            completion.length
        );
        done += 1;
        if killed {
            after_kill += 1;
        }
        if done == count / 3
            && let Some(kill) = kill.take()
        {
            kill();
            killed = true;
        }
    }
    assert_eq!(done, count);
    after_kill
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A tree for `sync`: nested directories, an empty file, small files and one of 3 parts.
fn make_tree(root: &Path) -> Vec<(PathBuf, u64, u64)> {
    let files: Vec<(&str, u64)> = vec![
        ("empty", 0),
        ("a.txt", 17),
        ("dir/b.bin", 65_536),
        ("dir/c.bin", 1_000_001),
        ("dir/deeper/d.bin", 4_096),
        ("dir/deeper/large.bin", 20 << 20),
        ("e/f/g/h.bin", 300_000),
    ];
    files
        .into_iter()
        .enumerate()
        .map(|(i, (name, len))| {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            write_pattern(&path, 100 + i as u64, len);
            (PathBuf::from(name), 100 + i as u64, len)
        })
        .collect()
}

#[test]
fn a_cluster_serves_multipart_cp_random_reads_and_sync_through_one_node() {
    let Some(cluster) = MinioCluster::start_or_skip(
        "a_cluster_serves_multipart_cp_random_reads_and_sync_through_one_node",
    ) else {
        return;
    };
    let began = Instant::now();
    let endpoints = client_endpoints(&cluster);
    let dir = tempfile::tempdir().unwrap();
    run(&endpoints, &["mb", "s3://healthy"]);

    // A multi-part upload and download (5 parts), signed as a default `cp` is.
    let (seed, len) = (1, (40 << 20) + 12_345);
    let source = dir.path().join("up.bin");
    write_pattern(&source, seed, len);
    let mut up = brisk_at(&endpoints, &["cp", "--quiet", "--part-size", PART]);
    up.arg(&source).arg("s3://healthy/multi.bin");
    succeeded(run_with_timeout(up, COMMAND_LIMIT));
    std::fs::remove_file(&source).unwrap();
    let listed = run(&endpoints, &["ls", "--json", "s3://healthy/"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("\"multi.bin\"") && listed.contains(&len.to_string()),
        "{listed}"
    );
    let down = dir.path().join("down.bin");
    let mut get = brisk_at(&endpoints, &["cp", "--quiet", "s3://healthy/multi.bin"]);
    get.arg(&down);
    succeeded(run_with_timeout(get, COMMAND_LIMIT));
    check_file_and_remove(&down, seed, len);

    // Batch random reads in process, byte for byte.
    let client = client_of(&cluster);
    runtime().block_on(async {
        tokio::time::timeout(
            COMMAND_LIMIT,
            random_reads(
                &client,
                "healthy",
                "multi.bin",
                (seed, len),
                (600, 256 << 10),
                None,
            ),
        )
        .await
        .expect("random reads within the limit");
    });

    // `brisk bench random` through the node: reads complete, none fail.
    let report = dir.path().join("report");
    let mut bench = brisk_at(
        &endpoints,
        &[
            "bench",
            "random",
            "--quick",
            "--object-size",
            "16MiB",
            "--payload-signing",
            "unsigned",
            "--json",
            "--report",
        ],
    );
    bench.arg(&report);
    let bench = succeeded(run_with_timeout(bench, COMMAND_LIMIT));
    let doc: serde_json::Value = serde_json::from_slice(&bench.stdout).expect("one JSON document");
    let points = doc["points"].as_array().expect("points");
    assert!(!points.is_empty(), "{doc:#}");
    for p in points {
        assert!(p["reads"].as_u64().unwrap() > 0, "{p:#}");
        assert_eq!(p["errors"], 0, "{p:#}");
    }

    // `sync` of a tree up, again (nothing to copy), and down into an empty directory.
    let tree = dir.path().join("tree");
    let files = make_tree(&tree);
    let sync = |from: &Path, to: &str, reverse: bool| {
        let mut cmd = brisk_at(&endpoints, &["sync", "--json"]);
        if reverse {
            cmd.arg(to).arg(from);
        } else {
            cmd.arg(from).arg(to);
        }
        let out = succeeded(run_with_timeout(cmd, COMMAND_LIMIT));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["type"] == "summary")
            .unwrap_or_else(|| panic!("no summary in {text}"))
    };
    let first = sync(&tree, "s3://healthy/tree/", false);
    assert_eq!(first["transferred"], files.len(), "{first}");
    let again = sync(&tree, "s3://healthy/tree/", false);
    assert_eq!(again["transferred"], 0, "{again}");
    assert_eq!(again["skipped"], files.len(), "{again}");
    std::fs::remove_dir_all(&tree).unwrap();
    let back = dir.path().join("back");
    let down = sync(&back, "s3://healthy/tree/", true);
    assert_eq!(down["transferred"], files.len(), "{down}");
    for (name, seed, len) in &files {
        check_file_and_remove(&back.join(name), *seed, *len);
    }
    let left: Vec<_> = walk(&back);
    assert!(
        left.is_empty(),
        "files sync made that the tree does not have: {left:?}"
    );

    drop(cluster);
    eprintln!(
        "healthy-cluster test: {:.1} s",
        began.elapsed().as_secs_f64()
    );
}

/// The files under `root`, recursively.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// Runs `check` (a whole read through node `node` just after a node came back) until it passes,
/// 2 s apart, for at most [`REJOIN_LIMIT`]. Right after a node that was down while an object was
/// written is back, MinIO answers `404 NoSuchKey` to reads of that object, through the client's
/// node as well as through the node that came back, for a few seconds (3 to 16 s seen here, in
/// most runs): by the look of it while it heals the object onto that node. The object is listed
/// all along and read whole afterwards. A client given several endpoints will meet this. How long
/// it lasted is said on standard error; longer than the limit fails the test.
fn read_back(node: usize, check: impl Fn()) {
    let began = Instant::now();
    loop {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&check));
        match result {
            Ok(()) => break,
            Err(panic) if began.elapsed() > REJOIN_LIMIT => std::panic::resume_unwind(panic),
            Err(_) => std::thread::sleep(Duration::from_secs(2)),
        }
    }
    if began.elapsed() > Duration::from_secs(1) {
        eprintln!(
            "node {} served the read whole {:.1} s after the first attempt failed",
            node + 1,
            began.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn transfers_complete_when_a_node_is_killed_midway_and_nothing_is_lost() {
    let Some(mut cluster) = MinioCluster::start_or_skip(
        "transfers_complete_when_a_node_is_killed_midway_and_nothing_is_lost",
    ) else {
        return;
    };
    let began = Instant::now();
    let lap = |what: &str| eprintln!("{what} done at {:.1} s", began.elapsed().as_secs_f64());
    let endpoints = client_endpoints(&cluster);
    let dir = tempfile::Builder::new()
        .prefix("brisk-cluster-kills-")
        .tempdir()
        .unwrap();
    run(&endpoints, &["mb", "s3://kills"]);
    let restart = |cluster: &mut MinioCluster, node: usize| {
        cluster
            .restart(node)
            .unwrap_or_else(|e| panic!("restarting node {}: {e}", node + 1));
    };
    let upload_from_pattern = |key: &str, seed: u64, len: u64| {
        let source = dir.path().join("source.bin");
        write_pattern(&source, seed, len);
        let mut upload = cp(
            &endpoints,
            source.to_str().unwrap(),
            &format!("s3://kills/{key}"),
        );
        upload.arg("--debug");
        (source, upload)
    };

    // The object the download and the random reads are killed under, written with every node up.
    let (read_seed, written_seed, small_seed) = (7, 9, 8);
    let (source, upload) = upload_from_pattern("read.bin", read_seed, BIG);
    succeeded(run_with_timeout(upload, COMMAND_LIMIT));
    std::fs::remove_file(&source).unwrap();
    lap("first upload");

    // A download with node 2 killed a third of the way: it completes, whole.
    let down = dir.path().join("down.bin");
    let mut download = cp(&endpoints, "s3://kills/read.bin", down.to_str().unwrap());
    download.arg("--debug");
    let out = kill_midway(&mut cluster, 1, download, |t| t.from_node, BIG / 3);
    succeeded(out);
    check_file_and_remove(&down, read_seed, BIG);
    restart(&mut cluster, 1);
    lap("download with a kill");

    // A batch of random reads with node 4 killed a third of the way: every range arrives whole.
    let client = client_of(&cluster);
    let after_kill = runtime().block_on(async {
        let mut kill = || cluster.kill(3);
        tokio::time::timeout(
            COMMAND_LIMIT,
            random_reads(
                &client,
                "kills",
                "read.bin",
                (read_seed, BIG),
                (1500, 256 << 10),
                Some(&mut kill),
            ),
        )
        .await
        .expect("random reads within the limit")
    });
    assert_eq!(after_kill, 1500 - 1500 / 3);
    assert!(!cluster.is_running(3));
    restart(&mut cluster, 3);
    lap("random reads with a kill");

    // Every node back: the object is whole. It makes way for the next one (the disk they may take).
    check_object_streamed(&endpoints, "s3://kills/read.bin", read_seed, BIG);
    run(&endpoints, &["rm", "--quiet", "s3://kills/read.bin"]);
    cluster.empty_trash();
    assert!(
        cluster.disk_usage() < BIG / 4,
        "the cluster holds {} bytes once the object is deleted",
        cluster.disk_usage()
    );
    lap("read back");

    // An upload with node 3 killed a third of the way: it completes; a small object is written
    // while the node is still down.
    let (source, upload) = upload_from_pattern("written.bin", written_seed, BIG);
    let out = kill_midway(&mut cluster, 2, upload, |t| t.to_node, BIG / 3);
    succeeded(out);
    std::fs::remove_file(&source).unwrap();
    let small = dir.path().join("small.bin");
    write_pattern(&small, small_seed, 1_234_567);
    succeeded(run_with_timeout(
        cp(&endpoints, small.to_str().unwrap(), "s3://kills/small.bin"),
        COMMAND_LIMIT,
    ));
    std::fs::remove_file(&small).unwrap();
    restart(&mut cluster, 2);
    lap("upload with a kill");

    // Node 3 back: what was written while it was down is all there, read through the client's node
    // and through node 3, which holds none of the second half of the upload nor the small object
    // until MinIO heals them onto it.
    let listed = run(&endpoints, &["ls", "--json", "s3://kills/"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(listed.lines().count(), 2, "{listed}");
    for node in [CLIENT_NODE, 2] {
        let through = vec![cluster.endpoint(node).to_owned()];
        for (key, seed, len) in [
            ("written.bin", written_seed, BIG),
            ("small.bin", small_seed, 1_234_567),
        ] {
            let url = format!("s3://kills/{key}");
            read_back(node, || check_object_streamed(&through, &url, seed, len));
        }
    }

    drop(cluster);
    eprintln!("kill test: {:.1} s", began.elapsed().as_secs_f64());
}
