//! The printers of the built-in kinds, after kube-apiserver's (`pkg/printers/internalversion`,
//! and the aggregator's for APIService), which the server always runs wide: every row carries
//! the cells of its priority 1 columns too, and kubectl shows those only with `-o wide`.
//!
//! One module per API group holds its kinds' columns and rows; this one dispatches on the kind
//! and holds what they share. Objects are read as stored JSON; where kube-apiserver would have
//! defaulted a field on decoding (replicas 1, Secret type `Opaque`, Namespace phase `Active`,
//! Service type `ClusterIP`, port protocol `TCP`, a PersistentVolume's reclaim policy `Retain`)
//! the printer assumes the same default.
//!
//! Kinds upstream prints with the generic NAME / CREATED AT printer keep it ([`Printer::Default`]):
//! Role, ClusterRole, LimitRange and CustomResourceDefinition.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age;
use super::{Column, Row};

mod admissionregistration;
mod apiregistration;
mod apps;
mod autoscaling;
mod batch;
mod certificates;
mod coordination;
mod core;
mod discovery;
mod events;
mod flowcontrol;
mod networking;
mod node;
mod policy;
mod quantity;
mod rbac;
mod resource;
mod scheduling;
mod storage;

/// `ObjectMeta.name`'s description, which every Name column carries.
pub const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `ObjectMeta.creationTimestamp`'s description, which every Age column carries.
pub const CREATION_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const CONTAINERS_DOC: &str = "Names of each container in the template.";
const IMAGES_DOC: &str = "Images referenced by each container in the template.";

/// Which printer renders a built-in kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printer {
    ComponentStatus,
    ConfigMap,
    Endpoints,
    /// `v1` Event.
    Event,
    /// `events.k8s.io/v1` Event (the same printer over the newer field names).
    EventsV1Event,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodTemplate,
    ReplicationController,
    ResourceQuota,
    Secret,
    Service,
    ServiceAccount,
    ApiService,
    ControllerRevision,
    DaemonSet,
    Deployment,
    ReplicaSet,
    StatefulSet,
    /// HorizontalPodAutoscaler in `autoscaling/v2` or `v1`.
    HorizontalPodAutoscaler,
    CronJob,
    Job,
    CertificateSigningRequest,
    Ingress,
    IngressClass,
    IpAddress,
    NetworkPolicy,
    ServiceCidr,
    PodDisruptionBudget,
    RoleBinding,
    ClusterRoleBinding,
    CsiDriver,
    CsiNode,
    CsiStorageCapacity,
    StorageClass,
    VolumeAttachment,
    VolumeAttributesClass,
    /// MutatingWebhookConfiguration and ValidatingWebhookConfiguration.
    WebhookConfiguration,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    PriorityClass,
    Lease,
    RuntimeClass,
    EndpointSlice,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    FlowSchema,
    PriorityLevelConfiguration,
    /// The generic printer (NAME, CREATED AT) of kinds without their own: Role, ClusterRole,
    /// LimitRange, CustomResourceDefinition.
    Default,
}

