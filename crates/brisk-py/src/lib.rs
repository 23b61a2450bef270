//! `brisk._brisk`: the native module of the `brisk` Python package.
//!
//! - [`client`]: `brisk.Client`, its configuration and what its calls share; every call releases
//!   the GIL, and each that does I/O has an asyncio form (`_async`, through [`aio`]) with the same
//!   parameters, written beside it in the module of its operation:
//!   - [`get`]: `get`, `get_into`, `get_range`; [`head`]: `head`;
//!     [`ranges`]: `get_ranges`, many ranges as one batch;
//!   - [`many`]: `get_many` and `iter_many`, whole objects of many keys;
//!     [`put_many`]: `put_many`, many objects stored;
//!   - [`put`]: `put`, one object from a buffer; [`upload`] and [`download`]: a file on disk;
//!   - [`fileobj`]: `upload_fileobj` and `download_fileobj` with Python file objects;
//!   - [`reader`]: `open_reader`, `brisk.ObjectReader`, an object opened as a file for reading over
//!     one streamed GET; [`writer`]: `open_writer`, `brisk.ObjectWriter`, a file opened for writing
//!     whose bytes become an object (each with an asyncio form, `AsyncObjectReader` and
//!     `AsyncObjectWriter`);
//!   - [`list`]: `list`, `brisk.ListIterator`; [`delete`]: `delete`, `delete_many`; [`copy`]: `copy`;
//!     [`presign`]: `presign`; [`buckets`]: `create_bucket`, `delete_bucket`, `list_buckets`.
//! - [`args`]: the arguments several calls share, checked before anything is sent.
//! - [`buffer`]: `brisk.Buffer` (Rust memory lent to Python, counted in the budget) and the
//!   caller's buffers brisk reads into and sends from.
//! - [`runtime`]: the per-process tokio runtime, rebuilt after `fork()`, and the waits that keep
//!   Ctrl-C working.
//! - [`errors`]: Rust errors as the exceptions of `brisk.errors`.
//! - [`types`]: metadata, listing entries, write results.
//! - [`progress`]: a caller's `progress(done, total)` callback.

use pyo3::prelude::*;

pub mod aio;
pub mod args;
pub mod buckets;
pub mod buffer;
pub mod client;
pub mod copy;
pub mod delete;
pub mod download;
pub mod errors;
pub mod fileobj;
pub mod get;
pub mod head;
pub mod list;
pub mod many;
pub mod presign;
pub mod progress;
pub mod put;
pub mod put_many;
pub mod ranges;
pub mod reader;
pub mod runtime;
pub mod types;
pub mod upload;
pub mod writer;

/// Bytes from an int or a size such as "64MiB".
#[pyfunction]
fn parse_size(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    args::size_arg(value, "size")
}

#[pymodule]
fn _brisk(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<client::Client>()?;
    m.add_class::<buffer::Buffer>()?;
    m.add_class::<types::ObjectMeta>()?;
    m.add_class::<types::ObjectEntry>()?;
    m.add_class::<list::ListIterator>()?;
    m.add_class::<many::ManyIterator>()?;
    m.add_class::<many::AsyncManyIterator>()?;
    m.add_class::<types::PutResult>()?;
    m.add_class::<types::UploadResult>()?;
    m.add_class::<writer::ObjectWriter>()?;
    m.add_class::<writer::AsyncObjectWriter>()?;
    m.add_class::<reader::ObjectReader>()?;
    m.add_class::<reader::AsyncObjectReader>()?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(aio::deliveries_in_flight, m)?)?;
    Ok(())
}
