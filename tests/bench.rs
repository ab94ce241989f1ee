//! Helpers the benchmark programs share: simulated clusters' identities, the hub process's
//! memory and CPU, log and file limits, and table verdicts.

use std::path::Path;

use anyhow::{Context as _, bail};
use atoll_api::names::PROPERTY_CLUSTER_ID;
use atoll_proto::v1::Property;

/// File descriptors kept free beyond one per simulated agent.
pub const FD_MARGIN: u64 = 256;

/// Fails with what to do when this process (and so the hub it starts) may not open enough files.
pub fn check_open_files(clusters: usize) -> anyhow::Result<()> {
    check_files(
        clusters as u64 + FD_MARGIN,
        &format!(
            "{clusters} simulated agents need about {{need}} open files in this process and as many in the hub"
        ),
        "run fewer clusters (--clusters)",
    )
}

/// Fails, saying `why` (with `{need}` replaced) and what else to do, when the soft limit of open
/// files is under `need`.
pub fn check_files(need: u64, why: &str, otherwise: &str) -> anyhow::Result<()> {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|value| value.parse::<u64>().ok());
    match soft {
        Some(limit) if limit < need => bail!(
            "{}, but the limit is {limit}: raise it (ulimit -n {need}) or {otherwise}",
            why.replace("{need}", &need.to_string())
        ),
        _ => Ok(()),
    }
}

pub fn cluster_id(index: usize) -> String {
    format!("00000000-0000-4000-8000-{index:012x}")
}

/// Warning and error lines of the hub's log, and the first of them without its timestamp and
/// with the data directory shown as `DATA`.
pub fn hub_log(path: &Path, data_dir: &Path) -> (usize, usize, String) {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<String> = log.lines().map(without_colours).collect();
    let count = |level: &str| lines.iter().filter(|l| l.contains(level)).count();
    let first = lines
        .iter()
        .find(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .map(|l| {
            let message = l
                .split_once(' ')
                .map_or(l.as_str(), |(_, rest)| rest.trim());
            message.replace(&data_dir.display().to_string(), "DATA")
        })
        .unwrap_or_default();
    (count(" WARN "), count(" ERROR "), first)
}

/// The ClusterProperties a simulated member reports: its cluster ID, as a real agent does, and
/// a `cost` (0 to 99, spread over the members) that placements may sort on.
pub fn properties(index: usize) -> Vec<Property> {
    vec![
        Property {
            name: PROPERTY_CLUSTER_ID.to_owned(),
            value: cluster_id(index),
        },
        Property {
            name: "cost".to_owned(),
            value: (index * 37 % 100).to_string(),
        },
    ]
}

/// VmRSS of a process, in KiB.
pub fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("the hub (pid {pid}) is gone"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .context("no VmRSS in /proc/PID/status")
}

/// Proportional set size of a process, in KiB (`/proc/PID/smaps_rollup`): its private pages
/// plus its share of the pages it shares with others, such as the code of a binary many
/// processes run. What a process costs the machine, where VmRSS counts shared pages in full.
pub fn pss_kib(pid: u32) -> anyhow::Result<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .with_context(|| format!("process {pid} is gone"))?;
    rollup
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .context("no Pss in /proc/PID/smaps_rollup")
}

/// A seed that differs from run to run.
pub fn run_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The binary's path from its `target` directory on, so that no machine path is printed.
pub fn short_binary(path: &str) -> String {
    path.rfind("/release/")
        .or_else(|| path.rfind("/debug/"))
        .map_or_else(|| path.to_owned(), |i| format!("target{}", &path[i..]))
}

/// A uniform number in [0, 1) (splitmix64), for the heartbeat jitter.
pub fn unit(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "missed" }
}