impl Printer {
    /// The printer of a built-in kind; [`Printer::Default`] for kinds without their own.
    pub fn for_kind(group: &str, kind: &str) -> Self {
        match (group, kind) {
            ("", "ComponentStatus") => Printer::ComponentStatus,
            ("", "ConfigMap") => Printer::ConfigMap,
            ("", "Endpoints") => Printer::Endpoints,
            ("", "Event") => Printer::Event,
            ("", "Namespace") => Printer::Namespace,
            ("", "Node") => Printer::Node,
            ("", "PersistentVolume") => Printer::PersistentVolume,
            ("", "PersistentVolumeClaim") => Printer::PersistentVolumeClaim,
            ("", "Pod") => Printer::Pod,
            ("", "PodTemplate") => Printer::PodTemplate,
            ("", "ReplicationController") => Printer::ReplicationController,
            ("", "ResourceQuota") => Printer::ResourceQuota,
            ("", "Secret") => Printer::Secret,
            ("", "Service") => Printer::Service,
            ("", "ServiceAccount") => Printer::ServiceAccount,
            ("apiregistration.k8s.io", "APIService") => Printer::ApiService,
            ("apps", "ControllerRevision") => Printer::ControllerRevision,
            ("apps", "DaemonSet") => Printer::DaemonSet,
            ("apps", "Deployment") => Printer::Deployment,
            ("apps", "ReplicaSet") => Printer::ReplicaSet,
            ("apps", "StatefulSet") => Printer::StatefulSet,
            ("events.k8s.io", "Event") => Printer::EventsV1Event,
            ("autoscaling", "HorizontalPodAutoscaler") => Printer::HorizontalPodAutoscaler,
            ("batch", "CronJob") => Printer::CronJob,
            ("batch", "Job") => Printer::Job,
            ("certificates.k8s.io", "CertificateSigningRequest") => {
                Printer::CertificateSigningRequest
            }
            ("networking.k8s.io", "Ingress") => Printer::Ingress,
            ("networking.k8s.io", "IngressClass") => Printer::IngressClass,
            ("networking.k8s.io", "IPAddress") => Printer::IpAddress,
            ("networking.k8s.io", "NetworkPolicy") => Printer::NetworkPolicy,
            ("networking.k8s.io", "ServiceCIDR") => Printer::ServiceCidr,
            ("policy", "PodDisruptionBudget") => Printer::PodDisruptionBudget,
            ("rbac.authorization.k8s.io", "RoleBinding") => Printer::RoleBinding,
            ("rbac.authorization.k8s.io", "ClusterRoleBinding") => Printer::ClusterRoleBinding,
            ("storage.k8s.io", "CSIDriver") => Printer::CsiDriver,
            ("storage.k8s.io", "CSINode") => Printer::CsiNode,
            ("storage.k8s.io", "CSIStorageCapacity") => Printer::CsiStorageCapacity,
            ("storage.k8s.io", "StorageClass") => Printer::StorageClass,
            ("storage.k8s.io", "VolumeAttachment") => Printer::VolumeAttachment,
            ("storage.k8s.io", "VolumeAttributesClass") => Printer::VolumeAttributesClass,
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
            ) => Printer::WebhookConfiguration,
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
                Printer::ValidatingAdmissionPolicy
            }
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
                Printer::ValidatingAdmissionPolicyBinding
            }
            ("scheduling.k8s.io", "PriorityClass") => Printer::PriorityClass,
            ("coordination.k8s.io", "Lease") => Printer::Lease,
            ("node.k8s.io", "RuntimeClass") => Printer::RuntimeClass,
            ("discovery.k8s.io", "EndpointSlice") => Printer::EndpointSlice,
            ("resource.k8s.io", "DeviceClass") => Printer::DeviceClass,
            ("resource.k8s.io", "ResourceClaim") => Printer::ResourceClaim,
            ("resource.k8s.io", "ResourceClaimTemplate") => Printer::ResourceClaimTemplate,
            ("resource.k8s.io", "ResourceSlice") => Printer::ResourceSlice,
            ("flowcontrol.apiserver.k8s.io", "FlowSchema") => Printer::FlowSchema,
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
                Printer::PriorityLevelConfiguration
            }
            _ => Printer::Default,
        }
    }

    /// The column definitions, wide ones (priority 1) included.
    pub fn columns(self) -> Vec<Column> {
        match self {
            Printer::ComponentStatus => core::component_status_columns(),
            Printer::ConfigMap => core::config_map_columns(),
            Printer::Endpoints => core::endpoints_columns(),
            Printer::Event | Printer::EventsV1Event => events::columns(),
            Printer::Namespace => core::namespace_columns(),
            Printer::Node => core::node_columns(),
            Printer::PersistentVolume => core::persistent_volume_columns(),
            Printer::PersistentVolumeClaim => core::persistent_volume_claim_columns(),
            Printer::Pod => core::pod_columns(),
            Printer::PodTemplate => core::pod_template_columns(),
            Printer::ReplicationController => core::replication_controller_columns(),
            Printer::ResourceQuota => core::resource_quota_columns(),
            Printer::Secret => core::secret_columns(),
            Printer::Service => core::service_columns(),
            Printer::ServiceAccount => core::service_account_columns(),
            Printer::ApiService => apiregistration::api_service_columns(),
            Printer::ControllerRevision => apps::controller_revision_columns(),
            Printer::DaemonSet => apps::daemon_set_columns(),
            Printer::Deployment => apps::deployment_columns(),
            Printer::ReplicaSet => apps::replica_set_columns(),
            Printer::StatefulSet => apps::stateful_set_columns(),
            Printer::HorizontalPodAutoscaler => autoscaling::horizontal_pod_autoscaler_columns(),
            Printer::CronJob => batch::cron_job_columns(),
            Printer::Job => batch::job_columns(),
            Printer::CertificateSigningRequest => {
                certificates::certificate_signing_request_columns()
            }
            Printer::Ingress => networking::ingress_columns(),
            Printer::IngressClass => networking::ingress_class_columns(),
            Printer::IpAddress => networking::ip_address_columns(),
            Printer::NetworkPolicy => networking::network_policy_columns(),
            Printer::ServiceCidr => networking::service_cidr_columns(),
            Printer::PodDisruptionBudget => policy::pod_disruption_budget_columns(),
            Printer::RoleBinding => rbac::role_binding_columns(),
            Printer::ClusterRoleBinding => rbac::cluster_role_binding_columns(),
            Printer::CsiDriver => storage::csi_driver_columns(),
            Printer::CsiNode => storage::csi_node_columns(),
            Printer::CsiStorageCapacity => storage::csi_storage_capacity_columns(),
            Printer::StorageClass => storage::storage_class_columns(),
            Printer::VolumeAttachment => storage::volume_attachment_columns(),
            Printer::VolumeAttributesClass => storage::volume_attributes_class_columns(),
            Printer::WebhookConfiguration => admissionregistration::webhook_configuration_columns(),
            Printer::ValidatingAdmissionPolicy => {
                admissionregistration::validating_admission_policy_columns()
            }
            Printer::ValidatingAdmissionPolicyBinding => {
                admissionregistration::validating_admission_policy_binding_columns()
            }
            Printer::PriorityClass => scheduling::priority_class_columns(),
            Printer::Lease => coordination::lease_columns(),
            Printer::RuntimeClass => node::runtime_class_columns(),
            Printer::EndpointSlice => discovery::endpoint_slice_columns(),
            Printer::DeviceClass | Printer::ResourceClaimTemplate => vec![name(), age_col()],
            Printer::ResourceClaim => resource::resource_claim_columns(),
            Printer::ResourceSlice => resource::resource_slice_columns(),
            Printer::FlowSchema => flowcontrol::flow_schema_columns(),
            Printer::PriorityLevelConfiguration => {
                flowcontrol::priority_level_configuration_columns()
            }
            Printer::Default => vec![name(), col("Created At", "date", CREATION_DOC)],
        }
    }

    /// One object's row: one cell per column, except where upstream's own printer disagrees
    /// with its columns (IPAddress has an Age cell without an Age column; kubectl ignores the
    /// extra cell).
    pub fn row(self, o: &Value, now: Timestamp) -> Row {
        let cells = match self {
            Printer::ComponentStatus => core::component_status(o),
            Printer::ConfigMap => core::config_map(o, now),
            Printer::Endpoints => core::endpoints(o, now),
            Printer::Event => events::event(o, &events::EVENT_FIELDS, now),
            Printer::EventsV1Event => events::event(o, &events::EVENTS_V1_FIELDS, now),
            Printer::Namespace => core::namespace(o, now),
            Printer::Node => core::node(o, now),
            Printer::PersistentVolume => core::persistent_volume(o, now),
            Printer::PersistentVolumeClaim => core::persistent_volume_claim(o, now),
            Printer::Pod => return core::pod(o, now),
            Printer::PodTemplate => core::pod_template(o),
            Printer::ReplicationController => core::replication_controller(o, now),
            Printer::ResourceQuota => core::resource_quota(o, now),
            Printer::Secret => core::secret(o, now),
            Printer::Service => core::service(o, now),
            Printer::ServiceAccount => core::service_account(o, now),
            Printer::ApiService => apiregistration::api_service(o, now),
            Printer::ControllerRevision => apps::controller_revision(o, now),
            Printer::DaemonSet => apps::daemon_set(o, now),
            Printer::Deployment => apps::deployment(o, now),
            Printer::ReplicaSet => apps::replica_set(o, now),
            Printer::StatefulSet => apps::stateful_set(o, now),
            Printer::HorizontalPodAutoscaler => autoscaling::horizontal_pod_autoscaler(o, now),
            Printer::CronJob => batch::cron_job(o, now),
            Printer::Job => batch::job(o, now),
            Printer::CertificateSigningRequest => certificates::certificate_signing_request(o, now),
            Printer::Ingress => networking::ingress(o, now),
            Printer::IngressClass => networking::ingress_class(o, now),
            Printer::IpAddress => networking::ip_address(o, now),
            Printer::NetworkPolicy => networking::network_policy(o, now),
            Printer::ServiceCidr => networking::service_cidr(o, now),
            Printer::PodDisruptionBudget => policy::pod_disruption_budget(o, now),
            Printer::RoleBinding | Printer::ClusterRoleBinding => rbac::role_binding(o, now),
            Printer::CsiDriver => storage::csi_driver(o, now),
            Printer::CsiNode => storage::csi_node(o, now),
            Printer::CsiStorageCapacity => storage::csi_storage_capacity(o),
            Printer::StorageClass => storage::storage_class(o, now),
            Printer::VolumeAttachment => storage::volume_attachment(o, now),
            Printer::VolumeAttributesClass => storage::volume_attributes_class(o, now),
            Printer::WebhookConfiguration => admissionregistration::webhook_configuration(o, now),
            Printer::ValidatingAdmissionPolicy => {
                admissionregistration::validating_admission_policy(o, now)
            }
            Printer::ValidatingAdmissionPolicyBinding => {
                admissionregistration::validating_admission_policy_binding(o, now)
            }
            Printer::PriorityClass => scheduling::priority_class(o, now),
            Printer::Lease => coordination::lease(o, now),
            Printer::RuntimeClass => node::runtime_class(o, now),
            Printer::EndpointSlice => discovery::endpoint_slice(o, now),
            Printer::DeviceClass | Printer::ResourceClaimTemplate => {
                vec![name_cell(o), age_cell(o, now)]
            }
            Printer::ResourceClaim => resource::resource_claim(o, now),
            Printer::ResourceSlice => resource::resource_slice(o, now),
            Printer::FlowSchema => flowcontrol::flow_schema(o, now),
            Printer::PriorityLevelConfiguration => {
                flowcontrol::priority_level_configuration(o, now)
            }
            Printer::Default => vec![
                name_cell(o),
                json!(age::created_at(o["metadata"]["creationTimestamp"].as_str())),
            ],
        };
        Row {
            cells,
            conditions: Vec::new(),
        }
    }
}

