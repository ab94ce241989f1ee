//! A `Kubernetes`-mode control plane as objects of the hub cluster, from its HostedCluster's
//! spec, the versions its components roll to, and the digests of the certificates each mounts.
//! Pure: the controller applies what these functions return.

use atoll_api::hosted::network::Network;
use atoll_api::hosted::{Availability, HostedClusterSpec, ServiceType};
use serde_json::{Value, json};

use super::pki::{self, API_PORT, API_SERVICE, ETCD_CLIENT_SERVICE, ETCD_PEER_SERVICE};
use super::version::Rollout;
use crate::hosted::runtime::Key;

/// Label on every object of a control plane: `<namespace>.<name>` of its HostedCluster.
pub const LABEL_HOSTED_CLUSTER: &str = "atoll.dev/hosted-cluster";
/// Label naming a control plane's component.
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/name";
/// Label saying who manages an object.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Annotation on a workload: the Kubernetes version it is rendered at.
pub const ANNOTATION_VERSION: &str = "atoll.dev/kubernetes-version";
/// Annotation on a workload's pod template: the digest of the certificates it mounts, so that
/// it restarts when one is issued again.
pub const ANNOTATION_CERTIFICATES: &str = "atoll.dev/certificates";
/// Where Secrets of the PKI are mounted, each in a folder of its name.
pub const PKI_DIR: &str = "/etc/kubernetes/pki";
/// The registry images come from unless the hub or the spec says otherwise.
pub const DEFAULT_REGISTRY: &str = "registry.k8s.io";

/// etcd's component name (and StatefulSet).
pub const ETCD: &str = "etcd";
/// kube-apiserver's.
pub const API_SERVER: &str = "kube-apiserver";
/// kube-controller-manager's.
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";
/// kube-scheduler's.
pub const SCHEDULER: &str = "kube-scheduler";
/// The agent's.
pub const AGENT: &str = "atoll-work-agent";
/// The key of the join secret in the agent's bootstrap Secret.
pub const JOIN_SECRET_KEY: &str = "join-secret";
/// Where the agent's kubeconfig of its cluster is mounted.
const AGENT_KUBECONFIG_DIR: &str = "/etc/atoll-member";

/// The namespace of a HostedCluster's control plane on the hub cluster.
pub fn namespace_of(key: &Key) -> String {
    format!("{}-{}", key.namespace, key.name)
}

/// The value of [`LABEL_HOSTED_CLUSTER`] for a HostedCluster.
pub fn label_of(key: &Key) -> String {
    format!("{}.{}", key.namespace, key.name)
}

/// The HostedCluster a label value names.
pub fn key_of_label(value: &str) -> Option<Key> {
    let (namespace, name) = value.split_once('.')?;
    Some(Key {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    })
}

/// The images each component runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Images {
    /// etcd's.
    pub etcd: String,
    /// kube-apiserver's.
    pub api_server: String,
    /// kube-controller-manager's.
    pub controller_manager: String,
    /// kube-scheduler's.
    pub scheduler: String,
    /// The agent's.
    pub agent: String,
}

/// The images of a spec at `rollout`: the spec's overrides, else `registry`'s images at each
/// component's version (and `agent` for the agent).
pub fn images(spec: &HostedClusterSpec, rollout: &Rollout, registry: &str, agent: &str) -> Images {
    let o = spec.images.clone().unwrap_or_default();
    Images {
        etcd: o
            .etcd
            .unwrap_or_else(|| format!("{registry}/etcd:{}", rollout.etcd.etcd())),
        api_server: o
            .kube_api_server
            .unwrap_or_else(|| format!("{registry}/kube-apiserver:{}", rollout.api_server)),
        controller_manager: o.kube_controller_manager.unwrap_or_else(|| {
            format!("{registry}/kube-controller-manager:{}", rollout.controllers)
        }),
        scheduler: o
            .kube_scheduler
            .unwrap_or_else(|| format!("{registry}/kube-scheduler:{}", rollout.controllers)),
        agent: o.agent.unwrap_or_else(|| agent.to_owned()),
    }
}

/// The digests of the certificates each workload mounts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Digests {
    /// Of [`ETCD_SECRETS`].
    pub etcd: String,
    /// Of [`API_SERVER_SECRETS`].
    pub api_server: String,
    /// Of [`CONTROLLER_MANAGER_SECRETS`].
    pub controller_manager: String,
    /// Of [`SCHEDULER_SECRETS`].
    pub scheduler: String,
    /// Of [`AGENT_SECRETS`].
    pub agent: String,
}

/// The digests of the certificates each workload mounts, from the Secrets of the PKI.
pub fn digests(secrets: &std::collections::BTreeMap<String, pki::Stored>) -> Digests {
    Digests {
        etcd: pki::digest(secrets, ETCD_SECRETS),
        api_server: pki::digest(secrets, API_SERVER_SECRETS),
        controller_manager: pki::digest(secrets, CONTROLLER_MANAGER_SECRETS),
        scheduler: pki::digest(secrets, SCHEDULER_SECRETS),
        agent: pki::digest(secrets, AGENT_SECRETS),
    }
}

