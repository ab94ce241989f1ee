//! Throughput, watch latency and idle memory of the API server.
//!
//! A benchmark program, not a test: it asserts no timings. It starts the API server in this
//! process on its own tokio runtime (its own threads, so that client and server scheduling stay
//! apart), once over durable SQLite in a temporary directory and once in memory, and drives it
//! over HTTPS on 127.0.0.1 with a lean client (one hyper HTTP/1.1 connection per client task,
//! rustls pinned to the server's CA, the admin bearer token). It prints markdown tables of:
//!
//! - creates/s (POST of a ConfigMap with 5 data keys), updates/s (merge-PATCH of one key of an
//!   existing ConfigMap) and lists/s (LIST of a namespace holding 100 ConfigMaps), at 1, 10 and
//!   100 concurrent clients;
//! - watch delivery latency with 1, 10 and 100 watchers on one namespace, while one writer creates
//!   ConfigMaps at a steady rate: from the moment the write is sent to the moment each watcher has
//!   read the event, and how many events each watcher got (all must arrive);
//! - the resident memory of a freshly started `atoll apiserver` process (SQLite) once it is ready
//!   and after it has been idle a few seconds.
//!
//! Each figure comes with its op count, elapsed time and the CPU the server and the client threads
//! used meanwhile (out of 100% per core), which tells which side bounds it.
//!
//! Run with `cargo build --release -p atoll && cargo bench -p atoll-tests --bench apiserver`;
//! `-- --quick` runs small op counts for a smoke run. Without `--bench` (as `cargo test --benches`
//! runs it) the quick plan is used too. `--only creates,lists` and `--backend sqlite` narrow a run
//! (to profile one phase, say). Every load loop is bounded by an op count and a time cap,
//! and all traffic goes to 127.0.0.1. The program fails (after printing every table) when a
//! request fails or a watcher misses an event.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_apiserver::{Config, Server, StorageKind};
use atoll_tests::{Process, free_addr};
use bytes::{Bytes, BytesMut};
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_rustls::TlsConnector;

/// Concurrency levels: clients for the load phases, watchers for the watch phase.
const LEVELS: [usize; 3] = [1, 10, 100];
/// ConfigMaps in the namespace that the list phase reads.
const LIST_OBJECTS: usize = 100;
/// How long one request may take before the op counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long watchers wait for the last events after the writer has finished.
const WATCH_GRACE: Duration = Duration::from_secs(10);
/// Server and client runtimes get this many worker threads each (the machine has 2 cores).
const WORKER_THREADS: usize = 2;

/// How much work each phase does.
#[derive(Clone, Copy, Debug)]
struct Plan {
    name: &'static str,
    /// Creates at 1, 10 and 100 clients.
    creates: [usize; 3],
    /// Updates at 1, 10 and 100 clients.
    updates: [usize; 3],
    /// Lists at 1, 10 and 100 clients.
    lists: [usize; 3],
    /// Events the writer creates per watch level.
    watch_events: usize,
    /// Writes per second during the watch phase.
    watch_rate: u32,
    /// Cap on one load phase.
    phase_cap: Duration,
    /// Cap on the whole run: phases not started by then are skipped.
    total_cap: Duration,
    /// How long the separate process idles before its memory is read again.
    idle: Duration,
    /// How long a phase waits for other processes to leave the CPUs before it starts anyway.
    quiet_wait: Duration,
}

const FULL: Plan = Plan {
    name: "full",
    creates: [3_000, 10_000, 10_000],
    updates: [3_000, 10_000, 10_000],
    lists: [1_000, 2_000, 2_000],
    watch_events: 1_000,
    watch_rate: 100,
    phase_cap: Duration::from_secs(60),
    total_cap: Duration::from_secs(20 * 60),
    idle: Duration::from_secs(5),
    quiet_wait: Duration::from_secs(30),
};

