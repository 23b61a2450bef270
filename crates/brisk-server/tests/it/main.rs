//! brisk-server's integration tests that need no binary of their own, in one test binary. Those that
//! measure the whole process keep binaries of their own: `server_allocations` and `listing_memory`
//! (brisk-testkit's counting global allocator) and `get_threads` (the process's threads).

#[path = "../common/mod.rs"]
mod common;
#[path = "../http_support/mod.rs"]
mod http_support;

mod crash;
mod listing;
mod multipart;
mod objects;
mod server_answers;
mod server_http;
mod server_limits;
mod server_memory;
mod server_sigv4;
