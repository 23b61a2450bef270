//! `get`, `get_into` and `get_range`: one object, or one range of it, in one buffer.

use brisk_mem::ExactBuf;
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
            |py, buf| aio::value(py, Buffer::exact(buf)),
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
        let read = IntoRead::new(buffer, offset, length)?;
        let client = self.inner();
        wait(py, read.run(&client, bucket, key))?.py_err(py)
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
        let read = IntoRead::new(buffer, offset, length)?;
        let client = self.inner();
        aio::spawn(
            py,
            async move { read.run(&client, &bucket, &key).await },
            aio::value,
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
        let read = read_range(&client, bucket, key, offset, length, wait);
        Ok(range_buffer(crate::runtime::wait(py, read)?.py_err(py)?))
    }

    /// `get_range` as a coroutine; with `wait=False`, None (and no request) when the memory
    /// budget would make it wait.
    #[pyo3(signature = (bucket, key, offset, length, *, wait=true))]
    fn get_range_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        offset: u64,
        length: usize,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { read_range(&client, &bucket, &key, offset, length, wait).await },
            |py, read| aio::value(py, range_buffer(read)),
        )
    }
}

/// A `get_into`: the caller's buffer, how much of it to fill, and from where.
struct IntoRead {
    dst: WritableBuffer,
    len: usize,
    offset: u64,
    /// No `offset` and no `length`: the whole object, which must fit.
    whole: bool,
}

impl IntoRead {
    fn new(buffer: &Bound<'_, PyAny>, offset: u64, length: Option<usize>) -> PyResult<Self> {
        let dst = WritableBuffer::get(buffer, "buffer")?;
        let len = into_length(&dst, length)?;
        Ok(Self {
            dst,
            len,
            offset,
            whole: offset == 0 && length.is_none(),
        })
    }

    /// Reads the object, or its bytes from the offset, into the buffer; the bytes read.
    async fn run(
        &self,
        client: &brisk_client::Client,
        bucket: &str,
        key: &str,
    ) -> brisk_client::Result<usize> {
        let slice = &mut self.dst.as_mut_slice()[..self.len];
        if self.whole {
            client.get_into(bucket, key, slice).await
        } else {
            client.get_range_into(bucket, key, self.offset, slice).await
        }
    }
}

/// A range in an exact buffer; without `wait`, None when the budget would make the read wait.
async fn read_range(
    client: &brisk_client::Client,
    bucket: &str,
    key: &str,
    offset: u64,
    length: usize,
    wait: bool,
) -> brisk_client::Result<Option<(ExactBuf, usize)>> {
    if wait {
        let read = client.get_range_bytes(bucket, key, offset, length).await?;
        Ok(Some(read))
    } else {
        client
            .try_get_range_bytes(bucket, key, offset, length)
            .await
    }
}

/// A range's bytes as the Buffer the caller gets.
fn range_buffer(read: Option<(ExactBuf, usize)>) -> Option<Buffer> {
    read.map(|(buf, n)| Buffer::exact_prefix(buf, n))
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
