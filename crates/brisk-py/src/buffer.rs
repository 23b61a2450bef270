//! Memory shared with Python without copies, both ways.
//!
//! - [`Buffer`]: bytes brisk read (an [`ExactBuf`] of exactly the object's size, or a pooled block
//!   holding a range) exposed through the buffer protocol, read-only. `memoryview(buf)`,
//!   `numpy.frombuffer(buf)` and `bytes(buf)` see the Rust allocation itself. The allocation's
//!   reservation stays on the client's memory budget until the `Buffer` is released: when Python
//!   frees it (the last reference and the last memoryview gone; a memoryview keeps its exporter
//!   alive) or when `release()` is called with no view outstanding.
//! - [`WritableBuffer`] / [`ReadableBuffer`]: a caller's object (bytearray, numpy array, mmap,
//!   memoryview) held through the buffer protocol while brisk reads into it or sends from it.
//!
//! This is the crate's one use of `unsafe`: the buffer protocol is a C interface of raw pointers.
//! Each block says why it is sound.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use brisk_mem::{ExactBuf, PooledBlock};
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// What a [`Buffer`] holds.
#[derive(Debug)]
enum Held {
    /// A whole object or range: the first `len` bytes of a buffer sized for it (`len` is less only
    /// when a range ran past the end of the object).
    Exact { buf: ExactBuf, len: usize },
    /// A range in a pooled block (`len` bytes of it are the range); back to the pool when freed.
    Block { block: PooledBlock, len: usize },
    /// Given back with `release()`.
    Released,
}

impl Held {
    fn as_slice(&self) -> &[u8] {
        match self {
            Held::Exact { buf, len } => &buf[..*len],
            Held::Block { block, len } => &block[..*len],
            Held::Released => &[],
        }
    }
}

/// Bytes of an object held in one Rust allocation and lent to Python through the buffer protocol
/// (read-only, no copy). Counts against the client's memory budget until released.
#[pyclass(module = "brisk", frozen)]
#[derive(Debug)]
pub struct Buffer {
    held: Mutex<Held>,
    /// Views exported through the buffer protocol and not yet released.
    exports: AtomicUsize,
}

impl Buffer {
    pub fn exact(buf: ExactBuf) -> Self {
        let len = buf.len();
        Self::new(Held::Exact { buf, len })
    }

    /// The first `len` bytes of `buf`.
    pub fn exact_prefix(buf: ExactBuf, len: usize) -> Self {
        let len = len.min(buf.len());
        Self::new(Held::Exact { buf, len })
    }

    pub fn block(block: PooledBlock, len: usize) -> Self {
        Self::new(Held::Block { block, len })
    }

