//! Authorization, as kube-apiserver decides it: members of `system:masters` may do everything,
//! and RBAC decides for everyone else. Every request is authorized before its body is read,
//! by verb, API group, resource, subresource, namespace and name (or by path), and refused with
//! upstream's words (`configmaps "x" is forbidden: User "alice" cannot get resource
//! "configmaps" in API group "" in the namespace "team-a"`).
//!
//! The authorizer decides from the Roles, ClusterRoles and bindings in memory ([`Policy`]),
//! which a controller keeps up to date from the watch cache; the same controller aggregates
//! ClusterRoles (`aggregationRule`). A client that changed RBAC objects sees its change in the
//! decisions on its next request (the server waits for the policy to take in an RBAC write
//! before answering it). [`defaults`] holds the roles and bindings every cluster starts with.

use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Instant;

use atoll_runtime::backoff::Retries;
use serde_json::Value;
use tokio::sync::watch;

use crate::auth::User;
use crate::error::{Error, Result, Target};
use crate::registry::store::{ListOptions, PatchType, Store, WriteOptions};
use crate::storage::{EventKind, Revision};
use crate::watch::{CachedEvent, Feed, Taken, WatchCache, next_pass};

pub mod defaults;
pub mod escalation;
pub mod expressions;
pub mod impersonation;
pub mod policy;
pub mod rules;

pub use policy::{GROUP, Policy, Verdict};
pub use rules::Rule;

/// The group whose members may do everything, whatever RBAC says.
pub const MASTERS: &str = "system:masters";
/// The field manager of the ClusterRoles the aggregation controller writes.
const AGGREGATION_MANAGER: &str = "clusterrole-aggregation-controller";
/// How long a write to an RBAC object waits for the authorizer to take it in.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(5);

/// What a request asks to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    pub request: Request,
}

/// What a request is for: a resource, or a path that is none (`/healthz`, `/apis`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Resource(ResourceRequest),
    Path(String),
}

/// The resource a request is for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRequest {
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Attributes {
    pub fn resource(verb: &str, resource: ResourceRequest) -> Self {
        Attributes {
            verb: verb.to_owned(),
            request: Request::Resource(resource),
        }
    }

    /// Upstream's `forbiddenMessage`: `User "u" cannot get resource "pods/log" in API group ""
    /// in the namespace "ns"`, or `... cannot get path "/x"`.
    fn refusal(&self, user: &User) -> String {
        match &self.request {
            Request::Path(path) => {
                format!("User {:?} cannot {} path {path:?}", user.name, self.verb)
            }
            Request::Resource(r) => {
                let resource = match &r.subresource {
                    Some(sub) => format!("{}/{sub}", r.resource),
                    None => r.resource.clone(),
                };
                let scope = match r.namespace.as_deref().filter(|ns| !ns.is_empty()) {
                    Some(ns) => format!("in the namespace {ns:?}"),
                    None => "at the cluster scope".to_owned(),
                };
                format!(
                    "User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
                    user.name, self.verb, r.group
                )
            }
        }
    }

    /// The 403 of a refused request, worded as kube-apiserver words it (`reason`, when the
    /// authorizer gave one, is appended).
    pub fn forbidden(&self, user: &User, reason: &str) -> Error {
        let mut refusal = self.refusal(user);
        if !reason.is_empty() {
            refusal = format!("{refusal}: {reason}");
        }
        match &self.request {
            Request::Resource(r) => {
                let qualified = if r.group.is_empty() {
                    r.resource.clone()
                } else {
                    format!("{}.{}", r.resource, r.group)
                };
                let name = r.name.as_deref().unwrap_or_default();
                let message = if name.is_empty() {
                    format!("{qualified} is forbidden: {refusal}")
                } else {
                    format!("{qualified} {name:?} is forbidden: {refusal}")
                };
                Error::Denied {
                    target: Some(Target::new(&r.group, &r.resource, name)),
                    message,
                }
            }
            Request::Path(_) => Error::Denied {
                target: None,
                message: format!("forbidden: {refusal}"),
            },
        }
    }
}

/// The authorizer's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    Deny(String),
}

