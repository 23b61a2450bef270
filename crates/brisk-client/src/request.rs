//! From an operation's parts (method, bucket, key, query, headers) to a signed request head: where it
//! goes (host, path, addressing style) and what it carries.

use std::borrow::Cow;
use std::time::SystemTime;

use brisk_wire::http::RequestHead;
use brisk_wire::sigv4::chunked::unsigned_trailer_encoded_length;
use brisk_wire::sigv4::{AmzDate, PayloadHash, SignableRequest, Signer, encode_key_path};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::config::{Addressing, Endpoint, is_virtual_host_compatible};
use crate::error::Error;
use crate::integrity::UploadChecksum;

/// `User-Agent` sent with every request, so server logs can tell brisk's traffic apart.
pub const USER_AGENT: &str = concat!("brisk/", env!("CARGO_PKG_VERSION"));

/// Characters left as they are in a query component: SigV4's unreserved set `A-Za-z0-9-._~`.
const QUERY_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Appends `name=value` (both percent-encoded) to a raw query string.
pub(crate) fn push_query(query: &mut String, name: &str, value: &str) {
    if !query.is_empty() {
        query.push('&');
    }
    query.extend(utf8_percent_encode(name, QUERY_COMPONENT));
    query.push('=');
    query.extend(utf8_percent_encode(value, QUERY_COMPONENT));
}

/// One S3 request before it is addressed and signed.
#[derive(Debug, Clone)]
pub(crate) struct RequestSpec<'a> {
    pub(crate) method: &'static str,
    pub(crate) bucket: Option<&'a str>,
    pub(crate) key: Option<&'a str>,
    /// Raw query, components already percent-encoded (see [`push_query`]).
    pub(crate) query: String,
    /// Headers to send and sign (lower-case names): `range`, `if-match`, checksums, ... Names are
    /// borrowed constants except user metadata (`x-amz-meta-*`), whose names come from the caller.
    pub(crate) headers: Vec<(Cow<'static, str>, String)>,
    pub(crate) payload: PayloadHash,
    pub(crate) body: &'a [u8],
    /// When set, the body is this range of a file instead of `body` (which is then empty), sent
    /// aws-chunked with `trailer` (see [`FileBody`]).
    pub(crate) file: Option<&'a FileBody>,
    /// When set, `body` is sent aws-chunked (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`) with this
    /// checksum computed while the chunks are written and sent as a trailer (see [`TrailingChecksum`]).
    pub(crate) trailer: Option<&'a TrailingChecksum>,
    /// The server answers only after work proportional to the object (CompleteMultipartUpload,
    /// CopyObject, UploadPartCopy): the response head may take up to [`SLOW_ANSWER_TIMEOUT`]
    /// instead of the configured read timeout.
    pub(crate) slow_answer: bool,
    /// Whether a body of [`EXPECT_CONTINUE_THRESHOLD`] or more waits for the server's
    /// `100 Continue` (see [`RequestSpec::part_of_created_upload`] for the requests that do not).
    pub(crate) continue_first: bool,
}

