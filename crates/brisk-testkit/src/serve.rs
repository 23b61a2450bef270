//! `brisk serve` for a test, with the test user ([`ACCESS_KEY`], [`SECRET_KEY`]) on a free loopback
//! port:
//!
//! - [`ServeCommand`] starts a `brisk` binary as a child process ([`ServeProcess`], killed when
//!   dropped): the CLI's tests, which test that binary, and measurements that must not count the
//!   server in the test's process (memory, CPU).
//! - `InProcessServe` (feature `servers`) runs the server of the brisk-server library on a runtime
//!   of its own in the test's process: brisk-client's tests, which then need no prebuilt binary,
//!   and brisk-server's, with a configuration of their own.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::{ACCESS_KEY, SECRET_KEY};

/// How to run `brisk serve` from a binary.
#[derive(Debug)]
pub struct ServeCommand {
    binary: PathBuf,
    wrapper: Vec<String>,
    args: Vec<String>,
    stderr: Option<Stdio>,
}

impl ServeCommand {
    /// `<binary> serve --listen 127.0.0.1:0 --access-key … --secret-key … --log-format off`.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            wrapper: Vec::new(),
            args: Vec::new(),
            stderr: None,
        }
    }

    /// More arguments of `brisk serve` (`--anonymous`, `--no-fsync`, `--log-format json`, …).
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Where the server's standard error (its access log) goes; by default the test's.
    pub fn stderr(mut self, stderr: Stdio) -> Self {
        self.stderr = Some(stderr);
        self
    }

    /// Runs the server through `wrapper` (a command that ends by executing its arguments, such as
    /// `unshare`): the binary and its arguments are appended to it. The wrapper must `exec`, so that
    /// the child's pid is the server's.
    pub fn wrapper(mut self, wrapper: &[&str]) -> Self {
        self.wrapper = wrapper.iter().map(|a| (*a).to_owned()).collect();
        self
    }

    /// Starts the server on `root` and waits (at most 30 s) for the URL it prints first.
    ///
    /// # Panics
    ///
    /// If the server does not start or prints no URL in time.
    pub fn start(self, root: &Path) -> ServeProcess {
        let mut command = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&self.binary);
                c
            }
            None => Command::new(&self.binary),
        };
        let quiet = !self.args.iter().any(|a| a.starts_with("--log-format"));
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(root)
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            // Quiet in test output unless a test asks for the access log.
            .args(
                quiet
                    .then_some(["--log-format", "off"])
                    .into_iter()
                    .flatten(),
            )
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(self.stderr.unwrap_or_else(Stdio::inherit))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {} serve: {e}", self.binary.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let mut server = ServeProcess {
            child,
            url: String::new(),
        };
        server.url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("brisk serve prints its URL within 30 s")
            .trim()
            .trim_end_matches('/')
            .to_owned();
        assert!(
            server.url.starts_with("http://127.0.0.1:")
                || server.url.starts_with("https://127.0.0.1:"),
            "brisk serve printed {:?}, not its URL",
            server.url
        );
        server
    }
}

/// A running `brisk serve` process; killed (SIGKILL) and reaped when dropped.
#[derive(Debug)]
pub struct ServeProcess {
    /// The server process (or its wrapper's, which became the server's by `exec`).
    pub child: Child,
    /// `http://127.0.0.1:PORT` (`https://` with TLS), the URL it printed.
    pub url: String,
}

impl ServeProcess {
    /// The port it listens on.
    pub fn port(&self) -> u16 {
        crate::process::port_of(&self.url)
    }

    /// Kills the server with SIGKILL now (crash tests).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(feature = "servers")]
pub use in_process::{InProcessServe, THREAD_NAME};

#[cfg(feature = "servers")]
mod in_process {
    use std::net::SocketAddr;
    use std::path::{Path, PathBuf};

    use brisk_server::{AccessKey, LogFormat, RunningServer, Server, ServerConfig};

    use crate::{ACCESS_KEY, REGION, SECRET_KEY};

    /// The name of the in-process server's threads, so that a test counting the process's threads
    /// can tell them from its own.
    pub const THREAD_NAME: &str = "brisk-serve";

    /// `brisk serve` in this process: the brisk-server library on a multi-thread runtime of two
    /// workers (threads named [`THREAD_NAME`]), without fsync and without an access log, on a
    /// temporary directory that is removed when the handle is dropped or, for a server kept in a
    /// static, once the test process has exited. brisk-server's own tests start it with a
    /// configuration of theirs ([`with_config`](Self::with_config)): their root, credentials (or
    /// none), fsync and limits.
    #[derive(Debug)]
    pub struct InProcessServe {
        /// `http://127.0.0.1:PORT`.
        pub url: String,
        /// The port.
        pub port: u16,
        server: Option<RunningServer>,
        runtime: Option<tokio::runtime::Runtime>,
        root: PathBuf,
        /// Whether `root` is the launcher's temporary directory, removed with the server.
        owns_root: bool,
    }

