//! RBAC's escalation prevention (upstream's `policybased` storage of roles and bindings): a
//! caller may write a Role or ClusterRole only with rules it holds itself where the role
//! applies, and bind a role only if it holds the role's rules there, unless it may `escalate`
//! that role or `bind` it. `system:masters` may do both.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::rules::Rule;
use super::{Attributes, Authorizer, GROUP, MASTERS, ResourceRequest};
use crate::auth::User;
use crate::error::{Error, Result, Target};
use crate::registry::ResourceType;
use crate::registry::store::Admission;

/// The check of one caller's writes to RBAC objects.
pub struct Escalation {
    pub authorizer: Arc<Authorizer>,
    pub user: User,
}

impl Admission for Escalation {
    fn admit(
        &self,
        rt: &ResourceType,
        object: &Value,
        old: Option<&Value>,
        _warnings: &mut Vec<String>,
    ) -> Result<()> {
        if rt.group != GROUP || self.user.groups.iter().any(|g| g == MASTERS) {
            return Ok(());
        }
        let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        match rt.plural.as_str() {
            "roles" | "clusterroles" => self.role(rt, ns, name, object, old),
            "rolebindings" | "clusterrolebindings" => self.binding(rt, ns, name, object, old),
            _ => Ok(()),
        }
    }
}

impl Escalation {
    fn allowed(&self, verb: &str, resource: &str, ns: &str, name: &str) -> bool {
        let attributes = Attributes::resource(
            verb,
            ResourceRequest {
                group: GROUP.into(),
                resource: resource.into(),
                subresource: None,
                namespace: (!ns.is_empty()).then(|| ns.to_owned()),
                name: Some(name.to_owned()),
            },
        );
        self.authorizer.authorize(&self.user, &attributes).allowed()
    }

    fn role(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<()> {
        let unchanged = |field: &str| old.is_some_and(|old| old[field] == object[field]);
        if unchanged("rules") && unchanged("aggregationRule") {
            // An update of metadata only (labels, owners, finalizers).
            return Ok(());
        }
        if self.allowed("escalate", &rt.plural, ns, name) {
            return Ok(());
        }
        let aggregates = |role: &Value| role["aggregationRule"].is_object();
        if aggregates(object) || old.is_some_and(aggregates) {
            if !self.missing(&Rule::everything(), ns).0.is_empty() {
                return Err(forbidden(
                    rt,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule".into(),
                ));
            }
            return Ok(());
        }
        self.confirm(rt, name, ns, &Rule::all_of(object))
    }

    fn binding(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<()> {
        let unchanged = |field: &str| old.is_some_and(|old| old[field] == object[field]);
        if unchanged("roleRef") && unchanged("subjects") {
            return Ok(());
        }
        let binding = super::policy::Binding::from_json(object);
        let role_resource = match binding.role_ref.kind.as_str() {
            "Role" => "roles",
            _ => "clusterroles",
        };
        if self.allowed("bind", role_resource, ns, &binding.role_ref.name) {
            return Ok(());
        }
        let rules = {
            let policy = self.authorizer.policy();
            match policy.rules_of(&binding.role_ref, ns) {
                Ok(rules) => rules.to_vec(),
                Err(_) => {
                    let singular = role_resource.trim_end_matches('s');
                    return Err(Error::NotFound(Target::new(
                        GROUP,
                        singular,
                        &binding.role_ref.name,
                    )));
                }
            }
        };
        self.confirm(rt, name, ns, &rules)
    }

    /// The grants of `rules` that the caller does not hold in `ns`, compacted, and the roles
    /// its bindings name that are missing.
    fn missing(&self, rules: &[Rule], ns: &str) -> (Vec<Rule>, Vec<String>) {
        let namespace = (!ns.is_empty()).then_some(ns);
        let (owned, errors) = self.authorizer.rules_for(&self.user, namespace);
        let missing: Vec<Rule> = rules
            .iter()
            .flat_map(Rule::atoms)
            .filter(|atom| !owned.iter().any(|o| o.covers(atom)))
            .collect();
        (compact(missing), errors)
    }

    /// Upstream's `ConfirmNoEscalation`.
    fn confirm(&self, rt: &ResourceType, name: &str, ns: &str, rules: &[Rule]) -> Result<()> {
        let (missing, errors) = self.missing(rules, ns);
        if missing.is_empty() {
            return Ok(());
        }
        let groups: Vec<String> = self.user.groups.iter().map(|g| format!("{g:?}")).collect();
        let mut message = format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:",
            self.user.name,
            groups.join(" ")
        );
        for rule in &missing {
            message.push('\n');
            message.push_str(&rule.compact());
        }
        if !errors.is_empty() {
            message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
        }
        Err(forbidden(rt, name, message))
    }
}

fn forbidden(rt: &ResourceType, name: &str, reason: String) -> Error {
    let resource = if rt.group.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    };
    Error::Denied {
        target: Some(Target::new(&rt.group, &rt.plural, name)),
        message: format!("{resource} {name:?} is forbidden: {reason}"),
    }
}

/// Single grants merged back into rules that differ only in their verbs, sorted (upstream's
/// `CompactRules` and its sort of the missing rules).
fn compact(atoms: Vec<Rule>) -> Vec<Rule> {
    let mut merged: BTreeMap<Rule, Vec<String>> = BTreeMap::new();
    for atom in atoms {
        let verbs = merged
            .entry(Rule {
                verbs: Vec::new(),
                ..atom.clone()
            })
            .or_default();
        for verb in atom.verbs {
            if !verbs.contains(&verb) {
                verbs.push(verb);
            }
        }
    }
    merged
        .into_iter()
        .map(|(rule, verbs)| Rule { verbs, ..rule })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn missing_grants_are_merged_by_verb() {
        let atoms = Rule::from_json(
            &json!({"verbs": ["create", "delete"], "apiGroups": ["apps"],
            "resources": ["deployments", "replicasets"]}),
        )
        .atoms();
        let compacted: Vec<String> = compact(atoms).iter().map(Rule::compact).collect();
        assert_eq!(
            compacted,
            [
                r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "delete"]}"#,
                r#"{APIGroups:["apps"], Resources:["replicasets"], Verbs:["create" "delete"]}"#,
            ]
        );
    }
}
