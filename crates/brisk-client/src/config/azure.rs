//! Azure Blob Storage configuration, the Azure way: a connection string, or an account with its
//! key or a SAS token, from the builder or the environment.
//!
//! | setting | explicit | environment |
//! |---|---|---|
//! | everything at once | [`AzureSettings::connection_string`] | `AZURE_STORAGE_CONNECTION_STRING` |
//! | account | [`AzureSettings::account`] | `AZURE_STORAGE_ACCOUNT` |
//! | Shared Key | [`AzureSettings::key`] | `AZURE_STORAGE_KEY` |
//! | SAS token | [`AzureSettings::sas_token`] | `AZURE_STORAGE_SAS_TOKEN` |
//! | endpoint | [`ClientBuilder::endpoint`](super::ClientBuilder::endpoint) | (`BlobEndpoint=` in the connection string) |
//!
//! Explicit values win over the connection string, which wins over the separate variables. With
//! neither a key nor a SAS the client is anonymous (public containers). Without an endpoint the
//! client talks to `https://<account>.blob.core.windows.net`; an endpoint with a path (an emulator's
//! `http://127.0.0.1:10000/devstoreaccount1`) names the account in its first path segment, and
//! requests go path-style under it. `UseDevelopmentStorage=true` is Azurite's default endpoint and
//! well-known account.

use std::fmt;

use brisk_wire::azure::SharedKeyCredential;

use super::{ConfigError, Endpoint, Environment};

/// The emulator's well-known account (`UseDevelopmentStorage=true`).
pub const DEVELOPMENT_ACCOUNT: &str = "devstoreaccount1";
/// The emulator's well-known account key, published by Microsoft (not a secret).
pub const DEVELOPMENT_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// How requests to Azure Blob Storage are authorized.
#[derive(Clone)]
pub enum AzureCredentials {
    /// Shared Key: every request signed with the account key.
    SharedKey(SharedKeyCredential),
    /// A SAS token (the query string a SAS URL carries, without `?`), appended to every request.
    Sas(String),
    /// No authorization: public containers only.
    Anonymous,
}

impl fmt::Debug for AzureCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Neither the key nor the SAS signature is printed.
        match self {
            Self::SharedKey(key) => write!(f, "SharedKey({})", key.account()),
            Self::Sas(_) => f.write_str("Sas(..)"),
            Self::Anonymous => f.write_str("Anonymous"),
        }
    }
}

/// An Azure Blob Storage account, resolved.
#[derive(Debug, Clone)]
pub struct AzureConfig {
    /// The storage account.
    pub account: String,
    /// How requests are authorized.
    pub credentials: AzureCredentials,
    /// The account is the first segment of every request path (emulators), not part of the host.
    pub account_in_path: bool,
}

/// What was given for Azure before resolution (see the module docs for the precedence).
#[derive(Debug, Clone, Default)]
pub struct AzureSettings {
    connection_string: Option<String>,
    account: Option<String>,
    key: Option<String>,
    sas_token: Option<String>,
}

impl AzureSettings {
    /// Settings to be completed from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A connection string (`AccountName=...;AccountKey=...;BlobEndpoint=...`).
    pub fn connection_string(mut self, text: impl Into<String>) -> Self {
        self.connection_string = Some(text.into());
        self
    }

    /// The storage account.
    pub fn account(mut self, name: impl Into<String>) -> Self {
        self.account = Some(name.into());
        self
    }

    /// The account key (base64), for Shared Key.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// A SAS token (with or without its leading `?`).
    pub fn sas_token(mut self, token: impl Into<String>) -> Self {
        self.sas_token = Some(token.into());
        self
    }

