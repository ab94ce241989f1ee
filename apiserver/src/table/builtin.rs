//! The printers of the built-in kinds, after kube-apiserver's (`pkg/printers/internalversion`),
//! which the server always runs wide: every row carries the cells of its priority 1 columns too,
//! and kubectl shows those only with `-o wide`.
//!
//! Objects are read as stored JSON; where kube-apiserver would have defaulted a field on decoding
//! (replicas 1, Secret type `Opaque`, Namespace phase `Active`, Service type `ClusterIP`, port
//! protocol `TCP`) the printer assumes the same default.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age;
use super::labels::{format_label_selector, format_labels, selector_string};
use super::{Column, Row};

/// `ObjectMeta.name`'s description, which every Name column carries.
pub const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `ObjectMeta.creationTimestamp`'s description, which every Age column carries.
pub const CREATION_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const CONTAINERS_DOC: &str = "Names of each container in the template.";
const IMAGES_DOC: &str = "Images referenced by each container in the template.";

/// Which printer renders a built-in kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printer {
    ConfigMap,
    Secret,
    Namespace,
    ServiceAccount,
    Service,
    /// `v1` Event.
    Event,
    /// `events.k8s.io/v1` Event (the same printer over the newer field names).
    EventsV1Event,
    Pod,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    /// RoleBinding and ClusterRoleBinding.
    RoleBinding,
    Lease,
    /// The generic printer (NAME, CREATED AT) of kinds without their own: Role, ClusterRole,
    /// CustomResourceDefinition.
    Default,
}

