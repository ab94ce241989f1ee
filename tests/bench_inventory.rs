//! How the hub's cluster inventory scales with the number of member clusters: joins, heartbeats,
//! memory, and how fast a lost cluster shows.
//!
//! A benchmark program, not a test: it asserts no timings. For each fleet size N it starts a fresh
//! `atoll up --auto-accept` (the real binary built beside this program, in its own process, on
//! free 127.0.0.1 ports, SQLite in a temporary directory) and simulates N agents in this process,
//! each on a TCP + TLS connection of its own to the hub's gRPC server, trusting only the hub's CA,
//! as the real agent does. Each simulated agent joins with the bootstrap token (at most
//! `JOIN_CONCURRENCY` joins in flight), sends its first heartbeat right after its join, opens its
//! sync stream and drains it for as long as it lives, and heartbeats every lease with the real
//! agent's jitter (uniform in 0.7–0.9 × lease); its second heartbeat comes at a random phase, as
//! in a fleet that joined over time rather than all at once, which would beat in waves for many
//! leases. It prints markdown tables of:
//!
//! - join: the time until every Join call has returned ACCEPTED, joins/s, the p50/p99 of a Join
//!   call, and the time (from the first join) until the hub's API shows all N ClusterProfiles with
//!   `Joined=True` and `ControlPlaneHealthy=True`; the list is polled every 250 ms, from when the
//!   last Join returned, so that the polls do not slow the joins;
//! - heartbeats: over a measured window at the lease, heartbeats/s against the rate the jitter
//!   implies, failed heartbeats over the whole run (must be 0), p50/p99 latency, and the CPU the
//!   hub process used (utime + stime from `/proc/PID/stat`), this program used and every other
//!   process on the machine used, in % of one core (figures taken while "other" is high are
//!   disturbed);
//! - memory: the hub's VmRSS idle after start, once every cluster shows joined and healthy, and
//!   the highest during the heartbeat window; KiB per cluster is (during heartbeats − idle) / N,
//!   and the marginal KiB per cluster the same growth between two fleet sizes (which leaves out
//!   what is bounded however large the fleet, such as the API server's watch cache);
//! - lost-cluster detection: a few agents stop heartbeating and drop their connections at once;
//!   the time from that moment, and from each one's last answered heartbeat, to when the hub's API
//!   shows its profile `ControlPlaneHealthy=Unknown` (reason `AgentLost`), polled every 250 ms.
//!   The heartbeating clusters must all still show healthy afterwards.
//!
//! The targets are printed beside the figures: 5,000 clusters joined within 5 s (the fleet
//! issue's; the first target was 60 s); heartbeats at the default lease under 25% of one core;
//! under 40 KiB of hub memory per cluster (the first target was 100 KiB); a lost
//! cluster shown Unknown within lease × missed leases (30 s by default) of its agent stopping.
//!
//! Run with `cargo build --release -p atoll && cargo bench -p atoll-tests --bench inventory`: the
//! full plan, N in 100, 1000 and 5000 at the default lease of 10 s, 3 missed leases and a 30 s
//! heartbeat window. Without `--bench` (as `cargo test --benches` runs it) and with `-- --quick`
//! the quick plan runs instead: N = 20, a lease of 1 s and a 3 s window, in a few seconds.
//! `--clusters 100,1000` narrows a run; `--repeat 3` runs each size three times in a row (a fresh
//! hub each time, a row each). Every loop is bounded by a count and a time cap and all
//! traffic goes to 127.0.0.1. The program fails (after printing every table) when a join, a
//! heartbeat or the opening of a sync stream fails, or when a cluster does not show the expected
//! status in time.
//! N agents need N sockets here and N in the hub (which inherits this process's limits): the
//! program checks `ulimit -n` first and says so when it is too low.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_agent::hub::Client;
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, INVENTORY_NAMESPACE};
use atoll_proto::v1::{Health, HeartbeatRequest, JoinRequest, SyncRequest, join_response};
use atoll_tests::bench::{
    CpuWindow, check_open_files, cluster_id, fleet_args, hub_log, properties, rss_kib, run_seed,
    short_binary, unit, verdict,
};
use atoll_tests::{Process, Report, client_from, free_addr};
use kube::api::{Api, ListParams};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

/// The allocator of the `atoll` binary, which the real agent runs in: the simulated agents
/// allocate as it does (with the system allocator they spent a fifth of their CPU in it).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Joins in flight at once (each on its own connection).
const JOIN_CONCURRENCY: usize = 128;
/// How long one connect or call may take before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the hub's API is polled for profile conditions.
const POLL: Duration = Duration::from_millis(250);
/// How often an agent opens its sync stream before it gives up.
const SYNC_ATTEMPTS: usize = 5;
/// Agents stopped at once in the lost-cluster phase.
const LOST_AGENTS: usize = 5;
/// The real agent's heartbeat jitter, as fractions of the lease.
const JITTER: (f64, f64) = (0.7, 0.9);
/// Worker threads of the agents' runtime (the machine has 2 cores; the hub has its own process).
const WORKER_THREADS: usize = 2;
/// What the simulated members report.
const KUBERNETES_VERSION: &str = "v1.35.0";

