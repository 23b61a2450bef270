//! `latency-proxy --upstream HOST:PORT [--rtt-ms 2] [--first-byte-ms 0] [--serial] [--listen ADDR]`
//!
//! Forwards every connection made to it to the upstream server with a round trip and a first-byte
//! latency added (the crate's documentation says how). Prints `LISTENING ADDR` once it accepts
//! connections, then runs until it is killed; the benchmark starts one in front of the server and
//! points every client at it.

use std::net::SocketAddr;
use std::time::Duration;

use latency_proxy::{Mode, Model};

const USAGE: &str = "latency-proxy --upstream HOST:PORT [--rtt-ms 2] [--first-byte-ms 0] [--serial] \
                     [--listen 127.0.0.1:0]";

fn main() {
    let mut upstream: Option<SocketAddr> = None;
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    let mut model = Model {
        rtt: Duration::ZERO,
        first_byte: Duration::ZERO,
        mode: Mode::Parallel,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| fail(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--upstream" => upstream = Some(parse(&value(), "--upstream")),
            "--listen" => listen = parse(&value(), "--listen"),
            "--rtt-ms" => model.rtt = millis(&value()),
            "--first-byte-ms" => model.first_byte = millis(&value()),
            "--serial" => model.mode = Mode::Serial,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => fail(&format!("unknown argument {other}")),
        }
    }
    let upstream = upstream.unwrap_or_else(|| fail("--upstream is required"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let proxy = latency_proxy::start(listen, upstream, model)
            .await
            .unwrap_or_else(|e| fail(&format!("listen on {listen}: {e}")));
        println!("LISTENING {}", proxy.addr);
        std::future::pending::<()>().await;
    });
}

fn parse<T: std::str::FromStr>(text: &str, flag: &str) -> T {
    text.parse()
        .unwrap_or_else(|_| fail(&format!("{flag}: cannot read {text:?}")))
}

fn millis(text: &str) -> Duration {
    let ms: f64 = parse(text, "a duration in milliseconds");
    if !(0.0..=60_000.0).contains(&ms) {
        fail(&format!("{ms} ms: between 0 and 60000"));
    }
    Duration::from_secs_f64(ms / 1000.0)
}

fn fail(message: &str) -> ! {
    eprintln!("latency-proxy: {message}\n{USAGE}");
    std::process::exit(2);
}