/// The Secrets each workload mounts.
pub const ETCD_SECRETS: &[&str] = &[pki::ETCD_SERVER, pki::ETCD_PEER];
/// The Secrets kube-apiserver mounts.
pub const API_SERVER_SECRETS: &[&str] = &[
    pki::CLUSTER_CA,
    pki::FRONT_PROXY_CA,
    pki::API_SERVING,
    pki::KUBELET_CLIENT,
    pki::FRONT_PROXY_CLIENT,
    pki::ETCD_CLIENT,
    pki::SERVICE_ACCOUNT,
];
/// The Secrets kube-controller-manager mounts.
pub const CONTROLLER_MANAGER_SECRETS: &[&str] = &[
    pki::CLUSTER_CA,
    pki::SERVICE_ACCOUNT,
    pki::CONTROLLER_MANAGER_KUBECONFIG,
];
/// The Secrets kube-scheduler mounts.
pub const SCHEDULER_SECRETS: &[&str] = &[pki::SCHEDULER_KUBECONFIG];
/// The Secrets the agent mounts (besides its bootstrap Secret).
pub const AGENT_SECRETS: &[&str] = &[pki::AGENT_KUBECONFIG];

/// How the agent joins the hub.
#[derive(Debug, Clone)]
pub struct AgentJoin<'a> {
    /// The hub's gRPC address as pods of the hub cluster reach it.
    pub hub_address: &'a str,
    /// The hub's CA, PEM.
    pub hub_ca_pem: &'a str,
    /// The bootstrap token of the hub's hosted agents.
    pub token: &'a str,
    /// The join secret of the cluster's record.
    pub join_secret: &'a str,
}

/// What a control plane is rendered from.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The HostedCluster.
    pub key: &'a Key,
    /// Its spec.
    pub spec: &'a HostedClusterSpec,
    /// The control plane's names (its namespace among them).
    pub names: &'a pki::Names,
    /// Its networks.
    pub network: &'a Network,
    /// The version of each component.
    pub rollout: Rollout,
    /// The image of each component.
    pub images: &'a Images,
    /// The digest of the certificates each workload mounts.
    pub digests: &'a Digests,
    /// How the agent joins the hub.
    pub agent: AgentJoin<'a>,
}

impl Input<'_> {
    fn namespace(&self) -> &str {
        &self.names.namespace
    }

    fn labels(&self, component: Option<&str>) -> Value {
        let mut labels = json!({
            LABEL_HOSTED_CLUSTER: label_of(self.key),
            LABEL_MANAGED_BY: "atoll",
        });
        if let Some(component) = component {
            labels[LABEL_COMPONENT] = json!(component);
        }
        labels
    }

    fn selector(&self, component: &str) -> Value {
        json!({LABEL_HOSTED_CLUSTER: label_of(self.key), LABEL_COMPONENT: component})
    }

    fn meta(&self, name: &str, component: Option<&str>) -> Value {
        json!({"name": name, "namespace": self.namespace(), "labels": self.labels(component)})
    }

    fn ha(&self) -> bool {
        self.spec.availability == Availability::HighlyAvailable
    }
}

/// How many etcd members a spec runs.
pub fn etcd_members(spec: &HostedClusterSpec) -> u32 {
    if spec.availability == Availability::HighlyAvailable {
        3
    } else {
        1
    }
}

/// The size of etcd's volume.
pub fn storage_size(spec: &HostedClusterSpec) -> String {
    spec.storage
        .as_ref()
        .and_then(|s| s.size.clone())
        .unwrap_or_else(|| "8Gi".to_owned())
}

/// The type of the API server's Service.
pub fn service_type(spec: &HostedClusterSpec) -> ServiceType {
    spec.api_server
        .as_ref()
        .and_then(|a| a.service_type)
        .unwrap_or_default()
}

/// etcd's client URL inside the hub cluster (its client Service in `namespace`).
pub fn etcd_client_url(namespace: &str) -> String {
    format!("https://{ETCD_CLIENT_SERVICE}.{namespace}.svc:2379")
}

/// The path of `key` of Secret `secret` in a pod that mounts it.
pub fn path(secret: &str, key: &str) -> String {
    format!("{PKI_DIR}/{secret}/{key}")
}

/// A volume of Secret `secret` projecting only `keys`.
fn secret_volume(secret: &str, keys: &[&str]) -> Value {
    let items: Vec<Value> = keys.iter().map(|k| json!({"key": k, "path": k})).collect();
    json!({"name": secret, "secret": {"secretName": secret, "items": items, "defaultMode": 0o440}})
}

/// The mount of Secret `secret`'s volume at its folder under [`PKI_DIR`].
fn mount(secret: &str) -> Value {
    json!({"name": secret, "mountPath": format!("{PKI_DIR}/{secret}"), "readOnly": true})
}

/// The control plane's namespace.
pub fn namespace(input: &Input<'_>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": input.namespace(), "labels": input.labels(None)},
    })
}

