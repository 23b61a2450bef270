//! Reads one object into memory: exactly its size, allocated once. With `--rounds N` it reads the
//! object N times in turn, each buffer dropped before the next read (as a data loader's shards or
//! repeated checkpoint loads), and the last line gives the total.
//!
//! `cargo run --release -p brisk-client --example get_bytes -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k [--rounds N]`

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
    let args =
        args::Args::parse("get_bytes --endpoint-url URL --bucket NAME --key KEY [--rounds N]");
    let rounds: u32 = match args.optional("rounds").map(str::parse) {
        None => 1,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("get_bytes: --rounds takes a whole number above 0");
            std::process::exit(2);
        }
    };
    let client = args.client();
    let started = Instant::now();
    let mut total = 0u64;
    for round in 1..=rounds {
        let round_started = Instant::now();
        let object = client
            .get_bytes(args.required("bucket"), args.required("key"))
            .await?;
        total += object.len() as u64;
        if rounds > 1 {
            let elapsed = round_started.elapsed();
            println!(
                "round {round}: {} bytes in {:.3} s",
                object.len(),
                elapsed.as_secs_f64()
            );
        }
    }
    let elapsed = started.elapsed();
    println!(
        "get_bytes: {total} bytes in {:.3} s ({:.2} GiB/s)",
        elapsed.as_secs_f64(),
        args::gib_per_s(total, elapsed)
    );
    Ok(())
}
