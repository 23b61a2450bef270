//! Uploads one file: a single PUT if it fits in one part, else a multipart upload from pooled blocks.
//!
//! `cargo run --release -p brisk-client --example upload -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k --file in.bin`
//!
//! `--payload signed|unsigned` chooses how parts are protected (default: the client's `Auto`, signed
//! over plain HTTP, unsigned with a checksum over TLS); unsigned parts go aws-chunked with the
//! CRC32C checksum as a trailer. `--parts-in-flight N` overrides the default of
//! [`brisk_client::transfer::DEFAULT_PARTS_IN_FLIGHT`].

#[path = "support/args.rs"]
mod args;

use std::path::Path;
use std::time::Instant;

use brisk_client::{PayloadSigning, TransferOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("upload: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), brisk_client::Error> {
    let args = args::Args::parse(
        "upload --endpoint-url URL --bucket NAME --key KEY --file PATH [--payload signed|unsigned] \
         [--parts-in-flight N] [--part-size SIZE]",
    );
    let part_size = match args.optional("part-size") {
        None => brisk_client::transfer::DEFAULT_PART_SIZE,
        Some(n) => brisk_mem::parse_size(n).map_err(|e| brisk_client::Error::InvalidArgument {
            what: format!("--part-size {n}: {e}"),
        })?,
    };
    let parts_in_flight = match args.optional("parts-in-flight") {
        None => brisk_client::transfer::DEFAULT_PARTS_IN_FLIGHT,
        Some(n) => n.parse().ok().filter(|&n: &usize| n > 0).ok_or_else(|| {
            brisk_client::Error::InvalidArgument {
                what: format!("--parts-in-flight {n}: expected a whole number from 1"),
            }
        })?,
    };
    let payload_signing = match args.optional("payload") {
        None => PayloadSigning::Auto,
        Some("signed") => PayloadSigning::Signed,
        Some("unsigned") => PayloadSigning::Unsigned,
        Some(other) => {
            return Err(brisk_client::Error::InvalidArgument {
                what: format!("--payload {other}: expected signed or unsigned"),
            });
        }
    };
    let client = args.client();
    let started = Instant::now();
    let result = client
        .upload(
            args.required("bucket"),
            args.required("key"),
            Path::new(args.required("file")),
            TransferOptions {
                payload_signing,
                parts_in_flight,
                part_size,
                ..TransferOptions::default()
            },
        )
        .await?;
    let elapsed = started.elapsed();
    println!(
        "upload: {} bytes in {} part(s) in {:.3} s ({:.2} GiB/s), ETag {}",
        result.size,
        result.parts,
        elapsed.as_secs_f64(),
        args::gib_per_s(result.size, elapsed),
        result.etag.as_deref().unwrap_or("(none)")
    );
    Ok(())
}
