//! HostedCluster (`atoll.dev/v1alpha1`): a member cluster whose control plane the hub runs.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a HostedCluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "atoll.dev",
    version = "v1alpha1",
    kind = "HostedCluster",
    namespaced,
    status = "HostedClusterStatus",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "A member cluster whose control plane the hub runs.",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.kubernetesVersion"}"#,
    printcolumn = r#"{"name":"API Server","type":"string","jsonPath":".status.apiServerURL"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterSpec {
    /// Kubernetes version the control plane serves; defaults to the hub's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// How the control plane's API server is exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<ApiServerSpec>,
    /// Where the control plane keeps its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<HostedStorage>,
}

/// How a hosted API server is exposed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ApiServerSpec {
    /// Port to serve on; the hub picks a free one when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
}

/// Where a hosted control plane keeps its data.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct HostedStorage {
    /// The storage backend.
    #[serde(default)]
    pub backend: StorageBackend,
    /// Size of the volume, in Kubernetes mode, e.g. `10Gi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
}

/// The storage backend of a hosted control plane.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum StorageBackend {
    /// An SQLite file in the control plane's data directory (the default).
    #[default]
    Sqlite,
    /// An etcd cluster.
    Etcd,
}

/// The observed state of a HostedCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Where the control plane is in its life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<HostedClusterPhase>,
    /// Name of the Secret beside the HostedCluster holding the admin kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret: Option<String>,
    /// Address of the control plane's API server.
    #[serde(
        rename = "apiServerURL",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub api_server_url: Option<String>,
    /// `Ready` and the state of each control plane component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// Where a hosted control plane is in its life.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum HostedClusterPhase {
    /// Accepted, not started.
    Pending,
    /// Starting up.
    Provisioning,
    /// Serving.
    Running,
    /// Failed to start or stopped serving.
    Failed,
    /// Being torn down.
    Deleting,
}