const QUICK: Plan = Plan {
    name: "quick",
    creates: [100, 300, 300],
    updates: [100, 300, 300],
    lists: [30, 100, 100],
    watch_events: 100,
    watch_rate: 100,
    phase_cap: Duration::from_secs(5),
    total_cap: Duration::from_secs(50),
    idle: Duration::from_secs(2),
    quiet_wait: Duration::ZERO,
};

/// Which phases and backends a run measures.
struct Options {
    plan: Plan,
    backends: Vec<StorageKind>,
    phases: Vec<Phase>,
}

/// One part of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Memory,
    Creates,
    Updates,
    Lists,
    Watch,
}

const PHASES: [(&str, Phase); 5] = [
    ("memory", Phase::Memory),
    ("creates", Phase::Creates),
    ("updates", Phase::Updates),
    ("lists", Phase::Lists),
    ("watch", Phase::Watch),
];

const USAGE: &str = "arguments: [--quick] [--only memory,creates,updates,lists,watch] \
                     [--backend sqlite|memory] (cargo adds --bench)";

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> anyhow::Result<Self> {
        let mut bench = false;
        let mut quick = false;
        let mut backends = vec![StorageKind::Sqlite, StorageKind::Memory];
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
                    backends = match args.next().as_deref() {
                        Some("sqlite") => vec![StorageKind::Sqlite],
                        Some("memory") => vec![StorageKind::Memory],
                        _ => bail!(USAGE),
                    };
                }
                other => bail!("unknown argument {other:?}; {USAGE}"),
            }
        }
        Ok(Options {
            plan: if bench && !quick { FULL } else { QUICK },
            backends,
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
    let deadline = started + plan.total_cap;
    let mut report = Report::default();
    let data_root = tempfile::tempdir()?;
    println!(
        "# atoll-apiserver benchmark ({} plan)\n\n{} CPU(s); data directories on {}; client and server \
         runtimes with {WORKER_THREADS} worker threads each. CPU columns: % of one core used by \
         the server threads (of which the SQLite writer thread) and by the client threads while \
         the phase ran, and by other processes on the machine (figures taken while that is high \
         are disturbed).\n",
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
    let mut loads = Vec::new();
    let mut watches = Vec::new();
    for &storage in &options.backends {
        let dir = data_root.path().join(backend_name(storage));
        let server = ServerRuntime::start(storage, &dir)?;
        let endpoint = server.endpoint()?;
        let outcome = client.block_on(drive(
            &options,
            storage,
            endpoint,
            deadline,
            &mut loads,
            &mut watches,
        ));
        server.stop();
        if let Err(err) = outcome {
            report.fail(format!("{}: {err:#}", backend_name(storage)));
        }
    }
    client.shutdown_timeout(Duration::from_secs(5));

    print_loads(&loads, &mut report);
    print_watches(&plan, &watches, &mut report);
    println!("Total time: {:.1} s.", started.elapsed().as_secs_f64());
    if report.failures.is_empty() {
        return Ok(());
    }
    for failure in &report.failures {
        eprintln!("FAILED: {failure}");
    }
    bail!("{} check(s) failed", report.failures.len())
}

/// What went wrong over the run; printed at the end.
#[derive(Default)]
struct Report {
    failures: Vec<String>,
}

impl Report {
    fn fail(&mut self, what: String) {
        self.failures.push(what);
    }
}

fn backend_name(storage: StorageKind) -> &'static str {
    match storage {
        StorageKind::Sqlite => "sqlite",
        StorageKind::Memory => "memory",
    }
}

// ---------------------------------------------------------------------------------------------
// The server under test

/// An in-process API server on a runtime of its own.
struct ServerRuntime {
    runtime: Runtime,
    server: Server,
}

impl ServerRuntime {
    fn start(storage: StorageKind, dir: &Path) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("apiserver")
            .enable_all()
            .build()?;
        let mut config = Config::new(dir, "127.0.0.1:0".parse()?);
        config.storage = storage;
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

    fn stop(self) {
        let ServerRuntime { runtime, server } = self;
        runtime.block_on(server.shutdown());
        runtime.shutdown_timeout(Duration::from_secs(5));
    }
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
    body: Bytes,
}

impl Call {
    fn get(path: String) -> Self {
        Call {
            method: Method::GET,
            path,
            content_type: None,
            body: Bytes::new(),
        }
    }

    fn json(method: Method, path: String, content_type: &'static str, body: String) -> Self {
        Call {
            method,
            path,
            content_type: Some(content_type),
            body: Bytes::from(body),
        }
    }
}

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
    let mut data = String::new();
    for key in 0..5 {
        if key > 0 {
            data.push(',');
        }
        let _ = write!(
            data,
            r#""key-{key}":"value {key} of {name}: some configuration text""#
        );
    }
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"app":"bench"}}}},"data":{{{data}}}}}"#
    )
}

