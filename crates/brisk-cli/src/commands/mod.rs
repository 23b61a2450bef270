//! The object commands: what each does, in the AWS CLI's conventions, on `brisk-client`, for
//! `s3://` and `az://` URLs alike. One module per command (`cp` also makes `mv`'s copies, and `sync`
//! makes its transfers through `cp`'s); this one dispatches, and holds the URL checks and the
//! listing page that several of them share.

mod cat;
mod cp;
mod ls;
mod mb;
mod presign;
mod rb;
mod rm;
mod sync;

use brisk_client::ListPage;

use crate::args::{Command, GlobalArgs};
use crate::context::Context;
use crate::exit::CliError;
use crate::filter::Filters;
use crate::location::ObjectUrl;

/// Runs an S3 command (`serve` and `completions` are handled before a client exists).
pub async fn run(global: GlobalArgs, command: Command, filters: Filters) -> Result<(), CliError> {
    let ctx = Context::new(&global)?;
    match command {
        Command::Cp(a) => cp::cp(&ctx, a, &filters, cp::Mode::Copy).await,
        Command::Mv(a) => cp::cp(&ctx, a, &filters, cp::Mode::Move).await,
        Command::Sync(a) => sync::sync(&ctx, a, &filters).await,
        Command::Ls(a) => ls::ls(&ctx, a).await,
        Command::Rm(a) => rm::rm(&ctx, a, &filters).await,
        Command::Mb(a) => mb::mb(&ctx, a).await,
        Command::Rb(a) => rb::rb(&ctx, a).await,
        Command::Cat(a) => cat::cat(&ctx, a).await,
        Command::Presign(a) => presign::presign(&ctx, a),
        Command::Completions(_) | Command::Serve(_) | Command::Bench(_) => {
            unreachable!("handled in main")
        }
    }
}

fn require_key(url: &ObjectUrl) -> Result<(), CliError> {
    if url.key.is_empty() || url.key.ends_with('/') {
        return Err(CliError::Usage(format!(
            "{url} names a prefix, not an object (use --recursive)"
        )));
    }
    Ok(())
}

/// The prefix a recursive command works under: `dir` means `dir/`, as a directory would.
fn as_prefix(key: &str) -> String {
    if key.is_empty() || key.ends_with('/') {
        key.to_owned()
    } else {
        format!("{key}/")
    }
}

fn bucket_of(text: &str) -> Result<ObjectUrl, CliError> {
    let url = ObjectUrl::parse(text)?;
    if !url.key.is_empty() {
        return Err(CliError::Usage(format!(
            "{text}: give a bucket ({}bucket), not a key",
            url.service.prefix()
        )));
    }
    Ok(url)
}

async fn next_page(
    listing: &mut brisk_client::ListObjects,
    url: &ObjectUrl,
) -> Result<Option<ListPage>, CliError> {
    listing
        .next_page()
        .await
        .map_err(|e| CliError::s3(format!("list {url}"), e))
}
