//! brisk's embedded S3-compatible server: one node on one directory, for local development, tests,
//! CI and edge boxes.
//!
//! [`store`] is the storage layer underneath the HTTP/S3 front end: buckets, objects, metadata and
//! multipart uploads on disk, with crash-safe commits and listings whose memory does not grow with the
//! bucket. `docs/storage.md` describes its design.

pub mod store;
