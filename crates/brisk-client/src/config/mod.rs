//! Configuration as AWS users expect it: explicit values first, then the environment, then the shared
//! `~/.aws/credentials` and `~/.aws/config` files, with the same names and precedence as the AWS CLI.
//!
//! | setting | explicit | environment | profile |
//! |---|---|---|---|
//! | credentials | [`ClientBuilder::credentials`] | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` | `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token` (credentials file, then config file) |
//! | region | [`ClientBuilder::region`] | `AWS_REGION`, `AWS_DEFAULT_REGION` | `region` |
//! | endpoint | [`ClientBuilder::endpoint`] | `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL` | `s3 = endpoint_url`, `endpoint_url` |
//! | addressing | [`ClientBuilder::addressing`] | | `s3 = addressing_style` |
//! | CA bundle | [`ClientBuilder::ca_bundle`] | `AWS_CA_BUNDLE` | `ca_bundle` |
//!
//! The profile is `AWS_PROFILE` (else `default`); the files are `AWS_SHARED_CREDENTIALS_FILE` and
//! `AWS_CONFIG_FILE` (else under `$HOME/.aws`). Without an endpoint the client talks to
//! `https://s3.<region>.amazonaws.com` with virtual-hosted addressing; with a custom endpoint it uses
//! path style, which every self-hosted server accepts.
//!
//! A client for Azure Blob Storage ([`ClientBuilder::azure`]) is configured the Azure way instead
//! (connection string, account and key or SAS): see [`azure`].
//!
//! The environment is read through [`Environment`] so tests can pass a fixed one.

pub mod azure;
mod endpoint;
mod ini;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use brisk_mem::MemoryBudget;
use brisk_wire::sigv4::Credentials;

pub use azure::{AzureConfig, AzureCredentials, AzureSettings};
pub use endpoint::{Addressing, Endpoint, Scheme, is_virtual_host_compatible};
pub use ini::{IniError, IniFile};

use crate::retry::RetryPolicy;

/// Region used when none is configured anywhere: `us-east-1`, the SDKs' fallback for S3 and the
/// region every S3-compatible server accepts by default (MinIO, `brisk serve`).
pub const DEFAULT_REGION: &str = "us-east-1";

/// Time allowed to establish a TCP connection: 5 s. A loopback or LAN connect takes well under a
/// millisecond and a cross-region one under 300 ms; a SYN that is not answered for 5 s is lost (Linux
/// retransmits it after 1 s and 3 s), and the retry policy then tries again.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Time a response head or one body read may take: 30 s, the HTTP layer's own default
/// (`brisk_wire::http::limits`). S3 answers with a head at once even for slow operations.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections kept per host, idle or busy: 64. One connection carries one request at a time
/// unless a batch pipelines; 64 lets a batch read at its default queue depth (64) with a connection
/// per request, which servers that answer a connection's requests one after the other need to keep
/// 64 in flight behind a first-byte latency (`batch::DEFAULT_BATCH_CONNECTIONS`). Transfers open
/// only as many as they have parts in flight, and the memory budget, not this bound, is what limits
/// memory.
pub const DEFAULT_MAX_CONNECTIONS_PER_HOST: usize = 64;

/// Read buffer per connection: 64 KiB (the HTTP layer's default). Bodies read into a caller's buffer
/// at least this large bypass it.
pub const DEFAULT_READ_BUFFER_SIZE: usize = brisk_wire::http::DEFAULT_READ_BUFFER_SIZE;

