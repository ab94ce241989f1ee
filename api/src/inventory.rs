//! The cluster inventory: ClusterProfile (`multicluster.x-k8s.io/v1alpha1`, KEP-4322, stored; and
//! [`v1alpha2`], served beside it), one per member cluster on the hub, and ClusterProperty (`about.k8s.io`, KEP-2149), the properties a
//! member cluster states about itself.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::{PROPERTY_CLUSTER_ID, PROPERTY_CLUSTER_SET};

pub mod v1alpha2;

/// The longest ClusterProperty value, in Unicode code points (KEP-2149).
pub const PROPERTY_VALUE_MAX_CHARS: usize = 128_000;

/// The longest cluster ID a ClusterSet should use; it is composed into MCS DNS names.
pub const CLUSTER_ID_MAX_CHARS: usize = 127;

/// The longest DNS subdomain (RFC 1123).
const DNS_SUBDOMAIN_MAX_CHARS: usize = 253;

/// The desired state of a ClusterProfile.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha1",
    kind = "ClusterProfile",
    namespaced,
    status = "ClusterProfileStatus",
    category = "multicluster",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "A member cluster as its cluster manager sees it (KEP-4322).",
    printcolumn = r#"{"name":"Healthy","type":"string","description":"status of the ControlPlaneHealthy condition","jsonPath":".status.conditions[?(@.type==\"ControlPlaneHealthy\")].status"}"#,
    printcolumn = r#"{"name":"Kubernetes","type":"string","description":"Kubernetes version of the member cluster","jsonPath":".status.version.kubernetes"}"#,
    printcolumn = r#"{"name":"ClusterSet","type":"string","description":"the ClusterSet the cluster belongs to","jsonPath":".metadata.labels.multicluster\\.x-k8s\\.io/clusterset"}"#,
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
    /// Name of the cluster manager; each manager instance uses its own.
    pub name: String,
}

/// The observed state of a member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileStatus {
    /// `ControlPlaneHealthy` and `Joined`.
    #[serde(default)]
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
    /// Deprecated alias of `accessProviders`; on a name clash `accessProviders` wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "access_providers_schema")]
    pub credential_providers: Vec<AccessProvider>,
}

fn properties_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<Property>(generator, "name")
}

fn access_providers_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<AccessProvider>(generator, "name")
}

/// Versions of a member cluster's components.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ClusterVersion {
    /// Kubernetes version, e.g. `v1.35.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
}

/// One name/value property of a member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Property {
    /// Property name: a well-known ClusterProperty name or one the manager defines.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Property value.
    #[schemars(length(min = 1, max = 1024))]
    pub value: String,
    /// When the property was observed on the member cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_time: Option<Time>,
}

/// One way of reaching a member cluster, named by the credential plugin that consumes it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AccessProvider {
    /// Provider type, e.g. `kubeconfig-secretreader`.
    pub name: String,
    /// The kubeconfig `Cluster` to connect to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<KubeconfigCluster>,
}

/// The `Cluster` of a kubeconfig (`clientcmd/api/v1.Cluster`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct KubeconfigCluster {
    /// Address of the API server, `https://host:port`.
    pub server: String,
    /// Server name to use for TLS verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    /// Skip verifying the server certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// Path of a CA file (not meaningful in a profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    /// PEM CA certificates, base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "byte"))]
    pub certificate_authority_data: Option<String>,
    /// Proxy URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    /// Disable response compression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_compression: Option<bool>,
    /// Named extensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<NamedExtension>,
}

/// A named kubeconfig extension.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NamedExtension {
    /// Extension name.
    pub name: String,
    /// Extension content, kept as written.
    #[schemars(schema_with = "crate::schema::preserve_unknown")]
    pub extension: serde_json::Value,
}

// `about.k8s.io` is a protected group: the API server admits its CRD only with the
// `api-approved.kubernetes.io` annotation, which points at the approving KEP.

/// ClusterProperty `about.k8s.io/v1alpha1` (served, not stored).
pub mod v1alpha1 {
    use kube_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    pub use super::ClusterPropertyStatus;

    /// The value of a ClusterProperty; the object's name is the property name.
    #[derive(
        CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
    )]
    #[kube(
        group = "about.k8s.io",
        version = "v1alpha1",
        kind = "ClusterProperty",
        plural = "clusterproperties",
        status = "ClusterPropertyStatus",
        category = "multicluster",
        storage = false,
        derive = "PartialEq",
        derive = "Default",
        crates(kube_core = "::kube_core"),
        annotation(
            "api-approved.kubernetes.io",
            "https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/2149-clusterid"
        ),
        doc = "A property a cluster states about itself (KEP-2149); the name is the property name.",
        printcolumn = r#"{"name":"value","type":"string","jsonPath":".spec.value"}"#,
        printcolumn = r#"{"name":"age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
    )]
    pub struct ClusterPropertySpec {
        /// The property value: at most 128k Unicode code points.
        #[schemars(length(min = 1, max = 128000))]
        pub value: String,
    }
}

