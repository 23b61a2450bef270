//! `download`: an object written to a file on disk.

use std::path::PathBuf;

use brisk_client::TransferProgress;
use pyo3::prelude::*;

use crate::aio;
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::progress::Progress;
use crate::runtime::{spawn_wait, wait};

#[pymethods]
impl Client {
    /// Downloads to a file with parallel ranged GETs; returns the size. `size`, when the caller
    /// knows it (from a listing), makes an object of one part a single GET with no HEAD.
    #[pyo3(signature = (bucket, key, path, *, progress=None, size=None))]
    fn download(
        &self,
        py: Python<'_>,
        bucket: String,
        key: String,
        path: PathBuf,
        progress: Option<Py<PyAny>>,
        size: Option<u64>,
    ) -> PyResult<u64> {
        let client = self.inner();
        let Some(callback) = progress else {
            let options = self.download_options(None, size);
            let job = async move { client.download(&bucket, &key, &path, options).await };
            return spawn_wait(py, job, |_| Ok(()))?.py_err(py);
        };
        let total = wait(py, progress_total(&client, &bucket, &key, size))?.py_err(py)?;
        let counter = TransferProgress::new();
        let options = self.download_options(Some(counter.clone()), size);
        let mut progress = Progress::new(Some(callback), Some(total));
        let job = async move { client.download(&bucket, &key, &path, options).await };
        let size = spawn_wait(py, job, |py| progress.report(py, counter.bytes()))?.py_err(py)?;
        progress.finish(py, size)?;
        Ok(size)
    }

    /// `download` as a coroutine; `progress(bytes_done, total)` is called from brisk's runtime
    /// (not the event loop) at most every 0.1 s and once at the end.
    #[pyo3(signature = (bucket, key, path, *, progress=None, size=None))]
    #[allow(clippy::too_many_arguments)]
    fn download_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        path: PathBuf,
        progress: Option<Py<PyAny>>,
        size: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        let Some(callback) = progress else {
            let options = self.download_options(None, size);
            return aio::spawn(
                py,
                async move { client.download(&bucket, &key, &path, options).await },
                aio::value,
            );
        };
        let counter = TransferProgress::new();
        let options = self.download_options(Some(counter.clone()), size);
        aio::spawn_with(
            py,
            async move {
                let total = progress_total(&client, &bucket, &key, size).await;
                let total = total.map_err(aio::py_error)?;
                let mut progress = Progress::new(Some(callback), Some(total));
                let job = client.download(&bucket, &key, &path, options);
                let size = aio::report_while(job, &counter, &mut progress).await?;
                aio::in_python(|py| progress.finish(py, size))?;
                Ok::<_, PyErr>(size)
            },
            aio::value,
        )
    }
}

/// The total a download's progress is reported against: the size given, or the object's from a
/// HEAD, one small request more made only to report progress.
async fn progress_total(
    client: &brisk_client::Client,
    bucket: &str,
    key: &str,
    size: Option<u64>,
) -> brisk_client::Result<u64> {
    match size {
        Some(size) => Ok(size),
        None => Ok(client.head(bucket, key).await?.content_length),
    }
}
