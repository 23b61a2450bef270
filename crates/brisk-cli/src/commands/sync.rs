//! `brisk sync SRC DST`: makes a destination directory or prefix like a source, in the AWS CLI's
//! semantics, for local -> s3:// or az://, back, and between prefixes (server-side within a
//! service, streamed between two).
//!
//! A file or object is transferred when the destination lacks it, its size differs, or the source is
//! newer (local mtime against LastModified, to the second); `--size-only` compares sizes alone, and
//! `--exact-timestamps` makes a download of a same-sized object happen whenever the times differ.
//! Downloads set the file's mtime to the object's LastModified, so a second sync transfers nothing.
//! `--delete` removes what the destination has and the source does not; `--include`/`--exclude`
//! select on both sides, in the order given, as for `cp --recursive` (an excluded destination file
//! is never deleted).
//!
//! # Memory
//!
//! Both sides are read as streams in key order and walked side by side: the remote side a listing
//! page (at most 1,000 entries) at a time, the local side one directory level at a time (each
//! directory's entries sorted as keys sort: a directory `a` as `a/`, after `a-b`). A sync of a
//! million keys never holds a million entries: it holds a page, the open directories, and the
//! transfers in flight (`--concurrency`), whose buffers come from the `--max-memory` budget.
//!
//! # Small objects
//!
//! The listings already give sizes and times, so nothing is HEADed: a download up to `--part-size`
//! is one GET into an exact buffer (checksum verified) written to a temporary file and renamed; an
//! upload up to it is one PUT; a copy is one CopyObject. Transfers run `--concurrency` at a time over
//! the client's keep-alive connections. A failed transfer does not stop the others: failures are
//! listed at the end and the exit code says that some failed.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use brisk_client::{ListObjects, ListOptions, TransferProgress};
use serde_json::json;

use super::as_prefix;
use super::cp::{self, Copy, copy_one, remote_copy};
use crate::args::SyncArgs;
use crate::context::Context;
use crate::exit::CliError;
use crate::filter::Filters;
use crate::location::{Location, ObjectUrl};
use crate::progress::Progress;
use crate::size::human;

/// One file or object of a side, keyed by its path relative to the side's root.
#[derive(Debug)]
struct Entry {
    /// `/`-separated, relative to the directory or prefix synced.
    key: String,
    size: u64,
    /// Seconds since the Unix epoch (local mtime, or LastModified).
    modified: i64,
}

/// A side of the sync: where it is, and its entries as a stream in key order.
enum Side {
    Local {
        root: PathBuf,
        walk: LocalWalk,
    },
    Remote {
        url: ObjectUrl,
        prefix: String,
        listing: Box<ListObjects>,
        page: VecDeque<Entry>,
        done: bool,
    },
}

impl Side {
    fn open(ctx: &Context, location: &Location, is_source: bool) -> Result<Self, CliError> {
        match location {
            Location::Local(root) => {
                if is_source && !root.is_dir() {
                    return Err(CliError::Usage(format!(
                        "{} is not a directory (sync works on directories and prefixes)",
                        root.display()
                    )));
                }
                Ok(Self::Local {
                    root: root.clone(),
                    walk: LocalWalk::new(root),
                })
            }
            Location::Remote(url) => {
                let prefix = as_prefix(&url.key);
                let listing = ctx.client(url)?.list(
                    &url.bucket,
                    ListOptions {
                        prefix: (!prefix.is_empty()).then(|| prefix.clone()),
                        ..ListOptions::default()
                    },
                );
                Ok(Self::Remote {
                    url: url.clone(),
                    prefix,
                    listing: Box::new(listing),
                    page: VecDeque::new(),
                    done: false,
                })
            }
            Location::Stream => Err(CliError::Usage(
                "sync works on directories and prefixes, not stdin or stdout".into(),
            )),
        }
    }

