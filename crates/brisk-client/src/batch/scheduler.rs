//! The client's one request scheduler for ranged GETs: batch reads ([`crate::batch`]) and the
//! parallel ranged GETs of [`Client::download`](crate::Client::download) both run on it. It holds
//! the queue, the queue depth's slots and the counters; the lanes that drive connections (the
//! `pipeline` module) run on it, and it knows them only as the task it is given to start.
//!
//! # Queue depth over few connections
//!
//! A batch keeps up to `queue_depth` requests in flight over `lanes` connections: each lane (one
//! task, one connection at a time, see the `pipeline` module) pipelines up to
//! `ceil(queue_depth / lanes)` requests on its connection (at most [`MAX_PIPELINE_DEPTH`]): it
//! writes the heads of the requests it takes, then reads the responses in order, writing the head
//! of the next request as soon as a response is complete. The server thus always has the next
//! request of every connection in hand when it finishes a response, and no request waits a round
//! trip for its head to arrive. With the defaults a lane carries one request at a time up to 64
//! lanes and pipelines only past that ([`shape`]): servers answer a connection's requests one after
//! the other, so behind a first-byte latency pipelining saves the round trip but not the latency
//! (`docs/random-reads.md`, "Under latency").
//!
//! The queue depth counts requests sent and completions not yet taken by the caller: one
//! semaphore slot per request, taken when a lane takes the request and given back when the caller
//! takes the completion (or when the request goes back to the queue).
//!
//! # Fall-back
//!
//! An HTTP/1.1 server must answer pipelined requests in order, but some close the connection
//! after each response (`Connection: close`) or drop what was sent behind the first request. Under
//! [`Pipelining::Auto`] the batch stops pipelining (depth 1 per connection, so at most `lanes`
//! requests in flight) the first time a connection that carried two or more requests ends after
//! answering at most one of them. The requests a closing connection left unanswered go back to the
//! front of the queue and are sent again on another connection, without counting as a failed
//! attempt: none is lost, none is completed twice.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore, mpsc};
use tokio::task::AbortHandle;

use super::types::{
    BatchOptions, Completion, MAX_PIPELINE_DEPTH, Pipelining, SchedulerStats, Work,
};
use crate::client::Client;
use crate::error::Error;

#[derive(Debug, Default)]
struct Counters {
    submitted: AtomicU64,
    completed: AtomicU64,
    gets_sent: AtomicU64,
    pipelined: AtomicU64,
    resent: AtomicU64,
    fell_back: AtomicBool,
    connections_used: AtomicU64,
    connections_now: AtomicU64,
    max_connections: AtomicU64,
}

/// A batch's lanes (connections at most) and requests per connection: one connection per request in
/// flight up to `min(connections, max_per_host)`, and pipelining only past that, so the queue
/// depth is kept in flight with the fewest requests waiting behind another on one connection.
pub(crate) fn shape(options: &BatchOptions, max_per_host: usize) -> (usize, usize) {
    let lanes = options
        .connections
        .min(max_per_host)
        .min(options.queue_depth)
        .max(1);
    let depth = match options.pipelining {
        Pipelining::Off => 1,
        Pipelining::Auto | Pipelining::On => options
            .queue_depth
            .div_ceil(lanes)
            .clamp(1, MAX_PIPELINE_DEPTH),
    };
    (lanes, depth)
}

/// The state the lanes of one batch share.
#[derive(Debug)]
pub(crate) struct Scheduler {
    pub(crate) client: Client,
    pub(crate) bucket: Arc<str>,
    pub(crate) pipelining: Pipelining,
    queue: Mutex<VecDeque<Work>>,
    wake: Notify,
    /// One permit per request in flight or completed and not yet taken by the caller.
    slots: Semaphore,
    /// Requests per connection now (1 after a fall-back).
    depth: AtomicUsize,
    completions: mpsc::UnboundedSender<Completion>,
    shutdown: AtomicBool,
    lanes: Mutex<Vec<AbortHandle>>,
    counters: Counters,
}

