//! Starting the real `brisk serve` binary for a test, and killing it whatever happens.

#![allow(dead_code)]

pub mod raw;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const ACCESS_KEY: &str = "BRISKTESTKEY";
pub const SECRET_KEY: &str = "brisk-test-secret";

/// A running `brisk serve`; killed (SIGKILL) and reaped when dropped.
#[derive(Debug)]
pub struct ServeProcess {
    pub child: Child,
    pub url: String,
}

impl ServeProcess {
    /// Starts `brisk serve --root <root> --listen 127.0.0.1:0` with the test keys and waits (at most
    /// 30 s) for the URL line.
    pub fn start(root: &Path, extra: &[&str]) -> Self {
        Self::start_with_stderr(root, extra, Stdio::inherit())
    }

    /// [`start`](Self::start), with the server's standard error (its access log) going to `stderr`.
    pub fn start_with_stderr(root: &Path, extra: &[&str], stderr: Stdio) -> Self {
        Self::start_wrapped(&[], root, extra, stderr)
    }

    /// [`start_with_stderr`](Self::start_with_stderr), with the server run through `wrapper` (a
    /// command that ends by executing its arguments, such as `unshare`): the binary and its arguments
    /// are appended to it. The wrapper must `exec` so the child's pid is the server's.
    pub fn start_wrapped(wrapper: &[&str], root: &Path, extra: &[&str], stderr: Stdio) -> Self {
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(env!("CARGO_BIN_EXE_brisk"));
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_brisk")),
        };
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(root)
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            // Quiet in test output unless a test asks for the access log.
            .args(
                (!extra.iter().any(|a| a.starts_with("--log-format")))
                    .then_some(["--log-format", "off"])
                    .into_iter()
                    .flatten(),
            )
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("brisk serve starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let mut guard = Self {
            child,
            url: String::new(),
        };
        guard.url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("brisk serve prints its URL within 30 s");
        assert!(
            guard.url.starts_with("http://127.0.0.1:")
                || guard.url.starts_with("https://127.0.0.1:"),
            "{}",
            guard.url
        );
        guard
    }

    /// Kills the server with SIGKILL now (crash tests).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `brisk --endpoint-url <url> <args>` with the test keys and no AWS configuration files, to
/// completion or for at most 60 s.
pub fn brisk(url: &str, args: &[&str]) -> Output {
    brisk_with_env(url, args, &[])
}

/// [`brisk`], with more environment variables.
pub fn brisk_with_env(url: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    cmd.args(["--endpoint-url", url])
        .args(args)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied());
    run_with_timeout(cmd, Duration::from_secs(60))
}

/// Runs `cmd` to completion, killing it after `limit`. Its output is read while it runs, so a
/// command that writes more than a pipe holds (`cat` of a large object) does not block.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Output {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("command starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            out
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    match status {
        Some(status) => Output {
            status,
            stdout,
            stderr,
        },
        None => panic!(
            "command timed out after {limit:?}\nstdout ({} bytes):\n{}\nstderr:\n{}",
            stdout.len(),
            String::from_utf8_lossy(&stdout[..stdout.len().min(4096)]),
            String::from_utf8_lossy(&stderr)
        ),
    }
}

/// A running MinIO (the independent S3 server the client's conformance suite also runs against),
/// from `BRISK_MINIO` or `<workspace>/.tools/bin/minio` (`scripts/install-minio`, which the test
/// command runs); killed and reaped when dropped.
#[derive(Debug)]
pub struct MinioProcess {
    pub child: Child,
    pub url: String,
}

impl MinioProcess {
    /// Starts MinIO on a free loopback port with `root` as its data directory and the given root
    /// user, and waits (at most 60 s) until it answers its health check.
    pub fn start(root: &Path, access_key: &str, secret_key: &str) -> Self {
        let binary = std::env::var_os("BRISK_MINIO")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/minio")
            });
        assert!(
            binary.is_file(),
            "MinIO not found at {}: run scripts/install-minio (or set BRISK_MINIO)",
            binary.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(&binary)
            .args(["server", "--quiet", "--address"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["--console-address", "127.0.0.1:0"])
            .arg(root)
            .env("MINIO_ROOT_USER", access_key)
            .env("MINIO_ROOT_PASSWORD", secret_key)
            .env("MINIO_SITE_REGION", "us-east-1")
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("minio starts");
        let guard = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let start = Instant::now();
        while !healthy(port) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "MinIO did not answer on port {port} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        guard
    }
}

impl Drop for MinioProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// MinIO's liveness check answers 200.
fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!(
        "GET /minio/health/live HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    let mut head = [0u8; 12];
    s.write_all(request.as_bytes()).is_ok()
        && s.read_exact(&mut head).is_ok()
        && head.starts_with(b"HTTP/1.1 200")
}
