//! [`TcpOrTls`]: the byte stream under an HTTP connection, for the client and the server alike.
//!
//! Plain TCP keeps the kernel paths that skip user space (`sendfile`, `MSG_MORE`, a peek at an idle
//! socket), which is why the socket stays reachable through [`TcpOrTls::plain`]; TLS is whatever
//! stream the caller's TLS library gives over the same socket (`tokio_rustls`'s client or server
//! stream), boxed because its state is a few KiB.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Plain TCP, or `T` (a TLS stream) over TCP.
pub enum TcpOrTls<T> {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS over TCP.
    Tls(Box<T>),
}

impl<T> TcpOrTls<T> {
    /// The TCP socket, when bytes go to it unchanged (a plain connection).
    pub fn plain(&self) -> Option<&TcpStream> {
        match self {
            Self::Tcp(stream) => Some(stream),
            Self::Tls(_) => None,
        }
    }
}

impl<T> std::fmt::Debug for TcpOrTls<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tcp(stream) => f.debug_tuple("Tcp").field(stream).finish(),
            Self::Tls(_) => f.debug_tuple("Tls").finish_non_exhaustive(),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TcpOrTls<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TcpOrTls<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Tcp(s) => s.is_write_vectored(),
            Self::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Bytes pass both ways through the plain variant, which exposes its socket; a TLS variant
    /// (here any stream) does not.
    #[tokio::test]
    async fn the_plain_variant_passes_bytes_and_shows_its_socket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let mut client: TcpOrTls<tokio::io::DuplexStream> = TcpOrTls::Tcp(client.unwrap());
        let mut server = accepted.unwrap().0;
        assert!(client.plain().is_some());
        client.write_all(b"ping").await.unwrap();
        client.flush().await.unwrap();
        let mut got = [0u8; 4];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
        server.write_all(b"pong").await.unwrap();
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"pong");

        let (one, mut other) = tokio::io::duplex(64);
        let mut wrapped = TcpOrTls::Tls(Box::new(one));
        assert!(wrapped.plain().is_none());
        wrapped.write_all(b"sealed").await.unwrap();
        let mut got = [0u8; 6];
        other.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"sealed");
    }
}