    /// Resolves the account, credentials and endpoint. `endpoint` is the builder's explicit
    /// endpoint URL; `anonymous` drops any key or SAS.
    pub(crate) fn resolve(
        self,
        env: &dyn Environment,
        endpoint: Option<String>,
        anonymous: bool,
    ) -> Result<(AzureConfig, Endpoint), ConfigError> {
        let parsed = match self
            .connection_string
            .or_else(|| env.var("AZURE_STORAGE_CONNECTION_STRING"))
        {
            Some(text) => ConnectionString::parse(&text)?,
            None => ConnectionString::default(),
        };
        let account = self
            .account
            .or(parsed.account)
            .or_else(|| env.var("AZURE_STORAGE_ACCOUNT"));
        let key = self
            .key
            .or(parsed.key)
            .or_else(|| env.var("AZURE_STORAGE_KEY"));
        let sas = self
            .sas_token
            .or(parsed.sas)
            .or_else(|| env.var("AZURE_STORAGE_SAS_TOKEN"))
            .map(|t| t.trim_start_matches('?').to_owned());
        let endpoint_url = endpoint.or(parsed.blob_endpoint);

        // An endpoint with a path names the account (emulators: .../devstoreaccount1).
        let (endpoint, path_account) = match endpoint_url {
            Some(url) => {
                let url = url.trim().trim_end_matches('/');
                let (base, path_account) = split_account_path(url)?;
                (Some(Endpoint::parse(base)?), path_account)
            }
            None => (None, None),
        };
        let account = match (account, &path_account) {
            (Some(a), Some(p)) if a != *p => {
                return Err(ConfigError::InvalidAzure {
                    reason: format!("the account is {a:?} but the endpoint's path names {p:?}"),
                });
            }
            (Some(a), _) => a,
            (None, Some(p)) => p.clone(),
            (None, None) => {
                return Err(ConfigError::InvalidAzure {
                    reason: "no storage account: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT \
                             with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN"
                        .to_owned(),
                });
            }
        };
        if account.is_empty()
            || !account
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return Err(ConfigError::InvalidAzure {
                reason: format!(
                    "{account:?} is not a storage account name (lower-case letters and digits)"
                ),
            });
        }
        let endpoint = match endpoint {
            Some(e) => e,
            None => Endpoint::parse(&format!("https://{account}.blob.core.windows.net"))?,
        };
        let credentials = match (anonymous, key, sas) {
            (true, _, _) => AzureCredentials::Anonymous,
            (false, Some(key), _) => AzureCredentials::SharedKey(
                SharedKeyCredential::new(account.clone(), key.trim()).map_err(|e| {
                    ConfigError::InvalidAzure {
                        reason: format!("the account key: {e}"),
                    }
                })?,
            ),
            (false, None, Some(sas)) => AzureCredentials::Sas(sas),
            (false, None, None) => AzureCredentials::Anonymous,
        };
        Ok((
            AzureConfig {
                account,
                credentials,
                account_in_path: path_account.is_some(),
            },
            endpoint,
        ))
    }
}

/// Splits `scheme://host[:port]/account` into the endpoint and the account; no path is no account.
fn split_account_path(url: &str) -> Result<(&str, Option<String>), ConfigError> {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let Some(slash) = url[after_scheme..].find('/').map(|i| i + after_scheme) else {
        return Ok((url, None));
    };
    let path = &url[slash + 1..];
    if path.is_empty() {
        return Ok((&url[..slash], None));
    }
    if path.contains('/') || path.contains('?') {
        return Err(ConfigError::InvalidEndpoint {
            url: url.to_owned(),
            reason: "an Azure endpoint's path may only name the account (http://host:port/account)",
        });
    }
    Ok((&url[..slash], Some(path.to_owned())))
}

/// The fields of a connection string brisk uses.
#[derive(Debug, Default)]
struct ConnectionString {
    account: Option<String>,
    key: Option<String>,
    sas: Option<String>,
    blob_endpoint: Option<String>,
}