impl Printer {
    /// The printer of a built-in kind; [`Printer::Default`] for kinds without their own.
    pub fn for_kind(group: &str, kind: &str) -> Self {
        match (group, kind) {
            ("", "ConfigMap") => Printer::ConfigMap,
            ("", "Secret") => Printer::Secret,
            ("", "Namespace") => Printer::Namespace,
            ("", "ServiceAccount") => Printer::ServiceAccount,
            ("", "Service") => Printer::Service,
            ("", "Event") => Printer::Event,
            ("events.k8s.io", "Event") => Printer::EventsV1Event,
            ("", "Pod") => Printer::Pod,
            ("apps", "Deployment") => Printer::Deployment,
            ("apps", "ReplicaSet") => Printer::ReplicaSet,
            ("apps", "StatefulSet") => Printer::StatefulSet,
            ("apps", "DaemonSet") => Printer::DaemonSet,
            ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
                Printer::RoleBinding
            }
            ("coordination.k8s.io", "Lease") => Printer::Lease,
            _ => Printer::Default,
        }
    }

    /// The column definitions, wide ones (priority 1) included.
    pub fn columns(self) -> Vec<Column> {
        match self {
            Printer::ConfigMap => vec![
                name(),
                col(
                    "Data",
                    "string",
                    "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
                ),
                age_col(),
            ],
            Printer::Secret => vec![
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
            ],
            Printer::Namespace => vec![
                name(),
                col("Status", "string", "The status of the namespace"),
                age_col(),
            ],
            Printer::ServiceAccount => vec![
                name(),
                col(
                    "Secrets",
                    "string",
                    "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
                ),
                age_col(),
            ],
            Printer::Service => vec![
                name(),
                col(
                    "Type",
                    "string",
                    "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer.",
                ),
                col(
                    "Cluster-IP",
                    "string",
                    "clusterIP is the IP address of the service and is usually assigned randomly.",
                ),
                col(
                    "External-IP",
                    "string",
                    "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
                ),
                col(
                    "Port(s)",
                    "string",
                    "The list of ports that are exposed by this service.",
                ),
                age_col(),
                wide(
                    "Selector",
                    "string",
                    "Route service traffic to pods with label keys and values matching this selector.",
                ),
            ],
            Printer::Event | Printer::EventsV1Event => vec![
                col(
                    "Last Seen",
                    "string",
                    "The time at which the most recent occurrence of this event was recorded.",
                ),
                col(
                    "Type",
                    "string",
                    "Type of this event (Normal, Warning), new types could be added in the future",
                ),
                col(
                    "Reason",
                    "string",
                    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
                ),
                col("Object", "string", "The object that this event is about."),
                wide(
                    "Subobject",
                    "string",
                    "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
                ),
                wide(
                    "Source",
                    "string",
                    "The component reporting this event. Should be a short machine understandable string.",
                ),
                col(
                    "Message",
                    "string",
                    "A human-readable description of the status of this operation.",
                ),
                wide(
                    "First Seen",
                    "string",
                    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
                ),
                wide(
                    "Count",
                    "string",
                    "The number of times this event has occurred.",
                ),
                Column::new("Name", "string", "name", NAME_DOC, 1),
            ],
            Printer::Pod => vec![
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
                    "NodeName indicates in which node this pod is scheduled.",
                ),
                wide(
                    "Nominated Node",
                    "string",
                    "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
                ),
                wide(
                    "Readiness Gates",
                    "string",
                    "If specified, all readiness gates will be evaluated for pod readiness.",
                ),
            ],
            Printer::Deployment => vec![
                name(),
                col("Ready", "string", "Number of the pod with ready state"),
                col(
                    "Up-to-date",
                    "string",
                    "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                ),
                col(
                    "Available",
                    "string",
                    "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                ),
                age_col(),
                wide("Containers", "string", CONTAINERS_DOC),
                wide("Images", "string", IMAGES_DOC),
                wide(
                    "Selector",
                    "string",
                    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
                ),
            ],
            Printer::ReplicaSet => vec![
                name(),
                col(
                    "Desired",
                    "integer",
                    "Replicas is the number of desired replicas.",
                ),
                col(
                    "Current",
                    "integer",
                    "Replicas is the most recently observed number of replicas.",
                ),
                col(
                    "Ready",
                    "integer",
                    "The number of ready replicas for this replica set.",
                ),
                age_col(),
                wide("Containers", "string", CONTAINERS_DOC),
                wide("Images", "string", IMAGES_DOC),
                wide(
                    "Selector",
                    "string",
                    "Selector is a label query over pods that should match the replica count.",
                ),
            ],
            Printer::StatefulSet => vec![
                name(),
                col("Ready", "string", "Number of the pod with ready state"),
                age_col(),
                wide("Containers", "string", CONTAINERS_DOC),
                wide("Images", "string", IMAGES_DOC),
            ],
            Printer::DaemonSet => vec![
                name(),
                col(
                    "Desired",
                    "integer",
                    "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
                ),
                col(
                    "Current",
                    "integer",
                    "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
                ),
                col(
                    "Ready",
                    "integer",
                    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
                ),
                col(
                    "Up-to-date",
                    "integer",
                    "The total number of nodes that are running updated daemon pod",
                ),
                col(
                    "Available",
                    "integer",
                    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
                ),
                col(
                    "Node Selector",
                    "string",
                    "NodeSelector is a selector which must be true for the pod to fit on a node.",
                ),
                age_col(),
                wide("Containers", "string", CONTAINERS_DOC),
                wide("Images", "string", IMAGES_DOC),
                wide(
                    "Selector",
                    "string",
                    "A label query over pods that are managed by the daemon set.",
                ),
            ],
            Printer::RoleBinding => vec![
                name(),
                col(
                    "Role",
                    "string",
                    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
                ),
                age_col(),
                wide("Users", "string", "Users in the roleBinding"),
                wide("Groups", "string", "Groups in the roleBinding"),
                wide(
                    "ServiceAccounts",
                    "string",
                    "ServiceAccounts in the roleBinding",
                ),
            ],
            Printer::Lease => vec![
                name(),
                col(
                    "Holder",
                    "string",
                    "holderIdentity contains the identity of the holder of a current lease.",
                ),
                age_col(),
            ],
            Printer::Default => vec![name(), col("Created At", "date", CREATION_DOC)],
        }
    }

    /// One object's row.
    pub fn row(self, o: &Value, now: Timestamp) -> Row {
        let name = json!(str_at(&o["metadata"]["name"]));
        let age = json!(age::since(o["metadata"]["creationTimestamp"].as_str(), now));
        let cells = match self {
            Printer::ConfigMap => vec![name, json!(len(&o["data"]) + len(&o["binaryData"])), age],
            Printer::Secret => vec![
                name,
                json!(non_empty(str_at(&o["type"]), "Opaque")),
                json!(secret_keys(o)),
                age,
            ],
            Printer::Namespace => vec![
                name,
                json!(non_empty(str_at(&o["status"]["phase"]), "Active")),
                age,
            ],
            Printer::ServiceAccount => vec![name, json!(len(&o["secrets"])), age],
            Printer::Service => service(o, name, age),
            Printer::Event => event(o, &EVENT_FIELDS, now),
            Printer::EventsV1Event => event(o, &EVENTS_V1_FIELDS, now),
            Printer::Pod => return pod(o, name, age, now),
            Printer::Deployment => {
                let (containers, images) = containers(&o["spec"]["template"]);
                vec![
                    name,
                    json!(format!(
                        "{}/{}",
                        int_at(&o["status"]["readyReplicas"]),
                        replicas(o)
                    )),
                    json!(int_at(&o["status"]["updatedReplicas"])),
                    json!(int_at(&o["status"]["availableReplicas"])),
                    age,
                    json!(containers),
                    json!(images),
                    json!(
                        selector_string(&o["spec"]["selector"])
                            .unwrap_or_else(|| "<invalid>".to_owned())
                    ),
                ]
            }
            Printer::ReplicaSet => {
                let (containers, images) = containers(&o["spec"]["template"]);
                vec![
                    name,
                    json!(replicas(o)),
                    json!(int_at(&o["status"]["replicas"])),
                    json!(int_at(&o["status"]["readyReplicas"])),
                    age,
                    json!(containers),
                    json!(images),
                    json!(format_label_selector(&o["spec"]["selector"])),
                ]
            }
            Printer::StatefulSet => {
                let (containers, images) = containers(&o["spec"]["template"]);
                vec![
                    name,
                    json!(format!(
                        "{}/{}",
                        int_at(&o["status"]["readyReplicas"]),
                        replicas(o)
                    )),
                    age,
                    json!(containers),
                    json!(images),
                ]
            }
            Printer::DaemonSet => {
                let status = &o["status"];
                let (containers, images) = containers(&o["spec"]["template"]);
                vec![
                    name,
                    json!(int_at(&status["desiredNumberScheduled"])),
                    json!(int_at(&status["currentNumberScheduled"])),
                    json!(int_at(&status["numberReady"])),
                    json!(int_at(&status["updatedNumberScheduled"])),
                    json!(int_at(&status["numberAvailable"])),
                    json!(format_labels(
                        &o["spec"]["template"]["spec"]["nodeSelector"]
                    )),
                    age,
                    json!(containers),
                    json!(images),
                    json!(format_label_selector(&o["spec"]["selector"])),
                ]
            }
            Printer::RoleBinding => role_binding(o, name, age),
            Printer::Lease => vec![name, json!(str_at(&o["spec"]["holderIdentity"])), age],
            Printer::Default => vec![
                name,
                json!(age::created_at(o["metadata"]["creationTimestamp"].as_str())),
            ],
        };
        Row {
            cells,
            conditions: Vec::new(),
        }
    }
}

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
    let r = &o["spec"]["replicas"];
    if r.is_null() { 1 } else { int_at(r) }
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

