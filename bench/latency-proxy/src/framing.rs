//! Just enough HTTP/1.1 framing to tell where each message starts and ends in a byte stream: heads
//! (parsed with `httparse`), `Content-Length` and chunked bodies, and a response without either that
//! runs to the end of the connection. The proxy needs the boundaries, not the contents: a request's
//! head marks when it reaches the server, a response's head is where its first-byte latency applies.

use std::io;

/// The longest head accepted (the servers behind the proxy allow less).
pub const MAX_HEAD: usize = 64 * 1024;
/// Headers parsed per head.
const MAX_HEADERS: usize = 64;

/// Which way the stream flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Client to server.
    Request,
    /// Server to client.
    Response,
}

/// How a message's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// This many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the connection ends (a response with neither length nor chunking).
    UntilClose,
}

/// A message's head, complete.
#[derive(Debug)]
pub struct Head {
    /// Its bytes, as they came (the proxy forwards them unchanged).
    pub bytes: Vec<u8>,
    /// A request's method.
    pub method: Option<String>,
    /// A response's status.
    pub status: Option<u16>,
    /// The body framing its headers announce (before what the request method or the status imply).
    pub framing: Framing,
}

/// What one [`Framer::step`] found.
#[derive(Debug)]
pub struct Step {
    /// Bytes of the input consumed.
    pub used: usize,
    /// The consumed bytes belong to a head (held until the head is complete, then returned in
    /// [`Step::head`]); otherwise they are body bytes of the current message.
    pub in_head: bool,
    /// A head completed with this step.
    pub head: Option<Head>,
    /// The current message ended with this step's last byte.
    pub ended: bool,
}

#[derive(Debug)]
enum State {
    Idle,
    Head(Vec<u8>),
    Body(u64),
    ChunkSize(Vec<u8>),
    ChunkData(u64),
    ChunkCrlf(u8),
    Trailer(Vec<u8>),
    UntilClose,
}

/// Follows the messages of one direction of a connection.
#[derive(Debug)]
pub struct Framer {
    kind: Kind,
    state: State,
}

