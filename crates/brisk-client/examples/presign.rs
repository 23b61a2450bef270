//! Prints a presigned GET URL (or PUT, with `--method PUT`) for one object; no request is sent.
//!
//! `cargo run -p brisk-client --example presign -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k --expires-secs 3600`

#[path = "support/args.rs"]
mod args;

use std::time::Duration;

fn main() {
    if let Err(e) = run() {
        eprintln!("presign: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), brisk_client::Error> {
    let args = args::Args::parse(
        "presign --endpoint-url URL --bucket NAME --key KEY [--method GET|PUT] [--expires-secs N]",
    );
    let client = args.client();
    let expires = match args.optional("expires-secs") {
        Some(s) => Duration::from_secs(s.parse().unwrap_or_else(|_| {
            eprintln!("--expires-secs takes a number of seconds, not {s:?}");
            std::process::exit(2);
        })),
        None => Duration::from_secs(3600),
    };
    let (bucket, key) = (args.required("bucket"), args.required("key"));
    let url = match args.optional("method").unwrap_or("GET") {
        "GET" => client.presign_get(bucket, key, expires)?,
        "PUT" => client.presign_put(bucket, key, expires)?,
        other => {
            eprintln!("--method is GET or PUT, not {other:?}");
            std::process::exit(2);
        }
    };
    println!("presigned for {} s: {url}", expires.as_secs());
    Ok(())
}
