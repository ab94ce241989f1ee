//! How fast hosted control planes come up and how little an idle one costs.
//!
//! A benchmark program, not a test: it asserts no timings. For each mode and count N it starts a
//! fresh `atoll up --hosted-clusters 0` (the real binary built beside this program, in its own
//! process, on free 127.0.0.1 ports, SQLite in a temporary directory, the default 10 s lease) and
//! creates N HostedClusters through the hub's API, while two watches record when each
//! HostedCluster first shows `Available=True` and when its ClusterProfile first shows
//! `Joined=True` and `ControlPlaneHealthy=True` (its agent joined the hub over gRPC and sent a
//! heartbeat with its API server's `/readyz`). Each HostedCluster's times count from just before
//! its create request. Clusters are created one after the other, each once the one before shows
//! Available (the latency of a create on a hub that holds the clusters before it, while their
//! agents still join), or, in a burst row, `CREATE_IN_FLIGHT` at a time as fast as the API takes
//! them (what the hub's throughput allows; later creates queue behind earlier ones). It prints
//! markdown tables of:
//!
//! - creation: create → Available (p50, p99, max), create → joined and healthy in the inventory
//!   (p50, p99), the time until all N were available and healthy, and clusters per second;
//! - idle: after the fleet settled, the hub's CPU over a window with every cluster heartbeating
//!   (utime + stime from `/proc`, in % of one core; for Process mode the children's CPU beside
//!   it), and memory per hosted cluster: (the hub's VmRSS now − before the first create) / N, plus,
//!   for Process mode, the children's proportional set size (PSS: their private memory and their
//!   share of the pages they share, mostly the code of the `atoll` binary, which every child maps
//!   and VmRSS would count once per child) / N; the children's VmRSS is printed beside it;
//! - the targets of the hosted control planes issue, and the published figures of HyperShift,
//!   Kamaji, kcp and vcluster beside them (their figures, from their documentation; not measured
//!   here).
//!
//! Run with `cargo build --release -p atoll && cargo bench -p atoll-tests --bench hosted`: the
//! full plan: Embedded with N = 10, 100 and 1000 and Process with N = 10 and 100 one after the
//! other, bursts of 100 Embedded and 10 Process clusters, a 30 s idle window.
//! `-- --embedded 100 --process 10 --burst 0` narrows it (`0` for none; `--burst` names Embedded
//! burst sizes, `--process-burst` Process ones). Without `--bench` (as
//! `cargo test --benches` runs it) and with `-- --quick` a quick plan runs instead: 3 Embedded
//! and 2 Process clusters, a 3 s window. Every loop is bounded by a count and a time cap and all
//! traffic goes to 127.0.0.1. The program fails (after printing every table) when a cluster does
//! not become available and healthy in time. An embedded cluster holds about 14 open files in
//! the hub (its listener, database files and loopback connections): the program checks
//! `ulimit -n` first.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_api::hosted::{CONDITION_AVAILABLE, HostedCluster, HostedClusterSpec, HostedMode};
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{
    CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, HOSTED_CLUSTERS_NAMESPACE,
    INVENTORY_NAMESPACE,
};
use atoll_tests::bench::{
    CpuWindow, check_files, hub_log, pss_kib, quantile, rss_kib, short_binary, verdict,
};
use atoll_tests::{Process, Report, client_from, cpu_ticks, free_addr};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;

/// How many creates are in flight at once.
const CREATE_IN_FLIGHT: usize = 2;
/// Open files each hosted cluster may take in the hub, and what the hub takes besides.
const FILES_PER_CLUSTER: u64 = 16;
const FILES_BESIDES: u64 = 512;
/// Clock ticks per second of `/proc` CPU times.
const TICKS_PER_SECOND: f64 = 100.0;

/// How the clusters of a row are created.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// One after the other, each once the one before is Available.
    OneByOne,
    /// `CREATE_IN_FLIGHT` at a time, as fast as the API takes them.
    Burst,
}

impl std::fmt::Display for Pace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Pace::OneByOne => "one by one",
            Pace::Burst => "burst",
        })
    }
}

/// What to run.
struct Plan {
    name: &'static str,
    runs: Vec<(HostedMode, usize, Pace)>,
    /// How long the fleet settles before the idle window, and the hub before the first create.
    settle: Duration,
    idle_window: Duration,
}

