//! The `brisk` commands run as a user runs them: the real binary against a real `brisk serve` on
//! 127.0.0.1, every run bounded in time, outputs parsed, exit codes checked.

use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::{ACCESS_KEY, SECRET_KEY, ServeProcess, serve};
use brisk_testkit::http;
use serde_json::Value;

/// Any one command here finishes in seconds; this bounds a hang.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);

/// What a finished `brisk` run left behind.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    /// Peak resident set (VmHWM) sampled while it ran, in bytes.
    peak_rss: u64,
}

impl Run {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    fn json_lines(&self) -> Vec<Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect()
    }

    #[track_caller]
    fn ok(self) -> Self {
        assert_eq!(
            self.code,
            0,
            "stdout:\n{}\nstderr:\n{}",
            self.text(),
            self.stderr
        );
        self
    }

    /// Refused by the argument parser: exit code 2, its message, no panic.
    #[track_caller]
    fn usage_error(self) -> Self {
        assert_eq!(self.code, 2, "stderr:\n{}", self.stderr);
        assert!(self.stderr.starts_with("error: "), "{}", self.stderr);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        self
    }

    /// Failed with `code`, a one-line readable message, and no panic.
    #[track_caller]
    fn failed_with(self, code: i32) -> Self {
        assert_eq!(self.code, code, "stderr:\n{}", self.stderr);
        assert!(self.stderr.starts_with("brisk: "), "{}", self.stderr);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        assert!(!self.stderr.contains("RUST_BACKTRACE"), "{}", self.stderr);
        self
    }
}

/// A `brisk` command line against one server, with credentials from the environment only.
struct Brisk {
    url: String,
    home: PathBuf,
    /// Which server the commands run against: "brisk" or "minio".
    server: &'static str,
}

impl Brisk {
    fn new(url: &str, home: &Path) -> Self {
        Self::on("brisk", url, home)
    }

    fn on(server: &'static str, url: &str, home: &Path) -> Self {
        Self {
            url: url.to_owned(),
            home: home.to_owned(),
            server,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        self.command_at(&self.url, args)
    }

    /// A command against `endpoint` instead of the test's server.
    fn command_at(&self, endpoint: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
        cmd.arg("--endpoint-url").arg(endpoint).args(args);
        for var in [
            "AWS_PROFILE",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_S3",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_SESSION_TOKEN",
            "BRISK_MAX_MEMORY",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.home)
            .env("AWS_CONFIG_FILE", self.home.join("config"))
            .env("AWS_SHARED_CREDENTIALS_FILE", self.home.join("credentials"))
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY);
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        run(self.command(args), None)
    }

    fn run_with_stdin(&self, args: &[&str], stdin: Vec<u8>) -> Run {
        run(self.command(args), Some(stdin))
    }
}

/// Runs `cmd` to its end (killed after [`COMMAND_LIMIT`]), feeding `stdin` and draining both
/// outputs on their own threads so that no pipe fills, and sampling its peak RSS.
fn run(mut cmd: Command, stdin: Option<Vec<u8>>) -> Run {
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("brisk starts");
    let feeder = stdin.map(|data| {
        let mut pipe = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            // The command may exit early on an error; a broken pipe is then expected.
            let _ = pipe.write_all(&data);
        })
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done, pid) = (Arc::clone(&peak), Arc::clone(&done), child.id());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(hwm) = vm_hwm(pid) {
                    peak.fetch_max(hwm, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > COMMAND_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "brisk {:?} ran longer than {COMMAND_LIMIT:?}",
                cmd.get_args()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out_thread.join().unwrap(),
        stderr: err_thread.join().unwrap(),
        peak_rss: peak.load(Ordering::Relaxed),
    }
}

/// `VmHWM` of a live process, in bytes.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes that differ from position to position (a shifted or repeated block would show).
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn setup() -> (tempfile::TempDir, ServeProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &["--no-fsync"]);
    (dir, server)
}

/// Runs a test body (`fn(&Brisk, &Path)`) as two tests: against `brisk serve`, and against MinIO, an
/// S3 server nobody on this project wrote, so that every command is checked on an independent
/// implementation of the protocol as well as on our own.
macro_rules! on_both_servers {
    ($name:ident) => {
        mod $name {
            #[test]
            fn brisk_serve() {
                let (dir, server) = super::setup();
                super::$name(&super::Brisk::new(&server.url, dir.path()), dir.path());
            }

            #[test]
            fn minio() {
                let dir = tempfile::tempdir().unwrap();
                let server =
                    brisk_testkit::minio::MinioProcess::start(&dir.path().join("minio-data"));
                super::$name(
                    &super::Brisk::on("minio", &server.url, dir.path()),
                    dir.path(),
                );
            }
        }
    };
}