impl Decision {
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// Decides requests: `system:masters`, then RBAC.
pub struct Authorizer {
    policy: RwLock<Loaded>,
    /// The RBAC objects' changes, as the watch cache takes them.
    feed: Option<Arc<Feed>>,
}

/// The policy, and the revision it was listed at (older events are already in it).
#[derive(Default)]
pub(crate) struct Loaded {
    policy: Policy,
    listed_at: Revision,
}

/// What the authorizer's controller follows: every change to an RBAC object.
pub fn wants(event: &CachedEvent) -> bool {
    event.key.starts_with(&format!("/registry/{GROUP}/"))
}

impl Authorizer {
    /// An authorizer that follows `feed` (made with [`wants`]); its policy is empty until
    /// [`Authorizer::load`].
    pub fn new(feed: Option<Arc<Feed>>) -> Self {
        Authorizer {
            policy: RwLock::new(Loaded::default()),
            feed,
        }
    }

    /// The policy as it stands.
    pub(crate) fn policy(&self) -> RwLockReadGuard<'_, Loaded> {
        match self.policy.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether `user` may do what `attributes` say.
    pub fn authorize(&self, user: &User, attributes: &Attributes) -> Decision {
        if user.groups.iter().any(|g| g == MASTERS) {
            return Decision::Allow(String::new());
        }
        match self.policy().authorize(user, attributes) {
            Verdict::Allowed(reason) => Decision::Allow(reason),
            Verdict::NoOpinion(reason) => Decision::Deny(reason),
        }
    }

    /// Refuses what `user` may not do: 403, or 401 for an anonymous caller (who may only read
    /// what RBAC opens to `system:unauthenticated`: health and version, by default).
    pub fn check(&self, user: &User, attributes: &Attributes) -> Result<()> {
        if user.groups.iter().any(|g| g == MASTERS) {
            return Ok(());
        }
        match self.policy().allows(user, attributes) {
            Verdict::Allowed(_) => Ok(()),
            Verdict::NoOpinion(_) if user.is_anonymous() => Err(Error::Unauthorized),
            Verdict::NoOpinion(reason) => Err(attributes.forbidden(user, &reason)),
        }
    }

    /// Every rule `user` holds in `namespace`, and the roles bindings named that are missing.
    pub fn rules_for(&self, user: &User, namespace: Option<&str>) -> (Vec<Rule>, Vec<String>) {
        if user.groups.iter().any(|g| g == MASTERS) {
            return (Rule::everything().to_vec(), Vec::new());
        }
        self.policy().rules_for(user, namespace)
    }

    /// Lists every RBAC object and makes them the policy.
    pub async fn load(&self, store: &Store) -> Result<()> {
        let mut policy = Policy::default();
        let mut listed_at = 0;
        for plural in [
            "clusterroles",
            "roles",
            "clusterrolebindings",
            "rolebindings",
        ] {
            let rt = rbac_type(store, plural)?;
            let list = store.list(&rt, None, &ListOptions::default()).await?;
            listed_at = listed_at.max(list.revision);
            for object in &list.items {
                let ns = object["metadata"]["namespace"].as_str();
                let name = object["metadata"]["name"].as_str().unwrap_or_default();
                policy.apply(&rt.key(ns, name), Some(object));
            }
        }
        *self.write() = Loaded { policy, listed_at };
        Ok(())
    }

    /// Makes `objects` (storage key and object) the policy, as [`Authorizer::load`] does from
    /// storage (for measurements and tests that have no store).
    pub fn load_objects<'a>(&self, objects: impl Iterator<Item = (&'a str, &'a Value)>) {
        let mut policy = Policy::default();
        for (key, object) in objects {
            policy.apply(key, Some(object));
        }
        *self.write() = Loaded {
            policy,
            listed_at: 0,
        };
    }

    /// Takes in what the feed holds. Returns whether a ClusterRole changed, or `Err` when the
    /// feed fell behind (the policy must be loaded again).
    pub fn refresh(&self) -> std::result::Result<bool, Lagged> {
        let Some(feed) = &self.feed else {
            return Ok(false);
        };
        let mut loaded = self.write();
        let events = match feed.take() {
            Taken::Events(events) => events,
            Taken::Lagged => return Err(Lagged),
        };
        let mut cluster_roles = false;
        let listed_at = loaded.listed_at;
        for event in events.iter().filter(|e| e.revision > listed_at) {
            let object = (event.kind != EventKind::Delete).then(|| event.object().as_ref());
            loaded.policy.apply(&event.key, object);
            cluster_roles |= event.key.contains("/clusterroles/");
        }
        Ok(cluster_roles)
    }

