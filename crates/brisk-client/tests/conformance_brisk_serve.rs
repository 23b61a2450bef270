//! The conformance suite (`conformance.rs`) against `brisk serve`, so the default `cargo test` checks
//! the client against both MinIO and brisk's own server. The server is chosen by this binary's name
//! (see `support::BRISK_SERVE_BINARY_SUFFIX`); `BRISK_TEST_SERVER` still overrides it. The `brisk`
//! binary comes from `BRISK_BIN` or `target/debug/brisk` (`cargo build -p brisk-cli`; a workspace
//! `cargo test` builds it).

#[path = "conformance.rs"]
mod suite;
