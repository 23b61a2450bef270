//! MinIO in distributed mode for a test: [`NODES`] `minio server` processes with
//! [`DRIVES_PER_NODE`] drive folders each, one erasure set of 8 drives at `EC:4` (4 data and 4
//! parity shards per object, so an object takes twice its size on the drives). MinIO's write quorum
//! there is 5 drives and its read quorum 4: with one node (2 drives) down, objects are still read
//! and written. The nodes run as the single [`MinioProcess`](crate::minio::MinioProcess) does (same
//! binary, root user, region and environment), plus `MINIO_CI_CD=1`, without which MinIO refuses
//! drives on the root file system. A cluster forms in about 5 s.
//!
//! **A network namespace.** MinIO refuses to form a cluster on loopback addresses when it sees a
//! container marker (`/.dockerenv`, present on the machines the tests run on), so the nodes listen
//! on 10.77.0.1, an address the kit gives to the `lo` of a network namespace it creates for the
//! cluster (`ip netns add brisk-<pid>-<n>`), on ports 9001 to 9004, started with `ip netns exec`.
//! Each cluster has a namespace of its own, so clusters of one test binary running at once (cargo
//! runs tests in parallel) never see each other, nor those of other test processes. This needs
//! root (or `CAP_SYS_ADMIN`) and `ip` (iproute2); where a namespace cannot be made,
//! [`MinioCluster::start`] answers [`ClusterError::Unsupported`] and
//! [`MinioCluster::start_or_skip`] says so on the test process's standard error, past the test
//! harness's capture so that a CI log shows whether the cluster tests ran.
//!
//! **A loopback forwarder for the clients.** The clients stay in the test's own namespace: for each
//! node the kit listens on `127.0.0.1:<free port>` and one thread of the test process, which alone
//! entered the cluster's namespace (`setns`), makes the connections to the node from there and
//! copies the bytes both ways. Chosen over running the clients with `ip netns exec` because a
//! test's in-process client (brisk-client on the test's own tokio runtime) cannot be moved into a
//! namespace that way, and because every client, in process or the `brisk` CLI, then sees the
//! cluster as it would see any S3 service: one `http://127.0.0.1:PORT` per node
//! ([`MinioCluster::endpoints`]), to pass one of or all four of. The forwarder counts the bytes it
//! carries per node ([`MinioCluster::traffic`]), so a test can kill a node when a transfer is
//! halfway rather than after a guessed time. What it changes for a client: a killed node's
//! endpoint still accepts connections (the listener stays) and resets each at once, where a
//! machine that lost its server would refuse them; and a node killed under an open connection
//! shows as that connection reset or closed, as it would.
//!
//! **Cleanup.** Dropping the cluster kills the nodes, stops the forwarder, deletes the namespace
//! and removes the drives, also when a test panics (the cluster is dropped as the panic unwinds).
//! When the test process ends without that (killed, aborted), a watchdog shell started with the
//! cluster, in a process group of its own so that it outlives a kill of the test's group, kills
//! whatever runs in the namespace, deletes it and removes the drives. Starting a cluster also
//! deletes the namespaces left by test processes that no longer run.

use std::fs::File;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::minio::binary;
use crate::process::wait_until_live;
use crate::{ACCESS_KEY, REGION, SECRET_KEY};

/// Nodes of a cluster.
pub const NODES: usize = 4;
/// Drive folders per node.
pub const DRIVES_PER_NODE: usize = 2;
/// The address the nodes listen on, on the `lo` of the cluster's namespace.
pub const NODE_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The port of the first node in the namespace; node `i` (0-based) listens on `FIRST_PORT + i`.
pub const FIRST_PORT: u16 = 9001;

/// Where `ip netns add` puts the namespaces' names.
const NETNS_DIR: &str = "/var/run/netns";
/// Prefix of the namespaces' names: `brisk-<pid>-<n>`.
const NETNS_PREFIX: &str = "brisk-";
/// The forwarder's copy buffer per direction of a connection.
const COPY_BUFFER: usize = 256 * 1024;

/// Kills every process in namespace `$1` and deletes it, then removes `$2` when given.
const TEAR_DOWN: &str = "for p in $(ip netns pids \"$1\" 2>/dev/null); do kill -9 \"$p\" 2>/dev/null; done\n\
     ip netns delete \"$1\" 2>/dev/null\n\
     if [ -n \"$2\" ]; then rm -rf \"$2\"; fi";

