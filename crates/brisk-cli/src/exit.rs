//! Why a command failed, as a message a person can act on and an exit code a script can branch on.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | the S3 service refused or failed the request (any S3 error not listed below), or some of several transfers failed |
//! | 2 | usage: bad arguments, a bad URL, an unusable configuration |
//! | 3 | not found: no such bucket, key, local file, or nothing matched |
//! | 4 | authentication or authorisation: no credentials, access denied, bad signature, clock skew, wrong region |
//! | 5 | network: connection refused or timed out, TLS, a broken HTTP exchange |
//! | 6 | local I/O: a file or stdin/stdout could not be read or written |

use brisk_client::{ConfigError, Error as ClientError};

/// Exit codes, one per kind of failure (documented above and in `docs/cli.md`).
pub mod code {
    pub const S3: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NOT_FOUND: u8 = 3;
    pub const AUTH: u8 = 4;
    pub const NETWORK: u8 = 5;
    pub const LOCAL_IO: u8 = 6;
}

/// A failed command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The arguments do not describe something the command can do.
    #[error("{0}")]
    Usage(String),
    /// The client's configuration could not be resolved.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// An S3 operation failed (`action` says which, on what). Boxed: the client's error is large
    /// and every `Result` here would carry its size.
    #[error("{action}: {source}")]
    S3 {
        action: String,
        #[source]
        source: Box<ClientError>,
    },
    /// A local file or stream failed.
    #[error("{what}: {source}")]
    Local {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// Some of several operations failed; each was reported as it happened.
    #[error("{failed} of {total} operations failed")]
    Partial { failed: usize, total: usize },
}

impl CliError {
    /// Wraps a client error with what was being done.
    pub fn s3(action: impl Into<String>, source: ClientError) -> Self {
        Self::S3 {
            action: action.into(),
            source: Box::new(source),
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn local(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Local {
            what: what.into(),
            source,
        }
    }

    /// The process exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => code::USAGE,
            Self::Config(e) => config_code(e),
            Self::S3 { source, .. } => client_code(source),
            Self::Local { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                code::NOT_FOUND
            }
            Self::Local { .. } => code::LOCAL_IO,
            Self::Partial { .. } => code::S3,
        }
    }
}

fn config_code(e: &ConfigError) -> u8 {
    match e {
        ConfigError::NoCredentials { .. } | ConfigError::IncompleteCredentials { .. } => code::AUTH,
        _ => code::USAGE,
    }
}

/// The exit code for a client error, by meaning.
pub fn client_code(e: &ClientError) -> u8 {
    use ClientError as E;
    match e {
        E::NoSuchKey(_) | E::NoSuchBucket(_) => code::NOT_FOUND,
        E::AccessDenied(_) | E::SignatureDoesNotMatch(_) | E::ClockSkew(_) | E::WrongRegion(_) => {
            code::AUTH
        }
        E::Connect { .. } | E::ConnectTimeout { .. } | E::TlsHandshake { .. } | E::Http(_) => {
            code::NETWORK
        }
        E::File { source, .. } if source.kind() == std::io::ErrorKind::NotFound => code::NOT_FOUND,
        E::File { .. } => code::LOCAL_IO,
        E::Config(c) => config_code(c),
        E::InvalidArgument { .. } => code::USAGE,
        _ => code::S3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_client::ServiceError;

    fn service(status: u16, code: &str) -> ClientError {
        let doc = brisk_wire::xml::ErrorDocument {
            code: code.to_owned(),
            message: "m".to_owned(),
            resource: None,
            request_id: None,
            host_id: None,
            extra: Vec::new(),
        };
        ClientError::from_service(ServiceError::new(status, Some(doc), None, "us-east-1"))
    }

    #[test]
    fn kinds_of_failure_have_distinct_codes() {
        let exit = |e: ClientError| CliError::s3("x", e).exit_code();
        assert_eq!(exit(service(404, "NoSuchKey")), code::NOT_FOUND);
        assert_eq!(exit(service(404, "NoSuchBucket")), code::NOT_FOUND);
        assert_eq!(exit(service(403, "AccessDenied")), code::AUTH);
        assert_eq!(exit(service(403, "SignatureDoesNotMatch")), code::AUTH);
        assert_eq!(exit(service(409, "BucketNotEmpty")), code::S3);
        let refused = ClientError::Connect {
            address: "127.0.0.1:1".into(),
            source: std::io::ErrorKind::ConnectionRefused.into(),
        };
        assert_eq!(exit(refused), code::NETWORK);
        assert_eq!(CliError::Usage("u".into()).exit_code(), code::USAGE);
        let missing = CliError::local("open f", std::io::ErrorKind::NotFound.into());
        assert_eq!(missing.exit_code(), code::NOT_FOUND);
        let denied = CliError::local("open f", std::io::ErrorKind::PermissionDenied.into());
        assert_eq!(denied.exit_code(), code::LOCAL_IO);
    }

    #[test]
    fn messages_say_what_failed_and_the_s3_code() {
        let e = CliError::s3("cp s3://b/k -", service(404, "NoSuchKey"));
        let text = e.to_string();
        assert!(text.starts_with("cp s3://b/k -: "), "{text}");
        assert!(text.contains("NoSuchKey"), "{text}");
    }
}
