//! Policies in a running server: the policies and bindings kept current from the watch cache
//! (read again only when the cache has changes to them, a policy compiled again only when its
//! spec changed), and the [`Admission`] every write passes: those received over HTTP and those
//! the server's own controllers make ([`Gate`] builds it for both).

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::policies::{Binding, Policy, PolicySet};
use super::{Lookup, Operation, Request, denial_error, evaluate};
use crate::auth::User;
use crate::error::Result;
use crate::registry::store::Admission;
use crate::registry::{Catalog, Registry, ResourceType};
use crate::storage::{EventKind, Revision};
use crate::watch::WatchCache;

const GROUP_PREFIX: &str = "/registry/admissionregistration.k8s.io/";
const POLICIES: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicies/";
const BINDINGS: &str = "/registry/admissionregistration.k8s.io/validatingadmissionpolicybindings/";
/// Policies, and bindings, in force at most; more are ignored (and logged).
const MAX_OBJECTS: usize = 1024;

/// The compiled policies and bindings, as of the watch cache's last change to them.
#[derive(Default)]
pub struct Policies {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    loaded: bool,
    seen: Revision,
    set: Arc<PolicySet>,
}

impl Policies {
    /// The policies in force: the cache's changes to policies and bindings since the last
    /// call taken in (everything listed again when the cache no longer has them).
    pub fn current(&self, cache: &WatchCache) -> Arc<PolicySet> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.loaded
            && let Ok((events, seen)) = cache.events_after(GROUP_PREFIX, state.seen)
        {
            state.seen = seen;
            if events.is_empty() {
                return state.set.clone();
            }
            let mut set = (*state.set).clone();
            for event in &events {
                let object = (event.kind != EventKind::Delete).then(|| event.object().as_ref());
                apply(&mut set, &event.key, object);
            }
            set.settle();
            state.set = Arc::new(set);
            return state.set.clone();
        }
        let (policies, at) = cache.list(POLICIES);
        let (bindings, at_bindings) = cache.list(BINDINGS);
        let mut set = PolicySet::default();
        let old = state.set.clone();
        for event in &policies {
            let object = event.object();
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            match old.policies.get(name) {
                Some(compiled) if Some(&compiled.spec) == object.get("spec") => {
                    set.policies.insert(name.to_owned(), compiled.clone());
                }
                _ => apply(&mut set, &event.key, Some(object)),
            }
        }
        for event in &bindings {
            apply(&mut set, &event.key, Some(event.object()));
        }
        set.settle();
        *state = State {
            loaded: true,
            seen: at.min(at_bindings),
            set: Arc::new(set),
        };
        state.set.clone()
    }
}

/// Takes in one change of a policy or binding (`None`: deleted); [`PolicySet::settle`] once
/// after the last.
fn apply(set: &mut PolicySet, key: &str, object: Option<&Value>) {
    if let Some(name) = key.strip_prefix(POLICIES) {
        match object {
            None => {
                set.policies.remove(name);
            }
            Some(object) => {
                let unchanged = set
                    .policies
                    .get(name)
                    .is_some_and(|p| Some(&p.spec) == object.get("spec"));
                if unchanged {
                    return;
                }
                if set.policies.len() >= MAX_OBJECTS && !set.policies.contains_key(name) {
                    tracing::warn!(
                        policy = name,
                        "too many ValidatingAdmissionPolicies; ignored"
                    );
                    return;
                }
                set.policies
                    .insert(name.to_owned(), Arc::new(Policy::compile(object)));
            }
        }
    } else if let Some(name) = key.strip_prefix(BINDINGS) {
        match object {
            None => {
                set.bindings.remove(name);
            }
            Some(object) => {
                if set.bindings.len() >= MAX_OBJECTS && !set.bindings.contains_key(name) {
                    tracing::warn!(
                        binding = name,
                        "too many ValidatingAdmissionPolicyBindings; ignored"
                    );
                    return;
                }
                set.bindings
                    .insert(name.to_owned(), Arc::new(Binding::read(object)));
            }
        }
    }
}

/// What checks writes against the policies in force, for the HTTP API and the server's own
/// controllers alike: one path, whoever writes.
pub struct Gate {
    pub policies: Policies,
    pub registry: Arc<Registry>,
    pub cache: Arc<WatchCache>,
    /// What decides the policies' authorization checks.
    pub authorizer: Arc<crate::authz::Authorizer>,
    /// The server's audit log, when it keeps one (controllers' writes are recorded there too).
    pub audit: Option<Arc<crate::audit::AuditLog>>,
}

impl Gate {
    /// The policies' check of a write by `user` (to `subresource`, empty for the main
    /// resource), its audit annotations going to `audit`; none while no binding is in force.
    pub fn admission(
        &self,
        user: &User,
        subresource: &str,
        dry_run: bool,
        audit: Option<Arc<crate::audit::Record>>,
    ) -> Option<PolicyAdmission> {
        let set = self.policies.current(&self.cache);
        (!set.is_empty()).then(|| PolicyAdmission {
            set,
            catalog: self.registry.catalog(),
            cache: self.cache.clone(),
            user: user.clone(),
            authorizer: self.authorizer.clone(),
            subresource: subresource.to_owned(),
            dry_run,
            inner: None,
            delete_warnings: Default::default(),
            audit,
        })
    }
}

