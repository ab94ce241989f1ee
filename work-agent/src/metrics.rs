//! The agent's metrics: what it applied and how long that took, what failed, the drift it put
//! back, the Works it holds and whether its sync stream to the hub is open. No label carries a
//! Work's or an object's name.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Apply duration buckets (seconds): one Work's manifests, each a server-side apply.
const APPLY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The agent's metrics. [`Metrics::default`] counts into nothing a scraper reads (agents the hub
/// runs in its own process for hosted clusters, tests).
#[derive(Debug)]
pub struct Metrics {
    applies: Counter,
    apply_errors: Counter,
    apply_seconds: Histogram,
    drift_corrections: Counter,
    works: Gauge,
    connected: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            applies: Counter::default(),
            apply_errors: Counter::default(),
            apply_seconds: Histogram::new(APPLY_BUCKETS),
            drift_corrections: Counter::default(),
            works: Gauge::default(),
            connected: Gauge::default(),
        }
    }
}

impl Metrics {
    /// Metrics registered in `registry`.
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let metrics = Arc::new(Metrics::default());
        registry.register(
            "atoll_agent_applies",
            "Works applied to this cluster (every manifest of one Work by server-side apply), resyncs included",
            metrics.applies.clone(),
        );
        registry.register(
            "atoll_agent_apply_errors",
            "Manifests that failed to apply",
            metrics.apply_errors.clone(),
        );
        registry.register_with_unit(
            "atoll_agent_apply_duration",
            "How long applying one Work's manifests took",
            Unit::Seconds,
            metrics.apply_seconds.clone(),
        );
        registry.register(
            "atoll_agent_drift_corrections",
            "Objects changed in this cluster that an apply put back as their Work has them",
            metrics.drift_corrections.clone(),
        );
        registry.register(
            "atoll_agent_works",
            "Works the hub sent to this cluster that the agent holds",
            metrics.works.clone(),
        );
        registry.register(
            "atoll_agent_hub_connected",
            "Whether the agent's sync stream to the hub is open (1) or not (0)",
            metrics.connected.clone(),
        );
        metrics
    }

    /// A Work was applied in `elapsed`: `failed` manifests did not apply, `corrected` had
    /// drifted.
    pub(crate) fn applied(&self, elapsed: Duration, failed: usize, corrected: usize) {
        self.applies.inc();
        self.apply_seconds.observe(elapsed.as_secs_f64());
        self.apply_errors.inc_by(failed as u64);
        self.drift_corrections.inc_by(corrected as u64);
    }

    /// The agent holds `n` Works.
    pub(crate) fn works_held(&self, n: usize) {
        self.works.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// The sync stream opened or closed.
    pub(crate) fn connected(&self, open: bool) {
        self.connected.set(i64::from(open));
    }
}
