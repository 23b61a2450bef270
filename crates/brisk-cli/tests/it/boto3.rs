//! Runs `tests/boto3_e2e.py` (boto3 for every operation, the AWS CLI v1 for a few commands) against
//! the real `brisk serve` binary. The interpreter is `$BRISK_PYTHON`, else
//! `<workspace>/.venv/bin/python`; the test fails (never skips) when it or its packages are missing.

use std::path::PathBuf;
use std::process::Command;

use crate::support::{run_with_timeout, serve};

fn python() -> PathBuf {
    std::env::var_os("BRISK_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
        PathBuf::from,
    )
}

#[test]
fn boto3_and_aws_cli_against_brisk_serve() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/boto3_e2e.py");
    let python = python();
    assert!(
        python.exists(),
        "no Python at {} (set BRISK_PYTHON or run scripts/test to create .venv)",
        python.display()
    );
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .arg(&server.url)
        .arg(crate::support::ACCESS_KEY)
        .arg(crate::support::SECRET_KEY)
        .arg(dir.path());
    let output = run_with_timeout(cmd, std::time::Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "boto3_e2e.py failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("ok: "), "{stdout}");
}
