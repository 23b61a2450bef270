//! TLS for `https://` endpoints: rustls (ring provider, TLS 1.2 and 1.3), server certificates checked
//! against the system's roots, or against a CA bundle only when one is configured (`AWS_CA_BUNDLE`,
//! the profile's `ca_bundle`, or [`ClientBuilder::ca_bundle`](crate::ClientBuilder::ca_bundle)), as
//! the AWS CLI does.
//!
//! The connector is built once per client (reading the system roots costs milliseconds) and shared by
//! every connection.

use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio_rustls::TlsConnector;

use crate::config::ConfigError;

/// A TLS connector trusting `ca_bundle`'s certificates if given, else the system's roots.
pub(crate) fn connector(ca_bundle: Option<&Path>) -> Result<TlsConnector, ConfigError> {
    let mut roots = RootCertStore::empty();
    match ca_bundle {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| tls_error(format!("reading CA bundle {}: {e}", path.display())))?;
            for cert in certs {
                let cert =
                    cert.map_err(|e| tls_error(format!("CA bundle {}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| tls_error(format!("CA bundle {}: {e}", path.display())))?;
            }
            if roots.is_empty() {
                return Err(tls_error(format!(
                    "CA bundle {} holds no certificate",
                    path.display()
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(tls_error(format!(
                    "no usable root certificates on this system ({} errors); set AWS_CA_BUNDLE",
                    found.errors.len()
                )));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

fn tls_error(reason: String) -> ConfigError {
    ConfigError::Tls { reason }
}