/// How long a response head may take for a request whose answer comes after the server has
/// assembled or copied a whole object: 15 minutes. AWS documents that CompleteMultipartUpload "could
/// take several minutes"; S3 keeps such connections busy with whitespace, other servers (MinIO, brisk
/// serve) send nothing until they are done, and a 30 s read timeout then fails an upload whose parts
/// all arrived.
pub const SLOW_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Bytes per aws-chunked chunk: 1 MiB. Each chunk costs a size line and a CRLF (three writes of a
/// few bytes besides the data, written from where it is), so 8 chunks per 8 MiB part; S3's only
/// rule for unsigned chunks is that every chunk but the last is at least 8 KiB.
pub const AWS_CHUNK_SIZE: usize = 1024 * 1024;

/// A checksum sent as the trailer of an aws-chunked body, computed in the same pass that writes the
/// body: the value of the last complete send is kept for CompleteMultipartUpload.
#[derive(Debug)]
pub(crate) struct TrailingChecksum {
    pub(crate) algorithm: UploadChecksum,
    value: std::sync::Mutex<Option<String>>,
    /// Tests: the trailer carries the checksum of other bytes, which the server must refuse.
    #[cfg(test)]
    pub(crate) corrupt: bool,
}

impl TrailingChecksum {
    pub(crate) fn new(algorithm: UploadChecksum) -> Self {
        Self {
            algorithm,
            value: std::sync::Mutex::new(None),
            #[cfg(test)]
            corrupt: false,
        }
    }

    /// The value the trailer carries for bytes whose checksum is `computed`.
    pub(crate) fn outgoing(&self, computed: String) -> String {
        #[cfg(test)]
        if self.corrupt {
            return self.algorithm.compute(b"other bytes");
        }
        computed
    }

    /// The checksum sent by the last complete write of the body.
    pub(crate) fn value(&self) -> Option<String> {
        self.value
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set(&self, value: String) {
        *self
            .value
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(value);
    }

    /// Length of the base64 value in the trailer (4 characters per 3 digest bytes, padded).
    fn value_len(&self) -> usize {
        self.algorithm.algorithm().digest_len().div_ceil(3) * 4
    }
}

/// A request body that is `len` bytes of `file` from `offset`: an upload part (or a whole small
/// file) sent from the file where it is, with no block to hold it.
///
/// On plain TCP each aws-chunked chunk is first read through a small scratch block from `pool`
/// ([`FILE_SCRATCH_SIZE`]: the CRC is taken while the bytes sit in the CPU's L2 cache, and the read
/// pulls them into the page cache if they were not there), then the kernel sends the same range
/// with `sendfile`, from the page cache (see `crate::file_send`). Over TLS (encrypted in user
/// space) the bytes are read into the scratch block and written from there.
#[derive(Debug)]
pub(crate) struct FileBody {
    pub(crate) file: std::sync::Arc<std::fs::File>,
    /// The file's name, for error messages.
    pub(crate) path: std::path::PathBuf,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    /// Where each attempt at sending the body takes its scratch block (recycled, so a long upload
    /// allocates none after its first parts).
    pub(crate) pool: brisk_mem::BufferPool,
    /// Whether to send with `sendfile` on plain TCP: always, but in the tests of the copy that
    /// takes over where a file system has no `sendfile`.
    pub(crate) sendfile: bool,
}

impl FileBody {
    pub(crate) fn new(
        file: std::sync::Arc<std::fs::File>,
        path: &std::path::Path,
        offset: u64,
        len: u64,
        pool: &brisk_mem::BufferPool,
    ) -> Self {
        Self {
            file,
            path: path.to_owned(),
            offset,
            len,
            pool: pool.clone(),
            sendfile: true,
        }
    }
}

/// Bytes read per `pread` of a [`FileBody`]: 256 KiB, small enough that the checksum reads them
/// from the CPU's L2 cache right after the kernel wrote them there.
pub const FILE_SCRATCH_SIZE: usize = 256 * 1024;

impl<'a> RequestSpec<'a> {
    pub(crate) fn new(method: &'static str, bucket: Option<&'a str>, key: Option<&'a str>) -> Self {
        Self {
            method,
            bucket,
            key,
            query: String::new(),
            headers: Vec::new(),
            payload: PayloadHash::Sha256(EMPTY_SHA256_BYTES),
            body: &[],
            file: None,
            trailer: None,
            slow_answer: false,
            continue_first: true,
        }
    }

    /// Marks the request as a part of a multipart upload that the server has created: it is sent
    /// without waiting for `100 Continue`. The creation already showed that the credentials,
    /// bucket and key are accepted, so what `100 Continue` saves (the body of a refused request)
    /// is rarely at stake, and the wait costs a round trip per part: through a 10 ms round trip,
    /// more than a tenth of an 8 MiB part's time at 1 GB/s (512 MiB through a 10 ms round trip:
    /// 1.27 s → 1.07 with the part read ahead as well), and more where the server is slow to say
    /// `100 Continue` (a `brisk serve` whose workers wrote bodies inline: 4.9 s → 4.1 at the server
    /// for 2 GiB; BENCHMARKS-log.md, "Upload parts without `100 Continue`"). A part refused anyway
    /// (credentials expired, upload aborted) costs its bytes once.
    pub(crate) fn part_of_created_upload(mut self) -> Self {
        self.continue_first = false;
        self
    }

    /// Whether the body waits for the server's `100 Continue` before it is sent.
    pub(crate) fn expects_continue(&self) -> bool {
        self.continue_first && expects_continue(self.body_len())
    }

    /// Marks the request as one whose answer comes late (see [`RequestSpec::slow_answer`]).
    pub(crate) fn slow_answer(mut self) -> Self {
        self.slow_answer = true;
        self
    }

    /// Sends `body` aws-chunked with `trailer`'s checksum as a trailer (`x-amz-trailer`), unsigned.
    pub(crate) fn aws_chunked(mut self, body: &'a [u8], trailer: &'a TrailingChecksum) -> Self {
        self.body = body;
        self.with_trailer(trailer)
    }

    /// Sends the file range `file` aws-chunked with `trailer`'s checksum as a trailer, unsigned:
    /// on plain TCP each chunk's bytes are summed from the page cache and then moved by the kernel
    /// with `sendfile` (see [`FileBody`]).
    pub(crate) fn aws_chunked_file(
        mut self,
        file: &'a FileBody,
        trailer: &'a TrailingChecksum,
    ) -> Self {
        self.body = &[];
        self.file = Some(file);
        self.with_trailer(trailer)
    }

    /// The unsigned aws-chunked framing of whichever body is set, with `trailer`.
    fn with_trailer(mut self, trailer: &'a TrailingChecksum) -> Self {
        self.payload = PayloadHash::StreamingUnsignedTrailer;
        self.trailer = Some(trailer);
        let decoded = self.body_len().to_string();
        self.header("content-encoding", "aws-chunked")
            .header("x-amz-decoded-content-length", decoded)
            .header("x-amz-trailer", trailer.algorithm.algorithm().header_name())
    }

    /// The payload's length before any aws-chunked framing.
    pub(crate) fn body_len(&self) -> u64 {
        self.file.map_or(self.body.len() as u64, |f| f.len)
    }

    /// The `Content-Length` of the body as sent.
    pub(crate) fn encoded_len(&self) -> u64 {
        match self.trailer {
            None => self.body_len(),
            Some(t) => unsigned_trailer_encoded_length(
                self.body_len(),
                AWS_CHUNK_SIZE as u64,
                &[(t.algorithm.algorithm().header_name(), t.value_len())],
            ),
        }
    }

    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((Cow::Borrowed(name), value.into()));
        self
    }

    /// `name: value`, or `value` appended to the header of that name already set, comma-separated
    /// (an aws-chunked body's `Content-Encoding: aws-chunked` and the object's own, `gzip`: one
    /// header, as S3 asks, and as SigV4 signs repeated headers anyway).
    pub(crate) fn header_joined(mut self, name: &'static str, value: &str) -> Self {
        match self.headers.iter_mut().find(|(n, _)| n == name) {
            Some((_, existing)) => {
                existing.push(',');
                existing.push_str(value);
                self
            }
            None => self.header(name, value.to_owned()),
        }
    }

    /// A header whose name is built at run time (user metadata); `name` must be lower-case.
    pub(crate) fn header_named(mut self, name: String, value: impl Into<String>) -> Self {
        self.headers.push((Cow::Owned(name), value.into()));
        self
    }
}

/// SHA-256 of the empty payload, the payload hash of every bodiless request.
const EMPTY_SHA256_BYTES: [u8; 32] = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

/// Where a request goes: the host to connect to, the `Host` header, and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Address {
    /// Host name to connect to (a bucket's virtual host, or the endpoint's host).
    pub(crate) host: String,
    /// TCP port.
    pub(crate) port: u16,
    /// `Host` header value, also the pool's key for the connection.
    pub(crate) host_header: String,
    /// Request path, percent-encoded.
    pub(crate) path: String,
}

