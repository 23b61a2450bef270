//! `brisk` with `az://` URLs, as a user runs it: the real binary against Azurite (Microsoft's
//! emulator) configured by `AZURE_STORAGE_CONNECTION_STRING`, every command of the CLI, copies
//! between S3 (`brisk serve`) and Azure in both directions, and Microsoft's Python SDK reading
//! what brisk wrote, writing what brisk reads, and using the SAS URLs brisk presigns
//! (`tests/azure_sdk_e2e.py`; the interpreter is `$BRISK_PYTHON`, else the workspace's `.venv`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use brisk_testkit::azurite::AzuriteProcess;

use crate::support::{brisk_with_env, run_with_timeout, serve};

fn python() -> PathBuf {
    std::env::var_os("BRISK_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
        PathBuf::from,
    )
}

/// Runs a step of `azure_sdk_e2e.py`; fails the test with its output if it fails.
fn sdk(args: &[&str]) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/azure_sdk_e2e.py");
    let mut cmd = Command::new(python());
    cmd.arg(script).args(args);
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "azure_sdk_e2e.py {}\nstdout:\n{stdout}\nstderr:\n{}",
        args[0],
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[track_caller]
fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed)
        .collect()
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn cp_ls_cat_rm_presign_with_az_urls_and_the_azure_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let azurite = AzuriteProcess::start(&dir.path().join("azurite"));
    let conn = azurite.connection_string();
    let s3 = serve(&dir.path().join("s3"), &[]);
    let env = [("AZURE_STORAGE_CONNECTION_STRING", conn.as_str())];
    // `--endpoint-url` is the S3 side's; the Azure side comes from the connection string.
    let run = |args: &[&str]| brisk_with_env(&s3.url, args, &env);

    let local = dir.path().join("local");
    let small = local.join("small.txt");
    write(&small, b"hello azure\n");
    let big = local.join("big.bin");
    let big_bytes = pattern(11 * 1024 * 1024 + 3, 7);
    write(&big, &big_bytes);
    write(&local.join("tree/a b/ü.txt"), b"unicode");
    write(&local.join("tree/empty"), b"");

    ok(&run(&["mb", "az://things"]));
    ok(&run(&["mb", "s3://bucket"]));
    let listed = ok(&run(&["ls", "az://"]));
    assert!(listed.contains("things"), "{listed}");

    // Up: one Put Blob, and Put Block + Put Block List in 5 MiB parts.
    ok(&run(&[
        "cp",
        small.to_str().unwrap(),
        "az://things/small.txt",
    ]));
    ok(&run(&[
        "cp",
        big.to_str().unwrap(),
        "az://things/big.bin",
        "--part-size",
        "5MiB",
    ]));
    ok(&run(&[
        "cp",
        "--recursive",
        local.join("tree").to_str().unwrap(),
        "az://things/tree",
    ]));
    let lines = ok(&run(&["ls", "az://things", "--recursive", "--json"]));
    let mut keys: Vec<String> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["key"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        ["big.bin", "small.txt", "tree/a b/ü.txt", "tree/empty"]
    );
    let top = ok(&run(&["ls", "az://things/"]));
    assert!(
        top.contains("PRE tree/") && top.contains("small.txt"),
        "{top}"
    );

    // Microsoft's SDK reads what brisk wrote, with MD5 validation.
    let sdk_out = sdk(&[
        "check-brisk-wrote",
        &conn,
        "things",
        local.to_str().unwrap(),
        "small.txt",
        "big.bin",
    ]);
    assert!(
        sdk_out.contains("ok: small.txt 12 bytes, md5 stored"),
        "{sdk_out}"
    );

    // Down: cat, a parallel ranged download, a recursive download.
    assert_eq!(ok(&run(&["cat", "az://things/small.txt"])), "hello azure\n");
    let down = dir.path().join("down");
    ok(&run(&[
        "cp",
        "az://things/big.bin",
        down.join("big.bin").to_str().unwrap(),
        "--part-size",
        "2MiB",
    ]));
    assert!(std::fs::read(down.join("big.bin")).unwrap() == big_bytes);
    ok(&run(&[
        "cp",
        "--recursive",
        "az://things/tree/",
        down.join("tree").to_str().unwrap(),
    ]));
    assert_eq!(
        std::fs::read(down.join("tree/a b/ü.txt")).unwrap(),
        b"unicode"
    );
    assert_eq!(std::fs::read(down.join("tree/empty")).unwrap(), b"");

    // The SDK writes (one upload, and staged blocks); brisk reads.
    let sdk_dir = dir.path().join("sdk");
    std::fs::create_dir_all(&sdk_dir).unwrap();
    sdk(&["write", &conn, "things", sdk_dir.to_str().unwrap()]);
    for name in ["sdk-single", "sdk-blocks"] {
        let target = down.join(name);
        ok(&run(&[
            "cp",
            &format!("az://things/{name}"),
            target.to_str().unwrap(),
        ]));
        assert!(
            std::fs::read(&target).unwrap() == std::fs::read(sdk_dir.join(name)).unwrap(),
            "{name}"
        );
    }

    // A presigned URL is a SAS the SDK accepts with no credentials.
    let url = ok(&run(&[
        "presign",
        "az://things/big.bin",
        "--expires-in",
        "600",
    ]));
    let sdk_out = sdk(&["read-url", url.trim(), big.to_str().unwrap()]);
    assert!(sdk_out.contains("ok: read"), "{sdk_out}");

    // Anonymous reads of a public container: no Authorization at all.
    let private = run(&["--no-sign-request", "cat", "az://things/small.txt"]);
    assert!(
        !private.status.success(),
        "a private container refuses anonymous reads"
    );
    sdk(&["make-public", &conn, "things"]);
    assert_eq!(
        ok(&run(&["--no-sign-request", "cat", "az://things/small.txt"])),
        "hello azure\n"
    );

    // Between services, both ways, through this process in bounded memory.
    ok(&run(&[
        "cp",
        "az://things/big.bin",
        "s3://bucket/from-azure.bin",
    ]));
    ok(&run(&[
        "cp",
        "s3://bucket/from-azure.bin",
        "az://things/round-trip.bin",
    ]));
    let back = down.join("round-trip.bin");
    ok(&run(&[
        "cp",
        "az://things/round-trip.bin",
        back.to_str().unwrap(),
    ]));
    assert!(std::fs::read(&back).unwrap() == big_bytes);
    ok(&run(&[
        "cp",
        "--recursive",
        "az://things/tree/",
        "s3://bucket/tree/",
    ]));
    let s3_keys = ok(&run(&["ls", "s3://bucket/tree/", "--recursive"]));
    assert!(s3_keys.contains("tree/a b/ü.txt"), "{s3_keys}");

    // Errors name the blob; exit codes as for S3.
    let missing = run(&[
        "cp",
        "az://things/nope",
        down.join("nope").to_str().unwrap(),
    ]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("az://things/nope") && stderr.contains("BlobNotFound"),
        "{stderr}"
    );

    // rm, rm --recursive, rb.
    ok(&run(&["rm", "az://things/small.txt"]));
    ok(&run(&["rm", "--recursive", "az://things/tree/"]));
    let rest = ok(&run(&["ls", "az://things", "--recursive"]));
    assert!(
        !rest.contains("small.txt") && !rest.contains("tree/"),
        "{rest}"
    );
    let refused = run(&["rb", "az://things"]);
    assert!(
        !refused.status.success(),
        "a container with blobs is not removed without --force"
    );
    ok(&run(&["rb", "az://things", "--force"]));
    assert!(!ok(&run(&["ls", "az://"])).contains("things"));
}

