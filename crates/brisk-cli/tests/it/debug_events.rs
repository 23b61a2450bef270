//! `--debug` and `RUST_LOG`: the client's events on stderr (whether a download is checked end to
//! end, retries), and nothing of the sort without them.

use crate::support::{brisk, brisk_with_env, serve, serve_wrapped};
use brisk_testkit::http;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn debug_says_whether_a_download_is_checked_and_shows_retries() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let url = server.url.as_str();
    assert!(brisk(url, &["mb", "s3://events"]).status.success());

    // Uploaded by brisk: stored with a full-object CRC, so the download is checked.
    let file = dir.path().join("file");
    std::fs::write(&file, vec![7u8; 3 << 20]).unwrap();
    let up = brisk(url, &["cp", file.to_str().unwrap(), "s3://events/checked"]);
    assert!(up.status.success(), "{}", stderr(&up));
    let out_path = dir.path().join("out");
    let out = dir.path().join("out").to_str().unwrap().to_string();
    let down = brisk(url, &["--debug", "cp", "s3://events/checked", &out]);
    assert!(down.status.success(), "{}", stderr(&down));
    assert!(
        stderr(&down).contains("will be checked against the object's full-object checksum"),
        "{}",
        stderr(&down)
    );
    assert_eq!(std::fs::read(&out_path).unwrap(), vec![7u8; 3 << 20]);

    // The same download without --debug prints nothing on stderr.
    let quiet = brisk(url, &["cp", "s3://events/checked", &out]);
    assert!(quiet.status.success());
    assert_eq!(stderr(&quiet), "");

    // An object written by a bare PUT has no stored checksum; RUST_LOG selects the events here
    // instead of --debug.
    let anonymous = serve(&dir.path().join("anon"), &["--anonymous"]);
    assert_eq!(
        http::request("PUT", &format!("{}/plain", anonymous.url), &[], b"").status,
        200
    );
    assert_eq!(
        http::request(
            "PUT",
            &format!("{}/plain/key", anonymous.url),
            &[],
            b"no checksum here"
        )
        .status,
        200
    );
    let down = brisk_with_env(
        &anonymous.url,
        &["--no-sign-request", "cp", "s3://plain/key", &out],
        &[("RUST_LOG", "brisk_client=debug")],
    );
    assert!(down.status.success(), "{}", stderr(&down));
    assert!(
        stderr(&down).contains("no stored checksum; this download is not checked end to end"),
        "{}",
        stderr(&down)
    );

    // A server that went away: each retry is an event, then the error.
    let gone = anonymous.url.clone();
    drop(anonymous);
    let failed = brisk(&gone, &["--debug", "--no-sign-request", "ls", "s3://plain"]);
    assert!(!failed.status.success());
    let retries = stderr(&failed).matches("retrying request").count();
    assert!(retries >= 1, "{}", stderr(&failed));
}

#[test]
fn the_server_emits_a_request_event_with_rust_log_even_with_the_access_log_off() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("stderr");
    let file = std::fs::File::create(&events).unwrap();
    let server = serve_wrapped(
        &["env", "RUST_LOG=brisk_server=debug"],
        &dir.path().join("data"),
        &[],
        file.into(),
    );
    let missing = brisk(server.url.as_str(), &["ls", "s3://no-such-bucket/some/key"]);
    assert!(!missing.status.success());
    drop(server);
    let text = std::fs::read_to_string(&events).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("request served") && l.contains("NoSuchBucket"))
        .unwrap_or_else(|| panic!("no request event for the failed listing in:\n{text}"));
    assert!(line.contains("bucket=\"no-such-bucket\""), "{line}");
    assert!(line.contains("status=404"), "{line}");
}
