//! WorkPlacement: one Work per selected cluster (ClusterSet, label selector over ClusterProfiles,
//! explicit names, ANDed; then the placement's policy, `PickAll`, `PickFixed` or `PickN`, decided
//! by the pure [`schedule`]), following membership as it changes, rolled out `All` at once or
//! `Progressive`ly (`maxConcurrency`, `maxFailures`, `minSuccessTime`, `progressDeadline`), with
//! a status that counts selected, applied, available, degraded and pending clusters and names the
//! ones that failed. What each cluster receives is the placement's manifests and the hub
//! resources its selectors pick ([`resources`]), changed by the WorkOverrides that select the
//! placement and then by its own override rules ([`overrides`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::{ObjectRef, Store};
use std::time::{Duration, Instant};

use atoll_api::names::{
    CONDITION_AVAILABLE, CONDITION_DEGRADED, CONDITION_PROGRESSING, CONDITION_SCHEDULED,
    FINALIZER_WORK_CLEANUP,
};
use atoll_api::placement::{
    ClusterDecision, FailedCluster, InvalidField, OverriddenCluster, PlacementSelector, PolicyType,
    RolloutSettings, RolloutType, SELECTED_RESOURCES_MAX, SelectedResource, WorkOverride,
    WorkPlacement, WorkPlacementStatus,
};
use atoll_api::work::Manifest;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::value::RawValue;
use tokio::sync::watch;

use crate::conditions::{Verdict, merge};
use crate::fleet::Fleet;
use crate::work::{
    ANNOTATION_PLACEMENT_GENERATION, ANNOTATION_PLACEMENT_RENDERED, Entry, LABEL_PLACEMENT,
    Outcome, WorkIndex,
};

mod overrides;
pub mod resources;
mod scheduler;

pub use overrides::{Cluster, ImageReference, OverrideError, Rendered, Rule, RuleId, render};
pub use scheduler::{Candidate, Previous, Schedule, schedule};

/// The shortest time between two plans of one placement at one generation.
const PLAN_INTERVAL: Duration = Duration::from_millis(250);
/// How far past a soak's end or a deadline a placement is woken, so that the check there holds.
const WAKE_MARGIN: Duration = Duration::from_millis(50);

/// How many Works the hub stamps at once.
const STAMP_CONCURRENCY: usize = 64;

/// Field manager of the Works the hub stamps.
const FIELD_MANAGER: &str = "atoll-hub";

/// Where one selected cluster stands in a rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Its Work does not carry the placement's current generation yet.
    Outdated,
    /// Updated; waiting for its cluster to apply it and report it available.
    Updating,
    /// Applied and available, but not yet for `minSuccessTime`.
    Soaking,
    /// Applied and available for long enough.
    Succeeded,
    /// Failed to apply (`ApplyFailed`), reported degraded resources (`Degraded`), or missed the
    /// progress deadline (`ProgressDeadlineExceeded`): the reason, and why.
    Failed(&'static str, String),
}

/// What the rollout knows about one stamped cluster over time.
#[derive(Debug, Clone, Copy)]
struct Timing {
    generation: i64,
    stamped: Instant,
    available_since: Option<Instant>,
}