#[test]
fn stdin_and_stdout_stream_with_az_urls() {
    let dir = tempfile::tempdir().unwrap();
    let azurite = AzuriteProcess::start(&dir.path().join("azurite"));
    let conn = azurite.connection_string();
    let env = [("AZURE_STORAGE_CONNECTION_STRING", conn.as_str())];
    let run = |args: &[&str]| brisk_with_env("http://127.0.0.1:9", args, &env);
    ok(&run(&["mb", "az://streams"]));
    let body = pattern(7 * 1024 * 1024 + 11, 3);
    let source = dir.path().join("src.bin");
    std::fs::write(&source, &body).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    cmd.args(["cp", "-", "az://streams/piped", "--part-size", "5MiB"])
        .env("AZURE_STORAGE_CONNECTION_STRING", &conn)
        .stdin(std::fs::File::open(&source).unwrap());
    ok(&run_with_timeout(cmd, Duration::from_secs(60)));
    let out = run(&["cp", "az://streams/piped", "-"]);
    assert!(out.status.success());
    assert!(out.stdout == body);
}

/// Runs `brisk args` with `env`, sampling its peak resident set (VmHWM) while it runs; returns the
/// output and the peak in bytes.
fn run_measured(args: &[&str], env: &[(&str, &str)]) -> (Output, u64) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_brisk"))
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status_path = format!("/proc/{}/status", child.id());
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    let mut peak = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kib * 1024);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "brisk {args:?} ran for 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    (
        Output {
            status,
            stdout,
            stderr,
        },
        peak,
    )
}