/// Fleet size the join target is stated for, and the time it allows.
const TARGET_JOIN: (usize, f64) = (5_000, 5.0);
/// Hub CPU during heartbeats at the default lease, % of one core.
const TARGET_HEARTBEAT_CPU: f64 = 25.0;
/// Hub memory per member cluster, KiB.
const TARGET_KIB_PER_CLUSTER: f64 = 40.0;

/// How much work each fleet size does.
#[derive(Clone, Copy, Debug)]
struct Plan {
    name: &'static str,
    clusters: &'static [usize],
    /// `--lease-seconds` of the hub.
    lease_seconds: u64,
    /// `--missed-leases` of the hub.
    missed_leases: u32,
    /// The measured heartbeat window.
    window: Duration,
    /// How long the fresh hub idles before its memory is read.
    settle: Duration,
    /// Cap on starting every join.
    join_cap: Duration,
    /// Cap on waiting, after the last join, for every profile to show joined and healthy.
    ready_cap: Duration,
    /// How long past lease × missed a stopped cluster may take to show Unknown.
    lost_slack: Duration,
}

impl Plan {
    fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_seconds)
    }

    /// How long the hub waits for a heartbeat before it shows a cluster Unknown.
    fn grace(&self) -> Duration {
        self.lease() * self.missed_leases
    }
}

const FULL: Plan = Plan {
    name: "full",
    clusters: &[100, 1_000, 5_000],
    lease_seconds: 10,
    missed_leases: 3,
    window: Duration::from_secs(30),
    settle: Duration::from_secs(2),
    join_cap: Duration::from_secs(300),
    ready_cap: Duration::from_secs(120),
    lost_slack: Duration::from_secs(30),
};

const QUICK: Plan = Plan {
    name: "quick",
    clusters: &[20],
    lease_seconds: 1,
    missed_leases: 3,
    window: Duration::from_secs(3),
    settle: Duration::from_millis(500),
    join_cap: Duration::from_secs(20),
    ready_cap: Duration::from_secs(10),
    lost_slack: Duration::from_secs(5),
};

struct Options {
    plan: Plan,
    clusters: Vec<usize>,
}

impl Options {
    fn parse(args: impl Iterator<Item = String>) -> anyhow::Result<Self> {
        let args = fleet_args(args)?;
        let plan = if args.full { FULL } else { QUICK };
        Ok(Options {
            clusters: args.runs(plan.clusters),
            plan,
        })
    }
}

fn main() -> anyhow::Result<()> {
    let options = Options::parse(std::env::args().skip(1))?;
    let plan = options.plan;
    let started = Instant::now();
    let root = tempfile::tempdir()?;
    let binary = atoll_tests::atoll_binary()?;
    println!(
        "# atoll inventory benchmark ({} plan)\n\n{} CPU(s); binary `{}`; hub with `--lease-seconds \
         {}` and `--missed-leases {}`; simulated agents on a tokio runtime of {WORKER_THREADS} \
         worker threads, each on a TLS connection of its own, {JOIN_CONCURRENCY} joins in \
         flight.\n",
        plan.name,
        std::thread::available_parallelism().map_or(0, usize::from),
        short_binary(&binary.display().to_string()),
        plan.lease_seconds,
        plan.missed_leases,
    );
    let mut report = Report::default();
    let mut results = Vec::new();
    for &clusters in &options.clusters {
        let mut result = Scale {
            clusters,
            ..Scale::default()
        };
        if let Err(err) = run_scale(&plan, root.path(), &mut result, &mut report) {
            report.fail(format!("{clusters} clusters: {err:#}"));
        }
        results.push(result);
    }
    print_joins(&results);
    print_heartbeats(&plan, &results);
    print_memory(&results);
    print_lost(&plan, &results);
    print_hub_logs(&results);
    println!("Total time: {:.1} s.", started.elapsed().as_secs_f64());
    report.finish()
}

/// Everything measured for one fleet size; a phase that did not run leaves its figures empty.
#[derive(Default)]
struct Scale {
    clusters: usize,
    joins: Option<Joins>,
    /// From the first join to all profiles joined and healthy; `None`: not within the cap.
    ready: Option<Duration>,
    heartbeats: Option<Heartbeats>,
    /// VmRSS in KiB: idle after start, all joined, the most during heartbeats.
    memory: [Option<u64>; 3],
    lost: Option<Lost>,
    /// Warning and error lines the hub logged, with the first of them.
    hub_log: Option<(usize, usize, String)>,
}

