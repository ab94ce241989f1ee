//! ClusterProfile `multicluster.x-k8s.io/v1alpha2`, served beside `v1alpha1` (which stays the
//! storage version, as upstream's v0.2.0 keeps it; the CRD converts by relabelling, so reading
//! through `v1alpha2` leaves out what only `v1alpha1` says: `status.credentialProviders` and a
//! cluster's `certificate-authority` path). Stricter than `v1alpha1`: the cluster manager's name
//! is a label value, at most 64 access providers, each with a cluster whose addresses are URLs.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ClusterVersion, Property};

/// A label value (at most 63 characters, checked beside): empty, or alphanumerics with `-`, `_`
/// and `.` inside.
pub const LABEL_VALUE_PATTERN: &str = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";
/// An absolute URL with a host.
pub const SERVER_PATTERN: &str = r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s]+([/?#]\S*)?$";
/// Empty, or an `http`, `https` or `socks5` URL with a host.
pub const PROXY_URL_PATTERN: &str = r"^((https?|socks5)://[^/?#\s]+([/?#]\S*)?)?$";

/// The desired state of a ClusterProfile.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha2",
    kind = "ClusterProfile",
    namespaced,
    status = "ClusterProfileStatus",
    category = "multicluster",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "A member cluster as its cluster manager sees it (KEP-4322).",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Manager","type":"string","jsonPath":".spec.clusterManager.name"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version.kubernetes"}"#,
    printcolumn = r#"{"name":"Healthy","type":"string","jsonPath":".status.conditions[?(@.type==\"ControlPlaneHealthy\")].status"}"#,
    printcolumn = r#"{"name":"ClusterSet","type":"string","priority":1,"description":"the ClusterSet the cluster belongs to","jsonPath":".metadata.labels.multicluster\\.x-k8s\\.io/clusterset"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileSpec {
    /// Human-readable name of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The cluster manager that owns this profile; immutable.
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "ClusterManager is immutable"}]))]
    pub cluster_manager: ClusterManager,
}

/// The cluster manager that owns a ClusterProfile.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ClusterManager {
    /// Name of the cluster manager, a label value (the `x-k8s.io/cluster-manager` label's).
    #[schemars(length(min = 1, max = 63), regex(pattern = LABEL_VALUE_PATTERN))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "!format.labelValue().validate(self).hasValue()", "message": "must be a valid Kubernetes label value"}]))]
    pub name: String,
}

/// The observed state of a member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileStatus {
    /// `ControlPlaneHealthy` and `Joined`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Version of the member cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ClusterVersion>,
    /// Properties of the member cluster: its ClusterProperty objects, copied unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "properties_schema")]
    pub properties: Vec<Property>,
    /// How consumers reach the cluster (no secrets, ever).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "access_providers_schema")]
    pub access_providers: Vec<AccessProvider>,
}

fn properties_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<Property>(generator, "name")
}

fn access_providers_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = crate::schema::map_list::<AccessProvider>(generator, "name");
    schema.insert("maxItems".into(), 64.into());
    schema
}

/// One way of reaching a member cluster, named by the credential plugin that consumes it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AccessProvider {
    /// Provider type, e.g. `kubeconfig-secretreader`.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The cluster to connect to.
    pub cluster: Cluster,
}

/// How to reach a member cluster's API server (a kubeconfig `Cluster` without file paths).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// Address of the API server, `https://host:port`.
    #[schemars(length(max = 2048), regex(pattern = SERVER_PATTERN))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "isURL(self) && url(self).getHost() != ''", "message": "server must be a valid absolute URL with a host"}]))]
    pub server: String,
    /// Server name to use for TLS verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub tls_server_name: Option<String>,
    /// Skip verifying the server certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// PEM CA certificates, base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "byte"))]
    pub certificate_authority_data: Option<String>,
    /// Proxy URL: `http`, `https` or `socks5`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048), regex(pattern = PROXY_URL_PATTERN))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == '' || (isURL(self) && url(self).getScheme() in ['http', 'https', 'socks5'] && url(self).getHost() != '')", "message": "proxy-url must be a valid URL with scheme http, https, or socks5 and a host"}]))]
    pub proxy_url: Option<String>,
    /// Disable response compression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_compression: Option<bool>,
    /// Named extensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "extensions_schema")]
    pub extensions: Vec<NamedExtension>,
}

fn extensions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<NamedExtension>(generator, "name")
}

/// A named kubeconfig extension.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NamedExtension {
    /// Extension name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Extension content, kept as written.
    #[schemars(schema_with = "crate::schema::preserve_unknown")]
    pub extension: serde_json::Value,
}