/// The policies' check of one write (after any other check it wraps).
pub struct PolicyAdmission {
    pub set: Arc<PolicySet>,
    pub catalog: Arc<Catalog>,
    pub cache: Arc<WatchCache>,
    pub user: User,
    /// What decides the policies' authorization checks (`authorizer.path('/x').check('get')`).
    pub authorizer: Arc<crate::authz::Authorizer>,
    /// The subresource written (empty for the main resource).
    pub subresource: String,
    pub dry_run: bool,
    /// The check that runs first (RBAC's escalation check).
    pub inner: Option<Arc<dyn Admission>>,
    /// The warnings of deletes (which answer none of their own).
    pub delete_warnings: Mutex<Vec<String>>,
    /// Where the policies' audit annotations go, when the server keeps an audit log.
    pub audit: Option<Arc<crate::audit::Record>>,
}

impl Admission for PolicyAdmission {
    fn admit(
        &self,
        rt: &ResourceType,
        object: &Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        if let Some(inner) = &self.inner {
            inner.admit(rt, object, old, warnings)?;
        }
        let operation = if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        if self.subresource == "scale" && rt.scale.is_some() {
            // A `/scale` write is of a Scale, as upstream's scale subresource decodes it.
            let scale = crate::http::scale::from_object(rt, object)?;
            let old_scale = old
                .map(|o| crate::http::scale::from_object(rt, o))
                .transpose()?;
            return self.check(rt, operation, Some(&scale), old_scale.as_ref(), warnings);
        }
        self.check(rt, operation, Some(object), old, warnings)
    }

    fn admit_delete(&self, rt: &ResourceType, old: &Value) -> Result<()> {
        let mut warnings = Vec::new();
        let checked = self.check(rt, Operation::Delete, None, Some(old), &mut warnings);
        self.delete_warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(warnings);
        checked
    }
}

impl PolicyAdmission {
    /// The warnings of the deletes checked so far.
    pub fn take_delete_warnings(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .delete_warnings
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// Checks one request of `operation` on `rt` (`object` none for a delete).
    pub fn check(
        &self,
        rt: &ResourceType,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        if self.set.is_empty() {
            return Ok(());
        }
        let meta = &object.or(old).map_or(&Value::Null, |o| o)["metadata"];
        let name = meta["name"].as_str().unwrap_or_default();
        let namespace = meta["namespace"].as_str().unwrap_or_default();
        let equivalent_versions = super::Versions::of(&self.catalog, &rt.group, &rt.plural);
        // Each admission request has its own uid, as upstream's (made when read).
        let uid = std::sync::OnceLock::new();
        let request = Request {
            operation,
            group: &rt.group,
            version: &rt.version,
            resource: &rt.plural,
            subresource: &self.subresource,
            kind: if object.or(old).is_some_and(|o| o["kind"] == "Scale")
                && self.subresource == "scale"
            {
                ("autoscaling", "v1", "Scale")
            } else {
                (&rt.group, &rt.version, &rt.kind)
            },
            equivalent_versions: &equivalent_versions,
            name,
            namespace,
            namespaced: rt.namespaced,
            object,
            old_object: old,
            user: &self.user,
            dry_run: self.dry_run,
            uid: &uid,
        };
        let outcome = evaluate(&self.set, &request, self);
        warnings.extend(outcome.warnings);
        for (key, value) in outcome.audit_annotations {
            match &self.audit {
                Some(record) => record.annotate(key, value),
                None => tracing::debug!(%key, %value, "admission audit annotation"),
            }
        }
        match outcome.denial {
            Some(denial) => Err(denial_error(&denial, &rt.group, &rt.plural, name)),
            None => Ok(()),
        }
    }

    fn resource_type(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        self.catalog
            .resources(group, version)
            .into_iter()
            .find(|t| t.kind == kind && !t.virtual_only)
    }

    /// The live object stored under `key`.
    fn object(&self, key: &str) -> Option<Value> {
        let (objects, _) = self.cache.list(key);
        objects
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.object().as_ref().clone())
    }
}

impl Lookup for PolicyAdmission {
    fn authorizer(&self, user: &User) -> Option<Arc<dyn atoll_cel::library::authz::Authorizer>> {
        Some(Arc::new(
            crate::authz::expressions::ExpressionAuthorizer::new(
                self.authorizer.clone(),
                user.clone(),
            ),
        ))
    }

    fn namespace(&self, name: &str) -> Option<Value> {
        let rt = self.catalog.lookup("", "v1", "namespaces")?;
        self.object(&rt.key(None, name))
    }

    fn param_kind_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.resource_type(api_version, kind).map(|t| t.namespaced)
    }

    fn params(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        selector: Option<&Value>,
    ) -> Vec<Value> {
        let Some(rt) = self.resource_type(api_version, kind) else {
            return Vec::new();
        };
        if let Some(name) = name {
            return self.object(&rt.key(namespace, name)).into_iter().collect();
        }
        let selector = selector.cloned().unwrap_or(Value::Null);
        let (objects, _) = self.cache.list(&rt.namespace_prefix(namespace));
        // In key order, as many as a binding evaluates at most.
        objects
            .iter()
            .map(|event| event.object())
            .filter(|object| {
                crate::registry::selector::matches_label_selector(
                    &selector,
                    &object["metadata"]["labels"],
                )
            })
            .take(super::evaluate::MAX_PARAMS)
            .map(|object| object.as_ref().clone())
            .collect()
    }
}
