//! brisk-client's integration tests that need no binary of their own, in one test binary (one link,
//! one MinIO and one in-process `brisk serve` for all of them). The tests that measure the process
//! (allocations, threads and sockets, resident memory) keep binaries of their own: `allocations`,
//! `batch` and `budget`.

#[path = "../support/mod.rs"]
mod support;

mod azure;
mod conformance;
// The conformance suite again, on purpose, against `brisk serve` (see `conformance`'s module docs).
#[allow(clippy::duplicate_mod)]
#[path = "conformance.rs"]
mod conformance_brisk_serve;
mod faults;
mod file_uploads;
mod get_many;
// Again against `brisk serve`.
#[allow(clippy::duplicate_mod)]
#[path = "get_many.rs"]
mod get_many_brisk_serve;
mod put_many;
// Again against `brisk serve`.
#[allow(clippy::duplicate_mod)]
#[path = "put_many.rs"]
mod put_many_brisk_serve;
mod throughput;
mod tls;
mod transfers;
