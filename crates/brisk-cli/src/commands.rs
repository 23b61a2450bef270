//! The object commands: what each does, in the AWS CLI's conventions, on `brisk-client`, for
//! `s3://` and `az://` URLs alike.

use std::path::{Path, PathBuf};
use std::time::Duration;

use brisk_client::{
    CopyOptions, DownloadHead, ListOptions, ListPage, TransferOptions, TransferProgress,
};
use brisk_wire::xml::ObjectEntry;
use serde_json::json;
use time::OffsetDateTime;
use time::macros::format_description;

use crate::args::{
    BucketArgs, CatArgs, Command, CpArgs, GlobalArgs, LsArgs, PresignArgs, RbArgs, RmArgs,
};
use crate::context::Context;
use crate::exit::CliError;
use crate::filter::Filters;
use crate::location::{Location, ObjectUrl, Service};
use crate::progress::Progress;
use crate::size::human;
use crate::stream;

/// Runs an S3 command (`serve` and `completions` are handled before a client exists).
pub async fn run(global: GlobalArgs, command: Command, filters: Filters) -> Result<(), CliError> {
    let ctx = Context::new(&global)?;
    match command {
        Command::Cp(a) => cp(&ctx, a, &filters, Mode::Copy).await,
        Command::Mv(a) => cp(&ctx, a, &filters, Mode::Move).await,
        Command::Sync(a) => crate::sync::sync(&ctx, a, &filters).await,
        Command::Ls(a) => ls(&ctx, a).await,
        Command::Rm(a) => rm(&ctx, a, &filters).await,
        Command::Mb(a) => mb(&ctx, a).await,
        Command::Rb(a) => rb(&ctx, a).await,
        Command::Cat(a) => cat(&ctx, a).await,
        Command::Presign(a) => presign(&ctx, a),
        Command::Completions(_) | Command::Serve(_) | Command::Bench(_) => {
            unreachable!("handled in main")
        }
    }
}

// ----- cp --------------------------------------------------------------------------------------

/// What `cp` and `mv` do with the source once its copy is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Keep it (`cp`).
    Copy,
    /// Check the copy (its size at the destination), then delete the source (`mv`). A copy that
    /// fails or does not check leaves the source where it was.
    Move,
}

/// One copy to make.
#[derive(Debug)]
pub(crate) enum Copy {
    /// A file up; its size as planned, or `None` for a named pipe or device, read to its end.
    Upload(PathBuf, ObjectUrl, Option<u64>),
    /// An object down; its size as planned, and its HEAD when planning made one (the download
    /// then makes none of its own).
    Download(ObjectUrl, PathBuf, u64, Option<Box<DownloadHead>>),
    ServerSide(ObjectUrl, ObjectUrl, u64),
    /// Between services (S3 and Azure): streamed through this process in bounded memory.
    Relay(ObjectUrl, ObjectUrl, u64),
}

impl Copy {
    /// The action's name, the source, the destination and the size as planned (`None`: known
    /// only once a pipe or device has been read to its end).
    pub(crate) fn describe(&self) -> (&'static str, String, String, Option<u64>) {
        match self {
            Copy::Upload(p, u, n) => ("upload", p.display().to_string(), u.to_string(), *n),
            Copy::Download(u, p, n, _) => {
                ("download", u.to_string(), p.display().to_string(), Some(*n))
            }
            Copy::ServerSide(a, b, n) | Copy::Relay(a, b, n) => {
                ("copy", a.to_string(), b.to_string(), Some(*n))
            }
        }
    }

    /// Why this copy cannot be a move: its local side is a named pipe or a device, which could not
    /// be checked against the source afterwards (a download) or would be deleted once read (an
    /// upload from `/dev/stdin` would remove `/dev/stdin`).
    fn refuses_move(&self) -> Option<String> {
        let special =
            |path: &Path| std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
        match self {
            Copy::Upload(path, _, None) => Some(path.display().to_string()),
            Copy::Download(_, path, ..) if special(path) => Some(path.display().to_string()),
            _ => None,
        }
        .map(|path| {
            format!(
                "{path} is not a regular file (a named pipe, device or socket): mv could not \
                 check the copy or would delete it (use cp)"
            )
        })
    }
}

