//! `copy`: a server-side copy.

use brisk_client::CopyOptions;
use pyo3::prelude::*;

use crate::aio;
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::runtime::wait;

#[pymethods]
impl Client {
    /// Server-side copy; returns the new ETag.
    fn copy(
        &self,
        py: Python<'_>,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
    ) -> PyResult<Option<String>> {
        let client = self.inner();
        let job = client.copy_object(
            src_bucket,
            src_key,
            dst_bucket,
            dst_key,
            CopyOptions::default(),
        );
        Ok(Some(wait(py, job)?.py_err(py)?.etag))
    }

    /// `copy` as a coroutine.
    fn copy_async<'py>(
        &self,
        py: Python<'py>,
        src_bucket: String,
        src_key: String,
        dst_bucket: String,
        dst_key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move {
                client
                    .copy_object(
                        &src_bucket,
                        &src_key,
                        &dst_bucket,
                        &dst_key,
                        CopyOptions::default(),
                    )
                    .await
            },
            |py, r| aio::value(py, r.etag),
        )
    }
}
