//! Work distribution: the hub's index of every Work (one per cluster namespace), sent down each
//! agent's sync stream as it changes, diffed against what an agent has when it (re)connects, and
//! let go once the agent reports it cleaned up (or its cluster is gone).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use atoll_api::names::{CONDITION_APPLIED, FINALIZER_WORK_CLEANUP};
use atoll_api::work::{DeleteOption, Work};
use atoll_proto::v1::{SyncEvent, WorkDelete, WorkUpsert, WorkVersion, sync_event};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::watch;

use crate::conditions::{Verdict, merge};
use crate::fleet::Fleet;
use crate::sources;

pub use atoll_api::names::MANIFESTS_MAX_BYTES;
/// Annotation that lets a deleting Work go at once, whatever its cluster's state.
pub const ANNOTATION_FORCE_DELETE: &str = "atoll.dev/force-delete";
/// How long a deleting Work waits, by default, for a cluster that is Unknown before it goes anyway.
pub const LOST_CLUSTER_GRACE: Duration = Duration::from_secs(300);

/// A Work as the hub's Work watch reads it: its spec stays the JSON it arrived in. The hub reads
/// two things in it, and every status report brings the whole Work back through the watch:
/// decoding its manifests into trees, and serializing them again for the agent, was most of
/// what the watch cost.
///
/// The metadata is read without its `managedFields` and the status without its manifests'
/// conditions: the hub reads neither, and with a manager's entry for every condition of every
/// manifest they were most of what decoding a reported Work cost.
#[derive(Debug, Clone, Deserialize)]
pub struct WatchedWork {
    #[serde(deserialize_with = "metadata_without_managed_fields")]
    pub metadata: ObjectMeta,
    pub spec: Box<RawValue>,
    #[serde(default)]
    pub status: Option<WatchedStatus>,
}

/// What the hub reads of a Work's status: its summary conditions.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WatchedStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// `ObjectMeta` but `managedFields`, which serde skips unread as an unknown field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetadataView {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

fn metadata_without_managed_fields<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<ObjectMeta, D::Error> {
    let m = MetadataView::deserialize(deserializer)?;
    Ok(ObjectMeta {
        annotations: m.annotations,
        creation_timestamp: m.creation_timestamp,
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        deletion_timestamp: m.deletion_timestamp,
        finalizers: m.finalizers,
        generate_name: m.generate_name,
        generation: m.generation,
        labels: m.labels,
        managed_fields: None,
        name: m.name,
        namespace: m.namespace,
        owner_references: m.owner_references,
        resource_version: m.resource_version,
        self_link: m.self_link,
        uid: m.uid,
    })
}

impl kube::Resource for WatchedWork {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        <Work as kube::Resource>::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        <Work as kube::Resource>::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        <Work as kube::Resource>::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        <Work as kube::Resource>::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// What the hub reads in a Work's spec, borrowed from its JSON (the manifests are only measured).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SpecView<'a> {
    #[serde(default, borrow)]
    workload: Option<WorkloadView<'a>>,
    #[serde(default)]
    delete_option: Option<DeleteOption>,
}

#[derive(Deserialize)]
struct WorkloadView<'a> {
    #[serde(default, borrow)]
    manifests: Option<&'a RawValue>,
}

/// One Work as the hub sends it.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// The Work's UID.
    pub uid: String,
    /// Its generation (spec changes).
    pub generation: i64,
    /// Whether it is being deleted.
    pub deleting: bool,
    /// Its metadata as JSON, managedFields left out.
    pub metadata: Arc<str>,
    /// Its spec as stored. The index holds one for every Work on the hub, and the Works of a
    /// placement without per-cluster overrides (thousands of clusters) share one.
    pub spec: Arc<str>,
    /// When set, why it cannot be sent.
    pub refused: Option<String>,
    /// Whether it carries the force-delete annotation.
    pub force_delete: bool,
    /// The WorkPlacement that stamped it (`namespace/name`), and the placement generation it
    /// carries.
    pub placement: Option<(String, i64)>,
    /// For a Work its placement's overrides changed: the digest of its manifests as rendered
    /// for its cluster (a property's change renders them anew).
    pub rendered: Option<String>,
    /// What its cluster last reported.
    pub reported: Reported,
    /// `deleteOption.ttlSecondsAfterFinished`: how long after it is Complete the Work goes.
    pub ttl_after_finished: Option<Duration>,
    /// When its deletion was asked for.
    pub deletion_requested: Option<jiff::Timestamp>,
    /// Whether it lacks the cleanup finalizer (a Work someone other than a placement made) and
    /// is not being deleted: the lifecycle controller adds it.
    pub needs_finalizer: bool,
}

/// What a cluster's report says of its Work's generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// Not applied (`ApplyFailed`) or degraded (`Degraded`): the reason, and the report's message.
    Failed(&'static str, &'a str),
    /// Applied, available and done progressing.
    Ready,
}

/// A Work's summary conditions as its cluster reported them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reported {
    /// The Work generation the report describes.
    pub generation: Option<i64>,
    /// `Applied` (None: not reported).
    pub applied: Option<bool>,
    /// `Available`.
    pub available: Option<bool>,
    /// `Progressing`.
    pub progressing: Option<bool>,
    /// `Degraded`.
    pub degraded: Option<bool>,
    /// `Complete` (only Works with resources that run to an end report it).
    pub complete: Option<bool>,
    /// When `Complete` last changed, as the cluster reported it.
    pub complete_since: Option<jiff::Timestamp>,
    /// Why it is not applied, or, when it is, why it is degraded.
    pub message: String,
}

pub use atoll_api::names::LABEL_PLACEMENT;
/// Annotation on a stamped Work: the WorkPlacement generation it carries.
pub const ANNOTATION_PLACEMENT_GENERATION: &str = "atoll.dev/placement-generation";
/// Annotation on a Work stamped by a placement with overrides: the digest of its manifests as
/// rendered for its cluster.
pub const ANNOTATION_PLACEMENT_RENDERED: &str = "atoll.dev/placement-rendered";

