//! `brisk bench mixed` run as a user runs it: against its own embedded server and against a
//! `brisk serve` started here, every run short (`--quick`: 1 s of operations), its JSON checked for
//! shape and counts (no timing), and bad input refused with exit code 2.

use std::time::Duration;

use crate::bench::{brisk as bench, succeeded};
use crate::support::{brisk, run_with_timeout, serve};
use serde_json::Value;

/// A `--quick` run takes a few seconds even in a debug build; this bounds a hang.
const LIMIT: Duration = Duration::from_secs(120);

/// Every operation runs in a quick mix with this: LIST and a larger share of DELETE than warp's
/// default.
const ALL_FIVE: &str = "get=30,head=20,put=20,delete=15,list=15";

/// Each operation of `ops` ran without an error, the counts sum to the total, every latency
/// percentile is there (TTFB for GET only), and nothing is left under the run's prefix.
#[track_caller]
fn counts_add_up(doc: &Value, ops: &[&str]) {
    let entries = doc["ops"].as_array().expect("ops is a list");
    let names: Vec<&str> = entries.iter().map(|o| o["op"].as_str().unwrap()).collect();
    assert_eq!(names, ops, "{doc:#}");
    let mut sum = 0;
    for o in entries {
        let count = o["count"].as_u64().unwrap();
        assert!(count > 0, "{o:#}");
        assert_eq!(o["errors"], 0, "{o:#}");
        sum += count;
        for p in ["p50", "p90", "p99", "max"] {
            assert!(o["latency_ms"][p].as_f64().unwrap() >= 0.0, "{o:#}");
        }
        assert_eq!(o["ttfb_ms"].is_null(), o["op"] != "get", "{o:#}");
        let moves_bytes = o["op"] == "get" || o["op"] == "put";
        assert_eq!(o["bytes"].as_u64().unwrap() > 0, moves_bytes, "{o:#}");
    }
    assert_eq!(doc["total"]["count"].as_u64(), Some(sum));
    assert_eq!(doc["total"]["errors"], 0);
    assert!(doc["total"]["client_cpu_seconds"].as_f64().unwrap() >= 0.0);
    let timeline: u64 = doc["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| ops.iter().map(move |op| s[op].as_u64().unwrap()))
        .sum();
    assert_eq!(timeline, sum, "the 1 s buckets hold every operation");
    assert_eq!(doc["objects_left"], 0, "{doc:#}");
    assert!(doc["first_error"].is_null(), "{doc:#}");
}

#[test]
fn mixed_quick_on_its_own_embedded_server() {
    let dir = tempfile::tempdir().unwrap();
    let (json, report, work) = (
        dir.path().join("mixed.json"),
        dir.path().join("report"),
        dir.path().join("work"),
    );
    std::fs::create_dir(&work).unwrap();
    let mut cmd = bench(
        dir.path(),
        &[
            "bench",
            "mixed",
            "--quick",
            "--mix",
            ALL_FIVE,
            "--json-file",
        ],
    );
    cmd.arg(&json)
        .arg("--report")
        .arg(&report)
        .arg("--work-dir")
        .arg(&work);
    let out = run_with_timeout(cmd, LIMIT);
    succeeded(&out);
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    counts_add_up(&doc, &["get", "put", "head", "delete", "list"]);
    assert_eq!(doc["benchmark"], "mixed");
    assert_eq!(doc["endpoint"], "embedded");
    assert_eq!(doc["server"]["fsync"], true);
    assert_eq!(
        (doc["objects"].as_u64(), doc["concurrent"].as_u64()),
        (Some(20), Some(4))
    );
    assert_eq!(
        (doc["size_min"].as_u64(), doc["size_max"].as_u64()),
        (Some(4096), Some(65536))
    );
    assert!(doc["total"]["server_cpu_seconds"].as_f64().unwrap() >= 0.0);

    let table = String::from_utf8_lossy(&out.stdout);
    for word in [
        "GET",
        "PUT",
        "HEAD",
        "DELETE",
        "LIST",
        "TTFB p99",
        "µs per operation",
    ] {
        assert!(table.contains(word), "{word}: {table}");
    }
    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert_eq!(
        page.matches("<svg").count(),
        2,
        "latency and rate over time"
    );
    // The server's directory is gone with the run.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}

#[test]
fn mixed_against_an_endpoint_leaves_the_bucket_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("root"), &[]);
    let keep = dir.path().join("keep.txt");
    std::fs::write(&keep, b"not the benchmark's").unwrap();
    succeeded(&brisk(&server.url, &["mb", "s3://mine"]));
    succeeded(&brisk(
        &server.url,
        &["cp", keep.to_str().unwrap(), "s3://mine/keep.txt"],
    ));
    let pid = server.child.id().to_string();
    let report = dir.path().join("report");
    let out = brisk(
        &server.url,
        &[
            "--json",
            "bench",
            "mixed",
            "--quick",
            "--bucket",
            "mine",
            "--server-pid",
            &pid,
            "--size",
            "8KiB",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    succeeded(&out);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    // warp's default mix: no LIST.
    counts_add_up(&doc, &["get", "put", "head", "delete"]);
    assert_eq!(doc["endpoint"], server.url.as_str());
    assert!(doc["server"].is_null());
    assert_eq!(
        doc["server_pid"].as_u64(),
        Some(u64::from(server.child.id()))
    );
    assert!(doc["total"]["server_cpu_seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        doc["ops"][1]["bytes"].as_u64().unwrap() % 8192,
        0,
        "fixed 8 KiB PUTs"
    );

    let listing = brisk(&server.url, &["ls", "s3://mine", "--recursive"]);
    succeeded(&listing);
    let objects = String::from_utf8_lossy(&listing.stdout);
    assert_eq!(objects.lines().count(), 1, "{objects}");
    assert!(objects.contains("keep.txt"), "{objects}");

    // A bucket that does not exist: the upload of the population fails (exit 3), and the PUTs
    // the server refused leave nothing to delete.
    let out = brisk(
        &server.url,
        &[
            "bench",
            "mixed",
            "--quick",
            "--bucket",
            "nosuch",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("upload the objects under s3://nosuch/"),
        "{stderr}"
    );
    assert!(!stderr.contains("could not delete"), "{stderr}");
}

#[test]
fn mixed_bad_arguments_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["--mix", "get=0,put=0"][..], "sums to 0"),
        (&["--mix", "get=many"], "a percentage is a number"),
        (&["--mix", "copy=10"], "not an operation"),
        (&["--mix", "get"], "OPERATION=PERCENT"),
        (&["--duration", "a while"], "is not a duration"),
        (&["--size", "huge"], "huge"),
        (&["--size", "1MiB..4KiB"], "smallest size is larger"),
        (&["--objects", "0"], "number of objects"),
        (&["--server-pid", "1"], "--endpoint-url"),
    ] {
        let mut cmd = bench(dir.path(), &["bench", "mixed"]);
        cmd.args(args)
            .arg("--report")
            .arg(dir.path().join("report"));
        let out = run_with_timeout(cmd, LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // Nothing was started or written.
    assert!(!dir.path().join("report").exists());
}