fn config_maps(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps")
}

async fn create_namespace(connection: &mut Connection, name: &str) -> anyhow::Result<()> {
    connection
        .call(Call::json(
            Method::POST,
            "/api/v1/namespaces".into(),
            "application/json",
            namespace_body(name),
        ))
        .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// CPU accounting from /proc

/// CPU time used so far by the threads of this process, by side.
#[derive(Clone, Copy, Default)]
struct CpuSample {
    at: Option<Instant>,
    /// Server threads (every thread but the client's and the main thread), in clock ticks.
    server: u64,
    /// The SQLite writer thread alone.
    writer: u64,
    client: u64,
    /// Every process on the machine (busy time from `/proc/stat`).
    machine: u64,
    /// This whole process.
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
    fn now() -> Self {
        let mut sample = CpuSample {
            at: Some(Instant::now()),
            ..Default::default()
        };
        let total = read_ticks(Path::new("/proc/self/stat")).unwrap_or(0);
        let main = std::process::id().to_string();
        let mut harness = 0;
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for task in tasks.flatten() {
                let dir = task.path();
                let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                let ticks = read_ticks(&dir.join("stat")).unwrap_or(0);
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
            now.saturating_sub(then) as f64 / clock_ticks_per_second() / elapsed * 100.0
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

/// Busy time of the whole machine (all but idle and iowait), in clock ticks.
fn machine_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4)?;
    Some(total.saturating_sub(idle))
}

/// utime + stime of a `/proc/.../stat` file, in clock ticks.
fn read_ticks(path: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn clock_ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

// ---------------------------------------------------------------------------------------------
// Load phases: creates, updates, lists

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operation {
    Create,
    Update,
    List,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Create => "creates",
            Operation::Update => "updates",
            Operation::List => "lists",
        }
    }
}

/// The result of one load phase at one concurrency level.
struct LoadResult {
    storage: StorageKind,
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
}

/// Runs `ops` calls made by `make` over `clients` connections, each client one call at a time.
/// Connections are opened before the clock starts.
async fn load<F>(
    endpoint: &Endpoint,
    clients: usize,
    ops: usize,
    cap: Duration,
    make: F,
) -> anyhow::Result<Measured>
where
    F: Fn(usize) -> Call + Send + Sync + 'static,
{
    let mut connections = Vec::with_capacity(clients);
    for _ in 0..clients {
        connections.push(endpoint.connect().await?);
    }
    let make = Arc::new(make);
    let next = Arc::new(AtomicUsize::new(0));
    let first_error = Arc::new(Mutex::new(None::<String>));
    let before = CpuSample::now();
    let start = Instant::now();
    let stop_at = start + cap;
    let mut tasks = Vec::with_capacity(clients);
    for mut connection in connections {
        let make = make.clone();
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
                match connection.call(make(op)).await {
                    Ok(_) => latencies.push(sent.elapsed()),
                    Err(err) => {
                        errors += 1;
                        let mut first = first_error.lock().unwrap_or_else(|e| e.into_inner());
                        first.get_or_insert_with(|| format!("{err:#}"));
                        // A broken connection would fail every later op: open a new one.
                        if connection.sender.is_closed() {
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
    let cpu = CpuSample::now().since(&before);
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

/// Every phase against one server.
async fn drive(
    options: &Options,
    storage: StorageKind,
    endpoint: Endpoint,
    deadline: Instant,
    loads: &mut Vec<LoadResult>,
    watches: &mut Vec<WatchResult>,
) -> anyhow::Result<()> {
    let plan = &options.plan;
    let mut admin = endpoint.connect().await?;

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
                    "the overall time cap passed before {} at {clients} clients",
                    operation.name()
                );
            }
            let namespace = format!("bench-write-{clients}");
            let path = config_maps(&namespace);
            if operation == Operation::Create {
                create_namespace(&mut admin, &namespace).await?;
            }
            wait_for_quiet(plan.quiet_wait).await;
            let measured = match operation {
                Operation::Create => {
                    load(
                        &endpoint,
                        clients,
                        plan.creates[level],
                        plan.phase_cap,
                        move |op| {
                            Call::json(
                                Method::POST,
                                path.clone(),
                                "application/json",
                                config_map_body(&format!("cm-{op}")),
                            )
                        },
                    )
                    .await?
                }
                _ => {
                    let existing = created[level].max(1);
                    load(
                        &endpoint,
                        clients,
                        plan.updates[level],
                        plan.phase_cap,
                        move |op| {
                            let name = format!("cm-{}", op % existing);
                            Call::json(
                                Method::PATCH,
                                format!("{path}/{name}"),
                                "application/merge-patch+json",
                                format!(r#"{{"data":{{"key-0":"update {op}"}}}}"#),
                            )
                        },
                    )
                    .await?
                }
            };
            if operation == Operation::Create {
                created[level] = measured.ok;
                if !options.runs(Phase::Creates) {
                    continue;
                }
            }
            loads.push(LoadResult {
                storage,
                operation,
                clients,
                measured,
            });
        }
    }

    if options.runs(Phase::Lists) {
        lists(plan, storage, &endpoint, &mut admin, deadline, loads).await?;
    }
    if options.runs(Phase::Watch) {
        for &watchers in &LEVELS {
            let budget =
                Duration::from_secs_f64(plan.watch_events as f64 / f64::from(plan.watch_rate));
            if Instant::now() + budget + WATCH_GRACE >= deadline {
                bail!("the overall time cap passed before the watch with {watchers} watchers");
            }
            let namespace = format!("bench-watch-{watchers}");
            create_namespace(&mut admin, &namespace).await?;
            wait_for_quiet(plan.quiet_wait).await;
            watches.push(watch(plan, storage, &endpoint, &namespace, watchers).await?);
        }
    }
    Ok(())
}

/// Lists of a namespace holding exactly [`LIST_OBJECTS`] ConfigMaps.
async fn lists(
    plan: &Plan,
    storage: StorageKind,
    endpoint: &Endpoint,
    admin: &mut Connection,
    deadline: Instant,
    loads: &mut Vec<LoadResult>,
) -> anyhow::Result<()> {
    let namespace = "bench-list";
    create_namespace(admin, namespace).await?;
    for i in 0..LIST_OBJECTS {
        admin
            .call(Call::json(
                Method::POST,
                config_maps(namespace),
                "application/json",
                config_map_body(&format!("listed-{i}")),
            ))
            .await?;
    }
    let listed = admin.call(Call::get(config_maps(namespace))).await?;
    let items = serde_json::from_slice::<serde_json::Value>(&listed)?["items"]
        .as_array()
        .map_or(0, Vec::len);
    if items != LIST_OBJECTS {
        bail!("the list namespace holds {items} ConfigMaps, not {LIST_OBJECTS}");
    }
    for (level, &clients) in LEVELS.iter().enumerate() {
        if Instant::now() >= deadline {
            bail!("the overall time cap passed before lists at {clients} clients");
        }
        let path = config_maps(namespace);
        wait_for_quiet(plan.quiet_wait).await;
        let measured = load(
            endpoint,
            clients,
            plan.lists[level],
            plan.phase_cap,
            move |_| Call::get(path.clone()),
        )
        .await?;
        loads.push(LoadResult {
            storage,
            operation: Operation::List,
            clients,
            measured,
        });
    }
    Ok(())
}

/// Waits, at most `limit`, for a half second in which other processes use less than a fifth of a
/// core, so that a build running beside the benchmark disturbs it less.
async fn wait_for_quiet(limit: Duration) {
    let give_up = Instant::now() + limit;
    while Instant::now() < give_up {
        let before = CpuSample::now();
        tokio::time::sleep(Duration::from_millis(500)).await;
        if CpuSample::now().since(&before).other < 20.0 {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Watch phase

/// The result of one watch level.
struct WatchResult {
    storage: StorageKind,
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

/// The part of a watch event the benchmark reads.
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

async fn watch(
    plan: &Plan,
    storage: StorageKind,
    endpoint: &Endpoint,
    namespace: &str,
    watchers: usize,
) -> anyhow::Result<WatchResult> {
    let events = plan.watch_events;
    let sent: Arc<Vec<OnceLock<Instant>>> =
        Arc::new((0..events).map(|_| OnceLock::new()).collect());
    let period = Duration::from_secs_f64(1.0 / f64::from(plan.watch_rate));
    let writing_time = period * u32::try_from(events).unwrap_or(u32::MAX);

    // Open every watch and wait for its response head before writing.
    let mut streams = Vec::with_capacity(watchers);
    for _ in 0..watchers {
        let mut connection = endpoint.connect().await?;
        let response = tokio::time::timeout(
            REQUEST_TIMEOUT,
            connection.send(Call::get(format!("{}?watch=true", config_maps(namespace)))),
        )
        .await
        .context("the watch did not answer")??;
        if response.status() != StatusCode::OK {
            bail!("the watch answered {}", response.status());
        }
        streams.push((connection, response.into_body()));
    }
    let mut tasks = Vec::with_capacity(watchers);
    let watch_deadline = Instant::now() + writing_time + WATCH_GRACE * 2;
    for (connection, mut body) in streams {
        let sent = sent.clone();
        tasks.push(tokio::spawn(async move {
            let _connection = connection;
            let mut watched = Watched {
                latencies: Vec::with_capacity(events),
                anomaly: None,
            };
            let mut buffer = BytesMut::new();
            while watched.latencies.len() < events {
                let frame = match tokio::time::timeout_at(watch_deadline.into(), body.frame()).await
                {
                    Ok(Some(Ok(frame))) => frame,
                    Ok(Some(Err(err))) => {
                        watched
                            .anomaly
                            .get_or_insert(format!("stream failed: {err}"));
                        break;
                    }
                    Ok(None) => {
                        watched
                            .anomaly
                            .get_or_insert("the server ended the watch".into());
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
                    record(&line, received, &sent, &mut watched);
                }
            }
            watched
        }));
    }

    let before = CpuSample::now();
    let start = Instant::now();
    let mut writer = endpoint.connect().await?;
    let mut write_latencies = Vec::with_capacity(events);
    let mut write_errors = 0;
    let mut first_write_error = None;
    let path = config_maps(namespace);
    for (i, slot) in sent.iter().enumerate() {
        tokio::time::sleep_until((start + period * u32::try_from(i).unwrap_or(u32::MAX)).into())
            .await;
        let call = Call::json(
            Method::POST,
            path.clone(),
            "application/json",
            config_map_body(&format!("w-{i}")),
        );
        let at = Instant::now();
        let _ = slot.set(at);
        match writer.call(call).await {
            Ok(_) => write_latencies.push(at.elapsed()),
            Err(err) => {
                write_errors += 1;
                first_write_error.get_or_insert(format!("{err:#}"));
                if writer.sender.is_closed() {
                    writer = endpoint.connect().await?;
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
    let cpu = CpuSample::now().since(&before);
    latencies.sort_unstable();
    write_latencies.sort_unstable();
    Ok(WatchResult {
        storage,
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

/// Records one event line: the latency from its write's send, or what was odd about it.
fn record(line: &[u8], received: Instant, sent: &[OnceLock<Instant>], watched: &mut Watched) {
    let event: WatchEvent = match serde_json::from_slice(line) {
        Ok(event) => event,
        Err(err) => {
            watched
                .anomaly
                .get_or_insert(format!("unreadable event: {err}"));
            return;
        }
    };
    let index = event
        .object
        .metadata
        .name
        .strip_prefix("w-")
        .and_then(|i| i.parse::<usize>().ok());
    match (event.kind.as_str(), index.and_then(|i| sent.get(i))) {
        ("ADDED", Some(slot)) => match slot.get() {
            Some(at) => watched.latencies.push(received.duration_since(*at)),
            None => {
                watched
                    .anomaly
                    .get_or_insert("an event arrived before its write was sent".into());
            }
        },
        (kind, _) => {
            watched.anomaly.get_or_insert(format!(
                "unexpected {kind} event for {:?}",
                event.object.metadata.name
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Memory of a separate process

fn memory_phase(plan: &Plan, root: &Path, report: &mut Report) -> anyhow::Result<()> {
    let data_dir = root.join("process");
    std::fs::create_dir_all(&data_dir)?;
    let started = Instant::now();
    let mut process = match Process::apiserver(&data_dir, free_addr()?) {
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

fn print_loads(loads: &[LoadResult], report: &mut Report) {
    for operation in [Operation::Create, Operation::Update, Operation::List] {
        if !loads.iter().any(|r| r.operation == operation) {
            continue;
        }
        let mut table = String::new();
        let _ = writeln!(
            table,
            "## {} ({})\n\n\
             | backend | clients | ops | errors | elapsed s | {}/s | p50 ms | p99 ms | server CPU % | (writer %) | client CPU % | other CPU % |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            operation.name(),
            match operation {
                Operation::Create => "POST of a ConfigMap with 5 data keys",
                Operation::Update => "merge-PATCH of one key of an existing ConfigMap",
                Operation::List => "LIST of a namespace holding 100 ConfigMaps",
            },
            operation.name(),
        );
        for result in loads.iter().filter(|r| r.operation == operation) {
            let _ = writeln!(
                table,
                "| {} | {} | {}{} | {} | {:.2} | {:.0} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} |",
                backend_name(result.storage),
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
                result.measured.cpu.writer,
                result.measured.cpu.client,
                result.measured.cpu.other,
            );
            if result.measured.errors > 0 {
                report.fail(format!(
                    "{} {} at {} clients: {} failed, first: {}",
                    backend_name(result.storage),
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
         watches; latency runs from the write's send to a watcher's read of its event.\n\n\
         | backend | watchers | writes | elapsed s | events per watcher (min / max of {}) | deliveries | p50 ms | p99 ms | max ms | write p50 ms | server CPU % | (writer %) | client CPU % | other CPU % |\n\
         |---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        plan.watch_rate, plan.watch_events,
    );
    for result in watches {
        let min = result.received.iter().copied().min().unwrap_or(0);
        let max = result.received.iter().copied().max().unwrap_or(0);
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.2} | {min} / {max} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} |",
            backend_name(result.storage),
            result.watchers,
            result.written,
            result.elapsed.as_secs_f64(),
            result.latencies.len(),
            quantile(&result.latencies, 0.5),
            quantile(&result.latencies, 0.99),
            quantile(&result.latencies, 1.0),
            quantile(&result.write_latencies, 0.5),
            result.cpu.server,
            result.cpu.writer,
            result.cpu.client,
            result.cpu.other,
        );
        if result.write_errors > 0 || min < plan.watch_events || result.anomaly.is_some() {
            report.fail(format!(
                "{} watch with {} watchers: {} write(s) failed, {} of {} watchers got every event{}",
                backend_name(result.storage),
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