    fn new(held: Held) -> Self {
        Self {
            held: Mutex::new(held),
            exports: AtomicUsize::new(0),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl Buffer {
    fn __len__(&self) -> usize {
        self.held().as_slice().len()
    }

    /// A copy of the bytes as `bytes`.
    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.held().as_slice())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match ReadableBuffer::get(other) {
            Ok(theirs) => theirs.as_slice() == self.held().as_slice(),
            Err(_) => false,
        }
    }

    fn __repr__(&self) -> String {
        let held = self.held();
        match &*held {
            Held::Released => "<brisk.Buffer released>".to_owned(),
            h => format!("<brisk.Buffer {} bytes>", h.as_slice().len()),
        }
    }

    /// Whether `release()` gave the memory back.
    #[getter]
    fn released(&self) -> bool {
        matches!(*self.held(), Held::Released)
    }

    /// Gives the memory back to the budget now. Raises `BufferError` while a memoryview (or a
    /// numpy array) still exports it.
    fn release(&self) -> PyResult<()> {
        let mut held = self.held();
        let exports = self.exports.load(Ordering::Acquire);
        if exports > 0 {
            return Err(PyBufferError::new_err(format!(
                "the Buffer is still exported to {exports} view(s) (memoryview, numpy array); release them first"
            )));
        }
        *held = Held::Released;
        Ok(())
    }

    /// # Safety
    /// Called by Python with a valid `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        use pyo3::ffi;
        if view.is_null() {
            return Err(PyBufferError::new_err("view is null"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err(
                "a brisk.Buffer is read-only; read into your own writable buffer with get_into",
            ));
        }
        let this = slf.get();
        let (ptr, len) = {
            let held = this.held();
            let data = held.as_slice();
            (data.as_ptr(), data.len())
        };
        this.exports.fetch_add(1, Ordering::AcqRel);
        // SAFETY: `view` is a valid Py_buffer for Python to fill (checked non-null). The pointer
        // and length describe memory owned by this Buffer, which stays alive while the view exists
        // (the view holds a strong reference in `obj`) and is not freed or moved while exported:
        // `release()` refuses while `exports > 0`, and ExactBuf/PooledBlock memory never moves.
        unsafe { fill_view(view, slf.into_any(), ptr.cast_mut(), len, true, flags) };
        Ok(())
    }

    /// # Safety
    /// Called by Python once per view `__getbuffer__` filled.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {
        self.exports.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Fills `view` as a one-dimensional buffer of `len` bytes at `buf`, exported by `owner` (the view
/// keeps a strong reference to it), with `shape` and `strides` pointing into the view itself (the
/// usual idiom for one dimension) when `flags` ask for them.
///
/// # Safety
///
/// `view` must be a valid, non-null Py_buffer for Python to fill, and `len` bytes at `buf` must stay
/// valid (and, unless `readonly`, writable) for as long as the view is exported.
unsafe fn fill_view(
    view: *mut pyo3::ffi::Py_buffer,
    owner: Bound<'_, PyAny>,
    buf: *mut u8,
    len: usize,
    readonly: bool,
    flags: c_int,
) {
    use pyo3::ffi;
    // SAFETY: the caller's contract.
    unsafe {
        (*view).obj = owner.into_ptr();
        (*view).buf = buf.cast::<std::ffi::c_void>();
        (*view).len = len as isize;
        (*view).readonly = c_int::from(readonly);
        (*view).itemsize = 1;
        (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
            c"B".as_ptr().cast_mut()
        } else {
            std::ptr::null_mut()
        };
        (*view).ndim = 1;
        (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
            &raw mut (*view).len
        } else {
            std::ptr::null_mut()
        };
        (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            &raw mut (*view).itemsize
        } else {
            std::ptr::null_mut()
        };
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = std::ptr::null_mut();
    }
}

/// A caller's object held through the buffer protocol for brisk to write into: writable and
/// C-contiguous, checked when it is taken.
#[derive(Debug, Clone)]
pub struct WritableBuffer {
    buffer: Arc<PyUntypedBuffer>,
}

impl WritableBuffer {
    /// Takes `obj`'s buffer, or a `ValueError` saying why it can not be written into.
    pub fn get(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let buffer = PyUntypedBuffer::get(obj).map_err(|e| {
            PyValueError::new_err(format!(
                "{what} must support the buffer protocol (bytearray, numpy array, memoryview, mmap): {e}"
            ))
        })?;
        if buffer.readonly() {
            return Err(PyValueError::new_err(format!(
                "{what} is read-only ({}); pass a writable buffer such as a bytearray or a numpy array",
                obj.get_type().name()?
            )));
        }
        if !buffer.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "{what} is not C-contiguous; pass a contiguous buffer (numpy.ascontiguousarray)"
            )));
        }
        Ok(Self {
            buffer: Arc::new(buffer),
        })
    }

    pub fn len(&self) -> usize {
        self.buffer.len_bytes()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole buffer as a mutable slice.
    ///
    /// The caller must not hold two of these at once, or use one while a [`LentSlice`] of the same
    /// buffer is being written.
    #[allow(clippy::mut_from_ref)]
    pub fn as_mut_slice(&self) -> &mut [u8] {
        if self.is_empty() {
            return &mut [];
        }
        // SAFETY: the buffer is writable and C-contiguous (checked in `get`), so `buf_ptr` points
        // to `len_bytes` bytes that stay valid while `self.buffer` holds the export. Python code
        // may touch the same memory concurrently from another thread, as it may with any
        // `readinto`; brisk's own code takes one mutable view at a time (the contract above).
        unsafe { std::slice::from_raw_parts_mut(self.buffer.buf_ptr().cast::<u8>(), self.len()) }
    }

    /// `len` bytes from `start`, lent to a read that may run on another thread.
    pub fn lend(&self, start: usize, len: usize) -> LentSlice {
        assert!(start + len <= self.len(), "lent range outside the buffer");
        LentSlice {
            // SAFETY: within the buffer (asserted above).
            ptr: unsafe { self.buffer.buf_ptr().cast::<u8>().add(start) },
            len,
            _owner: Arc::clone(&self.buffer),
        }
    }
}

/// A region of a caller's writable buffer lent to one range read of a batch. It keeps the export
/// (and so the memory) alive for as long as the read holds it, whatever happens to the call.
pub struct LentSlice {
    ptr: *mut u8,
    len: usize,
    _owner: Arc<PyUntypedBuffer>,
}

// SAFETY: the memory is owned by the Python object whose export `_owner` holds, valid from any
// thread; the regions lent to one batch do not overlap, so no two threads write the same bytes.
unsafe impl Send for LentSlice {}

