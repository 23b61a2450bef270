//! Memory for brisk's data path: a process-wide pool of fixed-size blocks, a hard memory budget, and
//! exact-size buffers.
//!
//! # The model
//!
//! A [`MemoryBudget`] is a hard cap in bytes. Every buffer a transfer uses is paid for by a
//! [`Reservation`] from it, taken *before* the buffer is allocated and given back only *after* the
//! buffer is freed, so the sum of reservations bounds the memory actually held. When the budget is
//! full, new requests wait in a FIFO queue (a large request is not starved by a stream of small ones);
//! a request larger than the whole budget fails at once instead of waiting forever.
//!
//! As in AWS CRT's memory limiter, a transfer *reserves at schedule time* (before it sends a request:
//! the reservation is what decides whether the request may start) and *takes the buffer as late as
//! possible* (when the response's bytes arrive), with [`BufferPool::get_with_reservation`] or
//! [`ExactBuf::from_reservation`]. Memory use is then `budget` at most, whatever the part size, the
//! concurrency and the number of files; the budget is what the user sets, and queue depth follows from
//! it. Reservations are for actual sizes (a 3 KiB object reserves 3 KiB, not a part's worth) and can be
//! given back early ([`Reservation::shrink_to`]).
//!
//! # Buffers
//!
//! - [`BufferPool`]: fixed-size blocks in eight power-of-two classes ([`SIZE_CLASSES`], 64 KiB to
//!   8 MiB) recycled through per-class free lists, for streaming transfers: after warm-up, taking and
//!   returning a block allocates nothing. Blocks cached on the free lists stay reserved, because they
//!   are real memory: a budget that counted only blocks in use would let a process idle at budget +
//!   cache. Caching is bounded ([`DEFAULT_RETENTION_BYTES`]), and cached blocks are freed first
//!   whenever a request would otherwise wait, so the cache never blocks a transfer.
//!   [`BufferPool::global`] is the process-wide pool, whose budget is by default a half of the
//!   memory the process may use (cgroup limit, else `MemTotal`; at least 1 GiB) or
//!   `BRISK_MAX_MEMORY` ([`choose_default_budget`]); private pools serve tests or keep a server's
//!   memory apart from a client's.
//! - [`ExactBuf`]: one buffer of exactly N bytes, for reading a whole object of known length: a heap
//!   vector below [`MAPPED_MIN_LEN`] (1 MiB), from there up an anonymous mapping populated in advance
//!   (at creation, or a step ahead of the writes with [`ExactBuf::populate`]), so the socket's copy
//!   into it takes no page faults. A freed mapped buffer is kept resident, still reserved, for the
//!   next [`ExactBuf::for_overwrite`] of about its size, within bounds ([`KEPT_IDLE`],
//!   [`MemoryBudget::set_kept_limit`]; `kept.rs`).
//!
//! # Metrics
//!
//! [`MemoryMetrics`] (from [`MemoryBudget::metrics`] or [`BufferPool::metrics`]) reports bytes
//! reserved now and at peak, waits, fresh block allocations, free-list hits and cached bytes, from
//! relaxed atomics cheap enough to leave on.
//!
//! `docs/memory.md` at the repository root has the formulas behind the limits.

mod budget;
mod default_budget;
mod exact;
mod kept;
mod mapping;
mod metrics;
mod pool;
mod size;

pub use budget::{Acquire, BudgetError, MemoryBudget, Reservation};
pub use default_budget::{
    BudgetChoice, BudgetSource, DEFAULT_BUDGET_SHARE, InvalidMaxMemoryEnv, MAX_MEMORY_ENV,
    MemoryFacts, choose_default_budget, process_default_budget,
};
pub use exact::{ExactBuf, MAPPED_MIN_LEN};
pub use kept::{KEPT_IDLE, MAX_KEPT};
pub use metrics::MemoryMetrics;
pub use pool::{
    BufferPool, DEFAULT_GLOBAL_BUDGET_BYTES, DEFAULT_RETENTION_BYTES, GlobalPoolError,
    MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, PooledBlock, SIZE_CLASSES,
};
pub use size::parse_size;
