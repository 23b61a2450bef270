//! Starting the real `brisk serve` binary for a test, and killing it whatever happens.

#![allow(dead_code)]

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
        let mut child = Command::new(env!("CARGO_BIN_EXE_brisk"))
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(root)
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
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
        assert!(guard.url.starts_with("http://127.0.0.1:"), "{}", guard.url);
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

/// Runs `cmd` to completion, killing it after `limit`.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("command starts");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "command timed out after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
