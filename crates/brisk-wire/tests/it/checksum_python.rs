//! Cross-checks CRC32 against Python's `zlib.crc32` and MD5 / SHA-256 against `hashlib`, for buffers of
//! awkward lengths (around SIMD block sizes and page sizes).
//!
//! The interpreter is `$BRISK_PYTHON`, else `<workspace root>/.venv/bin/python`. A missing interpreter is a
//! failure, not a skip: a cross-check that silently does not run proves nothing.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer, Md5};

/// Generous for a Python start-up and a few MiB of hashing on a loaded machine.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(60);

const SCRIPT: &str = r#"
import sys, zlib, hashlib
data = sys.stdin.buffer.read()
pos = 0
for n in map(int, sys.argv[1:]):
    chunk = data[pos:pos + n]
    pos += n
    print(zlib.crc32(chunk), hashlib.md5(chunk).hexdigest(), hashlib.sha256(chunk).hexdigest())
"#;

fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("BRISK_PYTHON") {
        return PathBuf::from(path);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.join(".venv/bin/python")
}

#[test]
fn crc32_md5_sha256_match_python() {
    let lengths = [
        0usize, 1, 15, 16, 63, 64, 65, 255, 256, 4095, 4096, 65_537, 1_048_583,
    ];
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let buffers: Vec<Vec<u8>> = lengths
        .iter()
        .map(|&n| {
            (0..n)
                .map(|_| {
                    // xorshift64: deterministic, no dependency.
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect()
        })
        .collect();

    let interpreter = python();
    let mut child = Command::new(&interpreter)
        .arg("-c")
        .arg(SCRIPT)
        .args(lengths.iter().map(|n| n.to_string()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run Python at {} (set BRISK_PYTHON): {e}",
                interpreter.display()
            )
        });
    {
        let mut stdin = child.stdin.take().unwrap();
        for buffer in &buffers {
            stdin.write_all(buffer).unwrap();
        }
    }
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > PYTHON_TIMEOUT {
            child.kill().ok();
            panic!("Python did not finish within {PYTHON_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "Python failed: {:?}",
        output.status
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), buffers.len());

    for (buffer, line) in buffers.iter().zip(lines) {
        let mut fields = line.split(' ');
        let crc32: u64 = fields.next().unwrap().parse().unwrap();
        let md5 = fields.next().unwrap();
        let sha256 = fields.next().unwrap();
        let len = buffer.len();
        assert_eq!(
            Checksummer::checksum(ChecksumAlgorithm::Crc32, buffer).as_crc(),
            Some(crc32),
            "CRC32 of {len} bytes"
        );
        assert_eq!(Md5::digest(buffer).to_hex(), md5, "MD5 of {len} bytes");
        assert_eq!(
            hex::encode(Checksummer::checksum(ChecksumAlgorithm::Sha256, buffer).as_bytes()),
            sha256,
            "SHA-256 of {len} bytes"
        );
    }
}
