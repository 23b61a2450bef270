//! The Azure Blob dialect: how a request is addressed (the account in the host, or in the path on
//! an emulator), authorized (Shared Key, a SAS token, or nothing) and how Azure's errors read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use brisk_wire::azure::{API_VERSION, AzureRequest, parse_error};
use brisk_wire::http::{Headers, RequestHead};
use brisk_wire::sigv4::encode_key_path;

use crate::config::{AzureConfig, AzureCredentials, Endpoint};
use crate::error::{Error, ServiceError};
use crate::request::{Address, RequestSpec, USER_AGENT};

/// How Azure Blob requests are addressed and authorized.
#[derive(Debug)]
pub(crate) struct AzureDialect {
    pub(crate) config: AzureConfig,
    /// The service refused `x-ms-content-crc64` (Azurite does, unless started `--loose`): writes
    /// carry `Content-MD5` instead, which every Azure Blob service checks.
    crc64_refused: AtomicBool,
}

impl AzureDialect {
    pub(crate) fn new(config: AzureConfig) -> Self {
        Self {
            config,
            crc64_refused: AtomicBool::new(false),
        }
    }

    /// The error an error response means (see [`error`]).
    pub(crate) fn error(&self, status: u16, headers: &Headers, body: Option<&[u8]>) -> Error {
        let shared_key = matches!(self.config.credentials, AzureCredentials::SharedKey(_));
        error(status, headers, body, shared_key)
    }

    /// Whether writes carry `Content-MD5` because the service refused `x-ms-content-crc64`.
    pub(crate) fn crc64_refused(&self) -> bool {
        self.crc64_refused.load(Ordering::Relaxed)
    }

    /// Whether `error` is the service refusing `x-ms-content-crc64`; if so, remembers it.
    pub(crate) fn refuses_crc64(&self, error: &Error) -> bool {
        let refused = error.service_error().is_some_and(|e| {
            matches!(e.code.as_str(), "FeatureNotSupported" | "UnsupportedHeader")
                && e.message.contains("crc64")
        });
        if refused && !self.crc64_refused.swap(true, Ordering::Relaxed) {
            tracing::debug!(
                "the service does not support x-ms-content-crc64; writes carry Content-MD5 instead"
            );
        }
        refused
    }

    /// `/container/blob` under the account's host, or `/account/container/blob` on an emulator.
    pub(crate) fn target(
        &self,
        endpoint: &Endpoint,
        container: Option<&str>,
        blob: Option<&str>,
    ) -> Address {
        let mut path = String::new();
        if self.config.account_in_path {
            path.push('/');
            path.push_str(&self.config.account);
        }
        if let Some(container) = container {
            path.push('/');
            path.push_str(container);
            if let Some(blob) = blob {
                path.push_str(&encode_key_path(blob));
            }
        }
        if path.is_empty() {
            path.push('/');
        }
        Address {
            host_header: endpoint.host_header(&endpoint.host),
            host: endpoint.host.clone(),
            port: endpoint.port,
            path,
        }
    }

    /// The head of `spec`: `x-ms-date` and `x-ms-version` added, the SAS token appended to the
    /// query, or the Shared Key `Authorization` computed over the headers as sent.
    pub(crate) fn head(
        &self,
        spec: &RequestSpec<'_>,
        target: &Address,
        now: SystemTime,
    ) -> Result<RequestHead, Error> {
        let mut query = spec.query.clone();
        if let AzureCredentials::Sas(token) = &self.config.credentials {
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(token);
        }
        let date = httpdate::fmt_http_date(now);
        let content_length = (!spec.body.is_empty() || matches!(spec.method, "PUT" | "POST"))
            .then(|| spec.body.len().to_string());
        // What is sent and signed: the operation's headers, except S3's ask for the stored
        // checksum, which the data path adds for both services (Azure returns Content-MD5
        // unasked).
        let mut headers: Vec<(&str, &str)> = Vec::with_capacity(spec.headers.len() + 4);
        for (name, value) in &spec.headers {
            if name.starts_with("x-amz-") {
                debug_assert_eq!(
                    name.as_ref(),
                    crate::integrity::CHECKSUM_MODE_HEADER,
                    "an S3 header in an Azure request"
                );
                continue;
            }
            headers.push((name.as_ref(), value.as_str()));
        }
        headers.push(("x-ms-date", &date));
        headers.push(("x-ms-version", API_VERSION));
        if let Some(length) = &content_length {
            headers.push(("content-length", length));
        }
        let authorization = match &self.config.credentials {
            AzureCredentials::SharedKey(key) => Some(key.authorization(&AzureRequest {
                method: spec.method,
                path: &target.path,
                query: &query,
                headers: &headers,
            })),
            AzureCredentials::Sas(_) | AzureCredentials::Anonymous => None,
        };

        let request_target = if query.is_empty() {
            target.path.clone()
        } else {
            format!("{}?{}", target.path, query)
        };
        let mut head = RequestHead::with_request_line(spec.method, &request_target)?;
        let out = head.headers_mut();
        out.append("host", &target.host_header)?;
        out.append("user-agent", USER_AGENT)?;
        for (name, value) in &headers {
            if *name == "content-length" {
                continue;
            }
            out.append(name, value)?;
        }
        if let Some(authorization) = &authorization {
            out.append("authorization", authorization)?;
        }
        if content_length.is_some() {
            out.set_content_length(spec.body.len() as u64);
        }
        if spec.expects_continue() {
            out.append("expect", "100-continue")?;
        }
        Ok(head)
    }
}

