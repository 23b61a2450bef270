//! `https://` endpoints: a TLS server in the test (rustls, a certificate generated for 127.0.0.1)
//! trusted through a CA bundle, as `AWS_CA_BUNDLE` would name it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use brisk_client::{Client, ConfigError, Credentials, Error, RetryPolicy};
use brisk_wire::http::{HttpConnection, RequestHead, ResponseHead};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const LIMIT: Duration = Duration::from_secs(20);

fn object() -> Vec<u8> {
    (0..5_000_000u32).map(|i| (i % 241) as u8).collect()
}

struct TlsServer {
    endpoint: String,
    ca_pem: String,
    connections: Arc<AtomicUsize>,
}

/// Answers GET with [`object`] and PUT with 200, over TLS with a certificate for 127.0.0.1.
async fn tls_server() -> TlsServer {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert: CertificateDer<'static> = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("https://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&connections);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::Relaxed);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut conn = HttpConnection::new(tls);
                let mut head = RequestHead::new();
                let body = object();
                while let Ok(true) = conn.read_request_head(&mut head).await {
                    while let Ok(Some(_)) = conn.body_chunk().await {}
                    let mut response = ResponseHead::with_status(200).unwrap();
                    response.headers_mut().append("etag", "\"tls1\"").unwrap();
                    let payload: &[u8] = if head.method() == "GET" { &body } else { b"" };
                    response
                        .headers_mut()
                        .set_content_length(payload.len() as u64);
                    if conn.write_response(&response, payload).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    TlsServer {
        endpoint,
        ca_pem: certified.cert.pem(),
        connections,
    }
}

fn client(endpoint: &str, ca_bundle: &std::path::Path) -> Result<Client, ConfigError> {
    Client::builder()
        .endpoint(endpoint)
        .credentials(Credentials::new("AKID", "SECRET"))
        .ca_bundle(ca_bundle)
        .retry(RetryPolicy::none())
        .read_timeout(LIMIT)
        .build()
}

#[tokio::test]
async fn https_endpoint_trusted_through_a_ca_bundle() {
    tokio::time::timeout(LIMIT, async {
        let server = tls_server().await;
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("ca.pem");
        std::fs::write(&bundle, &server.ca_pem).unwrap();
        let c = client(&server.endpoint, &bundle).unwrap();

        c.put("bucket", "key", b"over tls").await.unwrap();
        let expected = object();
        for _ in 0..3 {
            assert!(c.get_bytes("bucket", "key").await.unwrap()[..] == expected[..]);
        }
        let mut dst = vec![0u8; expected.len()];
        assert_eq!(
            c.get_into("bucket", "key", &mut dst).await.unwrap(),
            expected.len()
        );
        assert!(dst == expected);

        let m = c.metrics();
        assert_eq!(
            (m.connections_opened, m.connections_reused),
            (1, 4),
            "{m:?}"
        );
        assert_eq!(server.connections.load(Ordering::Relaxed), 1);
        // Presigned URLs keep the scheme.
        let url = c
            .presign_get("bucket", "key", Duration::from_secs(60))
            .unwrap();
        assert!(
            url.starts_with(&format!("{}/bucket/key?", server.endpoint)),
            "{url}"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_untrusted_certificate_fails_the_handshake() {
    tokio::time::timeout(LIMIT, async {
        let server = tls_server().await;
        let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("other.pem");
        std::fs::write(&bundle, other.cert.pem()).unwrap();
        let c = client(&server.endpoint, &bundle).unwrap();
        let err = c.head("bucket", "key").await.unwrap_err();
        assert!(matches!(err, Error::TlsHandshake { .. }), "{err:?}");
        assert!(
            err.to_string().to_lowercase().contains("certificate"),
            "{err}"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_ca_bundle_without_certificates_is_refused_at_build() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("empty.pem");
    std::fs::write(&bundle, "not a certificate\n").unwrap();
    let err = client("https://127.0.0.1:1", &bundle).unwrap_err();
    assert!(matches!(err, ConfigError::Tls { .. }), "{err:?}");
    assert!(err.to_string().contains("no certificate"), "{err}");
    let missing = client("https://127.0.0.1:1", &dir.path().join("absent.pem")).unwrap_err();
    assert!(matches!(missing, ConfigError::Tls { .. }), "{missing:?}");
    // A plain-HTTP endpoint never reads the bundle.
    client("http://127.0.0.1:1", &dir.path().join("absent.pem")).unwrap();
}
