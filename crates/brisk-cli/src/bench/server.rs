//! The embedded server for a benchmark, run as a child process of the same binary
//! (`brisk serve --root <tmp> --listen 127.0.0.1:0`).
//!
//! A child and not a task in this process, so that the two sides are accounted apart: the client's
//! peak resident set must not include the server's buffers and files, and the server's growth while
//! it receives an upload is a figure of its own, read from `/proc/<pid>/status` as one would read
//! any other server's (the peers in `bench/` are measured from outside too).

use std::hash::{BuildHasher, RandomState};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use thiserror::Error;

/// How long the server may take to print its URL. It binds and opens its metadata in milliseconds;
/// this bounds a machine that is very busy, not a normal start.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the embedded server could not be used.
#[derive(Debug, Error)]
pub enum ServerError {
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the embedded server ended before printing its URL ({status})")]
    Exited { status: String },
    #[error("the embedded server printed no URL within {0:?}")]
    NoUrl(Duration),
    #[error("the embedded server printed {0:?} where its URL was expected")]
    BadUrl(String),
}

/// The server's settings that shape the figures, printed in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// Bodies and metadata are fsynced before a PUT is answered (`brisk serve`'s default).
    pub fsync: bool,
    /// ETags are MD5 digests of the body (`brisk serve`'s default).
    pub md5_etag: bool,
    /// Extra arguments given with `--server-arg`.
    pub extra_args: Vec<String>,
    /// Served over HTTPS (`brisk bench --tls`).
    pub tls: bool,
}

impl ServerSettings {
    /// The settings `brisk serve` runs with given `extra_args`.
    pub fn from_args(extra_args: &[String]) -> Self {
        Self {
            fsync: !extra_args.iter().any(|a| a == "--no-fsync"),
            md5_etag: !extra_args.iter().any(|a| a == "--no-md5-etag"),
            extra_args: extra_args.to_vec(),
            tls: false,
        }
    }

    /// The same settings, over HTTPS when `tls`.
    pub fn with_tls(self, tls: bool) -> Self {
        Self { tls, ..self }
    }

    /// How the report names the server: process, protocol, and the settings that change its cost.
    pub fn describe(&self) -> String {
        let on_off = |on: bool| if on { "on" } else { "off" };
        format!(
            "embedded server (child process, {}): fsync {}, MD5 ETags {}{}",
            if self.tls { "HTTPS" } else { "HTTP" },
            on_off(self.fsync),
            on_off(self.md5_etag),
            if self.extra_args.is_empty() {
                String::new()
            } else {
                format!(", extra args {}", self.extra_args.join(" "))
            }
        )
    }

    /// The settings in the JSON document.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "process": "child",
            "tls": self.tls,
            "fsync": self.fsync,
            "md5_etag": self.md5_etag,
            "extra_args": self.extra_args,
        })
    }
}

/// A self-signed certificate and its key for `brisk bench --tls`, written to the run's directory:
/// the server is given both, the benchmark's client trusts the certificate as its CA bundle.
#[derive(Debug)]
pub struct TlsFiles {
    pub certificate: std::path::PathBuf,
    pub key: std::path::PathBuf,
}

impl TlsFiles {
    /// Makes a certificate for 127.0.0.1 and localhost in `dir`.
    pub fn self_signed(dir: &Path) -> Result<Self, crate::exit::CliError> {
        let certified = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_owned(),
            "localhost".to_owned(),
        ])
        .map_err(|e| {
            crate::exit::CliError::local("make a self-signed certificate", std::io::Error::other(e))
        })?;
        let files = Self {
            certificate: dir.join("bench-cert.pem"),
            key: dir.join("bench-key.pem"),
        };
        for (path, pem) in [
            (&files.certificate, certified.cert.pem()),
            (&files.key, certified.key_pair.serialize_pem()),
        ] {
            std::fs::write(path, pem).map_err(|e| {
                crate::exit::CliError::local(format!("write {}", path.display()), e)
            })?;
        }
        Ok(files)
    }

    /// The arguments that make `brisk serve` use them.
    pub fn server_args(&self) -> [String; 4] {
        [
            "--tls-cert".to_owned(),
            self.certificate.display().to_string(),
            "--tls-key".to_owned(),
            self.key.display().to_string(),
        ]
    }
}

