//! How fast a WorkPlacement reaches every member cluster, and what the fan-out costs the hub.
//!
//! A benchmark program, not a test: it asserts no timings. For each fleet size N it starts a fresh
//! `atoll up --auto-accept` (the real binary built beside this program, in its own process, on
//! free 127.0.0.1 ports, SQLite in a temporary directory) and simulates N agents in this process,
//! each on a TCP + TLS connection of its own to the hub's gRPC server, trusting only the hub's CA,
//! as the real agent does. Each simulated agent joins with the bootstrap token (at most
//! `JOIN_CONCURRENCY` joins in flight), heartbeats right after its join and then every lease with
//! the real agent's jitter, and keeps its sync stream open and reads it. On a `WorkUpsert` it
//! applies the Work's manifests to an in-memory member cluster (objects by kind, namespace and
//! name; what the Work no longer holds goes) and reports the Work's status with
//! `ReportWorkStatus`, built by the real agent's own `status_of`: `Applied` and `Available` True,
//! `Progressing` and `Degraded` False at the upsert's generation, and the same four conditions
//! for each manifest. On a `WorkDelete` it removes what the Work applied and reports the Work
//! deleted, as the real agent does once it has cleaned up, so that the hub lets the Work go.
//!
//! Once every cluster shows joined and healthy and every sync stream is open, the program creates
//! one WorkPlacement of `MANIFESTS` ConfigMaps (about `CONFIG_BYTES` bytes of data each) selecting
//! every member cluster (`clusterSelector: {}`, rollout `All`), then changes one ConfigMap of it,
//! then (generation 3) makes it choose half of the members, the cheapest by a `cost` property
//! (`PickN`), with one override rule per region label (the program labels the profiles first);
//! the third is printed beside the second with the ratio of their times (target: within 1.5×).
//! For the create and for the update it prints markdown tables of:
//!
//! - fan-out: from the create (or the update) call to every agent having received its Work, to
//!   every report acknowledged, and to the hub's API showing the WorkPlacement with
//!   `available == N` and `Progressing` reason `RolloutComplete` at the new generation (polled
//!   every 50 ms); the p50/p99 of each cluster's "call → Work received" and "call → report
//!   sent";
//! - hub load: the CPU the hub process used over the fan-out (utime + stime from
//!   `/proc/PID/stat`), this program used and every other process used, in % of one core
//!   (figures taken while "other" is high are disturbed); the hub's CPU per cluster, whole and
//!   net of what the fleet at rest costs (read over a few seconds before the create: its
//!   heartbeats, which go on through every rollout); and status writes per second: reports
//!   acknowledged over the time from the first to the last of them (the hub writes one Work status
//!   per report);
//! - memory: the hub's VmRSS before the placement, once it is shown available, once the update is,
//!   and the most seen during either; KiB per cluster is (available − before) / N.
//!
//! The targets are printed beside the figures: every cluster applied within 2 s for 1,000
//! clusters, 3 s for 5,000 and 8 s for 10,000 (judged on every report acknowledged, the issue's
//! measure, and, stricter, on the hub showing the placement done), under 1 ms of hub CPU per
//! cluster for an update, and under 40 KiB of hub memory per cluster for the placement (judged
//! from 1,000 clusters). Before the fleet joins, the hub API server's write rate is measured (a
//! thousand creates of objects the size of a Work), and each rollout is set against the time its
//! writes need at that rate. After the rollouts, and the cleanup of the Works the third let go,
//! 1,000 idle placements (one ConfigMap to one member each) are made, and the hub's CPU with them
//! is set against the same window before them (target: under 2% of a core). KubeFleet's
//! published figure, about 20 s (p90) for a placement to 100 clusters, is quoted for comparison;
//! it is not measured here.
//!
//! Run with `cargo build --release -p atoll && cargo bench -p atoll-tests --bench work`: the full
//! plan, N in 100, 1000 and 5000, at the default lease of 10 s. Without `--bench` (as `cargo test
//! --benches` runs it) and with `-- --quick` the quick plan runs instead: N = 20 at a lease of
//! 1 s, in seconds. `--clusters 100,1000` narrows a run; `--repeat 3` runs each size three times
//! in a row (a fresh hub each time) and adds a table of medians. Every loop is bounded by a count and a
//! time cap and all traffic goes to 127.0.0.1. The program fails (after printing every table)
//! when a join, a heartbeat, the opening of a sync stream or a status report fails, or when a
//! cluster never receives or never reports its Work, or the hub never shows the placement
//! available.
//! N agents need N sockets here and N in the hub (which inherits this process's limits): the
//! program checks `ulimit -n` first and says so when it is too low.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_agent::apply::Outcome;
use atoll_agent::hub::Client;
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{
    CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, CONDITION_PROGRESSING, INVENTORY_NAMESPACE,
};
use atoll_api::placement::WorkPlacement;
use atoll_api::work::{ResourceIdentifier, Work, WorkStatus};
use atoll_hub::work::ANNOTATION_PLACEMENT_GENERATION;
use atoll_proto::v1::{
    Health, HeartbeatRequest, JoinRequest, SyncRequest, WorkDelete, WorkStatusReport, WorkUpsert,
    WorkVersion, join_response, sync_event,
};
use atoll_tests::bench::{
    CpuWindow, check_open_files, cluster_id, fleet_args, hub_log, properties, quantile, rss_kib,
    run_seed, short_binary, unit, verdict,
};
use atoll_tests::{Process, Report, client_from, free_addr};
use futures::StreamExt as _;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

/// The allocator of the `atoll` binary, which the real agent runs in: the simulated agents
/// allocate as it does (with the system allocator they spent a fifth of their CPU in it).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Joins in flight at once (each on its own connection).
const JOIN_CONCURRENCY: usize = 128;
/// How long one connect or call may take before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the hub's API is polled for the WorkPlacement's status.
const POLL: Duration = Duration::from_millis(50);
/// How often the profiles are listed while waiting for the fleet to be ready (not measured).
const READY_POLL: Duration = Duration::from_secs(1);
/// How often an agent opens its sync stream before it gives up.
const SYNC_ATTEMPTS: usize = 5;
/// How often an agent sends one status report before it gives up.
const REPORT_ATTEMPTS: usize = 3;
/// The real agent's heartbeat jitter, as fractions of the lease.
const JITTER: (f64, f64) = (0.7, 0.9);
/// Worker threads of the agents' runtime (the machine has 2 cores; the hub has its own process).
const WORKER_THREADS: usize = 2;
/// What the simulated members report.
const KUBERNETES_VERSION: &str = "v1.35.0";

/// The WorkPlacement under test: its namespace, its name, and what it carries.
const PLACEMENT_NAMESPACE: &str = "default";
const PLACEMENT_NAME: &str = "bench";
/// ConfigMaps in the placement.
const MANIFESTS: usize = 10;
/// Regions the members are labelled with for the third rollout, one override rule each.
const REGIONS: usize = 4;
/// The third rollout's target: its times within this many times the PickAll update's.
const PICK_TARGET_RATIO: f64 = 1.5;
/// Bytes of data in each ConfigMap.
const CONFIG_BYTES: usize = 300;
/// Namespace of the ConfigMaps on the member clusters.
const MANIFEST_NAMESPACE: &str = "default";

/// The fan-out targets: fleet size and seconds until every cluster is applied.
const TARGET_APPLIED: [(usize, f64); 3] = [(1_000, 2.0), (5_000, 3.0), (10_000, 8.0)];
/// The join target: fleet size and seconds from the first join to the last Join answered.
const TARGET_JOINED: (usize, f64) = (5_000, 5.0);
/// Growth of hub memory over a placement, KiB per member cluster.
const TARGET_KIB_PER_CLUSTER: f64 = 40.0;
/// Hub CPU time per cluster for an update, in ms.
const TARGET_CPU_MS_PER_CLUSTER: f64 = 1.0;
/// Objects the write-rate probe creates, how many at once (as many as the hub stamps Works at
/// once), and where.
const PROBE_WRITES: usize = 1_000;
const PROBE_CONCURRENCY: usize = 64;
const PROBE_NAMESPACE: &str = "bench-write-rate";
/// Idle placements: each sends one ConfigMap to one member (`PickFixed`, round robin); their
/// cost is the hub's CPU over a window once all are rolled out, less the same window before
/// them. Target: 1,000 of them under 2% of a core.
const TARGET_IDLE_CPU: f64 = 2.0;
const IDLE_PREFIX: &str = "idle-";
/// KubeFleet's published figure: a placement to 100 clusters in about 20 s (p90).
const KUBEFLEET_PUBLISHED: (usize, f64) = (100, 20.0);

