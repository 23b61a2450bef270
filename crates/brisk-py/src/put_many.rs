//! `Client.put_many` and `put_many_async`: many objects stored over `brisk_client::ObjectWrites`,
//! each from a buffer (sent from the caller's memory, no copy) or a file (`os.PathLike`), at most
//! `queue_depth` at a time, with an object's error (`PreconditionFailed`, `NoSuchBucket`, a file
//! that cannot be read, ...) as its result instead of raised.
//!
//! Items come as a mapping `{key: data}`, or an iterable of `(key, data)` or
//! `(bucket, key, data)`. A sized collection (a list, tuple, dict) is checked whole before any
//! request, so a malformed item is a `TypeError`/`ValueError` with nothing sent; any other iterable
//! (a generator of millions) is taken one item at a time as slots free up, so the bodies held are
//! at most `queue_depth` however long it is, and a malformed item there stops the taking: the
//! writes in flight finish, then the error is raised naming the item.
//!
//! Two items for one key are written in their order: the later one starts only once the earlier
//! one has finished, so the last item wins, as a loop of `put` would leave it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use brisk_client::{ObjectWrites, PutSource, TransferOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::aio;
use crate::args::{Headers, Metadata};
use crate::buffer::ReadableBuffer;
use crate::client::Client;
use crate::errors;
use crate::many::check_depth;
use crate::runtime::{runtime, wait};
use crate::types::UploadResult;

/// One item, checked: its bucket, key and body.
#[derive(Debug)]
pub struct Item {
    bucket: Arc<str>,
    key: Arc<str>,
    body: PutSource<Body>,
}

/// A body in the caller's memory, held (exported) until its write is done.
pub struct Body(ReadableBuffer);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Body({} bytes)", self.0.as_slice().len())
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// The body of one item: a buffer, or a file for an `os.PathLike`.
fn body_of(data: &Bound<'_, PyAny>) -> PyResult<PutSource<Body>> {
    if data.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "data is a str: pass bytes (str.encode()) for its text, or a pathlib.Path for a file",
        ));
    }
    if data.hasattr("__fspath__")? {
        let path: PathBuf = data.extract()?;
        return Ok(PutSource::File(path));
    }
    Ok(PutSource::Bytes(Body(ReadableBuffer::get(data)?)))
}

/// One element of `items` (a `(key, data)` or `(bucket, key, data)` tuple), checked.
fn item_of(bucket: Option<&str>, element: &Bound<'_, PyAny>) -> PyResult<Item> {
    let Ok(tuple) = element.cast::<PyTuple>() else {
        return Err(PyTypeError::new_err(format!(
            "items must be (key, data) or (bucket, key, data) tuples, not {}",
            element.get_type().name()?
        )));
    };
    let (item_bucket, key, data) = match tuple.len() {
        2 => {
            let Some(bucket) = bucket else {
                return Err(PyValueError::new_err(
                    "a (key, data) item has no bucket: give `bucket`, or (bucket, key, data) items",
                ));
            };
            (bucket.to_owned(), tuple.get_item(0)?, tuple.get_item(1)?)
        }
        3 => (
            tuple.get_item(0)?.extract::<String>()?,
            tuple.get_item(1)?,
            tuple.get_item(2)?,
        ),
        n => {
            return Err(PyValueError::new_err(format!(
                "items must be (key, data) or (bucket, key, data) tuples, not {n}-tuples"
            )));
        }
    };
    let Ok(key) = key.extract::<String>() else {
        return Err(PyTypeError::new_err(format!(
            "a key must be a str, not {}",
            key.get_type().name()?
        )));
    };
    Ok(Item {
        bucket: item_bucket.into(),
        key: key.into(),
        body: body_of(&data)?,
    })
}

/// `e` with the index of the item it is about in front of its message.
fn at_item(py: Python<'_>, index: usize, e: PyErr) -> PyErr {
    let message = format!("item {index}: {}", e.value(py));
    if e.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(message)
    } else {
        PyValueError::new_err(message)
    }
}

