//! Applying one Work's manifests to the member cluster: in kind order (Namespaces and CRDs first,
//! waiting for CRDs to be Established), resolved by discovery, written by server-side apply with
//! field manager `atoll-work-agent` (or created once, or only read, as the Work's manifest configs
//! say). One manifest that fails does not stop the others.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use atoll_api::work::{
    AppliedResourceMeta, FeedbackRuleType, FeedbackValue, FieldValue, IgnoreField,
    IgnoreFieldsCondition, ManifestConfig, ResourceIdentifier, StatusFeedback, UpdateStrategyType,
    Work,
};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use serde_json::Value;
use tokio::sync::RwLock;

use crate::FIELD_MANAGER;

/// What became of one manifest.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Which manifest, and what it names (as far as it could be read).
    pub identifier: ResourceIdentifier,
    /// `Ok(generation)` when applied (or found, for read-only); why not otherwise.
    pub applied: Result<Option<i64>, Failure>,
    /// What the object's status says (available, progressing, degraded), when it was read.
    pub health: Option<crate::health::Health>,
    /// Whether it ran to an end, for the kinds that do (Jobs, Pods).
    pub complete: Option<crate::health::Verdict>,
    /// The object's UID, when it exists.
    pub uid: Option<String>,
    /// The object's resourceVersion after the apply.
    pub resource_version: Option<String>,
    /// Someone changed what the Work sets, and this apply put it back.
    pub drift_corrected: bool,
    /// The object was in the cluster, not applied by this agent, before the Work first applied
    /// it (or the Work only reads it): when the Work lets it go, it stays.
    pub found: bool,
    /// Values the manifest's feedback rules read from the object.
    pub feedback: Option<StatusFeedback>,
    /// The Work's values of its `OnSpokeChange` ignored fields at this apply, by path: the next
    /// apply sets such a field only when the Work's value differs from this one.
    pub ignored: BTreeMap<String, Value>,
}

/// What the agent knows of a Work's previous apply.
#[derive(Debug)]
pub struct Previous<'a> {
    /// Each manifest's resourceVersion after the previous apply in this process (by ordinal),
    /// for drift reports; empty for an apply that is not a resync.
    pub versions: &'a HashMap<i32, String>,
    /// Each manifest's [`Outcome::ignored`] from the previous apply (by ordinal).
    pub ignored: &'a HashMap<i32, BTreeMap<String, Value>>,
    /// What the Work's AppliedWork records as applied.
    pub applied: &'a [AppliedResourceMeta],
}

/// Why an ignored field could not be honoured (OCM's reason).
const REASON_IGNORE_FIELD_ERROR: &str = "AppliedManifestSSAIgnoreFieldError";

/// Label the agent puts on every object it applies (value: its field manager).
pub const LABEL_APPLIED_BY: &str = "atoll.dev/applied-by";

/// The longest JSON a feedback value may carry (as OCM's `jsonRaw`).
pub const FEEDBACK_RAW_MAX_CHARS: usize = 1024;

/// The status fields reported for well-known kinds.
fn well_known_paths(kind: &str) -> &'static [(&'static str, &'static str)] {
    match kind {
        "Deployment" | "StatefulSet" | "ReplicaSet" => &[
            ("ReadyReplicas", ".status.readyReplicas"),
            ("Replicas", ".status.replicas"),
            ("AvailableReplicas", ".status.availableReplicas"),
        ],
        "DaemonSet" => &[
            ("NumberReady", ".status.numberReady"),
            ("DesiredNumberScheduled", ".status.desiredNumberScheduled"),
            ("NumberAvailable", ".status.numberAvailable"),
        ],
        "Job" => &[
            ("Succeeded", ".status.succeeded"),
            ("Failed", ".status.failed"),
        ],
        "Pod" => &[("PodPhase", ".status.phase")],
        _ => &[],
    }
}

/// Puts the member cluster's values of ignored fields into `body`, so that applying it leaves them
/// as they are: always once the object exists (`OnSpokePresent`), and for `OnSpokeChange` unless
/// the Work's value changed since the last apply (recorded in `before`, written to `now`).
fn leave_ignored(
    body: &mut Value,
    existing: Option<&DynamicObject>,
    rules: &[IgnoreField],
    before: Option<&BTreeMap<String, Value>>,
    now: &mut BTreeMap<String, Value>,
) -> Result<(), String> {
    let existing = match existing {
        Some(e) => Some(serde_json::to_value(e).map_err(|e| e.to_string())?),
        // A first create sets every field, ignored ones included.
        None => None,
    };
    for rule in rules {
        for path in &rule.json_paths {
            let wanted = crate::fields::lookup(body, path)
                .cloned()
                .unwrap_or(Value::Null);
            let leave = match rule.condition {
                IgnoreFieldsCondition::OnSpokePresent => true,
                IgnoreFieldsCondition::OnSpokeChange => {
                    let unchanged = before.and_then(|b| b.get(path)) == Some(&wanted);
                    now.insert(path.clone(), wanted);
                    unchanged
                }
            };
            if let Some(existing) = existing.as_ref().filter(|_| leave) {
                let theirs = crate::fields::lookup(existing, path).cloned();
                crate::fields::replace(body, path, theirs)?;
            }
        }
    }
    Ok(())
}

