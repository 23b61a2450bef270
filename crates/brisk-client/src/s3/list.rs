//! The S3 form of a listing: ListObjectsV2, page by page.

use brisk_wire::xml::{ListBucketResult, ListVersion, XmlDocument};

use crate::client::{Client, read_small_body};
use crate::error::{Error, Result};
use crate::list::{ListObjects, ListOptions, ListPage};
use crate::request::{RequestSpec, check_bucket, push_query};

impl Client {
    /// Sends one ListObjectsV2 request (used by [`ListObjects`]).
    pub(crate) async fn list_page(
        &self,
        bucket: &str,
        options: &ListOptions,
        continuation_token: Option<&str>,
    ) -> Result<ListBucketResult> {
        check_bucket(bucket)?;
        let mut query = String::new();
        if let Some(token) = continuation_token {
            push_query(&mut query, "continuation-token", token);
        }
        if let Some(delimiter) = &options.delimiter {
            push_query(&mut query, "delimiter", delimiter);
        }
        push_query(&mut query, "encoding-type", "url");
        push_query(&mut query, "list-type", "2");
        if let Some(max) = options.max_keys {
            push_query(&mut query, "max-keys", &max.to_string());
        }
        if let Some(prefix) = &options.prefix {
            push_query(&mut query, "prefix", prefix);
        }
        if let Some(after) = &options.start_after {
            push_query(&mut query, "start-after", after);
        }
        let mut spec = RequestSpec::new("GET", Some(bucket), None);
        spec.query = query;
        let mut response = self.send(&spec).await?;
        let xml = read_small_body(&mut response).await?;
        response.release();
        Ok(ListBucketResult::parse(&xml)?)
    }
}

impl ListObjects {
    /// The S3 form of [`next_page`](ListObjects::next_page): one ListObjectsV2 page, continued
    /// from its `NextContinuationToken`.
    pub(crate) async fn s3_next_page(&mut self) -> Result<ListPage> {
        let result: ListBucketResult = self
            .client
            .list_page(&self.bucket, &self.options, self.next_token.as_deref())
            .await?;
        self.pages += 1;
        let next = match &result.header.version {
            ListVersion::V2 {
                next_continuation_token,
                ..
            } => next_continuation_token.clone(),
            ListVersion::V1 { .. } => {
                return Err(Error::UnexpectedResponse {
                    what: "a ListObjects (V1) document in answer to ListObjectsV2".into(),
                });
            }
        };
        if result.header.is_truncated {
            match next {
                Some(token) if Some(&token) != self.next_token.as_ref() => {
                    self.next_token = Some(token);
                }
                _ => {
                    return Err(Error::UnexpectedResponse {
                        what: "a truncated listing without a new NextContinuationToken".into(),
                    });
                }
            }
        } else {
            self.done = true;
        }
        Ok(ListPage {
            objects: result.contents,
            common_prefixes: result.common_prefixes,
        })
    }
}
