//! `Client.get_many`, `get_many_async` and `iter_many`: many whole objects over
//! `brisk_client::ObjectReads`, each into an exact buffer, at most `queue_depth` at a time, with a
//! key's error (`NoSuchKey`, `MemoryBudgetExceeded`, ...) as its result instead of raised.
//!
//! The list forms read every key and return when all are done; `iter_many` is a Python iterator
//! that takes keys from any iterable only as slots free up and yields results as they complete,
//! so the objects it holds are at most `queue_depth` beyond those the caller kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, TryLockError};

use brisk_client::{ObjectRead, ObjectReads};
use brisk_mem::ExactBuf;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyList, PyString, PyTuple};

use crate::aio;
use crate::buffer::{Buffer, LentSlice, WritableBuffer};
use crate::client::Client;
use crate::errors::{self, IntoPyResult};
use crate::runtime::{runtime, spawn_wait, wait};

/// A key to read: the bucket and the key.
pub type KeyPair = (Arc<str>, Arc<str>);

/// One key of `keys`: a str (of `bucket`) or a `(bucket, key)` pair.
pub fn key_pair(bucket: Option<&str>, item: &Bound<'_, PyAny>) -> PyResult<KeyPair> {
    if let Ok(key) = item.cast::<PyString>() {
        let Some(bucket) = bucket else {
            return Err(PyValueError::new_err(format!(
                "key {key} has no bucket: give `bucket`, or (bucket, key) pairs"
            )));
        };
        return Ok((bucket.into(), key.to_str()?.into()));
    }
    if let Ok(pair) = item.cast::<PyTuple>()
        && pair.len() == 2
    {
        let bucket: String = pair.get_item(0)?.extract()?;
        let key: String = pair.get_item(1)?.extract()?;
        return Ok((bucket.into(), key.into()));
    }
    Err(PyTypeError::new_err(format!(
        "keys must be str or (bucket, key) tuples, not {}",
        item.get_type().name()?
    )))
}

/// The keys of a list-form `get_many`: each distinct key once, and for each key as given, the
/// position of its distinct key. A key given twice is read once, and both places get the same
/// result (the same Buffer, or the same exception).
#[derive(Debug)]
pub struct Keys {
    unique: Vec<KeyPair>,
    order: Vec<usize>,
}

/// Every key of `keys` (any iterable), checked before a request is sent.
pub fn key_pairs(bucket: Option<&str>, keys: &Bound<'_, PyAny>) -> PyResult<Keys> {
    let mut unique = Vec::new();
    let mut seen: HashMap<KeyPair, usize> = HashMap::new();
    let mut order = Vec::new();
    for item in keys.try_iter()? {
        let pair = key_pair(bucket, &item?)?;
        let position = *seen.entry(pair.clone()).or_insert_with(|| {
            unique.push(pair);
            unique.len() - 1
        });
        order.push(position);
    }
    Ok(Keys { unique, order })
}

pub fn check_depth(queue_depth: usize) -> PyResult<()> {
    if queue_depth == 0 {
        return Err(PyValueError::new_err("queue_depth must be at least 1"));
    }
    Ok(())
}

/// The outcome of each distinct key, and the order of the keys as given.
#[derive(Debug)]
pub struct Outcomes {
    results: Vec<Option<brisk_client::Result<ExactBuf>>>,
    order: Vec<usize>,
}

/// Reads every key, at most `queue_depth` at a time. Runs on the runtime (spawned).
pub async fn read_all(
    client: brisk_client::Client,
    keys: Keys,
    queue_depth: usize,
) -> brisk_client::Result<Outcomes> {
    let Keys {
        unique: keys,
        order,
    } = keys;
    let mut outcomes: Vec<_> = (0..keys.len()).map(|_| None).collect();
    // The list keeps every object: a read that could never fit beside them fails, not waits.
    let mut reads = client.object_reads(queue_depth)?.hold_all();
    for (i, (bucket, key)) in keys.into_iter().enumerate() {
        reads.submit(i as u64, bucket, key);
    }
    while let Some((index, result)) = reads.next().await {
        outcomes[index as usize] = Some(result);
    }
    Ok(Outcomes {
        results: outcomes,
        order,
    })
}

/// A region of `into=` given to one object: where it starts in the buffer, and the bytes.
#[derive(Debug)]
struct Placed {
    offset: usize,
    slice: LentSlice,
}

impl AsMut<[u8]> for Placed {
    fn as_mut(&mut self) -> &mut [u8] {
        self.slice.as_mut()
    }
}

/// The outcome of each distinct key read into `into=` (where its bytes start, and how many), and
/// the order of the keys as given.
#[derive(Debug)]
pub struct PlacedOutcomes {
    results: Vec<Option<brisk_client::Result<(usize, usize)>>>,
    order: Vec<usize>,
}

