//! `rm`: one object, or every selected object under a prefix in DeleteObjects batches (which
//! `rb --force` empties a bucket with).

use brisk_client::ListOptions;
use serde_json::json;

use super::{as_prefix, next_page, require_key};
use crate::args::RmArgs;
use crate::context::Context;
use crate::exit::CliError;
use crate::filter::Filters;
use crate::location::ObjectUrl;

pub(super) async fn rm(ctx: &Context, a: RmArgs, filters: &Filters) -> Result<(), CliError> {
    let url = ObjectUrl::parse(&a.path)?;
    if !a.recursive {
        require_key(&url)?;
        if a.select.dryrun {
            return dry_delete(ctx, &url);
        }
        ctx.client(&url)?
            .delete(&url.bucket, &url.key)
            .await
            .map_err(|e| CliError::s3(format!("delete {url}"), e))?;
        report_delete(ctx, &url);
        return Ok(());
    }
    let prefix = if url.key.is_empty() {
        String::new()
    } else {
        as_prefix(&url.key)
    };
    delete_under(ctx, &url, &prefix, filters, a.select.dryrun).await
}

fn dry_delete(ctx: &Context, url: &ObjectUrl) -> Result<(), CliError> {
    ctx.report(
        || format!("(dryrun) delete: {url}"),
        || json!({"action": "delete", "target": url.to_string(), "dryrun": true}),
    );
    Ok(())
}

fn report_delete(ctx: &Context, url: &ObjectUrl) {
    ctx.report(
        || format!("delete: {url}"),
        || json!({"action": "delete", "target": url.to_string()}),
    );
}

/// Deletes the selected objects under `prefix`, one DeleteObjects request per listed page (≤ 1,000
/// keys, S3's batch limit), so memory stays one page whatever the number of objects.
pub(super) async fn delete_under(
    ctx: &Context,
    url: &ObjectUrl,
    prefix: &str,
    filters: &Filters,
    dryrun: bool,
) -> Result<(), CliError> {
    let mut listing = ctx.client(url)?.list(
        &url.bucket,
        ListOptions {
            prefix: (!prefix.is_empty()).then(|| prefix.to_owned()),
            ..ListOptions::default()
        },
    );
    let (mut total, mut failed) = (0usize, 0usize);
    while let Some(page) = next_page(&mut listing, url).await? {
        let keys: Vec<&str> = page
            .objects
            .iter()
            .map(|o| o.key.as_str())
            .filter(|k| filters.selects(&k[prefix.len()..]))
            .collect();
        if keys.is_empty() {
            continue;
        }
        total += keys.len();
        if dryrun {
            for k in &keys {
                dry_delete(ctx, &url.with_key(*k))?;
            }
            continue;
        }
        let result = ctx
            .client(url)?
            .delete_many(&url.bucket, &keys)
            .await
            .map_err(|e| CliError::s3(format!("delete under {url}"), e))?;
        for e in &result.errors {
            eprintln!(
                "brisk: delete {}: {} {}",
                url.with_key(e.key.clone()),
                e.code,
                e.message
            );
        }
        failed += result.errors.len();
        for k in keys {
            if !result.errors.iter().any(|e| e.key == k) {
                report_delete(ctx, &url.with_key(k));
            }
        }
    }
    match failed {
        0 => Ok(()),
        failed => Err(CliError::Partial { failed, total }),
    }
}
