//! Uploads one file: a single PUT if it fits in one part, else a multipart upload from pooled blocks.
//!
//! `cargo run --release -p brisk-client --example upload -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k --file in.bin`

#[path = "support/args.rs"]
mod args;

use std::path::Path;
use std::time::Instant;

use brisk_client::TransferOptions;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("upload: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), brisk_client::Error> {
    let args = args::Args::parse("upload --endpoint-url URL --bucket NAME --key KEY --file PATH");
    let client = args.client();
    let started = Instant::now();
    let result = client
        .upload(
            args.required("bucket"),
            args.required("key"),
            Path::new(args.required("file")),
            TransferOptions::default(),
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
