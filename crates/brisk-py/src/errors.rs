//! brisk's Rust errors as Python exceptions of `brisk.errors`, chosen by meaning.
//!
//! The classes are defined in Python (`python/brisk/errors.py`) so that they can have two bases
//! (`NoSuchKey` is also a `FileNotFoundError`, `AccessDenied` a `PermissionError`); this module looks
//! them up by name and fills in what the server said as attributes.

use brisk_client::{Error, ServiceError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ERRORS
        .get_or_try_init(py, || Ok(py.import("brisk.errors")?.unbind()))
        .map(|m| m.bind(py))
}

/// An instance of `brisk.errors.<class>` with `message` and keyword attributes.
pub fn new_error(
    py: Python<'_>,
    class: &str,
    message: String,
    attributes: &Bound<'_, PyDict>,
) -> PyErr {
    let made = errors_module(py)
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call((message.clone(),), Some(attributes)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        // The errors module is part of the package; failing to build an instance is a broken
        // install, and the message must not be lost with it.
        Err(e) => pyo3::exceptions::PyRuntimeError::new_err(format!("{message} ({e})")),
    }
}

/// A brisk error class with a plain message and no service details.
pub fn plain(py: Python<'_>, class: &str, message: impl Into<String>) -> PyErr {
    new_error(py, class, message.into(), &PyDict::new(py))
}

fn service_attributes<'py>(py: Python<'py>, e: &ServiceError) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("code", &e.code)?;
    d.set_item("status", e.status)?;
    d.set_item("request_id", e.request_id.as_deref())?;
    d.set_item("resource", e.resource.as_deref())?;
    d.set_item("hint", e.hint.as_deref())?;
    Ok(d)
}

/// The Python exception for `error`.
pub fn to_py(py: Python<'_>, error: Error) -> PyErr {
    let message = error.to_string();
    let service = |class: &str, e: &ServiceError| match service_attributes(py, e) {
        Ok(attributes) => new_error(py, class, message.clone(), &attributes),
        Err(e) => e,
    };
    match &error {
        Error::NoSuchKey(e) => service("NoSuchKey", e),
        Error::NoSuchBucket(e) => service("NoSuchBucket", e),
        Error::AccessDenied(e) => service("AccessDenied", e),
        Error::SignatureDoesNotMatch(e) => service("SignatureDoesNotMatch", e),
        Error::ClockSkew(e) => service("ClockSkew", e),
        Error::WrongRegion(e) => service("WrongRegion", e),
        Error::PreconditionFailed(e) => service("PreconditionFailed", e),
        Error::NotModified(e) => service("NotModified", e),
        Error::InvalidRange(e) => service("InvalidRange", e),
        Error::BucketAlreadyExists(e) => service("BucketAlreadyExists", e),
        Error::BucketNotEmpty(e) => service("BucketNotEmpty", e),
        Error::Throttled(e) => service("Throttled", e),
        Error::ServerError(e) => service("ServerError", e),
        Error::Service(e) => service("ServiceError", e),
        Error::ObjectChanged { .. } => plain(py, "ObjectChanged", message),
        Error::ChecksumMismatch { .. } => plain(py, "ChecksumMismatch", message),
        Error::BufferTooSmall { .. } => plain(py, "BufferTooSmall", message),
        Error::Memory(_) => plain(
            py,
            "MemoryBudgetExceeded",
            format!("{message}, or read into a buffer of your own with get_into"),
        ),
        Error::ConnectTimeout { .. } => plain(py, "Timeout", message),
        Error::Http(h) if is_timeout(h) => plain(py, "Timeout", message),
        Error::Connect { .. } | Error::TlsHandshake { .. } | Error::Http(_) => {
            plain(py, "ConnectionFailed", message)
        }
        Error::Config(_) => plain(py, "ConfigError", message),
        Error::File { .. } => plain(py, "LocalFileError", message),
        Error::InvalidArgument { .. } => plain(py, "InvalidArgument", message),
        _ => plain(py, "Error", message),
    }
}

fn is_timeout(error: &brisk_wire::http::HttpError) -> bool {
    use brisk_wire::http::HttpError;
    matches!(
        error,
        HttpError::HeadTimeout { .. } | HttpError::BodyTimeout { .. }
    )
}

/// `Result<T, brisk_client::Error>` to `PyResult<T>`.
pub trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
