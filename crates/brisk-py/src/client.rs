//! `brisk.Client`: the Rust client's calls from Python.
//!
//! Every call releases the GIL while it waits for I/O (see `runtime.rs`), so threads sharing one
//! client run their requests in parallel. Reads land in memory brisk allocated exactly
//! ([`Buffer`]) or in the caller's own buffer ([`WritableBuffer`]), never in an intermediate
//! `bytes`.
//!
//! # After `fork()`
//!
//! A child inherits the parent's pooled connections (sockets the parent still uses) and memory
//! budget (reservations made by threads that do not exist in the child). On its first call in a new
//! process a client therefore builds a fresh Rust client from the same configuration, with an empty
//! connection pool and a budget of the same capacity; the parent's client is leaked, never dropped,
//! because dropping its connections would deregister them from the epoll instance the parent still
//! shares.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use brisk_client::{
    BatchOptions, ClientConfig, CopyOptions, Destination, Filled, ListOptions, PayloadSigning,
    PutOptions, ReadRequest, TransferOptions, TransferProgress,
};
use brisk_mem::{BufferPool, ExactBuf, MAX_BLOCK_SIZE, MemoryBudget};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::aio;
use crate::buffer::{Buffer, LentSlice, ReadableBuffer, WritableBuffer};
use crate::errors::{self, IntoPyResult};
use crate::many;
use crate::progress::Progress;
use crate::put_many;
use crate::reader::{AsyncObjectReader, ObjectReader};
use crate::runtime::{spawn_wait, wait};
use crate::types::{ListIterator, ObjectMeta, PutResult, UploadResult, page_entries};
use crate::writer::{AsyncObjectWriter, ObjectWriter};

/// An S3 client with a memory budget.
#[pyclass(module = "brisk", frozen)]
#[derive(Debug)]
pub struct Client {
    /// The configuration the Rust client is built from (again, after a fork).
    config: ClientConfig,
    transfer: TransferOptions,
    /// `kept_buffers`, applied to the budget again after a fork (the child's budget is new).
    kept_buffers: Option<usize>,
    live: Mutex<Live>,
}

#[derive(Debug)]
struct Live {
    pid: u32,
    client: brisk_client::Client,
}

/// A size given as an int or a string such as "256MiB".
pub fn size_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    if let Ok(n) = value.extract::<usize>() {
        return Ok(n);
    }
    if let Ok(text) = value.extract::<String>() {
        return brisk_mem::parse_size(&text)
            .map_err(|e| PyValueError::new_err(format!("{what}: {e}")));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a number of bytes or a string such as \"256MiB\""
    )))
}

fn seconds(value: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyValueError::new_err(format!("{what} must be a positive number of seconds")))
}

impl Client {
    /// The Rust client of this process (rebuilt after a fork, see the module docs).
    fn inner(&self) -> brisk_client::Client {
        let pid = std::process::id();
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if live.pid != pid {
            let mut config = self.config.clone();
            config.memory_budget = MemoryBudget::new(live.client.memory_budget().capacity());
            if let Some(bytes) = self.kept_buffers {
                config.memory_budget.set_kept_limit(bytes);
            }
            let fresh = brisk_client::Client::new(config).expect(
                "a configuration that built a client in the parent builds one in the child",
            );
            std::mem::forget(std::mem::replace(&mut live.client, fresh));
            live.pid = pid;
        }
        live.client.clone()
    }

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
    ) -> PyResult<(brisk_client::Client, PreparedBatch)> {
        let specs = range_specs(key, offsets, lengths)?;
        let options = batch_options(queue_depth, connections)?;
        let into = into.map(|b| WritableBuffer::get(b, "into")).transpose()?;
        let client = self.inner();
        if into.is_none() {
            check_fits(py, &client, held_bytes(&specs))?;
        }
        let lengths = specs.iter().map(|s| s.length).collect();
        let targets = batch_targets(specs, into.as_ref())?;
        Ok((
            client,
            PreparedBatch {
                targets,
                options,
                lengths,
                with_into: into.is_some(),
            },
        ))
    }

    fn transfer_options(&self, progress: Option<TransferProgress>) -> TransferOptions {
        TransferOptions {
            progress,
            ..self.transfer.clone()
        }
    }

    /// An upload's options: the client's, with the content type and headers to store and
    /// whether the key must be free (`if_none_match="*"`).
    fn upload_options(
        &self,
        content_type: Option<String>,
        metadata: Metadata,
        headers: Headers,
        if_none_match: Option<&str>,
    ) -> PyResult<TransferOptions> {
        Ok(TransferOptions {
            content_type,
            headers: object_headers(metadata, headers)?,
            if_none_match_any: if_none_match_arg(if_none_match)?,
            ..self.transfer_options(None)
        })
    }

    /// A download's options: the client's, with the object's size when the caller gave it.
    fn download_options(
        &self,
        progress: Option<TransferProgress>,
        size: Option<u64>,
    ) -> TransferOptions {
        TransferOptions {
            known_size: size,
            ..self.transfer_options(progress)
        }
    }
}

