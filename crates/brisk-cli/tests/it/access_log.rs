//! `brisk serve`'s access log: one line per request on standard error, JSON or plain, with the
//! fields an operator needs (request id, remote address, method, bucket, key, status, error code,
//! bytes in and out, duration), driven by brisk's own CLI.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{brisk, serve_with_stderr};

/// The log's lines once one of them contains `last` (the writer thread is asynchronous), within
/// 10 s.
fn lines(log: &Path, last: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.iter().any(|l| l.contains(last)) || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn json_lines_record_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = serve_with_stderr(
        &dir.path().join("data"),
        &["--log-format", "json"],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let body = vec![7u8; 3 << 20];
    let source = dir.path().join("three.bin");
    std::fs::write(&source, &body).unwrap();
    assert!(brisk(&server.url, &["mb", "s3://logged"]).status.success());
    assert!(
        brisk(
            &server.url,
            &[
                "cp",
                source.to_str().unwrap(),
                "s3://logged/dir/three mib.bin"
            ]
        )
        .status
        .success()
    );
    let copy = dir.path().join("copy.bin");
    let got = brisk(
        &server.url,
        &[
            "cp",
            "s3://logged/dir/three mib.bin",
            copy.to_str().unwrap(),
        ],
    );
    assert!(got.status.success() && std::fs::read(&copy).unwrap() == body);
    assert!(
        brisk(
            &server.url,
            &["cp", source.to_str().unwrap(), "s3://logged/cat.bin"]
        )
        .status
        .success()
    );
    let catted = brisk(&server.url, &["cat", "s3://logged/cat.bin"]);
    assert!(catted.status.success() && catted.stdout == body);
    // Larger than a part (8 MiB): ranged GETs after the one HEAD that planned the copy.
    let nine = vec![9u8; 9 << 20];
    let nine_source = dir.path().join("nine.bin");
    std::fs::write(&nine_source, &nine).unwrap();
    assert!(
        brisk(
            &server.url,
            &["cp", nine_source.to_str().unwrap(), "s3://logged/nine.bin"]
        )
        .status
        .success()
    );
    let nine_copy = dir.path().join("nine-copy.bin");
    let got = brisk(
        &server.url,
        &["cp", "s3://logged/nine.bin", nine_copy.to_str().unwrap()],
    );
    assert!(got.status.success() && std::fs::read(&nine_copy).unwrap() == nine);
    assert!(
        !brisk(&server.url, &["cat", "s3://logged/missing"])
            .status
            .success()
    );

    let records: Vec<serde_json::Value> = lines(&log, "NoSuchKey")
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for r in &records {
        let id = r["request_id"].as_str().unwrap();
        assert!(
            id.len() == 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{r}"
        );
        assert!(
            r["remote"].as_str().unwrap().starts_with("127.0.0.1:"),
            "{r}"
        );
        assert!(r["time"].as_str().unwrap().ends_with('Z'), "{r}");
        assert!(r["duration_ms"].as_f64().unwrap() >= 0.0, "{r}");
    }
    let find = |method: &str, status: u64| {
        records
            .iter()
            .find(|r| r["method"] == method && r["status"] == status && r["bucket"] == "logged")
            .unwrap_or_else(|| panic!("no {method} {status} line in {records:#?}"))
    };
    let put = find("PUT", 200);
    assert!(
        records.iter().any(|r| r["method"] == "PUT"
            && r["key"] == "dir/three mib.bin"
            && r["bytes_in"] == 3 << 20),
        "{records:#?}"
    );
    assert_eq!(put["error_code"], serde_json::Value::Null);
    // The download: a HEAD (nothing out), then ranged GETs whose bodies add up to the object.
    let head = records
        .iter()
        .find(|r| r["method"] == "HEAD" && r["key"] == "dir/three mib.bin")
        .unwrap_or_else(|| panic!("no HEAD line in {records:#?}"));
    assert_eq!(
        (head["status"].as_u64(), head["bytes_out"].as_u64()),
        (Some(200), Some(0))
    );
    let read: u64 = records
        .iter()
        .filter(|r| r["method"] == "GET" && r["key"] == "dir/three mib.bin")
        .map(|r| r["bytes_out"].as_u64().unwrap())
        .sum();
    assert_eq!(read, 3 << 20, "{records:#?}");
    // `cat` is the GET alone: no HEAD before it (one round trip, not two).
    let cat_requests: Vec<&str> = records
        .iter()
        .filter(|r| r["key"] == "cat.bin")
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(cat_requests, ["PUT", "GET"], "{records:#?}");
    let heads = records
        .iter()
        .filter(|r| r["key"] == "nine.bin" && r["method"] == "HEAD")
        .count();
    assert_eq!(heads, 1, "one HEAD for the download: {records:#?}");
    let missing = records
        .iter()
        .find(|r| r["key"] == "missing" && r["status"] != 200)
        .unwrap_or_else(|| panic!("no line for the missing key in {records:#?}"));
    assert_eq!(missing["error_code"], "NoSuchKey", "{missing}");
    assert_eq!(missing["status"], 404, "{missing}");
}

#[test]
fn plain_lines_are_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = serve_with_stderr(
        &dir.path().join("data"),
        &["--log-format", "plain"],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    assert!(brisk(&server.url, &["mb", "s3://plain"]).status.success());
    let got = lines(&log, "PUT");
    let fields: Vec<&str> = got[0].split(' ').collect();
    // time, request id, remote, method, bucket, key, status, error code, bytes in, bytes out, ms
    assert_eq!(fields.len(), 11, "{got:?}");
    assert_eq!(&fields[3..8], ["PUT", "plain", "-", "200", "-"], "{got:?}");

    // `brisk serve` without --log-format writes plain lines: the flag's default.
    let out = Command::new(env!("CARGO_BIN_EXE_brisk"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("--log-format") && help.contains("[default: plain]"),
        "{help}"
    );
}