/// A random key pair for one run (std's hasher keys are seeded from the OS's randomness).
pub fn generate_keys() -> (String, String) {
    let word = || RandomState::new().hash_one(std::time::SystemTime::now());
    let secret: String = (0..3).map(|_| format!("{:016x}", word())).collect();
    (
        format!("BRISKBENCH{:010X}", word() & 0xff_ffff_ffff),
        secret[..40].to_owned(),
    )
}

/// A running `brisk serve` child; killed and reaped when dropped (normal end, error, Ctrl-C).
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    url: String,
    pub access_key: String,
    pub secret_key: String,
}

impl ServerProcess {
    /// Starts `<this binary> serve` on `root`, listening on a free port of 127.0.0.1, and waits for
    /// the URL it prints first.
    pub fn start(root: &Path, extra_args: &[String]) -> Result<Self, ServerError> {
        let program = std::env::current_exe().map_err(|source| ServerError::Spawn {
            program: "the brisk binary".into(),
            source,
        })?;
        let (access_key, secret_key) = generate_keys();
        let mut child = Command::new(&program)
            .arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(["--access-key", &access_key, "--secret-key", &secret_key])
            .args(extra_args)
            // Its access log would be interleaved with the benchmark's report on the same
            // terminal: off, unless asked for with --server-arg.
            .args(
                (!extra_args.iter().any(|a| a.starts_with("--log-format")))
                    .then_some(["--log-format", "off"])
                    .into_iter()
                    .flatten(),
            )
            // The server stops when this pipe closes, so it does not outlive a benchmark that is
            // killed with SIGKILL (a Ctrl-C or SIGTERM is handled and stops it explicitly).
            .arg("--stop-on-stdin-eof")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own process group: a Ctrl-C at the terminal reaches the benchmark only, which
            // then cleans up against a server that is still running, and stops it.
            .process_group(0)
            .spawn()
            .map_err(|source| ServerError::Spawn {
                program: program.display().to_string(),
                source,
            })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            // Keep draining so that the server never blocks on a full pipe.
            for _ in lines {}
        });
        let mut server = Self {
            child,
            url: String::new(),
            access_key,
            secret_key,
        };
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(Some(Ok(line))) if line.starts_with("http://") || line.starts_with("https://") => {
                server.url = line
            }
            Ok(Some(Ok(line))) => return Err(ServerError::BadUrl(line)),
            Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let status = server
                    .child
                    .wait()
                    .map_or_else(|e| e.to_string(), |s| s.to_string());
                return Err(ServerError::Exited { status });
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                return Err(ServerError::NoUrl(START_TIMEOUT));
            }
        }
        Ok(server)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The child's process id, for reading its `/proc` entries.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory of the run (server data, downloaded files), removed with everything in it when
/// dropped.
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    /// Creates `<parent>/brisk-bench-<pid>-<nanos>`.
    pub fn create(parent: &Path) -> std::io::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = parent.join(format!("brisk-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_follow_the_passthrough_arguments() {
        let default = ServerSettings::from_args(&[]);
        assert!(default.fsync && default.md5_etag);
        let fast = ServerSettings::from_args(&["--no-fsync".into(), "--no-md5-etag".into()]);
        assert!(!fast.fsync && !fast.md5_etag);
    }

    #[test]
    fn keys_are_random_and_of_the_usual_lengths() {
        let (a, b) = (generate_keys(), generate_keys());
        assert_ne!(a.1, b.1);
        assert_eq!(a.0.len(), 20);
        assert_eq!(a.1.len(), 40);
    }

    #[test]
    fn the_work_dir_is_removed_with_its_contents() {
        let dir = WorkDir::create(&std::env::temp_dir()).unwrap();
        let path = dir.path().to_owned();
        std::fs::create_dir(path.join("server")).unwrap();
        std::fs::write(path.join("server/x"), b"x").unwrap();
        drop(dir);
        assert!(!path.exists());
    }
}
