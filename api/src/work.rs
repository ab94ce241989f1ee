//! Work and AppliedWork (`multicluster.x-k8s.io/v1alpha1`, the SIG-MC Work API, KEP-6456): the
//! manifests the hub asks one member cluster to apply, and the member's record of what it applied.
//!
//! The upstream fields are kept as they are; `deleteOption` and `manifestConfigs` are optional
//! extras in the shape Open Cluster Management uses.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a Work: manifests for the member cluster whose namespace holds it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha1",
    kind = "Work",
    namespaced,
    status = "WorkStatus",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "Manifests for one member cluster; lives in that cluster's namespace on the hub.",
    printcolumn = r#"{"name":"Applied","type":"string","jsonPath":".status.conditions[?(@.type==\"Applied\")].status"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkSpec {
    /// The manifests to apply.
    #[serde(default)]
    pub workload: WorkloadTemplate,
    /// What happens to the applied resources when the Work is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
    /// Per-resource apply settings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_configs: Vec<ManifestConfig>,
}

/// The manifests of a Work.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct WorkloadTemplate {
    /// Complete Kubernetes objects, applied in kind order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<Manifest>,
}

/// One complete Kubernetes object (`runtime.RawExtension`), kept as written.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(transparent)]
pub struct Manifest(
    /// The object, with `apiVersion`, `kind` and `metadata`.
    #[schemars(schema_with = "crate::schema::embedded_resource")]
    pub serde_json::Value,
);

/// What happens to the applied resources when their Work is deleted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOption {
    /// `Foreground` deletes the resources, `Orphan` leaves them, `SelectivelyOrphan` leaves those
    /// the rules name.
    #[serde(default)]
    pub propagation_policy: DeletePropagationPolicy,
    /// The resources to leave behind under `SelectivelyOrphan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selectively_orphans: Option<SelectivelyOrphan>,
    /// Delete the Work this many seconds after it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// How applied resources are treated when their Work is deleted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DeletePropagationPolicy {
    /// Delete the applied resources (the default).
    #[default]
    Foreground,
    /// Leave all applied resources in place.
    Orphan,
    /// Leave the resources named by `selectivelyOrphans`.
    SelectivelyOrphan,
}

/// The resources to leave behind when a Work is deleted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectivelyOrphan {
    /// The resources to orphan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphaning_rules: Vec<ResourceRef>,
}

/// A resource named by group, resource, namespace and name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceRef {
    /// API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// Resource (plural), e.g. `deployments`.
    pub resource: String,
    /// Object name.
    pub name: String,
    /// Namespace; empty for cluster-scoped resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// Apply settings for one resource of a Work.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestConfig {
    /// The resource these settings are for.
    pub resource_identifier: ResourceRef,
    /// How the resource is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    /// Status fields reported back to the hub.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback_rules: Vec<FeedbackRule>,
}

/// How a resource is written to the member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// The write method.
    #[serde(rename = "type", default)]
    pub type_: UpdateStrategyType,
    /// Server-side apply settings, for `ServerSideApply`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<ServerSideApplyConfig>,
}

/// The write method for a resource.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UpdateStrategyType {
    /// Create, then update to match the manifest.
    Update,
    /// Create once; never update.
    CreateOnly,
    /// Server-side apply with a field manager (the default).
    #[default]
    ServerSideApply,
    /// Only check that the resource exists and report its status.
    ReadOnly,
}

/// Server-side apply settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerSideApplyConfig {
    /// Take over fields other managers own.
    #[serde(default)]
    pub force: bool,
    /// Field manager; defaults to the work agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    /// Fields the agent leaves as the member cluster has them (an autoscaler's `replicas`, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_fields: Vec<IgnoreField>,
}

/// Fields of an applied resource the agent does not set again.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoreField {
    /// When the fields are left alone.
    #[serde(default)]
    pub condition: IgnoreFieldsCondition,
    /// The fields, as JSONPaths such as `.spec.replicas` or `.spec.template.spec.containers[0].image`.
    pub json_paths: Vec<String>,
}

