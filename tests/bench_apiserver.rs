//! Throughput, watch latency and idle memory of the API server, side by side with bare etcd.
//!
//! A benchmark program, not a test: it asserts no timings. It starts the API server in this
//! process on its own tokio runtime (its own threads, so that client and server scheduling stay
//! apart), once over durable SQLite in a temporary directory and once in memory, and drives it
//! over HTTPS on 127.0.0.1 with a lean client (one hyper HTTP/1.1 connection per client task,
//! rustls pinned to the server's CA, the admin bearer token). Then, when `etcd` is installed
//! (Debian's `etcd-server`, etcd 3.4), it starts an etcd of its own on free loopback ports with a
//! data directory of its own (default durability: the WAL is fsynced at every commit) and runs
//! the same workloads directly against it through its gRPC API (the `etcd-client` crate, one
//! connection per client task), with the ConfigMap's JSON as the value under
//! `/registry/configmaps/NAMESPACE/NAME`. It prints markdown tables of:
//!
//! - creates/s (POST of a ConfigMap with 5 data keys; etcd: put of a new key), updates/s
//!   (merge-PATCH of one key of an existing ConfigMap; etcd: put over an existing key), gets/s
//!   (GET of one ConfigMap; etcd: range of one key) and lists/s (LIST of a namespace holding 100
//!   ConfigMaps; etcd: range over a prefix holding 100 keys), at 1, 10 and 100 concurrent clients;
//! - watch delivery latency with 1, 10 and 100 watchers on one namespace, while one writer creates
//!   ConfigMaps at a steady rate: from the moment the write is sent to the moment each watcher has
//!   read the event, and how many events each watcher got (all must arrive);
//! - the resident memory of a freshly started `atoll apiserver` process (SQLite) once it is ready
//!   and after it has been idle a few seconds;
//! - the writes of a Work fan-out (the `works` phase, atoll over SQLite only): Works of 10
//!   ConfigMaps created by server-side apply, their statuses merge-patched as the hub writes an
//!   agent's report, the Works changed, their statuses written again and once more unchanged,
//!   each step at 16 clients asking for metadata-only answers, with the server's CPU per write;
//! - atoll against etcd: each throughput and watch figure of both atoll backends beside etcd's,
//!   with the ratio atoll/etcd; and the throughput of atoll over etcd (`atoll-etcd`: the API
//!   server with `--storage etcd`, on an etcd of its own started the same way, one member) beside
//!   atoll over SQLite.
//!
//! Each figure comes with its op count, elapsed time and the CPU the server (atoll's server
//! threads, or the etcd process) and the client threads used meanwhile (out of 100% per core),
//! which tells which side bounds it.
//!
//! Run with `cargo build --release -p atoll && cargo bench -p atoll-tests --bench apiserver`;
//! `-- --quick` runs small op counts for a smoke run. Without `--bench` (as `cargo test --benches`
//! runs it) the quick plan is used too. `--only creates,lists` and `--backend sqlite,etcd` narrow a
//! run (to profile one phase, say). Without `etcd` on the PATH the etcd parts (`etcd` and
//! `atoll-etcd`) are skipped with a line that says so, unless `--backend` names one of them. Every load loop is bounded by an op count and
//! a time cap, and all traffic goes to 127.0.0.1. The program fails (after printing every table)
//! when a request fails or a watcher misses an event.

/// The same allocator as the `atoll` binary, so that the in-process server is measured as it runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_apiserver::{Config, Server, StorageKind};
use atoll_tests::{Process, Report, cpu_ticks, free_addr, machine_busy_ticks};
use bytes::{Bytes, BytesMut};
use etcd_client::{EventType, GetOptions, KvClient, WatchOptions};
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

/// Concurrency levels: clients for the load phases, watchers for the watch phase.
const LEVELS: [usize; 3] = [1, 10, 100];
/// ConfigMaps in the namespace that the get and list phases read.
const LIST_OBJECTS: usize = 100;
/// How long one request may take before the op counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long watchers wait for the last events after the writer has finished.
const WATCH_GRACE: Duration = Duration::from_secs(10);
/// Server and client runtimes get this many worker threads each (the machine has 2 cores).
const WORKER_THREADS: usize = 2;
/// How long etcd may take to start serving.
const ETCD_START: Duration = Duration::from_secs(30);
/// How to install etcd, for the line printed when it is missing.
const ETCD_INSTALL: &str = "apt-get install -y etcd-server (or scripts/install-clients)";

/// How much work each phase does.
#[derive(Clone, Copy, Debug)]
struct Plan {
    name: &'static str,
    /// Creates at 1, 10 and 100 clients.
    creates: [usize; 3],
    /// Updates at 1, 10 and 100 clients.
    updates: [usize; 3],
    /// Gets of one object at 1, 10 and 100 clients.
    gets: [usize; 3],
    /// Lists at 1, 10 and 100 clients.
    lists: [usize; 3],
    /// Events the writer creates per watch level.
    watch_events: usize,
    /// Writes per second during the watch phase.
    watch_rate: u32,
    /// Works each step of the works phase writes.
    works: usize,
    /// Cap on one load phase.
    phase_cap: Duration,
    /// Cap on one backend's phases: those not started by then are skipped. Per backend, so that
    /// a run with more backends gives each the same time.
    backend_cap: Duration,
    /// How long the separate process idles before its memory is read again.
    idle: Duration,
    /// How long a phase waits for other processes to leave the CPUs before it starts anyway.
    quiet_wait: Duration,
}

const FULL: Plan = Plan {
    name: "full",
    // Enough for phases of a few seconds at 10 and 100 clients: shorter ones vary by a fifth
    // from run to run.
    creates: [3_000, 30_000, 30_000],
    updates: [3_000, 30_000, 30_000],
    gets: [10_000, 30_000, 30_000],
    lists: [1_000, 5_000, 5_000],
    watch_events: 1_000,
    watch_rate: 100,
    works: 2_000,
    phase_cap: Duration::from_secs(60),
    backend_cap: Duration::from_secs(6 * 60),
    idle: Duration::from_secs(5),
    quiet_wait: Duration::from_secs(30),
};

const QUICK: Plan = Plan {
    name: "quick",
    creates: [100, 300, 300],
    updates: [100, 300, 300],
    gets: [100, 300, 300],
    lists: [30, 100, 100],
    watch_events: 100,
    watch_rate: 100,
    works: 100,
    phase_cap: Duration::from_secs(5),
    backend_cap: Duration::from_secs(40),
    idle: Duration::from_secs(2),
    quiet_wait: Duration::ZERO,
};

/// Which phases and backends a run measures.
struct Options {
    plan: Plan,
    backends: Vec<Backend>,
    /// Whether `--backend` named etcd: then a missing etcd is a failure, not a skip.
    etcd_required: bool,
    phases: Vec<Phase>,
}

/// One part of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Memory,
    Creates,
    Updates,
    Gets,
    Lists,
    Watch,
    Rbac,
    Works,
}

const PHASES: [(&str, Phase); 8] = [
    ("memory", Phase::Memory),
    ("creates", Phase::Creates),
    ("updates", Phase::Updates),
    ("gets", Phase::Gets),
    ("lists", Phase::Lists),
    ("watch", Phase::Watch),
    ("rbac", Phase::Rbac),
    ("works", Phase::Works),
];

/// What a figure was measured against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    /// atoll's API server over one of its storage backends.
    Atoll(StorageKind),
    /// atoll's API server over SQLite, driven by a user RBAC authorizes (not `system:masters`,
    /// whom the authorizer lets through before RBAC): the cost of authorization.
    AtollRbac,
    /// etcd, driven directly through its gRPC API.
    Etcd,
}

const BACKENDS: [(&str, Backend); 5] = [
    ("sqlite", Backend::Atoll(StorageKind::Sqlite)),
    ("memory", Backend::Atoll(StorageKind::Memory)),
    ("sqlite-rbac", Backend::AtollRbac),
    ("etcd", Backend::Etcd),
    ("atoll-etcd", Backend::Atoll(StorageKind::Etcd)),
];

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Atoll(StorageKind::Sqlite) => "sqlite",
            Backend::Atoll(StorageKind::Memory) => "memory",
            Backend::Atoll(StorageKind::Etcd) => "atoll-etcd",
            Backend::AtollRbac => "sqlite-rbac",
            Backend::Etcd => "etcd",
        }
    }
}

const USAGE: &str = "arguments: [--quick] [--only memory,creates,updates,gets,lists,watch,rbac,works] \
                     [--backend sqlite,memory,sqlite-rbac,etcd,atoll-etcd] (cargo adds --bench)";

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> anyhow::Result<Self> {
        let mut bench = false;
        let mut quick = false;
        // The RBAC user's backend is asked for by name; the rbac phase measures that cost.
        let mut backends: Vec<Backend> = BACKENDS
            .iter()
            .map(|(_, backend)| *backend)
            .filter(|backend| *backend != Backend::AtollRbac)
            .collect();
        let mut etcd_required = false;
        let mut phases: Vec<Phase> = PHASES.iter().map(|(_, phase)| *phase).collect();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--bench" => bench = true,
                "--quick" => quick = true,
                "--only" => {
                    let list = args.next().context(USAGE)?;
                    phases = list
                        .split(',')
                        .map(|name| {
                            PHASES
                                .iter()
                                .find(|(known, _)| *known == name)
                                .map(|(_, phase)| *phase)
                                .with_context(|| format!("unknown phase {name:?}; {USAGE}"))
                        })
                        .collect::<anyhow::Result<_>>()?;
                }
                "--backend" => {
                    let list = args.next().context(USAGE)?;
                    backends = list
                        .split(',')
                        .map(|name| {
                            BACKENDS
                                .iter()
                                .find(|(known, _)| *known == name)
                                .map(|(_, backend)| *backend)
                                .with_context(|| format!("unknown backend {name:?}; {USAGE}"))
                        })
                        .collect::<anyhow::Result<_>>()?;
                    etcd_required = backends.contains(&Backend::Etcd)
                        || backends.contains(&Backend::Atoll(StorageKind::Etcd));
                }
                other => bail!("unknown argument {other:?}; {USAGE}"),
            }
        }
        Ok(Options {
            plan: if bench && !quick { FULL } else { QUICK },
            backends,
            etcd_required,
            phases,
        })
    }

    fn runs(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }
}

