//! The hub's metrics, named as the ecosystem names them where it has names:
//!
//! - controllers: controller-runtime's `controller_runtime_reconcile_total{controller, result}`,
//!   `controller_runtime_reconcile_errors_total{controller}` and
//!   `controller_runtime_reconcile_time_seconds{controller}`, counted where every controller
//!   reconciles (the work queue, and [`Metrics::timed`] around kube-runtime's controllers);
//! - the agents' gRPC service: go-grpc-prometheus's `grpc_server_started_total{grpc_service,
//!   grpc_method, grpc_type}`, `grpc_server_handled_total{..., grpc_code}` (a sync stream is
//!   handled when it ends) and `grpc_server_handling_seconds` (unary calls);
//! - the fleet: `atoll_hub_connected_agents`, `atoll_hub_joins_total{result}`,
//!   `atoll_hub_join_refusals_total{code}`, `atoll_hub_heartbeats_total`,
//!   `atoll_hub_clusters{condition, status, reason}` (ControlPlaneHealthy as the profiles say
//!   it) and `atoll_hub_works{condition, status}` (the Works' summary conditions as their
//!   clusters reported them), the last three read from the hub's view at each scrape;
//! - leader election: `atoll_hub_leader` (1 while this replica leads, 0 otherwise) and
//!   `atoll_hub_leader_transitions_total` (the times it started or stopped leading).
//!
//! Every label value comes from a fixed set (controller names, methods, codes, conditions):
//! none is a cluster's or an object's name.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric as _};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::fleet::Fleet;
use crate::work::WorkIndex;