/// A GiB up to Azure and back down, each in memory bounded by `--max-memory`, not by the blob.
///
/// At most one GiB is on disk at a time (the test command runs on machines with little free disk):
/// Azurite keeps the blob in memory, the source file is removed once uploaded, and the download is
/// compared with the pattern it was written from.
#[test]
fn a_gib_goes_up_and_down_in_bounded_memory() {
    const GIB: usize = 1 << 30;
    const LIMIT: u64 = 200 << 20;
    let dir = tempfile::tempdir().unwrap();
    let azurite = AzuriteProcess::start_in_memory(&dir.path().join("azurite"));
    let conn = azurite.connection_string();
    let env = [("AZURE_STORAGE_CONNECTION_STRING", conn.as_str())];
    let chunk = pattern(1 << 20, 5);
    let mib = |i: usize| {
        let mut c = chunk.clone();
        c[..8].copy_from_slice(&(i as u64).to_le_bytes());
        c
    };
    let source = dir.path().join("gib.bin");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&source).unwrap());
        for i in 0..(GIB >> 20) {
            f.write_all(&mib(i)).unwrap();
        }
    }
    ok(&run_measured(&["mb", "az://gib"], &env).0);
    let (up, up_peak) = run_measured(
        &[
            "cp",
            source.to_str().unwrap(),
            "az://gib/blob",
            "--max-memory",
            "96MiB",
            "-q",
        ],
        &env,
    );
    ok(&up);
    std::fs::remove_file(&source).unwrap();
    let target = dir.path().join("back.bin");
    let (down, down_peak) = run_measured(
        &[
            "cp",
            "az://gib/blob",
            target.to_str().unwrap(),
            "--max-memory",
            "96MiB",
            "-q",
        ],
        &env,
    );
    ok(&down);
    println!("1 GiB to Azurite: peak RSS {up_peak} bytes; back: {down_peak} bytes");
    assert!(up_peak < LIMIT, "upload peak RSS {up_peak}");
    assert!(down_peak < LIMIT, "download peak RSS {down_peak}");
    assert_eq!(std::fs::metadata(&target).unwrap().len(), GIB as u64);
    let same = {
        use std::io::Read;
        let mut back = std::fs::File::open(&target).unwrap();
        let mut got = vec![0u8; 1 << 20];
        (0..(GIB >> 20)).all(|i| {
            back.read_exact(&mut got).unwrap();
            got == mib(i)
        })
    };
    assert!(same, "the GiB came back different");
}
