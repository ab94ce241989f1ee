//! ClusterSet (`atoll.dev/v1alpha1`): a named group of member clusters. Membership is the label
//! `multicluster.x-k8s.io/clusterset` on a cluster's ClusterProfile; the hub validates it and
//! reports the members here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a ClusterSet.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "atoll.dev",
    version = "v1alpha1",
    kind = "ClusterSet",
    status = "ClusterSetStatus",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "A named group of member clusters (KEP-1645 ClusterSet).",
    printcolumn = r#"{"name":"Members","type":"integer","jsonPath":".status.memberCount"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyCount"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct ClusterSetSpec {
    /// What the set is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The observed state of a ClusterSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSetStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The member clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "members_schema")]
    pub members: Vec<ClusterSetMember>,
    /// Number of member clusters.
    #[serde(default)]
    pub member_count: i32,
    /// Number of members whose control plane is healthy.
    #[serde(default)]
    pub ready_count: i32,
    /// `Ready`, and why clusters were refused membership.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

fn members_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<ClusterSetMember>(generator, "name")
}

/// One member cluster of a ClusterSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSetMember {
    /// Name of the cluster's ClusterProfile.
    pub name: String,
    /// The cluster's ID (`cluster.clusterset.k8s.io`), unique in the set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// Whether the member's control plane is healthy.
    #[serde(default)]
    pub ready: bool,
}