/// controller-runtime's reconcile time buckets, thinned out (seconds).
const RECONCILE_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// go-grpc-prometheus's default buckets (seconds).
const GRPC_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Controller {
    controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reconciled {
    controller: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GrpcMethod {
    grpc_service: &'static str,
    grpc_method: &'static str,
    grpc_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GrpcHandled {
    grpc_service: &'static str,
    grpc_method: &'static str,
    grpc_type: &'static str,
    grpc_code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JoinResult {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refusal {
    code: &'static str,
}

/// The agents' gRPC service, as `grpc_service` names it.
const SERVICE: &str = "atoll.hub.v1.Hub";

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// The hub's metrics. [`Metrics::default`] counts into nothing a scraper reads (a hub started
/// without a registry, as in tests).
#[derive(Debug)]
pub struct Metrics {
    reconciles: Family<Reconciled, Counter>,
    reconcile_errors: Family<Controller, Counter>,
    reconcile_time: Histograms<Controller>,
    grpc_started: Family<GrpcMethod, Counter>,
    grpc_handled: Family<GrpcHandled, Counter>,
    grpc_seconds: Histograms<GrpcMethod>,
    joins: Family<JoinResult, Counter>,
    join_refusals: Family<Refusal, Counter>,
    heartbeats: Counter,
    leader: Gauge,
    leader_transitions: Counter,
    placements: Family<[(&'static str, &'static str); 1], Gauge>,
    placement_clusters: Family<[(&'static str, &'static str); 1], Gauge>,
    rollouts_completed: Counter,
    /// Each placement's rollout as its last status said it: `Progressing` reason, and counts.
    rollouts: Mutex<HashMap<String, Rollout>>,
    /// What the state-like metrics are read from, once the hub runs (weak: the fleet holds
    /// these metrics).
    views: Mutex<Option<(Weak<Fleet>, Weak<WorkIndex>)>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(|| Histogram::new(RECONCILE_BUCKETS)),
            grpc_started: Family::default(),
            grpc_handled: Family::default(),
            grpc_seconds: Family::new_with_constructor(|| Histogram::new(GRPC_BUCKETS)),
            joins: Family::default(),
            join_refusals: Family::default(),
            heartbeats: Counter::default(),
            leader: Gauge::default(),
            leader_transitions: Counter::default(),
            placements: Family::default(),
            placement_clusters: Family::default(),
            rollouts_completed: Counter::default(),
            rollouts: Mutex::default(),
            views: Mutex::new(None),
        }
    }
}

impl Metrics {
    /// Metrics registered in `registry`.
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let metrics = Arc::new(Metrics::default());
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            metrics.reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            metrics.reconcile_errors.clone(),
        );
        registry.register_with_unit(
            "controller_runtime_reconcile_time",
            "Length of time per reconciliation per controller",
            Unit::Seconds,
            metrics.reconcile_time.clone(),
        );
        registry.register(
            "grpc_server_started",
            "Total number of RPCs started on the server",
            metrics.grpc_started.clone(),
        );
        registry.register(
            "grpc_server_handled",
            "Total number of RPCs completed on the server, regardless of success or failure",
            metrics.grpc_handled.clone(),
        );
        registry.register_with_unit(
            "grpc_server_handling",
            "Histogram of response latency of unary RPCs handled by the server",
            Unit::Seconds,
            metrics.grpc_seconds.clone(),
        );
        registry.register(
            "atoll_hub_joins",
            "Joins the hub answered, by result (accepted, pending, rejoined)",
            metrics.joins.clone(),
        );
        registry.register(
            "atoll_hub_join_refusals",
            "Joins the hub refused, by gRPC code",
            metrics.join_refusals.clone(),
        );
        registry.register(
            "atoll_hub_heartbeats",
            "Heartbeats the hub received from agents",
            metrics.heartbeats.clone(),
        );
        registry.register(
            "atoll_hub_leader",
            "Whether this hub replica leads (1) or waits (0)",
            metrics.leader.clone(),
        );
        registry.register(
            "atoll_hub_leader_transitions",
            "Times this hub replica started or stopped leading",
            metrics.leader_transitions.clone(),
        );
        registry.register(
            "atoll_hub_placements",
            "WorkPlacements by the reason of their Progressing condition (RollingOut, RolloutComplete, RolloutHalted, InvalidSpec, ...)",
            metrics.placements.clone(),
        );
        registry.register(
            "atoll_hub_placement_clusters",
            "Clusters of all WorkPlacements by rollout state (selected, available, pending, failed)",
            metrics.placement_clusters.clone(),
        );
        registry.register(
            "atoll_hub_placement_rollouts_completed",
            "Rollouts that reached RolloutComplete (a placement's new generation or rendering done on every cluster)",
            metrics.rollouts_completed.clone(),
        );
        registry.register_collector(Box::new(FleetState(metrics.clone())));
        metrics
    }

    /// A placement's status as written: its rollout counts towards the placement metrics; a
    /// rollout that turns complete counts once.
    pub fn placement(&self, key: &str, status: &atoll_api::placement::WorkPlacementStatus) {
        let reason = status
            .conditions
            .iter()
            .find(|c| c.type_ == atoll_api::names::CONDITION_PROGRESSING)
            .map_or("Unknown", |c| progressing_reason(&c.reason));
        let rollout = Rollout {
            reason,
            selected: i64::from(status.selected),
            available: i64::from(status.available),
            pending: i64::from(status.pending),
            failed: status.failed_clusters.len() as i64,
        };
        let mut rollouts = self.rollouts.lock().unwrap_or_else(|e| e.into_inner());
        let before = rollouts.insert(key.to_owned(), rollout);
        if reason == "RolloutComplete" && before.is_none_or(|b| b.reason != "RolloutComplete") {
            self.rollouts_completed.inc();
        }
        self.set_placements(&rollouts);
    }

    /// A placement is gone.
    pub fn placement_gone(&self, key: &str) {
        let mut rollouts = self.rollouts.lock().unwrap_or_else(|e| e.into_inner());
        if rollouts.remove(key).is_some() {
            self.set_placements(&rollouts);
        }
    }

    fn set_placements(&self, rollouts: &HashMap<String, Rollout>) {
        let mut by_reason: BTreeMap<&'static str, i64> = PROGRESSING_REASONS
            .iter()
            .chain(&["Other", "Unknown"])
            .map(|r| (*r, 0))
            .collect();
        let mut clusters = [0i64; 4];
        for r in rollouts.values() {
            *by_reason.entry(r.reason).or_default() += 1;
            for (total, n) in
                clusters
                    .iter_mut()
                    .zip([r.selected, r.available, r.pending, r.failed])
            {
                *total += n;
            }
        }
        for (reason, n) in by_reason {
            self.placements.get_or_create(&[("reason", reason)]).set(n);
        }
        for (state, n) in ["selected", "available", "pending", "failed"]
            .into_iter()
            .zip(clusters)
        {
            self.placement_clusters
                .get_or_create(&[("state", state)])
                .set(n);
        }
    }

    /// This replica leads (`true`) or not; a change counts as a transition.
    pub fn leading(&self, leads: bool) {
        let value = i64::from(leads);
        if self.leader.set(value) != value {
            self.leader_transitions.inc();
        }
    }

    /// The views the state-like metrics are read from: the running hub's.
    pub(crate) fn watch(&self, fleet: &Arc<Fleet>, works: &Arc<WorkIndex>) {
        *self.views.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Arc::downgrade(fleet), Arc::downgrade(works)));
    }

    /// A reconcile by `controller` ended, well or not, after `elapsed`.
    pub fn reconciled(&self, controller: &'static str, ok: bool, elapsed: Duration) {
        let result = if ok { "success" } else { "error" };
        self.reconciles
            .get_or_create(&Reconciled { controller, result })
            .inc();
        if !ok {
            self.reconcile_errors
                .get_or_create(&Controller { controller })
                .inc();
        }
        self.reconcile_time
            .get_or_create(&Controller { controller })
            .observe(elapsed.as_secs_f64());
    }

    /// Times a kube-runtime reconciler into [`Metrics::reconciled`] under `controller`.
    pub fn timed<K, C, F, Fut, T, E>(
        self: &Arc<Self>,
        controller: &'static str,
        mut reconcile: F,
    ) -> impl FnMut(Arc<K>, Arc<C>) -> BoxFuture<'static, Result<T, E>> + use<K, C, F, Fut, T, E>
    where
        F: FnMut(Arc<K>, Arc<C>) -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let metrics = self.clone();
        move |object, ctx| {
            let reconciling = reconcile(object, ctx);
            let metrics = metrics.clone();
            Box::pin(async move {
                let started = Instant::now();
                let result = reconciling.await;
                metrics.reconciled(controller, result.is_ok(), started.elapsed());
                result
            })
        }
    }

    /// A call of the agents' service began.
    pub(crate) fn started(&self, method: &'static str, streaming: bool) {
        self.grpc_started
            .get_or_create(&GrpcMethod {
                grpc_service: SERVICE,
                grpc_method: method,
                grpc_type: grpc_type(streaming),
            })
            .inc();
    }

    /// A call of the agents' service ended with `code`.
    pub(crate) fn handled(
        &self,
        method: &'static str,
        streaming: bool,
        code: tonic::Code,
        elapsed: Duration,
    ) {
        let grpc_type = grpc_type(streaming);
        let labels = GrpcMethod {
            grpc_service: SERVICE,
            grpc_method: method,
            grpc_type,
        };
        if !streaming {
            self.grpc_seconds
                .get_or_create(&labels)
                .observe(elapsed.as_secs_f64());
        }
        self.grpc_handled
            .get_or_create(&GrpcHandled {
                grpc_service: labels.grpc_service,
                grpc_method: method,
                grpc_type,
                grpc_code: code_name(code),
            })
            .inc();
    }

    /// A join was answered: `accepted`, `pending` or `rejoined`.
    pub(crate) fn joined(&self, result: &'static str) {
        self.joins.get_or_create(&JoinResult { result }).inc();
    }

    /// A join was refused with `code`.
    pub(crate) fn join_refused(&self, code: tonic::Code) {
        self.join_refusals
            .get_or_create(&Refusal {
                code: code_name(code),
            })
            .inc();
    }

    /// A heartbeat arrived.
    pub(crate) fn heartbeat(&self) {
        self.heartbeats.inc();
    }
}