    /// The next entry in key order.
    async fn next(&mut self) -> Result<Option<Entry>, CliError> {
        match self {
            Self::Local { walk, .. } => walk.next(),
            Self::Remote {
                url,
                prefix,
                listing,
                page,
                done,
            } => loop {
                if let Some(entry) = page.pop_front() {
                    return Ok(Some(entry));
                }
                if *done {
                    return Ok(None);
                }
                match listing
                    .next_page()
                    .await
                    .map_err(|e| CliError::s3(format!("list {url}"), e))?
                {
                    None => *done = true,
                    Some(p) => page.extend(p.objects.into_iter().filter_map(|o| {
                        let key = o.key.strip_prefix(prefix.as_str())?.to_owned();
                        // Directory markers (`dir/`) are not files.
                        (!key.is_empty() && !key.ends_with('/')).then(|| Entry {
                            key,
                            size: o.size,
                            modified: o.last_modified.unix_timestamp(),
                        })
                    })),
                }
            },
        }
    }

    /// The location of `key` on this side.
    fn locate(&self, key: &str) -> Target {
        match self {
            Self::Local { root, .. } => Target::Local(root.join(key)),
            Self::Remote { url, prefix, .. } => {
                Target::Remote(url.with_key(format!("{prefix}{key}")))
            }
        }
    }
}

/// Where one entry is.
enum Target {
    Local(PathBuf),
    Remote(ObjectUrl),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::Remote(u) => write!(f, "{u}"),
        }
    }
}

/// A local directory tree as a stream of files in key order: each directory's entries are read and
/// sorted when the walk enters it (a directory named `a` sorts as `a/`, so `a-b` comes before the
/// files under `a`, as S3 lists keys), and only the directories on the current path are held.
/// Links to files are followed; links to directories are not (a link to an ancestor never ends).
struct LocalWalk {
    /// The directories on the current path, innermost last.
    stack: Vec<OpenDir>,
    /// The root, until the walk enters it.
    root: Option<PathBuf>,
}

/// A directory the walk is in: its key prefix (`a/b/`), its path, and its entries not yet visited
/// (name, whether a directory), in key order.
struct OpenDir {
    prefix: String,
    path: PathBuf,
    entries: VecDeque<(String, bool)>,
}

impl LocalWalk {
    fn new(root: &Path) -> Self {
        Self {
            stack: Vec::new(),
            root: Some(root.to_owned()),
        }
    }

    /// The entries of `dir`, sorted by their key (a directory with a `/` after its name).
    fn read_dir(dir: &Path) -> Result<VecDeque<(String, bool)>, CliError> {
        let what = || format!("read directory {}", dir.display());
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| CliError::local(what(), e))? {
            let entry = entry.map_err(|e| CliError::local(what(), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            entries.push((name, is_dir));
        }
        entries.sort_by(|(a, a_dir), (b, b_dir)| {
            let key = |name: &str, dir: bool| {
                let mut k = name.as_bytes().to_vec();
                if dir {
                    k.push(b'/');
                }
                k
            };
            key(a, *a_dir).cmp(&key(b, *b_dir))
        });
        Ok(entries.into())
    }

    fn next(&mut self) -> Result<Option<Entry>, CliError> {
        if let Some(root) = self.root.take()
            && root.is_dir()
        {
            let entries = Self::read_dir(&root)?;
            self.stack.push(OpenDir {
                prefix: String::new(),
                path: root,
                entries,
            });
        }
        loop {
            let Some(open) = self.stack.last_mut() else {
                return Ok(None);
            };
            let Some((name, is_dir)) = open.entries.pop_front() else {
                self.stack.pop();
                continue;
            };
            let path = open.path.join(&name);
            let key = format!("{}{name}", open.prefix);
            if is_dir {
                let entries = Self::read_dir(&path)?;
                self.stack.push(OpenDir {
                    prefix: format!("{key}/"),
                    path,
                    entries,
                });
                continue;
            }
            // A regular file, or a link to one (followed); anything else is skipped.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                cp::warn_not_a_file(&path);
                continue;
            }
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64);
            return Ok(Some(Entry {
                key,
                size: meta.len(),
                modified,
            }));
        }
    }
}