/// A `get_ranges` batch checked and ready to run.
struct PreparedBatch {
    targets: Vec<(RangeSpec, RangeTarget)>,
    options: BatchOptions,
    lengths: Vec<usize>,
    with_into: bool,
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

/// `payload_signing="auto" | "signed" | "unsigned"`, as the CLI's `--payload-signing`.
fn payload_signing_arg(choice: &str) -> PyResult<PayloadSigning> {
    match choice {
        "auto" => Ok(PayloadSigning::Auto),
        "signed" => Ok(PayloadSigning::Signed),
        "unsigned" => Ok(PayloadSigning::Unsigned),
        other => Err(PyValueError::new_err(format!(
            "payload_signing is \"auto\", \"signed\" or \"unsigned\", not {other:?}"
        ))),
    }
}

/// A `metadata=` argument: user metadata as a dict of str to str.
type Metadata = Option<std::collections::BTreeMap<String, String>>;

/// A `headers=` argument: the other headers stored with an object, by their HTTP names.
type Headers = Option<std::collections::BTreeMap<String, String>>;

/// `metadata=` (names lower-cased, as S3 keeps them) and `headers=` (`Cache-Control`,
/// `Content-Disposition`, `Content-Encoding`, `Content-Language`, `Expires`, in any case) as what
/// an upload stores; any other header name is a `ValueError` before anything is sent.
fn object_headers(metadata: Metadata, headers: Headers) -> PyResult<brisk_client::ObjectHeaders> {
    let mut stored = brisk_client::ObjectHeaders {
        metadata: metadata
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
        ..Default::default()
    };
    for (name, value) in headers.unwrap_or_default() {
        let slot = match name.to_ascii_lowercase().as_str() {
            "cache-control" => &mut stored.cache_control,
            "content-disposition" => &mut stored.content_disposition,
            "content-encoding" => &mut stored.content_encoding,
            "content-language" => &mut stored.content_language,
            "expires" => &mut stored.expires,
            "content-type" => {
                return Err(PyValueError::new_err(
                    "give the Content-Type as content_type=, not in headers=",
                ));
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "headers= takes Cache-Control, Content-Disposition, Content-Encoding, \
                     Content-Language and Expires, not {other:?} (user metadata goes in metadata=)"
                )));
            }
        };
        *slot = Some(value);
    }
    Ok(stored)
}

/// `if_none_match=`: None, or "*" (write only if the key is free); other values (an ETag) are a
/// `ValueError` before anything is sent.
fn if_none_match_arg(if_none_match: Option<&str>) -> PyResult<bool> {
    match if_none_match {
        None => Ok(false),
        Some("*") => Ok(true),
        Some(other) => Err(PyValueError::new_err(format!(
            "if_none_match supports only \"*\" (write only if the key is free), not {other:?}"
        ))),
    }
}

fn put_options(
    content_type: Option<String>,
    metadata: Metadata,
    headers: Headers,
    if_none_match: Option<&str>,
    payload_signing: PayloadSigning,
) -> PyResult<PutOptions> {
    Ok(PutOptions {
        content_type,
        headers: object_headers(metadata, headers)?,
        if_none_match_any: if_none_match_arg(if_none_match)?,
        payload_signing,
        ..PutOptions::default()
    })
}