/// ClusterProperty `about.k8s.io/v1beta1` (served and stored).
pub mod v1beta1 {
    use kube_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    pub use super::ClusterPropertyStatus;

    /// The value of a ClusterProperty; the object's name is the property name.
    #[derive(
        CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
    )]
    #[kube(
        group = "about.k8s.io",
        version = "v1beta1",
        kind = "ClusterProperty",
        plural = "clusterproperties",
        status = "ClusterPropertyStatus",
        category = "multicluster",
        storage = true,
        derive = "PartialEq",
        derive = "Default",
        crates(kube_core = "::kube_core"),
        annotation(
            "api-approved.kubernetes.io",
            "https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/2149-clusterid"
        ),
        doc = "A property a cluster states about itself (KEP-2149); the name is the property name.",
        printcolumn = r#"{"name":"value","type":"string","jsonPath":".spec.value"}"#,
        printcolumn = r#"{"name":"age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
    )]
    pub struct ClusterPropertySpec {
        /// The property value: at most 128k Unicode code points.
        #[schemars(length(min = 1, max = 128000))]
        pub value: String,
    }
}

pub use v1beta1::{ClusterProperty, ClusterPropertySpec};

/// The status of a ClusterProperty: empty upstream.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ClusterPropertyStatus {}

/// A ClusterProperty that breaks a KEP-2149 rule.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PropertyError {
    /// The property name is not a DNS subdomain.
    #[error("property name {name:?} is not a DNS subdomain (RFC 1123)")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// A property outside the well-known ones uses a reserved suffix.
    #[error(
        "property name {name:?} uses a reserved suffix (.k8s.io, .kubernetes.io); use your own domain"
    )]
    ReservedSuffix {
        /// The rejected name.
        name: String,
    },
    /// The value is empty.
    #[error("property {name:?}: value must not be empty")]
    EmptyValue {
        /// The property name.
        name: String,
    },
    /// The value is longer than 128k code points.
    #[error("property {name:?}: value has {chars} characters, more than the limit of 128000")]
    ValueTooLong {
        /// The property name.
        name: String,
        /// Length of the value in code points.
        chars: usize,
    },
    /// The cluster ID is not a DNS subdomain shorter than 128 characters.
    #[error(
        "property cluster.clusterset.k8s.io: value {value:?} must be a DNS subdomain (RFC 1123) of at most 127 characters"
    )]
    InvalidClusterId {
        /// The rejected cluster ID.
        value: String,
    },
    /// A property that must not change during ClusterSet membership changed.
    #[error(
        "property {name:?} is immutable while the cluster is in a ClusterSet ({old:?} -> {new:?})"
    )]
    Immutable {
        /// The property name.
        name: String,
        /// The value before.
        old: String,
        /// The value asked for.
        new: String,
    },
}

/// Checks a ClusterProperty name and value against the KEP-2149 rules: the name is a DNS
/// subdomain, names other than the well-known ones do not use the reserved `.k8s.io` and
/// `.kubernetes.io` suffixes, the value is 1 to 128k code points, and the cluster ID is a DNS
/// subdomain of at most 127 characters.
pub fn validate_property(name: &str, value: &str) -> Result<(), PropertyError> {
    if !is_dns_subdomain(name) {
        return Err(PropertyError::InvalidName { name: name.into() });
    }
    let well_known = name == PROPERTY_CLUSTER_ID || name == PROPERTY_CLUSTER_SET;
    if !well_known && (name.ends_with(".k8s.io") || name.ends_with(".kubernetes.io")) {
        return Err(PropertyError::ReservedSuffix { name: name.into() });
    }
    if value.is_empty() {
        return Err(PropertyError::EmptyValue { name: name.into() });
    }
    let chars = value.chars().count();
    if chars > PROPERTY_VALUE_MAX_CHARS {
        return Err(PropertyError::ValueTooLong {
            name: name.into(),
            chars,
        });
    }
    if name == PROPERTY_CLUSTER_ID && (chars > CLUSTER_ID_MAX_CHARS || !is_dns_subdomain(value)) {
        return Err(PropertyError::InvalidClusterId {
            value: value.into(),
        });
    }
    Ok(())
}

