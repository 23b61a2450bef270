//! A scripted S3 stand-in for fault tests, in the test's process: a script says what to do with each
//! request (answer, cut the body off, stay silent, refuse before the body, answer late, close), and
//! the server records what the client sent, so retries, resumed reads, timeouts and the batch
//! reader's connection handling are checked request by request.
//!
//! The server's [`Ending`] says how it ends connections besides what the script asks: never, after a
//! number of answers with more requests queued, or after every answer (`Connection: close`, as a
//! server without keep-alive). [`object_ranges`] is the script of a server of ranged GETs of one
//! object.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisk_wire::http::{HttpConnection, RequestHead, ResponseHead};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// What the stand-in does with one request.
#[derive(Debug, Clone)]
pub enum Action {
    /// A complete response.
    Respond {
        /// Status code.
        status: u16,
        /// Headers besides `Content-Length`.
        headers: Vec<(&'static str, String)>,
        /// The body (not sent for a HEAD).
        body: Vec<u8>,
    },
    /// Announces `Content-Length: declared`, sends `body`, then closes the connection.
    CutOff {
        /// Status code.
        status: u16,
        /// The announced length.
        declared: usize,
        /// Headers besides `Content-Length`.
        headers: Vec<(&'static str, String)>,
        /// What is sent of the body.
        body: Vec<u8>,
    },
    /// Never answers.
    Silence,
    /// A response sent as soon as the head has arrived, without reading the body (nor letting it
    /// come: no `100 Continue`).
    RefuseBeforeBody {
        /// Status code.
        status: u16,
        /// The body.
        body: Vec<u8>,
    },
    /// A complete response, then the connection is closed.
    RespondAndClose {
        /// Status code.
        status: u16,
        /// The body.
        body: Vec<u8>,
    },
    /// A complete `200` with `body`, sent only after `delay` (a server assembling an object).
    RespondLate {
        /// How long the answer waits.
        delay: Duration,
        /// The body.
        body: Vec<u8>,
    },
}

/// How the server ends connections, whatever the script answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ending {
    /// Keeps connections as long as the client does (and the script lets it).
    #[default]
    KeepAlive,
    /// Closes each connection after this many responses, whatever is queued on it.
    CloseAfter(usize),
    /// Answers each request with `Connection: close` and closes.
    NoKeepAlive,
}

/// What the client sent, request by request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The method.
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// The `Range` header.
    pub range: Option<String>,
    /// The `If-Match` header.
    pub if_match: Option<String>,
    /// The `Expect` header.
    pub expect: Option<String>,
    /// Body bytes the server read.
    pub body_received: u64,
    /// The connection it came on (1 for the first accepted).
    pub connection: usize,
    /// Whether its head was already in the server's read buffer when the previous response on the
    /// connection had been written: a request the client pipelined.
    pub pipelined: bool,
}

/// The script: the request's index in the log (from 0) and its head, to the action.
pub type Script = Arc<dyn Fn(usize, &RequestHead) -> Action + Send + Sync>;

/// A running stand-in (its accept loop lives as long as the test's runtime).
#[derive(Debug, Clone)]
pub struct FakeS3 {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// What the client sent.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicUsize>,
}

impl FakeS3 {
    /// Starts a stand-in that keeps connections alive and answers as `script` says.
    pub async fn start(script: Script) -> Self {
        Self::start_with(script, Ending::KeepAlive).await
    }

