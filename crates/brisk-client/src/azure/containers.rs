//! Containers, Azure's buckets: create, delete, list.

use brisk_wire::azure::parse_list_containers;
use time::OffsetDateTime;

use crate::buckets::{BucketInfo, MAX_BUCKET_PAGES};
use crate::client::{Client, finish, read_small_body};
use crate::error::{Error, Result};
use crate::request::{RequestSpec, push_query};

impl Client {
    /// Create Container (private: no public access).
    pub(crate) async fn azure_create_container(&self, container: &str) -> Result<()> {
        let mut spec = RequestSpec::new("PUT", Some(container), None);
        push_query(&mut spec.query, "restype", "container");
        finish(self.send(&spec).await?).await
    }

    /// Delete Container. Azure deletes a container with its blobs; S3 refuses to delete a bucket
    /// that holds objects, and so does this (`BucketNotEmpty`), so that `rb` means the same on both.
    pub(crate) async fn azure_delete_container(&self, container: &str) -> Result<()> {
        let mut probe = self.list(
            container,
            crate::ListOptions {
                max_keys: Some(1),
                ..Default::default()
            },
        );
        if let Some(page) = probe.next_page().await?
            && !page.objects.is_empty()
        {
            return Err(Error::BucketNotEmpty(Box::new(crate::ServiceError {
                status: 409,
                code: "ContainerNotEmpty".into(),
                message: format!("container {container} still holds blobs; delete them first"),
                request_id: None,
                resource: Some(container.to_owned()),
                hint: None,
            })));
        }
        let mut spec = RequestSpec::new("DELETE", Some(container), None);
        push_query(&mut spec.query, "restype", "container");
        finish(self.send(&spec).await?).await
    }

    /// List Containers, every page.
    pub(crate) async fn azure_list_containers(&self) -> Result<Vec<BucketInfo>> {
        let mut containers = Vec::new();
        let mut marker: Option<String> = None;
        for _ in 0..MAX_BUCKET_PAGES {
            let mut spec = RequestSpec::new("GET", None, None);
            push_query(&mut spec.query, "comp", "list");
            if let Some(m) = &marker {
                push_query(&mut spec.query, "marker", m);
            }
            let mut response = self.send(&spec).await?;
            let xml = read_small_body(&mut response).await?;
            response.release();
            let page = parse_list_containers(&xml)?;
            containers.extend(page.containers.into_iter().map(|c| {
                BucketInfo {
                    name: c.name,
                    creation_date: httpdate::parse_http_date(&c.last_modified)
                        .map_or(OffsetDateTime::UNIX_EPOCH, OffsetDateTime::from),
                    region: None,
                }
            }));
            match page.next_marker {
                Some(next) => marker = Some(next),
                None => return Ok(containers),
            }
        }
        Err(Error::UnexpectedResponse {
            what: format!("a container listing still continuing after {MAX_BUCKET_PAGES} pages"),
        })
    }
}
