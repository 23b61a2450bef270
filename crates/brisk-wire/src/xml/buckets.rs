//! ListBuckets (`ListAllMyBucketsResult`), CreateBucket's `CreateBucketConfiguration` and
//! GetBucketLocation's `LocationConstraint`.

use std::io::Write;

use time::OffsetDateTime;

use super::reader::{XmlReader, check_room, required};
use super::values::Owner;
use super::writer::XmlWriter;
use super::{MAX_LIST_ENTRIES, S3_NAMESPACE, XmlDocument, XmlParseError, XmlWriteError};

/// One bucket of a ListBuckets response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketEntry {
    pub name: String,
    pub creation_date: OffsetDateTime,
    /// The bucket's region (S3 sends it since 2024; absent from older servers).
    pub bucket_region: Option<String>,
}

/// The response of ListBuckets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListAllMyBucketsResult {
    pub owner: Option<Owner>,
    pub buckets: Vec<BucketEntry>,
    /// Present when the listing was paged (`max-buckets`) and more buckets follow.
    pub continuation_token: Option<String>,
    /// The `prefix` of the request, if any.
    pub prefix: Option<String>,
}

impl XmlDocument for ListAllMyBucketsResult {
    const ROOT: &'static str = "ListAllMyBucketsResult";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        if let Some(owner) = &self.owner {
            w.owner("Owner", owner)?;
        }
        w.start("Buckets")?;
        for bucket in &self.buckets {
            w.start("Bucket")?;
            w.text("Name", &bucket.name)?;
            w.timestamp("CreationDate", bucket.creation_date)?;
            w.opt_text("BucketRegion", bucket.bucket_region.as_deref())?;
            w.end("Bucket")?;
        }
        w.end("Buckets")?;
        w.opt_text("ContinuationToken", self.continuation_token.as_deref())?;
        w.opt_text("Prefix", self.prefix.as_deref())?;
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            r.children(|r, name| {
                match name {
                    b"Owner" => out.owner = Some(r.owner("Owner")?),
                    b"ContinuationToken" => {
                        out.continuation_token = Some(r.text("ContinuationToken")?);
                    }
                    b"Prefix" => out.prefix = Some(r.text("Prefix")?),
                    b"Buckets" => r.children(|r, name| {
                        if name == b"Bucket" {
                            check_room(out.buckets.len(), MAX_LIST_ENTRIES, "Bucket")?;
                            out.buckets.push(parse_bucket(r)?);
                        }
                        Ok(())
                    })?,
                    _ => {}
                }
                Ok(())
            })?;
            Ok(out)
        })
    }
}

fn parse_bucket(r: &mut XmlReader<'_>) -> Result<BucketEntry, XmlParseError> {
    let (mut name, mut creation_date, mut bucket_region) = (None, None, None);
    r.children(|r, element| {
        match element {
            b"Name" => name = Some(r.text("Name")?),
            b"CreationDate" => creation_date = Some(r.timestamp("CreationDate")?),
            b"BucketRegion" => bucket_region = Some(r.text("BucketRegion")?),
            _ => {}
        }
        Ok(())
    })?;
    Ok(BucketEntry {
        name: required(name, "Bucket", "Name")?,
        creation_date: required(creation_date, "Bucket", "CreationDate")?,
        bucket_region,
    })
}

/// The optional body of CreateBucket.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreateBucketConfiguration {
    /// The region to create the bucket in; `None` (or an empty element) means `us-east-1`.
    pub location_constraint: Option<String>,
}

impl XmlDocument for CreateBucketConfiguration {
    const ROOT: &'static str = "CreateBucketConfiguration";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        w.root(Self::ROOT, Some(S3_NAMESPACE))?;
        w.opt_text("LocationConstraint", self.location_constraint.as_deref())?;
        w.finish(Self::ROOT)
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let mut out = Self::default();
            r.children(|r, name| {
                if name == b"LocationConstraint" {
                    let region = r.text("LocationConstraint")?;
                    out.location_constraint = (!region.trim().is_empty()).then_some(region);
                }
                Ok(())
            })?;
            Ok(out)
        })
    }
}

/// The response of GetBucketLocation: the region as the document's text, empty for `us-east-1`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LocationConstraint {
    /// `None` for `us-east-1` (S3 writes an empty element for it).
    pub region: Option<String>,
}

impl XmlDocument for LocationConstraint {
    const ROOT: &'static str = "LocationConstraint";

    fn write<W: Write>(&self, out: W) -> Result<W, XmlWriteError> {
        let mut w = XmlWriter::new(out)?;
        match &self.region {
            Some(region) => w.text_with_namespace(Self::ROOT, S3_NAMESPACE, region),
            None => {
                w.root(Self::ROOT, Some(S3_NAMESPACE))?;
                w.finish(Self::ROOT)
            }
        }
    }

    fn parse(input: &[u8]) -> Result<Self, XmlParseError> {
        XmlReader::document(input, Self::ROOT, |r| {
            let region = r.text(Self::ROOT)?;
            Ok(Self {
                region: (!region.trim().is_empty()).then_some(region),
            })
        })
    }
}
