//! `brisk.ObjectReader`: an object opened as a binary file for reading, over one streamed GET.
//!
//! What `Client.open_reader` returns, and what `brisk.fsspec` switches to once a file is read front
//! to back: each `read`/`readinto` continues the same response, so reading a 1 GiB CSV is one
//! request however small the reads, where fetching block by block costs a request (and, on a real
//! network, a round trip) per block. `readinto` reads from the socket straight into the caller's
//! buffer; `read(n)` into a new `bytes` of `n`. Memory is one connection's, whatever the size.
//!
//! `seek` makes no request: after a seek forward by at most [`SKIP_LIMIT`] the next read reads
//! through the bytes in between on the open response (cheaper than a new request); after any
//! other seek the response is dropped, and the next read starts a new one from there
//! (`Range: bytes=N-`, pinned to the object's ETag, so a changed object is `ObjectChanged`). Read
//! from the start to the end without a seek, the object's stored checksum is checked at the end.
//!
//! `brisk.AsyncObjectReader` (`Client.open_reader_async`) is the same reader for asyncio: its
//! reads are awaitables run on brisk's runtime, one at a time.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use brisk_client::ObjectStream;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::aio;
use crate::buffer::{NewBytes, WritableBuffer};
use crate::client::Client;
use crate::errors;
use crate::runtime::wait;

/// A forward seek of at most this many bytes reads through them on the open response (1 MiB:
/// on loopback a new request costs about what reading 1 MiB does; on a real network far more).
pub const SKIP_LIMIT: u64 = 1024 * 1024;

/// What a reader knows of its object, shared by the blocking and the awaitable reader.
#[derive(Debug)]
struct Opened {
    client: brisk_client::Client,
    bucket: String,
    key: String,
    size: u64,
    etag: Option<String>,
}

/// Where a reader is.
#[derive(Debug)]
struct ReaderState {
    /// The response being read, positioned at `stream_at`; none after a seek it cannot serve, a
    /// failure or the end.
    stream: Option<ObjectStream>,
    /// Where `stream` is: `pos`, or before it by a forward seek of at most [`SKIP_LIMIT`] that
    /// the next read reads through.
    stream_at: u64,
    pos: u64,
    closed: bool,
}

/// Why a read failed.
enum ReadFailure {
    Client(brisk_client::Error),
    /// The response ended before the object did.
    Ended(String),
}

impl From<brisk_client::Error> for ReadFailure {
    fn from(e: brisk_client::Error) -> Self {
        Self::Client(e)
    }
}

impl aio::TaskError for ReadFailure {
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Self::Client(e) => errors::to_py(py, e),
            Self::Ended(what) => PyRuntimeError::new_err(what),
        }
    }
}

impl Opened {
    /// Opens `bucket`/`key` at `offset` (the response head has arrived).
    async fn open(
        client: brisk_client::Client,
        bucket: String,
        key: String,
        offset: u64,
    ) -> Result<(Self, ReaderState), brisk_client::Error> {
        let stream = client.get_stream_from(&bucket, &key, offset).await?;
        let size = offset + stream.content_length();
        let etag = stream.etag().map(str::to_owned);
        let opened = Self {
            client,
            bucket,
            key,
            size,
            etag,
        };
        let state = ReaderState {
            stream: Some(stream),
            stream_at: offset,
            pos: offset,
            closed: false,
        };
        Ok((opened, state))
    }

    /// Fills `dst` from `state.pos` (fewer bytes only at the end of the object), starting a
    /// response if none is open there; moves the position past what it read. The response is
    /// held by this future while it reads and the position moves only when it is done, so a read
    /// that fails or is cancelled (the future dropped) reads nothing: the position stays, and the
    /// next read starts a new response from there.
    async fn fill(&self, state: &mut ReaderState, dst: &mut [u8]) -> Result<usize, ReadFailure> {
        let mut pos = state.pos;
        let want = dst.len().min((self.size - pos) as usize);
        let mut stream = self.catch_up(state).await?;
        let mut filled = 0;
        while filled < want {
            let open = match stream.take() {
                Some(open) => open,
                None => {
                    let etag = self.etag.as_deref().unwrap_or_default();
                    let range = self.client.get_range_stream(
                        &self.bucket,
                        &self.key,
                        etag,
                        pos,
                        self.size - pos,
                    );
                    range.await?
                }
            };
            let open = stream.insert(open);
            // Sleep until the socket holds what this read wants (or the rest of the object), not
            // for every segment that arrives.
            open.wake_after(want - filled);
            let n = open.read(&mut dst[filled..want]).await?;
            if n == 0 {
                return Err(ReadFailure::Ended(format!(
                    "{}/{} ended at byte {pos} of {}",
                    self.bucket, self.key, self.size
                )));
            }
            filled += n;
            pos += n as u64;
        }
        match stream {
            // The end: a whole-object stream checks its checksum here, and gives its connection
            // back to the pool.
            Some(mut open) if pos == self.size => {
                open.read(&mut [0u8; 1]).await?;
            }
            Some(open) => {
                state.stream = Some(open);
                state.stream_at = pos;
            }
            None => {}
        }
        state.pos = pos;
        Ok(filled)
    }