fn main() -> anyhow::Result<()> {
    let options = Options::parse(std::env::args().skip(1))?;
    let plan = options.plan;
    let started = Instant::now();
    let mut report = Report::default();
    let data_root = tempfile::tempdir()?;
    println!(
        "# atoll-apiserver benchmark ({} plan)\n\n{} CPU(s); data directories on {}; client and server \
         runtimes with {WORKER_THREADS} worker threads each. CPU columns: % of one core used by \
         the server (atoll's server threads, of which the SQLite writer thread; or the etcd \
         process) and by the client threads while the phase ran, and by other processes on the \
         machine (figures taken while that is high are disturbed).\n",
        plan.name,
        std::thread::available_parallelism().map_or(0, usize::from),
        filesystem_of(data_root.path()),
    );

    if options.runs(Phase::Memory) {
        memory_phase(&plan, data_root.path(), &mut report)?;
    }

    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("bench-client")
        .enable_all()
        .build()?;
    let mut results = Results::default();
    let mut etcd = EtcdRun::NotAsked;
    for &backend in &options.backends {
        let dir = data_root.path().join(backend.name());
        let deadline = Instant::now() + plan.backend_cap;
        let outcome = match backend {
            Backend::Atoll(_) | Backend::AtollRbac => {
                let storage = match backend {
                    Backend::Atoll(storage) => storage,
                    _ => StorageKind::Sqlite,
                };
                let rbac = backend == Backend::AtollRbac;
                // atoll over etcd: an etcd of its own, which outlives the server.
                let mut store = None;
                if storage == StorageKind::Etcd {
                    match EtcdProcess::start(&dir.join("etcd"))? {
                        Some(process) => store = Some(process),
                        None => {
                            if options.etcd_required {
                                report.fail(format!(
                                    "etcd was asked for but is not installed: {ETCD_INSTALL}"
                                ));
                            } else {
                                println!(
                                    "atoll-etcd skipped: etcd is not installed. Install it with: \
                                     {ETCD_INSTALL}\n"
                                );
                            }
                            continue;
                        }
                    }
                }
                let etcd_options = store.as_ref().map(|process| {
                    atoll_apiserver::storage::etcd::EtcdOptions::new(
                        vec![process.client_url.clone()],
                        "/atoll/bench",
                    )
                });
                let server = ServerRuntime::start(storage, &dir, rbac, etcd_options)?;
                let endpoint = if rbac {
                    client.block_on(server.rbac_user())?
                } else {
                    server.endpoint()?
                };
                let target = AtollTarget { backend, endpoint };
                let outcome = client.block_on(drive(&options, &target, deadline, &mut results));
                server.stop();
                drop(store);
                outcome
            }
            Backend::Etcd => match EtcdProcess::start(&dir) {
                Ok(Some(process)) => {
                    etcd = EtcdRun::Ran {
                        version: process.version.clone(),
                    };
                    let outcome = client.block_on(async {
                        let target = EtcdTarget::connect(&process).await?;
                        drive(&options, &target, deadline, &mut results).await
                    });
                    drop(process);
                    outcome
                }
                Ok(None) => {
                    etcd = EtcdRun::NotInstalled;
                    if options.etcd_required {
                        report.fail(format!(
                            "etcd was asked for but is not installed: {ETCD_INSTALL}"
                        ));
                    }
                    Ok(())
                }
                Err(err) => Err(err),
            },
        };
        if let Err(err) = outcome {
            report.fail(format!("{}: {err:#}", backend.name()));
        }
    }
    let mut rbac = Vec::new();
    if options.runs(Phase::Rbac) {
        match on_fresh_server(&data_root.path().join("rbac"), true, |server| {
            client.block_on(rbac_rounds(&plan, server))
        }) {
            Ok(rows) => rbac = rows,
            Err(err) => report.fail(format!("rbac: {err:#}")),
        }
    }
    let mut works = Vec::new();
    if options.runs(Phase::Works) {
        match on_fresh_server(&data_root.path().join("works"), false, |server| {
            client.block_on(work_writes(&plan, server))
        }) {
            Ok(rows) => works = rows,
            Err(err) => report.fail(format!("works: {err:#}")),
        }
    }
    let mut store_rows = Vec::new();
    let mut parts = Vec::new();
    if options.runs(Phase::Works) {
        match store_writes(&plan, &data_root.path().join("works-store")) {
            Ok((rows, stored)) => {
                store_rows = rows;
                parts = stored_work_parts(&plan, &stored);
            }
            Err(err) => report.fail(format!("works, store alone: {err:#}")),
        }
    }
    client.shutdown_timeout(Duration::from_secs(5));

    print_loads(&results.loads, &mut report);
    print_watches(&plan, &results.watches, &mut report);
    print_comparison(&options, &results, &etcd);
    print_authorization(&results, &rbac);
    print_work_writes(&plan, &works);
    print_store_writes(&plan, &works, &store_rows);
    print_stored_work_parts(&plan, &parts);
    println!("Total time: {:.1} s.", started.elapsed().as_secs_f64());
    report.finish()
}

/// Runs `phase` on a fresh API server over SQLite in `dir` (see [`ServerRuntime::start`] for
/// `rbac`), and stops the server after it.
fn on_fresh_server<T>(
    dir: &Path,
    rbac: bool,
    phase: impl FnOnce(&ServerRuntime) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let server = ServerRuntime::start(StorageKind::Sqlite, dir, rbac, None)?;
    let outcome = phase(&server);
    server.stop();
    outcome
}

/// Every figure measured, in the order measured.
#[derive(Default)]
struct Results {
    loads: Vec<LoadResult>,
    watches: Vec<WatchResult>,
}

/// Whether the etcd part ran.
enum EtcdRun {
    /// `--backend` left etcd out.
    NotAsked,
    /// No `etcd` on the PATH.
    NotInstalled,
    /// etcd started ("etcd 3.4.23").
    Ran { version: String },
}

// ---------------------------------------------------------------------------------------------
// The server under test

/// The user of the `sqlite-rbac` backend, and its bearer token.
const RBAC_USER: &str = "bench-writer";
const RBAC_TOKEN: &str = "bench-writer-token-0123456789abcdef";

/// An in-process API server on a runtime of its own.
struct ServerRuntime {
    runtime: Runtime,
    server: Server,
}

impl ServerRuntime {
    /// With `rbac`, the server also knows the bearer token of [`RBAC_USER`] (in its token
    /// file), who [`ServerRuntime::rbac_user`] binds.
    fn start(
        storage: StorageKind,
        dir: &Path,
        rbac: bool,
        etcd: Option<atoll_apiserver::storage::etcd::EtcdOptions>,
    ) -> anyhow::Result<Self> {
        if rbac {
            std::fs::create_dir_all(dir)?;
            let lines = format!(
                "{},bench-admin,bench-admin,\"system:masters,system:authenticated\"\n\
                 {RBAC_TOKEN},{RBAC_USER},{RBAC_USER},\"system:authenticated\"\n",
                atoll_apiserver::auth::new_token()
            );
            atoll_pki::write_private(&dir.join("tokens.csv"), lines.as_bytes())?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("apiserver")
            .enable_all()
            .build()?;
        let mut config = Config::new(dir, "127.0.0.1:0".parse()?);
        config.storage = storage;
        config.etcd = etcd;
        let server = runtime.block_on(Server::start(config))?;
        Ok(ServerRuntime { runtime, server })
    }

    fn endpoint(&self) -> anyhow::Result<Endpoint> {
        Endpoint::new(
            self.server.addr(),
            self.server.ca_pem(),
            self.server.admin_token(),
        )
    }

    /// Gives [`RBAC_USER`] what the workloads need through RBAC, as a hub's users get it: a
    /// ClusterRole for namespaces and ConfigMaps bound by a ClusterRoleBinding named after 20
    /// others (of other users, to `view`) that the authorizer looks at first. The endpoint
    /// speaks as that user.
    async fn rbac_user(&self) -> anyhow::Result<Endpoint> {
        let admin = self.endpoint()?;
        let mut connection = admin.connect().await?;
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        let binding = |name: &str, user: &str, role: &str| {
            format!(
                r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{{"name":"{name}"}},"roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"{role}"}},"subjects":[{{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"{user}"}}]}}"#
            )
        };
        for i in 0..20 {
            let body = binding(&format!("a-reader-{i}"), &format!("reader-{i}"), "view");
            let call = Call::json(
                Method::POST,
                format!("{rbac}/clusterrolebindings"),
                "application/json",
                body,
            );
            connection.call(call).await?;
        }
        let role = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"bench-writer"},"rules":[{"apiGroups":[""],"resources":["namespaces","configmaps"],"verbs":["*"]}]}"#;
        let call = Call::json(
            Method::POST,
            format!("{rbac}/clusterroles"),
            "application/json",
            role.into(),
        );
        connection.call(call).await?;
        let body = binding("z-bench-writer", RBAC_USER, "bench-writer");
        let call = Call::json(
            Method::POST,
            format!("{rbac}/clusterrolebindings"),
            "application/json",
            body,
        );
        connection.call(call).await?;
        Endpoint::new(self.server.addr(), self.server.ca_pem(), RBAC_TOKEN)
    }

    fn stop(self) {
        let ServerRuntime { runtime, server } = self;
        runtime.block_on(server.shutdown());
        runtime.shutdown_timeout(Duration::from_secs(5));
    }
}

/// An etcd started by the benchmark: free loopback ports, a data directory of its own, killed
/// when dropped. It never reuses an etcd already running on the machine.
struct EtcdProcess {
    child: Child,
    client_url: String,
    log: PathBuf,
    /// "etcd 3.4.23", from `etcd --version`.
    version: String,
}

impl EtcdProcess {
    /// Starts etcd and waits until it says it serves clients; `None` when it is not installed.
    fn start(dir: &Path) -> anyhow::Result<Option<Self>> {
        let Some(binary) = on_path("etcd") else {
            return Ok(None);
        };
        let version = Command::new(&binary)
            .arg("--version")
            .output()
            .context("running etcd --version")?;
        let version = String::from_utf8_lossy(&version.stdout)
            .lines()
            .find_map(|line| line.strip_prefix("etcd Version:"))
            .map_or_else(
                || "etcd (version unknown)".into(),
                |v| format!("etcd {}", v.trim()),
            );
        std::fs::create_dir_all(dir)?;
        let client = free_addr()?;
        let mut peer = free_addr()?;
        while peer == client {
            peer = free_addr()?;
        }
        if !client.ip().is_loopback() || !peer.ip().is_loopback() {
            bail!("etcd must listen on loopback only, not {client} and {peer}");
        }
        let client_url = format!("http://{client}");
        let peer_url = format!("http://{peer}");
        let log = dir.join("etcd.log");
        let stderr = std::fs::File::create(&log)?;
        let mut command = Command::new(&binary);
        // Settings from the environment (ETCD_*) would change what is measured.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("ETCD_") {
                command.env_remove(key);
            }
        }
        let child = command
            .arg("--name")
            .arg("default")
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--listen-client-urls")
            .arg(&client_url)
            .arg("--advertise-client-urls")
            .arg(&client_url)
            .arg("--listen-peer-urls")
            .arg(&peer_url)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer_url)
            .arg("--initial-cluster")
            .arg(format!("default={peer_url}"))
            .arg("--logger")
            .arg("zap")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .context("starting etcd")?;
        let mut process = EtcdProcess {
            child,
            client_url,
            log,
            version,
        };
        process.wait_serving()?;
        Ok(Some(process))
    }

    fn wait_serving(&mut self) -> anyhow::Result<()> {
        let give_up = Instant::now() + ETCD_START;
        loop {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(status) = self.child.try_wait()? {
                bail!("etcd exited with {status}:\n{log}");
            }
            // etcd 3.4 says this once it is leader and its client listener is up.
            if log.contains("serving client traffic")
                || log.contains("ready to serve client requests")
            {
                return Ok(());
            }
            if Instant::now() > give_up {
                bail!("etcd did not serve within {ETCD_START:?}:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The executable `name` in a directory of the PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

// ---------------------------------------------------------------------------------------------
// The client

/// Where and how to reach the server.
#[derive(Clone)]
struct Endpoint {
    addr: SocketAddr,
    tls: TlsConnector,
    authorization: HeaderValue,
}

impl Endpoint {
    fn new(addr: SocketAddr, ca_pem: &str, token: &str) -> anyhow::Result<Self> {
        if !addr.ip().is_loopback() {
            bail!("the benchmark only talks to loopback addresses, not {addr}");
        }
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
            roots.add(cert.context("reading the server's CA")?)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Endpoint {
            addr,
            tls: TlsConnector::from(Arc::new(config)),
            authorization: HeaderValue::from_str(&format!("Bearer {token}"))?,
        })
    }

    /// Opens one HTTP/1.1 connection over TLS.
    async fn connect(&self) -> anyhow::Result<Connection> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = self.tls.connect(name, tcp).await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Connection {
            sender,
            authorization: self.authorization.clone(),
        })
    }
}

/// One kept-alive connection; requests on it go one at a time.
struct Connection {
    sender: SendRequest<Full<Bytes>>,
    authorization: HeaderValue,
}

/// One request of a load phase.
struct Call {
    method: Method,
    path: String,
    content_type: Option<&'static str>,
    /// The `Accept` header, if not the server's default (JSON).
    accept: Option<&'static str>,
    body: Bytes,
}

impl Call {
    fn get(path: String) -> Self {
        Call {
            method: Method::GET,
            path,
            content_type: None,
            accept: None,
            body: Bytes::new(),
        }
    }

    fn json(method: Method, path: String, content_type: &'static str, body: String) -> Self {
        Call {
            method,
            path,
            content_type: Some(content_type),
            accept: None,
            body: Bytes::from(body),
        }
    }

    /// Asks for the written object's metadata only, as the hub does for its writes.
    fn metadata_answer(self) -> Self {
        Call {
            accept: Some(METADATA_ONLY),
            ..self
        }
    }
}

/// The `Accept` of a client that wants an object's metadata only (kube-rs metadata calls).
const METADATA_ONLY: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

impl Connection {
    /// Sends a request and returns its response head (the body is left to read).
    async fn send(&mut self, call: Call) -> anyhow::Result<http::Response<hyper::body::Incoming>> {
        self.sender.ready().await?;
        let mut request = Request::builder()
            .method(call.method)
            .uri(call.path)
            .header(HOST, "127.0.0.1")
            .header(AUTHORIZATION, self.authorization.clone());
        if let Some(content_type) = call.content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        if let Some(accept) = call.accept {
            request = request.header(http::header::ACCEPT, accept);
        }
        Ok(self
            .sender
            .send_request(request.body(Full::new(call.body))?)
            .await?)
    }

    /// Sends a request and reads the whole response; a status other than 2xx is an error.
    async fn call(&mut self, call: Call) -> anyhow::Result<Bytes> {
        let what = format!("{} {}", call.method, call.path);
        let exchange = async {
            let response = self.send(call).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, body))
        };
        let (status, body) = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .with_context(|| format!("{what}: no answer within {REQUEST_TIMEOUT:?}"))??;
        if !status.is_success() {
            bail!("{what}: {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(body)
    }
}

fn namespace_body(name: &str) -> String {
    format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#)
}

/// A ConfigMap with 5 data keys (about 400 bytes of JSON).
fn config_map_body(name: &str) -> String {
    config_map_json(name, &format!("value 0 of {name}: some configuration text"))
}

/// A ConfigMap with 5 data keys, the first of them `key-0: first`.
fn config_map_json(name: &str, first: &str) -> String {
    let mut data = format!(r#""key-0":"{first}""#);
    for key in 1..5 {
        let _ = write!(
            data,
            r#","key-{key}":"value {key} of {name}: some configuration text""#
        );
    }
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"app":"bench"}}}},"data":{{{data}}}}}"#
    )
}