/// The Services: etcd's headless and client Services, and the API server's.
pub fn services(input: &Input<'_>) -> Vec<Value> {
    let etcd_ports = json!([
        {"name": "client", "port": 2379, "targetPort": 2379},
        {"name": "peer", "port": 2380, "targetPort": 2380},
    ]);
    let kind = service_type(input.spec);
    let mut api_port =
        json!({"name": "https", "port": API_PORT, "targetPort": API_PORT, "protocol": "TCP"});
    if kind == ServiceType::NodePort
        && let Some(port) = input.spec.api_server.as_ref().and_then(|a| a.port)
    {
        api_port["nodePort"] = json!(port);
    }
    vec![
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": input.meta(ETCD_PEER_SERVICE, Some(ETCD)),
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": true,
                "selector": input.selector(ETCD),
                "ports": etcd_ports,
            },
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": input.meta(ETCD_CLIENT_SERVICE, Some(ETCD)),
            "spec": {
                "type": "ClusterIP",
                "selector": input.selector(ETCD),
                "ports": [{"name": "client", "port": 2379, "targetPort": 2379}],
            },
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": input.meta(API_SERVICE, Some(API_SERVER)),
            "spec": {
                "type": kind.as_str(),
                "selector": input.selector(API_SERVER),
                "ports": [api_port],
            },
        }),
    ]
}

/// etcd's command line.
pub fn etcd_command(input: &Input<'_>) -> Vec<String> {
    let ns = input.namespace();
    let members = etcd_members(input.spec);
    let peer = |i: u32| format!("https://{ETCD}-{i}.{ETCD_PEER_SERVICE}.{ns}.svc:2380");
    let initial: Vec<String> = (0..members)
        .map(|i| format!("{ETCD}-{i}={}", peer(i)))
        .collect();
    let server = |k| path(pki::ETCD_SERVER, k);
    let peer_file = |k| path(pki::ETCD_PEER, k);
    let me = format!("$(POD_NAME).{ETCD_PEER_SERVICE}.{ns}.svc");
    vec![
        "etcd".to_owned(),
        "--name=$(POD_NAME)".to_owned(),
        "--data-dir=/var/lib/etcd/data".to_owned(),
        "--listen-client-urls=https://0.0.0.0:2379".to_owned(),
        format!("--advertise-client-urls=https://{me}:2379"),
        "--listen-peer-urls=https://0.0.0.0:2380".to_owned(),
        format!("--initial-advertise-peer-urls=https://{me}:2380"),
        format!("--initial-cluster={}", initial.join(",")),
        "--initial-cluster-state=new".to_owned(),
        format!("--initial-cluster-token={ns}"),
        "--listen-metrics-urls=http://0.0.0.0:2381".to_owned(),
        format!("--cert-file={}", server(pki::TLS_CRT)),
        format!("--key-file={}", server(pki::TLS_KEY)),
        format!("--trusted-ca-file={}", server(pki::CA_CRT)),
        "--client-cert-auth=true".to_owned(),
        format!("--peer-cert-file={}", peer_file(pki::TLS_CRT)),
        format!("--peer-key-file={}", peer_file(pki::TLS_KEY)),
        format!("--peer-trusted-ca-file={}", peer_file(pki::CA_CRT)),
        "--peer-client-cert-auth=true".to_owned(),
        "--snapshot-count=10000".to_owned(),
    ]
}

/// kube-apiserver's command line.
pub fn api_server_command(input: &Input<'_>) -> Vec<String> {
    let ns = input.namespace();
    let f = |flag: &str, value: String| format!("--{flag}={value}");
    vec![
        "kube-apiserver".to_owned(),
        f("secure-port", API_PORT.to_string()),
        f("etcd-servers", etcd_client_url(ns)),
        f("etcd-cafile", path(pki::ETCD_CLIENT, pki::CA_CRT)),
        f("etcd-certfile", path(pki::ETCD_CLIENT, pki::TLS_CRT)),
        f("etcd-keyfile", path(pki::ETCD_CLIENT, pki::TLS_KEY)),
        f(
            "service-account-issuer",
            "https://kubernetes.default.svc.cluster.local".to_owned(),
        ),
        f(
            "service-account-key-file",
            path(pki::SERVICE_ACCOUNT, pki::SA_PUB),
        ),
        f(
            "service-account-signing-key-file",
            path(pki::SERVICE_ACCOUNT, pki::SA_KEY),
        ),
        f("tls-cert-file", path(pki::API_SERVING, pki::TLS_CRT)),
        f("tls-private-key-file", path(pki::API_SERVING, pki::TLS_KEY)),
        f("client-ca-file", path(pki::CLUSTER_CA, pki::TLS_CRT)),
        f(
            "kubelet-client-certificate",
            path(pki::KUBELET_CLIENT, pki::TLS_CRT),
        ),
        f(
            "kubelet-client-key",
            path(pki::KUBELET_CLIENT, pki::TLS_KEY),
        ),
        f(
            "kubelet-preferred-address-types",
            "InternalIP,ExternalIP,Hostname".to_owned(),
        ),
        f(
            "proxy-client-cert-file",
            path(pki::FRONT_PROXY_CLIENT, pki::TLS_CRT),
        ),
        f(
            "proxy-client-key-file",
            path(pki::FRONT_PROXY_CLIENT, pki::TLS_KEY),
        ),
        f(
            "requestheader-client-ca-file",
            path(pki::FRONT_PROXY_CA, pki::TLS_CRT),
        ),
        f(
            "requestheader-allowed-names",
            "front-proxy-client".to_owned(),
        ),
        f(
            "requestheader-extra-headers-prefix",
            "X-Remote-Extra-".to_owned(),
        ),
        f("requestheader-group-headers", "X-Remote-Group".to_owned()),
        f("requestheader-username-headers", "X-Remote-User".to_owned()),
        f("authorization-mode", "Node,RBAC".to_owned()),
        f("enable-admission-plugins", "NodeRestriction".to_owned()),
        f(
            "service-cluster-ip-range",
            input.network.service.to_string(),
        ),
        f("enable-bootstrap-token-auth", "true".to_owned()),
        f("allow-privileged", "true".to_owned()),
    ]
}