async fn cp(ctx: &Context, a: CpArgs, filters: &Filters, mode: Mode) -> Result<(), CliError> {
    let mut ctx = ctx.clone();
    ctx.verify_md5_etag = a.verify_md5;
    ctx.choose_object_headers(&a.headers);
    let ctx = &ctx;
    let src = Location::parse(&a.source)?;
    let dst = Location::parse(&a.destination)?;
    let verb = match mode {
        Mode::Copy => "cp",
        Mode::Move => "mv",
    };
    let label = format!("{verb} {} {}", a.source, a.destination);
    if mode == Mode::Move && (src == Location::Stream || dst == Location::Stream) {
        return Err(CliError::Usage(format!(
            "{label}: mv moves files and objects, not stdin or stdout (use cp)"
        )));
    }
    match (&src, &dst) {
        (Location::Stream, Location::Remote(url)) if !a.recursive => {
            if a.select.dryrun {
                return dry(ctx, "upload", "-", &url.to_string());
            }
            if url.key.is_empty() || url.key.ends_with('/') {
                return Err(CliError::Usage(format!(
                    "{label}: uploading stdin needs a full key ({}bucket/key)",
                    url.service.prefix()
                )));
            }
            let n = stream::stdin_to_object(ctx, url).await?;
            ctx.report(
                || format!("upload: - to {url}"),
                || json!({"action": "upload", "source": "-", "destination": url.to_string(), "size": n}),
            );
            Ok(())
        }
        (Location::Remote(url), Location::Stream) if !a.recursive => {
            if a.select.dryrun {
                return dry(ctx, "download", &url.to_string(), "-");
            }
            stream::object_to_stdout(ctx, url).await.map(|_| ())
        }
        (Location::Stream, _) | (_, Location::Stream) => Err(CliError::Usage(format!(
            "{label}: - streams one object between stdin/stdout and s3:// or az:// (not with --recursive)"
        ))),
        (Location::Local(_), Location::Local(_)) => Err(CliError::Usage(format!(
            "{label}: at least one side must be an s3:// or az:// URL"
        ))),
        _ => {
            let plan = if a.recursive {
                plan_recursive(ctx, &src, &dst, filters).await?
            } else {
                vec![plan_single(ctx, &src, &dst).await?]
            };
            if mode == Mode::Move
                && let Some(why) = plan.iter().find_map(Copy::refuses_move)
            {
                return Err(CliError::Usage(format!("{label}: {why}")));
            }
            if a.recursive && plan.is_empty() {
                if !ctx.quiet && !ctx.json {
                    eprintln!("brisk: {label}: nothing to copy");
                }
                return Ok(());
            }
            execute(ctx, plan, a.select.dryrun, mode).await
        }
    }
}

pub(crate) fn dry(ctx: &Context, action: &str, from: &str, to: &str) -> Result<(), CliError> {
    ctx.report(
        || format!("(dryrun) {action}: {from} to {to}"),
        || json!({"action": action, "source": from, "destination": to, "dryrun": true}),
    );
    Ok(())
}

