//! The command line every example takes: `--endpoint-url URL --bucket NAME --key KEY`, plus
//! example-specific flags. Credentials and region come from the usual places (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, profiles), as the AWS CLI reads them.

#![allow(dead_code)] // each example uses a different part of this file

use std::collections::HashMap;
use std::time::Duration;

/// Parsed `--name value` pairs.
pub struct Args {
    values: HashMap<String, String>,
}

impl Args {
    /// Reads `--name value` pairs from the command line; exits with `usage` on anything else.
    pub fn parse(usage: &str) -> Self {
        let mut values = HashMap::new();
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let (Some(name), Some(value)) = (flag.strip_prefix("--"), args.next()) else {
                eprintln!("usage: {usage}");
                std::process::exit(2);
            };
            values.insert(name.to_owned(), value);
        }
        Self { values }
    }

    /// A flag's value, or exit with a message naming it.
    pub fn required(&self, name: &str) -> &str {
        self.values
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| {
                eprintln!("missing --{name}");
                std::process::exit(2);
            })
    }

    /// A flag's value, if given.
    pub fn optional(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A client for `--endpoint-url` (or the configured endpoint when absent).
    pub fn client(&self) -> brisk_client::Client {
        let mut builder = brisk_client::Client::builder();
        if let Some(url) = self.optional("endpoint-url") {
            builder = builder.endpoint(url);
        }
        builder.build().unwrap_or_else(|e| {
            eprintln!("client configuration: {e}");
            std::process::exit(1);
        })
    }
}

/// `TransferOptions::default()` with `--part-size BYTES` and `--parts-in-flight N` applied when given.
pub fn transfer_options(args: &Args) -> brisk_client::TransferOptions {
    let mut options = brisk_client::TransferOptions::default();
    let number = |name: &str| {
        args.optional(name).map(|v| {
            v.parse::<usize>().unwrap_or_else(|_| {
                eprintln!("--{name} takes a whole number, not {v:?}");
                std::process::exit(2);
            })
        })
    };
    if let Some(part_size) = number("part-size") {
        options.part_size = part_size;
    }
    if let Some(parts) = number("parts-in-flight") {
        options.parts_in_flight = parts;
    }
    options
}

/// `bytes` in `elapsed` as GiB/s.
pub fn gib_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / (1u64 << 30) as f64 / elapsed.as_secs_f64().max(1e-9)
}
