//! The listener and the connection loop: one task per connection, at most
//! [`ServerLimits::max_connections`](crate::ServerLimits) of them (a semaphore; further connections
//! wait in the listen backlog), each reading request heads, authenticating, routing and answering
//! until the client closes, a timeout, an unrecoverable error, or shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use brisk_wire::http::{
    ConnectionConfig, HttpConnection, HttpError, Limits, MinBodyRate, RequestHead,
};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::access_log::{AccessLog, AccessRecord};
use crate::auth::Authenticator;
use crate::blocking::blocking;
use crate::config::ServerConfig;
use crate::error::S3Error;
use crate::exchange::Exchange;
use crate::handler::{self, Request};
use crate::route;
use crate::scratch::{self, ScratchPool, ScratchStats};
use crate::store::{Store, StoreConfig, StoreError};
use crate::tls::ServerStream;

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The store could not be opened (another process has it, permissions, corruption).
    #[error("cannot open the store in {root}: {source}")]
    Store {
        root: String,
        #[source]
        source: StoreError,
    },
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The configuration is not usable.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// What every connection task shares.
#[derive(Debug)]
pub struct Shared {
    pub store: Store,
    pub access_log: AccessLog,
    pub auth: Authenticator,
    pub config: ServerConfig,
    request_ids: RequestIds,
    /// The scratch buffers requests borrow (`scratch.rs`).
    scratch: ScratchPool,
}

/// Request ids: 16 hex digits, unique per process run (start time in the high bits, a counter in
/// the low ones), so a log line and the client's error name the same request.
#[derive(Debug)]
struct RequestIds {
    base: u64,
    next: AtomicU64,
}

impl RequestIds {
    fn new() -> Self {
        let start = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            base: start << 32,
            next: AtomicU64::new(0),
        }
    }

    fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{:016X}", self.base ^ n)
    }
}

/// The embedded S3 server.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// Opens the store, binds the listener and starts serving on the current tokio runtime (a
    /// multi-thread runtime with one worker per core is what `brisk serve` builds). Returns once the
    /// server accepts connections.
    pub async fn bind(config: ServerConfig) -> Result<RunningServer, ServerError> {
        if !config.anonymous && config.credentials.is_none() {
            return Err(ServerError::Config(
                "credentials are required unless the server is anonymous".into(),
            ));
        }
        if config.limits.max_connections == 0 {
            return Err(ServerError::Config(
                "max_connections must be at least 1".into(),
            ));
        }
        let tls = config
            .tls
            .as_ref()
            .map(crate::tls::acceptor)
            .transpose()
            .map_err(ServerError::Config)?;
        let store_config = StoreConfig {
            fsync: config.fsync,
            min_part_size: config.min_part_size,
            ..StoreConfig::default()
        };
        let root = config.root.clone();
        let store =
            blocking(|| Store::open(&root, store_config)).map_err(|source| ServerError::Store {
                root: root.display().to_string(),
                source,
            })?;
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| ServerError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let local_addr = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: config.listen,
            source,
        })?;
        let auth = Authenticator::new(
            if config.anonymous {
                None
            } else {
                config.credentials.as_ref()
            },
            &config.region,
        );
        let shared = Arc::new(Shared {
            store,
            access_log: AccessLog::new(config.log_format),
            auth,
            scratch: ScratchPool::new(
                config.read_buffer_size,
                config.limits.max_connections,
                scratch::DEFAULT_KEPT,
            ),
            config,
            request_ids: RequestIds::new(),
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let connections = Arc::new(Semaphore::new(shared.config.limits.max_connections));
        let accept = tokio::spawn(accept_loop(
            listener,
            tls,
            Arc::clone(&shared),
            Arc::clone(&connections),
            stop_rx,
        ));
        Ok(RunningServer {
            local_addr,
            stop: stop_tx,
            accept: Some(accept),
            connections,
            shared,
        })
    }
}

/// A server that is accepting connections. Dropping it without [`shutdown`](Self::shutdown) stops
/// accepting too (connections in flight finish on their own).
#[derive(Debug)]
pub struct RunningServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
    connections: Arc<Semaphore>,
    shared: Arc<Shared>,
}

