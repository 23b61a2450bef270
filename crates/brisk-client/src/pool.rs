//! Keep-alive connections, bounded per host.
//!
//! A TCP handshake costs a round trip (a TLS one two more), and a connection's read buffer is allocated
//! once per connection, so connections are kept and reused: after a response has been read to its end
//! and both ends agreed to keep the connection, it goes back to its host's idle list, and the next
//! request to that host takes it instead of connecting.
//!
//! - **Bound**: at most `max_per_host` connections per host exist at once, busy or idle (a semaphore
//!   permit travels with each checked-out connection). A request beyond that waits for one to come
//!   back: concurrency is queue depth over few sockets, never an unbounded fan-out.
//! - **Freshness**: the most recently returned connection is reused first (LIFO), the one least likely
//!   to have been closed by the server; connections idle longer than [`MAX_IDLE_TIME`] are dropped,
//!   and a connection the peer has closed is noticed without blocking before it is used (when it
//!   sat idle at least [`PROBE_AFTER_IDLE`]; sooner, a dead one fails its attempt and is replaced).
//! - **Transport**: [`Transport`] is the stream under [`HttpConnection`]: plain TCP, or rustls over
//!   TCP for `https://` endpoints (the handshake counts against the connect timeout).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use brisk_wire::http::{ConnectionConfig, HttpConnection, Limits, ResponseHead, TcpOrTls};
use rustls_pki_types::ServerName;
use tokio::io::ReadBuf;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::error::Error;
use crate::metrics::Counters;

/// How long a connection may sit idle before it is dropped rather than reused: 20 s. Servers close
/// idle keep-alive connections after a while (S3 after about 20 s, nginx 75 s, Go's net/http
/// servers such as MinIO when their idle timeout passes); reusing one the server is closing at that
/// moment fails the request, so the client gives up on them first.
pub const MAX_IDLE_TIME: Duration = Duration::from_secs(20);

/// How long a connection must have sat idle before it is probed for a close by the peer: 100 ms.
/// The probe is a system call (a one-byte `MSG_PEEK` that finds nothing), and a batch that sends
/// its next request as soon as a response ends would make it once per request to learn what a
/// server closing keep-alive connections after seconds almost never does within microseconds. A
/// connection reused sooner than this and found dead anyway costs one failed attempt, which is
/// retried on a new connection (a stale reuse).
pub const PROBE_AFTER_IDLE: Duration = Duration::from_millis(100);

/// The byte stream under an HTTP connection: plain TCP, or rustls over TCP.
pub type Transport = TcpOrTls<TlsStream<TcpStream>>;

/// Whether the peer has closed an idle connection (or, in clear text, sent bytes nobody asked
/// for), checked by peeking at the socket without waiting and without consuming anything.
fn peer_gone(transport: &Transport) -> bool {
    let (tcp, tls) = match transport {
        Transport::Tcp(stream) => (stream, false),
        Transport::Tls(stream) => (stream.get_ref().0, true),
    };
    let mut probe = [0u8; 1];
    let mut probe = ReadBuf::new(&mut probe);
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match tcp.poll_peek(&mut cx, &mut probe) {
        Poll::Pending => false,
        Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => true,
        // Over TLS the server may send session tickets or a close_notify at any time; which it
        // was shows only when the connection is used, where a dead one is replaced at once.
        Poll::Ready(Ok(_)) => !tls,
    }
}

/// Forgets, without a system call, that the socket was last seen readable. Readiness is
/// edge-triggered and cleared only by a read that finds nothing, so after a response read to its
/// exact end the first read of the next response would be such a read: one futile system call per
/// request (the probe above was it when it ran). Called only before a request is sent on a
/// connection with no response outstanding, when nothing more is expected: the answer's arrival
/// is a new edge. A close that came earlier is seen when the request meets it (the peer resets),
/// and is then a stale reuse. Over TLS, rustls may hold decrypted bytes and the readiness is left
/// alone.
fn forget_read_readiness(transport: &Transport) {
    if let Some(stream) = transport.plain() {
        let _ = stream.try_io(tokio::io::Interest::READABLE, || {
            Err::<(), _>(io::ErrorKind::WouldBlock.into())
        });
    }
}

/// An HTTP/1.1 connection as the client uses it.
pub type Connection = HttpConnection<Transport>;

/// How the pool opens connections.
#[derive(Clone)]
pub(crate) struct PoolSettings {
    pub(crate) max_per_host: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) read_buffer_size: usize,
    pub(crate) read_timeout: Duration,
    /// Set for `https://` endpoints.
    pub(crate) tls: Option<TlsConnector>,
}

impl std::fmt::Debug for PoolSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolSettings")
            .field("max_per_host", &self.max_per_host)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_buffer_size", &self.read_buffer_size)
            .field("read_timeout", &self.read_timeout)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// One host's connections: the bound and the idle list.
#[derive(Debug)]
struct HostSlot {
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<IdleConnection>>,
}

