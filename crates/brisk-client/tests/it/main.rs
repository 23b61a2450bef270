//! brisk-client's integration tests that need no binary of their own, in one test binary (one link,
//! one MinIO and one in-process `brisk serve` for all of them). The tests that measure the process
//! (allocations, threads and sockets, resident memory) keep binaries of their own: `allocations`,
//! `batch` and `budget`.

#[path = "../support/mod.rs"]
mod support;

mod azure;
mod faults;
mod file_uploads;
mod suite;
mod throughput;
mod tls;
mod transfers;