/// The Name column every printer but the Event one starts with.
fn name() -> Column {
    Column::new("Name", "string", "name", NAME_DOC, 0)
}

fn age_col() -> Column {
    col("Age", "string", CREATION_DOC)
}

fn col(name: &str, ty: &str, description: &str) -> Column {
    Column::new(name, ty, "", description, 0)
}

fn wide(name: &str, ty: &str, description: &str) -> Column {
    Column::new(name, ty, "", description, 1)
}

/// The wide Containers and Images columns of the kinds with a pod template.
fn template_columns() -> [Column; 2] {
    [
        wide("Containers", "string", CONTAINERS_DOC),
        wide("Images", "string", IMAGES_DOC),
    ]
}

/// The object's name.
fn name_cell(o: &Value) -> Value {
    json!(str_at(&o["metadata"]["name"]))
}

/// The object's age as of `now`.
fn age_cell(o: &Value, now: Timestamp) -> Value {
    json!(age::since(o["metadata"]["creationTimestamp"].as_str(), now))
}

fn str_at(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn non_empty<'a>(s: &'a str, default: &'a str) -> &'a str {
    if s.is_empty() { default } else { s }
}

fn int_at(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_f64().map(|f| f as i64))
        .unwrap_or_default()
}

/// An integer field that kube-apiserver defaults to `default` when it is absent.
fn int_or(v: &Value, default: i64) -> i64 {
    if v.is_null() { default } else { int_at(v) }
}