fn reported(status: Option<&WatchedStatus>) -> Reported {
    let Some(status) = status else {
        return Reported::default();
    };
    let find = |t: &str| status.conditions.iter().find(|c| c.type_ == t);
    let applied = find(atoll_api::names::CONDITION_APPLIED);
    let degraded = find(atoll_api::names::CONDITION_DEGRADED);
    Reported {
        generation: applied.and_then(|c| c.observed_generation),
        applied: applied.map(|c| c.status == "True"),
        available: find(atoll_api::names::CONDITION_AVAILABLE).map(|c| c.status == "True"),
        progressing: find(atoll_api::names::CONDITION_PROGRESSING).map(|c| c.status == "True"),
        degraded: degraded.map(|c| c.status == "True"),
        complete: find(atoll_api::names::CONDITION_COMPLETE).map(|c| c.status == "True"),
        complete_since: find(atoll_api::names::CONDITION_COMPLETE)
            .map(|c| c.last_transition_time.0),
        message: applied
            .filter(|c| c.status != "True")
            .or(degraded.filter(|c| c.status == "True"))
            .map(|c| c.message.clone())
            .unwrap_or_default(),
    }
}

fn placement_of(metadata: &ObjectMeta) -> Option<(String, i64)> {
    let key = metadata.labels.as_ref()?.get(LABEL_PLACEMENT)?.clone();
    let generation = metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_PLACEMENT_GENERATION))
        .and_then(|g| g.parse().ok())
        .unwrap_or(0);
    Some((key, generation))
}

impl Entry {
    /// What its cluster reported of its generation, as a rollout reads it: `None` while the
    /// report is of another generation, or neither a failure nor done.
    pub fn outcome(&self) -> Option<Outcome<'_>> {
        let reported = &self.reported;
        if reported.generation != Some(self.generation) {
            return None;
        }
        if reported.applied == Some(false) {
            return Some(Outcome::Failed("ApplyFailed", &reported.message));
        }
        if reported.degraded == Some(true) {
            return Some(Outcome::Failed("Degraded", &reported.message));
        }
        (reported.applied == Some(true)
            && reported.available == Some(true)
            && reported.progressing != Some(true))
        .then_some(Outcome::Ready)
    }

    /// Whether its cluster has reported on its generation all that a rollout waits for: an
    /// [`outcome`](Self::outcome).
    pub fn settled(&self) -> bool {
        self.outcome().is_some()
    }

    /// The placement this Work keeps from being settled: its key, while the Work is stamped, not
    /// being deleted, and not [`settled`](Self::settled).
    fn unsettling(&self) -> Option<&String> {
        self.placement
            .as_ref()
            .filter(|_| !self.deleting && !self.settled())
            .map(|(key, _)| key)
    }

    /// The Work as its agent receives it: no status, no managedFields, the spec as stored.
    pub fn body(&self) -> Vec<u8> {
        let api_version = <Work as kube::Resource>::api_version(&());
        let kind = <Work as kube::Resource>::kind(&());
        format!(
            r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{},"spec":{}}}"#,
            self.metadata, self.spec
        )
        .into_bytes()
    }

    /// The event that brings an agent up to date with this Work.
    pub fn event(&self, name: &str) -> SyncEvent {
        let event = if self.deleting {
            sync_event::Event::WorkDelete(WorkDelete {
                name: name.to_owned(),
                uid: self.uid.clone(),
            })
        } else {
            sync_event::Event::WorkUpsert(WorkUpsert {
                name: name.to_owned(),
                uid: self.uid.clone(),
                generation: self.generation,
                work: self.body(),
            })
        };
        SyncEvent { event: Some(event) }
    }

    /// What the agent must hear once this Work is gone from the hub: its deletion, unless it
    /// was told already, when the Work started deleting (its cleanup is then what let it go, or
    /// the agent, away, learns of it from the diff when it connects again).
    pub fn gone(self, name: &str) -> Option<SyncEvent> {
        (!self.deleting).then(|| {
            Entry {
                deleting: true,
                ..self
            }
            .event(name)
        })
    }
}

/// Keys noted as changed, which one consumer takes in batches.
struct Changed<K> {
    keys: Mutex<HashSet<K>>,
    notify: tokio::sync::Notify,
}

impl<K> Default for Changed<K> {
    fn default() -> Self {
        Self {
            keys: Mutex::default(),
            notify: tokio::sync::Notify::new(),
        }
    }
}

impl<K: Eq + std::hash::Hash> Changed<K> {
    fn note(&self, key: K) {
        if crate::queue::lock(&self.keys).insert(key) {
            self.notify.notify_one();
        }
    }

    /// Waits until a key is noted, then takes every key noted.
    async fn take(&self) -> Vec<K> {
        loop {
            let taken: Vec<K> = crate::queue::lock(&self.keys).drain().collect();
            if !taken.is_empty() {
                return taken;
            }
            self.notify.notified().await;
        }
    }
}

/// Every Work on the hub, by cluster and name, and the WorkPlacements whose Works changed since
/// the placement controller last looked.
#[derive(Default)]
pub struct WorkIndex {
    inner: Mutex<Works>,
    /// Placements whose Works changed, by key.
    touched: Changed<String>,
    /// Works being deleted or carrying a time to live that changed, by cluster and name, for the
    /// lifecycle controller.
    lifecycle: Changed<(String, String)>,
    /// Whether the first list of Works is in, and who waits for it.
    loaded: std::sync::atomic::AtomicBool,
    loaded_notify: tokio::sync::Notify,
}

