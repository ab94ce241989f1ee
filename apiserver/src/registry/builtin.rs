//! The built-in kinds the hub and its users need, stored without their controllers (as kcp does).

use super::{ResourceType, ScalePaths};

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
    virtual_only: bool,
}

const fn kind(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        namespaced,
        short_names: &[],
        categories: &[],
        status: false,
        scale: false,
        virtual_only: false,
    }
}

impl Builtin {
    const fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }
    const fn all(mut self) -> Self {
        self.categories = &["all"];
        self
    }
    const fn status(mut self) -> Self {
        self.status = true;
        self
    }
    const fn scale(mut self) -> Self {
        self.scale = true;
        self
    }
    /// Created and answered, never stored (reviews).
    const fn review(mut self) -> Self {
        self.virtual_only = true;
        self
    }
}

const CORE: &str = "";
const APPS: &str = "apps";
const RBAC: &str = "rbac.authorization.k8s.io";

/// In discovery order: core first, then groups as kube-apiserver orders them.
const BUILTINS: &[Builtin] = &[
    kind(CORE, "v1", "ConfigMap", "configmaps", true).short(&["cm"]),
    kind(CORE, "v1", "Event", "events", true).short(&["ev"]),
    kind(CORE, "v1", "Namespace", "namespaces", false)
        .short(&["ns"])
        .status(),
    kind(CORE, "v1", "Pod", "pods", true)
        .short(&["po"])
        .all()
        .status(),
    kind(CORE, "v1", "Secret", "secrets", true),
    kind(CORE, "v1", "ServiceAccount", "serviceaccounts", true).short(&["sa"]),
    kind(CORE, "v1", "Service", "services", true)
        .short(&["svc"])
        .all()
        .status(),
    kind(APPS, "v1", "DaemonSet", "daemonsets", true)
        .short(&["ds"])
        .all()
        .status(),
    kind(APPS, "v1", "Deployment", "deployments", true)
        .short(&["deploy"])
        .all()
        .status()
        .scale(),
    kind(APPS, "v1", "ReplicaSet", "replicasets", true)
        .short(&["rs"])
        .all()
        .status()
        .scale(),
    kind(APPS, "v1", "StatefulSet", "statefulsets", true)
        .short(&["sts"])
        .all()
        .status()
        .scale(),
    kind("events.k8s.io", "v1", "Event", "events", true).short(&["ev"]),
    kind(
        RBAC,
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    kind(RBAC, "v1", "ClusterRole", "clusterroles", false),
    kind(RBAC, "v1", "RoleBinding", "rolebindings", true),
    kind(RBAC, "v1", "Role", "roles", true),
    kind(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    )
    .short(&["crd", "crds"])
    .status(),
    kind("coordination.k8s.io", "v1", "Lease", "leases", true),
    kind(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
    )
    .review(),
    kind(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
    )
    .review(),
    kind(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        false,
    )
    .review(),
];

/// Every built-in resource type, in discovery order.
pub fn types() -> Vec<ResourceType> {
    BUILTINS
        .iter()
        .map(|b| ResourceType {
            group: b.group.to_owned(),
            version: b.version.to_owned(),
            kind: b.kind.to_owned(),
            list_kind: format!("{}List", b.kind),
            plural: b.plural.to_owned(),
            singular: b.kind.to_lowercase(),
            short_names: b.short_names.iter().map(|s| s.to_string()).collect(),
            categories: b.categories.iter().map(|s| s.to_string()).collect(),
            namespaced: b.namespaced,
            status: b.status,
            scale: b.scale.then(|| ScalePaths {
                spec_replicas: ".spec.replicas".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: Some(".spec.selector".into()),
            }),
            storage_version: b.version.to_owned(),
            schema: None,
            printer_columns: Vec::new(),
            builtin: true,
            virtual_only: b.virtual_only,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_has_a_unique_path() {
        let types = types();
        let mut paths: Vec<_> = types
            .iter()
            .map(|t| (t.group.clone(), t.version.clone(), t.plural.clone()))
            .collect();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), types.len());
        let deploy = types.iter().find(|t| t.plural == "deployments").unwrap();
        assert_eq!(deploy.api_version(), "apps/v1");
        assert_eq!(
            deploy.key("default".into(), "web"),
            "/registry/apps/deployments/default/web"
        );
    }
}
