//! Downloads one object to a file with parallel ranged GETs from pooled blocks.
//!
//! `cargo run --release -p brisk-client --example download -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k --file out.bin`

#[path = "support/args.rs"]
mod args;

use std::path::Path;
use std::time::Instant;

use brisk_client::TransferOptions;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("download: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), brisk_client::Error> {
    let args = args::Args::parse("download --endpoint-url URL --bucket NAME --key KEY --file PATH");
    let client = args.client();
    let started = Instant::now();
    let size = client
        .download(
            args.required("bucket"),
            args.required("key"),
            Path::new(args.required("file")),
            TransferOptions::default(),
        )
        .await?;
    let elapsed = started.elapsed();
    println!(
        "download: {size} bytes to {} in {:.3} s ({:.2} GiB/s)",
        args.required("file"),
        elapsed.as_secs_f64(),
        args::gib_per_s(size, elapsed)
    );
    Ok(())
}
