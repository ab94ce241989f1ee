//! WorkPlacement (`atoll.dev/v1alpha1`): manifests fanned out to the member clusters a selector
//! picks, one Work per cluster, rolled out all at once or progressively.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::work::Manifest;

/// The desired state of a WorkPlacement.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "atoll.dev",
    version = "v1alpha1",
    kind = "WorkPlacement",
    namespaced,
    status = "WorkPlacementStatus",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "Manifests placed on the member clusters a selector picks.",
    printcolumn = r#"{"name":"Selected","type":"integer","jsonPath":".status.selected"}"#,
    printcolumn = r#"{"name":"Available","type":"integer","jsonPath":".status.available"}"#,
    printcolumn = r#"{"name":"Degraded","type":"integer","jsonPath":".status.degraded"}"#,
    printcolumn = r#"{"name":"Progressing","type":"string","jsonPath":".status.conditions[?(@.type==\"Progressing\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkPlacementSpec {
    /// The manifests each selected cluster receives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<Manifest>,
    /// Which member clusters receive them.
    #[serde(default)]
    pub cluster_selector: ClusterSelector,
    /// How fast the manifests reach the clusters.
    #[serde(default)]
    pub rollout_strategy: RolloutStrategy,
}

/// Which member clusters a WorkPlacement selects; the criteria are ANDed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSelector {
    /// Only members of this ClusterSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_set: Option<String>,
    /// Only clusters whose ClusterProfile labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Only these clusters, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::string_set")]
    pub cluster_names: Vec<String>,
}

/// How a WorkPlacement rolls out.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// `All` at once (the default) or `Progressive`.
    #[serde(rename = "type", default)]
    pub type_: RolloutType,
    /// Clusters updated at once under `Progressive`: a number or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::int_or_string")]
    pub max_concurrency: Option<IntOrString>,
    /// Failed clusters tolerated before the rollout stops: a number or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::int_or_string")]
    pub max_failures: Option<IntOrString>,
    /// How long a cluster must stay available before the next ones start, e.g. `1m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_success_time: Option<String>,
    /// How long a cluster may take to become available before it counts as failed, e.g. `10m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
}

/// The rollout type of a WorkPlacement.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum RolloutType {
    /// Every selected cluster at once.
    #[default]
    All,
    /// A few clusters at a time, bounded by `maxConcurrency`.
    Progressive,
}

/// The observed state of a WorkPlacement.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkPlacementStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Clusters the selector picks.
    #[serde(default)]
    pub selected: i32,
    /// Clusters whose Work is applied.
    #[serde(default)]
    pub applied: i32,
    /// Clusters whose Work is available.
    #[serde(default)]
    pub available: i32,
    /// Clusters whose Work is degraded.
    #[serde(default)]
    pub degraded: i32,
    /// Clusters not reached yet.
    #[serde(default)]
    pub pending: i32,
    /// Clusters where the rollout failed, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "failed_clusters_schema")]
    pub failed_clusters: Vec<FailedCluster>,
    /// `Progressing`, `Available`, `Degraded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

fn failed_clusters_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<FailedCluster>(generator, "name")
}

/// A cluster where a rollout failed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct FailedCluster {
    /// Cluster name.
    pub name: String,
    /// Machine-readable reason, in CamelCase.
    #[serde(default)]
    pub reason: String,
    /// What went wrong, for people.
    #[serde(default)]
    pub message: String,
}
