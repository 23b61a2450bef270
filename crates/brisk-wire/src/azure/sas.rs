//! Service SAS tokens for one blob (`sr=b`) or one container (`sr=c`), signed with the account key.
//!
//! The string to sign is the layout of service version 2020-12-06 and later, sixteen lines whether or
//! not a field is used:
//!
//! ```text
//! sp \n st \n se \n /blob/{account}/{container}[/{blob}] \n si \n sip \n spr \n sv \n sr \n
//! snapshot \n ses \n rscc \n rscd \n rsce \n rscl \n rsct
//! ```
//!
//! The canonicalized resource holds the names decoded (as given), not as they appear in the URL. The
//! token carries `sv`, `st`, `se`, `sr`, `sp`, `spr` and `sig` (stored access policies, IP ranges,
//! encryption scopes and response-header overrides are not issued, so their lines stay empty).

use std::fmt::Write as _;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use time::OffsetDateTime;
use time::macros::format_description;

use super::API_VERSION;
use super::shared_key::SharedKeyCredential;

/// The permission letters a blob or container SAS may carry, in the order the service requires them:
/// read, add, create, write, delete, delete version, permanent delete, list, tags, find by tags, move,
/// execute, set immutability policy.
pub const PERMISSION_ORDER: &str = "racwdxyltfmei";

/// The protocols a SAS may be limited to.
const PROTOCOLS: [&str; 2] = ["https", "https,http"];

/// How SAS query values are escaped: as Microsoft's SDKs do (the RFC 3986 unreserved characters and
/// `/` kept), so a token reads the same whichever issued it.
const TOKEN_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// Why a SAS cannot be issued as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SasError {
    /// A permission letter that is not one of [`PERMISSION_ORDER`].
    #[error("unknown SAS permission {0:?} (expected letters of {PERMISSION_ORDER:?})")]
    UnknownPermission(char),
    /// No permission at all.
    #[error("a SAS must grant at least one permission")]
    NoPermissions,
    /// The expiry is not after the start.
    #[error("the SAS expires before it starts")]
    ExpiryNotAfterStart,
    /// A protocol other than `https` or `https,http`.
    #[error("unknown SAS protocol {0:?} (expected \"https\" or \"https,http\")")]
    UnknownProtocol(String),
}

/// A service SAS for a blob, or for a container when `blob` is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceSas<'a> {
    /// The container name.
    pub container: &'a str,
    /// The blob name (decoded); `None` for a container SAS (`sr=c`).
    pub blob: Option<&'a str>,
    /// Permission letters, e.g. `r`, `rw`, `racwdl`. They are put in the order the service requires;
    /// duplicates are dropped, and [`token`](Self::token) drops unknown letters too (the SAS then
    /// grants less, never more) where [`try_token`](Self::try_token) refuses them.
    pub permissions: &'a str,
    /// When the SAS becomes valid; `None` for immediately (the service's clock decides).
    pub start: Option<OffsetDateTime>,
    /// When the SAS stops being valid.
    pub expiry: OffsetDateTime,
    /// `https` or `https,http`; `None` allows both.
    pub protocol: Option<&'a str>,
}

impl ServiceSas<'_> {
    /// `b` for a blob, `c` for a container.
    pub fn signed_resource(&self) -> &'static str {
        if self.blob.is_some() { "b" } else { "c" }
    }

    /// The permissions as signed: the known letters of [`permissions`](Self::permissions) in
    /// [`PERMISSION_ORDER`], each once.
    pub fn signed_permissions(&self) -> String {
        PERMISSION_ORDER
            .chars()
            .filter(|&p| self.permissions.contains(p))
            .collect()
    }

    /// Checks what [`token`](Self::token) would otherwise quietly adjust or send as is: unknown
    /// permission letters, no permission, an expiry not after the start, an unknown protocol.
    pub fn validate(&self) -> Result<(), SasError> {
        if let Some(unknown) = self
            .permissions
            .chars()
            .find(|&p| !PERMISSION_ORDER.contains(p))
        {
            return Err(SasError::UnknownPermission(unknown));
        }
        if self.permissions.is_empty() {
            return Err(SasError::NoPermissions);
        }
        if self.start.is_some_and(|start| self.expiry <= start) {
            return Err(SasError::ExpiryNotAfterStart);
        }
        if let Some(protocol) = self.protocol.filter(|p| !PROTOCOLS.contains(p)) {
            return Err(SasError::UnknownProtocol(protocol.to_owned()));
        }
        Ok(())
    }

    /// The string to sign for `account` (see the module documentation).
    pub fn string_to_sign(&self, account: &str) -> String {
        let mut resource = format!("/blob/{account}/{}", self.container);
        if let Some(blob) = self.blob {
            resource.push('/');
            resource.push_str(blob);
        }
        let start = self.start.map(format_time).unwrap_or_default();
        let fields: [&str; 16] = [
            &self.signed_permissions(),
            &start,
            &format_time(self.expiry),
            &resource,
            "", // signedIdentifier
            "", // signedIP
            self.protocol.unwrap_or(""),
            API_VERSION,
            self.signed_resource(),
            "", // signedSnapshotTime
            "", // signedEncryptionScope
            "", // rscc
            "", // rscd
            "", // rsce
            "", // rscl
            "", // rsct
        ];
        fields.join("\n")
    }

    /// The SAS query string (`sv`, `st`, `se`, `sr`, `sp`, `spr`, `sig`; absent optional fields left
    /// out), values percent-encoded, without a leading `?`. Signed by the credential's account.
    pub fn token(&self, credential: &SharedKeyCredential) -> String {
        let signature = credential.sign(&self.string_to_sign(credential.account()));
        let mut token = String::with_capacity(160);
        let mut add = |name: &str, value: &str| {
            if !token.is_empty() {
                token.push('&');
            }
            let _ = write!(token, "{name}={}", utf8_percent_encode(value, TOKEN_VALUE));
        };
        add("sv", API_VERSION);
        if let Some(start) = self.start {
            add("st", &format_time(start));
        }
        add("se", &format_time(self.expiry));
        add("sr", self.signed_resource());
        add("sp", &self.signed_permissions());
        if let Some(protocol) = self.protocol {
            add("spr", protocol);
        }
        add("sig", &signature);
        token
    }

    /// [`validate`](Self::validate), then [`token`](Self::token).
    pub fn try_token(&self, credential: &SharedKeyCredential) -> Result<String, SasError> {
        self.validate()?;
        Ok(self.token(credential))
    }
}

