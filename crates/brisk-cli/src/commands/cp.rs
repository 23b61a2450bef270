//! `cp` and `mv`: the plan of copies (one file or object, or a tree filtered by `--include` and
//! `--exclude`), the copies made `--concurrency` at a time, and for `mv` the check and removal of
//! each source. `sync` makes its transfers through [`copy_one`].

use std::path::{Path, PathBuf};

use brisk_client::{CopyOptions, DownloadHead, ListOptions, TransferOptions, TransferProgress};
use brisk_wire::xml::ObjectEntry;
use serde_json::json;

use super::{as_prefix, next_page, require_key};
use crate::args::CpArgs;
use crate::context::Context;
use crate::exit::CliError;
use crate::filter::Filters;
use crate::location::{Location, ObjectUrl};
use crate::progress::Progress;
use crate::stream;

/// What `cp` and `mv` do with the source once its copy is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Keep it (`cp`).
    Copy,
    /// Check the copy (its size at the destination), then delete the source (`mv`). A copy that
    /// fails or does not check leaves the source where it was.
    Move,
}

/// One copy to make.
#[derive(Debug)]
pub(super) enum Copy {
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

pub(super) async fn cp(
    ctx: &Context,
    a: CpArgs,
    filters: &Filters,
    mode: Mode,
) -> Result<(), CliError> {
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

pub(super) fn dry(ctx: &Context, action: &str, from: &str, to: &str) -> Result<(), CliError> {
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
pub(super) fn remote_copy(from: ObjectUrl, to: ObjectUrl, size: u64) -> Copy {
    if from.service == to.service {
        Copy::ServerSide(from, to, size)
    } else {
        Copy::Relay(from, to, size)
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
pub(super) fn warn_not_a_file(path: &Path) {
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
pub(super) async fn copy_one(
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
