//! The arguments several calls take, checked and turned into the Rust client's types before
//! anything is sent: sizes, durations, payload signing, and what an upload stores with the object
//! (`metadata=`, `headers=`, `if_none_match=`).

use std::time::Duration;

use brisk_client::PayloadSigning;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A size given as an int or a string such as "256MiB".
pub fn size_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    if let Ok(n) = value.extract::<usize>() {
        return Ok(n);
    }
    if let Ok(text) = value.extract::<String>() {
        return brisk_mem::parse_size(&text)
            .map_err(|e| PyValueError::new_err(format!("{what}: {e}")));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a number of bytes or a string such as \"256MiB\""
    )))
}

pub fn seconds(value: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyValueError::new_err(format!("{what} must be a positive number of seconds")))
}

/// `payload_signing="auto" | "signed" | "unsigned"`, as the CLI's `--payload-signing`.
pub fn payload_signing_arg(choice: &str) -> PyResult<PayloadSigning> {
    match choice {
        "auto" => Ok(PayloadSigning::Auto),
        "signed" => Ok(PayloadSigning::Signed),
        "unsigned" => Ok(PayloadSigning::Unsigned),
        other => Err(PyValueError::new_err(format!(
            "payload_signing is \"auto\", \"signed\" or \"unsigned\", not {other:?}"
        ))),
    }
}

/// A `metadata=` argument: user metadata as a dict of str to str.
pub type Metadata = Option<std::collections::BTreeMap<String, String>>;

/// A `headers=` argument: the other headers stored with an object, by their HTTP names.
pub type Headers = Option<std::collections::BTreeMap<String, String>>;

/// `metadata=` (names lower-cased, as S3 keeps them) and `headers=` (`Cache-Control`,
/// `Content-Disposition`, `Content-Encoding`, `Content-Language`, `Expires`, in any case) as what
/// an upload stores; any other header name is a `ValueError` before anything is sent.
pub fn object_headers(
    metadata: Metadata,
    headers: Headers,
) -> PyResult<brisk_client::ObjectHeaders> {
    let mut stored = brisk_client::ObjectHeaders {
        metadata: metadata
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
        ..Default::default()
    };
    for (name, value) in headers.unwrap_or_default() {
        let slot = match brisk_wire::object_headers::StandardHeader::from_name(&name) {
            Some(header) => stored.field_mut(header),
            None => {
                return Err(PyValueError::new_err(format!(
                    "headers= takes Cache-Control, Content-Disposition, Content-Encoding, \
                     Content-Language and Expires, not {:?} (user metadata goes in metadata=)",
                    name.to_ascii_lowercase()
                )));
            }
        };
        let Some(slot) = slot else {
            return Err(PyValueError::new_err(
                "give the Content-Type as content_type=, not in headers=",
            ));
        };
        *slot = Some(value);
    }
    Ok(stored)
}

/// `if_none_match=`: None, or "*" (write only if the key is free); other values (an ETag) are a
/// `ValueError` before anything is sent.
pub fn if_none_match_arg(if_none_match: Option<&str>) -> PyResult<bool> {
    match if_none_match {
        None => Ok(false),
        Some("*") => Ok(true),
        Some(other) => Err(PyValueError::new_err(format!(
            "if_none_match supports only \"*\" (write only if the key is free), not {other:?}"
        ))),
    }
}
