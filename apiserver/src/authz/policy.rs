//! The RBAC objects the authorizer decides with, kept in memory from the watch cache, and their
//! evaluation (upstream's `rbac.go` and `registry/rbac/validation/rule.go`): every
//! ClusterRoleBinding first, then the RoleBindings of the request's namespace; the first rule
//! that allows the request decides.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::rules::Rule;
use super::{Attributes, Request};
use crate::auth::User;

pub const GROUP: &str = "rbac.authorization.k8s.io";

/// A ClusterRole: its rules, its labels (what aggregation selects by) and its aggregation rule.
#[derive(Clone, Debug, Default)]
pub struct ClusterRole {
    pub rules: Vec<Rule>,
    pub labels: Value,
    /// `aggregationRule.clusterRoleSelectors`, when the role aggregates others.
    pub aggregation: Option<Vec<Value>>,
}

/// A binding's `roleRef`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleRef {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    pub name: String,
}

/// One subject of a binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug)]
pub struct Binding {
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

impl Binding {
    pub fn from_json(binding: &Value) -> Binding {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Binding {
            role_ref: RoleRef {
                kind: text(&binding["roleRef"]["kind"]),
                name: text(&binding["roleRef"]["name"]),
            },
            subjects: binding["subjects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| Subject {
                    kind: text(&s["kind"]),
                    name: text(&s["name"]),
                    namespace: text(&s["namespace"]),
                })
                .collect(),
        }
    }

    /// The first subject that stands for `user` (a ServiceAccount without a namespace is one
    /// of the binding's namespace, so it never matches in a ClusterRoleBinding).
    fn subject_for(&self, user: &User, binding_namespace: &str) -> Option<&Subject> {
        self.subjects.iter().find(|s| match s.kind.as_str() {
            "User" => s.name == user.name,
            "Group" => user.groups.contains(&s.name),
            "ServiceAccount" => {
                let ns = if s.namespace.is_empty() {
                    binding_namespace
                } else {
                    &s.namespace
                };
                !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", s.name)
            }
            _ => false,
        })
    }
}

/// Every Role, ClusterRole and binding, by name.
#[derive(Default)]
pub struct Policy {
    pub cluster_roles: HashMap<String, ClusterRole>,
    pub roles: HashMap<(String, String), Vec<Rule>>,
    pub cluster_bindings: BTreeMap<String, Binding>,
    pub bindings: HashMap<String, BTreeMap<String, Binding>>,
}

/// What the policy says of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed, and by what: `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`.
    Allowed(String),
    /// No rule allows it; the reason lists roles that bindings named and that do not exist.
    NoOpinion(String),
}

/// Where a rule came from, for the reasons the authorizer gives.
pub struct Source<'a> {
    binding_kind: &'static str,
    binding: &'a str,
    namespace: &'a str,
    role_ref: &'a RoleRef,
    subject: &'a Subject,
}

impl std::fmt::Display for Source<'_> {
    /// As upstream describes it: `RoleBinding "name/namespace" of ClusterRole "r" to User "u"`,
    /// a service account as `ServiceAccount "name/namespace"`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let binding = if self.namespace.is_empty() {
            self.binding.to_owned()
        } else {
            format!("{}/{}", self.binding, self.namespace)
        };
        let subject = match self.subject.kind.as_str() {
            "ServiceAccount" => {
                let ns = if self.subject.namespace.is_empty() {
                    self.namespace
                } else {
                    &self.subject.namespace
                };
                // Upstream's order: the name, then the namespace.
                format!("{}/{ns}", self.subject.name)
            }
            _ => self.subject.name.clone(),
        };
        write!(
            f,
            "{} {binding:?} of {} {:?} to {} {subject:?}",
            self.binding_kind, self.role_ref.kind, self.role_ref.name, self.subject.kind
        )
    }
}

