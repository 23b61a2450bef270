//! `delete` and `delete_many`.

use pyo3::prelude::*;

use crate::aio;
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::runtime::wait;

#[pymethods]
impl Client {
    /// Deletes an object (a missing key is not an error, as in S3).
    fn delete(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<()> {
        let client = self.inner();
        wait(py, client.delete(bucket, key))?.py_err(py)
    }

    /// `delete` as a coroutine.
    fn delete_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.delete(&bucket, &key).await },
            |py, ()| Ok(py.None()),
        )
    }

    /// Deletes keys in batches of 1,000; returns (key, code) for the keys not deleted.
    fn delete_many(
        &self,
        py: Python<'_>,
        bucket: &str,
        keys: Vec<String>,
    ) -> PyResult<Vec<(String, String)>> {
        let client = self.inner();
        wait(py, delete_keys(&client, bucket, &keys))?.py_err(py)
    }

    /// `delete_many` as a coroutine.
    fn delete_many_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        keys: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { delete_keys(&client, &bucket, &keys).await },
            aio::value,
        )
    }
}

/// Deletes `keys` (in batches of 1,000): the key and error code of each one not deleted.
async fn delete_keys(
    client: &brisk_client::Client,
    bucket: &str,
    keys: &[String],
) -> brisk_client::Result<Vec<(String, String)>> {
    let result = client.delete_many(bucket, keys).await?;
    Ok(result.errors.into_iter().map(|e| (e.key, e.code)).collect())
}