/// Container names and images of a pod template, each comma-joined.
fn containers(template: &Value) -> (String, String) {
    let list = template["spec"]["containers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let names: Vec<&str> = list.iter().map(|c| str_at(&c["name"])).collect();
    let images: Vec<&str> = list.iter().map(|c| str_at(&c["image"])).collect();
    (names.join(","), images.join(","))
}

fn service(o: &Value, name: Value, age: Value) -> Vec<Value> {
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
            let mut ingress: Vec<&str> = o["status"]["loadBalancer"]["ingress"]
                .as_array()
                .map(|list| {
                    list.iter()
                        .filter_map(|i| {
                            i["ip"]
                                .as_str()
                                .filter(|s| !s.is_empty())
                                .or_else(|| i["hostname"].as_str().filter(|s| !s.is_empty()))
                        })
                        .collect()
                })
                .unwrap_or_default();
            ingress.sort_unstable();
            ingress.dedup();
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
    let ports: Vec<String> = spec["ports"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
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
        name,
        json!(ty),
        json!(cluster_ip),
        json!(external),
        json!(ports),
        age,
        json!(format_labels(&spec["selector"])),
    ]
}

/// Where an Event keeps each field the printer reads, by API version.
struct EventFields {
    involved: &'static str,
    message: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
    source: &'static str,
}

const EVENT_FIELDS: EventFields = EventFields {
    involved: "involvedObject",
    message: "message",
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
    source: "source",
};

const EVENTS_V1_FIELDS: EventFields = EventFields {
    involved: "regarding",
    message: "note",
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    source: "deprecatedSource",
};

fn event(o: &Value, f: &EventFields, now: Timestamp) -> Vec<Value> {
    let first = match age::parse(o[f.first].as_str()) {
        Some(_) => age::since(o[f.first].as_str(), now),
        None => age::since(o["eventTime"].as_str(), now),
    };
    let mut last = match age::parse(o[f.last].as_str()) {
        Some(_) => age::since(o[f.last].as_str(), now),
        None => first.clone(),
    };
    let mut count = int_at(&o[f.count]);
    let series = &o["series"];
    if series.is_object() {
        last = age::since(series["lastObservedTime"].as_str(), now);
        count = int_at(&series["count"]);
    } else if count == 0 {
        // Singleton events don't have a count set in the new API.
        count = 1;
    }
    let involved = &o[f.involved];
    let kind = str_at(&involved["kind"]).to_lowercase();
    let target = match str_at(&involved["name"]) {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let source = &o[f.source];
    let component = non_empty(
        str_at(&source["component"]),
        str_at(&o["reportingController"]),
    );
    let instance = non_empty(str_at(&source["host"]), str_at(&o["reportingInstance"]));
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(str_at(&o["type"])),
        json!(str_at(&o["reason"])),
        json!(target),
        json!(str_at(&involved["fieldPath"])),
        json!(source),
        json!(str_at(&o[f.message]).trim()),
        json!(first),
        json!(count),
        json!(str_at(&o["metadata"]["name"])),
    ]
}

fn role_binding(o: &Value, name: Value, age: Value) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        str_at(&o["roleRef"]["kind"]),
        str_at(&o["roleRef"]["name"])
    );
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in o["subjects"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let subject_name = str_at(&subject["name"]);
        match str_at(&subject["kind"]) {
            "ServiceAccount" => {
                accounts.push(format!("{}/{subject_name}", str_at(&subject["namespace"])))
            }
            "User" => users.push(subject_name.to_owned()),
            "Group" => groups.push(subject_name.to_owned()),
            _ => {}
        }
    }
    vec![
        name,
        json!(role),
        age,
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(accounts.join(", ")),
    ]
}