/// How much work each fleet size does.
#[derive(Clone, Copy, Debug)]
struct Plan {
    name: &'static str,
    clusters: &'static [usize],
    /// `--lease-seconds` of the hub.
    lease_seconds: u64,
    /// How long the hub idles before and after the fleet joins, before its memory is read.
    settle: Duration,
    /// Cap on starting every join.
    join_cap: Duration,
    /// Cap on waiting, after the last join, for every profile to show joined and healthy and
    /// every sync stream to be open.
    ready_cap: Duration,
    /// Cap on one rollout, from the call to the hub showing it available.
    rollout_cap: Duration,
    /// Idle placements made after the rollouts, and the window their CPU is read over.
    idle_placements: usize,
    idle_window: Duration,
    /// The window the hub's CPU is read over with the fleet at rest (joined and heartbeating, no
    /// placement), before the create.
    rest_window: Duration,
}

impl Plan {
    fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_seconds)
    }
}

const FULL: Plan = Plan {
    name: "full",
    clusters: &[100, 1_000, 5_000],
    lease_seconds: 10,
    settle: Duration::from_secs(2),
    join_cap: Duration::from_secs(300),
    ready_cap: Duration::from_secs(120),
    rollout_cap: Duration::from_secs(120),
    idle_placements: 1_000,
    idle_window: Duration::from_secs(30),
    rest_window: Duration::from_secs(5),
};

const QUICK: Plan = Plan {
    name: "quick",
    clusters: &[20],
    lease_seconds: 1,
    settle: Duration::from_millis(500),
    join_cap: Duration::from_secs(20),
    ready_cap: Duration::from_secs(10),
    rollout_cap: Duration::from_secs(20),
    idle_placements: 20,
    idle_window: Duration::from_secs(2),
    rest_window: Duration::from_secs(1),
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
        "# atoll Work fan-out benchmark ({} plan)\n\n{} CPU(s); binary `{}`; hub with \
         `--auto-accept --lease-seconds {}`; simulated agents on a tokio runtime of \
         {WORKER_THREADS} worker threads, each on a TLS connection of its own, applying to an \
         in-memory member cluster; one WorkPlacement of {MANIFESTS} ConfigMaps of \
         {CONFIG_BYTES} bytes of data each, `clusterSelector: {{}}`, rollout `All`.\n",
        plan.name,
        std::thread::available_parallelism().map_or(0, usize::from),
        short_binary(&binary.display().to_string()),
        plan.lease_seconds,
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
    print_fleet(&results);
    print_fan_out(&results);
    print_load(&results);
    print_write_floor(&results);
    print_idle(&results);
    print_repeats(&results);
    print_memory(&results);
    print_pick_half(&results);
    print_comparison(&results);
    print_hub_logs(&results);
    println!("Total time: {:.1} s.", started.elapsed().as_secs_f64());
    report.finish()
}

/// Everything measured for one fleet size; a phase that did not run leaves its figures empty.
#[derive(Default)]
struct Scale {
    clusters: usize,
    joins: Option<Joins>,
    /// From the first join to every profile joined and healthy and every sync stream open.
    ready: Option<Duration>,
    /// The create, then the update.
    rollouts: Vec<Rollout>,
    /// VmRSS in KiB before the placement.
    before_kib: Option<u64>,
    /// The hub's CPU in % of one core with the fleet at rest, before the placement: what its
    /// heartbeats cost, which runs on through every rollout's window.
    at_rest_cpu: Option<f64>,
    /// The hub API server's durable writes per second, measured before the fleet joined.
    write_rate: Option<f64>,
    /// What idle placements cost, once the rollouts are done.
    idle: Option<Idle>,
    /// Heartbeats and sync streams over the whole run of this fleet size.
    agents: Option<AgentCounts>,
    /// Warning and error lines the hub logged, with the first of them.
    hub_log: Option<(usize, usize, String)>,
}

struct Idle {
    placements: usize,
    /// From the first create to every idle placement rolled out.
    rolled_out: Duration,
    /// The hub's CPU in % of one core over the window before the idle placements, and after.
    before: f64,
    after: f64,
}

struct Joins {
    accepted: usize,
    /// Joins that failed or did not start within the cap.
    failed: usize,
    /// From the first join to the last Join returned.
    elapsed: Duration,
    /// What the hub's API server stored from the first join to the last Join returned: how far
    /// its revision moved.
    writes: u64,
}

struct AgentCounts {
    heartbeats: u64,
    heartbeats_failed: u64,
    sync_failed: u64,
    streams_ended: u64,
    reports_failed: u64,
    deletions_reported: u64,
}

/// One rollout: the create (placement generation 1) or the update (generation 2).
struct Rollout {
    what: &'static str,
    /// The WorkPlacement generation it rolls out.
    generation: i64,
    /// Clusters the placement should reach.
    want: usize,
    /// Per cluster, from the call: Work received, report sent, report acknowledged; sorted.
    received: Vec<Duration>,
    sent: Vec<Duration>,
    acked: Vec<Duration>,
    /// From the call to the hub's API showing every cluster available and the rollout complete.
    shown: Option<Duration>,
    /// The last status seen, when the hub never showed it done.
    last_status: String,
    /// Over the fan-out, from the call to the end of the wait.
    window: Duration,
    hub_cpu: f64,
    bench_cpu: f64,
    other_cpu: f64,
    /// VmRSS in KiB once shown available, and the most seen while waiting.
    rss_kib: Option<u64>,
    peak_kib: Option<u64>,
}

impl Rollout {
    /// Every cluster's report acknowledged: the time of the last, when none is missing.
    fn all_reported(&self) -> Option<Duration> {
        (self.acked.len() == self.want)
            .then(|| self.acked.last().copied())
            .flatten()
    }

    /// The hub's CPU time over the window per cluster, in milliseconds: the cost of one cluster's
    /// fan-out, steadier from run to run than the elapsed time on a busy machine.
    fn hub_cpu_ms_per_cluster(&self) -> Option<f64> {
        (self.want > 0)
            .then(|| self.hub_cpu / 100.0 * self.window.as_secs_f64() * 1000.0 / self.want as f64)
    }

    /// The same less what the fleet at rest costs over the window (its heartbeats): the
    /// fan-out's own cost. Never below zero.
    fn net_cpu_ms_per_cluster(&self, at_rest: Option<f64>) -> Option<f64> {
        let at_rest = at_rest?;
        (self.want > 0).then(|| {
            (self.hub_cpu - at_rest).max(0.0) / 100.0 * self.window.as_secs_f64() * 1000.0
                / self.want as f64
        })
    }

