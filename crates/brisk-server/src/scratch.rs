//! The scratch buffers of the requests that need one, lent by one pool per server for the request
//! and given back when it ends, so that an idle connection holds none.
//!
//! A durable PUT body of a read buffer or more is staged in one (`direct.rs`), a part copy hashes
//! through one, and a GET over TLS (no `sendfile`) reads the file through one: a read buffer's size
//! and two 4 KiB blocks, 264 KiB by default. Each connection kept its own after its first such
//! request, so a server with many keep-alive connections held 264 KiB per connection that had
//! ever uploaded: 16.5 MiB of the 64-client soak's resident set, for connections mostly idle.
//!
//! Buffers are anonymous mappings, so one the pool does not keep goes back to the kernel when it
//! is dropped (glibc keeps freed blocks of this size in its heap once its mmap threshold has risen
//! past them), and page-aligned, as the direct writes need. The pool keeps a few for reuse
//! ([`DEFAULT_KEPT`]): a request that finds one pays no mapping and no page faults.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use memmap2::MmapMut;

/// Buffers kept for reuse once given back: as many as the requests that need one at once on a
/// busy small server (uploads of four parts in flight, a copy, a TLS read); the rest are unmapped.
pub const DEFAULT_KEPT: usize = 8;

/// One server's scratch buffers.
#[derive(Debug)]
pub struct ScratchPool {
    size: usize,
    most_kept: usize,
    kept: Mutex<Vec<MmapMut>>,
    lent: AtomicUsize,
}

/// What a [`ScratchPool`] holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchStats {
    /// Buffers lent to requests and not given back.
    pub lent: usize,
    /// Buffers kept for the next request that needs one.
    pub kept: usize,
    /// Bytes of each buffer.
    pub size: usize,
}

impl ScratchPool {
    /// A pool of buffers of `size` bytes that keeps at most `most_kept` when they come back.
    pub fn new(size: usize, most_kept: usize) -> Self {
        Self {
            size,
            most_kept,
            kept: Mutex::new(Vec::with_capacity(most_kept)),
            lent: AtomicUsize::new(0),
        }
    }

    /// A buffer of the pool's size: a kept one, or a new mapping.
    pub fn take(&self) -> io::Result<MmapMut> {
        let reused = self.lock().pop();
        let buf = match reused {
            Some(buf) => buf,
            None => MmapMut::map_anon(self.size)?,
        };
        self.lent.fetch_add(1, Ordering::Relaxed);
        Ok(buf)
    }

    /// Takes back a buffer [`take`](Self::take) lent; kept if fewer than the pool's limit are.
    pub fn give(&self, buf: MmapMut) {
        self.lent.fetch_sub(1, Ordering::Relaxed);
        let unkept = {
            let mut kept = self.lock();
            if kept.len() < self.most_kept && buf.len() == self.size {
                kept.push(buf);
                None
            } else {
                Some(buf)
            }
        };
        // Unmapped outside the lock.
        drop(unkept);
    }

    /// The counts, for tests and operators.
    pub fn stats(&self) -> ScratchStats {
        ScratchStats {
            lent: self.lent.load(Ordering::Relaxed),
            kept: self.lock().len(),
            size: self.size,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<MmapMut>> {
        // The list is only pushed to and popped from: a panic elsewhere leaves it whole.
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_only_the_limit_is_kept() {
        let pool = ScratchPool::new(64 * 1024, 2);
        let taken: Vec<MmapMut> = (0..5).map(|_| pool.take().unwrap()).collect();
        for buf in &taken {
            assert_eq!(buf.len(), 64 * 1024);
            assert_eq!(buf.as_ptr() as usize % 4096, 0, "page-aligned");
        }
        assert_eq!(
            pool.stats(),
            ScratchStats {
                lent: 5,
                kept: 0,
                size: 64 * 1024
            }
        );
        for buf in taken {
            pool.give(buf);
        }
        let stats = pool.stats();
        assert_eq!((stats.lent, stats.kept), (0, 2));
        // A kept buffer is lent again before a new one is mapped.
        let mut again = pool.take().unwrap();
        again[0] = 1;
        assert_eq!((pool.stats().lent, pool.stats().kept), (1, 1));
        pool.give(again);
    }
}
