//! `brisk.Client`: the Rust client's calls from Python.
//!
//! Every call releases the GIL while it waits for I/O (see `runtime.rs`), so threads sharing one
//! client run their requests in parallel. Reads land in memory brisk allocated exactly
//! ([`Buffer`](crate::buffer::Buffer)) or in the caller's own buffer
//! ([`WritableBuffer`](crate::buffer::WritableBuffer)), never in an intermediate `bytes`.
//!
//! # After `fork()`
//!
//! A child inherits the parent's pooled connections (sockets the parent still uses) and memory
//! budget (reservations made by threads that do not exist in the child). On its first call in a new
//! process a client therefore builds a fresh Rust client from the same configuration, with an empty
//! connection pool and a budget of the same capacity; the parent's client is leaked, never dropped,
//! because dropping its connections would deregister them from the epoll instance the parent still
//! shares.
//!
//! The calls themselves are in the module of their operation, each `_async` form beside its
//! blocking one (see the crate's docs); this module holds what they share: the client of this
//! process and the options its configuration gives every transfer.

use std::path::PathBuf;
use std::sync::Mutex;

use brisk_client::{ClientConfig, PayloadSigning, TransferOptions, TransferProgress};
use brisk_mem::MemoryBudget;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{
    Headers, Metadata, if_none_match_arg, object_headers, payload_signing_arg, seconds, size_arg,
};
use crate::errors;

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

impl Client {
    /// The Rust client of this process (rebuilt after a fork, see the module docs).
    pub(crate) fn inner(&self) -> brisk_client::Client {
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

    /// How `put` protects the bytes it sends, as the client was configured.
    pub(crate) fn payload_signing(&self) -> PayloadSigning {
        self.transfer.payload_signing
    }

    pub(crate) fn transfer_options(&self, progress: Option<TransferProgress>) -> TransferOptions {
        TransferOptions {
            progress,
            ..self.transfer.clone()
        }
    }

    /// An upload's options: the client's, with the content type and headers to store and
    /// whether the key must be free (`if_none_match="*"`).
    pub(crate) fn upload_options(
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
    pub(crate) fn download_options(
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
}