/// A boolean field that kube-apiserver defaults to `default` when it is absent.
fn bool_or(v: &Value, default: bool) -> bool {
    v.as_bool().unwrap_or(default)
}

/// The items of a list; none when absent.
fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The number of entries of a map or list; 0 when absent.
fn len(v: &Value) -> usize {
    match v {
        Value::Object(map) => map.len(),
        Value::Array(items) => items.len(),
        _ => 0,
    }
}

/// `spec.replicas`, defaulted to 1 as kube-apiserver defaults it.
fn replicas(o: &Value) -> i64 {
    int_or(&o["spec"]["replicas"], 1)
}

/// The first condition of `conditions` of type `ty`.
fn condition<'a>(conditions: &'a Value, ty: &str) -> Option<&'a Value> {
    items(conditions).iter().find(|c| c["type"] == ty)
}

/// Whether the object is being deleted.
fn deleting(o: &Value) -> bool {
    !o["metadata"]["deletionTimestamp"].is_null()
}

/// Go's `printBool`: `True` or `False`.
fn go_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Container names and images of a pod template, each comma-joined.
fn containers(template: &Value) -> (String, String) {
    let list = items(&template["spec"]["containers"]);
    let names: Vec<&str> = list.iter().map(|c| str_at(&c["name"])).collect();
    let images: Vec<&str> = list.iter().map(|c| str_at(&c["image"])).collect();
    (names.join(","), images.join(","))
}