fn config_maps(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps")
}

// ---------------------------------------------------------------------------------------------
// What is measured, on atoll and on etcd

/// One kind of request of a load phase, on objects of one namespace.
#[derive(Clone)]
enum Workload {
    /// Creates the object `{prefix}{op}`.
    Create {
        namespace: String,
        prefix: &'static str,
    },
    /// Changes the first data key of the object `cm-{op % existing}` (made by a create phase).
    Update { namespace: String, existing: usize },
    /// Reads the object `listed-{op % LIST_OBJECTS}`.
    Get { namespace: String },
    /// Reads every object of the namespace.
    List { namespace: String },
    /// Server-side applies the Work `work-{op}` at `generation` (see [`work_body`]): creates it
    /// at 1, changes one of its ConfigMaps after. atoll only.
    WorkApply {
        namespace: String,
        generation: usize,
    },
    /// Merge-patches the status of the Work `work-{op}` as the hub writes an agent's report
    /// (see [`work_status_body`]). atoll only.
    WorkStatus {
        namespace: String,
        generation: usize,
    },
}

/// One client of a load phase: a connection of its own, one request at a time.
trait Worker: Send + 'static {
    /// Makes request number `op`.
    fn run(&mut self, op: usize) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Whether the connection broke, so that later requests would fail too.
    fn broken(&self) -> bool;
}

/// What the benchmark drives: atoll's API server or etcd.
trait Target {
    type Worker: Worker;

    fn backend(&self) -> Backend;

    /// The separate process that serves, whose CPU counts as the server's.
    fn server_pid(&self) -> Option<u32>;

    /// Opens a connection for `workload`.
    async fn worker(&self, workload: &Workload) -> anyhow::Result<Self::Worker>;

    /// Makes the namespace (a no-op on etcd, where a namespace is a key prefix).
    async fn create_namespace(&self, namespace: &str) -> anyhow::Result<()>;

    /// How many objects the namespace holds.
    async fn count(&self, namespace: &str) -> anyhow::Result<usize>;

    /// Opens a watch of the namespace, waits until the server has taken it, and returns the task
    /// that reads it until every one of `sent` has arrived or `deadline` passes.
    async fn watcher(
        &self,
        namespace: &str,
        sent: Arc<Vec<OnceLock<Instant>>>,
        deadline: Instant,
    ) -> anyhow::Result<JoinHandle<Watched>>;
}

/// atoll's API server over HTTPS.
struct AtollTarget {
    backend: Backend,
    endpoint: Endpoint,
}

/// A connection to atoll's API server with its workload.
struct AtollWorker {
    connection: Connection,
    workload: Workload,
}

impl Worker for AtollWorker {
    async fn run(&mut self, op: usize) -> anyhow::Result<()> {
        let call = match &self.workload {
            Workload::Create { namespace, prefix } => Call::json(
                Method::POST,
                config_maps(namespace),
                "application/json",
                config_map_body(&format!("{prefix}{op}")),
            ),
            Workload::Update {
                namespace,
                existing,
            } => Call::json(
                Method::PATCH,
                format!("{}/cm-{}", config_maps(namespace), op % (*existing).max(1)),
                "application/merge-patch+json",
                format!(r#"{{"data":{{"key-0":"update {op}"}}}}"#),
            ),
            Workload::Get { namespace } => Call::get(format!(
                "{}/listed-{}",
                config_maps(namespace),
                op % LIST_OBJECTS
            )),
            Workload::List { namespace } => Call::get(config_maps(namespace)),
            Workload::WorkApply {
                namespace,
                generation,
            } => Call::json(
                Method::PATCH,
                format!(
                    "{}/work-{op}?fieldManager=bench-hub&force=true",
                    works(namespace)
                ),
                "application/apply-patch+yaml",
                work_body(&format!("work-{op}"), *generation),
            )
            .metadata_answer(),
            Workload::WorkStatus {
                namespace,
                generation,
            } => Call::json(
                Method::PATCH,
                format!("{}/work-{op}/status", works(namespace)),
                "application/merge-patch+json",
                work_status_body(*generation),
            )
            .metadata_answer(),
        };
        self.connection.call(call).await.map(drop)
    }

    fn broken(&self) -> bool {
        self.connection.sender.is_closed()
    }
}

impl Target for AtollTarget {
    type Worker = AtollWorker;

    fn backend(&self) -> Backend {
        self.backend
    }

    fn server_pid(&self) -> Option<u32> {
        None
    }

    async fn worker(&self, workload: &Workload) -> anyhow::Result<AtollWorker> {
        Ok(AtollWorker {
            connection: self.endpoint.connect().await?,
            workload: workload.clone(),
        })
    }

    async fn create_namespace(&self, namespace: &str) -> anyhow::Result<()> {
        self.endpoint
            .connect()
            .await?
            .call(Call::json(
                Method::POST,
                "/api/v1/namespaces".into(),
                "application/json",
                namespace_body(namespace),
            ))
            .await?;
        Ok(())
    }

    /// The namespace's ConfigMaps but `kube-root-ca.crt`, which every namespace of a
    /// Kubernetes cluster holds (lists carry it too: one object more than etcd's).
    async fn count(&self, namespace: &str) -> anyhow::Result<usize> {
        let mut connection = self.endpoint.connect().await?;
        let listed = connection.call(Call::get(config_maps(namespace))).await?;
        Ok(
            serde_json::from_slice::<serde_json::Value>(&listed)?["items"]
                .as_array()
                .map_or(0, |items| {
                    items
                        .iter()
                        .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
                        .count()
                }),
        )
    }

    async fn watcher(
        &self,
        namespace: &str,
        sent: Arc<Vec<OnceLock<Instant>>>,
        deadline: Instant,
    ) -> anyhow::Result<JoinHandle<Watched>> {
        let mut connection = self.endpoint.connect().await?;
        let response = tokio::time::timeout(
            REQUEST_TIMEOUT,
            connection.send(Call::get(format!("{}?watch=true", config_maps(namespace)))),
        )
        .await
        .context("the watch did not answer")??;
        if response.status() != StatusCode::OK {
            bail!("the watch answered {}", response.status());
        }
        let mut body = response.into_body();
        Ok(tokio::spawn(async move {
            let _connection = connection;
            let mut watched = Watched::new(sent.len());
            let mut buffer = BytesMut::new();
            while watched.latencies.len() < sent.len() {
                let frame = match tokio::time::timeout_at(deadline.into(), body.frame()).await {
                    Ok(Some(Ok(frame))) => frame,
                    Ok(Some(Err(err))) => {
                        watched.odd(format!("stream failed: {err}"));
                        break;
                    }
                    Ok(None) => {
                        watched.odd("the server ended the watch".into());
                        break;
                    }
                    Err(_) => break,
                };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let received = Instant::now();
                buffer.extend_from_slice(&data);
                while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                    let line = buffer.split_to(end + 1);
                    match serde_json::from_slice::<WatchEvent>(&line) {
                        Ok(event) => watched.record(
                            &event.kind,
                            &event.object.metadata.name,
                            received,
                            &sent,
                        ),
                        Err(err) => watched.odd(format!("unreadable event: {err}")),
                    }
                }
            }
            watched
        }))
    }
}

/// etcd over gRPC, with the keys the Kubernetes API server would use.
struct EtcdTarget {
    url: String,
    pid: u32,
}

impl EtcdTarget {
    /// Connects to a started etcd and checks that it answers.
    async fn connect(process: &EtcdProcess) -> anyhow::Result<Self> {
        let target = EtcdTarget {
            url: process.client_url.clone(),
            pid: process.pid(),
        };
        target.client().await?;
        Ok(target)
    }

    /// A client on a connection of its own, checked with one read.
    async fn client(&self) -> anyhow::Result<etcd_client::Client> {
        let exchange = async {
            let mut client = etcd_client::Client::connect([self.url.as_str()], None).await?;
            client.get("/registry/health", None).await?;
            anyhow::Ok(client)
        };
        tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .with_context(|| format!("etcd at {} did not answer", self.url))?
            .with_context(|| format!("reaching etcd at {}", self.url))
    }
}

/// The key of an object, as the Kubernetes API server lays them out in etcd.
fn etcd_key(namespace: &str, name: &str) -> String {
    format!("/registry/configmaps/{namespace}/{name}")
}

/// The key prefix of a namespace's objects.
fn etcd_prefix(namespace: &str) -> String {
    format!("/registry/configmaps/{namespace}/")
}

/// A connection to etcd with its workload.
struct EtcdWorker {
    kv: KvClient,
    workload: Workload,
}

impl EtcdWorker {
    async fn exchange(&mut self, op: usize) -> anyhow::Result<()> {
        match &self.workload {
            Workload::Create { namespace, prefix } => {
                let name = format!("{prefix}{op}");
                self.kv
                    .put(etcd_key(namespace, &name), config_map_body(&name), None)
                    .await?;
            }
            Workload::Update {
                namespace,
                existing,
            } => {
                let name = format!("cm-{}", op % (*existing).max(1));
                let value = config_map_json(&name, &format!("update {op}"));
                self.kv.put(etcd_key(namespace, &name), value, None).await?;
            }
            Workload::Get { namespace } => {
                let key = etcd_key(namespace, &format!("listed-{}", op % LIST_OBJECTS));
                if self.kv.get(key.as_str(), None).await?.kvs().is_empty() {
                    bail!("{key} is missing");
                }
            }
            Workload::List { namespace } => {
                let options = GetOptions::new().with_prefix();
                self.kv.get(etcd_prefix(namespace), Some(options)).await?;
            }
            Workload::WorkApply { .. } | Workload::WorkStatus { .. } => {
                bail!("the works phase runs on atoll only")
            }
        }
        Ok(())
    }
}

impl Worker for EtcdWorker {
    async fn run(&mut self, op: usize) -> anyhow::Result<()> {
        tokio::time::timeout(REQUEST_TIMEOUT, self.exchange(op))
            .await
            .with_context(|| format!("no answer from etcd within {REQUEST_TIMEOUT:?}"))?
    }

    fn broken(&self) -> bool {
        // The gRPC channel reconnects by itself.
        false
    }
}

impl Target for EtcdTarget {
    type Worker = EtcdWorker;

    fn backend(&self) -> Backend {
        Backend::Etcd
    }

    fn server_pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    async fn worker(&self, workload: &Workload) -> anyhow::Result<EtcdWorker> {
        Ok(EtcdWorker {
            kv: self.client().await?.kv_client(),
            workload: workload.clone(),
        })
    }

    async fn create_namespace(&self, _namespace: &str) -> anyhow::Result<()> {
        Ok(())
    }

