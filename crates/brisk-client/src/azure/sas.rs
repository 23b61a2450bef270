//! Presigned URLs for Azure: a service SAS for one blob, signed with the account key.

use std::time::{Duration, SystemTime};

use brisk_wire::azure::ServiceSas;
use time::OffsetDateTime;

use crate::client::Client;
use crate::config::{AzureCredentials, Scheme};
use crate::error::{Error, Result};

/// The longest SAS lifetime `presign` signs: 7 days, as for S3, so a URL means the same on both.
const MAX_SAS_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);

impl Client {
    /// A blob URL with a service SAS allowing `method` (GET or HEAD: read; PUT: create and write)
    /// until `now + expires`. The SAS starts 5 minutes before `now`, as the SDKs advise, so a
    /// server whose clock is a little behind accepts it at once.
    pub(crate) fn azure_presign(
        &self,
        method: &str,
        container: &str,
        blob: &str,
        expires: Duration,
        now: SystemTime,
    ) -> Result<String> {
        let azure = self.config().azure.as_ref().expect("an Azure client");
        let AzureCredentials::SharedKey(key) = &azure.credentials else {
            return Err(Error::InvalidArgument {
                what: "a SAS is signed with the account key; this client has none (give AZURE_STORAGE_KEY or a connection string with AccountKey)"
                    .into(),
            });
        };
        if expires.is_zero() || expires > MAX_SAS_LIFETIME {
            return Err(Error::InvalidArgument {
                what: format!("a presigned URL lasts 1 s to 7 days, not {expires:?}"),
            });
        }
        let permissions = match method {
            "GET" | "HEAD" => "r",
            "PUT" => "cw",
            other => {
                return Err(Error::InvalidArgument {
                    what: format!("a presigned Azure URL allows GET, HEAD or PUT, not {other}"),
                });
            }
        };
        let now = OffsetDateTime::from(now)
            .replace_nanosecond(0)
            .unwrap_or(OffsetDateTime::from(now));
        let sas = ServiceSas {
            container,
            blob: Some(blob),
            permissions,
            start: Some(now - Duration::from_secs(300)),
            expiry: now + expires,
            protocol: match self.config().endpoint.scheme {
                Scheme::Https => Some("https"),
                Scheme::Http => None,
            },
        };
        let target = self.target(Some(container), Some(blob));
        Ok(format!(
            "{}://{}{}?{}",
            self.config().endpoint.scheme.as_str(),
            target.host_header,
            target.path,
            sas.token(key)
        ))
    }
}
