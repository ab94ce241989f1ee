//! Resources stored on the hub that placements send (`spec.resourceSelectors`): which kinds
//! the hub serves (discovery), one watch per kind and namespace that some placement selects,
//! and the manifests a placement's selectors pick, stripped of what the hub generated.
//!
//! The watches start when a placement first selects their kind and namespace and then keep
//! their objects in memory; each change wakes the placements that select it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use atoll_api::names::MANIFESTS_MAX_BYTES;
use atoll_api::placement::resources::{RESERVED_NAMESPACES, skipped};
use atoll_api::placement::{InvalidField, ResourceSelector, SelectedResource, WorkPlacement};
use atoll_api::work::Manifest;
use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::discovery::{ApiCapabilities, Discovery, Scope, verbs};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::{labels_of, matches};

/// How long a discovery of the served kinds stands before a selector naming a kind it lacks
/// runs it again.
const REDISCOVER_AFTER: Duration = Duration::from_secs(5);

/// The most hub objects one placement sends.
pub const OBJECTS_MAX: usize = 1000;

/// One watch: a kind, in one namespace or cluster-wide.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatchKey {
    /// `group/version` (`v1` for the core group).
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// The namespace of a namespaced kind.
    pub namespace: Option<String>,
}

/// A kind the hub serves.
#[derive(Debug, Clone)]
struct Served {
    resource: ApiResource,
    namespaced: bool,
    watchable: bool,
}

/// The kinds the hub serves, by `(apiVersion, kind)`, and by `(group/*, kind)` for the group's
/// preferred version.
type ServedKinds = Arc<HashMap<(String, String), Served>>;

/// Why a placement's hub resources cannot be gathered now.
#[derive(Debug)]
pub enum Unavailable {
    /// A selector is wrong (an unknown kind, too many objects): the placement holds.
    Invalid(InvalidField),
    /// Some watches have not listed their objects yet: try again when they have.
    Loading,
}

/// What a placement's selectors pick.
#[derive(Debug, Default, PartialEq)]
pub struct Gathered {
    /// The manifests, ordered by group, kind, namespace and name.
    pub manifests: Vec<Manifest>,
    /// What they are.
    pub selected: Vec<SelectedResource>,
}

/// The hub resources placements select.
pub struct HubResources {
    client: kube::Client,
    /// Namespaces never sent (the hub's own).
    reserved: Vec<String>,
    discovery: tokio::sync::Mutex<Option<(Instant, ServedKinds)>>,
    state: Arc<Mutex<State>>,
    changed: mpsc::UnboundedSender<WatchKey>,
    shutdown: watch::Receiver<bool>,
}

/// The most watches (a kind in a namespace, or a cluster-scoped kind) the hub keeps for all
/// placements together.
pub const WATCHES_MAX: usize = 512;

#[derive(Default)]
struct State {
    watches: HashMap<WatchKey, Watch>,
    /// Which placements (by key) select each watch.
    wanted: HashMap<WatchKey, HashSet<String>>,
}

/// One running watch and the objects it has listed (`None` until it has).
struct Watch {
    objects: Option<BTreeMap<(String, String), Value>>,
    task: tokio::task::AbortHandle,
}

/// What a selector keeps of the objects of its watch.
#[derive(Clone, Copy)]
enum Filter<'a> {
    /// Its name or labels.
    Selector(&'a ResourceSelector),
    /// Everything in a selected namespace but what Kubernetes or a controller made.
    NamespaceContents,
}

/// The watch one selector needs.
struct Want<'a> {
    selector: &'a ResourceSelector,
    key: WatchKey,
    resource: ApiResource,
}