fn buckets_are_made_listed_and_removed(brisk: &Brisk, _dir: &Path) {
    let made = brisk.run(&["mb", "s3://alpha"]).ok();
    assert_eq!(made.text(), "make_bucket: alpha\n");
    brisk.run(&["mb", "s3://beta", "--json"]).ok();
    // Making a bucket you own again: S3 in us-east-1 (brisk serve's region here) answers 200, as
    // `aws s3 mb` shows; MinIO answers 409 BucketAlreadyOwnedByYou, as S3's other regions do.
    if brisk.server == "minio" {
        brisk.run(&["mb", "s3://alpha"]).failed_with(1);
    } else {
        brisk.run(&["mb", "s3://alpha"]).ok();
    }

    let text = brisk.run(&["ls"]).ok().text();
    let names: Vec<&str> = text
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta"], "{text}");
    let json = brisk.run(&["ls", "--json"]).ok().json_lines();
    assert_eq!(json.len(), 2);
    assert_eq!(json[0]["type"], "bucket");
    assert_eq!(json[1]["name"], "beta");

    brisk
        .run_with_stdin(&["cp", "-", "s3://alpha/k"], b"x".to_vec())
        .ok();
    let refused = brisk.run(&["rb", "s3://alpha"]).failed_with(1);
    assert!(
        refused.stderr.contains("BucketNotEmpty"),
        "{}",
        refused.stderr
    );
    let forced = brisk.run(&["rb", "s3://alpha", "--force"]).ok();
    assert_eq!(
        forced.text(),
        "delete: s3://alpha/k\nremove_bucket: alpha\n"
    );
    let json = brisk.run(&["ls", "--json"]).ok().json_lines();
    assert_eq!(json.len(), 1);
    assert_eq!(json[0]["name"], "beta");
}

on_both_servers!(buckets_are_made_listed_and_removed);

fn files_copy_up_down_and_across_and_objects_list_and_delete(brisk: &Brisk, dir: &Path) {
    brisk.run(&["mb", "s3://bkt"]).ok();
    let local = dir.join("local.bin");
    let body = pattern(300_000, 1);
    std::fs::write(&local, &body).unwrap();
    let local_s = local.to_str().unwrap();

    let up = brisk.run(&["cp", local_s, "s3://bkt/dir/one.bin"]).ok();
    assert_eq!(
        up.text(),
        format!("upload: {local_s} to s3://bkt/dir/one.bin\n")
    );
    // A destination ending in `/` takes the file's name.
    brisk.run(&["cp", local_s, "s3://bkt/dir/", "-q"]).ok();
    let across = brisk
        .run(&[
            "cp",
            "s3://bkt/dir/one.bin",
            "s3://bkt/other/two.bin",
            "--json",
        ])
        .ok()
        .json_lines();
    assert_eq!(across[0]["action"], "copy");
    assert_eq!(across[0]["size"], 300_000);

    let back = dir.join("back.bin");
    brisk
        .run(&["cp", "s3://bkt/other/two.bin", back.to_str().unwrap()])
        .ok();
    assert_eq!(std::fs::read(&back).unwrap(), body);
    assert_eq!(
        brisk.run(&["cat", "s3://bkt/dir/local.bin"]).ok().stdout,
        body
    );

    let top = brisk.run(&["ls", "s3://bkt"]).ok().text();
    assert!(
        top.contains("PRE dir/") && top.contains("PRE other/"),
        "{top}"
    );
    let inside = brisk.run(&["ls", "s3://bkt/dir/"]).ok().text();
    let names: Vec<&str> = inside
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(names, ["local.bin", "one.bin"], "{inside}");
    let all = brisk
        .run(&["ls", "s3://bkt", "--recursive", "--summarize", "--json"])
        .ok()
        .json_lines();
    let keys: Vec<&str> = all.iter().filter_map(|v| v["key"].as_str()).collect();
    assert_eq!(keys, ["dir/local.bin", "dir/one.bin", "other/two.bin"]);
    let summary = all.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["total_objects"], 3);
    assert_eq!(summary["total_size"], 900_000);
    let human = brisk
        .run(&[
            "ls",
            "s3://bkt",
            "--recursive",
            "--human-readable",
            "--summarize",
        ])
        .ok()
        .text();
    assert!(human.contains("293.0 KiB dir/one.bin"), "{human}");
    assert!(human.contains("Total Objects: 3"), "{human}");
    assert!(human.contains("Total Size: 878.9 KiB"), "{human}");

    brisk.run(&["rm", "s3://bkt/dir/one.bin"]).ok();
    let dry = brisk
        .run(&["rm", "s3://bkt", "--recursive", "--dryrun"])
        .ok();
    assert_eq!(
        dry.text(),
        "(dryrun) delete: s3://bkt/dir/local.bin\n(dryrun) delete: s3://bkt/other/two.bin\n"
    );
    brisk.run(&["rm", "s3://bkt/other", "--recursive"]).ok();
    let left = brisk
        .run(&["ls", "s3://bkt", "--recursive", "--json"])
        .ok()
        .json_lines();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["key"], "dir/local.bin");
}

on_both_servers!(files_copy_up_down_and_across_and_objects_list_and_delete);