impl LentSlice {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Takes the first `len` bytes away as a region of their own; `self` keeps the rest. The two
    /// do not overlap, so they may be written by two reads at once.
    pub fn split_to(&mut self, len: usize) -> LentSlice {
        assert!(len <= self.len, "split past the end of a lent region");
        let front = LentSlice {
            ptr: self.ptr,
            len,
            _owner: Arc::clone(&self._owner),
        };
        // SAFETY: `len <= self.len`, so the new start is within (or one past the end of) the
        // region this slice was lent, inside the buffer `_owner` keeps exported.
        self.ptr = unsafe { self.ptr.add(len) };
        self.len -= len;
        front
    }
}

impl std::fmt::Debug for LentSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LentSlice({} bytes)", self.len)
    }
}

impl AsRef<[u8]> for LentSlice {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: see `WritableBuffer::lend` and the `Send` impl.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsMut<[u8]> for LentSlice {
    fn as_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: see `WritableBuffer::lend` and the `Send` impl.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// A caller's object held through the buffer protocol for brisk to send from (any C-contiguous
/// buffer, read-only or not).
#[derive(Debug)]
pub struct ReadableBuffer {
    buffer: PyUntypedBuffer,
}

impl ReadableBuffer {
    pub fn get(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let buffer = PyUntypedBuffer::get(obj).map_err(|e| {
            PyValueError::new_err(format!(
                "data must support the buffer protocol (bytes, bytearray, memoryview, numpy array, brisk.Buffer): {e}"
            ))
        })?;
        if !buffer.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "data is not C-contiguous; pass a contiguous buffer (numpy.ascontiguousarray)",
            ));
        }
        Ok(Self { buffer })
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.buffer.len_bytes() == 0 {
            return &[];
        }
        // SAFETY: C-contiguous (checked in `get`): `len_bytes` bytes at `buf_ptr`, valid while the
        // export is held by `self`.
        unsafe {
            std::slice::from_raw_parts(
                self.buffer.buf_ptr().cast::<u8>().cast_const(),
                self.buffer.len_bytes(),
            )
        }
    }
}

/// Part of a block lent to a Python `readinto` as a writable buffer, for one call.
///
/// It exports through the buffer protocol like [`Buffer`], counting its views; [`readinto_spare`]
/// closes it when `readinto` returns (no new views) and then counts what is still exported.
#[pyclass(module = "brisk", frozen)]
struct LentWindow {
    /// The lent memory (the address as an integer: the window itself is shared with Python).
    addr: usize,
    len: usize,
    /// Views exported and not yet released.
    exports: AtomicUsize,
    /// Cleared when the call that lent the memory returns: no view is given out after that.
    open: std::sync::atomic::AtomicBool,
}

#[pymethods]
impl LentWindow {
    fn __len__(&self) -> usize {
        self.len
    }

    /// # Safety
    /// Called by Python with a valid `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("view is null"));
        }
        let this = slf.get();
        if !this.open.load(Ordering::Acquire) {
            return Err(PyBufferError::new_err(
                "this buffer was lent to one readinto call, which has returned",
            ));
        }
        this.exports.fetch_add(1, Ordering::AcqRel);
        let (addr, len) = (this.addr, this.len);
        // SAFETY: `view` is a valid Py_buffer for Python to fill (checked non-null). The memory
        // (`len` bytes at `addr`, writable) is the unfilled part of a pooled block that
        // `readinto_spare` borrows mutably for as long as the window is open, and that is never
        // reused while a view of it exists: views still exported when the call returns make
        // `count_lent_read`, which its callers call at once with nothing in between, abandon the
        // block (it stays mapped and out of the pool for good).
        unsafe { fill_view(view, slf.into_any(), addr as *mut u8, len, false, flags) };
        Ok(())
    }

    /// # Safety
    /// Called by Python once per view `__getbuffer__` filled.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {
        self.exports.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One `fileobj.readinto(view)` straight into the part `writer` is filling, with `view` a
/// writable memoryview of the part's unfilled rest; counts and returns the bytes read (0 at the
/// end of the stream). The GIL is released while the writer waits for a block or a part slot.
///
/// A file object that keeps a view of the memory past the call (a bug: CPython's own buffered
/// readers lend their buffers the same way) gets a `BufferError`, and the block is abandoned
/// rather than reused under it ([`brisk_client::ObjectWriter::abandon_part`]), which fails the
/// upload.
pub fn read_into_part(
    py: Python<'_>,
    fileobj: &Bound<'_, PyAny>,
    writer: &mut brisk_client::ObjectWriter,
) -> PyResult<usize> {
    use crate::errors::IntoPyResult;
    let spare = crate::runtime::wait(py, writer.spare())?.py_err(py)?;
    let read = readinto_spare(py, fileobj, spare);
    count_lent_read(writer, read)
}