impl HubResources {
    /// A new set of watches; the receiver yields the watches that changed.
    pub fn new(
        client: kube::Client,
        reserved: Vec<String>,
        shutdown: watch::Receiver<bool>,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<WatchKey>) {
        let (changed, receiver) = mpsc::unbounded_channel();
        let resources = Arc::new(Self {
            client,
            reserved,
            discovery: tokio::sync::Mutex::default(),
            state: Arc::default(),
            changed,
            shutdown,
        });
        (resources, receiver)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The placements that select a watch.
    pub fn placements_of(&self, key: &WatchKey) -> Vec<String> {
        self.state()
            .wanted
            .get(key)
            .map(|p| p.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// A placement is gone: the watches only it selected stop.
    pub fn forget(&self, placement: &str) {
        self.unwant(placement, &BTreeMap::new());
    }

    /// The kinds the hub serves; discovered again when `refresh` and the last discovery is
    /// older than [`REDISCOVER_AFTER`].
    async fn served(&self, refresh: bool) -> kube::Result<ServedKinds> {
        let mut cached = self.discovery.lock().await;
        if let Some((at, served)) = cached.as_ref()
            && (!refresh || at.elapsed() < REDISCOVER_AFTER)
        {
            return Ok(served.clone());
        }
        let discovery = Discovery::new(self.client.clone()).run().await?;
        let mut served = HashMap::new();
        for group in discovery.groups() {
            for version in group.versions() {
                for (resource, caps) in group.versioned_resources(version) {
                    served.insert(
                        (resource.api_version.clone(), resource.kind.clone()),
                        served_kind(resource, &caps),
                    );
                }
            }
            // `(group/*, kind)`: the group's preferred version, for the kinds a selected
            // namespace holds.
            for (resource, caps) in group.recommended_resources() {
                served.insert(
                    (format!("{}/*", resource.group), resource.kind.clone()),
                    served_kind(resource, &caps),
                );
            }
        }
        let served = Arc::new(served);
        *cached = Some((Instant::now(), served.clone()));
        Ok(served)
    }

    /// The manifests a placement's selectors pick, starting the watches it needs and stopping
    /// those it no longer needs; records which watches the placement depends on, so that their
    /// changes wake it.
    pub async fn gather(&self, placement: &WorkPlacement) -> Result<Gathered, Unavailable> {
        let key = super::key(placement);
        let own_namespace = placement.metadata.namespace.clone().unwrap_or_default();
        let selectors = &placement.spec.resource_selectors;
        let mut served = self.served(false).await.map_err(discovery_failed)?;
        if selectors
            .iter()
            .any(|s| !served.contains_key(&(api_version(s), s.kind.clone())))
        {
            served = self.served(true).await.map_err(discovery_failed)?;
        }
        let wants = resolve(selectors, &own_namespace, &served).map_err(Unavailable::Invalid)?;
        let mut keys: BTreeMap<WatchKey, ApiResource> = wants
            .iter()
            .map(|w| (w.key.clone(), w.resource.clone()))
            .collect();
        self.want(&key, &keys)?;
        let mut picked = Vec::new();
        for want in &wants {
            picked.extend(self.pick(&want.key, Filter::Selector(want.selector))?);
        }
        // A selected namespace brings what is in it; the hub's own are neither sent nor opened.
        picked.retain(|(k, o)| namespace_name(k, o).is_none_or(|n| !self.reserved(n)));
        let namespaces: Vec<String> = picked
            .iter()
            .filter_map(|(k, o)| namespace_name(k, o).map(str::to_owned))
            .collect();
        let contents = contents_of(&namespaces, &served);
        keys.extend(contents.clone());
        self.want(&key, &keys)?;
        for watch in contents.keys() {
            picked.extend(self.pick(watch, Filter::NamespaceContents)?);
        }
        self.unwant(&key, &keys);
        assemble(picked)
    }

    /// The objects of one watch a filter keeps.
    fn pick(
        &self,
        watch: &WatchKey,
        filter: Filter<'_>,
    ) -> Result<Vec<(WatchKey, Value)>, Unavailable> {
        let state = self.state();
        let Some(objects) = state.watches.get(watch).and_then(|w| w.objects.as_ref()) else {
            return Err(Unavailable::Loading);
        };
        let keep =
            |o: &Value| match filter {
                Filter::NamespaceContents => !made_by_kubernetes(o),
                Filter::Selector(selector) => {
                    selector.name.as_deref().is_none_or(|n| {
                        o.pointer("/metadata/name").and_then(Value::as_str) == Some(n)
                    }) && selector
                        .label_selector
                        .as_ref()
                        .is_none_or(|l| matches(l, &labels_of(o)))
                }
            };
        Ok(objects
            .values()
            .filter(|o| keep(o))
            .map(|o| (watch.clone(), o.clone()))
            .collect())
    }

    fn reserved(&self, namespace: &str) -> bool {
        RESERVED_NAMESPACES.contains(&namespace) || self.reserved.iter().any(|r| r == namespace)
    }

    /// Records that a placement selects these watches, and starts those not running; refuses
    /// more than [`WATCHES_MAX`] watches in all.
    fn want(
        &self,
        placement: &str,
        keys: &BTreeMap<WatchKey, ApiResource>,
    ) -> Result<(), Unavailable> {
        let mut state = self.state();
        let new = keys
            .keys()
            .filter(|k| !state.watches.contains_key(*k))
            .count();
        if new > 0 && state.watches.len() + new > WATCHES_MAX {
            return Err(Unavailable::Invalid(InvalidField {
                field: "spec.resourceSelectors".into(),
                value: keys.len().to_string(),
                why: format!(
                    "the selectors need {new} more watches (a kind in a namespace each), and the hub keeps at most {WATCHES_MAX} for all placements together ({} now)",
                    state.watches.len()
                ),
            }));
        }
        for (key, resource) in keys {
            state
                .wanted
                .entry(key.clone())
                .or_default()
                .insert(placement.to_owned());
            if state.watches.contains_key(key) {
                continue;
            }
            let api: Api<DynamicObject> = match &key.namespace {
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
                None => Api::all_with(self.client.clone(), resource),
            };
            tracing::info!(kind = %key.kind, api_version = %key.api_version, namespace = ?key.namespace, "watching hub resources a placement selects");
            let task = tokio::spawn(follow(
                api,
                key.clone(),
                self.state.clone(),
                self.changed.clone(),
                self.shutdown.clone(),
            ));
            state.watches.insert(
                key.clone(),
                Watch {
                    objects: None,
                    task: task.abort_handle(),
                },
            );
        }
        Ok(())
    }

    /// Forgets that a placement selects watches other than these; a watch no placement selects
    /// any more stops, and its objects go.
    fn unwant(&self, placement: &str, keys: &BTreeMap<WatchKey, ApiResource>) {
        let mut state = self.state();
        let mut unused = Vec::new();
        for (key, wanted) in state.wanted.iter_mut() {
            if !keys.contains_key(key) {
                wanted.remove(placement);
                if wanted.is_empty() {
                    unused.push(key.clone());
                }
            }
        }
        for key in unused {
            state.wanted.remove(&key);
            if let Some(watch) = state.watches.remove(&key) {
                watch.task.abort();
                tracing::info!(kind = %key.kind, namespace = ?key.namespace, "no placement selects these hub resources any more; stopped watching");
            }
        }
    }
}

/// The watches a placement's selectors need, or the selector at fault: a kind the hub does not
/// serve, or cannot list and watch. A namespaced kind is watched in the selector's namespace,
/// else the placement's own.
fn resolve<'a>(
    selectors: &'a [ResourceSelector],
    own_namespace: &str,
    served: &HashMap<(String, String), Served>,
) -> Result<Vec<Want<'a>>, InvalidField> {
    selectors
        .iter()
        .enumerate()
        .map(|(i, selector)| {
            let invalid = |why: String| InvalidField {
                field: format!("spec.resourceSelectors[{i}].kind"),
                value: Value::from(selector.kind.as_str()).to_string(),
                why,
            };
            let kind = served
                .get(&(api_version(selector), selector.kind.clone()))
                .ok_or_else(|| invalid(format!("the hub serves no {}", selector.describe())))?;
            if !kind.watchable {
                return Err(invalid(format!(
                    "the hub cannot list and watch {}",
                    selector.describe()
                )));
            }
            let namespace = kind.namespaced.then(|| {
                selector
                    .namespace
                    .clone()
                    .unwrap_or_else(|| own_namespace.to_owned())
            });
            Ok(Want {
                selector,
                key: watch_key(kind, namespace),
                resource: kind.resource.clone(),
            })
        })
        .collect()
}

/// The watches of every namespaced kind a selected namespace holds (each kind at its group's
/// preferred version, but for the kinds never sent).
fn contents_of(
    namespaces: &[String],
    served: &HashMap<(String, String), Served>,
) -> BTreeMap<WatchKey, ApiResource> {
    let kinds: Vec<&Served> = served
        .iter()
        .filter(|((v, _), s)| v.ends_with("/*") && s.namespaced && s.watchable)
        .filter(|(_, s)| !skipped(&s.resource.group, &s.resource.kind))
        .map(|(_, s)| s)
        .collect();
    namespaces
        .iter()
        .flat_map(|ns| {
            kinds
                .iter()
                .map(|kind| (watch_key(kind, Some(ns.clone())), kind.resource.clone()))
        })
        .collect()
}

/// The name of a Namespace object a watch listed.
fn namespace_name<'a>(key: &WatchKey, object: &'a Value) -> Option<&'a str> {
    (key.api_version == "v1" && key.kind == "Namespace")
        .then(|| object.pointer("/metadata/name")?.as_str())
        .flatten()
}