/// The elements of `items`: a mapping's `(key, value)` pairs, else the iterable's elements.
fn elements<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
    if let Ok(dict) = items.cast::<PyDict>() {
        return dict.items().into_any().try_iter();
    }
    if items.hasattr("keys")? && items.hasattr("items")? {
        return items.call_method0("items")?.try_iter();
    }
    if items.is_instance_of::<PyString>() || items.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(PyTypeError::new_err(
            "items must be a mapping {key: data} or an iterable of (key, data) tuples",
        ));
    }
    items.try_iter()
}

/// Every item of a sized `items`, checked before any request.
pub fn checked_items(
    py: Python<'_>,
    bucket: Option<&str>,
    items: &Bound<'_, PyAny>,
) -> PyResult<Vec<Item>> {
    elements(items)?
        .enumerate()
        .map(|(i, element)| item_of(bucket, &element?).map_err(|e| at_item(py, i, e)))
        .collect()
}

/// Writes in progress with their results so far, keeping two writes of one key in order.
#[derive(Debug)]
pub struct Batch {
    writes: ObjectWrites<Body>,
    /// Keys written now, and the item writing each.
    in_flight: HashMap<(Arc<str>, Arc<str>), u64>,
    /// Each item's result, in the order of the items (None until it finishes).
    results: Vec<Option<brisk_client::Result<brisk_client::UploadResult>>>,
}

impl Batch {
    /// Must be called within the runtime's context.
    pub fn new(
        client: &brisk_client::Client,
        queue_depth: usize,
        options: TransferOptions,
    ) -> brisk_client::Result<Self> {
        Ok(Self {
            writes: client.object_writes(queue_depth, options)?,
            in_flight: HashMap::new(),
            results: Vec::new(),
        })
    }

    /// Whether `item` can start now: a slot is free and no write of its key is in flight.
    fn can_start(&self, item: &Item) -> bool {
        self.writes.has_room()
            && !self
                .in_flight
                .contains_key(&(Arc::clone(&item.bucket), Arc::clone(&item.key)))
    }

    fn start(&mut self, item: Item) {
        let id = self.results.len() as u64;
        self.results.push(None);
        self.in_flight
            .insert((Arc::clone(&item.bucket), Arc::clone(&item.key)), id);
        self.writes.submit(id, item.bucket, item.key, item.body);
    }

    /// Waits for the next write to finish and records it; false when none is outstanding.
    async fn finish_one(&mut self) -> bool {
        let Some((id, result)) = self.writes.next().await else {
            return false;
        };
        self.in_flight.retain(|_, writer| *writer != id);
        self.results[id as usize] = Some(result);
        true
    }

    /// Writes every item of `items`, in order for a key, at most the queue depth at a time.
    pub async fn write_all(mut self, items: Vec<Item>) -> Self {
        for item in items {
            while !self.can_start(&item) {
                self.finish_one().await;
            }
            self.start(item);
        }
        while self.finish_one().await {}
        self
    }

    /// The list `put_many` returns: an UploadResult or an exception per item, in order.
    pub fn into_list(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let list = PyList::empty(py);
        for (index, result) in self.results.into_iter().enumerate() {
            let item = match result {
                Some(Ok(stored)) => Py::new(py, UploadResult::from(stored))?.into_any(),
                Some(Err(e)) => errors::to_py(py, e).into_value(py).into_any(),
                None => errors::plain(py, "Error", format!("item {index} did not complete"))
                    .into_value(py)
                    .into_any(),
            };
            list.append(item)?;
        }
        Ok(list.into_any().unbind())
    }
}

