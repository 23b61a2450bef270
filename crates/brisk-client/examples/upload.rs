//! Uploads one file: a single PUT if it fits in one part, else a multipart upload from pooled blocks.
//!
//! `cargo run --release -p brisk-client --example upload -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k --file in.bin`
//!
//! `--payload signed|unsigned` chooses how parts are protected (default: the client's `Auto`, signed
//! over plain HTTP, unsigned with a checksum over TLS); unsigned parts go aws-chunked with the
//! CRC32C checksum as a trailer.

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
        "upload --endpoint-url URL --bucket NAME --key KEY --file PATH [--payload signed|unsigned]",
    );
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
