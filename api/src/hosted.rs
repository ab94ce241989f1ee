//! HostedCluster (`atoll.dev/v1alpha1`): a member cluster whose control plane the hub runs.
//!
//! Three modes, one reconciler on the hub: `Embedded` (an atoll API server inside the hub's
//! process), `Process` (the same server as a child `atoll apiserver` the hub supervises) and
//! `Kubernetes` (etcd and kube-apiserver rendered as workloads of a real hub cluster). In every
//! mode the admin kubeconfig is the Secret `<name>-admin-kubeconfig` beside the HostedCluster, and
//! the cluster joins the inventory under its own name.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The networks of a `Kubernetes`-mode cluster, resolved and checked.
pub mod network;

/// Condition: the control plane serves (its API server and datastore are up).
pub const CONDITION_AVAILABLE: &str = "Available";
/// Condition: the hub is bringing the control plane to what the spec asks.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Condition: the control plane cannot be what the spec asks without someone's help.
pub const CONDITION_DEGRADED: &str = "Degraded";
/// Condition: the cluster's API server answers.
pub const CONDITION_API_SERVER_AVAILABLE: &str = "APIServerAvailable";
/// Condition: the cluster's datastore is open and writable.
pub const CONDITION_DATASTORE_AVAILABLE: &str = "DatastoreAvailable";
/// Condition: the cluster's agent joined the hub (the cluster is in the inventory).
pub const CONDITION_AGENT_JOINED: &str = "AgentJoined";
/// Condition (`Kubernetes` mode): the cluster's etcd StatefulSet has a quorum of members ready.
pub const CONDITION_ETCD_AVAILABLE: &str = "EtcdAvailable";
/// Condition (`Kubernetes` mode): the cluster's kube-controller-manager has a replica available.
pub const CONDITION_CONTROLLER_MANAGER_AVAILABLE: &str = "ControllerManagerAvailable";
/// Condition (`Kubernetes` mode): the cluster's kube-scheduler has a replica available.
pub const CONDITION_SCHEDULER_AVAILABLE: &str = "SchedulerAvailable";

/// Finalizer the hub puts on every HostedCluster: it stops the control plane, takes the cluster
/// out of the inventory and deletes its data before the object goes.
pub const FINALIZER: &str = "atoll.dev/hosted-cluster";

/// Annotation `atoll hosted create --restore` sets: the control plane starts empty and waits for
/// a backup to be uploaded to it (`PUT /atoll/v1/restore`) before it serves.
pub const ANNOTATION_RESTORE: &str = "atoll.dev/restore";

/// Key of the kubeconfig in the `<name>-admin-kubeconfig` Secret.
pub const KUBECONFIG_KEY: &str = "kubeconfig";

/// The name of the Secret holding a hosted cluster's admin kubeconfig.
pub fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}-admin-kubeconfig")
}