/// The Works the index holds: by cluster and name, and which of them each placement stamped
/// (a placement of one cluster on a fleet of thousands looks up its own instead of reading
/// every Work at each reconcile).
#[derive(Default)]
struct Works {
    by_cluster: HashMap<String, HashMap<String, Entry>>,
    /// By placement key: the (cluster, name) of each Work it stamped.
    by_placement: HashMap<String, HashSet<(String, String)>>,
    /// Every spec the Works hold, and how many hold it.
    specs: HashMap<Arc<str>, usize>,
    /// By placement key: how many of its Works are not [settled](Entry::settled).
    unsettled: HashMap<String, usize>,
    /// Placements whose last unsettled Work settled since the placement controller last asked.
    settled: HashSet<String>,
}

impl Works {
    /// `spec` as the index holds it: the copy the Works holding the same already share, or a
    /// new one.
    fn shared_spec(&self, spec: &str) -> Arc<str> {
        self.specs
            .get_key_value(spec)
            .map_or_else(|| Arc::from(spec), |(shared, _)| Arc::clone(shared))
    }

    /// Puts a Work in, in place of the one before under its name.
    fn insert(&mut self, cluster: &str, name: &str, entry: Entry) {
        let (placement, spec) = (entry.placement.clone(), Arc::clone(&entry.spec));
        let unsettling = entry.unsettling().cloned();
        let before = self
            .by_cluster
            .entry(cluster.to_owned())
            .or_default()
            .insert(name.to_owned(), entry);
        let was = before.as_ref().and_then(|b| b.unsettling().cloned());
        self.recount(was, unsettling);
        if let Some(before) = before {
            self.unlink(cluster, name, before.placement.as_ref(), Some(&before.spec));
        }
        self.link(cluster, name, placement.as_ref(), Some(&spec));
    }

    /// Moves a Work's count of unsettled from the placement it kept unsettled (`was`) to the one
    /// it keeps unsettled now; a placement whose count falls to none is noted as settled.
    fn recount(&mut self, was: Option<String>, now: Option<String>) {
        if was == now {
            return;
        }
        if let Some(key) = was
            && let Some(count) = self.unsettled.get_mut(&key)
        {
            *count -= 1;
            if *count == 0 {
                self.unsettled.remove(&key);
                self.settled.insert(key);
            }
        }
        if let Some(key) = now {
            *self.unsettled.entry(key).or_default() += 1;
        }
    }

    /// Takes a Work out.
    fn remove(&mut self, cluster: &str, name: &str) -> Option<Entry> {
        let works = self.by_cluster.get_mut(cluster)?;
        let removed = works.remove(name)?;
        if works.is_empty() {
            self.by_cluster.remove(cluster);
        }
        self.recount(removed.unsettling().cloned(), None);
        self.unlink(
            cluster,
            name,
            removed.placement.as_ref(),
            Some(&removed.spec),
        );
        Some(removed)
    }

    /// Notes that the Work `cluster`/`name` belongs to `placement` and holds `spec`.
    fn link(
        &mut self,
        cluster: &str,
        name: &str,
        placement: Option<&(String, i64)>,
        spec: Option<&Arc<str>>,
    ) {
        if let Some((key, _)) = placement {
            self.by_placement
                .entry(key.clone())
                .or_default()
                .insert((cluster.to_owned(), name.to_owned()));
        }
        if let Some(spec) = spec {
            *self.specs.entry(Arc::clone(spec)).or_default() += 1;
        }
    }

    /// Notes that the Work `cluster`/`name` no longer belongs to `placement` nor holds `spec`;
    /// a spec's last holder takes it out.
    fn unlink(
        &mut self,
        cluster: &str,
        name: &str,
        placement: Option<&(String, i64)>,
        spec: Option<&Arc<str>>,
    ) {
        if let Some((key, _)) = placement
            && let Some(works) = self.by_placement.get_mut(key)
        {
            works.remove(&(cluster.to_owned(), name.to_owned()));
            if works.is_empty() {
                self.by_placement.remove(key);
                self.settled.remove(key);
            }
        }
        if let Some(spec) = spec
            && let Some(holders) = self.specs.get_mut(&**spec)
        {
            *holders -= 1;
            if *holders == 0 {
                self.specs.remove(&**spec);
            }
        }
    }
}

impl WorkIndex {
    fn lock(&self) -> MutexGuard<'_, Works> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a Work; returns its entry when what an agent must know changed.
    pub fn upsert(&self, work: &WatchedWork) -> Option<(String, String, Entry)> {
        let cluster = work.metadata.namespace.clone()?;
        let name = work.metadata.name.clone()?;
        let uid = work.metadata.uid.clone().unwrap_or_default();
        let generation = work.metadata.generation.unwrap_or(0);
        let deleting = work.metadata.deletion_timestamp.is_some();
        let mut index = self.lock();
        if let Some(old) = index
            .by_cluster
            .get_mut(&cluster)
            .and_then(|works| works.get_mut(&name))
            && old.uid == uid
            && old.generation == generation
            && old.deleting == deleting
            && old.force_delete == force_delete(&work.metadata)
        {
            let was = old.unsettling().cloned();
            // A placement that changed but stamps the same manifests (a new rollout strategy
            // or policy) bumps only the Work's annotations: the placement must see that the Work
            // carries its generation, or it would stamp it again and wait forever.
            let placement = placement_of(&work.metadata);
            let moved = (old.placement != placement)
                .then(|| std::mem::replace(&mut old.placement, placement.clone()));
            if moved.is_some() {
                self.touch(old.placement.as_ref());
            }
            let now = reported(work.status.as_ref());
            let needs_finalizer = needs_finalizer(&work.metadata);
            if old.reported != now || old.needs_finalizer != needs_finalizer {
                if old.reported != now {
                    self.touch(old.placement.as_ref());
                }
                old.reported = now;
                old.needs_finalizer = needs_finalizer;
                self.touch_lifecycle(&cluster, &name, old);
            }
            let unsettling = old.unsettling().cloned();
            index.recount(was, unsettling);
            if let Some(before) = moved {
                index.unlink(&cluster, &name, before.as_ref(), None);
                index.link(&cluster, &name, placement.as_ref(), None);
            }
            return None;
        }
        let spec = index.shared_spec(work.spec.get());
        let entry = entry_of(work, uid, generation, deleting, spec);
        self.touch(entry.placement.as_ref());
        self.touch_lifecycle(&cluster, &name, &entry);
        index.insert(&cluster, &name, entry.clone());
        Some((cluster, name, entry))
    }