/// The pod row, with kubectl's status reasoning (init containers, waiting and terminated
/// reasons, Terminating) and the Completed row condition of finished pods.
fn pod(o: &Value, name: Value, age: Value, now: Timestamp) -> Row {
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

    let deleting = !o["metadata"]["deletionTimestamp"].is_null();
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
        name,
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        age,
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
    use super::*;

    fn now() -> Timestamp {
        "2025-03-01T12:00:00Z".parse().unwrap()
    }

    fn cells(printer: Printer, o: Value) -> Vec<Value> {
        let row = printer.row(&o, now());
        assert_eq!(
            row.cells.len(),
            printer.columns().len(),
            "{printer:?}: one cell per column"
        );
        row.cells
    }

    fn meta(name: &str) -> Value {
        json!({"name": name, "namespace": "default", "creationTimestamp": "2025-03-01T11:55:00Z"})
    }

    #[test]
    fn dispatch() {
        assert_eq!(Printer::for_kind("", "Secret"), Printer::Secret);
        assert_eq!(Printer::for_kind("apps", "Deployment"), Printer::Deployment);
        assert_eq!(
            Printer::for_kind("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            Printer::RoleBinding
        );
        assert_eq!(
            Printer::for_kind("rbac.authorization.k8s.io", "Role"),
            Printer::Default
        );
        assert_eq!(
            Printer::for_kind("apiextensions.k8s.io", "CustomResourceDefinition"),
            Printer::Default
        );
    }

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
    fn workloads() {
        let template = json!({"spec": {"containers": [
            {"name": "web", "image": "nginx:1"}, {"name": "side", "image": "envoy"}]}});
        let rs = json!({"metadata": meta("rs"), "spec": {"replicas": 2, "template": template,
            "selector": {"matchLabels": {"app": "web"}}}, "status": {"replicas": 2, "readyReplicas": 1}});
        assert_eq!(
            cells(Printer::ReplicaSet, rs),
            vec![
                json!("rs"),
                json!(2),
                json!(2),
                json!(1),
                json!("5m"),
                json!("web,side"),
                json!("nginx:1,envoy"),
                json!("app=web")
            ]
        );
        let sts = json!({"metadata": meta("db"), "spec": {"template": template},
            "status": {"readyReplicas": 1}});
        assert_eq!(cells(Printer::StatefulSet, sts)[1], json!("1/1"));
        let ds = json!({"metadata": meta("agent"), "spec": {"template": {"spec": {
                "nodeSelector": {"os": "linux"}, "containers": []}}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}});
        assert_eq!(
            cells(Printer::DaemonSet, ds)[1..8],
            [
                json!(3),
                json!(3),
                json!(2),
                json!(3),
                json!(2),
                json!("os=linux"),
                json!("5m")
            ]
        );
    }

    #[test]
    fn events_in_both_versions() {
        let core = json!({"metadata": meta("web.1"), "type": "Warning", "reason": "BackOff",
            "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{web}"},
            "source": {"component": "kubelet", "host": "node-1"},
            "message": "Back-off restarting\n", "firstTimestamp": "2025-03-01T11:00:00Z",
            "lastTimestamp": "2025-03-01T11:58:00Z", "count": 7});
        assert_eq!(
            cells(Printer::Event, core),
            vec![
                json!("2m"),
                json!("Warning"),
                json!("BackOff"),
                json!("pod/web-0"),
                json!("spec.containers{web}"),
                json!("kubelet, node-1"),
                json!("Back-off restarting"),
                json!("60m"),
                json!(7),
                json!("web.1")
            ]
        );
        let v1 = json!({"metadata": meta("e"), "type": "Normal", "reason": "Scheduled",
            "regarding": {"kind": "Pod", "name": "p"}, "note": "assigned",
            "eventTime": "2025-03-01T11:59:50.000000Z", "reportingController": "scheduler"});
        let row = cells(Printer::EventsV1Event, v1);
        assert_eq!(
            row[..9],
            [
                json!("10s"),
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/p"),
                json!(""),
                json!("scheduler"),
                json!("assigned"),
                json!("10s"),
                json!(1)
            ]
        );
    }

    #[test]
    fn bindings_leases_and_default() {
        let rb = json!({"metadata": meta("rb"), "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "ann"}, {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
                {"kind": "User", "name": "bo"}]});
        assert_eq!(
            cells(Printer::RoleBinding, rb),
            vec![
                json!("rb"),
                json!("ClusterRole/view"),
                json!("5m"),
                json!("ann, bo"),
                json!("devs"),
                json!("ci/bot")
            ]
        );
        let lease = json!({"metadata": meta("l"), "spec": {"holderIdentity": "hub-1"}});
        assert_eq!(cells(Printer::Lease, lease)[1], json!("hub-1"));
        let role = json!({"metadata": meta("r")});
        assert_eq!(
            cells(Printer::Default, role),
            vec![json!("r"), json!("2025-03-01T11:55:00Z")]
        );
        let columns = Printer::Default.columns();
        assert_eq!(columns[1].name, "Created At");
        assert_eq!(columns[1].ty, "date");
    }
}
