//! `get_ranges`: many ranges of one or many keys as one batch of the Rust client's batch reader,
//! into Buffers or regions of the caller's `into`.

use std::sync::Arc;

use brisk_client::{BatchOptions, Destination, Filled, ReadRequest};
use brisk_mem::{BufferPool, ExactBuf, MAX_BLOCK_SIZE};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::aio;
use crate::buffer::{Buffer, LentSlice, WritableBuffer};
use crate::client::Client;
use crate::errors::{self, IntoPyResult};
use crate::runtime::spawn_wait;

#[pymethods]
impl Client {
    /// Many ranges at once over keep-alive connections (one per range in flight up to 64 by
    /// default, pipelined past that).
    #[pyo3(signature = (bucket, key, offsets, lengths, *, into=None, queue_depth=64, connections=None))]
    #[allow(clippy::too_many_arguments)]
    fn get_ranges(
        &self,
        py: Python<'_>,
        bucket: String,
        key: &Bound<'_, PyAny>,
        offsets: Vec<u64>,
        lengths: &Bound<'_, PyAny>,
        into: Option<&Bound<'_, PyAny>>,
        queue_depth: usize,
        connections: Option<usize>,
    ) -> PyResult<Py<PyAny>> {
        let batch =
            self.prepare_batch(py, key, offsets, lengths, into, queue_depth, connections)?;
        let (reads, shape) = batch.start(bucket);
        let outcomes = spawn_wait(py, reads, |_| Ok(()))?.py_err(py)?;
        shape.finish(py, outcomes)
    }

    /// `get_ranges` as a coroutine.
    #[pyo3(signature = (bucket, key, offsets, lengths, *, into=None, queue_depth=64, connections=None))]
    #[allow(clippy::too_many_arguments)]
    fn get_ranges_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: &Bound<'py, PyAny>,
        offsets: Vec<u64>,
        lengths: &Bound<'py, PyAny>,
        into: Option<&Bound<'py, PyAny>>,
        queue_depth: usize,
        connections: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let batch =
            self.prepare_batch(py, key, offsets, lengths, into, queue_depth, connections)?;
        let (reads, shape) = batch.start(bucket);
        aio::spawn(py, reads, move |py, outcomes| shape.finish(py, outcomes))
    }
}

impl Client {
    /// What `get_ranges` and `get_ranges_async` check and decide before the batch runs.
    #[allow(clippy::too_many_arguments)]
    fn prepare_batch(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        offsets: Vec<u64>,
        lengths: &Bound<'_, PyAny>,
        into: Option<&Bound<'_, PyAny>>,
        queue_depth: usize,
        connections: Option<usize>,
    ) -> PyResult<PreparedBatch> {
        let specs = range_specs(key, offsets, lengths)?;
        let options = batch_options(queue_depth, connections)?;
        let into = into.map(|b| WritableBuffer::get(b, "into")).transpose()?;
        let client = self.inner();
        if into.is_none() {
            check_fits(py, &client, held_bytes(&specs))?;
        }
        let lengths = specs.iter().map(|s| s.length).collect();
        let targets = batch_targets(specs, into.as_ref())?;
        Ok(PreparedBatch {
            client,
            targets,
            options,
            shape: BatchShape {
                lengths,
                with_into: into.is_some(),
            },
        })
    }
}

/// A `get_ranges` batch checked and ready to run.
struct PreparedBatch {
    client: brisk_client::Client,
    targets: Vec<(RangeSpec, RangeTarget)>,
    options: BatchOptions,
    shape: BatchShape,
}

/// What the result of a batch is made from besides its outcomes.
struct BatchShape {
    lengths: Vec<usize>,
    with_into: bool,
}

impl PreparedBatch {
    /// The batch's reads, to be run on the runtime, and what their outcomes become the call's
    /// result with: the same for `get_ranges` and `get_ranges_async`.
    fn start(
        self,
        bucket: String,
    ) -> (
        impl Future<Output = Result<RangeOutcomes, brisk_client::Error>> + Send + 'static,
        BatchShape,
    ) {
        let reads = run_batch(self.client, bucket, self.targets, self.options);
        (reads, self.shape)
    }
}

impl BatchShape {
    fn finish(self, py: Python<'_>, outcomes: RangeOutcomes) -> PyResult<Py<PyAny>> {
        finish_batch(py, outcomes, self.with_into, &self.lengths)
    }
}

/// One range of a `get_ranges` call.
struct RangeSpec {
    key: Arc<str>,
    offset: u64,
    length: usize,
}