    /// Notes that the first list of Works is in.
    fn mark_loaded(&self) {
        self.loaded.store(true, std::sync::atomic::Ordering::SeqCst);
        self.loaded_notify.notify_waiters();
    }

    /// Waits until the first list of Works is in: before, the index would say a placement
    /// stamped nothing.
    pub async fn wait_loaded(&self) {
        loop {
            let notified = self.loaded_notify.notified();
            if self.loaded.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Notes that a Work of a placement changed.
    fn touch(&self, placement: Option<&(String, i64)>) {
        if let Some((key, _)) = placement {
            self.touched.note(key.clone());
        }
    }

    /// Notes that a Work the lifecycle controller looks after changed.
    fn touch_lifecycle(&self, cluster: &str, name: &str, entry: &Entry) {
        if entry.deleting
            || entry.ttl_after_finished.is_some()
            || entry.needs_finalizer
            || entry.refused.is_some()
        {
            self.lifecycle.note((cluster.to_owned(), name.to_owned()));
        }
    }

    /// Waits until a Work being deleted or carrying a time to live changed, then takes those that
    /// did (cluster, name).
    pub async fn next_lifecycle(&self) -> Vec<(String, String)> {
        self.lifecycle.take().await
    }

    /// Whether the placement `key` saw its last unsettled Work settle since it was last asked:
    /// its rollout may have just finished, or a step of it.
    pub fn take_settled(&self, key: &str) -> bool {
        self.lock().settled.remove(key)
    }

    /// Waits until a placement's Work changed, then takes the placements (by key) that did.
    pub async fn next_touched(&self) -> Vec<String> {
        self.touched.take().await
    }

    /// Forgets a Work that is gone from the hub.
    pub fn remove(&self, cluster: &str, name: &str) -> Option<Entry> {
        let removed = self.lock().remove(cluster, name)?;
        self.touch(removed.placement.as_ref());
        Some(removed)
    }

    /// Looks at every Work in turn, under the index's lock (keep `f` short).
    pub fn each(&self, mut f: impl FnMut(&Entry)) {
        for works in self.lock().by_cluster.values() {
            works.values().for_each(&mut f);
        }
    }

    /// One Work.
    pub fn get(&self, cluster: &str, name: &str) -> Option<Entry> {
        self.lock()
            .by_cluster
            .get(cluster)
            .and_then(|works| works.get(name))
            .cloned()
    }

    /// The Works of one cluster.
    pub fn of_cluster(&self, cluster: &str) -> Vec<(String, Entry)> {
        self.lock()
            .by_cluster
            .get(cluster)
            .map(|works| works.iter().map(|(n, e)| (n.clone(), e.clone())).collect())
            .unwrap_or_default()
    }

    /// The Works a WorkPlacement stamped (`key` is `namespace.name`), by cluster.
    pub fn stamped(&self, key: &str) -> HashMap<String, (String, Entry)> {
        let index = self.lock();
        let Some(stamped) = index.by_placement.get(key) else {
            return HashMap::new();
        };
        stamped
            .iter()
            .filter_map(|(cluster, name)| {
                let entry = index.by_cluster.get(cluster)?.get(name)?;
                Some((cluster.clone(), (name.clone(), entry.clone())))
            })
            .collect()
    }

    /// Every stamped Work: cluster, name and the placement key that stamped it.
    pub fn all_stamped(&self) -> Vec<(String, String, String)> {
        let index = self.lock();
        index
            .by_cluster
            .iter()
            .flat_map(|(cluster, works)| {
                works.iter().filter_map(|(name, e)| {
                    e.placement
                        .as_ref()
                        .filter(|_| !e.deleting)
                        .map(|(key, _)| (cluster.clone(), name.clone(), key.clone()))
                })
            })
            .collect()
    }
}

fn entry_of(
    work: &WatchedWork,
    uid: String,
    generation: i64,
    deleting: bool,
    spec: Arc<str>,
) -> Entry {
    let (view, unreadable) = match serde_json::from_str::<SpecView<'_>>(work.spec.get()) {
        Ok(view) => (view, None),
        Err(e) => (SpecView::default(), Some(e)),
    };
    let manifests_bytes = view
        .workload
        .as_ref()
        .and_then(|w| w.manifests)
        .map_or(0, |m| m.get().len());
    let refused = match unreadable {
        Some(e) => Some(format!("its spec cannot be read: {e}")),
        None => (manifests_bytes > MANIFESTS_MAX_BYTES).then(|| {
            format!(
                "the manifests take {manifests_bytes} bytes, more than the limit of {MANIFESTS_MAX_BYTES}; split them into several Works"
            )
        }),
    };
    Entry {
        uid,
        generation,
        deleting,
        // Cannot fail: the metadata is strings, numbers and maps of strings (its managedFields
        // were never read).
        metadata: Arc::from(serde_json::to_string(&work.metadata).unwrap_or_default()),
        spec,
        refused,
        force_delete: force_delete(&work.metadata),
        placement: placement_of(&work.metadata),
        rendered: work
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_PLACEMENT_RENDERED))
            .cloned(),
        reported: reported(work.status.as_ref()),
        ttl_after_finished: view
            .delete_option
            .as_ref()
            .and_then(|d| d.ttl_seconds_after_finished)
            .map(|s| Duration::from_secs(s.max(0) as u64)),
        deletion_requested: work.metadata.deletion_timestamp.as_ref().map(|t| t.0),
        needs_finalizer: needs_finalizer(&work.metadata),
    }
}

fn needs_finalizer(metadata: &ObjectMeta) -> bool {
    metadata.deletion_timestamp.is_none()
        && !metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|f| f == FINALIZER_WORK_CLEANUP))
}

