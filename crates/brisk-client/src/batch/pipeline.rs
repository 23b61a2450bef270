//! One lane of the scheduler: a task that holds one pooled connection at a time and pipelines
//! ranged GETs on it.
//!
//! The lane alternates two steps on its connection, so one task and one [`HttpConnection`] do both
//! ends without splitting the stream:
//!
//! 1. **Top up**: take requests from the queue until the connection carries the scheduler's depth,
//!    queue their heads (signed, a few hundred bytes each) and send them in one write.
//! 2. **Read** the oldest response: its body goes from the socket straight into the destination(s);
//!    an error status becomes that request's error and the connection goes on.
//!
//! Heads are written only between responses, and at most [`MAX_PIPELINE_DEPTH`] of them are
//! outstanding, so a write never waits on a server that is itself waiting for its response to be
//! read (see the constant).
//!
//! When the connection fails or the server ends it, the requests it did not answer go back to the
//! queue: the one whose response was being read counts a failed attempt (it is retried within the
//! client's [`RetryPolicy`](crate::RetryPolicy), after its backoff), the ones behind it do not.
//!
//! [`HttpConnection`]: brisk_wire::http::HttpConnection
//! [`MAX_PIPELINE_DEPTH`]: super::types::MAX_PIPELINE_DEPTH

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

use brisk_mem::BudgetError;
use brisk_wire::http::{BodyFraming, HttpError};

use super::scheduler::Scheduler;
use super::types::{Filled, MAX_PIPELINE_DEPTH, Pipelining, Work};
use crate::client::Response;
use crate::error::{Error, ServiceError};
use crate::integrity::sent_range_md5;
use crate::objects::PopulateAhead;
use crate::pool::PooledConnection;
use crate::request::{Address, RequestSpec};
use crate::retry::{RetryDecision, is_stale_reuse};

/// Runs one lane until the batch shuts down.
pub(crate) async fn run_lane(scheduler: Arc<Scheduler>) {
    let target = scheduler.client.target(Some(&scheduler.bucket), None);
    let mut lane = Lane {
        scheduler,
        target,
        key_target: None,
        conn: None,
        to_send: VecDeque::with_capacity(MAX_PIPELINE_DEPTH),
        ready: VecDeque::with_capacity(MAX_PIPELINE_DEPTH),
        in_flight: VecDeque::with_capacity(MAX_PIPELINE_DEPTH),
        sent_on_conn: 0,
        answered_on_conn: 0,
        answered_in_life: 0,
        fresh: false,
    };
    lane.run().await;
}

struct Lane {
    scheduler: Arc<Scheduler>,
    /// The bucket's host (the pool's key) and port.
    target: Address,
    /// The last key's request target: a batch reads many ranges of few objects, and building a
    /// target (encoded path, host header) made five allocations per request.
    key_target: Option<(Arc<str>, Address)>,
    conn: Option<PooledConnection>,
    /// Taken from the queue, destinations not all there yet.
    to_send: VecDeque<Work>,
    /// Destinations there, head not written yet.
    ready: VecDeque<Work>,
    /// Written, response not read yet (oldest first).
    in_flight: VecDeque<Work>,
    sent_on_conn: u64,
    answered_on_conn: u64,
    /// Responses the current connection has carried since it was opened (by any lane).
    answered_in_life: u64,
    /// The last reused connection was dead: take a new one rather than another idle one.
    fresh: bool,
}

/// How an exchange on the connection ended badly.
enum Failure {
    /// The connection failed while writing, or in the middle of a response.
    Connection(Error),
    /// The connection failed (or the server closed it) where the next response should have
    /// started.
    BeforeResponse(Error),
}

impl Lane {
    async fn run(&mut self) {
        loop {
            if self.in_flight.is_empty() && self.to_send.is_empty() {
                // Nothing to do: the connection goes back to the pool for the client's other
                // requests while this lane waits.
                self.give_back_connection();
                match self.scheduler.take_waiting().await {
                    Some(work) => self.to_send.push_back(work),
                    None => return,
                }
            }
            let depth = self.scheduler.depth();
            while self.in_flight.len() + self.to_send.len() < depth {
                match self.scheduler.try_take() {
                    Some(work) => self.to_send.push_back(work),
                    None => break,
                }
            }
            if !self.to_send.is_empty()
                && let Err(failure) = self.send_queued().await
            {
                self.connection_failed(failure);
                continue;
            }
            if self.in_flight.is_empty() {
                continue;
            }
            if let Err(failure) = self.read_oldest().await {
                self.connection_failed(failure);
            }
        }
    }