/// The desired state of a HostedCluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "atoll.dev",
    version = "v1alpha1",
    kind = "HostedCluster",
    namespaced,
    status = "HostedClusterStatus",
    shortname = "hc",
    category = "atoll",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "A member cluster whose control plane the hub runs.",
    printcolumn = r#"{"name":"Mode","type":"string","jsonPath":".spec.mode"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".status.url"}"#,
    printcolumn = r#"{"name":"Kubeconfig","type":"string","jsonPath":".status.kubeconfig.name"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterSpec {
    /// Where the control plane runs: `Embedded` (default), `Process` or `Kubernetes`. Cannot
    /// change.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "mode cannot change; delete the cluster and create it again"}]))]
    pub mode: HostedMode,
    /// The Kubernetes version the control plane serves. `Embedded` and `Process` serve the
    /// version atoll serves (`v1.35`) and refuse another; unset means that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// A ClusterSet the cluster joins when it is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_set: Option<String>,
    /// Labels copied onto the cluster's ClusterProfile (what placements select on).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Where the control plane keeps its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<HostedStorage>,
    /// How the control plane's API server is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<ApiServerSpec>,
    /// What the control plane may hold and serve at once, so one cluster cannot starve the
    /// others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<HostedLimits>,
    /// Stops the control plane and releases its memory while keeping its data; `false` serves
    /// it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspended: bool,
    /// How many replicas the control plane's workloads run in `Kubernetes` mode:
    /// `SingleReplica` (default: one etcd member, one of each Deployment) or `HighlyAvailable`
    /// (three etcd members, three API servers, two of each controller).
    #[serde(default, skip_serializing_if = "Availability::is_single")]
    pub availability: Availability,
    /// Container images of the control plane's workloads in `Kubernetes` mode, each replacing
    /// the one the hub picks for the version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<HostedImages>,
    /// Add-ons the hub installs into a `Kubernetes`-mode cluster once its API server is
    /// available, as kubeadm's `addon` phase does: kube-proxy and CoreDNS, both on unless turned
    /// off here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addons: Option<HostedAddons>,
    /// The networks of a `Kubernetes`-mode cluster: its pods', its Services' and the DNS
    /// Service's address. Set when the cluster is created: a change afterwards is refused (the
    /// hub keeps rendering the networks the control plane was made with), as kube-apiserver
    /// cannot move its Service network in place. `Embedded` and `Process` ignore it, as they do
    /// `images`. IPv4 single-stack only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<HostedNetwork>,
}

/// The networks of a `Kubernetes`-mode cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct HostedNetwork {
    /// The pod network, an IPv4 CIDR such as `10.244.0.0/16`, from which kube-controller-manager
    /// gives each node a /24 (`--cluster-cidr`, `--allocate-node-cidrs`), kube-proxy's
    /// `clusterCIDR` and kubeadm's `podSubnet`. Unset: none, as kubeadm leaves it; the CNI
    /// then manages pod addresses alone (Calico, Cilium), and one that reads nodes'
    /// `podCIDR` (flannel) needs it set.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "podCIDR")]
    #[schemars(length(max = 43), extend("x-kubernetes-validations" = [{"rule": "isCIDR(self) && cidr(self).ip().family() == 4", "message": "must be an IPv4 CIDR such as 10.244.0.0/16 (IPv6 is not supported)"}]))]
    pub pod_cidr: Option<String>,
    /// The Service network, an IPv4 CIDR of at most a /12 [default: `10.96.0.0/12`]: its
    /// first address is the cluster's `kubernetes` Service (a SAN of the API server's
    /// certificate); kube-apiserver's `--service-cluster-ip-range` and kubeadm's
    /// `serviceSubnet`. It may not overlap `podCIDR`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "serviceCIDR"
    )]
    #[schemars(length(max = 43), extend("x-kubernetes-validations" = [{"rule": "isCIDR(self) && cidr(self).ip().family() == 4", "message": "must be an IPv4 CIDR such as 10.96.0.0/12 (IPv6 is not supported)"}]))]
    pub service_cidr: Option<String>,
    /// The address of the `kube-system/kube-dns` Service, in `serviceCIDR`, which kubelets are
    /// given as `clusterDNS` [default: the tenth address of `serviceCIDR`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "dnsServiceIP"
    )]
    #[schemars(length(max = 39), extend("x-kubernetes-validations" = [{"rule": "isIP(self) && ip(self).family() == 4", "message": "must be an IPv4 address such as 10.96.0.10 (IPv6 is not supported)"}]))]
    pub dns_service_ip: Option<String>,
}

/// The add-ons of a `Kubernetes`-mode cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct HostedAddons {
    /// kube-proxy, a DaemonSet on every node, at the control plane's version.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "kubeProxy")]
    pub kube_proxy: Option<Addon>,
    /// CoreDNS, two replicas behind the Service `kube-system/kube-dns` at the tenth address of
    /// the Service network (the `clusterDNS` kubelets are given).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "coreDNS")]
    pub core_dns: Option<Addon>,
}