/// Whether a source entry must be transferred over the destination's.
fn differs(args: &SyncArgs, download: bool, source: &Entry, destination: Option<&Entry>) -> bool {
    let Some(destination) = destination else {
        return true;
    };
    if source.size != destination.size {
        return true;
    }
    if args.size_only {
        return false;
    }
    if download && args.exact_timestamps {
        return source.modified != destination.modified;
    }
    source.modified > destination.modified
}

/// Counts for the summary.
#[derive(Debug, Default)]
struct Summary {
    transferred: u64,
    bytes: u64,
    skipped: u64,
    deleted: u64,
    failures: Vec<String>,
}

pub(super) async fn sync(ctx: &Context, args: SyncArgs, filters: &Filters) -> Result<(), CliError> {
    let started = Instant::now();
    let mut ctx = ctx.clone();
    ctx.choose_object_headers(&args.headers);
    let ctx = &ctx;
    let src = Location::parse(&args.source)?;
    let dst = Location::parse(&args.destination)?;
    if matches!((&src, &dst), (Location::Local(_), Location::Local(_))) {
        return Err(CliError::Usage(format!(
            "sync {} {}: at least one side must be an s3:// or az:// URL",
            args.source, args.destination
        )));
    }
    let download = matches!(dst, Location::Local(_));
    let mut source = Side::open(ctx, &src, true)?;
    let mut destination = Side::open(ctx, &dst, false)?;
    let progress = Progress::new(None, "sync", ctx.quiet);
    let mut summary = Summary::default();
    let mut running: tokio::task::JoinSet<(String, Result<u64, CliError>)> =
        tokio::task::JoinSet::new();
    let mut deletes: Vec<Target> = Vec::new();

    let mut s = source.next().await?;
    let mut d = destination.next().await?;
    loop {
        let (entry, other) = match (s.take(), d.take()) {
            (None, None) => break,
            (Some(se), Some(de)) if se.key == de.key => {
                s = source.next().await?;
                d = destination.next().await?;
                if !differs(&args, download, &se, Some(&de)) {
                    if filters.selects(&se.key) {
                        summary.skipped += 1;
                    }
                    continue;
                }
                (Some(se), None)
            }
            (Some(se), Some(de)) if se.key < de.key => {
                d = Some(de);
                s = source.next().await?;
                (Some(se), None)
            }
            (Some(se), None) => {
                s = source.next().await?;
                (Some(se), None)
            }
            (se, Some(de)) => {
                s = se;
                d = destination.next().await?;
                (None, Some(de))
            }
        };
        if let Some(entry) = entry {
            if !filters.selects(&entry.key) {
                continue;
            }
            let copy = match (source.locate(&entry.key), destination.locate(&entry.key)) {
                (Target::Local(path), Target::Remote(url)) => {
                    Copy::Upload(path, url, Some(entry.size))
                }
                (Target::Remote(url), Target::Local(path)) => {
                    Copy::Download(url, path, entry.size, None)
                }
                (Target::Remote(from), Target::Remote(to)) => remote_copy(from, to, entry.size),
                (Target::Local(_), Target::Local(_)) => unreachable!("refused above"),
            };
            let dryrun = args.select.dryrun;
            run(
                ctx,
                copy,
                entry.modified,
                dryrun,
                &progress,
                &mut running,
                &mut summary,
            )
            .await;
        } else if let Some(extra) = other
            && args.delete
            && filters.selects(&extra.key)
        {
            deletes.push(destination.locate(&extra.key));
            if deletes.len() >= brisk_client::client::DELETE_BATCH {
                let dryrun = args.select.dryrun;
                delete_all(ctx, &mut deletes, dryrun, &progress, &mut summary).await;
            }
        }
    }
    while let Some(joined) = running.join_next().await {
        record(ctx, joined, &progress, &mut summary);
    }
    delete_all(
        ctx,
        &mut deletes,
        args.select.dryrun,
        &progress,
        &mut summary,
    )
    .await;
    progress.finish();
    report_summary(ctx, &summary, started, args.select.dryrun);
    match summary.failures.len() {
        0 => Ok(()),
        failed => {
            for failure in &summary.failures {
                eprintln!("brisk: {failure}");
            }
            Err(CliError::Partial {
                failed,
                total: (summary.transferred + summary.deleted) as usize + failed,
            })
        }
    }
}

