//! Authenticated requests signed by brisk-wire's SigV4 signer, sent over a real socket: literal
//! payload hashes, aws-chunked bodies with signed chunks and a signed checksum trailer, unsigned
//! trailers, tampering and clock skew. Bodies that fail verification are never committed.

use crate::http_support;
use std::time::{Duration, SystemTime};

use brisk_server::{AccessKey, ServerConfig};
use brisk_testkit::http::{Connection, ResponseHead};
use brisk_testkit::serve::InProcessServe;
use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer};
use brisk_wire::sigv4::chunked::{signed_trailer_encoded_length, unsigned_trailer_encoded_length};
use brisk_wire::sigv4::{
    AmzDate, Credentials, PayloadHash, SignableRequest, Signer, UnsignedChunkEncoder,
};

const AK: &str = "AKTEST";
const SK: &str = "secret-for-tests";
const CHUNK: usize = 8 * 1024;

struct Fixture {
    server: Option<InProcessServe>,
    client: Connection,
    host: String,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let key = AccessKey {
            access_key_id: AK.into(),
            secret_access_key: SK.into(),
        };
        let server = http_support::start_with(ServerConfig::new(dir.path(), Some(key)));
        let client = Connection::connect(server.local_addr());
        let host = server.local_addr().to_string();
        let mut f = Self {
            server: Some(server),
            client,
            host,
            _dir: dir,
        };
        let (r, body) = f.signed("PUT", "/sig-bucket", &[], b"", None, SystemTime::now());
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&body));
        f
    }

    /// Signs and sends a request; `payload` overrides the hash of `body` (for mismatches and
    /// streaming markers). Extra headers are signed.
    fn signed(
        &mut self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: &[u8],
        payload: Option<PayloadHash>,
        time: SystemTime,
    ) -> (ResponseHead, Vec<u8>) {
        let mut headers: Vec<(&str, &[u8])> = vec![("host", self.host.as_bytes())];
        headers.extend(extra.iter().map(|(n, v)| (*n, v.as_bytes())));
        let request = SignableRequest {
            method,
            path,
            query: "",
            headers: &headers,
        };
        let signer = Signer::new(Credentials::new(AK, SK), "us-east-1");
        let payload = payload.unwrap_or_else(|| PayloadHash::of(body));
        let now = AmzDate::from_system_time(time).unwrap();
        let signed = signer.sign(&request, payload, now).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host);
        for (n, v) in extra {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        for (n, v) in signed.headers() {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut wire = head.into_bytes();
        wire.extend_from_slice(body);
        self.client.send_raw(&wire);
        let mut out = Vec::new();
        let r = self.client.receive(method, |d| out.extend_from_slice(d));
        (r, out)
    }

    fn get(&mut self, path: &str) -> (ResponseHead, Vec<u8>) {
        self.signed("GET", path, &[], b"", None, SystemTime::now())
    }

    /// A signed aws-chunked body (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`) with a CRC32 trailer;
    /// `corrupt` flips one payload byte after signing.
    fn put_signed_chunked(
        &mut self,
        path: &str,
        payload: &[u8],
        crc32: &str,
        corrupt: bool,
    ) -> (ResponseHead, Vec<u8>) {
        let decoded = payload.len().to_string();
        let length = signed_trailer_encoded_length(
            payload.len() as u64,
            CHUNK as u64,
            &[("x-amz-checksum-crc32", crc32.len())],
        )
        .to_string();
        let extra = [
            ("content-encoding", "aws-chunked"),
            ("x-amz-decoded-content-length", decoded.as_str()),
            ("x-amz-trailer", "x-amz-checksum-crc32"),
        ];
        let mut headers: Vec<(&str, &[u8])> = vec![("host", self.host.as_bytes())];
        headers.extend(extra.iter().map(|(n, v)| (*n, v.as_bytes())));
        let request = SignableRequest {
            method: "PUT",
            path,
            query: "",
            headers: &headers,
        };
        let signer = Signer::new(Credentials::new(AK, SK), "us-east-1");
        let now = AmzDate::from_system_time(SystemTime::now()).unwrap();
        let signed = signer
            .sign(&request, PayloadHash::StreamingSignedTrailer, now)
            .unwrap();
        let mut chain = signed.chunk_signer();
        let mut body = Vec::new();
        for chunk in payload.chunks(CHUNK) {
            body.extend_from_slice(chain.sign_chunk(chunk).as_bytes());
            body.extend_from_slice(chunk);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(
            &chain
                .final_chunk_with_trailers(&[("x-amz-checksum-crc32", crc32)])
                .unwrap(),
        );
        assert_eq!(body.len().to_string(), length);
        if corrupt {
            let at = body.len() / 2;
            body[at] ^= 1;
        }
        let mut head = format!("PUT {path} HTTP/1.1\r\nHost: {}\r\n", self.host);
        for (n, v) in extra.iter() {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        for (n, v) in signed.headers() {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {length}\r\n\r\n"));
        let mut wire = head.into_bytes();
        wire.extend_from_slice(&body);
        self.client.send_raw(&wire);
        let mut out = Vec::new();
        let r = self.client.receive("PUT", |d| out.extend_from_slice(d));
        (r, out)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown();
        }
    }
}

fn crc32(data: &[u8]) -> String {
    Checksummer::checksum(ChecksumAlgorithm::Crc32, data).to_base64()
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

#[test]
fn literal_payload_hash_is_verified_before_commit() {
    let mut f = Fixture::new();
    let (r, body) = f.signed(
        "PUT",
        "/sig-bucket/good",
        &[],
        b"payload",
        None,
        SystemTime::now(),
    );
    assert_eq!(r.status, 200, "{}", text(&body));
    let (r, body) = f.get("/sig-bucket/good");
    assert_eq!((r.status, body.as_slice()), (200, b"payload".as_slice()));
    let lie = Some(PayloadHash::of(b"something else"));
    let (r, body) = f.signed(
        "PUT",
        "/sig-bucket/bad",
        &[],
        b"payload",
        lie,
        SystemTime::now(),
    );
    assert_eq!(r.status, 400);
    assert!(
        text(&body).contains("XAmzContentSHA256Mismatch"),
        "{}",
        text(&body)
    );
    assert_eq!(
        f.get("/sig-bucket/bad").0.status,
        404,
        "a mismatching body is not committed"
    );
}

#[test]
fn signed_aws_chunked_with_trailer_stores_only_the_payload() {
    let mut f = Fixture::new();
    let payload: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let sum = crc32(&payload);
    let (r, body) = f.put_signed_chunked("/sig-bucket/chunked", &payload, &sum, false);
    assert_eq!(r.status, 200, "{}", text(&body));
    let (r, body) = f.get("/sig-bucket/chunked");
    assert_eq!(r.status, 200);
    assert_eq!(body, payload, "no aws-chunked framing in the object");
    assert!(
        !r.head.to_ascii_lowercase().contains("content-encoding"),
        "{}",
        r.head
    );
    let (r, _) = f.signed(
        "HEAD",
        "/sig-bucket/chunked",
        &[("x-amz-checksum-mode", "ENABLED")],
        b"",
        None,
        SystemTime::now(),
    );
    assert!(
        r.head.contains(&format!("x-amz-checksum-crc32: {sum}")),
        "{}",
        r.head
    );
}

#[test]
fn tampered_chunks_and_wrong_trailers_are_refused_and_not_stored() {
    let mut f = Fixture::new();
    let payload = vec![7u8; 30_000];
    let (r, body) = f.put_signed_chunked("/sig-bucket/tampered", &payload, &crc32(&payload), true);
    assert_eq!(r.status, 403, "{}", text(&body));
    assert!(
        text(&body).contains("SignatureDoesNotMatch"),
        "{}",
        text(&body)
    );
    let mut f = Fixture::new();
    let (r, body) = f.put_signed_chunked("/sig-bucket/wrongsum", &payload, &crc32(b"other"), false);
    assert_eq!(r.status, 400, "{}", text(&body));
    assert!(text(&body).contains("BadDigest"), "{}", text(&body));
    assert_eq!(f.get("/sig-bucket/wrongsum").0.status, 404);
    assert_eq!(f.get("/sig-bucket/tampered").0.status, 404);
}

#[test]
fn unsigned_payload_trailer_is_decoded() {
    let mut f = Fixture::new();
    let payload = vec![3u8; 20_000];
    let sum = crc32(&payload);
    let mut body = Vec::new();
    for chunk in payload.chunks(CHUNK) {
        body.extend_from_slice(UnsignedChunkEncoder::chunk_header(chunk.len() as u64).as_bytes());
        body.extend_from_slice(chunk);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(
        &UnsignedChunkEncoder::final_chunk_with_trailers(&[("x-amz-checksum-crc32", &sum)])
            .unwrap(),
    );
    assert_eq!(
        body.len() as u64,
        unsigned_trailer_encoded_length(
            20_000,
            CHUNK as u64,
            &[("x-amz-checksum-crc32", sum.len())]
        )
    );
    let decoded = payload.len().to_string();
    let extra = [
        ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", decoded.as_str()),
        ("x-amz-trailer", "x-amz-checksum-crc32"),
    ];
    let (r, out) = f.signed(
        "PUT",
        "/sig-bucket/unsigned",
        &extra,
        &body,
        Some(PayloadHash::StreamingUnsignedTrailer),
        SystemTime::now(),
    );
    assert_eq!(r.status, 200, "{}", text(&out));
    assert_eq!(f.get("/sig-bucket/unsigned").1, payload);
}

#[test]
fn skewed_clocks_and_unsigned_requests_are_refused() {
    let mut f = Fixture::new();
    let past = SystemTime::now() - Duration::from_secs(3600);
    let (r, body) = f.signed("GET", "/sig-bucket", &[], b"", None, past);
    assert_eq!(r.status, 403);
    assert!(
        text(&body).contains("RequestTimeTooSkewed"),
        "{}",
        text(&body)
    );
    let (r, body) = f.client.request("GET", "/sig-bucket", b"");
    assert_eq!(r.status, 403);
    assert!(text(&body).contains("AccessDenied"), "{}", text(&body));
}