/// A SAS time: UTC, whole seconds, `2025-01-02T03:04:05Z`.
fn format_time(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
        ))
        .expect("a UTC time with a four-digit year formats")
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const EMULATOR_KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    fn blob_sas() -> ServiceSas<'static> {
        ServiceSas {
            container: "photos",
            blob: Some("2024/a b+c.jpg"),
            permissions: "wr",
            start: Some(datetime!(2025-01-02 03:04:05.678 UTC)),
            expiry: datetime!(2025-01-03 05:04:05 +02:00),
            protocol: Some("https"),
        }
    }

    /// The documented layout for version 2020-12-06 and later: sixteen fields, the empty ones kept.
    #[test]
    fn string_to_sign_has_the_documented_layout() {
        assert_eq!(
            blob_sas().string_to_sign("myaccount"),
            "rw\n2025-01-02T03:04:05Z\n2025-01-03T03:04:05Z\n/blob/myaccount/photos/2024/a b+c.jpg\n\
             \n\nhttps\n2025-11-05\nb\n\n\n\n\n\n\n"
        );
        let container = ServiceSas {
            container: "photos",
            blob: None,
            permissions: "l",
            start: None,
            expiry: datetime!(2025-01-03 00:00 UTC),
            protocol: None,
        };
        assert_eq!(
            container.string_to_sign("myaccount"),
            "l\n\n2025-01-03T00:00:00Z\n/blob/myaccount/photos\n\n\n\n2025-11-05\nc\n\n\n\n\n\n\n"
        );
        assert_eq!(container.string_to_sign("a").split('\n').count(), 16);
    }

    #[test]
    fn token_carries_the_fields_encoded_and_the_signature() {
        let credential = SharedKeyCredential::new("devstoreaccount1", EMULATOR_KEY).unwrap();
        let sas = blob_sas();
        let sig = credential.sign(&sas.string_to_sign("devstoreaccount1"));
        let encoded_sig = sig.replace('+', "%2B").replace('=', "%3D");
        assert_eq!(
            sas.token(&credential),
            format!(
                "sv=2025-11-05&st=2025-01-02T03%3A04%3A05Z&se=2025-01-03T03%3A04%3A05Z&sr=b&sp=rw\
                 &spr=https&sig={encoded_sig}"
            )
        );
        assert_eq!(sas.try_token(&credential).unwrap(), sas.token(&credential));
    }

    #[test]
    fn permissions_are_put_in_the_required_order() {
        let sas = |permissions| ServiceSas {
            permissions,
            ..blob_sas()
        };
        assert_eq!(sas("ldwcar").signed_permissions(), "racwdl");
        assert_eq!(sas("rr").signed_permissions(), "r");
        assert_eq!(sas("iemftlyxdwcar").signed_permissions(), PERMISSION_ORDER);
        assert_eq!(sas("rzq").signed_permissions(), "r");
        assert_eq!(sas("rzq").validate(), Err(SasError::UnknownPermission('z')));
        assert_eq!(sas("").validate(), Err(SasError::NoPermissions));
        assert_eq!(sas("wr").validate(), Ok(()));
    }

    #[test]
    fn validation_refuses_what_the_service_would() {
        let backwards = ServiceSas {
            expiry: datetime!(2025-01-02 03:04:05 UTC),
            ..blob_sas()
        };
        assert_eq!(backwards.validate(), Err(SasError::ExpiryNotAfterStart));
        let plain_http = ServiceSas {
            protocol: Some("http"),
            ..blob_sas()
        };
        assert_eq!(
            plain_http.validate(),
            Err(SasError::UnknownProtocol("http".into()))
        );
        let both = ServiceSas {
            protocol: Some("https,http"),
            ..blob_sas()
        };
        assert_eq!(both.validate(), Ok(()));
    }
}