/// A typed feedback value; `None` when the JSON is too long to report.
fn field_value(value: &Value) -> Option<FieldValue> {
    let mut field = FieldValue::default();
    match value {
        Value::Bool(b) => {
            field.type_ = "Boolean".into();
            field.boolean = Some(*b);
        }
        Value::Number(n) if n.is_i64() => {
            field.type_ = "Integer".into();
            field.integer = n.as_i64();
        }
        Value::String(text) => {
            field.type_ = "String".into();
            field.string = Some(text.clone());
        }
        other => {
            let raw = other.to_string();
            if raw.chars().count() > FEEDBACK_RAW_MAX_CHARS {
                return None;
            }
            field.type_ = "JsonRaw".into();
            field.json_raw = Some(raw);
        }
    }
    Some(field)
}

/// What the feedback rules of `config` read from `object`.
fn feedback(
    kind: &str,
    config: Option<&ManifestConfig>,
    object: &DynamicObject,
) -> Option<StatusFeedback> {
    let rules = &config?.feedback_rules;
    if rules.is_empty() {
        return None;
    }
    let value = serde_json::to_value(object).ok()?;
    let mut values = Vec::new();
    for rule in rules {
        let paths: Vec<(String, String)> = match rule.type_ {
            FeedbackRuleType::WellKnownStatus => well_known_paths(kind)
                .iter()
                .map(|(n, p)| ((*n).to_owned(), (*p).to_owned()))
                .collect(),
            FeedbackRuleType::JsonPaths => rule
                .json_paths
                .iter()
                .map(|p| (p.name.clone(), p.path.clone()))
                .collect(),
        };
        for (name, path) in paths {
            if let Some(field_value) = crate::fields::lookup(&value, &path).and_then(field_value) {
                values.push(FeedbackValue { name, field_value });
            }
        }
    }
    Some(StatusFeedback { values })
}

/// Why a manifest was not applied.
#[derive(Debug, Clone)]
pub struct Failure {
    /// CamelCase reason.
    pub reason: &'static str,
    /// What happened, naming the manifest.
    pub message: String,
}

/// Applies manifests to one cluster, keeping its discovery.
pub struct Applier {
    client: kube::Client,
    discovery: RwLock<Option<Discovery>>,
    deny: crate::deny::Deny,
}

impl Applier {
    /// An applier for the cluster `client` talks to, refusing what `deny` names.
    pub fn new(client: kube::Client, deny: crate::deny::Deny) -> Self {
        Self {
            client,
            discovery: RwLock::new(None),
            deny,
        }
    }

    async fn refresh(&self) -> kube::Result<()> {
        let fresh = Discovery::new(self.client.clone()).run_aggregated().await?;
        *self.discovery.write().await = Some(fresh);
        Ok(())
    }

    /// Resolves a kind, refreshing discovery once when it is unknown (a CRD may be new).
    async fn resolve(
        &self,
        gvk: &GroupVersionKind,
    ) -> kube::Result<Option<(ApiResource, ApiCapabilities)>> {
        if self.discovery.read().await.is_none() {
            self.refresh().await?;
        }
        if let Some(found) = self
            .discovery
            .read()
            .await
            .as_ref()
            .and_then(|d| d.resolve_gvk(gvk))
        {
            return Ok(Some(found));
        }
        self.refresh().await?;
        Ok(self
            .discovery
            .read()
            .await
            .as_ref()
            .and_then(|d| d.resolve_gvk(gvk)))
    }

    /// Applies every manifest of `work`, in kind order; the outcomes are in manifest order.
    /// `last` holds each manifest's resourceVersion after the previous apply (by ordinal): a
    /// manifest whose object changed since, and that this apply changes back, is reported as
    /// drift corrected.
    pub async fn apply(&self, work: &Work, previous: &Previous<'_>) -> Vec<Outcome> {
        let manifests = &work.spec.workload.manifests;
        let mut order: Vec<usize> = (0..manifests.len()).collect();
        order.sort_by_key(|&i| rank(&manifests[i].0));
        let mut outcomes: Vec<Option<Outcome>> = vec![None; manifests.len()];
        for i in order {
            let outcome = self
                .apply_one(i, &manifests[i].0, &work.spec.manifest_configs, previous)
                .await;
            outcomes[i] = Some(outcome);
        }
        outcomes.into_iter().flatten().collect()
    }

