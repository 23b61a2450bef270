//! Starting the real `brisk serve` binary for a test (brisk-testkit's launcher, given this crate's
//! binary), killing it whatever happens, and running `brisk` commands against it.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use brisk_testkit::serve::ServeCommand;

pub use brisk_testkit::serve::ServeProcess;
pub use brisk_testkit::{ACCESS_KEY, SECRET_KEY};

/// `brisk serve` (this crate's binary) on `root` with the test keys, `extra` arguments and its access
/// log off unless `extra` sets `--log-format`; killed when dropped.
pub fn serve(root: &Path, extra: &[&str]) -> ServeProcess {
    ServeCommand::new(env!("CARGO_BIN_EXE_brisk"))
        .args(extra)
        .start(root)
}

/// [`serve`], with the server's standard error (its access log) going to `stderr`.
pub fn serve_with_stderr(root: &Path, extra: &[&str], stderr: Stdio) -> ServeProcess {
    ServeCommand::new(env!("CARGO_BIN_EXE_brisk"))
        .args(extra)
        .stderr(stderr)
        .start(root)
}

/// [`serve_with_stderr`], with the server run through `wrapper` (a command that ends by executing
/// its arguments, such as `unshare`).
pub fn serve_wrapped(wrapper: &[&str], root: &Path, extra: &[&str], stderr: Stdio) -> ServeProcess {
    ServeCommand::new(env!("CARGO_BIN_EXE_brisk"))
        .wrapper(wrapper)
        .args(extra)
        .stderr(stderr)
        .start(root)
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
