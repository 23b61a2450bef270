//! What every object command shares: the clients built from the global options (one for `s3://`,
//! one for `az://`, each built the first time a URL of its service is used, so an Azure command
//! needs no AWS credentials and the other way round), and how to print results.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use brisk_client::{
    AzureSettings, Client, ConfigError, ObjectHeaders, StreamMeasure, TransferOptions,
    TransferProgress,
};
use brisk_mem::{BudgetChoice, BufferPool, MemoryBudget};

use crate::args::GlobalArgs;
use crate::exit::CliError;
use crate::location::{ObjectUrl, Service};

/// The largest buffer a stream uses per range or part: the pool's largest block (8 MiB).
pub const MAX_STREAM_PART: usize = brisk_mem::MAX_BLOCK_SIZE;

/// The clients, options and output settings of one command (cloning shares the clients).
#[derive(Debug, Clone)]
pub struct Context {
    global: Arc<GlobalArgs>,
    /// The memory budget both clients share: `--max-memory` caps the command, not each service.
    budget: Option<MemoryBudget>,
    s3: Arc<OnceLock<Client>>,
    azure: Arc<OnceLock<Client>>,
    pub json: bool,
    pub quiet: bool,
    pub concurrency: usize,
    pub part_size: usize,
    /// `cp --verify-md5`: downloads check an MD5 ETag when the object has no stored checksum.
    pub verify_md5_etag: bool,
    /// `--content-type`: what every upload stores.
    pub content_type: Option<String>,
    /// `--cache-control`, `--metadata` and the rest: what every upload stores.
    pub headers: ObjectHeaders,
    /// Uploads of files without `--content-type` store the type their extension suggests (cp,
    /// mv and sync, unless `--no-guess-mime-type`).
    pub guess_content_type: bool,
}

impl Context {
    /// Checks the global options; the clients are built when first used ([`client`](Self::client)).
    pub fn new(g: &GlobalArgs) -> Result<Self, CliError> {
        let budget = match g.max_memory {
            Some(bytes) => {
                let block = BufferPool::block_size_for(g.part_size.min(MAX_STREAM_PART));
                if bytes < block {
                    return Err(CliError::Usage(format!(
                        "--max-memory {bytes} bytes cannot hold one {block}-byte part buffer; give at least {block} bytes or a smaller --part-size"
                    )));
                }
                Some(MemoryBudget::new(bytes))
            }
            None => None,
        };
        let choice = match g.max_memory {
            Some(bytes) => BudgetChoice::setting(bytes, "--max-memory"),
            None => {
                brisk_mem::process_default_budget().map_err(|e| CliError::Usage(e.to_string()))?;
                BufferPool::global_budget_choice()
            }
        };
        if g.debug {
            eprintln!("brisk: memory budget {choice}");
        }
        Ok(Self {
            global: Arc::new(g.clone()),
            budget,
            s3: Arc::default(),
            azure: Arc::default(),
            json: g.json,
            quiet: g.quiet,
            concurrency: g.concurrency.max(1),
            part_size: g.part_size,
            verify_md5_etag: false,
            content_type: None,
            headers: ObjectHeaders::default(),
            guess_content_type: false,
        })
    }

    /// The client for `url`'s service.
    pub fn client(&self, url: &ObjectUrl) -> Result<&Client, ConfigError> {
        self.client_of(url.service)
    }

    /// The client of `service`, built from the global options (then environment, then profile or
    /// `AZURE_STORAGE_*`) the first time it is asked for.
    pub fn client_of(&self, service: Service) -> Result<&Client, ConfigError> {
        let cell = match service {
            Service::S3 => &self.s3,
            Service::Azure => &self.azure,
        };
        if let Some(client) = cell.get() {
            return Ok(client);
        }
        let client = self.build(service)?;
        // Another task may have built one meanwhile; either serves.
        Ok(cell.get_or_init(|| client))
    }

    fn build(&self, service: Service) -> Result<Client, ConfigError> {
        let g = &self.global;
        let mut builder = Client::builder().max_connections_per_host(g.concurrency.max(1) + 1);
        match service {
            Service::S3 => {
                if let Some(url) = &g.endpoint_url {
                    builder = builder.endpoint(url.clone());
                }
                if let Some(region) = &g.region {
                    builder = builder.region(region.clone());
                }
                if let Some(profile) = &g.profile {
                    builder = builder.profile(profile.clone());
                }
            }
            Service::Azure => {
                if let Some(url) = &g.azure_endpoint_url {
                    builder = builder.endpoint(url.clone());
                }
                builder = builder.azure(AzureSettings::new());
            }
        }
        if g.no_sign_request {
            // No credentials are looked up and no request carries an Authorization header.
            builder = builder.anonymous(true);
        }
        if let Some(budget) = &self.budget {
            builder = builder.memory_budget(budget.clone());
        }
        builder.build()
    }