    /// Reports acknowledged per second, from the first to the last of them.
    fn writes_per_second(&self) -> Option<f64> {
        let (first, last) = (self.acked.first()?, self.acked.last()?);
        let span = last.saturating_sub(*first).as_secs_f64();
        (self.acked.len() > 1 && span > 0.0).then(|| self.acked.len() as f64 / span)
    }
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
    let lease = plan.lease_seconds.to_string();
    let hub = Process::hub_with(
        &data_dir,
        api_addr,
        &[
            "--grpc-addr",
            &grpc_addr.to_string(),
            "--auto-accept",
            "--lease-seconds",
            &lease,
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
    data_dir: PathBuf,
    grpc_url: String,
}

/// What every simulated agent shares.
struct Shared {
    /// The hub's gRPC endpoint, TLS pinned to its CA; each agent connects a clone of it.
    endpoint: Endpoint,
    bootstrap_token: String,
    counters: Counters,
    /// When each agent received, reported and had acknowledged each placement generation.
    deliveries: Mutex<HashMap<i64, Deliveries>>,
    /// Fleet size, for the length of each `Deliveries`.
    clusters: usize,
}

/// Counts of all agents, over the whole run of one fleet size.
#[derive(Default)]
struct Counters {
    heartbeats: AtomicU64,
    heartbeats_failed: AtomicU64,
    sync_failed: AtomicU64,
    /// Sync streams opened; the placement waits for one per agent.
    streams_opened: AtomicU64,
    /// Sync streams the hub ended or broke while their agent lived.
    streams_ended: AtomicU64,
    /// Status report calls that failed (each is tried again, `REPORT_ATTEMPTS` in all).
    reports_failed: AtomicU64,
    /// Deleted Works whose cleanup the hub took the report of.
    deletions_reported: AtomicU64,
    /// Upserts that could not be read as a Work.
    bad_upserts: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Counters {
    fn error(&self, counter: &AtomicU64, what: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        locked(&self.first_error).get_or_insert(what);
    }
}

/// One placement generation as the agents saw it, by agent index: the first time each received
/// it, sent its report and had its report acknowledged.
struct Deliveries {
    received: Vec<Option<Instant>>,
    sent: Vec<Option<Instant>>,
    acked: Vec<Option<Instant>>,
}

impl Deliveries {
    fn new(clusters: usize) -> Self {
        Deliveries {
            received: vec![None; clusters],
            sent: vec![None; clusters],
            acked: vec![None; clusters],
        }
    }
}

/// Which moment of a delivery an agent records.
#[derive(Clone, Copy)]
enum Moment {
    Received,
    Sent,
    Acked,
}

impl Shared {
    /// Records the first time agent `index` reached `moment` for placement generation
    /// `generation`.
    fn record(&self, generation: i64, index: usize, moment: Moment, at: Instant) {
        let mut deliveries = locked(&self.deliveries);
        let entry = deliveries
            .entry(generation)
            .or_insert_with(|| Deliveries::new(self.clusters));
        let slots = match moment {
            Moment::Received => &mut entry.received,
            Moment::Sent => &mut entry.sent,
            Moment::Acked => &mut entry.acked,
        };
        if let Some(slot) = slots.get_mut(index) {
            slot.get_or_insert(at);
        }
    }

    /// How many agents have had their report of `generation` acknowledged.
    fn acked(&self, generation: i64) -> usize {
        locked(&self.deliveries)
            .get(&generation)
            .map_or(0, |d| d.acked.iter().flatten().count())
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn drive(
    plan: &Plan,
    target: &Target,
    result: &mut Scale,
    report: &mut Report,
) -> anyhow::Result<()> {
    let n = result.clusters;
    tokio::time::sleep(plan.settle).await;
    let kube = client_from(&target.data_dir.join("hub.kubeconfig")).await?;
    eprintln!("{n} clusters: measuring the hub API server's write rate");
    result.write_rate = Some(write_rate(kube.clone()).await?);
    let profiles: Api<ClusterProfile> = Api::namespaced(kube.clone(), INVENTORY_NAMESPACE);
    let placements: Api<WorkPlacement> = Api::namespaced(kube, PLACEMENT_NAMESPACE);
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
        counters: Counters::default(),
        deliveries: Mutex::default(),
        clusters: n,
    });

    // Join, and wait for a quiet, ready fleet.
    eprintln!("{n} clusters: joining");
    let before_join = revision(&profiles).await?;
    let epoch = Instant::now();
    let (agents, joins) = join_all(plan, &shared, n, epoch).await;
    if joins.failed > 0 {
        report.fail(format!(
            "{n} clusters: {} of {n} joins failed or did not start within {} s, first error: {}",
            joins.failed,
            plan.join_cap.as_secs(),
            joins.first_error.as_deref().unwrap_or("–")
        ));
    }
    result.joins = Some(Joins {
        accepted: joins.accepted,
        failed: joins.failed,
        elapsed: joins.elapsed,
        writes: revision(&profiles).await?.saturating_sub(before_join),
    });
    let want = agents.len();
    eprintln!("{n} clusters: waiting for every profile to show joined and healthy");
    match wait_ready(plan, &profiles, &shared, want).await {
        Ok(at) => result.ready = Some(at.duration_since(epoch)),
        Err(err) => report.fail(format!("{n} clusters: {err:#}")),
    }
    tokio::time::sleep(plan.settle).await;
    result.before_kib = Some(rss_kib(target.pid)?);
    let at_rest = CpuWindow::start(target.pid);
    tokio::time::sleep(plan.rest_window).await;
    result.at_rest_cpu = Some(at_rest.used(plan.rest_window).hub);

    // The create, then the update.
    // The third: the same placement choosing half of the members, the cheapest by their `cost`
    // property, with one override rule per region (a label the program sets first).
    let phases: [(&'static str, usize); 3] =
        [("create", usize::MAX), ("update", 0), (PICK_HALF, 0)];
    for (generation, (what, changed)) in (1..).zip(phases) {
        let mut placement = placement(changed);
        let mut want = want;
        if what == PICK_HALF {
            label_regions(&profiles, n).await?;
            want /= 2;
            pick_half(&mut placement, want);
        }
        eprintln!("{n} clusters: {what} of the placement, waiting for every cluster");
        let rollout = roll_out(
            plan,
            target,
            &placements,
            &shared,
            &placement,
            what,
            generation,
            want,
        )
        .await;
        match rollout {
            Ok(rollout) => {
                check_rollout(&rollout, n, report);
                result.rollouts.push(rollout);
            }
            Err(err) => {
                report.fail(format!("{n} clusters: {what}: {err:#}"));
                break;
            }
        }
    }

    if result.rollouts.len() == 3 {
        // The hub deletes the Works the third rollout let go beside its plans, past the moment it
        // shows that rollout done: the window before the idle placements must not read them.
        let let_go = (want - want / 2) as u64;
        let waited = Instant::now();
        match cleaned_up(&shared.counters.deletions_reported, let_go, plan).await {
            Ok(()) => eprintln!(
                "{n} clusters: the {let_go} let-go Works cleaned up {:.1} s after the third rollout",
                waited.elapsed().saturating_sub(plan.settle).as_secs_f64()
            ),
            Err(err) => report.fail(format!("{n} clusters: {err:#}")),
        }
        eprintln!("{n} clusters: {} idle placements", plan.idle_placements);
        match idle_placements(plan, target, &placements, n).await {
            Ok(idle) => result.idle = Some(idle),
            Err(err) => report.fail(format!("{n} clusters: idle placements: {err:#}")),
        }
    }

    let counters = &shared.counters;
    let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let agent_counts = AgentCounts {
        heartbeats: count(&counters.heartbeats),
        heartbeats_failed: count(&counters.heartbeats_failed),
        sync_failed: count(&counters.sync_failed),
        streams_ended: count(&counters.streams_ended),
        reports_failed: count(&counters.reports_failed),
        deletions_reported: count(&counters.deletions_reported),
    };
    let bad_upserts = count(&counters.bad_upserts);
    if agent_counts.heartbeats_failed > 0
        || agent_counts.sync_failed > 0
        || agent_counts.reports_failed > 0
        || bad_upserts > 0
    {
        report.fail(format!(
            "{n} clusters: {} heartbeat(s), {} sync stream opening(s), {} status report(s) and \
             {bad_upserts} Work upsert(s) failed, first error: {}",
            agent_counts.heartbeats_failed,
            agent_counts.sync_failed,
            agent_counts.reports_failed,
            locked(&counters.first_error).as_deref().unwrap_or("?")
        ));
    }
    result.agents = Some(agent_counts);
    drop(agents);
    Ok(())
}

/// Fails the run when a cluster was never reached, never reported, or the hub never showed the
/// rollout done.
fn check_rollout(rollout: &Rollout, n: usize, report: &mut Report) {
    let what = rollout.what;
    let unreached = rollout.want - rollout.received.len();
    let unreported = rollout.want - rollout.acked.len();
    if unreached > 0 || unreported > 0 {
        report.fail(format!(
            "{n} clusters: {what}: {unreached} cluster(s) never received the Work and \
             {unreported} never had a report acknowledged within the cap"
        ));
    }
    if rollout.shown.is_none() {
        report.fail(format!(
            "{n} clusters: {what}: the hub never showed the WorkPlacement available on {} \
             clusters with the rollout complete; last status: {}",
            rollout.want, rollout.last_status
        ));
    }
}

/// Creates the placement (or applies its update) and waits until the hub shows it available on
/// `want` clusters with the rollout complete, and every report of it is acknowledged.
#[allow(clippy::too_many_arguments)]
async fn roll_out(
    plan: &Plan,
    target: &Target,
    placements: &Api<WorkPlacement>,
    shared: &Shared,
    placement: &Value,
    what: &'static str,
    generation: i64,
    want: usize,
) -> anyhow::Result<Rollout> {
    let cpu = CpuWindow::start(target.pid);
    let call = Instant::now();
    let written = if generation == 1 {
        let object: WorkPlacement = serde_json::from_value(placement.clone())?;
        placements
            .create(&PostParams::default(), &object)
            .await
            .context("cannot create the WorkPlacement")?
    } else {
        let patch = json!({"spec": placement["spec"]});
        placements
            .patch(
                PLACEMENT_NAME,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .context("cannot update the WorkPlacement")?
    };
    if written.metadata.generation != Some(generation) {
        bail!(
            "the WorkPlacement has generation {:?} after the {what}, not {generation}",
            written.metadata.generation
        );
    }
    let give_up = call + plan.rollout_cap;
    let mut interval = tokio::time::interval(POLL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shown = None;
    let mut rss = None;
    let mut peak = 0;
    let mut last_status = String::from("none");
    loop {
        interval.tick().await;
        peak = peak.max(rss_kib(target.pid)?);
        if shown.is_none() {
            match placements.get_opt(PLACEMENT_NAME).await {
                Ok(Some(current)) => {
                    let now = Instant::now();
                    if rolled_out(&current, generation, want) {
                        shown = Some(now.duration_since(call));
                        rss = Some(rss_kib(target.pid)?);
                    }
                    last_status = status_line(&current);
                }
                Ok(None) => last_status = "the WorkPlacement is gone".to_owned(),
                Err(err) => last_status = format!("cannot read the WorkPlacement: {err}"),
            }
        }
        let all_acked = shared.acked(generation) >= want;
        if (shown.is_some() && all_acked) || Instant::now() > give_up {
            break;
        }
    }
    let window = call.elapsed();
    let used = cpu.used(window);
    let since_call = |moments: &[Option<Instant>]| -> Vec<Duration> {
        let mut out: Vec<Duration> = moments
            .iter()
            .flatten()
            .map(|at| at.saturating_duration_since(call))
            .collect();
        out.sort();
        out
    };
    let (received, sent, acked) = match locked(&shared.deliveries).get(&generation) {
        Some(d) => (
            since_call(&d.received),
            since_call(&d.sent),
            since_call(&d.acked),
        ),
        None => Default::default(),
    };
    Ok(Rollout {
        what,
        generation,
        want,
        received,
        sent,
        acked,
        shown,
        last_status,
        window,
        hub_cpu: used.hub,
        bench_cpu: used.this,
        other_cpu: used.other,
        rss_kib: rss,
        peak_kib: Some(peak),
    })
}

/// Whether the hub shows the placement at `generation` available on `want` clusters with the
/// rollout complete.
fn rolled_out(placement: &WorkPlacement, generation: i64, want: usize) -> bool {
    let Some(status) = &placement.status else {
        return false;
    };
    let complete = status
        .conditions
        .iter()
        .any(|c| c.type_ == CONDITION_PROGRESSING && c.reason == "RolloutComplete");
    status.observed_generation == Some(generation)
        && status.selected as usize == want
        && status.available as usize == want
        && complete
}

/// The WorkPlacement's status in one line, for a failure message.
fn status_line(placement: &WorkPlacement) -> String {
    let Some(status) = &placement.status else {
        return "no status".to_owned();
    };
    let progressing = status
        .conditions
        .iter()
        .find(|c| c.type_ == CONDITION_PROGRESSING)
        .map_or("–", |c| c.reason.as_str());
    format!(
        "generation {:?}, selected {}, applied {}, available {}, pending {}, Progressing {}",
        status.observed_generation,
        status.selected,
        status.applied,
        status.available,
        status.pending,
        progressing
    )
}

/// The placement of the benchmark: `MANIFESTS` ConfigMaps for every member cluster; the
/// ConfigMap at `changed` (if any) carries other data.
fn placement(changed: usize) -> Value {
    let manifests: Vec<Value> = (0..MANIFESTS)
        .map(|k| {
            let version = if k == changed { "2" } else { "1" };
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("bench-config-{k:02}"), "namespace": MANIFEST_NAMESPACE},
                "data": {"version": version, "settings": filler(k, version)},
            })
        })
        .collect();
    json!({
        "apiVersion": "atoll.dev/v1alpha1",
        "kind": "WorkPlacement",
        "metadata": {"name": PLACEMENT_NAME, "namespace": PLACEMENT_NAMESPACE},
        "spec": {
            "manifests": manifests,
            "clusterSelector": {},
            "rolloutStrategy": {"type": "All"},
        },
    })
}

/// Waits until the hub has acknowledged the cleanup of `count` let-go Works (`reported` counts
/// them), and the plan's settling time more.
async fn cleaned_up(reported: &AtomicU64, count: u64, plan: &Plan) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let done = reported.load(Ordering::Relaxed);
        if done >= count {
            tokio::time::sleep(plan.settle).await;
            return Ok(());
        }
        if started.elapsed() > plan.rollout_cap {
            bail!(
                "{done} of {count} let-go Works' cleanup acknowledged within {} s",
                plan.rollout_cap.as_secs()
            );
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// Makes `plan.idle_placements` placements of one ConfigMap each, each to one member, waits until
/// the hub shows them all rolled out, and reads the hub's CPU over `plan.idle_window` before
/// them and after: what a thousand placements that change nothing cost the hub.
async fn idle_placements(
    plan: &Plan,
    target: &Target,
    placements: &Api<WorkPlacement>,
    clusters: usize,
) -> anyhow::Result<Idle> {
    let count = plan.idle_placements;
    let window = plan.idle_window;
    let before = CpuWindow::start(target.pid);
    tokio::time::sleep(window).await;
    let before = before.used(window).hub;
    let started = Instant::now();
    let created: Vec<anyhow::Result<()>> = futures::stream::iter(0..count)
        .map(|i| async move {
            let object: WorkPlacement = serde_json::from_value(idle_placement(i, clusters))?;
            placements
                .create(&PostParams::default(), &object)
                .await
                .with_context(|| format!("creating idle placement {i}"))?;
            Ok(())
        })
        .buffer_unordered(16)
        .collect()
        .await;
    if let Some(Err(err)) = created.into_iter().find(Result::is_err) {
        return Err(err);
    }
    loop {
        let done = placements
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|name| name.starts_with(IDLE_PREFIX))
                    && rolled_out(p, 1, 1)
            })
            .count();
        if done == count {
            break;
        }
        if started.elapsed() > plan.rollout_cap {
            bail!(
                "{done} of {count} idle placements shown rolled out within {} s",
                plan.rollout_cap.as_secs()
            );
        }
        tokio::time::sleep(READY_POLL).await;
    }
    let rolled_out_in = started.elapsed();
    tokio::time::sleep(plan.settle).await;
    let after = CpuWindow::start(target.pid);
    tokio::time::sleep(window).await;
    Ok(Idle {
        placements: count,
        rolled_out: rolled_out_in,
        before,
        after: after.used(window).hub,
    })
}

/// Idle placement `i`: one small ConfigMap to member `i` (round robin over the fleet).
fn idle_placement(i: usize, clusters: usize) -> Value {
    json!({
        "apiVersion": "atoll.dev/v1alpha1",
        "kind": "WorkPlacement",
        "metadata": {"name": format!("{IDLE_PREFIX}{i:04}"), "namespace": PLACEMENT_NAMESPACE},
        "spec": {
            "manifests": [{
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("{IDLE_PREFIX}{i:04}"), "namespace": MANIFEST_NAMESPACE},
                "data": {"placement": format!("{i}")},
            }],
            "policy": {"type": "PickFixed", "clusterNames": [format!("member-{:05}", i % clusters)]},
            "rolloutStrategy": {"type": "All"},
        },
    })
}

/// The hub API server's rate of durable writes of objects the size of the placement's Works:
/// ConfigMaps holding its manifests, created [`PROBE_CONCURRENCY`] at once into a namespace of
/// their own before the fleet joins. A rollout makes two such writes per cluster (the hub stamps
/// the Work, then writes the status its cluster reports), so `2 N / rate` is the time no rollout
/// of N clusters beats on this API server.
async fn write_rate(kube: kube::Client) -> anyhow::Result<f64> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(kube.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": PROBE_NAMESPACE}}))?,
        )
        .await
        .context("creating the write-rate probe's namespace")?;
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(kube, PROBE_NAMESPACE);
    let manifests = serde_json::to_string(&placement(usize::MAX)["spec"]["manifests"])?;
    let started = Instant::now();
    let created: Vec<kube::Result<_>> = futures::stream::iter(0..PROBE_WRITES)
        .map(|i| {
            let maps = &maps;
            let object = json!({
                "metadata": {"name": format!("probe-{i:04}")},
                "data": {"manifests": manifests},
            });
            async move {
                let object = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
                maps.create(&PostParams::default(), &object).await
            }
        })
        .buffer_unordered(PROBE_CONCURRENCY)
        .collect()
        .await;
    let elapsed = started.elapsed();
    if let Some(Err(err)) = created.into_iter().find(Result::is_err) {
        bail!("the write-rate probe's create failed: {err}");
    }
    Ok(PROBE_WRITES as f64 / elapsed.as_secs_f64())
}

