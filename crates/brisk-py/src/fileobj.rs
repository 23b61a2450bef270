//! Python file objects in and out: `Client.upload_fileobj` and `Client.download_fileobj`, as boto3
//! names them, in memory bounded by the client's parts in flight whatever the object's size.
//!
//! - Up: the file object's `readinto` reads straight into the part being filled (a writable view of
//!   the pooled block, [`read_into_part`]); one with only `read` has its bytes copied in. Full parts
//!   are sent on the runtime's workers while Python reads the next one.
//! - Down: a HEAD, then ranged GETs of a part each (`part_size`, `parts_in_flight` of them ahead of
//!   Python, pinned to the HEAD's ETag: `Client::read_ahead`), each into a pooled block handed to
//!   `fileobj.write` in order as a `brisk.Buffer` (no copy; the block goes back to the pool when
//!   Python lets go of it). Parallel ranges, as boto3's `download_fileobj` makes them: one
//!   connection carries far less than a link with a round trip. A stored full-object checksum is
//!   checked as the object ends: a mismatch raises after the bytes were written, as for any stream.
//!
//! The asyncio forms (`upload_fileobj_async`, `download_fileobj_async`) do the same in one task
//! on brisk's runtime: the file object's `readinto`/`read`/`write` and the progress callback are
//! called from the runtime's worker with the GIL taken for each call
//! ([`crate::aio::in_python`]), as the blocking forms call them from the caller's thread; the
//! event loop goes on meanwhile. The file object must not be used elsewhere until the call is
//! done.

use brisk_client::{ObjectWriter, TransferOptions, TransferProgress};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::aio::{self, in_python, py_error};
use crate::args::{Headers, Metadata};
use crate::buffer::{Buffer, ReadableBuffer, count_lent_read, read_into_part, readinto_spare};
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::progress::Progress;
use crate::runtime::wait;
use crate::types::UploadResult;

/// Bytes asked of a file object's `read` at a time (one with no `readinto`): 4 MiB.
pub const READ_SIZE: usize = 4 * 1024 * 1024;

/// Everything `fileobj` yields (to its end) into `writer`, which is then finished; a failure
/// anywhere aborts the upload. `sent` counts the bytes of the parts the service has, which
/// `progress` reports.
pub fn upload_fileobj(
    py: Python<'_>,
    fileobj: &Bound<'_, PyAny>,
    mut writer: ObjectWriter,
    sent: &TransferProgress,
    mut progress: Progress,
) -> PyResult<brisk_client::UploadResult> {
    let copied = if source_kind(fileobj)? {
        loop {
            match read_into_part(py, fileobj, &mut writer) {
                Ok(0) => break Ok(()),
                Ok(_) => {
                    if let Err(e) = progress.tick(py, sent.bytes()) {
                        break Err(e);
                    }
                }
                Err(e) => break Err(e),
            }
        }
    } else {
        copy_reads(py, fileobj, &mut writer, sent, &mut progress)
    };
    if let Err(e) = copied {
        let _ = wait(py, writer.abort());
        return Err(e);
    }
    let result = wait(py, writer.finish())?.py_err(py)?;
    progress.finish(py, result.size)?;
    Ok(result)
}

/// How an upload reads a file object: `readinto` straight into the parts, else `read` copied in;
/// a `TypeError` for an object with neither.
pub fn source_kind(fileobj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if fileobj.hasattr("readinto")? {
        Ok(true)
    } else if fileobj.hasattr("read")? {
        Ok(false)
    } else {
        Err(PyTypeError::new_err(format!(
            "upload_fileobj needs a binary file object with readinto() or read(), not {}",
            fileobj.get_type().name()?
        )))
    }
}

/// [`upload_fileobj`] as a task on the runtime (`readinto` says which way `fileobj` is read: see
/// [`source_kind`]).
pub async fn upload_fileobj_async(
    fileobj: Py<PyAny>,
    readinto: bool,
    mut writer: ObjectWriter,
    sent: TransferProgress,
    mut progress: Progress,
) -> PyResult<brisk_client::UploadResult> {
    let copied = copy_into_writer(&fileobj, readinto, &mut writer, &sent, &mut progress).await;
    if let Err(e) = copied {
        let _ = writer.abort().await;
        return Err(e);
    }
    let result = writer.finish().await.map_err(py_error)?;
    in_python(|py| progress.finish(py, result.size))?;
    Ok(result)
}