    async fn count(&self, namespace: &str) -> anyhow::Result<usize> {
        let options = GetOptions::new().with_prefix().with_count_only();
        let counted = self
            .client()
            .await?
            .get(etcd_prefix(namespace), Some(options))
            .await?;
        Ok(usize::try_from(counted.count())?)
    }

    async fn watcher(
        &self,
        namespace: &str,
        sent: Arc<Vec<OnceLock<Instant>>>,
        deadline: Instant,
    ) -> anyhow::Result<JoinHandle<Watched>> {
        let mut client = self.client().await?;
        let prefix = etcd_prefix(namespace);
        let mut stream = client
            .watch(prefix.as_str(), Some(WatchOptions::new().with_prefix()))
            .await?;
        let created = tokio::time::timeout(REQUEST_TIMEOUT, stream.message())
            .await
            .context("the watch did not answer")??
            .context("etcd ended the watch at once")?;
        if !created.created() || created.canceled() {
            bail!("etcd did not create the watch: {}", created.cancel_reason());
        }
        Ok(tokio::spawn(async move {
            let _client = client;
            let mut watched = Watched::new(sent.len());
            while watched.latencies.len() < sent.len() {
                let response =
                    match tokio::time::timeout_at(deadline.into(), stream.message()).await {
                        Ok(Ok(Some(response))) => response,
                        Ok(Err(err)) => {
                            watched.odd(format!("stream failed: {err}"));
                            break;
                        }
                        Ok(Ok(None)) => {
                            watched.odd("etcd ended the watch".into());
                            break;
                        }
                        Err(_) => break,
                    };
                let received = Instant::now();
                if response.canceled() {
                    watched.odd(format!(
                        "etcd canceled the watch: {}",
                        response.cancel_reason()
                    ));
                    break;
                }
                for event in response.events() {
                    let Some(kv) = event.kv() else {
                        watched.odd("an event without its key".into());
                        continue;
                    };
                    let kind = match event.event_type() {
                        EventType::Put if kv.version() == 1 => "ADDED",
                        EventType::Put => "MODIFIED",
                        EventType::Delete => "DELETED",
                    };
                    let key = String::from_utf8_lossy(kv.key());
                    let name = key.strip_prefix(prefix.as_str()).unwrap_or(&key);
                    watched.record(kind, name, received, &sent);
                }
            }
            watched
        }))
    }
}

// ---------------------------------------------------------------------------------------------
// CPU accounting from /proc

/// CPU time used so far by the threads of this process, by side, and by the server process when
/// the server runs apart (etcd).
#[derive(Clone, Copy, Default)]
struct CpuSample {
    at: Option<Instant>,
    /// Server threads (every thread but the client's and the main thread), or the separate server
    /// process, in clock ticks.
    server: u64,
    /// The SQLite writer thread alone.
    writer: u64,
    client: u64,
    /// Every process on the machine (busy time from `/proc/stat`).
    machine: u64,
    /// This whole process, and the separate server process.
    process: u64,
}

/// Percent of one core used over a phase, by side.
#[derive(Clone, Copy, Default)]
struct CpuUse {
    server: f64,
    writer: f64,
    client: f64,
    /// Other processes on the machine (a build, say): the figures are disturbed if high.
    other: f64,
}

impl CpuSample {
    /// The CPU used so far; `server` is the separate server process, if the server runs apart.
    fn now(server: Option<u32>) -> Self {
        let mut sample = CpuSample {
            at: Some(Instant::now()),
            ..Default::default()
        };
        let total = cpu_ticks(Path::new("/proc/self/stat")).unwrap_or(0);
        let main = std::process::id().to_string();
        let mut harness = 0;
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for task in tasks.flatten() {
                let dir = task.path();
                let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                let ticks = cpu_ticks(&dir.join("stat")).unwrap_or(0);
                if comm.starts_with("bench-client") {
                    sample.client += ticks;
                } else if task.file_name().to_string_lossy() == main {
                    harness += ticks;
                } else if comm.starts_with("sqlite-writer") {
                    sample.writer += ticks;
                }
            }
        }
        // Exited threads (blocking pools) count in the process total only: charge them to the
        // server, the only side that has such threads.
        sample.server = total.saturating_sub(sample.client + harness);
        sample.process = total;
        if let Some(pid) = server {
            let apart = cpu_ticks(Path::new(&format!("/proc/{pid}/stat"))).unwrap_or(0);
            sample.server = apart;
            sample.process += apart;
        }
        sample.machine = machine_busy_ticks().unwrap_or(0);
        sample
    }

    /// Percent of one core used by each side since `earlier`.
    fn since(&self, earlier: &CpuSample) -> CpuUse {
        let elapsed = match (self.at, earlier.at) {
            (Some(now), Some(then)) => now.duration_since(then).as_secs_f64(),
            _ => 0.0,
        };
        if elapsed <= 0.0 {
            return CpuUse::default();
        }
        let percent = |now: u64, then: u64| {
            now.saturating_sub(then) as f64 / atoll_tests::clock_ticks_per_second() / elapsed
                * 100.0
        };
        let ours = self.process.saturating_sub(earlier.process);
        let all = self.machine.saturating_sub(earlier.machine);
        CpuUse {
            server: percent(self.server, earlier.server),
            writer: percent(self.writer, earlier.writer),
            client: percent(self.client, earlier.client),
            other: percent(all.saturating_sub(ours), 0),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Load phases: creates, updates, gets, lists

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operation {
    Create,
    Update,
    Get,
    List,
}

const OPERATIONS: [Operation; 4] = [
    Operation::Create,
    Operation::Update,
    Operation::Get,
    Operation::List,
];

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Create => "creates",
            Operation::Update => "updates",
            Operation::Get => "gets",
            Operation::List => "lists",
        }
    }

    /// What one request is, on atoll and on etcd.
    fn describe(self) -> (&'static str, &'static str) {
        match self {
            Operation::Create => (
                "POST of a ConfigMap with 5 data keys",
                "put of a new key, the ConfigMap's JSON as value",
            ),
            Operation::Update => (
                "merge-PATCH of one key of an existing ConfigMap",
                "put over an existing key, the changed ConfigMap's JSON as value",
            ),
            Operation::Get => (
                "GET of one ConfigMap of a namespace holding 100",
                "range of one key",
            ),
            Operation::List => (
                "LIST of a namespace holding 100 ConfigMaps",
                "range over a prefix holding 100 keys",
            ),
        }
    }
}

/// The result of one load phase at one concurrency level.
struct LoadResult {
    backend: Backend,
    operation: Operation,
    clients: usize,
    measured: Measured,
}

/// What one load run measured.
struct Measured {
    ok: usize,
    errors: usize,
    elapsed: Duration,
    /// Per-request latencies of the successful ops, sorted.
    latencies: Vec<Duration>,
    first_error: Option<String>,
    capped: bool,
    cpu: CpuUse,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Seconds of CPU per successful op, for a side that used `percent` of one core.
    fn cpu_per_op(&self, percent: f64) -> f64 {
        percent / 100.0 / self.rate().max(1e-9)
    }
}

/// Runs `ops` requests of `workload` over `clients` connections, each client one request at a
/// time. Connections are opened before the clock starts.
async fn load<T: Target>(
    target: &T,
    workload: &Workload,
    clients: usize,
    ops: usize,
    cap: Duration,
) -> anyhow::Result<Measured> {
    let mut workers = Vec::with_capacity(clients);
    for _ in 0..clients {
        workers.push(target.worker(workload).await?);
    }
    let next = Arc::new(AtomicUsize::new(0));
    let first_error = Arc::new(Mutex::new(None::<String>));
    let before = CpuSample::now(target.server_pid());
    let start = Instant::now();
    let stop_at = start + cap;
    let mut tasks = Vec::with_capacity(clients);
    for mut worker in workers {
        let next = next.clone();
        let first_error = first_error.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0usize;
            loop {
                if Instant::now() >= stop_at {
                    break;
                }
                let op = next.fetch_add(1, Ordering::Relaxed);
                if op >= ops {
                    break;
                }
                let sent = Instant::now();
                match worker.run(op).await {
                    Ok(()) => latencies.push(sent.elapsed()),
                    Err(err) => {
                        errors += 1;
                        let mut first = first_error.lock().unwrap_or_else(|e| e.into_inner());
                        first.get_or_insert_with(|| format!("{err:#}"));
                        // A broken connection would fail every later op.
                        if worker.broken() {
                            break;
                        }
                    }
                }
            }
            (latencies, errors)
        }));
    }
    let mut latencies = Vec::with_capacity(ops);
    let mut errors = 0;
    for task in tasks {
        let (mine, failed) = task.await?;
        latencies.extend(mine);
        errors += failed;
    }
    let elapsed = start.elapsed();
    let cpu = CpuSample::now(target.server_pid()).since(&before);
    latencies.sort_unstable();
    let capped = next.load(Ordering::Relaxed) < ops;
    let first_error = first_error.lock().unwrap_or_else(|e| e.into_inner()).take();
    Ok(Measured {
        ok: latencies.len(),
        errors,
        elapsed,
        latencies,
        first_error,
        capped,
        cpu,
    })
}

/// Every phase against one target.
async fn drive<T: Target>(
    options: &Options,
    target: &T,
    deadline: Instant,
    results: &mut Results,
) -> anyhow::Result<()> {
    let plan = &options.plan;
    let backend = target.backend();
    let pid = target.server_pid();

    // Creates, then updates of what was created, each level in a namespace of its own.
    let mut created = [0usize; 3];
    let mut writes = Vec::new();
    if options.runs(Phase::Creates) || options.runs(Phase::Updates) {
        writes.push(Operation::Create);
    }
    if options.runs(Phase::Updates) {
        writes.push(Operation::Update);
    }
    for operation in writes {
        for (level, &clients) in LEVELS.iter().enumerate() {
            if Instant::now() >= deadline {
                bail!(
                    "the time cap of this backend passed before {} at {clients} clients",
                    operation.name()
                );
            }
            let namespace = format!("bench-write-{clients}");
            let (workload, ops) = if operation == Operation::Create {
                target.create_namespace(&namespace).await?;
                let workload = Workload::Create {
                    namespace,
                    prefix: "cm-",
                };
                (workload, plan.creates[level])
            } else {
                let workload = Workload::Update {
                    namespace,
                    existing: created[level],
                };
                (workload, plan.updates[level])
            };
            wait_for_quiet(plan.quiet_wait, pid).await;
            let measured = load(target, &workload, clients, ops, plan.phase_cap).await?;
            if operation == Operation::Create {
                created[level] = measured.ok;
                if !options.runs(Phase::Creates) {
                    continue;
                }
            }
            results.loads.push(LoadResult {
                backend,
                operation,
                clients,
                measured,
            });
        }
    }

    if options.runs(Phase::Gets) || options.runs(Phase::Lists) {
        reads(options, target, deadline, results).await?;
    }
    if options.runs(Phase::Watch) {
        for &watchers in &LEVELS {
            let budget =
                Duration::from_secs_f64(plan.watch_events as f64 / f64::from(plan.watch_rate));
            if Instant::now() + budget + WATCH_GRACE >= deadline {
                bail!(
                    "the time cap of this backend passed before the watch with {watchers} watchers"
                );
            }
            let namespace = format!("bench-watch-{watchers}");
            target.create_namespace(&namespace).await?;
            wait_for_quiet(plan.quiet_wait, pid).await;
            results
                .watches
                .push(watch(plan, target, &namespace, watchers).await?);
        }
    }
    Ok(())
}