/// Keeps one watch's objects in `state`, stripped, and says when they change; ends on shutdown
/// or when the watch is stopped (no placement selects it). Writes only while the watch is in
/// `state`, so one stopped and started again never sees a stale listing.
async fn follow(
    api: Api<DynamicObject>,
    key: WatchKey,
    state: Arc<Mutex<State>>,
    changed: mpsc::UnboundedSender<WatchKey>,
    mut shutdown: watch::Receiver<bool>,
) {
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let mut listing: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let Some(event) = event else { return };
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(kind = %key.kind, namespace = ?key.namespace, %error, "cannot watch hub resources a placement selects; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    _ = shutdown.wait_for(|s| *s) => return,
                }
            }
        };
        let changes = match event {
            Event::Init => {
                listing.clear();
                false
            }
            Event::InitApply(object) => {
                if let (id, Some(value)) = entry(object) {
                    listing.insert(id, value);
                }
                false
            }
            Event::InitDone => {
                let mut state = lock();
                let Some(watch) = state.watches.get_mut(&key) else {
                    return;
                };
                watch.objects = Some(std::mem::take(&mut listing));
                true
            }
            Event::Apply(object) => {
                let (id, value) = entry(object);
                match record(&mut lock(), &key, id, value) {
                    Some(changes) => changes,
                    None => return,
                }
            }
            Event::Delete(object) => {
                let (id, _) = entry(object);
                match record(&mut lock(), &key, id, None) {
                    Some(changes) => changes,
                    None => return,
                }
            }
        };
        if changes {
            let _ = changed.send(key.clone());
        }
    }
}

