//! List Blobs, as pages of the same entries an S3 listing gives.

use brisk_wire::azure::{BlobEntry, parse_list_blobs};
use brisk_wire::xml::ObjectEntry;
use time::OffsetDateTime;

use crate::client::{Client, read_small_body};
use crate::error::{Error, Result};
use crate::list::{ListObjects, ListOptions, ListPage};
use crate::request::{RequestSpec, push_query};

/// One List Blobs page of `container` from `marker` on; returns the page and the next marker.
/// `start_after` has no Azure counterpart: entries up to it are dropped here.
pub(crate) async fn list_page(
    client: &Client,
    container: &str,
    options: &ListOptions,
    marker: Option<&str>,
) -> Result<(ListPage, Option<String>)> {
    let mut spec = RequestSpec::new("GET", Some(container), None);
    push_query(&mut spec.query, "restype", "container");
    push_query(&mut spec.query, "comp", "list");
    if let Some(prefix) = &options.prefix {
        push_query(&mut spec.query, "prefix", prefix);
    }
    if let Some(delimiter) = &options.delimiter {
        push_query(&mut spec.query, "delimiter", delimiter);
    }
    if let Some(marker) = marker {
        push_query(&mut spec.query, "marker", marker);
    }
    if let Some(max) = options.max_keys {
        push_query(&mut spec.query, "maxresults", &max.to_string());
    }
    let mut response = client.send(&spec).await?;
    let xml = read_small_body(&mut response).await?;
    response.release();
    let page = parse_list_blobs(&xml)?;
    let after = options.start_after.as_deref().unwrap_or("");
    let objects = page
        .blobs
        .into_iter()
        .filter(|b| b.name.as_str() > after)
        .map(object_entry)
        .collect::<Result<Vec<_>>>()?;
    let common_prefixes = page
        .prefixes
        .into_iter()
        .filter(|p| p.as_str() > after)
        .collect();
    Ok((
        ListPage {
            objects,
            common_prefixes,
        },
        page.next_marker,
    ))
}
impl ListObjects {
    /// The Azure form of [`next_page`](ListObjects::next_page): one List Blobs page, continued
    /// from its `NextMarker`.
    pub(crate) async fn azure_next_page(&mut self) -> Result<ListPage> {
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
        Ok(page)
    }
}

/// A listed blob as the entry an S3 listing gives: the ETag quoted as S3 quotes it.
fn object_entry(blob: BlobEntry) -> Result<ObjectEntry> {
    let last_modified = httpdate::parse_http_date(&blob.last_modified)
        .map(OffsetDateTime::from)
        .map_err(|_| Error::UnexpectedResponse {
            what: format!(
                "blob {:?} listed with Last-Modified {:?}",
                blob.name, blob.last_modified
            ),
        })?;
    let etag = if blob.etag.starts_with('"') {
        blob.etag
    } else {
        format!("\"{}\"", blob.etag)
    };
    Ok(ObjectEntry {
        key: blob.name,
        last_modified,
        etag,
        size: blob.size,
        storage_class: None,
        checksum_algorithm: None,
        checksum_type: None,
        owner: None,
    })
}
