//! What every S3 command shares: the client built from the global options, and how to print
//! results.

use brisk_client::{Client, TransferOptions, TransferProgress};
use brisk_mem::{BufferPool, MemoryBudget};

use crate::args::GlobalArgs;
use crate::exit::CliError;

/// The largest buffer a stream uses per range or part: the pool's largest block (8 MiB).
pub const MAX_STREAM_PART: usize = brisk_mem::MAX_BLOCK_SIZE;

/// The client, options and output settings of one command (cloning shares the client).
#[derive(Debug, Clone)]
pub struct Context {
    pub client: Client,
    pub json: bool,
    pub quiet: bool,
    pub concurrency: usize,
    pub part_size: usize,
    /// `cp --verify-md5`: downloads check an MD5 ETag when the object has no stored checksum.
    pub verify_md5_etag: bool,
}

impl Context {
    /// Builds the client from the global options (then environment, then profile).
    pub fn new(g: &GlobalArgs) -> Result<Self, CliError> {
        let mut builder = Client::builder().max_connections_per_host(g.concurrency.max(1) + 1);
        if let Some(url) = &g.endpoint_url {
            builder = builder.endpoint(url.clone());
        }
        if let Some(region) = &g.region {
            builder = builder.region(region.clone());
        }
        if let Some(profile) = &g.profile {
            builder = builder.profile(profile.clone());
        }
        if g.no_sign_request {
            // No credentials are looked up and no request carries an Authorization header.
            builder = builder.anonymous(true);
        }
        if let Some(bytes) = g.max_memory {
            let block = BufferPool::block_size_for(g.part_size.min(MAX_STREAM_PART));
            if bytes < block {
                return Err(CliError::Usage(format!(
                    "--max-memory {bytes} bytes cannot hold one {block}-byte part buffer; give at least {block} bytes or a smaller --part-size"
                )));
            }
            builder = builder.memory_budget(MemoryBudget::new(bytes));
        }
        let client = builder.build()?;
        Ok(Self {
            client,
            json: g.json,
            quiet: g.quiet,
            concurrency: g.concurrency.max(1),
            part_size: g.part_size,
            verify_md5_etag: false,
        })
    }

    /// The client's transfer options from `--part-size` and `--concurrency`, counting completed
    /// bytes on `progress`.
    pub fn transfer_options(&self, progress: Option<TransferProgress>) -> TransferOptions {
        TransferOptions {
            part_size: self.part_size,
            parts_in_flight: self.concurrency,
            progress,
            verify_md5_etag: self.verify_md5_etag,
            ..TransferOptions::default()
        }
    }

    /// HEAD of `bucket`/`key`. A HEAD 404 has no body to say whether the key or the bucket is
    /// missing, so a one-key listing tells them apart and the error names the right one.
    pub async fn head(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<brisk_client::ObjectMeta, brisk_client::Error> {
        match self.client.head(bucket, key).await {
            Err(brisk_client::Error::NoSuchKey(e)) => {
                let probe = brisk_client::ListOptions {
                    prefix: Some(key.to_owned()),
                    max_keys: Some(1),
                    ..Default::default()
                };
                match self.client.list(bucket, probe).next_page().await {
                    Err(missing @ brisk_client::Error::NoSuchBucket(_)) => Err(missing),
                    _ => Err(brisk_client::Error::NoSuchKey(e)),
                }
            }
            other => other,
        }
    }

    /// Prints a result line unless `--quiet`: `text` normally, `json` with `--json`.
    pub fn report(&self, text: impl FnOnce() -> String, json: impl FnOnce() -> serde_json::Value) {
        if self.quiet {
            return;
        }
        if self.json {
            println!("{}", json());
        } else {
            println!("{}", text());
        }
    }
}
