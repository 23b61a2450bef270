//! Credentials and the SigV4 signing key derived from them.
//!
//! The signing key is `HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")`:
//! four HMACs, i.e. eight SHA-256 compressions, that only change when the UTC date does. [`Credentials`]
//! keeps the last derived key and hands it out as an `Arc`, so a process signing thousands of requests
//! per second derives it once a day per region and service.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::SCOPE_TERMINATOR;
use super::hashing::hmac;

/// A derived SigV4 signing key and the scope it is valid for. The secret itself never leaves
/// [`Credentials`].
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    key: [u8; 32],
    /// `YYYYMMDD/region/service/aws4_request`, made once with the key: every signature's string
    /// to sign and every `Authorization` header carries it, and the date, region and service it
    /// names are what the key is for.
    scope: Box<str>,
}

impl SigningKey {
    /// Derives the key for `date` (`YYYYMMDD`), `region` and `service` from a secret access key.
    pub fn derive(secret_access_key: &str, date: &str, region: &str, service: &str) -> Self {
        let mut seed = Vec::with_capacity(4 + secret_access_key.len());
        seed.extend_from_slice(b"AWS4");
        seed.extend_from_slice(secret_access_key.as_bytes());
        let k_date = hmac(&seed, date.as_bytes());
        let k_region = hmac(&k_date, region.as_bytes());
        let k_service = hmac(&k_region, service.as_bytes());
        let key = hmac(&k_service, SCOPE_TERMINATOR.as_bytes());
        let mut d = [0u8; 8];
        let n = date.len().min(8);
        d[..n].copy_from_slice(&date.as_bytes()[..n]);
        let scope = format!(
            "{}/{region}/{service}/{SCOPE_TERMINATOR}",
            std::str::from_utf8(&d).unwrap_or("")
        );
        Self {
            key,
            scope: scope.into(),
        }
    }

    /// The 32 key bytes, for HMAC-ing strings to sign.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.key
    }

    /// `YYYYMMDD/region/service/aws4_request`.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// Whether the scope names this date, region and service.
    fn is_for(&self, date: &str, region: &str, service: &str) -> bool {
        let mut parts = self.scope.split('/');
        parts.next() == Some(date) && parts.next() == Some(region) && parts.next() == Some(service)
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("scope", &self.scope())
            .finish_non_exhaustive()
    }
}

struct Inner {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    /// The last derived key. One slot: a client signs for one region at a time, and a server for its
    /// own region; a date change simply replaces it.
    last_key: Mutex<Option<Arc<SigningKey>>>,
}

/// An access key, its secret and an optional session token (temporary credentials), with a cache of
/// the last derived [`SigningKey`]. Cloning is an `Arc` increment; clones share the cache.
#[derive(Clone)]
pub struct Credentials {
    inner: Arc<Inner>,
}

impl Credentials {
    /// Long-term credentials (no session token).
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Self::build(access_key_id.into(), secret_access_key.into(), None)
    }

    /// Temporary credentials: the token is sent as `x-amz-security-token` and signed.
    pub fn with_session_token(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: impl Into<String>,
    ) -> Self {
        Self::build(
            access_key_id.into(),
            secret_access_key.into(),
            Some(session_token.into()),
        )
    }

    fn build(
        access_key_id: String,
        secret_access_key: String,
        session_token: Option<String>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                access_key_id,
                secret_access_key,
                session_token,
                last_key: Mutex::new(None),
            }),
        }
    }

    /// The access key id (the first element of the credential).
    pub fn access_key_id(&self) -> &str {
        &self.inner.access_key_id
    }

    /// The session token of temporary credentials.
    pub fn session_token(&self) -> Option<&str> {
        self.inner.session_token.as_deref()
    }

    /// The signing key for `date` (`YYYYMMDD`), `region` and `service`: the cached one when it matches,
    /// else a freshly derived one that replaces it.
    pub fn signing_key(&self, date: &str, region: &str, service: &str) -> Arc<SigningKey> {
        let mut slot = self
            .inner
            .last_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = slot.as_ref().filter(|k| k.is_for(date, region, service)) {
            return Arc::clone(key);
        }
        let key = Arc::new(SigningKey::derive(
            &self.inner.secret_access_key,
            date,
            region,
            service,
        ));
        *slot = Some(Arc::clone(&key));
        key
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.inner.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.inner.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    #[test]
    fn derives_the_key_of_the_aws_general_reference_example() {
        // AWS General Reference, "Examples of how to derive a signing key for Signature Version 4":
        // its secret (note the `+`), 20120215, us-east-1, iam.
        let key = SigningKey::derive(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20120215",
            "us-east-1",
            "iam",
        );
        assert_eq!(
            hex::encode(key.as_bytes()),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
        assert_eq!(key.scope(), "20120215/us-east-1/iam/aws4_request");
    }

    #[test]
    fn cache_reuses_the_key_until_the_scope_changes() {
        let creds = Credentials::new("AKIAIOSFODNN7EXAMPLE", SECRET);
        let a = creds.signing_key("20130524", "us-east-1", "s3");
        let b = creds.clone().signing_key("20130524", "us-east-1", "s3");
        assert!(Arc::ptr_eq(&a, &b), "same scope must share one derivation");
        let next_day = creds.signing_key("20130525", "us-east-1", "s3");
        assert!(!Arc::ptr_eq(&a, &next_day));
        assert_ne!(a.as_bytes(), next_day.as_bytes());
        let other_region = creds.signing_key("20130525", "eu-west-1", "s3");
        assert_ne!(other_region.as_bytes(), next_day.as_bytes());
        assert_eq!(
            *creds.signing_key("20130524", "us-east-1", "s3"),
            *a,
            "re-derivation gives the same key"
        );
    }

    #[test]
    fn debug_output_hides_secrets() {
        let creds = Credentials::with_session_token("AKID", SECRET, "TOKEN-VALUE");
        let shown = format!("{creds:?}");
        assert!(shown.contains("AKID"));
        assert!(!shown.contains(SECRET));
        assert!(!shown.contains("TOKEN-VALUE"));
    }
}