/// Records one object's new state (`None`: gone) in a watch; whether that changed anything, or
/// `None` when the watch was stopped.
fn record(
    state: &mut State,
    key: &WatchKey,
    id: (String, String),
    value: Option<Value>,
) -> Option<bool> {
    let objects = state.watches.get_mut(key)?.objects.get_or_insert_default();
    let same = objects.get(&id) == value.as_ref();
    match value {
        Some(value) => objects.insert(id, value),
        None => objects.remove(&id),
    };
    Some(!same)
}

/// An object as a watch keeps it: by `(namespace, name)`, stripped; `None` for one being
/// deleted (members no longer receive it).
fn entry(object: DynamicObject) -> ((String, String), Option<Value>) {
    let id = (
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    );
    if object.metadata.deletion_timestamp.is_some() {
        return (id, None);
    }
    let value = serde_json::to_value(&object).unwrap_or(Value::Null);
    (id, Some(strip(value)))
}

fn served_kind(resource: ApiResource, caps: &ApiCapabilities) -> Served {
    Served {
        namespaced: caps.scope == Scope::Namespaced,
        watchable: caps.supports_operation(verbs::LIST) && caps.supports_operation(verbs::WATCH),
        resource,
    }
}

fn watch_key(kind: &Served, namespace: Option<String>) -> WatchKey {
    WatchKey {
        api_version: kind.resource.api_version.clone(),
        kind: kind.resource.kind.clone(),
        namespace,
    }
}

fn api_version(selector: &ResourceSelector) -> String {
    if selector.group.is_empty() {
        selector.version.clone()
    } else {
        format!("{}/{}", selector.group, selector.version)
    }
}

fn discovery_failed(error: kube::Error) -> Unavailable {
    tracing::warn!(%error, "cannot discover the kinds the hub serves; retrying");
    Unavailable::Loading
}

