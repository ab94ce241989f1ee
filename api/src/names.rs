//! Well-known names every part of atoll agrees on: namespaces, labels, ClusterProperty names and
//! condition types.

/// The inventory namespace on the hub, where ClusterProfiles live.
pub const INVENTORY_NAMESPACE: &str = "fleet-system";

/// The namespace on the hub for atoll's own internals (CA, hashed credentials, bootstrap tokens).
pub const SYSTEM_NAMESPACE: &str = "atoll-system";

/// The default namespace of HostedClusters on the hub.
pub const HOSTED_CLUSTERS_NAMESPACE: &str = "clusters";

/// Whether a member cluster may not take `name`: its namespace on the hub would be a system
/// namespace (`default`, `kube-*`, the inventory, atoll's own, the hosted clusters').
pub fn is_reserved_cluster_name(name: &str) -> bool {
    name.starts_with("kube-")
        || [
            "default",
            INVENTORY_NAMESPACE,
            SYSTEM_NAMESPACE,
            HOSTED_CLUSTERS_NAMESPACE,
        ]
        .contains(&name)
}

/// The name atoll uses as cluster manager (`spec.clusterManager.name` and the label value).
pub const CLUSTER_MANAGER_NAME: &str = "atoll";

/// Label on a ClusterProfile naming its cluster manager; its value equals
/// `spec.clusterManager.name`.
pub const LABEL_CLUSTER_MANAGER: &str = "x-k8s.io/cluster-manager";

/// Label on a ClusterProfile naming the member cluster it represents, the same for every profile
/// of that cluster on a hub; never empty (cluster-inventory-api's `LabelInventoryMemberIDKey`).
/// atoll sets it to the cluster's name.
pub const LABEL_INVENTORY_MEMBER_ID: &str = "multicluster.x-k8s.io/inventory-member-id";

/// Label on a ClusterProfile naming the ClusterSet the cluster belongs to.
pub const LABEL_CLUSTER_SET: &str = "multicluster.x-k8s.io/clusterset";

/// ClusterProperty holding the cluster ID, unique within its ClusterSet.
pub const PROPERTY_CLUSTER_ID: &str = "cluster.clusterset.k8s.io";

/// ClusterProperty naming the ClusterSet a member cluster belongs to; absent outside a set.
pub const PROPERTY_CLUSTER_SET: &str = "clusterset.k8s.io";

/// ClusterProfile condition: the member's control plane is healthy.
pub const CONDITION_CONTROL_PLANE_HEALTHY: &str = "ControlPlaneHealthy";

/// ClusterProfile condition: the cluster is under management by the cluster manager.
pub const CONDITION_JOINED: &str = "Joined";

/// Work condition: the manifests were applied.
pub const CONDITION_APPLIED: &str = "Applied";

/// Work and WorkPlacement condition: a rollout is under way.
pub const CONDITION_PROGRESSING: &str = "Progressing";

/// Work and WorkPlacement condition: the applied resources are available.
pub const CONDITION_AVAILABLE: &str = "Available";

/// Work and WorkPlacement condition: the applied resources do not match their desired state.
pub const CONDITION_DEGRADED: &str = "Degraded";

/// WorkPlacement condition: its policy found the clusters it wants (`False`, reason
/// `NotEnoughClusters`, when a `PickN` found fewer; the ones found still receive the Work).
pub const CONDITION_SCHEDULED: &str = "Scheduled";

/// Condition type on a Work and its manifests: the resources finished (Jobs and Pods that ran to
/// an end), which `deleteOption.ttlSecondsAfterFinished` counts from.
pub const CONDITION_COMPLETE: &str = "Complete";

/// ClusterSet and HostedCluster condition: the object is ready for use.
pub const CONDITION_READY: &str = "Ready";

/// Finalizer on a Work, removed once the member cluster has deleted what it applied.
pub const FINALIZER_WORK_CLEANUP: &str = "multicluster.x-k8s.io/work-cleanup";

/// Field manager the work agent applies manifests with.
pub const FIELD_MANAGER_WORK_AGENT: &str = "atoll-work-agent";

/// ClusterProfile condition: the cluster's ClusterSet membership, when its label asks for one.
pub const CONDITION_CLUSTER_SET_MEMBER: &str = "ClusterSetMember";

/// ClusterSet condition: some clusters were refused membership.
pub const CONDITION_MEMBERSHIP_REJECTED: &str = "MembershipRejected";

/// Label on a stamped Work: the WorkPlacement that stamped it, as `namespace.name`.
pub const LABEL_PLACEMENT: &str = "atoll.dev/placement";

/// The most manifest bytes one Work may carry; larger Works are not sent and say why.
pub const MANIFESTS_MAX_BYTES: usize = 1024 * 1024;