/// A kept-alive connection, with the response head it last parsed into (whose buffers the next
/// response reuses) and the moment it went idle.
#[derive(Debug)]
struct IdleConnection {
    conn: Connection,
    head: ResponseHead,
    since: Instant,
    responses: u64,
}

/// Keep-alive connections per `host:port`, at most `max_per_host` each.
#[derive(Debug)]
pub(crate) struct ConnectionPool {
    settings: PoolSettings,
    hosts: Mutex<HashMap<String, Arc<HostSlot>>>,
    counters: Arc<Counters>,
}

impl ConnectionPool {
    pub(crate) fn new(settings: PoolSettings, counters: Arc<Counters>) -> Self {
        Self {
            settings,
            hosts: Mutex::new(HashMap::new()),
            counters,
        }
    }

    fn slot(&self, address: &str) -> Arc<HostSlot> {
        let mut hosts = self.hosts.lock().expect("pool lock poisoned");
        if let Some(slot) = hosts.get(address) {
            return Arc::clone(slot);
        }
        let slot = Arc::new(HostSlot {
            permits: Arc::new(Semaphore::new(self.settings.max_per_host)),
            idle: Mutex::new(Vec::with_capacity(self.settings.max_per_host)),
        });
        hosts.insert(address.to_owned(), Arc::clone(&slot));
        slot
    }

    /// A connection to `host:port` (`address` is that string): an idle one if there is a usable one,
    /// else a new one. Waits while `max_per_host` connections to the host are checked out.
    /// `fresh` skips the idle list (after a reused connection turned out to be dead).
    pub(crate) async fn checkout(
        &self,
        address: &str,
        host: &str,
        port: u16,
        fresh: bool,
    ) -> Result<PooledConnection, Error> {
        let slot = self.slot(address);
        let permit = Arc::clone(&slot.permits)
            .acquire_owned()
            .await
            .expect("pool semaphore is never closed");
        if !fresh && let Some(idle) = self.take_idle(&slot) {
            Counters::add(&self.counters.connections_reused);
            return Ok(PooledConnection {
                conn: idle.conn,
                head: idle.head,
                slot,
                _permit: permit,
                reused: true,
                responses: idle.responses,
                low_water: 1,
            });
        }
        let conn = self.connect(address, host, port).await?;
        Counters::add(&self.counters.connections_opened);
        Ok(PooledConnection {
            conn,
            head: ResponseHead::new(),
            slot,
            _permit: permit,
            reused: false,
            responses: 0,
            low_water: 1,
        })
    }

    fn take_idle(&self, slot: &HostSlot) -> Option<IdleConnection> {
        let mut idle = slot.idle.lock().expect("pool lock poisoned");
        while let Some(candidate) = idle.pop() {
            let idle_for = candidate.since.elapsed();
            let transport = candidate.conn.get_ref();
            if idle_for < PROBE_AFTER_IDLE {
                forget_read_readiness(transport);
                return Some(candidate);
            }
            if idle_for < MAX_IDLE_TIME && !peer_gone(transport) {
                return Some(candidate);
            }
            Counters::add(&self.counters.connections_discarded);
        }
        None
    }

    async fn connect(&self, address: &str, host: &str, port: u16) -> Result<Connection, Error> {
        let timeout = self.settings.connect_timeout;
        let transport = match tokio::time::timeout(timeout, self.open(address, host, port)).await {
            Err(_) => {
                return Err(Error::ConnectTimeout {
                    address: address.to_owned(),
                    timeout,
                });
            }
            Ok(result) => result?,
        };
        let limits = Limits {
            head_timeout: Some(self.settings.read_timeout),
            body_read_timeout: Some(self.settings.read_timeout),
            ..Limits::default()
        };
        Ok(HttpConnection::with_config(
            transport,
            ConnectionConfig {
                read_buffer_size: self.settings.read_buffer_size,
                limits,
                // A client reads a head only right after sending a request: never idle there.
                release_idle_buffer_after: None,
            },
        ))
    }

    /// Connects over TCP, and over TLS when the endpoint is `https://`.
    async fn open(&self, address: &str, host: &str, port: u16) -> Result<Transport, Error> {
        let connect_error = |source| Error::Connect {
            address: address.to_owned(),
            source,
        };
        let stream = match loopback_name(host) {
            // RFC 6761 §6.3: `localhost` and every name under it are the loopback address, without
            // asking a resolver (as curl and browsers do). Virtual-hosted addressing against a local
            // server (`bucket.localhost`) then works with no DNS set-up.
            true => TcpStream::connect((std::net::Ipv4Addr::LOCALHOST, port)).await,
            false => TcpStream::connect((host, port)).await,
        }
        .map_err(connect_error)?;
        // Requests are written head and body in one vectored write; waiting for more (Nagle) only
        // delays the last segment of each request.
        stream.set_nodelay(true).map_err(connect_error)?;
        let Some(tls) = &self.settings.tls else {
            return Ok(Transport::Tcp(stream));
        };
        let name = ServerName::try_from(host.to_owned()).map_err(|e| Error::TlsHandshake {
            address: address.to_owned(),
            source: io::Error::new(io::ErrorKind::InvalidInput, e),
        })?;
        let stream = tls
            .connect(name, stream)
            .await
            .map_err(|source| Error::TlsHandshake {
                address: address.to_owned(),
                source,
            })?;
        Ok(Transport::Tls(Box::new(stream)))
    }