/// Everything `fileobj` yields into `writer`'s parts, from the runtime's worker.
async fn copy_into_writer(
    fileobj: &Py<PyAny>,
    readinto: bool,
    writer: &mut ObjectWriter,
    sent: &TransferProgress,
    progress: &mut Progress,
) -> PyResult<()> {
    loop {
        let read = if readinto {
            let spare = writer.spare().await.map_err(py_error)?;
            let read = in_python(|py| readinto_spare(py, fileobj.bind(py), spare));
            count_lent_read(writer, read)?
        } else {
            let data = in_python(|py| read_chunk(fileobj.bind(py)))?;
            let n = data.as_slice().len();
            if n > 0 {
                writer.write(data.as_slice()).await.map_err(py_error)?;
            }
            n
        };
        if read == 0 {
            return Ok(());
        }
        in_python(|py| progress.tick(py, sent.bytes()))?;
    }
}

/// One `fileobj.read(READ_SIZE)`, checked to be bytes (empty at the end).
fn read_chunk(fileobj: &Bound<'_, PyAny>) -> PyResult<ReadableBuffer> {
    let data = fileobj.call_method1("read", (READ_SIZE,))?;
    if data.is_none() {
        return Err(PyTypeError::new_err(
            "read() returned None: the file object is non-blocking and had no data; pass a blocking one",
        ));
    }
    ReadableBuffer::get(&data).map_err(|_| {
        PyTypeError::new_err("read() returned text, not bytes: open the file in binary mode ('rb')")
    })
}

/// For a file object with `read` only: each read's bytes copied into the parts.
fn copy_reads(
    py: Python<'_>,
    fileobj: &Bound<'_, PyAny>,
    writer: &mut ObjectWriter,
    sent: &TransferProgress,
    progress: &mut Progress,
) -> PyResult<()> {
    loop {
        let bytes = read_chunk(fileobj)?;
        let bytes = bytes.as_slice();
        if bytes.is_empty() {
            return Ok(());
        }
        wait(py, writer.write(bytes))?.py_err(py)?;
        progress.tick(py, sent.bytes())?;
    }
}

/// `fileobj.write`, or a `TypeError` saying a download needs it.
pub fn write_method<'py>(fileobj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    fileobj.getattr("write").map_err(|_| {
        PyTypeError::new_err(format!(
            "download_fileobj needs a binary file object with write(), not {}",
            fileobj
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })
}

/// [`download_fileobj`] as a task on the runtime (`write` is the file object's `write`).
pub async fn download_fileobj_async(
    client: brisk_client::Client,
    bucket: String,
    key: String,
    write: Py<PyAny>,
    options: brisk_client::TransferOptions,
    progress: Option<Py<PyAny>>,
) -> PyResult<u64> {
    let mut reader = client
        .read_ahead(&bucket, &key, &options)
        .await
        .map_err(py_error)?;
    let mut progress = Progress::new(progress, Some(reader.content_length()));
    let mut size = 0u64;
    while let Some((block, len)) = reader.next_block().await.map_err(py_error)? {
        size += len as u64;
        in_python(|py| {
            let buffer = Bound::new(py, Buffer::block(block, len))?;
            write_all(write.bind(py), &buffer, len)?;
            progress.tick(py, size)
        })?;
    }
    in_python(|py| progress.finish(py, size))?;
    Ok(size)
}

/// The object `bucket`/`key` written to `fileobj` front to back; returns its size.
pub fn download_fileobj(
    py: Python<'_>,
    client: brisk_client::Client,
    bucket: String,
    key: String,
    fileobj: &Bound<'_, PyAny>,
    options: brisk_client::TransferOptions,
    progress: Option<Py<PyAny>>,
) -> PyResult<u64> {
    let write = write_method(fileobj)?;
    // A HEAD, then ranged GETs of a part each, `parts_in_flight` ahead of this thread, pinned to
    // the HEAD's ETag; the blocks come back in order (`Client::read_ahead`).
    let mut reader = wait(py, client.read_ahead(&bucket, &key, &options))?.py_err(py)?;
    let mut progress = Progress::new(progress, Some(reader.content_length()));
    let mut size = 0u64;
    while let Some((block, len)) = wait(py, reader.next_block())?.py_err(py)? {
        let buffer = Bound::new(py, Buffer::block(block, len))?;
        write_all(&write, &buffer, len)?;
        size += len as u64;
        progress.tick(py, size)?;
    }
    progress.finish(py, size)?;
    Ok(size)
}