fn range_specs(
    key: &Bound<'_, PyAny>,
    offsets: Vec<u64>,
    lengths: &Bound<'_, PyAny>,
) -> PyResult<Vec<RangeSpec>> {
    let n = offsets.len();
    let keys: Vec<Arc<str>> = if let Ok(one) = key.extract::<String>() {
        vec![Arc::from(one); n]
    } else {
        let many: Vec<String> = key.extract().map_err(|_| {
            PyTypeError::new_err("key must be a str or a sequence of str (one per range)")
        })?;
        if many.len() != n {
            return Err(PyValueError::new_err(format!(
                "{} keys for {n} offsets: give one key, or one per range",
                many.len()
            )));
        }
        many.into_iter().map(Arc::from).collect()
    };
    let lengths: Vec<usize> = if let Ok(one) = lengths.extract::<usize>() {
        vec![one; n]
    } else {
        let many: Vec<usize> = lengths.extract().map_err(|_| {
            PyTypeError::new_err("lengths must be an int or a sequence of int (one per range)")
        })?;
        if many.len() != n {
            return Err(PyValueError::new_err(format!(
                "{} lengths for {n} offsets",
                many.len()
            )));
        }
        many
    };
    Ok(keys
        .into_iter()
        .zip(offsets)
        .zip(lengths)
        .map(|((key, offset), length)| RangeSpec {
            key,
            offset,
            length,
        })
        .collect())
}

/// What a batch produced: per range, its completion's bytes or error, in the order given.
type RangeOutcomes = Vec<Option<Result<(usize, Option<Filled>), brisk_client::Error>>>;

/// Where one range of a `get_ranges` call goes.
enum RangeTarget {
    /// A region of the caller's `into` buffer.
    Into(LentSlice),
    /// A block of the client's pool (ranges up to [`MAX_BLOCK_SIZE`]), taken when the request is sent.
    Pooled,
    /// An exact buffer of the range's size (larger ranges), reserved before the batch starts.
    Exact(usize),
}

/// Runs the ranges as one batch and returns their outcomes by index.
async fn run_batch(
    client: brisk_client::Client,
    bucket: String,
    specs: Vec<(RangeSpec, RangeTarget)>,
    options: BatchOptions,
) -> Result<RangeOutcomes, brisk_client::Error> {
    let mut requests = Vec::with_capacity(specs.len());
    for (i, (spec, target)) in specs.into_iter().enumerate() {
        let destination = match target {
            RangeTarget::Into(lent) => Destination::Lent(Box::new(lent)),
            RangeTarget::Pooled => Destination::Pooled,
            // Populated by the read, a step ahead of the bytes, not all before the batch starts.
            RangeTarget::Exact(len) => Destination::Lent(Box::new(
                ExactBuf::for_overwrite(client.memory_budget(), len).await?,
            )),
        };
        requests.push(ReadRequest::new(
            i as u64,
            spec.key,
            spec.offset,
            spec.length,
            destination,
        ));
    }
    let mut outcomes: RangeOutcomes = (0..requests.len()).map(|_| None).collect();
    let mut reader = client.batch_reader(&bucket, options)?;
    reader.submit_all(requests);
    while let Some(done) = reader.next().await {
        let index = done.id as usize;
        outcomes[index] = Some(done.result.map(|n| (n, done.buffer)));
    }
    Ok(outcomes)
}

/// How many bytes the Buffers of a batch without `into` hold at once: a pooled block per range up
/// to [`MAX_BLOCK_SIZE`], the range's own size above.
fn held_bytes(specs: &[RangeSpec]) -> usize {
    specs
        .iter()
        .map(|s| {
            if s.length > MAX_BLOCK_SIZE {
                s.length
            } else {
                BufferPool::block_size_for(s.length)
            }
        })
        .sum()
}