    /// Applies one manifest: names it (from the manifest), resolves its kind (discovery), decides
    /// how to write it (the Work's manifest configs), writes it, and reports what became of it.
    async fn apply_one(
        &self,
        ordinal: usize,
        manifest: &Value,
        configs: &[ManifestConfig],
        previous: &Previous<'_>,
    ) -> Outcome {
        let mut identifier = ResourceIdentifier {
            ordinal: ordinal as i32,
            ..ResourceIdentifier::default()
        };
        let api_version = match identify(&mut identifier, manifest) {
            Ok(api_version) => api_version,
            Err(failure) => return Outcome::failed(identifier, failure),
        };
        let (resource, caps) = match self.resolve(&gvk_of(&identifier)).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                let ResourceIdentifier { kind, name, .. } = &identifier;
                let message = format!(
                    "manifest {ordinal} ({kind} {api_version} {name}): the cluster does not serve this kind"
                );
                return Outcome::failed(identifier, Failure::new("KindNotServed", message));
            }
            Err(e) => {
                let ResourceIdentifier { kind, name, .. } = &identifier;
                let message = format!("manifest {ordinal} ({kind} {name}): discovery failed: {e}");
                return Outcome::failed(identifier, Failure::new("DiscoveryFailed", message));
            }
        };
        identifier.resource = resource.plural.clone();
        let namespace = (caps.scope == Scope::Namespaced).then(|| namespace_of(manifest));
        identifier.namespace = namespace.clone().unwrap_or_default();
        let settings = match settings(
            &identifier,
            namespace.as_deref(),
            &self.deny,
            configs,
            previous.applied,
        ) {
            Ok(settings) => settings,
            Err(failure) => return Outcome::failed(identifier, failure),
        };
        let api: Api<DynamicObject> = match &namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let described = describe(&identifier);
        let prior = previous.of(identifier.ordinal);
        let body = body_of(manifest, namespace.as_deref());
        let written = match write(&api, &identifier.name, body, &settings, &prior, &described).await
        {
            Ok(written) => written,
            Err(failure) => return Outcome::failed(identifier, failure),
        };
        let Some(written) = written else {
            let message = format!("{described}: read-only, and it does not exist");
            return Outcome {
                health: Some(crate::health::missing(&described)),
                ..Outcome::failed(identifier, Failure::new("ResourceNotFound", message))
            };
        };
        if identifier.kind == "CustomResourceDefinition"
            && identifier.group == "apiextensions.k8s.io"
        {
            // The kinds it defines are applied next: wait until they are served.
            if let Err(message) = self.wait_established(&identifier.name).await {
                let message = format!("{described}: {message}");
                return Outcome::failed(identifier, Failure::new("CRDNotEstablished", message));
            }
        }
        let outcome = Outcome::applied(identifier, written, prior.version, settings.config);
        if outcome.drift_corrected {
            tracing::info!(manifest = %described, "corrected drift: the object was changed in the cluster");
        }
        outcome
    }

    async fn wait_established(&self, name: &str) -> Result<(), String> {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for _ in 0..300 {
            match api.get_opt(name).await {
                Ok(Some(crd)) if atoll_api::crd::is_established(&crd) => {
                    let _ = self.refresh().await;
                    return Ok(());
                }
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err("not Established within 30s".to_owned())
    }

    /// Deletes applied resources (in reverse kind order); returns those that could not be.
    pub async fn delete(
        &self,
        resources: &[AppliedResourceMeta],
    ) -> Vec<(AppliedResourceMeta, String)> {
        let mut order: Vec<&AppliedResourceMeta> = resources.iter().collect();
        order.sort_by_key(|r| std::cmp::Reverse(rank_of_kind(&r.identifier.kind)));
        let mut failed = Vec::new();
        for r in order {
            let id = &r.identifier;
            let gvk = GroupVersionKind::gvk(&id.group, &id.version, &id.kind);
            let resource = match self.resolve(&gvk).await {
                Ok(Some((resource, _))) => resource,
                // The kind is gone (its CRD was deleted first): so are its objects.
                Ok(None) => continue,
                Err(e) => {
                    failed.push((r.clone(), e.to_string()));
                    continue;
                }
            };
            let api: Api<DynamicObject> = if id.namespace.is_empty() {
                Api::all_with(self.client.clone(), &resource)
            } else {
                Api::namespaced_with(self.client.clone(), &id.namespace, &resource)
            };
            // Only what this Work created: the UID must match.
            let mut params = DeleteParams::background();
            if !r.uid.is_empty() {
                params.preconditions = Some(kube::api::Preconditions {
                    uid: Some(r.uid.clone()),
                    resource_version: None,
                });
            }
            match api.delete(&id.name, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => failed.push((r.clone(), e.to_string())),
            }
        }
        failed
    }
}

impl Outcome {
    /// A manifest that was not applied.
    fn failed(identifier: ResourceIdentifier, failure: Failure) -> Self {
        Outcome {
            identifier,
            applied: Err(failure),
            health: None,
            complete: None,
            uid: None,
            resource_version: None,
            drift_corrected: false,
            found: false,
            feedback: None,
            ignored: BTreeMap::new(),
        }
    }

    /// A manifest whose object the cluster has, as `written` left it; `last` is its
    /// resourceVersion after the previous apply, `config` its manifest config.
    fn applied(
        identifier: ResourceIdentifier,
        written: Written,
        last: Option<&String>,
        config: Option<&ManifestConfig>,
    ) -> Self {
        let Written {
            object,
            before,
            found,
            ignored,
        } = written;
        let kind = identifier.kind.as_str();
        let after = object.metadata.resource_version.clone();
        Outcome {
            applied: Ok(object.metadata.generation),
            health: Some(crate::health::of(
                kind,
                object.metadata.generation,
                &object.data,
            )),
            complete: crate::health::completion(kind, &object.data),
            uid: object.metadata.uid.clone(),
            drift_corrected: drift_corrected(
                last.map(String::as_str),
                before.as_deref(),
                after.as_deref(),
            ),
            resource_version: after,
            found,
            feedback: feedback(kind, config, &object),
            ignored,
            identifier,
        }
    }
}

impl Failure {
    fn new(reason: &'static str, message: String) -> Self {
        Failure { reason, message }
    }
}

impl Previous<'_> {
    /// What the previous apply left of the manifest at `ordinal`.
    fn of(&self, ordinal: i32) -> Prior<'_> {
        Prior {
            version: self.versions.get(&ordinal),
            ignored: self.ignored.get(&ordinal),
        }
    }
}