/// The addresses of a load balancer's ingress points (each its IP, or else its hostname),
/// sorted and without repeats.
fn load_balancer_addresses(load_balancer: &Value) -> Vec<&str> {
    let mut addresses: Vec<&str> = items(&load_balancer["ingress"])
        .iter()
        .filter_map(|i| {
            i["ip"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| i["hostname"].as_str().filter(|s| !s.is_empty()))
        })
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    addresses
}

/// Upstream's `listWithMoreString`: the first `max` entries, then how many more there are.
fn list_with_more(list: &[String], count: usize, max: usize) -> String {
    let text = list.join(",");
    if count > max {
        format!("{text} + {} more...", count - max)
    } else if text.is_empty() {
        "<unset>".to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A printer's cells, checked to be one per column.
    pub(super) fn cells(printer: Printer, o: Value) -> Vec<Value> {
        let row = printer.row(&o, now());
        assert_eq!(
            row.cells.len(),
            printer.columns().len(),
            "{printer:?}: one cell per column"
        );
        row.cells
    }

    pub(super) fn now() -> Timestamp {
        "2025-03-01T12:00:00Z".parse().unwrap()
    }

    /// Metadata created five minutes before [`now`].
    pub(super) fn meta(name: &str) -> Value {
        json!({"name": name, "namespace": "default", "creationTimestamp": "2025-03-01T11:55:00Z"})
    }

    /// The column headers, as kubectl shows them (upper-cased), wide ones marked with `*`.
    pub(super) fn headers(printer: Printer) -> Vec<String> {
        printer
            .columns()
            .iter()
            .map(|c| {
                let star = if c.priority == 1 { "*" } else { "" };
                format!("{}{star}", c.name.to_uppercase())
            })
            .collect()
    }

    #[test]
    fn dispatch() {
        assert_eq!(Printer::for_kind("", "Secret"), Printer::Secret);
        assert_eq!(Printer::for_kind("apps", "Deployment"), Printer::Deployment);
        assert_eq!(
            Printer::for_kind("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            Printer::ClusterRoleBinding
        );
        assert_eq!(
            Printer::for_kind(
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration"
            ),
            Printer::WebhookConfiguration
        );
        assert_eq!(
            Printer::for_kind("autoscaling", "HorizontalPodAutoscaler"),
            Printer::HorizontalPodAutoscaler
        );
        for (group, kind) in [
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("", "LimitRange"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("example.com", "Job"),
        ] {
            assert_eq!(Printer::for_kind(group, kind), Printer::Default, "{kind}");
        }
    }

    /// Every built-in kind served has its printer, and every printer starts with the Name
    /// column (the Event one ends with it) and has Age where upstream has one.
    #[test]
    fn every_served_kind_is_dispatched() {
        let defaults: Vec<String> = crate::registry::builtin::types()
            .iter()
            .filter(|t| !t.virtual_only || t.kind == "ComponentStatus")
            .filter(|t| Printer::for_kind(&t.group, &t.kind) == Printer::Default)
            .map(|t| t.kind.clone())
            .collect();
        assert_eq!(
            defaults,
            [
                "LimitRange",
                "ClusterRole",
                "Role",
                "CustomResourceDefinition"
            ]
        );
        for t in crate::registry::builtin::types() {
            let printer = Printer::for_kind(&t.group, &t.kind);
            let columns = printer.columns();
            let name_at = if matches!(printer, Printer::Event | Printer::EventsV1Event) {
                columns.len() - 1
            } else {
                0
            };
            assert_eq!(columns[name_at].name, "Name", "{}", t.kind);
            assert_eq!(columns[name_at].format, "name", "{}", t.kind);
            assert_eq!(columns[name_at].description, NAME_DOC, "{}", t.kind);
            for c in &columns {
                assert!(
                    ["string", "integer", "boolean", "date"].contains(&c.ty.as_str()),
                    "{}: {}",
                    t.kind,
                    c.ty
                );
                if c.name == "Age" {
                    assert_eq!(c.description, CREATION_DOC, "{}", t.kind);
                }
            }
        }
    }

    #[test]
    fn default_printer() {
        let role = json!({"metadata": meta("r")});
        assert_eq!(
            cells(Printer::Default, role),
            vec![json!("r"), json!("2025-03-01T11:55:00Z")]
        );
        let columns = Printer::Default.columns();
        assert_eq!(columns[1].name, "Created At");
        assert_eq!(columns[1].ty, "date");
    }

    #[test]
    fn name_and_age_only() {
        let class = json!({"metadata": meta("gpu.example.com"), "spec": {"selectors": []}});
        assert_eq!(headers(Printer::DeviceClass), ["NAME", "AGE"]);
        assert_eq!(
            cells(Printer::DeviceClass, class),
            [json!("gpu.example.com"), json!("5m")]
        );
        let template = json!({"metadata": meta("gpu-claim"), "spec": {"spec": {}}});
        assert_eq!(
            cells(Printer::ResourceClaimTemplate, template),
            [json!("gpu-claim"), json!("5m")]
        );
    }

    #[test]
    fn lists_with_more() {
        let list: Vec<String> = ["a", "b", "c"].map(str::to_owned).to_vec();
        assert_eq!(list_with_more(&list, 3, 3), "a,b,c");
        assert_eq!(list_with_more(&list, 5, 3), "a,b,c + 2 more...");
        assert_eq!(list_with_more(&[], 0, 3), "<unset>");
    }
}