    fn give_back_connection(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.release();
            self.scheduler.connection_dropped();
        }
    }

    fn drop_connection(&mut self) -> Option<PooledConnection> {
        let conn = self.conn.take();
        if conn.is_some() {
            self.scheduler.connection_dropped();
        }
        conn
    }

    /// Writes the heads of `to_send` (taking a connection and pooled blocks first if needed).
    async fn send_queued(&mut self) -> Result<(), Failure> {
        self.take_destinations().await;
        if self.ready.is_empty() {
            return Ok(());
        }
        if self.conn.is_none() {
            let (pool, _, _) = self.scheduler.client.engine_parts();
            let t = &self.target;
            match pool
                .checkout(&t.host_header, &t.host, t.port, self.fresh)
                .await
            {
                Ok(conn) => {
                    self.answered_in_life = conn.responses();
                    self.conn = Some(conn);
                    self.fresh = false;
                    self.sent_on_conn = 0;
                    self.answered_on_conn = 0;
                    self.scheduler.connection_taken();
                }
                Err(e) => {
                    // Nothing was sent: each request waiting counts the failed attempt.
                    let retryable = e.is_retryable();
                    let text = e.to_string();
                    let mut error = Some(e);
                    while let Some(work) = self.ready.pop_front() {
                        let e = error.take().unwrap_or_else(|| Error::UnexpectedResponse {
                            what: format!("no connection: {text}"),
                        });
                        self.retry_or_fail(work, e, retryable);
                    }
                    return Ok(());
                }
            }
        }
        let scheduler = Arc::clone(&self.scheduler);
        let (_, dialect, counters) = scheduler.client.engine_parts();
        let mut queued = 0;
        while let Some(work) = self.ready.pop_front() {
            let range = format!("bytes={}-{}", work.start(), work.end() - 1);
            let mut spec = RequestSpec::new("GET", Some(&scheduler.bucket), Some(work.key()))
                .header("range", range);
            // Azure returns the MD5 of a range up to 4 MiB: checked when the range lands.
            (spec, _) = dialect.ask_range_md5(spec, work.end() - work.start());
            if self
                .key_target
                .as_ref()
                .is_none_or(|(key, _)| key != work.key())
            {
                let target = scheduler.client.target(spec.bucket, spec.key);
                self.key_target = Some((Arc::clone(work.key()), target));
            }
            let (_, target) = self.key_target.as_ref().expect("set just above");
            let head = match dialect.head(&spec, target, SystemTime::now()) {
                Ok(head) => head,
                Err(e) => {
                    scheduler.fail(work, e);
                    continue;
                }
            };
            let conn = self.conn.as_mut().expect("a connection was taken above");
            conn.conn().queue_request_head(&head);
            crate::metrics::Counters::add(&counters.requests_sent);
            scheduler.count_get();
            self.in_flight.push_back(work);
            self.sent_on_conn += 1;
            queued += 1;
        }
        if queued == 0 {
            return Ok(());
        }
        let timeout = scheduler.client.config().read_timeout;
        let conn = self.conn.as_mut().expect("a connection was taken above");
        match tokio::time::timeout(timeout, conn.conn().flush()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Failure::Connection(Error::Http(e))),
            Err(_) => Err(Failure::Connection(Error::UnexpectedResponse {
                what: format!("writing request heads took longer than {timeout:?}"),
            })),
        }
    }

    /// Moves the works of `to_send` whose destinations are there (taking pooled blocks as needed)
    /// to `ready`. Blocks are taken before a connection, the order every transfer takes them in:
    /// a lane never waits for the memory budget while holding a connection with nothing in flight
    /// (others may be waiting for that connection to free the budget), and with requests in
    /// flight it does not wait at all: the work stays in `to_send` and the lane reads a response.
    async fn take_destinations(&mut self) {
        let scheduler = Arc::clone(&self.scheduler);
        let pool = scheduler.client.buffer_pool();
        while let Some(mut work) = self.to_send.pop_front() {
            let mut failed = None;
            let mut would_wait = false;
            for member in work.members_mut() {
                if member.buffer.is_some() {
                    continue;
                }
                let block = match pool.try_get(member.length) {
                    Err(BudgetError::WouldWait { .. }) if self.in_flight.is_empty() => {
                        self.give_back_connection();
                        pool.get(member.length).await
                    }
                    Err(BudgetError::WouldWait { .. }) => {
                        would_wait = true;
                        break;
                    }
                    other => other,
                };
                match block {
                    Ok(block) => member.buffer = Some(Filled::Block(block)),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                scheduler.fail(work, e.into());
                continue;
            }
            if would_wait {
                self.to_send.push_front(work);
                return;
            }
            self.ready.push_back(work);
        }
    }

    /// Reads the response to the oldest request in flight and completes it.
    async fn read_oldest(&mut self) -> Result<(), Failure> {
        let scheduler = Arc::clone(&self.scheduler);
        let conn = self
            .conn
            .as_mut()
            .expect("requests in flight have a connection");
        let queued_behind = self.in_flight.len() > 1;
        let expected = self.in_flight.front().map_or(0, |w| w.end() - w.start());
        {
            let (c, head) = conn.parts();
            if expected >= c.read_buffer_capacity() as u64 {
                // A body larger than the read buffer: read the head alone, so that the body goes
                // from the socket into its destination once, not through the buffer (where a full
                // read would put up to a buffer of it, pipelined responses being always there).
                c.limit_next_head_read(brisk_wire::http::MIN_HEAD_READ);
            }
            c.read_response_head(head, "GET")
                .await
                .map_err(|e| Failure::BeforeResponse(e.into()))?;
        }
        self.answered_on_conn += 1;
        conn.count_response();
        self.answered_in_life = conn.responses();
        if queued_behind || self.answered_on_conn > 1 {
            scheduler.count_pipelined();
        }
        let status = conn.head().status();
        let keep_alive = conn.head().keep_alive();
        let work = self.in_flight.front_mut().expect("a request is in flight");
        if status == 206 || (status == 200 && work.start() == 0) {
            let (start, body_len) = match body_extent(conn, status, work.start()) {
                Ok(extent) => extent,
                Err(e) => {
                    let work = self.in_flight.pop_front().expect("in flight");
                    scheduler.fail(work, e);
                    self.abandon_connection();
                    return Ok(());
                }
            };
            debug_assert_eq!(start, work.start());
            let lengths = read_members(conn, work, body_len)
                .await
                .map_err(|e| Failure::Connection(e.into()))?;
            let reusable = if conn.conn().body_done() {
                true
            } else {
                // A 200 with the whole object, longer than the range: the rest is not wanted.
                conn.conn()
                    .discard_body()
                    .await
                    .map_err(|e| Failure::Connection(e.into()))?
            };
            let work = self.in_flight.pop_front().expect("in flight");
            let checked = scheduler.client.dialect().sends_range_md5s();
            if let Some(error) = checked
                .then(|| range_md5_mismatch(conn, &work, body_len, &scheduler.bucket))
                .flatten()
            {
                let keep = reusable && keep_alive;
                // Damaged on the way: the range is read again, as a transport failure would be.
                self.retry_or_fail(work, error, true);
                if !keep {
                    self.abandon_connection();
                }
                return Ok(());
            }
            let results: Vec<_> = work
                .members()
                .iter()
                .zip(lengths)
                .map(|(member, n)| match n {
                    Some(n) => Ok(n),
                    None => Err(past_the_end(member.offset, start + body_len, &scheduler)),
                })
                .collect();
            scheduler.complete(work, results);
            if !(reusable && keep_alive) {
                self.abandon_connection();
            }
            return Ok(());
        }

        // An error status: read the error document, and the connection goes on.
        let conn = self
            .conn
            .take()
            .expect("requests in flight have a connection");
        let mut response = Response { conn };
        let error = scheduler.client.error_from(&mut response).await;
        self.conn = Some(response.conn);
        let work = self.in_flight.pop_front().expect("in flight");
        let retryable = error.is_retryable();
        self.retry_or_fail(work, error, retryable);
        let conn = self.conn.as_mut().expect("kept above");
        if !(keep_alive && conn.conn().is_reusable()) {
            self.abandon_connection();
        }
        Ok(())
    }

    /// The connection ends without failing (the server said `Connection: close`, or a body was
    /// left unread): the requests still on it go back to the queue.
    fn abandon_connection(&mut self) {
        let _ = self.drop_connection();
        if self.in_flight.is_empty() {
            return;
        }
        if self.answered_in_life <= 1 && self.scheduler.pipelining == Pipelining::Auto {
            self.scheduler.fall_back();
        }
        self.scheduler.count_resent(self.in_flight.len());
        self.scheduler.requeue_front(self.in_flight.drain(..));
    }

    /// The connection failed: the oldest request in flight counts a failed attempt, unless the
    /// failure only shows that a kept-alive connection had died, that the server does not take
    /// pipelined requests, or that the server ended a connection that had already answered (a
    /// server's limit of requests per connection: each such connection made progress, so this
    /// can not loop); the others go back to the queue as they are.
    fn connection_failed(&mut self, failure: Failure) {
        let (error, before_response) = match failure {
            Failure::Connection(e) => (e, false),
            Failure::BeforeResponse(e) => (e, true),
        };
        let conn = self.drop_connection();
        let reused = conn.as_ref().is_some_and(PooledConnection::was_reused);
        drop(conn);
        let stale = match &error {
            Error::Http(e) => is_stale_reuse(reused, self.answered_on_conn > 0, e),
            _ => false,
        };
        let pipeline_refused = !stale
            && self.sent_on_conn >= 2
            && self.answered_in_life <= 1
            && self.scheduler.pipelining == Pipelining::Auto
            && self.scheduler.depth() > 1;
        if pipeline_refused {
            self.scheduler.fall_back();
        }
        let ended_after_answers = before_response && self.answered_on_conn > 0;
        self.fresh = stale;
        let mut unanswered = std::mem::take(&mut self.in_flight);
        let oldest = unanswered.pop_front();
        if !unanswered.is_empty() {
            self.scheduler.count_resent(unanswered.len());
        }
        match oldest {
            Some(work) if stale || pipeline_refused || ended_after_answers => {
                self.scheduler.count_resent(1);
                unanswered.push_front(work);
            }
            Some(work) => {
                let retryable = error.is_retryable();
                self.retry_or_fail(work, error, retryable);
            }
            None => {}
        }
        self.scheduler.requeue_front(unanswered.drain(..));
        self.in_flight = unanswered;
    }

    /// Counts a failed attempt of `work`: it is queued again after the retry policy's backoff if
    /// `retryable` and attempts remain, and fails with `error` otherwise.
    fn retry_or_fail(&mut self, mut work: Work, error: Error, retryable: bool) {
        work.failures += 1;
        let policy = self.scheduler.client.config().retry;
        let RetryDecision::RetryAfter(delay) = policy.after_failure(work.failures, retryable)
        else {
            self.scheduler.fail(work, error);
            return;
        };
        tracing::debug!(
            attempt = work.failures, %error,
            "pipelined read failed; queued again after backoff"
        );
        let (_, _, counters) = self.scheduler.client.engine_parts();
        crate::metrics::Counters::add(&counters.retries);
        self.scheduler.count_resent(1);
        // The slot goes back now; the request takes one again when it is sent.
        self.scheduler.requeue_later(work, delay);
    }
}