/// Starts the copy once fewer than `--concurrency` transfers are running (or prints it, dry); a
/// download then sets the file's mtime to `modified`.
async fn run(
    ctx: &Context,
    copy: Copy,
    modified: i64,
    dryrun: bool,
    progress: &Progress,
    running: &mut tokio::task::JoinSet<(String, Result<u64, CliError>)>,
    summary: &mut Summary,
) {
    let (verb, from, to, size) = copy.describe();
    // A tree's entries are regular files and listed objects: every size is known.
    let size = size.unwrap_or_default();
    if dryrun {
        let _ = cp::dry(ctx, verb, &from, &to);
        summary.transferred += 1;
        summary.bytes += size;
        return;
    }
    while running.len() >= ctx.concurrency {
        if let Some(joined) = running.join_next().await {
            record(ctx, joined, progress, summary);
        }
    }
    let (ctx, counter) = (ctx.clone(), progress.counter());
    running.spawn(async move {
        let line = format!("{verb}: {from} to {to}");
        let result = transfer(&ctx, &copy, modified, &counter)
            .await
            .map(|()| size);
        let line = if ctx.json {
            json!({"action": verb, "source": from, "destination": to, "size": size}).to_string()
        } else {
            line
        };
        (line, result)
    });
}

/// Notes a finished transfer: its line, or its failure for the end.
fn record(
    ctx: &Context,
    joined: Result<(String, Result<u64, CliError>), tokio::task::JoinError>,
    progress: &Progress,
    summary: &mut Summary,
) {
    match joined {
        Ok((line, Ok(size))) => {
            summary.transferred += 1;
            summary.bytes += size;
            if !ctx.quiet {
                progress.print_result(&line);
            }
        }
        Ok((_, Err(e))) => summary.failures.push(e.to_string()),
        Err(e) => summary.failures.push(format!("transfer task failed: {e}")),
    }
}

/// One transfer. A download up to `--part-size` is one GET into an exact buffer (the listing gave
/// its size: no HEAD), written beside the target and renamed; every download then takes the
/// object's LastModified as its mtime.
async fn transfer(
    ctx: &Context,
    copy: &Copy,
    modified: i64,
    counter: &TransferProgress,
) -> Result<(), CliError> {
    let Copy::Download(url, path, size, _) = copy else {
        return copy_one(ctx, copy, counter).await.map(|_| ());
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::local(format!("create {}", parent.display()), e))?;
    }
    let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(modified.max(0) as u64);
    let target = path.clone();
    let dated = if *size <= ctx.part_size as u64 {
        let bytes = ctx
            .client(url)?
            .get_bytes(&url.bucket, &url.key)
            .await
            .map_err(|e| CliError::s3(format!("download {url} to {}", path.display()), e))?;
        let n = bytes.len() as u64;
        // The buffer moves to the blocking pool: written from where it is, not copied, and the
        // runtime's threads never wait on the disk.
        let written = tokio::task::spawn_blocking(move || write_dated(&target, &bytes, time)).await;
        counter.add(n);
        written
    } else {
        copy_one(ctx, copy, counter).await?;
        tokio::task::spawn_blocking(move || {
            std::fs::File::options()
                .write(true)
                .open(&target)
                .and_then(|f| f.set_modified(time))
        })
        .await
    };
    dated
        .map_err(|e| {
            CliError::local(
                format!("write {}", path.display()),
                std::io::Error::other(e),
            )
        })?
        .map_err(|e| CliError::local(format!("write {}", path.display()), e))
}