/// Gets of one object and lists of a namespace holding exactly [`LIST_OBJECTS`] objects.
async fn reads<T: Target>(
    options: &Options,
    target: &T,
    deadline: Instant,
    results: &mut Results,
) -> anyhow::Result<()> {
    let plan = &options.plan;
    let namespace = "bench-list";
    target.create_namespace(namespace).await?;
    let mut seeder = target
        .worker(&Workload::Create {
            namespace: namespace.into(),
            prefix: "listed-",
        })
        .await?;
    for i in 0..LIST_OBJECTS {
        seeder.run(i).await?;
    }
    let items = target.count(namespace).await?;
    if items != LIST_OBJECTS {
        bail!("the list namespace holds {items} objects, not {LIST_OBJECTS}");
    }
    let mut phases = Vec::new();
    if options.runs(Phase::Gets) {
        let get = Workload::Get {
            namespace: namespace.into(),
        };
        phases.push((Operation::Get, get, plan.gets));
    }
    if options.runs(Phase::Lists) {
        let list = Workload::List {
            namespace: namespace.into(),
        };
        phases.push((Operation::List, list, plan.lists));
    }
    for (operation, workload, ops) in phases {
        for (level, &clients) in LEVELS.iter().enumerate() {
            if Instant::now() >= deadline {
                bail!(
                    "the time cap of this backend passed before {} at {clients} clients",
                    operation.name()
                );
            }
            wait_for_quiet(plan.quiet_wait, target.server_pid()).await;
            let measured = load(target, &workload, clients, ops[level], plan.phase_cap).await?;
            results.loads.push(LoadResult {
                backend: target.backend(),
                operation,
                clients,
                measured,
            });
        }
    }
    Ok(())
}

/// Waits, at most `limit`, for a half second in which other processes use less than a fifth of a
/// core, so that a build running beside the benchmark disturbs it less. `server` is the separate
/// server process, which does not count as other.
async fn wait_for_quiet(limit: Duration, server: Option<u32>) {
    let give_up = Instant::now() + limit;
    while Instant::now() < give_up {
        let before = CpuSample::now(server);
        tokio::time::sleep(Duration::from_millis(500)).await;
        if CpuSample::now(server).since(&before).other < 20.0 {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Watch phase

/// The result of one watch level.
struct WatchResult {
    backend: Backend,
    watchers: usize,
    /// Writes the writer made successfully.
    written: usize,
    write_errors: usize,
    elapsed: Duration,
    /// Events each watcher received.
    received: Vec<usize>,
    /// Send-to-receipt latencies over every watcher, sorted.
    latencies: Vec<Duration>,
    /// Latencies of the writes themselves (request to response), sorted.
    write_latencies: Vec<Duration>,
    /// What a watcher saw that was not the expected ADDED event, if anything.
    anomaly: Option<String>,
    cpu: CpuUse,
}

/// The part of an atoll watch event the benchmark reads.
#[derive(Deserialize)]
struct WatchEvent {
    #[serde(rename = "type")]
    kind: String,
    object: EventObject,
}

#[derive(Deserialize)]
struct EventObject {
    metadata: EventMetadata,
}

#[derive(Deserialize)]
struct EventMetadata {
    #[serde(default)]
    name: String,
}

/// What one watcher measured.
struct Watched {
    latencies: Vec<Duration>,
    anomaly: Option<String>,
}

impl Watched {
    fn new(events: usize) -> Self {
        Watched {
            latencies: Vec::with_capacity(events),
            anomaly: None,
        }
    }

    /// Notes the first odd thing the watcher saw.
    fn odd(&mut self, what: String) {
        self.anomaly.get_or_insert(what);
    }

    /// Records one event (`kind` in the Kubernetes watch's words) of the object `name`, read at
    /// `received`: the latency from its write's send, or what was odd about it.
    fn record(&mut self, kind: &str, name: &str, received: Instant, sent: &[OnceLock<Instant>]) {
        let index = name
            .strip_prefix("w-")
            .and_then(|i| i.parse::<usize>().ok());
        match (kind, index.and_then(|i| sent.get(i))) {
            ("ADDED", Some(slot)) => match slot.get() {
                Some(at) => self.latencies.push(received.duration_since(*at)),
                None => self.odd("an event arrived before its write was sent".into()),
            },
            // The cluster's CA, which atoll (as kube-controller-manager) writes into every new
            // namespace: not one of the benchmark's writes.
            (_, None) if name == "kube-root-ca.crt" => {}
            (kind, _) => self.odd(format!("unexpected {kind} event for {name:?}")),
        }
    }
}

async fn watch<T: Target>(
    plan: &Plan,
    target: &T,
    namespace: &str,
    watchers: usize,
) -> anyhow::Result<WatchResult> {
    let events = plan.watch_events;
    let sent: Arc<Vec<OnceLock<Instant>>> =
        Arc::new((0..events).map(|_| OnceLock::new()).collect());
    let period = Duration::from_secs_f64(1.0 / f64::from(plan.watch_rate));
    let writing_time = period * u32::try_from(events).unwrap_or(u32::MAX);

    // Open every watch and wait until the server has taken it before writing.
    let watch_deadline = Instant::now() + REQUEST_TIMEOUT + writing_time + WATCH_GRACE * 2;
    let mut tasks = Vec::with_capacity(watchers);
    for _ in 0..watchers {
        tasks.push(
            target
                .watcher(namespace, sent.clone(), watch_deadline)
                .await?,
        );
    }

    let before = CpuSample::now(target.server_pid());
    let start = Instant::now();
    let workload = Workload::Create {
        namespace: namespace.into(),
        prefix: "w-",
    };
    let mut writer = target.worker(&workload).await?;
    let mut write_latencies = Vec::with_capacity(events);
    let mut write_errors = 0;
    let mut first_write_error = None;
    for (i, slot) in sent.iter().enumerate() {
        tokio::time::sleep_until((start + period * u32::try_from(i).unwrap_or(u32::MAX)).into())
            .await;
        let at = Instant::now();
        let _ = slot.set(at);
        match writer.run(i).await {
            Ok(()) => write_latencies.push(at.elapsed()),
            Err(err) => {
                write_errors += 1;
                first_write_error.get_or_insert(format!("{err:#}"));
                if writer.broken() {
                    writer = target.worker(&workload).await?;
                }
            }
        }
    }
    let mut received = Vec::with_capacity(watchers);
    let mut latencies = Vec::with_capacity(events * watchers);
    let mut anomaly = first_write_error.map(|e| format!("write failed: {e}"));
    for task in tasks {
        let watched = task.await?;
        received.push(watched.latencies.len());
        latencies.extend(watched.latencies);
        if anomaly.is_none() {
            anomaly = watched.anomaly;
        }
    }
    let elapsed = start.elapsed();
    let cpu = CpuSample::now(target.server_pid()).since(&before);
    latencies.sort_unstable();
    write_latencies.sort_unstable();
    Ok(WatchResult {
        backend: target.backend(),
        watchers,
        written: write_latencies.len(),
        write_errors,
        elapsed,
        received,
        latencies,
        write_latencies,
        anomaly,
        cpu,
    })
}

// ---------------------------------------------------------------------------------------------
// Memory of a separate process

fn memory_phase(plan: &Plan, root: &Path, report: &mut Report) -> anyhow::Result<()> {
    let data_dir = root.join("process");
    std::fs::create_dir_all(&data_dir)?;
    let started = Instant::now();
    let mut process = match Process::apiserver_on_a_free_port(&data_dir) {
        Ok(process) => process,
        Err(err) => {
            report.fail(format!(
                "idle memory: {err:#} (build the binary first: cargo build --release -p atoll)"
            ));
            println!("## Idle memory\n\nnot measured: `atoll apiserver` did not start.\n");
            return Ok(());
        }
    };
    let ready = started.elapsed();
    let pid = process.child.id();
    let at_ready = memory_of(pid)?;
    std::thread::sleep(plan.idle);
    let idle = memory_of(pid)?;
    let binary = atoll_tests::atoll_binary().map(|p| p.display().to_string())?;
    let _ = process.terminate();
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Idle memory of `atoll apiserver` (SQLite, separate process)\n\n\
         binary: `{}`; ready {:.0} ms after spawn.\n\n\
         | when | VmRSS MiB | VmHWM MiB | RssAnon MiB | RssFile MiB | threads |\n\
         |---|---:|---:|---:|---:|---:|",
        short_binary(&binary),
        ready.as_secs_f64() * 1000.0
    );
    for (when, memory) in [
        ("ready".to_owned(), at_ready),
        (format!("after {} s idle", plan.idle.as_secs()), idle),
    ] {
        let _ = writeln!(
            table,
            "| {when} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
            mib(memory.rss),
            mib(memory.hwm),
            mib(memory.anon),
            mib(memory.file),
            memory.threads
        );
    }
    println!("{table}");
    Ok(())
}

/// The binary's path from its `target` directory on, so that no machine path is printed.
fn short_binary(path: &str) -> String {
    path.rfind("/release/")
        .or_else(|| path.rfind("/debug/"))
        .map_or_else(|| path.to_owned(), |i| format!("target{}", &path[i..]))
}

/// Memory figures from `/proc/PID/status`, in KiB.
struct Memory {
    rss: u64,
    hwm: u64,
    anon: u64,
    file: u64,
    threads: u64,
}

fn memory_of(pid: u32) -> anyhow::Result<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok(Memory {
        rss: field("VmRSS"),
        hwm: field("VmHWM"),
        anon: field("RssAnon"),
        file: field("RssFile"),
        threads: field("Threads"),
    })
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The filesystem type holding `path` (so that a reader knows whether fsync was real).
fn filesystem_of(path: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let path: PathBuf = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _device = fields.next()?;
            let mount = fields.next()?;
            let kind = fields.next()?;
            path.starts_with(mount)
                .then(|| (mount.len(), kind.to_owned()))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "an unknown filesystem".into(), |(_, kind)| kind)
}

// ---------------------------------------------------------------------------------------------
// Tables

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_secs_f64() * 1000.0
}

/// A CPU figure, or a dash where the column does not apply.
fn percent_or_dash(value: f64, applies: bool) -> String {
    if applies {
        format!("{value:.0}")
    } else {
        "–".into()
    }
}

fn print_loads(loads: &[LoadResult], report: &mut Report) {
    for operation in OPERATIONS {
        if !loads.iter().any(|r| r.operation == operation) {
            continue;
        }
        let (atoll, etcd) = operation.describe();
        let mut table = String::new();
        let _ = writeln!(
            table,
            "## {} ({atoll}{})\n\n\
             | backend | clients | ops | errors | elapsed s | {}/s | p50 ms | p99 ms | server CPU % | (writer %) | client CPU % | other CPU % |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            operation.name(),
            if loads
                .iter()
                .any(|r| r.operation == operation && r.backend == Backend::Etcd)
            {
                format!("; etcd: {etcd}")
            } else {
                String::new()
            },
            operation.name(),
        );
        for result in loads.iter().filter(|r| r.operation == operation) {
            let atoll = result.backend != Backend::Etcd;
            let _ = writeln!(
                table,
                "| {} | {} | {}{} | {} | {:.2} | {:.0} | {:.2} | {:.2} | {:.0} | {} | {:.0} | {:.0} |",
                result.backend.name(),
                result.clients,
                result.measured.ok,
                if result.measured.capped {
                    " (time cap)"
                } else {
                    ""
                },
                result.measured.errors,
                result.measured.elapsed.as_secs_f64(),
                result.measured.rate(),
                quantile(&result.measured.latencies, 0.5),
                quantile(&result.measured.latencies, 0.99),
                result.measured.cpu.server,
                percent_or_dash(result.measured.cpu.writer, atoll),
                result.measured.cpu.client,
                result.measured.cpu.other,
            );
            if result.measured.errors > 0 {
                report.fail(format!(
                    "{} {} at {} clients: {} failed, first: {}",
                    result.backend.name(),
                    operation.name(),
                    result.clients,
                    result.measured.errors,
                    result.measured.first_error.as_deref().unwrap_or("?"),
                ));
            }
        }
        println!("{table}");
    }
}

