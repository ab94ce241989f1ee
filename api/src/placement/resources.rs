//! Resources stored on the hub that a WorkPlacement sends to its clusters beside its inline
//! manifests (`spec.resourceSelectors`), and their validation.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::InvalidField;

/// Hub resources of one kind a placement sends: all of them in the namespace, the one named, or
/// those whose labels match. Selecting a `Namespace` sends the namespace and every namespaced
/// object in it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!(has(self.name) && has(self.labelSelector))", "message": "a resource selector names one object or selects by labels, not both"},
]))]
pub struct ResourceSelector {
    /// API group (`""` for the core group), e.g. `apps`.
    #[serde(default)]
    #[schemars(length(max = 253))]
    pub group: String,
    /// API version, e.g. `v1`.
    #[schemars(length(min = 1, max = 63))]
    pub version: String,
    /// Kind, e.g. `ConfigMap`.
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,
    /// The namespace of a namespaced kind (left out: the placement's own); not set for a
    /// cluster-scoped kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// Only the object of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub name: Option<String>,
    /// Only the objects whose labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

impl ResourceSelector {
    /// `group/version Kind`, as messages name it (`v1 ConfigMap` for the core group).
    pub fn describe(&self) -> String {
        if self.group.is_empty() {
            format!("{} {}", self.version, self.kind)
        } else {
            format!("{}/{} {}", self.group, self.version, self.kind)
        }
    }

    /// Whether it selects namespaces (and everything in them).
    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.kind == "Namespace"
    }
}

/// Namespaces whose contents a placement may not send: the hub's own and Kubernetes' system
/// namespaces.
pub const RESERVED_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// API groups whose objects are never sent from the hub: atoll's and the multicluster APIs'
/// (the hub's own state), events, leases and metrics.
pub const SKIPPED_GROUPS: [&str; 7] = [
    "atoll.dev",
    "multicluster.x-k8s.io",
    "about.k8s.io",
    "events.k8s.io",
    "coordination.k8s.io",
    "metrics.k8s.io",
    "discovery.k8s.io",
];

/// Kinds never sent from the hub, as `(group, kind)`: what controllers make and nodes.
pub const SKIPPED_KINDS: [(&str, &str); 7] = [
    ("", "Event"),
    ("", "Pod"),
    ("", "Node"),
    ("", "Endpoints"),
    ("", "Binding"),
    ("apps", "ReplicaSet"),
    ("apps", "ControllerRevision"),
];

/// Whether objects of a kind are never sent from the hub.
pub fn skipped(group: &str, kind: &str) -> bool {
    SKIPPED_GROUPS.contains(&group) || SKIPPED_KINDS.contains(&(group, kind))
}

/// The namespace of the fleet administrator's placements: only a placement there may send
/// namespaced objects of other namespaces than its own.
pub const ADMIN_NAMESPACE: &str = crate::names::SYSTEM_NAMESPACE;