/// What the agent knows of one manifest's previous apply.
#[derive(Debug, Default)]
struct Prior<'a> {
    /// Its object's resourceVersion after the previous apply in this process (a resync).
    version: Option<&'a String>,
    /// Its [`Outcome::ignored`] from the previous apply.
    ignored: Option<&'a BTreeMap<String, Value>>,
}

/// Fills `identifier` with the group, version, kind and name `manifest` gives, as far as it can
/// be read; returns its apiVersion, or why it cannot be applied.
fn identify(identifier: &mut ResourceIdentifier, manifest: &Value) -> Result<String, Failure> {
    let ordinal = identifier.ordinal;
    let invalid = |message| Err(Failure::new("InvalidManifest", message));
    let Some(object) = manifest.as_object() else {
        return invalid(format!("manifest {ordinal} is not an object"));
    };
    let text = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let name = manifest
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), api_version.clone()),
    };
    identifier.kind = kind;
    identifier.name = name;
    identifier.group = group;
    identifier.version = version;
    if identifier.kind.is_empty() || api_version.is_empty() {
        let missing = if identifier.kind.is_empty() {
            "kind"
        } else {
            "apiVersion"
        };
        return invalid(format!("manifest {ordinal} has no {missing}"));
    }
    if identifier.name.is_empty() {
        return invalid(format!(
            "manifest {ordinal} ({}) has no metadata.name (generateName is not supported)",
            identifier.kind
        ));
    }
    Ok(api_version)
}

/// The group, version and kind an identifier names.
fn gvk_of(identifier: &ResourceIdentifier) -> GroupVersionKind {
    GroupVersionKind::gvk(&identifier.group, &identifier.version, &identifier.kind)
}

/// The namespace a manifest of a namespaced kind goes to: its own, or `default`.
fn namespace_of(manifest: &Value) -> String {
    manifest
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_owned()
}

/// How one manifest is written, as the Work's manifest configs and its AppliedWork say.
#[derive(Debug)]
struct Settings<'a> {
    /// The manifest config for this resource, if any.
    config: Option<&'a ManifestConfig>,
    strategy: UpdateStrategyType,
    /// The config asks server-side apply to take fields other managers own.
    force: bool,
    ignore_fields: &'a [IgnoreField],
    /// The Work's AppliedWork records this object as applied by the Work.
    applied_before: bool,
}

impl Settings<'_> {
    /// Whether server-side apply reads the object first: to compare with the previous apply
    /// (`resync`, for drift), to leave ignored fields as the cluster has them, or to tell
    /// whether the object was there before the Work.
    fn reads_first(&self, resync: bool) -> bool {
        resync || !self.ignore_fields.is_empty() || !self.applied_before
    }

    /// Whether server-side apply takes fields others own: applying again what this Work already
    /// applied takes its fields back from whoever changed them since (drift, or a change of the
    /// Work); a first apply does not, unless the Work says so.
    fn forces(&self, resync: bool) -> bool {
        self.force || resync || self.applied_before
    }
}

