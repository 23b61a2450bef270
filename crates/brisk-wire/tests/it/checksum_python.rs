//! Cross-checks CRC32 against Python's `zlib.crc32` and MD5 / SHA-256 against `hashlib`, for buffers of
//! awkward lengths (around SIMD block sizes and page sizes).
//!
//! The interpreter is `$BRISK_PYTHON`, else `<workspace root>/.venv/bin/python`. A missing interpreter is a
//! failure, not a skip: a cross-check that silently does not run proves nothing.

use crate::python_peer;

use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer, Md5};

const SCRIPT: &str = r#"
import sys, zlib, hashlib
data = sys.stdin.buffer.read()
pos = 0
for n in map(int, sys.argv[1:]):
    chunk = data[pos:pos + n]
    pos += n
    print(zlib.crc32(chunk), hashlib.md5(chunk).hexdigest(), hashlib.sha256(chunk).hexdigest())
"#;

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

    let mut args: Vec<std::ffi::OsString> = vec!["-c".into(), SCRIPT.into()];
    args.extend(lengths.iter().map(|n| n.to_string().into()));
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let output = python_peer::run(
        &args,
        buffers.concat(),
        "Python",
        "set BRISK_PYTHON to a Python 3 interpreter, or run scripts/test to create .venv",
    );
    let stdout = String::from_utf8(output).unwrap();
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