/// Checks the resource selectors of a placement in namespace `own` (the schema's rules, for an
/// object that was stored before them, and what the schema cannot say), naming the first field
/// at fault, e.g. `spec.resourceSelectors[1].kind`. `reserved` are the hub's own namespaces
/// besides Kubernetes' system ones, never sent. A placement sends namespaced objects of its own
/// namespace only (and selects no Namespace but its own), so that who may write placements in
/// one namespace cannot send another's Secrets; a placement in [`ADMIN_NAMESPACE`] may select
/// any. Cluster-scoped kinds are open to every placement.
pub fn validate(
    selectors: &[ResourceSelector],
    reserved: &[&str],
    own: &str,
) -> Result<(), InvalidField> {
    let admin = own == ADMIN_NAMESPACE;
    for (i, s) in selectors.iter().enumerate() {
        let at = |field: &str| format!("spec.resourceSelectors[{i}].{field}");
        let invalid = |field: &str, value: &str, why: &str| InvalidField {
            field: at(field),
            value: serde_json::Value::from(value).to_string(),
            why: why.into(),
        };
        if s.version.is_empty() {
            return Err(invalid("version", "", "a version such as v1 is required"));
        }
        if s.kind.is_empty() {
            return Err(invalid("kind", "", "a kind such as ConfigMap is required"));
        }
        if skipped(&s.group, &s.kind) {
            return Err(invalid(
                "kind",
                &s.kind,
                &format!(
                    "{} objects are never sent from the hub (they are the hub's own state or made by controllers)",
                    s.describe()
                ),
            ));
        }
        if s.name.is_some() && s.label_selector.is_some() {
            return Err(invalid(
                "name",
                s.name.as_deref().unwrap_or_default(),
                "a resource selector names one object or selects by labels, not both",
            ));
        }
        if !admin {
            let (field, other) = if s.is_namespace() {
                (
                    "name",
                    s.name.as_deref().filter(|n| *n != own).or(
                        // Namespaces by labels could pick any.
                        s.label_selector.as_ref().map(|_| "(a label selector)"),
                    ),
                )
            } else {
                ("namespace", s.namespace.as_deref().filter(|n| *n != own))
            };
            if let Some(other) = other {
                let what = if s.is_namespace() {
                    "selects no Namespace but its own"
                } else {
                    "sends namespaced objects of its own namespace only"
                };
                return Err(InvalidField {
                    field: at(field),
                    value: serde_json::Value::from(other).to_string(),
                    why: format!(
                        "a WorkPlacement in namespace {own:?} {what}; a placement in {ADMIN_NAMESPACE:?} may select any"
                    ),
                });
            }
        }
        let namespace = if s.is_namespace() {
            s.name.as_deref()
        } else {
            s.namespace.as_deref()
        };
        if let Some(ns) =
            namespace.filter(|ns| RESERVED_NAMESPACES.contains(ns) || reserved.contains(ns))
        {
            let field = if s.is_namespace() {
                "name"
            } else {
                "namespace"
            };
            return Err(invalid(
                field,
                ns,
                "the hub's own and Kubernetes' system namespaces are not sent",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(group: &str, kind: &str) -> ResourceSelector {
        ResourceSelector {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            ..ResourceSelector::default()
        }
    }

    #[test]
    fn a_placement_sends_other_namespaces_only_from_the_admin_namespace() {
        let other = ResourceSelector {
            namespace: Some("billing".into()),
            ..selector("", "Secret")
        };
        assert_eq!(
            validate(std::slice::from_ref(&other), &[], "team")
                .unwrap_err()
                .to_string(),
            "spec.resourceSelectors[0].namespace: Invalid value: \"billing\": a WorkPlacement in namespace \"team\" sends namespaced objects of its own namespace only; a placement in \"atoll-system\" may select any"
        );
        assert!(validate(std::slice::from_ref(&other), &[], ADMIN_NAMESPACE).is_ok());
        let own = ResourceSelector {
            namespace: Some("team".into()),
            ..selector("", "Secret")
        };
        assert!(validate(&[own], &[], "team").is_ok());
        let namespace = |name: &str| ResourceSelector {
            name: Some(name.into()),
            ..selector("", "Namespace")
        };
        assert!(validate(&[namespace("team")], &[], "team").is_ok());
        assert_eq!(
            validate(&[namespace("billing")], &[], "team")
                .unwrap_err()
                .field,
            "spec.resourceSelectors[0].name"
        );
        let by_labels = ResourceSelector {
            label_selector: Some(LabelSelector::default()),
            ..selector("", "Namespace")
        };
        assert!(validate(std::slice::from_ref(&by_labels), &[], "team").is_err());
        assert!(validate(&[by_labels], &[], ADMIN_NAMESPACE).is_ok());
        // Cluster-scoped kinds are open to every placement.
        assert!(
            validate(
                &[selector("rbac.authorization.k8s.io", "ClusterRole")],
                &[],
                "team"
            )
            .is_ok()
        );
    }

    #[test]
    fn selectors_name_the_field_at_fault() {
        assert!(
            validate(
                &[selector("", "ConfigMap"), selector("apps", "Deployment")],
                &[],
                "team"
            )
            .is_ok()
        );
        let e = validate(
            &[selector("", "ConfigMap"), selector("", "Pod")],
            &[],
            "team",
        )
        .unwrap_err();
        assert_eq!(e.field, "spec.resourceSelectors[1].kind");
        assert!(e.why.contains("v1 Pod objects are never sent"), "{e}");
        let e = validate(&[selector("atoll.dev", "WorkPlacement")], &[], "team").unwrap_err();
        assert_eq!(e.field, "spec.resourceSelectors[0].kind");
        let both = ResourceSelector {
            name: Some("a".into()),
            label_selector: Some(LabelSelector::default()),
            ..selector("", "ConfigMap")
        };
        assert_eq!(
            validate(&[both], &[], "team").unwrap_err().field,
            "spec.resourceSelectors[0].name"
        );
        let system = ResourceSelector {
            name: Some("kube-system".into()),
            ..selector("", "Namespace")
        };
        assert_eq!(
            validate(&[system], &[], ADMIN_NAMESPACE)
                .unwrap_err()
                .to_string(),
            "spec.resourceSelectors[0].name: Invalid value: \"kube-system\": the hub's own and Kubernetes' system namespaces are not sent"
        );
        let own = ResourceSelector {
            namespace: Some("atoll-system".into()),
            ..selector("", "Secret")
        };
        assert_eq!(
            validate(&[own], &["atoll-system"], ADMIN_NAMESPACE)
                .unwrap_err()
                .field,
            "spec.resourceSelectors[0].namespace"
        );
        let no_version = ResourceSelector {
            version: String::new(),
            ..selector("", "ConfigMap")
        };
        assert_eq!(
            validate(&[no_version], &[], "team").unwrap_err().field,
            "spec.resourceSelectors[0].version"
        );
    }
}