fn force_delete(metadata: &ObjectMeta) -> bool {
    metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.get(ANNOTATION_FORCE_DELETE).is_some_and(|v| v == "true"))
}

/// What an agent that has `known` must receive to match the hub: changed and new Works, and
/// deletions of those the hub no longer holds or is deleting. Linear in both lists.
pub fn diff(known: &[WorkVersion], hub: &[(String, Entry)], full: bool) -> Vec<SyncEvent> {
    let agent: HashMap<&str, &WorkVersion> = known.iter().map(|k| (k.name.as_str(), k)).collect();
    let held: HashMap<&str, &Entry> = hub.iter().map(|(n, e)| (n.as_str(), e)).collect();
    let mut events = Vec::new();
    for (name, entry) in hub {
        if entry.refused.is_some() {
            continue;
        }
        let current = agent
            .get(name.as_str())
            .is_some_and(|k| k.uid == entry.uid && k.generation == entry.generation);
        if full || entry.deleting || !current {
            events.push(entry.event(name));
        }
    }
    for k in known {
        if held.get(k.name.as_str()).is_none_or(|e| e.uid != k.uid) {
            events.push(SyncEvent {
                event: Some(sync_event::Event::WorkDelete(WorkDelete {
                    name: k.name.clone(),
                    uid: k.uid.clone(),
                })),
            });
        }
    }
    events
}

/// Watches every Work: keeps the index, and sends changes to the agent of the Work's cluster
/// (the lifecycle controller adds the cleanup finalizer and says why a Work is refused).
pub async fn watch_works(
    index: Arc<WorkIndex>,
    fleet: Arc<Fleet>,
    client: kube::Client,
    shutdown: watch::Receiver<bool>,
) {
    let api: Api<WatchedWork> = Api::all(client.clone());
    sources::run(
        watcher::watcher(api, watcher::Config::default()),
        shutdown,
        "Works",
        |event| match event {
            Event::Apply(mut work) | Event::InitApply(mut work) => {
                // Not sent, and not read: dropped before the index copies the metadata.
                work.metadata.managed_fields = None;
                if let Some((cluster, name, entry)) = index.upsert(&work)
                    && entry.refused.is_none()
                {
                    fleet.send(&cluster, entry.event(&name));
                }
            }
            Event::Delete(work) => {
                let (Some(cluster), Some(name)) =
                    (work.metadata.namespace.clone(), work.metadata.name.clone())
                else {
                    return;
                };
                if let Some(event) = index.remove(&cluster, &name).and_then(|e| e.gone(&name)) {
                    fleet.send(&cluster, event);
                }
            }
            Event::InitDone => index.mark_loaded(),
            Event::Init => {}
        },
    )
    .await;
}