/// Addresses `bucket`/`key` on `endpoint`.
pub(crate) fn target(
    endpoint: &Endpoint,
    addressing: Addressing,
    bucket: Option<&str>,
    key: Option<&str>,
) -> Address {
    let key_path = key.map(encode_key_path);
    let virtual_bucket = bucket.filter(|b| {
        addressing == Addressing::VirtualHosted && is_virtual_host_compatible(b, endpoint.scheme)
    });
    let (host, path) = match (virtual_bucket, bucket) {
        (Some(b), _) => (
            format!("{b}.{}", endpoint.host),
            key_path.unwrap_or_else(|| "/".to_owned()),
        ),
        (None, Some(b)) => (
            endpoint.host.clone(),
            match key_path {
                Some(k) => format!("/{b}{k}"),
                None => format!("/{b}"),
            },
        ),
        (None, None) => (endpoint.host.clone(), "/".to_owned()),
    };
    Address {
        host_header: endpoint.host_header(&host),
        host,
        port: endpoint.port,
        path,
    }
}

/// Checks what S3 requires of a key before anything is sent: 1 to 1,024 bytes of UTF-8.
pub(crate) fn check_key(key: &str) -> Result<(), Error> {
    if key.is_empty() || key.len() > 1024 {
        return Err(Error::InvalidArgument {
            what: format!(
                "object keys are 1 to 1024 bytes long, this one is {}",
                key.len()
            ),
        });
    }
    Ok(())
}