/// Why a configuration is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No credentials in the explicit values, the environment or the profile.
    #[error(
        "no AWS credentials: pass them to the builder, set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
         or add aws_access_key_id/aws_secret_access_key to profile {profile:?} in ~/.aws/credentials"
    )]
    NoCredentials { profile: String },
    /// Only one half of a key pair was found.
    #[error("{found} is set but {missing} is not (in {source_name})")]
    IncompleteCredentials {
        found: &'static str,
        missing: &'static str,
        source_name: String,
    },
    /// The endpoint URL is not `http(s)://host[:port]`.
    #[error("invalid endpoint URL {url:?}: {reason}")]
    InvalidEndpoint { url: String, reason: &'static str },
    /// A shared configuration file could not be parsed.
    #[error("{path}: {source}")]
    File { path: PathBuf, source: IniError },
    /// A shared configuration file exists but could not be read.
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The profile named by `AWS_PROFILE` (or the builder) exists in neither file.
    #[error("profile {profile:?} is in neither {credentials} nor {config}")]
    NoSuchProfile {
        profile: String,
        credentials: PathBuf,
        config: PathBuf,
    },
    /// A numeric setting is out of range.
    #[error("{setting} must be {requirement}")]
    InvalidSetting {
        setting: &'static str,
        requirement: &'static str,
    },
    /// TLS can not be set up (no roots, an unreadable CA bundle).
    #[error("TLS: {reason}")]
    Tls { reason: String },
    /// `s3 = addressing_style` holds something other than `path`, `virtual` or `auto`.
    #[error("addressing_style {0:?} is not path, virtual or auto")]
    InvalidAddressingStyle(String),
    /// The Azure settings are incomplete or malformed (`reason` says how).
    #[error("Azure: {reason}")]
    InvalidAzure { reason: String },
}

/// Where configuration values come from besides the builder: environment variables and files.
pub trait Environment {
    /// The value of an environment variable, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;
    /// The contents of a file, `Ok(None)` if it does not exist.
    fn read_file(&self, path: &std::path::Path) -> std::io::Result<Option<String>>;
}

/// The process environment and file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    fn read_file(&self, path: &std::path::Path) -> std::io::Result<Option<String>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A fixed environment: variables and files from maps (for tests and embedding).
#[derive(Debug, Clone, Default)]
pub struct StaticEnvironment {
    /// Environment variables.
    pub vars: HashMap<String, String>,
    /// Files by path.
    pub files: HashMap<PathBuf, String>,
}

impl Environment for StaticEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|v| !v.is_empty()).cloned()
    }

    fn read_file(&self, path: &std::path::Path) -> std::io::Result<Option<String>> {
        Ok(self.files.get(path).cloned())
    }
}

/// Everything a `Client` needs, resolved.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Where requests go.
    pub endpoint: Endpoint,
    /// The region requests are signed for.
    pub region: String,
    /// The credentials requests are signed with (empty, and unused, when `anonymous`).
    pub credentials: Credentials,
    /// Requests are sent unsigned, with no `Authorization` at all, as `aws --no-sign-request` sends
    /// them: for public buckets and servers that do not authenticate. No credentials are looked up.
    pub anonymous: bool,
    /// Path-style or virtual-hosted bucket addressing.
    pub addressing: Addressing,
    /// Time allowed for a TCP connect.
    pub connect_timeout: Duration,
    /// Time allowed for a response head, and for each body read.
    pub read_timeout: Duration,
    /// Connections per host (busy plus idle).
    pub max_connections_per_host: usize,
    /// Read buffer per connection.
    pub read_buffer_size: usize,
    /// What is retried, how often and how long to wait.
    pub retry: RetryPolicy,
    /// The budget that pays for buffers the client allocates (`Client::get_bytes`).
    pub memory_budget: MemoryBudget,
    /// Where `memory_budget`'s size came from: `memory_budget` (set on the builder), or the
    /// process-wide default's source (`BRISK_MAX_MEMORY`, the cgroup limit, `MemTotal`).
    pub memory_budget_source: brisk_mem::BudgetSource,
    /// Bytes of free blocks the client's pool keeps for reuse; `None`: the pool's default (64 MiB,
    /// shared with the process-wide pool when the budget is the process-wide one).
    pub pool_retention: Option<usize>,
    /// PEM file of the certificate authorities trusted for `https://` endpoints instead of the
    /// system's roots.
    pub ca_bundle: Option<PathBuf>,
    /// `Some`: the client speaks Azure Blob Storage to this account (and `region`, `credentials`
    /// and `addressing` are unused); `None`: S3.
    pub azure: Option<AzureConfig>,
}

/// Builds a `Client` ([`build`](Self::build)): set what you know, the rest comes from the
/// environment and profile.
#[derive(Debug, Default)]
pub struct ClientBuilder {
    credentials: Option<Credentials>,
    anonymous: bool,
    region: Option<String>,
    endpoint: Option<String>,
    addressing: Option<Addressing>,
    profile: Option<String>,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    max_connections_per_host: Option<usize>,
    read_buffer_size: Option<usize>,
    retry: Option<RetryPolicy>,
    memory_budget: Option<MemoryBudget>,
    pool_retention: Option<usize>,
    ca_bundle: Option<PathBuf>,
    azure: Option<AzureSettings>,
}