/// Where a successful response's body starts in the object and how long it is.
fn body_extent(conn: &mut PooledConnection, status: u16, start: u64) -> Result<(u64, u64), Error> {
    let length = match conn.conn().incoming_framing() {
        BodyFraming::ContentLength(n) => n,
        BodyFraming::Empty => 0,
        BodyFraming::Chunked | BodyFraming::UntilClose => return Err(Error::UnknownLength),
    };
    if status == 200 {
        return Ok((0, length));
    }
    let range = conn.head().headers().get_str("content-range");
    let first = range
        .and_then(|r| r.strip_prefix("bytes "))
        .and_then(|r| r.split_once('-'))
        .and_then(|(first, _)| first.trim().parse::<u64>().ok());
    match first {
        Some(first) if first == start => Ok((start, length)),
        _ => Err(Error::UnexpectedResponse {
            what: format!(
                "a GET of the range from byte {start} answered Content-Range {:?}",
                range.unwrap_or("(none)")
            ),
        }),
    }
}

/// Reads a body holding the object's bytes `work.start() .. work.start() + body_len` into the
/// work's members: bytes a member shares with members before it (overlapping ranges) are copied
/// from them, the others go from the socket straight into its destination. Returns each member's
/// length read, `None` for a member that starts at or past the end of the body.
async fn read_members(
    conn: &mut PooledConnection,
    work: &mut Work,
    body_len: u64,
) -> Result<Vec<Option<usize>>, HttpError> {
    let start = work.start();
    let body_end = start + body_len;
    let members = work.members_mut();
    let mut lengths = Vec::with_capacity(members.len());
    let mut position = start;
    for i in 0..members.len() {
        let (before, rest) = members.split_at_mut(i);
        let member = &mut rest[0];
        if member.offset >= body_end {
            lengths.push(None);
            continue;
        }
        let end = member.end().min(body_end);
        let buffer = member
            .buffer
            .as_mut()
            .expect("destinations are set before the request is sent");
        // Bytes already read for earlier members.
        let shared_end = position.min(end);
        if member.offset < shared_end {
            let dst = buffer.as_mut_slice();
            for earlier in before.iter() {
                let from = earlier.offset.max(member.offset);
                let to = earlier.end().min(shared_end);
                if from >= to {
                    continue;
                }
                let src = earlier.buffer.as_ref().expect("read before").as_slice();
                dst[(from - member.offset) as usize..(to - member.offset) as usize]
                    .copy_from_slice(
                        &src[(from - earlier.offset) as usize..(to - earlier.offset) as usize],
                    );
            }
        }
        let mut at = position.max(member.offset);
        // Populated a step ahead of the bytes, as `get_bytes` does (`Filled::prepare`).
        let member_end = (end - member.offset) as usize;
        let mut ahead = PopulateAhead::from((at - member.offset) as usize);
        while at < end {
            let from = (at - member.offset) as usize;
            let until = ahead.next_read_end(from, member_end, |range| buffer.prepare(range));
            let slice = &mut buffer.as_mut_slice()[from..until];
            let n = conn.conn().read_body(slice).await?;
            if n == 0 {
                return Err(HttpError::UnexpectedEof {
                    expected: body_len,
                    received: at - start,
                });
            }
            at += n as u64;
        }
        position = position.max(end);
        lengths.push(Some((end - member.offset) as usize));
    }
    Ok(lengths)
}