fn print_watches(plan: &Plan, watches: &[WatchResult], report: &mut Report) {
    if watches.is_empty() {
        return;
    }
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Watch delivery\n\n\
         One writer creates ConfigMaps at {} per second into a namespace that every watcher \
         watches (etcd: puts new keys under a prefix that every watcher watches, each watcher on \
         a connection of its own); latency runs from the write's send to a watcher's read of its \
         event.\n\n\
         | backend | watchers | writes | elapsed s | events per watcher (min / max of {}) | deliveries | p50 ms | p99 ms | max ms | write p50 ms | server CPU % | (writer %) | client CPU % | other CPU % |\n\
         |---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        plan.watch_rate, plan.watch_events,
    );
    for result in watches {
        let min = result.received.iter().copied().min().unwrap_or(0);
        let max = result.received.iter().copied().max().unwrap_or(0);
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.2} | {min} / {max} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {} | {:.0} | {:.0} |",
            result.backend.name(),
            result.watchers,
            result.written,
            result.elapsed.as_secs_f64(),
            result.latencies.len(),
            quantile(&result.latencies, 0.5),
            quantile(&result.latencies, 0.99),
            quantile(&result.latencies, 1.0),
            quantile(&result.write_latencies, 0.5),
            result.cpu.server,
            percent_or_dash(result.cpu.writer, result.backend != Backend::Etcd),
            result.cpu.client,
            result.cpu.other,
        );
        if result.write_errors > 0 || min < plan.watch_events || result.anomaly.is_some() {
            report.fail(format!(
                "{} watch with {} watchers: {} write(s) failed, {} of {} watchers got every event{}",
                result.backend.name(),
                result.watchers,
                result.write_errors,
                result.received.iter().filter(|&&n| n == plan.watch_events).count(),
                result.watchers,
                result
                    .anomaly
                    .as_deref()
                    .map(|a| format!("; {a}"))
                    .unwrap_or_default(),
            ));
        }
    }
    println!("{table}");
}

/// `a / b` with two decimals, or a dash when either is missing.
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() && b.is_finite() => format!("{:.2}", a / b),
        _ => "–".into(),
    }
}

/// A figure with `decimals` decimals, or a dash when it is missing.
fn figure(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.decimals$}"))
}