/// Reads every key into `into`, objects back to back in the order their heads arrive, at most
/// `queue_depth` at a time. An object larger than what is left of `into` is `BufferTooSmall`
/// for that key, with nothing read. Runs on the runtime (spawned).
pub async fn read_all_into(
    client: brisk_client::Client,
    keys: Keys,
    queue_depth: usize,
    into: LentSlice,
) -> brisk_client::Result<PlacedOutcomes> {
    // What is left of `into`, and where it starts.
    let rest = Arc::new(Mutex::new((0usize, into)));
    let mut reads = client.object_reads_with(queue_depth, move |client, bucket, key| {
        let rest = Arc::clone(&rest);
        async move {
            let choose = |length: usize| {
                let mut rest = rest.lock().unwrap_or_else(|e| e.into_inner());
                let (start, slice) = &mut *rest;
                if length > slice.len() {
                    return Err(brisk_client::Error::BufferTooSmall {
                        length: length as u64,
                        capacity: slice.len(),
                    });
                }
                let placed = Placed {
                    offset: *start,
                    slice: slice.split_to(length),
                };
                *start += length;
                Ok(placed)
            };
            let (placed, length) = client.get_into_chosen(&bucket, &key, choose).await?;
            Ok((placed.offset, length))
        }
    })?;
    let Keys {
        unique: keys,
        order,
    } = keys;
    let mut outcomes: Vec<_> = (0..keys.len()).map(|_| None).collect();
    for (i, (bucket, key)) in keys.into_iter().enumerate() {
        reads.submit(i as u64, bucket, key);
    }
    while let Some((index, result)) = reads.next().await {
        outcomes[index as usize] = Some(result);
    }
    Ok(PlacedOutcomes {
        results: outcomes,
        order,
    })
}

/// The list `get_many(into=...)` returns: `(offset, length)` or an exception per key, in order.
pub fn placed_list(py: Python<'_>, outcomes: PlacedOutcomes) -> PyResult<Py<PyAny>> {
    let mut items = Vec::with_capacity(outcomes.results.len());
    for (index, outcome) in outcomes.results.into_iter().enumerate() {
        items.push(match outcome {
            Some(Ok(place)) => place.into_pyobject(py)?.into_any().unbind(),
            Some(Err(e)) => errors::to_py(py, e).into_value(py).into_any(),
            None => not_completed(py, index),
        });
    }
    in_order(py, &items, &outcomes.order)
}

/// The list of the keys as given, each the item of its distinct key.
fn in_order(py: Python<'_>, items: &[Py<PyAny>], order: &[usize]) -> PyResult<Py<PyAny>> {
    let list = PyList::empty(py);
    for &position in order {
        list.append(items[position].clone_ref(py))?;
    }
    Ok(list.into_any().unbind())
}

fn not_completed(py: Python<'_>, index: usize) -> Py<PyAny> {
    errors::plain(py, "Error", format!("key {index} did not complete"))
        .into_value(py)
        .into_any()
}

/// A key's result: its Buffer, or its exception (not raised).
fn result_object(py: Python<'_>, result: brisk_client::Result<ExactBuf>) -> PyResult<Py<PyAny>> {
    Ok(match result {
        Ok(buf) => Py::new(py, Buffer::exact(buf))?.into_any(),
        Err(e) => errors::to_py(py, e).into_value(py).into_any(),
    })
}

/// The list `get_many` returns: a Buffer or an exception per key, in order (a key given twice, the
/// same Buffer twice). An object the list had no room for says how to read more than the budget
/// holds.
pub fn outcome_list(py: Python<'_>, outcomes: Outcomes) -> PyResult<Py<PyAny>> {
    let mut items = Vec::with_capacity(outcomes.results.len());
    for (index, outcome) in outcomes.results.into_iter().enumerate() {
        items.push(match outcome {
            Some(Err(e @ brisk_client::Error::Memory(_))) => errors::plain(
                py,
                "MemoryBudgetExceeded",
                format!(
                    "{e}: the list get_many returns holds every object at once; iterate with \
                     iter_many (at most queue_depth objects held), or read into one buffer of \
                     your own with get_many(into=...)"
                ),
            )
            .into_value(py)
            .into_any(),
            Some(result) => result_object(py, result)?,
            None => not_completed(py, index),
        });
    }
    in_order(py, &items, &outcomes.order)
}

/// What `iter_many` yields: the key's index, the key as given, its Buffer or exception.
type Yielded = (u64, Py<PyAny>, Py<PyAny>);

/// The iterator `Client.iter_many` returns: `(index, key, Buffer or exception)` as each read
/// completes, `key` as it was given.
#[pyclass(module = "brisk")]
#[derive(Debug)]
pub struct ManyIterator {
    state: Mutex<Option<IterState>>,
}