impl Plan {
    fn parse(mut args: impl Iterator<Item = String>) -> anyhow::Result<Plan> {
        const USAGE: &str = "arguments: [--quick] [--embedded 10,100,1000] [--process 10,100] \
             [--burst 100] [--process-burst 10] (cargo adds --bench)";
        let (mut bench, mut quick) = (false, false);
        let (mut embedded, mut process, mut burst, mut process_burst) = (None, None, None, None);
        let counts = |text: Option<String>| -> anyhow::Result<Vec<usize>> {
            let text = text.context(USAGE)?;
            text.split(',')
                .map(|n| {
                    n.trim()
                        .parse::<usize>()
                        .with_context(|| format!("{n:?}: {USAGE}"))
                })
                .filter(|n| !matches!(n, Ok(0)))
                .collect()
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--bench" => bench = true,
                "--quick" => quick = true,
                "--embedded" => embedded = Some(counts(args.next())?),
                "--process" => process = Some(counts(args.next())?),
                "--burst" => burst = Some(counts(args.next())?),
                "--process-burst" => process_burst = Some(counts(args.next())?),
                other => bail!("unknown argument {other:?}; {USAGE}"),
            }
        }
        let full = bench && !quick;
        let plan = |asked: Option<Vec<usize>>, full_plan: &[usize], quick_plan: &[usize]| {
            asked.unwrap_or_else(|| if full { full_plan } else { quick_plan }.to_vec())
        };
        let mut runs = Vec::new();
        let rows = [
            (
                HostedMode::Embedded,
                Pace::OneByOne,
                plan(embedded, &[10, 100, 1000], &[3]),
            ),
            (HostedMode::Embedded, Pace::Burst, plan(burst, &[100], &[])),
            (
                HostedMode::Process,
                Pace::OneByOne,
                plan(process, &[10, 100], &[2]),
            ),
            (
                HostedMode::Process,
                Pace::Burst,
                plan(process_burst, &[10], &[]),
            ),
        ];
        for (mode, pace, counts) in rows {
            runs.extend(counts.into_iter().map(|n| (mode, n, pace)));
        }
        Ok(Plan {
            name: if full { "full" } else { "quick" },
            runs,
            settle: Duration::from_secs(if full { 5 } else { 1 }),
            idle_window: Duration::from_secs(if full { 30 } else { 3 }),
        })
    }
}

/// Everything measured for one mode and count.
struct Run {
    mode: HostedMode,
    clusters: usize,
    pace: Pace,
    /// Create → Available, and create → joined and healthy, sorted.
    available: Vec<Duration>,
    healthy: Vec<Duration>,
    /// From the first create until every cluster was available and healthy.
    all_ready: Option<Duration>,
    /// The hub's VmRSS before the first create and after the idle window, and the children's
    /// after it, in KiB.
    hub_before: u64,
    hub_after: u64,
    /// The children's proportional set size and VmRSS after it, in KiB.
    children_after: u64,
    children_rss: u64,
    /// CPU over the idle window, in % of one core.
    hub_cpu: f64,
    children_cpu: f64,
    other_cpu: f64,
    hub_log: (usize, usize, String),
}

impl Run {
    fn new(mode: HostedMode, clusters: usize, pace: Pace) -> Self {
        Run {
            mode,
            clusters,
            pace,
            available: Vec::new(),
            healthy: Vec::new(),
            all_ready: None,
            hub_before: 0,
            hub_after: 0,
            children_after: 0,
            children_rss: 0,
            hub_cpu: 0.0,
            children_cpu: 0.0,
            other_cpu: 0.0,
            hub_log: (0, 0, String::new()),
        }
    }

    /// Memory per hosted cluster, in MiB.
    fn mib_per_cluster(&self) -> f64 {
        let grown = self.hub_after.saturating_sub(self.hub_before) + self.children_after;
        grown as f64 / 1024.0 / self.clusters.max(1) as f64
    }
}

