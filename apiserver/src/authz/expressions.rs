//! The authorizer policy expressions check with (`authorizer.group('').resource('pods')
//! .check('get')`): the one that decides requests, for the user who sent the request being
//! admitted, or for the service account `authorizer.serviceAccount(ns, name)` names. As
//! upstream's admission wraps its authorizer in a caching one for the duration of one
//! request, each instance remembers its decisions: it is made for one request and dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use atoll_cel::library::authz::{self, Target};

use super::{Attributes, Authorizer, Decision, Request, ResourceRequest};
use crate::auth::User;

/// Decides the checks of one request's policy expressions.
pub struct ExpressionAuthorizer {
    authorizer: Arc<Authorizer>,
    user: User,
    /// Decisions so far, by what was asked.
    decided: Mutex<HashMap<String, authz::Decision>>,
}

impl ExpressionAuthorizer {
    pub fn new(authorizer: Arc<Authorizer>, user: User) -> Self {
        ExpressionAuthorizer {
            authorizer,
            user,
            decided: Mutex::new(HashMap::new()),
        }
    }
}

impl std::fmt::Debug for ExpressionAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExpressionAuthorizer")
            .field("user", &self.user.name)
            .finish_non_exhaustive()
    }
}

/// The request attributes of a check (selectors, which RBAC does not read, left out).
pub fn attributes(asked: &authz::Attributes<'_>) -> Attributes {
    let set = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let request = match asked.target {
        Target::Path(path) => Request::Path(path.to_owned()),
        Target::Resource(r) => Request::Resource(ResourceRequest {
            group: r.group.to_owned(),
            resource: r.resource.to_owned(),
            subresource: set(r.subresource),
            namespace: set(r.namespace),
            name: set(r.name),
        }),
    };
    Attributes {
        verb: asked.verb.to_owned(),
        request,
    }
}

/// The user a check is for: the service account it names, else `requester`.
fn subject(requester: &User, asked: &authz::Attributes<'_>) -> User {
    match asked.service_account {
        Some(account) => User {
            name: account.username(),
            uid: String::new(),
            groups: account.groups(),
            extra: Default::default(),
        },
        None => requester.clone(),
    }
}

impl authz::Authorizer for ExpressionAuthorizer {
    fn authorize(&self, asked: &authz::Attributes<'_>) -> authz::Decision {
        let key = format!("{asked:?}");
        let mut decided = self.decided.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(decision) = decided.get(&key) {
            return decision.clone();
        }
        let decision = match self
            .authorizer
            .authorize(&subject(&self.user, asked), &attributes(asked))
        {
            Decision::Allow(reason) => authz::Decision::allow(reason),
            Decision::Deny(reason) => authz::Decision::deny(reason),
        };
        decided.insert(key, decision.clone());
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: Default::default(),
        }
    }

    /// RBAC with one Role in `team-a` granting get on configmaps, bound to alice and to the
    /// service account `team-a:robot`.
    fn rbac() -> Arc<Authorizer> {
        let role = json!({"metadata": {"name": "reader", "namespace": "team-a"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]});
        let binding = json!({"metadata": {"name": "readers", "namespace": "team-a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "robot", "namespace": "team-a"}]});
        let authorizer = Arc::new(Authorizer::new(None));
        authorizer.load_objects(
            [
                (
                    "/registry/rbac.authorization.k8s.io/roles/team-a/reader",
                    &role,
                ),
                (
                    "/registry/rbac.authorization.k8s.io/rolebindings/team-a/readers",
                    &binding,
                ),
            ]
            .into_iter(),
        );
        authorizer
    }

    fn configmaps(verb: &'static str, namespace: &'static str) -> authz::Attributes<'static> {
        authz::Attributes {
            service_account: None,
            verb,
            target: Target::Resource(authz::ResourceAttributes {
                resource: "configmaps",
                namespace,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn decides_by_rbac_for_the_requester() {
        use authz::Authorizer as _;
        let alice = ExpressionAuthorizer::new(rbac(), user("alice", &["system:authenticated"]));
        let allowed = alice.authorize(&configmaps("get", "team-a"));
        assert!(allowed.allowed, "{allowed:?}");
        assert!(allowed.reason.starts_with("RBAC: allowed by RoleBinding"));
        assert!(!alice.authorize(&configmaps("update", "team-a")).allowed);
        assert!(!alice.authorize(&configmaps("get", "team-b")).allowed);
        let bob = ExpressionAuthorizer::new(rbac(), user("bob", &[]));
        assert!(!bob.authorize(&configmaps("get", "team-a")).allowed);
        let admin = ExpressionAuthorizer::new(rbac(), user("admin", &[super::super::MASTERS]));
        assert!(admin.authorize(&configmaps("delete", "team-b")).allowed);
    }

    #[test]
    fn service_accounts_are_decided_as_themselves() {
        use authz::Authorizer as _;
        let bob = ExpressionAuthorizer::new(rbac(), user("bob", &[super::super::MASTERS]));
        let robot = authz::ServiceAccount {
            namespace: "team-a",
            name: "robot",
        };
        let mut asked = configmaps("get", "team-a");
        asked.service_account = Some(robot);
        assert!(bob.authorize(&asked).allowed);
        asked.verb = "delete";
        // Not bob's `system:masters`: the robot's own rights.
        assert!(!bob.authorize(&asked).allowed);
    }

    #[test]
    fn paths_are_non_resource_requests() {
        let asked = authz::Attributes {
            service_account: None,
            verb: "get",
            target: Target::Path("/healthz"),
        };
        assert_eq!(
            attributes(&asked),
            Attributes {
                verb: "get".into(),
                request: Request::Path("/healthz".into()),
            }
        );
    }
}