/// The caller's keys of an `iter_many` or `iter_many_async`, taken only as reads have room.
#[derive(Debug)]
struct KeyFeed {
    /// The caller's iterator of keys; `None` once it is exhausted (or the iterator closed).
    keys: Option<Py<PyIterator>>,
    bucket: Option<String>,
    next_index: u64,
}

impl KeyFeed {
    /// The feed of `keys` (any iterable) and the reads it feeds, at most `queue_depth` at a time.
    fn open(
        client: &brisk_client::Client,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
    ) -> PyResult<(Self, ObjectReads)> {
        check_depth(queue_depth)?;
        let keys = keys.try_iter()?.unbind();
        let runtime = runtime();
        let _context = runtime.enter();
        let reads = client
            .object_reads(queue_depth)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let feed = Self {
            keys: Some(keys),
            bucket,
            next_index: 0,
        };
        Ok((feed, reads))
    }

    /// Takes keys from the caller's iterator into `reads` while a slot is free, handing each key
    /// as given, with its index, to `given`.
    fn fill(
        &mut self,
        py: Python<'_>,
        reads: &mut ObjectReads,
        mut given: impl FnMut(u64, Py<PyAny>),
    ) -> PyResult<()> {
        while reads.has_room() {
            let Some(keys) = &self.keys else {
                return Ok(());
            };
            let Some(item) = keys.bind(py).clone().next() else {
                self.keys = None;
                return Ok(());
            };
            let item = item?;
            let (bucket, key) = key_pair(self.bucket.as_deref(), &item)?;
            reads.submit(self.next_index, bucket, key);
            given(self.next_index, item.unbind());
            self.next_index += 1;
        }
        Ok(())
    }
}

#[derive(Debug)]
struct IterState {
    reads: ObjectReads,
    feed: KeyFeed,
    /// The keys as given, of reads not yet yielded (at most `queue_depth`).
    given: HashMap<u64, Py<PyAny>>,
}

impl ManyIterator {
    pub fn start(
        client: &brisk_client::Client,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
    ) -> PyResult<Self> {
        let (feed, reads) = KeyFeed::open(client, bucket, keys, queue_depth)?;
        Ok(Self {
            state: Mutex::new(Some(IterState {
                reads,
                feed,
                given: HashMap::new(),
            })),
        })
    }
}

impl IterState {
    fn fill(&mut self, py: Python<'_>) -> PyResult<()> {
        let given = &mut self.given;
        self.feed.fill(py, &mut self.reads, |index, key| {
            given.insert(index, key);
        })
    }
}

#[pymethods]
impl ManyIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Yielded>> {
        let mut guard = match self.state.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err(
                    "another thread is taking a result from this iterator",
                ));
            }
        };
        let Some(state) = guard.as_mut() else {
            return Ok(None);
        };
        state.fill(py)?;
        if state.reads.outstanding() == 0 {
            *guard = None;
            return Ok(None);
        }
        // Cancel-safe: an interrupted wait loses no result, the next call takes it.
        let read: Option<ObjectRead> = wait(py, state.reads.next())?;
        let Some((index, result)) = read else {
            *guard = None;
            return Ok(None);
        };
        let key = state.given.remove(&index).unwrap_or_else(|| py.None());
        Ok(Some((index, key, result_object(py, result)?)))
    }

    /// Stops the reads in flight and drops the objects not yet taken.
    fn close(&self) {
        if let Ok(mut guard) = self.state.lock() {
            *guard = None;
        }
    }
}

/// The async iterator `Client.iter_many_async` returns: `iter_many` for `async for`, each
/// `__anext__` an awaitable that the runtime completes (the event loop never waits on I/O). Keys
/// come from a plain iterable, taken on the loop's thread as slots free up.
#[pyclass(module = "brisk")]
#[derive(Debug)]
pub struct AsyncManyIterator {
    reads: Arc<tokio::sync::Mutex<ObjectReads>>,
    feed: Mutex<Feed>,
}

#[derive(Debug)]
struct Feed {
    keys: KeyFeed,
    /// The keys as given, of reads not yet yielded.
    given: Arc<Mutex<HashMap<u64, Py<PyAny>>>>,
    closed: bool,
}

impl AsyncManyIterator {
    pub fn start(
        client: &brisk_client::Client,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
    ) -> PyResult<Self> {
        let (keys, reads) = KeyFeed::open(client, bucket, keys, queue_depth)?;
        Ok(Self {
            reads: Arc::new(tokio::sync::Mutex::new(reads)),
            feed: Mutex::new(Feed {
                keys,
                given: Arc::new(Mutex::new(HashMap::new())),
                closed: false,
            }),
        })
    }
}