/// `grpc_type` as go-grpc-prometheus writes it.
fn grpc_type(streaming: bool) -> &'static str {
    if streaming { "server_stream" } else { "unary" }
}

/// A gRPC code as gRPC's own tooling writes it (`OK`, `Unauthenticated`).
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

/// One placement's rollout, as its last status said it.
#[derive(Debug, Clone, Copy)]
struct Rollout {
    reason: &'static str,
    selected: i64,
    available: i64,
    pending: i64,
    failed: i64,
}

/// The reasons of a placement's `Progressing` condition (the label's values).
const PROGRESSING_REASONS: [&str; 6] = [
    "RollingOut",
    "RolloutComplete",
    "RolloutHalted",
    "InvalidSpec",
    "NoClustersSelected",
    "ClusterSetNotFound",
];

/// A `Progressing` reason as a label value (`Other` for one not listed).
fn progressing_reason(reason: &str) -> &'static str {
    PROGRESSING_REASONS
        .iter()
        .find(|r| **r == reason)
        .copied()
        .unwrap_or("Other")
}

/// The state-like metrics, counted from the hub's view at each scrape.
#[derive(Debug)]
struct FleetState(Arc<Metrics>);

/// The summary conditions counted in `atoll_hub_works`.
const WORK_CONDITIONS: [&str; 5] = [
    "Applied",
    "Available",
    "Progressing",
    "Degraded",
    "Complete",
];

