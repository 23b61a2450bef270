//! Bucket operations: CreateBucket, DeleteBucket, and ListBuckets (the buckets the credentials
//! own, [`BucketInfo`]). Each goes through the request engine ([`crate::client`]); only
//! ListBuckets reads a body, and follows its continuation pages.

use brisk_wire::sigv4::PayloadHash;
use brisk_wire::xml::{CreateBucketConfiguration, ListAllMyBucketsResult, XmlDocument};
use time::OffsetDateTime;

use crate::client::{Client, finish, read_small_body};
use crate::error::{Error, Result};
use crate::request::{RequestSpec, check_bucket, push_query};

/// Most pages of one listing followed before giving up: S3 pages ListBuckets only when asked
/// (`max-buckets`, at most 10,000 per page) and its highest bucket quota is 10,000, so a listing
/// needs one page; 100 leaves room for servers that page on their own and still bounds a server
/// that hands back the same continuation token for ever.
pub const MAX_BUCKET_PAGES: usize = 100;

/// One bucket of [`Client::list_buckets`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    /// The bucket's name.
    pub name: String,
    /// When the bucket was created (as the server reports it).
    pub creation_date: OffsetDateTime,
    /// The bucket's region, when the server says (S3 does since 2024).
    pub region: Option<String>,
}

impl Client {
    /// Creates `bucket` in the client's region. A bucket that exists already is
    /// [`Error::BucketAlreadyExists`] (whoever owns it).
    pub async fn create_bucket(&self, bucket: &str) -> Result<()> {
        check_bucket(bucket)?;
        if self.is_azure() {
            return self.azure_create_container(bucket).await;
        }
        let region = &self.config().region;
        // us-east-1 is S3's default location and must not be named in the body.
        let body = if region == crate::config::DEFAULT_REGION {
            Vec::new()
        } else {
            CreateBucketConfiguration {
                location_constraint: Some(region.clone()),
            }
            .to_vec()?
        };
        let mut spec = RequestSpec::new("PUT", Some(bucket), None);
        spec.payload = PayloadHash::of(&body);
        spec.body = &body;
        let response = self.send(&spec).await?;
        finish(response).await
    }

    /// Deletes the empty bucket `bucket`.
    pub async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        check_bucket(bucket)?;
        if self.is_azure() {
            return self.azure_delete_container(bucket).await;
        }
        let response = self
            .send(&RequestSpec::new("DELETE", Some(bucket), None))
            .await?;
        finish(response).await
    }

    /// The buckets owned by the client's credentials (ListBuckets), in the server's order (by name
    /// on S3). Continuation pages are followed, at most [`MAX_BUCKET_PAGES`].
    pub async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        if self.is_azure() {
            return self.azure_list_containers().await;
        }
        let mut buckets = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_BUCKET_PAGES {
            let mut spec = RequestSpec::new("GET", None, None);
            if let Some(t) = &token {
                push_query(&mut spec.query, "continuation-token", t);
            }
            let mut response = self.send(&spec).await?;
            let xml = read_small_body(&mut response).await?;
            response.release();
            let page = ListAllMyBucketsResult::parse(&xml)?;
            buckets.extend(page.buckets.into_iter().map(|b| BucketInfo {
                name: b.name,
                creation_date: b.creation_date,
                region: b.bucket_region,
            }));
            match page.continuation_token.filter(|t| !t.is_empty()) {
                Some(next) => token = Some(next),
                None => return Ok(buckets),
            }
        }
        Err(Error::UnexpectedResponse {
            what: format!("a bucket listing still continuing after {MAX_BUCKET_PAGES} pages"),
        })
    }
}