/// The hub API server's revision: how many writes it has stored (a list's `resourceVersion`).
async fn revision(profiles: &Api<ClusterProfile>) -> anyhow::Result<u64> {
    let list = profiles
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await
        .context("listing profiles for the hub's revision")?;
    let version = list.metadata.resource_version.unwrap_or_default();
    version
        .parse()
        .with_context(|| format!("the hub's revision {version:?} is not a number"))
}

/// The name of the third rollout.
const PICK_HALF: &str = "PickN half, 4 overrides";

/// Makes the placement choose `half` of the members, the cheapest first, and gives it one
/// override rule per region: each sets a value of every ConfigMap from the cluster's name and
/// `cost` property.
fn pick_half(placement: &mut Value, half: usize) {
    placement["spec"]["policy"] = json!({
        "type": "PickN",
        "numberOfClusters": half,
        "preferences": [{"weight": 100, "sortBy": {"property": "cost", "order": "Ascending"}}],
    });
    placement["spec"]["overrides"] = (0..REGIONS)
        .map(|r| {
            json!({
                "clusters": {"labelSelector": {"matchLabels": {"region": format!("r{r}")}}},
                "manifests": [{"kind": "ConfigMap"}],
                "jsonPatch": [{"op": "add", "path": "/data/region", "value": format!("r{r} ${{CLUSTER_NAME}} ${{PROPERTY:cost}}")}],
            })
        })
        .collect();
}

