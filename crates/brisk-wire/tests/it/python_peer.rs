//! Python as an independent peer: the interpreter the tests cross-check against (`$BRISK_PYTHON`,
//! else the workspace's `.venv`), and one way to run a helper with bytes on stdin, bounded in time,
//! failing loudly (never skipping) when it or its packages are missing.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a helper may run.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(120);

/// The interpreter: `$BRISK_PYTHON`, else `<workspace>/.venv/bin/python` (made by `scripts/test`).
pub fn python() -> PathBuf {
    std::env::var_os("BRISK_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
        PathBuf::from,
    )
}

/// A script in `tests/`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// Runs the interpreter with `args`, writing `input` to its stdin while its output is read (so that
/// neither pipe fills), and returns its stdout. `what` names the helper in failures; `setup_hint`
/// says how to get the packages it needs.
pub fn run(args: &[&std::ffi::OsStr], input: Vec<u8>, what: &str, setup_hint: &str) -> Vec<u8> {
    let python = python();
    let mut child = Command::new(&python)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {} ({e}). {setup_hint}", python.display()));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).map(|_| out)
    });
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stderr.read_to_string(&mut out);
        out
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > PYTHON_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {PYTHON_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = writer.join();
    let out = reader.join().unwrap().unwrap();
    let err = err_reader.join().unwrap();
    assert!(
        status.success(),
        "{what} failed ({status}):\n{err}\n{setup_hint}"
    );
    out
}