    impl InProcessServe {
        /// Starts a server for the test user ([`ACCESS_KEY`], [`SECRET_KEY`]), or an anonymous one
        /// (`--anonymous`: unsigned requests accepted).
        pub fn start(anonymous: bool) -> Self {
            Self::start_with(|config| config.anonymous = anonymous)
        }

        /// Starts a server whose configuration `configure` adjusts (after the defaults above are set;
        /// the listening address and root are the launcher's).
        pub fn start_with(configure: impl FnOnce(&mut ServerConfig)) -> Self {
            let root = tempfile::Builder::new()
                .prefix("brisk-test-serve-")
                .tempdir()
                .expect("a temporary directory")
                .keep();
            crate::process::clean_up_at_exit(None, &[&root]);
            let mut config = ServerConfig::new(
                &root,
                Some(AccessKey {
                    access_key_id: ACCESS_KEY.to_owned(),
                    secret_access_key: SECRET_KEY.to_owned(),
                }),
            );
            config.region = REGION.to_owned();
            config.fsync = false;
            config.log_format = LogFormat::Off;
            configure(&mut config);
            config.root = root;
            let mut serve = Self::with_config(config);
            serve.owns_root = true;
            serve
        }

        /// Starts a server of exactly `config` (the caller's root, which stays when the server is
        /// dropped; its credentials, fsync and limits) but for the listening address, a free port on
        /// 127.0.0.1, on the same runtime as [`start`](Self::start).
        pub fn with_config(config: ServerConfig) -> Self {
            Self::with_config_on(config, runtime())
        }

        /// [`with_config`](Self::with_config) on `runtime` (a test that counts the runtime's
        /// threads chooses how it keeps them).
        pub fn with_config_on(mut config: ServerConfig, runtime: tokio::runtime::Runtime) -> Self {
            config.listen = "127.0.0.1:0".parse().expect("a socket address");
            let root = config.root.clone();
            // Bound on a thread of its own: the caller may be a runtime's thread (a server kept in
            // a static starts in whichever test uses it first), where blocking on another runtime
            // is not allowed.
            let (runtime, server) = std::thread::spawn(move || {
                let server = runtime.block_on(Server::bind(config));
                (runtime, server)
            })
            .join()
            .expect("the in-process server's starting thread");
            let server =
                server.unwrap_or_else(|e| panic!("starting the in-process brisk serve: {e}"));
            Self {
                url: server.url(),
                port: server.local_addr().port(),
                server: Some(server),
                runtime: Some(runtime),
                root,
                owns_root: false,
            }
        }

        /// The address it listens on.
        pub fn local_addr(&self) -> SocketAddr {
            self.running().local_addr()
        }

        /// The running server (its scratch buffers' statistics, for one).
        pub fn running(&self) -> &RunningServer {
            self.server.as_ref().expect("a server until dropped")
        }

        /// Shuts the server down gracefully (what dropping it does outside a runtime), so that a
        /// test ends with every connection closed and every write finished.
        pub fn shutdown(self) {
            drop(self);
        }

        /// The directory it stores into.
        pub fn root(&self) -> &Path {
            &self.root
        }

        /// Threads of this process that are this server's (or another in-process server's): named
        /// [`THREAD_NAME`]. A test counting the process's threads subtracts them.
        pub fn threads(&self) -> u64 {
            let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
                return 0;
            };
            tasks
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.trim_end() == THREAD_NAME)
                .count() as u64
        }

        /// Sockets this process holds on the server's side: its listener and the connections it
        /// accepted (TCP sockets of this process whose local port is the server's). A test counting
        /// the process's sockets subtracts them.
        pub fn sockets(&self) -> u64 {
            let mut inodes = Vec::new();
            for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
                let Ok(text) = std::fs::read_to_string(table) else {
                    continue;
                };
                for line in text.lines().skip(1) {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let port = fields
                        .get(1)
                        .and_then(|local| local.rsplit_once(':'))
                        .and_then(|(_, port)| u16::from_str_radix(port, 16).ok());
                    if port == Some(self.port)
                        && let Some(inode) = fields.get(9)
                    {
                        inodes.push(format!("socket:[{inode}]"));
                    }
                }
            }
            let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
                return 0;
            };
            fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
                .filter(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
                .count() as u64
        }
    }

    impl Drop for InProcessServe {
        fn drop(&mut self) {
            if let (Some(server), Some(runtime)) = (self.server.take(), self.runtime.take()) {
                // A graceful shutdown needs to block, which a runtime's thread may not.
                if tokio::runtime::Handle::try_current().is_err() {
                    runtime.block_on(server.shutdown());
                } else {
                    drop(server);
                }
                runtime.shutdown_background();
            }
            if self.owns_root {
                let _ = std::fs::remove_dir_all(&self.root);
            }
        }
    }

    /// The runtime of a server this module starts: two workers named [`THREAD_NAME`].
    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(THREAD_NAME)
            .enable_all()
            .build()
            .expect("the in-process server's runtime")
    }
}
