//! `presign`: a presigned GET or PUT URL for an object.

use std::time::Duration;

use serde_json::json;

use super::require_key;
use crate::args::PresignArgs;
use crate::context::Context;
use crate::exit::CliError;
use crate::location::ObjectUrl;

pub(super) fn presign(ctx: &Context, a: PresignArgs) -> Result<(), CliError> {
    let url = ObjectUrl::parse(&a.path)?;
    require_key(&url)?;
    let expires = Duration::from_secs(a.expires_in);
    let client = ctx.client(&url)?;
    let signed = if a.put {
        client.presign_put(&url.bucket, &url.key, expires)
    } else {
        client.presign_get(&url.bucket, &url.key, expires)
    }
    .map_err(|e| CliError::s3(format!("presign {url}"), e))?;
    if ctx.json {
        println!(
            "{}",
            json!({"url": signed, "method": if a.put { "PUT" } else { "GET" }, "expires_in": a.expires_in})
        );
    } else {
        println!("{signed}");
    }
    Ok(())
}
