//! Every resource a kube-apiserver 1.35 serves by default, stored without the controllers that
//! would act on them (as kcp does). Group, version, kind, plural and scope come from
//! `k8s-openapi`'s types (generated from upstream's OpenAPI); what its types do not carry (short
//! names, categories, subresources, name rules, what DELETE answers) is written beside each,
//! from upstream's REST storage (`pkg/registry/*/rest`, `*/storage/storage.go`).

use k8s_openapi::api::{
    admissionregistration::v1 as admissionregistration, apps::v1 as apps,
    authentication::v1 as authentication, authorization::v1 as authorization,
    autoscaling::v1 as autoscaling_v1, autoscaling::v2 as autoscaling_v2, batch::v1 as batch,
    certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
    discovery::v1 as discovery, events::v1 as events, flowcontrol::v1 as flowcontrol,
    networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
    resource::v1 as resource, scheduling::v1 as scheduling, storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;

use super::{ResourceType, ScalePaths, VERBS};
use crate::validation::NameRule;

/// Whether a `k8s-openapi` scope is a namespace's.
pub trait Scope {
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// Generates a kind's schema (its `$ref` among the generator's definitions).
pub type SchemaFn = fn(&mut SchemaGenerator) -> schemars::Schema;

fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<T>()
}

/// One built-in resource at one version.
pub struct Builtin {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub status: bool,
    pub scale: bool,
    pub verbs: &'static [&'static str],
    /// Created and answered, never stored (reviews, bindings), or answered from nothing
    /// stored (component statuses).
    pub virtual_only: bool,
    pub name_rule: NameRule,
    /// Whether an immediate DELETE answers the deleted object (upstream's `ReturnDeletedObject`)
    /// rather than a Success Status.
    pub delete_returns_object: bool,
    pub schema: SchemaFn,
}

/// A resource as `k8s-openapi` describes `T`, with every verb, no subresource, subdomain names,
/// and a Status answer to DELETE: upstream's generic store defaults.
const fn of<T>() -> Builtin
where
    T: k8s_openapi::Resource + JsonSchema,
    T::Scope: Scope,
{
    Builtin {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        plural: T::URL_PATH_SEGMENT,
        namespaced: <T::Scope as Scope>::NAMESPACED,
        short_names: &[],
        categories: &[],
        status: false,
        scale: false,
        verbs: VERBS,
        virtual_only: false,
        name_rule: NameRule::Dns1123Subdomain,
        delete_returns_object: false,
        schema: schema_of::<T>,
    }
}

/// The verbs of a review or binding: create only.
const CREATE: &[&str] = &["create"];
/// The verbs of component statuses: read only.
const READ: &[&str] = &["get", "list"];
/// Namespaces: every verb but deletecollection.
const NAMESPACE_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

impl Builtin {
    const fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }
    const fn all(mut self) -> Self {
        self.categories = &["all"];
        self
    }
    const fn api_extensions(mut self) -> Self {
        self.categories = &["api-extensions"];
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
    /// Created and answered, never stored (reviews, bindings).
    const fn review(mut self) -> Self {
        self.virtual_only = true;
        self.verbs = CREATE;
        self
    }
    const fn names(mut self, rule: NameRule) -> Self {
        self.name_rule = rule;
        self
    }
    /// DELETE answers the deleted object.
    const fn returns_object(mut self) -> Self {
        self.delete_returns_object = true;
        self
    }
}

const PATH: NameRule = NameRule::PathSegmentName;

