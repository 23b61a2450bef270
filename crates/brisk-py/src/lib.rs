//! `brisk._brisk`: the native module of the `brisk` Python package.
//!
//! - [`client`]: `brisk.Client`, every call with the GIL released, asyncio variants ([`aio`]).
//! - [`buffer`]: `brisk.Buffer` (Rust memory lent to Python, counted in the budget) and the
//!   caller's buffers brisk reads into and sends from.
//! - [`runtime`]: the per-process tokio runtime, rebuilt after `fork()`, and the waits that keep
//!   Ctrl-C working.
//! - [`errors`]: Rust errors as the exceptions of `brisk.errors`.
//! - [`types`]: metadata, listing entries, results.
//! - [`reader`]: `brisk.ObjectReader`, an object opened as a file for reading over one streamed GET;
//!   [`writer`]: `brisk.ObjectWriter`, a file opened for writing whose bytes become an object
//!   (each with an asyncio form, `AsyncObjectReader` and `AsyncObjectWriter`);
//!   [`fileobj`]: `upload_fileobj` and `download_fileobj` with Python file objects.
//! - [`many`]: `get_many`, `get_many_async`, `iter_many` and `iter_many_async`, whole objects of
//!   many keys.

use pyo3::prelude::*;

pub mod aio;
pub mod buffer;
pub mod client;
pub mod errors;
pub mod fileobj;
pub mod many;
pub mod progress;
pub mod put_many;
pub mod reader;
pub mod runtime;
pub mod types;
pub mod writer;

/// Bytes from an int or a size such as "64MiB".
#[pyfunction]
fn parse_size(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    client::size_arg(value, "size")
}

#[pymodule]
fn _brisk(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<client::Client>()?;
    m.add_class::<buffer::Buffer>()?;
    m.add_class::<types::ObjectMeta>()?;
    m.add_class::<types::ObjectEntry>()?;
    m.add_class::<types::ListIterator>()?;
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
