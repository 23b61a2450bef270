//! `brisk serve` on a full disk: a PUT that does not fit fails with a clear 5xx S3 error, nothing
//! half-written becomes visible, reads go on, and writes succeed again once space is freed.
//!
//! The server runs on a 24 MiB tmpfs mounted in a mount namespace of its own (`unshare --user
//! --map-root-user --mount`), so the test needs neither root nor a loop device, and the file system
//! disappears with the server. Where user namespaces are not available, the test says so and skips.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::serve_wrapped;
use brisk_testkit::http::{self, xml_value};

/// Size of the file system the server stores into.
const FS_SIZE_MIB: usize = 24;

/// Runs the server on a fresh tmpfs of [`FS_SIZE_MIB`] mounted over `root` in its own namespace.
const MOUNT_AND_EXEC: &str = r#"mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@""#;

fn wrapper(root: &Path) -> Vec<String> {
    [
        "unshare",
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        MOUNT_AND_EXEC,
        "sh",
        &format!("{FS_SIZE_MIB}m"),
        root.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// Whether this machine lets an unprivileged mount namespace mount a tmpfs.
fn can_mount_tmpfs(dir: &Path) -> bool {
    Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=1m tmpfs "$1""#)
        .arg("sh")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn body(tag: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| tag ^ (i as u8).wrapping_mul(31)).collect()
}

fn listed_keys(url: &str) -> Vec<String> {
    let http::Response {
        status,
        body: listing,
        ..
    } = http::request("GET", &format!("{url}/full?list-type=2"), &[], b"");
    assert_eq!(status, 200);
    let listing = String::from_utf8_lossy(&listing).into_owned();
    listing
        .split("<Contents>")
        .skip(1)
        .map(|entry| xml_value(entry, "Key").unwrap().to_string())
        .collect()
}

#[test]
fn a_full_disk_fails_puts_clearly_keeps_reads_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    std::fs::create_dir(&root).unwrap();
    if !can_mount_tmpfs(&root) {
        eprintln!(
            "SKIPPED: this machine does not allow `unshare --user --map-root-user --mount` to mount \
             a tmpfs, so no size-limited file system can be made for the full-disk test"
        );
        return;
    }
    let wrapper = wrapper(&root);
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    // The access log is off (the launcher's default); server errors must reach stderr anyway.
    let stderr_path = dir.path().join("stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let server = serve_wrapped(&wrapper, &root, &["--anonymous"], stderr.into());
    let url = server.url.clone();

    assert_eq!(
        http::request("PUT", &format!("{url}/full"), &[], b"").status,
        200
    );
    let kept = body(1, 1 << 20);
    assert_eq!(
        http::request("PUT", &format!("{url}/full/kept"), &[], &kept).status,
        200
    );

    // Fill the disk with 4 MiB objects until one does not fit.
    let chunk = 4 << 20;
    let mut stored = Vec::new();
    let (status, answer) = loop {
        assert!(stored.len() < 2 * FS_SIZE_MIB / 4, "the disk never filled");
        let key = format!("fill-{}", stored.len());
        let http::Response {
            status,
            body: answer,
            ..
        } = http::request("PUT", &format!("{url}/full/{key}"), &[], &body(2, chunk));
        if status != 200 {
            break (status, String::from_utf8_lossy(&answer).into_owned());
        }
        stored.push(key);
    };
    assert_eq!(status, 507, "{answer}");
    assert_eq!(
        xml_value(&answer, "Code"),
        Some("InsufficientStorage"),
        "{answer}"
    );
    assert!(
        xml_value(&answer, "Message").is_some_and(|m| m.contains("space")),
        "{answer}"
    );
    let failed = format!("fill-{}", stored.len());
    let logged = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        logged.contains(&format!(
            "507 InsufficientStorage PUT /full/{failed}: The server has no space left"
        )),
        "a server error is never silent, even with the access log off: {logged:?}"
    );
    let tmp = Path::new(&format!("/proc/{}/root", server.child.id()))
        .join(root.strip_prefix("/").unwrap())
        .join("tmp");
    match std::fs::read_dir(&tmp) {
        Ok(entries) => assert_eq!(entries.count(), 0, "the failed PUT's temp file is removed"),
        Err(e) => {
            eprintln!("cannot look into the server's mount namespace ({e}); temp files unchecked")
        }
    }

    // Fill what is left with ever smaller objects, down to the last pages, so the metadata database
    // meets the full disk too.
    for size in [256 << 10, 16 << 10, 1 << 10] {
        for _ in 0..200 {
            let key = format!("small-{}", stored.len());
            let http::Response {
                status,
                body: answer,
                ..
            } = http::request("PUT", &format!("{url}/full/{key}"), &[], &body(5, size));
            if status != 200 {
                let answer = String::from_utf8_lossy(&answer);
                eprintln!("a PUT of {size} bytes on the full disk: {status} {answer}");
                assert_eq!(status, 507, "{answer}");
                break;
            }
            stored.push(key);
        }
    }

    // Nothing of the failed PUT is visible; everything acknowledged reads back whole.
    assert_eq!(
        http::request("GET", &format!("{url}/full/{failed}"), &[], b"").status,
        404
    );
    let mut expected: Vec<String> = stored.clone();
    expected.push("kept".into());
    expected.sort();
    assert_eq!(listed_keys(&url), expected);
    let got = http::request("GET", &format!("{url}/full/kept"), &[], b"");
    assert_eq!((got.status, got.body), (200, kept.clone()));

    // A multipart part that does not fit fails the same way, and the upload can still be aborted.
    let http::Response {
        status,
        body: created,
        ..
    } = http::request("POST", &format!("{url}/full/big?uploads"), &[], b"");
    assert_eq!(status, 200);
    let created = String::from_utf8_lossy(&created).into_owned();
    let upload = xml_value(&created, "UploadId").unwrap().to_string();
    let http::Response {
        status,
        body: answer,
        ..
    } = http::request(
        "PUT",
        &format!("{url}/full/big?partNumber=1&uploadId={upload}"),
        &[],
        &body(3, 8 << 20),
    );
    assert_eq!(status, 507, "{}", String::from_utf8_lossy(&answer));
    let http::Response {
        status, body: _, ..
    } = http::request(
        "DELETE",
        &format!("{url}/full/big?uploadId={upload}"),
        &[],
        b"",
    );
    assert_eq!(status, 204);

    // Free space: the same PUT now succeeds, and reads back whole.
    for key in stored.drain(..) {
        assert_eq!(
            http::request("DELETE", &format!("{url}/full/{key}"), &[], b"").status,
            204
        );
    }
    let again = body(4, chunk);
    assert_eq!(
        http::request("PUT", &format!("{url}/full/{failed}"), &[], &again).status,
        200
    );
    let got = http::request("GET", &format!("{url}/full/{failed}"), &[], b"");
    assert_eq!((got.status, got.body), (200, again));
    assert_eq!(listed_keys(&url), vec![failed.clone(), "kept".to_string()]);
}