/// Checks a bucket name enough to keep it from breaking the request line or path (S3 validates it
/// fully): 3 to 63 characters, no `/`, no whitespace or control characters.
pub(crate) fn check_bucket(bucket: &str) -> Result<(), Error> {
    let ok = (3..=63).contains(&bucket.len())
        && !bucket
            .bytes()
            .any(|b| b == b'/' || b.is_ascii_whitespace() || b.is_ascii_control() || b >= 0x80);
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what: format!("{bucket:?} is not a valid bucket name (3 to 63 characters, no '/')"),
        })
    }
}

/// Builds the head of `spec` for `target`, signed at `now` by `signer`; with no signer (an
/// anonymous client) the head carries no `Authorization`, `x-amz-date` or security token, as
/// `aws --no-sign-request` sends, but keeps `x-amz-content-sha256`: it says how the body is framed
/// (an aws-chunked body is recognised by it), which a server needs whether or not it authenticates.
pub(crate) fn signed_head(
    signer: Option<&Signer>,
    spec: &RequestSpec<'_>,
    target: &Address,
    now: SystemTime,
) -> Result<RequestHead, Error> {
    let signed = match signer {
        Some(signer) => {
            let mut signed_headers: Vec<(&str, &[u8])> = Vec::with_capacity(spec.headers.len() + 1);
            signed_headers.push(("host", target.host_header.as_bytes()));
            signed_headers.extend(spec.headers.iter().map(|(n, v)| (n.as_ref(), v.as_bytes())));
            let request = SignableRequest {
                method: spec.method,
                path: &target.path,
                query: &spec.query,
                headers: &signed_headers,
            };
            Some(signer.sign(&request, spec.payload, AmzDate::from_system_time(now)?)?)
        }
        None => None,
    };

    let mut head = if spec.query.is_empty() {
        RequestHead::with_request_line(spec.method, &target.path)?
    } else {
        RequestHead::with_request_line(spec.method, &format!("{}?{}", target.path, spec.query))?
    };
    // Without a signature the head still says how the body is framed.
    let unsigned_payload = signed.is_none().then(|| spec.payload.header_value());
    let fields = || {
        let own: [(&str, &str); 2] = [
            ("host", target.host_header.as_str()),
            ("user-agent", USER_AGENT),
        ];
        own.into_iter()
            .chain(spec.headers.iter().map(|(n, v)| (n.as_ref(), v.as_str())))
            .chain(
                signed
                    .iter()
                    .flat_map(|s| s.headers().map(|(n, v)| (n as &str, v))),
            )
            .chain(
                unsigned_payload
                    .as_deref()
                    .map(|v| ("x-amz-content-sha256" as &str, v)),
            )
    };
    let headers = head.headers_mut();
    // Room for every field at once, and for `content-length` and `expect` (a signed GET's head is
    // about 450 bytes): growing field by field took several reallocations per request.
    let (count, name_bytes, value_bytes) = fields()
        .fold((2, 32, 32), |(c, n, v), (name, value)| {
            (c + 1, n + name.len(), v + value.len())
        });
    headers.reserve(count, name_bytes, value_bytes);
    for (name, value) in fields() {
        headers.append(name, value)?;
    }
    if spec.body_len() > 0 || matches!(spec.method, "PUT" | "POST") {
        headers.set_content_length(spec.encoded_len());
    }
    if spec.expects_continue() {
        // Not signed: `Expect` is hop-by-hop, and proxies may drop it.
        headers.append("expect", "100-continue")?;
    }
    Ok(head)
}