fn put_result(r: brisk_client::PutResult) -> PutResult {
    PutResult {
        etag: r.etag,
        checksum: r.checksum,
        checksum_algorithm: r.checksum_algorithm.algorithm().s3_name().to_owned(),
    }
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (
        endpoint_url=None, *, region=None, profile=None, access_key_id=None,
        secret_access_key=None, session_token=None, anonymous=false, max_memory=None,
        max_connections=None, connect_timeout=None, read_timeout=None, ca_bundle=None,
        addressing_style=None, part_size=None, parts_in_flight=None, pool_retention=None,
        kept_buffers=None, payload_signing=None, measure_streams=true, azure=false,
        azure_connection_string=None, azure_account=None, azure_key=None,
        azure_sas_token=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        endpoint_url: Option<String>,
        region: Option<String>,
        profile: Option<String>,
        access_key_id: Option<String>,
        secret_access_key: Option<String>,
        session_token: Option<String>,
        anonymous: bool,
        max_memory: Option<&Bound<'_, PyAny>>,
        max_connections: Option<usize>,
        connect_timeout: Option<f64>,
        read_timeout: Option<f64>,
        ca_bundle: Option<PathBuf>,
        addressing_style: Option<String>,
        part_size: Option<&Bound<'_, PyAny>>,
        parts_in_flight: Option<usize>,
        pool_retention: Option<&Bound<'_, PyAny>>,
        kept_buffers: Option<&Bound<'_, PyAny>>,
        payload_signing: Option<String>,
        measure_streams: bool,
        azure: bool,
        azure_connection_string: Option<String>,
        azure_account: Option<String>,
        azure_key: Option<String>,
        azure_sas_token: Option<String>,
    ) -> PyResult<Self> {
        let py_err = |e: brisk_client::ConfigError| {
            Python::attach(|py| errors::to_py(py, brisk_client::Error::Config(e)))
        };
        let mut builder = brisk_client::Client::builder().anonymous(anonymous);
        let azure = azure
            || azure_connection_string.is_some()
            || azure_account.is_some()
            || azure_key.is_some()
            || azure_sas_token.is_some();
        if azure {
            let s3_only = [
                ("region", region.is_some()),
                ("profile", profile.is_some()),
                ("access_key_id", access_key_id.is_some()),
                ("secret_access_key", secret_access_key.is_some()),
                ("session_token", session_token.is_some()),
                ("addressing_style", addressing_style.is_some()),
            ];
            if let Some((name, _)) = s3_only.iter().find(|(_, given)| *given) {
                return Err(PyValueError::new_err(format!(
                    "{name} is an S3 setting; an Azure client takes azure_connection_string, \
                     azure_account with azure_key or azure_sas_token (or AZURE_STORAGE_*)"
                )));
            }
            let mut settings = brisk_client::AzureSettings::new();
            if let Some(text) = azure_connection_string {
                settings = settings.connection_string(text);
            }
            if let Some(account) = azure_account {
                settings = settings.account(account);
            }
            if let Some(key) = azure_key {
                settings = settings.key(key);
            }
            if let Some(token) = azure_sas_token {
                settings = settings.sas_token(token);
            }
            builder = builder.azure(settings);
        }
        if let Some(url) = endpoint_url {
            builder = builder.endpoint(url);
        }
        if let Some(region) = region {
            builder = builder.region(region);
        }
        if let Some(profile) = profile {
            builder = builder.profile(profile);
        }
        match (access_key_id, secret_access_key) {
            (Some(id), Some(secret)) => {
                let credentials = match session_token {
                    Some(token) => brisk_client::Credentials::with_session_token(id, secret, token),
                    None => brisk_client::Credentials::new(id, secret),
                };
                builder = builder.credentials(credentials);
            }
            (None, None) => {}
            _ => {
                return Err(PyValueError::new_err(
                    "access_key_id and secret_access_key go together: give both or neither",
                ));
            }
        }
        // The machine-sized default budget is large to let one get of a large object work, not to
        // keep more idle blocks: its retention stays a quarter of the 1 GiB of before.
        let mut capacity = brisk_mem::BufferPool::global()
            .budget()
            .capacity()
            .min(brisk_mem::DEFAULT_GLOBAL_BUDGET_BYTES);
        if let Some(bytes) = max_memory {
            let bytes = size_arg(bytes, "max_memory")?;
            if bytes == 0 {
                return Err(PyValueError::new_err("max_memory must be at least 1 byte"));
            }
            capacity = bytes;
            builder = builder.memory_budget(MemoryBudget::new(bytes));
        }
        // Python callers hold whole batches of Buffers and free them together (a data loader's
        // batch of samples), so the pool keeps a quarter of the budget for reuse, not the Rust
        // default of 64 MiB: with 64 MiB, batches of 512 x 256 KiB faulted half their pages in
        // afresh each time and cost twice the CPU per GiB (docs/python.md).
        let retention = match pool_retention {
            Some(bytes) => size_arg(bytes, "pool_retention")?,
            None => (capacity / 4).max(brisk_mem::DEFAULT_RETENTION_BYTES),
        };
        builder = builder.pool_retention(retention);
        if let Some(n) = max_connections {
            builder = builder.max_connections_per_host(n);
        }
        if let Some(t) = connect_timeout {
            builder = builder.connect_timeout(seconds(t, "connect_timeout")?);
        }
        if let Some(t) = read_timeout {
            builder = builder.read_timeout(seconds(t, "read_timeout")?);
        }
        if let Some(path) = ca_bundle {
            builder = builder.ca_bundle(path);
        }
        if let Some(style) = addressing_style {
            builder = builder.addressing(match style.as_str() {
                "path" => brisk_client::Addressing::Path,
                "virtual" => brisk_client::Addressing::VirtualHosted,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "addressing_style is \"path\" or \"virtual\", not {other:?}"
                    )));
                }
            });
        }
        let mut config = builder.resolve().map_err(py_err)?;
        if max_memory.is_some() {
            config.memory_budget_source = brisk_mem::BudgetSource::Setting("max_memory");
        }
        let mut transfer = TransferOptions::default();
        if let Some(size) = part_size {
            transfer.part_size = size_arg(size, "part_size")?;
        }
        if let Some(n) = parts_in_flight {
            transfer.parts_in_flight = n;
        }
        if let Some(choice) = payload_signing {
            transfer.payload_signing = payload_signing_arg(&choice)?;
        }
        if !measure_streams {
            transfer.measure_streams = None;
        }
        let kept_buffers = kept_buffers
            .map(|bytes| size_arg(bytes, "kept_buffers"))
            .transpose()?;
        if let Some(bytes) = kept_buffers {
            config.memory_budget.set_kept_limit(bytes);
        }
        let client = brisk_client::Client::new(config.clone()).map_err(py_err)?;
        Ok(Self {
            config,
            transfer,
            kept_buffers,
            live: Mutex::new(Live {
                pid: std::process::id(),
                client,
            }),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "brisk.Client(endpoint_url={:?}, region={:?})",
            self.config.endpoint.to_string(),
            self.config.region
        )
    }

    /// The endpoint requests go to.
    #[getter]
    fn endpoint_url(&self) -> String {
        self.config.endpoint.to_string()
    }

    /// The service the client speaks: "s3" or "azure".
    #[getter]
    fn service(&self) -> &'static str {
        if self.config.azure.is_some() {
            "azure"
        } else {
            "s3"
        }
    }

    /// The region requests are signed for.
    #[getter]
    fn region(&self) -> String {
        self.config.region.clone()
    }

    /// The memory budget: capacity, reserved, available bytes and waiting calls, and where the
    /// capacity came from (`source`).
    fn memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let client = self.inner();
        let budget = client.memory_budget();
        let d = PyDict::new(py);
        d.set_item("capacity", budget.capacity())?;
        d.set_item("source", self.config.memory_budget_source.label())?;
        d.set_item("reserved", budget.reserved())?;
        d.set_item("available", budget.available())?;
        d.set_item("waiting", budget.waiting())?;
        let metrics = budget.metrics();
        d.set_item("kept", metrics.kept_bytes)?;
        d.set_item("kept_reuses", metrics.kept_reuses)?;
        Ok(d)
    }

    /// Counters since the client was built.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.inner().metrics();
        let d = PyDict::new(py);
        d.set_item("requests", m.requests_sent)?;
        d.set_item("connections_opened", m.connections_opened)?;
        d.set_item("connections_reused", m.connections_reused)?;
        d.set_item("connections_discarded", m.connections_discarded)?;
        d.set_item("retries", m.retries)?;
        d.set_item("resumed_reads", m.resumed_reads)?;
        d.set_item("file_bytes_read", m.file_bytes_read)?;
        d.set_item("file_bytes_sent", m.file_bytes_sent)?;
        Ok(d)
    }

    // ----- reads -------------------------------------------------------------------------------

    /// The whole object in one buffer of exactly its size.
    fn get(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<Buffer> {
        let client = self.inner();
        let buf = wait(py, client.get_bytes(bucket, key))?.py_err(py)?;
        Ok(Buffer::exact(buf))
    }

    /// Reads into a writable C-contiguous buffer; returns the bytes read.
    #[pyo3(signature = (bucket, key, buffer, *, offset=0, length=None))]
    fn get_into(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        buffer: &Bound<'_, PyAny>,
        offset: u64,
        length: Option<usize>,
    ) -> PyResult<usize> {
        let dst = WritableBuffer::get(buffer, "buffer")?;
        let len = into_length(&dst, length)?;
        let client = self.inner();
        let slice = &mut dst.as_mut_slice()[..len];
        let read = if offset == 0 && length.is_none() {
            wait(py, client.get_into(bucket, key, slice))?
        } else {
            wait(py, client.get_range_into(bucket, key, offset, slice))?
        };
        read.py_err(py)
    }

    /// `length` bytes from `offset` (fewer at the end of the object) in one exact buffer. With
    /// `wait=False`, None (and no request) when the memory budget would make the call wait, for
    /// a reader whose consumer may hold every Buffer it was given (see `brisk.fsspec`).
    #[pyo3(signature = (bucket, key, offset, length, *, wait=true))]
    fn get_range(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        offset: u64,
        length: usize,
        wait: bool,
    ) -> PyResult<Option<Buffer>> {
        let client = self.inner();
        if !wait {
            let read =
                crate::runtime::wait(py, client.try_get_range_bytes(bucket, key, offset, length))?;
            return Ok(read
                .py_err(py)?
                .map(|(buf, n)| Buffer::exact_prefix(buf, n)));
        }
        let (buf, n) =
            crate::runtime::wait(py, client.get_range_bytes(bucket, key, offset, length))?
                .py_err(py)?;
        Ok(Some(Buffer::exact_prefix(buf, n)))
    }

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
        let (client, batch) =
            self.prepare_batch(py, key, offsets, lengths, into, queue_depth, connections)?;
        let PreparedBatch {
            targets,
            options,
            lengths,
            with_into,
        } = batch;
        let outcomes =
            spawn_wait(py, run_batch(client, bucket, targets, options), |_| Ok(()))?.py_err(py)?;
        finish_batch(py, outcomes, with_into, &lengths)
    }

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
        many::check_depth(queue_depth)?;
        let keys = many::key_pairs(bucket.as_deref(), keys)?;
        let client = self.inner();
        if let Some(into) = into {
            let into = WritableBuffer::get(into, "into")?;
            let lent = into.lend(0, into.len());
            let outcomes = spawn_wait(
                py,
                many::read_all_into(client, keys, queue_depth, lent),
                |_| Ok(()),
            )?
            .py_err(py)?;
            return many::placed_list(py, outcomes);
        }
        let outcomes =
            spawn_wait(py, many::read_all(client, keys, queue_depth), |_| Ok(()))?.py_err(py)?;
        many::outcome_list(py, outcomes)
    }

    /// An iterator of (index, key, Buffer or exception) as reads complete, taking keys from any
    /// iterable only as slots free up: at most `queue_depth` objects held beyond those taken.
    #[pyo3(signature = (bucket, keys, *, queue_depth=64))]
    fn iter_many(
        &self,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
    ) -> PyResult<many::ManyIterator> {
        many::ManyIterator::start(&self.inner(), bucket, keys, queue_depth)
    }

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
        put_many::put_many(
            py,
            &self.inner(),
            bucket.as_deref(),
            items,
            queue_depth,
            options,
        )
    }

    /// Metadata of an object (HEAD).
    fn head(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<ObjectMeta> {
        let client = self.inner();
        let meta = wait(py, client.head(bucket, key))?.py_err(py)?;
        ObjectMeta::new(py, meta)
    }

    /// Downloads to a file with parallel ranged GETs; returns the size. `size`, when the caller
    /// knows it (from a listing), makes an object of one part a single GET with no HEAD.
    #[pyo3(signature = (bucket, key, path, *, progress=None, size=None))]
    fn download(
        &self,
        py: Python<'_>,
        bucket: String,
        key: String,
        path: PathBuf,
        progress: Option<Py<PyAny>>,
        size: Option<u64>,
    ) -> PyResult<u64> {
        let client = self.inner();
        let Some(callback) = progress else {
            let options = self.download_options(None, size);
            let job = async move { client.download(&bucket, &key, &path, options).await };
            return spawn_wait(py, job, |_| Ok(()))?.py_err(py);
        };
        // The total is the size given, or comes from a HEAD: one small request more, made only to
        // report progress.
        let total = match size {
            Some(size) => size,
            None => {
                wait(py, client.head(&bucket, &key))?
                    .py_err(py)?
                    .content_length
            }
        };
        let counter = TransferProgress::new();
        let options = self.download_options(Some(counter.clone()), size);
        let mut progress = Progress::new(Some(callback), Some(total));
        let job = async move { client.download(&bucket, &key, &path, options).await };
        let size = spawn_wait(py, job, |py| progress.report(py, counter.bytes()))?.py_err(py)?;
        progress.finish(py, size)?;
        Ok(size)
    }

    /// Uploads a file: one PUT, or a multipart upload from pooled blocks. `if_none_match="*"`
    /// stores it only if the key is free, checked on the PUT or on the multipart upload's
    /// completion (`PreconditionFailed` otherwise, and nothing is left behind).
    #[pyo3(signature = (path, bucket, key, *, progress=None, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn upload(
        &self,
        py: Python<'_>,
        path: PathBuf,
        bucket: String,
        key: String,
        progress: Option<Py<PyAny>>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<UploadResult> {
        let client = self.inner();
        let counter = TransferProgress::new();
        let options = TransferOptions {
            progress: Some(counter.clone()),
            ..self.upload_options(content_type, metadata, headers, if_none_match)?
        };
        let total = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let mut progress = Progress::new(progress, Some(total));
        let job = async move { client.upload(&bucket, &key, &path, options).await };
        let result = spawn_wait(py, job, |py| progress.report(py, counter.bytes()))?.py_err(py)?;
        progress.finish(py, result.size)?;
        Ok(result.into())
    }

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
        let sent = TransferProgress::new();
        let options = TransferOptions {
            progress: Some(sent.clone()),
            ..self.upload_options(content_type, metadata, headers, if_none_match)?
        };
        let writer = self
            .inner()
            .object_writer(bucket, key, options)
            .py_err(py)?;
        let progress = Progress::new(progress, None);
        Ok(crate::fileobj::upload_fileobj(py, fileobj, writer, &sent, progress)?.into())
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

    /// A binary file opened for writing whose bytes become `bucket`/`key` on `close()`, in
    /// bounded memory whatever its size (see `brisk.ObjectWriter`). With `if_none_match="*"`,
    /// `close()` stores it only if the key is still free then.
    #[pyo3(signature = (bucket, key, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn open_writer(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<ObjectWriter> {
        let writer = self
            .inner()
            .object_writer(
                bucket,
                key,
                self.upload_options(content_type, metadata, headers, if_none_match)?,
            )
            .py_err(py)?;
        Ok(ObjectWriter::new(bucket, key, writer))
    }

    // ----- writes and the rest -----------------------------------------------------------------

    /// Stores `data` (any C-contiguous buffer) in one PUT, sent from where it is.
    #[pyo3(signature = (bucket, key, data, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        data: &Bound<'_, PyAny>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<PutResult> {
        let options = put_options(
            content_type,
            metadata,
            headers,
            if_none_match,
            self.transfer.payload_signing,
        )?;
        let data = ReadableBuffer::get(data)?;
        let client = self.inner();
        let result = wait(py, client.put_with(bucket, key, data.as_slice(), &options))?;
        Ok(put_result(result.py_err(py)?))
    }

    /// Deletes an object (a missing key is not an error, as in S3).
    fn delete(&self, py: Python<'_>, bucket: &str, key: &str) -> PyResult<()> {
        let client = self.inner();
        wait(py, client.delete(bucket, key))?.py_err(py)
    }

    /// Deletes keys in batches of 1,000; returns (key, code) for the keys not deleted.
    fn delete_many(
        &self,
        py: Python<'_>,
        bucket: &str,
        keys: Vec<String>,
    ) -> PyResult<Vec<(String, String)>> {
        let client = self.inner();
        let result = wait(py, client.delete_many(bucket, &keys))?.py_err(py)?;
        Ok(result.errors.into_iter().map(|e| (e.key, e.code)).collect())
    }

    /// Server-side copy; returns the new ETag.
    fn copy(
        &self,
        py: Python<'_>,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
    ) -> PyResult<Option<String>> {
        let client = self.inner();
        let job = client.copy_object(
            src_bucket,
            src_key,
            dst_bucket,
            dst_key,
            CopyOptions::default(),
        );
        Ok(Some(wait(py, job)?.py_err(py)?.etag))
    }

    /// Lists a bucket, page by page as iteration goes.
    #[pyo3(signature = (bucket, prefix=None, *, delimiter=None, start_after=None, page_size=None))]
    fn list(
        &self,
        bucket: &str,
        prefix: Option<String>,
        delimiter: Option<String>,
        start_after: Option<String>,
        page_size: Option<u32>,
    ) -> ListIterator {
        let options = ListOptions {
            prefix,
            delimiter,
            max_keys: page_size,
            start_after,
        };
        ListIterator::new(self.inner().list(bucket, options))
    }

    /// A presigned URL for `method` on the object, valid for `expires_in` seconds (1 s to 7 days).
    #[pyo3(signature = (bucket, key, *, method="GET", expires_in=3600.0))]
    fn presign(
        &self,
        py: Python<'_>,
        bucket: &str,
        key: &str,
        method: &str,
        expires_in: f64,
    ) -> PyResult<String> {
        let method = method.to_ascii_uppercase();
        if !matches!(method.as_str(), "GET" | "PUT" | "HEAD" | "DELETE") {
            return Err(PyValueError::new_err(format!(
                "method is GET, PUT, HEAD or DELETE, not {method:?}"
            )));
        }
        let expires = seconds(expires_in, "expires_in")?;
        self.inner()
            .presign(&method, bucket, key, expires, SystemTime::now())
            .py_err(py)
    }

    /// Creates a bucket in the client's region.
    fn create_bucket(&self, py: Python<'_>, bucket: &str) -> PyResult<()> {
        let client = self.inner();
        wait(py, client.create_bucket(bucket))?.py_err(py)
    }

    /// Deletes an empty bucket.
    fn delete_bucket(&self, py: Python<'_>, bucket: &str) -> PyResult<()> {
        let client = self.inner();
        wait(py, client.delete_bucket(bucket))?.py_err(py)
    }

    /// The names of the buckets the credentials own.
    fn list_buckets(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let client = self.inner();
        let buckets = wait(py, client.list_buckets())?.py_err(py)?;
        Ok(buckets.into_iter().map(|b| b.name).collect())
    }

    // ----- asyncio -----------------------------------------------------------------------------

    /// `get` as a coroutine.
    fn get_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.get_bytes(&bucket, &key).await },
            |py, buf| Ok(Py::new(py, Buffer::exact(buf))?.into_any()),
        )
    }

    /// `get_into` as a coroutine (the buffer is held until it completes).
    #[pyo3(signature = (bucket, key, buffer, *, offset=0, length=None))]
    fn get_into_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        buffer: &Bound<'py, PyAny>,
        offset: u64,
        length: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dst = WritableBuffer::get(buffer, "buffer")?;
        let len = into_length(&dst, length)?;
        let whole = offset == 0 && length.is_none();
        let client = self.inner();
        aio::spawn(
            py,
            async move {
                let slice = &mut dst.as_mut_slice()[..len];
                if whole {
                    client.get_into(&bucket, &key, slice).await
                } else {
                    client.get_range_into(&bucket, &key, offset, slice).await
                }
            },
            |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
        )
    }

    /// `get_range` as a coroutine.
    fn get_range_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        offset: u64,
        length: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.get_range_bytes(&bucket, &key, offset, length).await },
            |py, (buf, n)| Ok(Py::new(py, Buffer::exact_prefix(buf, n))?.into_any()),
        )
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
        let (client, batch) =
            self.prepare_batch(py, key, offsets, lengths, into, queue_depth, connections)?;
        let PreparedBatch {
            targets,
            options,
            lengths,
            with_into,
        } = batch;
        aio::spawn(
            py,
            async move { run_batch(client, bucket, targets, options).await },
            move |py, outcomes| finish_batch(py, outcomes, with_into, &lengths),
        )
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
        many::check_depth(queue_depth)?;
        let keys = many::key_pairs(bucket.as_deref(), keys)?;
        let client = self.inner();
        if let Some(into) = into {
            let into = WritableBuffer::get(into, "into")?;
            let lent = into.lend(0, into.len());
            return aio::spawn(
                py,
                many::read_all_into(client, keys, queue_depth, lent),
                many::placed_list,
            );
        }
        aio::spawn(
            py,
            many::read_all(client, keys, queue_depth),
            many::outcome_list,
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
        many::check_depth(queue_depth)?;
        let options = self.upload_options(content_type, metadata, headers, if_none_match)?;
        let items = put_many::checked_items(py, bucket.as_deref(), items)?;
        let batch = {
            let _context = crate::runtime::runtime().enter();
            put_many::Batch::new(&self.inner(), queue_depth, options).py_err(py)?
        };
        aio::spawn(
            py,
            async move { Ok(batch.write_all(items).await) },
            |py, batch| batch.into_list(py),
        )
    }

    /// `iter_many` for `async for`: an async iterator of (index, key, Buffer or exception).
    #[pyo3(signature = (bucket, keys, *, queue_depth=64))]
    fn iter_many_async(
        &self,
        bucket: Option<String>,
        keys: &Bound<'_, PyAny>,
        queue_depth: usize,
    ) -> PyResult<many::AsyncManyIterator> {
        many::AsyncManyIterator::start(&self.inner(), bucket, keys, queue_depth)
    }

    /// `head` as a coroutine.
    fn head_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.head(&bucket, &key).await },
            |py, meta| Ok(Py::new(py, ObjectMeta::new(py, meta)?)?.into_any()),
        )
    }

    /// `put` as a coroutine (the data is held until it completes).
    #[pyo3(signature = (bucket, key, data, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn put_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        data: &Bound<'py, PyAny>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = put_options(
            content_type,
            metadata,
            headers,
            if_none_match,
            self.transfer.payload_signing,
        )?;
        let data = ReadableBuffer::get(data)?;
        let client = self.inner();
        aio::spawn(
            py,
            async move {
                client
                    .put_with(&bucket, &key, data.as_slice(), &options)
                    .await
            },
            |py, r| Ok(Py::new(py, put_result(r))?.into_any()),
        )
    }

    /// `delete` as a coroutine.
    fn delete_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.delete(&bucket, &key).await },
            |py, ()| Ok(py.None()),
        )
    }

    /// `copy` as a coroutine.
    fn copy_async<'py>(
        &self,
        py: Python<'py>,
        src_bucket: String,
        src_key: String,
        dst_bucket: String,
        dst_key: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move {
                client
                    .copy_object(
                        &src_bucket,
                        &src_key,
                        &dst_bucket,
                        &dst_key,
                        CopyOptions::default(),
                    )
                    .await
            },
            |py, r| Ok(r.etag.into_pyobject(py)?.into_any().unbind()),
        )
    }

    /// The whole listing as a list, as a coroutine (pages are fetched one after another);
    /// with `limit`, at most that many entries, asked for in as few pages as that takes (an
    /// existence check is `limit=1`: one request however large the listing).
    #[pyo3(signature = (bucket, prefix=None, *, delimiter=None, start_after=None, limit=None))]
    fn list_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        prefix: Option<String>,
        delimiter: Option<String>,
        start_after: Option<String>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if limit == Some(0) {
            return Err(PyValueError::new_err("limit must be at least 1"));
        }
        let options = ListOptions {
            prefix,
            delimiter,
            max_keys: limit.map(|n| n.min(1000) as u32),
            start_after,
        };
        let mut pages = self.inner().list(&bucket, options);
        let limit = limit.unwrap_or(usize::MAX);
        aio::spawn(
            py,
            async move {
                let mut entries = Vec::new();
                while entries.len() < limit {
                    let Some(page) = pages.next_page().await? else {
                        break;
                    };
                    entries.extend(page_entries(page));
                }
                entries.truncate(limit);
                Ok(entries)
            },
            |py, entries| {
                let list = PyList::empty(py);
                for e in entries {
                    list.append(Py::new(py, e.into_py(py)?)?)?;
                }
                Ok(list.into_any().unbind())
            },
        )
    }

    /// `download` as a coroutine; `progress(bytes_done, total)` is called from brisk's runtime
    /// (not the event loop) at most every 0.1 s and once at the end.
    #[pyo3(signature = (bucket, key, path, *, progress=None, size=None))]
    #[allow(clippy::too_many_arguments)]
    fn download_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        key: String,
        path: PathBuf,
        progress: Option<Py<PyAny>>,
        size: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        let Some(callback) = progress else {
            let options = self.download_options(None, size);
            return aio::spawn(
                py,
                async move { client.download(&bucket, &key, &path, options).await },
                |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
            );
        };
        let counter = TransferProgress::new();
        let options = self.download_options(Some(counter.clone()), size);
        aio::spawn_with(
            py,
            async move {
                // The total is the size given, or comes from a HEAD, as for `download`.
                let total = match size {
                    Some(size) => size,
                    None => {
                        let head = client.head(&bucket, &key).await;
                        head.map_err(aio::py_error)?.content_length
                    }
                };
                let mut progress = Progress::new(Some(callback), Some(total));
                let job = client.download(&bucket, &key, &path, options);
                let size = aio::report_while(job, &counter, &mut progress).await?;
                aio::in_python(|py| progress.finish(py, size))?;
                Ok::<_, PyErr>(size)
            },
            |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
        )
    }

    /// `upload` as a coroutine; `progress(bytes_sent, total)` is called from brisk's runtime (not
    /// the event loop) at most every 0.1 s and once at the end.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, bucket, key, *, progress=None, content_type=None, if_none_match=None, metadata=None, headers=None))]
    fn upload_async<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        bucket: String,
        key: String,
        progress: Option<Py<PyAny>>,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        let counter = TransferProgress::new();
        let options = TransferOptions {
            progress: Some(counter.clone()),
            ..self.upload_options(content_type, metadata, headers, if_none_match)?
        };
        let total = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let mut progress = Progress::new(progress, Some(total));
        aio::spawn_with(
            py,
            async move {
                let job = client.upload(&bucket, &key, &path, options);
                let result = aio::report_while(job, &counter, &mut progress).await?;
                aio::in_python(|py| progress.finish(py, result.size))?;
                Ok::<_, PyErr>(result)
            },
            |py, r| Ok(Py::new(py, UploadResult::from(r))?.into_any()),
        )
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
        let sent = TransferProgress::new();
        let options = TransferOptions {
            progress: Some(sent.clone()),
            ..self.upload_options(content_type, metadata, headers, if_none_match)?
        };
        let writer = self
            .inner()
            .object_writer(bucket, key, options)
            .py_err(py)?;
        let progress = Progress::new(progress, None);
        let fileobj = fileobj.clone().unbind();
        aio::spawn_with(
            py,
            crate::fileobj::upload_fileobj_async(fileobj, readinto, writer, sent, progress),
            |py, r| Ok(Py::new(py, UploadResult::from(r))?.into_any()),
        )
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
            |py, n| Ok(n.into_pyobject(py)?.into_any().unbind()),
        )
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

    /// `open_writer` as a coroutine: a `brisk.AsyncObjectWriter` (awaitable `write`, `close`,
    /// `abort`; `async with`). Nothing is sent until the first part is full.
    #[pyo3(signature = (bucket, key, *, content_type=None, if_none_match=None, metadata=None, headers=None))]
    #[allow(clippy::too_many_arguments)]
    fn open_writer_async<'py>(
        &self,
        py: Python<'py>,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        if_none_match: Option<&str>,
        metadata: Metadata,
        headers: Headers,
    ) -> PyResult<Bound<'py, PyAny>> {
        let writer = self
            .inner()
            .object_writer(
                bucket,
                key,
                self.upload_options(content_type, metadata, headers, if_none_match)?,
            )
            .py_err(py)?;
        let writer = Py::new(py, AsyncObjectWriter::new(bucket, key, writer))?;
        aio::ready(py, writer.into_any())
    }

    /// `delete_many` as a coroutine.
    fn delete_many_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        keys: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.delete_many(&bucket, &keys).await },
            |py, result| {
                let failed: Vec<(String, String)> =
                    result.errors.into_iter().map(|e| (e.key, e.code)).collect();
                Ok(failed.into_pyobject(py)?.into_any().unbind())
            },
        )
    }

    /// `create_bucket` as a coroutine.
    fn create_bucket_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.create_bucket(&bucket).await },
            |py, ()| Ok(py.None()),
        )
    }

    /// `delete_bucket` as a coroutine.
    fn delete_bucket_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.delete_bucket(&bucket).await },
            |py, ()| Ok(py.None()),
        )
    }

    /// `list_buckets` as a coroutine.
    fn list_buckets_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.inner();
        aio::spawn(
            py,
            async move { client.list_buckets().await },
            |py, buckets| {
                let names: Vec<String> = buckets.into_iter().map(|b| b.name).collect();
                Ok(names.into_pyobject(py)?.into_any().unbind())
            },
        )
    }
}

/// The bytes of `dst` a `get_into` may fill: all of it, or `length` of it.
fn into_length(dst: &WritableBuffer, length: Option<usize>) -> PyResult<usize> {
    match length {
        None => Ok(dst.len()),
        Some(n) if n <= dst.len() => Ok(n),
        Some(n) => Err(PyValueError::new_err(format!(
            "length {n} is larger than the buffer ({} bytes)",
            dst.len()
        ))),
    }
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