    /// The open response, taken out of `state` and moved to the position (reading through the
    /// bytes a short forward seek skipped), or none if there is no response to continue.
    async fn catch_up(&self, state: &mut ReaderState) -> Result<Option<ObjectStream>, ReadFailure> {
        let Some(mut stream) = state.stream.take() else {
            return Ok(None);
        };
        let mut scratch = [0u8; 16 * 1024];
        while state.stream_at < state.pos {
            let want = ((state.pos - state.stream_at) as usize).min(scratch.len());
            stream.wake_after(want);
            let n = stream.read(&mut scratch[..want]).await?;
            if n == 0 {
                return Err(ReadFailure::Ended(format!(
                    "{}/{} ended at byte {} of {}",
                    self.bucket, self.key, state.stream_at, self.size
                )));
            }
            state.stream_at += n as u64;
        }
        Ok(Some(stream))
    }

    /// Moves `state` to `offset` from the start (`whence` 0), the position (1) or the end (2);
    /// returns the new position. Nothing is requested: the next read reads through a short
    /// forward seek on the open response, or starts a new one.
    fn seek(&self, state: &mut ReaderState, offset: i64, whence: i32) -> PyResult<u64> {
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
        let reads_through = target >= state.stream_at
            && target - state.stream_at <= SKIP_LIMIT
            && target <= self.size;
        if !reads_through {
            state.stream = None;
        }
        // A position past the end reads nothing, as with a file.
        state.pos = target.min(self.size);
        Ok(target)
    }

    /// The byte count a `read(size)` returns from `state`: `size`, or all that is left when it is
    /// negative, never past the end.
    fn read_len(&self, state: &ReaderState, size: i64) -> PyResult<usize> {
        let left = self.size - state.pos;
        let n = if size < 0 {
            left
        } else {
            (size as u64).min(left)
        };
        usize::try_from(n)
            .map_err(|_| PyValueError::new_err("the read is larger than this platform's memory"))
    }

    fn closed_error(&self, what: &str) -> PyErr {
        PyValueError::new_err(format!(
            "I/O operation on a closed {what} ({}/{})",
            self.bucket, self.key
        ))
    }
}

/// An object opened for reading (see the module docs).
#[pyclass(module = "brisk", frozen)]
#[derive(Debug)]
pub struct ObjectReader {
    opened: Opened,
    state: Mutex<ReaderState>,
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
        let (opened, state) = wait(
            py,
            Opened::open(client, bucket.to_owned(), key.to_owned(), offset),
        )?
        .map_err(|e| errors::to_py(py, e))?;
        Ok(Self {
            opened,
            state: Mutex::new(state),
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
            return Err(self.opened.closed_error("ObjectReader"));
        }
        Ok(state)
    }

    /// [`Opened::fill`] with the GIL released (Ctrl-C drops the read, and with it the response).
    fn fill(&self, py: Python<'_>, state: &mut ReaderState, dst: &mut [u8]) -> PyResult<usize> {
        wait(py, self.opened.fill(state, dst))?.map_err(|e| aio::TaskError::into_py(e, py))
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
        let n = self.opened.read_len(&state, size)?;
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
    /// returns the new position. Nothing is requested: the next read reads through a forward
    /// seek of at most 1 MiB on the open response, or starts a new one from there.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, offset: i64, whence: i32) -> PyResult<u64> {
        let mut state = self.state()?;
        self.opened.seek(&mut state, offset, whence)
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
        self.opened.size
    }

    #[getter]
    fn etag(&self) -> Option<&str> {
        self.opened.etag.as_deref()
    }

    #[getter]
    fn bucket(&self) -> &str {
        &self.opened.bucket
    }

    #[getter]
    fn key(&self) -> &str {
        &self.opened.key
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
            .map(|s| format!("at {} of {}", s.pos, self.opened.size))
            .unwrap_or_else(|_| "in use".to_owned());
        format!(
            "<brisk.ObjectReader {}/{}: {at}>",
            self.opened.bucket, self.opened.key
        )
    }
}

/// `brisk.AsyncObjectReader`: [`ObjectReader`] for asyncio (`Client.open_reader_async`). Reads
/// are awaitables that run on brisk's runtime, the response held between them; `seek` and `tell`
/// do no I/O and need no await.
#[pyclass(module = "brisk", frozen)]
#[derive(Debug)]
pub struct AsyncObjectReader {
    opened: Arc<Opened>,
    state: Arc<tokio::sync::Mutex<ReaderState>>,
}

