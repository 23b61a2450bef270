//! `brisk bench` run as a user runs it: the real binary, starting its own embedded server or pointed
//! at a `brisk serve` started here, every run bounded in time, its JSON and HTML checked.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::support::{ACCESS_KEY, SECRET_KEY, run_with_timeout, serve};
use serde_json::Value;

/// A `--quick` suite finishes in seconds even in a debug build; this bounds a hang.
const BENCH_LIMIT: Duration = Duration::from_secs(180);

/// `brisk <args>` with credentials from the environment only (no profile of the machine's user).
pub(crate) fn brisk(home: &Path, args: &[&str]) -> Command {
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
pub(crate) fn succeeded(out: &Output) {
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

/// `--tls`: the same suite over HTTPS, the embedded server with a certificate made for the run and
/// trusted by the benchmark's client alone.
#[test]
fn quick_suite_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let mut cmd = brisk(
        dir.path(),
        &[
            "bench",
            "--quick",
            "--tls",
            "--cases",
            "loopback,get,download,upload,random",
            "--json-file",
        ],
    );
    cmd.arg(&json)
        .arg("--report")
        .arg(dir.path().join("report"));
    let out = run_with_timeout(cmd, BENCH_LIMIT);
    succeeded(&out);
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["server"]["tls"], true, "{doc:#}");
    for name in ["get", "download", "upload", "random"] {
        measured(case(&doc, name), 1);
    }
    assert_eq!(case(&doc, "random")["random"]["runs"][0]["errors"], 0);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("embedded server (child process, HTTPS)"),
        "{table}"
    );

    // With --endpoint-url there is no embedded server to put TLS on.
    let out = run_with_timeout(
        brisk(
            dir.path(),
            &["bench", "--tls", "--endpoint-url", "http://127.0.0.1:9"],
        ),
        BENCH_LIMIT,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    for name in ["loopback", "get", "download", "upload", "server", "random"] {
        measured(case(&doc, name), 1);
    }
    assert_eq!(case(&doc, "get")["bytes"], 16 << 20);
    // The random case: one run of 256 KiB reads at queue depth 64, whole blocks only.
    let random = &case(&doc, "random")["random"];
    assert_eq!(random["block_size"], 256 << 10);
    let run = &random["runs"][0];
    assert!(run["reads"].as_u64().unwrap() > 0, "{run:#}");
    assert_eq!(run["errors"], 0);
    assert_eq!(
        run["bytes"].as_u64().unwrap(),
        run["reads"].as_u64().unwrap() * (256 << 10)
    );
    assert!(random["iops"]["median"].as_f64().unwrap() > 0.0);
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
    assert_eq!(doc["server"]["tls"], false);

    // The table went to stdout; stderr is not a terminal, so no progress line.
    let table = String::from_utf8_lossy(&out.stdout);
    for name in [
        "loopback 64.0 MiB",
        "get 16.0 MiB",
        "upload 64.0 MiB",
        "server 64.0 MiB",
        "random 256.0 KiB QD 64",
        "IOPS",
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
        "random 256.0 KiB QD 64",
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
    let server = serve(&root, &[]);
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
    for name in ["loopback", "get", "download", "upload", "random"] {
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

/// The points of a `brisk bench random` document, each checked for sane figures: reads completed,
/// none failed, whole blocks only, few sockets and threads.
#[track_caller]
fn random_points(doc: &Value, connections: u64) -> &Vec<Value> {
    let points = doc["points"].as_array().expect("points is a list");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    for p in points {
        let reads = p["reads"].as_u64().unwrap();
        assert!(reads > 0, "{p:#}");
        assert_eq!(p["errors"], 0, "{p:#}");
        let block = p["block_size"].as_u64().unwrap();
        assert_eq!(p["bytes"].as_u64().unwrap(), reads * block, "{p:#}");
        for figure in ["iops", "mib_per_s", "seconds"] {
            let v = p[figure].as_f64().unwrap();
            assert!(v.is_finite() && v > 0.0, "{figure} of {p:#}");
        }
        for figure in ["cpu_s_per_gib", "p50_ms", "p99_ms"] {
            let v = p[figure].as_f64().unwrap();
            assert!(v.is_finite() && v >= 0.0, "{figure} of {p:#}");
        }
        assert!(p["p99_ms"].as_f64() >= p["p50_ms"].as_f64(), "{p:#}");
        let depth = p["queue_depth"].as_u64().unwrap();
        // The batch's own connections, plus the few the object's upload left idle in the pool.
        let used = p["max_connections"].as_u64().unwrap();
        assert!(used >= 1 && used <= connections.min(depth), "{p:#}");
        assert!(p["sockets"].as_u64().unwrap() <= connections + 6, "{p:#}");
        // Queue depth is not threads: the runtime's workers, the main thread and a few helpers.
        let threads = p["threads"].as_u64().unwrap();
        assert!(threads >= 1 && threads <= cores + 4, "{p:#}");
    }
    points
}

#[test]
fn random_sweep_on_its_own_embedded_server() {
    let dir = tempfile::tempdir().unwrap();
    let (json, report, work) = (
        dir.path().join("random.json"),
        dir.path().join("report"),
        dir.path().join("work"),
    );
    std::fs::create_dir(&work).unwrap();
    let mut cmd = brisk(dir.path(), &["bench", "random", "--quick", "--json-file"]);
    cmd.arg(&json)
        .arg("--report")
        .arg(&report)
        .arg("--work-dir")
        .arg(&work);
    let out = run_with_timeout(cmd, BENCH_LIMIT);
    succeeded(&out);

    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["benchmark"], "random");
    assert_eq!(doc["endpoint"], "embedded");
    assert_eq!(doc["object_size"], 64 << 20);
    assert_eq!(doc["object_written"], true);
    // The batch's default: a connection per read in flight, up to 64.
    assert_eq!(doc["connections"], 64);
    assert_eq!(doc["pipelining"], "auto");
    let points = random_points(&doc, 64);
    // 4 KiB and 256 KiB at queue depths 1 and 16, in that order.
    let grid: Vec<(u64, u64)> = points
        .iter()
        .map(|p| {
            (
                p["block_size"].as_u64().unwrap(),
                p["queue_depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(grid, vec![(4096, 1), (4096, 16), (262144, 1), (262144, 16)]);
    for p in points {
        // The embedded server is measured too.
        assert!(p["server_cpu_s_per_gib"].as_f64().unwrap() >= 0.0, "{p:#}");
        // At queue depth 1 one connection does all the work.
        if p["queue_depth"] == 1 {
            assert_eq!(p["max_connections"], 1, "{p:#}");
        }
    }

    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("IOPS") && table.contains("256.0 KiB"),
        "{table}"
    );
    assert_eq!(table.lines().filter(|l| l.contains(" KiB ")).count(), 4);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("brisk bench:"));

    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert_eq!(page.matches("<svg").count(), 3, "IOPS, MiB/s and CPU");
    // One line per block size in each chart, a point per (block size, queue depth).
    assert_eq!(page.matches("<path").count(), 6);
    assert_eq!(page.matches("<circle").count(), 12);
    assert!(page.contains("256.0 KiB at queue depth 16"));
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}

#[test]
fn random_point_against_an_endpoint_reads_an_existing_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("root"), &[]);
    let at = |args: &[&str]| {
        let mut all = vec!["--endpoint-url", server.url.as_str()];
        all.extend_from_slice(args);
        brisk(dir.path(), &all)
    };
    let object = dir.path().join("object.bin");
    std::fs::write(&object, vec![7u8; 3 << 20]).unwrap();
    succeeded(&run_with_timeout(at(&["mb", "s3://data"]), BENCH_LIMIT));
    let mut put = at(&["cp"]);
    put.arg(&object).arg("s3://data/table.bin");
    succeeded(&run_with_timeout(put, BENCH_LIMIT));

    let mut cmd = at(&[
        "bench",
        "random",
        "--bucket",
        "data",
        "--key",
        "table.bin",
        "--block-size",
        "256KiB",
        "--queue-depth",
        "8",
        "--duration",
        "500ms",
        "--connections",
        "2",
        "--pipelining",
        "on",
        "--json",
        "--report",
    ]);
    cmd.arg(dir.path().join("report"));
    let out = run_with_timeout(cmd, BENCH_LIMIT);
    succeeded(&out);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["endpoint"], server.url.as_str());
    assert!(doc["server"].is_null());
    assert_eq!(
        (doc["key"].as_str(), doc["object_written"].as_bool()),
        (Some("table.bin"), Some(false))
    );
    assert_eq!(doc["object_size"], 3 << 20);
    assert_eq!(doc["pipelining"], "on");
    let points = random_points(&doc, 2);
    assert_eq!(points.len(), 1);
    assert!(points[0]["server_cpu_s_per_gib"].is_null());
    assert!(
        points[0]["pipelined"].as_u64().unwrap() > 0,
        "{:#}",
        points[0]
    );
    assert!(dir.path().join("report/index.html").exists());

    // The object is still there, alone, and no bucket was added.
    let listing = run_with_timeout(at(&["ls", "s3://data", "--recursive"]), BENCH_LIMIT);
    succeeded(&listing);
    let objects = String::from_utf8_lossy(&listing.stdout);
    assert_eq!(objects.lines().count(), 1, "{objects}");
    assert!(objects.contains("table.bin"), "{objects}");
    let buckets = run_with_timeout(at(&["ls"]), BENCH_LIMIT);
    assert_eq!(String::from_utf8_lossy(&buckets.stdout).lines().count(), 1);

    // A block larger than the object: a usage error that says so.
    let out = run_with_timeout(
        at(&[
            "bench",
            "random",
            "--bucket",
            "data",
            "--key",
            "table.bin",
            "--block-size",
            "4MiB",
            "--queue-depth",
            "1",
        ]),
        BENCH_LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("larger than the object"), "{stderr}");
    // A key that does not exist: not found.
    let out = run_with_timeout(
        at(&[
            "bench", "random", "--bucket", "data", "--key", "missing", "--quick",
        ]),
        BENCH_LIMIT,
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn random_bad_arguments_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["bench", "random", "--queue-depth", "0"][..],
        &["bench", "random", "--block-size", "0"],
        &["bench", "random", "--duration", "never"],
        &["bench", "random", "--pipelining", "maybe"],
        &["bench", "random", "--bucket", "b", "--key", "k"],
        // The global option before the subcommand, where clap does not see the conflict.
        &[
            "--endpoint-url",
            "http://127.0.0.1:9",
            "bench",
            "random",
            "--quick",
            "--tls",
        ],
        &[
            "bench",
            "random",
            "--object-size",
            "1MiB",
            "--block-size",
            "4MiB",
        ],
    ] {
        let mut cmd = brisk(dir.path(), args);
        cmd.arg("--report").arg(dir.path().join("report"));
        let out = run_with_timeout(cmd, BENCH_LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // Nothing was started or written.
    assert!(!dir.path().join("report").exists());
}
