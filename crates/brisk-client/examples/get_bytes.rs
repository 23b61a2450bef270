//! Reads one object into memory: exactly its size, allocated once.
//!
//! `cargo run --release -p brisk-client --example get_bytes -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k`

#[path = "support/args.rs"]
mod args;

use std::time::Instant;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("get_bytes: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), brisk_client::Error> {
    let args = args::Args::parse("get_bytes --endpoint-url URL --bucket NAME --key KEY");
    let client = args.client();
    let started = Instant::now();
    let object = client
        .get_bytes(args.required("bucket"), args.required("key"))
        .await?;
    let elapsed = started.elapsed();
    println!(
        "get_bytes: {} bytes in {:.3} s ({:.2} GiB/s)",
        object.len(),
        elapsed.as_secs_f64(),
        args::gib_per_s(object.len() as u64, elapsed)
    );
    Ok(())
}