impl HostedAddons {
    /// Whether kube-proxy is installed.
    pub fn kube_proxy(addons: Option<&HostedAddons>) -> bool {
        addons
            .and_then(|a| a.kube_proxy.as_ref())
            .is_none_or(|a| a.enabled)
    }

    /// Whether CoreDNS is installed.
    pub fn core_dns(addons: Option<&HostedAddons>) -> bool {
        addons
            .and_then(|a| a.core_dns.as_ref())
            .is_none_or(|a| a.enabled)
    }
}

/// One add-on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct Addon {
    /// Whether the hub installs it [default: true]. `false` removes what the hub installed of
    /// it (the objects it labelled), and leaves the rest.
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// Its image, replacing the one the hub picks for the control plane's version: an image
    /// reference, `[registry/]repository[:tag][@sha256:digest]`, the repository in lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512), regex(pattern = IMAGE_PATTERN))]
    pub image: Option<String>,
}

impl Default for Addon {
    fn default() -> Self {
        Self {
            enabled: true,
            image: None,
        }
    }
}

fn enabled_by_default() -> bool {
    true
}

/// What an image reference looks like: a lower-case repository (with an optional registry
/// host and port), an optional tag, an optional sha256 digest.
pub const IMAGE_PATTERN: &str = r"^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$";

/// How many replicas a `Kubernetes`-mode control plane runs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Availability {
    /// One of each: the cheapest.
    #[default]
    SingleReplica,
    /// Three etcd members and API servers, two of each controller: survives the loss of one.
    HighlyAvailable,
}

impl Availability {
    /// Whether it is the default, `SingleReplica`.
    pub fn is_single(&self) -> bool {
        *self == Availability::SingleReplica
    }
}

/// Images replacing those the hub picks for a `Kubernetes`-mode control plane.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct HostedImages {
    /// etcd's image [default: `registry.k8s.io/etcd` at the version kubeadm pairs with the
    /// Kubernetes minor].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd: Option<String>,
    /// kube-apiserver's image [default: `registry.k8s.io/kube-apiserver:<kubernetesVersion>`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "kubeAPIServer"
    )]
    pub kube_api_server: Option<String>,
    /// kube-controller-manager's image [default: `registry.k8s.io/kube-controller-manager`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "kubeControllerManager"
    )]
    pub kube_controller_manager: Option<String>,
    /// kube-scheduler's image [default: `registry.k8s.io/kube-scheduler`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "kubeScheduler"
    )]
    pub kube_scheduler: Option<String>,
    /// The agent's image [default: the hub's `--hosted-agent-image`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Where a hosted control plane runs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum HostedMode {
    /// An API server inside the hub's process (the default): the densest.
    #[default]
    Embedded,
    /// An `atoll apiserver` child process per cluster, supervised by the hub: isolated from
    /// its neighbours' failures.
    Process,
    /// etcd, kube-apiserver, controller manager and scheduler rendered as workloads of the hub
    /// cluster.
    Kubernetes,
}

impl HostedMode {
    /// The name as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            HostedMode::Embedded => "Embedded",
            HostedMode::Process => "Process",
            HostedMode::Kubernetes => "Kubernetes",
        }
    }
}

impl std::fmt::Display for HostedMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a hosted control plane keeps its data.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedStorage {
    /// The datastore: `sqlite` (durable, the default), `memory` (lost when the control plane
    /// stops) or `etcd` (the etcd the hub was given for hosted clusters, under a key prefix of
    /// this cluster's own, as Kamaji's shared DataStores). Cannot change.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "the storage backend cannot change; back the cluster up and restore it into a new one"}]))]
    pub backend: StorageBackend,
    /// Size of the data volume in `Kubernetes` mode, e.g. `8Gi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// Storage class of the data volume in `Kubernetes` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

/// The datastore of a hosted control plane.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    /// An SQLite file in the control plane's data directory.
    #[default]
    Sqlite,
    /// In memory: fast, and lost when the control plane stops or is suspended.
    Memory,
    /// The etcd the hub was given for hosted clusters (`--hosted-etcd-endpoints`), under a key
    /// prefix of the cluster's own (`<hosted prefix>/<namespace>/<name>/<uid>`): it survives the
    /// loss of the hub's disk, and several hub replicas reach it.
    Etcd,
}