impl RunningServer {
    /// The address the server listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://<addr>` (`https://` with TLS), the endpoint URL clients use.
    pub fn url(&self) -> String {
        let scheme = if self.shared.config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.local_addr)
    }

    /// The store the server serves (for tests and embedding).
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// The scratch buffers lent to requests now and kept for the next ones (`scratch.rs`).
    pub fn scratch_stats(&self) -> ScratchStats {
        self.shared.scratch.stats()
    }

    /// Stops accepting, lets requests in flight finish (up to the configured grace period), closes
    /// idle connections, and returns when all connections are gone or the grace period ended.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(accept) = self.accept.take() {
            let _ = accept.await;
        }
        let all = self.shared.config.limits.max_connections as u32;
        let grace = self.shared.config.limits.shutdown_grace;
        let _ = tokio::time::timeout(grace, self.connections.acquire_many(all)).await;
        self.shared.access_log.flush();
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    connections: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
            _ = stop.changed() => return,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            // Out of file descriptors or a connection reset before accept: back off briefly rather
            // than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        let stop = stop.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let stream = match tls {
                None => ServerStream::Tcp(stream),
                // The handshake on the connection's own task, bounded like a request head: a
                // peer that opens a socket and says nothing holds a permit no longer than that.
                Some(acceptor) => {
                    let handshake = acceptor.accept(stream);
                    match tokio::time::timeout(shared.config.limits.idle_timeout, handshake).await {
                        Ok(Ok(tls)) => ServerStream::Tls(Box::new(tls)),
                        // A failed handshake (plain HTTP to the TLS port, an untrusted
                        // certificate on the client's side) ends the connection; the client
                        // reports it.
                        Ok(Err(_)) | Err(_) => return,
                    }
                }
            };
            serve_connection(stream, peer, &shared, stop).await;
            drop(permit);
        });
    }
}

/// How long a connection waits for its next request before its read buffer's pages go back to the
/// kernel: long enough that a client's next request on a busy connection finds them still there
/// (no page faults), short enough that idle keep-alive connections cost a few KiB each.
const IDLE_BUFFER_RELEASE: Duration = Duration::from_secs(1);

/// Serves one connection until it ends.
async fn serve_connection(
    stream: ServerStream,
    peer: SocketAddr,
    shared: &Shared,
    mut stop: watch::Receiver<bool>,
) {
    let limits = &shared.config.limits;
    let config = ConnectionConfig {
        read_buffer_size: shared.config.read_buffer_size,
        limits: Limits {
            head_timeout: Some(limits.idle_timeout),
            body_read_timeout: Some(limits.request_timeout),
            min_body_rate: (limits.min_body_rate > 0).then_some(MinBodyRate {
                bytes_per_second: limits.min_body_rate,
                grace: limits.request_timeout,
            }),
            ..Limits::default()
        },
        // A keep-alive connection idle this long holds no read-buffer pages (`bench/idle_connections.py`).
        release_idle_buffer_after: Some(IDLE_BUFFER_RELEASE),
    };
    let conn = HttpConnection::with_config(stream, config);
    let mut x = Exchange::new(conn, shared.scratch.clone(), limits.request_timeout);
    let mut head = RequestHead::new();
    // The bucket and key of the request being served, for its access log line (reused).
    let mut names = RequestNames::default();
    loop {
        if *stop.borrow() {
            return;
        }
        let got = tokio::select! {
            got = x.conn.read_request_head(&mut head) => got,
            _ = stop.changed() => return,
        };
        match got {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                answer_unreadable_head(&mut x, shared, e).await;
                return;
            }
        }
        x.response_started = false;
        x.closing = !head.keep_alive();
        let request_id = shared.request_ids.next();
        let started = (SystemTime::now(), Instant::now());
        let result = serve_request(&mut x, shared, &head, &request_id, &mut names).await;
        let log = |x: &Exchange, error: Option<&S3Error>| {
            log_request(x, shared, &head, &request_id, peer, &names, started, error);
        };
        if let Err(error) = result {
            if x.response_started {
                // Part of the answer went out: the connection ends here, but the line is written.
                log(&x, Some(&error));
                return;
            }
            // An unread body the connection can not skip cheaply ends the connection after the
            // error, so the client's unsent body is never read as the next request.
            let drained = !x.conn.body_done() && !matches!(x.conn.discard_body().await, Ok(true));
            if drained || !x.conn.is_reusable() {
                x.closing = true;
            }
            let head_request = head.method() == "HEAD";
            let resource = route::split_target(head.target()).0.to_owned();
            let sent = x
                .send_error(&error, &resource, &request_id, head_request)
                .await;
            log(&x, Some(&error));
            if sent.is_err() {
                return;
            }
        } else {
            log(&x, None);
        }
        // Between requests the connection holds no scratch buffer.
        x.release_scratch();
        if x.closing || !x.conn.is_reusable() {
            return;
        }
    }
}