    /// Starts a stand-in that answers as `script` says and ends connections as `ending` says.
    pub async fn start_with(script: Script, ending: Ending) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let server = Self {
            endpoint,
            seen: Arc::default(),
            connections: Arc::default(),
        };
        let (log, connections) = (Arc::clone(&server.seen), Arc::clone(&server.connections));
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let connection = connections.fetch_add(1, Ordering::SeqCst) + 1;
                let (script, log) = (Arc::clone(&script), Arc::clone(&log));
                tokio::spawn(serve_connection(stream, connection, script, log, ending));
            }
        });
        server
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Requests read so far (every attempt).
    pub fn requests(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Requests the client pipelined (see [`Seen::pipelined`]).
    pub fn pipelined(&self) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.pipelined)
            .count()
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    connection: usize,
    script: Script,
    log: Arc<Mutex<Vec<Seen>>>,
    ending: Ending,
) {
    let mut conn = HttpConnection::new(stream);
    let mut head = RequestHead::new();
    let mut answered = 0usize;
    loop {
        let pipelined = answered > 0 && !conn.buffered().is_empty();
        match conn.read_request_head(&mut head).await {
            Ok(true) => {}
            _ => return,
        }
        let index = {
            let mut log = log.lock().unwrap();
            log.push(Seen {
                method: head.method().to_owned(),
                target: head.target().to_owned(),
                range: head.headers().get_str("range").map(str::to_owned),
                if_match: head.headers().get_str("if-match").map(str::to_owned),
                expect: head.headers().get_str("expect").map(str::to_owned),
                body_received: 0,
                connection,
                pipelined,
            });
            log.len() - 1
        };
        let action = script(index, &head);
        if let Action::RefuseBeforeBody { status, body } = &action {
            // Answer from the head alone: no `100 Continue` goes out, so the body never comes.
            let mut response = ResponseHead::with_status(*status).unwrap();
            response.headers_mut().set_content_length(body.len() as u64);
            let _ = conn.write_response(&response, body).await;
            return;
        }
        // Read the whole request body, however large (part uploads are megabytes).
        loop {
            match conn.body_chunk().await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
        log.lock().unwrap()[index].body_received = conn.body_received();
        let close_header = ending == Ending::NoKeepAlive;
        match action {
            Action::RefuseBeforeBody { .. } => unreachable!("answered above"),
            Action::Respond {
                status,
                headers,
                body,
            } => {
                let response = response(status, headers, body.len(), close_header);
                let body = if head.method() == "HEAD" {
                    &[][..]
                } else {
                    &body[..]
                };
                if conn.write_response(&response, body).await.is_err() {
                    return;
                }
            }
            Action::CutOff {
                status,
                declared,
                headers,
                body,
            } => {
                let response = response(status, headers, declared, false);
                let _ = conn.write_response(&response, &body).await;
                let _ = conn.get_mut().shutdown().await;
                return;
            }
            Action::Silence => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            Action::RespondLate { delay, body } => {
                tokio::time::sleep(delay).await;
                let response = response(200, Vec::new(), body.len(), close_header);
                if conn.write_response(&response, &body).await.is_err() {
                    return;
                }
            }
            Action::RespondAndClose { status, body } => {
                let response = response(status, Vec::new(), body.len(), false);
                let _ = conn.write_response(&response, &body).await;
                return;
            }
        }
        answered += 1;
        let close = match ending {
            Ending::KeepAlive => false,
            Ending::CloseAfter(n) => answered >= n,
            Ending::NoKeepAlive => true,
        };
        if close {
            lingering_close(conn).await;
            return;
        }
    }
}

fn response(
    status: u16,
    headers: Vec<(&'static str, String)>,
    content_length: usize,
    close: bool,
) -> ResponseHead {
    let mut response = ResponseHead::with_status(status).unwrap();
    for (name, value) in headers {
        response.headers_mut().append(name, value).unwrap();
    }
    if close {
        response
            .headers_mut()
            .append("connection", "close")
            .unwrap();
    }
    response
        .headers_mut()
        .set_content_length(content_length as u64);
    response
}

/// A lingering close, as nginx and Go's server do: stop sending, then read what the client still
/// sends until it closes, so that the requests queued behind do not make the kernel answer with a
/// reset that would destroy the responses not yet received.
async fn lingering_close(conn: HttpConnection<tokio::net::TcpStream>) {
    let mut stream = conn.into_inner();
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 4096];
    let linger = async {
        while let Ok(n) = tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), linger).await;
}

/// The script of a server of ranged GETs of `object`: `Range: bytes=a-b` is answered `206` with
/// those bytes (clipped to the object), a range starting at or past the end `416 InvalidRange`, and
/// a request without a range `200` with the whole object.
pub fn object_ranges(object: Arc<Vec<u8>>) -> Script {
    Arc::new(move |_, head: &RequestHead| {
        let range = head.headers().get_str("range").unwrap_or("");
        let parsed = range
            .strip_prefix("bytes=")
            .and_then(|r| r.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
        let len = object.len() as u64;
        match parsed {
            Some((first, last)) if first < len && first <= last => {
                let last = last.min(len - 1);
                Action::Respond {
                    status: 206,
                    headers: vec![("content-range", format!("bytes {first}-{last}/{len}"))],
                    body: object[first as usize..=last as usize].to_vec(),
                }
            }
            Some(_) => Action::Respond {
                status: 416,
                headers: vec![("content-range", format!("bytes */{len}"))],
                body: b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InvalidRange</Code><Message>The requested range is not satisfiable</Message></Error>".to_vec(),
            },
            None => Action::Respond {
                status: 200,
                headers: Vec::new(),
                body: object.to_vec(),
            },
        }
    })
}
