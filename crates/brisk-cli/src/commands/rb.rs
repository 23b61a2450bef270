//! `rb`: removes a bucket (or an Azure container), with `--force` its objects first.

use serde_json::json;

use super::bucket_of;
use super::rm::delete_under;
use crate::args::RbArgs;
use crate::context::Context;
use crate::exit::CliError;
use crate::filter::Filters;

pub(super) async fn rb(ctx: &Context, a: RbArgs) -> Result<(), CliError> {
    let url = bucket_of(&a.bucket)?;
    if a.force {
        delete_under(ctx, &url, "", &Filters::default(), false).await?;
    }
    ctx.client(&url)?
        .delete_bucket(&url.bucket)
        .await
        .map_err(|e| CliError::s3(format!("remove bucket {}", url.bucket), e))?;
    ctx.report(
        || format!("remove_bucket: {}", url.bucket),
        || json!({"action": "remove_bucket", "bucket": url.bucket}),
    );
    Ok(())
}