/// In discovery order: core first, then the groups in kube-apiserver's priority order
/// (`pkg/controlplane/apiserver/aggregator.go`), the preferred version first, resources by name.
pub static BUILTINS: &[Builtin] = &[
    of::<core::Binding>().review(),
    Builtin {
        virtual_only: true,
        verbs: READ,
        ..of::<core::ComponentStatus>().short(&["cs"])
    },
    of::<core::ConfigMap>().short(&["cm"]),
    of::<core::Endpoints>().short(&["ep"]),
    of::<core::Event>().short(&["ev"]),
    of::<core::LimitRange>().short(&["limits"]),
    Builtin {
        verbs: NAMESPACE_VERBS,
        ..of::<core::Namespace>()
            .short(&["ns"])
            .status()
            .names(NameRule::Dns1123Label)
            .returns_object()
    },
    of::<core::Node>().short(&["no"]).status(),
    of::<core::PersistentVolumeClaim>()
        .short(&["pvc"])
        .status()
        .returns_object(),
    of::<core::PersistentVolume>()
        .short(&["pv"])
        .status()
        .returns_object(),
    of::<core::Pod>()
        .short(&["po"])
        .all()
        .status()
        .returns_object(),
    of::<core::PodTemplate>().returns_object(),
    of::<core::ReplicationController>()
        .short(&["rc"])
        .all()
        .status()
        .scale(),
    of::<core::ResourceQuota>()
        .short(&["quota"])
        .status()
        .returns_object(),
    of::<core::Secret>(),
    of::<core::ServiceAccount>().short(&["sa"]).returns_object(),
    of::<core::Service>()
        .short(&["svc"])
        .all()
        .status()
        .names(NameRule::Dns1035Label)
        .returns_object(),
    of::<apiregistration::APIService>()
        .api_extensions()
        .status()
        .names(PATH),
    of::<apps::ControllerRevision>(),
    of::<apps::DaemonSet>().short(&["ds"]).all().status(),
    of::<apps::Deployment>()
        .short(&["deploy"])
        .all()
        .status()
        .scale(),
    of::<apps::ReplicaSet>()
        .short(&["rs"])
        .all()
        .status()
        .scale(),
    of::<apps::StatefulSet>()
        .short(&["sts"])
        .all()
        .status()
        .scale()
        .names(NameRule::Dns1123Label),
    of::<events::Event>().short(&["ev"]),
    of::<authentication::SelfSubjectReview>().review(),
    of::<authentication::TokenReview>().review(),
    of::<authorization::LocalSubjectAccessReview>().review(),
    of::<authorization::SelfSubjectAccessReview>().review(),
    of::<authorization::SelfSubjectRulesReview>().review(),
    of::<authorization::SubjectAccessReview>().review(),
    of::<autoscaling_v2::HorizontalPodAutoscaler>()
        .short(&["hpa"])
        .all()
        .status(),
    of::<autoscaling_v1::HorizontalPodAutoscaler>()
        .short(&["hpa"])
        .all()
        .status(),
    of::<batch::CronJob>()
        .short(&["cj"])
        .all()
        .status()
        .names(NameRule::Dns1123SubdomainMax(52)),
    of::<batch::Job>().all().status(),
    of::<certificates::CertificateSigningRequest>()
        .short(&["csr"])
        .status()
        .names(PATH),
    of::<networking::IngressClass>(),
    of::<networking::Ingress>().short(&["ing"]).status(),
    of::<networking::IPAddress>()
        .short(&["ip"])
        .names(NameRule::IpAddress),
    of::<networking::NetworkPolicy>().short(&["netpol"]),
    of::<networking::ServiceCIDR>().status(),
    of::<policy::PodDisruptionBudget>().short(&["pdb"]).status(),
    of::<rbac::ClusterRoleBinding>().names(PATH),
    of::<rbac::ClusterRole>().names(PATH),
    of::<rbac::RoleBinding>().names(PATH),
    of::<rbac::Role>().names(PATH),
    of::<storage::CSIDriver>()
        .names(NameRule::Dns1123SubdomainMax(63))
        .returns_object(),
    of::<storage::CSINode>().returns_object(),
    of::<storage::CSIStorageCapacity>(),
    of::<storage::StorageClass>()
        .short(&["sc"])
        .returns_object(),
    of::<storage::VolumeAttachment>().status().returns_object(),
    of::<storage::VolumeAttributesClass>()
        .short(&["vac"])
        .returns_object(),
    of::<admissionregistration::MutatingWebhookConfiguration>().api_extensions(),
    of::<admissionregistration::ValidatingAdmissionPolicy>()
        .api_extensions()
        .status(),
    of::<admissionregistration::ValidatingAdmissionPolicyBinding>().api_extensions(),
    of::<admissionregistration::ValidatingWebhookConfiguration>().api_extensions(),
    // A CRD's name is `<plural>.<group>`, checked by its own validation.
    of::<apiextensions::CustomResourceDefinition>()
        .short(&["crd", "crds"])
        .api_extensions()
        .status(),
    of::<scheduling::PriorityClass>().short(&["pc"]),
    of::<coordination::Lease>(),
    of::<node::RuntimeClass>(),
    of::<discovery::EndpointSlice>(),
    of::<resource::DeviceClass>().returns_object(),
    of::<resource::ResourceClaim>().status().returns_object(),
    of::<resource::ResourceClaimTemplate>().returns_object(),
    of::<resource::ResourceSlice>().returns_object(),
    of::<flowcontrol::FlowSchema>().status(),
    of::<flowcontrol::PriorityLevelConfiguration>().status(),
];

/// Where a built-in kind with a `scale` subresource keeps its numbers.
fn scale_paths() -> ScalePaths {
    ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: Some(".spec.selector".into()),
    }
}

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
            scale: b.scale.then(scale_paths),
            storage_version: storage_version(b).to_owned(),
            schema: None,
            printer_columns: Vec::new(),
            builtin: true,
            virtual_only: b.virtual_only,
            verbs: b.verbs,
            name_rule: b.name_rule,
            delete_returns_object: b.delete_returns_object,
        })
        .collect()
}

/// The version a built-in resource's objects are stored at: the first (preferred) version the
/// table lists for it.
fn storage_version(b: &Builtin) -> &'static str {
    BUILTINS
        .iter()
        .find(|o| o.group == b.group && o.plural == b.plural)
        .map_or(b.version, |o| o.version)
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

    #[test]
    fn the_catalog_is_kube_apiserver_1_35s() {
        // 65 resources in 21 groups, HorizontalPodAutoscaler at two versions.
        let types = types();
        assert_eq!(types.len(), 66);
        let mut groups: Vec<&str> = types.iter().map(|t| t.group.as_str()).collect();
        groups.dedup();
        assert_eq!(groups.len(), 21, "{groups:?}");
        let hpa: Vec<_> = types
            .iter()
            .filter(|t| t.plural == "horizontalpodautoscalers")
            .collect();
        assert_eq!(
            hpa.iter().map(|t| t.version.as_str()).collect::<Vec<_>>(),
            ["v2", "v1"]
        );
        assert!(hpa.iter().all(|t| t.storage_version == "v2"));
        let find = |group: &str, plural: &str| {
            types
                .iter()
                .find(|t| t.group == group && t.plural == plural)
                .unwrap()
        };
        assert!(!find("", "nodes").namespaced);
        assert!(find("", "bindings").namespaced);
        assert!(find("authorization.k8s.io", "localsubjectaccessreviews").namespaced);
        assert_eq!(find("batch", "cronjobs").short_names, ["cj"]);
        assert_eq!(
            find("rbac.authorization.k8s.io", "clusterroles").name_rule,
            NameRule::PathSegmentName
        );
        assert!(find("", "pods").delete_returns_object);
        assert!(!find("", "configmaps").delete_returns_object);
    }
}