fn recursive_copies_apply_filters_in_order_and_dryrun_copies_nothing(brisk: &Brisk, dir: &Path) {
    brisk.run(&["mb", "s3://bkt"]).ok();
    let tree = dir.join("tree");
    for (path, body) in [
        ("a.txt", "a"),
        ("b.log", "b"),
        ("sub/c.txt", "c"),
        ("sub/deep/d.txt", "d"),
        ("tmp/e.txt", "e"),
    ] {
        let p = tree.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    // A link back to the root: followed, the walk would never end.
    std::os::unix::fs::symlink(&tree, tree.join("sub/loop")).unwrap();
    let tree_s = tree.to_str().unwrap();
    let filters = ["--exclude", "*", "--include", "*.txt", "--exclude", "tmp/*"];
    let mut args = vec!["cp", tree_s, "s3://bkt/up", "--recursive"];
    args.extend(filters);
    let mut dry_args = args.clone();
    dry_args.push("--dryrun");
    let dry = brisk.run(&dry_args).ok().text();
    assert_eq!(dry.lines().count(), 3, "{dry}");
    assert!(
        dry.lines().all(|l| l.starts_with("(dryrun) upload: ")),
        "{dry}"
    );
    let listed = brisk.run(&["ls", "s3://bkt", "--recursive"]).ok();
    assert_eq!(listed.text(), "", "a dry run uploaded something");

    args.push("--json");
    let done = brisk.run(&args).ok().json_lines();
    let mut dests: Vec<&str> = done
        .iter()
        .map(|v| v["destination"].as_str().unwrap())
        .collect();
    dests.sort();
    assert_eq!(
        dests,
        [
            "s3://bkt/up/a.txt",
            "s3://bkt/up/sub/c.txt",
            "s3://bkt/up/sub/deep/d.txt"
        ]
    );
    // Order matters: the same filters reversed exclude everything.
    let mut reversed = vec![
        "cp",
        tree_s,
        "s3://bkt/rev",
        "--recursive",
        "--include",
        "*.txt",
        "--exclude",
        "*",
    ];
    reversed.push("-q");
    brisk.run(&reversed).ok();
    assert_eq!(
        brisk
            .run(&["ls", "s3://bkt/rev/", "--recursive"])
            .ok()
            .text(),
        ""
    );

    // Down again, with a filter on the way, then across buckets.
    let down = dir.join("down");
    brisk
        .run(&[
            "cp",
            "s3://bkt/up",
            down.to_str().unwrap(),
            "--recursive",
            "--exclude",
            "sub/deep/*",
        ])
        .ok();
    assert_eq!(std::fs::read_to_string(down.join("a.txt")).unwrap(), "a");
    assert_eq!(
        std::fs::read_to_string(down.join("sub/c.txt")).unwrap(),
        "c"
    );
    assert!(!down.join("sub/deep").exists());

    brisk.run(&["mb", "s3://copies"]).ok();
    brisk
        .run(&[
            "cp",
            "s3://bkt/up/",
            "s3://copies/copy/",
            "--recursive",
            "--include",
            "*",
        ])
        .ok();
    let copied = brisk
        .run(&["ls", "s3://copies", "--recursive", "--json"])
        .ok()
        .json_lines();
    let keys: Vec<&str> = copied.iter().map(|v| v["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        ["copy/a.txt", "copy/sub/c.txt", "copy/sub/deep/d.txt"]
    );
}

on_both_servers!(recursive_copies_apply_filters_in_order_and_dryrun_copies_nothing);

/// A named pipe inside a tree is left out of `cp --recursive` and `sync` with a warning (reading
/// it could wait forever); one named as the source, here `/dev/stdin`, is read to its end (its size
/// reads as 0: planned from that, the upload was an empty object reported as done) and reported
/// with the size it had. `mv` refuses a pipe on either side before moving a byte: it would delete
/// `/dev/stdin` once read, and could not check a copy into a pipe before deleting the object.
fn trees_skip_pipes_with_a_warning_and_a_pipe_named_alone_is_read(brisk: &Brisk, dir: &Path) {
    brisk.run(&["mb", "s3://bkt"]).ok();
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), "a").unwrap();
    let pipe = tree.join("sub/pipe");
    let made = Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made.success());
    let tree_s = tree.to_str().unwrap();
    for args in [
        vec!["cp", tree_s, "s3://bkt/cp", "--recursive"],
        vec!["sync", tree_s, "s3://bkt/sync"],
    ] {
        let run = brisk.run(&args).ok();
        assert!(
            run.stderr.contains("warning: skipping") && run.stderr.contains("sub/pipe"),
            "{args:?}: {}",
            run.stderr
        );
    }
    let listed = brisk.run(&["ls", "s3://bkt", "--recursive"]).ok().text();
    let keys: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    assert_eq!(keys, ["cp/a.txt", "sync/a.txt"], "{listed}");

    // More than a part (8 MiB): streamed as a multipart upload.
    let body = pattern(9 * 1024 * 1024 + 5, 3);
    let reported = brisk
        .run_with_stdin(
            &["cp", "/dev/stdin", "s3://bkt/piped", "--json"],
            body.clone(),
        )
        .ok()
        .json_lines();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0]["size"], body.len() as u64, "{reported:?}");
    let back = brisk.run(&["cat", "s3://bkt/piped"]).ok();
    assert!(
        back.stdout == body,
        "{} bytes of {}",
        back.stdout.len(),
        body.len()
    );

    let refused = brisk
        .run_with_stdin(&["mv", "/dev/stdin", "s3://bkt/moved"], b"moved".to_vec())
        .failed_with(2);
    assert!(
        refused.stderr.contains("not a regular file") && refused.stderr.contains("use cp"),
        "{}",
        refused.stderr
    );
    let out_pipe = dir.join("out-pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&out_pipe)
            .status()
            .unwrap()
            .success()
    );
    let refused = brisk
        .run(&["mv", "s3://bkt/piped", out_pipe.to_str().unwrap()])
        .failed_with(2);
    assert!(
        refused.stderr.contains("not a regular file"),
        "{}",
        refused.stderr
    );
    let listed = brisk.run(&["ls", "s3://bkt/", "--recursive"]).ok().text();
    assert!(
        listed.contains("piped") && !listed.contains("moved"),
        "{listed}"
    );
    assert!(std::fs::metadata(&out_pipe).unwrap().file_type().is_fifo());
}

