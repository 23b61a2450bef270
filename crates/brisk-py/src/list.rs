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
}

/// A listing's entries, fetched a page (up to 1,000 keys) at a time as iteration reaches them.
#[pyclass(module = "brisk")]
#[derive(Debug)]
pub struct ListIterator {
    pages: ListObjects,
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
    pub fn new(pages: ListObjects) -> Self {
        Self {
            pages,
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
        while self.pending.is_empty() {
            let page = wait(py, self.pages.next_page())?.py_err(py)?;
            match page {
                Some(page) => self.pending = page_entries(page),
                None => return Err(PyStopIteration::new_err(())),
            }
        }
        let entry = self.pending.pop_front().expect("a page entry");
        entry.into_py(py)
    }

    /// Pages requested so far.
    #[getter]
    fn pages_fetched(&self) -> u64 {
        self.pages.pages_fetched()
    }
}