/// kube-controller-manager's command line.
pub fn controller_manager_command(input: &Input<'_>) -> Vec<String> {
    let kubeconfig = path(pki::CONTROLLER_MANAGER_KUBECONFIG, pki::KUBECONFIG);
    let f = |flag: &str, value: String| format!("--{flag}={value}");
    let mut command = vec![
        "kube-controller-manager".to_owned(),
        f("kubeconfig", kubeconfig.clone()),
        f("authentication-kubeconfig", kubeconfig.clone()),
        f("authorization-kubeconfig", kubeconfig),
        f("bind-address", "0.0.0.0".to_owned()),
        f("cluster-name", input.key.name.clone()),
        f(
            "cluster-signing-cert-file",
            path(pki::CLUSTER_CA, pki::TLS_CRT),
        ),
        f(
            "cluster-signing-key-file",
            path(pki::CLUSTER_CA, pki::TLS_KEY),
        ),
        f("root-ca-file", path(pki::CLUSTER_CA, pki::TLS_CRT)),
        f(
            "service-account-private-key-file",
            path(pki::SERVICE_ACCOUNT, pki::SA_KEY),
        ),
        f("use-service-account-credentials", "true".to_owned()),
        f("controllers", "*,bootstrapsigner,tokencleaner".to_owned()),
        f(
            "service-cluster-ip-range",
            input.network.service.to_string(),
        ),
        f("leader-elect", "true".to_owned()),
    ];
    // As kubeadm renders it with a pod subnet: nodes get their share of the pod network.
    if let Some(pods) = input.network.pod {
        command.push(f("allocate-node-cidrs", "true".to_owned()));
        command.push(f("cluster-cidr", pods.to_string()));
    }
    command
}

/// kube-scheduler's command line.
pub fn scheduler_command() -> Vec<String> {
    let kubeconfig = path(pki::SCHEDULER_KUBECONFIG, pki::KUBECONFIG);
    vec![
        "kube-scheduler".to_owned(),
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--bind-address=0.0.0.0".to_owned(),
        "--leader-elect=true".to_owned(),
    ]
}

/// An HTTPS GET probe.
fn https_probe(path: &str, port: i32, period: i32, failures: i32) -> Value {
    json!({
        "httpGet": {"scheme": "HTTPS", "path": path, "port": port},
        "periodSeconds": period,
        "failureThreshold": failures,
        "timeoutSeconds": 5,
    })
}

/// A pod template with the cluster's labels and the certificates' digest.
fn template(input: &Input<'_>, component: &str, digest: &str, pod: Value) -> Value {
    json!({
        "metadata": {
            "labels": input.labels(Some(component)),
            "annotations": {ANNOTATION_CERTIFICATES: digest},
        },
        "spec": pod,
    })
}

/// A Deployment of a component, annotated with its version.
fn deployment(
    input: &Input<'_>,
    component: &str,
    replicas: i32,
    version: &str,
    template: Value,
) -> Value {
    let mut meta = input.meta(component, Some(component));
    meta["annotations"] = json!({ANNOTATION_VERSION: version});
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": input.selector(component)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": template,
        },
    })
}

/// The workloads, in the order they roll: etcd, kube-apiserver, the controllers, and the
/// agent's ConfigMap, bootstrap Secret and Deployment.
pub fn workloads(input: &Input<'_>) -> Vec<Value> {
    let mut out = vec![
        etcd(input),
        api_server(input),
        controller_manager(input),
        scheduler(input),
    ];
    out.extend(agent(input));
    out
}

/// etcd's StatefulSet.
fn etcd(input: &Input<'_>) -> Value {
    let members = etcd_members(input.spec);
    let storage = input.spec.storage.clone().unwrap_or_default();
    let mut claim = json!({
        "metadata": {"name": "data", "labels": input.labels(Some(ETCD))},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": storage_size(input.spec)}},
        },
    });
    if let Some(class) = &storage.storage_class_name {
        claim["spec"]["storageClassName"] = json!(class);
    }
    let container = json!({
        "name": ETCD,
        "image": input.images.etcd,
        "command": etcd_command(input),
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [
            {"name": "client", "containerPort": 2379},
            {"name": "peer", "containerPort": 2380},
            {"name": "metrics", "containerPort": 2381},
        ],
        // kubeadm's probes, which every etcd 3.5 and 3.6 answers.
        "readinessProbe": {"httpGet": {"path": "/health?serializable=true", "port": 2381}, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/health?exclude=NOSPACE&serializable=true", "port": 2381}, "periodSeconds": 10, "failureThreshold": 8},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "volumeMounts": [
            {"name": "data", "mountPath": "/var/lib/etcd"},
            mount(pki::ETCD_SERVER),
            mount(pki::ETCD_PEER),
        ],
    });
    let pod = json!({
        "containers": [container],
        "volumes": [
            secret_volume(pki::ETCD_SERVER, &[pki::TLS_CRT, pki::TLS_KEY, pki::CA_CRT]),
            secret_volume(pki::ETCD_PEER, &[pki::TLS_CRT, pki::TLS_KEY, pki::CA_CRT]),
        ],
    });
    let mut meta = input.meta(ETCD, Some(ETCD));
    meta["annotations"] = json!({ANNOTATION_VERSION: input.rollout.etcd.to_string()});
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta,
        "spec": {
            "serviceName": ETCD_PEER_SERVICE,
            "replicas": members,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": input.selector(ETCD)},
            "template": template(input, ETCD, &input.digests.etcd, pod),
            "volumeClaimTemplates": [claim],
        },
    })
}

