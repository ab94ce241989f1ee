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

    async fn apply_one(
        &self,
        ordinal: usize,
        manifest: &Value,
        configs: &[ManifestConfig],
        previous: &Previous<'_>,
    ) -> Outcome {
        let last = previous.versions.get(&(ordinal as i32));
        let ignored_before = previous.ignored.get(&(ordinal as i32));
        let mut identifier = ResourceIdentifier {
            ordinal: ordinal as i32,
            ..ResourceIdentifier::default()
        };
        let fail = |identifier: ResourceIdentifier, reason, message: String| Outcome {
            identifier,
            applied: Err(Failure { reason, message }),
            health: None,
            complete: None,
            uid: None,
            resource_version: None,
            drift_corrected: false,
            found: false,
            feedback: None,
            ignored: BTreeMap::new(),
        };
        let Some(object) = manifest.as_object() else {
            return fail(
                identifier,
                "InvalidManifest",
                format!("manifest {ordinal} is not an object"),
            );
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
        identifier.kind = kind.clone();
        identifier.name = name.clone();
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_owned(), v.to_owned()),
            None => (String::new(), api_version.clone()),
        };
        identifier.group = group.clone();
        identifier.version = version.clone();
        if kind.is_empty() || api_version.is_empty() {
            let missing = if kind.is_empty() {
                "kind"
            } else {
                "apiVersion"
            };
            return fail(
                identifier,
                "InvalidManifest",
                format!("manifest {ordinal} has no {missing}"),
            );
        }
        if name.is_empty() {
            return fail(
                identifier,
                "InvalidManifest",
                format!(
                    "manifest {ordinal} ({kind}) has no metadata.name (generateName is not supported)"
                ),
            );
        }
        let gvk = GroupVersionKind::gvk(&group, &version, &kind);
        let (resource, caps) = match self.resolve(&gvk).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                return fail(
                    identifier,
                    "KindNotServed",
                    format!(
                        "manifest {ordinal} ({kind} {api_version} {name}): the cluster does not serve this kind"
                    ),
                );
            }
            Err(e) => {
                return fail(
                    identifier,
                    "DiscoveryFailed",
                    format!("manifest {ordinal} ({kind} {name}): discovery failed: {e}"),
                );
            }
        };
        identifier.resource = resource.plural.clone();
        let namespaced = caps.scope == Scope::Namespaced;
        let namespace = namespaced.then(|| {
            manifest
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("default")
                .to_owned()
        });
        identifier.namespace = namespace.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match &namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let described = describe(&identifier);
        if let Some(why) = self
            .deny
            .refuses(&kind, &group, namespace.as_deref(), &name)
        {
            return fail(
                identifier,
                crate::deny::REASON_DENIED,
                format!("{described}: {why}"),
            );
        }
        let config = configs.iter().find(|c| {
            let r = &c.resource_identifier;
            r.group == group
                && r.resource == resource.plural
                && r.name == name
                && r.namespace == identifier.namespace
        });
        let strategy = config
            .and_then(|c| c.update_strategy.as_ref())
            .map(|s| s.type_)
            .unwrap_or_default();
        let ssa = config
            .and_then(|c| c.update_strategy.as_ref())
            .and_then(|s| s.server_side_apply.as_ref());
        let force = ssa.is_some_and(|s| s.force);
        let ignore_fields = ssa.map(|s| s.ignore_fields.as_slice()).unwrap_or_default();
        for path in ignore_fields.iter().flat_map(|f| &f.json_paths) {
            if let Err(why) = crate::fields::check(path) {
                return fail(
                    identifier,
                    REASON_IGNORE_FIELD_ERROR,
                    format!("{described}: ignoreFields: {why}"),
                );
            }
        }

        let mut body = manifest.clone();
        if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(ns) = &namespace {
                meta.insert("namespace".into(), Value::String(ns.clone()));
            }
            // Marks what the agent applied, so that it can watch those objects for drift.
            let labels = meta
                .entry("labels")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert(LABEL_APPLIED_BY.into(), Value::String(FIELD_MANAGER.into()));
            }
        }
        let mut before: Option<String> = None;
        let mut ignored = BTreeMap::new();
        // Applying again what this Work already applied takes its fields back from whoever
        // changed them since (drift, or a change of the Work); a first apply does not take
        // fields others own unless the Work says so, and notes whether the object was there.
        let applied_before = previous.applied.iter().any(|r| {
            let id = &r.identifier;
            id.group == identifier.group
                && id.kind == identifier.kind
                && id.namespace == identifier.namespace
                && id.name == identifier.name
        });
        let mut found = false;
        let written = match strategy {
            UpdateStrategyType::ReadOnly => {
                found = true;
                api.get_opt(&name).await.map(|o| o.map(|o| (o, false)))
            }
            UpdateStrategyType::CreateOnly => match api.get_opt(&name).await {
                Ok(Some(existing)) => {
                    found = !applied_before && !applied_by_agent(&existing);
                    Ok(Some((existing, false)))
                }
                Ok(None) => match serde_json::from_value::<DynamicObject>(body.clone()) {
                    Ok(obj) => api
                        .create(
                            &PostParams {
                                field_manager: Some(FIELD_MANAGER.to_owned()),
                                ..PostParams::default()
                            },
                            &obj,
                        )
                        .await
                        .map(|o| Some((o, true))),
                    Err(e) => {
                        return fail(identifier, "InvalidManifest", format!("{described}: {e}"));
                    }
                },
                Err(e) => Err(e),
            },
            UpdateStrategyType::ServerSideApply | UpdateStrategyType::Update => {
                // Read first when there is a previous apply to compare with (drift), or fields
                // to leave as the cluster has them.
                if last.is_some() || !ignore_fields.is_empty() || !applied_before {
                    let existing = match api.get_opt(&name).await {
                        Ok(existing) => existing,
                        // Unread, it cannot be told apart from an object the Work made.
                        Err(e) if !applied_before => {
                            let (reason, message) = failure_of(&e);
                            return fail(
                                identifier,
                                reason,
                                format!("{described}: cannot read it before applying: {message}"),
                            );
                        }
                        Err(_) => None,
                    };
                    found =
                        !applied_before && existing.as_ref().is_some_and(|o| !applied_by_agent(o));
                    before = existing
                        .as_ref()
                        .and_then(|o| o.metadata.resource_version.clone());
                    if let Err(why) = leave_ignored(
                        &mut body,
                        existing.as_ref(),
                        ignore_fields,
                        ignored_before,
                        &mut ignored,
                    ) {
                        return fail(
                            identifier,
                            REASON_IGNORE_FIELD_ERROR,
                            format!("{described}: ignoreFields: {why}"),
                        );
                    }
                }
                let mut params = PatchParams::apply(FIELD_MANAGER);
                params.force = force || last.is_some() || applied_before;
                api.patch(&name, &params, &Patch::Apply(&body))
                    .await
                    .map(|o| Some((o, true)))
            }
        };
        let object = match written {
            Ok(Some((object, _))) => object,
            Ok(None) => {
                return Outcome {
                    health: Some(crate::health::missing(&described)),
                    ..fail(
                        identifier,
                        "ResourceNotFound",
                        format!("{described}: read-only, and it does not exist"),
                    )
                };
            }
            Err(e) => {
                let (reason, message) = failure_of(&e);
                return fail(identifier, reason, format!("{described}: {message}"));
            }
        };
        if kind == "CustomResourceDefinition" && group == "apiextensions.k8s.io" {
            // The kinds it defines are applied next: wait until they are served.
            if let Err(message) = self.wait_established(&name).await {
                return fail(
                    identifier,
                    "CRDNotEstablished",
                    format!("{described}: {message}"),
                );
            }
        }
        let health = crate::health::of(&kind, object.metadata.generation, &object.data);
        let after = object.metadata.resource_version.clone();
        // Changed since the last apply (before != last), and changed back now (after != before).
        let drift_corrected =
            last.is_some() && before.is_some() && before.as_ref() != last && after != before;
        if drift_corrected {
            tracing::info!(manifest = %described, "corrected drift: the object was changed in the cluster");
        }
        Outcome {
            identifier,
            applied: Ok(object.metadata.generation),
            health: Some(health),
            complete: crate::health::completion(&kind, &object.data),
            uid: object.metadata.uid.clone(),
            resource_version: after,
            drift_corrected,
            found,
            feedback: feedback(&kind, config, &object),
            ignored,
        }
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
}
