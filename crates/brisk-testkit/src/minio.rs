//! MinIO for a test: an S3 server nobody on this project wrote, so the client and the CLI are
//! checked against an independent implementation too. The binary comes from `BRISK_MINIO`, else
//! `<workspace>/.tools/bin/minio` (`scripts/install-minio`, which the test command runs).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::process::{clean_up_at_exit, free_port, wait_until_live, workspace_root};
use crate::{ACCESS_KEY, REGION, SECRET_KEY};

/// The MinIO binary the tests use.
pub fn binary() -> PathBuf {
    std::env::var_os("BRISK_MINIO")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".tools/bin/minio"))
}

/// A running MinIO; killed and reaped when dropped (see [`until_exit`](Self::until_exit) for one
/// that lives as long as the test process).
#[derive(Debug)]
pub struct MinioProcess {
    /// The server process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The port.
    pub port: u16,
}

impl MinioProcess {
    /// Starts MinIO on a free loopback port with `root` as its data directory and the test user
    /// ([`ACCESS_KEY`], [`SECRET_KEY`]), and waits (at most 60 s) until it answers.
    pub fn start(root: &Path) -> Self {
        Self::try_start(root, ACCESS_KEY, SECRET_KEY).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`start`](Self::start) with another root user, or why MinIO did not start.
    pub fn try_start(root: &Path, access_key: &str, secret_key: &str) -> Result<Self, String> {
        let binary = binary();
        if !binary.is_file() {
            return Err(format!(
                "MinIO not found at {}: run scripts/install-minio (or set BRISK_MINIO to a minio binary)",
                binary.display()
            ));
        }
        std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let port = free_port();
        let log = root.with_extension("minio.log");
        let log_file =
            std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(&binary)
            .args(["server", "--quiet", "--address"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["--console-address", "127.0.0.1:0"])
            .arg(root)
            .env("MINIO_ROOT_USER", access_key)
            .env("MINIO_ROOT_PASSWORD", secret_key)
            // A configured region makes MinIO refuse requests signed for another one, as S3 does.
            .env("MINIO_SITE_REGION", REGION)
            // Virtual-hosted requests (`bucket.localhost`) are recognised under this domain.
            .env("MINIO_DOMAIN", "localhost")
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let minio = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            port,
        };
        wait_until_live(port, "/minio/health/cluster").map_err(|e| {
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            format!("MinIO did not start: {e}\n{log_text}")
        })?;
        let _ = std::fs::remove_file(&log);
        Ok(minio)
    }

    /// A MinIO for the rest of the test process, in a temporary directory: the handle is never
    /// dropped, and a watchdog kills the server and removes its data once the process has exited.
    pub fn until_exit() -> Result<&'static Self, String> {
        let data = tempfile::Builder::new()
            .prefix("brisk-test-minio-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?
            .keep();
        let minio = Self::try_start(&data, ACCESS_KEY, SECRET_KEY)?;
        clean_up_at_exit(Some(minio.child.id()), &[&data]);
        Ok(Box::leak(Box::new(minio)))
    }
}

impl Drop for MinioProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