impl Collector for FleetState {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let views = self
            .0
            .views
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some((Some(fleet), Some(works))) = views.map(|(f, w)| (f.upgrade(), w.upgrade()))
        else {
            return Ok(());
        };
        let leases = fleet.leases();
        let mut connected = 0i64;
        let mut health: BTreeMap<(&'static str, &'static str), i64> = BTreeMap::new();
        fleet.each_member(|member| {
            if member.stream.as_ref().is_some_and(|s| !s.is_closed()) {
                connected += 1;
            }
            let verdict = crate::inventory::control_plane_health(member, leases);
            *health.entry((verdict.status, verdict.reason)).or_default() += 1;
        });
        let mut by_condition: BTreeMap<(&'static str, &'static str), i64> = BTreeMap::new();
        for condition in WORK_CONDITIONS {
            for status in ["True", "False", "Unknown"] {
                by_condition.insert((condition, status), 0);
            }
        }
        works.each(|entry| {
            let r = &entry.reported;
            for (condition, value) in [
                ("Applied", r.applied),
                ("Available", r.available),
                ("Progressing", r.progressing),
                ("Degraded", r.degraded),
                ("Complete", r.complete),
            ] {
                let status = match value {
                    Some(true) => "True",
                    Some(false) => "False",
                    None => "Unknown",
                };
                *by_condition.entry((condition, status)).or_default() += 1;
            }
        });

        let gauge = Gauge::<i64>::default();
        gauge.set(connected);
        gauge.encode(encoder.encode_descriptor(
            "atoll_hub_connected_agents",
            "Agents with an open sync stream to this hub",
            None,
            gauge.metric_type(),
        )?)?;

        let clusters: Family<[(&'static str, &'static str); 3], Gauge> = Family::default();
        for ((status, reason), n) in health {
            clusters
                .get_or_create(&[
                    (
                        "condition",
                        atoll_api::names::CONDITION_CONTROL_PLANE_HEALTHY,
                    ),
                    ("status", status),
                    ("reason", reason),
                ])
                .set(n);
        }
        clusters.encode(encoder.encode_descriptor(
            "atoll_hub_clusters",
            "Member clusters by the status of their ClusterProfile's ControlPlaneHealthy condition",
            None,
            clusters.metric_type(),
        )?)?;

        let by_work: Family<[(&'static str, &'static str); 2], Gauge> = Family::default();
        for ((condition, status), n) in by_condition {
            by_work
                .get_or_create(&[("condition", condition), ("status", status)])
                .set(n);
        }
        by_work.encode(encoder.encode_descriptor(
            "atoll_hub_works",
            "Works by summary condition, as their clusters reported them (Unknown: not reported)",
            None,
            by_work.metric_type(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, registry).unwrap();
        text
    }

    #[tokio::test]
    async fn timed_reconciles_are_counted_by_controller_and_result() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        let mut reconcile = metrics.timed("test", |n: Arc<u32>, _: Arc<()>| async move {
            if *n == 0 { Err("no") } else { Ok(*n) }
        });
        assert_eq!(reconcile(Arc::new(1), Arc::new(())).await, Ok(1));
        assert_eq!(reconcile(Arc::new(2), Arc::new(())).await, Ok(2));
        assert_eq!(reconcile(Arc::new(0), Arc::new(())).await, Err("no"));
        let text = scrape(&registry);
        for series in [
            "controller_runtime_reconcile_total{controller=\"test\",result=\"success\"} 2",
            "controller_runtime_reconcile_total{controller=\"test\",result=\"error\"} 1",
            "controller_runtime_reconcile_errors_total{controller=\"test\"} 1",
            "controller_runtime_reconcile_time_seconds_count{controller=\"test\"} 3",
        ] {
            assert!(text.lines().any(|l| l == series), "{series} in\n{text}");
        }
        // No hub yet: no state-like series, and nothing fails.
        assert!(!text.contains("atoll_hub_connected_agents"), "{text}");
    }