/// Bodies from this size on are sent only after the server's `100 Continue`: 1 MiB, the size from
/// which botocore asks for it. A refused request (bad signature, missing bucket, precondition) then
/// costs one round trip instead of the whole body; below it, the round trip costs more than the body.
pub const EXPECT_CONTINUE_THRESHOLD: usize = 1024 * 1024;

/// Whether a body of `len` bytes waits for `100 Continue`.
pub(crate) fn expects_continue(len: u64) -> bool {
    len >= EXPECT_CONTINUE_THRESHOLD as u64
}

/// The most keys one DeleteObjects request carries (S3's limit); [`Client::delete_many`](crate::Client::delete_many) sends
/// larger lists in batches of this size.
pub const DELETE_BATCH: usize = brisk_wire::xml::MAX_DELETE_OBJECTS;

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::sigv4::{Credentials, EMPTY_SHA256};

    #[test]
    fn empty_payload_hash_constant_matches() {
        assert_eq!(
            PayloadHash::Sha256(EMPTY_SHA256_BYTES).header_value(),
            EMPTY_SHA256
        );
    }

    #[test]
    fn path_style_and_virtual_hosted_targets() {
        let local = Endpoint::parse("http://127.0.0.1:9000").unwrap();
        let t = target(&local, Addressing::Path, Some("bkt"), Some("a b/c+d"));
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.host_header, "127.0.0.1:9000");
        assert_eq!(t.path, "/bkt/a%20b/c%2Bd");
        assert_eq!(
            target(&local, Addressing::Path, Some("bkt"), None).path,
            "/bkt"
        );

        let aws = Endpoint::aws("eu-west-1");
        let t = target(&aws, Addressing::VirtualHosted, Some("bkt"), Some("k"));
        assert_eq!(t.host, "bkt.s3.eu-west-1.amazonaws.com");
        assert_eq!(t.host_header, "bkt.s3.eu-west-1.amazonaws.com");
        assert_eq!(t.path, "/k");
        // A dotted bucket can not be a TLS virtual host: path style.
        let t = target(&aws, Addressing::VirtualHosted, Some("a.b.c"), Some("k"));
        assert_eq!(t.host, "s3.eu-west-1.amazonaws.com");
        assert_eq!(t.path, "/a.b.c/k");
    }

    #[test]
    fn query_components_are_encoded() {
        let mut q = String::new();
        push_query(&mut q, "list-type", "2");
        push_query(&mut q, "prefix", "a b/é+");
        assert_eq!(q, "list-type=2&prefix=a%20b%2F%C3%A9%2B");
    }

    /// The declared `Content-Length` of an aws-chunked body is the length of the framing the
    /// client writes (chunk size lines, data, CRLFs, the last chunk, the trailer, the empty line).
    #[test]
    fn aws_chunked_length_matches_the_framing_written() {
        use brisk_wire::sigv4::UnsignedChunkEncoder;
        use brisk_wire::sigv4::chunked::CRLF;
        for algorithm in [
            UploadChecksum::Crc32c,
            UploadChecksum::Crc64Nvme,
            UploadChecksum::Sha256,
        ] {
            for len in [
                0,
                1,
                AWS_CHUNK_SIZE,
                AWS_CHUNK_SIZE + 1,
                3 * AWS_CHUNK_SIZE - 7,
            ] {
                let body = vec![5u8; len];
                let trailer = TrailingChecksum::new(algorithm);
                let spec =
                    RequestSpec::new("PUT", Some("b"), Some("k")).aws_chunked(&body, &trailer);
                let mut written = 0usize;
                for chunk in body.chunks(AWS_CHUNK_SIZE) {
                    written += UnsignedChunkEncoder::chunk_header(chunk.len() as u64)
                        .as_bytes()
                        .len()
                        + chunk.len()
                        + CRLF.len();
                }
                let value = algorithm.compute(&body);
                written += UnsignedChunkEncoder::final_chunk_with_trailers(&[(
                    algorithm.algorithm().header_name(),
                    &value,
                )])
                .unwrap()
                .len();
                assert_eq!(spec.encoded_len(), written as u64, "{algorithm:?} {len}");
            }
        }
    }

    #[test]
    fn signed_head_carries_signature_and_length() {
        let signer = Signer::new(Credentials::new("AKID", "SECRET"), "us-east-1");
        let endpoint = Endpoint::parse("http://localhost:9000").unwrap();
        let t = target(&endpoint, Addressing::Path, Some("bkt"), Some("key"));
        let mut spec =
            RequestSpec::new("PUT", Some("bkt"), Some("key")).header("x-amz-meta-a", "1");
        spec.body = b"hello";
        spec.payload = PayloadHash::of(b"hello");
        let head = signed_head(
            Some(&signer),
            &spec,
            &t,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
        )
        .unwrap();
        assert_eq!(head.target(), "/bkt/key");
        let h = head.headers();
        assert_eq!(h.get_str("host"), Some("localhost:9000"));
        assert_eq!(h.get_str("content-length"), Some("5"));
        assert_eq!(h.get_str("x-amz-date"), Some("20231114T221320Z"));
        let auth = h.get_str("authorization").unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKID/20231114/us-east-1/s3/aws4_request")
        );
        assert!(
            auth.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-a"),
            "{auth}"
        );
    }

    #[test]
    fn unsigned_head_has_no_authorization_but_says_how_the_body_is_framed() {
        let endpoint = Endpoint::parse("http://localhost:9000").unwrap();
        let t = target(&endpoint, Addressing::Path, Some("bkt"), Some("key"));
        let body = b"hello";
        let trailer = TrailingChecksum::new(UploadChecksum::Crc32c);
        let spec = RequestSpec::new("PUT", Some("bkt"), Some("key")).aws_chunked(body, &trailer);
        let head = signed_head(None, &spec, &t, SystemTime::now()).unwrap();
        let h = head.headers();
        assert_eq!(h.get_str("authorization"), None);
        assert_eq!(h.get_str("x-amz-date"), None);
        assert_eq!(
            h.get_str("x-amz-content-sha256"),
            Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        );
        assert_eq!(h.get_str("content-encoding"), Some("aws-chunked"));
        assert_eq!(h.get_str("host"), Some("localhost:9000"));
    }

    #[test]
    fn keys_and_buckets_are_checked() {
        assert!(check_key("").is_err());
        assert!(check_key(&"k".repeat(1025)).is_err());
        assert!(check_key(&"k".repeat(1024)).is_ok());
        assert!(check_bucket("ok-bucket").is_ok());
        assert!(check_bucket("a/b").is_err());
        assert!(check_bucket("x").is_err());
        assert!(check_bucket("has space").is_err());
    }
}