impl Framer {
    /// A framer at the start of a stream.
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            state: State::Idle,
        }
    }

    /// Consumes `data` up to the next head's end or message's end, or all of it. After a step that
    /// returned a head, the caller says how the body is framed with [`Framer::begin_body`].
    pub fn step(&mut self, data: &[u8]) -> io::Result<Step> {
        let mut step = Step {
            used: 0,
            in_head: false,
            head: None,
            ended: false,
        };
        if data.is_empty() {
            return Ok(step);
        }
        match &mut self.state {
            State::Idle => {
                self.state = State::Head(Vec::new());
                return self.step(data);
            }
            State::Head(buf) => {
                step.in_head = true;
                let old = buf.len();
                buf.extend_from_slice(data);
                let from = old.saturating_sub(3);
                match buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
                    Some(i) => {
                        let end = from + i + 4;
                        buf.truncate(end);
                        step.used = end - old;
                        let bytes = std::mem::take(buf);
                        step.head = Some(parse_head(self.kind, bytes)?);
                    }
                    None => {
                        if buf.len() > MAX_HEAD {
                            return Err(invalid("a head longer than 64 KiB"));
                        }
                        step.used = data.len();
                    }
                }
            }
            State::Body(left) => {
                let n = (*left).min(data.len() as u64);
                *left -= n;
                step.used = n as usize;
                if *left == 0 {
                    self.state = State::Idle;
                    step.ended = true;
                }
            }
            State::ChunkSize(line) => {
                let (used, done) = take_line(line, data)?;
                step.used = used;
                if done {
                    let text = std::str::from_utf8(line).map_err(|_| invalid("chunk size"))?;
                    let hex = text.split(';').next().unwrap_or("").trim();
                    let size = u64::from_str_radix(hex, 16).map_err(|_| invalid("chunk size"))?;
                    self.state = if size == 0 {
                        State::Trailer(Vec::new())
                    } else {
                        State::ChunkData(size)
                    };
                }
            }
            State::ChunkData(left) => {
                let n = (*left).min(data.len() as u64);
                *left -= n;
                step.used = n as usize;
                if *left == 0 {
                    self.state = State::ChunkCrlf(2);
                }
            }
            State::ChunkCrlf(left) => {
                let n = usize::from(*left).min(data.len());
                *left -= n as u8;
                step.used = n;
                if *left == 0 {
                    self.state = State::ChunkSize(Vec::new());
                }
            }
            State::Trailer(line) => {
                let (used, done) = take_line(line, data)?;
                step.used = used;
                if done {
                    if line.trim_ascii().is_empty() {
                        self.state = State::Idle;
                        step.ended = true;
                    } else {
                        line.clear();
                    }
                }
            }
            State::UntilClose => step.used = data.len(),
        }
        Ok(step)
    }

    /// Body bytes the stream may carry next without the framer looking at them: the rest of a
    /// `Content-Length` body or of a chunk, everything of a body that runs to the end; `None` when
    /// the next bytes are a head or chunked framing, which [`Framer::step`] must see.
    pub fn body_left(&self) -> Option<u64> {
        match self.state {
            State::Body(left) | State::ChunkData(left) => Some(left),
            State::UntilClose => Some(u64::MAX),
            _ => None,
        }
    }

    /// Passes `n` body bytes (at most [`Framer::body_left`]) unseen; the step says whether the
    /// message ended with them.
    pub fn skip_body(&mut self, n: u64) -> Step {
        let mut step = Step {
            used: 0,
            in_head: false,
            head: None,
            ended: false,
        };
        match &mut self.state {
            State::Body(left) | State::ChunkData(left) => {
                let taken = n.min(*left);
                *left -= taken;
                step.used = taken as usize;
                if *left == 0 {
                    if matches!(self.state, State::Body(_)) {
                        self.state = State::Idle;
                        step.ended = true;
                    } else {
                        self.state = State::ChunkCrlf(2);
                    }
                }
            }
            State::UntilClose => step.used = n as usize,
            _ => {}
        }
        step
    }

    /// Starts the body of the message whose head the last step returned; returns whether the
    /// message has already ended (no body, or an empty one).
    pub fn begin_body(&mut self, framing: Framing) -> bool {
        self.state = match framing {
            Framing::None | Framing::Length(0) => State::Idle,
            Framing::Length(n) => State::Body(n),
            Framing::Chunked => State::ChunkSize(Vec::new()),
            Framing::UntilClose => State::UntilClose,
        };
        matches!(self.state, State::Idle)
    }
}

/// What a response's body actually is, given the headers' framing, its status and whether it
/// answers a HEAD.
pub fn response_framing(head: &Head, answers_head: bool) -> Framing {
    match head.status {
        Some(s) if (100..200).contains(&s) || s == 204 || s == 304 => Framing::None,
        _ if answers_head => Framing::None,
        _ => head.framing,
    }
}

/// Appends `data` to `line` up to and including the first `\n`; returns the bytes used and whether
/// the line is complete.
fn take_line(line: &mut Vec<u8>, data: &[u8]) -> io::Result<(usize, bool)> {
    let (used, done) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (i + 1, true),
        None => (data.len(), false),
    };
    line.extend_from_slice(&data[..used]);
    if line.len() > MAX_HEAD {
        return Err(invalid("a chunk line longer than 64 KiB"));
    }
    Ok((used, done))
}

fn parse_head(kind: Kind, bytes: Vec<u8>) -> io::Result<Head> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let (method, status, fields) = match kind {
        Kind::Request => {
            let mut request = httparse::Request::new(&mut headers);
            if !request
                .parse(&bytes)
                .map_err(|e| invalid_owned(format!("request head: {e}")))?
                .is_complete()
            {
                return Err(invalid("request head"));
            }
            let method = request.method.map(str::to_owned);
            (method, None, request.headers)
        }
        Kind::Response => {
            let mut response = httparse::Response::new(&mut headers);
            if !response
                .parse(&bytes)
                .map_err(|e| invalid_owned(format!("response head: {e}")))?
                .is_complete()
            {
                return Err(invalid("response head"));
            }
            (None, response.code, response.headers)
        }
    };
    let mut framing = match kind {
        Kind::Request => Framing::None,
        Kind::Response => Framing::UntilClose,
    };
    for field in fields.iter() {
        if field.name.eq_ignore_ascii_case("transfer-encoding")
            && String::from_utf8_lossy(field.value)
                .to_ascii_lowercase()
                .contains("chunked")
        {
            framing = Framing::Chunked;
            break;
        }
        if field.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(field.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| invalid("content-length"))?;
            framing = Framing::Length(n);
        }
    }
    Ok(Head {
        bytes,
        method,
        status,
        framing,
    })
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

