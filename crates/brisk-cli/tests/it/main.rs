//! brisk-cli's integration tests, in one test binary: each runs the real `brisk` binary (cargo
//! builds it for the tests), against `brisk serve` and MinIO started by brisk-testkit's launchers.
//! `faults` keeps a binary of its own (see there).

#[path = "../support/mod.rs"]
mod support;

mod access_log;
mod azure;
mod bench;
mod bench_mixed;
mod boto3;
mod cluster;
mod commands;
mod crash;
mod debug_events;
mod full_disk;
mod preflight;
mod tls;