/// Checks a change of a ClusterProperty value: `cluster.clusterset.k8s.io` and
/// `clusterset.k8s.io` must not change while the cluster is a member of a ClusterSet.
pub fn validate_property_update(
    name: &str,
    old: &str,
    new: &str,
    in_cluster_set: bool,
) -> Result<(), PropertyError> {
    validate_property(name, new)?;
    let guarded = name == PROPERTY_CLUSTER_ID || name == PROPERTY_CLUSTER_SET;
    if guarded && in_cluster_set && old != new {
        return Err(PropertyError::Immutable {
            name: name.into(),
            old: old.into(),
            new: new.into(),
        });
    }
    Ok(())
}

/// The longest ClusterProfile property value (the inventory API's limit, tighter than
/// ClusterProperty's).
pub const PROFILE_PROPERTY_VALUE_MAX_CHARS: usize = 1024;

/// Whether `s` is an RFC 1123 DNS label: 1 to 63 lower-case alphanumerics and `-`, starting and
/// ending alphanumeric. Cluster names are labels, since each names a namespace on the hub.
pub fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && !s.contains('.') && is_dns_subdomain(s)
}

/// Whether `s` is an RFC 1123 DNS subdomain: at most 253 characters, dot-separated labels of
/// lower-case alphanumerics and `-` that start and end alphanumeric.
pub fn is_dns_subdomain(s: &str) -> bool {
    if s.is_empty() || s.len() > DNS_SUBDOMAIN_MAX_CHARS {
        return false;
    }
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                first.is_ascii_alphanumeric()
                    && last.is_ascii_alphanumeric()
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_id_must_be_a_short_dns_subdomain() {
        assert_eq!(
            validate_property(PROPERTY_CLUSTER_ID, "5f6c1b2e-7a1d-4c1e-9b0e-2d6f1d9c0a11"),
            Ok(())
        );
        assert!(matches!(
            validate_property(PROPERTY_CLUSTER_ID, "Not_A_Name"),
            Err(PropertyError::InvalidClusterId { .. })
        ));
        assert!(matches!(
            validate_property(PROPERTY_CLUSTER_ID, &"a".repeat(128)),
            Err(PropertyError::InvalidClusterId { .. })
        ));
        assert_eq!(
            validate_property(PROPERTY_CLUSTER_ID, &"a".repeat(127)),
            Ok(())
        );
    }

    #[test]
    fn custom_properties_need_their_own_suffix() {
        assert_eq!(validate_property("fingerprint.example.com", "abc"), Ok(()));
        assert_eq!(validate_property("fingerprint", "abc"), Ok(()));
        assert_eq!(
            validate_property("fingerprint.k8s.io", "abc"),
            Err(PropertyError::ReservedSuffix {
                name: "fingerprint.k8s.io".into()
            })
        );
        assert!(matches!(
            validate_property("zone.kubernetes.io", "x"),
            Err(PropertyError::ReservedSuffix { .. })
        ));
        assert_eq!(validate_property(PROPERTY_CLUSTER_SET, "prod"), Ok(()));
    }

    #[test]
    fn values_are_limited_in_code_points_not_bytes() {
        assert_eq!(
            validate_property("big.example.com", &"é".repeat(128_000)),
            Ok(())
        );
        assert!(matches!(
            validate_property("big.example.com", &"a".repeat(128_001)),
            Err(PropertyError::ValueTooLong { chars: 128_001, .. })
        ));
        assert!(matches!(
            validate_property("x.example.com", ""),
            Err(PropertyError::EmptyValue { .. })
        ));
        assert!(matches!(
            validate_property("Bad_Name", "v"),
            Err(PropertyError::InvalidName { .. })
        ));
    }

    #[test]
    fn membership_properties_are_immutable_during_membership() {
        assert!(matches!(
            validate_property_update(PROPERTY_CLUSTER_SET, "a", "b", true),
            Err(PropertyError::Immutable { .. })
        ));
        assert_eq!(
            validate_property_update(PROPERTY_CLUSTER_ID, "a", "b", false),
            Ok(())
        );
        assert_eq!(
            validate_property_update("region.example.com", "a", "b", true),
            Ok(())
        );
    }

    #[test]
    fn dns_subdomains() {
        assert!(is_dns_subdomain("a.b-c.d1"));
        assert!(!is_dns_subdomain("a..b"));
        assert!(!is_dns_subdomain("-a"));
        assert!(!is_dns_subdomain("A"));
        assert!(!is_dns_subdomain(&"a".repeat(254)));
    }
}