/// `items` checked whole, and the batch that writes them: what `put_many` does with a sized
/// `items` (a list, tuple or dict) and `put_many_async` with any.
fn checked_batch(
    py: Python<'_>,
    client: &brisk_client::Client,
    bucket: Option<&str>,
    items: &Bound<'_, PyAny>,
    queue_depth: usize,
    options: TransferOptions,
) -> PyResult<(Batch, Vec<Item>)> {
    check_depth(queue_depth)?;
    let items = checked_items(py, bucket, items)?;
    let _context = runtime().enter();
    let batch = Batch::new(client, queue_depth, options).map_err(|e| errors::to_py(py, e))?;
    Ok((batch, items))
}

/// `put_many` on the calling thread: a sized `items` checked whole, then written with the GIL
/// released; any other iterable taken an item at a time as slots free up.
pub fn put_many(
    py: Python<'_>,
    client: &brisk_client::Client,
    bucket: Option<&str>,
    items: &Bound<'_, PyAny>,
    queue_depth: usize,
    options: TransferOptions,
) -> PyResult<Py<PyAny>> {
    if items.hasattr("__len__")? {
        let (batch, checked) = checked_batch(py, client, bucket, items, queue_depth, options)?;
        return wait(py, batch.write_all(checked))?.into_list(py);
    }
    check_depth(queue_depth)?;
    let runtime = runtime();
    let _context = runtime.enter();
    let mut batch = Batch::new(client, queue_depth, options).map_err(|e| errors::to_py(py, e))?;
    let mut elements = elements(items)?.enumerate();
    let mut waiting: Option<Item> = None;
    loop {
        // Take items while they can start; one that cannot (no slot, or its key in flight) waits.
        let mut failed = None;
        loop {
            let item = match waiting.take() {
                Some(item) => item,
                None => match elements.next() {
                    None => break,
                    Some((i, element)) => match element.and_then(|e| item_of(bucket, &e)) {
                        Ok(item) => item,
                        Err(e) => {
                            failed = Some(at_item(py, i, e));
                            break;
                        }
                    },
                },
            };
            if batch.can_start(&item) {
                batch.start(item);
            } else {
                waiting = Some(item);
                break;
            }
        }
        if let Some(e) = failed {
            // Nothing half-done: the writes already started finish, then the error is raised.
            while wait(py, batch.finish_one())? {}
            return Err(e);
        }
        if !wait(py, batch.finish_one())? && waiting.is_none() {
            return batch.into_list(py);
        }
    }
}

#[pymethods]
impl Client {
    /// Many objects stored, `queue_depth` at a time: `items` a mapping {key: data} or an
    /// iterable of (key, data) or (bucket, key, data), data a buffer (sent from its memory) or an
    /// os.PathLike (a file, uploaded as `upload` does). A list in the order of the items of an
    /// UploadResult or the item's exception (not raised).
    #[pyo3(signature = (bucket, items, *, queue_depth=64, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn put_many(
        &self,
        py: Python<'_>,
        bucket: Option<String>,
        items: &Bound<'_, PyAny>,
        queue_depth: usize,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Py<PyAny>> {
        let options = self.upload_options(content_type, metadata, headers, if_none_match)?;
        self::put_many(
            py,
            &self.inner(),
            bucket.as_deref(),
            items,
            queue_depth,
            options,
        )
    }

    /// `put_many` as a coroutine: `items` (any iterable) is checked whole first, and its
    /// buffers are held until it completes.
    #[pyo3(signature = (bucket, items, *, queue_depth=64, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn put_many_async<'py>(
        &self,
        py: Python<'py>,
        bucket: Option<String>,
        items: &Bound<'py, PyAny>,
        queue_depth: usize,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Bound<'py, PyAny>> {
        check_depth(queue_depth)?;
        let options = self.upload_options(content_type, metadata, headers, if_none_match)?;
        let (batch, items) = checked_batch(
            py,
            &self.inner(),
            bucket.as_deref(),
            items,
            queue_depth,
            options,
        )?;
        aio::spawn(
            py,
            async move { Ok(batch.write_all(items).await) },
            |py, batch| batch.into_list(py),
        )
    }
}