struct Joins {
    accepted: usize,
    /// Joins that failed or did not start within the cap.
    failed: usize,
    first_error: Option<String>,
    /// From the first join to the last Join returned.
    elapsed: Duration,
    /// Latencies of the Join calls (not the connects), sorted.
    latencies: Vec<Duration>,
}

struct Heartbeats {
    window: Duration,
    answered: u64,
    /// Failed heartbeats over the whole run of this fleet size.
    failed: u64,
    latencies: Vec<Duration>,
    hub_cpu: f64,
    bench_cpu: f64,
    other_cpu: f64,
    sync_events: u64,
    streams_ended: u64,
    /// Sync stream openings the hub refused.
    sync_failed: u64,
}

struct Lost {
    /// For each stopped agent: time from the stop and from its last answered heartbeat to
    /// Unknown; `None` when it never showed Unknown within the cap.
    shown: Vec<Option<(Duration, Duration)>>,
}

// ---------------------------------------------------------------------------------------------
// One fleet size

/// Starts a hub, runs every phase against it with N simulated agents, and stops both.
fn run_scale(
    plan: &Plan,
    root: &Path,
    result: &mut Scale,
    report: &mut Report,
) -> anyhow::Result<()> {
    let n = result.clusters;
    check_open_files(n)?;
    // A directory of its own for each run, so that `--repeat` starts every hub afresh.
    let run_dir = tempfile::Builder::new()
        .prefix(&format!("hub-{n}-"))
        .tempdir_in(root)?;
    let data_dir = run_dir.path().to_path_buf();
    let grpc_addr = free_addr()?;
    let mut api_addr = free_addr()?;
    while api_addr == grpc_addr {
        api_addr = free_addr()?;
    }
    if !grpc_addr.ip().is_loopback() || !api_addr.ip().is_loopback() {
        bail!("the hub must listen on loopback only, not {api_addr} and {grpc_addr}");
    }
    eprintln!("{n} clusters: starting the hub");
    let (lease, missed) = (
        plan.lease_seconds.to_string(),
        plan.missed_leases.to_string(),
    );
    let hub = Process::hub_with(
        &data_dir,
        api_addr,
        &[
            "--grpc-addr",
            &grpc_addr.to_string(),
            "--auto-accept",
            "--lease-seconds",
            &lease,
            "--missed-leases",
            &missed,
        ],
    )
    .context("starting `atoll up` (build it first: cargo build --release -p atoll)")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("bench-agent")
        .enable_all()
        .build()?;
    let target = Target {
        pid: hub.child.id(),
        data_dir: data_dir.clone(),
        grpc_url: format!("https://{grpc_addr}"),
    };
    let outcome = runtime.block_on(drive(plan, &target, result, report));
    // Ends every agent: its heartbeats, its sync stream and its connection.
    runtime.shutdown_timeout(Duration::from_secs(5));
    drop(hub);
    result.hub_log = Some(hub_log(&data_dir.with_extension("log"), &data_dir));
    outcome
}

/// The hub under test.
struct Target {
    pid: u32,
    data_dir: std::path::PathBuf,
    grpc_url: String,
}

/// What every simulated agent shares.
struct Shared {
    /// The hub's gRPC endpoint, TLS pinned to its CA; each agent connects a clone of it.
    endpoint: Endpoint,
    bootstrap_token: String,
    beats: Beats,
    /// The origin of `Agent::last_beat`.
    epoch: Instant,
}

/// Heartbeat and sync stream counts of all agents.
#[derive(Default)]
struct Beats {
    /// Whether the measured window is open.
    recording: AtomicBool,
    /// Heartbeats answered within the window.
    answered: AtomicU64,
    latencies: Mutex<Vec<Duration>>,
    /// Failed heartbeats and sync stream openings, whenever they happened.
    failed: AtomicU64,
    sync_failed: AtomicU64,
    first_error: Mutex<Option<String>>,
    sync_events: AtomicU64,
    /// Sync streams the hub ended or broke while their agent lived.
    streams_ended: AtomicU64,
}

impl Beats {
    fn answered(&self, latency: Duration) {
        if self.recording.load(Ordering::Relaxed) {
            self.answered.fetch_add(1, Ordering::Relaxed);
            locked(&self.latencies).push(latency);
        }
    }