impl ClientBuilder {
    /// A builder with nothing set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Explicit credentials (they win over the environment and profiles).
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Unsigned requests (`true`): no credentials are looked up and no request carries an
    /// `Authorization` header, as with `aws --no-sign-request`. Explicit credentials are ignored.
    pub fn anonymous(mut self, anonymous: bool) -> Self {
        self.anonymous = anonymous;
        self
    }

    /// The signing region.
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// The endpoint URL, `http(s)://host[:port]`.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Path-style or virtual-hosted addressing.
    pub fn addressing(mut self, addressing: Addressing) -> Self {
        self.addressing = Some(addressing);
        self
    }

    /// The profile to read instead of `AWS_PROFILE`.
    pub fn profile(mut self, profile: impl Into<String>) -> Self {
        self.profile = Some(profile.into());
        self
    }

    /// Time allowed for a TCP connect ([`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Time allowed for a response head and for each body read ([`DEFAULT_READ_TIMEOUT`]).
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = Some(timeout);
        self
    }

    /// Connections per host ([`DEFAULT_MAX_CONNECTIONS_PER_HOST`]).
    pub fn max_connections_per_host(mut self, max: usize) -> Self {
        self.max_connections_per_host = Some(max);
        self
    }

    /// Read buffer per connection ([`DEFAULT_READ_BUFFER_SIZE`]).
    pub fn read_buffer_size(mut self, bytes: usize) -> Self {
        self.read_buffer_size = Some(bytes);
        self
    }

    /// The retry policy ([`RetryPolicy::default`]).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The memory budget buffers are paid from (default: the process-wide pool's budget,
    /// `BRISK_MAX_MEMORY` or a half of the memory the process may use, at least 1 GiB:
    /// [`brisk_mem::choose_default_budget`]).
    pub fn memory_budget(mut self, budget: MemoryBudget) -> Self {
        self.memory_budget = Some(budget);
        self
    }

    /// Bytes of returned blocks the client's own pool keeps for reuse (default: the pool default,
    /// 64 MiB). A caller that holds a batch larger than the retention and then frees it makes the
    /// next batch map (and fault in) the excess afresh: 512 ranges of 256 KiB held together cost
    /// twice the CPU per GiB with 64 MiB retained than with 128 MiB. Cached blocks stay reserved on
    /// the budget, so this is a trade of idle memory for CPU, within the budget.
    pub fn pool_retention(mut self, bytes: usize) -> Self {
        self.pool_retention = Some(bytes);
        self
    }

    /// A PEM file of certificate authorities to trust instead of the system's roots (for servers
    /// with a private CA or a self-signed certificate).
    pub fn ca_bundle(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_bundle = Some(path.into());
        self
    }

    /// Speak Azure Blob Storage instead of S3, with `settings` completed from the `AZURE_STORAGE_*`
    /// environment ([`azure`]). The endpoint, timeouts, connections, retries, memory budget and CA
    /// bundle are set as for S3; AWS credentials, region and addressing are not looked up.
    pub fn azure(mut self, settings: AzureSettings) -> Self {
        self.azure = Some(settings);
        self
    }

    /// Resolves the configuration from the builder, the process environment and the shared files.
    pub fn resolve(self) -> Result<ClientConfig, ConfigError> {
        self.resolve_with(&ProcessEnvironment)
    }

    /// Resolves the configuration from the builder and `env`.
    pub fn resolve_with(mut self, env: &dyn Environment) -> Result<ClientConfig, ConfigError> {
        if let Some(settings) = self.azure.take() {
            let (azure, endpoint) = settings.resolve(env, self.endpoint.take(), self.anonymous)?;
            return self.finish(env, None, endpoint, Some(azure));
        }
        let profile_name = self
            .profile
            .clone()
            .or_else(|| env.var("AWS_PROFILE"))
            .unwrap_or_else(|| "default".to_owned());
        let files = SharedFiles::load(env, &profile_name)?;

        let credentials = match self.credentials.take() {
            _ if self.anonymous => Credentials::new("", ""),
            Some(c) => c,
            None => resolve_credentials(env, &files, &profile_name)?,
        };
        let region = self
            .region
            .take()
            .or_else(|| env.var("AWS_REGION"))
            .or_else(|| env.var("AWS_DEFAULT_REGION"))
            .or_else(|| files.config_value("region"))
            .unwrap_or_else(|| DEFAULT_REGION.to_owned());
        let endpoint_url = self
            .endpoint
            .take()
            .or_else(|| env.var("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env.var("AWS_ENDPOINT_URL"))
            .or_else(|| files.config_value("s3.endpoint_url"))
            .or_else(|| files.config_value("endpoint_url"));
        let custom_endpoint = endpoint_url.is_some();
        let endpoint = match endpoint_url {
            Some(url) => Endpoint::parse(url.trim())?,
            None => Endpoint::aws(&region),
        };
        let addressing = match self.addressing {
            Some(a) => a,
            None => match files.config_value("s3.addressing_style").as_deref() {
                Some("path") => Addressing::Path,
                Some("virtual") => Addressing::VirtualHosted,
                Some("auto") | None if custom_endpoint => Addressing::Path,
                Some("auto") | None => Addressing::VirtualHosted,
                Some(other) => return Err(ConfigError::InvalidAddressingStyle(other.to_owned())),
            },
        };
        let mut config = self.finish(env, Some(&files), endpoint, None)?;
        config.region = region;
        config.credentials = credentials;
        config.addressing = addressing;
        Ok(config)
    }

    /// The settings both services share, resolved; the S3-only ones at their defaults.
    fn finish(
        self,
        env: &dyn Environment,
        files: Option<&SharedFiles>,
        endpoint: Endpoint,
        azure: Option<AzureConfig>,
    ) -> Result<ClientConfig, ConfigError> {
        let max_connections_per_host = self
            .max_connections_per_host
            .unwrap_or(DEFAULT_MAX_CONNECTIONS_PER_HOST);
        if max_connections_per_host == 0 {
            return Err(ConfigError::InvalidSetting {
                setting: "max_connections_per_host",
                requirement: "at least 1",
            });
        }
        let (memory_budget, memory_budget_source) = match self.memory_budget {
            Some(b) => (b, brisk_mem::BudgetSource::Setting("memory_budget")),
            None => {
                let global = brisk_mem::BufferPool::global_budget_choice();
                let set_in_code = matches!(global.source, brisk_mem::BudgetSource::Setting(_));
                if !set_in_code && brisk_mem::process_default_budget().is_err() {
                    return Err(ConfigError::InvalidSetting {
                        setting: brisk_mem::MAX_MEMORY_ENV,
                        requirement: "a size of at least 1 byte, such as 8GiB or 512MiB",
                    });
                }
                (
                    brisk_mem::BufferPool::global().budget().clone(),
                    global.source,
                )
            }
        };
        Ok(ClientConfig {
            endpoint,
            region: DEFAULT_REGION.to_owned(),
            credentials: Credentials::new("", ""),
            anonymous: self.anonymous,
            addressing: Addressing::Path,
            connect_timeout: self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            read_timeout: self.read_timeout.unwrap_or(DEFAULT_READ_TIMEOUT),
            max_connections_per_host,
            read_buffer_size: self.read_buffer_size.unwrap_or(DEFAULT_READ_BUFFER_SIZE),
            retry: self.retry.unwrap_or_default(),
            memory_budget,
            memory_budget_source,
            pool_retention: self.pool_retention,
            ca_bundle: self
                .ca_bundle
                .or_else(|| env.var("AWS_CA_BUNDLE").map(PathBuf::from))
                .or_else(|| {
                    files
                        .and_then(|f| f.config_value("ca_bundle"))
                        .map(PathBuf::from)
                }),
            azure,
        })
    }
}

/// The selected profile of both shared files.
struct SharedFiles {
    credentials: Option<HashMap<String, String>>,
    config: Option<HashMap<String, String>>,
    credentials_path: PathBuf,
}

impl SharedFiles {
    fn load(env: &dyn Environment, profile: &str) -> Result<Self, ConfigError> {
        let home = env.var("HOME").map(PathBuf::from);
        let in_home = |name: &str| home.as_ref().map(|h| h.join(".aws").join(name));
        let credentials_path = env
            .var("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| in_home("credentials"));
        let config_path = env
            .var("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| in_home("config"));
        let credentials_file = load_ini(env, credentials_path.as_ref())?;
        let config_file = load_ini(env, config_path.as_ref())?;
        let credentials = credentials_file
            .as_ref()
            .and_then(|f| f.credentials_profile(profile).cloned());
        let config = config_file
            .as_ref()
            .and_then(|f| f.config_profile(profile).cloned());
        let profile_was_asked_for = profile != "default";
        let any_file = credentials_file.is_some() || config_file.is_some();
        if profile_was_asked_for && any_file && credentials.is_none() && config.is_none() {
            return Err(ConfigError::NoSuchProfile {
                profile: profile.to_owned(),
                credentials: credentials_path.unwrap_or_default(),
                config: config_path.unwrap_or_default(),
            });
        }
        Ok(Self {
            credentials,
            config,
            credentials_path: credentials_path.unwrap_or_default(),
        })
    }

    fn config_value(&self, key: &str) -> Option<String> {
        self.config
            .as_ref()
            .and_then(|p| p.get(key))
            .filter(|v| !v.is_empty())
            .cloned()
    }
}

fn load_ini(env: &dyn Environment, path: Option<&PathBuf>) -> Result<Option<IniFile>, ConfigError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = env.read_file(path).map_err(|source| ConfigError::Read {
        path: path.clone(),
        source,
    })?;
    text.map(|t| IniFile::parse(&t))
        .transpose()
        .map_err(|source| ConfigError::File {
            path: path.clone(),
            source,
        })
}

/// Environment first, then the credentials file's profile, then the config file's.
fn resolve_credentials(
    env: &dyn Environment,
    files: &SharedFiles,
    profile: &str,
) -> Result<Credentials, ConfigError> {
    let from_env = key_pair(
        env.var("AWS_ACCESS_KEY_ID"),
        env.var("AWS_SECRET_ACCESS_KEY"),
        env.var("AWS_SESSION_TOKEN"),
        "the environment",
        ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    )?;
    if let Some(c) = from_env {
        return Ok(c);
    }
    let sources = [
        (
            files.credentials.as_ref(),
            files.credentials_path.display().to_string(),
        ),
        (files.config.as_ref(), "the config file".to_owned()),
    ];
    for (section, name) in sources {
        let Some(section) = section else { continue };
        let get = |k: &str| section.get(k).filter(|v| !v.is_empty()).cloned();
        let found = key_pair(
            get("aws_access_key_id"),
            get("aws_secret_access_key"),
            get("aws_session_token"),
            &format!("profile {profile:?} of {name}"),
            ("aws_access_key_id", "aws_secret_access_key"),
        )?;
        if let Some(c) = found {
            return Ok(c);
        }
    }
    Err(ConfigError::NoCredentials {
        profile: profile.to_owned(),
    })
}

fn key_pair(
    access_key: Option<String>,
    secret: Option<String>,
    token: Option<String>,
    source_name: &str,
    names: (&'static str, &'static str),
) -> Result<Option<Credentials>, ConfigError> {
    match (access_key, secret) {
        (Some(a), Some(s)) => Ok(Some(match token {
            Some(t) => Credentials::with_session_token(a, s, t),
            None => Credentials::new(a, s),
        })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(ConfigError::IncompleteCredentials {
            found: names.0,
            missing: names.1,
            source_name: source_name.to_owned(),
        }),
        (None, Some(_)) => Err(ConfigError::IncompleteCredentials {
            found: names.1,
            missing: names.0,
            source_name: source_name.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)], files: &[(&str, &str)]) -> StaticEnvironment {
        StaticEnvironment {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            files: files
                .iter()
                .map(|(k, v)| (PathBuf::from(k), v.to_string()))
                .collect(),
        }
    }

    const CREDENTIALS: &str = "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FILESECRET\n\
                               [dev]\naws_access_key_id = DEVKEY\naws_secret_access_key = DEVSECRET\naws_session_token = DEVTOKEN\n";
    const CONFIG: &str = "[default]\nregion = eu-west-1\n\
                          [profile dev]\nregion = us-west-2\ns3 =\n  endpoint_url = http://127.0.0.1:9000\n\
                          [profile keys-in-config]\naws_access_key_id = CFGKEY\naws_secret_access_key = CFGSECRET\n";

    fn home_files() -> Vec<(&'static str, &'static str)> {
        vec![
            ("/home/u/.aws/credentials", CREDENTIALS),
            ("/home/u/.aws/config", CONFIG),
        ]
    }

    #[test]
    fn explicit_values_win() {
        let e = env(
            &[
                ("HOME", "/home/u"),
                ("AWS_ACCESS_KEY_ID", "ENVKEY"),
                ("AWS_SECRET_ACCESS_KEY", "S"),
                ("AWS_REGION", "ap-south-1"),
            ],
            &home_files(),
        );
        let config = ClientBuilder::new()
            .credentials(Credentials::new("EXPLICIT", "X"))
            .region("sa-east-1")
            .endpoint("http://localhost:1234")
            .resolve_with(&e)
            .unwrap();
        assert_eq!(config.credentials.access_key_id(), "EXPLICIT");
        assert_eq!(config.region, "sa-east-1");
        assert_eq!(config.endpoint.port, 1234);
        assert_eq!(config.addressing, Addressing::Path);
    }

    #[test]
    fn environment_beats_profile() {
        let e = env(
            &[
                ("HOME", "/home/u"),
                ("AWS_ACCESS_KEY_ID", "ENVKEY"),
                ("AWS_SECRET_ACCESS_KEY", "ENVSECRET"),
                ("AWS_SESSION_TOKEN", "ENVTOKEN"),
                ("AWS_DEFAULT_REGION", "ca-central-1"),
                ("AWS_ENDPOINT_URL", "http://generic:1"),
                ("AWS_ENDPOINT_URL_S3", "http://s3-specific:2"),
            ],
            &home_files(),
        );
        let config = ClientBuilder::new().resolve_with(&e).unwrap();
        assert_eq!(config.credentials.access_key_id(), "ENVKEY");
        assert_eq!(config.credentials.session_token(), Some("ENVTOKEN"));
        assert_eq!(config.region, "ca-central-1");
        assert_eq!(config.endpoint.host, "s3-specific");
    }

    #[test]
    fn aws_region_beats_aws_default_region() {
        let e = env(
            &[
                ("AWS_REGION", "r1"),
                ("AWS_DEFAULT_REGION", "r2"),
                ("AWS_ACCESS_KEY_ID", "K"),
                ("AWS_SECRET_ACCESS_KEY", "S"),
            ],
            &[],
        );
        assert_eq!(ClientBuilder::new().resolve_with(&e).unwrap().region, "r1");
    }

    #[test]
    fn default_profile_from_home() {
        let e = env(&[("HOME", "/home/u")], &home_files());
        let config = ClientBuilder::new().resolve_with(&e).unwrap();
        assert_eq!(config.credentials.access_key_id(), "FILEKEY");
        assert_eq!(config.region, "eu-west-1");
        assert_eq!(config.endpoint, Endpoint::aws("eu-west-1"));
        assert_eq!(config.addressing, Addressing::VirtualHosted);
    }

    #[test]
    fn named_profile_with_nested_s3_endpoint() {
        let e = env(
            &[("HOME", "/home/u"), ("AWS_PROFILE", "dev")],
            &home_files(),
        );
        let config = ClientBuilder::new().resolve_with(&e).unwrap();
        assert_eq!(config.credentials.access_key_id(), "DEVKEY");
        assert_eq!(config.credentials.session_token(), Some("DEVTOKEN"));
        assert_eq!(config.region, "us-west-2");
        assert_eq!(config.endpoint.to_string(), "http://127.0.0.1:9000");
        assert_eq!(config.addressing, Addressing::Path);
    }

    #[test]
    fn credentials_may_live_in_the_config_file() {
        let e = env(&[("HOME", "/home/u")], &home_files());
        let config = ClientBuilder::new()
            .profile("keys-in-config")
            .resolve_with(&e)
            .unwrap();
        assert_eq!(config.credentials.access_key_id(), "CFGKEY");
        assert_eq!(config.region, DEFAULT_REGION);
    }

    #[test]
    fn ca_bundle_from_builder_environment_or_profile() {
        let keys = [("AWS_ACCESS_KEY_ID", "K"), ("AWS_SECRET_ACCESS_KEY", "S")];
        let none = ClientBuilder::new().resolve_with(&env(&keys, &[])).unwrap();
        assert_eq!(none.ca_bundle, None);
        let mut vars = keys.to_vec();
        vars.push(("AWS_CA_BUNDLE", "/env/ca.pem"));
        vars.push(("AWS_CONFIG_FILE", "/c"));
        let files = [("/c", "[default]\nca_bundle = /profile/ca.pem\n")];
        let from_env = ClientBuilder::new()
            .resolve_with(&env(&vars, &files))
            .unwrap();
        assert_eq!(from_env.ca_bundle, Some(PathBuf::from("/env/ca.pem")));
        let from_profile = ClientBuilder::new()
            .resolve_with(&env(&[keys[0], keys[1], ("AWS_CONFIG_FILE", "/c")], &files))
            .unwrap();
        assert_eq!(
            from_profile.ca_bundle,
            Some(PathBuf::from("/profile/ca.pem"))
        );
        let explicit = ClientBuilder::new()
            .ca_bundle("/mine.pem")
            .resolve_with(&env(&vars, &files))
            .unwrap();
        assert_eq!(explicit.ca_bundle, Some(PathBuf::from("/mine.pem")));
    }

    #[test]
    fn file_locations_from_environment() {
        let e = env(
            &[
                ("AWS_SHARED_CREDENTIALS_FILE", "/etc/creds"),
                ("AWS_CONFIG_FILE", "/etc/conf"),
            ],
            &[("/etc/creds", CREDENTIALS), ("/etc/conf", CONFIG)],
        );
        let config = ClientBuilder::new().resolve_with(&e).unwrap();
        assert_eq!(config.credentials.access_key_id(), "FILEKEY");
        assert_eq!(config.region, "eu-west-1");
    }

    #[test]
    fn anonymous_needs_no_credentials() {
        let config = ClientBuilder::new()
            .anonymous(true)
            .resolve_with(&env(&[], &[]))
            .unwrap();
        assert!(config.anonymous);
        assert_eq!(config.credentials.access_key_id(), "");
        let config = ClientBuilder::new()
            .credentials(Credentials::new("K", "S"))
            .resolve_with(&env(&[], &[]))
            .unwrap();
        assert!(!config.anonymous);
    }

    #[test]
    fn missing_and_partial_credentials_are_clear_errors() {
        let err = ClientBuilder::new()
            .resolve_with(&env(&[], &[]))
            .unwrap_err();
        assert!(matches!(err, ConfigError::NoCredentials { ref profile } if profile == "default"));
        assert!(err.to_string().contains("AWS_ACCESS_KEY_ID"));

        let err = ClientBuilder::new()
            .resolve_with(&env(&[("AWS_ACCESS_KEY_ID", "K")], &[]))
            .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::IncompleteCredentials {
                missing: "AWS_SECRET_ACCESS_KEY",
                ..
            }
        ));

        let err = ClientBuilder::new()
            .resolve_with(&env(
                &[("HOME", "/home/u"), ("AWS_PROFILE", "nope")],
                &home_files(),
            ))
            .unwrap_err();
        assert!(matches!(err, ConfigError::NoSuchProfile { .. }));
    }

    #[test]
    fn invalid_settings_are_refused() {
        let e = env(
            &[("AWS_ACCESS_KEY_ID", "K"), ("AWS_SECRET_ACCESS_KEY", "S")],
            &[],
        );
        assert!(matches!(
            ClientBuilder::new()
                .endpoint("localhost:9000")
                .resolve_with(&e),
            Err(ConfigError::InvalidEndpoint { .. })
        ));
        assert!(matches!(
            ClientBuilder::new()
                .max_connections_per_host(0)
                .resolve_with(&e),
            Err(ConfigError::InvalidSetting { .. })
        ));
        let bad_style = env(
            &[
                ("AWS_ACCESS_KEY_ID", "K"),
                ("AWS_SECRET_ACCESS_KEY", "S"),
                ("AWS_CONFIG_FILE", "/c"),
            ],
            &[("/c", "[default]\ns3 =\n  addressing_style = sideways\n")],
        );
        assert!(matches!(
            ClientBuilder::new().resolve_with(&bad_style),
            Err(ConfigError::InvalidAddressingStyle(_))
        ));
    }
}
