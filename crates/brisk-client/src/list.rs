//! ListObjectsV2, page by page: [`Client::list`] and the pager it returns.
//!
//! A page holds at most 1,000 entries (S3's page size, and the default of `max-keys`), so listing a
//! bucket of any size holds one page in memory at a time. The pager follows
//! `NextContinuationToken` until the server says the listing is complete.

use brisk_wire::xml::{ListBucketResult, ListVersion, ObjectEntry, XmlDocument};

use crate::client::{Client, read_small_body};
use crate::error::{Error, Result};
use crate::request::{RequestSpec, check_bucket, push_query};

impl Client {
    /// Lists `bucket` (ListObjectsV2), page by page: call [`ListObjects::next_page`] until it returns
    /// `None`.
    pub fn list(&self, bucket: &str, options: ListOptions) -> ListObjects {
        ListObjects::new(self.clone(), bucket.to_owned(), options)
    }

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

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Only keys starting with this.
    pub prefix: Option<String>,
    /// Group keys up to the next occurrence of this into common prefixes (usually `/`).
    pub delimiter: Option<String>,
    /// Entries per page (S3 caps it at 1,000).
    pub max_keys: Option<u32>,
    /// Start after this key.
    pub start_after: Option<String>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// Objects, in key order.
    pub objects: Vec<ObjectEntry>,
    /// Common prefixes (with a delimiter).
    pub common_prefixes: Vec<String>,
}

/// A listing in progress; see [`Client::list`].
#[derive(Debug)]
pub struct ListObjects {
    client: Client,
    bucket: String,
    options: ListOptions,
    next_token: Option<String>,
    done: bool,
    pages: u64,
}

impl ListObjects {
    pub(crate) fn new(client: Client, bucket: String, options: ListOptions) -> Self {
        Self {
            client,
            bucket,
            options,
            next_token: None,
            done: false,
            pages: 0,
        }
    }

    /// The next page, or `None` once the listing is complete.
    pub async fn next_page(&mut self) -> Result<Option<ListPage>> {
        if self.done {
            return Ok(None);
        }
        if self.client.is_azure() {
            let (page, marker) = crate::azure::list_page(
                &self.client,
                &self.bucket,
                &self.options,
                self.next_token.as_deref(),
            )
            .await?;
            self.pages += 1;
            match marker {
                Some(m) if Some(&m) == self.next_token.as_ref() => {
                    return Err(Error::UnexpectedResponse {
                        what: "a blob listing that repeats its NextMarker".into(),
                    });
                }
                Some(m) => self.next_token = Some(m),
                None => self.done = true,
            }
            return Ok(Some(page));
        }
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
        Ok(Some(ListPage {
            objects: result.contents,
            common_prefixes: result.common_prefixes,
        }))
    }

    /// Pages fetched so far.
    pub fn pages_fetched(&self) -> u64 {
        self.pages
    }

    /// Every remaining object, all pages collected (for listings known to be small).
    pub async fn collect_objects(mut self) -> Result<Vec<ObjectEntry>> {
        let mut all = Vec::new();
        while let Some(page) = self.next_page().await? {
            all.extend(page.objects);
        }
        Ok(all)
    }
}
