//! One suite for every backend: the client's conformance tests (`conformance`, `get_many`,
//! `put_many`) are written once, as functions taking the [`Backend`] they run against, and called
//! here for MinIO, `brisk serve` (in this process) and Azurite, so that one `cargo test` checks the
//! client against all three (object_store's `integration.rs` is the model).
//!
//! What a backend lacks is said once, in its [`Capabilities`]: a function whose whole subject is
//! something a backend does not have (S3's signatures, presigned S3 URLs, S3 checksums) is in a
//! group that backend's module leaves out (`s3_tests!`); one that differs in a detail asks the flag
//! in place. What only Azure has (SAS tokens, connection strings, the MD5 Azure sends per range, its
//! error codes) is tested in `azure.rs`, outside the suite.
//!
//! The tests are named `suite::BACKEND::TEST` (`cargo test -p brisk-client --test it suite::minio::`
//! runs one backend's).

use std::sync::OnceLock;

use brisk_client::{Client, ClientBuilder};
use brisk_testkit::fault_proxy::FaultProxy;

use crate::support;

pub mod conformance;
pub mod get_many;
pub mod put_many;

/// A server the suite runs against, and what it supports.
#[derive(Debug)]
pub struct Backend {
    /// `minio`, `brisk serve` or `azurite`, for messages.
    pub name: &'static str,
    /// The port it listens on, for fault proxies put in front of it.
    pub port: u16,
    /// What it supports, where backends differ.
    pub can: Capabilities,
    /// A builder for a client of it, with fast retries.
    builder: fn() -> ClientBuilder,
    /// The account a client through a proxy names in the endpoint's path (Azurite addresses
    /// accounts by path).
    account: Option<&'static str>,
}

/// What a backend supports, where backends differ.
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    /// `create_bucket` of a bucket the caller already owns succeeds, as in S3's us-east-1 (a legacy
    /// of that region, which `brisk serve` follows); elsewhere it is `BucketAlreadyExists` (MinIO
    /// answers 409 BucketAlreadyOwnedByYou as S3's other regions do).
    pub recreate_own_bucket: bool,
    /// A write returns the object's S3 checksum (`x-amz-checksum-crc32c`, which S3 and
    /// `brisk serve` compute for every PUT and MinIO for a PUT that sends one). Azure has no such
    /// header.
    pub s3_checksums: bool,
    /// A read starting at the object's end is refused with `InvalidRange` (416), as S3 and Azure
    /// answer it; Azurite answers it with no bytes.
    pub refuse_a_range_at_the_end: bool,
    /// `Expires` is stored with an object and given back by HEAD; Azure blobs have no such property.
    pub store_expires: bool,
}

impl Capabilities {
    /// What an S3 server has.
    const S3: Self = Self {
        recreate_own_bucket: false,
        s3_checksums: true,
        refuse_a_range_at_the_end: true,
        store_expires: true,
    };
}

impl Backend {
    /// A builder for a client of this backend, with fast retries.
    pub fn builder(&self) -> ClientBuilder {
        (self.builder)()
    }

    /// A client of this backend.
    pub fn client(&self) -> Client {
        self.builder().build().expect("test client")
    }

    /// A builder for a client of this backend through `proxy` (a fault proxy in front of it).
    pub fn through(&self, proxy: &FaultProxy) -> ClientBuilder {
        let endpoint = match self.account {
            Some(account) => format!("{}/{account}", proxy.endpoint),
            None => proxy.endpoint.clone(),
        };
        self.builder().endpoint(endpoint)
    }
}

/// MinIO (see `support::minio`).
pub fn minio() -> &'static Backend {
    static BACKEND: OnceLock<Backend> = OnceLock::new();
    BACKEND.get_or_init(|| Backend {
        name: "minio",
        port: support::minio().port,
        can: Capabilities::S3,
        builder: || support::builder_of(support::minio()),
        account: None,
    })
}

/// `brisk serve` in this process (see `support::brisk`).
pub fn brisk_serve() -> &'static Backend {
    static BACKEND: OnceLock<Backend> = OnceLock::new();
    BACKEND.get_or_init(|| Backend {
        name: "brisk serve",
        port: support::brisk().port,
        can: Capabilities {
            recreate_own_bucket: true,
            ..Capabilities::S3
        },
        builder: || support::builder_of(support::brisk()),
        account: None,
    })
}