/// When ignored fields are left as the member cluster has them.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum IgnoreFieldsCondition {
    /// Once the resource exists in the member cluster, the fields are never set again.
    #[default]
    OnSpokePresent,
    /// A change made in the member cluster stays until the Work changes the field's value.
    OnSpokeChange,
}

/// A rule for which status fields of a resource are reported back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackRule {
    /// `WellKnownStatus` or `JSONPaths`.
    #[serde(rename = "type")]
    pub type_: FeedbackRuleType,
    /// The paths to report, for `JSONPaths`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_paths: Vec<JsonPath>,
}

/// The kind of a feedback rule.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum FeedbackRuleType {
    /// The fields atoll knows for common kinds (Deployment, DaemonSet, Job, Pod).
    #[default]
    WellKnownStatus,
    /// The fields the JSON paths name.
    #[serde(rename = "JSONPaths")]
    JsonPaths,
}

/// A named JSON path into a resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct JsonPath {
    /// Name the value is reported under.
    pub name: String,
    /// API version to read the resource at; defaults to the manifest's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// JSON path to a scalar, e.g. `.status.readyReplicas`.
    pub path: String,
}

/// The observed state of a Work, as the member cluster reported it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkStatus {
    /// Summary conditions: `Applied`, `Progressing`, `Available`, `Degraded`.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// One entry per manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_conditions: Vec<ManifestCondition>,
}

/// The conditions of one manifest of a Work.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ManifestCondition {
    /// Which manifest these conditions describe.
    pub identifier: ResourceIdentifier,
    /// `Applied`, `Available`, `Degraded` for this manifest.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Values the manifest's feedback rules read from the applied object.
    #[serde(
        default,
        rename = "statusFeedback",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_feedback: Option<StatusFeedback>,
}

/// Status values read back from an applied object (OCM's `statusFeedback`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct StatusFeedback {
    /// One value per feedback rule path that resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<FeedbackValue>,
}

/// One named status value.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackValue {
    /// The rule's name for it.
    pub name: String,
    /// The value.
    pub field_value: FieldValue,
}

/// A typed status value; `type` says which field holds it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldValue {
    /// `Integer`, `String`, `Boolean` or `JsonRaw`.
    #[serde(rename = "type")]
    pub type_: String,
    /// For `Integer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integer: Option<i64>,
    /// For `String`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// For `Boolean`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    /// For `JsonRaw`: the value as JSON, at most 1024 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub json_raw: Option<String>,
}

/// A manifest of a Work: its index in `spec.workload.manifests`, and the object it names.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceIdentifier {
    /// Index into `spec.workload.manifests`, so a condition links to a manifest even when the
    /// manifest cannot be parsed.
    pub ordinal: i32,
    /// API group; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Resource (plural).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// Namespace; empty for cluster-scoped resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Object name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// The member cluster's anchor for what one Work applied; deleting it deletes those resources.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha1",
    kind = "AppliedWork",
    status = "AppliedWorkStatus",
    category = "fleet",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "What one Work applied to this member cluster.",
    printcolumn = r#"{"name":"Work Namespace","type":"string","jsonPath":".spec.workNamespace"}"#,
    printcolumn = r#"{"name":"Work","type":"string","jsonPath":".spec.workName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AppliedWorkSpec {
    /// Name of the Work on the hub.
    pub work_name: String,
    /// Namespace of the Work on the hub.
    pub work_namespace: String,
}

/// The resources an AppliedWork stands for.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedWorkStatus {
    /// Resources applied and not yet deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_resources: Vec<AppliedResourceMeta>,
}

/// One applied resource: its identifier and UID.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AppliedResourceMeta {
    /// Which manifest it came from and what it is.
    #[serde(flatten)]
    pub identifier: ResourceIdentifier,
    /// UID of the object on the member cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}