/// The key of a placement: `namespace.name` (also the name of the Works it stamps).
pub fn key(placement: &WorkPlacement) -> String {
    format!(
        "{}.{}",
        placement.metadata.namespace.as_deref().unwrap_or_default(),
        placement.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Whether `labels` match a Kubernetes label selector.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let plain = selector
        .match_labels
        .as_ref()
        .is_none_or(|m| m.iter().all(|(k, v)| labels.get(k) == Some(v)));
    let expressions = selector.match_expressions.as_ref().is_none_or(|exprs| {
        exprs.iter().all(|e| {
            let values = e.values.clone().unwrap_or_default();
            let value = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => value.is_some_and(|v| values.contains(v)),
                "NotIn" => value.is_none_or(|v| !values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
    });
    plain && expressions
}

/// The labels of an object as JSON (values that are not strings left out).
pub fn labels_of(object: &serde_json::Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(serde_json::Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Finalizer on a WorkPlacement: the hub deletes the Works it stamped before the placement goes.
pub const FINALIZER: &str = "atoll.dev/placement-cleanup";
/// Placements reconciled at once.
const CONCURRENCY: u16 = 8;
/// How often an unchanged placement is reconciled anyway (as controller-rs does), and how often
/// Works of placements that are gone (deleted while no hub ran) are looked for.
const RESYNC: Duration = Duration::from_secs(300);

/// What the placement controller keeps between reconciles.
struct Context {
    index: Arc<WorkIndex>,
    fleet: Arc<Fleet>,
    client: kube::Client,
    /// The WorkOverrides, as the hub last saw them.
    work_overrides: Store<WorkOverride>,
    /// The hub resources placements select.
    resources: Arc<resources::HubResources>,
    memory: Mutex<Memory>,
}

/// Per placement (by key): its rollout timings by cluster, the status last written, and how
/// many reconciles in a row failed.
#[derive(Default)]
struct Memory {
    timings: HashMap<String, HashMap<String, Timing>>,
    written: HashMap<String, WorkPlacementStatus>,
    failures: HashMap<String, u32>,
    /// When each placement was last planned, and at which generation.
    planned: HashMap<String, (Instant, i64)>,
    /// The deletions of Works each placement let go, while they run.
    letting_go: HashMap<String, LettingGo>,
}

/// A task deleting Works a placement let go; stopped when the controller stops.
struct LettingGo(tokio::task::JoinHandle<()>);

impl Drop for LettingGo {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Context {
    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Deletes the Works `works` that the placement `key` let go, beside its plans rather than in
    /// one: a placement that lets thousands of clusters go shows its chosen clusters done while
    /// those deletions run. While one runs, the placement's next deletion waits; returns whether
    /// this one had to (the placement is then planned again soon, to delete what is left).
    fn let_go(&self, key: &str, works: Vec<(String, String)>) -> bool {
        if works.is_empty() {
            return false;
        }
        let mut memory = self.memory();
        memory.letting_go.retain(|_, task| !task.0.is_finished());
        if memory.letting_go.contains_key(key) {
            return true;
        }
        let client = self.client.clone();
        let task = tokio::spawn(async move { delete_works(&client, works.into_iter()).await });
        memory.letting_go.insert(key.to_owned(), LettingGo(task));
        false
    }
}

/// Why a placement could not be reconciled.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error(transparent)]
    Finalizer(Box<kube::runtime::finalizer::Error<kube::Error>>),
}

/// The WorkPlacement controller: one reconcile per placement on a work queue (kube-runtime's
/// `Controller`), woken by the placement's changes, by membership and label changes of the
/// fleet (every placement), by changes of the Works it stamped (that placement), and by time
/// (soak and deadlines, as the reconcile asks).
pub async fn run(
    index: Arc<WorkIndex>,
    fleet: Arc<Fleet>,
    client: kube::Client,
    shutdown: watch::Receiver<bool>,
) {
    // Until the Works are listed, every placement would look as if it had stamped none.
    let mut stop = shutdown.clone();
    tokio::select! {
        _ = index.wait_loaded() => {}
        _ = stop.wait_for(|s| *s) => return,
    }
    let (work_overrides, writer) = kube::runtime::reflector::store();
    let overridden = kube::runtime::reflector(
        writer,
        watcher::watcher(
            Api::<WorkOverride>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .filter_map(|event| async move {
        // Every placement may be selected by a WorkOverride that changed.
        matches!(
            event,
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone)
        )
        .then_some(())
    });
    let reserved = vec![
        atoll_api::SYSTEM_NAMESPACE.to_owned(),
        atoll_api::INVENTORY_NAMESPACE.to_owned(),
    ];
    let (resources, changed) =
        resources::HubResources::new(client.clone(), reserved, shutdown.clone());
    let selecting = {
        let resources = resources.clone();
        tokio_stream_of(changed)
            .flat_map(move |key| futures::stream::iter(resources.placements_of(&key)))
            .filter_map(|key| async move { object_ref(&key) })
    };
    let ctx = Arc::new(Context {
        index: index.clone(),
        fleet: fleet.clone(),
        client: client.clone(),
        work_overrides,
        resources,
        memory: Mutex::default(),
    });
    let reconcile = ctx.fleet.metrics.timed("WorkPlacement", reconcile);
    let membership = futures::stream::unfold(fleet, |fleet| async move {
        fleet.placements_dirty.notified().await;
        Some(((), fleet))
    });
    let touched = futures::stream::unfold(index.clone(), |index| async move {
        let keys = index.next_touched().await;
        Some((futures::stream::iter(keys), index))
    })
    .flatten()
    .filter_map(|key| async move { object_ref(&key) });
    let controller = Controller::new(
        Api::<WorkPlacement>::all(client.clone()),
        watcher::Config::default(),
    )
    .reconcile_all_on(membership)
    .reconcile_all_on(overridden)
    .reconcile_on(touched)
    .reconcile_on(selecting)
    .with_config(controller::Config::default().concurrency(CONCURRENCY));
    let store = controller.store();
    let mut stop = shutdown.clone();
    let sweeper = tokio::spawn(sweep(store, index, client, shutdown));
    controller
        .graceful_shutdown_on(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
    sweeper.abort();
}

/// The items a receiver yields, as a stream.
fn tokio_stream_of<T: Send + 'static>(
    receiver: tokio::sync::mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send {
    futures::stream::unfold(receiver, |mut r| async move {
        let item = r.recv().await?;
        Some((item, r))
    })
}

/// The placement `namespace.name` as an object reference.
fn object_ref(key: &str) -> Option<ObjectRef<WorkPlacement>> {
    let (namespace, name) = key.split_once('.')?;
    Some(ObjectRef::new(name).within(namespace))
}

/// Deletes, every resync period, the Works of placements that are gone without the hub having
/// cleaned up after them (deleted while no hub ran, or before placements held a finalizer).
async fn sweep(
    store: Store<WorkPlacement>,
    index: Arc<WorkIndex>,
    client: kube::Client,
    mut shutdown: watch::Receiver<bool>,
) {
    if store.wait_until_ready().await.is_err() {
        return;
    }
    loop {
        let live: std::collections::HashSet<String> =
            store.state().iter().map(|p| key(p)).collect();
        let orphans = index
            .all_stamped()
            .into_iter()
            .filter(|(_, _, placement)| !live.contains(placement))
            .map(|(cluster, name, _)| (cluster, name));
        delete_works(&client, orphans).await;
        tokio::select! {
            _ = tokio::time::sleep(RESYNC) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

#[tracing::instrument(skip_all, fields(placement = %key(&placement)))]
async fn reconcile(placement: Arc<WorkPlacement>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = key(&placement);
    let api: Api<WorkPlacement> = Api::namespaced(
        ctx.client.clone(),
        placement.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let result = finalizer(&api, FINALIZER, placement, |event| async {
        match event {
            FinalizerEvent::Apply(placement) => apply(&placement, &ctx).await,
            FinalizerEvent::Cleanup(placement) => cleanup(&placement, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)));
    if result.is_ok() {
        ctx.memory().failures.remove(&key);
    }
    result
}

fn error_policy(placement: Arc<WorkPlacement>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = key(&placement);
    let (attempts, delay) = atoll_runtime::backoff::after_failure(&mut ctx.memory().failures, &key);
    tracing::warn!(placement = %key, %error, attempts, ?delay, "cannot reconcile a WorkPlacement; retrying");
    Action::requeue(delay)
}

/// A deleted placement: its Works go, and the hub forgets it.
async fn cleanup(placement: &WorkPlacement, ctx: &Context) -> Result<Action, kube::Error> {
    let key = key(placement);
    let stamped = ctx.index.stamped(&key);
    delete_works(
        &ctx.client,
        stamped
            .into_iter()
            .map(|(cluster, (name, _))| (cluster, name)),
    )
    .await;
    ctx.resources.forget(&key);
    ctx.fleet.metrics.placement_gone(&key);
    let mut memory = ctx.memory();
    memory.timings.remove(&key);
    memory.written.remove(&key);
    memory.planned.remove(&key);
    memory.letting_go.remove(&key);
    tracing::info!(placement = %key, "WorkPlacement deleted; its Works go");
    Ok(Action::await_change())
}

/// The Works, `(cluster, name)`, a placement no longer wants: those of clusters neither chosen
/// nor retained. One already being deleted is not deleted again while its agent cleans up (at
/// every reconcile, a placement letting thousands of clusters go sent thousands of deletes).
fn unwanted(
    stamped: &HashMap<String, (String, Entry)>,
    chosen: &std::collections::HashSet<&String>,
    retained: &BTreeSet<String>,
) -> Vec<(String, String)> {
    stamped
        .iter()
        .filter(|(cluster, (_, entry))| {
            !entry.deleting && !chosen.contains(cluster) && !retained.contains(*cluster)
        })
        .map(|(cluster, (name, _))| (cluster.clone(), name.clone()))
        .collect()
}

/// Deletes Works, `(cluster, name)`, as many at once as the hub stamps (a placement that
/// leaves thousands of clusters does not wait for each in turn).
async fn delete_works(client: &kube::Client, works: impl Iterator<Item = (String, String)>) {
    futures::stream::iter(works)
        .for_each_concurrent(STAMP_CONCURRENCY, |(cluster, name)| async move {
            delete_work(client, &cluster, &name).await
        })
        .await;
}

/// Deletes one Work, not decoding the answer (the Work, being deleted: the watch brings it).
async fn delete_work(client: &kube::Client, cluster: &str, name: &str) {
    let path = <atoll_api::work::Work as kube::Resource>::url_path(&(), Some(cluster));
    let request = match kube::core::Request::new(path).delete(name, &DeleteParams::default()) {
        Ok(request) => request,
        Err(error) => {
            tracing::warn!(work = %name, %cluster, %error, "cannot delete a Work its placement no longer wants");
            return;
        }
    };
    match crate::work::send_write(client, request).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(error) => {
            tracing::warn!(work = %name, %cluster, %error, "cannot delete a Work its placement no longer wants")
        }
    }
}

/// The member clusters a placement's selector picks, as its policy sees them (sorted by name),
/// and the ClusterSet it names if that does not exist. Where the selector's `clusterNames` or a
/// `PickFixed` policy name the clusters, those are looked up rather than the fleet scanned (a
/// thousand placements of one cluster each on a fleet of 10,000 kept the hub busy copying the
/// fleet); labels and properties are copied only for a policy, which reads them.
fn select(
    placement: &WorkPlacement,
    fleet: &Fleet,
    now: Instant,
) -> (Vec<Candidate>, Option<String>) {
    let selector = &placement.spec.cluster_selector;
    let missing_set = selector
        .cluster_set
        .as_ref()
        .filter(|s| !fleet.cluster_sets().contains(*s))
        .cloned();
    // The selector's `clusterNames`, when it has some, are among the names looked up.
    let picks = |m: &&crate::fleet::Member| {
        m.accepted
            && m.credential.is_some()
            && selector
                .cluster_set
                .as_deref()
                .is_none_or(|s| m.cluster_set() == Some(s))
            && selector
                .label_selector
                .as_ref()
                .is_none_or(|l| matches(l, &m.labels))
    };
    let detailed = placement.spec.policy.is_some();
    let candidate = |m: &crate::fleet::Member| Candidate {
        name: m.name.clone(),
        labels: if detailed {
            m.labels.clone()
        } else {
            BTreeMap::new()
        },
        properties: if detailed {
            m.properties
                .iter()
                .map(|p| (p.name.clone(), p.value.clone()))
                .collect()
        } else {
            BTreeMap::new()
        },
        unready_for: m.unready_for(now),
    };
    let names = named(placement);
    let mut selected: Vec<Candidate> = fleet.with_members(|members| match &names {
        Some(names) => names
            .iter()
            .filter_map(|name| members.get(*name))
            .filter(picks)
            .map(candidate)
            .collect(),
        None => members.values().filter(picks).map(candidate).collect(),
    });
    selected.sort_by(|a, b| a.name.cmp(&b.name));
    (selected, missing_set)
}

/// The only clusters a placement can choose, where its selector's `clusterNames` or a valid
/// `PickFixed` policy name them (both: the names in both); `None` where any member may be
/// chosen.
fn named(placement: &WorkPlacement) -> Option<BTreeSet<&str>> {
    let listed = &placement.spec.cluster_selector.cluster_names;
    let by_selector: Option<BTreeSet<&str>> =
        (!listed.is_empty()).then(|| listed.iter().map(String::as_str).collect());
    let by_policy: Option<BTreeSet<&str>> = placement
        .spec
        .policy
        .as_ref()
        .filter(|p| {
            p.type_ == PolicyType::PickFixed && atoll_api::placement::policy::validate(p).is_ok()
        })
        .map(|p| p.cluster_names.iter().map(String::as_str).collect());
    match (by_selector, by_policy) {
        (Some(a), Some(b)) => Some(a.intersection(&b).copied().collect()),
        (a, b) => a.or(b),
    }
}

/// What a placement's policy chose among the members its selector picks.
struct Choice {
    /// The clusters that receive the Work.
    selected: Vec<String>,
    /// The clusters not chosen whose Work stays.
    retained: BTreeSet<String>,
    /// The decisions and the `Scheduled` condition (`None` without a policy).
    decided: Option<(Vec<ClusterDecision>, Verdict)>,
    /// When the choice changes with time alone.
    wake: Option<Duration>,
}

/// The clusters a placement's policy chooses among the members its selector picks, and what it
/// decided (without a policy: every picked member). An invalid policy keeps the clusters
/// chosen before (nothing is stamped or pruned then: the rollout plan refuses it too) and says
/// why in `Scheduled`.
fn choose(
    placement: &WorkPlacement,
    members: Vec<Candidate>,
    previous: &WorkPlacementStatus,
    stamped: &HashMap<String, (String, Entry)>,
) -> Choice {
    let Some(policy) = &placement.spec.policy else {
        return Choice {
            selected: members.into_iter().map(|m| m.name).collect(),
            retained: BTreeSet::new(),
            decided: None,
            wake: None,
        };
    };
    let names = |keep: fn(&ClusterDecision) -> bool| -> BTreeSet<String> {
        previous
            .decisions
            .iter()
            .filter(|d| keep(d))
            .map(|d| d.cluster_name.clone())
            .collect()
    };
    // The clusters chosen: those the status says (it lists at most 1,000), and those holding a
    // Work of the placement that is not going (the status may be behind, or cut short).
    let retained = names(|d| d.retained);
    let mut chosen = names(|d| d.selected);
    chosen.extend(
        stamped
            .iter()
            .filter(|(cluster, (_, entry))| !entry.deleting && !retained.contains(*cluster))
            .map(|(cluster, _)| cluster.clone()),
    );
    let replaced = names(|d| !d.selected && d.reason.contains(scheduler::REPLACED));
    let before = Previous {
        chosen,
        retained,
        replaced,
    };
    if let Err(invalid) = atoll_api::placement::policy::validate(policy) {
        let kept: Vec<String> = members
            .iter()
            .filter(|m| before.chosen.contains(&m.name))
            .map(|m| m.name.clone())
            .collect();
        let verdict = Verdict::new(
            CONDITION_SCHEDULED,
            "False",
            "InvalidPolicy",
            invalid.to_string(),
        );
        return Choice {
            selected: kept,
            retained: before.retained,
            decided: Some((previous.decisions.clone(), verdict)),
            wake: None,
        };
    }
    let Schedule {
        chosen,
        retained,
        decisions,
        verdict,
        wake,
    } = schedule(policy, &members, &before);
    let verdict = Verdict::new(
        CONDITION_SCHEDULED,
        verdict.status,
        verdict.reason,
        verdict.message,
    );
    Choice {
        selected: chosen,
        retained: retained.into_iter().collect(),
        decided: Some((decisions, verdict)),
        // A little past the moment, so that the check there holds.
        wake: wake.map(|w| w + WAKE_MARGIN),
    }
}

/// What each selected cluster receives from a placement with overrides: its manifests as the
/// rules render them and their digest, or why they cannot be rendered (that cluster alone
/// fails). Empty for a placement without overrides: every cluster receives the manifests as
/// written.
type Renders = HashMap<String, Result<(Rendered, String), OverrideError>>;

/// What a placement sends before per-cluster overrides: its manifests and the hub resources its
/// selectors pick; and the WorkOverrides that select it, by name.
struct Sources {
    manifests: Arc<Vec<Manifest>>,
    work_overrides: Vec<Arc<WorkOverride>>,
    selected_resources: Vec<SelectedResource>,
    /// Why nothing may be stamped now (an invalid selector or WorkOverride).
    problem: Option<InvalidField>,
}

impl Sources {
    /// The override rules, in the order they apply: the WorkOverrides' (by name), then the
    /// placement's own, so that the placement's win where both change a field.
    fn rules<'a>(&'a self, placement: &'a WorkPlacement) -> Vec<Rule<'a>> {
        let mut rules = Vec::new();
        for o in &self.work_overrides {
            rules.extend(Rule::all(o.metadata.name.as_deref(), &o.spec.overrides));
        }
        rules.extend(Rule::all(None, &placement.spec.overrides));
        rules
    }
}

/// Whether a WorkOverride's placement selector picks a placement.
pub fn selects_placement(selector: &PlacementSelector, placement: &WorkPlacement) -> bool {
    let meta = &placement.metadata;
    (selector.namespaces.is_empty()
        || meta
            .namespace
            .as_ref()
            .is_some_and(|ns| selector.namespaces.contains(ns)))
        && (selector.names.is_empty()
            || meta
                .name
                .as_ref()
                .is_some_and(|n| selector.names.contains(n)))
        && selector
            .label_selector
            .as_ref()
            .is_none_or(|l| matches(l, &meta.labels.clone().unwrap_or_default()))
}

/// How soon a placement whose hub resources are still loading is tried again (their watches
/// wake it sooner when they have listed).
const LOADING_RETRY: Duration = Duration::from_secs(2);

/// Gathers what a placement sends; `Err` while hub resources are still loading.
async fn sources(placement: &WorkPlacement, ctx: &Context) -> Result<Sources, Duration> {
    let mut work_overrides: Vec<Arc<WorkOverride>> = ctx
        .work_overrides
        .state()
        .into_iter()
        .filter(|o| selects_placement(&o.spec.placements, placement))
        .collect();
    work_overrides.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut sources = Sources {
        manifests: Arc::new(placement.spec.manifests.clone()),
        work_overrides,
        selected_resources: Vec::new(),
        problem: None,
    };
    sources.problem = sources.work_overrides.iter().find_map(|o| {
        atoll_api::placement::overrides::validate(&o.spec.overrides)
            .err()
            .map(|e| InvalidField {
                field: format!(
                    "WorkOverride {} {}",
                    o.metadata.name.as_deref().unwrap_or_default(),
                    e.field
                ),
                ..e
            })
    });
    let selectors = &placement.spec.resource_selectors;
    if sources.problem.is_some() || selectors.is_empty() {
        return Ok(sources);
    }
    let reserved = [atoll_api::SYSTEM_NAMESPACE, atoll_api::INVENTORY_NAMESPACE];
    let own = placement.metadata.namespace.as_deref().unwrap_or_default();
    if let Err(invalid) = atoll_api::placement::resources::validate(selectors, &reserved, own) {
        sources.problem = Some(invalid);
        return Ok(sources);
    }
    match ctx.resources.gather(placement).await {
        Ok(gathered) => {
            let mut manifests = placement.spec.manifests.clone();
            manifests.extend(gathered.manifests);
            sources.manifests = Arc::new(manifests);
            sources.selected_resources = gathered.selected;
            sources.selected_resources.truncate(SELECTED_RESOURCES_MAX);
        }
        Err(resources::Unavailable::Invalid(invalid)) => sources.problem = Some(invalid),
        Err(resources::Unavailable::Loading) => return Err(LOADING_RETRY),
    }
    Ok(sources)
}

/// Renders a placement's manifests for each selected cluster: none when nothing changes them
/// per cluster or over time (no override rule and no hub resource), each cluster's otherwise.
fn render_all(
    placement: &WorkPlacement,
    sources: &Sources,
    selected: &[String],
    fleet: &Fleet,
) -> Renders {
    let rules = sources.rules(placement);
    if rules.is_empty() && placement.spec.resource_selectors.is_empty() {
        return Renders::new();
    }
    // Copied out first: rendering takes time, and heartbeats wait on the fleet's lock.
    let clusters: Vec<Cluster> = fleet.with_members(|members| {
        selected
            .iter()
            .filter_map(|name| members.get(name))
            .map(|member| Cluster {
                name: member.name.clone(),
                cluster_set: member.cluster_set().map(str::to_owned),
                labels: member.labels.clone(),
                properties: member
                    .properties
                    .iter()
                    .map(|p| (p.name.clone(), p.value.clone()))
                    .collect(),
            })
            .collect()
    });
    clusters
        .into_iter()
        .map(|cluster| {
            let rendered = render(&sources.manifests, &rules, &cluster).map(|r| {
                let bytes = serde_json::to_vec(&r.manifests).unwrap_or_default();
                let digest = crate::digest::sha256(&bytes).to_hex();
                (r, digest)
            });
            (cluster.name, rendered)
        })
        .collect()
}

/// The clusters whose manifests override rules changed, and which rules: the placement's by
/// index, the WorkOverrides' as `NAME[INDEX]`.
fn overridden(renders: &Renders) -> Vec<OverriddenCluster> {
    let mut out: Vec<OverriddenCluster> = renders
        .iter()
        .filter_map(|(name, r)| {
            let (rendered, _) = r.as_ref().ok()?;
            (!rendered.applied.is_empty()).then(|| OverriddenCluster {
                name: name.clone(),
                applied_overrides: rendered
                    .applied
                    .iter()
                    .filter(|r| r.work_override.is_none())
                    .map(|r| r.index as i32)
                    .collect(),
                applied_work_overrides: rendered
                    .applied
                    .iter()
                    .filter_map(|r| Some(format!("{}[{}]", r.work_override.as_ref()?, r.index)))
                    .collect(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The rules that changed nothing on any cluster whose rendering succeeded (none when no
/// cluster's did: nothing is known then).
fn unused(rules: usize, renders: &Renders) -> Vec<i32> {
    let mut used = vec![false; rules];
    let mut any = false;
    for (rendered, _) in renders.values().filter_map(|r| r.as_ref().ok()) {
        any = true;
        for rule in rendered
            .applied
            .iter()
            .filter(|r| r.work_override.is_none())
        {
            if let Some(u) = used.get_mut(rule.index) {
                *u = true;
            }
        }
    }
    if !any {
        return Vec::new();
    }
    (0..rules).filter(|i| !used[*i]).map(|i| i as i32).collect()
}

/// What a placement's rollout does now.
#[derive(Debug)]
struct Plan {
    /// Where each selected cluster stands.
    progress: Vec<(String, Progress)>,
    /// The clusters whose Work to stamp with the current generation.
    to_stamp: Vec<String>,
    /// Failed clusters and how many the strategy tolerates, when that stops the rollout.
    halted: Option<(usize, usize)>,
    /// Why the rollout strategy cannot be followed: nothing is stamped.
    invalid: Option<InvalidField>,
    /// When the plan changes with time alone (a cluster's soak ends, or its deadline passes).
    wake: Option<Duration>,
}

/// Plans a placement's rollout: where each selected cluster stands (`timings` remembers when
/// each was stamped and became available) and which to stamp now. A cluster whose overrides
/// cannot be rendered has failed and is not stamped; a Work rendered from other properties
/// than the cluster's current ones is outdated.
fn rollout_plan(
    placement: &WorkPlacement,
    selected: &[String],
    stamped: &HashMap<String, (String, Entry)>,
    (renders, problem): (&Renders, Option<&InvalidField>),
    timings: &mut HashMap<String, Timing>,
    now: Instant,
) -> Plan {
    let generation = placement.metadata.generation.unwrap_or(0);
    let settings = rollout_settings(placement, problem, selected.len());
    let (min_success, deadline) = settings
        .as_ref()
        .map_or((Duration::ZERO, None), |s| (s.min_success, s.deadline));
    let mut progress = Vec::with_capacity(selected.len());
    let mut wake: Option<Duration> = None;
    for cluster in selected {
        let desired = match renders.get(cluster) {
            Some(Err(error)) => {
                progress.push((
                    cluster.clone(),
                    Progress::Failed(error.reason(), error.to_string()),
                ));
                continue;
            }
            Some(Ok((_, digest))) => Some(digest),
            None => None,
        };
        let state = match stamped.get(cluster) {
            Some((_, entry)) if carries(entry, generation, desired) => {
                let timing = current_timing(timings, cluster, generation, now);
                let state = cluster_progress(entry, timing, now, min_success, deadline);
                let at = wake_after(&state, timing, now, (min_success, deadline));
                wake = match (wake, at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                state
            }
            _ => Progress::Outdated,
        };
        progress.push((cluster.clone(), state));
    }
    let settings = match settings {
        Ok(settings) => settings,
        Err(invalid) => {
            return Plan {
                progress,
                to_stamp: Vec::new(),
                halted: None,
                invalid: Some(invalid),
                wake: None,
            };
        }
    };
    let progressive = placement.spec.rollout_strategy.type_ == RolloutType::Progressive;
    let (to_stamp, halted) = next_to_stamp(&progress, progressive, &settings);
    Plan {
        progress,
        to_stamp,
        halted,
        invalid: None,
        wake,
    }
}

/// The rollout strategy's values for a placement selecting `total` clusters, or the first thing
/// that keeps it from being followed: an invalid override rule, the placement's resource
/// selectors or hub resources (`problem`), policy, or strategy.
fn rollout_settings(
    placement: &WorkPlacement,
    problem: Option<&InvalidField>,
    total: usize,
) -> Result<RolloutSettings, InvalidField> {
    atoll_api::placement::overrides::validate(&placement.spec.overrides)
        .and_then(|()| problem.cloned().map_or(Ok(()), Err))
        .and_then(|()| {
            placement
                .spec
                .policy
                .as_ref()
                .map_or(Ok(()), atoll_api::placement::policy::validate)
        })
        .and_then(|()| placement.spec.rollout_strategy.settings(total))
}

/// Whether a cluster's Work carries the placement's current `generation` and the rendering
/// wanted for it (`desired`: none when nothing renders per cluster).
fn carries(entry: &Entry, generation: i64, desired: Option<&String>) -> bool {
    entry
        .placement
        .as_ref()
        .is_some_and(|(_, g)| *g == generation)
        && entry.rendered.as_ref() == desired
}

/// The timing of a cluster whose Work carries `generation`: counted from `now` when the Work
/// was first seen at that generation.
fn current_timing<'a>(
    timings: &'a mut HashMap<String, Timing>,
    cluster: &str,
    generation: i64,
    now: Instant,
) -> &'a mut Timing {
    let fresh = Timing {
        generation,
        stamped: now,
        available_since: None,
    };
    let timing = timings.entry(cluster.to_owned()).or_insert(fresh);
    if timing.generation != generation {
        *timing = fresh;
    }
    timing
}

/// When a cluster's `state` changes with time alone (its soak ends, or its deadline passes),
/// a little past the moment so that the check there holds; `None` when it does not.
fn wake_after(
    state: &Progress,
    timing: &Timing,
    now: Instant,
    (min_success, deadline): (Duration, Option<Duration>),
) -> Option<Duration> {
    let after = |at: Instant| at.saturating_duration_since(now) + WAKE_MARGIN;
    match state {
        Progress::Soaking => timing
            .available_since
            .map(|since| after(since + min_success)),
        Progress::Updating => deadline.map(|d| after(timing.stamped + d)),
        _ => None,
    }
}

/// The outdated clusters to stamp now: all of them for an `All` rollout; for a `progressive`
/// one, as many as its concurrency leaves room for beside those updating or soaking, and none
/// once more clusters failed than it tolerates (then also the failures and the tolerance).
fn next_to_stamp(
    progress: &[(String, Progress)],
    progressive: bool,
    settings: &RolloutSettings,
) -> (Vec<String>, Option<(usize, usize)>) {
    let failures = progress
        .iter()
        .filter(|(_, p)| matches!(p, Progress::Failed(..)))
        .count();
    let halted = (progressive && failures > settings.max_failures)
        .then_some((failures, settings.max_failures));
    let outdated = progress
        .iter()
        .filter(|(_, p)| *p == Progress::Outdated)
        .map(|(c, _)| c.clone());
    let to_stamp = if !progressive {
        outdated.collect()
    } else if halted.is_some() {
        Vec::new()
    } else {
        let in_flight = progress
            .iter()
            .filter(|(_, p)| matches!(p, Progress::Updating | Progress::Soaking))
            .count();
        outdated
            .take(settings.concurrency.saturating_sub(in_flight))
            .collect()
    };
    (to_stamp, halted)
}

/// `Progressing`: why the rollout cannot go on (an invalid strategy, a missing set, nothing
/// selected, too many failures), or how far it is.
fn progressing(
    plan: &Plan,
    missing_set: Option<&str>,
    failed_clusters: &[FailedCluster],
    done: usize,
) -> Verdict {
    let total = plan.progress.len();
    let pending = total - done;
    if let Some(invalid) = &plan.invalid {
        Verdict::new(
            CONDITION_PROGRESSING,
            "False",
            "InvalidSpec",
            invalid.to_string(),
        )
    } else if let Some(set) = missing_set {
        Verdict::new(
            CONDITION_PROGRESSING,
            "False",
            "ClusterSetNotFound",
            format!("ClusterSet {set:?} does not exist"),
        )
    } else if total == 0 {
        Verdict::new(
            CONDITION_PROGRESSING,
            "False",
            "NoClustersSelected",
            "the selector picks no member cluster",
        )
    } else if let Some((failures, max_failures)) = plan.halted {
        let names: Vec<String> = failed_clusters
            .iter()
            .take(5)
            .map(|f| format!("{}: {}", f.name, f.message))
            .collect();
        Verdict::new(
            CONDITION_PROGRESSING,
            "False",
            "RolloutHalted",
            format!(
                "{failures} clusters failed, more than maxFailures {max_failures}; {}",
                names.join("; ")
            ),
        )
    } else if pending > 0 {
        Verdict::new(
            CONDITION_PROGRESSING,
            "True",
            "RollingOut",
            format!("{done} of {total} clusters done, {pending} pending"),
        )
    } else {
        Verdict::new(
            CONDITION_PROGRESSING,
            "False",
            "RolloutComplete",
            format!("all {total} clusters done"),
        )
    }
}

/// A placement's status, from its plan and what its clusters reported.
fn status_of(
    placement: &WorkPlacement,
    plan: &Plan,
    stamped: &HashMap<String, (String, Entry)>,
    missing_set: Option<&str>,
    previous: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    scheduled: Option<Verdict>,
) -> WorkPlacementStatus {
    let generation = placement.metadata.generation.unwrap_or(0);
    let current = |cluster: &str| {
        stamped.get(cluster).map(|(_, e)| e).filter(|e| {
            e.placement.as_ref().is_some_and(|(_, g)| *g == generation)
                && e.reported.generation == Some(e.generation)
        })
    };
    let count = |f: &dyn Fn(&Entry) -> bool| {
        plan.progress
            .iter()
            .filter(|(c, _)| current(c).is_some_and(f))
            .count() as i32
    };
    let applied = count(&|e| e.reported.applied == Some(true));
    let available = count(&|e| e.reported.available == Some(true));
    let degraded = count(&|e| e.reported.degraded == Some(true));
    let failed_clusters = failed_clusters(plan);
    let total = plan.progress.len();
    let done = plan
        .progress
        .iter()
        .filter(|(_, p)| matches!(p, Progress::Succeeded | Progress::Failed(..)))
        .count();
    let pending = total - done;
    let progressing = progressing(plan, missing_set, &failed_clusters, done);
    let available_verdict = available_verdict(available as usize, total);
    let degraded_verdict = degraded_verdict(failed_clusters.len(), degraded as usize);
    WorkPlacementStatus {
        observed_generation: Some(generation),
        selected: total as i32,
        applied,
        available,
        degraded,
        pending: pending as i32,
        failed_clusters,
        overridden_clusters: Vec::new(),
        selected_resources: Vec::new(),
        unused_overrides: Vec::new(),
        decisions: Vec::new(),
        conditions: merge(
            previous,
            [progressing, available_verdict, degraded_verdict]
                .into_iter()
                .chain(scheduled)
                .collect(),
            Some(generation),
            jiff::Timestamp::now(),
        ),
    }
}

/// The clusters a plan gave up on, and why.
fn failed_clusters(plan: &Plan) -> Vec<FailedCluster> {
    plan.progress
        .iter()
        .filter_map(|(c, p)| match p {
            Progress::Failed(reason, why) => Some(FailedCluster {
                name: c.clone(),
                reason: (*reason).to_owned(),
                message: why.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// `Available`: whether every selected cluster reports the Work available.
fn available_verdict(available: usize, total: usize) -> Verdict {
    if total > 0 && available == total {
        Verdict::new(
            CONDITION_AVAILABLE,
            "True",
            "AllAvailable",
            format!("all {total} clusters report the Work available"),
        )
    } else {
        Verdict::new(
            CONDITION_AVAILABLE,
            "False",
            "NotAllAvailable",
            format!("{available} of {total} clusters report the Work available"),
        )
    }
}

/// `Degraded`: whether a cluster failed, by the plan or by its own report.
fn degraded_verdict(failed: usize, degraded: usize) -> Verdict {
    if failed == 0 && degraded == 0 {
        Verdict::new(
            CONDITION_DEGRADED,
            "False",
            "AsExpected",
            "no cluster failed",
        )
    } else {
        Verdict::new(
            CONDITION_DEGRADED,
            "True",
            "ClustersFailed",
            format!("{} clusters failed", failed.max(degraded)),
        )
    }
}

/// Reconciles one placement, keeping what the controller remembers of it between reconciles;
/// asks to be woken when its plan changes with time, or at the resync period.
async fn apply(placement: &WorkPlacement, ctx: &Context) -> Result<Action, kube::Error> {
    let key = key(placement);
    let generation = placement.metadata.generation.unwrap_or(0);
    let settled = ctx.index.take_settled(&key);
    let (mut timings, mut written) = {
        let mut memory = ctx.memory();
        // While its Works report (a fan-out to thousands of clusters, each report and each
        // status write a trigger), a placement is planned at most once per interval; a change
        // of its spec is planned at once, and so is the report that settles its last Work, so
        // that a rollout (or a step of one) shows done as soon as it is.
        let now = Instant::now();
        if let Some((at, seen)) = memory.planned.get(&key)
            && *seen == generation
            && !settled
            && now.duration_since(*at) < PLAN_INTERVAL
        {
            return Ok(Action::requeue(PLAN_INTERVAL - now.duration_since(*at)));
        }
        memory.planned.insert(key.clone(), (now, generation));
        (
            memory.timings.remove(&key).unwrap_or_default(),
            memory.written.remove(&key),
        )
    };
    let result = roll_out(placement, ctx, &mut timings, &mut written).await;
    let mut memory = ctx.memory();
    memory.timings.insert(key.clone(), timings);
    if let Some(written) = written {
        memory.written.insert(key, written);
    }
    let wake = result?;
    Ok(Action::requeue(wake.map_or(RESYNC, |w| w.min(RESYNC))))
}

/// Stamps the Works a placement's plan says, has those of clusters it no longer selects deleted
/// (beside it: [`Context::let_go`]), and writes its status; returns when its plan changes with
/// time. A Work that cannot be stamped does not stop the others, the pruning or the status; the
/// first such error is returned, for a retry.
async fn roll_out(
    placement: &WorkPlacement,
    ctx: &Context,
    timings: &mut HashMap<String, Timing>,
    written: &mut Option<WorkPlacementStatus>,
) -> kube::Result<Option<Duration>> {
    let client = &ctx.client;
    let key = key(placement);
    let now = Instant::now();
    let (members, missing_set) = select(placement, &ctx.fleet, now);
    let previous = written
        .clone()
        .or_else(|| placement.status.clone())
        .unwrap_or_default();
    let stamped = ctx.index.stamped(&key);
    let sources = match sources(placement, ctx).await {
        Ok(sources) => sources,
        Err(retry) => return Ok(Some(retry)),
    };
    let Choice {
        selected,
        retained,
        decided,
        wake,
    } = choose(placement, members, &previous, &stamped);
    let renders = match atoll_api::placement::overrides::validate(&placement.spec.overrides) {
        Ok(()) if sources.problem.is_none() => {
            render_all(placement, &sources, &selected, &ctx.fleet)
        }
        _ => Renders::new(),
    };
    for (cluster, error) in renders
        .iter()
        .filter_map(|(c, r)| Some((c, r.as_ref().err()?)))
    {
        tracing::warn!(placement = %key, %cluster, %error, "cannot apply the overrides; the cluster's Work is left as it is");
    }
    let plan = rollout_plan(
        placement,
        &selected,
        &stamped,
        (&renders, sources.problem.as_ref()),
        timings,
        now,
    );

    let first_error = stamp_all(
        client,
        placement,
        &plan.to_stamp,
        (&sources.manifests, &renders),
        timings,
        now,
    )
    .await;
    let chosen: std::collections::HashSet<&String> = selected.iter().collect();
    let waiting =
        plan.invalid.is_none() && ctx.let_go(&key, unwanted(&stamped, &chosen, &retained));
    timings.retain(|cluster, _| chosen.contains(cluster));
    drop(chosen);

    let (decisions, scheduled) = decided.unzip();
    let mut status = status_of(
        placement,
        &plan,
        &stamped,
        missing_set.as_deref(),
        &previous.conditions,
        scheduled,
    );
    status.decisions = decisions.unwrap_or_default();
    status.overridden_clusters = overridden(&renders);
    status.selected_resources = sources.selected_resources;
    status.unused_overrides = unused(placement.spec.overrides.len(), &renders);
    let wake = [plan.wake, wake, waiting.then_some(PLAN_INTERVAL)]
        .into_iter()
        .flatten()
        .min();
    let done = |result: Option<kube::Error>| result.map_or(Ok(wake), Err);
    ctx.fleet.metrics.placement(&key, &status);
    if written.as_ref() == Some(&status) || placement.status.as_ref() == Some(&status) {
        *written = Some(status);
        return done(first_error);
    }
    write_status(client, placement, &status).await?;
    *written = Some(status);
    done(first_error)
}

/// Stamps the Works of `clusters` (each its rendering where the placement has one, else the
/// placement's manifests), as many at once as [`STAMP_CONCURRENCY`]: each is one write, and a
/// large fleet has thousands. Records when each was stamped; returns the first error (the
/// others are logged), for a retry.
async fn stamp_all(
    client: &kube::Client,
    placement: &WorkPlacement,
    clusters: &[String],
    (manifests, renders): (&Arc<Vec<Manifest>>, &Renders),
    timings: &mut HashMap<String, Timing>,
    now: Instant,
) -> Option<kube::Error> {
    let key = key(placement);
    let generation = placement.metadata.generation.unwrap_or(0);
    let mut first_error = None;
    // Serialized once for every cluster without overrides, not once per cluster.
    let shared = match serde_json::value::to_raw_value(&**manifests) {
        Ok(raw) => Arc::<RawValue>::from(raw),
        Err(error) => return Some(kube::Error::SerdeError(error)),
    };
    let mut stamped = 0;
    for chunk in clusters.chunks(STAMP_CONCURRENCY) {
        let writes = chunk.iter().map(|cluster| {
            let (manifests, rendered) = match renders.get(cluster) {
                Some(Ok((r, digest))) => (
                    serde_json::value::to_raw_value(&r.manifests).map(Arc::from),
                    Some(digest.clone()),
                ),
                _ => (Ok(Arc::clone(&shared)), None),
            };
            stamp(
                client.clone(),
                key.clone(),
                cluster.clone(),
                generation,
                manifests,
                rendered,
            )
        });
        for (cluster, result) in futures::future::join_all(writes).await {
            match result {
                Ok(()) => {
                    stamped += 1;
                    timings.insert(
                        cluster,
                        Timing {
                            generation,
                            stamped: now,
                            available_since: None,
                        },
                    );
                }
                Err(error) => {
                    tracing::warn!(placement = %key, %cluster, %error, "cannot stamp the Work; retrying");
                    first_error.get_or_insert(error);
                }
            }
        }
    }
    if stamped > 0 {
        tracing::info!(placement = %key, generation, clusters = stamped, "stamped the Works");
    }
    first_error
}

/// Writes a placement's status by a merge patch, with every list present (an empty list
/// clears the one written before).
async fn write_status(
    client: &kube::Client,
    placement: &WorkPlacement,
    status: &WorkPlacementStatus,
) -> kube::Result<()> {
    let api: Api<WorkPlacement> = Api::namespaced(
        client.clone(),
        placement.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let mut body = serde_json::to_value(status).unwrap_or_default();
    if let Some(obj) = body.as_object_mut() {
        for list in [
            "failedClusters",
            "overriddenClusters",
            "unusedOverrides",
            "decisions",
            "selectedResources",
        ] {
            obj.entry(list).or_insert(serde_json::json!([]));
        }
    }
    api.patch_status(
        placement.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": body })),
    )
    .await?;
    Ok(())
}

/// Where one cluster stands, from its Work's [`outcome`](Entry::outcome) (which the index's
/// count of unsettled Works reads too).
fn cluster_progress(
    entry: &Entry,
    timing: &mut Timing,
    now: Instant,
    min_success: Duration,
    deadline: Option<Duration>,
) -> Progress {
    match entry.outcome() {
        Some(Outcome::Failed(reason, message)) => {
            return Progress::Failed(reason, message.to_owned());
        }
        Some(Outcome::Ready) => {
            let since = *timing.available_since.get_or_insert(now);
            return if now.duration_since(since) >= min_success {
                Progress::Succeeded
            } else {
                Progress::Soaking
            };
        }
        None => {}
    }
    timing.available_since = None;
    match deadline {
        Some(d) if now.duration_since(timing.stamped) > d => Progress::Failed(
            "ProgressDeadlineExceeded",
            format!(
                "no report of the Work applied, available and done progressing within the progress deadline of {}s",
                d.as_secs()
            ),
        ),
        _ => Progress::Updating,
    }
}

async fn stamp(
    client: kube::Client,
    key: String,
    cluster: String,
    generation: i64,
    manifests: serde_json::Result<Arc<RawValue>>,
    rendered: Option<String>,
) -> (String, kube::Result<()>) {
    let result = match manifests {
        Ok(manifests) => {
            write_work(
                client,
                &key,
                &cluster,
                generation,
                &manifests,
                rendered.as_deref(),
            )
            .await
        }
        Err(error) => Err(kube::Error::SerdeError(error)),
    };
    (cluster, result)
}

/// The Work the hub applies for a placement, with its manifests already serialized.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StampedWork<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: serde_json::Value,
    spec: StampedSpec<'a>,
}

#[derive(serde::Serialize)]
struct StampedSpec<'a> {
    workload: StampedWorkload<'a>,
}

#[derive(serde::Serialize)]
struct StampedWorkload<'a> {
    manifests: &'a RawValue,
}

async fn write_work(
    client: kube::Client,
    key: &str,
    cluster: &str,
    generation: i64,
    manifests: &RawValue,
    rendered: Option<&str>,
) -> kube::Result<()> {
    let mut annotations =
        serde_json::json!({ANNOTATION_PLACEMENT_GENERATION: generation.to_string()});
    if let Some(digest) = rendered {
        annotations[ANNOTATION_PLACEMENT_RENDERED] = digest.into();
    }
    let work = StampedWork {
        api_version: "multicluster.x-k8s.io/v1alpha1",
        kind: "Work",
        metadata: serde_json::json!({
            "name": key,
            "namespace": cluster,
            "labels": {LABEL_PLACEMENT: key},
            // Held from the start, saving the hub a second write per Work.
            "finalizers": [FINALIZER_WORK_CLEANUP],
            "annotations": annotations,
        }),
        spec: StampedSpec {
            workload: StampedWorkload { manifests },
        },
    };
    let url = <atoll_api::work::Work as kube::Resource>::url_path(&(), Some(cluster));
    let request = kube::core::Request::new(url)
        .patch(
            key,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&work),
        )
        .map_err(kube::Error::BuildRequest)?;
    crate::work::send_write(&client, request).await?;
    tracing::debug!(placement = %key, %cluster, generation, "stamped the Work");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::Reported;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn label_selectors_match_like_kubernetes() {
        let labels: BTreeMap<String, String> = [
            ("env".to_owned(), "prod".to_owned()),
            ("tier".to_owned(), "gold".to_owned()),
        ]
        .into();
        let by_label = |k: &str, v: &str| LabelSelector {
            match_labels: Some([(k.to_owned(), v.to_owned())].into()),
            match_expressions: None,
        };
        assert!(matches(&by_label("env", "prod"), &labels));
        assert!(!matches(&by_label("env", "dev"), &labels));
        let expr = |op: &str, values: &[&str]| LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "env".into(),
                operator: op.into(),
                values: Some(values.iter().map(|v| v.to_string()).collect()),
            }]),
        };
        assert!(matches(&expr("In", &["prod", "staging"]), &labels));
        assert!(!matches(&expr("NotIn", &["prod"]), &labels));
        assert!(matches(&expr("Exists", &[]), &labels));
        assert!(!matches(&expr("DoesNotExist", &[]), &labels));
        assert!(matches(&LabelSelector::default(), &labels));
    }

    fn placement_with(strategy: serde_json::Value, generation: i64) -> WorkPlacement {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "atoll.dev/v1alpha1", "kind": "WorkPlacement",
            "metadata": {"name": "p", "namespace": "default", "generation": generation},
            "spec": {"rolloutStrategy": strategy}
        }))
        .unwrap()
    }

    /// A Work of placement `default.p` at `generation`, as its cluster reported it.
    fn entry(generation: i64, applied: Option<bool>) -> (String, Entry) {
        let reported = Reported {
            generation: applied.map(|_| 1),
            applied,
            available: applied,
            ..Reported::default()
        };
        let entry = Entry {
            uid: "u".into(),
            generation: 1,
            placement: Some(("default.p".into(), generation)),
            reported,
            ..Entry::default()
        };
        ("default.p".into(), entry)
    }

    fn clusters(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn a_work_let_go_is_deleted_once_not_at_every_reconcile() {
        let deleting = |(name, entry): (String, Entry)| {
            (
                name,
                Entry {
                    deleting: true,
                    ..entry
                },
            )
        };
        let stamped: HashMap<String, (String, Entry)> = [
            ("kept".to_owned(), entry(1, Some(true))),
            ("retained".to_owned(), entry(1, Some(true))),
            ("let-go".to_owned(), entry(1, Some(true))),
            ("going".to_owned(), deleting(entry(1, Some(true)))),
        ]
        .into();
        let kept = "kept".to_owned();
        let chosen = [&kept].into_iter().collect();
        let retained = ["retained".to_owned()].into();
        assert_eq!(
            unwanted(&stamped, &chosen, &retained),
            vec![("let-go".to_owned(), "default.p".to_owned())]
        );
    }

    #[test]
    fn a_progressive_rollout_stamps_as_many_as_its_concurrency_allows() {
        let placement = placement_with(
            serde_json::json!({"type": "Progressive", "maxConcurrency": 2}),
            2,
        );
        let selected = clusters(&["a", "b", "c", "d"]);
        // `a` carries generation 2 and is still applying; the others have generation 1.
        let stamped: HashMap<String, (String, Entry)> = [
            ("a".to_owned(), entry(2, None)),
            ("b".to_owned(), entry(1, Some(true))),
            ("c".to_owned(), entry(1, Some(true))),
        ]
        .into();
        let plan = rollout_plan(
            &placement,
            &selected,
            &stamped,
            (&Renders::new(), None),
            &mut HashMap::new(),
            Instant::now(),
        );
        assert_eq!(plan.progress[0].1, Progress::Updating);
        assert_eq!(plan.to_stamp, clusters(&["b"]), "one slot is left");
        assert!(plan.halted.is_none() && plan.invalid.is_none());

        let all = placement_with(serde_json::json!({"type": "All"}), 2);
        let plan = rollout_plan(
            &all,
            &selected,
            &stamped,
            (&Renders::new(), None),
            &mut HashMap::new(),
            Instant::now(),
        );
        assert_eq!(plan.to_stamp, clusters(&["b", "c", "d"]));
    }

    #[test]
    fn failures_beyond_the_tolerance_halt_a_progressive_rollout() {
        let placement = placement_with(
            serde_json::json!({"type": "Progressive", "maxConcurrency": 1, "maxFailures": 0}),
            1,
        );
        let selected = clusters(&["a", "b"]);
        let stamped: HashMap<String, (String, Entry)> =
            [("a".to_owned(), entry(1, Some(false)))].into();
        let plan = rollout_plan(
            &placement,
            &selected,
            &stamped,
            (&Renders::new(), None),
            &mut HashMap::new(),
            Instant::now(),
        );
        assert!(matches!(
            plan.progress[0].1,
            Progress::Failed("ApplyFailed", _)
        ));
        assert_eq!(plan.halted, Some((1, 0)));
        assert!(plan.to_stamp.is_empty());
        let status = status_of(&placement, &plan, &stamped, None, &[], None);
        let progressing = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Progressing")
            .unwrap();
        assert_eq!(progressing.reason, "RolloutHalted");
        assert_eq!(status.failed_clusters.len(), 1);
        assert_eq!((status.selected, status.pending), (2, 1));
    }

    #[test]
    fn a_cluster_whose_overrides_fail_fails_alone_and_a_new_rendering_is_stamped() {
        let placement = placement_with(serde_json::json!({"type": "All"}), 1);
        let selected = clusters(&["a", "b", "c"]);
        let rendered = |digest: &str| {
            Ok((
                Rendered {
                    manifests: Vec::new(),
                    applied: vec![RuleId {
                        work_override: None,
                        index: 0,
                    }],
                },
                digest.to_owned(),
            ))
        };
        let renders: Renders = [
            ("a".to_owned(), rendered("d1")),
            (
                "b".to_owned(),
                Err(OverrideError::MissingProperty {
                    rule: RuleId {
                        work_override: Some("mirror".into()),
                        index: 0,
                    },
                    field: "image.registry".into(),
                    property: "region".into(),
                    cluster: "b".into(),
                }),
            ),
            ("c".to_owned(), rendered("d2")),
        ]
        .into();
        // `a` carries the rendering wanted; `c` one from other properties.
        let with_digest = |digest: &str| {
            let (key, mut entry) = entry(1, Some(true));
            entry.rendered = Some(digest.to_owned());
            (key, entry)
        };
        let stamped: HashMap<String, (String, Entry)> = [
            ("a".to_owned(), with_digest("d1")),
            ("b".to_owned(), with_digest("old")),
            ("c".to_owned(), with_digest("d1")),
        ]
        .into();
        let plan = rollout_plan(
            &placement,
            &selected,
            &stamped,
            (&renders, None),
            &mut HashMap::new(),
            Instant::now(),
        );
        assert_eq!(plan.to_stamp, clusters(&["c"]), "b is left as it is");
        assert_eq!(plan.progress[0].1, Progress::Succeeded);
        assert!(matches!(
            &plan.progress[1].1,
            Progress::Failed("OverridePropertyMissing", why) if why == "WorkOverride mirror spec.overrides[0].image.registry uses ${PROPERTY:region}, and cluster b has no property \"region\""
        ));
        let status = status_of(&placement, &plan, &stamped, None, &[], None);
        assert_eq!(status.failed_clusters[0].name, "b");
        assert_eq!(
            overridden(&renders)
                .iter()
                .map(|o| (o.name.as_str(), o.applied_overrides.clone()))
                .collect::<Vec<_>>(),
            [("a", vec![0]), ("c", vec![0])]
        );
        assert_eq!(unused(3, &renders), [1, 2]);
        assert_eq!(unused(3, &Renders::new()), Vec::<i32>::new());
    }

    #[test]
    fn an_invalid_strategy_stamps_nothing_and_says_which_field() {
        let placement = placement_with(
            serde_json::json!({"type": "Progressive", "progressDeadline": "soon"}),
            1,
        );
        let selected = clusters(&["a"]);
        let plan = rollout_plan(
            &placement,
            &selected,
            &HashMap::new(),
            (&Renders::new(), None),
            &mut HashMap::new(),
            Instant::now(),
        );
        assert!(plan.to_stamp.is_empty());
        let status = status_of(&placement, &plan, &HashMap::new(), None, &[], None);
        let progressing = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Progressing")
            .unwrap();
        assert_eq!(progressing.reason, "InvalidSpec");
        assert!(
            progressing
                .message
                .starts_with("spec.rolloutStrategy.progressDeadline: Invalid value: \"soon\""),
            "{}",
            progressing.message
        );
    }

    #[test]
    fn a_new_generation_restarts_a_clusters_timing() {
        let start = Instant::now();
        let later = start + Duration::from_secs(60);
        let mut timings = HashMap::new();
        current_timing(&mut timings, "a", 1, start).available_since = Some(start);
        let same = *current_timing(&mut timings, "a", 1, later);
        assert_eq!(
            (same.stamped, same.available_since),
            (start, Some(start)),
            "the same generation keeps its timing"
        );
        let next = *current_timing(&mut timings, "a", 2, later);
        assert_eq!(
            (next.generation, next.stamped, next.available_since),
            (2, later, None)
        );
    }

    #[test]
    fn a_rollout_wakes_when_a_soak_ends_or_a_deadline_passes() {
        let now = Instant::now();
        let timing = Timing {
            generation: 1,
            stamped: now - Duration::from_secs(10),
            available_since: Some(now - Duration::from_secs(20)),
        };
        let minute = Duration::from_secs(60);
        let half = Duration::from_secs(30);
        assert_eq!(
            wake_after(&Progress::Soaking, &timing, now, (minute, None)),
            Some(Duration::from_secs(40) + WAKE_MARGIN)
        );
        assert_eq!(
            wake_after(&Progress::Updating, &timing, now, (minute, Some(half))),
            Some(Duration::from_secs(20) + WAKE_MARGIN)
        );
        assert_eq!(
            wake_after(&Progress::Updating, &timing, now, (minute, None)),
            None
        );
        assert_eq!(
            wake_after(&Progress::Succeeded, &timing, now, (minute, Some(half))),
            None
        );
    }

    #[test]
    fn soaking_clusters_take_a_progressive_rollouts_slots_and_failures_halt_it() {
        let progress: Vec<(String, Progress)> = vec![
            ("a".into(), Progress::Soaking),
            ("b".into(), Progress::Outdated),
            ("c".into(), Progress::Outdated),
            ("d".into(), Progress::Failed("Degraded", "bad".into())),
        ];
        let tolerant = RolloutSettings {
            concurrency: 2,
            max_failures: 1,
            min_success: Duration::ZERO,
            deadline: None,
        };
        assert_eq!(
            next_to_stamp(&progress, true, &tolerant),
            (clusters(&["b"]), None)
        );
        assert_eq!(
            next_to_stamp(&progress, false, &tolerant),
            (clusters(&["b", "c"]), None)
        );
        let strict = RolloutSettings {
            max_failures: 0,
            ..tolerant
        };
        assert_eq!(
            next_to_stamp(&progress, true, &strict),
            (Vec::new(), Some((1, 0)))
        );
        assert_eq!(
            next_to_stamp(&progress, false, &strict),
            (clusters(&["b", "c"]), None),
            "an All rollout does not halt"
        );
    }

    #[test]
    fn a_problem_with_the_hub_resources_keeps_the_rollout_from_being_followed() {
        let placement = placement_with(serde_json::json!({"type": "All"}), 1);
        let problem = InvalidField {
            field: "spec.resourceSelectors[0].name".into(),
            value: "\"x\"".into(),
            why: "not found".into(),
        };
        assert_eq!(
            rollout_settings(&placement, Some(&problem), 3),
            Err(problem)
        );
        assert!(rollout_settings(&placement, None, 3).is_ok());
    }

    /// A fleet of `names`, each accepted with a credential and labelled `env: prod`.
    fn fleet_of(names: &[&str]) -> Arc<Fleet> {
        let fleet = Fleet::new(crate::fleet::Leases::default());
        for name in names {
            fleet.upsert_record(
                &crate::record::Record {
                    name: (*name).to_owned(),
                    accepted: true,
                    join_secret: None,
                    credential: Some(crate::digest::sha256(name.as_bytes())),
                    credential_expires: None,
                    previous: None,
                    cluster_id: format!("id-{name}"),
                    hosted_by: None,
                },
                1,
            );
            fleet.update(name, |m| {
                m.labels.insert("env".into(), "prod".into());
                (crate::fleet::Changes::default(), ())
            });
        }
        fleet
    }

    fn placement_of(spec: serde_json::Value) -> WorkPlacement {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "atoll.dev/v1alpha1", "kind": "WorkPlacement",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn names(candidates: &[Candidate]) -> Vec<&str> {
        candidates.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn named_clusters_are_looked_up_and_the_rest_of_the_fleet_is_scanned() {
        let fleet = fleet_of(&["a", "b", "c", "d"]);
        let now = Instant::now();
        let select = |spec| select(&placement_of(spec), &fleet, now).0;
        // PickFixed: the clusters it names that are members, and their labels for its affinity.
        let fixed = select(
            serde_json::json!({"policy": {"type": "PickFixed", "clusterNames": ["d", "b", "gone"]}}),
        );
        assert_eq!(names(&fixed), ["b", "d"]);
        assert_eq!(fixed[0].labels.get("env").map(String::as_str), Some("prod"));
        // The selector's names and PickFixed's: those in both.
        let both = select(serde_json::json!({
            "clusterSelector": {"clusterNames": ["a", "b"]},
            "policy": {"type": "PickFixed", "clusterNames": ["b", "c"]},
        }));
        assert_eq!(names(&both), ["b"]);
        // The selector's names alone, without a policy: no labels copied, none read.
        let listed = select(serde_json::json!({"clusterSelector": {"clusterNames": ["c", "a"]}}));
        assert_eq!(names(&listed), ["a", "c"]);
        assert!(listed[0].labels.is_empty());
        // An invalid PickFixed is no list of names: every member, so that the clusters chosen
        // before are kept.
        let invalid = select(serde_json::json!({"policy": {"type": "PickFixed"}}));
        assert_eq!(names(&invalid), ["a", "b", "c", "d"]);
        // A label selector with PickN: every member it matches.
        let picked = select(serde_json::json!({
            "clusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}},
            "policy": {"type": "PickN", "numberOfClusters": 1},
        }));
        assert_eq!(names(&picked), ["a", "b", "c", "d"]);
        let none = select(serde_json::json!({
            "clusterSelector": {"labelSelector": {"matchLabels": {"env": "dev"}}},
        }));
        assert!(none.is_empty());
    }
}
