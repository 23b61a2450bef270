//! A `brisk serve` killed with SIGKILL in the middle of an upload, then restarted on the same
//! directory, shows no partial object: the key is absent (or keeps its previous version), and the
//! temp file of the interrupted body is swept.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::support::serve;
use brisk_testkit::http::{self, xml_value};

#[test]
fn sigkill_during_an_upload_leaves_no_partial_object() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let mut server = serve(&root, &["--anonymous"]);
    assert_eq!(
        http::request("PUT", &format!("{}/crash-bucket", server.url), &[], b"").status,
        200
    );
    assert_eq!(
        http::request(
            "PUT",
            &format!("{}/crash-bucket/old", server.url),
            &[],
            b"old version"
        )
        .status,
        200
    );

    // Two uploads cut halfway: a new key, and an overwrite of an existing one.
    let total = 8u64 << 20;
    let mut streams = Vec::new();
    for key in ["new", "old"] {
        let mut s = TcpStream::connect(server.url.trim_start_matches("http://")).unwrap();
        write!(
            s,
            "PUT /crash-bucket/{key} HTTP/1.1\r\nHost: x\r\nContent-Length: {total}\r\n\r\n"
        )
        .unwrap();
        s.write_all(&vec![b'x'; (total / 2) as usize]).unwrap();
        s.flush().unwrap();
        streams.push(s);
    }
    // Let the server write what it received into the temp files, then kill it.
    std::thread::sleep(Duration::from_millis(500));
    let tmp_before = std::fs::read_dir(root.join("tmp")).unwrap().count();
    assert_eq!(
        tmp_before, 2,
        "both interrupted bodies are in tmp/ before the kill"
    );
    server.kill();
    drop(streams);

    let server = serve(&root, &["--anonymous"]);
    let http::Response { status, body, .. } =
        http::request("GET", &format!("{}/crash-bucket/new", server.url), &[], b"");
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
    let http::Response { status, body, .. } =
        http::request("GET", &format!("{}/crash-bucket/old", server.url), &[], b"");
    assert_eq!((status, body.as_slice()), (200, b"old version".as_slice()));
    assert_eq!(
        std::fs::read_dir(root.join("tmp")).unwrap().count(),
        0,
        "the restart swept the partial bodies"
    );
}

/// A small deterministic generator (xorshift64*), so a failing run can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The body of version `version` of `key`: a header naming both, then bytes derived from them, so a
/// body read back can be checked without keeping a copy of what was written.
fn versioned_body(key: &str, version: u64, len: usize) -> Vec<u8> {
    let mut body = format!("{key}@{version}#").into_bytes();
    let mut state =
        Rng(0x9e37_79b9_7f4a_7c15 ^ version.wrapping_mul(0x100_0000_01b3) ^ key.len() as u64);
    while body.len() < len {
        body.extend_from_slice(&state.next().to_le_bytes());
    }
    body.truncate(len.max(key.len() + 24));
    body
}

/// Which version of `key` a body read back holds, if it is exactly one that was written.
fn version_of(key: &str, body: &[u8]) -> Option<u64> {
    let end = body.iter().take(256).position(|&b| b == b'#')?;
    let header = std::str::from_utf8(&body[..end]).ok()?;
    let version = header.strip_prefix(key)?.strip_prefix('@')?.parse().ok()?;
    (versioned_body(key, version, body.len()) == body).then_some(version)
}

/// What one writer did to one key across all rounds: the versions the server acknowledged and the
/// versions it was sent (a version sent but not acknowledged may or may not have landed).
#[derive(Default, Clone)]
struct KeyHistory {
    last_acknowledged: Option<u64>,
    last_sent: Option<u64>,
}