impl StorageBackend {
    /// The name as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageBackend::Sqlite => "sqlite",
            StorageBackend::Memory => "memory",
            StorageBackend::Etcd => "etcd",
        }
    }
}

/// How a hosted API server is reached.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerSpec {
    /// Port to serve on. When unset the hub picks a free one and keeps it across restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// More DNS names or addresses for the serving certificate, besides the hub's hosted host,
    /// `localhost` and `127.0.0.1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(rename = "extraSANs")]
    #[schemars(schema_with = "crate::schema::string_set")]
    pub extra_sans: Vec<String>,
    /// In `Kubernetes` mode, the type of the API server's Service on the hub cluster:
    /// `ClusterIP` (default: reached inside the hub cluster), `NodePort` (at the hub's hosted
    /// host, on `port` when set) or `LoadBalancer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_type: Option<ServiceType>,
}

/// How a `Kubernetes`-mode API server's Service is exposed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ServiceType {
    /// Inside the hub cluster only.
    #[default]
    ClusterIP,
    /// On a port of every node of the hub cluster.
    NodePort,
    /// At an address the hub cluster's load balancer gives.
    LoadBalancer,
}

impl ServiceType {
    /// The name as a Service's `spec.type` holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::ClusterIP => "ClusterIP",
            ServiceType::NodePort => "NodePort",
            ServiceType::LoadBalancer => "LoadBalancer",
        }
    }
}

/// Per-cluster limits, enforced by the cluster's own API server.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedLimits {
    /// Bytes of stored objects: past it, creates and updates that grow the data are refused
    /// (reads and deletes keep working). A quantity, e.g. `256Mi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub storage_bytes: Option<serde_json::Value>,
    /// Stored objects: past it, creates are refused (reads and deletes keep working).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub objects: Option<i64>,
    /// Requests served at once, read-only and mutating each (watches aside); more are answered
    /// 429 with `Retry-After`. Without it, kube-apiserver's defaults: 400 and 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub requests_in_flight: Option<i32>,
}

/// The observed state of a HostedCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedClusterStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Available`, `Progressing`, `Degraded`, and one per component: `APIServerAvailable`,
    /// `DatastoreAvailable` (`EtcdAvailable`, `ControllerManagerAvailable` and
    /// `SchedulerAvailable` in `Kubernetes` mode), `AgentJoined`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Where the API server is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<Endpoint>,
    /// The API server's address, `https://host:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The Secret beside the HostedCluster that holds the admin kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<SecretKey>,
    /// The Kubernetes version the control plane serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How long creation took, until the control plane was first Available (e.g. `42ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_after: Option<String>,
}

/// A host and port.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Endpoint {
    /// DNS name or address.
    pub host: String,
    /// Port.
    pub port: i32,
}

/// One key of a Secret in the HostedCluster's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct SecretKey {
    /// The Secret's name.
    pub name: String,
    /// The key in its data.
    pub key: String,
}

/// Why a quantity is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a quantity of bytes (such as 268435456, 256Mi or 1G)")]
pub struct QuantityError(pub String);

/// Parses a Kubernetes quantity of bytes: an integer, optionally with a binary (`Ki`, `Mi`,
/// `Gi`, `Ti`, `Pi`, `Ei`) or decimal (`k`, `M`, `G`, `T`, `P`, `E`) suffix. Fractions and
/// exponents are refused: a byte count is whole.
pub fn parse_bytes(value: &serde_json::Value) -> Result<u64, QuantityError> {
    let error = || QuantityError(value.to_string().trim_matches('"').to_owned());
    let text = match value {
        serde_json::Value::Number(n) => return n.as_u64().ok_or_else(error),
        serde_json::Value::String(s) => s.trim(),
        _ => return Err(error()),
    };
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(error());
    }
    let multiplier: u64 = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        _ => return Err(error()),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(error)
}

