//! `put`: one object from a buffer, in one PUT.

use brisk_client::PutOptions;
use pyo3::prelude::*;

use crate::aio;
use crate::args::{Headers, Metadata, if_none_match_arg, object_headers};
use crate::buffer::ReadableBuffer;
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::runtime::wait;
use crate::types::PutResult;

#[pymethods]
impl Client {
    /// Stores `data` (any C-contiguous buffer) in one PUT, sent from where it is.
    #[pyo3(signature = (bucket, key, data, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        data: &Bound<'_, PyAny>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<PutResult> {
        let options = self.put_options(content_type, metadata, headers, if_none_match)?;
        let data = ReadableBuffer::get(data)?;
        let client = self.inner();
        let result = wait(py, client.put_with(bucket, key, data.as_slice(), &options))?;
        Ok(put_result(result.py_err(py)?))
    }

    /// `put` as a coroutine (the data is held until it completes).
    #[pyo3(signature = (bucket, key, data, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn put_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        data: &Bound<'py, PyAny>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = self.put_options(content_type, metadata, headers, if_none_match)?;
        let data = ReadableBuffer::get(data)?;
        let client = self.inner();
        aio::spawn(
            py,
            async move {
                client
                    .put_with(&bucket, &key, data.as_slice(), &options)
                    .await
            },
            |py, r| aio::value(py, put_result(r)),
        )
    }
}

impl Client {
    /// A PUT's options: what to store with the object, whether the key must be free, and the
    /// client's payload signing.
    fn put_options(
        &self,
        content_type: Option<String>,
        metadata: Metadata,
        headers: Headers,
        if_none_match: Option<&str>,
    ) -> PyResult<PutOptions> {
        Ok(PutOptions {
            content_type,
            headers: object_headers(metadata, headers)?,
            if_none_match_any: if_none_match_arg(if_none_match)?,
            payload_signing: self.payload_signing(),
            ..PutOptions::default()
        })
    }
}

fn put_result(r: brisk_client::PutResult) -> PutResult {
    PutResult {
        etag: r.etag,
        checksum: r.checksum,
        checksum_algorithm: r.checksum_algorithm.algorithm().s3_name().to_owned(),
    }
}