/// Turns a batch's outcomes into Python results, raising `RangeErrors` if any range failed.
fn finish_batch(
    py: Python<'_>,
    outcomes: RangeOutcomes,
    with_into: bool,
    lengths: &[usize],
) -> PyResult<Py<PyAny>> {
    let results = PyList::empty(py);
    let failed = PyDict::new(py);
    let mut total = 0usize;
    for (index, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Some(Ok((n, filled))) => {
                total += n;
                if with_into {
                    results.append(n)?;
                } else {
                    let buffer = match filled {
                        Some(Filled::Block(block)) => Buffer::block(block, n),
                        Some(Filled::Lent(lent)) => {
                            let lent: Box<dyn std::any::Any + Send> = lent;
                            match lent.downcast::<ExactBuf>() {
                                Ok(exact) => Buffer::exact_prefix(*exact, n),
                                Err(_) => return Err(lost_buffer(py, index)),
                            }
                        }
                        _ => return Err(lost_buffer(py, index)),
                    };
                    results.append(Py::new(py, buffer)?)?;
                }
                if with_into && n < lengths[index] {
                    // A short range in `into` would leave the next range's bytes where this one's
                    // should end: say so rather than return a buffer with a hole.
                    failed.set_item(
                        index,
                        errors::plain(
                            py,
                            "InvalidRange",
                            format!(
                                "range {index} ran past the end of the object: {n} of {} bytes; the bytes after them in `into` were not written",
                                lengths[index]
                            ),
                        )
                        .into_value(py),
                    )?;
                }
            }
            Some(Err(e)) => {
                results.append(py.None())?;
                failed.set_item(index, errors::to_py(py, e).into_value(py))?;
            }
            None => {
                results.append(py.None())?;
                failed.set_item(
                    index,
                    errors::plain(py, "Error", format!("range {index} did not complete"))
                        .into_value(py),
                )?;
            }
        }
    }
    if failed.is_empty() {
        return Ok(if with_into {
            total.into_pyobject(py)?.into_any().unbind()
        } else {
            results.into_any().unbind()
        });
    }
    let indices: Vec<usize> = failed.keys().extract()?;
    let shown: Vec<String> = indices.iter().take(10).map(|i| i.to_string()).collect();
    let more = if indices.len() > 10 {
        format!(" and {} more", indices.len() - 10)
    } else {
        String::new()
    };
    let first = failed.values().get_item(0)?.str()?.to_string();
    let attributes = PyDict::new(py);
    attributes.set_item("errors", failed)?;
    attributes.set_item("results", results)?;
    Err(errors::new_error(
        py,
        "RangeErrors",
        format!(
            "{} of {} ranges failed (indices {}{more}); the first: {first}",
            indices.len(),
            lengths.len(),
            shown.join(", ")
        ),
        &attributes,
    ))
}

/// A completed range whose buffer did not come back as the kind it was sent with: a bug in brisk,
/// reported rather than panicking inside Python.
fn lost_buffer(py: Python<'_>, index: usize) -> PyErr {
    errors::plain(
        py,
        "Error",
        format!("range {index} completed without its buffer (please report this as a brisk bug)"),
    )
}

/// Decides where each range goes: lent regions of `into`, one after another in the order given,
/// or pooled blocks and exact buffers.
fn batch_targets(
    specs: Vec<RangeSpec>,
    into: Option<&WritableBuffer>,
) -> PyResult<Vec<(RangeSpec, RangeTarget)>> {
    if let Some(into) = into {
        let needed: usize = specs.iter().map(|s| s.length).sum();
        if into.len() < needed {
            return Err(PyValueError::new_err(format!(
                "`into` holds {} bytes; the ranges need {needed}",
                into.len()
            )));
        }
    }
    let mut start = 0usize;
    Ok(specs
        .into_iter()
        .map(|s| {
            let target = match into {
                Some(into) => {
                    let lent = into.lend(start, s.length);
                    start += s.length;
                    RangeTarget::Into(lent)
                }
                None if s.length > MAX_BLOCK_SIZE => RangeTarget::Exact(s.length),
                None => RangeTarget::Pooled,
            };
            (s, target)
        })
        .collect())
}

fn batch_options(queue_depth: usize, connections: Option<usize>) -> PyResult<BatchOptions> {
    if queue_depth == 0 || connections == Some(0) {
        return Err(PyValueError::new_err(
            "queue_depth and connections must be at least 1",
        ));
    }
    let mut options = BatchOptions {
        queue_depth,
        ..BatchOptions::default()
    };
    if let Some(c) = connections {
        options.connections = c;
    }
    Ok(options)
}

/// Fails at once when a batch's Buffers could never be held together under the budget.
fn check_fits(py: Python<'_>, client: &brisk_client::Client, bytes: usize) -> PyResult<()> {
    let capacity = client.memory_budget().capacity();
    if bytes > capacity {
        return Err(errors::plain(
            py,
            "MemoryBudgetExceeded",
            format!(
                "the ranges need {bytes} bytes of buffers at once, more than the client's whole memory budget ({capacity} bytes): pass into= (a buffer you own), read fewer ranges per call, or raise max_memory"
            ),
        ));
    }
    Ok(())
}