/// What [`readinto_spare`] gave: the bytes read, or the exception and whether the file object
/// kept a view of the memory (which must then never be reused).
pub type LentRead = Result<usize, (PyErr, bool)>;

/// One `fileobj.readinto(view)` with `view` a writable memoryview of `spare` (the unfilled rest of
/// a writer's part, from [`brisk_client::ObjectWriter::spare`]), checked as
/// [`read_into_part`] says; the caller counts the outcome with [`count_lent_read`].
pub fn readinto_spare(py: Python<'_>, fileobj: &Bound<'_, PyAny>, spare: &mut [u8]) -> LentRead {
    let window = Bound::new(
        py,
        LentWindow {
            addr: spare.as_mut_ptr() as usize,
            len: spare.len(),
            exports: AtomicUsize::new(0),
            open: std::sync::atomic::AtomicBool::new(true),
        },
    )
    .map_err(|e| (e, false))?;
    let lent = window.get().len;
    let read = pyo3::types::PyMemoryView::from(window.as_any()).and_then(|view| {
        let read = fileobj.call_method1("readinto", (&view,));
        // Releasing the view we made returns its export now; a view the file object derived from
        // it (a slice, a numpy array) keeps one, which is what is counted below.
        let _ = view.call_method0("release");
        read
    });
    let this = window.get();
    this.open.store(false, Ordering::Release);
    if this.exports.load(Ordering::Acquire) > 0 {
        return Err((
            PyBufferError::new_err(
                "the file object kept a view of the buffer brisk lent to its readinto(); the upload is abandoned",
            ),
            true,
        ));
    }
    let read = read.map_err(|e| (e, false))?;
    if read.is_none() {
        return Err((
            PyValueError::new_err(
                "readinto() returned None: the file object is non-blocking and had no data; pass a blocking one",
            ),
            false,
        ));
    }
    let n: usize = read.extract().map_err(|_| {
        (
            PyValueError::new_err(format!(
                "readinto() returned {}, not a number of bytes",
                read.repr()
                    .map_or_else(|_| "?".to_owned(), |r| r.to_string())
            )),
            false,
        )
    })?;
    if n > lent {
        return Err((
            PyValueError::new_err(format!(
                "readinto() said it read {n} bytes into a buffer of {lent}"
            )),
            false,
        ));
    }
    Ok(n)
}

/// Counts a [`readinto_spare`] in `writer`: the bytes read, or, when the file object kept a
/// view, the part abandoned (which fails the writer).
pub fn count_lent_read(writer: &mut brisk_client::ObjectWriter, read: LentRead) -> PyResult<usize> {
    match read {
        Ok(n) => {
            writer.advance(n);
            Ok(n)
        }
        Err((e, kept_view)) => {
            if kept_view {
                writer
                    .abandon_part("the file object kept a view of the buffer lent to its readinto");
            }
            Err(e)
        }
    }
}

/// A new `bytes` object of a given length, filled after it is made, possibly on another thread
/// and without the GIL (an awaitable `read`): until [`into_bytes`](Self::into_bytes) hands it to
/// Python, nothing else holds a reference to it.
#[derive(Debug)]
pub struct NewBytes {
    bytes: Py<PyBytes>,
    addr: usize,
    len: usize,
}

impl NewBytes {
    /// `len` zero bytes.
    pub fn new(py: Python<'_>, len: usize) -> PyResult<Self> {
        let bytes = PyBytes::new_with(py, len, |_| Ok(()))?;
        let addr = bytes.as_bytes().as_ptr() as usize;
        Ok(Self {
            bytes: bytes.unbind(),
            addr,
            len,
        })
    }

    /// The bytes to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `addr` is the data of the `bytes` object `self.bytes` keeps alive (a bytes
        // object's data is inline and never moves), `len` bytes long. The object was made by
        // `new` and not handed out: no Python code can read it or share it, so writing through a
        // `&mut self` borrow (one at a time) is writing memory only this value owns, as
        // `PyBytes::new_with`'s own initialiser does, and needs no GIL.
        unsafe { std::slice::from_raw_parts_mut(self.addr as *mut u8, self.len) }
    }

    /// The object for Python: all of it when `filled` is its length, else a copy of the first
    /// `filled` bytes.
    pub fn into_bytes(self, py: Python<'_>, filled: usize) -> Py<PyAny> {
        if filled >= self.len {
            return self.bytes.into_any();
        }
        PyBytes::new(py, &self.bytes.bind(py).as_bytes()[..filled])
            .into_any()
            .unbind()
    }
}