/// kube-apiserver's Deployment.
fn api_server(input: &Input<'_>) -> Value {
    let container = json!({
        "name": API_SERVER,
        "image": input.images.api_server,
        "command": api_server_command(input),
        "ports": [{"name": "https", "containerPort": API_PORT}],
        "startupProbe": https_probe("/livez", API_PORT, 5, 60),
        "livenessProbe": https_probe("/livez", API_PORT, 10, 6),
        "readinessProbe": https_probe("/readyz", API_PORT, 5, 3),
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
        "volumeMounts": API_SERVER_SECRETS.iter().map(|s| mount(s)).collect::<Vec<_>>(),
    });
    let pod = json!({
        "containers": [container],
        "volumes": [
            secret_volume(pki::CLUSTER_CA, &[pki::TLS_CRT]),
            secret_volume(pki::FRONT_PROXY_CA, &[pki::TLS_CRT]),
            secret_volume(pki::API_SERVING, &[pki::TLS_CRT, pki::TLS_KEY]),
            secret_volume(pki::KUBELET_CLIENT, &[pki::TLS_CRT, pki::TLS_KEY]),
            secret_volume(pki::FRONT_PROXY_CLIENT, &[pki::TLS_CRT, pki::TLS_KEY]),
            secret_volume(pki::ETCD_CLIENT, &[pki::TLS_CRT, pki::TLS_KEY, pki::CA_CRT]),
            secret_volume(pki::SERVICE_ACCOUNT, &[pki::SA_KEY, pki::SA_PUB]),
        ],
    });
    let replicas = if input.ha() { 3 } else { 1 };
    let mut deployment = deployment(
        input,
        API_SERVER,
        replicas,
        &input.rollout.api_server.to_string(),
        template(input, API_SERVER, &input.digests.api_server, pod),
    );
    // What the control plane is made with, kept so that a later change of the spec's is seen.
    deployment["metadata"]["annotations"][super::network::ANNOTATION_NETWORK] =
        json!(input.network.to_record());
    deployment
}

/// kube-controller-manager's Deployment.
fn controller_manager(input: &Input<'_>) -> Value {
    let container = json!({
        "name": CONTROLLER_MANAGER,
        "image": input.images.controller_manager,
        "command": controller_manager_command(input),
        "livenessProbe": https_probe("/healthz", 10257, 10, 8),
        "readinessProbe": https_probe("/healthz", 10257, 5, 3),
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "volumeMounts": CONTROLLER_MANAGER_SECRETS.iter().map(|s| mount(s)).collect::<Vec<_>>(),
    });
    let pod = json!({
        "containers": [container],
        "volumes": [
            secret_volume(pki::CLUSTER_CA, &[pki::TLS_CRT, pki::TLS_KEY]),
            secret_volume(pki::SERVICE_ACCOUNT, &[pki::SA_KEY]),
            secret_volume(pki::CONTROLLER_MANAGER_KUBECONFIG, &[pki::KUBECONFIG]),
        ],
    });
    let replicas = if input.ha() { 2 } else { 1 };
    deployment(
        input,
        CONTROLLER_MANAGER,
        replicas,
        &input.rollout.controllers.to_string(),
        template(
            input,
            CONTROLLER_MANAGER,
            &input.digests.controller_manager,
            pod,
        ),
    )
}

/// kube-scheduler's Deployment.
fn scheduler(input: &Input<'_>) -> Value {
    let container = json!({
        "name": SCHEDULER,
        "image": input.images.scheduler,
        "command": scheduler_command(),
        "livenessProbe": https_probe("/healthz", 10259, 10, 8),
        "readinessProbe": https_probe("/healthz", 10259, 5, 3),
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}},
        "volumeMounts": [mount(pki::SCHEDULER_KUBECONFIG)],
    });
    let pod = json!({
        "containers": [container],
        "volumes": [secret_volume(pki::SCHEDULER_KUBECONFIG, &[pki::KUBECONFIG])],
    });
    let replicas = if input.ha() { 2 } else { 1 };
    deployment(
        input,
        SCHEDULER,
        replicas,
        &input.rollout.controllers.to_string(),
        template(input, SCHEDULER, &input.digests.scheduler, pod),
    )
}