/// `write(buffer)`, again with the rest for as long as `write` says it took less (a raw,
/// unbuffered file may); `None` (a write that does not say) is taken as all of it.
fn write_all(write: &Bound<'_, PyAny>, buffer: &Bound<'_, Buffer>, len: usize) -> PyResult<()> {
    let mut view = pyo3::types::PyMemoryView::from(buffer.as_any())?.into_any();
    let mut left = len;
    loop {
        let took = write.call1((&view,))?;
        let n = if took.is_none() {
            left
        } else {
            took.extract::<usize>()?
        };
        if n >= left {
            break;
        }
        if n == 0 {
            return Err(pyo3::exceptions::PyOSError::new_err(
                "write() took none of the bytes it was given",
            ));
        }
        view = view.get_item(pyo3::types::PySlice::new(
            view.py(),
            n as isize,
            left as isize,
            1,
        ))?;
        left -= n;
    }
    let _ = view.call_method0("release");
    Ok(())
}

#[pymethods]
impl Client {
    /// Uploads everything a binary file object yields (to its end): `readinto()` reads straight
    /// into the parts, full parts are sent while the next one is read. One PUT if it fits in a
    /// part, else a multipart upload; a failure aborts it and nothing is stored.
    ///
    /// `progress(bytes_sent, total)` is called from the calling thread at most every 0.1 s with
    /// the bytes of the parts the service has; `total` is None until the end (a stream's length is
    /// not known), then the size.
    #[pyo3(signature = (fileobj, bucket, key, *, content_type=None, if_none_match=None, metadata=None, headers=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn upload_fileobj(
        &self,
        py: Python<'_>,
        fileobj: &Bound<'_, PyAny>,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<UploadResult> {
        let (writer, sent) = self.fileobj_writer(
            py,
            bucket,
            key,
            content_type,
            metadata,
            headers,
            if_none_match,
        )?;
        let progress = Progress::new(progress, None);
        Ok(crate::fileobj::upload_fileobj(py, fileobj, writer, &sent, progress)?.into())
    }

    /// `upload_fileobj` as a coroutine: the file object's `readinto` (or `read`) and `progress`
    /// are called from brisk's runtime with the GIL (not from the event loop), as the blocking
    /// form calls them from the caller's thread; the file object must not be used elsewhere
    /// until it completes.
    #[pyo3(signature = (fileobj, bucket, key, *, content_type=None, if_none_match=None, metadata=None, headers=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn upload_fileobj_async<'py>(
        &self,
        py: Python<'py>,
        fileobj: &Bound<'py, PyAny>,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let readinto = crate::fileobj::source_kind(fileobj)?;
        let (writer, sent) = self.fileobj_writer(
            py,
            bucket,
            key,
            content_type,
            metadata,
            headers,
            if_none_match,
        )?;
        let progress = Progress::new(progress, None);
        let fileobj = fileobj.clone().unbind();
        aio::spawn_with(
            py,
            crate::fileobj::upload_fileobj_async(fileobj, readinto, writer, sent, progress),
            |py, r| aio::value(py, UploadResult::from(r)),
        )
    }

    /// Writes the object to a binary file object (anything with `write()`), front to back: parts
    /// read by parallel ranged GETs ahead of Python, handed over in order; returns its size.
    /// `progress(bytes_written, size)` is called at most every 0.1 s and once at the end.
    #[pyo3(signature = (bucket, key, fileobj, *, progress=None))]
    fn download_fileobj(
        &self,
        py: Python<'_>,
        bucket: String,
        key: String,
        fileobj: &Bound<'_, PyAny>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<u64> {
        let options = self.transfer_options(None);
        crate::fileobj::download_fileobj(py, self.inner(), bucket, key, fileobj, options, progress)
    }

    /// `download_fileobj` as a coroutine: the file object's `write` and `progress` are called
    /// from brisk's runtime with the GIL (not from the event loop), in order; the file object must
    /// not be used elsewhere until it completes.
    #[pyo3(signature = (bucket, key, fileobj, *, progress=None))]
    fn download_fileobj_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        fileobj: &Bound<'py, PyAny>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let write = crate::fileobj::write_method(fileobj)?.unbind();
        let options = self.transfer_options(None);
        aio::spawn_with(
            py,
            crate::fileobj::download_fileobj_async(
                self.inner(),
                bucket,
                key,
                write,
                options,
                progress,
            ),
            aio::value,
        )
    }
}

impl Client {
    /// The writer `upload_fileobj` and `upload_fileobj_async` fill, with the counter of the bytes
    /// the service has (what `progress` is told).
    #[allow(clippy::too_many_arguments)]
    fn fileobj_writer(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        metadata: Metadata,
        headers: Headers,
        if_none_match: Option<&str>,
    ) -> PyResult<(ObjectWriter, TransferProgress)> {
        let sent = TransferProgress::new();
        let options = TransferOptions {
            progress: Some(sent.clone()),
            ..self.upload_options(content_type, metadata, headers, if_none_match)?
        };
        Ok((self.start_writer(py, bucket, key, options)?, sent))
    }
}