/// Why a cluster did not start.
#[derive(Debug)]
pub enum ClusterError {
    /// This machine cannot run one (no `ip`, or no right to make a network namespace): the tests
    /// skip.
    Unsupported(String),
    /// It should have started and did not: the tests fail.
    Failed(String),
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unsupported(why) => write!(f, "no MinIO cluster on this machine: {why}"),
            Self::Failed(why) => write!(f, "the MinIO cluster did not start: {why}"),
        }
    }
}

/// Bytes the forwarder carried for one node since the cluster started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traffic {
    /// From the clients to the node (request heads and upload bodies).
    pub to_node: u64,
    /// From the node to the clients (response heads and download bodies).
    pub from_node: u64,
}

#[derive(Debug, Default)]
struct Counters {
    to_node: AtomicU64,
    from_node: AtomicU64,
}

#[derive(Debug)]
struct Node {
    /// The `ip netns exec ... minio server` process (MinIO itself once `ip` has executed it);
    /// `None` while the node is killed.
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`, the forwarder's listener for this node.
    endpoint: String,
    /// The forwarder's port.
    local_port: u16,
    /// Its standard error, appended to by each start.
    log: PathBuf,
}

/// A running cluster; everything it made is removed when it is dropped (see the module docs).
#[derive(Debug)]
pub struct MinioCluster {
    namespace: String,
    root: PathBuf,
    /// The drives, as every node is given them (`http://10.77.0.1:PORT/ROOT/nI/dJ`).
    drives: Vec<String>,
    nodes: Vec<Node>,
    forwarder: Option<Forwarder>,
    formed_in: std::time::Duration,
}

impl MinioCluster {
    /// Starts a cluster in a new network namespace and waits (at most 60 s per node) until every
    /// node answers that the cluster has its write quorum.
    pub fn start() -> Result<Self, ClusterError> {
        let began = Instant::now();
        let binary = binary();
        if !binary.is_file() {
            return Err(ClusterError::Failed(format!(
                "MinIO not found at {}: run scripts/install-minio (or set BRISK_MINIO to a minio binary)",
                binary.display()
            )));
        }
        remove_stale_namespaces();
        let namespace = new_namespace()?;
        // From here on, dropping `cluster` undoes what was made, whatever fails next.
        let mut cluster = Self {
            namespace,
            root: PathBuf::new(),
            drives: Vec::new(),
            nodes: Vec::new(),
            forwarder: None,
            formed_in: Default::default(),
        };
        let failed = ClusterError::Failed;
        let ns = cluster.namespace.clone();
        ip(&["-n", &ns, "link", "set", "lo", "up"]).map_err(failed)?;
        let address = format!("{NODE_ADDRESS}/32");
        ip(&["-n", &ns, "addr", "add", &address, "dev", "lo"]).map_err(failed)?;
        cluster.root = tempfile::Builder::new()
            .prefix("brisk-test-cluster-")
            .tempdir()
            .map_err(|e| failed(format!("temp dir: {e}")))?
            .keep();
        clean_up_at_exit(&ns, &cluster.root);

        let mut listeners = Vec::new();
        for i in 0..NODES {
            let port = FIRST_PORT + i as u16;
            for j in 1..=DRIVES_PER_NODE {
                let drive = cluster.root.join(format!("n{}/d{j}", i + 1));
                std::fs::create_dir_all(&drive)
                    .map_err(|e| failed(format!("{}: {e}", drive.display())))?;
                cluster
                    .drives
                    .push(format!("http://{NODE_ADDRESS}:{port}{}", drive.display()));
            }
            let listener = std::net::TcpListener::bind("127.0.0.1:0")
                .map_err(|e| failed(format!("bind a loopback port: {e}")))?;
            let local_port = listener
                .local_addr()
                .map_err(|e| failed(e.to_string()))?
                .port();
            listeners.push((
                listener,
                SocketAddr::V4(SocketAddrV4::new(NODE_ADDRESS, port)),
            ));
            cluster.nodes.push(Node {
                child: None,
                endpoint: format!("http://127.0.0.1:{local_port}"),
                local_port,
                log: cluster.root.join(format!("n{}.log", i + 1)),
            });
        }
        cluster.forwarder = Some(Forwarder::start(&ns, listeners).map_err(failed)?);
        for i in 0..NODES {
            cluster.spawn(i).map_err(failed)?;
        }
        for i in 0..NODES {
            cluster.wait_until_in_quorum(i).map_err(failed)?;
        }
        cluster.formed_in = began.elapsed();
        Ok(cluster)
    }

