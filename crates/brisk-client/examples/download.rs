//! Downloads one object to a file with parallel ranged GETs from pooled blocks.
//!
//! `cargo run --release -p brisk-client --example download -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k --file out.bin [--part-size BYTES] [--parts-in-flight N]`

#[path = "support/args.rs"]
mod args;

use std::path::Path;
use std::time::Instant;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("download: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), brisk_client::Error> {
    let args = args::Args::parse(
        "download --endpoint-url URL --bucket NAME --key KEY --file PATH [--part-size BYTES] [--parts-in-flight N]",
    );
    let client = args.client();
    let started = Instant::now();
    let size = client
        .download(
            args.required("bucket"),
            args.required("key"),
            Path::new(args.required("file")),
            args::transfer_options(&args),
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
