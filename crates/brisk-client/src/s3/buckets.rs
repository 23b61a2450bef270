//! The S3 forms of the bucket operations: CreateBucket, DeleteBucket, ListBuckets.

use crate::buckets::{BucketInfo, MAX_BUCKET_PAGES};
use crate::client::{Client, finish, read_small_body};
use crate::error::{Error, Result};
use crate::request::{RequestSpec, push_query};
use brisk_wire::sigv4::PayloadHash;
use brisk_wire::xml::{CreateBucketConfiguration, ListAllMyBucketsResult, XmlDocument};

impl Client {
    /// The S3 form of [`create_bucket`](Self::create_bucket).
    pub(crate) async fn s3_create_bucket(&self, bucket: &str) -> Result<()> {
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

    /// The S3 form of [`delete_bucket`](Self::delete_bucket).
    pub(crate) async fn s3_delete_bucket(&self, bucket: &str) -> Result<()> {
        let response = self
            .send(&RequestSpec::new("DELETE", Some(bucket), None))
            .await?;
        finish(response).await
    }

    /// The S3 form of [`list_buckets`](Self::list_buckets).
    pub(crate) async fn s3_list_buckets(&self) -> Result<Vec<BucketInfo>> {
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
