//! `get`, `get_into` and `get_range`: one object, or one range of it, in one buffer.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::aio;
use crate::buffer::{Buffer, WritableBuffer};
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::runtime::wait;

#[pymethods]
impl Client {
    /// The whole object in one buffer of exactly its size.
    fn get(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<Buffer> {
        let client = self.inner();
        let buf = wait(py, client.get_bytes(bucket, key))?.py_err(py)?;
        Ok(Buffer::exact(buf))
    }

    /// `get` as a coroutine.
    fn get_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.get_bytes(&bucket, &key).await },
            |py, buf| Ok(Py::new(py, Buffer::exact(buf))?.into_any()),
        )
    }

    /// Reads into a writable C-contiguous buffer; returns the bytes read.
    #[pyo3(signature = (bucket, key, buffer, *, offset=0, length=None))]
    fn get_into(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        buffer: &Bound<'_, PyAny>,
        offset: u64,
        length: Option<usize>,
    ) -> PyResult<usize> {
        let dst = WritableBuffer::get(buffer, "buffer")?;
        let len = into_length(&dst, length)?;
        let client = self.inner();
        let slice = &mut dst.as_mut_slice()[..len];
        let read = if offset == 0 && length.is_none() {
            wait(py, client.get_into(bucket, key, slice))?
        } else {
            wait(py, client.get_range_into(bucket, key, offset, slice))?
        };
        read.py_err(py)
    }

    /// `get_into` as a coroutine (the buffer is held until it completes).
    #[pyo3(signature = (bucket, key, buffer, *, offset=0, length=None))]
    fn get_into_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        buffer: &Bound<'py, PyAny>,
        offset: u64,
        length: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dst = WritableBuffer::get(buffer, "buffer")?;
        let len = into_length(&dst, length)?;
        let whole = offset == 0 && length.is_none();
        let client = self.inner();
        aio::spawn(
            py,
            async move {
                let slice = &mut dst.as_mut_slice()[..len];
                if whole {
                    client.get_into(&bucket, &key, slice).await
                } else {
                    client.get_range_into(&bucket, &key, offset, slice).await
                }
            },
            |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
        )
    }

    /// `length` bytes from `offset` (fewer at the end of the object) in one exact buffer. With
    /// `wait=False`, None (and no request) when the memory budget would make the call wait, for
    /// a reader whose consumer may hold every Buffer it was given (see `brisk.fsspec`).
    #[pyo3(signature = (bucket, key, offset, length, *, wait=true))]
    fn get_range(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        offset: u64,
        length: usize,
        wait: bool,
    ) -> PyResult<Option<Buffer>> {
        let client = self.inner();
        if !wait {
            let read =
                crate::runtime::wait(py, client.try_get_range_bytes(bucket, key, offset, length))?;
            return Ok(read
                .py_err(py)?
                .map(|(buf, n)| Buffer::exact_prefix(buf, n)));
        }
        let (buf, n) =
            crate::runtime::wait(py, client.get_range_bytes(bucket, key, offset, length))?
                .py_err(py)?;
        Ok(Some(Buffer::exact_prefix(buf, n)))
    }

    /// `get_range` as a coroutine.
    fn get_range_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        offset: u64,
        length: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.get_range_bytes(&bucket, &key, offset, length).await },
            |py, (buf, n)| Ok(Py::new(py, Buffer::exact_prefix(buf, n))?.into_any()),
        )
    }
}

/// The bytes of `dst` a `get_into` may fill: all of it, or `length` of it.
fn into_length(dst: &WritableBuffer, length: Option<usize>) -> PyResult<usize> {
    match length {
        None => Ok(dst.len()),
        Some(n) if n <= dst.len() => Ok(n),
        Some(n) => Err(PyValueError::new_err(format!(
            "length {n} is larger than the buffer ({} bytes)",
            dst.len()
        ))),
    }
}
