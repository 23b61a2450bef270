//! `list`: the keys of a bucket, page by page.

use std::collections::VecDeque;

use brisk_client::{ListObjects, ListOptions};
use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::aio;
use crate::client::Client;
use crate::errors::IntoPyResult;
use crate::runtime::wait;
use crate::types::ObjectEntry;

#[pymethods]
impl Client {
    /// Lists a bucket, page by page (of `page_size` keys, up to 1,000) as iteration goes; with
    /// `limit`, at most that many entries, asked for in as few pages as that takes.
    #[pyo3(signature = (bucket, prefix=None, *, delimiter=None, start_after=None, page_size=None, limit=None))]
    fn list(
        &self,
        bucket: &str,
        prefix: Option<String>,
        delimiter: Option<String>,
        start_after: Option<String>,
        page_size: Option<u32>,
        limit: Option<usize>,
    ) -> PyResult<ListIterator> {
        let (options, limit) = list_options(prefix, delimiter, start_after, page_size, limit)?;
        Ok(ListIterator::new(self.inner().list(bucket, options), limit))
    }

    /// The whole listing as a list, as a coroutine (pages are fetched one after another);
    /// with `limit`, at most that many entries, asked for in as few pages as that takes (an
    /// existence check is `limit=1`: one request however large the listing).
    #[pyo3(signature = (bucket, prefix=None, *, delimiter=None, start_after=None, page_size=None, limit=None))]
    #[allow(clippy::too_many_arguments)]
    fn list_async<'py>(
        &self,
        py: Python<'py>,
        bucket: String,
        prefix: Option<String>,
        delimiter: Option<String>,
        start_after: Option<String>,
        page_size: Option<u32>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (options, limit) = list_options(prefix, delimiter, start_after, page_size, limit)?;
        let mut pages = self.inner().list(&bucket, options);
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
}

/// What `list` and `list_async` ask for, and the most entries they give (`usize::MAX`: all).
/// A page is no longer than the entries wanted: `limit=1` is one request for one key.
fn list_options(
    prefix: Option<String>,
    delimiter: Option<String>,
    start_after: Option<String>,
    page_size: Option<u32>,
    limit: Option<usize>,
) -> PyResult<(ListOptions, usize)> {
    if limit == Some(0) {
        return Err(PyValueError::new_err("limit must be at least 1"));
    }
    let wanted = limit.map(|n| n.min(1000) as u32);
    let max_keys = match (page_size, wanted) {
        (Some(size), Some(wanted)) => Some(size.min(wanted)),
        (size, wanted) => size.or(wanted),
    };
    let options = ListOptions {
        prefix,
        delimiter,
        max_keys,
        start_after,
    };
    Ok((options, limit.unwrap_or(usize::MAX)))
}

/// A listing's entries, fetched a page (up to 1,000 keys) at a time as iteration reaches them.
#[pyclass(module = "brisk")]
#[derive(Debug)]
pub struct ListIterator {
    pages: ListObjects,
    /// The entries still to be given (`limit`; `usize::MAX` without one).
    remaining: usize,
    /// The rest of the current page: objects and common prefixes in key order.
    pending: VecDeque<Entry>,
}

#[derive(Debug)]
pub enum Entry {
    Object(brisk_wire::xml::ObjectEntry),
    Prefix(String),
}

impl Entry {
    fn key(&self) -> &str {
        match self {
            Entry::Object(o) => &o.key,
            Entry::Prefix(p) => p,
        }
    }

    pub fn into_py(self, py: Python<'_>) -> PyResult<ObjectEntry> {
        match self {
            Entry::Object(o) => ObjectEntry::object(py, o),
            Entry::Prefix(p) => Ok(ObjectEntry::prefix(p)),
        }
    }
}

/// A page's objects and prefixes merged in key order, as S3 orders them.
pub fn page_entries(page: brisk_client::ListPage) -> VecDeque<Entry> {
    let mut entries: Vec<Entry> = page
        .objects
        .into_iter()
        .map(Entry::Object)
        .chain(page.common_prefixes.into_iter().map(Entry::Prefix))
        .collect();
    entries.sort_by(|a, b| a.key().cmp(b.key()));
    entries.into()
}

impl ListIterator {
    pub fn new(pages: ListObjects, limit: usize) -> Self {
        Self {
            pages,
            remaining: limit,
            pending: VecDeque::new(),
        }
    }
}

#[pymethods]
impl ListIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<ObjectEntry> {
        if self.remaining == 0 {
            return Err(PyStopIteration::new_err(()));
        }
        while self.pending.is_empty() {
            let page = wait(py, self.pages.next_page())?.py_err(py)?;
            match page {
                Some(page) => self.pending = page_entries(page),
                None => return Err(PyStopIteration::new_err(())),
            }
        }
        let entry = self.pending.pop_front().expect("a page entry");
        self.remaining -= 1;
        entry.into_py(py)
    }

    /// Pages requested so far.
    #[getter]
    fn pages_fetched(&self) -> u64 {
        self.pages.pages_fetched()
    }
}
