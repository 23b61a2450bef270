//! `brisk.ObjectWriter`: a binary file opened for writing whose bytes become an object.
//!
//! What `Client.open_writer` returns, and what `brisk.fsspec` writes through: `write()` copies into
//! a pooled part (with the GIL held while the part has room, which is most writes), and full parts
//! are sent on the runtime's workers while Python goes on writing. Memory is bounded by the
//! client's `parts_in_flight` and budget, whatever the object's size; nothing is spooled to disk.
//!
//! Only `close()` (or leaving a `with` block normally) stores the object. An exception in the
//! `with` block, `abort()`, a failed write or the writer being garbage-collected unclosed aborts
//! the upload, and nothing is stored: a file object that is dropped half-written should not leave a
//! truncated object behind.
//!
//! `brisk.AsyncObjectWriter` (`Client.open_writer_async`) is the same writer for asyncio: `write`,
//! `close`, `abort` and `flush` are awaitables. A write that fits in the part being filled is
//! copied at once and its awaitable is already done; one that fills a part sends it from a task on
//! brisk's runtime. A cancelled write fails the writer, so that `close` aborts instead of storing
//! what it may have lost.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use brisk_client::TransferOptions;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::aio;
use crate::args::{Headers, Metadata};
use crate::buffer::ReadableBuffer;
use crate::client::Client;
use crate::errors::{self, IntoPyResult};
use crate::runtime::{runtime, wait};
use crate::types::UploadResult;

/// An object being written (see the module docs).
#[pyclass(module = "brisk", frozen)]
#[derive(Debug)]
pub struct ObjectWriter {
    bucket: String,
    key: String,
    state: Mutex<WriterState>,
}

#[derive(Debug)]
struct WriterState {
    /// The upload; none once closed or aborted.
    writer: Option<brisk_client::ObjectWriter>,
    /// Bytes written, kept after close for `tell()`.
    written: u64,
    result: Option<brisk_client::UploadResult>,
    /// Set while an awaitable write runs: found set by the next call, it means that write was
    /// cancelled (its task dropped, perhaps before it started), and its bytes may be lost.
    writing: bool,
}

impl Drop for WriterState {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            // Unclosed: abort. The Rust writer's drop spawns the abort on the runtime it finds.
            let runtime = runtime();
            let _inside = runtime.enter();
            drop(writer);
        }
    }
}

impl ObjectWriter {
    pub fn new(bucket: &str, key: &str, writer: brisk_client::ObjectWriter) -> Self {
        Self {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            state: Mutex::new(WriterState {
                writer: Some(writer),
                written: 0,
                result: None,
                writing: false,
            }),
        }
    }

    /// The state, or an error when another thread is using this writer: waiting for it here,
    /// with the GIL held, could deadlock with that thread taking the GIL back between its waits.
    fn state(&self) -> PyResult<MutexGuard<'_, WriterState>> {
        match self.state.try_lock() {
            Ok(guard) => Ok(guard),
            Err(TryLockError::Poisoned(e)) => Ok(e.into_inner()),
            Err(TryLockError::WouldBlock) => Err(PyRuntimeError::new_err(
                "this ObjectWriter is in use by another thread; a writer takes one thread at a time",
            )),
        }
    }

    fn closed_error(&self) -> PyErr {
        PyValueError::new_err(format!(
            "I/O operation on a closed ObjectWriter ({}/{})",
            self.bucket, self.key
        ))
    }
}

/// Aborts `state`'s upload after a failure, so that nothing is stored; the failure is what the
/// caller sees, so the abort's own outcome is not reported.
fn abort_after_failure(py: Python<'_>, state: &mut WriterState) {
    if let Some(writer) = state.writer.take() {
        let _ = wait(py, writer.abort());
    }
}