/// When the response carries the MD5 of the range it sent (`Content-MD5` on a 206, which Azure
/// returns for `x-ms-range-get-content-md5`) and the range landed whole in one destination: the
/// mismatch, if the bytes that landed differ. Asked of Azure only.
fn range_md5_mismatch(
    conn: &PooledConnection,
    work: &Work,
    body_len: u64,
    bucket: &str,
) -> Option<Error> {
    let expected = sent_range_md5(conn.head())?;
    let [member] = work.members() else {
        return None;
    };
    let landed = member.buffer.as_ref()?.as_slice();
    if member.offset != work.start() || (member.length as u64) < body_len {
        return None;
    }
    let computed = brisk_wire::checksum::Md5::digest(&landed[..body_len as usize]);
    crate::integrity::md5_matches(
        bucket,
        &member.key,
        &expected,
        computed,
        "the MD5 the service sent with the range (it is read again)",
    )
    .err()
}

/// The error of a range that starts at or past the end of the object, as S3 reports one.
fn past_the_end(offset: u64, object_end: u64, scheduler: &Scheduler) -> Error {
    let mut error = ServiceError::new(416, None, None, &scheduler.client.config().region);
    error.message = format!(
        "the range starts at byte {offset}, at or past the end of the object ({object_end} bytes)"
    );
    Error::from_service(error)
}