/// Objects Kubernetes makes in every namespace, which a selected namespace does not send: the
/// `kube-root-ca.crt` ConfigMap, the `default` ServiceAccount, service account token Secrets
/// and whatever a controller owns (they were stripped of their owners, so that is recorded in
/// an annotation by [`strip`]).
fn made_by_kubernetes(object: &Value) -> bool {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str);
    let kind = text("/kind").unwrap_or_default();
    let name = text("/metadata/name").unwrap_or_default();
    let core = text("/apiVersion") == Some("v1");
    (core && kind == "ConfigMap" && name == "kube-root-ca.crt")
        || (core && kind == "ServiceAccount" && name == "default")
        || (core
            && kind == "Secret"
            && text("/type") == Some("kubernetes.io/service-account-token"))
        || object.pointer(CONTROLLED).is_some()
}

/// Where [`strip`] records that a controller owned the object (so a selected namespace leaves
/// it out).
const CONTROLLED: &str = "/metadata/annotations/atoll.dev~1controlled";

/// The metadata fields the hub generated, which no member receives.
const GENERATED_METADATA: [&str; 9] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "generateName",
];

/// Annotations tools and controllers write on the hub, which no member receives.
const GENERATED_ANNOTATIONS: [&str; 2] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
];

/// A hub object as members receive it: without status, the metadata the hub generated, owner
/// references and finalizers, and the values the hub allocated (a Service's cluster IPs, a
/// Job's generated selector).
pub fn strip(mut object: Value) -> Value {
    let Some(map) = object.as_object_mut() else {
        return object;
    };
    map.remove("status");
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let api_version = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in GENERATED_METADATA {
            meta.remove(field);
        }
        let controlled = meta
            .remove("ownerReferences")
            .and_then(|o| o.as_array().cloned())
            .is_some_and(|o| {
                o.iter()
                    .any(|r| r.get("controller") == Some(&Value::Bool(true)))
            });
        meta.remove("finalizers");
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            for a in GENERATED_ANNOTATIONS {
                annotations.remove(a);
            }
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
        if controlled {
            meta.entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()))
                .as_object_mut()
                .map(|a| a.insert("atoll.dev/controlled".into(), "true".into()));
        }
    }
    match (api_version.as_str(), kind.as_str()) {
        ("v1", "Service") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
                if !headless {
                    spec.remove("clusterIP");
                    spec.remove("clusterIPs");
                }
                spec.remove("healthCheckNodePort");
            }
        }
        ("batch/v1", "Job")
            if object
                .pointer("/spec/manualSelector")
                .and_then(Value::as_bool)
                != Some(true) =>
        {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("selector");
            }
            if let Some(labels) = object
                .pointer_mut("/spec/template/metadata/labels")
                .and_then(Value::as_object_mut)
            {
                for generated in [
                    "controller-uid",
                    "batch.kubernetes.io/controller-uid",
                    "job-name",
                    "batch.kubernetes.io/job-name",
                ] {
                    labels.remove(generated);
                }
            }
        }
        _ => {}
    }
    object
}

/// The gathered objects as manifests: each once, in a stable order, within the bounds of a
/// Work.
fn assemble(picked: Vec<(WatchKey, Value)>) -> Result<Gathered, Unavailable> {
    let mut by_id: BTreeMap<SelectedResource, Value> = BTreeMap::new();
    for (key, mut object) in picked {
        if let Some(a) = object
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove("atoll.dev/controlled");
            if a.is_empty()
                && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.remove("annotations");
            }
        }
        let (group, version) = split_api_version(&key.api_version).unwrap_or_default();
        let id = SelectedResource {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: key.kind.clone(),
            namespace: object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_owned),
            name: object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        by_id.insert(id, object);
    }
    if by_id.len() > OBJECTS_MAX {
        return Err(Unavailable::Invalid(InvalidField {
            field: "spec.resourceSelectors".into(),
            value: by_id.len().to_string(),
            why: format!(
                "the selectors pick {} hub objects, more than {OBJECTS_MAX}",
                by_id.len()
            ),
        }));
    }
    let bytes: usize = by_id
        .values()
        .map(|o| serde_json::to_vec(o).map_or(0, |b| b.len()))
        .sum();
    if bytes > MANIFESTS_MAX_BYTES {
        return Err(Unavailable::Invalid(InvalidField {
            field: "spec.resourceSelectors".into(),
            value: bytes.to_string(),
            why: format!(
                "the hub objects the selectors pick take {bytes} bytes, more than a Work's limit of {MANIFESTS_MAX_BYTES}"
            ),
        }));
    }
    let selected = by_id.keys().cloned().collect();
    Ok(Gathered {
        manifests: by_id.into_values().map(Manifest).collect(),
        selected,
    })
}