impl Policy {
    /// Takes in a stored RBAC object under `key` (`None`: it was deleted).
    pub fn apply(&mut self, key: &str, object: Option<&Value>) {
        let Some(rest) = key.strip_prefix(&format!("/registry/{GROUP}/")) else {
            return;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        match (parts.as_slice(), object) {
            (["clusterroles", name], Some(role)) => {
                let aggregation = role["aggregationRule"]["clusterRoleSelectors"]
                    .as_array()
                    .cloned();
                self.cluster_roles.insert(
                    (*name).to_owned(),
                    ClusterRole {
                        rules: Rule::all_of(role),
                        labels: role["metadata"]["labels"].clone(),
                        aggregation,
                    },
                );
            }
            (["clusterroles", name], None) => {
                self.cluster_roles.remove(*name);
            }
            (["roles", ns, name], Some(role)) => {
                self.roles
                    .insert(((*ns).to_owned(), (*name).to_owned()), Rule::all_of(role));
            }
            (["roles", ns, name], None) => {
                self.roles.remove(&((*ns).to_owned(), (*name).to_owned()));
            }
            (["clusterrolebindings", name], Some(binding)) => {
                self.cluster_bindings
                    .insert((*name).to_owned(), Binding::from_json(binding));
            }
            (["clusterrolebindings", name], None) => {
                self.cluster_bindings.remove(*name);
            }
            (["rolebindings", ns, name], Some(binding)) => {
                self.bindings
                    .entry((*ns).to_owned())
                    .or_default()
                    .insert((*name).to_owned(), Binding::from_json(binding));
            }
            (["rolebindings", ns, name], None) => {
                if let Some(in_ns) = self.bindings.get_mut(*ns) {
                    in_ns.remove(*name);
                    if in_ns.is_empty() {
                        self.bindings.remove(*ns);
                    }
                }
            }
            _ => {}
        }
    }

    /// The rules a binding's `roleRef` names, from the binding in `namespace` (`""` for a
    /// ClusterRoleBinding), or why they cannot be found.
    pub fn rules_of(&self, role_ref: &RoleRef, namespace: &str) -> Result<&[Rule], String> {
        match role_ref.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .map(|r| r.rules.as_slice())
                .ok_or_else(|| format!("clusterrole.{GROUP} {:?} not found", role_ref.name)),
            "Role" if !namespace.is_empty() => self
                .roles
                .get(&(namespace.to_owned(), role_ref.name.clone()))
                .map(Vec::as_slice)
                .ok_or_else(|| format!("role.{GROUP} {:?} not found", role_ref.name)),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// Visits every rule `user` holds where `namespace` is (`None`: at the cluster scope, only
    /// ClusterRoleBindings count), ClusterRoleBindings first, until `visit` returns false.
    /// Returns the roles that bindings named and that could not be found.
    pub fn visit(
        &self,
        user: &User,
        namespace: Option<&str>,
        mut visit: impl FnMut(&Source<'_>, &Rule) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let namespaced = namespace
            .filter(|ns| !ns.is_empty())
            .and_then(|ns| self.bindings.get(ns).map(|b| (ns, b)));
        let cluster = self
            .cluster_bindings
            .iter()
            .map(|(name, binding)| ("ClusterRoleBinding", "", name, binding));
        let local = namespaced.into_iter().flat_map(|(ns, bindings)| {
            bindings
                .iter()
                .map(move |(name, binding)| ("RoleBinding", ns, name, binding))
        });
        for (binding_kind, ns, name, binding) in cluster.chain(local) {
            let Some(subject) = binding.subject_for(user, ns) else {
                continue;
            };
            let rules = match self.rules_of(&binding.role_ref, ns) {
                Ok(rules) => rules,
                Err(error) => {
                    errors.push(error);
                    continue;
                }
            };
            let source = Source {
                binding_kind,
                binding: name,
                namespace: ns,
                role_ref: &binding.role_ref,
                subject,
            };
            for rule in rules {
                if !visit(&source, rule) {
                    return errors;
                }
            }
        }
        errors
    }

    /// Whether RBAC allows the request, and why.
    pub fn authorize(&self, user: &User, attributes: &Attributes) -> Verdict {
        self.decide(user, attributes, true)
    }

    /// Whether RBAC allows the request; the reason of an allowed one left empty (requests need
    /// no reason, and writing it costs more than deciding).
    pub fn allows(&self, user: &User, attributes: &Attributes) -> Verdict {
        self.decide(user, attributes, false)
    }

    fn decide(&self, user: &User, attributes: &Attributes, reason: bool) -> Verdict {
        let namespace = match &attributes.request {
            Request::Resource(r) => r.namespace.as_deref(),
            Request::Path(_) => None,
        };
        let mut allowed = None;
        let errors = self.visit(user, namespace, |source, rule| {
            if rule.allows(attributes) {
                allowed = Some(if reason {
                    format!("RBAC: allowed by {source}")
                } else {
                    String::new()
                });
                return false;
            }
            true
        });
        match allowed {
            Some(reason) => Verdict::Allowed(reason),
            None if errors.is_empty() => Verdict::NoOpinion(String::new()),
            None => Verdict::NoOpinion(format!("RBAC: {}", errors.join(", "))),
        }
    }

    /// Every rule `user` holds in `namespace`, and the roles bindings named that are missing.
    pub fn rules_for(&self, user: &User, namespace: Option<&str>) -> (Vec<Rule>, Vec<String>) {
        let mut rules = Vec::new();
        let errors = self.visit(user, namespace, |_, rule| {
            rules.push(rule.clone());
            true
        });
        (rules, errors)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::authz::ResourceRequest;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..User::default()
        }
    }

    fn get(resource: &str, ns: Option<&str>) -> Attributes {
        Attributes {
            verb: "get".into(),
            request: Request::Resource(ResourceRequest {
                group: String::new(),
                resource: resource.into(),
                subresource: None,
                namespace: ns.map(Into::into),
                name: Some("x".into()),
            }),
        }
    }

    fn policy() -> Policy {
        let mut p = Policy::default();
        let key = |rest: &str| format!("/registry/{GROUP}/{rest}");
        p.apply(
            &key("clusterroles/read-cm"),
            Some(&json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]})),
        );
        p.apply(
            &key("roles/team-a/read-secrets"),
            Some(&json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]})),
        );
        p.apply(
            &key("rolebindings/team-a/alice-cm"),
            Some(
                &json!({"roleRef": {"kind": "ClusterRole", "name": "read-cm"},
                "subjects": [{"kind": "User", "name": "alice"}]}),
            ),
        );
        p.apply(
            &key("rolebindings/team-a/builders"),
            Some(&json!({"roleRef": {"kind": "Role", "name": "read-secrets"},
                "subjects": [{"kind": "ServiceAccount", "name": "builder"}]})),
        );
        p.apply(
            &key("clusterrolebindings/devs"),
            Some(
                &json!({"roleRef": {"kind": "ClusterRole", "name": "read-cm"},
                "subjects": [{"kind": "Group", "name": "devs"},
                             {"kind": "ServiceAccount", "name": "nowhere"}]}),
            ),
        );
        p
    }

    #[test]
    fn bindings_grant_their_roles_where_they_are() {
        let p = policy();
        let alice = user("alice", &["system:authenticated"]);
        assert_eq!(
            p.authorize(&alice, &get("configmaps", Some("team-a"))),
            Verdict::Allowed(
                r#"RBAC: allowed by RoleBinding "alice-cm/team-a" of ClusterRole "read-cm" to User "alice""#
                    .into()
            )
        );
        assert!(matches!(
            p.authorize(&alice, &get("configmaps", Some("team-b"))),
            Verdict::NoOpinion(_)
        ));
        assert!(matches!(
            p.authorize(&alice, &get("configmaps", None)),
            Verdict::NoOpinion(_)
        ));
        let dev = user("bob", &["devs"]);
        assert!(matches!(
            p.authorize(&dev, &get("configmaps", None)),
            Verdict::Allowed(_)
        ));
        let builder = user("system:serviceaccount:team-a:builder", &[]);
        assert!(matches!(
            p.authorize(&builder, &get("secrets", Some("team-a"))),
            Verdict::Allowed(_)
        ));
        let nowhere = user("system:serviceaccount::nowhere", &[]);
        assert!(
            matches!(
                p.authorize(&nowhere, &get("configmaps", None)),
                Verdict::NoOpinion(_)
            ),
            "a service account without a namespace never matches in a ClusterRoleBinding"
        );
    }

    #[test]
    fn missing_roles_are_the_reason_and_deletions_take_effect() {
        let mut p = policy();
        p.apply(
            &format!("/registry/{GROUP}/roles/team-a/read-secrets"),
            None,
        );
        let builder = user("system:serviceaccount:team-a:builder", &[]);
        assert_eq!(
            p.authorize(&builder, &get("secrets", Some("team-a"))),
            Verdict::NoOpinion(format!("RBAC: role.{GROUP} \"read-secrets\" not found"))
        );
        p.apply(&format!("/registry/{GROUP}/clusterrolebindings/devs"), None);
        assert!(matches!(
            p.authorize(&user("bob", &["devs"]), &get("configmaps", None)),
            Verdict::NoOpinion(_)
        ));
    }
}