fn main() -> anyhow::Result<()> {
    let plan = Plan::parse(std::env::args().skip(1))?;
    let started = Instant::now();
    let root = tempfile::tempdir()?;
    let binary = atoll_tests::atoll_binary()?;
    println!(
        "# atoll hosted control planes benchmark ({} plan)\n\n{} CPU(s); binary `{}`; one fresh \
         `atoll up` per row, default 10 s lease; bursts with {CREATE_IN_FLIGHT} creates in flight; \
         idle window {} s.\n",
        plan.name,
        std::thread::available_parallelism().map_or(0, usize::from),
        short_binary(&binary.display().to_string()),
        plan.idle_window.as_secs(),
    );
    let mut report = Report::default();
    let mut runs = Vec::new();
    for &(mode, clusters, pace) in &plan.runs {
        let mut run = Run::new(mode, clusters, pace);
        if let Err(err) = run_one(&plan, root.path(), &mut run, &mut report) {
            report.fail(format!("{mode} × {clusters}: {err:#}"));
        }
        runs.push(run);
    }
    print_creation(&runs);
    print_idle(&runs);
    print_targets(&runs);
    print_peers();
    print_logs(&runs);
    println!("Total time: {:.1} s.", started.elapsed().as_secs_f64());
    report.finish()
}

fn run_one(plan: &Plan, root: &Path, run: &mut Run, report: &mut Report) -> anyhow::Result<()> {
    let n = run.clusters;
    check_open_files(n)?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("hub-{}-{n}-", run.mode))
        .tempdir_in(root)?;
    let data_dir = dir.path().join("hub");
    let (api, grpc) = (free_addr()?, free_addr()?);
    eprintln!("{} × {n}: starting the hub", run.mode);
    let mut hub = Process::hub_with(
        &data_dir,
        api,
        &["--grpc-addr", &grpc.to_string(), "--hosted-clusters", "0"],
    )
    .context("starting `atoll up` (build it first: cargo build --release -p atoll)")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(drive(plan, &data_dir, hub.child.id(), run, report));
    runtime.shutdown_timeout(Duration::from_secs(5));
    let stopping = Instant::now();
    let _ = hub.terminate();
    eprintln!(
        "{} × {n}: the hub stopped {n} hosted clusters in {:.2} s",
        run.mode,
        stopping.elapsed().as_secs_f64()
    );
    run.hub_log = hub_log(&data_dir.with_extension("log"), &data_dir);
    outcome
}

/// Fails early when the hub could not open the files `n` hosted clusters need.
fn check_open_files(n: usize) -> anyhow::Result<()> {
    check_files(
        n as u64 * FILES_PER_CLUSTER + FILES_BESIDES,
        &format!("{n} hosted clusters need about {{need}} open files in the hub"),
        "run fewer (--embedded, --process)",
    )
}