/// `(group, version)` of an `apiVersion` (`("", "v1")` for the core group).
fn split_api_version(api_version: &str) -> Option<(&str, &str)> {
    match api_version.split_once('/') {
        Some((group, version)) => Some((group, version)),
        None if !api_version.is_empty() => Some(("", api_version)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stripping_leaves_what_a_member_can_apply() {
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {
                "name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                "generation": 2, "creationTimestamp": "2026-01-01T00:00:00Z",
                "managedFields": [{"manager": "kubectl"}], "finalizers": ["x"],
                "labels": {"app": "web"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "o"}]
            },
            "spec": {"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "ports": [{"port": 80}]},
            "status": {"loadBalancer": {}}
        });
        assert_eq!(
            strip(service),
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
                "spec": {"ports": [{"port": 80}]}
            })
        );
        // A headless Service keeps `None`; a Job loses the selector the hub generated.
        let headless = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        assert_eq!(strip(headless.clone()), headless);
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                "template": {"metadata": {"labels": {"app": "j", "batch.kubernetes.io/controller-uid": "u", "controller-uid": "u", "job-name": "j", "batch.kubernetes.io/job-name": "j"}}}
            }
        });
        assert_eq!(
            strip(job),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                   "spec": {"template": {"metadata": {"labels": {"app": "j"}}}}})
        );
    }

    #[test]
    fn what_a_controller_or_kubernetes_made_is_not_taken_from_a_namespace() {
        let owned = strip(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "ownerReferences": [{"controller": true, "name": "o"}]}
        }));
        assert!(made_by_kubernetes(&owned));
        let (_, Some(owned)) = (
            0,
            assemble(vec![(key("apps/v1", "Deployment"), owned)])
                .unwrap()
                .manifests
                .pop(),
        ) else {
            panic!("assembled nothing");
        };
        assert_eq!(
            owned.0["metadata"],
            json!({"name": "d"}),
            "the mark is not sent"
        );
        for made in [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt"}}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "type": "kubernetes.io/service-account-token"}),
        ] {
            assert!(made_by_kubernetes(&made), "{made}");
        }
        assert!(!made_by_kubernetes(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}})
        ));
    }

    /// The kinds a small hub serves: ConfigMaps and Namespaces, Deployments (apps/v1), Events,
    /// and a kind that cannot be watched.
    fn served() -> HashMap<(String, String), Served> {
        let kind = |group: &str, version: &str, kind: &str, plural: &str, namespaced, watchable| {
            let api_version = if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            };
            let served = Served {
                resource: ApiResource {
                    group: group.into(),
                    version: version.into(),
                    api_version: api_version.clone(),
                    kind: kind.into(),
                    plural: plural.into(),
                },
                namespaced,
                watchable,
            };
            [
                ((api_version, kind.to_owned()), served.clone()),
                ((format!("{group}/*"), kind.to_owned()), served),
            ]
        };
        [
            kind("", "v1", "ConfigMap", "configmaps", true, true),
            kind("", "v1", "Namespace", "namespaces", false, true),
            kind("", "v1", "Event", "events", true, true),
            kind("apps", "v1", "Deployment", "deployments", true, true),
            kind("example.com", "v1", "Review", "reviews", true, false),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    #[test]
    fn selectors_resolve_to_watches_or_name_the_kind_at_fault() {
        let selectors: Vec<ResourceSelector> = serde_json::from_value(json!([
            {"version": "v1", "kind": "ConfigMap"},
            {"version": "v1", "kind": "ConfigMap", "namespace": "other"},
            {"version": "v1", "kind": "Namespace", "name": "shop"},
        ]))
        .unwrap();
        let wants = resolve(&selectors, "team", &served()).unwrap();
        let keys: Vec<(&str, Option<&str>)> = wants
            .iter()
            .map(|w| (w.key.kind.as_str(), w.key.namespace.as_deref()))
            .collect();
        assert_eq!(
            keys,
            [
                ("ConfigMap", Some("team")),
                ("ConfigMap", Some("other")),
                ("Namespace", None)
            ]
        );
        let unknown: Vec<ResourceSelector> =
            serde_json::from_value(json!([{"version": "v1", "kind": "ConfigMap"}, {"group": "apps", "version": "v2", "kind": "Deployment"}]))
                .unwrap();
        let Err(invalid) = resolve(&unknown, "team", &served()) else {
            panic!("an unknown version was resolved");
        };
        assert_eq!(
            invalid.to_string(),
            "spec.resourceSelectors[1].kind: Invalid value: \"Deployment\": the hub serves no apps/v2 Deployment"
        );
        let unwatchable: Vec<ResourceSelector> = serde_json::from_value(
            json!([{"group": "example.com", "version": "v1", "kind": "Review"}]),
        )
        .unwrap();
        let Err(invalid) = resolve(&unwatchable, "team", &served()) else {
            panic!("a kind that cannot be watched was resolved");
        };
        assert!(invalid.why.contains("cannot list and watch"), "{invalid}");
    }

    #[test]
    fn a_namespace_brings_every_namespaced_kind_but_those_never_sent() {
        let contents = contents_of(&["shop".to_owned()], &served());
        let kinds: Vec<(&str, Option<&str>)> = contents
            .keys()
            .map(|k| (k.kind.as_str(), k.namespace.as_deref()))
            .collect();
        assert_eq!(
            kinds,
            [("Deployment", Some("shop")), ("ConfigMap", Some("shop"))]
        );
        assert!(contents_of(&[], &served()).is_empty());
        let ns = json!({"metadata": {"name": "shop"}});
        assert_eq!(namespace_name(&key("v1", "Namespace"), &ns), Some("shop"));
        assert_eq!(namespace_name(&key("v1", "ConfigMap"), &ns), None);
    }

    #[test]
    fn a_stopped_watch_records_nothing() {
        let mut state = State::default();
        let id = ("a".to_owned(), "b".to_owned());
        assert_eq!(
            record(
                &mut state,
                &key("v1", "ConfigMap"),
                id.clone(),
                Some(json!(1))
            ),
            None
        );
        let task = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async { tokio::spawn(async {}).abort_handle() });
        state.watches.insert(
            key("v1", "ConfigMap"),
            Watch {
                objects: None,
                task,
            },
        );
        let k = key("v1", "ConfigMap");
        assert_eq!(
            record(&mut state, &k, id.clone(), Some(json!(1))),
            Some(true)
        );
        assert_eq!(
            record(&mut state, &k, id.clone(), Some(json!(1))),
            Some(false)
        );
        assert_eq!(record(&mut state, &k, id.clone(), None), Some(true));
        assert_eq!(record(&mut state, &k, id, None), Some(false));
    }

    fn key(api_version: &str, kind: &str) -> WatchKey {
        WatchKey {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
        }
    }

    #[test]
    fn assembled_manifests_are_ordered_unique_and_bounded() {
        let cm = |name: &str| {
            (
                key("v1", "ConfigMap"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}}),
            )
        };
        let gathered = assemble(vec![
            (key("apps/v1", "Deployment"), json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"}})),
            cm("b"),
            cm("a"),
            cm("b"),
        ])
        .unwrap();
        let names: Vec<String> = gathered
            .selected
            .iter()
            .map(|s| format!("{}/{}", s.kind, s.name))
            .collect();
        assert_eq!(names, ["ConfigMap/a", "ConfigMap/b", "Deployment/d"]);
        assert_eq!(gathered.manifests.len(), 3);
        let many: Vec<_> = (0..=OBJECTS_MAX).map(|i| cm(&format!("c{i}"))).collect();
        let Err(Unavailable::Invalid(invalid)) = assemble(many) else {
            panic!("1,001 objects were accepted");
        };
        assert_eq!(
            invalid.to_string(),
            "spec.resourceSelectors: Invalid value: 1001: the selectors pick 1001 hub objects, more than 1000"
        );
        let big = "x".repeat(MANIFESTS_MAX_BYTES);
        let Err(Unavailable::Invalid(invalid)) = assemble(vec![(
            key("v1", "ConfigMap"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"x": big}}),
        )]) else {
            panic!("an object over a Work's limit was accepted");
        };
        assert!(
            invalid.why.contains("more than a Work's limit"),
            "{invalid}"
        );
    }
}