    /// The client's transfer options from `--part-size`, `--concurrency` and `--fixed-streams`,
    /// counting completed bytes on `progress`.
    pub fn transfer_options(&self, progress: Option<TransferProgress>) -> TransferOptions {
        TransferOptions {
            part_size: self.part_size,
            parts_in_flight: self.concurrency,
            payload_signing: self.global.payload_signing.into(),
            progress,
            verify_md5_etag: self.verify_md5_etag,
            measure_streams: (!self.global.fixed_streams).then(StreamMeasure::default),
            content_type: self.content_type.clone(),
            headers: self.headers.clone(),
            ..TransferOptions::default()
        }
    }

    /// Takes `--content-type`, `--no-guess-mime-type`, `--cache-control`, `--metadata` and the
    /// rest for the uploads of this command.
    pub fn choose_object_headers(&mut self, args: &crate::args::ObjectHeaderArgs) {
        self.content_type = args.content_type.clone();
        self.guess_content_type = !args.no_guess_mime_type;
        self.headers = ObjectHeaders {
            cache_control: args.cache_control.clone(),
            content_disposition: args.content_disposition.clone(),
            content_encoding: args.content_encoding.clone(),
            content_language: args.content_language.clone(),
            expires: args.expires.clone(),
            metadata: args.metadata.clone().map(|m| m.0).unwrap_or_default(),
        };
    }

    /// The options of an upload of the file at `path`: [`transfer_options`](Self::transfer_options)
    /// with the Content-Type its extension suggests, when none was given and guessing is on (as the
    /// AWS CLI does with Python's `mimetypes`).
    pub fn upload_options(
        &self,
        path: &Path,
        progress: Option<TransferProgress>,
    ) -> TransferOptions {
        let mut options = self.transfer_options(progress);
        if options.content_type.is_none() && self.guess_content_type {
            options.content_type = mime_guess::from_path(path).first_raw().map(str::to_owned);
        }
        options
    }

    /// HEAD of `url`. A HEAD 404 has no body to say whether the key or the bucket is missing, so
    /// a one-key listing tells them apart and the error names the right one.
    pub async fn head(
        &self,
        url: &ObjectUrl,
    ) -> Result<brisk_client::ObjectMeta, brisk_client::Error> {
        let client = self.client(url).map_err(brisk_client::Error::Config)?;
        let result = client.head(&url.bucket, &url.key).await;
        self.name_what_is_missing(url, result).await
    }

    /// [`head`](Self::head) as a download needs it (with the stored checksum), to be handed to
    /// the download so that it makes no HEAD of its own.
    pub async fn head_for_download(
        &self,
        url: &ObjectUrl,
    ) -> Result<brisk_client::DownloadHead, brisk_client::Error> {
        let client = self.client(url).map_err(brisk_client::Error::Config)?;
        let result = client.head_for_download(&url.bucket, &url.key).await;
        self.name_what_is_missing(url, result).await
    }

    /// A GET of `url` started as a stream (no HEAD before it), a missing key told apart from a
    /// missing bucket as [`head`](Self::head) does.
    pub async fn get_stream(
        &self,
        url: &ObjectUrl,
    ) -> Result<brisk_client::ObjectStream, brisk_client::Error> {
        let client = self.client(url).map_err(brisk_client::Error::Config)?;
        let result = client.get_stream(&url.bucket, &url.key).await;
        self.name_what_is_missing(url, result).await
    }

    /// Turns a `NoSuchKey` of `url` into `NoSuchBucket` when a one-key listing says the bucket is
    /// what is missing (a 404 without a body cannot say which).
    async fn name_what_is_missing<T>(
        &self,
        url: &ObjectUrl,
        result: Result<T, brisk_client::Error>,
    ) -> Result<T, brisk_client::Error> {
        let Err(brisk_client::Error::NoSuchKey(e)) = result else {
            return result;
        };
        let client = self.client(url).map_err(brisk_client::Error::Config)?;
        let probe = brisk_client::ListOptions {
            prefix: Some(url.key.clone()),
            max_keys: Some(1),
            ..Default::default()
        };
        match client.list(&url.bucket, probe).next_page().await {
            Err(missing @ brisk_client::Error::NoSuchBucket(_)) => Err(missing),
            _ => Err(brisk_client::Error::NoSuchKey(e)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Cli;
    use clap::Parser;

    fn options(args: &[&str]) -> TransferOptions {
        let cli = Cli::try_parse_from(args).unwrap();
        Context::new(&cli.global).unwrap().transfer_options(None)
    }

    #[test]
    fn downloads_measure_their_streams_unless_told_to_keep_them() {
        let measured = options(&["brisk", "--concurrency", "6", "ls"]);
        assert_eq!(measured.parts_in_flight, 6);
        assert_eq!(
            measured.measure_streams,
            TransferOptions::default().measure_streams
        );
        assert!(measured.measure_streams.is_some());
        let fixed = options(&["brisk", "ls", "--fixed-streams"]);
        assert_eq!(fixed.measure_streams, None);
    }
}
