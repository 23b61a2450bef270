//! Published test vectors and S3's multipart conventions, checked through the public API.

use brisk_wire::checksum::{
    ChecksumAlgorithm, ChecksumValue, Checksummer, CompositeChecksum, FullObjectCrc, Md5,
    Md5Digest, MultipartChecksum, MultipartEtag,
};

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Checksummer::checksum(ChecksumAlgorithm::Sha256, data).as_bytes())
}

/// FIPS 180-2 / NIST example vectors for SHA-256.
#[test]
fn sha256_nist_vectors() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
    assert_eq!(
        sha256_hex(&vec![b'a'; 1_000_000]),
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
    );
}

/// FIPS 180-2 example vectors for SHA-1.
#[test]
fn sha1_nist_vectors() {
    let sha1_hex =
        |data: &[u8]| hex::encode(Checksummer::checksum(ChecksumAlgorithm::Sha1, data).as_bytes());
    assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    assert_eq!(
        sha1_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
    );
}

/// The CRC catalogue's check values, through the header form a server would compare against.
#[test]
fn crc_check_values_as_headers() {
    let header = |alg| Checksummer::checksum(alg, b"123456789").to_base64();
    // 0xCBF43926, 0xE3069283, 0xAE8B14860A799888 in big-endian base64.
    assert_eq!(header(ChecksumAlgorithm::Crc32), "y/Q5Jg==");
    assert_eq!(header(ChecksumAlgorithm::Crc32c), "4waSgw==");
    assert_eq!(header(ChecksumAlgorithm::Crc64Nvme), "rosUhgp5mIg=");
    for alg in ChecksumAlgorithm::ALL {
        let value = Checksummer::checksum(alg, b"123456789");
        assert_eq!(ChecksumValue::from_base64(alg, &header(alg)), Ok(value));
    }
}

/// The parts of the multipart examples below: 5 MiB of `a`, then 1 KiB of `b`. The expected values were
/// computed independently with Python's `hashlib`, `zlib` and `base64`.
fn parts() -> [Vec<u8>; 2] {
    [vec![b'a'; 5 * 1024 * 1024], vec![b'b'; 1024]]
}

#[test]
fn multipart_etag_of_two_parts() {
    let parts = parts();
    let mut etag = MultipartEtag::new();
    let mut hex_parts = Vec::new();
    for part in &parts {
        let digest = Md5::digest(part);
        hex_parts.push(digest.to_etag());
        etag.push_part(&digest);
    }
    assert_eq!(hex_parts[0], "\"79b281060d337b9b2b84ccf390adcf74\"");
    assert_eq!(hex_parts[1], "\"bbe6402cdc9b7e2036fc97e9a91726cd\"");
    assert_eq!(etag.parts(), 2);
    assert_eq!(etag.finish(), "16329fb6004d64a4fbc5bbb983fa0528-2");

    // The same from the ETag strings a CompleteMultipartUpload body carries.
    let mut from_text = MultipartEtag::new();
    for hex in &hex_parts {
        from_text.push_part_etag(hex).unwrap();
    }
    assert_eq!(from_text.finish(), "16329fb6004d64a4fbc5bbb983fa0528-2");
    assert!(
        MultipartEtag::new()
            .push_part_etag("\"not-an-md5\"")
            .is_err()
    );
}

#[test]
fn composite_checksums_of_two_parts() {
    let parts = parts();
    let composite = |alg| {
        let mut c = CompositeChecksum::new(alg).unwrap();
        for part in &parts {
            c.push_part(&Checksummer::checksum(alg, part)).unwrap();
        }
        c.finish()
    };
    let crc32 = composite(ChecksumAlgorithm::Crc32);
    assert_eq!(crc32.to_string(), "pm11MA==-2");
    assert_eq!(
        MultipartChecksum::parse(ChecksumAlgorithm::Crc32, "pm11MA==-2"),
        Ok(crc32)
    );
    assert_eq!(
        composite(ChecksumAlgorithm::Sha256).to_string(),
        "NLHrJlXEZEDn0NlgZhn8GLRMTzURmg2zW2TYiRdd7GU=-2"
    );
    assert_eq!(
        composite(ChecksumAlgorithm::Sha1).to_string(),
        "LVZ+D48FxcbNmVo7NOwuXFUMSjw=-2"
    );
    assert!(FullObjectCrc::new(ChecksumAlgorithm::Sha1).is_err());
}

#[test]
fn full_object_crc32_of_two_parts_is_the_crc_of_the_whole() {
    let parts = parts();
    let mut full = FullObjectCrc::new(ChecksumAlgorithm::Crc32).unwrap();
    for part in &parts {
        full.push_part(
            &Checksummer::checksum(ChecksumAlgorithm::Crc32, part),
            part.len() as u64,
        )
        .unwrap();
    }
    assert_eq!(full.finish().to_base64(), "9NrqQQ==");
}

#[test]
fn content_md5_of_rfc1321_abc() {
    let digest = Md5::digest(b"abc");
    assert_eq!(digest.to_hex(), "900150983cd24fb0d6963f7d28e17f72");
    assert_eq!(digest.to_base64(), "kAFQmDzST7DWlj99KOF/cg==");
    assert_eq!(
        Md5Digest::from_base64("kAFQmDzST7DWlj99KOF/cg=="),
        Ok(digest)
    );
}