/// When each cluster first showed what the benchmark waits for.
#[derive(Default)]
struct Seen {
    available: HashMap<String, Instant>,
    healthy: HashMap<String, Instant>,
    listed: [bool; 2],
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

async fn drive(
    plan: &Plan,
    data_dir: &Path,
    pid: u32,
    run: &mut Run,
    report: &mut Report,
) -> anyhow::Result<()> {
    let n = run.clusters;
    tokio::time::sleep(plan.settle).await;
    run.hub_before = rss_kib(pid)?;
    let client = client_from(&data_dir.join("hub.kubeconfig")).await?;
    let seen = Arc::new(Mutex::new(Seen::default()));

    let hosted: Api<HostedCluster> = Api::namespaced(client.clone(), HOSTED_CLUSTERS_NAMESPACE);
    let watch_hosted = {
        let seen = seen.clone();
        let stream = watcher::watcher(hosted.clone(), watcher::Config::default());
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Ok(Some(event)) = stream.try_next().await {
                let mut seen = locked(&seen);
                match event {
                    watcher::Event::InitDone => seen.listed[0] = true,
                    watcher::Event::Apply(hc) | watcher::Event::InitApply(hc) => {
                        let conditions = hc.status.map(|s| s.conditions).unwrap_or_default();
                        if is_true(&conditions, CONDITION_AVAILABLE) {
                            let name = hc.metadata.name.unwrap_or_default();
                            seen.available.entry(name).or_insert_with(Instant::now);
                        }
                    }
                    _ => {}
                }
            }
        })
    };
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    let watch_profiles = {
        let seen = seen.clone();
        let stream = watcher::watcher(profiles, watcher::Config::default());
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Ok(Some(event)) = stream.try_next().await {
                let mut seen = locked(&seen);
                match event {
                    watcher::Event::InitDone => seen.listed[1] = true,
                    watcher::Event::Apply(p) | watcher::Event::InitApply(p) => {
                        let conditions = p.status.map(|s| s.conditions).unwrap_or_default();
                        if is_true(&conditions, CONDITION_JOINED)
                            && is_true(&conditions, CONDITION_CONTROL_PLANE_HEALTHY)
                        {
                            let name = p.metadata.name.unwrap_or_default();
                            seen.healthy.entry(name).or_insert_with(Instant::now);
                        }
                    }
                    _ => {}
                }
            }
        })
    };
    let listed = Instant::now();
    while !locked(&seen).listed.iter().all(|l| *l) {
        if listed.elapsed() > Duration::from_secs(30) {
            bail!("the watches of the hub did not start");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    eprintln!("{} × {n}: creating {}", run.mode, run.pace);
    let first = Instant::now();
    let mode = run.mode;
    let create = |i: usize| {
        let hosted = hosted.clone();
        async move {
            let name = format!("bench-{i}");
            let hc = HostedCluster::new(
                &name,
                HostedClusterSpec {
                    mode,
                    ..HostedClusterSpec::default()
                },
            );
            let at = Instant::now();
            hosted
                .create(&PostParams::default(), &hc)
                .await
                .with_context(|| format!("create {name}"))?;
            anyhow::Ok((name, at))
        }
    };
    let mut starts = HashMap::new();
    match run.pace {
        Pace::OneByOne => {
            for i in 0..n {
                let (name, at) = create(i).await?;
                while !locked(&seen).available.contains_key(&name) {
                    if at.elapsed() > Duration::from_secs(60) {
                        bail!("{name} did not show Available within 60 s");
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                starts.insert(name, at);
            }
        }
        Pace::Burst => {
            let created: Vec<anyhow::Result<(String, Instant)>> = futures::stream::iter(0..n)
                .map(create)
                .buffer_unordered(CREATE_IN_FLIGHT)
                .collect()
                .await;
            for c in created {
                let (name, at) = c?;
                starts.insert(name, at);
            }
        }
    }

    let cap = Duration::from_secs(60) + Duration::from_millis(200) * n as u32;
    loop {
        let done = {
            let seen = locked(&seen);
            starts
                .keys()
                .all(|k| seen.available.contains_key(k) && seen.healthy.contains_key(k))
        };
        if done {
            run.all_ready = Some(first.elapsed());
            break;
        }
        if first.elapsed() > cap {
            let seen = locked(&seen);
            report.fail(format!(
                "{mode} × {n}: after {} s, {} available and {} healthy",
                cap.as_secs(),
                seen.available.len(),
                seen.healthy.len()
            ));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    {
        let seen = locked(&seen);
        for (name, at) in &starts {
            if let Some(t) = seen.available.get(name) {
                run.available.push(t.duration_since(*at));
            }
            if let Some(t) = seen.healthy.get(name) {
                run.healthy.push(t.duration_since(*at));
            }
        }
    }
    run.available.sort();
    run.healthy.sort();
    watch_hosted.abort();
    watch_profiles.abort();

    eprintln!("{mode} × {n}: idle window");
    tokio::time::sleep(plan.settle).await;
    let children_before: u64 = children(pid)
        .iter()
        .filter_map(|c| cpu_ticks(&stat(*c)))
        .sum();
    let window = CpuWindow::start(pid);
    tokio::time::sleep(plan.idle_window).await;
    let used = window.used(plan.idle_window);
    let kids = children(pid);
    let children_ticks: u64 = kids.iter().filter_map(|c| cpu_ticks(&stat(*c))).sum();
    run.children_cpu = children_ticks.saturating_sub(children_before) as f64
        / TICKS_PER_SECOND
        / plan.idle_window.as_secs_f64()
        * 100.0;
    run.hub_cpu = used.hub;
    run.other_cpu = (used.other - run.children_cpu).max(0.0);
    run.hub_after = rss_kib(pid)?;
    run.children_after = kids.iter().filter_map(|c| pss_kib(*c).ok()).sum();
    run.children_rss = kids.iter().filter_map(|c| rss_kib(*c).ok()).sum();
    Ok(())
}

fn stat(pid: u32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/proc/{pid}/stat"))
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(stat(*child)).ok().and_then(|s| {
                let rest = &s[s.rfind(')')? + 2..];
                rest.split_whitespace().nth(1)?.parse::<u32>().ok()
            }) == Some(pid)
        })
        .collect()
}

fn ms(value: Option<Duration>) -> String {
    value.map_or_else(
        || "–".into(),
        |d| format!("{:.0}", d.as_secs_f64() * 1000.0),
    )
}

fn print_creation(runs: &[Run]) {
    println!("## Creation (from each create request)\n");
    println!(
        "| mode | clusters | created | → Available p50 (ms) | p99 | max | → joined & healthy p50 (ms) | p99 | all ready after (s) | clusters/s |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in runs {
        let all = r
            .all_ready
            .map_or("–".into(), |d| format!("{:.2}", d.as_secs_f64()));
        let rate = r.all_ready.map_or("–".into(), |d| {
            format!("{:.0}", r.clusters as f64 / d.as_secs_f64())
        });
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {all} | {rate} |",
            r.mode,
            r.clusters,
            r.pace,
            ms(quantile(&r.available, 0.5)),
            ms(quantile(&r.available, 0.99)),
            ms(r.available.last().copied()),
            ms(quantile(&r.healthy, 0.5)),
            ms(quantile(&r.healthy, 0.99)),
        );
    }
    println!();
}

fn print_idle(runs: &[Run]) {
    println!("## Idle, every cluster heartbeating (10 s lease)\n");
    println!(
        "| mode | clusters | created | hub VmRSS before → after (MiB) | children PSS (VmRSS) (MiB) | memory per cluster (MiB) | hub CPU (% of one core) | children CPU | other CPU |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|");
    for r in runs {
        println!(
            "| {} | {} | {} | {:.1} → {:.1} | {:.1} ({:.1}) | {:.2} | {:.1} | {:.1} | {:.1} |",
            r.mode,
            r.clusters,
            r.pace,
            r.hub_before as f64 / 1024.0,
            r.hub_after as f64 / 1024.0,
            r.children_after as f64 / 1024.0,
            r.children_rss as f64 / 1024.0,
            r.mib_per_cluster(),
            r.hub_cpu,
            r.children_cpu,
            r.other_cpu,
        );
    }
    println!();
}

fn print_targets(runs: &[Run]) {
    println!("## Targets\n");
    println!(
        "| mode | clusters | created | p99 → Available | memory per idle cluster | idle hub CPU |"
    );
    println!("|---|---:|---|---|---|---|");
    for r in runs {
        let p99 = quantile(&r.available, 0.99);
        let (latency, memory) = match r.mode {
            HostedMode::Process => (Duration::from_millis(500), 15.0),
            _ => (Duration::from_millis(100), 5.0),
        };
        let cpu = if r.mode == HostedMode::Embedded && r.clusters >= 1000 {
            format!("{} (< 25%)", verdict(r.hub_cpu < 25.0))
        } else {
            "–".to_owned()
        };
        // A burst measures throughput: its later creates wait behind the earlier ones.
        let judged = match r.pace {
            Pace::OneByOne => format!(
                "{} (< {} ms)",
                verdict(p99.is_some_and(|p| p < latency)),
                latency.as_millis()
            ),
            Pace::Burst => "– (queued)".to_owned(),
        };
        println!(
            "| {} | {} | {} | {judged} | {} (< {memory} MiB) | {cpu} |",
            r.mode,
            r.clusters,
            r.pace,
            verdict(r.mib_per_cluster() < memory && r.clusters > 0),
        );
    }
    println!();
}

fn print_peers() {
    println!("## Published figures of other projects (theirs, not measured here)\n");
    println!("| project | to ready | memory per control plane |");
    println!("|---|---|---|");
    println!(
        "| HyperShift | SLO: Available within 5 min | SLO < 7 GB (SingleReplica); ~18 GiB requested (HA) |"
    );
    println!(
        "| Kamaji | 16 s to serve (README); 100 in 7m30s on EKS | ~1.15 GiB requested per replica (AWS guide) |"
    );
    println!("| kcp workspace | 8 workspaces/s (3 shards) | 7.4–9.8 MiB per empty workspace |");
    println!("| vcluster | \"seconds\" | 256 MiB requested |");
    println!();
}

fn print_logs(runs: &[Run]) {
    println!("## Hub logs\n");
    println!("| mode | clusters | created | warnings | errors | first |");
    println!("|---|---:|---|---:|---:|---|");
    for r in runs {
        let (warnings, errors, first) = &r.hub_log;
        println!(
            "| {} | {} | {} | {warnings} | {errors} | {} |",
            r.mode,
            r.clusters,
            r.pace,
            first.chars().take(160).collect::<String>()
        );
    }
    println!();
}