/// The copy of one file or object; a destination ending in `/` (or an existing directory) receives
/// the source's name.
async fn plan_single(ctx: &Context, src: &Location, dst: &Location) -> Result<Copy, CliError> {
    match (src, dst) {
        (Location::Local(path), Location::Remote(url)) => {
            let meta = std::fs::metadata(path)
                .map_err(|e| CliError::local(format!("read {}", path.display()), e))?;
            if meta.is_dir() {
                return Err(CliError::Usage(format!(
                    "{} is a directory (use --recursive)",
                    path.display()
                )));
            }
            let key = if url.key.is_empty() || url.key.ends_with('/') {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("{}{name}", url.key)
            } else {
                url.key.clone()
            };
            // A pipe or device (`<(cmd)`, `/dev/stdin`) is read to its end: its size is unknown.
            let size = meta.is_file().then_some(meta.len());
            Ok(Copy::Upload(path.clone(), url.with_key(key), size))
        }
        (Location::Remote(url), Location::Local(path)) => {
            require_key(url)?;
            // The HEAD the download needs, made once here: it also says what is missing before
            // anything is created.
            let head = ctx
                .head_for_download(url)
                .await
                .map_err(|e| CliError::s3(format!("cp {url}"), e))?;
            let into_dir = path.is_dir() || path.to_string_lossy().ends_with('/');
            let target = if into_dir {
                path.join(url.file_name())
            } else {
                path.clone()
            };
            let size = head.meta().content_length;
            Ok(Copy::Download(
                url.clone(),
                target,
                size,
                Some(Box::new(head)),
            ))
        }
        (Location::Remote(from), Location::Remote(to)) => {
            require_key(from)?;
            let meta = ctx
                .head(from)
                .await
                .map_err(|e| CliError::s3(format!("cp {from}"), e))?;
            let key = if to.key.is_empty() || to.key.ends_with('/') {
                format!("{}{}", to.key, from.file_name())
            } else {
                to.key.clone()
            };
            Ok(remote_copy(
                from.clone(),
                to.with_key(key),
                meta.content_length,
            ))
        }
        _ => Err(CliError::Usage("unsupported copy".into())),
    }
}