/// Labels each member's ClusterProfile with its region (`r0` to `r3`, by index), 32 at a time;
/// not measured.
async fn label_regions(profiles: &Api<ClusterProfile>, n: usize) -> anyhow::Result<()> {
    eprintln!("{n} clusters: labelling the profiles with their regions");
    let patches = (0..n).map(|index| async move {
        let name = format!("member-{index:05}");
        let patch = json!({"metadata": {"labels": {"region": format!("r{}", index % REGIONS)}}});
        profiles
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("cannot label the ClusterProfile {name}"))
    });
    let results: Vec<anyhow::Result<ClusterProfile>> = futures::stream::iter(patches)
        .buffer_unordered(32)
        .collect()
        .await;
    results.into_iter().try_for_each(|r| r.map(drop))
}

/// `CONFIG_BYTES` of text that differ by ConfigMap and version.
fn filler(k: usize, version: &str) -> String {
    let line = format!("key-{k:02}=value-{version};");
    line.repeat(CONFIG_BYTES / line.len() + 1)[..CONFIG_BYTES].to_owned()
}

/// Waits until every profile shows joined and healthy and every agent's sync stream is open;
/// returns when.
async fn wait_ready(
    plan: &Plan,
    profiles: &Api<ClusterProfile>,
    shared: &Shared,
    want: usize,
) -> anyhow::Result<Instant> {
    let give_up = Instant::now() + plan.ready_cap;
    let mut interval = tokio::time::interval(READY_POLL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = 0;
    let mut last_error = None;
    loop {
        interval.tick().await;
        match profiles.list(&ListParams::default()).await {
            Ok(list) => {
                let now = Instant::now();
                seen = list.items.iter().filter(|p| ready(p)).count();
                let streams = shared.counters.streams_opened.load(Ordering::Relaxed) as usize;
                if seen >= want && streams >= want {
                    return Ok(now);
                }
            }
            Err(err) => last_error = Some(err),
        }
        if Instant::now() > give_up {
            bail!(
                "only {seen} of {want} profiles showed Joined=True and ControlPlaneHealthy=True \
                 and {} of {want} sync streams opened within {} s{}",
                shared.counters.streams_opened.load(Ordering::Relaxed),
                plan.ready_cap.as_secs(),
                last_error
                    .map(|e| format!(" (last list error: {e})"))
                    .unwrap_or_default()
            );
        }
    }
}

/// Whether a profile shows its cluster joined and healthy.
fn ready(profile: &ClusterProfile) -> bool {
    let shows = |kind: &str| {
        profile.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == kind && c.status == "True")
        })
    };
    shows(CONDITION_JOINED) && shows(CONDITION_CONTROL_PLANE_HEALTHY)
}

// ---------------------------------------------------------------------------------------------
// The simulated agents

struct JoinOutcome {
    accepted: usize,
    failed: usize,
    first_error: Option<String>,
    elapsed: Duration,
}

/// A simulated agent that joined; dropping it ends its heartbeats, sync stream and connection.
struct Agent {
    life: tokio::task::JoinHandle<()>,
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.life.abort();
    }
}

/// Joins `n` agents, at most `JOIN_CONCURRENCY` at once; each starts its life right after its
/// join. Returns the agents that joined.
async fn join_all(
    plan: &Plan,
    shared: &Arc<Shared>,
    n: usize,
    epoch: Instant,
) -> (Vec<Agent>, JoinOutcome) {
    let gate = Arc::new(Semaphore::new(JOIN_CONCURRENCY));
    let mut pending = Vec::with_capacity(n);
    for index in 0..n {
        if epoch.elapsed() > plan.join_cap {
            break;
        }
        let Ok(permit) = gate.clone().acquire_owned().await else {
            break;
        };
        let shared = shared.clone();
        let lease = plan.lease();
        pending.push(tokio::spawn(async move {
            let joined = join_one(&shared, index, lease).await;
            drop(permit);
            joined
        }));
    }
    let mut agents = Vec::with_capacity(n);
    let mut first_error = None;
    let mut last_return = epoch;
    for handle in pending {
        // Each join is bounded by the connect and call timeouts.
        match handle.await {
            Ok(Ok((agent, returned))) => {
                agents.push(agent);
                last_return = last_return.max(returned);
            }
            Ok(Err(err)) => {
                first_error.get_or_insert_with(|| format!("{err:#}"));
            }
            Err(err) => {
                first_error.get_or_insert_with(|| err.to_string());
            }
        }
    }
    let outcome = JoinOutcome {
        accepted: agents.len(),
        failed: n - agents.len(),
        first_error,
        elapsed: last_return.duration_since(epoch),
    };
    (agents, outcome)
}

/// Connects one agent, joins it, and starts its life (heartbeats and sync stream); returns it and
/// when its Join returned.
async fn join_one(
    shared: &Arc<Shared>,
    index: usize,
    lease: Duration,
) -> anyhow::Result<(Agent, Instant)> {
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
    let lease = if response.lease_seconds > 0 {
        Duration::from_secs(u64::from(response.lease_seconds))
    } else {
        lease
    };
    let life = tokio::spawn(live(client, name, index, lease, shared.clone()));
    Ok((Agent { life }, returned))
}

