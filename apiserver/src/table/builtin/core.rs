//! Printers of the core group (`v1`): configuration, workloads, nodes, storage claims and
//! endpoints. The `v1` Event printer is in `events`, shared with `events.k8s.io`.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::age;
use super::super::labels::format_labels;
use super::quantity::quantity;
use super::{
    CONTAINERS_DOC, IMAGES_DOC, age_cell, age_col, col, condition, containers, deleting, int_at,
    items, len, load_balancer_addresses, name, name_cell, non_empty, replicas, str_at,
    template_columns, wide,
};
use crate::table::{Column, Row};

/// The annotation that names a volume's or claim's class ahead of `storageClassName`.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

pub(super) fn component_status_columns() -> Vec<Column> {
    vec![
        name(),
        col("Status", "string", "Status of the component conditions"),
        col("Message", "string", "Message of the component conditions"),
        col("Error", "string", "Error of the component conditions"),
    ]
}

/// Health from the `Healthy` condition; `Unknown` without one.
pub(super) fn component_status(o: &Value) -> Vec<Value> {
    let (status, message, error) = match condition(&o["conditions"], "Healthy") {
        Some(c) => (
            if c["status"] == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            str_at(&c["message"]),
            str_at(&c["error"]),
        ),
        None => ("Unknown", "", ""),
    };
    vec![name_cell(o), json!(status), json!(message), json!(error)]
}

pub(super) fn config_map_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Data",
            "string",
            "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        ),
        age_col(),
    ]
}

pub(super) fn config_map(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name_cell(o),
        json!(len(&o["data"]) + len(&o["binaryData"])),
        age_cell(o, now),
    ]
}

pub(super) fn endpoints_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Endpoints",
            "string",
            "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.",
        ),
        age_col(),
    ]
}

pub(super) fn endpoints(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![name_cell(o), json!(format_endpoints(o)), age_cell(o, now)]
}

/// The first three ready `ip:port` pairs (bare IPs for subsets without ports), then how many
/// more there are.
fn format_endpoints(o: &Value) -> String {
    const MAX: usize = 3;
    let subsets = items(&o["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_owned();
    }
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0;
    for subset in subsets {
        let addresses = items(&subset["addresses"]);
        let ports = items(&subset["ports"]);
        if ports.is_empty() {
            // A headless service may have no ports.
            count += addresses.len();
            for address in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(str_at(&address["ip"]).to_owned());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for address in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(
                    str_at(&address["ip"]),
                    int_at(&port["port"]),
                ));
            }
        }
    }
    let text = list.join(",");
    if more {
        format!("{text} + {} more...", count - MAX)
    } else {
        text
    }
}

/// Go's `net.JoinHostPort`: IPv6 addresses in brackets.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

pub(super) fn namespace_columns() -> Vec<Column> {
    vec![
        name(),
        col("Status", "string", "The status of the namespace"),
        age_col(),
    ]
}

pub(super) fn namespace(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name_cell(o),
        json!(non_empty(str_at(&o["status"]["phase"]), "Active")),
        age_cell(o, now),
    ]
}

const NODE_ADDRESSES_DOC: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

