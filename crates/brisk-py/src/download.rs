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
        // The total is the size given, or comes from a HEAD: one small request more, made only to
        // report progress.
        let total = match size {
            Some(size) => size,
            None => {
                wait(py, client.head(&bucket, &key))?
                    .py_err(py)?
                    .content_length
            }
        };
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
                |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
            );
        };
        let counter = TransferProgress::new();
        let options = self.download_options(Some(counter.clone()), size);
        aio::spawn_with(
            py,
            async move {
                // The total is the size given, or comes from a HEAD, as for `download`.
                let total = match size {
                    Some(size) => size,
                    None => {
                        let head = client.head(&bucket, &key).await;
                        head.map_err(aio::py_error)?.content_length
                    }
                };
                let mut progress = Progress::new(Some(callback), Some(total));
                let job = client.download(&bucket, &key, &path, options);
                let size = aio::report_while(job, &counter, &mut progress).await?;
                aio::in_python(|py| progress.finish(py, size))?;
                Ok::<_, PyErr>(size)
            },
            |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
        )
    }
}