/// An agent after its join: a heartbeat at once, then one every lease with jitter (the first of
/// them at a random phase), while its sync stream is read and its Works applied. Runs until
/// aborted.
async fn live(
    mut client: Client,
    name: String,
    index: usize,
    lease: Duration,
    shared: Arc<Shared>,
) {
    let mut seed = (index as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ run_seed();
    heartbeat(&mut client, &name, index, &shared).await;
    let sync = follow_sync(client.clone(), &name, index, &shared);
    let beats = async {
        // A fleet that joined over time does not beat in waves: the second beat comes at a
        // random phase.
        let mean = (JITTER.0 + JITTER.1) / 2.0;
        tokio::time::sleep(lease.mul_f64(mean * unit(&mut seed))).await;
        loop {
            heartbeat(&mut client, &name, index, &shared).await;
            let fraction = JITTER.0 + (JITTER.1 - JITTER.0) * unit(&mut seed);
            tokio::time::sleep(lease.mul_f64(fraction)).await;
        }
    };
    tokio::join!(sync, beats);
}

async fn heartbeat(client: &mut Client, name: &str, index: usize, shared: &Shared) {
    let counters = &shared.counters;
    let request = HeartbeatRequest {
        cluster_name: name.to_owned(),
        health: Some(Health {
            ready: true,
            message: String::new(),
        }),
        kubernetes_version: KUBERNETES_VERSION.to_owned(),
        properties: properties(index),
    };
    match tokio::time::timeout(CALL_TIMEOUT, client.heartbeat(request)).await {
        Ok(Ok(_)) => {
            counters.heartbeats.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Err(status)) => counters.error(
            &counters.heartbeats_failed,
            format!("{name}: heartbeat: {}: {}", status.code(), status.message()),
        ),
        Err(_) => counters.error(
            &counters.heartbeats_failed,
            format!("{name}: no answer to a heartbeat within {CALL_TIMEOUT:?}"),
        ),
    }
}

/// Opens the agent's sync stream and handles every event, as a real agent does: a Work upsert is
/// applied to the in-memory member cluster and reported. A refused opening or a broken stream is
/// counted, then the agent opens it again after a second (saying which Works it has), at most
/// `SYNC_ATTEMPTS` times.
async fn follow_sync(mut client: Client, name: &str, index: usize, shared: &Shared) {
    let counters = &shared.counters;
    let mut member = MemberCluster::default();
    for _ in 0..SYNC_ATTEMPTS {
        let request = SyncRequest {
            cluster_name: name.to_owned(),
            works: member.versions(),
            // The agent kept what it applied: only what differs.
            full: false,
        };
        match tokio::time::timeout(CALL_TIMEOUT, client.sync(request)).await {
            Ok(Ok(response)) => {
                counters.streams_opened.fetch_add(1, Ordering::Relaxed);
                let mut stream = response.into_inner();
                while let Ok(Some(event)) = stream.message().await {
                    match event.event {
                        Some(sync_event::Event::WorkUpsert(upsert)) => {
                            let received = Instant::now();
                            apply_and_report(
                                &mut client,
                                name,
                                index,
                                shared,
                                &mut member,
                                upsert,
                                received,
                            )
                            .await;
                        }
                        Some(sync_event::Event::WorkDelete(delete)) => {
                            member.remove(&delete.name);
                            report_deleted(&mut client, name, shared, delete).await;
                        }
                        _ => {}
                    }
                }
                counters.streams_ended.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(status)) => counters.error(
                &counters.sync_failed,
                format!("{name}: sync: {}: {}", status.code(), status.message()),
            ),
            Err(_) => counters.error(
                &counters.sync_failed,
                format!("{name}: no answer to Sync within {CALL_TIMEOUT:?}"),
            ),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Applies one upserted Work to the member cluster and reports its status, trying the report
/// again after a second when it fails, `REPORT_ATTEMPTS` times in all.
async fn apply_and_report(
    client: &mut Client,
    name: &str,
    index: usize,
    shared: &Shared,
    member: &mut MemberCluster,
    upsert: WorkUpsert,
    received: Instant,
) {
    let counters = &shared.counters;
    let work: Work = match serde_json::from_slice(&upsert.work) {
        Ok(work) => work,
        Err(err) => {
            counters.error(
                &counters.bad_upserts,
                format!("{name}: Work {} is not a Work: {err}", upsert.name),
            );
            return;
        }
    };
    let placement_generation = work
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_PLACEMENT_GENERATION))
        .and_then(|g| g.parse().ok())
        .unwrap_or(upsert.generation);
    shared.record(placement_generation, index, Moment::Received, received);
    let identifiers = member.apply(&upsert, &work);
    let status = work_status(upsert.generation, identifiers);
    let report = WorkStatusReport {
        cluster_name: name.to_owned(),
        work_name: upsert.name.clone(),
        work_uid: upsert.uid.clone(),
        observed_generation: upsert.generation,
        status: serde_json::to_vec(&status).unwrap_or_default(),
        deleted: false,
    };
    let delivered = send_report(client, name, &shared.counters, &report, || {
        shared.record(placement_generation, index, Moment::Sent, Instant::now())
    })
    .await;
    if delivered {
        shared.record(placement_generation, index, Moment::Acked, Instant::now());
    }
}

/// Tells the hub that a deleted Work's objects are gone from the member cluster, as the real
/// agent does once it has cleaned up: the hub then lets the Work go.
async fn report_deleted(client: &mut Client, name: &str, shared: &Shared, delete: WorkDelete) {
    let report = WorkStatusReport {
        cluster_name: name.to_owned(),
        work_name: delete.name,
        work_uid: delete.uid,
        observed_generation: 0,
        status: b"{}".to_vec(),
        deleted: true,
    };
    if send_report(client, name, &shared.counters, &report, || {}).await {
        shared
            .counters
            .deletions_reported
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends `report`, trying again after a second when it fails, `REPORT_ATTEMPTS` times in all,
/// calling `sending` before each attempt; counts each failure. Whether the hub took it.
async fn send_report(
    client: &mut Client,
    name: &str,
    counters: &Counters,
    report: &WorkStatusReport,
    mut sending: impl FnMut(),
) -> bool {
    for attempt in 1..=REPORT_ATTEMPTS {
        sending();
        let failure =
            match tokio::time::timeout(CALL_TIMEOUT, client.report_work_status(report.clone()))
                .await
            {
                Ok(Ok(_)) => return true,
                Ok(Err(status)) => format!("{}: {}", status.code(), status.message()),
                Err(_) => format!("no answer within {CALL_TIMEOUT:?}"),
            };
        counters.error(
            &counters.reports_failed,
            format!(
                "{name}: {} of Work {} (attempt {attempt}): {failure}",
                if report.deleted {
                    "deletion report"
                } else {
                    "status report"
                },
                report.work_name
            ),
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    false
}

/// A simulated member cluster: the objects its Works applied, by kind, namespace and name, and
/// what each Work applied.
#[derive(Default)]
struct MemberCluster {
    objects: HashMap<String, Value>,
    works: HashMap<String, AppliedWork>,
}

/// What one Work applied: its version and the keys of its objects.
struct AppliedWork {
    uid: String,
    generation: i64,
    keys: Vec<String>,
}

impl MemberCluster {
    /// The Works applied, for the sync request.
    fn versions(&self) -> Vec<WorkVersion> {
        self.works
            .iter()
            .map(|(name, applied)| WorkVersion {
                name: name.clone(),
                uid: applied.uid.clone(),
                generation: applied.generation,
            })
            .collect()
    }

    /// Applies the Work's manifests in order and removes what an earlier generation of it applied
    /// and this one no longer holds; returns what each manifest is.
    fn apply(&mut self, upsert: &WorkUpsert, work: &Work) -> Vec<ResourceIdentifier> {
        let mut keys = Vec::with_capacity(work.spec.workload.manifests.len());
        let mut identifiers = Vec::with_capacity(keys.capacity());
        for (ordinal, manifest) in work.spec.workload.manifests.iter().enumerate() {
            let identifier = identify(ordinal, &manifest.0);
            let key = format!(
                "{}/{}/{}",
                identifier.kind, identifier.namespace, identifier.name
            );
            self.objects.insert(key.clone(), manifest.0.clone());
            keys.push(key);
            identifiers.push(identifier);
        }
        let before = self.works.insert(
            upsert.name.clone(),
            AppliedWork {
                uid: upsert.uid.clone(),
                generation: upsert.generation,
                keys: keys.clone(),
            },
        );
        for dropped in before.into_iter().flat_map(|b| b.keys) {
            if !keys.contains(&dropped) {
                self.objects.remove(&dropped);
            }
        }
        identifiers
    }

    /// Removes what a deleted Work applied.
    fn remove(&mut self, work: &str) {
        for key in self.works.remove(work).into_iter().flat_map(|w| w.keys) {
            self.objects.remove(&key);
        }
    }
}

/// What a manifest is: group, version, kind, resource, namespace and name.
fn identify(ordinal: usize, manifest: &Value) -> ResourceIdentifier {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let api_version = text(&manifest["apiVersion"]);
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), api_version),
    };
    let kind = text(&manifest["kind"]);
    ResourceIdentifier {
        ordinal: ordinal as i32,
        group,
        version,
        // The simulated member has no discovery: the plural of the kinds the benchmark places.
        resource: format!("{}s", kind.to_lowercase()),
        kind,
        namespace: text(&manifest["metadata"]["namespace"]),
        name: text(&manifest["metadata"]["name"]),
    }
}

/// The status of a Work applied at `generation`, as the real agent reports it (its own
/// `status_of`): each ConfigMap applied, available, not progressing, not degraded.
fn work_status(generation: i64, identifiers: Vec<ResourceIdentifier>) -> WorkStatus {
    let outcomes: Vec<Outcome> = identifiers
        .into_iter()
        .map(|identifier| Outcome {
            identifier,
            applied: Ok(Some(1)),
            health: Some(atoll_agent::health::of("ConfigMap", Some(1), &json!({}))),
            complete: None,
            uid: None,
            resource_version: None,
            drift_corrected: false,
            found: false,
            feedback: None,
            ignored: Default::default(),
        })
        .collect();
    atoll_agent::works::status_of(&outcomes, Some(generation))
}

// ---------------------------------------------------------------------------------------------
// The hub process, from /proc

// ---------------------------------------------------------------------------------------------
// Tables

fn quantile_ms(sorted: &[Duration], q: f64) -> String {
    quantile(sorted, q).map_or_else(
        || "–".into(),
        |d| format!("{:.0}", d.as_secs_f64() * 1000.0),
    )
}

fn seconds(value: Option<Duration>) -> String {
    value.map_or_else(|| "–".into(), |d| format!("{:.2}", d.as_secs_f64()))
}

/// The fan-out target for a fleet size: the seconds allowed, if a target applies.
fn applied_target(clusters: usize) -> Option<(usize, f64)> {
    TARGET_APPLIED
        .iter()
        .copied()
        .find(|&(size, _)| size == clusters)
}

fn print_fleet(results: &[Scale]) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Fleet\n\n\
         Join: from the first join to the last Join answered ACCEPTED. Ready: from the first join \
         to every profile showing Joined=True and ControlPlaneHealthy=True and every sync stream \
         open (profiles listed every {} s). Failures over the whole run of the fleet size (all \
         must be 0). Deletions reported: Works the hub deleted (the members the third rollout lets \
         go) whose cleanup the agent reported, as the real agent does, so that the hub lets them \
         go. Target: {} joined within {:.0} s.\n\n\
         | clusters | joined | joins failed | join s | ready s | heartbeats | heartbeats failed | syncs refused | streams ended | reports failed | deletions reported | target |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        READY_POLL.as_secs(),
        TARGET_JOINED.0,
        TARGET_JOINED.1,
    );
    for result in results {
        let Some(joins) = &result.joins else {
            let _ = writeln!(
                table,
                "| {} | not run | | | | | | | | | | |",
                result.clusters
            );
            continue;
        };
        let counts = |f: fn(&AgentCounts) -> u64| {
            result
                .agents
                .as_ref()
                .map_or_else(|| "–".to_owned(), |a| f(a).to_string())
        };
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
            result.clusters,
            joins.accepted,
            joins.failed,
            joins.elapsed.as_secs_f64(),
            seconds(result.ready),
            counts(|a| a.heartbeats),
            counts(|a| a.heartbeats_failed),
            counts(|a| a.sync_failed),
            counts(|a| a.streams_ended),
            counts(|a| a.reports_failed),
            counts(|a| a.deletions_reported),
            if result.clusters == TARGET_JOINED.0 {
                verdict(joins.failed == 0 && joins.elapsed.as_secs_f64() <= TARGET_JOINED.1)
            } else {
                "–"
            },
        );
    }
    println!("{table}");
}

