//! `upload`: a file on disk stored as an object.

use std::path::{Path, PathBuf};

use brisk_client::{TransferOptions, TransferProgress};
use pyo3::prelude::*;

use crate::aio;
use crate::args::{Headers, Metadata};
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::progress::Progress;
use crate::runtime::spawn_wait;
use crate::types::UploadResult;

#[pymethods]
impl Client {
    /// Uploads a file: one PUT, or a multipart upload from pooled blocks. `if_none_match="*"`
    /// stores it only if the key is free, checked on the PUT or on the multipart upload's
    /// completion (`PreconditionFailed` otherwise, and nothing is left behind).
    #[pyo3(signature = (path, bucket, key, *, progress=None, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn upload(
        &self,
        py: Python<'_>,
        path: PathBuf,
        bucket: String,
        key: String,
        progress: Option<Py<PyAny>>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<UploadResult> {
        let client = self.inner();
        let (options, counter, mut progress) = self.file_upload(
            &path,
            progress,
            content_type,
            metadata,
            headers,
            if_none_match,
        )?;
        let job = async move { client.upload(&bucket, &key, &path, options).await };
        let result = spawn_wait(py, job, |py| progress.report(py, counter.bytes()))?.py_err(py)?;
        progress.finish(py, result.size)?;
        Ok(result.into())
    }

    /// `upload` as a coroutine; `progress(bytes_sent, total)` is called from brisk's runtime (not
    /// the event loop) at most every 0.1 s and once at the end.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, bucket, key, *, progress=None, content_type=None, if_none_match=None, metadata=None, headers=None))]
    fn upload_async<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        bucket: String,
        key: String,
        progress: Option<Py<PyAny>>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        let (options, counter, mut progress) = self.file_upload(
            &path,
            progress,
            content_type,
            metadata,
            headers,
            if_none_match,
        )?;
        aio::spawn_with(
            py,
            async move {
                let job = client.upload(&bucket, &key, &path, options);
                let result = aio::report_while(job, &counter, &mut progress).await?;
                aio::in_python(|py| progress.finish(py, result.size))?;
                Ok::<_, PyErr>(result)
            },
            |py, r| aio::value(py, UploadResult::from(r)),
        )
    }
}

impl Client {
    /// What `upload` and `upload_async` start with: the upload's options with a counter of the
    /// bytes sent, and the caller's callback with the file's size as the total.
    fn file_upload(
        &self,
        path: &Path,
        progress: Option<Py<PyAny>>,
        content_type: Option<String>,
        metadata: Metadata,
        headers: Headers,
        if_none_match: Option<&str>,
    ) -> PyResult<(TransferOptions, TransferProgress, Progress)> {
        let counter = TransferProgress::new();
        let options = TransferOptions {
            progress: Some(counter.clone()),
            ..self.upload_options(content_type, metadata, headers, if_none_match)?
        };
        let total = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        Ok((options, counter, Progress::new(progress, Some(total))))
    }
}