/// Why a HostedCluster's name cannot name a member cluster.
pub fn name_problem(name: &str) -> Option<String> {
    if !crate::inventory::is_dns_label(name) {
        return Some(format!(
            "name {name:?} cannot name a member cluster: it must be a DNS label (RFC 1123: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit), as it names the cluster's namespace on the hub"
        ));
    }
    if crate::names::is_reserved_cluster_name(name) {
        return Some(format!(
            "name {name:?} is reserved on the hub (it names a system namespace); choose another"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn byte_quantities_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_bytes(&json!(1024)), Ok(1024));
        assert_eq!(parse_bytes(&json!("256Mi")), Ok(256 << 20));
        assert_eq!(parse_bytes(&json!("1G")), Ok(1_000_000_000));
        assert_eq!(parse_bytes(&json!("12")), Ok(12));
        for bad in [
            json!("1.5Gi"),
            json!("Mi"),
            json!("-1"),
            json!("10 MB"),
            json!("1e3"),
            json!(-5),
            json!(true),
            json!("99999999999Ei"),
        ] {
            let error = parse_bytes(&bad).unwrap_err();
            assert!(
                error.to_string().contains("not a quantity"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn names_that_cannot_be_clusters_say_why() {
        assert_eq!(name_problem("c1"), None);
        assert!(name_problem("a.b").unwrap().contains("DNS label"));
        assert!(name_problem("Upper").unwrap().contains("DNS label"));
        assert!(name_problem(&"x".repeat(64)).unwrap().contains("DNS label"));
        assert!(name_problem("kube-system").unwrap().contains("reserved"));
        assert!(name_problem("default").unwrap().contains("reserved"));
    }

    #[test]
    fn the_spec_reads_as_users_write_it() {
        let spec: HostedClusterSpec = serde_json::from_value(json!({
            "mode": "Process",
            "clusterSet": "default",
            "labels": {"env": "dev"},
            "storage": {"backend": "memory"},
            "apiServer": {"port": 7001, "extraSANs": ["c1.example.com"]},
            "limits": {"storageBytes": "64Mi", "objects": 1000, "requestsInFlight": 20},
            "suspended": true
        }))
        .unwrap();
        assert_eq!(spec.mode, HostedMode::Process);
        assert_eq!(spec.storage.unwrap().backend, StorageBackend::Memory);
        let etcd: HostedStorage = serde_json::from_value(json!({"backend": "etcd"})).unwrap();
        assert_eq!(etcd.backend, StorageBackend::Etcd);
        assert_eq!(
            serde_json::to_value(etcd).unwrap(),
            json!({"backend": "etcd"})
        );
        assert_eq!(spec.api_server.unwrap().extra_sans, ["c1.example.com"]);
        assert!(spec.suspended);
        let defaults: HostedClusterSpec = serde_json::from_value(json!({})).unwrap();
        assert_eq!(defaults.mode, HostedMode::Embedded);
        assert!(serde_json::from_value::<HostedClusterSpec>(json!({"mode": "Vm"})).is_err());
    }

    #[test]
    fn addons_are_on_unless_turned_off() {
        let spec: HostedClusterSpec = serde_json::from_value(json!({
            "mode": "Kubernetes",
            "addons": {"coreDNS": {"image": "mirror.example.com/coredns:v1.13.1"}, "kubeProxy": {"enabled": false}},
        }))
        .unwrap();
        let addons = spec.addons.as_ref();
        assert!(HostedAddons::core_dns(addons));
        assert!(!HostedAddons::kube_proxy(addons));
        assert!(HostedAddons::kube_proxy(None) && HostedAddons::core_dns(None));
        assert_eq!(
            serde_json::to_value(&spec.addons).unwrap(),
            json!({"kubeProxy": {"enabled": false}, "coreDNS": {"enabled": true, "image": "mirror.example.com/coredns:v1.13.1"}})
        );
    }
}
