//! `create_bucket`, `delete_bucket` and `list_buckets`.

use pyo3::prelude::*;

use crate::aio;
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::runtime::wait;

#[pymethods]
impl Client {
    /// Creates a bucket in the client's region.
    fn create_bucket(&self, py: Python<'_>, bucket: &str) -> PyResult<()> {
        let client = self.inner();
        wait(py, client.create_bucket(bucket))?.py_err(py)
    }

    /// `create_bucket` as a coroutine.
    fn create_bucket_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.create_bucket(&bucket).await },
            |py, ()| Ok(py.None()),
        )
    }

    /// Deletes an empty bucket.
    fn delete_bucket(&self, py: Python<'_>, bucket: &str) -> PyResult<()> {
        let client = self.inner();
        wait(py, client.delete_bucket(bucket))?.py_err(py)
    }

    /// `delete_bucket` as a coroutine.
    fn delete_bucket_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.delete_bucket(&bucket).await },
            |py, ()| Ok(py.None()),
        )
    }

    /// The names of the buckets the credentials own.
    fn list_buckets(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let client = self.inner();
        wait(py, bucket_names(&client))?.py_err(py)
    }

    /// `list_buckets` as a coroutine.
    fn list_buckets_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(py, async move { bucket_names(&client).await }, aio::value)
    }
}

/// The names of the buckets the credentials own.
async fn bucket_names(client: &brisk_client::Client) -> brisk_client::Result<Vec<String>> {
    let buckets = client.list_buckets().await?;
    Ok(buckets.into_iter().map(|b| b.name).collect())
}
