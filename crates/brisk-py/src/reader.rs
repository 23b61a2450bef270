//! `brisk.ObjectReader`: an object opened as a binary file for reading, over one streamed GET.
//!
//! What `Client.open_reader` returns, and what `brisk.fsspec` switches to once a file is read front
//! to back: each `read`/`readinto` continues the same response, so reading a 1 GiB CSV is one
//! request however small the reads, where fetching block by block costs a request (and, on a real
//! network, a round trip) per block. `readinto` reads from the socket straight into the caller's
//! buffer; `read(n)` into a new `bytes` of `n`. Memory is one connection's, whatever the size.
//!
//! `seek` forward by at most [`SKIP_LIMIT`] reads and drops the bytes in between (cheaper than a
//! new request); any other seek drops the response, and the next read starts a new one from there
//! (`Range: bytes=N-`, pinned to the object's ETag, so a changed object is `ObjectChanged`). Read
//! from the start to the end without a seek, the object's stored checksum is checked at the end.

use std::sync::{Mutex, MutexGuard, TryLockError};

use brisk_client::ObjectStream;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::WritableBuffer;
use crate::errors::IntoPyResult;
use crate::runtime::wait;

/// A forward seek of at most this many bytes reads through them on the open response (1 MiB:
/// on loopback a new request costs about what reading 1 MiB does; on a real network far more).
pub const SKIP_LIMIT: u64 = 1024 * 1024;

/// An object opened for reading (see the module docs).
#[pyclass(module = "brisk", frozen)]
#[derive(Debug)]
pub struct ObjectReader {
    client: brisk_client::Client,
    bucket: String,
    key: String,
    size: u64,
    etag: Option<String>,
    state: Mutex<ReaderState>,
}

#[derive(Debug)]
struct ReaderState {
    /// The response being read, positioned at `pos`; none after a seek, a failure or the end.
    stream: Option<ObjectStream>,
    pos: u64,
    closed: bool,
}

impl ObjectReader {
    /// Opens `bucket`/`key` at `offset` (the response head has arrived).
    pub fn open(
        py: Python<'_>,
        client: brisk_client::Client,
        bucket: &str,
        key: &str,
        offset: u64,
    ) -> PyResult<Self> {
        let stream = wait(py, client.get_stream_from(bucket, key, offset))?.py_err(py)?;
        let size = offset + stream.content_length();
        let etag = stream.etag().map(str::to_owned);
        Ok(Self {
            client,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            size,
            etag,
            state: Mutex::new(ReaderState {
                stream: Some(stream),
                pos: offset,
                closed: false,
            }),
        })
    }

    fn state(&self) -> PyResult<MutexGuard<'_, ReaderState>> {
        let state = match self.state.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err(
                    "this ObjectReader is in use by another thread; a reader takes one thread at a time",
                ));
            }
        };
        if state.closed {
            return Err(PyValueError::new_err(format!(
                "I/O operation on a closed ObjectReader ({}/{})",
                self.bucket, self.key
            )));
        }
        Ok(state)
    }

    /// Fills `dst` from `state.pos` (fewer bytes only at the end of the object), starting a
    /// response if none is open. A failure or an interruption drops the response: the next read
    /// starts a new one from the position, which counts only bytes that arrived.
    fn fill(&self, py: Python<'_>, state: &mut ReaderState, dst: &mut [u8]) -> PyResult<usize> {
        let want = dst.len().min((self.size - state.pos) as usize);
        let mut filled = 0;
        while filled < want {
            if state.stream.is_none() {
                let etag = self.etag.as_deref().unwrap_or_default();
                let opened = wait(
                    py,
                    self.client.get_range_stream(
                        &self.bucket,
                        &self.key,
                        etag,
                        state.pos,
                        self.size - state.pos,
                    ),
                )?
                .py_err(py)?;
                state.stream = Some(opened);
            }
            let stream = state.stream.as_mut().expect("opened above");
            // Sleep until the socket holds what this read wants (or the rest of the object), not
            // for every segment that arrives.
            stream.wake_after(want - filled);
            let read = wait(py, stream.read(&mut dst[filled..want]));
            match read {
                Ok(Ok(0)) => {
                    state.stream = None;
                    return Err(PyRuntimeError::new_err(format!(
                        "{}/{} ended at byte {} of {}",
                        self.bucket, self.key, state.pos, self.size
                    )));
                }
                Ok(Ok(n)) => {
                    filled += n;
                    state.pos += n as u64;
                }
                Ok(Err(e)) => {
                    state.stream = None;
                    return Err(e).py_err(py);
                }
                Err(interrupted) => {
                    state.stream = None;
                    return Err(interrupted);
                }
            }
        }
        if state.pos == self.size {
            // The end: a whole-object stream checks its checksum here, and gives its connection
            // back to the pool.
            if let Some(mut stream) = state.stream.take() {
                wait(py, stream.read(&mut [0u8; 1]))?.py_err(py)?;
            }
        }
        Ok(filled)
    }
}

