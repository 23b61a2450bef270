//! `ls`: the objects and common prefixes under a URL, or the buckets (`ls`) or containers
//! (`ls az://`), in the AWS CLI's format or as JSON lines.

use brisk_client::ListOptions;
use serde_json::json;
use time::OffsetDateTime;
use time::macros::format_description;

use super::next_page;
use crate::args::LsArgs;
use crate::context::Context;
use crate::exit::CliError;
use crate::location::{ObjectUrl, Service};
use crate::size::human;

/// `2026-11-22 04:56:17`, in UTC (the AWS CLI prints local time; UTC needs no time zone database).
fn timestamp(t: OffsetDateTime) -> String {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    t.format(&format).unwrap_or_default()
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(super) async fn ls(ctx: &Context, a: LsArgs) -> Result<(), CliError> {
    let Some(path) = a.path else {
        return list_buckets(ctx, Service::S3).await;
    };
    if path == "az://" {
        return list_buckets(ctx, Service::Azure).await;
    }
    let url = ObjectUrl::parse(&path)?;
    let size_text = |n: u64| {
        if a.human_readable {
            human(n)
        } else {
            n.to_string()
        }
    };
    let mut listing = ctx.client(&url)?.list(
        &url.bucket,
        ListOptions {
            prefix: (!url.key.is_empty()).then(|| url.key.clone()),
            delimiter: (!a.recursive).then(|| "/".to_owned()),
            ..ListOptions::default()
        },
    );
    // Only the part after the last `/` of the prefix is printed without --recursive, as the AWS CLI.
    let shown_from = if a.recursive {
        0
    } else {
        url.key.rfind('/').map_or(0, |i| i + 1)
    };
    let (mut objects, mut bytes) = (0u64, 0u64);
    while let Some(page) = next_page(&mut listing, &url).await? {
        for prefix in &page.common_prefixes {
            ctx.report(
                || format!("{:>30} {}", "PRE", &prefix[shown_from.min(prefix.len())..]),
                || json!({"type": "prefix", "prefix": prefix}),
            );
        }
        for o in &page.objects {
            objects += 1;
            bytes += o.size;
            ctx.report(
                || {
                    format!(
                        "{} {:>10} {}",
                        timestamp(o.last_modified),
                        size_text(o.size),
                        &o.key[shown_from.min(o.key.len())..]
                    )
                },
                || {
                    json!({"type": "object", "key": o.key, "size": o.size,
                           "last_modified": rfc3339(o.last_modified), "etag": o.etag})
                },
            );
        }
    }
    if a.summarize {
        ctx.report(
            || {
                format!(
                    "\nTotal Objects: {objects}\n   Total Size: {}",
                    size_text(bytes)
                )
            },
            || json!({"type": "summary", "total_objects": objects, "total_size": bytes}),
        );
    }
    Ok(())
}

/// `ls`: the S3 buckets, as the AWS CLI lists them; `ls az://`: the Azure account's containers
/// (`last_modified` in JSON: Azure does not report a creation date).
async fn list_buckets(ctx: &Context, service: Service) -> Result<(), CliError> {
    let (kind, what, date_field) = match service {
        Service::S3 => ("bucket", "list buckets", "creation_date"),
        Service::Azure => ("container", "list containers", "last_modified"),
    };
    let buckets = ctx
        .client_of(service)?
        .list_buckets()
        .await
        .map_err(|e| CliError::s3(what, e))?;
    for b in buckets {
        ctx.report(
            || format!("{} {}", timestamp(b.creation_date), b.name),
            || json!({"type": kind, "name": b.name, date_field: rfc3339(b.creation_date)}),
        );
    }
    Ok(())
}
