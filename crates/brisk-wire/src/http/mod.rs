//! The HTTP/1.1 codec shared by the client and the server.
//!
//! It is small because S3 needs little of HTTP (keep-alive, Content-Length, chunked,
//! `Expect: 100-continue`, pipelining) and it is ours because the body path is the product: a response
//! body goes from the socket straight into the caller's buffer, and the server owns one read buffer per
//! connection, of a configurable size, reused for every request.
//!
//! - [`head`]: request and response heads, parsed with `httparse` under [`Limits`], serialised into a
//!   reusable buffer; keep-alive and `Expect` decisions.
//! - [`headers`]: the owned, reusable field list behind both heads.
//! - [`body`]: how long a body is (RFC 9112 §6.3), rejecting every ambiguous framing.
//! - [`chunked`]: the streaming chunked decoder and the stack-only chunk header for vectored writes.
//! - [`conn`]: [`HttpConnection`], which drives all of the above over any tokio stream.
//! - [`stream`]: [`TcpOrTls`], the stream the client and the server drive it over.
//! - [`limits`] and [`error`]: every bound, its default and reason, and the error each one raises.
//!
//! `docs/http.md` describes the buffer management and the zero-copy body paths.

pub mod body;
pub mod chunked;
pub mod conn;
pub mod error;
pub mod head;
pub mod headers;
pub mod limits;
pub mod stream;

pub use body::{BodyFraming, content_length};
pub use chunked::{CHUNK_END, ChunkHeader, ChunkedDecoder, LAST_CHUNK, write_last_chunk};
pub use conn::{
    ConnectionConfig, ContinueOutcome, DEFAULT_READ_BUFFER_SIZE, HttpConnection, MIN_HEAD_READ,
};
pub use error::HttpError;
pub use head::{ParseStatus, RequestHead, ResponseHead, Version, canonical_reason, keep_alive};
pub use headers::Headers;
pub use limits::{Limits, MinBodyRate};
pub use stream::TcpOrTls;