    /// [`start`](Self::start) for the test `test`: `None`, after saying why on standard error,
    /// where this machine cannot run a cluster; a panic when it should have started and did not.
    /// Either way one line goes to the process's standard error past the test harness's capture, so
    /// that a CI log shows whether the cluster tests ran or skipped.
    pub fn start_or_skip(test: &str) -> Option<Self> {
        match Self::start() {
            Ok(cluster) => {
                say(&format!(
                    "{test}: MinIO cluster of {NODES} nodes x {DRIVES_PER_NODE} drives in network \
                     namespace {}, formed in {:.1} s",
                    cluster.namespace,
                    cluster.formed_in.as_secs_f64()
                ));
                Some(cluster)
            }
            Err(ClusterError::Unsupported(why)) => {
                say(&format!(
                    "SKIPPED {test}: no MinIO cluster on this machine: {why}"
                ));
                None
            }
            Err(e @ ClusterError::Failed(_)) => panic!("{test}: {e}"),
        }
    }

    /// Each node's endpoint, `http://127.0.0.1:PORT`, in node order.
    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.endpoint.clone()).collect()
    }

    /// Node `node`'s endpoint (0-based).
    pub fn endpoint(&self, node: usize) -> &str {
        &self.nodes[node].endpoint
    }

    /// The cluster's network namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The directory holding the drives (`nI/dJ`) and the nodes' logs.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How long the cluster took to start and form.
    pub fn formed_in(&self) -> std::time::Duration {
        self.formed_in
    }

    /// Bytes the forwarder carried for node `node` so far.
    pub fn traffic(&self, node: usize) -> Traffic {
        let counters = &self.forwarder.as_ref().expect("forwarder").counters[node];
        Traffic {
            to_node: counters.to_node.load(Ordering::Relaxed),
            from_node: counters.from_node.load(Ordering::Relaxed),
        }
    }

    /// Whether node `node` runs (it was not killed, or was restarted since).
    pub fn is_running(&self, node: usize) -> bool {
        self.nodes[node].child.is_some()
    }

    /// Kills node `node` with SIGKILL, as a crash or a power cut would end it, and reaps it. Its
    /// drives keep what they hold.
    pub fn kill(&mut self, node: usize) {
        if let Some(mut child) = self.nodes[node].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts node `node` again on the same drives and waits until it answers that the cluster has
    /// its write quorum (at most 60 s).
    pub fn restart(&mut self, node: usize) -> Result<(), String> {
        if self.nodes[node].child.is_some() {
            return Err(format!("node {} is running", node + 1));
        }
        self.spawn(node)?;
        self.wait_until_in_quorum(node)
    }

    /// Bytes of the files under the drives (the nodes' logs left out): what the cluster holds on
    /// disk now.
    pub fn disk_usage(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return 0;
            };
            entries
                .flatten()
                .map(|entry| match entry.file_type() {
                    Ok(t) if t.is_dir() => walk(&entry.path()),
                    Ok(t) if t.is_file() => entry.metadata().map_or(0, |m| m.len()),
                    _ => 0,
                })
                .sum()
        }
        (1..=NODES)
            .map(|i| walk(&self.root.join(format!("n{i}"))))
            .sum()
    }

    /// Removes what MinIO moved to its drives' trash (`.minio.sys/tmp/.trash`): the data of deleted
    /// objects, which MinIO purges on its own only later (not within minutes here), so that a test
    /// that deletes an object to make room on the disk gets the room. Safe while the nodes run:
    /// nothing refers to the trash's contents any more. Returns the bytes removed.
    pub fn empty_trash(&self) -> u64 {
        let before = self.disk_usage();
        for i in 1..=NODES {
            for j in 1..=DRIVES_PER_NODE {
                let trash = self.root.join(format!("n{i}/d{j}/.minio.sys/tmp/.trash"));
                let Ok(entries) = std::fs::read_dir(&trash) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    let _ = if path.is_dir() {
                        std::fs::remove_dir_all(&path)
                    } else {
                        std::fs::remove_file(&path)
                    };
                }
            }
        }
        before.saturating_sub(self.disk_usage())
    }

    /// The last `bytes` of node `node`'s log.
    pub fn log_tail(&self, node: usize, bytes: usize) -> String {
        let text = std::fs::read(&self.nodes[node].log).unwrap_or_default();
        String::from_utf8_lossy(&text[text.len().saturating_sub(bytes)..]).into_owned()
    }

    fn spawn(&mut self, node: usize) -> Result<(), String> {
        let binary = binary();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.nodes[node].log)
            .map_err(|e| format!("{}: {e}", self.nodes[node].log.display()))?;
        let port = FIRST_PORT + node as u16;
        let child = Command::new("ip")
            .args(["netns", "exec", &self.namespace])
            .arg(&binary)
            .args(["server", "--quiet", "--address"])
            .arg(format!("{NODE_ADDRESS}:{port}"))
            .args(["--console-address", &format!("{NODE_ADDRESS}:0")])
            .args(&self.drives)
            .env("MINIO_ROOT_USER", ACCESS_KEY)
            .env("MINIO_ROOT_PASSWORD", SECRET_KEY)
            .env("MINIO_SITE_REGION", REGION)
            .env("MINIO_DOMAIN", "localhost")
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            // Drives on the root file system (temp dirs) are accepted.
            .env("MINIO_CI_CD", "1")
            // MinIO's default for an 8-drive set, written out so the quorums above hold whatever
            // MinIO's release.
            .env("MINIO_STORAGE_CLASS_STANDARD", "EC:4")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting {} through ip netns exec: {e}", binary.display()))?;
        self.nodes[node].child = Some(child);
        Ok(())
    }

    fn wait_until_in_quorum(&mut self, node: usize) -> Result<(), String> {
        wait_until_live(self.nodes[node].local_port, "/minio/health/cluster").map_err(|e| {
            let exited = self.nodes[node]
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
                .map(|status| format!(" (it exited: {status})"))
                .unwrap_or_default();
            format!(
                "node {} of namespace {}{exited}: {e}\n{}",
                node + 1,
                self.namespace,
                self.log_tail(node, 4096)
            )
        })
    }
}

