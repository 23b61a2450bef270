//! The operations whose wire form is S3's own, beside their Azure forms in [`crate::azure`]. The
//! public methods of [`Client`](crate::Client) are the same for both services; each operation
//! whose requests differ chooses its form in one match on the client's dialect and calls the
//! S3 form here or the Azure form there (see `azure/mod.rs` for the table of both). A third
//! dialect adds a module of its forms and an arm to those matches.

mod buckets;
mod copy;
mod list;
mod multipart;
mod objects;
mod presign;