/// Writes `bytes` to a temporary file beside `path`, dated `time`, and renames it over `path`: one
/// open, and no partial file under the name if anything fails.
fn write_dated(path: &Path, bytes: &[u8], time: SystemTime) -> std::io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    let temp = path.with_file_name(format!(".{name}.brisk-sync"));
    let result = std::fs::File::create(&temp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.set_modified(time)
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Deletes the destination entries collected (one DeleteObjects per bucket batch for objects).
async fn delete_all(
    ctx: &Context,
    targets: &mut Vec<Target>,
    dryrun: bool,
    progress: &Progress,
    summary: &mut Summary,
) {
    let mut objects: Vec<ObjectUrl> = Vec::new();
    for target in targets.drain(..) {
        if dryrun {
            report_delete(ctx, progress, &target, true);
            summary.deleted += 1;
            continue;
        }
        match target {
            Target::Local(path) => match std::fs::remove_file(&path) {
                Ok(()) => {
                    report_delete(ctx, progress, &Target::Local(path), false);
                    summary.deleted += 1;
                }
                Err(e) => summary
                    .failures
                    .push(CliError::local(format!("delete {}", path.display()), e).to_string()),
            },
            Target::Remote(url) => objects.push(url),
        }
    }
    let Some(first) = objects.first().cloned() else {
        return;
    };
    let keys: Vec<&str> = objects.iter().map(|u| u.key.as_str()).collect();
    let client = match ctx.client(&first) {
        Ok(c) => c,
        Err(e) => {
            summary.failures.push(e.to_string());
            return;
        }
    };
    match client.delete_many(&first.bucket, &keys).await {
        Ok(result) => {
            for e in &result.errors {
                summary.failures.push(format!(
                    "delete {}: {} {}",
                    first.with_key(e.key.clone()),
                    e.code,
                    e.message
                ));
            }
            for url in &objects {
                if !result.errors.iter().any(|e| e.key == url.key) {
                    report_delete(ctx, progress, &Target::Remote(url.clone()), false);
                    summary.deleted += 1;
                }
            }
        }
        Err(e) => summary
            .failures
            .push(CliError::s3(format!("delete under {first}"), e).to_string()),
    }
}

fn report_delete(ctx: &Context, progress: &Progress, target: &Target, dryrun: bool) {
    if ctx.quiet {
        return;
    }
    let line = if ctx.json {
        let mut v = json!({"action": "delete", "target": target.to_string()});
        if dryrun {
            v["dryrun"] = true.into();
        }
        v.to_string()
    } else if dryrun {
        format!("(dryrun) delete: {target}")
    } else {
        format!("delete: {target}")
    };
    progress.print_result(&line);
}

fn report_summary(ctx: &Context, summary: &Summary, started: Instant, dryrun: bool) {
    let seconds = started.elapsed().as_secs_f64();
    ctx.report(
        || {
            format!(
                "sync{}: {} transferred ({}), {} skipped, {} deleted, {} failed in {seconds:.1} s",
                if dryrun { " (dryrun)" } else { "" },
                summary.transferred,
                human(summary.bytes),
                summary.skipped,
                summary.deleted,
                summary.failures.len()
            )
        },
        || {
            json!({"type": "summary", "transferred": summary.transferred, "bytes": summary.bytes,
                   "skipped": summary.skipped, "deleted": summary.deleted,
                   "failed": summary.failures.len(), "seconds": seconds, "dryrun": dryrun})
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_walk_lists_files_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a-b", "a/c", "a/b/d", "a.txt", "z", "ü/x", "sp ace/y"] {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, name).unwrap();
        }
        let mut walk = LocalWalk::new(dir.path());
        let mut keys = Vec::new();
        while let Some(e) = walk.next().unwrap() {
            keys.push(e.key);
        }
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "byte order of the keys, as S3 lists them");
        assert_eq!(keys.len(), 7);
    }
}