/// Writes `body` as `key` with a two-part multipart upload (5 MiB, then the rest). Returns whether
/// the completion was acknowledged (or the refusal); `None` when the server went away part way.
fn multipart_put(url: &str, key: &str, body: &[u8]) -> Option<Result<(), String>> {
    let refused = |what: &str, status: u16, body: &[u8]| {
        Some(Err(format!(
            "{what}: {status} {}",
            String::from_utf8_lossy(body)
        )))
    };
    let http::Response {
        status,
        body: created,
        ..
    } = http::try_request("POST", &format!("{url}/rounds/{key}?uploads"), &[], b"")?;
    if status != 200 {
        return refused("create", status, &created);
    }
    let created = String::from_utf8_lossy(&created).into_owned();
    let upload_id = xml_value(&created, "UploadId")?.to_string();
    let split = 5 << 20;
    let mut parts = String::new();
    for (number, piece) in [(1, &body[..split]), (2, &body[split..])] {
        let http::Response {
            status,
            head,
            body: answer,
        } = http::try_request(
            "PUT",
            &format!("{url}/rounds/{key}?partNumber={number}&uploadId={upload_id}"),
            &[],
            piece,
        )?;
        if status != 200 {
            return refused("part", status, &answer);
        }
        let etag = head.lines().find_map(|l| {
            l.strip_prefix("etag: ")
                .or_else(|| l.strip_prefix("ETag: "))
        })?;
        parts.push_str(&format!(
            "<Part><PartNumber>{number}</PartNumber><ETag>{etag}</ETag></Part>"
        ));
    }
    let complete = format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>");
    let http::Response {
        status,
        body: answer,
        ..
    } = http::try_request(
        "POST",
        &format!("{url}/rounds/{key}?uploadId={upload_id}"),
        &[],
        complete.as_bytes(),
    )?;
    // A completion answers 200 before its body; an error inside the 200 body is a failure.
    if status != 200 || String::from_utf8_lossy(&answer).contains("<Error>") {
        return refused("complete", status, &answer);
    }
    Some(Ok(()))
}

/// One writer: overwrites its own keys with new versions, single PUTs and multipart uploads mixed,
/// until a request fails because the server is gone. Returns the updated histories.
fn writer(
    url: String,
    writer: usize,
    seed: u64,
    mut keys: Vec<KeyHistory>,
    next_version: u64,
) -> Vec<KeyHistory> {
    let mut rng = Rng(seed | 1);
    let mut version = next_version;
    loop {
        let slot = rng.below(keys.len() as u64) as usize;
        let key = format!("w{writer}/k{slot}");
        version += 1;
        let multipart = rng.below(4) == 0;
        let len = if multipart {
            (5 << 20) + 1 + rng.below(1 << 20) as usize
        } else {
            1 + rng.below(1 << 20) as usize
        };
        let body = versioned_body(&key, version, len);
        keys[slot].last_sent = Some(version);
        let acknowledged = if multipart {
            multipart_put(&url, &key, &body)
        } else {
            http::try_request("PUT", &format!("{url}/rounds/{key}"), &[], &body).map(
                |http::Response {
                     status,
                     body: answer,
                     ..
                 }| {
                    (status == 200)
                        .then_some(())
                        .ok_or_else(|| format!("{status} {}", String::from_utf8_lossy(&answer)))
                },
            )
        };
        match acknowledged {
            Some(Ok(())) => keys[slot].last_acknowledged = Some(version),
            Some(Err(refusal)) => {
                panic!("the server refused a PUT of {key} while running: {refusal}")
            }
            None => return keys,
        }
    }
}

