//! The scratch buffers of the requests that need one, lent for the request from a private
//! [`BufferPool`] per server and given back when it ends, so that an idle connection holds none.
//!
//! A durable PUT body of a read buffer or more is staged in one (`direct.rs`), a part copy hashes
//! through one, and a GET over TLS (no `sendfile`) reads the file through one: a read buffer's size
//! and one 4 KiB block, 260 KiB by default. Each connection kept its own after its first such
//! request, so a server with many keep-alive connections held that much per connection that had
//! ever uploaded: 16.5 MiB of the 64-client soak's resident set, for connections mostly idle.
//!
//! brisk-mem's pool blocks are anonymous mappings (page-aligned, as the direct writes need, and
//! unmapped when the pool does not keep them) of a power-of-two size class, 512 KiB here; only the
//! scratch length of a block is ever touched, so only that much becomes resident. The pool keeps
//! [`DEFAULT_KEPT`] blocks for reuse: a request that finds one pays no mapping and no page faults.

use brisk_mem::{BufferPool, MemoryBudget, PooledBlock};

use crate::direct::ALIGN;

/// Buffers kept for reuse once given back: as many as the requests that need one at once on a
/// busy small server (uploads of four parts in flight, a copy, a TLS read); the rest are unmapped.
pub const DEFAULT_KEPT: usize = 8;

/// One server's scratch buffers.
#[derive(Debug, Clone)]
pub struct ScratchPool {
    blocks: BufferPool,
    /// The bytes of a block a request uses.
    len: usize,
}

/// A block lent to a request; [`ScratchPool::slice`] is the part it uses. Back to the pool when
/// dropped.
pub type Scratch = PooledBlock;

/// What a [`ScratchPool`] holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchStats {
    /// Buffers lent to requests and not given back.
    pub lent: usize,
    /// Buffers kept for the next request that needs one.
    pub kept: usize,
    /// Bytes of each buffer a request uses.
    pub size: usize,
}

impl ScratchPool {
    /// Buffers for a server whose read buffer is `read_buffer_size` bytes and that serves at most
    /// `max_connections` at once (each holds one at most, so the pool's budget never makes one
    /// wait), keeping `most_kept` for reuse.
    pub fn new(read_buffer_size: usize, max_connections: usize, most_kept: usize) -> Self {
        // The stage of `direct.rs`: the read buffer and one block more, in a page-aligned block.
        let len = read_buffer_size + ALIGN;
        let block = BufferPool::block_size_for(len);
        let budget = MemoryBudget::new(block * max_connections.max(1));
        Self {
            blocks: BufferPool::with_retention(budget, block * most_kept),
            len,
        }
    }

    /// A buffer for this request: a kept one, or a new mapping.
    pub fn take(&self) -> std::io::Result<Scratch> {
        self.blocks.try_get(self.len).map_err(std::io::Error::other)
    }

    /// The part of a lent block a request uses (the rest of its size class is never touched).
    pub fn slice<'a>(&self, scratch: &'a mut Scratch) -> &'a mut [u8] {
        &mut scratch[..self.len]
    }

    /// The counts, for tests and operators.
    pub fn stats(&self) -> ScratchStats {
        let metrics = self.blocks.metrics();
        let block = BufferPool::block_size_for(self.len);
        ScratchStats {
            lent: (metrics.reserved_bytes - metrics.pool_cached_bytes) / block,
            kept: metrics.pool_cached_bytes / block,
            size: self.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_only_the_limit_is_kept() {
        let pool = ScratchPool::new(64 * 1024, 16, 2);
        let mut taken: Vec<Scratch> = (0..5).map(|_| pool.take().unwrap()).collect();
        for buf in &mut taken {
            assert_eq!(pool.slice(buf).len(), 64 * 1024 + ALIGN);
            assert_eq!(buf.as_ptr() as usize % 4096, 0, "page-aligned");
        }
        assert_eq!(
            pool.stats(),
            ScratchStats {
                lent: 5,
                kept: 0,
                size: 64 * 1024 + ALIGN
            }
        );
        drop(taken);
        let stats = pool.stats();
        assert_eq!((stats.lent, stats.kept), (0, 2));
        // A kept buffer is lent again before a new one is mapped.
        let mut again = pool.take().unwrap();
        pool.slice(&mut again)[0] = 1;
        assert_eq!((pool.stats().lent, pool.stats().kept), (1, 1));
    }
}