/// Adds the cleanup finalizer to a Work that lacks it, at the version read (a conflict is an
/// error: the queue tries again after its backoff). Reads and writes the Work's metadata only:
/// its manifests are neither sent nor decoded.
pub(crate) async fn add_finalizer(
    client: kube::Client,
    cluster: &str,
    name: &str,
) -> kube::Result<()> {
    let api: Api<Work> = Api::namespaced(client, cluster);
    let Some(work) = api.get_metadata_opt(name).await? else {
        return Ok(());
    };
    if !needs_finalizer(&work.metadata) {
        return Ok(());
    }
    let mut finalizers = work.metadata.finalizers.clone().unwrap_or_default();
    finalizers.push(FINALIZER_WORK_CLEANUP.to_owned());
    let patch = serde_json::json!({"metadata": {"finalizers": finalizers, "resourceVersion": work.metadata.resource_version}});
    api.patch_metadata(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Says in a Work's status why it is not sent to its cluster (the same status again is no write).
pub(crate) async fn refuse(
    client: kube::Client,
    cluster: &str,
    name: &str,
    why: &str,
) -> kube::Result<()> {
    let api: Api<Work> = Api::namespaced(client, cluster);
    let verdict = Verdict::new(CONDITION_APPLIED, "False", "WorkTooLarge", why);
    let conditions = merge(&[], vec![verdict], None, jiff::Timestamp::now());
    let status = serde_json::json!({"status": {"conditions": conditions}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// Writes a Work's status as its agent reported it, passing the agent's JSON through as it came
/// (it is checked to be one JSON object, not decoded into a tree) and not decoding the answer:
/// this is the hub's most frequent write.
pub async fn write_status(
    client: &kube::Client,
    cluster: &str,
    name: &str,
    status: &[u8],
) -> Result<(), WriteStatusError> {
    #[derive(serde::Serialize)]
    struct StatusPatch<'a> {
        status: &'a serde_json::value::RawValue,
    }
    let raw: &serde_json::value::RawValue =
        serde_json::from_slice(status).map_err(|e| WriteStatusError::NotJson(e.to_string()))?;
    if !raw.get().starts_with('{') {
        return Err(WriteStatusError::NotJson(
            "a status is a JSON object".to_owned(),
        ));
    }
    let request = kube::core::Request::new(<Work as kube::Resource>::url_path(&(), Some(cluster)))
        .patch_subresource(
            "status",
            name,
            &PatchParams::default(),
            &Patch::Merge(StatusPatch { status: raw }),
        )
        .map_err(|e| WriteStatusError::Api(kube::Error::BuildRequest(e)))?;
    send_write(client, request)
        .await
        .map_err(WriteStatusError::Api)
}

/// Sends a write whose answer the hub does not need (the watch brings the object to the index):
/// it asks for the object's metadata only, as `kubectl` and kube-rs metadata clients do, so that
/// the API server neither serializes nor sends the whole object back, and skips even that.
pub(crate) async fn send_write(
    client: &kube::Client,
    mut request: http::Request<Vec<u8>>,
) -> kube::Result<()> {
    request.headers_mut().insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        ),
    );
    client.request::<serde::de::IgnoredAny>(request).await?;
    Ok(())
}

/// Why a reported status was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteStatusError {
    /// The report is not a JSON object.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// The hub's API refused or failed.
    #[error(transparent)]
    Api(kube::Error),
}

/// Removes the cleanup finalizer: the Work goes. Reads and writes the Work's metadata only (a
/// placement that lets thousands of clusters go releases thousands of Works).
pub async fn release(client: kube::Client, cluster: &str, name: &str) -> kube::Result<()> {
    let api: Api<Work> = Api::namespaced(client, cluster);
    let mut attempt = 0;
    loop {
        let Some(work) = api.get_metadata_opt(name).await? else {
            return Ok(());
        };
        let finalizers: Vec<String> = work
            .metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f != FINALIZER_WORK_CLEANUP)
            .collect();
        let patch = serde_json::json!({"metadata": {"finalizers": finalizers, "resourceVersion": work.metadata.resource_version}});
        match api
            .patch_metadata(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(()),
            // Someone wrote the Work meanwhile (its status, say): read it again.
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 5 => attempt += 1,
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

pub mod lifecycle;

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(uid: &str, generation: i64, deleting: bool) -> Entry {
        Entry {
            uid: uid.to_owned(),
            generation,
            deleting,
            metadata: Arc::from("{}"),
            spec: Arc::from("{}"),
            ..Entry::default()
        }
    }

    fn version(name: &str, uid: &str, generation: i64) -> WorkVersion {
        WorkVersion {
            name: name.to_owned(),
            uid: uid.to_owned(),
            generation,
        }
    }

    /// Each event as `upsert name` or `delete name uid`.
    fn described(events: &[SyncEvent]) -> Vec<String> {
        let mut out: Vec<String> = events
            .iter()
            .map(|e| match &e.event {
                Some(sync_event::Event::WorkUpsert(u)) => format!("upsert {}", u.name),
                Some(sync_event::Event::WorkDelete(d)) => format!("delete {} {}", d.name, d.uid),
                other => format!("{other:?}"),
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_work_gone_from_the_hub_is_deleted_at_its_agent_once() {
        // Deleted outright (no cleanup finalizer held it): the agent hears of it now.
        let events: Vec<SyncEvent> = entry("u1", 3, false).gone("web").into_iter().collect();
        assert_eq!(described(&events), ["delete web u1"]);
        // Deleting first: the agent was told then, and its report of the cleanup is what let
        // the Work go; a second delete would only make it clean up and report again.
        assert_eq!(entry("u1", 3, true).gone("web"), None);
    }

    #[test]
    fn the_agent_receives_the_work_as_stored_without_its_status_or_managed_fields() {
        let stored = serde_json::json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "web", "namespace": "east", "uid": "u1", "generation": 2,
                "labels": {"team": "a"},
                "managedFields": [{"manager": "atoll-hub", "operation": "Apply",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {
                "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a", "namespace": "web"}, "data": {"k": "v"}}]},
                "deleteOption": {"propagationPolicy": "Orphan", "ttlSecondsAfterFinished": 30},
                "manifestConfigs": [{"resourceIdentifier": {"group": "", "resource": "configmaps",
                    "name": "a", "namespace": "web"},
                    "updateStrategy": {"type": "ServerSideApply",
                        "serverSideApply": {"force": true}}}]},
            "status": {"conditions": [{"type": "Applied", "status": "True", "reason": "Applied",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "manifestConditions": [{"identifier": {"group": "", "version": "v1",
                    "kind": "ConfigMap", "resource": "configmaps", "name": "a",
                    "namespace": "web", "ordinal": 0},
                    "conditions": [{"type": "Applied", "status": "True", "reason": "Applied",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}});
        let watched: WatchedWork = serde_json::from_value(stored.clone()).unwrap();
        let (_, _, entry) = WorkIndex::default().upsert(&watched).unwrap();

        let mut expected = stored;
        let object = expected.as_object_mut().unwrap();
        object.remove("status");
        object["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let sent: serde_json::Value = serde_json::from_slice(&entry.body()).unwrap();
        assert_eq!(sent, expected);
        // What the agent decodes it into.
        let work: Work = serde_json::from_slice(&entry.body()).unwrap();
        assert_eq!(work.spec.workload.manifests.len(), 1);
        assert_eq!(entry.ttl_after_finished, Some(Duration::from_secs(30)));
        assert_eq!(entry.refused, None);
        assert_eq!(entry.reported.applied, Some(true));
    }

    #[test]
    fn the_watch_reads_every_metadata_field_but_the_managed_fields() {
        let metadata = serde_json::json!({
            "annotations": {"a": "1"}, "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 0, "deletionTimestamp": "2026-01-02T00:00:00Z",
            "finalizers": [FINALIZER_WORK_CLEANUP], "generateName": "web-", "generation": 3,
            "labels": {"team": "a"}, "name": "web", "namespace": "east",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": "u0"}],
            "resourceVersion": "42", "selfLink": "/apis/x", "uid": "u1"});
        let mut with_managed_fields = metadata.clone();
        with_managed_fields["managedFields"] = serde_json::json!([{"manager": "atoll-hub",
            "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]);
        let watched: WatchedWork = serde_json::from_value(serde_json::json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
            "metadata": with_managed_fields, "spec": {}}))
        .unwrap();
        let expected: ObjectMeta = serde_json::from_value(metadata).unwrap();
        assert_eq!(watched.metadata, expected);
        // A metadata field that is not a map is an error, not an empty metadata.
        assert!(
            serde_json::from_value::<WatchedWork>(serde_json::json!({
                "metadata": {"labels": ["a"]}, "spec": {}}))
            .is_err()
        );
    }

    #[test]
    fn a_work_with_manifests_over_the_limit_or_a_spec_that_cannot_be_read_is_refused() {
        let work = |spec: serde_json::Value| -> WatchedWork {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "web", "namespace": "east", "uid": "u1", "generation": 1},
                "spec": spec}))
            .unwrap()
        };
        let index = WorkIndex::default();
        let large = "x".repeat(MANIFESTS_MAX_BYTES);
        let (_, _, entry) = index
            .upsert(&work(serde_json::json!({"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                 "data": {"k": large}}]}})))
            .unwrap();
        let refused = entry.refused.unwrap();
        assert!(
            refused.contains("more than the limit of") && refused.contains("split them"),
            "{refused}"
        );

        let index = WorkIndex::default();
        let (_, _, entry) = index
            .upsert(&work(serde_json::json!({"workload": {"manifests": []},
                "deleteOption": {"ttlSecondsAfterFinished": "soon"}})))
            .unwrap();
        let refused = entry.refused.unwrap();
        assert!(
            refused.starts_with("its spec cannot be read:") && refused.contains("invalid type"),
            "{refused}"
        );
        assert_eq!(entry.ttl_after_finished, None);
    }

    #[tokio::test]
    async fn a_work_without_the_cleanup_finalizer_goes_to_the_lifecycle_controller_once() {
        let index = WorkIndex::default();
        let mut work: WatchedWork = serde_json::from_value(serde_json::json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "web", "namespace": "east", "uid": "u1", "generation": 1},
            "spec": {"workload": {"manifests": []}}}))
        .unwrap();
        let (_, _, entry) = index.upsert(&work).unwrap();
        assert!(entry.needs_finalizer);
        assert_eq!(
            index.next_lifecycle().await,
            [("east".to_owned(), "web".to_owned())]
        );
        // The finalizer added: the same Work for its agent (nothing to send), no longer needing it.
        work.metadata.finalizers = Some(vec![FINALIZER_WORK_CLEANUP.to_owned()]);
        assert!(index.upsert(&work).is_none());
        assert!(!index.get("east", "web").unwrap().needs_finalizer);
        // A placement's Work carries it from the start.
        let stamped = WatchedWork {
            metadata: kube::api::ObjectMeta {
                name: Some("stamped".into()),
                ..work.metadata.clone()
            },
            ..work.clone()
        };
        assert!(!index.upsert(&stamped).unwrap().2.needs_finalizer);
    }

    #[tokio::test]
    async fn a_placement_generation_stamped_on_the_same_manifests_reaches_the_index() {
        let index = WorkIndex::default();
        let stamped = |generation: &str| -> WatchedWork {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "default.p", "namespace": "east", "uid": "u1", "generation": 1,
                    "labels": {LABEL_PLACEMENT: "default.p"},
                    "annotations": {ANNOTATION_PLACEMENT_GENERATION: generation},
                    "finalizers": [FINALIZER_WORK_CLEANUP]},
                "spec": {"workload": {"manifests": []}}}))
            .unwrap()
        };
        assert!(index.upsert(&stamped("1")).is_some());
        assert_eq!(index.next_touched().await, ["default.p"]);
        // Only the annotation changed: nothing for the agent, but the placement sees it.
        assert!(index.upsert(&stamped("2")).is_none());
        assert_eq!(
            index.get("east", "default.p").unwrap().placement,
            Some(("default.p".to_owned(), 2))
        );
        assert_eq!(index.next_touched().await, ["default.p"]);
    }

    /// A Work of placement `default.p` on `cluster`, at `generation`, with the conditions its
    /// cluster reported on `observed` (none: not reported yet).
    fn reported_work(
        cluster: &str,
        generation: i64,
        observed: i64,
        conditions: &[(&str, &str)],
    ) -> WatchedWork {
        let conditions: Vec<serde_json::Value> = conditions
            .iter()
            .map(|(t, s)| {
                serde_json::json!({"type": t, "status": s, "reason": "Reported", "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": observed})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "default.p", "namespace": cluster, "uid": format!("uid-{cluster}"),
                "generation": generation, "labels": {LABEL_PLACEMENT: "default.p"},
                "annotations": {ANNOTATION_PLACEMENT_GENERATION: generation.to_string()},
                "finalizers": [FINALIZER_WORK_CLEANUP]},
            "spec": {"workload": {"manifests": [{"generation": generation}]}},
            "status": {"conditions": conditions}}))
        .unwrap()
    }

    #[test]
    fn a_placement_is_told_when_the_report_that_settles_its_last_work_comes() {
        const DONE: &[(&str, &str)] = &[
            ("Applied", "True"),
            ("Available", "True"),
            ("Progressing", "False"),
        ];
        let index = WorkIndex::default();
        for cluster in ["east", "west", "north"] {
            index.upsert(&reported_work(cluster, 1, 0, &[]));
        }
        assert!(!index.take_settled("default.p"), "nothing reported yet");
        index.upsert(&reported_work("east", 1, 1, DONE));
        // Applied but still progressing, or a report on the generation before, settle nothing.
        index.upsert(&reported_work(
            "west",
            1,
            1,
            &[
                ("Applied", "True"),
                ("Available", "True"),
                ("Progressing", "True"),
            ],
        ));
        index.upsert(&reported_work("north", 1, 0, DONE));
        assert!(
            !index.take_settled("default.p"),
            "two Works are not settled"
        );
        index.upsert(&reported_work("west", 1, 1, DONE));
        assert!(
            !index.take_settled("default.p"),
            "north reported generation 0"
        );
        index.upsert(&reported_work("north", 1, 1, DONE));
        assert!(index.take_settled("default.p"), "the last Work settled");
        assert!(!index.take_settled("default.p"), "told once");
        assert!(!index.take_settled("default.other"));

        // The next generation unsettles every Work again; a failure settles one as a success does.
        for cluster in ["east", "west", "north"] {
            index.upsert(&reported_work(cluster, 2, 1, DONE));
        }
        index.upsert(&reported_work("east", 2, 2, DONE));
        index.upsert(&reported_work("west", 2, 2, &[("Applied", "False")]));
        assert!(!index.take_settled("default.p"));
        index.upsert(&reported_work(
            "north",
            2,
            2,
            &[("Applied", "True"), ("Degraded", "True")],
        ));
        assert!(index.take_settled("default.p"));

        // A Work let go before it settled leaves the others settled: that tells too.
        index.upsert(&reported_work("east", 3, 2, DONE));
        assert!(!index.take_settled("default.p"));
        index.remove("east", "default.p");
        assert!(
            index.take_settled("default.p"),
            "the unsettled Work is gone"
        );
        // A placement whose Works are all gone is not told.
        index.upsert(&reported_work("west", 3, 2, DONE));
        index.remove("north", "default.p");
        index.remove("west", "default.p");
        assert!(!index.take_settled("default.p"), "its Works are gone");
        assert!(index.lock().unsettled.is_empty());
        assert!(index.lock().settled.is_empty());
    }

    #[test]
    fn a_placements_works_are_found_as_they_come_move_and_go() {
        let index = WorkIndex::default();
        let work = |cluster: &str, uid: &str, generation: i64, placement: Option<&str>| {
            let labels: std::collections::BTreeMap<String, String> = placement
                .map(|p| (LABEL_PLACEMENT.to_owned(), p.to_owned()))
                .into_iter()
                .collect();
            serde_json::from_value::<WatchedWork>(serde_json::json!({
                "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "w", "namespace": cluster, "uid": uid,
                    "generation": generation, "labels": labels},
                "spec": {"workload": {"manifests": []}}}))
            .unwrap()
        };
        let clusters = |key: &str| -> Vec<String> {
            let mut clusters: Vec<String> = index.stamped(key).into_keys().collect();
            clusters.sort();
            clusters
        };
        index.upsert(&work("east", "u1", 1, Some("default.p")));
        index.upsert(&work("west", "u2", 1, Some("default.p")));
        index.upsert(&work("north", "u3", 1, None));
        assert_eq!(clusters("default.p"), ["east", "west"]);
        // Relabelled at the same generation, then replaced by a new generation of another.
        index.upsert(&work("east", "u1", 1, Some("default.q")));
        index.upsert(&work("west", "u2", 2, Some("default.q")));
        assert!(clusters("default.p").is_empty());
        assert_eq!(clusters("default.q"), ["east", "west"]);
        assert_eq!(index.stamped("default.q")["west"].1.generation, 2);
        // Recreated without the label, and deleted.
        index.upsert(&work("east", "u4", 1, None));
        index.remove("west", "w");
        assert!(clusters("default.q").is_empty());
        assert!(index.lock().by_placement.is_empty());
        assert_eq!(index.of_cluster("east")[0].1.uid, "u4");
    }

    #[test]
    fn works_of_the_same_spec_share_it_until_the_last_one_goes() {
        let index = WorkIndex::default();
        let work = |cluster: &str, uid: &str, generation: i64, data: &str| {
            serde_json::from_value::<WatchedWork>(serde_json::json!({
                "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "w", "namespace": cluster, "uid": uid,
                    "generation": generation},
                "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c", "namespace": "n"}, "data": {"k": data}}]}}}))
            .unwrap()
        };
        let specs = || index.lock().specs.clone();
        let (_, _, east) = index.upsert(&work("east", "u1", 1, "v1")).unwrap();
        let (_, _, west) = index.upsert(&work("west", "u2", 1, "v1")).unwrap();
        assert!(Arc::ptr_eq(&east.spec, &west.spec));
        assert_eq!(specs().into_values().collect::<Vec<_>>(), [2]);
        // Each agent still receives its own Work, whole.
        let body: serde_json::Value = serde_json::from_slice(&west.body()).unwrap();
        assert_eq!(body["metadata"]["namespace"], "west");
        assert_eq!(body["spec"]["workload"]["manifests"][0]["data"]["k"], "v1");
        // A new spec for one: two specs, one holder each; both gone: none.
        index.upsert(&work("east", "u1", 2, "v2")).unwrap();
        let mut holders: Vec<usize> = specs().into_values().collect();
        holders.sort();
        assert_eq!(holders, [1, 1]);
        index.remove("east", "w");
        index.remove("west", "w");
        assert!(specs().is_empty());
    }

    #[test]
    fn the_diff_sends_what_the_agent_lacks_and_deletes_what_the_hub_let_go() {
        let hub = vec![
            ("same".to_owned(), entry("u1", 1, false)),
            ("changed".to_owned(), entry("u2", 2, false)),
            ("new".to_owned(), entry("u3", 1, false)),
            ("going".to_owned(), entry("u4", 1, true)),
            ("recreated".to_owned(), entry("u6", 1, false)),
            (
                "too-big".to_owned(),
                Entry {
                    refused: Some("too big".to_owned()),
                    ..entry("u7", 1, false)
                },
            ),
        ];
        let known = vec![
            version("same", "u1", 1),
            version("changed", "u2", 1),
            version("going", "u4", 1),
            version("gone", "u5", 3),
            version("recreated", "u0", 1),
        ];
        assert_eq!(
            described(&diff(&known, &hub, false)),
            [
                "delete going u4",
                "delete gone u5",
                "delete recreated u0",
                "upsert changed",
                "upsert new",
                "upsert recreated",
            ]
        );
        // A full sync sends every Work the hub can send, current or not.
        assert_eq!(
            described(&diff(&known, &hub, true)),
            [
                "delete going u4",
                "delete gone u5",
                "delete recreated u0",
                "upsert changed",
                "upsert new",
                "upsert recreated",
                "upsert same",
            ]
        );
    }

    #[test]
    fn the_diff_of_an_agent_with_many_works() {
        // 50,000 Works on each side, all current: nothing to send but on a full sync.
        let hub: Vec<(String, Entry)> = (0..50_000)
            .map(|i| (format!("w-{i}"), entry(&format!("u-{i}"), 1, false)))
            .collect();
        let known: Vec<WorkVersion> = (0..50_000)
            .map(|i| version(&format!("w-{i}"), &format!("u-{i}"), 1))
            .collect();
        assert!(diff(&known, &hub, false).is_empty());
        assert_eq!(diff(&known, &hub, true).len(), 50_000);
    }
}
