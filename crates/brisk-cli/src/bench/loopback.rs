//! The loopback ceiling: how fast this machine moves bytes from one task to another over a plain
//! TCP connection on 127.0.0.1, with no HTTP, no signing, no checksum and no disk. Every other figure
//! is also shown as a fraction of it, which says more on a shared or small machine than GiB/s alone.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes per `write`/`read` call: 1 MiB, large enough that the system-call count does not bound
/// the rate (the kernel moves at most its socket buffer per call anyway).
pub const COPY_CHUNK: usize = 1 << 20;

/// Sends `bytes` bytes from one task to another over 127.0.0.1 and returns how many arrived. Time it
/// from the outside; both tasks run on the caller's runtime.
pub async fn copy(bytes: u64) -> io::Result<u64> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let sender = tokio::spawn(async move {
        let mut stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let chunk = vec![0x5au8; COPY_CHUNK];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(COPY_CHUNK as u64) as usize;
            stream.write_all(&chunk[..n]).await?;
            left -= n as u64;
        }
        stream.shutdown().await
    });
    let (mut stream, _) = listener.accept().await?;
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut received = 0u64;
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        received += n as u64;
    }
    sender.await.map_err(io::Error::other)??;
    Ok(received)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_byte_arrives() {
        assert_eq!(
            copy(3 * COPY_CHUNK as u64 + 17).await.unwrap(),
            3 * COPY_CHUNK as u64 + 17
        );
        assert_eq!(copy(0).await.unwrap(), 0);
    }
}