/// Decides how the manifest `identifier` names (in `namespace`, none when cluster-scoped) is
/// written: refused when `deny` names it or an ignored field is not a path the agent reads.
/// `applied` is what the Work's AppliedWork records.
fn settings<'a>(
    identifier: &ResourceIdentifier,
    namespace: Option<&str>,
    deny: &crate::deny::Deny,
    configs: &'a [ManifestConfig],
    applied: &[AppliedResourceMeta],
) -> Result<Settings<'a>, Failure> {
    let described = describe(identifier);
    if let Some(why) = deny.refuses(
        &identifier.kind,
        &identifier.group,
        namespace,
        &identifier.name,
    ) {
        return Err(Failure::new(
            crate::deny::REASON_DENIED,
            format!("{described}: {why}"),
        ));
    }
    let config = configs.iter().find(|c| {
        let r = &c.resource_identifier;
        r.group == identifier.group
            && r.resource == identifier.resource
            && r.name == identifier.name
            && r.namespace == identifier.namespace
    });
    let update_strategy = config.and_then(|c| c.update_strategy.as_ref());
    let ssa = update_strategy.and_then(|s| s.server_side_apply.as_ref());
    let ignore_fields = ssa.map(|s| s.ignore_fields.as_slice()).unwrap_or_default();
    for path in ignore_fields.iter().flat_map(|f| &f.json_paths) {
        if let Err(why) = crate::fields::check(path) {
            return Err(Failure::new(
                REASON_IGNORE_FIELD_ERROR,
                format!("{described}: ignoreFields: {why}"),
            ));
        }
    }
    let applied_before = applied.iter().any(|r| {
        let id = &r.identifier;
        id.group == identifier.group
            && id.kind == identifier.kind
            && id.namespace == identifier.namespace
            && id.name == identifier.name
    });
    Ok(Settings {
        config,
        strategy: update_strategy.map(|s| s.type_).unwrap_or_default(),
        force: ssa.is_some_and(|s| s.force),
        ignore_fields,
        applied_before,
    })
}

/// The manifest as the agent writes it: in `namespace` (when namespaced), and labelled as
/// applied by the agent, so that it can watch those objects for drift.
fn body_of(manifest: &Value, namespace: Option<&str>) -> Value {
    let mut body = manifest.clone();
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(ns) = namespace {
            meta.insert("namespace".into(), Value::String(ns.to_owned()));
        }
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(LABEL_APPLIED_BY.into(), Value::String(FIELD_MANAGER.into()));
        }
    }
    body
}

/// What writing (or, for a read-only manifest, reading) one manifest's object left.
#[derive(Debug)]
struct Written {
    /// The object as the cluster has it now.
    object: DynamicObject,
    /// Its resourceVersion before this apply, when it was read first.
    before: Option<String>,
    /// See [`Outcome::found`].
    found: bool,
    /// See [`Outcome::ignored`].
    ignored: BTreeMap<String, Value>,
}

impl Written {
    /// Only the object: not read before, not found, no ignored fields.
    fn of(object: DynamicObject) -> Self {
        Written {
            object,
            before: None,
            found: false,
            ignored: BTreeMap::new(),
        }
    }
}

/// Writes `body`, the manifest `described` names, through `api` as `settings` say; `None` when a
/// read-only manifest's object does not exist.
async fn write(
    api: &Api<DynamicObject>,
    name: &str,
    body: Value,
    settings: &Settings<'_>,
    prior: &Prior<'_>,
    described: &str,
) -> Result<Option<Written>, Failure> {
    match settings.strategy {
        UpdateStrategyType::ReadOnly => {
            let object = api
                .get_opt(name)
                .await
                .map_err(|e| write_failure(described, &e))?;
            Ok(object.map(|object| Written {
                found: true,
                ..Written::of(object)
            }))
        }
        UpdateStrategyType::CreateOnly => {
            create_once(api, name, body, settings.applied_before, described)
                .await
                .map(Some)
        }
        UpdateStrategyType::ServerSideApply | UpdateStrategyType::Update => {
            apply_server_side(api, name, body, settings, prior, described)
                .await
                .map(Some)
        }
    }
}

/// Creates the object unless it exists; an existing one is left as it is.
async fn create_once(
    api: &Api<DynamicObject>,
    name: &str,
    body: Value,
    applied_before: bool,
    described: &str,
) -> Result<Written, Failure> {
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| write_failure(described, &e))?;
    if let Some(existing) = existing {
        return Ok(Written {
            found: !applied_before && !applied_by_agent(&existing),
            ..Written::of(existing)
        });
    }
    let object = serde_json::from_value::<DynamicObject>(body)
        .map_err(|e| Failure::new("InvalidManifest", format!("{described}: {e}")))?;
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let created = api
        .create(&params, &object)
        .await
        .map_err(|e| write_failure(described, &e))?;
    Ok(Written::of(created))
}