#[pymethods]
impl ObjectReader {
    /// Reads into a writable C-contiguous buffer until it is full or the object ends; returns
    /// the bytes read (0 at the end).
    fn readinto(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let dst = WritableBuffer::get(buffer, "buffer")?;
        let mut state = self.state()?;
        self.fill(py, &mut state, dst.as_mut_slice())
    }

    /// Up to `size` bytes (all that is left when `size` is negative or omitted) as `bytes`;
    /// `b""` at the end.
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        let mut state = self.state()?;
        let left = self.size - state.pos;
        let n = if size < 0 {
            left
        } else {
            (size as u64).min(left)
        };
        let n = usize::try_from(n)
            .map_err(|_| PyValueError::new_err("the read is larger than this platform's memory"))?;
        PyBytes::new_with(py, n, |bytes| {
            // The new bytes object is not visible to other Python code until this returns, so the
            // GIL may be released while it is filled (as CPython's FileIO.read does).
            self.fill(py, &mut state, bytes).map(|_| ())
        })
    }

    /// Everything left, as `bytes`.
    fn readall<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.read(py, -1)
    }

    /// Moves to `offset` from the start (`whence` 0), the current position (1) or the end (2);
    /// returns the new position. Nothing is requested until the next read.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        let mut state = self.state()?;
        let base = match whence {
            0 => 0i128,
            1 => i128::from(state.pos),
            2 => i128::from(self.size),
            _ => return Err(PyValueError::new_err(format!("invalid whence ({whence})"))),
        };
        let target = base + i128::from(offset);
        if target < 0 {
            return Err(PyValueError::new_err(format!(
                "negative seek position {target}"
            )));
        }
        let target = u64::try_from(target).unwrap_or(u64::MAX);
        if target == state.pos {
            return Ok(target);
        }
        let ahead = target.saturating_sub(state.pos);
        if target > state.pos
            && ahead <= SKIP_LIMIT
            && state.stream.is_some()
            && target <= self.size
        {
            let mut scratch = vec![0u8; ahead as usize];
            self.fill(py, &mut state, &mut scratch)?;
            return Ok(state.pos);
        }
        state.stream = None;
        state.pos = target.min(self.size);
        // A position past the end reads nothing, as with a file; tell() says where it is.
        Ok(target)
    }

    fn tell(&self) -> PyResult<u64> {
        Ok(self.state()?.pos)
    }

    fn readable(&self) -> bool {
        true
    }

    fn seekable(&self) -> bool {
        true
    }

    fn writable(&self) -> bool {
        false
    }

    /// Drops the response (its connection is closed if bytes were left unread).
    fn close(&self) {
        if let Ok(mut state) = self.state.try_lock() {
            state.stream = None;
            state.closed = true;
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.state.try_lock().map(|s| s.closed).unwrap_or(false)
    }

    /// The object's size in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.size
    }

    #[getter]
    fn etag(&self) -> Option<&str> {
        self.etag.as_deref()
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

    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let at = self
            .state
            .try_lock()
            .map(|s| format!("at {} of {}", s.pos, self.size))
            .unwrap_or_else(|_| "in use".to_owned());
        format!("<brisk.ObjectReader {}/{}: {at}>", self.bucket, self.key)
    }
}