fn print_fan_out(results: &[Scale]) {
    let targets: Vec<String> = TARGET_APPLIED
        .iter()
        .map(|(clusters, secs)| format!("{secs:.0} s for {clusters}"))
        .collect();
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Fan-out\n\n\
         From the create (generation 1) or update (generation 2) call being made: every agent \
         received its Work (all received), every report \
         acknowledged (all reported), and the hub's API showing the WorkPlacement at the new \
         generation with available = N and Progressing reason RolloutComplete (shown; polled \
         every {} ms). Per cluster, from the call: Work received and report sent, p50 and p99. \
         Unreached: clusters that never received the Work; unreported: never had a report \
         acknowledged. Target: every cluster applied within {}, judged twice: on every report \
         of Applied acknowledged (the hub has written each Work's status; the issue's measure) \
         and, stricter, on the placement showing it.\n\n\
         | clusters | rollout | all received s | all reported s | shown s | received p50 ms | received p99 ms | report sent p50 ms | report sent p99 ms | unreached | unreported | target (reported / shown) |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        POLL.as_millis(),
        targets.join(" and ")
    );
    for result in results {
        for rollout in &result.rollouts {
            let all_reported = rollout.all_reported();
            let target = match applied_target(result.clusters) {
                Some((_, secs)) => format!(
                    "{} / {}",
                    verdict(all_reported.is_some_and(|d| d.as_secs_f64() <= secs)),
                    verdict(
                        rollout.shown.is_some_and(|s| s.as_secs_f64() <= secs)
                            && rollout.acked.len() == rollout.want,
                    )
                ),
                None => "(for 1000, 5000, 10000)".to_owned(),
            };
            let last = |d: &[Duration]| {
                (d.len() == rollout.want)
                    .then(|| d.last().copied())
                    .flatten()
            };
            let _ = writeln!(
                table,
                "| {} | {} (gen {}) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {target} |",
                result.clusters,
                rollout.what,
                rollout.generation,
                seconds(last(&rollout.received)),
                seconds(last(&rollout.acked)),
                seconds(rollout.shown),
                quantile_ms(&rollout.received, 0.5),
                quantile_ms(&rollout.received, 0.99),
                quantile_ms(&rollout.sent, 0.5),
                quantile_ms(&rollout.sent, 0.99),
                rollout.want - rollout.received.len(),
                rollout.want - rollout.acked.len(),
            );
        }
    }
    println!("{table}");
}

fn print_load(results: &[Scale]) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Hub load during the fan-out\n\n\
         Window: from the call until the hub shows the rollout done and every report is \
         acknowledged. CPU in % of one core over the window: the hub process, this program (the \
         agents), other processes. Hub CPU ms per cluster: the hub's CPU time over the window \
         divided by N (the cost of one cluster's fan-out). At rest: the hub's CPU over a few seconds with \
         the fleet joined and heartbeating before the placement; net: the hub's CPU less that, \
         per cluster (the fan-out's own cost, without the heartbeats that go on through it). \
         Status writes/s: reports acknowledged over the time from the first to the last of them \
         (the hub writes one Work status per report). Target: an update under \
         {TARGET_CPU_MS_PER_CLUSTER:.0} ms of hub CPU per cluster, judged on the whole figure, not \
         the net.\n\n\
         | clusters | rollout | window s | hub CPU % | hub CPU ms per cluster | at rest % | net ms per cluster | agents CPU % | other CPU % | reports | first → last report s | status writes/s | target |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for result in results {
        for rollout in &result.rollouts {
            let span = match (rollout.acked.first(), rollout.acked.last()) {
                (Some(first), Some(last)) => seconds(Some(last.saturating_sub(*first))),
                _ => "–".to_owned(),
            };
            let _ = writeln!(
                table,
                "| {} | {} | {:.1} | {:.1} | {} | {} | {} | {:.1} | {:.1} | {} | {span} | {} | {} |",
                result.clusters,
                rollout.what,
                rollout.window.as_secs_f64(),
                rollout.hub_cpu,
                rollout
                    .hub_cpu_ms_per_cluster()
                    .map_or_else(|| "–".to_owned(), |ms| format!("{ms:.2}")),
                result
                    .at_rest_cpu
                    .map_or_else(|| "–".to_owned(), |c| format!("{c:.1}")),
                rollout
                    .net_cpu_ms_per_cluster(result.at_rest_cpu)
                    .map_or_else(|| "–".to_owned(), |ms| format!("{ms:.2}")),
                rollout.bench_cpu,
                rollout.other_cpu,
                rollout.acked.len(),
                rollout
                    .writes_per_second()
                    .map_or_else(|| "–".to_owned(), |r| format!("{r:.0}")),
                match rollout.hub_cpu_ms_per_cluster() {
                    Some(ms) if rollout.what == "update" => {
                        verdict(ms < TARGET_CPU_MS_PER_CLUSTER).to_owned()
                    }
                    _ => "–".to_owned(),
                },
            );
        }
    }
    println!("{table}");
}

/// How far the join and each rollout are from the API server's write rate: for the join, the
/// writes measured; for a rollout, two durable writes per chosen cluster (the Work stamped, its
/// status written) and, for the third rollout, one delete per cluster let go.
fn print_write_floor(results: &[Scale]) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Against the API server's write rate\n\n\
         Write rate: {PROBE_WRITES} creates of ConfigMaps holding the placement's manifests (a \
         Work's size), {PROBE_CONCURRENCY} at once, on the hub's API server before the fleet \
         joined. Writes: for a rollout, what it needs stored (two per chosen cluster: the Work \
         stamped and its status; plus a delete per cluster let go); for the join, what the hub's \
         API server stored from the first join to the last Join answered (how far its revision \
         moved: per cluster its namespace, that namespace's ServiceAccount and CA ConfigMap, the \
         cluster's record, its profile and the profile's status). Floor: writes ÷ write rate, the \
         time nothing beats on this server; the ratios say how far above it each run is (for the \
         join: joined ÷ floor and ready ÷ floor). Per cluster: writes ÷ the clusters joined or \
         chosen.\n\n\
         | clusters | step | write rate /s | writes | per cluster | floor s | all reported ÷ floor | shown ÷ floor |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|"
    );
    for result in results {
        let Some(rate) = result.write_rate else {
            continue;
        };
        let mut row = |step: &str, writes: usize, clusters: usize, done: [Option<Duration>; 2]| {
            let floor = writes as f64 / rate;
            let [first, second] = done.map(|d| {
                d.map_or_else(
                    || "–".to_owned(),
                    |d| format!("{:.2}×", d.as_secs_f64() / floor),
                )
            });
            let _ = writeln!(
                table,
                "| {} | {step} | {rate:.0} | {writes} | {:.1} | {floor:.2} | {first} | {second} |",
                result.clusters,
                writes as f64 / clusters.max(1) as f64,
            );
        };
        if let Some(joins) = &result.joins {
            row(
                "join",
                joins.writes as usize,
                joins.accepted,
                [Some(joins.elapsed), result.ready],
            );
        }
        for rollout in &result.rollouts {
            row(
                rollout.what,
                2 * rollout.want + (result.clusters - rollout.want),
                rollout.want,
                [rollout.all_reported(), rollout.shown],
            );
        }
    }
    println!("{table}");
}

fn print_idle(results: &[Scale]) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Idle placements\n\n\
         After the rollouts: placements of one ConfigMap each, each to one member (PickFixed, \
         round robin), made 16 at once; all rolled out: until the hub shows every one of them \
         complete (listed every {} s). Hub CPU in % of one core over a window of the same length \
         before them (the fleet heartbeating, the benchmark's placement in place, the Works its \
         third rollout let go cleaned up) and after they are all rolled out; their cost is the \
         difference. Target: {TARGET_IDLE_CPU:.0}% of a core for 1,000.\n\n\
         | clusters | idle placements | all rolled out s | hub CPU before % | with them % | their cost % | target |\n\
         |---:|---:|---:|---:|---:|---:|---|",
        READY_POLL.as_secs()
    );
    for result in results {
        let Some(idle) = &result.idle else {
            continue;
        };
        let cost = idle.after - idle.before;
        let target = if idle.placements >= 1_000 {
            verdict(cost < TARGET_IDLE_CPU)
        } else {
            "(for 1000)"
        };
        let _ = writeln!(
            table,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {cost:.1} | {target} |",
            result.clusters,
            idle.placements,
            idle.rolled_out.as_secs_f64(),
            idle.before,
            idle.after,
        );
    }
    println!("{table}");
}

