//! A caller's `progress(done, total)` callback, called from the calling thread with the GIL held:
//! when the count moved, at most every [`PROGRESS_INTERVAL`] from a loop that runs in Python's
//! thread, and once at the end. The asyncio variants call it the same way from the runtime's
//! worker that runs the transfer (`aio::in_python`), never from the event loop.

use std::time::Instant;

use pyo3::prelude::*;

use crate::runtime::TICK;

/// How often a progress callback is called at most: every 100 ms (the runtime's tick), and once
/// more at the end.
pub const PROGRESS_INTERVAL: std::time::Duration = TICK;

/// The callback (none: every call does nothing), the total when it is known (an upload from a
/// stream does not know it: None until the end), and what it was last told.
#[derive(Debug)]
pub struct Progress {
    callback: Option<Py<PyAny>>,
    total: Option<u64>,
    last_done: Option<u64>,
    last_call: Instant,
}

impl Progress {
    pub fn new(callback: Option<Py<PyAny>>, total: Option<u64>) -> Self {
        Self {
            callback,
            total,
            last_done: None,
            last_call: Instant::now(),
        }
    }

    /// Whether there is a callback to call (without one, every report does nothing).
    pub fn has_callback(&self) -> bool {
        self.callback.is_some()
    }

    /// Reports `done` (never more than a known total) if it moved since the last report: for
    /// callers that are themselves called every tick (`spawn_wait`).
    pub fn report(&mut self, py: Python<'_>, done: u64) -> PyResult<()> {
        let done = self.total.map_or(done, |total| done.min(total));
        if self.last_done == Some(done) {
            return Ok(());
        }
        self.call(py, done, self.total)
    }

    /// [`report`](Self::report), at most every [`PROGRESS_INTERVAL`]: for loops that run in the
    /// calling thread as fast as the bytes come.
    pub fn tick(&mut self, py: Python<'_>, done: u64) -> PyResult<()> {
        if self.last_call.elapsed() < PROGRESS_INTERVAL {
            return Ok(());
        }
        self.report(py, done)
    }

    /// The last report: `(done, done)`, the total being what moved, unless that was just said.
    pub fn finish(&mut self, py: Python<'_>, done: u64) -> PyResult<()> {
        self.total = Some(done);
        if self.last_done == Some(done) {
            return Ok(());
        }
        self.call(py, done, Some(done))
    }

    fn call(&mut self, py: Python<'_>, done: u64, total: Option<u64>) -> PyResult<()> {
        self.last_done = Some(done);
        self.last_call = Instant::now();
        match &self.callback {
            Some(callback) => callback.bind(py).call1((done, total)).map(|_| ()),
            None => Ok(()),
        }
    }
}
