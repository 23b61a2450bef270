//! A TCP socket's receive low-water mark (`SO_RCVLOWAT`): how many bytes it holds before a reader
//! waiting on it is woken.
//!
//! A streamed download's worker fills a block from the socket, hands it to the file writer, and
//! waits for the block written before it. While it waits, each segment the server sends makes the
//! socket readable again, and the runtime thread wakes, finds nothing to run and sleeps again: from
//! MinIO, 6 to 10 times per MiB, where the whole download needs about one read per MiB. Raising the
//! mark while the worker cannot take the bytes, and keeping it at a block's worth while it reads,
//! cut a one-connection download's voluntary context switches from about 34,000 to about 9,000
//! per 4 GiB and its CPU by about 9 % (BENCHMARKS-log.md). Bytes keep flowing meanwhile: Linux grows
//! the receive buffer to hold twice the mark.
//!
//! The mark must never exceed the bytes still to come on the connection, or a read waits for
//! bytes that are not coming until the body's timeout; callers clamp it to what is left of the
//! response, and a connection goes back to the pool with the mark at 1, the kernel's default.

use std::io;

use tokio::net::TcpStream;

/// Sets `socket`'s receive low-water mark to `bytes` (at least 1). Linux caps it at half the
/// largest receive buffer (`net.ipv4.tcp_rmem`). Elsewhere this does nothing.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(crate) fn set(socket: &TcpStream, bytes: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let value = libc::c_int::try_from(bytes.max(1)).unwrap_or(libc::c_int::MAX);
    let len = libc::socklen_t::try_from(size_of::<libc::c_int>()).expect("an int's size fits");
    // SAFETY: `setsockopt` reads `len` bytes through the pointer, which points at `value`, a
    // `c_int` alive on this frame for the whole call; the descriptor is borrowed from `socket`,
    // which stays open while the call runs.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&raw const value).cast(),
            len,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets `socket`'s receive low-water mark: not on this system, where nothing is done.
#[cfg(not(target_os = "linux"))]
pub(crate) fn set(_socket: &TcpStream, _bytes: usize) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// With the mark at 64 KiB a reader is not woken by 1 KiB, and is once the rest arrives; back
    /// at 1 it is woken by a single byte.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_reader_wakes_once_the_mark_has_arrived() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (client, accepted) =
            tokio::join!(tokio::net::TcpStream::connect(address), listener.accept());
        let (mut reader, (mut writer, _)) = (client.unwrap(), accepted.unwrap());
        super::set(&reader, 64 * 1024).unwrap();
        writer.write_all(&[1u8; 1024]).await.unwrap();
        let mut buf = vec![0u8; 128 * 1024];
        let early =
            tokio::time::timeout(std::time::Duration::from_millis(200), reader.read(&mut buf))
                .await;
        assert!(early.is_err(), "woken by 1 KiB under a 64 KiB mark");
        writer.write_all(&vec![2u8; 63 * 1024]).await.unwrap();
        let mut got = 0;
        while got < 64 * 1024 {
            got += reader.read(&mut buf[got..]).await.unwrap();
        }
        assert_eq!(got, 64 * 1024);
        super::set(&reader, 1).unwrap();
        writer.write_all(&[3u8]).await.unwrap();
        let late =
            tokio::time::timeout(std::time::Duration::from_secs(5), reader.read(&mut buf)).await;
        assert_eq!(late.expect("a byte wakes the reader at mark 1").unwrap(), 1);
    }
}
