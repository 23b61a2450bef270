//! The servers of brisk-server's socket-level tests, started through brisk-testkit's
//! `InProcessServe` on a root of the test's. The tests talk to them with brisk-testkit's raw
//! HTTP/1.1 client (`http::Connection`, which reuses its buffers so that allocation counts see the
//! server, not the client).

#![allow(dead_code)]

use std::path::Path;

use brisk_server::ServerConfig;
use brisk_testkit::serve::InProcessServe;

/// Starts an anonymous server without fsync in `root`.
pub fn start(root: &Path) -> InProcessServe {
    start_with(ServerConfig::new(root, None))
}

/// Starts a server with `config`, listening on 127.0.0.1:0 without fsync.
pub fn start_with(mut config: ServerConfig) -> InProcessServe {
    config.fsync = false;
    InProcessServe::with_config(config)
}

/// Starts an anonymous server with fsync on (the default), so large bodies take the `O_DIRECT` path.
pub fn start_durable(root: &Path) -> InProcessServe {
    InProcessServe::with_config(ServerConfig::new(root, None))
}

/// [`start`] on `runtime` (a test that counts the runtime's threads chooses how it keeps them).
pub fn start_on(root: &Path, runtime: tokio::runtime::Runtime) -> InProcessServe {
    let mut config = ServerConfig::new(root, None);
    config.fsync = false;
    InProcessServe::with_config_on(config, runtime)
}