impl AsyncObjectReader {
    /// Opens `bucket`/`key` at `offset`: an awaitable of the reader, once the response head has
    /// arrived.
    pub fn open<'py>(
        py: Python<'py>,
        client: brisk_client::Client,
        bucket: String,
        key: String,
        offset: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        aio::spawn(
            py,
            Opened::open(client, bucket, key, offset),
            |py, (opened, state)| {
                let reader = Self {
                    opened: Arc::new(opened),
                    state: Arc::new(tokio::sync::Mutex::new(state)),
                };
                Ok(Py::new(py, reader)?.into_any())
            },
        )
    }

    /// The state for one operation, or an error if another one is in flight (an awaitable not yet
    /// awaited to its end: a reader takes one operation at a time) or the reader is closed.
    fn state(&self) -> PyResult<tokio::sync::OwnedMutexGuard<ReaderState>> {
        let state = Arc::clone(&self.state).try_lock_owned().map_err(|_| {
            PyRuntimeError::new_err(
                "this AsyncObjectReader has an operation in flight; await it before the next one",
            )
        })?;
        if state.closed {
            return Err(self.opened.closed_error("AsyncObjectReader"));
        }
        Ok(state)
    }
}

#[pymethods]
impl AsyncObjectReader {
    /// Awaitable: up to `size` bytes (all that is left when `size` is negative or omitted) as
    /// `bytes`, filled from the socket on the runtime; `b""` at the end.
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyAny>> {
        let mut state = self.state()?;
        let mut bytes = NewBytes::new(py, self.opened.read_len(&state, size)?)?;
        let opened = Arc::clone(&self.opened);
        aio::spawn_with(
            py,
            async move {
                let n = opened.fill(&mut state, bytes.as_mut_slice()).await?;
                Ok::<_, ReadFailure>((bytes, n))
            },
            |py, (bytes, n)| Ok(bytes.into_bytes(py, n)),
        )
    }

    /// Awaitable: everything left, as `bytes`.
    fn readall<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.read(py, -1)
    }

    /// Awaitable: reads into a writable C-contiguous buffer (held until it completes) until it
    /// is full or the object ends; the bytes read (0 at the end).
    fn readinto<'py>(
        &self,
        py: Python<'py>,
        buffer: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dst = WritableBuffer::get(buffer, "buffer")?;
        let mut state = self.state()?;
        let opened = Arc::clone(&self.opened);
        aio::spawn_with(
            py,
            async move { opened.fill(&mut state, dst.as_mut_slice()).await },
            |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
        )
    }

    /// Moves to `offset` from the start (`whence` 0), the current position (1) or the end (2);
    /// returns the new position. No I/O: the next read reads through a forward seek of at most
    /// 1 MiB on the open response, or starts a new one from there.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, offset: i64, whence: i32) -> PyResult<u64> {
        let mut state = self.state()?;
        self.opened.seek(&mut state, offset, whence)
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

    /// Awaitable: drops the response (its connection is closed if bytes were left unread), once
    /// an operation in flight has ended.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = Arc::clone(&self.state);
        aio::spawn_with(
            py,
            async move {
                let mut state = state.lock_owned().await;
                state.stream = None;
                state.closed = true;
                Ok::<_, PyErr>(())
            },
            |py, ()| Ok(py.None()),
        )
    }

    #[getter]
    fn closed(&self) -> bool {
        self.state.try_lock().map(|s| s.closed).unwrap_or(false)
    }

    /// The object's size in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.opened.size
    }

    #[getter]
    fn etag(&self) -> Option<&str> {
        self.opened.etag.as_deref()
    }

    #[getter]
    fn bucket(&self) -> &str {
        &self.opened.bucket
    }

    #[getter]
    fn key(&self) -> &str {
        &self.opened.key
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        aio::ready(py, slf.into_any().unbind())
    }

    /// Awaitable: closes the reader.
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc_type: Option<&Bound<'py, PyAny>>,
        _exc_value: Option<&Bound<'py, PyAny>>,
        _traceback: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.close(py)
    }

    fn __repr__(&self) -> String {
        let at = self
            .state
            .try_lock()
            .map(|s| format!("at {} of {}", s.pos, self.opened.size))
            .unwrap_or_else(|_| "in use".to_owned());
        format!(
            "<brisk.AsyncObjectReader {}/{}: {at}>",
            self.opened.bucket, self.opened.key
        )
    }
}

#[pymethods]
impl Client {
    /// The object opened as a binary file for reading (read, readinto, seek) over one streamed
    /// GET from `offset`: sequential reads of any size make one request (see
    /// `brisk.ObjectReader`).
    #[pyo3(signature = (bucket, key, *, offset=0))]
    fn open_reader(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        offset: u64,
    ) -> PyResult<ObjectReader> {
        ObjectReader::open(py, self.inner(), bucket, key, offset)
    }

    /// `open_reader` as a coroutine: a `brisk.AsyncObjectReader` (awaitable `read`, `readinto`,
    /// `close`; `async with`) once the response head has arrived.
    #[pyo3(signature = (bucket, key, *, offset=0))]
    fn open_reader_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        offset: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        AsyncObjectReader::open(py, self.inner(), bucket, key, offset)
    }
}
