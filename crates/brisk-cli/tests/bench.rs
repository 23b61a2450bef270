//! `brisk bench` run as a user runs it: the real binary, starting its own embedded server or pointed
//! at a `brisk serve` started here, every run bounded in time, its JSON and HTML checked.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use support::{ACCESS_KEY, SECRET_KEY, ServeProcess, run_with_timeout};

/// A `--quick` suite finishes in seconds even in a debug build; this bounds a hang.
const BENCH_LIMIT: Duration = Duration::from_secs(180);

/// `brisk <args>` with credentials from the environment only (no profile of the machine's user).
fn brisk(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    cmd.args(args);
    for var in [
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_SESSION_TOKEN",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("AWS_CONFIG_FILE", home.join("config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", home.join("credentials"))
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
    cmd
}

#[track_caller]
fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The case entry named `name` of a report.
fn case<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .expect("cases is a list")
        .iter()
        .find(|c| c["case"] == name)
        .unwrap_or_else(|| panic!("no {name} case in {report:#}"))
}

/// Every figure of a measured case is present and sane: positive sizes and rates, finite
/// non-negative amplification and CPU.
#[track_caller]
fn measured(case: &Value, runs: u64) {
    assert!(case["bytes"].as_u64().unwrap() > 0, "{case:#}");
    assert_eq!(case["runs"].as_u64(), Some(runs), "{case:#}");
    assert_eq!(case["samples"].as_array().unwrap().len() as u64, runs);
    for figure in ["gib_per_s", "peak_rss_bytes"] {
        for at in ["median", "min", "max"] {
            let v = case[figure][at].as_f64().unwrap();
            assert!(v.is_finite() && v > 0.0, "{figure}.{at} of {case:#}");
        }
    }
    for figure in ["amplification", "cpu_s_per_gib", "rss_growth_bytes"] {
        let v = case[figure]["median"].as_f64().unwrap();
        assert!(v.is_finite() && v >= 0.0, "{figure} of {case:#}");
    }
    let fraction = case["fraction_of_loopback"].as_f64().unwrap();
    assert!(fraction.is_finite() && fraction > 0.0, "{case:#}");
}

#[test]
fn quick_suite_on_its_own_embedded_server() {
    let dir = tempfile::tempdir().unwrap();
    let (json, report, work) = (
        dir.path().join("bench.json"),
        dir.path().join("report"),
        dir.path().join("work"),
    );
    std::fs::create_dir(&work).unwrap();
    let mut cmd = brisk(dir.path(), &["bench", "--quick", "--json-file"]);
    cmd.arg(&json)
        .arg("--report")
        .arg(&report)
        .arg("--work-dir")
        .arg(&work);
    let out = run_with_timeout(cmd, BENCH_LIMIT);
    succeeded(&out);

    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for name in ["loopback", "get", "download", "upload", "server"] {
        measured(case(&doc, name), 1);
    }
    assert_eq!(case(&doc, "get")["bytes"], 16 << 20);
    assert_eq!(case(&doc, "upload")["bytes"], 64 << 20);
    // The whole object is held once: the client grew by at least its size.
    assert!(
        case(&doc, "get")["amplification"]["median"]
            .as_f64()
            .unwrap()
            >= 0.9
    );
    assert_eq!(doc["endpoint"], "embedded");
    assert_eq!(doc["server"]["fsync"], true);
    assert_eq!(doc["server"]["md5_etag"], true);

    // The table went to stdout; stderr is not a terminal, so no progress line.
    let table = String::from_utf8_lossy(&out.stdout);
    for name in [
        "loopback 64.0 MiB",
        "get 16.0 MiB",
        "upload 64.0 MiB",
        "server 64.0 MiB",
    ] {
        assert!(table.contains(name), "{table}");
    }
    assert!(!String::from_utf8_lossy(&out.stderr).contains("brisk bench:"));

    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert_eq!(
        page.matches("<svg").count(),
        3,
        "one chart each for rate, memory, CPU"
    );
    for name in [
        "loopback",
        "get 16.0 MiB",
        "download 64.0 MiB",
        "upload",
        "server",
    ] {
        assert!(page.contains(name), "{name} missing from the report");
    }
    // The server's directory and the downloaded file are gone.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}

#[test]
fn against_an_endpoint_it_touches_only_its_own_keys() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let server = ServeProcess::start(&root, &[]);
    let at = |args: &[&str]| {
        let mut all = vec!["--endpoint-url", server.url.as_str()];
        all.extend_from_slice(args);
        brisk(dir.path(), &all)
    };
    let keep = dir.path().join("keep.txt");
    std::fs::write(&keep, b"not the benchmark's").unwrap();
    succeeded(&run_with_timeout(at(&["mb", "s3://mine"]), BENCH_LIMIT));
    let mut put = at(&["cp"]);
    put.arg(&keep).arg("s3://mine/keep.txt");
    succeeded(&run_with_timeout(put, BENCH_LIMIT));

    // In a given bucket, with the JSON on stdout.
    let mut cmd = at(&[
        "bench",
        "--bucket",
        "mine",
        "--size-get",
        "4MiB",
        "--size-transfer",
        "16MiB",
        "--repeat",
        "1",
        "--json",
        "--report",
    ]);
    cmd.arg(dir.path().join("report"));
    let out = run_with_timeout(cmd, BENCH_LIMIT);
    succeeded(&out);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    for name in ["loopback", "get", "download", "upload"] {
        measured(case(&doc, name), 1);
    }
    assert_eq!(doc["endpoint"], server.url.as_str());
    assert!(doc["server"].is_null());
    assert!(
        doc["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["case"] != "server")
    );
    assert!(doc["notes"][0].as_str().unwrap().starts_with("server:"));
    assert!(dir.path().join("report/index.html").exists());

    // Without --bucket: a bucket of its own, removed at the end.
    let mut cmd = at(&[
        "bench",
        "--cases",
        "get",
        "--size-get",
        "1MiB",
        "--repeat",
        "1",
        "-q",
    ]);
    cmd.arg("--report").arg(dir.path().join("report2"));
    succeeded(&run_with_timeout(cmd, BENCH_LIMIT));

    let listing = run_with_timeout(at(&["ls", "s3://mine", "--recursive"]), BENCH_LIMIT);
    succeeded(&listing);
    let objects = String::from_utf8_lossy(&listing.stdout);
    assert_eq!(objects.lines().count(), 1, "{objects}");
    assert!(objects.contains("keep.txt"), "{objects}");
    let buckets = run_with_timeout(at(&["ls"]), BENCH_LIMIT);
    succeeded(&buckets);
    let buckets = String::from_utf8_lossy(&buckets.stdout);
    assert_eq!(buckets.lines().count(), 1, "{buckets}");
    assert!(buckets.contains("mine"), "{buckets}");
}

#[test]
fn an_unreachable_endpoint_is_a_network_error() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let mut cmd = brisk(
        dir.path(),
        &["--endpoint-url", &url, "bench", "--quick", "--report"],
    );
    cmd.arg(dir.path().join("report"));
    let out = run_with_timeout(cmd, BENCH_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.starts_with("brisk: bench: "), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!dir.path().join("report").exists());
}