    fn error(&self, counter: &AtomicU64, what: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        locked(&self.first_error).get_or_insert(what);
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A simulated agent that joined.
struct Agent {
    name: String,
    /// When its Join returned, and how long the call took.
    returned: Instant,
    latency: Duration,
    /// Microseconds from `Shared::epoch` to its last answered heartbeat (0: none yet).
    last_beat: Arc<AtomicU64>,
    /// Its heartbeats and sync stream; aborting it drops its connection.
    life: JoinHandle<()>,
}

async fn drive(
    plan: &Plan,
    target: &Target,
    result: &mut Scale,
    report: &mut Report,
) -> anyhow::Result<()> {
    let n = result.clusters;
    tokio::time::sleep(plan.settle).await;
    result.memory[0] = Some(rss_kib(target.pid)?);
    let kube = client_from(&target.data_dir.join("hub.kubeconfig")).await?;
    let profiles: Api<ClusterProfile> = Api::namespaced(kube, INVENTORY_NAMESPACE);
    let ca = std::fs::read_to_string(target.data_dir.join("hub-ca.crt"))?;
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&ca))
        .domain_name("127.0.0.1");
    let endpoint = Endpoint::from_shared(target.grpc_url.clone())?
        .tls_config(tls)?
        .connect_timeout(CALL_TIMEOUT)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    let shared = Arc::new(Shared {
        endpoint,
        bootstrap_token: std::fs::read_to_string(target.data_dir.join("bootstrap-token"))?
            .trim()
            .to_owned(),
        beats: Beats::default(),
        epoch: Instant::now(),
    });

    // Join.
    eprintln!("{n} clusters: joining");
    let (agents, joins) = join_all(plan, &shared, n).await;
    if joins.failed > 0 {
        report.fail(format!(
            "{n} clusters: {} of {n} joins failed or did not start within {} s, first error: {}",
            joins.failed,
            plan.join_cap.as_secs(),
            joins.first_error.as_deref().unwrap_or("–")
        ));
    }
    let started = shared.epoch;
    result.joins = Some(joins);
    eprintln!("{n} clusters: waiting for every profile to show joined and healthy");
    let want = agents.len();
    let ready = wait_for_count(&profiles, want, plan.ready_cap, |p| {
        condition(p, CONDITION_JOINED).is_some_and(|(status, _)| status == "True")
            && condition(p, CONDITION_CONTROL_PLANE_HEALTHY)
                .is_some_and(|(status, _)| status == "True")
    })
    .await;
    match ready {
        Ok(at) => result.ready = Some(at.duration_since(started)),
        Err(err) => report.fail(format!("{n} clusters: {err:#}")),
    }
    result.memory[1] = Some(rss_kib(target.pid)?);

