//! The process metrics every Prometheus client library exports (client_golang's process
//! collector names): `process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds` and
//! `process_start_time_seconds`, read from `/proc/self` at each scrape. Where `/proc` is not
//! there (not Linux), none is exported.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks per second in `/proc/<pid>/stat`: Linux's `USER_HZ`, 100 on every architecture
/// atoll builds for (it is part of the kernel's ABI there).
const TICKS_PER_SECOND: f64 = 100.0;

/// Reads the process's figures at each scrape.
#[derive(Debug, Default)]
pub struct ProcessCollector;

/// The process's figures, as `/proc/self` tells them.
#[derive(Debug, Default, PartialEq)]
pub struct Figures {
    pub cpu_seconds: Option<f64>,
    pub resident_bytes: Option<i64>,
    pub virtual_bytes: Option<i64>,
    pub open_fds: Option<i64>,
    pub max_fds: Option<i64>,
    pub start_time_seconds: Option<f64>,
}

impl Figures {
    /// This process's figures now.
    pub fn read() -> Figures {
        let text = |path: &str| std::fs::read_to_string(path).ok();
        let (cpu_seconds, started_ticks) = text("/proc/self/stat")
            .map(|s| parse_stat(&s))
            .unwrap_or_default();
        let status = text("/proc/self/status").unwrap_or_default();
        let boot_time = text("/proc/stat").and_then(|s| boot_time(&s));
        Figures {
            cpu_seconds,
            resident_bytes: status_kib(&status, "VmRSS:").map(|k| k * 1024),
            virtual_bytes: status_kib(&status, "VmSize:").map(|k| k * 1024),
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|entries| entries.count() as i64),
            max_fds: text("/proc/self/limits").and_then(|l| max_open_files(&l)),
            start_time_seconds: boot_time
                .zip(started_ticks)
                .map(|(boot, ticks)| boot as f64 + ticks as f64 / TICKS_PER_SECOND),
        }
    }
}

/// From `/proc/self/stat`: the CPU seconds used (user and system) and the start time in ticks
/// after boot. The command name (field 2) may hold spaces and parentheses: the fields after it
/// are counted from its last `)`.
fn parse_stat(stat: &str) -> (Option<f64>, Option<u64>) {
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return (None, None);
    };
    // After the name: state is field 3; utime 14, stime 15, starttime 22.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let cpu = field(14)
        .zip(field(15))
        .map(|(user, system)| (user + system) as f64 / TICKS_PER_SECOND);
    (cpu, field(22))
}

/// A `Name:   1234 kB` line of `/proc/self/status`, in KiB.
fn status_kib(status: &str, name: &str) -> Option<i64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// The soft limit of open files in `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<i64> {
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// When the machine booted (seconds since the epoch), from `/proc/stat`'s `btime`.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|n| n.trim().parse().ok())
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let figures = Figures::read();
        if let Some(seconds) = figures.cpu_seconds {
            let counter = ConstCounter::new(seconds);
            let metric = encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                None,
                counter.metric_type(),
            )?;
            counter.encode(metric)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                figures.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                figures.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                figures.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                figures.max_fds,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                let gauge = ConstGauge::new(value);
                let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
                gauge.encode(metric)?;
            }
        }
        if let Some(started) = figures.start_time_seconds {
            let gauge = ConstGauge::new(started);
            let metric = encoder.encode_descriptor(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                None,
                gauge.metric_type(),
            )?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        // A command name with a space and a parenthesis, as a process may call itself.
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 9 0 123456 1000000 500";
        assert_eq!(parse_stat(stat), (Some(3.0), Some(123_456)));
        assert_eq!(parse_stat("no name here"), (None, None));
    }

    #[test]
    fn status_limits_and_boot_time_are_read_by_name() {
        let status = "Name:\tatoll\nVmSize:\t  123456 kB\nVmRSS:\t   20480 kB\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(20_480));
        assert_eq!(status_kib(status, "VmSize:"), Some(123_456));
        assert_eq!(status_kib(status, "VmSwap:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(
            boot_time("cpu 1 2 3\nbtime 1796219826\n"),
            Some(1_796_219_826)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_figures_that_make_sense() {
        let figures = Figures::read();
        assert!(
            figures.resident_bytes.is_some_and(|r| r > 1024 * 1024),
            "{figures:?}"
        );
        assert!(
            figures.virtual_bytes >= figures.resident_bytes,
            "{figures:?}"
        );
        assert!(figures.open_fds.is_some_and(|n| n >= 3), "{figures:?}");
        assert!(figures.max_fds >= figures.open_fds, "{figures:?}");
        assert!(figures.cpu_seconds.is_some(), "{figures:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let started = figures.start_time_seconds.unwrap();
        assert!(
            started <= now + 1.0 && started > now - 24.0 * 3600.0,
            "{started} {now}"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_scrape_names_them_as_client_golang_does() {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for name in [
            "\nprocess_cpu_seconds_total ",
            "\nprocess_resident_memory_bytes ",
            "\nprocess_virtual_memory_bytes ",
            "\nprocess_open_fds ",
            "\nprocess_max_fds ",
            "\nprocess_start_time_seconds ",
            "# TYPE process_cpu_seconds counter",
            "# TYPE process_resident_memory_bytes gauge",
        ] {
            assert!(text.contains(name), "{name:?} in\n{text}");
        }
    }
}
