//! The S3 operations the CLI needs that `brisk-client` does not offer yet: ListBuckets and
//! CopyObject.
//!
//! Each request is signed with `brisk_wire::sigv4` (or sent unsigned with `--no-sign-request`), sent
//! on its own `HttpConnection` over TCP (path-style addressing, `http://` endpoints only: the client's
//! TLS connector is private), and its response read with `brisk_wire::http`. Errors become the same
//! typed [`brisk_client::Error`]s the client returns, so they print and map to exit codes alike.
//! A connection per request costs one handshake per (rare) control request; these move into
//! `brisk-client` (with pooling, TLS and retries) once it has them.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use brisk_client::{ClientConfig, Error, ServiceError, config::Scheme};
use brisk_wire::http::{HttpConnection, RequestHead, ResponseHead};
use brisk_wire::sigv4::{AmzDate, PayloadHash, SignableRequest, Signer, encode_key_path};
use brisk_wire::xml::{CopyObjectResult, ErrorDocument, ListAllMyBucketsResult, XmlDocument};
use tokio::net::TcpStream;

/// The largest response body read into memory: ListBuckets of 10,000 buckets (S3's highest quota) is
/// about 1.5 MB of XML; anything larger is not an answer to these requests.
pub const MAX_RESPONSE_BODY: usize = 8 * 1024 * 1024;

/// Same as the client's: a SYN unanswered for 5 s is lost.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A response read to its end.
#[derive(Debug)]
pub struct RawResponse {
    pub body: Vec<u8>,
}

/// Signed one-shot requests against the client's endpoint, region and credentials.
#[derive(Debug, Clone)]
pub struct RawS3 {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    host: String,
    port: u16,
    host_header: String,
    region: String,
    https: bool,
    signer: Option<Signer>,
}

impl RawS3 {
    /// Requests on `config`'s endpoint; unsigned when `sign` is false.
    pub fn new(config: &ClientConfig, sign: bool) -> Self {
        let e = &config.endpoint;
        Self {
            inner: Arc::new(Inner {
                host: e.host.clone(),
                port: e.port,
                host_header: e.host_header(&e.host),
                region: config.region.clone(),
                https: e.scheme == Scheme::Https,
                signer: sign
                    .then(|| Signer::new(config.credentials.clone(), config.region.clone())),
            }),
        }
    }

    /// Sends one request and reads the whole response. Non-2xx answers become typed errors.
    pub async fn send(
        &self,
        method: &str,
        bucket: Option<&str>,
        key: Option<&str>,
        query: &str,
        extra_headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<RawResponse, Error> {
        let i = &self.inner;
        if i.https {
            return Err(Error::InvalidArgument {
                what: format!(
                    "{method} {} over https is not supported by this command yet (brisk-client has no public API for it); use an http:// endpoint",
                    operation_name(method, bucket, key, query)
                ),
            });
        }
        let path = match (bucket, key) {
            (Some(b), Some(k)) => format!("/{b}{}", encode_key_path(k)),
            (Some(b), None) => format!("/{b}"),
            _ => "/".to_owned(),
        };
        let target = if query.is_empty() {
            path.clone()
        } else {
            format!("{path}?{query}")
        };
        let mut head = RequestHead::with_request_line(method, &target)?;
        {
            let h = head.headers_mut();
            h.set("host", &i.host_header)?;
            for (name, value) in extra_headers {
                h.set(name, value)?;
            }
            if !body.is_empty() || matches!(method, "PUT" | "POST") {
                h.set_content_length(body.len() as u64);
            }
        }
        if let Some(signer) = &i.signer {
            let mut signed_headers: Vec<(&str, &[u8])> = vec![("host", i.host_header.as_bytes())];
            signed_headers.extend(extra_headers.iter().map(|(n, v)| (*n, v.as_bytes())));
            let request = SignableRequest {
                method,
                path: &path,
                query,
                headers: &signed_headers,
            };
            let signed = signer.sign(
                &request,
                PayloadHash::of(body),
                AmzDate::from_system_time(SystemTime::now())?,
            )?;
            let h = head.headers_mut();
            for (name, value) in signed.headers() {
                h.set(name, value)?;
            }
        }
        let address = format!("{}:{}", i.host, i.port);
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&address)).await
        {
            Err(_) => {
                return Err(Error::ConnectTimeout {
                    address,
                    timeout: CONNECT_TIMEOUT,
                });
            }
            Ok(Err(source)) => return Err(Error::Connect { address, source }),
            Ok(Ok(s)) => s,
        };
        let _ = stream.set_nodelay(true);
        let mut conn = HttpConnection::new(stream);
        conn.write_request(&head, body).await?;
        let mut response = ResponseHead::new();
        conn.read_response_head(&mut response, method).await?;
        let mut out = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = conn.read_body(&mut chunk).await?;
            if n == 0 {
                break;
            }
            if out.len() + n > MAX_RESPONSE_BODY {
                return Err(Error::UnexpectedResponse {
                    what: format!("a response body larger than {MAX_RESPONSE_BODY} bytes"),
                });
            }
            out.extend_from_slice(&chunk[..n]);
        }
        let status = response.status();
        if !(200..300).contains(&status) {
            let document = (!out.is_empty())
                .then(|| ErrorDocument::parse(&out).ok())
                .flatten();
            let request_id = response
                .headers()
                .get_str("x-amz-request-id")
                .map(str::to_owned);
            return Err(Error::from_service(ServiceError::new(
                status, document, request_id, &i.region,
            )));
        }
        Ok(RawResponse { body: out })
    }

    /// ListBuckets.
    pub async fn list_buckets(&self) -> Result<ListAllMyBucketsResult, Error> {
        let r = self.send("GET", None, None, "", &[], &[]).await?;
        Ok(ListAllMyBucketsResult::parse(&r.body)?)
    }

    /// CopyObject: `src` → `dst` on the server, no bytes through this process (S3 copies objects up to
    /// 5 GiB this way; larger ones need UploadPartCopy).
    pub async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
    ) -> Result<CopyObjectResult, Error> {
        let source = format!("/{src_bucket}{}", encode_key_path(src_key));
        let r = self
            .send(
                "PUT",
                Some(dst_bucket),
                Some(dst_key),
                "",
                &[("x-amz-copy-source", &source)],
                &[],
            )
            .await?;
        // S3 may answer 200 with an Error document when the copy fails late.
        if let Ok(doc) = ErrorDocument::parse(&r.body) {
            return Err(Error::from_service(ServiceError::new(
                500,
                Some(doc),
                None,
                &self.inner.region,
            )));
        }
        Ok(CopyObjectResult::parse(&r.body)?)
    }
}

fn operation_name(method: &str, bucket: Option<&str>, key: Option<&str>, query: &str) -> String {
    match (method, bucket, key) {
        ("GET", None, _) => "ListBuckets".to_owned(),
        ("PUT", Some(_), Some(_)) if query.is_empty() => "CopyObject".to_owned(),
        _ => format!("{method} request"),
    }
}
