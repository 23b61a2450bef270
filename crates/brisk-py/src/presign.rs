//! `presign`: a URL that lets its holder make one request without credentials.

use std::time::SystemTime;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::args::seconds;
use crate::client::Client;
use crate::errors::IntoPyResult;

#[pymethods]
impl Client {
    /// A presigned URL for `method` on the object, valid for `expires_in` seconds (1 s to 7 days).
    #[pyo3(signature = (bucket, key, *, method="GET", expires_in=3600.0))]
    fn presign(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        method: &str,
        expires_in: f64,
    ) -> PyResult<String> {
        let method = method.to_ascii_uppercase();
        if !matches!(method.as_str(), "GET" | "PUT" | "HEAD" | "DELETE") {
            return Err(PyValueError::new_err(format!(
                "method is GET, PUT, HEAD or DELETE, not {method:?}"
            )));
        }
        let expires = seconds(expires_in, "expires_in")?;
        self.inner()
            .presign(&method, bucket, key, expires, SystemTime::now())
            .py_err(py)
    }
}
