//! The bytes the benchmark stores: a pseudo-random pattern generated once and repeated, streamed to
//! the server without ever being held whole in memory or written to a local file first.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Length of the repeated pattern: 1 MiB + 4 KiB + 7 bytes, so that no part (a power of two) starts
/// at the same place of it and equal parts never occur by accident.
pub const PATTERN_LEN: usize = (1 << 20) + 4096 + 7;

/// An [`AsyncRead`] yielding `len` bytes of a fixed pseudo-random pattern.
#[derive(Debug)]
pub struct PatternReader {
    pattern: Vec<u8>,
    position: u64,
    len: u64,
}

impl PatternReader {
    pub fn new(len: u64) -> Self {
        Self {
            pattern: pattern(),
            position: 0,
            len,
        }
    }
}

/// [`PATTERN_LEN`] bytes of xorshift64 output (incompressible, unlike zeros).
fn pattern() -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(PATTERN_LEN + 8);
    while out.len() < PATTERN_LEN {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(PATTERN_LEN);
    out
}

impl AsyncRead for PatternReader {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        while buf.remaining() > 0 && this.position < this.len {
            let offset = (this.position % PATTERN_LEN as u64) as usize;
            let left = usize::try_from(this.len - this.position).unwrap_or(usize::MAX);
            let n = buf.remaining().min(PATTERN_LEN - offset).min(left);
            buf.put_slice(&this.pattern[offset..offset + n]);
            this.position += n as u64;
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn yields_exactly_len_bytes_of_the_repeated_pattern() {
        let len = 2 * PATTERN_LEN as u64 + 100;
        let mut reader = PatternReader::new(len);
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.unwrap();
        assert_eq!(all.len() as u64, len);
        assert_eq!(all[..PATTERN_LEN], all[PATTERN_LEN..2 * PATTERN_LEN]);
        assert_eq!(all[..100], all[2 * PATTERN_LEN..]);
        assert_ne!(all[..8], all[8..16]);
    }
}