/// Medians over the runs of each fleet size, when `--repeat` ran any size more than once: the
/// machine's run-to-run spread is wide, and one run judges a target poorly.
fn print_repeats(results: &[Scale]) {
    let mut sizes: Vec<usize> = results.iter().map(|r| r.clusters).collect();
    sizes.dedup();
    if sizes.len() == results.len() {
        return;
    }
    let mut table = String::from(
        "## Over the repeated runs\n\n\
         Per fleet size and rollout: the median of each run's figure, with the least and the most \
         in brackets, and in how many runs the target was met (reported / shown). The join's row \
         gives joined s and ready s in those two columns.\n\n\
         | clusters | rollout | runs | all reported s | shown s | hub CPU ms per cluster | net ms per cluster | target met (reported / shown) |\n\
         |---:|---|---:|---:|---:|---:|---:|---|\n",
    );
    let spread = |mut values: Vec<f64>, digits: usize| {
        values.sort_by(f64::total_cmp);
        match (values.first(), values.last()) {
            (Some(least), Some(most)) => format!(
                "{:.digits$} ({least:.digits$}–{most:.digits$})",
                values[values.len() / 2]
            ),
            _ => "–".to_owned(),
        }
    };
    for clusters in sizes {
        let runs: Vec<&Scale> = results.iter().filter(|r| r.clusters == clusters).collect();
        let joined = secs(runs.iter().map(|r| r.joins.as_ref().map(|j| j.elapsed)));
        let ready = secs(runs.iter().map(|r| r.ready));
        let met = if clusters == TARGET_JOINED.0 {
            format!(
                "{} of {} (joined)",
                joined.iter().filter(|&&s| s <= TARGET_JOINED.1).count(),
                runs.len()
            )
        } else {
            format!("(for {})", TARGET_JOINED.0)
        };
        let _ = writeln!(
            table,
            "| {clusters} | join (joined / ready) | {} | {} | {} | – | – | {met} |",
            runs.len(),
            spread(joined, 2),
            spread(ready, 2),
        );
        for (k, what) in ["create", "update", PICK_HALF].into_iter().enumerate() {
            let rollouts: Vec<&Rollout> = runs.iter().filter_map(|r| r.rollouts.get(k)).collect();
            let reported = secs(rollouts.iter().map(|r| r.all_reported()));
            let shown = secs(rollouts.iter().map(|r| r.shown));
            let cpu: Vec<f64> = rollouts
                .iter()
                .filter_map(|r| r.hub_cpu_ms_per_cluster())
                .collect();
            let net: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.rollouts.get(k)?.net_cpu_ms_per_cluster(r.at_rest_cpu))
                .collect();
            let met = match applied_target(clusters) {
                Some((_, secs)) => format!(
                    "{} / {} of {}",
                    reported.iter().filter(|&&s| s <= secs).count(),
                    shown.iter().filter(|&&s| s <= secs).count(),
                    runs.len()
                ),
                None => "(for 1000, 5000, 10000)".to_owned(),
            };
            let _ = writeln!(
                table,
                "| {clusters} | {what} | {} | {} | {} | {} | {} | {met} |",
                runs.len(),
                spread(reported, 2),
                spread(shown, 2),
                spread(cpu, 2),
                spread(net, 2),
            );
        }
    }
    println!("{table}");
}

/// The durations present, in seconds.
fn secs(durations: impl Iterator<Item = Option<Duration>>) -> Vec<f64> {
    durations.flatten().map(|d| d.as_secs_f64()).collect()
}

fn print_memory(results: &[Scale]) {
    let mut table = String::new();
    let _ = writeln!(
        table,
        "## Hub memory (VmRSS)\n\n\
         Before: every cluster joined and healthy, no placement. Available: when the hub first \
         shows the placement available everywhere; updated: the same after the update. Peak: the \
         most seen during either fan-out (sampled every {} ms). Per cluster: (available − before) \
         / N, the growth the placement costs. Marginal: the same growth from the previous row, per \
         added cluster (which leaves out what one placement costs however large the fleet). \
         Target: under {TARGET_KIB_PER_CLUSTER:.0} KiB per cluster, judged from 1,000 clusters (below \
         that one placement's fixed costs outweigh the clusters').\n\n\
         | clusters | before MiB | available MiB | updated MiB | peak MiB | KiB per cluster | marginal KiB per cluster | target |\n\
         |---:|---:|---:|---:|---:|---:|---:|---|",
        POLL.as_millis()
    );
    let mib =
        |kib: Option<u64>| kib.map_or_else(|| "–".into(), |k| format!("{:.1}", k as f64 / 1024.0));
    let kib = |value: Option<f64>| value.map_or_else(|| "–".into(), |k| format!("{k:.1}"));
    let mut previous: Option<(usize, f64)> = None;
    for result in results {
        let rss = |k: usize| result.rollouts.get(k).and_then(|r| r.rss_kib);
        let peak = result.rollouts.iter().filter_map(|r| r.peak_kib).max();
        let growth = match (result.before_kib, rss(0)) {
            (Some(before), Some(after)) => Some(after as f64 - before as f64),
            _ => None,
        };
        let per_cluster = growth.map(|g| g / result.clusters as f64);
        let marginal = match (previous, growth) {
            (Some((clusters, before)), Some(growth)) if result.clusters > clusters => {
                Some((growth - before) / (result.clusters - clusters) as f64)
            }
            _ => None,
        };
        if let Some(growth) = growth {
            previous = Some((result.clusters, growth));
        }
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            result.clusters,
            mib(result.before_kib),
            mib(rss(0)),
            mib(rss(1)),
            mib(peak),
            kib(per_cluster),
            kib(marginal),
            match per_cluster {
                // Below 1,000 clusters one placement's fixed costs outweigh the clusters'.
                Some(_) if result.clusters < 1_000 => "(for 1000, 5000, 10000)",
                Some(k) => verdict(k < TARGET_KIB_PER_CLUSTER),
                None => "–",
            },
        );
    }
    println!("{table}");
}

/// The third rollout beside the second: choosing half of the members by a property and
/// rendering each one's Work through its region's override rule, against sending the same
/// update to every member.
fn print_pick_half(results: &[Scale]) {
    let mut table = format!(
        "## Choosing and overriding\n\n\
         The update of generation 2 goes to every member as written (PickAll); generation 3 makes \
         the same placement choose half of them, the cheapest by their `cost` property (PickN), \
         and adds {REGIONS} override rules, one per region label, each setting a value from the \
         cluster's name and a property; the members not chosen lose their Work. From the call: \
         every chosen member's report acknowledged, and the hub showing the placement done. \
         Target: generation 3 within {PICK_TARGET_RATIO}× of generation 2.\n\n\
         | clusters | PickAll: members | all reported s | shown s | PickN half + overrides: members | all reported s | shown s | ratio reported | ratio shown | target |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for result in results {
        let (Some(all), Some(half)) = (result.rollouts.get(1), result.rollouts.get(2)) else {
            continue;
        };
        let ratio = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) if a > Duration::ZERO => Some(b.as_secs_f64() / a.as_secs_f64()),
            _ => None,
        };
        let reported = ratio(all.all_reported(), half.all_reported());
        let shown = ratio(all.shown, half.shown);
        let met = reported.is_some_and(|r| r <= PICK_TARGET_RATIO)
            && shown.is_some_and(|r| r <= PICK_TARGET_RATIO);
        let times = |r: Option<f64>| r.map_or("–".to_owned(), |r| format!("{r:.2}×"));
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            result.clusters,
            all.want,
            seconds(all.all_reported()),
            seconds(all.shown),
            half.want,
            seconds(half.all_reported()),
            seconds(half.shown),
            times(reported),
            times(shown),
            verdict(met),
        );
    }
    println!("{table}");
}

fn print_comparison(results: &[Scale]) {
    let (clusters, secs) = KUBEFLEET_PUBLISHED;
    let mut text = format!(
        "## Compared with KubeFleet\n\n\
         KubeFleet's published figure (theirs, not measured here): a placement reaches {clusters} \
         clusters in about {secs:.0} s (p90)."
    );
    let ours = results
        .iter()
        .find(|r| r.clusters == clusters)
        .and_then(|r| {
            let create = r.rollouts.first()?;
            Some((quantile(&create.acked, 0.9), create.shown))
        });
    match ours {
        Some((p90, shown)) => {
            let _ = write!(
                text,
                " Here, for {clusters} clusters: p90 of create → report acknowledged {} s; the \
                 hub showed every cluster available after {} s.",
                seconds(p90),
                seconds(shown)
            );
        }
        None => {
            let _ = write!(
                text,
                " This run has no {clusters}-cluster row to set beside it."
            );
        }
    }
    println!("{text}\n");
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