/// Server-side applies `body`, reading the object first when `settings` say so (for drift,
/// ignored fields, and whether it was there before the Work).
async fn apply_server_side(
    api: &Api<DynamicObject>,
    name: &str,
    mut body: Value,
    settings: &Settings<'_>,
    prior: &Prior<'_>,
    described: &str,
) -> Result<Written, Failure> {
    let resync = prior.version.is_some();
    let mut before = None;
    let mut found = false;
    let mut ignored = BTreeMap::new();
    if settings.reads_first(resync) {
        let existing = match api.get_opt(name).await {
            Ok(existing) => existing,
            // Unread, it cannot be told apart from an object the Work made.
            Err(e) if !settings.applied_before => {
                let (reason, message) = failure_of(&e);
                return Err(Failure::new(
                    reason,
                    format!("{described}: cannot read it before applying: {message}"),
                ));
            }
            Err(_) => None,
        };
        found = !settings.applied_before && existing.as_ref().is_some_and(|o| !applied_by_agent(o));
        before = existing
            .as_ref()
            .and_then(|o| o.metadata.resource_version.clone());
        leave_ignored(
            &mut body,
            existing.as_ref(),
            settings.ignore_fields,
            prior.ignored,
            &mut ignored,
        )
        .map_err(|why| {
            Failure::new(
                REASON_IGNORE_FIELD_ERROR,
                format!("{described}: ignoreFields: {why}"),
            )
        })?;
    }
    let mut params = PatchParams::apply(FIELD_MANAGER);
    params.force = settings.forces(resync);
    let object = api
        .patch(name, &params, &Patch::Apply(&body))
        .await
        .map_err(|e| write_failure(described, &e))?;
    Ok(Written {
        object,
        before,
        found,
        ignored,
    })
}

/// Whether this apply corrected drift: the object changed since the last apply (`before` is not
/// `last`), and this apply changed it back (`after` is not `before`). Only a resync knows `last`.
fn drift_corrected(last: Option<&str>, before: Option<&str>, after: Option<&str>) -> bool {
    last.is_some() && before.is_some() && before != last && after != before
}

/// A failed read or write of the manifest `described` names.
fn write_failure(described: &str, error: &kube::Error) -> Failure {
    let (reason, message) = failure_of(error);
    Failure::new(reason, format!("{described}: {message}"))
}

/// Whether an object carries the label the agent puts on what it applies.
fn applied_by_agent(object: &DynamicObject) -> bool {
    object
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_APPLIED_BY))
        .is_some_and(|v| v == FIELD_MANAGER)
}

/// `manifest 3 (Deployment apps/v1 web/frontend)`.
pub fn describe(id: &ResourceIdentifier) -> String {
    let gv = if id.group.is_empty() {
        id.version.clone()
    } else {
        format!("{}/{}", id.group, id.version)
    };
    let name = if id.namespace.is_empty() {
        id.name.clone()
    } else {
        format!("{}/{}", id.namespace, id.name)
    };
    format!("manifest {} ({} {gv} {name})", id.ordinal, id.kind)
}

/// The apply rank of a manifest: Namespaces and CRDs first, webhooks last, unknown kinds late.
fn rank(manifest: &Value) -> u32 {
    manifest
        .get("kind")
        .and_then(Value::as_str)
        .map_or(1001, rank_of_kind)
}

fn rank_of_kind(kind: &str) -> u32 {
    match kind {
        "Namespace"
        | "CustomResourceDefinition"
        | "PriorityClass"
        | "StorageClass"
        | "PersistentVolume" => 0,
        "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding" => 1,
        "NetworkPolicy"
        | "ResourceQuota"
        | "LimitRange"
        | "PodDisruptionBudget"
        | "ServiceAccount" => 2,
        "Secret" | "ConfigMap" | "PersistentVolumeClaim" => 3,
        "Service" => 4,
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "CronJob" | "Pod" => 5,
        "APIService"
        | "MutatingWebhookConfiguration"
        | "ValidatingWebhookConfiguration"
        | "ValidatingAdmissionPolicy"
        | "ValidatingAdmissionPolicyBinding" => 6,
        _ => 1000,
    }
}

