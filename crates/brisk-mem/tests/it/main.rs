//! brisk-mem's integration tests that need no binary of their own, in one test binary. `allocations`
//! (a counting global allocator) and `resident` (the process's resident set) keep binaries of their
//! own: they measure the whole process.

mod stress;
mod waiting;