/// The side-by-side table: both atoll backends against etcd, with the ratios atoll/etcd.
/// The cost of authorization: the same workloads as `system:masters` (let through before RBAC)
/// and as a user RBAC allows, on SQLite, side by side.
fn print_authorization(results: &Results, rounds: &[RbacRow]) {
    let off = Backend::Atoll(StorageKind::Sqlite);
    let on = Backend::AtollRbac;
    let find = |backend: Backend, operation: Operation, clients: usize| {
        results
            .loads
            .iter()
            .find(|r| r.backend == backend && r.operation == operation && r.clients == clients)
    };
    let mut table = String::from(
        "## RBAC on against off, backend runs\n\n\
         The sqlite and sqlite-rbac backends' runs (as the admin, in system:masters, allowed before \
         RBAC; and as a user RBAC allows), one after the other. Ratios are on/off.\n\n\
         | op | clients | off /s | on /s | ratio on/off | off p50 ms | on p50 ms |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut rows = 0;
    for operation in OPERATIONS {
        for clients in LEVELS {
            let (Some(a), Some(b)) = (find(off, operation, clients), find(on, operation, clients))
            else {
                continue;
            };
            rows += 1;
            let _ = writeln!(
                table,
                "| {} | {clients} | {:.0} | {:.0} | {} | {:.2} | {:.2} |",
                operation.name(),
                a.measured.rate(),
                b.measured.rate(),
                ratio(Some(b.measured.rate()), Some(a.measured.rate())),
                quantile(&a.measured.latencies, 0.5),
                quantile(&b.measured.latencies, 0.5),
            );
        }
    }
    if rows > 0 {
        println!("{table}");
    }
    if !rounds.is_empty() {
        let mut table = format!(
            "## RBAC on against off\n\n\
             One server over SQLite, each workload run in {} rounds alternately as the admin \
             (system:masters, allowed before RBAC is consulted) and as a user whose access RBAC \
             grants (a ClusterRoleBinding that 20 other bindings precede), the first of each pair \
             alternating too, so that drift and the other's warm-up fall on both alike. Ratios are \
             on/off per round (1 is no cost): their median, and their range.\n\n\
             | op | clients | ops per run | off /s (median) | on /s (median) | ratio on/off (median) | lowest | highest |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|\n",
            rounds[0].ratios.len()
        );
        for row in rounds {
            let _ = writeln!(
                table,
                "| {} | {} | {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} |",
                row.operation.name(),
                row.clients,
                row.ops,
                median(&row.off),
                median(&row.on),
                median(&row.ratios),
                row.ratios.iter().copied().fold(f64::INFINITY, f64::min),
                row.ratios.iter().copied().fold(0.0, f64::max),
            );
        }
        println!("{table}");
    }
    if rows > 0 || !rounds.is_empty() {
        print_decision_cost();
    }
}

/// One workload's rounds of the rbac phase: rates as the admin (off) and as the RBAC user (on),
/// and each round's ratio on/off.
struct RbacRow {
    operation: Operation,
    clients: usize,
    ops: usize,
    off: Vec<f64>,
    on: Vec<f64>,
    ratios: Vec<f64>,
}

/// Rounds of each workload of the rbac phase.
const RBAC_ROUNDS: usize = 5;

/// The rbac phase: on one server, gets, lists, creates and updates at 1 and 10 clients, each run
/// [`RBAC_ROUNDS`] times as the admin and as the RBAC user in alternation (the plan's reads, a
/// fifth of its writes per run).
async fn rbac_rounds(plan: &Plan, server: &ServerRuntime) -> anyhow::Result<Vec<RbacRow>> {
    let off = AtollTarget {
        backend: Backend::Atoll(StorageKind::Sqlite),
        endpoint: server.endpoint()?,
    };
    let on = AtollTarget {
        backend: Backend::AtollRbac,
        endpoint: server.rbac_user().await?,
    };
    let list = "bench-list";
    off.create_namespace(list).await?;
    let mut seeder = off
        .worker(&Workload::Create {
            namespace: list.into(),
            prefix: "listed-",
        })
        .await?;
    for i in 0..LIST_OBJECTS {
        seeder.run(i).await?;
    }
    let mut rows = Vec::new();
    for operation in [
        Operation::Get,
        Operation::List,
        Operation::Create,
        Operation::Update,
    ] {
        for (level, clients) in [1usize, 10].into_iter().enumerate() {
            // Reads take a fraction of a second at the plan's counts; writes several.
            let ops = match operation {
                Operation::Get => plan.gets[level],
                Operation::List => plan.lists[level],
                Operation::Create => plan.creates[level] / 5,
                Operation::Update => plan.updates[level] / 5,
            };
            let mut row = RbacRow {
                operation,
                clients,
                ops,
                off: Vec::new(),
                on: Vec::new(),
                ratios: Vec::new(),
            };
            for round in 0..RBAC_ROUNDS {
                let mut rates = [0.0f64; 2];
                let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
                for who in order {
                    let target = if who == 0 { &off } else { &on };
                    // Creates and updates write a namespace of the run's own.
                    let namespace = format!("rbac-{}-{clients}-{round}-{who}", operation.name());
                    let workload = match operation {
                        Operation::Get => Workload::Get {
                            namespace: list.into(),
                        },
                        Operation::List => Workload::List {
                            namespace: list.into(),
                        },
                        Operation::Create => {
                            target.create_namespace(&namespace).await?;
                            Workload::Create {
                                namespace,
                                prefix: "cm-",
                            }
                        }
                        Operation::Update => {
                            target.create_namespace(&namespace).await?;
                            let made = load(
                                target,
                                &Workload::Create {
                                    namespace: namespace.clone(),
                                    prefix: "cm-",
                                },
                                clients,
                                ops.min(100),
                                plan.phase_cap,
                            )
                            .await?;
                            Workload::Update {
                                namespace,
                                existing: made.ok.max(1),
                            }
                        }
                    };
                    wait_for_quiet(plan.quiet_wait, None).await;
                    let measured = load(target, &workload, clients, ops, plan.phase_cap).await?;
                    if measured.errors > 0 {
                        bail!(
                            "{} at {clients} clients as {}: {}",
                            operation.name(),
                            if who == 0 { "the admin" } else { RBAC_USER },
                            measured.first_error.unwrap_or_default()
                        );
                    }
                    rates[who] = measured.rate();
                }
                row.off.push(rates[0]);
                row.on.push(rates[1]);
                row.ratios.push(rates[1] / rates[0].max(1e-9));
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// What one authorization decision costs, measured alone (the load figures above vary more
/// from run to run than it could move them): the default policy plus the benchmark's 22
/// bindings in memory, decided for `system:masters` and for the RBAC user.
fn print_decision_cost() {
    use atoll_apiserver::auth::User;
    use atoll_apiserver::authz::{Attributes, Authorizer, ResourceRequest};
    const DECISIONS: u32 = 200_000;
    let authorizer = Authorizer::new(None);
    let (roles, bindings) = atoll_apiserver::authz::defaults::objects();
    let mut objects: Vec<(String, serde_json::Value)> = Vec::new();
    let key =
        |plural: &str, name: &str| format!("/registry/rbac.authorization.k8s.io/{plural}/{name}");
    for role in roles {
        objects.push((
            key("clusterroles", role["metadata"]["name"].as_str().unwrap()),
            role,
        ));
    }
    for binding in bindings {
        objects.push((
            key(
                "clusterrolebindings",
                binding["metadata"]["name"].as_str().unwrap(),
            ),
            binding,
        ));
    }
    let binding = |user: &str, role: &str| {
        serde_json::json!({"roleRef": {"kind": "ClusterRole", "name": role},
                           "subjects": [{"kind": "User", "name": user}]})
    };
    for i in 0..20 {
        objects.push((
            key("clusterrolebindings", &format!("a-reader-{i}")),
            binding(&format!("reader-{i}"), "view"),
        ));
    }
    objects.push((
        key("clusterroles", "bench-writer"),
        serde_json::json!({"rules": [{"apiGroups": [""], "resources": ["namespaces", "configmaps"], "verbs": ["*"]}]}),
    ));
    objects.push((
        key("clusterrolebindings", "z-bench-writer"),
        binding(RBAC_USER, "bench-writer"),
    ));
    authorizer.load_objects(objects.iter().map(|(k, v)| (k.as_str(), v)));
    let get = Attributes::resource(
        "get",
        ResourceRequest {
            resource: "configmaps".into(),
            namespace: Some("bench".into()),
            name: Some("cm-1".into()),
            ..ResourceRequest::default()
        },
    );
    let user = |name: &str, groups: &[&str]| User {
        name: name.into(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        ..User::default()
    };
    let admin = user("admin", &["system:masters", "system:authenticated"]);
    let writer = user(RBAC_USER, &["system:authenticated"]);
    let mut table = String::from("| decision | allowed | ns per decision |\n|---|---|---:|\n");
    for (who, caller) in [
        ("system:masters", &admin),
        ("RBAC user (27th binding)", &writer),
    ] {
        let started = Instant::now();
        let mut allowed = 0;
        for _ in 0..DECISIONS {
            allowed += u32::from(authorizer.check(std::hint::black_box(caller), &get).is_ok());
        }
        let ns = started.elapsed().as_nanos() as f64 / f64::from(DECISIONS);
        let _ = writeln!(table, "| {who} | {allowed}/{DECISIONS} | {ns:.0} |");
    }
    println!("{table}");
}

fn print_comparison(options: &Options, results: &Results, etcd: &EtcdRun) {
    let version = match etcd {
        EtcdRun::NotAsked => return,
        EtcdRun::NotInstalled => {
            println!(
                "## atoll against etcd\n\nskipped: etcd is not installed (no `etcd` on the PATH). \
                 Install it with: {ETCD_INSTALL}\n"
            );
            return;
        }
        EtcdRun::Ran { version } => version,
    };
    let sqlite = Backend::Atoll(StorageKind::Sqlite);
    let memory = Backend::Atoll(StorageKind::Memory);
    let on_etcd = Backend::Atoll(StorageKind::Etcd);
    let rate = |backend: Backend, operation: Operation, clients: usize| {
        results
            .loads
            .iter()
            .find(|r| r.backend == backend && r.operation == operation && r.clients == clients)
            .map(|r| r.measured.rate())
    };
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## atoll against etcd\n\n\
         {version} (started by the benchmark on loopback, data directory on the same filesystem, \
         WAL fsynced at every commit), driven directly over gRPC with one connection per client; \
         values are the ConfigMap's JSON ({} bytes) under `/registry/configmaps/NAMESPACE/NAME`; \
         reads are etcd's default linearizable ranges. atoll's figures include the whole \
         Kubernetes API: HTTPS, authentication, decoding, defaulting, validation, the object's \
         metadata and the watch fan-out. Ratios are atoll/etcd: above 1 atoll is faster. Server \
         and client share the machine's cores, so a client that costs more CPU per request \
         (etcd's gRPC client against atoll's lean HTTP/1.1 one) lowers its server's figure too: \
         the CPU table after this one tells each side's own cost. atoll etcd is atoll's API server \
         over etcd (`--storage etcd`, an etcd of its own, one member): what the API costs on top of \
         etcd.\n\n\
         | op | clients | atoll sqlite /s | atoll memory /s | atoll etcd /s | etcd /s | ratio sqlite/etcd | ratio memory/etcd | ratio atoll-etcd/etcd |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|",
        config_map_body("cm-0").len(),
    );
    let mut rows = 0;
    for operation in OPERATIONS {
        for &clients in &LEVELS {
            let (s, m, a, e) = (
                rate(sqlite, operation, clients),
                rate(memory, operation, clients),
                rate(on_etcd, operation, clients),
                rate(Backend::Etcd, operation, clients),
            );
            if s.is_none() && m.is_none() && a.is_none() && e.is_none() {
                continue;
            }
            rows += 1;
            let _ = writeln!(
                table,
                "| {} | {clients} | {} | {} | {} | {} | {} | {} | {} |",
                operation.name(),
                figure(s, 0),
                figure(m, 0),
                figure(a, 0),
                figure(e, 0),
                ratio(s, e),
                ratio(m, e),
                ratio(a, e),
            );
        }
    }
    if rows == 0 {
        table.clear();
        let _ = writeln!(table, "## atoll against etcd ({version})\n");
    }
    let target: Vec<String> = [Operation::Create, Operation::Update]
        .into_iter()
        .filter_map(|operation| {
            let s = rate(sqlite, operation, 100)?;
            let e = rate(Backend::Etcd, operation, 100)?;
            let verdict = if s >= e { "met" } else { "not met" };
            Some(format!("{} {:.2} ({verdict})", operation.name(), s / e))
        })
        .collect();
    if !target.is_empty() {
        let _ = writeln!(
            table,
            "\nTarget, atoll over SQLite at least as fast as etcd at 100 clients (ratio ≥ 1.00): {}.",
            target.join(", ")
        );
    }
    print_cpu_per_op(&mut table, results);
    if options.runs(Phase::Watch) && !results.watches.is_empty() {
        let latency = |backend: Backend, watchers: usize, q: f64| {
            results
                .watches
                .iter()
                .find(|w| w.backend == backend && w.watchers == watchers)
                .map(|w| quantile(&w.latencies, q))
        };
        let _ = writeln!(
            table,
            "\nWatch delivery, one writer at {} writes/s: latency from a write's send to a \
             watcher's read of its event. Ratios are atoll/etcd latency: below 1 atoll delivers \
             sooner.\n\n\
             | watchers | sqlite p50 ms | sqlite p99 ms | memory p50 ms | memory p99 ms | etcd p50 ms | etcd p99 ms | sqlite/etcd p50 | sqlite/etcd p99 | memory/etcd p50 | memory/etcd p99 |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            options.plan.watch_rate,
        );
        for &watchers in &LEVELS {
            let [s50, s99, m50, m99, e50, e99] = [
                latency(sqlite, watchers, 0.5),
                latency(sqlite, watchers, 0.99),
                latency(memory, watchers, 0.5),
                latency(memory, watchers, 0.99),
                latency(Backend::Etcd, watchers, 0.5),
                latency(Backend::Etcd, watchers, 0.99),
            ];
            let _ = writeln!(
                table,
                "| {watchers} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                figure(s50, 2),
                figure(s99, 2),
                figure(m50, 2),
                figure(m99, 2),
                figure(e50, 2),
                figure(e99, 2),
                ratio(s50, e50),
                ratio(s99, e99),
                ratio(m50, e50),
                ratio(m99, e99),
            );
        }
    }
    println!("{table}");
}

/// CPU time per request, server's and client's, of each backend: what bounds a figure when the
/// server and the client together fill the machine's cores.
fn print_cpu_per_op(table: &mut String, results: &Results) {
    let per_op = |backend: Backend, operation: Operation, clients: usize| {
        results
            .loads
            .iter()
            .find(|r| r.backend == backend && r.operation == operation && r.clients == clients)
            .filter(|r| r.measured.ok > 0)
            .map(|r| {
                let micros = |percent: f64| r.measured.cpu_per_op(percent) * 1e6;
                format!(
                    "{:.0} / {:.0}",
                    micros(r.measured.cpu.server),
                    micros(r.measured.cpu.client)
                )
            })
            .unwrap_or_else(|| "–".into())
    };
    let _ = writeln!(
        table,
        "\nCPU per request, server / client, in µs (server: atoll's server threads, or the etcd \
         process).\n\n\
         | op | clients | atoll sqlite | atoll memory | etcd |\n\
         |---|---:|---:|---:|---:|"
    );
    for operation in OPERATIONS {
        for &clients in &LEVELS {
            if !results
                .loads
                .iter()
                .any(|r| r.operation == operation && r.clients == clients)
            {
                continue;
            }
            let _ = writeln!(
                table,
                "| {} | {clients} | {} | {} | {} |",
                operation.name(),
                per_op(Backend::Atoll(StorageKind::Sqlite), operation, clients),
                per_op(Backend::Atoll(StorageKind::Memory), operation, clients),
                per_op(Backend::Etcd, operation, clients),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Works phase: the writes a hub's fan-out makes, one kind at a time

/// Clients of each step of the works phase (the hub's own concurrency is of this order).
const WORK_CLIENTS: usize = 16;
/// ConfigMaps in each Work of the works phase, as in the Work fan-out benchmark.
const WORK_MANIFESTS: usize = 10;
/// The Work CRD's name.
const WORK_CRD: &str = "works.multicluster.x-k8s.io";

fn works(namespace: &str) -> String {
    format!("/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/works")
}

/// A Work of [`WORK_MANIFESTS`] ConfigMaps of about 300 bytes of data each, as the hub stamps
/// it; `generation` is written into the first ConfigMap's data, so that each generation changes
/// one ConfigMap.
fn work_body(name: &str, generation: usize) -> String {
    let manifests: Vec<serde_json::Value> = (0..WORK_MANIFESTS)
        .map(|i| {
            let mut value = "x".repeat(300);
            if i == 0 {
                let _ = write!(value, " generation {generation}");
            }
            serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("config-{i}"), "namespace": "default"},
                "data": {"value": value},
            })
        })
        .collect();
    serde_json::json!({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "labels": {"atoll.dev/placement": "bench"},
                     "finalizers": ["multicluster.x-k8s.io/work-cleanup"]},
        "spec": {"workload": {"manifests": manifests}},
    })
    .to_string()
}

/// A Work's status as its agent reports it once everything applied at `generation`: the four
/// summary conditions, and the same four for each manifest.
fn work_status_body(generation: usize) -> String {
    let conditions = |what: &str| {
        [
            ("Applied", "True", "Applied"),
            ("Progressing", "False", "Completed"),
            ("Available", "True", "ResourcesAvailable"),
            ("Degraded", "False", "AsExpected"),
        ]
        .map(|(kind, status, reason)| {
            serde_json::json!({
                "type": kind, "status": status, "reason": reason,
                "message": format!("{what}: {reason}"),
                "observedGeneration": generation,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            })
        })
    };
    let manifests: Vec<serde_json::Value> = (0..WORK_MANIFESTS)
        .map(|i| {
            serde_json::json!({
                "identifier": {"ordinal": i, "version": "v1", "kind": "ConfigMap",
                               "resource": "configmaps", "namespace": "default",
                               "name": format!("config-{i}")},
                "conditions": conditions(&format!("ConfigMap default/config-{i}")),
            })
        })
        .collect();
    serde_json::json!({"status": {
        "conditions": conditions("every manifest"),
        "manifestConditions": manifests,
    }})
    .to_string()
}

/// One step of the works phase.
struct WorkRow {
    step: &'static str,
    request: &'static str,
    measured: Measured,
}

/// The works phase: on a fresh server with the Work CRD, [`Plan::works`] Works created by
/// server-side apply, their statuses written, the Works changed, their statuses written again,
/// and the same statuses once more (a write that changes nothing), each step at
/// [`WORK_CLIENTS`] clients that ask for metadata-only answers, as the hub does.
async fn work_writes(plan: &Plan, server: &ServerRuntime) -> anyhow::Result<Vec<WorkRow>> {
    let target = AtollTarget {
        backend: Backend::Atoll(StorageKind::Sqlite),
        endpoint: server.endpoint()?,
    };
    let namespace = "bench-works".to_owned();
    target.create_namespace(&namespace).await?;
    install_work_crd(&target.endpoint, &namespace).await?;
    let mut rows = Vec::new();
    for (step, request, apply, generation) in WORK_STEPS {
        let workload = if apply {
            Workload::WorkApply {
                namespace: namespace.clone(),
                generation,
            }
        } else {
            Workload::WorkStatus {
                namespace: namespace.clone(),
                generation,
            }
        };
        wait_for_quiet(plan.quiet_wait, None).await;
        let measured = load(&target, &workload, WORK_CLIENTS, plan.works, plan.phase_cap).await?;
        if measured.errors > 0 || measured.capped {
            bail!(
                "{step}: {} of {} Works written within {:?}; first error: {}",
                measured.ok,
                plan.works,
                plan.phase_cap,
                measured.first_error.unwrap_or_default()
            );
        }
        if step == "status" {
            check_status_kept(&target.endpoint, &namespace).await?;
        }
        rows.push(WorkRow {
            step,
            request,
            measured,
        });
    }
    Ok(rows)
}

/// Creates the Work CRD as the hub does and waits until Works are served.
async fn install_work_crd(endpoint: &Endpoint, namespace: &str) -> anyhow::Result<()> {
    let crd = atoll_api::crd::all()?
        .into_iter()
        .find(|crd| crd.metadata.name.as_deref() == Some(WORK_CRD))
        .with_context(|| format!("atoll-api defines no CRD {WORK_CRD}"))?;
    let mut connection = endpoint.connect().await?;
    connection
        .call(Call::json(
            Method::POST,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions".into(),
            "application/json",
            serde_json::to_string(&crd)?,
        ))
        .await?;
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        match connection.call(Call::get(works(namespace))).await {
            Ok(_) => return Ok(()),
            Err(_) if Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => return Err(err.context("Works were not served within 30 s of the CRD")),
        }
    }
}

/// Fails unless the first Work kept every manifest's conditions: a status the schema pruned
/// would make the status steps cheaper than the hub's.
async fn check_status_kept(endpoint: &Endpoint, namespace: &str) -> anyhow::Result<()> {
    let mut connection = endpoint.connect().await?;
    let body = connection
        .call(Call::get(format!("{}/work-0", works(namespace))))
        .await?;
    let work: serde_json::Value = serde_json::from_slice(&body)?;
    let kept = work["status"]["manifestConditions"]
        .as_array()
        .map_or(0, Vec::len);
    if kept != WORK_MANIFESTS {
        bail!("work-0 kept {kept} of {WORK_MANIFESTS} manifest conditions in its status: {work}");
    }
    Ok(())
}

/// The works phase's steps: the step, its request, whether it is a server-side apply of the
/// Work (else a merge patch of its status), and the generation written.
const WORK_STEPS: [(&str, &str, bool, usize); 5] = [
    ("create", "server-side apply of a new Work", true, 1),
    (
        "status",
        "merge-PATCH of its status (Applied at generation 1)",
        false,
        1,
    ),
    (
        "update",
        "server-side apply changing one ConfigMap",
        true,
        2,
    ),
    (
        "status of the update",
        "merge-PATCH of its status (Applied at generation 2)",
        false,
        2,
    ),
    ("no-op status", "the same status again", false, 2),
];

/// One step of the works phase written straight to the store.
struct StoreRow {
    step: &'static str,
    /// CPU per write of the thread that ran the store, in µs: in memory, and over SQLite.
    memory: f64,
    sqlite: f64,
    /// Over SQLite, the writer thread's CPU per write, in µs.
    writer: f64,
}

/// The works phase's writes made straight to the API server's store, with no HTTP, TLS,
/// authentication or watch cache: once over the in-memory backend (the store's own work:
/// decoding, patching, validation, managed fields, encoding) and once over SQLite (that and the
/// storage), each on one thread with [`WORK_CLIENTS`] writes under way at once. The difference
/// from the works phase is what the request path costs.
fn store_writes(plan: &Plan, dir: &Path) -> anyhow::Result<(Vec<StoreRow>, Vec<u8>)> {
    std::fs::create_dir_all(dir)?;
    let run = |backend: Arc<dyn atoll_apiserver::storage::Backend>| {
        let works = plan.works;
        std::thread::Builder::new()
            .name("bench-store".into())
            .spawn(move || -> anyhow::Result<StoreSteps> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(store_steps(backend, works))
            })?
            .join()
            .map_err(|_| anyhow::anyhow!("the store's thread panicked"))?
    };
    let (memory, stored) = run(Arc::new(
        atoll_apiserver::storage::memory::MemoryBackend::new(),
    ))?;
    let sqlite_backend = atoll_apiserver::storage::sqlite::SqliteBackend::open(&dir.join("db"))?;
    let (sqlite, _) = run(Arc::new(sqlite_backend))?;
    let rows = WORK_STEPS
        .iter()
        .zip(memory.iter().zip(&sqlite))
        .map(
            |(&(step, ..), (&(memory, _), &(sqlite, writer)))| StoreRow {
                step,
                memory,
                sqlite,
                writer,
            },
        )
        .collect();
    Ok((rows, stored))
}

/// Per step, the CPU per write of the store's thread and of the SQLite writer thread, in µs; and
/// the first Work as stored at the end.
type StoreSteps = (Vec<(f64, f64)>, Vec<u8>);

/// Runs [`WORK_STEPS`] on a store over `backend`; per step, the CPU per write of this thread
/// and of the SQLite writer thread (0 without one), in µs; and the first Work as stored at the
/// end.
async fn store_steps(
    backend: Arc<dyn atoll_apiserver::storage::Backend>,
    works: usize,
) -> anyhow::Result<StoreSteps> {
    use atoll_apiserver::registry::store::{PatchType, Store, WriteOptions};
    use futures::StreamExt as _;
    let store = Store::new(
        backend.clone(),
        Arc::new(atoll_apiserver::registry::Registry::new()),
    );
    let crd = atoll_api::crd::all()?
        .into_iter()
        .find(|crd| crd.metadata.name.as_deref() == Some(WORK_CRD))
        .with_context(|| format!("atoll-api defines no CRD {WORK_CRD}"))?;
    // Metadata-only answers, as the hub and the HTTP steps above ask for: a write that left a
    // field as stored does not decode it for the answer.
    let options = WriteOptions {
        field_manager: "bench-hub".into(),
        force: true,
        metadata_only: true,
        ..Default::default()
    };
    let crds = store.v1_resource("apiextensions.k8s.io", "customresourcedefinitions")?;
    store
        .create(&crds, None, serde_json::to_value(&crd)?, &options)
        .await?;
    store.reload_crds().await?;
    let rt = store
        .registry()
        .catalog()
        .lookup("multicluster.x-k8s.io", "v1alpha1", "works")
        .context("the store does not serve Works after their CRD was stored")?;
    let namespaces = store.v1_resource("", "namespaces")?;
    let namespace = "bench-works";
    let object = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    store.create(&namespaces, None, object, &options).await?;
    let namespace = Some(namespace);
    let mut rows = Vec::new();
    for (step, _, apply, generation) in WORK_STEPS {
        // The bodies are made before the CPU is read: what is measured is the store's.
        let (subresource, patch_type) = if apply {
            (None, PatchType::Apply)
        } else {
            (Some("status"), PatchType::Merge)
        };
        let bodies: Vec<(String, String)> = (0..works)
            .map(|op| {
                let name = format!("work-{op}");
                let body = if apply {
                    work_body(&name, generation)
                } else {
                    work_status_body(generation)
                };
                (name, body)
            })
            .collect();
        let (thread, writer) = (this_thread_cpu_ns(), writer_thread_cpu_ns());
        let written = futures::stream::iter(&bodies)
            .map(|(name, body)| {
                let (store, rt, options) = (&store, &rt, &options);
                async move {
                    store
                        .patch(
                            rt,
                            namespace,
                            name,
                            subresource,
                            patch_type,
                            body.as_bytes(),
                            options,
                        )
                        .await
                        .map(drop)
                        .with_context(|| format!("{step}: {name}"))
                }
            })
            .buffer_unordered(WORK_CLIENTS)
            .collect::<Vec<_>>()
            .await;
        written.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
        let per_write = |now: u64, then: u64| now.saturating_sub(then) as f64 / 1e3 / works as f64;
        rows.push((
            per_write(this_thread_cpu_ns(), thread),
            per_write(writer_thread_cpu_ns(), writer),
        ));
    }
    let stored = backend
        .get(&rt.key(namespace, "work-0"))
        .await?
        .context("work-0 is not stored after the steps")?;
    Ok((rows, stored.value.to_vec()))
}

/// One part of a stored Work and what its JSON costs as a tree.
struct PartRow {
    part: &'static str,
    json_bytes: usize,
    /// The decoded tree's values, and the heap blocks it holds at least (one per non-empty
    /// string, key, array and object).
    values: usize,
    blocks: usize,
    /// CPU per operation on this thread, in µs.
    decode: f64,
    copy: f64,
    encode: f64,
}

/// The parts of a Work the table shows, by JSON pointer.
const WORK_PARTS: [(&str, &str); 5] = [
    ("whole object", ""),
    ("metadata", "/metadata"),
    ("of which managedFields", "/metadata/managedFields"),
    ("spec", "/spec"),
    ("status", "/status"),
];

/// How many times each part of the stored Work is decoded, copied and encoded.
fn part_repeats(plan: &Plan) -> usize {
    plan.works.max(1) * 5
}

/// Decodes, copies and encodes each part of `stored` (a Work's stored JSON) as a tree of
/// `serde_json::Value`, [`part_repeats`] times each on this thread; empty when it does not decode.
fn stored_work_parts(plan: &Plan, stored: &[u8]) -> Vec<PartRow> {
    let Ok(object) = serde_json::from_slice::<serde_json::Value>(stored) else {
        return Vec::new();
    };
    let times = part_repeats(plan);
    // Wall-clock time of a loop on one thread: the thread's CPU clock moves a tick at a time.
    let per_op = |f: &mut dyn FnMut()| {
        let started = Instant::now();
        for _ in 0..times {
            f();
        }
        started.elapsed().as_secs_f64() * 1e6 / times as f64
    };
    WORK_PARTS
        .iter()
        .filter_map(|&(part, pointer)| {
            let value = object.pointer(pointer)?;
            let json = serde_json::to_vec(value).ok()?;
            let tree: serde_json::Value = serde_json::from_slice(&json).ok()?;
            let (values, blocks) = tree_size(&tree);
            Some(PartRow {
                part,
                json_bytes: json.len(),
                values,
                blocks,
                decode: per_op(&mut || {
                    let decoded: serde_json::Value =
                        serde_json::from_slice(&json).unwrap_or_default();
                    drop(std::hint::black_box(decoded));
                }),
                copy: per_op(&mut || drop(std::hint::black_box(tree.clone()))),
                encode: per_op(&mut || {
                    drop(std::hint::black_box(serde_json::to_vec(&tree)));
                }),
            })
        })
        .collect()
}

/// The values in `tree`, and the heap blocks it holds at least: one per non-empty string, key,
/// array and object (an object of more than eleven keys holds more).
fn tree_size(tree: &serde_json::Value) -> (usize, usize) {
    use serde_json::Value;
    let (mut values, mut blocks) = (1, 0);
    let mut add = |(v, b): (usize, usize)| {
        values += v;
        blocks += b;
    };
    match tree {
        Value::String(text) => add((0, usize::from(!text.is_empty()))),
        Value::Array(items) => {
            add((0, usize::from(!items.is_empty())));
            items.iter().for_each(|item| add(tree_size(item)));
        }
        Value::Object(fields) => {
            add((0, usize::from(!fields.is_empty())));
            for (key, value) in fields {
                add((0, usize::from(!key.is_empty())));
                add(tree_size(value));
            }
        }
        _ => {}
    }
    (values, blocks)
}

fn print_stored_work_parts(plan: &Plan, parts: &[PartRow]) {
    if parts.is_empty() {
        return;
    }
    println!(
        "## What a stored Work costs as a tree, by part\n\n\
         The first Work as the store holds it after the five steps (its spec, the agent's whole \
         status, and the managed fields of both writers), each part decoded from its JSON into a \
         tree of JSON values and dropped, copied and dropped, and encoded, {} times each in a loop \
         on one thread: what a write pays for every part of the stored object it decodes, copies, \
         drops and encodes. Values: the decoded tree's JSON values; heap blocks: what it allocates \
         at least (each non-empty string, key, array and object). Time per operation in µs, with \
         the caches warm (in the server they are not).\n\n\
         | part | JSON bytes | values | heap blocks | decode and drop | copy and drop | encode |\n\
         |---|---:|---:|---:|---:|---:|---:|",
        part_repeats(plan)
    );
    for row in parts {
        println!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} |",
            row.part, row.json_bytes, row.values, row.blocks, row.decode, row.copy, row.encode,
        );
    }
    println!();
}

/// The CPU time this thread has run, in ns (`/proc/thread-self/schedstat`).
fn this_thread_cpu_ns() -> u64 {
    schedstat_ns(Path::new("/proc/thread-self/schedstat")).unwrap_or(0)
}

/// The CPU time of this process's SQLite writer threads, in ns (0 without one).
fn writer_thread_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.starts_with("sqlite-writer"))
        })
        .filter_map(|task| schedstat_ns(&task.path().join("schedstat")))
        .sum()
}

