//! `brisk serve --tls-cert --tls-key`: HTTPS end to end with independent clients (boto3 and the AWS
//! CLI with a CA bundle, `tests/tls_e2e.py`) and with brisk's own CLI (`AWS_CA_BUNDLE`), and the
//! errors a bad certificate or key gives at start.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::{ServeProcess, run_with_timeout, serve};

/// A self-signed certificate for 127.0.0.1 and localhost: (certificate PEM, key PEM) written to `dir`.
fn certificate(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let cert = dir.join(format!("{name}.pem"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

fn python() -> PathBuf {
    std::env::var_os("BRISK_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
        PathBuf::from,
    )
}

fn tls_server(dir: &Path, cert: &Path, key: &Path) -> ServeProcess {
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    serve(&dir.join("data"), &["--tls-cert", cert, "--tls-key", key])
}

fn brisk(url: &str, ca: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    cmd.args(["--endpoint-url", url])
        .args(args)
        .env("AWS_ACCESS_KEY_ID", crate::support::ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", crate::support::SECRET_KEY)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_CA_BUNDLE", ca)
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
    run_with_timeout(cmd, Duration::from_secs(120))
}

fn ok(out: &std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn brisk_cli_over_https_with_a_ca_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "server");
    let server = tls_server(dir.path(), &cert, &key);
    assert!(server.url.starts_with("https://"), "{}", server.url);

    ok(&brisk(&server.url, &cert, &["mb", "s3://tls"]), "mb");
    // Above the 8 MiB multipart threshold: a multipart upload and a parallel, verified download,
    // every byte through rustls on both ends.
    let body: Vec<u8> = (0..(20 << 20) + 77)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let source = dir.path().join("source.bin");
    std::fs::write(&source, &body).unwrap();
    ok(
        &brisk(
            &server.url,
            &cert,
            &["cp", source.to_str().unwrap(), "s3://tls/big.bin"],
        ),
        "cp up",
    );
    let copy = dir.path().join("copy.bin");
    ok(
        &brisk(
            &server.url,
            &cert,
            &["cp", "s3://tls/big.bin", copy.to_str().unwrap()],
        ),
        "cp down",
    );
    assert!(
        std::fs::read(&copy).unwrap() == body,
        "the download is exact"
    );
    let listed = ok(&brisk(&server.url, &cert, &["ls", "s3://tls/"]), "ls");
    assert!(listed.contains("big.bin"), "{listed}");

    // Without the CA bundle the client refuses the server's certificate.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let (other_cert, _) = certificate(&other, "other");
    let refused = brisk(&server.url, &other_cert, &["ls", "s3://tls/"]);
    assert!(!refused.status.success());
}

#[test]
fn boto3_and_the_aws_cli_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "server");
    let server = tls_server(dir.path(), &cert, &key);
    let python = python();
    assert!(
        python.exists(),
        "no Python at {} (set BRISK_PYTHON or run scripts/test to create .venv)",
        python.display()
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tls_e2e.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .arg(&server.url)
        .arg(crate::support::ACCESS_KEY)
        .arg(crate::support::SECRET_KEY)
        .arg(&cert)
        .arg(dir.path());
    let output = run_with_timeout(cmd, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "tls_e2e.py failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("ok: "), "{stdout}");
}

/// What `brisk serve` says, and its exit status, when it cannot start with `cert` and `key`.
fn refused_start(dir: &Path, cert: &Path, key: &Path) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisk"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(dir.join("data"))
        .args([
            "--access-key",
            crate::support::ACCESS_KEY,
            "--secret-key",
            crate::support::SECRET_KEY,
        ])
        .arg("--tls-cert")
        .arg(cert)
        .arg("--tls-key")
        .arg(key);
    let out = run_with_timeout(cmd, Duration::from_secs(30));
    assert!(
        !out.status.success(),
        "brisk serve started with {cert:?} and {key:?}"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_certificate_or_key_stops_the_server_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "one");
    let (other_cert, other_key) = certificate(dir.path(), "two");
    let _ = other_cert;

    let said = refused_start(dir.path(), &cert, &other_key);
    assert!(
        said.contains("does not belong to the certificate"),
        "{said}"
    );

    let said = refused_start(dir.path(), &dir.path().join("missing.pem"), &key);
    assert!(said.contains("missing.pem"), "{said}");

    // A key file given as the certificate: no CERTIFICATE block.
    let said = refused_start(dir.path(), &key, &key);
    assert!(said.contains("no CERTIFICATE block"), "{said}");

    let said = refused_start(dir.path(), &cert, &cert);
    assert!(said.contains("TLS key"), "{said}");

    let out = Command::new(env!("CARGO_BIN_EXE_brisk"))
        .args(["serve", "--root", "/tmp/never", "--tls-cert"])
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "--tls-cert without --tls-key is refused"
    );
}