impl Scheduler {
    /// Starts the lane tasks, `lane(scheduler)` each, on `runtime` (their connections are opened
    /// when work comes).
    pub(crate) fn start<F>(
        client: Client,
        bucket: &str,
        options: BatchOptions,
        completions: mpsc::UnboundedSender<Completion>,
        runtime: &tokio::runtime::Handle,
        lane: impl Fn(Arc<Self>) -> F,
    ) -> Arc<Self>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (lanes, depth) = shape(&options, client.config().max_connections_per_host);
        let scheduler = Arc::new(Self {
            client,
            bucket: bucket.into(),
            pipelining: options.pipelining,
            queue: Mutex::new(VecDeque::new()),
            wake: Notify::new(),
            slots: Semaphore::new(options.queue_depth),
            depth: AtomicUsize::new(depth),
            completions,
            shutdown: AtomicBool::new(false),
            lanes: Mutex::new(Vec::with_capacity(lanes)),
            counters: Counters::default(),
        });
        let handles = (0..lanes)
            .map(|_| runtime.spawn(lane(Arc::clone(&scheduler))).abort_handle())
            .collect();
        *scheduler.lanes.lock().expect("scheduler lock poisoned") = handles;
        scheduler
    }

    /// Queues `work` at the back.
    pub(crate) fn push(&self, work: Work) {
        self.counters
            .submitted
            .fetch_add(work.members().len() as u64, Ordering::Relaxed);
        self.queue
            .lock()
            .expect("scheduler lock poisoned")
            .push_back(work);
        self.wake.notify_one();
    }

    /// Puts works a connection left unanswered back at the front of the queue, in their order, and
    /// gives back their slots.
    pub(crate) fn requeue_front(&self, works: impl DoubleEndedIterator<Item = Work>) {
        let mut n = 0;
        {
            let mut queue = self.queue.lock().expect("scheduler lock poisoned");
            for work in works.rev() {
                queue.push_front(work);
                n += 1;
            }
        }
        if n > 0 {
            self.slots.add_permits(n);
            for _ in 0..n {
                self.wake.notify_one();
            }
        }
    }

    /// Gives `work`'s slot back now and queues it again at the front after `delay` (a retry's
    /// backoff), unless the batch has been shut down by then.
    pub(crate) fn requeue_later(self: &Arc<Self>, work: Work, delay: std::time::Duration) {
        self.slots.add_permits(1);
        let scheduler = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if scheduler.shutdown.load(Ordering::Acquire) {
                return;
            }
            scheduler
                .queue
                .lock()
                .expect("scheduler lock poisoned")
                .push_front(work);
            scheduler.wake.notify_one();
        });
    }

    /// Completes a request that was never scheduled (it was invalid): it holds no slot.
    pub(crate) fn complete_now(&self, completion: Completion) {
        self.counters.submitted.fetch_add(1, Ordering::Relaxed);
        self.counters.completed.fetch_add(1, Ordering::Relaxed);
        let _ = self.completions.send(completion);
    }

    /// Completes every member of `work` (which holds one slot) with its own result.
    pub(crate) fn complete(
        &self,
        work: Work,
        results: impl IntoIterator<Item = crate::Result<usize>>,
    ) {
        let members = work.into_members();
        let last = members.len() - 1;
        for ((i, member), result) in members.into_iter().enumerate().zip(results) {
            self.counters.completed.fetch_add(1, Ordering::Relaxed);
            let _ = self.completions.send(Completion {
                id: member.id,
                key: member.key,
                offset: member.offset,
                length: member.length,
                result,
                buffer: member.buffer,
                releases: usize::from(i == last),
            });
        }
    }

    /// Completes every member of `work` with `error`: the server's report is repeated for each;
    /// other errors go to the first member, the others are told which error ended their GET.
    pub(crate) fn fail(&self, work: Work, error: Error) {
        let count = work.members().len();
        let service = error.service_error().cloned();
        let text = error.to_string();
        let mut first = Some(error);
        let results = (0..count).map(|_| {
            if let Some(e) = first.take() {
                return Err(e);
            }
            Err(match &service {
                Some(s) => Error::from_service(s.clone()),
                None => Error::UnexpectedResponse {
                    what: format!("the coalesced GET this range belonged to failed: {text}"),
                },
            })
        });
        let results: Vec<_> = results.collect();
        self.complete(work, results);
    }

    /// A slot freed by the caller taking a completion.
    pub(crate) fn delivered(&self, releases: usize) {
        if releases > 0 {
            self.slots.add_permits(releases);
        }
    }

    /// The next work and its slot, waiting for both; `None` once the batch is shut down.
    pub(crate) async fn take_waiting(&self) -> Option<Work> {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shutdown.load(Ordering::Acquire) {
                return None;
            }
            let work = self
                .queue
                .lock()
                .expect("scheduler lock poisoned")
                .pop_front();
            if let Some(work) = work {
                let Ok(permit) = self.slots.acquire().await else {
                    return None;
                };
                permit.forget();
                return Some(work);
            }
            notified.await;
        }
    }

    /// The next work if one is queued and a slot is free, without waiting.
    pub(crate) fn try_take(&self) -> Option<Work> {
        let permit = self.slots.try_acquire().ok()?;
        let work = self
            .queue
            .lock()
            .expect("scheduler lock poisoned")
            .pop_front()?;
        permit.forget();
        Some(work)
    }

    /// Requests a lane may have in flight on its connection now.
    pub(crate) fn depth(&self) -> usize {
        self.depth.load(Ordering::Relaxed)
    }

    /// Stops pipelining for the rest of the batch.
    pub(crate) fn fall_back(&self) {
        self.depth.store(1, Ordering::Relaxed);
        self.counters.fell_back.store(true, Ordering::Relaxed);
    }

    pub(crate) fn count_get(&self) {
        self.counters.gets_sent.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_pipelined(&self) {
        self.counters.pipelined.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_resent(&self, n: usize) {
        self.counters.resent.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A lane took a connection.
    pub(crate) fn connection_taken(&self) {
        self.counters
            .connections_used
            .fetch_add(1, Ordering::Relaxed);
        let now = self
            .counters
            .connections_now
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        self.counters
            .max_connections
            .fetch_max(now, Ordering::Relaxed);
    }

    /// A lane gave its connection up (back to the pool, or closed).
    pub(crate) fn connection_dropped(&self) {
        self.counters
            .connections_now
            .fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> SchedulerStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SchedulerStats {
            submitted: get(&c.submitted),
            completed: get(&c.completed),
            gets_sent: get(&c.gets_sent),
            pipelined: get(&c.pipelined),
            resent: get(&c.resent),
            fell_back: c.fell_back.load(Ordering::Relaxed),
            connections_used: get(&c.connections_used),
            max_connections: get(&c.max_connections),
        }
    }

    /// Stops the lanes: requests on the wire are abandoned, their connections closed.
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::Release);
        self.wake.notify_waiters();
        for lane in self
            .lanes
            .lock()
            .expect("scheduler lock poisoned")
            .drain(..)
        {
            lane.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_MAX_CONNECTIONS_PER_HOST;

    fn at(queue_depth: usize) -> BatchOptions {
        BatchOptions {
            queue_depth,
            ..BatchOptions::default()
        }
    }

    #[test]
    fn by_default_a_connection_per_request_up_to_the_limit_then_pipelining() {
        let max = DEFAULT_MAX_CONNECTIONS_PER_HOST;
        assert_eq!(shape(&at(1), max), (1, 1));
        assert_eq!(shape(&at(16), max), (16, 1));
        assert_eq!(shape(&BatchOptions::default(), max), (64, 1));
        assert_eq!(shape(&at(128), max), (64, 2));
        assert_eq!(shape(&at(256), max), (64, 4));
        // Past 16 per connection the depth stops growing (the slots still bound what is in flight).
        assert_eq!(shape(&at(4096), max), (64, MAX_PIPELINE_DEPTH));
    }

    #[test]
    fn the_clients_connection_limit_bounds_a_batch() {
        assert_eq!(shape(&BatchOptions::default(), 8), (8, 8));
        let narrow = BatchOptions {
            connections: 4,
            ..at(64)
        };
        assert_eq!(shape(&narrow, 64), (4, 16));
        let off = BatchOptions {
            pipelining: Pipelining::Off,
            ..at(256)
        };
        assert_eq!(shape(&off, 64), (64, 1));
    }
}