on_both_servers!(trees_skip_pipes_with_a_warning_and_a_pipe_named_alone_is_read);

/// 48 MiB through a 16 MiB budget, both ways, byte for byte, and the process never holds the
/// object: its peak RSS stays below the object's size.
fn stdin_and_stdout_stream_objects_larger_than_the_memory_budget(brisk: &Brisk, _dir: &Path) {
    const SIZE: usize = 48 << 20;
    brisk.run(&["mb", "s3://bkt"]).ok();
    let body = pattern(SIZE + 12_345, 7);
    let budget = ["--max-memory", "16MiB"];

    let mut up_args = vec!["cp", "-", "s3://bkt/big"];
    up_args.extend(budget);
    let up = brisk.run_with_stdin(&up_args, body.clone()).ok();
    assert_eq!(up.text(), "upload: - to s3://bkt/big\n");
    let listed = brisk
        .run(&["ls", "s3://bkt/big", "--json"])
        .ok()
        .json_lines();
    assert_eq!(listed[0]["size"], body.len());

    let mut down_args = vec!["cp", "s3://bkt/big", "-"];
    down_args.extend(budget);
    let down = brisk.run(&down_args).ok();
    assert!(
        down.stdout.len() == body.len() && down.stdout == body,
        "bytes differ"
    );

    let mut cat_args = vec!["cat", "s3://bkt/big"];
    cat_args.extend(budget);
    let cat = brisk.run(&cat_args).ok();
    assert!(cat.stdout == body, "cat bytes differ");

    // 16 MiB of part buffers plus the program; a process holding the object would pass 48 MiB.
    for (what, run) in [("upload", &up), ("download", &down)] {
        assert!(run.peak_rss > 0, "no RSS sample for the {what}");
        assert!(
            run.peak_rss < 40 << 20,
            "{what} peaked at {} MiB of RSS",
            run.peak_rss >> 20
        );
    }

    // A reader that goes away (`brisk cat | head`) ends the stream quietly.
    let mut early = brisk.command(&["cat", "s3://bkt/big"]);
    let mut child = early
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    assert_eq!(first, body[..10]);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < COMMAND_LIMIT, "cat did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));

    // A stream that fits one part is one PUT; an empty one is an empty object.
    brisk
        .run_with_stdin(&["cp", "-", "s3://bkt/small"], b"tiny".to_vec())
        .ok();
    assert_eq!(brisk.run(&["cat", "s3://bkt/small"]).ok().stdout, b"tiny");
    brisk
        .run_with_stdin(&["cp", "-", "s3://bkt/empty"], Vec::new())
        .ok();
    assert_eq!(brisk.run(&["cat", "s3://bkt/empty"]).ok().stdout, b"");
}

on_both_servers!(stdin_and_stdout_stream_objects_larger_than_the_memory_budget);

fn presigned_urls_work_with_a_plain_http_client(brisk: &Brisk, _dir: &Path) {
    brisk.run(&["mb", "s3://bkt"]).ok();
    let put_url = brisk
        .run(&[
            "presign",
            "s3://bkt/shared.txt",
            "--put",
            "--expires-in",
            "600",
        ])
        .ok()
        .text();
    let status = http::request("PUT", put_url.trim(), &[], b"shared by URL").status;
    assert_eq!(status, 200);
    let get = brisk
        .run(&["presign", "s3://bkt/shared.txt", "--json"])
        .ok()
        .json_lines();
    assert_eq!(get[0]["method"], "GET");
    assert_eq!(get[0]["expires_in"], 3600);
    let http::Response { status, body, .. } =
        http::request("GET", get[0]["url"].as_str().unwrap(), &[], b"");
    assert_eq!((status, body.as_slice()), (200, &b"shared by URL"[..]));
    // Tampering with the URL breaks the signature.
    let tampered = get[0]["url"]
        .as_str()
        .unwrap()
        .replace("shared.txt", "other.txt");
    assert_eq!(http::request("GET", &tampered, &[], b"").status, 403);
    // S3's limit is 7 days.
    brisk
        .run(&["presign", "s3://bkt/k", "--expires-in", "604801"])
        .usage_error();
}

on_both_servers!(presigned_urls_work_with_a_plain_http_client);