    // Heartbeats.
    eprintln!(
        "{n} clusters: measuring heartbeats for {} s",
        plan.window.as_secs()
    );
    locked(&shared.beats.latencies).clear();
    let cpu = CpuWindow::start(target.pid);
    let window_start = Instant::now();
    shared.beats.recording.store(true, Ordering::Relaxed);
    let mut peak = 0;
    while window_start.elapsed() < plan.window {
        let left = plan.window.saturating_sub(window_start.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        peak = peak.max(rss_kib(target.pid)?);
    }
    shared.beats.recording.store(false, Ordering::Relaxed);
    let window = window_start.elapsed();
    let used = cpu.used(window);
    let mut latencies = std::mem::take(&mut *locked(&shared.beats.latencies));
    latencies.sort();
    result.memory[2] = Some(peak);
    result.heartbeats = Some(Heartbeats {
        window,
        answered: shared.beats.answered.load(Ordering::Relaxed),
        failed: 0,
        latencies,
        hub_cpu: used.hub,
        bench_cpu: used.this,
        other_cpu: used.other,
        sync_events: 0,
        streams_ended: 0,
        sync_failed: 0,
    });

    // Lost clusters.
    let lost = lost_clusters(plan, &profiles, &shared, &agents, report, n).await;
    result.lost = Some(lost);

    let beats = &shared.beats;
    if let Some(heartbeats) = result.heartbeats.as_mut() {
        heartbeats.failed = beats.failed.load(Ordering::Relaxed);
        heartbeats.sync_events = beats.sync_events.load(Ordering::Relaxed);
        heartbeats.streams_ended = beats.streams_ended.load(Ordering::Relaxed);
        heartbeats.sync_failed = beats.sync_failed.load(Ordering::Relaxed);
    }
    let failed = beats.failed.load(Ordering::Relaxed);
    let sync_failed = beats.sync_failed.load(Ordering::Relaxed);
    if failed > 0 || sync_failed > 0 {
        report.fail(format!(
            "{n} clusters: {failed} heartbeat(s) and {sync_failed} sync stream opening(s) failed, \
             first error: {}",
            locked(&beats.first_error).as_deref().unwrap_or("?")
        ));
    }
    Ok(())
}

/// Joins `n` agents, at most `JOIN_CONCURRENCY` at once; each starts heartbeating right after its
/// join. Returns the agents that joined.
async fn join_all(plan: &Plan, shared: &Arc<Shared>, n: usize) -> (Vec<Agent>, Joins) {
    let gate = Arc::new(Semaphore::new(JOIN_CONCURRENCY));
    let mut pending = Vec::with_capacity(n);
    for index in 0..n {
        if shared.epoch.elapsed() > plan.join_cap {
            break;
        }
        let Ok(permit) = gate.clone().acquire_owned().await else {
            break;
        };
        let shared = shared.clone();
        pending.push(tokio::spawn(async move {
            let joined = join_one(&shared, index).await;
            drop(permit);
            joined
        }));
    }
    let mut agents = Vec::with_capacity(n);
    let mut first_error = None;
    for handle in pending {
        // Each join is bounded by the connect and call timeouts.
        match handle.await {
            Ok(Ok(agent)) => agents.push(agent),
            Ok(Err(err)) => {
                first_error.get_or_insert_with(|| format!("{err:#}"));
            }
            Err(err) => {
                first_error.get_or_insert_with(|| err.to_string());
            }
        }
    }
    let elapsed = agents
        .iter()
        .map(|a| a.returned.duration_since(shared.epoch))
        .max()
        .unwrap_or_default();
    let mut latencies: Vec<Duration> = agents.iter().map(|a| a.latency).collect();
    latencies.sort();
    let joins = Joins {
        accepted: agents.len(),
        failed: n - agents.len(),
        first_error,
        elapsed,
        latencies,
    };
    (agents, joins)
}

/// Connects one agent, joins it, and starts its life (heartbeats and sync stream).
async fn join_one(shared: &Arc<Shared>, index: usize) -> anyhow::Result<Agent> {
    let name = format!("member-{index:05}");
    let channel = shared
        .endpoint
        .clone()
        .connect()
        .await
        .with_context(|| format!("{name}: cannot connect"))?;
    let mut bootstrap = atoll_agent::hub::client(channel.clone(), &shared.bootstrap_token)?;
    let request = JoinRequest {
        cluster_name: name.clone(),
        cluster_id: cluster_id(index),
        kubernetes_version: KUBERNETES_VERSION.to_owned(),
        properties: properties(index),
        join_secret: format!("bench-join-secret-{index:08}"),
        cluster_set: String::new(),
    };
    let sent = Instant::now();
    let response = tokio::time::timeout(CALL_TIMEOUT, bootstrap.join(request))
        .await
        .with_context(|| format!("{name}: no answer to Join within {CALL_TIMEOUT:?}"))?
        .with_context(|| format!("{name}: Join failed"))?
        .into_inner();
    let returned = Instant::now();
    if response.state != join_response::State::Accepted as i32 {
        bail!(
            "{name}: Join answered state {} ({}), not ACCEPTED",
            response.state,
            response.message
        );
    }
    let client = atoll_agent::hub::client(channel, &response.credential)?;
    let lease = Duration::from_secs(u64::from(response.lease_seconds.max(1)));
    let last_beat = Arc::new(AtomicU64::new(0));
    let life = tokio::spawn(live(
        client,
        name.clone(),
        index,
        lease,
        shared.clone(),
        last_beat.clone(),
    ));
    Ok(Agent {
        name,
        returned,
        latency: returned.duration_since(sent),
        last_beat,
        life,
    })
}

/// An agent after its join: a heartbeat at once, then one every lease with jitter (the first of
/// them at a random phase), while its sync stream is drained. Runs until aborted.
async fn live(
    mut client: Client,
    name: String,
    index: usize,
    lease: Duration,
    shared: Arc<Shared>,
    last_beat: Arc<AtomicU64>,
) {
    let mut seed = (index as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ run_seed();
    heartbeat(&mut client, &name, index, &shared, &last_beat).await;
    let sync = drain_sync(client.clone(), &name, &shared);
    let beats = async {
        // Agents that join within seconds of each other would beat in waves for many leases; a
        // fleet that joined over time does not. The second beat comes at a random phase so that
        // the heartbeat window sees the steady state.
        let mean = (JITTER.0 + JITTER.1) / 2.0;
        tokio::time::sleep(lease.mul_f64(mean * unit(&mut seed))).await;
        loop {
            heartbeat(&mut client, &name, index, &shared, &last_beat).await;
            let fraction = JITTER.0 + (JITTER.1 - JITTER.0) * unit(&mut seed);
            tokio::time::sleep(lease.mul_f64(fraction)).await;
        }
    };
    tokio::join!(sync, beats);
}

async fn heartbeat(
    client: &mut Client,
    name: &str,
    index: usize,
    shared: &Shared,
    last_beat: &AtomicU64,
) {
    let request = HeartbeatRequest {
        cluster_name: name.to_owned(),
        health: Some(Health {
            ready: true,
            message: String::new(),
        }),
        kubernetes_version: KUBERNETES_VERSION.to_owned(),
        properties: properties(index),
    };
    let sent = Instant::now();
    match tokio::time::timeout(CALL_TIMEOUT, client.heartbeat(request)).await {
        Ok(Ok(_)) => {
            let at = shared.epoch.elapsed().as_micros() as u64;
            last_beat.store(at, Ordering::Relaxed);
            shared.beats.answered(sent.elapsed());
        }
        Ok(Err(status)) => shared.beats.error(
            &shared.beats.failed,
            format!("{name}: heartbeat: {}: {}", status.code(), status.message()),
        ),
        Err(_) => shared.beats.error(
            &shared.beats.failed,
            format!("{name}: no answer to a heartbeat within {CALL_TIMEOUT:?}"),
        ),
    }
}

/// Opens the agent's sync stream and reads every event, as a real agent does; a refused opening
/// or a broken stream is counted, then the agent opens it again after a second, at most
/// `SYNC_ATTEMPTS` times.
async fn drain_sync(mut client: Client, name: &str, shared: &Shared) {
    let beats = &shared.beats;
    for _ in 0..SYNC_ATTEMPTS {
        let request = SyncRequest {
            cluster_name: name.to_owned(),
            works: Vec::new(),
            full: false,
        };
        match tokio::time::timeout(CALL_TIMEOUT, client.sync(request)).await {
            Ok(Ok(response)) => {
                let mut stream = response.into_inner();
                while let Ok(Some(_)) = stream.message().await {
                    beats.sync_events.fetch_add(1, Ordering::Relaxed);
                }
                beats.streams_ended.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(status)) => {
                let what = format!("{name}: sync: {}: {}", status.code(), status.message());
                beats.error(&beats.sync_failed, what);
            }
            Err(_) => {
                let what = format!("{name}: no answer to Sync within {CALL_TIMEOUT:?}");
                beats.error(&beats.sync_failed, what);
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Stops a few agents at once and waits for the hub to show each of them Unknown; then checks
/// that every other cluster still shows healthy.
async fn lost_clusters(
    plan: &Plan,
    profiles: &Api<ClusterProfile>,
    shared: &Shared,
    agents: &[Agent],
    report: &mut Report,
    n: usize,
) -> Lost {
    let count = LOST_AGENTS.min(agents.len());
    let stopped: Vec<&Agent> = (0..count)
        .map(|k| &agents[k * agents.len() / count])
        .collect();
    eprintln!(
        "{n} clusters: stopping {count} agents, waiting up to {} s for them to show Unknown",
        (plan.grace() + plan.lost_slack).as_secs()
    );
    let stop = Instant::now();
    for agent in &stopped {
        agent.life.abort();
    }
    let last_beats: Vec<Instant> = stopped
        .iter()
        .map(|a| shared.epoch + Duration::from_micros(a.last_beat.load(Ordering::Relaxed)))
        .collect();
    let mut shown: Vec<Option<(Duration, Duration)>> = vec![None; count];
    let mut interval = tokio::time::interval(POLL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_error = None;
    while shown.iter().any(Option::is_none) && stop.elapsed() < plan.grace() + plan.lost_slack {
        interval.tick().await;
        for (k, agent) in stopped.iter().enumerate() {
            if shown[k].is_some() {
                continue;
            }
            match profiles.get_opt(&agent.name).await {
                Ok(Some(profile)) => {
                    let now = Instant::now();
                    if condition(&profile, CONDITION_CONTROL_PLANE_HEALTHY)
                        == Some(("Unknown", "AgentLost"))
                    {
                        shown[k] = Some((
                            now.duration_since(stop),
                            now.saturating_duration_since(last_beats[k]),
                        ));
                    }
                }
                Ok(None) => last_error = Some(format!("profile {} is gone", agent.name)),
                Err(err) => last_error = Some(format!("get {}: {err}", agent.name)),
            }
        }
    }
    let missing: Vec<&str> = stopped
        .iter()
        .zip(&shown)
        .filter(|(_, s)| s.is_none())
        .map(|(a, _)| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        report.fail(format!(
            "{n} clusters: {} stopped cluster(s) never showed ControlPlaneHealthy=Unknown within \
             {} s: {}{}",
            missing.len(),
            (plan.grace() + plan.lost_slack).as_secs(),
            missing.join(", "),
            last_error
                .map(|e| format!(" (last error: {e})"))
                .unwrap_or_default()
        ));
    }
    // The clusters that kept heartbeating must still show healthy.
    let stopped_names: Vec<&str> = stopped.iter().map(|a| a.name.as_str()).collect();
    match profiles.list(&ListParams::default()).await {
        Ok(list) => {
            let unhealthy: Vec<String> = list
                .items
                .iter()
                .filter(|p| {
                    let name = p.metadata.name.as_deref().unwrap_or_default();
                    !stopped_names.contains(&name)
                })
                .filter_map(|p| match condition(p, CONDITION_CONTROL_PLANE_HEALTHY) {
                    Some(("True", _)) => None,
                    other => Some(format!(
                        "{} ({other:?})",
                        p.metadata.name.as_deref().unwrap_or_default()
                    )),
                })
                .collect();
            if !unhealthy.is_empty() {
                report.fail(format!(
                    "{n} clusters: {} heartbeating cluster(s) do not show healthy, e.g. {}",
                    unhealthy.len(),
                    unhealthy[..unhealthy.len().min(3)].join(", ")
                ));
            }
        }
        Err(err) => report.fail(format!(
            "{n} clusters: cannot list the profiles after the lost-cluster phase: {err}"
        )),
    }
    Lost { shown }
}

/// Polls the profiles every `POLL` until `want` of them satisfy `shows`; returns when.
async fn wait_for_count(
    profiles: &Api<ClusterProfile>,
    want: usize,
    cap: Duration,
    shows: impl Fn(&ClusterProfile) -> bool,
) -> anyhow::Result<Instant> {
    let give_up = Instant::now() + cap;
    let mut interval = tokio::time::interval(POLL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = 0;
    let mut last_error = None;
    loop {
        interval.tick().await;
        match profiles.list(&ListParams::default()).await {
            Ok(list) => {
                let now = Instant::now();
                seen = list.items.iter().filter(|p| shows(p)).count();
                if seen >= want {
                    return Ok(now);
                }
            }
            Err(err) => last_error = Some(err),
        }
        if Instant::now() > give_up {
            bail!(
                "only {seen} of {want} profiles showed Joined=True and ControlPlaneHealthy=True \
                 within {} s{}",
                cap.as_secs(),
                last_error
                    .map(|e| format!(" (last list error: {e})"))
                    .unwrap_or_default()
            );
        }
    }
}

/// The status and reason of one condition of a profile.
fn condition<'a>(profile: &'a ClusterProfile, kind: &str) -> Option<(&'a str, &'a str)> {
    let status = profile.status.as_ref()?;
    let found = status.conditions.iter().find(|c| c.type_ == kind)?;
    Some((found.status.as_str(), found.reason.as_str()))
}

// ---------------------------------------------------------------------------------------------
// The hub process, from /proc

// ---------------------------------------------------------------------------------------------
// Tables

fn quantile_ms(sorted: &[Duration], q: f64) -> String {
    atoll_tests::bench::quantile(sorted, q).map_or_else(
        || "–".into(),
        |d| format!("{:.1}", d.as_secs_f64() * 1000.0),
    )
}

fn seconds(value: Option<Duration>) -> String {
    value.map_or_else(|| "–".into(), |d| format!("{:.1}", d.as_secs_f64()))
}

fn print_joins(results: &[Scale]) {
    let (target_clusters, target_seconds) = TARGET_JOIN;
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Join\n\n\
         Join time: from the first join to the last Join answered ACCEPTED. Shown: from the first \
         join to the hub's API showing every profile Joined=True and ControlPlaneHealthy=True \
         (each agent heartbeats right after its join). Target: {target_clusters} clusters shown \
         within {target_seconds:.0} s.\n\n\
         | clusters | accepted | failed | join s | joins/s | Join p50 ms | Join p99 ms | shown s | target |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for result in results {
        let Some(joins) = &result.joins else {
            let _ = writeln!(table, "| {} | not run | | | | | | | |", result.clusters);
            continue;
        };
        let rate = joins.accepted as f64 / joins.elapsed.as_secs_f64().max(1e-9);
        let target = if result.clusters >= target_clusters {
            verdict(
                result
                    .ready
                    .is_some_and(|r| r.as_secs_f64() <= target_seconds),
            )
            .to_owned()
        } else {
            format!("(for {target_clusters})")
        };
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.1} | {rate:.0} | {} | {} | {} | {target} |",
            result.clusters,
            joins.accepted,
            joins.failed,
            joins.elapsed.as_secs_f64(),
            quantile_ms(&joins.latencies, 0.5),
            quantile_ms(&joins.latencies, 0.99),
            seconds(result.ready),
        );
    }
    println!("{table}");
}

fn print_heartbeats(plan: &Plan, results: &[Scale]) {
    let lease = plan.lease().as_secs_f64();
    let mean = lease * (JITTER.0 + JITTER.1) / 2.0;
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Heartbeats at a lease of {lease:.0} s\n\n\
         Every agent heartbeats every {:.1}–{:.1} s (expected: N / {mean:.1} s). Failed heartbeats \
         and refused sync stream openings: over the whole run, joins to lost-cluster phase (must \
         be 0); an agent keeps its credential after a failed heartbeat and opens a refused sync \
         stream again a second later. CPU in % of one core over the \
         window: the hub process, this program (the agents), other processes. Target: hub under \
         {TARGET_HEARTBEAT_CPU:.0}% at the default lease of 10 s.\n\n\
         | clusters | window s | heartbeats | per s | expected per s | failed | p50 ms | p99 ms | hub CPU % | agents CPU % | other CPU % | sync events | syncs refused | streams ended | target |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        lease * JITTER.0,
        lease * JITTER.1,
    );
    for result in results {
        let Some(beats) = &result.heartbeats else {
            continue;
        };
        let target = if plan.lease_seconds == 10 {
            verdict(beats.hub_cpu < TARGET_HEARTBEAT_CPU)
        } else {
            "(at 10 s)"
        };
        let _ = writeln!(
            table,
            "| {} | {:.1} | {} | {:.0} | {:.0} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {target} |",
            result.clusters,
            beats.window.as_secs_f64(),
            beats.answered,
            beats.answered as f64 / beats.window.as_secs_f64(),
            result.clusters as f64 / mean,
            beats.failed,
            quantile_ms(&beats.latencies, 0.5),
            quantile_ms(&beats.latencies, 0.99),
            beats.hub_cpu,
            beats.bench_cpu,
            beats.other_cpu,
            beats.sync_events,
            beats.sync_failed,
            beats.streams_ended,
        );
    }
    println!("{table}");
}

fn print_memory(results: &[Scale]) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Hub memory (VmRSS)\n\n\
         Idle: after start, before any join. Joined: once every profile shows joined and healthy \
         (this includes what the API server holds for the lists of every profile polled just \
         before). Heartbeats: the most during the heartbeat window, the steady state. Per \
         cluster: (heartbeats − idle) / N. Marginal: the growth of heartbeats from the previous \
         row, per added cluster. Target: under {TARGET_KIB_PER_CLUSTER:.0} KiB per cluster.\n\n\
         | clusters | idle MiB | joined MiB | heartbeats MiB | KiB per cluster | marginal KiB per cluster | target |\n\
         |---:|---:|---:|---:|---:|---:|---|"
    );
    let mib =
        |kib: Option<u64>| kib.map_or_else(|| "–".into(), |k| format!("{:.1}", k as f64 / 1024.0));
    let kib = |value: Option<f64>| value.map_or_else(|| "–".into(), |k| format!("{k:.1}"));
    let mut previous: Option<(usize, u64)> = None;
    for result in results {
        let [idle, joined, beating] = result.memory;
        let per_cluster = match (idle, beating) {
            (Some(idle), Some(beating)) => {
                Some(beating.saturating_sub(idle) as f64 / result.clusters as f64)
            }
            _ => None,
        };
        let marginal = match (previous, beating) {
            (Some((clusters, before)), Some(beating)) if result.clusters > clusters => {
                Some((beating as f64 - before as f64) / (result.clusters - clusters) as f64)
            }
            _ => None,
        };
        if let Some(beating) = beating {
            previous = Some((result.clusters, beating));
        }
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} |",
            result.clusters,
            mib(idle),
            mib(joined),
            mib(beating),
            kib(per_cluster),
            kib(marginal),
            per_cluster.map_or("–", |k| verdict(k < TARGET_KIB_PER_CLUSTER)),
        );
    }
    println!("{table}");
}