    #[test]
    fn placements_are_counted_by_progressing_reason_and_completions_once() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        let status = |reason: &str, selected: i32, available: i32| {
            serde_json::from_value::<atoll_api::placement::WorkPlacementStatus>(serde_json::json!({
                "selected": selected, "available": available, "pending": selected - available,
                "conditions": [{"type": "Progressing", "status": "True", "reason": reason,
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            }))
            .unwrap()
        };
        metrics.placement("default.a", &status("RollingOut", 4, 1));
        metrics.placement("default.b", &status("RolloutComplete", 2, 2));
        metrics.placement("default.b", &status("RolloutComplete", 2, 2));
        metrics.placement("default.a", &status("RolloutComplete", 4, 4));
        metrics.placement("default.c", &status("Surprising", 1, 0));
        let text = scrape(&registry);
        for series in [
            "atoll_hub_placements{reason=\"RolloutComplete\"} 2",
            "atoll_hub_placements{reason=\"RollingOut\"} 0",
            "atoll_hub_placements{reason=\"Other\"} 1",
            "atoll_hub_placement_clusters{state=\"selected\"} 7",
            "atoll_hub_placement_clusters{state=\"available\"} 6",
            "atoll_hub_placement_clusters{state=\"pending\"} 1",
            "atoll_hub_placement_rollouts_completed_total 2",
        ] {
            assert!(text.lines().any(|l| l == series), "{series} in\n{text}");
        }
        metrics.placement_gone("default.c");
        let text = scrape(&registry);
        assert!(
            text.lines()
                .any(|l| l == "atoll_hub_placements{reason=\"Other\"} 0"),
            "{text}"
        );
    }

    #[test]
    fn leading_is_a_gauge_and_its_changes_are_counted() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        let text = scrape(&registry);
        assert!(text.contains("\natoll_hub_leader 0\n"), "{text}");
        assert!(
            text.contains("\natoll_hub_leader_transitions_total 0\n"),
            "{text}"
        );
        metrics.leading(false);
        metrics.leading(true);
        metrics.leading(true);
        let text = scrape(&registry);
        assert!(text.contains("\natoll_hub_leader 1\n"), "{text}");
        assert!(
            text.contains("\natoll_hub_leader_transitions_total 1\n"),
            "{text}"
        );
        metrics.leading(false);
        let text = scrape(&registry);
        assert!(text.contains("\natoll_hub_leader 0\n"), "{text}");
        assert!(
            text.contains("\natoll_hub_leader_transitions_total 2\n"),
            "{text}"
        );
    }

    #[test]
    fn the_fleet_is_read_at_each_scrape() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        let fleet = Fleet::new(Default::default());
        let works = Arc::new(WorkIndex::default());
        metrics.watch(&fleet, &works);
        let record = crate::record::Record {
            name: "east".into(),
            accepted: true,
            join_secret: None,
            credential: None,
            credential_expires: None,
            previous: None,
            cluster_id: "id".into(),
            hosted_by: None,
        };
        fleet.upsert_record(&record, 1);
        let text = scrape(&registry);
        assert!(text.contains("\natoll_hub_connected_agents 0\n"), "{text}");
        assert!(
            text.contains("\natoll_hub_clusters{condition=\"ControlPlaneHealthy\",status=\"Unknown\",reason=\"NotJoined\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("\natoll_hub_works{condition=\"Applied\",status=\"Unknown\"} 0\n"),
            "{text}"
        );
    }
}
