//! `cat`: an object to standard output.

use super::require_key;
use crate::args::CatArgs;
use crate::context::Context;
use crate::exit::CliError;
use crate::location::ObjectUrl;
use crate::stream;

pub(super) async fn cat(ctx: &Context, a: CatArgs) -> Result<(), CliError> {
    let url = ObjectUrl::parse(&a.path)?;
    require_key(&url)?;
    stream::object_to_stdout(ctx, &url).await.map(|_| ())
}