/// Azurite, through the Azure dialect (see `support::azurite`).
pub fn azurite() -> &'static Backend {
    static BACKEND: OnceLock<Backend> = OnceLock::new();
    BACKEND.get_or_init(|| Backend {
        name: "azurite",
        port: support::azurite().port,
        can: Capabilities {
            recreate_own_bucket: false,
            s3_checksums: false,
            refuse_a_range_at_the_end: false,
            store_expires: false,
        },
        builder: support::azure_builder,
        account: Some(brisk_testkit::azurite::ACCOUNT),
    })
}

/// A `#[tokio::test]` for each `module::function` of the suite, calling it with `backend()` (a
/// function of the module the macro is expanded in).
macro_rules! tests {
    ($($module:ident::$test:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                crate::suite::$module::$test(backend()).await;
            }
        )*
    };
}

/// The tests every backend runs.
macro_rules! every_backend_tests {
    () => {
        tests!(
            conformance::put_then_get_head_and_delete,
            conformance::unsigned_payload_with_checksum_and_empty_objects,
            conformance::get_into_and_ranges,
            conformance::get_range_bytes_reads_a_range_into_an_exact_buffer,
            conformance::batch_reads_fill_each_range_and_report_per_range_errors,
            conformance::conditional_put_refuses_to_overwrite,
            conformance::conditional_uploads_store_a_free_key_and_refuse_an_existing_one,
            conformance::listing_pages_prefixes_and_odd_keys,
            conformance::delete_many_in_batches,
            conformance::connections_are_reused,
            conformance::connections_per_host_are_bounded,
            conformance::memory_budget_pays_for_get_bytes,
            conformance::streamed_reads_reassemble_the_object,
            conformance::uploads_from_a_reader_of_unknown_length,
            conformance::an_object_writer_stores_what_was_written,
            conformance::uploads_store_the_content_type_asked_for,
            conformance::an_object_writer_that_gives_up_stores_nothing,
            conformance::read_ahead_hands_out_the_object_in_order,
            conformance::an_object_stream_uploads_as_a_copy,
            conformance::list_buckets_sees_a_created_bucket,
            conformance::anonymous_client_sends_unsigned_requests,
            conformance::a_small_download_of_known_size_is_one_checked_get,
            conformance::reads_through_a_faulty_network_are_exact_or_fail_clearly,
            get_many::every_object_arrives_whole_and_missing_keys_fail_in_place,
            get_many::keys_are_taken_lazily_and_at_most_the_queue_depth_is_held,
            get_many::an_object_larger_than_the_budget_fails_alone,
            get_many::pairs_across_buckets_and_a_zero_queue_depth,
            get_many::a_set_that_keeps_every_object_fails_those_past_the_budget_instead_of_waiting,
            get_many::reads_into_destinations_chosen_from_the_length,
            put_many::bytes_and_files_are_stored_whole_and_failures_stay_in_place,
            put_many::a_file_larger_than_a_part_is_a_multipart_upload_and_create_only_keeps_what_exists,
            put_many::a_zero_queue_depth_is_refused,
        );
    };
}

/// The tests of what only S3 backends have: S3's signatures, regions and error codes
/// (`errors_are_typed_by_meaning`; Azure's are `azure::put_get_head_and_errors_by_meaning`'s),
/// presigned S3 URLs (Azure's SAS URLs are `azure::sas_tokens_presigned_urls_and_connection_strings`'),
/// S3's checksums (Azure's MD5s are `azure.rs`'s), `CopyObject`'s metadata directive and
/// `UploadPartCopy`, and virtual-hosted S3 addressing.
macro_rules! s3_tests {
    () => {
        tests!(
            conformance::errors_are_typed_by_meaning,
            conformance::presigned_urls_work_without_credentials,
            conformance::every_upload_checksum_is_accepted_and_reads_back,
            conformance::the_server_refuses_a_body_that_does_not_match_its_checksum,
            conformance::copy_object_keeps_or_replaces_metadata,
            conformance::virtual_hosted_addressing_reaches_the_bucket_through_the_host,
            conformance::downloads_are_checked_against_the_full_object_checksum,
        );
    };
}

mod minio {
    use super::minio as backend;
    every_backend_tests!();
    s3_tests!();
}

mod brisk_serve {
    use super::brisk_serve as backend;
    every_backend_tests!();
    s3_tests!();
}

mod azurite {
    use super::azurite as backend;
    every_backend_tests!();
}