    /// Waits until the watch cache has every write up to now and takes them in, so that the
    /// caller's next request is decided by the policy its write made (5 s at most).
    pub async fn catch_up(&self, store: &Store, cache: &WatchCache) {
        let now = store.backend().current_revision();
        let mut changes = cache.subscribe();
        let _ = tokio::time::timeout(CATCH_UP, changes.wait_for(|seen| *seen >= now)).await;
        let _ = self.refresh();
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Loaded> {
        match self.policy.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

impl std::ops::Deref for Loaded {
    type Target = Policy;
    fn deref(&self) -> &Policy {
        &self.policy
    }
}

/// The feed fell behind.
#[derive(Debug)]
pub struct Lagged;

fn rbac_type(store: &Store, plural: &str) -> Result<Arc<crate::registry::ResourceType>> {
    store
        .registry()
        .catalog()
        .lookup(GROUP, "v1", plural)
        .ok_or(Error::UnknownPath)
}

/// The authorizer of a server about to serve: the default roles and bindings reconciled, the
/// aggregated ClusterRoles up to date, every RBAC object loaded, and `feed` (made with
/// [`wants`] before) followed from there by [`run`].
pub async fn prepare(store: &Store, feed: Arc<Feed>) -> Result<Arc<Authorizer>> {
    defaults::ensure(store).await?;
    let authorizer = Arc::new(Authorizer::new(Some(feed)));
    authorizer.load(store).await?;
    aggregate(store, &authorizer).await?;
    authorizer.load(store).await?;
    Ok(authorizer)
}

/// The authorizer's controller: takes in RBAC changes as the watch cache has them, loads
/// everything again when it fell behind, and after any ClusterRole change brings the
/// aggregated ClusterRoles up to date. Runs until `shutdown` turns true.
pub async fn run(
    store: Arc<Store>,
    authorizer: Arc<Authorizer>,
    feed: Arc<Feed>,
    mut shutdown: watch::Receiver<bool>,
) {
    // A failed aggregation (or load of the RBAC objects) is tried again after its backoff, or
    // at once when the RBAC objects change.
    let mut retries = Retries::default();
    let mut aggregation_due = true;
    // The load after falling behind failed: the policy misses changes until it is loaded again.
    let mut reload = false;
    loop {
        if aggregation_due {
            match aggregate(&store, &authorizer).await {
                Ok(()) => retries.succeeded(&()),
                Err(error) => {
                    let (failures, wait) = retries.failed((), Instant::now());
                    tracing::warn!(%error, failures, retry_in = ?wait, "cannot aggregate ClusterRoles; retrying");
                }
            }
        }
        if !next_pass(&feed, false, &retries, &mut shutdown).await {
            return;
        }
        let retry_due = !retries.due(Instant::now()).is_empty();
        let refreshed = if reload {
            Err(Lagged)
        } else {
            authorizer.refresh()
        };
        aggregation_due = match refreshed {
            Ok(changed) => changed || retry_due,
            Err(Lagged) => match authorizer.load(&store).await {
                Ok(()) => {
                    reload = false;
                    true
                }
                Err(error) => {
                    reload = true;
                    let (failures, wait) = retries.failed((), Instant::now());
                    tracing::warn!(%error, failures, retry_in = ?wait, "cannot list the RBAC objects; retrying");
                    false
                }
            },
        };
    }
}

/// Upstream's ClusterRole aggregation: a ClusterRole with an `aggregationRule` holds the rules
/// of every other ClusterRole its selectors pick (by name order, each rule once). Roles that
/// aggregate aggregated roles (admin takes edit's, which takes view's) are followed to the end
/// in one go. Returns the roles whose rules must change, and their rules.
fn aggregated_rules(policy: &Policy) -> Vec<(String, Vec<Rule>)> {
    let mut roles = policy.cluster_roles.clone();
    let mut names: Vec<String> = roles.keys().cloned().collect();
    names.sort();
    // Each pass settles at least one more level of nesting; a cycle stops after as many
    // passes as there are roles.
    for _ in 0..=names.len() {
        let mut changed = false;
        for name in &names {
            let Some(selectors) = roles[name].aggregation.clone() else {
                continue;
            };
            let mut rules: Vec<Rule> = Vec::new();
            for selector in &selectors {
                for other in names.iter().filter(|n| *n != name) {
                    let picked = &roles[other];
                    if !crate::registry::selector::matches_label_selector(selector, &picked.labels)
                    {
                        continue;
                    }
                    for rule in &picked.rules {
                        if !rules.contains(rule) {
                            rules.push(rule.clone());
                        }
                    }
                }
            }
            if let Some(role) = roles.get_mut(name)
                && role.rules != rules
            {
                role.rules = rules;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let rules = roles.remove(&name)?.rules;
            (rules != policy.cluster_roles[&name].rules).then_some((name, rules))
        })
        .collect()
}

async fn aggregate(store: &Store, authorizer: &Authorizer) -> Result<()> {
    let due = aggregated_rules(&authorizer.policy());
    if due.is_empty() {
        return Ok(());
    }
    let rt = rbac_type(store, "clusterroles")?;
    let options = WriteOptions {
        field_manager: AGGREGATION_MANAGER.into(),
        actor: Some(crate::registry::actor::Actor::ClusterRoleAggregation),
        ..WriteOptions::default()
    };
    for (name, rules) in due {
        let rules: Vec<Value> = rules.iter().map(Rule::to_json).collect();
        let patch = serde_json::to_vec(&serde_json::json!({ "rules": rules }))
            .map_err(|e| Error::Internal(e.to_string()))?;
        match store
            .patch(&rt, None, &name, None, PatchType::Merge, &patch, &options)
            .await
        {
            Ok(_) | Err(Error::NotFound(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refusals_are_worded_as_upstream() {
        let alice = User {
            name: "alice".into(),
            ..User::default()
        };
        let get = Attributes::resource(
            "get",
            ResourceRequest {
                resource: "configmaps".into(),
                namespace: Some("team-a".into()),
                name: Some("x".into()),
                ..ResourceRequest::default()
            },
        );
        assert_eq!(
            get.forbidden(&alice, "").to_string(),
            r#"configmaps "x" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "team-a""#
        );
        let list = Attributes::resource(
            "list",
            ResourceRequest {
                group: "apps".into(),
                resource: "deployments".into(),
                ..ResourceRequest::default()
            },
        );
        assert_eq!(
            list.forbidden(&alice, "").to_string(),
            r#"deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" at the cluster scope"#
        );
        let path = Attributes {
            verb: "get".into(),
            request: Request::Path("/metrics".into()),
        };
        assert_eq!(
            path.forbidden(&alice, "").to_string(),
            r#"forbidden: User "alice" cannot get path "/metrics""#
        );
    }

    #[test]
    fn aggregation_collects_the_rules_of_the_roles_selected() {
        let mut policy = Policy::default();
        let key = |name: &str| format!("/registry/{GROUP}/clusterroles/{name}");
        policy.apply(
            &key("view"),
            Some(&json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"aggregate-to-view": "true"}}]}})),
        );
        policy.apply(
            &key("b-extra"),
            Some(
                &json!({"metadata": {"labels": {"aggregate-to-view": "true"}},
                "rules": [{"verbs": ["get"], "apiGroups": ["x.io"], "resources": ["things"]}]}),
            ),
        );
        policy.apply(
            &key("a-base"),
            Some(
                &json!({"metadata": {"labels": {"aggregate-to-view": "true"}},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                          {"verbs": ["get"], "apiGroups": ["x.io"], "resources": ["things"]}]}),
            ),
        );
        policy.apply(
            &key("unrelated"),
            Some(&json!({"rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]})),
        );
        let due = aggregated_rules(&policy);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].0, "view");
        let resources: Vec<&str> = due[0].1.iter().map(|r| r.resources[0].as_str()).collect();
        assert_eq!(
            resources,
            ["pods", "things"],
            "by name order, each rule once"
        );
    }
}