fn invalid_owned(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `stream` in pieces of `piece` bytes; returns each message as (head, body bytes).
    fn split(kind: Kind, stream: &[u8], piece: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut framer = Framer::new(kind);
        let mut messages: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for chunk in stream.chunks(piece) {
            let mut pos = 0;
            while pos < chunk.len() {
                let step = framer.step(&chunk[pos..]).unwrap();
                if !step.in_head {
                    messages
                        .last_mut()
                        .unwrap()
                        .1
                        .extend_from_slice(&chunk[pos..pos + step.used]);
                }
                if let Some(head) = step.head {
                    let framing = match kind {
                        Kind::Request => head.framing,
                        Kind::Response => response_framing(&head, false),
                    };
                    messages.push((head.bytes, Vec::new()));
                    framer.begin_body(framing);
                }
                pos += step.used;
            }
        }
        messages
    }

    #[test]
    fn messages_split_where_they_end_whatever_the_pieces() {
        let stream: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\
HTTP/1.1 204 No Content\r\n\r\n\
HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n\
HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        for piece in [1, 2, 3, 7, 64, stream.len()] {
            let messages = split(Kind::Response, stream, piece);
            let bodies: Vec<&[u8]> = messages.iter().map(|m| &m.1[..]).collect();
            assert_eq!(
                bodies,
                vec![
                    &b"hello"[..],
                    b"",
                    b"3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n",
                    b"ok"
                ],
                "pieces of {piece}"
            );
            let total: usize = messages.iter().map(|m| m.0.len() + m.1.len()).sum();
            assert_eq!(total, stream.len());
        }
    }

    #[test]
    fn requests_with_and_without_bodies() {
        let stream: &[u8] = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n\
PUT /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\
GET /c HTTP/1.1\r\n\r\n";
        for piece in [1, 5, stream.len()] {
            let messages = split(Kind::Request, stream, piece);
            assert_eq!(messages.len(), 3);
            assert_eq!(messages[1].1, b"abc");
            assert!(messages[2].1.is_empty());
        }
    }

    #[test]
    fn body_bytes_skipped_unseen_end_a_message_as_seen_ones_do() {
        let mut framer = Framer::new(Kind::Response);
        let step = framer
            .step(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
            .unwrap();
        framer.begin_body(response_framing(&step.head.unwrap(), false));
        assert_eq!(framer.body_left(), Some(10));
        assert!(!framer.skip_body(6).ended);
        let step = framer.skip_body(100);
        assert_eq!(
            (step.used, step.ended),
            (4, true),
            "no further than the body"
        );
        assert_eq!(framer.body_left(), None, "a head comes next");

        let step = framer
            .step(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        framer.begin_body(response_framing(&step.head.unwrap(), false));
        assert_eq!(framer.body_left(), None, "the chunk size is framing");
        assert_eq!(framer.step(b"5\r\n").unwrap().used, 3);
        assert_eq!(framer.body_left(), Some(5));
        assert!(
            !framer.skip_body(5).ended,
            "the chunk's CRLF and the last chunk follow"
        );
        assert_eq!(framer.body_left(), None);
        assert_eq!(framer.step(b"\r\n0\r\n").unwrap().used, 2);
        assert_eq!(framer.step(b"0\r\n").unwrap().used, 3);
        assert!(framer.step(b"\r\n").unwrap().ended);
    }

    #[test]
    fn a_head_or_informational_answer_has_no_body() {
        let mut framer = Framer::new(Kind::Response);
        let step = framer
            .step(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
            .unwrap();
        let head = step.head.unwrap();
        assert_eq!(response_framing(&head, true), Framing::None);
        assert_eq!(response_framing(&head, false), Framing::Length(10));
        let step = framer.step(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap();
        assert_eq!(response_framing(&step.head.unwrap(), false), Framing::None);
    }
}
