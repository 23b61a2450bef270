//! `brisk`: the command-line tool. `cp`, `mv`, `sync`, `ls`, `rm`, `mb`, `rb`, `cat` and `presign`
//! in the AWS CLI's conventions (`aws s3 ...`), on `brisk-client`, one module each under
//! [`commands`]; `serve` runs the embedded S3 server; `bench` measures both (see [`mod@bench`]).
//!
//! Errors print as one line on stderr (`brisk: <what failed>: <S3 code and message>; hint: ...`) and
//! end the process with a code by kind of failure (see [`exit`]).

// The doc comments of the argument structs are the `--help` text, where `<domain>` means a value
// to fill in, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod args;
mod bench;
mod commands;
mod context;
mod exit;
mod filter;
mod location;
mod progress;
mod serve;
mod size;
mod stream;

use std::process::ExitCode;

use clap::{ArgMatches, CommandFactory, FromArgMatches};

use crate::args::{Cli, Command};
use crate::exit::CliError;
use crate::filter::{FilterKind, Filters};

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let filters = matches
        .subcommand()
        .map(|(_, sub)| filters_in_order(sub))
        .unwrap_or_default();
    if let Command::Completions(args) = &cli.command {
        clap_complete::generate(
            args.shell,
            &mut Cli::command(),
            "brisk",
            &mut std::io::stdout(),
        );
        return ExitCode::SUCCESS;
    }
    init_events(cli.global.debug);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("brisk: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Command::Serve(args) = cli.command {
        return runtime.block_on(serve::serve(args));
    }
    if let Command::Bench(args) = cli.command {
        return runtime.block_on(bench::run(cli.global, args));
    }
    match runtime.block_on(commands::run(cli.global, cli.command, filters)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("brisk: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `--include` and `--exclude` merged in the order they were given (clap keeps each list apart, so
/// the order comes from their argument indices).
fn filters_in_order(sub: &ArgMatches) -> Filters {
    let mut rules: Vec<(usize, FilterKind, String)> = Vec::new();
    for (id, kind) in [
        ("include", FilterKind::Include),
        ("exclude", FilterKind::Exclude),
    ] {
        let Ok(Some(values)) = sub.try_get_many::<String>(id) else {
            continue;
        };
        let Some(indices) = sub.indices_of(id) else {
            continue;
        };
        rules.extend(indices.zip(values).map(|(i, v)| (i, kind, v.clone())));
    }
    rules.sort_by_key(|(i, _, _)| *i);
    Filters::new(rules.into_iter().map(|(_, k, v)| (k, v)).collect())
}

impl From<String> for CliError {
    fn from(usage: String) -> Self {
        CliError::Usage(usage)
    }
}

/// Sends the library's `tracing` events to stderr when asked: `RUST_LOG` (the usual filter syntax,
/// e.g. `brisk_client=debug`) or `--debug` (brisk's own crates at debug). With neither, no
/// subscriber is installed and an event costs one relaxed load.
fn init_events(debug: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => EnvFilter::new(spec),
        _ if debug => {
            EnvFilter::new("brisk=debug,brisk_client=debug,brisk_server=debug,brisk_wire=debug")
        }
        _ => return,
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_keep_command_line_order() {
        let m = Cli::command().get_matches_from([
            "brisk",
            "cp",
            "a",
            "s3://b/",
            "--recursive",
            "--exclude",
            "*",
            "--include",
            "*.txt",
            "--exclude",
            "tmp/*",
        ]);
        let (_, sub) = m.subcommand().unwrap();
        let f = filters_in_order(sub);
        assert!(f.selects("x.txt"));
        assert!(!f.selects("x.bin"));
        assert!(!f.selects("tmp/x.txt"));
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