/// A copy between two objects: on the server within one service, streamed between two.
pub(crate) fn remote_copy(from: ObjectUrl, to: ObjectUrl, size: u64) -> Copy {
    if from.service == to.service {
        Copy::ServerSide(from, to, size)
    } else {
        Copy::Relay(from, to, size)
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
pub(crate) fn as_prefix(key: &str) -> String {
    if key.is_empty() || key.ends_with('/') {
        key.to_owned()
    } else {
        format!("{key}/")
    }
}

/// Every copy of a recursive `cp`, filtered.
async fn plan_recursive(
    ctx: &Context,
    src: &Location,
    dst: &Location,
    filters: &Filters,
) -> Result<Vec<Copy>, CliError> {
    let mut plan = Vec::new();
    match (src, dst) {
        (Location::Local(dir), Location::Remote(url)) => {
            let prefix = as_prefix(&url.key);
            let mut files = Vec::new();
            walk(dir, "", &mut files)?;
            for (relative, path, size) in files {
                if filters.selects(&relative) {
                    plan.push(Copy::Upload(
                        path,
                        url.with_key(format!("{prefix}{relative}")),
                        Some(size),
                    ));
                }
            }
        }
        (Location::Remote(url), _) => {
            let prefix = as_prefix(&url.key);
            for entry in list_all(ctx, url, &prefix).await? {
                let relative = entry.key[prefix.len()..].to_owned();
                if relative.is_empty() || relative.ends_with('/') || !filters.selects(&relative) {
                    continue;
                }
                let from = url.with_key(entry.key.clone());
                plan.push(match dst {
                    Location::Local(dir) => {
                        Copy::Download(from, dir.join(&relative), entry.size, None)
                    }
                    Location::Remote(to) => remote_copy(
                        from,
                        to.with_key(format!("{}{relative}", as_prefix(&to.key))),
                        entry.size,
                    ),
                    Location::Stream => unreachable!("refused before planning"),
                });
            }
        }
        _ => return Err(CliError::Usage("unsupported recursive copy".into())),
    }
    Ok(plan)
}

/// Files under `dir` (recursively, sorted), as (`/`-separated relative path, path, size). Symbolic
/// links to files are followed; links to directories are not (a link to an ancestor would never end).
fn walk(dir: &Path, relative: &str, out: &mut Vec<(String, PathBuf, u64)>) -> Result<(), CliError> {
    let what = || format!("read directory {}", dir.display());
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| CliError::local(what(), e))?
        .collect::<Result<_, _>>()
        .map_err(|e| CliError::local(what(), e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if relative.is_empty() {
            name
        } else {
            format!("{relative}/{name}")
        };
        let path = entry.path();
        let meta =
            std::fs::metadata(&path).map_err(|e| CliError::local(path.display().to_string(), e))?;
        let linked = entry.file_type().is_ok_and(|t| t.is_symlink());
        if meta.is_dir() && !linked {
            walk(&path, &rel, out)?;
        } else if meta.is_file() {
            out.push((rel, path, meta.len()));
        } else {
            warn_not_a_file(&path);
        }
    }
    Ok(())
}

/// Says on stderr that a tree's entry that is not a regular file (a named pipe, a device, a
/// socket) is left out, as the AWS CLI does: reading one could wait forever or never end.
pub(crate) fn warn_not_a_file(path: &Path) {
    eprintln!(
        "warning: skipping {}: not a regular file (a named pipe, device or socket)",
        path.display()
    );
}

/// Every object under `prefix`, page by page.
async fn list_all(
    ctx: &Context,
    url: &ObjectUrl,
    prefix: &str,
) -> Result<Vec<ObjectEntry>, CliError> {
    let mut listing = ctx.client(url)?.list(
        &url.bucket,
        ListOptions {
            prefix: (!prefix.is_empty()).then(|| prefix.to_owned()),
            ..ListOptions::default()
        },
    );
    let mut all = Vec::new();
    while let Some(page) = next_page(&mut listing, url).await? {
        all.extend(page.objects);
    }
    Ok(all)
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

/// Makes the copies, up to `--concurrency` files at once (each moving its parts `--concurrency` at
/// a time, all of them within the client's connection bound and memory budget), reporting each as
/// it ends; a failed copy is reported and the others still run. One bar counts the bytes of all.
async fn execute(ctx: &Context, plan: Vec<Copy>, dryrun: bool, mode: Mode) -> Result<(), CliError> {
    let action_of = |copy: &Copy| match mode {
        Mode::Copy => copy.describe().0,
        Mode::Move => "move",
    };
    if dryrun {
        for copy in &plan {
            let (_, from, to, _) = copy.describe();
            dry(ctx, action_of(copy), &from, &to)?;
        }
        return Ok(());
    }
    // Unknown when a source is a pipe or device: the bar then counts bytes without a total.
    let total_bytes = plan.iter().map(|c| c.describe().3).sum::<Option<u64>>();
    let progress = Progress::new(total_bytes, "cp", ctx.quiet);
    let total = plan.len();
    let single = total == 1;
    let mut failures = Vec::new();
    let mut pending = plan.into_iter();
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < ctx.concurrency {
            let Some(copy) = pending.next() else {
                break;
            };
            let (ctx, counter) = (ctx.clone(), progress.counter());
            running.spawn(async move {
                let mut result = copy_one(&ctx, &copy, &counter).await;
                if let Ok(moved) = result
                    && mode == Mode::Move
                {
                    result = remove_source(&ctx, &copy).await.map(|()| moved);
                }
                (copy, result)
            });
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        let (copy, result) =
            joined.map_err(|e| CliError::Usage(format!("copy task failed: {e}")))?;
        let (_, from, to, _) = copy.describe();
        let action = action_of(&copy);
        match result {
            Ok(size) => {
                if !ctx.quiet {
                    let line = if ctx.json {
                        json!({"action": action, "source": from, "destination": to, "size": size})
                            .to_string()
                    } else {
                        format!("{action}: {from} to {to}")
                    };
                    progress.print_result(&line);
                }
            }
            Err(e) if single => {
                progress.finish();
                return Err(e);
            }
            Err(e) => {
                progress.println(&format!("brisk: {e}"));
                failures.push(e);
            }
        }
    }
    progress.finish();
    match failures.len() {
        0 => Ok(()),
        failed => Err(CliError::Partial { failed, total }),
    }
}

/// The second half of a move: checks that the destination holds as many bytes as the source had
/// when it was planned (the transfer itself checked the bytes' checksum on the way), then deletes
/// the source. Any failure leaves the source in place and says so.
async fn remove_source(ctx: &Context, copy: &Copy) -> Result<(), CliError> {
    let (_, from, to, size) = copy.describe();
    let Some(size) = size else {
        return Err(CliError::Usage(format!(
            "{from} has no size to check {to} against; the source was kept"
        )));
    };
    // The size the destination holds now: a HEAD of an object, the length of a file.
    let landed = match copy {
        Copy::Upload(_, url, _) | Copy::ServerSide(_, url, _) | Copy::Relay(_, url, _) => {
            ctx.head(url)
                .await
                .map_err(|e| CliError::s3(format!("check {to} before removing {from}"), e))?
                .content_length
        }
        Copy::Download(_, path, ..) => std::fs::metadata(path)
            .map_err(|e| CliError::local(format!("check {to}"), e))?
            .len(),
    };
    if landed != size {
        return Err(CliError::Usage(format!(
            "{to} holds {landed} bytes, {from} had {size}; the source was kept"
        )));
    }
    match copy {
        Copy::Upload(path, _, _) => {
            std::fs::remove_file(path).map_err(|e| CliError::local(format!("remove {from}"), e))
        }
        Copy::Download(url, ..) | Copy::ServerSide(url, _, _) | Copy::Relay(url, _, _) => ctx
            .client(url)?
            .delete(&url.bucket, &url.key)
            .await
            .map_err(|e| CliError::s3(format!("delete {from} after moving it"), e)),
    }
}

/// Makes one copy and returns the bytes it moved; uploads and downloads count their parts on
/// `counter` as they complete, a server-side copy its size when it is done.
pub(crate) async fn copy_one(
    ctx: &Context,
    copy: &Copy,
    counter: &TransferProgress,
) -> Result<u64, CliError> {
    let options = || ctx.transfer_options(Some(counter.clone()));
    match copy {
        Copy::Upload(path, url, _) => ctx
            .client(url)?
            .upload(
                &url.bucket,
                &url.key,
                path,
                ctx.upload_options(path, Some(counter.clone())),
            )
            .await
            .map(|uploaded| uploaded.size)
            .map_err(|e| CliError::s3(format!("upload {} to {url}", path.display()), e)),
        Copy::Download(url, path, size, head) => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| CliError::local(format!("create {}", parent.display()), e))?;
            }
            // The listing or the HEAD that planned the copy gave the size: a small object is
            // then one GET, and a larger one's ranges follow the planning HEAD with no second.
            let options = TransferOptions {
                known_size: Some(*size),
                known_head: head.as_deref().cloned(),
                ..options()
            };
            ctx.client(url)?
                .download(&url.bucket, &url.key, path, options)
                .await
                .map(|_| *size)
                .map_err(|e| CliError::s3(format!("download {url} to {}", path.display()), e))
        }
        Copy::ServerSide(from, to, size) => {
            ctx.client(from)?
                .copy_object(
                    &from.bucket,
                    &from.key,
                    &to.bucket,
                    &to.key,
                    // The size is known from the listing or the HEAD that planned the copy.
                    CopyOptions {
                        source_size: Some(*size),
                        ..CopyOptions::default()
                    },
                )
                .await
                .map_err(|e| CliError::s3(format!("copy {from} to {to}"), e))?;
            counter.add(*size);
            Ok(*size)
        }
        Copy::Relay(from, to, _) => stream::relay(ctx, from, to, counter).await,
    }
}

// ----- ls --------------------------------------------------------------------------------------

/// `2026-11-22 04:56:17`, in UTC (the AWS CLI prints local time; UTC needs no time zone database).
fn timestamp(t: OffsetDateTime) -> String {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    t.format(&format).unwrap_or_default()
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

async fn ls(ctx: &Context, a: LsArgs) -> Result<(), CliError> {
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

// ----- rm, mb, rb ------------------------------------------------------------------------------

async fn rm(ctx: &Context, a: RmArgs, filters: &Filters) -> Result<(), CliError> {
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
async fn delete_under(
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

async fn mb(ctx: &Context, a: BucketArgs) -> Result<(), CliError> {
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

async fn rb(ctx: &Context, a: RbArgs) -> Result<(), CliError> {
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

// ----- cat, presign ----------------------------------------------------------------------------

async fn cat(ctx: &Context, a: CatArgs) -> Result<(), CliError> {
    let url = ObjectUrl::parse(&a.path)?;
    require_key(&url)?;
    stream::object_to_stdout(ctx, &url).await.map(|_| ())
}

fn presign(ctx: &Context, a: PresignArgs) -> Result<(), CliError> {
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
