//! The plain values calls return: object metadata, listing entries, write results.

use std::time::SystemTime;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

static FROM_TIMESTAMP: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

/// An aware `datetime` in UTC for a Unix time in nanoseconds.
pub fn datetime(py: Python<'_>, unix_nanos: i128) -> PyResult<Py<PyAny>> {
    let (from_timestamp, utc) = FROM_TIMESTAMP.get_or_try_init(py, || -> PyResult<_> {
        let dt = py.import("datetime")?;
        Ok((
            dt.getattr("datetime")?.getattr("fromtimestamp")?.unbind(),
            dt.getattr("timezone")?.getattr("utc")?.unbind(),
        ))
    })?;
    let seconds = unix_nanos as f64 / 1e9;
    Ok(from_timestamp
        .bind(py)
        .call1((seconds, utc.bind(py)))?
        .unbind())
}

pub fn system_time(py: Python<'_>, t: Option<SystemTime>) -> PyResult<Option<Py<PyAny>>> {
    t.map(|t| {
        let nanos = match t.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        datetime(py, nanos)
    })
    .transpose()
}

/// What HEAD says about an object.
#[pyclass(module = "brisk", frozen, get_all)]
#[derive(Debug)]
pub struct ObjectMeta {
    pub size: u64,
    pub etag: Option<String>,
    pub last_modified: Option<Py<PyAny>>,
    pub content_type: Option<String>,
    pub cache_control: Option<String>,
    pub content_disposition: Option<String>,
    pub content_encoding: Option<String>,
    pub content_language: Option<String>,
    pub expires: Option<String>,
    pub checksum_crc32c: Option<String>,
    pub metadata: Py<PyDict>,
}

impl ObjectMeta {
    pub fn new(py: Python<'_>, meta: brisk_client::ObjectMeta) -> PyResult<Self> {
        let metadata = PyDict::new(py);
        for (name, value) in &meta.metadata {
            metadata.set_item(name, value)?;
        }
        Ok(Self {
            size: meta.content_length,
            etag: meta.etag,
            last_modified: system_time(py, meta.last_modified)?,
            content_type: meta.content_type,
            cache_control: meta.headers.cache_control,
            content_disposition: meta.headers.content_disposition,
            content_encoding: meta.headers.content_encoding,
            content_language: meta.headers.content_language,
            expires: meta.headers.expires,
            checksum_crc32c: meta.checksum_crc32c,
            metadata: metadata.unbind(),
        })
    }
}

#[pymethods]
impl ObjectMeta {
    fn __repr__(&self) -> String {
        format!(
            "ObjectMeta(size={}, etag={:?}, content_type={:?})",
            self.size, self.etag, self.content_type
        )
    }
}

/// One listing entry: an object, or a common prefix (`is_prefix`).
#[pyclass(module = "brisk", frozen, get_all)]
#[derive(Debug)]
pub struct ObjectEntry {
    pub key: String,
    pub size: u64,
    pub etag: Option<String>,
    pub last_modified: Option<Py<PyAny>>,
    pub storage_class: Option<String>,
    pub is_prefix: bool,
}

impl ObjectEntry {
    pub fn object(py: Python<'_>, e: brisk_wire::xml::ObjectEntry) -> PyResult<Self> {
        Ok(Self {
            last_modified: Some(datetime(py, e.last_modified.unix_timestamp_nanos())?),
            key: e.key,
            size: e.size,
            etag: Some(e.etag),
            storage_class: e.storage_class,
            is_prefix: false,
        })
    }

    pub fn prefix(prefix: String) -> Self {
        Self {
            key: prefix,
            size: 0,
            etag: None,
            last_modified: None,
            storage_class: None,
            is_prefix: true,
        }
    }
}

#[pymethods]
impl ObjectEntry {
    fn __repr__(&self) -> String {
        if self.is_prefix {
            format!("ObjectEntry(prefix {:?})", self.key)
        } else {
            format!("ObjectEntry({:?}, size={})", self.key, self.size)
        }
    }
}

/// What a PUT returned.
#[pyclass(module = "brisk", frozen, get_all)]
#[derive(Debug)]
pub struct PutResult {
    pub etag: Option<String>,
    pub checksum: String,
    pub checksum_algorithm: String,
}

#[pymethods]
impl PutResult {
    fn __repr__(&self) -> String {
        format!("PutResult(etag={:?})", self.etag)
    }
}

/// What an upload returned.
#[pyclass(module = "brisk", frozen, get_all)]
#[derive(Debug)]
pub struct UploadResult {
    pub etag: Option<String>,
    pub size: u64,
    pub parts: u32,
}

#[pymethods]
impl UploadResult {
    fn __repr__(&self) -> String {
        format!(
            "UploadResult(etag={:?}, size={}, parts={})",
            self.etag, self.size, self.parts
        )
    }
}

impl From<brisk_client::UploadResult> for UploadResult {
    fn from(r: brisk_client::UploadResult) -> Self {
        Self {
            etag: r.etag,
            size: r.size,
            parts: r.parts,
        }
    }
}
