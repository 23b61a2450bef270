//! `mb`: makes a bucket (or an Azure container).

use serde_json::json;

use super::bucket_of;
use crate::args::BucketArgs;
use crate::context::Context;
use crate::exit::CliError;

pub(super) async fn mb(ctx: &Context, a: BucketArgs) -> Result<(), CliError> {
    let url = bucket_of(&a.bucket)?;
    ctx.client(&url)?
        .create_bucket(&url.bucket)
        .await
        .map_err(|e| CliError::s3(format!("make bucket {}", url.bucket), e))?;
    ctx.report(
        || format!("make_bucket: {}", url.bucket),
        || json!({"action": "make_bucket", "bucket": url.bucket}),
    );
    Ok(())
}
