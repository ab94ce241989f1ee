//! The status of ValidatingAdmissionPolicies, as kube-apiserver's
//! `validatingadmissionpolicy-status` controller writes it: each policy's expressions type-checked
//! against the kinds it names ([`type_checking`]), the warnings in
//! `status.typeChecking.expressionWarnings` and the policy's generation in
//! `status.observedGeneration` (upstream sets no conditions).
//!
//! A policy is looked at when it changes, and, unlike upstream (which checks each generation
//! once), again when a CustomResourceDefinition it names changes: a policy written before its
//! CRD, or whose CRD's schema changed, shows the warnings of the schema in force. Every policy is
//! looked at once at start, and again when the controller fell behind. Nothing is written when
//! the status is already what it should be.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use atoll_runtime::backoff::Retries;
use serde_json::Value;
use tokio::sync::watch;

use super::type_checking::{self, Gvk, Schemas};
use crate::error::{Error, Result};
use crate::registry::actor::Actor;
use crate::registry::store::{ListOptions, Store, WriteOptions};
use crate::registry::{Catalog, ResourceType, crd};
use crate::storage::EventKind;
use crate::watch::{CachedEvent, Feed, Taken, next_pass};

/// Upstream's controller name, its field manager.
pub const FIELD_MANAGER: &str = "validatingadmissionpolicy-status";
const GROUP: &str = "admissionregistration.k8s.io";
const PLURAL: &str = "validatingadmissionpolicies";
const POLICIES: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicies/";
const CRDS: &str = "/registry/apiextensions.k8s.io/customresourcedefinitions/";

/// The controller's events: every change to a policy or a CRD.
pub fn wants(event: &CachedEvent) -> bool {
    event.key.starts_with(POLICIES) || event.key.starts_with(CRDS)
}

/// The served kinds' schemas, as of one catalog: built-in kinds' OpenAPI schemas, and custom
/// resources' structural schemas with the `metadata` their published OpenAPI has (the whole
/// ObjectMeta).
pub struct Served {
    pub catalog: Arc<Catalog>,
}

impl Served {
    fn resource_type(&self, gvk: &Gvk) -> Option<Arc<ResourceType>> {
        self.catalog
            .resources(&gvk.group, &gvk.version)
            .into_iter()
            .find(|t| t.kind == gvk.kind && !t.virtual_only)
    }
}

impl Schemas for Served {
    fn kind(&self, group: &str, version: &str, resource: &str) -> Option<String> {
        self.catalog
            .lookup(group, version, resource)
            .filter(|t| !t.virtual_only)
            .map(|t| t.kind.clone())
    }

    fn schema(&self, gvk: &Gvk) -> Option<Arc<Value>> {
        let rt = self.resource_type(gvk)?;
        if rt.builtin {
            return crate::openapi::builtin_schema(&gvk.group, &gvk.version, &gvk.kind);
        }
        let mut schema = rt.schema.as_deref()?.clone();
        let properties = schema
            .as_object_mut()?
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()))
            .as_object_mut()?;
        let string = serde_json::json!({"type": "string"});
        properties.insert("apiVersion".into(), string.clone());
        properties.insert("kind".into(), string);
        if let Some(meta) = object_meta() {
            properties.insert("metadata".into(), meta);
        }
        Some(Arc::new(schema))
    }
}

/// The schema of ObjectMeta, as every built-in kind declares `metadata`.
fn object_meta() -> Option<Value> {
    let config_map = crate::openapi::builtin_schema("", "v1", "ConfigMap")?;
    config_map["properties"].get("metadata").cloned()
}

/// Whether `policy` names a resource of `crd` in its rules or its kind as its params.
fn concerns(policy: &Value, crd: &Value) -> bool {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let kind = spec["names"]["kind"].as_str().unwrap_or_default();
    let policy = &policy["spec"];
    type_checking::named_resources(policy)
        .iter()
        .any(|(g, _, r)| g == group && r == plural)
        || type_checking::param_kind(policy).is_some_and(|p| p.group == group && p.kind == kind)
}

/// What a pass looks at: some policies by name, or every one.
enum Work {
    Policies(BTreeSet<String>),
    All,
}

struct Context {
    store: Arc<Store>,
}

