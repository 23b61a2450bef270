//! A pipe as the delay line of one direction of a connection: bytes are spliced from the sending
//! socket into the pipe as they come and from the pipe into the receiving socket when their time
//! comes, so the proxy never copies a body through its own memory. On loopback `splice` moves page
//! references both ways (a socket's received pages into the pipe, the pipe's pages into the other
//! socket's send queue): a copying proxy spent 0.47–0.51 CPU s per GiB of its own on the two
//! copies, which on two cores came out of the client's and the server's share.
//!
//! Heads are read into memory (the proxy must see them to know where each message starts and
//! ends) and written into the same pipe, so the order of bytes in the pipe is the order on the
//! wire.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::TcpStream;

/// The most a pipe grows to. A pipe starts at the kernel's default (16 pieces: 64 KiB of 4 KiB
/// pages) and doubles when it is full and the kernel allows it, so that only the connections that
/// carry much at once take capacity: the pipe pages of one user are limited
/// (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default), and an unprivileged process may not
/// make one pipe larger than `/proc/sys/fs/pipe-max-size` (1 MiB by default). 4 MiB holds a
/// 10 ms round trip of a fast connection and a few pipelined 256 KiB answers held for their
/// first-byte latency.
const MOST_CAPACITY: usize = 4 << 20;

/// Set once a pipe could not grow: the proxy says so once, on stderr (its delays may then be
/// longer than the model's for fast connections).
static GROWTH_REFUSED: AtomicBool = AtomicBool::new(false);

/// Most bytes moved by one `splice`.
const MOST_PER_SPLICE: usize = 1 << 20;

/// A pipe whose write end waits for room on the runtime.
#[derive(Debug)]
pub struct Pipe {
    read: OwnedFd,
    write: AsyncFd<OwnedFd>,
    /// The kernel's size of the pipe: its pieces × the page size (a piece spliced from a socket
    /// may hold more than a page, so the bytes it holds may be more).
    capacity: AtomicUsize,
    growable: AtomicBool,
}

/// What moving bytes from a socket into the pipe found.
enum Filled {
    Bytes(usize),
    PipeFull,
}