impl ConnectionString {
    /// Parses `Name=value;Name=value;...` (values may contain `=`, as keys and SAS tokens do).
    fn parse(text: &str) -> Result<Self, ConfigError> {
        let mut out = Self::default();
        let mut protocol = None;
        let mut suffix = None;
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = part.split_once('=') else {
                return Err(ConfigError::InvalidAzure {
                    reason: format!("connection string part {part:?} is not Name=value"),
                });
            };
            let value = value.trim().to_owned();
            match name.trim().to_ascii_lowercase().as_str() {
                "accountname" => out.account = Some(value),
                "accountkey" => out.key = Some(value),
                "sharedaccesssignature" => out.sas = Some(value),
                "blobendpoint" => out.blob_endpoint = Some(value),
                "defaultendpointsprotocol" => protocol = Some(value),
                "endpointsuffix" => suffix = Some(value),
                "usedevelopmentstorage" if value.eq_ignore_ascii_case("true") => {
                    out.account = Some(DEVELOPMENT_ACCOUNT.to_owned());
                    out.key = Some(DEVELOPMENT_ACCOUNT_KEY.to_owned());
                    out.blob_endpoint =
                        Some(format!("http://127.0.0.1:10000/{DEVELOPMENT_ACCOUNT}"));
                }
                // Other services' endpoints and settings brisk does not use.
                _ => {}
            }
        }
        if out.blob_endpoint.is_none()
            && let (Some(account), Some(suffix)) = (&out.account, suffix)
        {
            let protocol = protocol.unwrap_or_else(|| "https".to_owned());
            out.blob_endpoint = Some(format!("{protocol}://{account}.blob.{suffix}"));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StaticEnvironment;

    fn env(vars: &[(&str, &str)]) -> StaticEnvironment {
        StaticEnvironment {
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..StaticEnvironment::default()
        }
    }

    #[test]
    fn a_connection_string_gives_account_key_and_emulator_endpoint() {
        let text = format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={DEVELOPMENT_ACCOUNT_KEY};BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
        );
        let (config, endpoint) = AzureSettings::new()
            .resolve(
                &env(&[("AZURE_STORAGE_CONNECTION_STRING", &text)]),
                None,
                false,
            )
            .unwrap();
        assert_eq!(config.account, "devstoreaccount1");
        assert!(config.account_in_path);
        assert!(matches!(config.credentials, AzureCredentials::SharedKey(_)));
        assert_eq!(endpoint.to_string(), "http://127.0.0.1:10000");
    }

    #[test]
    fn development_storage_is_azurite_on_its_default_port() {
        let (config, endpoint) = AzureSettings::new()
            .connection_string("UseDevelopmentStorage=true")
            .resolve(&env(&[]), None, false)
            .unwrap();
        assert_eq!(config.account, DEVELOPMENT_ACCOUNT);
        assert_eq!(endpoint.port, 10000);
    }

    #[test]
    fn account_and_sas_from_the_environment_go_to_the_public_endpoint() {
        let (config, endpoint) = AzureSettings::new()
            .resolve(
                &env(&[
                    ("AZURE_STORAGE_ACCOUNT", "myaccount"),
                    ("AZURE_STORAGE_SAS_TOKEN", "?sv=2025-11-05&sig=abc"),
                ]),
                None,
                false,
            )
            .unwrap();
        assert!(!config.account_in_path);
        assert!(
            matches!(&config.credentials, AzureCredentials::Sas(t) if t == "sv=2025-11-05&sig=abc")
        );
        assert_eq!(
            endpoint.to_string(),
            "https://myaccount.blob.core.windows.net"
        );
    }

    #[test]
    fn endpoint_suffix_builds_the_blob_endpoint() {
        let (_, endpoint) = AzureSettings::new()
            .connection_string("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.chinacloudapi.cn")
            .resolve(&env(&[]), None, false)
            .unwrap();
        assert_eq!(endpoint.host, "acct.blob.core.chinacloudapi.cn");
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let no_account = AzureSettings::new().resolve(&env(&[]), None, false);
        assert!(
            no_account
                .unwrap_err()
                .to_string()
                .contains("no storage account")
        );
        let mismatch = AzureSettings::new().account("other").resolve(
            &env(&[]),
            Some("http://127.0.0.1:1/devstoreaccount1".into()),
            false,
        );
        assert!(mismatch.unwrap_err().to_string().contains("path names"));
        let bad_key = AzureSettings::new()
            .account("acct")
            .key("not base64!")
            .resolve(&env(&[]), None, false);
        assert!(bad_key.unwrap_err().to_string().contains("account key"));
        let deep_path =
            AzureSettings::new().resolve(&env(&[]), Some("http://127.0.0.1:1/a/b".into()), false);
        assert!(deep_path.is_err());
    }

    #[test]
    fn anonymous_drops_the_key() {
        let (config, _) = AzureSettings::new()
            .account("acct")
            .key(DEVELOPMENT_ACCOUNT_KEY)
            .resolve(&env(&[]), None, true)
            .unwrap();
        assert!(matches!(config.credentials, AzureCredentials::Anonymous));
    }
}
