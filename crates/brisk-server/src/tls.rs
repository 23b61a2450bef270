//! HTTPS: `brisk serve --tls-cert FILE --tls-key FILE` (PEM), served with rustls (ring provider,
//! TLS 1.2 and 1.3).
//!
//! A connection's byte stream is [`ServerStream`]: plain TCP, or rustls over TCP. Plain connections
//! keep the kernel paths that skip user space (the response head sent with `MSG_MORE`, file bodies
//! with `sendfile`). Without kernel TLS (not offered on the machines brisk is measured on), a TLS
//! record is encrypted in user space, so a TLS body is read from its file into the connection's
//! scratch buffer and written through rustls: one more copy and the cipher per byte
//! (BENCHMARKS-log.md, "Server", has what that costs a GET).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use brisk_wire::http::TcpOrTls;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// The certificate chain and private key `brisk serve` presents, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (PEM `CERTIFICATE` blocks).
    pub cert: PathBuf,
    /// The leaf's private key (PEM PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// An acceptor for `files`; an unreadable file, a file without a certificate or key, or a key that
/// does not belong to the certificate is an error naming the file.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, String> {
    let certs = read_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("TLS key {}: {e}", files.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let signing_key = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| format!("TLS key {}: {e}", files.key.display()))?;
    let certified = rustls::sign::CertifiedKey::new(certs.clone(), signing_key);
    certified.keys_match().map_err(|e| {
        format!(
            "TLS key {} does not belong to the certificate in {}: {e}",
            files.key.display(),
            files.cert.display()
        )
    })?;
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate {}: {e}", files.cert.display()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("TLS certificate {}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TLS certificate {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "TLS certificate {}: no CERTIFICATE block in the file",
            path.display()
        ));
    }
    Ok(certs)
}

/// One connection's byte stream: plain TCP (`sendfile` and `MSG_MORE` apply, through
/// [`TcpOrTls::plain`]) or rustls over TCP.
pub type ServerStream = TcpOrTls<TlsStream<TcpStream>>;