pub(super) fn node_columns() -> Vec<Column> {
    vec![
        name(),
        col("Status", "string", "The status of the node"),
        col("Roles", "string", "The roles of the node"),
        age_col(),
        col("Version", "string", "Kubelet Version reported by the node."),
        wide("Internal-IP", "string", NODE_ADDRESSES_DOC),
        wide("External-IP", "string", NODE_ADDRESSES_DOC),
        wide(
            "OS-Image",
            "string",
            "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        ),
        wide(
            "Kernel-Version",
            "string",
            "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        ),
        wide(
            "Container-Runtime",
            "string",
            "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        ),
    ]
}

/// Readiness (from the last `Ready` condition) and cordoning, the roles its labels give it, and
/// what the kubelet reports.
pub(super) fn node(o: &Value, now: Timestamp) -> Vec<Value> {
    let status = &o["status"];
    let mut states = Vec::new();
    if let Some(ready) = items(&status["conditions"])
        .iter()
        .rev()
        .find(|c| c["type"] == "Ready")
    {
        states.push(if ready["status"] == "True" {
            "Ready"
        } else {
            "NotReady"
        });
    }
    if states.is_empty() {
        states.push("Unknown");
    }
    if o["spec"]["unschedulable"] == true {
        states.push("SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = o["metadata"]["labels"].as_object() {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role);
                }
            } else if key == "kubernetes.io/role" && !str_at(value).is_empty() {
                roles.insert(str_at(value));
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let address = |ty: &str| {
        items(&status["addresses"])
            .iter()
            .find(|a| a["type"] == ty)
            .map_or("<none>", |a| str_at(&a["address"]))
    };
    let info = &status["nodeInfo"];
    let reported = |field: &str| non_empty(str_at(&info[field]), "<unknown>");
    vec![
        name_cell(o),
        json!(states.join(",")),
        json!(non_empty(&roles, "<none>")),
        age_cell(o, now),
        json!(str_at(&info["kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(reported("osImage")),
        json!(reported("kernelVersion")),
        json!(reported("containerRuntimeVersion")),
    ]
}

/// Access modes as `RWO,ROX,RWX,RWOP`, in that order whatever the stored one.
fn access_modes(modes: &Value) -> String {
    let modes = items(modes);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.iter().any(|m| m == mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The phase of a volume or claim: `Terminating` while deleted, `Pending` before any.
fn storage_phase(o: &Value) -> &str {
    if deleting(o) {
        "Terminating"
    } else {
        non_empty(str_at(&o["status"]["phase"]), "Pending")
    }
}

/// `volumeAttributesClassName`, `<unset>` without one.
fn attributes_class(spec: &Value) -> &str {
    spec["volumeAttributesClassName"]
        .as_str()
        .unwrap_or("<unset>")
}

/// `volumeMode`, which kube-apiserver defaults to `Filesystem`.
fn volume_mode(spec: &Value) -> &str {
    spec["volumeMode"].as_str().unwrap_or("Filesystem")
}

pub(super) fn persistent_volume_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Capacity",
            "string",
            "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
        ),
        col(
            "Access Modes",
            "string",
            "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
        ),
        col(
            "Reclaim Policy",
            "string",
            "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
        ),
        col(
            "Status",
            "string",
            "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
        ),
        col(
            "Claim",
            "string",
            "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
        ),
        col("StorageClass", "string", "StorageClass of the pv"),
        col(
            "VolumeAttributesClass",
            "string",
            "VolumeAttributesClass of the pv",
        ),
        col(
            "Reason",
            "string",
            "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
        ),
        age_col(),
        wide(
            "VolumeMode",
            "string",
            "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.",
        ),
    ]
}

pub(super) fn persistent_volume(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let claim = &spec["claimRef"];
    let claim = if claim.is_object() {
        format!("{}/{}", str_at(&claim["namespace"]), str_at(&claim["name"]))
    } else {
        String::new()
    };
    let class = o["metadata"]["annotations"][BETA_STORAGE_CLASS]
        .as_str()
        .unwrap_or_else(|| str_at(&spec["storageClassName"]));
    vec![
        name_cell(o),
        json!(quantity(&spec["capacity"]["storage"])),
        json!(access_modes(&spec["accessModes"])),
        json!(non_empty(
            str_at(&spec["persistentVolumeReclaimPolicy"]),
            "Retain"
        )),
        json!(storage_phase(o)),
        json!(claim),
        json!(class),
        json!(attributes_class(spec)),
        json!(str_at(&o["status"]["reason"])),
        age_cell(o, now),
        json!(volume_mode(spec)),
    ]
}

pub(super) fn persistent_volume_claim_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Status",
            "string",
            "phase represents the current phase of PersistentVolumeClaim.",
        ),
        col(
            "Volume",
            "string",
            "volumeName is the binding reference to the PersistentVolume backing this claim.",
        ),
        col(
            "Capacity",
            "string",
            "capacity represents the actual resources of the underlying volume.",
        ),
        col(
            "Access Modes",
            "string",
            "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
        ),
        col("StorageClass", "string", "StorageClass of the pvc"),
        col(
            "VolumeAttributesClass",
            "string",
            "VolumeAttributesClass of the pvc",
        ),
        age_col(),
        wide(
            "VolumeMode",
            "string",
            "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
        ),
    ]
}

/// Capacity and access modes show only once the claim is bound to a volume.
pub(super) fn persistent_volume_claim(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let volume = str_at(&spec["volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        let status = &o["status"];
        (
            quantity(&status["capacity"]["storage"]),
            access_modes(&status["accessModes"]),
        )
    };
    let class = o["metadata"]["annotations"][BETA_STORAGE_CLASS]
        .as_str()
        .unwrap_or_else(|| str_at(&spec["storageClassName"]));
    vec![
        name_cell(o),
        json!(storage_phase(o)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(attributes_class(spec)),
        age_cell(o, now),
        json!(volume_mode(spec)),
    ]
}

pub(super) fn pod_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Ready",
            "string",
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        col(
            "Status",
            "string",
            "The aggregate status of the containers in this pod.",
        ),
        col(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        age_col(),
        wide(
            "IP",
            "string",
            "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        ),
        wide(
            "Node",
            "string",
            "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        ),
        wide(
            "Nominated Node",
            "string",
            "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
        ),
        wide(
            "Readiness Gates",
            "string",
            "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        ),
    ]
}

pub(super) fn pod_template_columns() -> Vec<Column> {
    vec![
        name(),
        col("Containers", "string", CONTAINERS_DOC),
        col("Images", "string", IMAGES_DOC),
        col("Pod Labels", "string", "The labels for the pod template."),
    ]
}

pub(super) fn pod_template(o: &Value) -> Vec<Value> {
    let template = &o["template"];
    let (names, images) = containers(template);
    vec![
        name_cell(o),
        json!(names),
        json!(images),
        json!(format_labels(&template["metadata"]["labels"])),
    ]
}

pub(super) fn replication_controller_columns() -> Vec<Column> {
    let [containers, images] = template_columns();
    vec![
        name(),
        col(
            "Desired",
            "integer",
            "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        ),
        col(
            "Current",
            "integer",
            "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        ),
        col(
            "Ready",
            "integer",
            "The number of ready replicas for this replication controller.",
        ),
        age_col(),
        containers,
        images,
        wide(
            "Selector",
            "string",
            "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ]
}

pub(super) fn replication_controller(o: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name_cell(o),
        json!(replicas(o)),
        json!(int_at(&o["status"]["replicas"])),
        json!(int_at(&o["status"]["readyReplicas"])),
        age_cell(o, now),
        json!(names),
        json!(images),
        json!(format_labels(&o["spec"]["selector"])),
    ]
}

pub(super) fn resource_quota_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Request",
            "string",
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        col(
            "Limit",
            "string",
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
        age_col(),
    ]
}

/// `used/hard` of each resource the quota limits, by name; `limits.*` ones in the Limit column.
pub(super) fn resource_quota(o: &Value, now: Timestamp) -> Vec<Value> {
    let status = &o["status"];
    let mut resources: Vec<&String> = status["hard"]
        .as_object()
        .map(|hard| hard.keys().collect())
        .unwrap_or_default();
    resources.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for resource in resources {
        let entry = format!(
            "{resource}: {}/{}",
            quantity(&status["used"][resource.as_str()]),
            quantity(&status["hard"][resource.as_str()])
        );
        if resource
            .split_once('.')
            .is_some_and(|(first, _)| first == "limits")
        {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    vec![
        name_cell(o),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
        age_cell(o, now),
    ]
}

pub(super) fn secret_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Type",
            "string",
            "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
        ),
        col(
            "Data",
            "string",
            "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        ),
        age_col(),
    ]
}

pub(super) fn secret(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name_cell(o),
        json!(non_empty(str_at(&o["type"]), "Opaque")),
        json!(secret_keys(o)),
        age_cell(o, now),
    ]
}

/// The keys of a Secret's data (`stringData` is merged into `data` on write upstream; count it
/// in case a stored object still has it).
fn secret_keys(o: &Value) -> usize {
    let mut keys: Vec<&String> = Vec::new();
    for field in ["data", "stringData"] {
        if let Some(map) = o[field].as_object() {
            keys.extend(map.keys());
        }
    }
    keys.sort();
    keys.dedup();
    keys.len()
}

pub(super) fn service_account_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Secrets",
            "string",
            "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret",
        ),
        age_col(),
    ]
}

pub(super) fn service_account(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![name_cell(o), json!(len(&o["secrets"])), age_cell(o, now)]
}

pub(super) fn service_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Type",
            "string",
            "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
        ),
        col(
            "Cluster-IP",
            "string",
            "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        ),
        col(
            "External-IP",
            "string",
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
        ),
        col(
            "Port(s)",
            "string",
            "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        ),
        age_col(),
        wide(
            "Selector",
            "string",
            "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
        ),
    ]
}

pub(super) fn service(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let ty = non_empty(str_at(&spec["type"]), "ClusterIP");
    let cluster_ip = spec["clusterIPs"][0]
        .as_str()
        .or_else(|| spec["clusterIP"].as_str())
        .filter(|ip| !ip.is_empty())
        .unwrap_or("<none>");
    let external_ips: Vec<&str> = spec["externalIPs"]
        .as_array()
        .map(|ips| ips.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let external = match ty {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let mut ingress = load_balancer_addresses(&o["status"]["loadBalancer"]);
            ingress.extend(external_ips);
            if ingress.is_empty() {
                "<pending>".to_owned()
            } else {
                ingress.join(",")
            }
        }
        "ExternalName" => str_at(&spec["externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = items(&spec["ports"])
        .iter()
        .map(|p| {
            let protocol = non_empty(str_at(&p["protocol"]), "TCP");
            let port = int_at(&p["port"]);
            match int_at(&p["nodePort"]) {
                node_port if node_port > 0 => format!("{port}:{node_port}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_owned()
    } else {
        ports.join(",")
    };
    vec![
        name_cell(o),
        json!(ty),
        json!(cluster_ip),
        json!(external),
        json!(ports),
        age_cell(o, now),
        json!(format_labels(&spec["selector"])),
    ]
}

/// The pod row, with kubectl's status reasoning (init containers, waiting and terminated
/// reasons, Terminating) and the Completed row condition of finished pods.
pub(super) fn pod(o: &Value, now: Timestamp) -> Row {
    let spec = &o["spec"];
    let status = &o["status"];
    let empty = Vec::new();
    let containers = spec["containers"].as_array().unwrap_or(&empty);
    let init_specs = spec["initContainers"].as_array().unwrap_or(&empty);
    let restartable = |container_name: &str| {
        init_specs
            .iter()
            .any(|c| str_at(&c["name"]) == container_name && c["restartPolicy"] == "Always")
    };

    let phase = str_at(&status["phase"]);
    let mut reason = non_empty(str_at(&status["reason"]), phase).to_owned();
    let conditions = status["conditions"].as_array().unwrap_or(&empty);
    if conditions
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".to_owned();
    }

    let total = containers.len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut restartable_restarts = 0i64;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_restart: Option<Timestamp> = None;
    let later = |current: Option<Timestamp>, status: &Value| {
        let finished = age::parse(status["lastState"]["terminated"]["finishedAt"].as_str());
        match (current, finished) {
            (Some(c), Some(f)) if f > c => Some(f),
            (None, f) => f,
            (c, _) => c,
        }
    };

    let init_statuses = status["initContainerStatuses"].as_array().unwrap_or(&empty);
    let mut initializing = false;
    for (i, cs) in init_statuses.iter().enumerate() {
        let count = int_at(&cs["restartCount"]);
        restarts += count;
        last_restart = later(last_restart, cs);
        let is_restartable = restartable(str_at(&cs["name"]));
        if is_restartable {
            restartable_restarts += count;
            last_restartable_restart = later(last_restartable_restart, cs);
        }
        let terminated = &cs["state"]["terminated"];
        let waiting = &cs["state"]["waiting"];
        if terminated.is_object() && int_at(&terminated["exitCode"]) == 0 {
            continue;
        }
        if is_restartable && cs["started"] == true {
            if cs["ready"] == true {
                ready += 1;
            }
            continue;
        }
        if terminated.is_object() {
            reason = match str_at(&terminated["reason"]) {
                "" => match int_at(&terminated["signal"]) {
                    0 => format!("Init:ExitCode:{}", int_at(&terminated["exitCode"])),
                    signal => format!("Init:Signal:{signal}"),
                },
                r => format!("Init:{r}"),
            };
        } else if !str_at(&waiting["reason"]).is_empty()
            && str_at(&waiting["reason"]) != "PodInitializing"
        {
            reason = format!("Init:{}", str_at(&waiting["reason"]));
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized = conditions
        .iter()
        .find(|c| c["type"] == "Initialized")
        .is_some_and(|c| c["status"] == "True");
    if !initializing || initialized {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        let statuses = status["containerStatuses"].as_array().unwrap_or(&empty);
        for cs in statuses.iter().rev() {
            restarts += int_at(&cs["restartCount"]);
            last_restart = later(last_restart, cs);
            let waiting = &cs["state"]["waiting"];
            let terminated = &cs["state"]["terminated"];
            if !str_at(&waiting["reason"]).is_empty() {
                reason = str_at(&waiting["reason"]).to_owned();
            } else if terminated.is_object() && !str_at(&terminated["reason"]).is_empty() {
                reason = str_at(&terminated["reason"]).to_owned();
            } else if terminated.is_object() {
                reason = match int_at(&terminated["signal"]) {
                    0 => format!("ExitCode:{}", int_at(&terminated["exitCode"])),
                    signal => format!("Signal:{signal}"),
                };
            } else if cs["ready"] == true && cs["state"]["running"].is_object() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_owned();
        }
    }

    let deleting = deleting(o);
    if deleting && str_at(&status["reason"]) == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_owned();
    }

    let restarts = match last_restart {
        Some(at) if restarts != 0 => {
            format!(
                "{restarts} ({} ago)",
                age::human_duration(now.duration_since(at))
            )
        }
        _ => restarts.to_string(),
    };

    let none_if_empty = |s: &str| non_empty(s, "<none>").to_owned();
    let gates = spec["readinessGates"].as_array().unwrap_or(&empty);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let met = gates
            .iter()
            .filter(|gate| {
                conditions
                    .iter()
                    .find(|c| c["type"] == gate["conditionType"])
                    .is_some_and(|c| c["status"] == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    let cells = vec![
        name_cell(o),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        age_cell(o, now),
        json!(none_if_empty(str_at(&status["podIPs"][0]["ip"]))),
        json!(none_if_empty(str_at(&spec["nodeName"]))),
        json!(none_if_empty(str_at(&status["nominatedNodeName"]))),
        json!(readiness_gates),
    ];
    let row_conditions = match phase {
        "Succeeded" => vec![completed(
            "Succeeded",
            "The pod has completed successfully.",
        )],
        "Failed" => vec![completed("Failed", "The pod failed.")],
        _ => Vec::new(),
    };
    Row {
        cells,
        conditions: row_conditions,
    }
}

fn completed(reason: &str, message: &str) -> Value {
    json!({"type": "Completed", "status": "True", "reason": reason, "message": message})
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta, now};
    use serde_json::json;

    #[test]
    fn secret_and_service_account() {
        let secret = json!({"metadata": meta("s"), "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            cells(Printer::Secret, secret),
            vec![
                json!("s"),
                json!("kubernetes.io/tls"),
                json!(2),
                json!("5m")
            ]
        );
        let untyped = json!({"metadata": meta("t"), "stringData": {"a": "1"}});
        assert_eq!(
            cells(Printer::Secret, untyped)[1..3],
            [json!("Opaque"), json!(1)]
        );
        let sa = json!({"metadata": meta("sa"), "secrets": [{"name": "x"}]});
        assert_eq!(cells(Printer::ServiceAccount, sa)[1], json!(1));
    }

    #[test]
    fn service_columns() {
        let svc = json!({"metadata": meta("web"), "spec": {
            "type": "NodePort", "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"],
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            "selector": {"app": "web"}}});
        assert_eq!(
            cells(Printer::Service, svc),
            vec![
                json!("web"),
                json!("NodePort"),
                json!("10.0.0.7"),
                json!("<none>"),
                json!("80:30080/TCP,53/UDP"),
                json!("5m"),
                json!("app=web")
            ]
        );
        let lb = json!({"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "ports": []}});
        let lb = cells(Printer::Service, lb);
        assert_eq!(
            lb[2..5],
            [json!("<none>"), json!("<pending>"), json!("<none>")]
        );
    }

    #[test]
    fn pod_status_and_restarts() {
        let running = json!({"metadata": meta("p"), "spec": {"nodeName": "n1",
            "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.4"}],
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"finishedAt": "2025-03-01T11:57:00Z"}}},
                {"name": "b", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ]}});
        assert_eq!(
            cells(Printer::Pod, running),
            vec![
                json!("p"),
                json!("1/2"),
                json!("CrashLoopBackOff"),
                json!("2 (3m ago)"),
                json!("5m"),
                json!("10.1.0.4"),
                json!("n1"),
                json!("<none>"),
                json!("<none>")
            ]
        );

        let init = json!({"metadata": meta("i"), "spec": {"containers": [{"name": "a"}],
                "initContainers": [{"name": "setup"}, {"name": "more"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "setup", "restartCount": 0, "state": {"running": {}}}]}});
        assert_eq!(cells(Printer::Pod, init)[2], json!("Init:0/2"));

        let done = json!({"metadata": meta("d"), "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}});
        let row = Printer::Pod.row(&done, now());
        assert_eq!(
            row.cells[1..4],
            [json!("0/1"), json!("Completed"), json!("0")]
        );
        assert_eq!(row.conditions[0]["type"], "Completed");
        assert_eq!(row.conditions[0]["reason"], "Succeeded");

        let mut deleting = json!({"metadata": meta("x"), "spec": {"containers": []},
            "status": {"phase": "Running"}});
        deleting["metadata"]["deletionTimestamp"] = json!("2025-03-01T11:59:00Z");
        assert_eq!(cells(Printer::Pod, deleting)[2], json!("Terminating"));
    }

    #[test]
    fn replication_controller_and_pod_template() {
        let template = json!({"metadata": {"labels": {"app": "web", "tier": "fe"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}});
        let rc = json!({"metadata": meta("web"), "spec": {"replicas": 3,
                "selector": {"app": "web"}, "template": template},
            "status": {"replicas": 3, "readyReplicas": 2}});
        assert_eq!(
            headers(Printer::ReplicationController),
            [
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "AGE",
                "CONTAINERS*",
                "IMAGES*",
                "SELECTOR*"
            ]
        );
        assert_eq!(
            cells(Printer::ReplicationController, rc),
            [
                json!("web"),
                json!(3),
                json!(3),
                json!(2),
                json!("5m"),
                json!("web"),
                json!("nginx:1.27"),
                json!("app=web")
            ]
        );
        let bare = json!({"metadata": meta("bare"), "spec": {}});
        assert_eq!(
            cells(Printer::ReplicationController, bare)[1..],
            [
                json!(1),
                json!(0),
                json!(0),
                json!("5m"),
                json!(""),
                json!(""),
                json!("<none>")
            ]
        );

        let pt = json!({"metadata": meta("web-template"), "template": template});
        assert_eq!(
            headers(Printer::PodTemplate),
            ["NAME", "CONTAINERS", "IMAGES", "POD LABELS"]
        );
        assert_eq!(
            cells(Printer::PodTemplate, pt),
            [
                json!("web-template"),
                json!("web"),
                json!("nginx:1.27"),
                json!("app=web,tier=fe")
            ]
        );
    }

    #[test]
    fn node_status_roles_and_addresses() {
        let node = json!({"metadata": {"name": "cp-1", "creationTimestamp": "2025-02-27T12:00:00Z",
                "labels": {"node-role.kubernetes.io/control-plane": "",
                    "node-role.kubernetes.io/etcd": "true", "kubernetes.io/role": "master",
                    "kubernetes.io/hostname": "cp-1"}},
            "spec": {"unschedulable": true},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "cp-1"},
                    {"type": "InternalIP", "address": "10.0.0.5"},
                    {"type": "InternalIP", "address": "fd00::5"}],
                "nodeInfo": {"kubeletVersion": "v1.35.0", "osImage": "Debian GNU/Linux 13 (trixie)",
                    "kernelVersion": "6.12.0", "containerRuntimeVersion": "containerd://2.1.0"}}});
        assert_eq!(
            headers(Printer::Node),
            [
                "NAME",
                "STATUS",
                "ROLES",
                "AGE",
                "VERSION",
                "INTERNAL-IP*",
                "EXTERNAL-IP*",
                "OS-IMAGE*",
                "KERNEL-VERSION*",
                "CONTAINER-RUNTIME*"
            ]
        );
        assert_eq!(
            cells(Printer::Node, node),
            [
                json!("cp-1"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,etcd,master"),
                json!("2d"),
                json!("v1.35.0"),
                json!("10.0.0.5"),
                json!("<none>"),
                json!("Debian GNU/Linux 13 (trixie)"),
                json!("6.12.0"),
                json!("containerd://2.1.0")
            ]
        );
        let new = json!({"metadata": meta("n"), "status": {"conditions": [
            {"type": "Ready", "status": "Unknown"}]}});
        let new = cells(Printer::Node, new);
        assert_eq!(new[1..3], [json!("NotReady"), json!("<none>")]);
        assert_eq!(
            new[7..],
            [json!("<unknown>"), json!("<unknown>"), json!("<unknown>")]
        );
        let registering = json!({"metadata": meta("r")});
        assert_eq!(cells(Printer::Node, registering)[1], json!("Unknown"));
    }

    #[test]
    fn persistent_volumes_and_claims() {
        let pv = json!({"metadata": meta("pv-data"), "spec": {
                "capacity": {"storage": "10240Mi"},
                "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast",
                "claimRef": {"namespace": "db", "name": "data-0"}, "volumeMode": "Block"},
            "status": {"phase": "Bound"}});
        assert_eq!(
            headers(Printer::PersistentVolume),
            [
                "NAME",
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON",
                "AGE",
                "VOLUMEMODE*"
            ]
        );
        assert_eq!(
            cells(Printer::PersistentVolume, pv),
            [
                json!("pv-data"),
                json!("10Gi"),
                json!("RWO,RWX"),
                json!("Delete"),
                json!("Bound"),
                json!("db/data-0"),
                json!("fast"),
                json!("<unset>"),
                json!(""),
                json!("5m"),
                json!("Block")
            ]
        );
        // Defaults as kube-apiserver fills them; the beta annotation wins over the field.
        let mut bare = json!({"metadata": meta("pv-bare"), "spec": {"storageClassName": "slow"}});
        bare["metadata"]["annotations"] =
            json!({"volume.beta.kubernetes.io/storage-class": "legacy"});
        bare["metadata"]["deletionTimestamp"] = json!("2025-03-01T11:59:00Z");
        assert_eq!(
            cells(Printer::PersistentVolume, bare)[1..],
            [
                json!("0"),
                json!(""),
                json!("Retain"),
                json!("Terminating"),
                json!(""),
                json!("legacy"),
                json!("<unset>"),
                json!(""),
                json!("5m"),
                json!("Filesystem")
            ]
        );

        let bound = json!({"metadata": meta("data-0"), "spec": {"volumeName": "pv-data",
                "storageClassName": "fast", "volumeAttributesClassName": "gold",
                "resources": {"requests": {"storage": "5Gi"}}},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"]}});
        assert_eq!(
            headers(Printer::PersistentVolumeClaim),
            [
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE",
                "VOLUMEMODE*"
            ]
        );
        assert_eq!(
            cells(Printer::PersistentVolumeClaim, bound),
            [
                json!("data-0"),
                json!("Bound"),
                json!("pv-data"),
                json!("10Gi"),
                json!("RWO"),
                json!("fast"),
                json!("gold"),
                json!("5m"),
                json!("Filesystem")
            ]
        );
        let pending = json!({"metadata": meta("data-1"), "spec": {
            "resources": {"requests": {"storage": "5Gi"}}}});
        assert_eq!(
            cells(Printer::PersistentVolumeClaim, pending)[1..7],
            [
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!(""),
                json!("<unset>")
            ]
        );
    }

    #[test]
    fn endpoints_addresses() {
        let ep = json!({"metadata": meta("web"), "subsets": [
            {"addresses": [{"ip": "10.1.0.4"}, {"ip": "10.1.0.5"}],
             "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]},
            {"addresses": [{"ip": "fd00::7"}], "ports": [{"port": 8443}]}]});
        assert_eq!(headers(Printer::Endpoints), ["NAME", "ENDPOINTS", "AGE"]);
        assert_eq!(
            cells(Printer::Endpoints, ep),
            [
                json!("web"),
                json!("10.1.0.4:80,10.1.0.5:80,10.1.0.4:9090 + 2 more..."),
                json!("5m")
            ]
        );
        let v6 = json!({"metadata": meta("v6"), "subsets": [
            {"addresses": [{"ip": "fd00::7"}], "ports": [{"port": 8443}]}]});
        assert_eq!(cells(Printer::Endpoints, v6)[1], json!("[fd00::7]:8443"));
        let headless = json!({"metadata": meta("db"), "subsets": [
            {"addresses": [{"ip": "10.1.0.9"}], "notReadyAddresses": [{"ip": "10.1.0.8"}]}]});
        assert_eq!(cells(Printer::Endpoints, headless)[1], json!("10.1.0.9"));
        let none = json!({"metadata": meta("none")});
        assert_eq!(cells(Printer::Endpoints, none)[1], json!("<none>"));
    }

    #[test]
    fn resource_quota_used_over_hard() {
        let quota = json!({"metadata": meta("compute"), "spec": {"hard": {"cpu": "4"}},
            "status": {
                "hard": {"requests.cpu": "4", "requests.memory": "8192Mi", "pods": "10",
                    "limits.cpu": "8", "limits.memory": "16Gi"},
                "used": {"requests.cpu": "1500m", "requests.memory": "1Gi", "pods": "3",
                    "limits.cpu": "2"}}});
        assert_eq!(
            headers(Printer::ResourceQuota),
            ["NAME", "REQUEST", "LIMIT", "AGE"]
        );
        assert_eq!(
            cells(Printer::ResourceQuota, quota),
            [
                json!("compute"),
                json!("pods: 3/10, requests.cpu: 1500m/4, requests.memory: 1Gi/8Gi"),
                json!("limits.cpu: 2/8, limits.memory: 0/16Gi"),
                json!("5m")
            ]
        );
        let fresh = json!({"metadata": meta("fresh"), "spec": {"hard": {"pods": "10"}}});
        assert_eq!(
            cells(Printer::ResourceQuota, fresh)[1..3],
            [json!(""), json!("")]
        );
    }

    #[test]
    fn component_status_health() {
        let healthy = json!({"metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            headers(Printer::ComponentStatus),
            ["NAME", "STATUS", "MESSAGE", "ERROR"]
        );
        assert_eq!(
            cells(Printer::ComponentStatus, healthy),
            [json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
        let broken = json!({"metadata": {"name": "scheduler"}, "conditions": [
            {"type": "Healthy", "status": "False", "error": "connection refused"}]});
        assert_eq!(
            cells(Printer::ComponentStatus, broken)[1..],
            [json!("Unhealthy"), json!(""), json!("connection refused")]
        );
        let unknown = json!({"metadata": {"name": "x"}});
        assert_eq!(
            cells(Printer::ComponentStatus, unknown)[1],
            json!("Unknown")
        );
    }
}