#[test]
fn failures_are_readable_with_distinct_exit_codes() {
    let (dir, server) = setup();
    let brisk = Brisk::new(&server.url, dir.path());
    brisk.run(&["mb", "s3://bkt"]).ok();

    let no_bucket = brisk.run(&["ls", "s3://missing"]).failed_with(3);
    assert!(
        no_bucket.stderr.contains("NoSuchBucket"),
        "{}",
        no_bucket.stderr
    );
    let no_key = brisk
        .run(&[
            "cp",
            "s3://bkt/nothing",
            dir.path().join("x").to_str().unwrap(),
        ])
        .failed_with(3);
    assert!(
        no_key.stderr.contains("s3://bkt/nothing"),
        "{}",
        no_key.stderr
    );
    brisk.run(&["cat", "s3://bkt/nothing"]).failed_with(3);
    // A HEAD 404 does not say which is missing; the message must.
    let no_bucket_key = brisk.run(&["cat", "s3://missing/k"]).failed_with(3);
    assert!(
        no_bucket_key.stderr.contains("NoSuchBucket"),
        "{}",
        no_bucket_key.stderr
    );
    brisk
        .run(&[
            "cp",
            dir.path().join("no-such-file").to_str().unwrap(),
            "s3://bkt/k",
        ])
        .failed_with(3);

    // Usage: bad URLs and impossible combinations.
    brisk.run(&["cp", "a", "b"]).failed_with(2);
    brisk.run(&["ls", "http://x/y"]).failed_with(2);
    brisk
        .run(&["cp", "-", "s3://bkt/k", "--recursive"])
        .failed_with(2);
    brisk
        .run(&["cp", "-", "s3://bkt/k", "--max-memory", "1MiB"])
        .failed_with(2);
    brisk.run(&["cp", "--no-such-flag"]).usage_error();

    // Auth: a wrong secret.
    let mut wrong = brisk.command(&["ls", "s3://bkt"]);
    wrong.env("AWS_SECRET_ACCESS_KEY", "not-the-secret");
    let denied = run(wrong, None).failed_with(4);
    assert!(
        denied.stderr.contains("SignatureDoesNotMatch"),
        "{}",
        denied.stderr
    );

    // Network: nothing listens on the endpoint.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    for args in [vec!["ls"], vec!["ls", "s3://bkt"]] {
        let refused = run(brisk.command_at(&dead, &args), None).failed_with(5);
        assert!(
            refused.stderr.contains("connecting to"),
            "{}",
            refused.stderr
        );
    }
}

#[test]
fn debug_says_what_the_memory_budget_is_and_where_it_came_from() {
    let (dir, server) = setup();
    let brisk = Brisk::new(&server.url, dir.path());
    let budget_line = |run: &Run| {
        run.stderr
            .lines()
            .find(|l| l.starts_with("brisk: memory budget "))
            .unwrap_or_else(|| panic!("no budget line in {}", run.stderr))
            .to_owned()
    };
    // The machine's default: a half of the cgroup limit or of MemTotal, at least 1 GiB.
    let default = budget_line(&brisk.run(&["ls", "--debug"]).ok());
    assert!(
        default.contains("half of MemTotal")
            || default.contains("half of cgroup memory.max")
            || default.contains("half of cgroup memory.limit_in_bytes")
            || default.contains("(default)"),
        "{default}"
    );
    let bytes: u64 = default["brisk: memory budget ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(bytes >= 1 << 30, "{default}");
    // The variable, and --max-memory over it.
    let mut cmd = brisk.command(&["ls", "--debug"]);
    cmd.env("BRISK_MAX_MEMORY", "3GiB");
    assert_eq!(
        budget_line(&run(cmd, None).ok()),
        "brisk: memory budget 3221225472 bytes (BRISK_MAX_MEMORY)"
    );
    let mut cmd = brisk.command(&["ls", "--debug", "--max-memory", "64MiB"]);
    cmd.env("BRISK_MAX_MEMORY", "3GiB");
    assert_eq!(
        budget_line(&run(cmd, None).ok()),
        "brisk: memory budget 67108864 bytes (--max-memory)"
    );
    // A variable that is not a size is a usage error.
    let mut cmd = brisk.command(&["ls"]);
    cmd.env("BRISK_MAX_MEMORY", "lots");
    let bad = run(cmd, None).failed_with(2);
    assert!(
        bad.stderr.contains("BRISK_MAX_MEMORY=\"lots\""),
        "{}",
        bad.stderr
    );
}

#[test]
fn completions_and_help_are_printed() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    cmd.args(["completions", "bash"]);
    let out = run(cmd, None).ok();
    assert!(out.text().contains("brisk"), "{}", out.text());
    let mut help = Command::new(env!("CARGO_BIN_EXE_brisk"));
    help.arg("--help");
    let help = run(help, None).ok().text();
    assert!(
        help.contains("Examples:") && help.contains("Exit codes:"),
        "{help}"
    );
}

#[test]
fn no_sign_request_works_with_an_anonymous_server_and_missing_credentials_are_an_auth_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &["--no-fsync", "--anonymous"]);
    let brisk = Brisk::new(&server.url, dir.path());
    let anonymous = |args: &[&str], stdin: Option<Vec<u8>>| {
        let mut cmd = brisk.command(&["--no-sign-request"]);
        cmd.args(args)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY");
        run(cmd, stdin)
    };
    anonymous(&["mb", "s3://open"], None).ok();
    // More than one part: the raw multipart requests go unsigned too.
    let body = pattern(11 << 20, 3);
    anonymous(&["cp", "-", "s3://open/k"], Some(body.clone())).ok();
    anonymous(&["cp", "s3://open/k", "s3://open/k2"], None).ok();
    let listed = anonymous(&["ls", "--json"], None).ok().json_lines();
    assert_eq!(listed[0]["name"], "open");
    assert!(anonymous(&["cat", "s3://open/k2"], None).ok().stdout == body);

    let mut no_keys = brisk.command(&["ls"]);
    no_keys
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY");
    let refused = run(no_keys, None).failed_with(4);
    assert!(
        refused.stderr.contains("AWS_ACCESS_KEY_ID"),
        "{}",
        refused.stderr
    );
}