fn print_lost(plan: &Plan, results: &[Scale]) {
    let grace = plan.grace().as_secs_f64();
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Lost-cluster detection\n\n\
         {LOST_AGENTS} agents stop heartbeating and drop their connections at once; the time \
         until the hub's API shows each profile ControlPlaneHealthy=Unknown (AgentLost), from the \
         stop and from the agent's last answered heartbeat. The hub allows {} missed leases of \
         {} s ({grace:.0} s). Target: shown within {grace:.0} s of the stop.\n\n\
         | clusters | stopped | shown Unknown | from stop min s | from stop max s | from last heartbeat min s | from last heartbeat max s | target |\n\
         |---:|---:|---:|---:|---:|---:|---:|---|",
        plan.missed_leases, plan.lease_seconds,
    );
    for result in results {
        let Some(lost) = &result.lost else {
            continue;
        };
        let shown: Vec<(Duration, Duration)> = lost.shown.iter().flatten().copied().collect();
        let from_stop = shown.iter().map(|s| s.0);
        let from_beat = shown.iter().map(|s| s.1);
        let all = shown.len() == lost.shown.len();
        let max_stop = from_stop.clone().max();
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            result.clusters,
            lost.shown.len(),
            shown.len(),
            seconds(from_stop.min()),
            seconds(max_stop),
            seconds(from_beat.clone().min()),
            seconds(from_beat.max()),
            verdict(all && max_stop.is_some_and(|m| m.as_secs_f64() <= grace)),
        );
    }
    println!("{table}");
}

fn print_hub_logs(results: &[Scale]) {
    let mut table = String::from(
        "## Hub log\n\n| clusters | warnings | errors | first warning or error |\n|---:|---:|---:|---|\n",
    );
    for result in results {
        let Some((warnings, errors, first)) = &result.hub_log else {
            continue;
        };
        let first: String = first.chars().take(300).collect();
        let _ = writeln!(
            table,
            "| {} | {warnings} | {errors} | {} |",
            result.clusters,
            first.replace('|', "\\|")
        );
    }
    println!("{table}");
}
