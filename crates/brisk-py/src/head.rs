//! `head`: an object's metadata.

use pyo3::prelude::*;

use crate::aio;
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::runtime::wait;
use crate::types::ObjectMeta;

#[pymethods]
impl Client {
    /// Metadata of an object (HEAD).
    fn head(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<ObjectMeta> {
        let client = self.inner();
        let meta = wait(py, client.head(bucket, key))?.py_err(py)?;
        ObjectMeta::new(py, meta)
    }

    /// `head` as a coroutine.
    fn head_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.head(&bucket, &key).await },
            |py, meta| aio::value(py, ObjectMeta::new(py, meta)?),
        )
    }
}
