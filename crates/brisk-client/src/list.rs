//! ListObjectsV2, page by page: [`Client::list`] and the pager it returns.
//!
//! A page holds at most 1,000 entries (S3's page size, and the default of `max-keys`), so listing a
//! bucket of any size holds one page in memory at a time. The pager follows
//! `NextContinuationToken` until the server says the listing is complete.

use brisk_wire::xml::ObjectEntry;

use crate::client::Client;
use crate::dialect::Dialect;
use crate::error::Result;

impl Client {
    /// Lists `bucket` (ListObjectsV2), page by page: call [`ListObjects::next_page`] until it returns
    /// `None`.
    pub fn list(&self, bucket: &str, options: ListOptions) -> ListObjects {
        ListObjects::new(self.clone(), bucket.to_owned(), options)
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
    pub(crate) client: Client,
    pub(crate) bucket: String,
    pub(crate) options: ListOptions,
    pub(crate) next_token: Option<String>,
    pub(crate) done: bool,
    pub(crate) pages: u64,
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
        match self.client.dialect() {
            Dialect::S3(_) => self.s3_next_page().await.map(Some),
            Dialect::Azure(_) => self.azure_next_page().await.map(Some),
        }
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
