//! `brisk serve`: the embedded S3 server on a directory.

use std::process::ExitCode;

use brisk_server::{AccessKey, Server, ServerConfig};

use crate::args::ServeArgs;

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

pub async fn serve(args: ServeArgs) -> ExitCode {
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
    config.limits.min_body_rate = args.min_body_rate as u64;
    config.log_format = match args.log_format.as_str() {
        "json" => brisk_server::LogFormat::Json,
        "off" => brisk_server::LogFormat::Off,
        _ => brisk_server::LogFormat::Plain,
    };
    if let (Some(cert), Some(key)) = (args.tls_cert, args.tls_key) {
        config.tls = Some(brisk_server::TlsFiles { cert, key });
    }
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
    if args.stop_on_stdin_eof {
        tokio::select! {
            _ = wait_for_signal() => {}
            _ = stdin_closed() => {}
        }
    } else {
        wait_for_signal().await;
    }
    server.shutdown().await;
    ExitCode::SUCCESS
}

/// Returns when standard input reaches its end (or fails): the parent holding the other end of the
/// pipe has closed it or died. Whatever is written to it is discarded.
async fn stdin_closed() {
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut sink = [0u8; 512];
    while let Ok(n) = stdin.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
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
    fn generated_keys_differ() {
        let (a, b) = (generate_key(), generate_key());
        assert_ne!(a.secret_access_key, b.secret_access_key);
        assert_eq!(a.secret_access_key.len(), 40);
    }
}
