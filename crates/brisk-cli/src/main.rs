//! `brisk`: the command-line tool. For now one subcommand, `serve`, runs the embedded S3 server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use brisk_server::{AccessKey, Server, ServerConfig};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "brisk",
    version,
    about = "Move objects to and from S3 with bounded memory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve a directory as an S3-compatible endpoint.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Directory holding buckets, objects and metadata (created if missing).
    #[arg(long)]
    root: PathBuf,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = brisk_server::config::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Access key id requests must be signed with (a random one is generated when neither key is given).
    #[arg(long, env = "BRISK_ACCESS_KEY", requires = "secret_key")]
    access_key: Option<String>,
    /// Secret access key.
    #[arg(
        long,
        env = "BRISK_SECRET_KEY",
        requires = "access_key",
        hide_env_values = true
    )]
    secret_key: Option<String>,
    /// Region of the credential scope and of GetBucketLocation.
    #[arg(long, default_value = brisk_server::config::DEFAULT_REGION)]
    region: String,
    /// Accept unsigned requests (local development only).
    #[arg(long)]
    anonymous: bool,
    /// Base domain of virtual-hosted-style requests (bucket.<domain>).
    #[arg(long, default_value = brisk_server::config::DEFAULT_BASE_DOMAIN)]
    base_domain: String,
    /// Read buffer per connection in bytes, or e.g. 64KiB, 1MiB.
    #[arg(long, default_value_t = brisk_server::config::DEFAULT_READ_BUFFER_SIZE, value_parser = parse_size)]
    read_buffer_size: usize,
    /// Do not fsync bodies and metadata (benchmarks and throwaway data only).
    #[arg(long)]
    no_fsync: bool,
    /// ETags are CRC-64/NVME instead of MD5 (cheaper; clients comparing MD5s will disagree).
    #[arg(long)]
    no_md5_etag: bool,
    /// Connections served at once.
    #[arg(long, default_value_t = brisk_server::config::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
}

/// Parses `64KiB`, `1MiB`, `4096`, `1GiB` (binary units; `K`, `KB` mean KiB too).
fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("unknown unit in {text:?} (use KiB, MiB or GiB)")),
    };
    n.checked_shl(shift)
        .filter(|v| v >> shift == n)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// A random key pair from the OS's randomness (std's hasher keys are seeded from it), printed at
/// start so the user can configure a client.
fn generate_key() -> AccessKey {
    use std::hash::{BuildHasher, RandomState};
    let word = || RandomState::new().hash_one(std::time::SystemTime::now());
    let hex = |n: usize| {
        (0..n)
            .map(|_| format!("{:016x}", word()))
            .collect::<String>()
    };
    AccessKey {
        access_key_id: format!("BRISK{}", &hex(1)[..15].to_ascii_uppercase()),
        secret_access_key: hex(3)[..40].to_owned(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Command::Serve(args) = cli.command;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("brisk: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> ExitCode {
    let (credentials, generated) = match (args.access_key, args.secret_key) {
        (Some(access_key_id), Some(secret_access_key)) => (
            AccessKey {
                access_key_id,
                secret_access_key,
            },
            false,
        ),
        _ => (generate_key(), true),
    };
    let mut config = ServerConfig::new(&args.root, Some(credentials.clone()));
    config.listen = args.listen;
    config.region = args.region;
    config.anonymous = args.anonymous;
    config.base_domain = args.base_domain;
    config.read_buffer_size = args.read_buffer_size;
    config.fsync = !args.no_fsync;
    config.md5_etag = !args.no_md5_etag;
    config.limits.max_connections = args.max_connections;
    let server = match Server::bind(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("brisk: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", server.url());
    if args.anonymous {
        println!("anonymous: requests are not authenticated");
    } else {
        let origin = if generated { "generated" } else { "configured" };
        println!("access key: {} ({origin})", credentials.access_key_id);
        println!("secret key: {}", credentials.secret_access_key);
    }
    wait_for_signal().await;
    server.shutdown().await;
    ExitCode::SUCCESS
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("KiB").is_err());
    }

    #[test]
    fn generated_keys_differ() {
        let (a, b) = (generate_key(), generate_key());
        assert_ne!(a.secret_access_key, b.secret_access_key);
        assert_eq!(a.secret_access_key.len(), 40);
    }
}
