//! A set of tasks with at most `queue_depth` running or finished and not yet taken, the rest
//! queued, results taken in the order they finish: what [`ObjectReads`](crate::ObjectReads)
//! (`get_many`) and [`ObjectWrites`](crate::ObjectWrites) (`put_many`) schedule their objects on.
//!
//! A queued task is a future not yet polled, so it does nothing and holds only what it captured
//! (a key's name, or a write's body) until a slot frees. A finished task keeps its slot until its
//! result is taken: a caller who stops taking results stops the set.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use tokio::runtime::Handle;
use tokio::task::JoinSet;

use crate::error::{Error, Result};

/// A task not yet started.
type Pending<T> = Pin<Box<dyn Future<Output = T> + Send>>;

pub(crate) struct BoundedTasks<T> {
    runtime: Handle,
    /// Tasks running and tasks finished but not yet taken, each with its id.
    tasks: JoinSet<(u64, T)>,
    /// Tasks submitted beyond the queue depth.
    queued: VecDeque<(u64, Pending<T>)>,
    queue_depth: usize,
}

impl<T> std::fmt::Debug for BoundedTasks<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedTasks")
            .field("in_flight_or_done", &self.tasks.len())
            .field("queued", &self.queued.len())
            .field("queue_depth", &self.queue_depth)
            .finish_non_exhaustive()
    }
}

impl<T: Send + 'static> BoundedTasks<T> {
    /// A set of at most `queue_depth` (at least 1) tasks at a time, run on the tokio runtime this
    /// is called within; `operation` names the caller in the errors.
    pub(crate) fn new(queue_depth: usize, operation: &str) -> Result<Self> {
        if queue_depth == 0 {
            return Err(Error::InvalidArgument {
                what: format!("{operation} needs a queue depth of at least 1"),
            });
        }
        let runtime = Handle::try_current().map_err(|_| Error::InvalidArgument {
            what: format!("{operation} runs on a tokio runtime; none is running here"),
        })?;
        Ok(Self {
            runtime,
            tasks: JoinSet::new(),
            queued: VecDeque::new(),
            queue_depth,
        })
    }

    /// Queues `task`, named `id` in its result; it starts once a slot is free. Never waits.
    pub(crate) fn submit(&mut self, id: u64, task: impl Future<Output = T> + Send + 'static) {
        self.queued.push_back((id, Box::pin(task)));
        self.start_queued();
    }

    /// Whether a task submitted now would start at once.
    pub(crate) fn has_room(&self) -> bool {
        self.queued.is_empty() && self.tasks.len() < self.queue_depth
    }

    /// Tasks submitted whose results have not been taken.
    pub(crate) fn outstanding(&self) -> usize {
        self.queued.len() + self.tasks.len()
    }

    pub(crate) fn queue_depth(&self) -> usize {
        self.queue_depth
    }

    /// Aborts the running tasks, drops the finished ones and forgets the queued ones.
    pub(crate) fn cancel(&mut self) {
        self.queued.clear();
        self.tasks.abort_all();
        self.tasks.detach_all();
    }

    fn start_queued(&mut self) {
        while self.tasks.len() < self.queue_depth {
            let Some((id, task)) = self.queued.pop_front() else {
                return;
            };
            self.tasks
                .spawn_on(async move { (id, task.await) }, &self.runtime);
        }
    }

    /// The next finished task's id and result, in the order they finish; `None` when none is
    /// outstanding. Taking a result frees its slot. Cancel-safe: dropping the future loses no
    /// result.
    pub(crate) async fn next(&mut self) -> Option<(u64, T)> {
        loop {
            let joined = self.tasks.join_next().await?;
            self.start_queued();
            match joined {
                Ok(done) => return Some(done),
                // A panic in a task is a bug; it has no id to report it under, so it is raised here.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // Cancelled: only when the runtime shuts down, and nobody waits for it then.
                Err(_) => continue,
            }
        }
    }
}