#[pymethods]
impl AsyncManyIterator {
    fn __aiter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let busy = || {
            PyRuntimeError::new_err("one __anext__ at a time: the previous one is still in flight")
        };
        let mut feed = match self.feed.try_lock() {
            Ok(feed) => feed,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(busy()),
        };
        let Ok(mut reads) = Arc::clone(&self.reads).try_lock_owned() else {
            return Err(busy());
        };
        if feed.closed {
            return Err(pyo3::exceptions::PyStopAsyncIteration::new_err(()));
        }
        let given = Arc::clone(&feed.given);
        feed.keys.fill(py, &mut reads, |index, key| {
            given
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(index, key);
        })?;
        if reads.outstanding() == 0 {
            return Err(pyo3::exceptions::PyStopAsyncIteration::new_err(()));
        }
        let given = Arc::clone(&feed.given);
        crate::aio::spawn_with(
            py,
            async move {
                // Cancel-safe: a cancelled `__anext__` loses no result; the next one takes it.
                reads
                    .next()
                    .await
                    .ok_or_else(|| pyo3::exceptions::PyStopAsyncIteration::new_err(()))
            },
            move |py, (index, result)| {
                let key = given
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&index)
                    .unwrap_or_else(|| py.None());
                let value = result_object(py, result)?;
                Ok((index, key, value).into_pyobject(py)?.into_any().unbind())
            },
        )
    }

    /// Stops the reads in flight (those already finished are dropped) and takes no more keys.
    fn close(&self) {
        let mut feed = self.feed.lock().unwrap_or_else(|e| e.into_inner());
        feed.closed = true;
        feed.keys.keys = None;
        if let Ok(mut reads) = self.reads.try_lock() {
            reads.cancel();
        }
    }
}

#[pymethods]
impl Client {
    /// Whole objects of many keys (str of `bucket`, or (bucket, key) pairs), `queue_depth` at a
    /// time: a list in the order of `keys` of a Buffer (or, with `into`, the (offset, length) of
    /// the object's bytes in it) or the key's exception (not raised).
    #[pyo3(signature = (bucket, keys, *, queue_depth=64, into=None))]
    fn get_many(
        &self,
        py: Python<'_>,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
        into: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (client, keys, into) = self.many_reads(bucket, keys, queue_depth, into)?;
        match into {
            Some(lent) => {
                let reads = read_all_into(client, keys, queue_depth, lent);
                placed_list(py, spawn_wait(py, reads, |_| Ok(()))?.py_err(py)?)
            }
            None => {
                let reads = read_all(client, keys, queue_depth);
                outcome_list(py, spawn_wait(py, reads, |_| Ok(()))?.py_err(py)?)
            }
        }
    }

    /// `get_many` as a coroutine (`into` is held until it completes).
    #[pyo3(signature = (bucket, keys, *, queue_depth=64, into=None))]
    fn get_many_async<'py>(
        &self,
        py: Python<'py>,
        bucket: Option<String>,
        keys: &Bound<'py, PyAny>,
        queue_depth: usize,
        into: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (client, keys, into) = self.many_reads(bucket, keys, queue_depth, into)?;
        match into {
            Some(lent) => aio::spawn(
                py,
                read_all_into(client, keys, queue_depth, lent),
                placed_list,
            ),
            None => aio::spawn(py, read_all(client, keys, queue_depth), outcome_list),
        }
    }

    /// An iterator of (index, key, Buffer or exception) as reads complete, taking keys from any
    /// iterable only as slots free up: at most `queue_depth` objects held beyond those taken.
    #[pyo3(signature = (bucket, keys, *, queue_depth=64))]
    fn iter_many(
        &self,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
    ) -> PyResult<ManyIterator> {
        ManyIterator::start(&self.inner(), bucket, keys, queue_depth)
    }

    /// `iter_many` for `async for`: an async iterator of (index, key, Buffer or exception).
    #[pyo3(signature = (bucket, keys, *, queue_depth=64))]
    fn iter_many_async(
        &self,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
    ) -> PyResult<AsyncManyIterator> {
        AsyncManyIterator::start(&self.inner(), bucket, keys, queue_depth)
    }
}

impl Client {
    /// What `get_many` and `get_many_async` check before reading: the client, the keys, and the
    /// whole of `into` lent to the reads when it is given.
    fn many_reads(
        &self,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
        into: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(brisk_client::Client, Keys, Option<LentSlice>)> {
        check_depth(queue_depth)?;
        let keys = key_pairs(bucket.as_deref(), keys)?;
        let lent = match into {
            Some(into) => {
                let into = WritableBuffer::get(into, "into")?;
                Some(into.lend(0, into.len()))
            }
            None => None,
        };
        Ok((self.inner(), keys, lent))
    }
}