/// `mv` in every direction: the copy is made and checked, then the source is gone; a move that
/// fails leaves its source in place and the exit code says so.
fn mv_moves_and_keeps_what_did_not_move(brisk: &Brisk, dir: &Path) {
    brisk.run(&["mb", "s3://mvb"]).ok();
    let file = dir.join("one.txt");
    std::fs::write(&file, "moved up").unwrap();
    let up = brisk
        .run(&["mv", file.to_str().unwrap(), "s3://mvb/one.txt"])
        .ok()
        .text();
    assert!(up.starts_with("move: "), "{up}");
    assert!(!file.exists(), "the local file is gone after the move");
    assert_eq!(
        brisk.run(&["cat", "s3://mvb/one.txt"]).ok().text(),
        "moved up"
    );

    // Object to object, then back down.
    brisk
        .run(&["mv", "s3://mvb/one.txt", "s3://mvb/two.txt"])
        .ok();
    let listed = brisk.run(&["ls", "s3://mvb"]).ok().text();
    assert!(
        listed.contains("two.txt") && !listed.contains("one.txt"),
        "{listed}"
    );
    let back = dir.join("back.txt");
    brisk
        .run(&["mv", "s3://mvb/two.txt", back.to_str().unwrap()])
        .ok();
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "moved up");
    assert!(
        !brisk
            .run(&["ls", "s3://mvb"])
            .ok()
            .text()
            .contains("two.txt")
    );

    // Recursive, with a filter: only what is selected moves.
    let tree = dir.join("mvtree");
    for name in ["a.txt", "b.log", "sub/c.txt"] {
        let p = tree.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, name).unwrap();
    }
    brisk
        .run(&[
            "mv",
            tree.to_str().unwrap(),
            "s3://mvb/t",
            "--recursive",
            "--exclude",
            "*.log",
        ])
        .ok();
    assert!(tree.join("b.log").exists(), "an excluded file stays");
    assert!(!tree.join("a.txt").exists() && !tree.join("sub/c.txt").exists());
    let keys = brisk.run(&["ls", "s3://mvb/t/", "--recursive"]).ok().text();
    assert!(
        keys.contains("t/a.txt") && keys.contains("t/sub/c.txt") && !keys.contains("b.log"),
        "{keys}"
    );
    // A prefix to another prefix: all of it moves.
    brisk
        .run(&["mv", "s3://mvb/t/", "s3://mvb/moved/", "--recursive"])
        .ok();
    assert!(keys_of(brisk, "s3://mvb/t/").is_empty());
    assert_eq!(
        keys_of(brisk, "s3://mvb/moved/"),
        [("a.txt".to_owned(), 5), ("sub/c.txt".to_owned(), 9)]
    );

    // A move that cannot be made keeps its source and fails.
    let stays = dir.join("stays.txt");
    std::fs::write(&stays, "x").unwrap();
    brisk
        .run(&["mv", stays.to_str().unwrap(), "s3://no-such-bucket-mv/x"])
        .failed_with(3);
    assert!(stays.exists(), "a failed move leaves the source");
    brisk.run(&["mv", "-", "s3://mvb/x"]).failed_with(2);
    // --dryrun says what would move and moves nothing.
    let dry = brisk
        .run(&[
            "mv",
            stays.to_str().unwrap(),
            "s3://mvb/stays.txt",
            "--dryrun",
        ])
        .ok()
        .text();
    assert!(dry.starts_with("(dryrun) move: "), "{dry}");
    assert!(stays.exists());
}

on_both_servers!(mv_moves_and_keeps_what_did_not_move);