/// The agent's ConfigMap, bootstrap Secret and Deployment, as `atoll agent-manifests` renders
/// them, moved into the control plane's namespace: it reaches its cluster with a kubeconfig
/// rather than a ServiceAccount, and presents the join secret the hub arranged.
fn agent(input: &Input<'_>) -> Vec<Value> {
    let join = crate::agents::Join {
        cluster: &input.key.name,
        hub_address: input.agent.hub_address,
        hub_ca_pem: input.agent.hub_ca_pem,
        token: input.agent.token,
        image: Some(&input.images.agent),
    };
    let Ok(objects) = crate::agents::objects(&join) else {
        // The embedded manifests are checked by tests; nothing to render without them.
        return Vec::new();
    };
    let mut out = Vec::new();
    for mut object in objects {
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        if !["ConfigMap", "Secret", "Deployment"].contains(&kind.as_str()) {
            continue;
        }
        object["metadata"]["namespace"] = json!(input.namespace());
        let mut labels = input.labels(Some(AGENT));
        if let Some(own) = object["metadata"]["labels"].as_object() {
            for (k, v) in own {
                labels[k] = v.clone();
            }
        }
        labels[LABEL_COMPONENT] = json!(AGENT);
        object["metadata"]["labels"] = labels;
        match kind.as_str() {
            "Secret" => {
                use base64::Engine as _;
                object["data"][JOIN_SECRET_KEY] = json!(
                    base64::engine::general_purpose::STANDARD.encode(input.agent.join_secret)
                );
            }
            "Deployment" => {
                object["metadata"]["name"] = json!(AGENT);
                object["spec"]["selector"] = json!({"matchLabels": input.selector(AGENT)});
                let mut template_labels = input.labels(Some(AGENT));
                template_labels[LABEL_COMPONENT] = json!(AGENT);
                let spec = &mut object["spec"]["template"];
                spec["metadata"]["labels"] = template_labels;
                spec["metadata"]["annotations"] =
                    json!({ANNOTATION_CERTIFICATES: input.digests.agent});
                let pod = &mut spec["spec"];
                if let Some(pod) = pod.as_object_mut() {
                    pod.remove("serviceAccountName");
                }
                pod["automountServiceAccountToken"] = json!(false);
                if let Some(volumes) = pod["volumes"].as_array_mut() {
                    volumes.push(secret_volume(pki::AGENT_KUBECONFIG, &[pki::KUBECONFIG]));
                }
                let bootstrap_dir = pod["containers"][0]["volumeMounts"][0]["mountPath"]
                    .as_str()
                    .unwrap_or("/etc/atoll")
                    .to_owned();
                let container = &mut pod["containers"][0];
                if let Some(env) = container["env"].as_array_mut() {
                    env.push(json!({
                        "name": "ATOLL_KUBECONFIG",
                        "value": format!("{AGENT_KUBECONFIG_DIR}/{}", pki::KUBECONFIG),
                    }));
                    env.push(json!({
                        "name": "ATOLL_JOIN_SECRET_FILE",
                        "value": format!("{bootstrap_dir}/{JOIN_SECRET_KEY}"),
                    }));
                }
                if let Some(mounts) = container["volumeMounts"].as_array_mut() {
                    mounts.push(json!({
                        "name": pki::AGENT_KUBECONFIG,
                        "mountPath": AGENT_KUBECONFIG_DIR,
                        "readOnly": true,
                    }));
                }
            }
            _ => {}
        }
        out.push(object);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosted::kubernetes::version::Version;
    use atoll_api::hosted::{ApiServerSpec, HostedStorage};

    fn key() -> Key {
        Key {
            namespace: "clusters".into(),
            name: "c1".into(),
        }
    }

    fn names() -> pki::Names {
        pki::Names {
            cluster: "c1".into(),
            namespace: "clusters-c1".into(),
            etcd_members: 1,
            kubernetes_service_ip: "10.96.0.1".parse().unwrap(),
            service_ip: None,
            external_host: None,
            extra_sans: vec![],
        }
    }

    fn render_with(spec: &HostedClusterSpec) -> Vec<Value> {
        let key = key();
        let names = names();
        let network = atoll_api::hosted::network::resolve(spec.network.as_ref()).unwrap();
        let rollout = Rollout::all(Version::parse("1.35.0").unwrap());
        let images = images(
            spec,
            &rollout,
            DEFAULT_REGISTRY,
            "ghcr.io/atoll-dev/atoll:0.1.0",
        );
        let digests = Digests {
            etcd: "e".into(),
            api_server: "a".into(),
            controller_manager: "c".into(),
            scheduler: "s".into(),
            agent: "g".into(),
        };
        let input = Input {
            key: &key,
            spec,
            names: &names,
            network: &network,
            rollout,
            images: &images,
            digests: &digests,
            agent: AgentJoin {
                hub_address: "https://hub.atoll-system.svc:9443",
                hub_ca_pem: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
                token: "abcdef.0123456789abcdef",
                join_secret: "secret",
            },
        };
        let mut all = vec![namespace(&input)];
        all.extend(services(&input));
        all.extend(workloads(&input));
        all
    }

    fn find<'a>(all: &'a [Value], kind: &str, name: &str) -> &'a Value {
        all.iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    fn command(workload: &Value) -> Vec<String> {
        serde_json::from_value(
            workload["spec"]["template"]["spec"]["containers"][0]["command"].clone(),
        )
        .unwrap()
    }

    fn flag(command: &[String], name: &str) -> Option<String> {
        let prefix = format!("--{name}=");
        command
            .iter()
            .find_map(|c| c.strip_prefix(&prefix).map(str::to_owned))
    }

    /// Every file a flag names is a key of a Secret the pod mounts at that path, and the PKI
    /// makes that Secret with that key.
    fn files_are_mounted(workload: &Value, flags: &[&str]) {
        let command = command(workload);
        let pod = &workload["spec"]["template"]["spec"];
        for name in flags {
            let file = flag(&command, name).unwrap_or_else(|| panic!("--{name} missing"));
            let (dir, key) = file.rsplit_once('/').unwrap();
            let mount = pod["containers"][0]["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["mountPath"] == dir)
                .unwrap_or_else(|| panic!("--{name}: nothing mounted at {dir}"));
            let volume = pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == mount["name"])
                .unwrap();
            let secret = volume["secret"]["secretName"].as_str().unwrap();
            assert!(
                volume["secret"]["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|i| i["key"] == key && i["path"] == key),
                "--{name}: {key} not projected from {secret}"
            );
            let made = [
                pki::CLUSTER_CA,
                pki::FRONT_PROXY_CA,
                pki::ETCD_CA,
                pki::SERVICE_ACCOUNT,
            ]
            .contains(&secret)
                || pki::wanted(&names()).iter().any(|w| w.secret == secret);
            assert!(made, "--{name}: the PKI makes no Secret {secret}");
        }
    }

    #[test]
    fn kube_apiserver_has_every_flag_it_needs_and_its_files_are_mounted() {
        let all = render_with(&HostedClusterSpec::default());
        let api = find(&all, "Deployment", API_SERVER);
        let command = command(api);
        assert_eq!(command[0], "kube-apiserver");
        for (name, value) in [
            ("etcd-servers", "https://etcd-client.clusters-c1.svc:2379"),
            ("authorization-mode", "Node,RBAC"),
            ("enable-admission-plugins", "NodeRestriction"),
            ("service-cluster-ip-range", "10.96.0.0/12"),
            ("secure-port", "6443"),
            ("enable-bootstrap-token-auth", "true"),
            ("requestheader-allowed-names", "front-proxy-client"),
            ("requestheader-username-headers", "X-Remote-User"),
            ("requestheader-group-headers", "X-Remote-Group"),
            ("requestheader-extra-headers-prefix", "X-Remote-Extra-"),
            (
                "service-account-issuer",
                "https://kubernetes.default.svc.cluster.local",
            ),
        ] {
            assert_eq!(flag(&command, name).as_deref(), Some(value), "--{name}");
        }
        files_are_mounted(
            api,
            &[
                "etcd-cafile",
                "etcd-certfile",
                "etcd-keyfile",
                "service-account-key-file",
                "service-account-signing-key-file",
                "tls-cert-file",
                "tls-private-key-file",
                "client-ca-file",
                "kubelet-client-certificate",
                "kubelet-client-key",
                "proxy-client-cert-file",
                "proxy-client-key-file",
                "requestheader-client-ca-file",
            ],
        );
        let container = &api["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "registry.k8s.io/kube-apiserver:v1.35.0");
        assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/livez");
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(container["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
        assert_eq!(
            api["spec"]["template"]["metadata"]["annotations"][ANNOTATION_CERTIFICATES],
            "a"
        );
        assert_eq!(
            api["metadata"]["annotations"][ANNOTATION_VERSION],
            "v1.35.0"
        );
        // The CA's key stays out of the API server's pod.
        let volumes = api["spec"]["template"]["spec"]["volumes"].to_string();
        assert!(!volumes.contains(r#"{"key":"tls.key","path":"tls.key"}],"secretName":"ca""#));
    }

    #[test]
    fn the_networks_go_into_the_flags_and_are_recorded_on_kube_apiserver() {
        let spec: HostedClusterSpec = serde_json::from_value(json!({
            "mode": "Kubernetes",
            "network": {"podCIDR": "10.244.0.0/16", "serviceCIDR": "10.100.0.0/16"},
        }))
        .unwrap();
        let all = render_with(&spec);
        let api = find(&all, "Deployment", API_SERVER);
        let flag_of = |workload: &Value, name| flag(&command(workload), name);
        assert_eq!(
            flag_of(api, "service-cluster-ip-range").as_deref(),
            Some("10.100.0.0/16")
        );
        let kcm = find(&all, "Deployment", CONTROLLER_MANAGER);
        for (name, value) in [
            ("service-cluster-ip-range", "10.100.0.0/16"),
            ("cluster-cidr", "10.244.0.0/16"),
            ("allocate-node-cidrs", "true"),
        ] {
            assert_eq!(flag_of(kcm, name).as_deref(), Some(value), "--{name}");
        }
        let record = "podCIDR=10.244.0.0/16,serviceCIDR=10.100.0.0/16,dnsServiceIP=10.100.0.10";
        assert_eq!(
            api["metadata"]["annotations"][super::super::network::ANNOTATION_NETWORK],
            record
        );
        let (_, read) = super::super::status::of_applied(api).unwrap().unwrap();
        assert_eq!(read.network.as_deref(), Some(record));
        // Without a pod network kube-controller-manager gives nodes none, as kubeadm leaves it.
        let plain = render_with(&HostedClusterSpec::default());
        let kcm = find(&plain, "Deployment", CONTROLLER_MANAGER);
        assert_eq!(flag_of(kcm, "cluster-cidr"), None);
        assert_eq!(flag_of(kcm, "allocate-node-cidrs"), None);
        assert_eq!(
            flag_of(kcm, "service-cluster-ip-range").as_deref(),
            Some("10.96.0.0/12")
        );
    }

    #[test]
    fn the_controllers_have_their_kubeconfigs_and_signing_files() {
        let all = render_with(&HostedClusterSpec::default());
        let kcm = find(&all, "Deployment", CONTROLLER_MANAGER);
        let command = command(kcm);
        assert_eq!(
            flag(&command, "use-service-account-credentials").as_deref(),
            Some("true")
        );
        assert_eq!(
            flag(&command, "controllers").as_deref(),
            Some("*,bootstrapsigner,tokencleaner")
        );
        files_are_mounted(
            kcm,
            &[
                "kubeconfig",
                "cluster-signing-cert-file",
                "cluster-signing-key-file",
                "root-ca-file",
                "service-account-private-key-file",
            ],
        );
        files_are_mounted(
            find(&all, "Deployment", SCHEDULER),
            &["kubeconfig", "authentication-kubeconfig"],
        );
    }

    #[test]
    fn etcd_is_a_statefulset_with_tls_and_a_volume_from_the_spec() {
        let spec = HostedClusterSpec {
            availability: Availability::HighlyAvailable,
            storage: Some(HostedStorage {
                size: Some("20Gi".into()),
                storage_class_name: Some("fast".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let all = render_with(&spec);
        let etcd = find(&all, "StatefulSet", ETCD);
        assert_eq!(etcd["spec"]["replicas"], 3);
        let claim = &etcd["spec"]["volumeClaimTemplates"][0]["spec"];
        assert_eq!(claim["resources"]["requests"]["storage"], "20Gi");
        assert_eq!(claim["storageClassName"], "fast");
        let command = command(etcd);
        assert_eq!(flag(&command, "client-cert-auth").as_deref(), Some("true"));
        assert_eq!(
            flag(&command, "peer-client-cert-auth").as_deref(),
            Some("true")
        );
        assert_eq!(
            flag(&command, "initial-cluster")
                .unwrap()
                .split(',')
                .count(),
            3
        );
        files_are_mounted(
            etcd,
            &[
                "cert-file",
                "key-file",
                "trusted-ca-file",
                "peer-cert-file",
                "peer-key-file",
                "peer-trusted-ca-file",
            ],
        );
        assert_eq!(
            etcd["spec"]["template"]["spec"]["containers"][0]["image"],
            "registry.k8s.io/etcd:3.6.9-0"
        );
        assert_eq!(find(&all, "Deployment", API_SERVER)["spec"]["replicas"], 3);
        assert_eq!(
            find(&all, "Service", ETCD_PEER_SERVICE)["spec"]["clusterIP"],
            "None"
        );
    }

    #[test]
    fn the_service_type_port_and_images_come_from_the_spec() {
        let spec = HostedClusterSpec {
            api_server: Some(ApiServerSpec {
                port: Some(30443),
                service_type: Some(ServiceType::NodePort),
                ..Default::default()
            }),
            images: Some(atoll_api::hosted::HostedImages {
                kube_api_server: Some("mirror.example.com/kube-apiserver:v1.35.0".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let all = render_with(&spec);
        let service = find(&all, "Service", API_SERVICE);
        assert_eq!(service["spec"]["type"], "NodePort");
        assert_eq!(service["spec"]["ports"][0]["nodePort"], 30443);
        let api = find(&all, "Deployment", API_SERVER);
        assert_eq!(
            api["spec"]["template"]["spec"]["containers"][0]["image"],
            "mirror.example.com/kube-apiserver:v1.35.0"
        );
    }

    #[test]
    fn every_object_is_labelled_as_the_clusters_and_in_its_namespace() {
        let all = render_with(&HostedClusterSpec::default());
        for object in &all {
            assert_eq!(
                object["metadata"]["labels"][LABEL_HOSTED_CLUSTER], "clusters.c1",
                "{}",
                object["metadata"]
            );
            if object["kind"] != "Namespace" {
                assert_eq!(object["metadata"]["namespace"], "clusters-c1");
            }
        }
        assert_eq!(key_of_label("clusters.c1"), Some(key()));
    }

    #[test]
    fn the_agent_runs_as_agent_manifests_renders_it_with_a_kubeconfig_and_the_join_secret() {
        let all = render_with(&HostedClusterSpec::default());
        let agent = find(&all, "Deployment", AGENT);
        let pod = &agent["spec"]["template"]["spec"];
        assert!(pod.get("serviceAccountName").is_none());
        let env = pod["containers"][0]["env"].to_string();
        assert!(
            env.contains("ATOLL_KUBECONFIG") && env.contains("/etc/atoll-member/kubeconfig"),
            "{env}"
        );
        assert!(env.contains("/etc/atoll/join-secret"), "{env}");
        assert_eq!(
            pod["containers"][0]["image"],
            "ghcr.io/atoll-dev/atoll:0.1.0"
        );
        let secret = find(&all, "Secret", crate::agents::BOOTSTRAP_SECRET);
        assert!(secret["data"][JOIN_SECRET_KEY].is_string());
        assert!(secret["data"][crate::agents::TOKEN_KEY].is_string());
        let config = find(&all, "ConfigMap", crate::agents::CONFIG_MAP);
        assert_eq!(
            config["data"]["ATOLL_HUB"],
            "https://hub.atoll-system.svc:9443"
        );
        assert_eq!(config["data"]["ATOLL_CLUSTER_NAME"], "c1");
        assert_eq!(
            agent["spec"]["selector"]["matchLabels"][LABEL_COMPONENT],
            AGENT
        );
        assert_eq!(
            agent["spec"]["template"]["metadata"]["labels"][LABEL_COMPONENT],
            AGENT
        );
    }
}