/// The bucket and key of a request, kept for its access log line.
#[derive(Debug, Default)]
struct RequestNames {
    bucket: String,
    key: String,
}

async fn serve_request(
    x: &mut Exchange,
    shared: &Shared,
    head: &RequestHead,
    request_id: &str,
    names: &mut RequestNames,
) -> Result<(), S3Error> {
    let headers = head.headers();
    let route = route::route(
        head.method(),
        head.target(),
        headers.get_str("host"),
        &shared.config.base_domain,
        headers.contains("x-amz-copy-source"),
    );
    names.bucket.clear();
    names.key.clear();
    // The names are copied only for someone who reads them: the access log, or a `tracing`
    // subscriber listening for this module's request events.
    let wanted = shared.access_log.enabled() || tracing::enabled!(tracing::Level::DEBUG);
    if let (Ok(route), true) = (&route, wanted) {
        names.bucket.push_str(&route.bucket);
        names.key.push_str(&route.key);
    }
    // A CORS preflight carries no signature (browsers send none, whatever the URL's query says)
    // and brisk serve keeps no CORS configuration: answered before authentication, as S3 answers
    // for a bucket without one.
    if head.method() == "OPTIONS" {
        return Err(S3Error::cors_preflight(headers.contains("origin")));
    }
    let payload = shared.auth.authenticate(head)?;
    let route = route?;
    handler::handle(
        x,
        Request {
            shared,
            head,
            route,
            payload,
            request_id,
        },
    )
    .await
}

/// Writes the access log line of the request just served (`error`: what it failed with, whose
/// answer is about to be sent).
#[allow(clippy::too_many_arguments)]
fn log_request(
    x: &Exchange,
    shared: &Shared,
    head: &RequestHead,
    request_id: &str,
    peer: SocketAddr,
    names: &RequestNames,
    (time, started): (SystemTime, Instant),
    error: Option<&S3Error>,
) {
    // The request's end as a `tracing` event too, for an embedding program's own subscriber
    // (`brisk serve` shows it with `RUST_LOG=brisk_server=debug`); free when nothing listens.
    tracing::debug!(
        request_id,
        %peer,
        method = head.method(),
        bucket = names.bucket.as_str(),
        key = names.key.as_str(),
        status = error.map_or_else(|| x.response.status(), |e| e.status),
        error_code = error.map(|e| e.code.as_str()),
        duration_us = started.elapsed().as_micros() as u64,
        "request served"
    );
    if !shared.access_log.enabled() {
        // A server error is never silent: with the access log off, it still gets one line on
        // stderr, so an operator who turned the log off for speed hears about a full disk.
        if let Some(e) = error.filter(|e| e.status >= 500) {
            eprintln!(
                "brisk serve: {} {} {} {}: {} (request {request_id})",
                e.status,
                e.code,
                head.method(),
                head.target().split('?').next().unwrap_or_default(),
                e.message
            );
        }
        return;
    }
    let status = error.map_or_else(|| x.response.status(), |e| e.status);
    // The body's length as the head declared it (an error document's too, once sent); none for
    // HEAD, 204 and 304.
    let bytes_out = if head.method() == "HEAD" || matches!(status, 204 | 304) {
        0
    } else {
        x.response.content_length().ok().flatten().unwrap_or(0)
    };
    shared.access_log.record(&AccessRecord {
        time,
        request_id,
        remote: Some(peer),
        method: head.method(),
        bucket: &names.bucket,
        key: &names.key,
        status,
        error_code: error.map(|e| e.code.as_str()),
        error_message: error
            .filter(|e| e.status >= 500)
            .map(|e| e.message.as_str()),
        bytes_in: x.conn.body_received(),
        bytes_out,
        duration: started.elapsed(),
    });
}

/// A head that could not be read: answer with the status the HTTP layer suggests (400, 408, 414,
/// 431, 501) when the peer is still there, then close.
async fn answer_unreadable_head(x: &mut Exchange, shared: &Shared, e: HttpError) {
    if e.status_hint().is_none() {
        return;
    }
    // An idle keep-alive connection that timed out before sending anything is closed silently.
    if matches!(e, HttpError::HeadTimeout { .. }) && x.conn.buffered().is_empty() {
        return;
    }
    x.closing = true;
    let error = S3Error::from(e);
    let id = shared.request_ids.next();
    let _ = x.send_error(&error, "/", &id, false).await;
}