#[pymethods]
impl ObjectWriter {
    /// Writes `data` (any C-contiguous buffer); returns its length. A failure aborts the upload.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let data = ReadableBuffer::get(data)?;
        let bytes = data.as_slice();
        let mut state = self.state()?;
        let writer = state.writer.as_mut().ok_or_else(|| self.closed_error())?;
        let copied = writer.write_buffered(bytes);
        if copied < bytes.len() {
            let rest = &bytes[copied..];
            let outcome = wait(py, writer.write(rest)).and_then(|r| r.py_err(py));
            if let Err(e) = outcome {
                abort_after_failure(py, &mut state);
                return Err(e);
            }
        }
        state.written += bytes.len() as u64;
        Ok(bytes.len())
    }

    /// Sends what is left and stores the object (once; later calls do nothing).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut state = self.state()?;
        let Some(writer) = state.writer.take() else {
            return Ok(());
        };
        let result = wait(py, writer.finish())?.py_err(py)?;
        state.result = Some(result);
        Ok(())
    }

    /// Gives up: nothing is stored (parts already sent are discarded).
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let mut state = self.state()?;
        match state.writer.take() {
            Some(writer) => wait(py, writer.abort())?.py_err(py),
            None => Ok(()),
        }
    }

    /// Bytes written so far.
    fn tell(&self) -> PyResult<u64> {
        Ok(self.state()?.written)
    }

    /// Nothing to do: a part is sent when it is full, and the rest on `close()` (S3 takes no
    /// part smaller than 5 MiB but the last).
    fn flush(&self) -> PyResult<()> {
        let state = self.state()?;
        if state.writer.is_none() && state.result.is_none() {
            return Err(self.closed_error());
        }
        Ok(())
    }

    fn writable(&self) -> bool {
        true
    }

    fn readable(&self) -> bool {
        false
    }

    fn seekable(&self) -> bool {
        false
    }

    #[getter]
    fn closed(&self) -> PyResult<bool> {
        Ok(self.state()?.writer.is_none())
    }

    /// What `close()` stored (ETag, size, parts), or None before it.
    #[getter]
    fn result(&self) -> PyResult<Option<UploadResult>> {
        Ok(self.state()?.result.clone().map(UploadResult::from))
    }

    #[getter]
    fn bucket(&self) -> &str {
        &self.bucket
    }

    #[getter]
    fn key(&self) -> &str {
        &self.key
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Stores the object if the block ended normally, aborts the upload if it raised.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match exc_type {
            Some(t) if !t.is_none() => self.abort(py)?,
            _ => self.close(py)?,
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = self.state.try_lock();
        let what = match state.as_deref() {
            Ok(s) if s.writer.is_some() => format!("{} bytes written", s.written),
            Ok(s) if s.result.is_some() => format!("closed, {} bytes stored", s.written),
            Ok(_) => "aborted".to_owned(),
            Err(_) => "in use".to_owned(),
        };
        format!("<brisk.ObjectWriter {}/{}: {what}>", self.bucket, self.key)
    }
}

/// Why a writer whose write was cancelled stores nothing.
fn cancelled_write() -> brisk_client::Error {
    brisk_client::Error::InvalidArgument {
        what: "an earlier write was cancelled before it finished; nothing will be stored".into(),
    }
}

/// An object being written from asyncio (see the module docs).
#[pyclass(module = "brisk", frozen)]
#[derive(Debug)]
pub struct AsyncObjectWriter {
    bucket: String,
    key: String,
    state: Arc<tokio::sync::Mutex<WriterState>>,
}

impl AsyncObjectWriter {
    pub fn new(bucket: &str, key: &str, writer: brisk_client::ObjectWriter) -> Self {
        Self {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            state: Arc::new(tokio::sync::Mutex::new(WriterState {
                writer: Some(writer),
                written: 0,
                result: None,
                writing: false,
            })),
        }
    }

    /// The state, or an error while a write is in flight (an awaitable not yet awaited to its
    /// end: writes go one at a time, in order).
    fn state(&self) -> PyResult<tokio::sync::OwnedMutexGuard<WriterState>> {
        Arc::clone(&self.state).try_lock_owned().map_err(|_| {
            PyRuntimeError::new_err(
                "this AsyncObjectWriter has an operation in flight; await it before the next one",
            )
        })
    }

    fn closed_error(&self) -> PyErr {
        PyValueError::new_err(format!(
            "I/O operation on a closed AsyncObjectWriter ({}/{})",
            self.bucket, self.key
        ))
    }

    /// An awaitable that waits for an operation in flight, then takes the writer out and ends it
    /// with `end` (finish, `storing`, or abort); `None` once done, and nothing to do if it was
    /// ended before.
    fn end<'py, F>(
        &self,
        py: Python<'py>,
        storing: bool,
        end: impl FnOnce(brisk_client::ObjectWriter) -> F + Send + 'static,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        F: std::future::Future<Output = brisk_client::Result<Option<brisk_client::UploadResult>>>
            + Send,
    {
        let state = Arc::clone(&self.state);
        aio::spawn(
            py,
            async move {
                let mut state = state.lock_owned().await;
                let Some(writer) = state.writer.take() else {
                    return Ok(());
                };
                if state.writing {
                    // A cancelled write: what it was given may be lost, so nothing is stored
                    // (which an abort asked for anyway).
                    let aborted = writer.abort().await;
                    return if storing {
                        Err(cancelled_write())
                    } else {
                        aborted
                    };
                }
                if let Some(result) = end(writer).await? {
                    state.result = Some(result);
                }
                Ok(())
            },
            |py, ()| Ok(py.None()),
        )
    }
}