impl Pipe {
    /// A non-blocking pipe of the kernel's default size. Must run on a tokio runtime (its write
    /// end is registered with the runtime's reactor).
    pub fn new() -> io::Result<Self> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` is two writable ints, as pipe2 requires.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
        #[allow(unsafe_code)]
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: F_GETPIPE_SZ on a pipe descriptor we own; no pointers.
        #[allow(unsafe_code)]
        let got = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) };
        let capacity = usize::try_from(got).map_err(|_| io::Error::last_os_error())?;
        // SAFETY: `write` is an open pipe descriptor that the AsyncFd owns from here on and never
        // exchanges: it stays the same open file for the AsyncFd's whole life.
        #[allow(unsafe_code)]
        let write = unsafe { AsyncFd::register_with_interest(write, Interest::WRITABLE) }
            .map_err(io::Error::from)?;
        Ok(Self {
            read,
            write,
            capacity: AtomicUsize::new(capacity),
            growable: AtomicBool::new(true),
        })
    }

    /// The pipe's size as the kernel counts it now.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Doubles the pipe if it may; whether it grew.
    fn grow(&self) -> bool {
        let now = self.capacity();
        if !self.growable.load(Ordering::Relaxed) || now >= MOST_CAPACITY {
            return false;
        }
        let asked = (now * 2).min(MOST_CAPACITY);
        // SAFETY: F_SETPIPE_SZ on a pipe descriptor we own; no pointers.
        #[allow(unsafe_code)]
        let got = unsafe {
            libc::fcntl(
                self.write.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                asked as libc::c_int,
            )
        };
        if got > 0 && got as usize > now {
            self.capacity.store(got as usize, Ordering::Relaxed);
            return true;
        }
        let cause = io::Error::last_os_error();
        self.growable.store(false, Ordering::Relaxed);
        // Past pipe-max-size is expected (1 MiB unprivileged); below it the user's pipe pages ran
        // out, and fast connections may wait on the proxy.
        if asked <= 1 << 20 && !GROWTH_REFUSED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "latency-proxy: a pipe may not grow from {now} to {asked} bytes ({cause}); \
                 raise /proc/sys/fs/pipe-user-pages-soft for fast connections"
            );
        }
        false
    }

    /// Moves up to `most` bytes that `from` has received into the pipe, waiting until there are
    /// some and the pipe has room; 0: `from` reached its end.
    pub async fn fill_from(&self, from: &TcpStream, most: u64) -> io::Result<usize> {
        let most = usize::try_from(most)
            .unwrap_or(usize::MAX)
            .min(MOST_PER_SPLICE);
        loop {
            from.readable().await?;
            let filled = from.try_io(Interest::READABLE, || {
                match splice(from.as_raw_fd(), self.write.as_raw_fd(), most) {
                    Ok(n) if n > 0 => Ok(Filled::Bytes(n)),
                    // 0 or EAGAIN: the end of the stream, nothing yet, or no room in the pipe (with
                    // the sender's side closed a full pipe gives 0): a look at the socket tells
                    // which. Only "nothing yet" may clear the socket's readiness (try_io clears it
                    // on WouldBlock); bytes that land after the look set it again.
                    Ok(_) => Self::after_no_move(from),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Self::after_no_move(from),
                    Err(e) => Err(e),
                }
            });
            match filled {
                Ok(Filled::Bytes(n)) => return Ok(n),
                Ok(Filled::PipeFull) if self.grow() => continue,
                Ok(Filled::PipeFull) => self.room().await?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Why a splice from `from` moved nothing: its end (0 bytes), no room in the pipe (bytes
    /// wait), or WouldBlock (nothing yet).
    fn after_no_move(from: &TcpStream) -> io::Result<Filled> {
        match peek_now(from.as_raw_fd(), &mut [0u8; 1])? {
            0 => Ok(Filled::Bytes(0)),
            _ => Ok(Filled::PipeFull),
        }
    }

    /// Writes `bytes` (a head, or the framing of a chunked body) into the pipe, waiting for room.
    pub async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let mut ready = self.write.writable().await?;
            match ready.try_io(|fd| {
                // SAFETY: writes from a live slice of `bytes.len()` bytes to a pipe we own.
                #[allow(unsafe_code)]
                let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            }) {
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }

    /// Moves exactly `len` bytes, which the pipe already holds, into `to`, waiting while its send
    /// queue is full.
    pub async fn drain_to(&self, to: &TcpStream, mut len: usize) -> io::Result<()> {
        while len > 0 {
            to.writable().await?;
            let moved = to.try_io(Interest::WRITABLE, || {
                splice(
                    self.read.as_raw_fd(),
                    to.as_raw_fd(),
                    len.min(MOST_PER_SPLICE),
                )
            });
            match moved {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the pipe held fewer bytes than were put in it",
                    ));
                }
                Ok(n) => len -= n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits until the pipe may have room again.
    async fn room(&self) -> io::Result<()> {
        let mut ready = self.write.writable().await?;
        // The readiness was seen before the splice that found the pipe full: clear it, so that the
        // next wait is for the reader's drain; the caller tries again before waiting.
        ready.clear_ready();
        Ok(())
    }
}

/// Peeks at up to `buf.len()` bytes `from` has received without taking them, waiting until there
/// are some; 0: the end of the stream.
pub async fn peek(from: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        from.readable().await?;
        match from.try_io(Interest::READABLE, || peek_now(from.as_raw_fd(), buf)) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Takes `len` bytes that a [`peek`] has already shown, without copying them again.
pub fn discard(from: &TcpStream, mut len: usize) -> io::Result<()> {
    while len > 0 {
        // SAFETY: MSG_TRUNC on a TCP socket drops the bytes without writing to the buffer, which
        // may therefore be null.
        #[allow(unsafe_code)]
        let n = unsafe {
            libc::recv(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                len,
                libc::MSG_TRUNC | libc::MSG_DONTWAIT,
            )
        };
        match n {
            n if n < 0 => return Err(io::Error::last_os_error()),
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peeked bytes are gone",
                ));
            }
            n => len -= n as usize,
        }
    }
    Ok(())
}

/// Closes the write side of `to`: the end of the stream reaches the other side after the bytes
/// before it.
pub fn shut_write(to: &TcpStream) -> io::Result<()> {
    // SAFETY: shutdown on a socket the caller holds open; no pointers.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::shutdown(to.as_raw_fd(), libc::SHUT_WR) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: null offsets (both ends are a socket or a pipe, which have none); no other pointers.
    #[allow(unsafe_code)]
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Copies up to `buf.len()` bytes the socket has received into `buf` without taking them, now:
/// 0 is the end of the stream, WouldBlock nothing yet.
fn peek_now(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: receives into a live, writable slice of `buf.len()` bytes.
    #[allow(unsafe_code)]
    let n = unsafe {
        libc::recv(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 4093) as u8).collect()
    }

    /// A connected pair: (the end that writes, the end that reads).
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let near = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (far, _) = listener.accept().await.unwrap();
        (near, far)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn bytes_pass_through_a_pipe_that_grows_and_fills_in_order_and_whole() {
        let pipe = Pipe::new().unwrap();
        let first = pipe.capacity();
        assert!(first >= 4096, "{first}");
        // More than the pipe and both sockets' buffers hold.
        let data = pattern(48 << 20);
        let (mut sender, from) = pair().await;
        let (to, mut receiver) = pair().await;
        let sent = data.clone();
        tokio::spawn(async move {
            sender.write_all(&sent).await.unwrap();
            sender.shutdown().await.unwrap();
        });

        // Nobody drains: the pipe grows while the kernel lets it, then filling waits for room.
        let mut held = 0;
        loop {
            let wait = Duration::from_millis(300);
            match tokio::time::timeout(wait, pipe.fill_from(&from, u64::MAX)).await {
                Ok(n) => {
                    let n = n.unwrap();
                    assert!(n > 0, "the pipe held all {held} bytes");
                    held += n;
                }
                Err(_waits) => break,
            }
        }
        assert!(held > 0 && held < data.len(), "{held}");
        // It grew, unless the kernel refused (a user over its pipe pages: then it said so).
        assert!(
            pipe.capacity() > first || !pipe.growable.load(Ordering::Relaxed),
            "the pipe grew from {first}"
        );

        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            receiver.read_to_end(&mut got).await.unwrap();
            got
        });
        loop {
            pipe.drain_to(&to, held).await.unwrap();
            held = pipe.fill_from(&from, u64::MAX).await.unwrap();
            if held == 0 {
                break;
            }
        }
        shut_write(&to).unwrap();
        let got = reader.await.unwrap();
        assert_eq!(got.len(), data.len());
        assert!(got == data, "the bytes arrive unchanged and in order");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_peek_shows_bytes_that_stay_until_discarded_and_a_head_joins_the_pipe() {
        let pipe = Pipe::new().unwrap();
        let (mut sender, from) = pair().await;
        let (to, mut receiver) = pair().await;
        sender.write_all(b"HEAD-then-body").await.unwrap();
        let mut buf = [0u8; 4];
        // The bytes may come in pieces: peek until four are there.
        while peek(&from, &mut buf).await.unwrap() < 4 {}
        assert_eq!(&buf, b"HEAD");
        assert_eq!(
            peek(&from, &mut buf).await.unwrap(),
            4,
            "peeking takes nothing"
        );
        discard(&from, 4).unwrap();
        pipe.write_all(b"head").await.unwrap();
        let mut moved = 0;
        while moved < 10 {
            moved += pipe.fill_from(&from, 10 - moved as u64).await.unwrap();
        }
        pipe.drain_to(&to, 14).await.unwrap();
        shut_write(&to).unwrap();
        let mut got = Vec::new();
        receiver.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"head-then-body");
    }
}