/// After a restart: every acknowledged write reads back whole (its version or a later one sent), no
/// listed object is torn, listing and GET agree, `tmp/` is empty, and interrupted multipart uploads
/// are listed (then aborted here) or gone.
fn check_after_restart(url: &str, root: &std::path::Path, histories: &[Vec<KeyHistory>]) -> usize {
    assert_eq!(
        std::fs::read_dir(root.join("tmp")).unwrap().count(),
        0,
        "the restart swept every temporary file"
    );
    let mut readable = std::collections::BTreeMap::new();
    for (w, keys) in histories.iter().enumerate() {
        for (slot, history) in keys.iter().enumerate() {
            let key = format!("w{w}/k{slot}");
            let http::Response { status, body, .. } =
                http::request("GET", &format!("{url}/rounds/{key}"), &[], b"");
            match status {
                200 => {
                    let version = version_of(&key, &body).unwrap_or_else(|| {
                        panic!("{key}: a torn or foreign body of {} bytes", body.len())
                    });
                    assert!(
                        history.last_acknowledged.is_none_or(|a| version >= a),
                        "{key}: version {version} read back, but {:?} was acknowledged",
                        history.last_acknowledged
                    );
                    assert!(
                        history.last_sent.is_some_and(|s| version <= s),
                        "{key}: version {version} was never sent"
                    );
                    readable.insert(key, body.len() as u64);
                }
                404 => assert!(
                    history.last_acknowledged.is_none(),
                    "{key}: acknowledged version {:?} lost",
                    history.last_acknowledged
                ),
                other => panic!(
                    "{key}: GET answered {other}: {}",
                    String::from_utf8_lossy(&body)
                ),
            }
        }
    }

    // The listing names exactly the readable keys, with their sizes.
    let http::Response {
        status,
        body: listing,
        ..
    } = http::request(
        "GET",
        &format!("{url}/rounds?list-type=2&max-keys=1000"),
        &[],
        b"",
    );
    assert_eq!(status, 200);
    let listing = String::from_utf8_lossy(&listing).into_owned();
    let mut listed = std::collections::BTreeMap::new();
    for entry in listing.split("<Contents>").skip(1) {
        let key = xml_value(entry, "Key").unwrap().to_string();
        let size: u64 = xml_value(entry, "Size").unwrap().parse().unwrap();
        listed.insert(key, size);
    }
    assert_eq!(listed, readable, "listing and GET agree");

    // Interrupted multipart uploads are still listed (S3 keeps them until aborted): abort them.
    let http::Response {
        status,
        body: uploads,
        ..
    } = http::request("GET", &format!("{url}/rounds?uploads"), &[], b"");
    assert_eq!(status, 200);
    let uploads = String::from_utf8_lossy(&uploads).into_owned();
    let mut aborted = 0;
    for upload in uploads.split("<Upload>").skip(1) {
        let key = xml_value(upload, "Key").unwrap();
        let id = xml_value(upload, "UploadId").unwrap();
        let http::Response { status, body, .. } = http::request(
            "DELETE",
            &format!("{url}/rounds/{key}?uploadId={id}"),
            &[],
            b"",
        );
        assert_eq!(status, 204, "{}", String::from_utf8_lossy(&body));
        aborted += 1;
    }
    aborted
}

#[test]
fn sigkill_at_random_moments_under_concurrent_puts_loses_no_acknowledged_write() {
    const WRITERS: usize = 4;
    const KEYS_PER_WRITER: usize = 4;
    const ROUNDS: u64 = 5;
    let seed = std::env::var("BRISK_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("crash rounds: BRISK_CRASH_SEED={seed}");
    let mut rng = Rng(seed | 1);

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    let mut histories = vec![vec![KeyHistory::default(); KEYS_PER_WRITER]; WRITERS];
    {
        let server = serve(&root, &["--anonymous"]);
        assert_eq!(
            http::request("PUT", &format!("{}/rounds", server.url), &[], b"").status,
            200
        );
    }
    for round in 0..ROUNDS {
        let mut server = serve(&root, &["--anonymous"]);
        let aborted = check_after_restart(&server.url, &root, &histories);
        eprintln!(
            "round {round}: restarted, checked, {aborted} interrupted multipart uploads aborted"
        );
        let writers: Vec<_> = histories
            .iter()
            .enumerate()
            .map(|(w, keys)| {
                let (url, keys, seed) = (server.url.clone(), keys.clone(), rng.next());
                // Versions grow across rounds: round r writes versions from r * 1_000_000.
                std::thread::spawn(move || writer(url, w, seed, keys, round * 1_000_000))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300 + rng.below(1200)));
        server.kill();
        histories = writers.into_iter().map(|w| w.join().unwrap()).collect();
        let acknowledged: usize = histories
            .iter()
            .flatten()
            .filter(|h| h.last_acknowledged.is_some())
            .count();
        let sent: u64 = histories
            .iter()
            .flatten()
            .filter_map(|h| h.last_sent.filter(|&v| v > round * 1_000_000))
            .map(|v| v - round * 1_000_000)
            .max()
            .unwrap_or(0);
        eprintln!(
            "round {round}: killed after up to {sent} writes per writer; {acknowledged} keys hold an acknowledged version"
        );
    }
    let server = serve(&root, &["--anonymous"]);
    check_after_restart(&server.url, &root, &histories);
}