    /// Idle connections per host address, for tests and diagnostics.
    pub(crate) fn idle_count(&self, address: &str) -> usize {
        let hosts = self.hosts.lock().expect("pool lock poisoned");
        hosts
            .get(address)
            .map_or(0, |s| s.idle.lock().expect("pool lock poisoned").len())
    }
}

/// A checked-out connection. Give it back with [`release`](Self::release) once its response has been
/// read to the end; dropping it closes it (the right thing after an error or an unread body).
#[derive(Debug)]
pub(crate) struct PooledConnection {
    conn: Connection,
    /// The head of the response being read on this connection; kept with the connection so the next
    /// response on it reuses its buffers.
    head: ResponseHead,
    slot: Arc<HostSlot>,
    _permit: OwnedSemaphorePermit,
    reused: bool,
    /// Responses read on this connection since it was opened, counted by callers that care
    /// (the batch scheduler tells a server that ends connections after one response from one
    /// that ends them after many).
    responses: u64,
    /// The socket's receive low-water mark as last set (1, the kernel's default, unless a reader
    /// raised it); see [`wake_after`](Self::wake_after).
    low_water: usize,
}

impl PooledConnection {
    /// Asks the kernel to wake a read waiting on this connection only once `cap` bytes have
    /// arrived, or all the bytes still to come if fewer: `body_left` (what is left of the
    /// response's body) less what the connection has buffered already. So a read never waits for
    /// bytes that are not coming. `SO_RCVLOWAT`, plain TCP on Linux; see [`crate::low_water`]. The
    /// mark goes back to 1 when the connection is released.
    pub(crate) fn wake_for(&mut self, body_left: u64, cap: usize) {
        let buffered = self.conn.buffered().len() as u64;
        let to_come = body_left.saturating_sub(buffered);
        self.wake_after(usize::try_from(to_come).unwrap_or(usize::MAX).min(cap));
    }

    /// Sets the mark itself: the caller makes sure `bytes` are coming.
    fn wake_after(&mut self, bytes: usize) {
        let bytes = bytes.max(1);
        if bytes == self.low_water {
            return;
        }
        if let Transport::Tcp(socket) = self.conn.get_ref() {
            match crate::low_water::set(socket, bytes) {
                Ok(()) => self.low_water = bytes,
                Err(e) => tracing::debug!(error = %e, "cannot set the receive low-water mark"),
            }
        }
    }

    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The connection and the response head to parse into.
    pub(crate) fn parts(&mut self) -> (&mut Connection, &mut ResponseHead) {
        (&mut self.conn, &mut self.head)
    }

    /// The head of the response read last.
    pub(crate) fn head(&self) -> &ResponseHead {
        &self.head
    }

    /// Whether this connection carried an earlier request.
    pub(crate) fn was_reused(&self) -> bool {
        self.reused
    }

    /// Counts a response read on this connection.
    pub(crate) fn count_response(&mut self) {
        self.responses += 1;
    }

    /// Responses counted on this connection since it was opened.
    pub(crate) fn responses(&self) -> u64 {
        self.responses
    }

    /// Returns the connection to the idle list if both ends keep it alive (the response head says
    /// so) and its last response was read completely; otherwise closes it.
    pub(crate) fn release(mut self) {
        if self.low_water != 1 {
            self.wake_after(1);
            if self.low_water != 1 {
                // A mark left raised would hold up the next response's reads: close instead.
                return;
            }
        }
        let Self {
            conn,
            head,
            slot,
            responses,
            ..
        } = self;
        if head.keep_alive() && conn.is_reusable() {
            slot.idle
                .lock()
                .expect("pool lock poisoned")
                .push(IdleConnection {
                    conn,
                    head,
                    since: Instant::now(),
                    responses,
                });
        }
    }
}

/// Whether `host` is `localhost` or a name under it (`bucket.localhost`), which RFC 6761 reserves for
/// the loopback address.
fn loopback_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    const SUFFIX: &[u8] = b".localhost";
    let bytes = host.as_bytes();
    host.eq_ignore_ascii_case("localhost")
        || bytes.len() > SUFFIX.len()
            && bytes[bytes.len() - SUFFIX.len()..].eq_ignore_ascii_case(SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::loopback_name;

    #[test]
    fn localhost_names_are_loopback() {
        for name in [
            "localhost",
            "LocalHost",
            "b.localhost",
            "my-bucket.localhost.",
            "a.b.localhost",
        ] {
            assert!(loopback_name(name), "{name}");
        }
        for name in [
            "",
            ".localhost",
            "localhost.com",
            "notlocalhost",
            "example.com",
            "é.localhos",
        ] {
            assert!(!loopback_name(name), "{name}");
        }
    }
}
