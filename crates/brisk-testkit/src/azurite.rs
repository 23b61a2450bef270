//! Azurite, Microsoft's Azure Storage emulator, for a test: the independent Azure Blob server the
//! Azure dialect is checked against. The `azurite-blob` script comes from `BRISK_AZURITE`, else
//! `<workspace>/.tools/azurite/node_modules/.bin/azurite-blob` (`scripts/install-azurite`, which the
//! test command runs). It is started with `--disableTelemetry` (nothing leaves the machine), on
//! 127.0.0.1 and a free port, with its data in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::process::{clean_up_at_exit, free_port, wait_until_answering, workspace_root};

/// The emulator's well-known development account (the same in every Azurite).
pub const ACCOUNT: &str = "devstoreaccount1";
/// The development account's well-known key (published by Microsoft; not a secret).
pub const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The `azurite-blob` script the tests use.
pub fn binary() -> PathBuf {
    std::env::var_os("BRISK_AZURITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".tools/azurite/node_modules/.bin/azurite-blob"))
}

/// A running Azurite blob service; killed and reaped when dropped.
#[derive(Debug)]
pub struct AzuriteProcess {
    /// The server process.
    pub child: Child,
    /// The blob endpoint of the development account: `http://127.0.0.1:PORT/devstoreaccount1`.
    pub url: String,
    /// The port.
    pub port: u16,
}

impl AzuriteProcess {
    /// Starts Azurite's blob service on a free loopback port with its data in `location`, and waits
    /// (at most 60 s) until it answers.
    pub fn start(location: &Path) -> Self {
        Self::try_start(location).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`start`](Self::start) with the blobs kept in Azurite's memory (`--inMemoryPersistence`)
    /// instead of on disk (`location` then holds only the start-up log): for tests that store a GiB or more, so that they do not
    /// also need that much free disk.
    pub fn start_in_memory(location: &Path) -> Self {
        Self::launch(location, true).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`start`](Self::start), or why Azurite did not start.
    pub fn try_start(location: &Path) -> Result<Self, String> {
        Self::launch(location, false)
    }

    fn launch(location: &Path, in_memory: bool) -> Result<Self, String> {
        let binary = binary();
        if !binary.is_file() {
            return Err(format!(
                "Azurite not found at {}: run scripts/install-azurite (or set BRISK_AZURITE to an azurite-blob script)",
                binary.display()
            ));
        }
        std::fs::create_dir_all(location).map_err(|e| format!("{}: {e}", location.display()))?;
        let port = free_port();
        let log = location.with_extension("azurite.log");
        let log_file =
            std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut command = Command::new(&binary);
        command
            .args(["--blobHost", "127.0.0.1", "--blobPort"])
            .arg(port.to_string())
            .args(["--skipApiVersionCheck", "--disableTelemetry", "--silent"]);
        // Azurite refuses `--location` beside `--inMemoryPersistence`.
        if in_memory {
            command.arg("--inMemoryPersistence");
        } else {
            command.arg("--location").arg(location);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let azurite = Self {
            child,
            url: format!("http://127.0.0.1:{port}/{ACCOUNT}"),
            port,
        };
        wait_until_answering(port, &format!("/{ACCOUNT}?comp=list")).map_err(|e| {
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            format!("Azurite did not start: {e}\n{log_text}")
        })?;
        let _ = std::fs::remove_file(&log);
        Ok(azurite)
    }

    /// An Azurite for the rest of the test process, in a temporary directory: the handle is never
    /// dropped, and a watchdog kills the server and removes its data once the process has exited.
    pub fn until_exit() -> Result<&'static Self, String> {
        let data = tempfile::Builder::new()
            .prefix("brisk-test-azurite-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?
            .keep();
        let azurite = Self::try_start(&data)?;
        clean_up_at_exit(Some(azurite.child.id()), &[&data]);
        Ok(Box::leak(Box::new(azurite)))
    }

    /// The connection string of the development account on this emulator, as
    /// `AZURE_STORAGE_CONNECTION_STRING` takes it.
    pub fn connection_string(&self) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};BlobEndpoint={};",
            self.url
        )
    }
}

impl Drop for AzuriteProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
