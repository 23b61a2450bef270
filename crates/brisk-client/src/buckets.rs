//! Bucket operations: CreateBucket, DeleteBucket, and ListBuckets (the buckets the credentials
//! own, [`BucketInfo`]). Each goes through the request engine ([`crate::client`]); only
//! ListBuckets reads a body, and follows its continuation pages.

use time::OffsetDateTime;

use crate::client::Client;
use crate::dialect::Dialect;
use crate::error::Result;
use crate::request::check_bucket;

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
    /// [`Error::BucketAlreadyExists`](crate::Error::BucketAlreadyExists) (whoever owns it).
    pub async fn create_bucket(&self, bucket: &str) -> Result<()> {
        check_bucket(bucket)?;
        match self.dialect() {
            Dialect::S3(_) => self.s3_create_bucket(bucket).await,
            Dialect::Azure(_) => self.azure_create_container(bucket).await,
        }
    }

    /// Deletes the empty bucket `bucket`.
    pub async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        check_bucket(bucket)?;
        match self.dialect() {
            Dialect::S3(_) => self.s3_delete_bucket(bucket).await,
            Dialect::Azure(_) => self.azure_delete_container(bucket).await,
        }
    }

    /// The buckets owned by the client's credentials (ListBuckets), in the server's order (by name
    /// on S3). Continuation pages are followed, at most [`MAX_BUCKET_PAGES`].
    pub async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        match self.dialect() {
            Dialect::S3(_) => self.s3_list_buckets().await,
            Dialect::Azure(_) => self.azure_list_containers().await,
        }
    }
}