/// Runs until `shutdown` turns true, following `feed` (made with [`wants`]).
pub async fn run(store: Arc<Store>, feed: Arc<Feed>, mut shutdown: watch::Receiver<bool>) {
    let ctx = Context { store };
    // Policies whose last reconcile failed, tried again after each one's backoff, or at once
    // when an event concerns it.
    let mut retries = Retries::default();
    let mut settled = false;
    loop {
        let work = match (settled, feed.take()) {
            (true, Taken::Events(events)) => ctx.affected(&events).await,
            _ => Ok(Work::All),
        };
        let names = match work {
            Ok(Work::Policies(names)) => Ok(names),
            Ok(Work::All) => ctx.all().await,
            Err(error) => Err(error),
        };
        match names {
            Ok(mut names) => {
                settled = true;
                names.extend(retries.due(Instant::now()));
                for name in names {
                    match ctx.reconcile(&name).await {
                        Ok(()) => retries.succeeded(&name),
                        Err(error) => {
                            let (failures, wait) = retries.failed(name.clone(), Instant::now());
                            error_policy(&name, &error, failures, wait);
                        }
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot list ValidatingAdmissionPolicies; retrying");
                settled = false;
            }
        }
        if !next_pass(&feed, !settled, &retries, &mut shutdown).await {
            return;
        }
    }
}

/// A policy whose status could not be written is tried again after its backoff (`retry_in`),
/// or sooner when an event concerns it.
fn error_policy(policy: &str, error: &Error, failures: u32, retry_in: std::time::Duration) {
    tracing::warn!(policy, %error, failures, ?retry_in, "cannot write the ValidatingAdmissionPolicy's status");
}

impl Context {
    fn resource(&self) -> Result<Arc<ResourceType>> {
        self.store.v1_resource(GROUP, PLURAL)
    }

    async fn policies(&self) -> Result<Vec<Value>> {
        let rt = self.resource()?;
        Ok(self
            .store
            .list(&rt, None, &ListOptions::default())
            .await?
            .items)
    }

    async fn all(&self) -> Result<BTreeSet<String>> {
        Ok(self
            .policies()
            .await?
            .iter()
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
            .collect())
    }

    /// The policies `events` concern: the policies changed, and those naming a changed CRD.
    async fn affected(&self, events: &[Arc<CachedEvent>]) -> Result<Work> {
        let mut names = BTreeSet::new();
        let mut crds = Vec::new();
        for event in events {
            if let Some(name) = event.key.strip_prefix(POLICIES) {
                if event.kind != EventKind::Delete {
                    names.insert(name.to_owned());
                }
            } else {
                crds.push(event);
            }
        }
        if crds.is_empty() {
            return Ok(Work::Policies(names));
        }
        self.catch_up_with(&crds).await?;
        let changed: Vec<(Arc<Value>, Option<Value>)> = crds
            .iter()
            .map(|event| (event.decoded(), event.previous()))
            .collect();
        for policy in self.policies().await? {
            let concerned = changed.iter().any(|(object, prev)| {
                concerns(&policy, object) || prev.as_ref().is_some_and(|p| concerns(&policy, p))
            });
            if concerned && let Some(name) = policy["metadata"]["name"].as_str() {
                names.insert(name.to_owned());
            }
        }
        Ok(Work::Policies(names))
    }

    /// Makes sure the catalog serves the changed CRDs as they now are (the write that changed
    /// one reloads it, maybe not yet, or on another API server).
    async fn catch_up_with(&self, crds: &[&Arc<CachedEvent>]) -> Result<()> {
        let catalog = self.store.registry().catalog();
        let current = crds.iter().all(|event| {
            let served = if event.kind == EventKind::Delete {
                Vec::new()
            } else {
                crd::resource_types(&event.decoded())
            };
            served.iter().all(|t| {
                catalog
                    .lookup(&t.group, &t.version, &t.plural)
                    .is_some_and(|c| c.schema == t.schema)
            })
        });
        if !current {
            self.store.reload_crds().await?;
        }
        Ok(())
    }

    #[tracing::instrument(skip(self), fields(controller = FIELD_MANAGER))]
    async fn reconcile(&self, name: &str) -> Result<()> {
        let rt = self.resource()?;
        let mut policy = match self.store.get(&rt, None, name).await {
            Ok(policy) => policy,
            Err(Error::NotFound(_)) => return Ok(()),
            Err(error) => return Err(error),
        };
        let served = Served {
            catalog: self.store.registry().catalog(),
        };
        let warnings = type_checking::check(&policy, &served);
        let status = type_checking::status(&policy, &warnings);
        if policy.get("status") == Some(&status) {
            return Ok(());
        }
        policy["status"] = status;
        let options = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            actor: Some(Actor::PolicyStatusController),
            ..WriteOptions::default()
        };
        match self
            .store
            .update(&rt, None, name, Some("status"), policy, &options)
            .await
        {
            // Changed meanwhile: the change wakes the controller again.
            Ok(_) | Err(Error::Conflict { .. } | Error::NotFound(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::Registry;

    fn gauges() -> Value {
        json!({"metadata": {"name": "gauges.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gauges", "singular": "gauge", "kind": "Gauge", "listKind": "GaugeList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]},
            "status": {"conditions": [{"type": "Established", "status": "True"}]}})
    }

    fn policy(group: &str, resource: &str, expression: &str) -> Value {
        json!({"metadata": {"name": "p", "generation": 1}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": [resource]}]},
            "validations": [{"expression": expression}]}})
    }

    #[test]
    fn custom_resources_have_their_schema_and_all_of_object_meta() {
        let registry = Registry::new();
        registry.set_crds(&[gauges()]);
        let served = Served {
            catalog: registry.catalog(),
        };
        let sound = policy(
            "example.com",
            "gauges",
            "object.spec.size < 3 && object.metadata.labels['a'] == 'b' && object.kind == 'Gauge'",
        );
        assert_eq!(type_checking::check(&sound, &served), []);
        let wrong = type_checking::check(
            &policy("example.com", "gauges", "object.spec.sise < 3"),
            &served,
        );
        assert_eq!(wrong.len(), 1);
        assert!(
            wrong[0]
                .warning
                .starts_with("example.com/v1, Kind=Gauge: ERROR:"),
            "{}",
            wrong[0].warning
        );
        // Built-in kinds have their OpenAPI schema.
        let deployments = policy("apps", "deployments", "object.spec.replicsa < 3");
        assert_eq!(type_checking::check(&deployments, &served).len(), 1);
    }

    #[test]
    fn a_crd_concerns_the_policies_naming_its_resource_or_kind() {
        let crd = gauges();
        assert!(concerns(&policy("example.com", "gauges", "true"), &crd));
        assert!(!concerns(&policy("example.com", "widgets", "true"), &crd));
        assert!(!concerns(&policy("*", "gauges", "true"), &crd));
        let mut params = policy("apps", "deployments", "true");
        params["spec"]["paramKind"] = json!({"apiVersion": "example.com/v1", "kind": "Gauge"});
        assert!(concerns(&params, &crd));
    }
}