#[pymethods]
impl AsyncObjectWriter {
    /// Awaitable: writes `data` (any C-contiguous buffer, held until the write is done); its
    /// length. A failure aborts the upload.
    fn write<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let data = ReadableBuffer::get(data)?;
        let mut state = self.state()?;
        if state.writing {
            return Err(errors::to_py(py, cancelled_write()));
        }
        let writer = state.writer.as_mut().ok_or_else(|| self.closed_error())?;
        let len = data.as_slice().len();
        let copied = writer.write_buffered(data.as_slice());
        if copied == len {
            state.written += len as u64;
            return aio::ready(py, len.into_pyobject(py)?.into_any().unbind());
        }
        // Cleared by the task when it ends; a task dropped before (a cancelled awaitable) leaves
        // it set, which fails the writer.
        state.writing = true;
        aio::spawn(
            py,
            async move {
                let writer = state.writer.as_mut().expect("checked before the task");
                let written = writer.write(&data.as_slice()[copied..]).await;
                state.writing = false;
                if let Err(e) = written {
                    if let Some(writer) = state.writer.take() {
                        let _ = writer.abort().await;
                    }
                    return Err(e);
                }
                state.written += len as u64;
                Ok(len)
            },
            |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
        )
    }

    /// Awaitable: sends what is left and stores the object (once; later calls do nothing).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.end(
            py,
            true,
            |writer| async move { writer.finish().await.map(Some) },
        )
    }

    /// Awaitable: gives up; nothing is stored (parts already sent are discarded).
    fn abort<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.end(py, false, |writer| async move {
            writer.abort().await.map(|()| None)
        })
    }

    /// Awaitable that does nothing: a part is sent when it is full, and the rest on `close()`.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = self.state()?;
        if state.writer.is_none() && state.result.is_none() {
            return Err(self.closed_error());
        }
        aio::ready(py, py.None())
    }

    /// Bytes written so far.
    fn tell(&self) -> PyResult<u64> {
        Ok(self.state()?.written)
    }

    fn writable(&self) -> bool {
        true
    }

    fn readable(&self) -> bool {
        false
    }

    fn seekable(&self) -> bool {
        false
    }

    #[getter]
    fn closed(&self) -> bool {
        self.state
            .try_lock()
            .map(|s| s.writer.is_none())
            .unwrap_or(false)
    }

    /// What `close()` stored (ETag, size, parts), or None before it.
    #[getter]
    fn result(&self) -> PyResult<Option<UploadResult>> {
        Ok(self.state()?.result.clone().map(UploadResult::from))
    }

    #[getter]
    fn bucket(&self) -> &str {
        &self.bucket
    }

    #[getter]
    fn key(&self) -> &str {
        &self.key
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        aio::ready(py, slf.into_any().unbind())
    }

    /// Awaitable: stores the object if the block ended normally, aborts the upload if it raised.
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: Option<&Bound<'py, PyAny>>,
        _exc_value: Option<&Bound<'py, PyAny>>,
        _traceback: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match exc_type {
            Some(t) if !t.is_none() => self.abort(py),
            _ => self.close(py),
        }
    }

    fn __repr__(&self) -> String {
        let state = self.state.try_lock();
        let what = match state.as_deref() {
            Ok(s) if s.writer.is_some() => format!("{} bytes written", s.written),
            Ok(s) if s.result.is_some() => format!("closed, {} bytes stored", s.written),
            Ok(_) => "aborted".to_owned(),
            Err(_) => "in use".to_owned(),
        };
        format!(
            "<brisk.AsyncObjectWriter {}/{}: {what}>",
            self.bucket, self.key
        )
    }
}

#[pymethods]
impl Client {
    /// A binary file opened for writing whose bytes become `bucket`/`key` on `close()`, in
    /// bounded memory whatever its size (see `brisk.ObjectWriter`). With `if_none_match="*"`,
    /// `close()` stores it only if the key is still free then.
    #[pyo3(signature = (bucket, key, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn open_writer(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<ObjectWriter> {
        let options = self.upload_options(content_type, metadata, headers, if_none_match)?;
        let writer = self.start_writer(py, bucket, key, options)?;
        Ok(ObjectWriter::new(bucket, key, writer))
    }

    /// `open_writer` as a coroutine: a `brisk.AsyncObjectWriter` (awaitable `write`, `close`,
    /// `abort`; `async with`). Nothing is sent until the first part is full.
    #[pyo3(signature = (bucket, key, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn open_writer_async<'py>(
        &self,
        py: Python<'py>,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = self.upload_options(content_type, metadata, headers, if_none_match)?;
        let writer = self.start_writer(py, bucket, key, options)?;
        let writer = Py::new(py, AsyncObjectWriter::new(bucket, key, writer))?;
        aio::ready(py, writer.into_any())
    }
}

impl Client {
    /// The Rust client's writer of `bucket`/`key` (nothing is sent until a part is full): what
    /// `open_writer`, `upload_fileobj` and their asyncio forms write through.
    pub(crate) fn start_writer(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        options: TransferOptions,
    ) -> PyResult<brisk_client::ObjectWriter> {
        self.inner().object_writer(bucket, key, options).py_err(py)
    }
}
