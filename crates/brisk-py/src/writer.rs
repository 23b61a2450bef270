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

use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::buffer::ReadableBuffer;
use crate::errors::IntoPyResult;
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