/// The reason a failed read or write of a manifest is reported with, and what to say: the API
/// server's own message when it answered (a 403 names the verb, the resource and the namespace
/// the agent may not touch).
fn failure_of(error: &kube::Error) -> (&'static str, String) {
    match error {
        kube::Error::Api(e) => {
            let reason = match e.code {
                409 => "ApplyConflict",
                422 => "Invalid",
                403 => "Forbidden",
                _ => "AppliedManifestFailed",
            };
            (reason, e.message.clone())
        }
        other => ("AppliedManifestFailed", other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_and_crds_go_first_and_unknown_kinds_late() {
        let kinds = [
            "Deployment",
            "Widget",
            "ConfigMap",
            "Namespace",
            "CustomResourceDefinition",
            "Service",
        ];
        let mut manifests: Vec<Value> = kinds
            .iter()
            .map(|k| serde_json::json!({"kind": k}))
            .collect();
        manifests.push(serde_json::json!("not an object"));
        let mut order: Vec<usize> = (0..manifests.len()).collect();
        order.sort_by_key(|&i| rank(&manifests[i]));
        let sorted: Vec<&str> = order
            .iter()
            .map(|&i| {
                manifests[i]
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            })
            .collect();
        assert_eq!(
            sorted,
            [
                "Namespace",
                "CustomResourceDefinition",
                "ConfigMap",
                "Service",
                "Deployment",
                "Widget",
                "?"
            ]
        );
    }

    #[test]
    fn feedback_paths_read_scalars_and_bounded_json() {
        let object = serde_json::json!({"status": {"readyReplicas": 2, "phase": "Running", "ok": true,
            "conditions": [{"type": "Ready"}], "big": {"k": "x".repeat(2000)}}});
        assert_eq!(
            crate::fields::lookup(&object, ".status.readyReplicas"),
            Some(&serde_json::json!(2))
        );
        assert_eq!(
            crate::fields::lookup(&object, "{.status.conditions[0].type}"),
            Some(&serde_json::json!("Ready"))
        );
        assert_eq!(crate::fields::lookup(&object, ".status.missing"), None);
        assert_eq!(field_value(&serde_json::json!(2)).unwrap().integer, Some(2));
        assert_eq!(
            field_value(&serde_json::json!(true)).unwrap().type_,
            "Boolean"
        );
        assert_eq!(
            field_value(&object["status"]["conditions"]).unwrap().type_,
            "JsonRaw"
        );
        assert!(
            field_value(&object["status"]["big"]).is_none(),
            "over 1024 characters"
        );
    }

    #[test]
    fn manifests_are_described_by_ordinal_kind_and_name() {
        let id = ResourceIdentifier {
            ordinal: 3,
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            resource: "deployments".into(),
            namespace: "web".into(),
            name: "frontend".into(),
        };
        assert_eq!(
            describe(&id),
            "manifest 3 (Deployment apps/v1 web/frontend)"
        );
    }

    fn deployment(ordinal: i32, namespace: &str, name: &str) -> ResourceIdentifier {
        ResourceIdentifier {
            ordinal,
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            resource: "deployments".into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn identified(manifest: Value) -> (ResourceIdentifier, Result<String, Failure>) {
        let mut identifier = ResourceIdentifier {
            ordinal: 2,
            ..ResourceIdentifier::default()
        };
        let result = identify(&mut identifier, &manifest);
        (identifier, result)
    }

    #[test]
    fn a_manifest_is_identified_by_its_api_version_kind_and_name() {
        let (id, result) = identified(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "frontend"}
        }));
        assert_eq!(result.unwrap(), "apps/v1");
        assert_eq!(
            (id.group.as_str(), id.version.as_str(), id.kind.as_str()),
            ("apps", "v1", "Deployment")
        );
        assert_eq!(id.name, "frontend");
        let (id, result) = identified(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}
        }));
        assert_eq!(result.unwrap(), "v1");
        assert_eq!((id.group.as_str(), id.version.as_str()), ("", "v1"));
    }

    #[test]
    fn a_manifest_without_kind_api_version_or_name_is_invalid_and_says_which() {
        let reasons = |manifest: Value| {
            let (id, result) = identified(manifest);
            let failure = result.unwrap_err();
            assert_eq!(failure.reason, "InvalidManifest");
            (id, failure.message)
        };
        assert_eq!(
            reasons(serde_json::json!("text")).1,
            "manifest 2 is not an object"
        );
        let (id, message) = reasons(serde_json::json!({
            "apiVersion": "v1", "metadata": {"name": "settings"}
        }));
        assert_eq!(message, "manifest 2 has no kind");
        assert_eq!(id.name, "settings", "what could be read is reported");
        let (_, message) = reasons(serde_json::json!({
            "kind": "ConfigMap", "metadata": {"name": "settings"}
        }));
        assert_eq!(message, "manifest 2 has no apiVersion");
        let (_, message) = reasons(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "settings-"}
        }));
        assert_eq!(
            message,
            "manifest 2 (ConfigMap) has no metadata.name (generateName is not supported)"
        );
    }

    #[test]
    fn a_namespaced_manifest_without_a_namespace_goes_to_default() {
        assert_eq!(
            namespace_of(&serde_json::json!({"metadata": {}})),
            "default"
        );
        assert_eq!(
            namespace_of(&serde_json::json!({"metadata": {"namespace": ""}})),
            "default"
        );
        assert_eq!(
            namespace_of(&serde_json::json!({"metadata": {"namespace": "web"}})),
            "web"
        );
    }

    #[test]
    fn the_body_is_labelled_as_applied_by_the_agent_in_its_namespace() {
        let manifest = serde_json::json!({
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "labels": {"app": "web"}}
        });
        let body = body_of(&manifest, Some("default"));
        assert_eq!(body["metadata"]["namespace"], "default");
        assert_eq!(body["metadata"]["labels"]["app"], "web");
        assert_eq!(body["metadata"]["labels"][LABEL_APPLIED_BY], FIELD_MANAGER);
        let body = body_of(&serde_json::json!({"metadata": {"name": "web"}}), None);
        assert!(
            body["metadata"].get("namespace").is_none(),
            "cluster-scoped"
        );
        assert_eq!(body["metadata"]["labels"][LABEL_APPLIED_BY], FIELD_MANAGER);
    }

    fn config(value: Value) -> ManifestConfig {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn settings_come_from_the_config_of_the_same_resource() {
        let configs = [config(serde_json::json!({
            "resourceIdentifier": {"group": "apps", "resource": "deployments", "namespace": "web", "name": "frontend"},
            "updateStrategy": {"type": "CreateOnly", "serverSideApply": {"force": true}}
        }))];
        let deny = crate::deny::Deny::default();
        let frontend = deployment(0, "web", "frontend");
        let s = settings(&frontend, Some("web"), &deny, &configs, &[]).unwrap();
        assert_eq!(s.strategy, UpdateStrategyType::CreateOnly);
        assert!(s.force && s.config.is_some() && !s.applied_before);
        let backend = deployment(1, "web", "backend");
        let s = settings(&backend, Some("web"), &deny, &configs, &[]).unwrap();
        assert_eq!(s.strategy, UpdateStrategyType::ServerSideApply);
        assert!(!s.force && s.config.is_none());
        let applied = [AppliedResourceMeta {
            identifier: deployment(5, "web", "backend"),
            uid: "u".into(),
        }];
        let s = settings(&backend, Some("web"), &deny, &configs, &applied).unwrap();
        assert!(
            s.applied_before,
            "matched by group, kind, namespace and name"
        );
    }

    #[test]
    fn a_denied_namespace_or_an_unreadable_ignored_field_is_refused() {
        let deny = crate::deny::Deny::default();
        let system = deployment(0, "kube-system", "dns");
        let failure = settings(&system, Some("kube-system"), &deny, &[], &[]).unwrap_err();
        assert_eq!(failure.reason, crate::deny::REASON_DENIED);
        assert!(
            failure
                .message
                .starts_with("manifest 0 (Deployment apps/v1 kube-system/dns): "),
            "{}",
            failure.message
        );
        let configs = [config(serde_json::json!({
            "resourceIdentifier": {"group": "apps", "resource": "deployments", "namespace": "web", "name": "frontend"},
            "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {
                "ignoreFields": [{"condition": "OnSpokePresent", "jsonPaths": [".spec.replicas", ".spec..x"]}]
            }}
        }))];
        let frontend = deployment(0, "web", "frontend");
        let failure = settings(&frontend, Some("web"), &deny, &configs, &[]).unwrap_err();
        assert_eq!(failure.reason, REASON_IGNORE_FIELD_ERROR);
        assert!(
            failure.message.contains("ignoreFields: "),
            "{}",
            failure.message
        );
    }

    #[test]
    fn a_first_apply_reads_first_and_does_not_force_and_a_later_one_forces() {
        let first = Settings {
            config: None,
            strategy: UpdateStrategyType::ServerSideApply,
            force: false,
            ignore_fields: &[],
            applied_before: false,
        };
        assert!(first.reads_first(false) && !first.forces(false));
        let again = Settings {
            applied_before: true,
            ..first
        };
        assert!(!again.reads_first(false) && again.forces(false));
        assert!(
            again.reads_first(true),
            "a resync compares with the last apply"
        );
        let ignored = [IgnoreField {
            condition: IgnoreFieldsCondition::OnSpokePresent,
            json_paths: vec![".spec.replicas".into()],
        }];
        let ignoring = Settings {
            ignore_fields: &ignored,
            ..again
        };
        assert!(ignoring.reads_first(false));
    }

    #[test]
    fn drift_is_corrected_when_the_object_changed_since_and_changes_back() {
        // A resync: the object moved from 1 to 2 in the cluster, and the apply made it 3.
        assert!(drift_corrected(Some("1"), Some("2"), Some("3")));
        // Nothing changed since the last apply.
        assert!(!drift_corrected(Some("1"), Some("1"), Some("1")));
        // Changed in the cluster, but the apply changed nothing back.
        assert!(!drift_corrected(Some("1"), Some("2"), Some("2")));
        // Not a resync, or the object was not read first.
        assert!(!drift_corrected(None, Some("2"), Some("3")));
        assert!(!drift_corrected(Some("1"), None, Some("3")));
    }
}