/// Every file under `root` as (relative `/` path, bytes), sorted.
fn tree_of(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &rel, out);
            } else {
                out.push((rel, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    if root.exists() {
        walk(root, "", &mut out);
    }
    out.sort();
    out
}

/// The keys and sizes under `url` (`s3://b/prefix/`), relative to it, sorted.
fn keys_of(brisk: &Brisk, url: &str) -> Vec<(String, u64)> {
    let prefix = url.splitn(4, '/').nth(3).unwrap_or("").to_owned();
    let mut keys: Vec<(String, u64)> = brisk
        .run(&["ls", url, "--recursive", "--json"])
        .ok()
        .json_lines()
        .into_iter()
        .filter(|v| v["type"] == "object")
        .map(|v| {
            let key = v["key"].as_str().unwrap();
            (key[prefix.len()..].to_owned(), v["size"].as_u64().unwrap())
        })
        .collect();
    keys.sort();
    keys
}

/// The summary line of `sync --json`.
fn sync_summary(run: &Run) -> Value {
    run.json_lines()
        .into_iter()
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary in {}", run.text()))
}

fn sync_up_down_delete_filters_and_dryrun(brisk: &Brisk, dir: &Path) {
    brisk.run(&["mb", "s3://syncb"]).ok();
    let src = dir.join("site");
    let big = (0..6 * 1024 * 1024 + 3)
        .map(|i| (i * 7 % 251) as u8)
        .collect::<Vec<u8>>();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("index.html", b"<h1>hi</h1>".to_vec()),
        ("a b/ü nicode.txt", "ü".repeat(10).into_bytes()),
        ("a b/deep/er/x.txt", b"x".to_vec()),
        ("a-b.txt", b"sorts before a b/ and a/".to_vec()),
        ("empty", Vec::new()),
        ("logs/app.log", b"log".to_vec()),
        ("big.bin", big),
    ];
    for (name, body) in &files {
        let p = src.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    let up = |extra: &[&str]| {
        let mut args = vec![
            "sync",
            src.to_str().unwrap(),
            "s3://syncb/site",
            "--json",
            "--part-size",
            "5MiB",
        ];
        args.extend_from_slice(extra);
        brisk.run(&args)
    };
    let expect_remote = |tree: &[(String, Vec<u8>)]| {
        let want: Vec<(String, u64)> = tree
            .iter()
            .map(|(k, b)| (k.clone(), b.len() as u64))
            .collect();
        assert_eq!(keys_of(brisk, "s3://syncb/site/"), want);
    };

    // --dryrun changes nothing.
    let dry = up(&["--dryrun"]).ok();
    assert_eq!(sync_summary(&dry)["transferred"], files.len());
    assert!(keys_of(brisk, "s3://syncb/site/").is_empty());

    let first = up(&[]).ok();
    assert_eq!(sync_summary(&first)["transferred"], files.len());
    expect_remote(&tree_of(&src));
    let again = up(&[]).ok();
    assert_eq!(sync_summary(&again)["transferred"], 0, "{}", again.text());
    assert_eq!(sync_summary(&again)["skipped"], files.len());

    // Change 3 (two sizes, one newer at the same size), delete 2, add 1.
    std::fs::write(src.join("index.html"), b"<h1>changed</h1>").unwrap();
    std::fs::write(src.join("a b/deep/er/x.txt"), b"xx").unwrap();
    std::fs::write(src.join("a-b.txt"), b"SORTS BEFORE A B/ AND A/").unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(src.join("a-b.txt"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    std::fs::remove_file(src.join("empty")).unwrap();
    std::fs::remove_file(src.join("a b/ü nicode.txt")).unwrap();
    std::fs::write(src.join("new file.txt"), b"new").unwrap();
    let without_delete = up(&[]).ok();
    assert_eq!(sync_summary(&without_delete)["transferred"], 4);
    assert_eq!(sync_summary(&without_delete)["deleted"], 0);
    assert_eq!(keys_of(brisk, "s3://syncb/site/").len(), files.len() + 1);
    // --delete within the filters: an excluded key is neither copied nor deleted.
    std::fs::remove_file(src.join("logs/app.log")).unwrap();
    let with_delete = up(&["--delete", "--exclude", "logs/*"]).ok();
    assert_eq!(
        sync_summary(&with_delete)["deleted"],
        2,
        "{}",
        with_delete.text()
    );
    let mut want = tree_of(&src);
    want.push(("logs/app.log".into(), b"log".to_vec()));
    want.sort();
    expect_remote(&want);
    up(&["--delete"]).ok();
    expect_remote(&tree_of(&src));

    // Down into an empty directory: the same tree, each file dated as its object.
    let down = dir.join("down");
    let d = brisk
        .run(&[
            "sync",
            "s3://syncb/site",
            down.to_str().unwrap(),
            "--json",
            "--part-size",
            "5MiB",
        ])
        .ok();
    assert_eq!(sync_summary(&d)["transferred"], tree_of(&src).len());
    assert_eq!(tree_of(&down), tree_of(&src));
    let again = brisk
        .run(&["sync", "s3://syncb/site", down.to_str().unwrap(), "--json"])
        .ok();
    assert_eq!(sync_summary(&again)["transferred"], 0, "{}", again.text());
    // And back up: the downloaded files carry their objects' times, so nothing moves.
    let back = brisk
        .run(&["sync", down.to_str().unwrap(), "s3://syncb/site", "--json"])
        .ok();
    assert_eq!(sync_summary(&back)["transferred"], 0, "{}", back.text());

    // Prefix to prefix on the server, then a failure that does not stop the others.
    brisk
        .run(&["sync", "s3://syncb/site", "s3://syncb/copy"])
        .ok();
    assert_eq!(
        keys_of(brisk, "s3://syncb/copy/"),
        keys_of(brisk, "s3://syncb/site/")
    );
    let clash = dir.join("clash");
    std::fs::create_dir_all(clash.join("index.html")).unwrap();
    let partial = brisk.run(&["sync", "s3://syncb/site", clash.to_str().unwrap(), "--json"]);
    assert_eq!(partial.code, 1, "{}", partial.stderr);
    assert!(partial.stderr.contains("index.html"), "{}", partial.stderr);
    assert_eq!(sync_summary(&partial)["failed"], 1);
    assert_eq!(
        sync_summary(&partial)["transferred"],
        tree_of(&src).len() - 1
    );
}

on_both_servers!(sync_up_down_delete_filters_and_dryrun);

/// `--payload-signing unsigned`: a file's parts go out aws-chunked from the file (`sendfile` over
/// plain HTTP) with their CRC32C as the trailer; the object holds the file, and its checksum is the
/// file's. An unknown mode is a usage error.
fn unsigned_uploads_send_the_file(brisk: &Brisk, dir: &Path) {
    brisk.run(&["mb", "s3://unsigned"]).ok();
    // Three parts of 5 MiB (the last short), and a file within one part: one PUT.
    for (name, len) in [
        ("parts.bin", 13 * 1024 * 1024 + 4321),
        ("one.bin", 3 * 1024 * 1024 + 5),
    ] {
        let local = dir.join(name);
        let body = pattern(len, 7);
        std::fs::write(&local, &body).unwrap();
        let dest = format!("s3://unsigned/{name}");
        brisk
            .run(&[
                "cp",
                local.to_str().unwrap(),
                &dest,
                "--payload-signing",
                "unsigned",
                "--part-size",
                "5MiB",
                "-q",
            ])
            .ok();
        assert_eq!(brisk.run(&["cat", &dest]).ok().stdout, body, "{name}");
    }
    brisk
        .run(&[
            "cp",
            dir.join("one.bin").to_str().unwrap(),
            "s3://unsigned/x",
            "--payload-signing",
            "sometimes",
        ])
        .usage_error();
}

on_both_servers!(unsigned_uploads_send_the_file);

/// The `Content-Type` of `url` (s3://), from a GET through a presigned URL.
fn content_type_of(brisk: &Brisk, url: &str) -> String {
    header_of(brisk, url, "content-type")
}

/// The response header `wanted` of a GET of `url` (s3://) through a presigned URL ("" if none).
fn header_of(brisk: &Brisk, url: &str, wanted: &str) -> String {
    let get = brisk.run(&["presign", url]).ok().text();
    let response = http::request("GET", get.trim(), &[], b"");
    assert!(
        response.head.starts_with("HTTP/1.1 200"),
        "{}",
        response.head
    );
    response.header(wanted).unwrap_or_default().to_owned()
}

/// Uploads store the Content-Type a file's extension suggests, as the AWS CLI's do, in one PUT
/// and in parts, by cp and by sync; `--content-type` sets it, `--no-guess-mime-type` leaves it to
/// the server.
fn uploads_store_a_guessed_or_given_content_type(brisk: &Brisk, dir: &Path) {
    brisk.run(&["mb", "s3://ctype"]).ok();
    let tree = dir.join("site");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("page.html"), b"<p>hi</p>").unwrap();
    std::fs::write(tree.join("data.json"), b"{}").unwrap();
    std::fs::write(tree.join("big.csv"), pattern(11 * 1024 * 1024, 3)).unwrap();
    std::fs::write(tree.join("blob"), b"no extension").unwrap();
    let site = tree.to_str().unwrap();
    brisk
        .run(&[
            "cp",
            "--recursive",
            site,
            "s3://ctype/cp/",
            "--part-size",
            "5MiB",
            "-q",
        ])
        .ok();
    brisk.run(&["sync", site, "s3://ctype/sync/", "-q"]).ok();
    for prefix in ["cp", "sync"] {
        let of = |name: &str| content_type_of(brisk, &format!("s3://ctype/{prefix}/{name}"));
        assert_eq!(of("page.html"), "text/html", "{prefix}");
        assert_eq!(of("data.json"), "application/json", "{prefix}");
        assert_eq!(of("big.csv"), "text/csv", "{prefix}: a multipart upload");
        assert!(
            of("blob").ends_with("octet-stream"),
            "{prefix}: {}",
            of("blob")
        );
    }
    let page = tree.join("page.html");
    let page = page.to_str().unwrap();
    brisk
        .run(&[
            "cp",
            page,
            "s3://ctype/given",
            "--content-type",
            "text/plain; charset=utf-8",
        ])
        .ok();
    assert_eq!(
        content_type_of(brisk, "s3://ctype/given"),
        "text/plain; charset=utf-8"
    );
    brisk
        .run(&["cp", page, "s3://ctype/unguessed", "--no-guess-mime-type"])
        .ok();
    assert!(content_type_of(brisk, "s3://ctype/unguessed").ends_with("octet-stream"));

    // The AWS CLI's other header options and --metadata, in both of its forms.
    let big = tree.join("big.csv");
    for (metadata, key) in [
        ("Origin=cli,run=7", "a"),
        (r#"{"origin": "cli", "run": "7"}"#, "b"),
    ] {
        let url = format!("s3://ctype/headers-{key}");
        brisk
            .run(&[
                "cp",
                big.to_str().unwrap(),
                &url,
                "--part-size",
                "5MiB",
                "--cache-control",
                "max-age=60",
                "--content-disposition",
                "attachment",
                "--content-language",
                "en",
                "--metadata",
                metadata,
                "-q",
            ])
            .ok();
        assert_eq!(header_of(brisk, &url, "cache-control"), "max-age=60");
        assert_eq!(header_of(brisk, &url, "content-disposition"), "attachment");
        assert_eq!(header_of(brisk, &url, "content-language"), "en");
        assert_eq!(header_of(brisk, &url, "x-amz-meta-origin"), "cli");
        assert_eq!(header_of(brisk, &url, "x-amz-meta-run"), "7");
        assert_eq!(content_type_of(brisk, &url), "text/csv");
    }
    for bad in ["novalue", "sp ace=1", "k=caf\u{e9}"] {
        brisk
            .run(&["cp", page, "s3://ctype/bad", "--metadata", bad])
            .usage_error();
    }
}

on_both_servers!(uploads_store_a_guessed_or_given_content_type);