impl Drop for MinioCluster {
    fn drop(&mut self) {
        for node in 0..self.nodes.len() {
            self.kill(node);
        }
        // The forwarder's thread is the last thing of this process in the namespace.
        if let Some(forwarder) = self.forwarder.take() {
            forwarder.stop();
        }
        let root = self.root.to_string_lossy().into_owned();
        let _ = Command::new("sh")
            .args(["-c", TEAR_DOWN, "tear-down", &self.namespace, &root])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Writes a line to the process's standard error directly: the test harness captures `eprintln!`
/// of passing tests, not writes to the stream itself.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "brisk-testkit: {line}");
}

/// Runs `ip ARGS`, or says what it answered.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Makes `brisk-<pid>-<n>`, a new network namespace.
fn new_namespace() -> Result<String, ClusterError> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "{NETNS_PREFIX}{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    let out = Command::new("ip")
        .args(["netns", "add", &name])
        .stdin(Stdio::null())
        .output();
    match out {
        Err(e) => Err(ClusterError::Unsupported(format!(
            "`ip` (iproute2) could not be run: {e}"
        ))),
        Ok(out) if !out.status.success() => Err(ClusterError::Unsupported(format!(
            "`ip netns add {name}` failed (it needs root): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Ok(_) => Ok(name),
    }
}

/// Deletes the namespaces `brisk-<pid>-<n>` whose process no longer runs (and kills what runs in
/// them): left by a test process whose watchdog was killed too.
fn remove_stale_namespaces() {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(NETNS_PREFIX)
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, n)| n.parse::<u32>().ok().and(pid.parse::<u32>().ok()))
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("sh")
                .args(["-c", TEAR_DOWN, "tear-down", &name, ""])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Starts the watchdog that tears the cluster down once this process has exited, unless the
/// cluster was dropped first (its namespace is gone then, and the watchdog ends).
fn clean_up_at_exit(namespace: &str, root: &Path) {
    let script = format!(
        "while kill -0 {parent} 2>/dev/null && [ -e {NETNS_DIR}/\"$1\" ]; do sleep 0.5; done\n\
         [ -e {NETNS_DIR}/\"$1\" ] || exit 0\n{TEAR_DOWN}",
        parent = std::process::id(),
    );
    // Never waited for: the watchdog's job is to outlive this process. A process group of its own:
    // a kill of the test's group (a CI time limit) does not end it.
    #[allow(clippy::zombie_processes)]
    let _ = Command::new("sh")
        .args(["-c", &script, "watchdog", namespace])
        .arg(root)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// The loopback forwarder (see the module docs): a thread in the cluster's namespace running a
/// current-thread tokio runtime, so that every socket it opens is opened in the namespace.
#[derive(Debug)]
struct Forwarder {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    counters: Arc<[Counters]>,
}

impl Forwarder {
    /// Forwards each listener's connections to its node's address, from a thread that enters
    /// `namespace` first. The listeners were bound by the caller, in the test's namespace.
    fn start(
        namespace: &str,
        listeners: Vec<(std::net::TcpListener, SocketAddr)>,
    ) -> Result<Self, String> {
        let counters: Arc<[Counters]> = listeners.iter().map(|_| Counters::default()).collect();
        let path = format!("{NETNS_DIR}/{namespace}");
        let handle = File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let all = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name(format!("{namespace}-forwarder"))
            .spawn(move || {
                let setup = || -> Result<tokio::runtime::Runtime, String> {
                    // This thread alone moves: the rest of the process stays where it was.
                    rustix::thread::move_into_link_name_space(
                        handle.as_fd(),
                        Some(rustix::thread::LinkNameSpaceType::Network),
                    )
                    .map_err(|e| format!("setns into {path}: {e}"))?;
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| format!("forwarder runtime: {e}"))
                };
                let runtime = match setup() {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    for (i, (listener, upstream)) in listeners.into_iter().enumerate() {
                        let listener = listener
                            .set_nonblocking(true)
                            .and_then(|()| tokio::net::TcpListener::from_std(listener));
                        match listener {
                            Ok(listener) => {
                                tokio::spawn(accept(listener, upstream, Arc::clone(&all), i));
                            }
                            Err(e) => {
                                let _ = ready_tx.send(Err(format!("forwarder listener: {e}")));
                                return;
                            }
                        }
                    }
                    let _ = ready_tx.send(Ok(()));
                    let _ = stop_rx.await;
                });
                // Dropping the runtime drops every connection's task, closing its sockets.
            })
            .map_err(|e| format!("forwarder thread: {e}"))?;
        let forwarder = Self {
            stop: Some(stop_tx),
            thread: Some(thread),
            counters,
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(forwarder),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the forwarder thread ended before it was ready".into()),
        }
    }

    fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections for node `node` and relays each to `upstream`. A node that is down (the
/// connection to it is refused) gets the client's connection reset.
async fn accept(
    listener: tokio::net::TcpListener,
    upstream: SocketAddr,
    counters: Arc<[Counters]>,
    node: usize,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of file descriptors and the like: try again shortly rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let counters = Arc::clone(&counters);
        tokio::spawn(async move {
            let _ = client.set_nodelay(true);
            match tokio::net::TcpStream::connect(upstream).await {
                Ok(server) => {
                    let _ = server.set_nodelay(true);
                    relay(client, server, &counters[node]).await;
                }
                Err(_) => {
                    let _ = client.set_zero_linger();
                }
            }
        });
    }
}

/// Copies both ways until both sides have closed. When either side fails (a node killed under
/// the connection resets it), the client's connection is reset too, as the node's would be.
async fn relay(client: tokio::net::TcpStream, server: tokio::net::TcpStream, counters: &Counters) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let failed = {
        let up = pump(&mut client_read, &mut server_write, &counters.to_node);
        let down = pump(&mut server_read, &mut client_write, &counters.from_node);
        tokio::pin!(up, down);
        let (mut up_done, mut down_done) = (false, false);
        loop {
            tokio::select! {
                result = &mut up, if !up_done => match result {
                    Ok(()) => up_done = true,
                    Err(_) => break true,
                },
                result = &mut down, if !down_done => match result {
                    Ok(()) => down_done = true,
                    Err(_) => break true,
                },
            }
            if up_done && down_done {
                break false;
            }
        }
    };
    if failed {
        let _ = client_write.as_ref().set_zero_linger();
    }
}

/// Copies `from` into `to` until `from` ends, then ends `to`; counts the bytes into `count`.
async fn pump(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    count: &AtomicU64,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; COPY_BUFFER];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        to.write_all(&buf[..n]).await?;
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
}