/// A log line without its ANSI colour sequences.
pub fn without_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ parameters, ending with a letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// What a fleet benchmark was asked for: the full plan (when cargo passes `--bench` and
/// `--quick` is absent), the fleet sizes `--clusters 100,1000` names, and how many times
/// `--repeat N` runs each.
pub struct FleetArgs {
    /// Run the full plan.
    pub full: bool,
    /// The sizes to run, when narrowed.
    pub clusters: Option<Vec<usize>>,
    /// Runs of each size, one after the other (1 unless `--repeat` says otherwise).
    pub repeat: usize,
}

impl FleetArgs {
    /// The fleet sizes to run, in order, each `repeat` times in a row: the named ones or the
    /// plan's.
    pub fn runs(&self, plan: &[usize]) -> Vec<usize> {
        let sizes = self.clusters.as_deref().unwrap_or(plan);
        sizes
            .iter()
            .flat_map(|&n| std::iter::repeat_n(n, self.repeat))
            .collect()
    }
}

/// The arguments the fleet benchmarks take.
pub const FLEET_USAGE: &str =
    "arguments: [--quick] [--clusters 100,1000,5000] [--repeat N] (cargo adds --bench)";

/// Parses `[--bench] [--quick] [--clusters N,N] [--repeat N]`.
pub fn fleet_args(mut args: impl Iterator<Item = String>) -> anyhow::Result<FleetArgs> {
    let mut bench = false;
    let mut quick = false;
    let mut clusters = None;
    let mut repeat = 1;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => bench = true,
            "--quick" => quick = true,
            "--clusters" => {
                let list = args.next().context(FLEET_USAGE)?;
                let sizes = list
                    .split(',')
                    .map(|n| match n.trim().parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => bail!("--clusters wants positive counts, not {n:?}; {FLEET_USAGE}"),
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                clusters = Some(sizes);
            }
            "--repeat" => {
                let count = args.next().context(FLEET_USAGE)?;
                repeat = match count.trim().parse::<usize>() {
                    Ok(n) if n > 0 => n,
                    _ => bail!("--repeat wants a positive count, not {count:?}; {FLEET_USAGE}"),
                };
            }
            other => bail!("unknown argument {other:?}; {FLEET_USAGE}"),
        }
    }
    Ok(FleetArgs {
        full: bench && !quick,
        clusters,
        repeat,
    })
}

/// Clock ticks per second of `/proc` CPU times (USER_HZ).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU used over a window: by the hub process, by this program, and by everything else.
pub struct CpuWindow {
    hub_stat: std::path::PathBuf,
    hub: u64,
    this: u64,
    machine: u64,
}

/// CPU over a window in % of one core: the hub, this program, other processes.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUse {
    pub hub: f64,
    pub this: f64,
    pub other: f64,
}

impl CpuWindow {
    /// Starts counting for the hub process `pid`.
    pub fn start(pid: u32) -> Self {
        let hub_stat = std::path::PathBuf::from(format!("/proc/{pid}/stat"));
        CpuWindow {
            hub: crate::cpu_ticks(&hub_stat).unwrap_or(0),
            this: crate::cpu_ticks(Path::new("/proc/self/stat")).unwrap_or(0),
            machine: crate::machine_busy_ticks().unwrap_or(0),
            hub_stat,
        }
    }

    /// What was used since the start, spread over `window`.
    pub fn used(&self, window: std::time::Duration) -> CpuUse {
        let hub = crate::cpu_ticks(&self.hub_stat)
            .unwrap_or(0)
            .saturating_sub(self.hub);
        let this = crate::cpu_ticks(Path::new("/proc/self/stat"))
            .unwrap_or(0)
            .saturating_sub(self.this);
        let machine = crate::machine_busy_ticks()
            .unwrap_or(0)
            .saturating_sub(self.machine);
        let percent = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / window.as_secs_f64() * 100.0;
        CpuUse {
            hub: percent(hub),
            this: percent(this),
            other: percent(machine.saturating_sub(hub + this)),
        }
    }
}

/// The `q` quantile of sorted durations (nearest rank); `None` for none.
pub fn quantile(sorted: &[std::time::Duration], q: f64) -> Option<std::time::Duration> {
    if sorted.is_empty() {
        return None;
    }
    let index = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[index])
}