/// The first field of a `schedstat` file: time spent on a CPU, in ns.
fn schedstat_ns(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The store alone against the whole server, step by step.
fn print_store_writes(plan: &Plan, http: &[WorkRow], store: &[StoreRow]) {
    if store.is_empty() {
        return;
    }
    println!(
        "## The same writes to the store alone\n\n\
         The {} Works' writes made straight to the API server's store on one thread, \
         {WORK_CLIENTS} under way at once: no HTTP, TLS, authentication, authorization or watch \
         cache. In memory: the store's own work (decoding, patching, validation, managed fields, \
         encoding). Over SQLite: that and the storage, with the SQLite writer thread's share \
         apart. Whole server: the works phase's server CPU per write above; the rest is what the \
         server adds to the store over SQLite (HTTP, TLS, authentication, the watch cache, and \
         the store's work on two threads rather than one). CPU per write in µs.\n\n\
         | step | store in memory | store over SQLite | of which SQLite writer | whole server | rest |\n\
         |---|---:|---:|---:|---:|---:|",
        plan.works
    );
    for row in store {
        let whole = http
            .iter()
            .find(|w| w.step == row.step)
            .map(|w| w.measured.cpu_per_op(w.measured.cpu.server) * 1e6);
        let cell = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.0}"));
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {} | {} |",
            row.step,
            row.memory,
            row.sqlite + row.writer,
            row.writer,
            cell(whole),
            cell(whole.map(|w| w - row.sqlite - row.writer)),
        );
    }
    println!();
}

/// What each of the hub's writes costs the API server, one kind at a time.
fn print_work_writes(plan: &Plan, rows: &[WorkRow]) {
    if rows.is_empty() {
        return;
    }
    println!(
        "## The writes of a Work fan-out (atoll sqlite)\n\n\
         {} Works of {WORK_MANIFESTS} ConfigMaps (300 bytes of data each) in one namespace, \
         written by {WORK_CLIENTS} clients that ask for metadata-only answers, as the hub does; \
         each step writes every Work once. Server CPU per write: the server threads' CPU over the \
         step divided by the writes.\n\n\
         | step | request | writes | writes/s | p50 ms | p99 ms | server CPU % | SQLite writer % | server CPU ms per write | client CPU % | other CPU % |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        plan.works
    );
    for row in rows {
        let m = &row.measured;
        let ms = |q: f64| quantile(&m.latencies, q);
        println!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0} |",
            row.step,
            row.request,
            m.ok,
            m.rate(),
            ms(0.5),
            ms(0.99),
            m.cpu.server,
            m.cpu.writer,
            m.cpu_per_op(m.cpu.server) * 1e3,
            m.cpu.client,
            m.cpu.other,
        );
    }
    println!();
}