/// The error an Azure error response means. The code comes from the `<Error>` document, else from
/// `x-ms-error-code` (HEAD responses have no body), else from the status.
pub(crate) fn error(
    status: u16,
    headers: &Headers,
    body: Option<&[u8]>,
    shared_key: bool,
) -> Error {
    let document = body.filter(|b| !b.is_empty()).and_then(parse_error);
    let header_code = headers.get_str("x-ms-error-code").map(str::to_owned);
    let (code, message) = match document {
        Some(d) => (d.code, d.message),
        None => (
            header_code.unwrap_or_else(|| status_code(status).to_owned()),
            String::new(),
        ),
    };
    let hint = match code.as_str() {
        "AuthenticationFailed" => Some(
            "the account key does not match the account, the SAS token is invalid or expired, or this machine's clock is off"
                .to_owned(),
        ),
        "NoAuthenticationInformation" | "PublicAccessNotPermitted" => Some(
            "the container is not public: give an account key, a SAS token or a connection string"
                .to_owned(),
        ),
        _ => None,
    };
    let service = Box::new(ServiceError {
        status,
        code,
        message: message.trim().to_owned(),
        request_id: headers.get_str("x-ms-request-id").map(str::to_owned),
        resource: None,
        hint,
    });
    classify(service, shared_key)
}

/// The S3-style code of a bodiless response, by status.
fn status_code(status: u16) -> &'static str {
    match status {
        304 => "ConditionNotMet",
        400 => "InvalidInput",
        403 => "AuthorizationFailure",
        404 => "ResourceNotFound",
        409 => "Conflict",
        412 => "ConditionNotMet",
        416 => "InvalidRange",
        500 => "InternalError",
        503 => "ServerBusy",
        _ => "UnknownError",
    }
}

/// Azure's error codes by meaning, into the same [`Error`] kinds as S3's.
fn classify(e: Box<ServiceError>, shared_key: bool) -> Error {
    match (e.code.as_str(), e.status) {
        (_, 304) => Error::NotModified(e),
        ("BlobNotFound" | "ResourceNotFound", _) => Error::NoSuchKey(e),
        ("ContainerNotFound", _) => Error::NoSuchBucket(e),
        ("AuthenticationFailed", _) => Error::SignatureDoesNotMatch(e),
        // Azurite's code for a signature that does not match (Azure's is AuthenticationFailed).
        ("AuthorizationFailure", _)
            if shared_key && e.message.contains("failed to authenticate") =>
        {
            Error::SignatureDoesNotMatch(e)
        }
        (
            "AuthorizationFailure"
            | "AuthorizationPermissionMismatch"
            | "AuthorizationResourceTypeMismatch"
            | "AuthorizationProtocolMismatch"
            | "AuthorizationSourceIPMismatch"
            | "AuthorizationServiceMismatch"
            | "InsufficientAccountPermissions"
            | "NoAuthenticationInformation"
            | "PublicAccessNotPermitted"
            | "AccountIsDisabled",
            _,
        ) => Error::AccessDenied(e),
        ("ConditionNotMet" | "SourceConditionNotMet" | "TargetConditionNotMet", _)
        | ("BlobAlreadyExists", 409)
        | (_, 412) => Error::PreconditionFailed(e),
        ("InvalidRange", _) => Error::InvalidRange(e),
        ("ContainerAlreadyExists", _) => Error::BucketAlreadyExists(e),
        ("ServerBusy" | "OperationTimedOut", _) | (_, 503) => Error::Throttled(e),
        // A 500 that no retry changes (an emulator's unsupported feature).
        ("FeatureNotSupported", _) => Error::Service(e),
        (_, 500..=599) => Error::ServerError(e),
        (_, 404) => Error::NoSuchKey(e),
        _ => Error::Service(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        let mut h = Headers::new();
        for (n, v) in pairs {
            h.append(n, v).unwrap();
        }
        h
    }

    #[test]
    fn azure_codes_map_to_the_same_kinds_as_s3() {
        let body = br#"<?xml version="1.0" encoding="utf-8"?><Error><Code>BlobNotFound</Code><Message>The specified blob does not exist.
RequestId:1</Message></Error>"#;
        let e = error(
            404,
            &headers(&[("x-ms-request-id", "abc")]),
            Some(body),
            true,
        );
        assert!(
            matches!(&e, Error::NoSuchKey(s) if s.code == "BlobNotFound" && s.request_id.as_deref() == Some("abc")),
            "{e}"
        );
        // A HEAD has no body: the code comes from x-ms-error-code.
        let e = error(
            404,
            &headers(&[("x-ms-error-code", "ContainerNotFound")]),
            None,
            true,
        );
        assert!(matches!(e, Error::NoSuchBucket(_)), "{e}");
        let e = error(
            403,
            &headers(&[("x-ms-error-code", "AuthenticationFailed")]),
            None,
            true,
        );
        assert!(
            matches!(&e, Error::SignatureDoesNotMatch(s) if s.hint.is_some()),
            "{e}"
        );
        let e = error(
            412,
            &headers(&[("x-ms-error-code", "ConditionNotMet")]),
            None,
            true,
        );
        assert!(matches!(e, Error::PreconditionFailed(_)), "{e}");
        let e = error(
            409,
            &headers(&[("x-ms-error-code", "ContainerAlreadyExists")]),
            None,
            true,
        );
        assert!(matches!(e, Error::BucketAlreadyExists(_)), "{e}");
        let e = error(
            503,
            &headers(&[("x-ms-error-code", "ServerBusy")]),
            None,
            true,
        );
        assert!(matches!(e, Error::Throttled(_)) && e.is_retryable(), "{e}");
        let e = error(404, &headers(&[]), None, true);
        assert!(matches!(e, Error::NoSuchKey(_)), "{e}");
    }
}
