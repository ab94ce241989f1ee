//! The add-ons of a `Kubernetes`-mode hosted cluster, as kubeadm's `addon` phase installs them
//! into a cluster it makes (and Kamaji into its tenant control planes): kube-proxy (a DaemonSet
//! with its ServiceAccount, the `system:node-proxier` binding, its ConfigMap and the Role that
//! lets joining nodes read it) and CoreDNS (a Deployment of two replicas with its ServiceAccount,
//! ClusterRole, ConfigMap and the `kube-dns` Service at the Service network's tenth address).
//! Every object carries [`LABEL_ADDON`], so that an add-on turned off is removed without touching
//! what the hub did not apply. Pure: the controller applies and deletes these through the hosted
//! API server, as it writes what `kubeadm join` needs.

use std::collections::BTreeMap;

use atoll_api::hosted::{Endpoint, HostedAddons, HostedClusterSpec};
use serde_json::{Value, json};

use super::version::Version;
use crate::conditions::Verdict;

/// The condition saying whether the add-ons are as the spec asks in the hosted cluster.
pub const CONDITION_ADDONS_APPLIED: &str = "AddonsApplied";
/// The label on every object of an add-on, naming it (`kube-proxy` or `coredns`).
pub const LABEL_ADDON: &str = "atoll.dev/addon";
/// Where the add-ons live.
pub const NAMESPACE: &str = "kube-system";
/// The group bootstrap tokens authenticate as, which reads kube-proxy's ConfigMap during
/// `kubeadm join`.
const BOOTSTRAPPERS: &str = super::join::BOOTSTRAPPERS;
/// The file of kube-proxy's configuration in its ConfigMap (and its container).
const KUBE_PROXY_CONFIG_KEY: &str = "config.conf";
/// Where kube-proxy's ConfigMap is mounted.
const KUBE_PROXY_DIR: &str = "/var/lib/kube-proxy";

/// An add-on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Addon {
    /// kube-proxy.
    KubeProxy,
    /// CoreDNS.
    CoreDns,
}

impl Addon {
    /// Every add-on, in the order they are applied.
    pub const ALL: [Addon; 2] = [Addon::KubeProxy, Addon::CoreDns];

    /// Its name, as [`LABEL_ADDON`] holds it.
    pub fn name(self) -> &'static str {
        match self {
            Addon::KubeProxy => "kube-proxy",
            Addon::CoreDns => "coredns",
        }
    }

    /// Its name in messages.
    pub fn title(self) -> &'static str {
        match self {
            Addon::KubeProxy => "kube-proxy",
            Addon::CoreDns => "CoreDNS",
        }
    }

    /// Its field in the spec.
    pub fn field(self) -> &'static str {
        match self {
            Addon::KubeProxy => "spec.addons.kubeProxy",
            Addon::CoreDns => "spec.addons.coreDNS",
        }
    }

    /// Whether `spec` asks for it (on unless turned off).
    pub fn enabled(self, spec: &HostedClusterSpec) -> bool {
        let addons = spec.addons.as_ref();
        match self {
            Addon::KubeProxy => HostedAddons::kube_proxy(addons),
            Addon::CoreDns => HostedAddons::core_dns(addons),
        }
    }

    /// The reason of a failure to apply it.
    fn failed_reason(self) -> &'static str {
        match self {
            Addon::KubeProxy => "KubeProxyFailed",
            Addon::CoreDns => "CoreDNSFailed",
        }
    }

    /// The image the spec gives it, if it does.
    fn image_override(self, spec: &HostedClusterSpec) -> Option<String> {
        let addons = spec.addons.as_ref()?;
        let addon = match self {
            Addon::KubeProxy => addons.kube_proxy.as_ref(),
            Addon::CoreDns => addons.core_dns.as_ref(),
        };
        addon.and_then(|a| a.image.clone())
    }
}

/// What the add-ons of a cluster are rendered from.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The HostedCluster's spec (what is on, image overrides).
    pub spec: &'a HostedClusterSpec,
    /// The version the whole control plane runs (kube-proxy follows it).
    pub version: Version,
    /// Where images come from unless the spec says otherwise.
    pub registry: &'a str,
    /// Where workers reach the API server (kube-proxy's kubeconfig).
    pub endpoint: &'a Endpoint,
    /// The pod network, when the cluster has one (kube-proxy's `clusterCIDR`).
    pub pod_subnet: Option<&'a str>,
    /// The address of the `kube-dns` Service.
    pub dns_ip: &'a str,
    /// The cluster's DNS domain.
    pub dns_domain: &'a str,
}

/// The image of `addon`: the spec's, else the registry's at the control plane's version
/// (kube-proxy) or at the CoreDNS kubeadm pairs with it (under `coredns/` in registry.k8s.io,
/// as kubeadm names it there).
pub fn image(addon: Addon, input: &Input<'_>) -> String {
    if let Some(image) = addon.image_override(input.spec) {
        return image;
    }
    let registry = input.registry;
    match addon {
        Addon::KubeProxy => format!("{registry}/kube-proxy:{}", input.version),
        Addon::CoreDns if registry == super::render::DEFAULT_REGISTRY => {
            format!("{registry}/coredns/coredns:{}", input.version.coredns())
        }
        Addon::CoreDns => format!("{registry}/coredns:{}", input.version.coredns()),
    }
}

/// The objects of `addon`, in the order to apply them (accounts and roles before what names
/// them).
pub fn objects(addon: Addon, input: &Input<'_>) -> Vec<Value> {
    let mut objects = match addon {
        Addon::KubeProxy => kube_proxy(input),
        Addon::CoreDns => core_dns(input),
    };
    for object in &mut objects {
        let labels = &mut object["metadata"]["labels"];
        if labels.is_null() {
            *labels = json!({});
        }
        labels[LABEL_ADDON] = json!(addon.name());
        labels[super::render::LABEL_MANAGED_BY] = json!("atoll");
    }
    objects
}

/// Metadata in `kube-system`.
fn meta(name: &str, labels: Value) -> Value {
    json!({"name": name, "namespace": NAMESPACE, "labels": labels})
}

/// The KubeProxyConfiguration kube-proxy reads (and `kubeadm join` decodes from the ConfigMap).
pub fn kube_proxy_configuration(input: &Input<'_>) -> String {
    format!(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nbindAddress: 0.0.0.0\nclientConnection:\n  kubeconfig: {KUBE_PROXY_DIR}/kubeconfig.conf\nclusterCIDR: \"{}\"\nmode: \"\"\n",
        input.pod_subnet.unwrap_or_default()
    )
}

/// kube-proxy's kubeconfig: the endpoint workers use, its ServiceAccount's token and CA.
fn kube_proxy_kubeconfig(endpoint: &Endpoint) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n    server: https://{}:{}\n  name: default\ncontexts:\n- context:\n    cluster: default\n    namespace: default\n    user: default\n  name: default\ncurrent-context: default\nusers:\n- name: default\n  user:\n    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n",
        endpoint.host, endpoint.port
    )
}

fn kube_proxy(input: &Input<'_>) -> Vec<Value> {
    let name = "kube-proxy";
    let rbac = "rbac.authorization.k8s.io";
    let app = json!({"k8s-app": name});
    let pod = json!({
        "priorityClassName": "system-node-critical",
        "hostNetwork": true,
        "serviceAccountName": name,
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, {"operator": "Exists"}],
        "containers": [{
            "name": name,
            "image": image(Addon::KubeProxy, input),
            "imagePullPolicy": "IfNotPresent",
            "command": [
                "/usr/local/bin/kube-proxy",
                format!("--config={KUBE_PROXY_DIR}/{KUBE_PROXY_CONFIG_KEY}"),
                "--hostname-override=$(NODE_NAME)",
            ],
            "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "securityContext": {"privileged": true},
            "volumeMounts": [
                {"name": "kube-proxy", "mountPath": KUBE_PROXY_DIR},
                {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": true},
            ],
        }],
        "volumes": [
            {"name": "kube-proxy", "configMap": {"name": name}},
            {"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
            {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}},
        ],
    });
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, json!({}))}),
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "kubeadm:node-proxier"},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "system:node-proxier"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
        }),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(name, json!({"app": name})),
            "data": {
                KUBE_PROXY_CONFIG_KEY: kube_proxy_configuration(input),
                "kubeconfig.conf": kube_proxy_kubeconfig(input.endpoint),
            },
        }),
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "Role",
            "metadata": meta(name, json!({})),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [name], "verbs": ["get"]}],
        }),
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "RoleBinding",
            "metadata": meta(name, json!({})),
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": name},
            "subjects": [{"apiGroup": rbac, "kind": "Group", "name": BOOTSTRAPPERS}],
        }),
        json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta(name, app.clone()),
            "spec": {
                "selector": {"matchLabels": app},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {"metadata": {"labels": app}, "spec": pod},
            },
        }),
    ]
}

/// The Corefile kubeadm writes for `domain`.
pub fn corefile(domain: &str) -> String {
    format!(
        ".:53 {{\n    errors\n    health {{\n       lameduck 5s\n    }}\n    ready\n    kubernetes {domain} in-addr.arpa ip6.arpa {{\n       pods insecure\n       fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }}\n    prometheus :9153\n    forward . /etc/resolv.conf {{\n       max_concurrent 1000\n    }}\n    cache 30 {{\n       disable success {domain}\n       disable denial {domain}\n    }}\n    loop\n    reload\n    loadbalance\n}}\n"
    )
}

fn core_dns(input: &Input<'_>) -> Vec<Value> {
    let name = "coredns";
    let rbac = "rbac.authorization.k8s.io";
    let app = json!({"k8s-app": "kube-dns"});
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, json!({}))}),
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"], "verbs": ["list", "watch"]},
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            ],
        }),
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "system:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
        }),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(name, json!({})),
            "data": {"Corefile": corefile(input.dns_domain)},
        }),
        core_dns_deployment(input, &app),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": NAMESPACE,
                "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
                "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
            },
            "spec": {
                "clusterIP": input.dns_ip,
                "selector": app,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                    {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
                ],
            },
        }),
    ]
}

/// CoreDNS's Deployment: two replicas spread over nodes, kubeadm's probes, ports and limits.
fn core_dns_deployment(input: &Input<'_>, app: &Value) -> Value {
    let port = |name: &str, port: i32, protocol: &str| json!({"name": name, "containerPort": port, "protocol": protocol});
    let container = json!({
        "name": "coredns",
        "image": image(Addon::CoreDns, input),
        "imagePullPolicy": "IfNotPresent",
        "args": ["-conf", "/etc/coredns/Corefile"],
        "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
        "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": true}],
        "ports": [
            port("dns", 53, "UDP"),
            port("dns-tcp", 53, "TCP"),
            port("metrics", 9153, "TCP"),
            port("liveness-probe", 8080, "TCP"),
            port("readiness-probe", 8181, "TCP"),
        ],
        "livenessProbe": {
            "httpGet": {"path": "/health", "port": "liveness-probe", "scheme": "HTTP"},
            "initialDelaySeconds": 60, "timeoutSeconds": 5, "successThreshold": 1, "failureThreshold": 5,
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "readiness-probe", "scheme": "HTTP"}},
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
            "readOnlyRootFilesystem": true,
        },
    });
    let spread = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [{"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}]},
            "topologyKey": "kubernetes.io/hostname",
        },
    }]}});
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("coredns", app.clone()),
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "selector": {"matchLabels": app},
            "template": {
                "metadata": {"labels": app},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "coredns",
                    "affinity": spread,
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                    ],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [container],
                    "dnsPolicy": "Default",
                    "volumes": [{"name": "config-volume", "configMap": {"name": "coredns", "items": [{"key": "Corefile", "path": "Corefile"}]}}],
                },
            },
        },
    })
}

/// Whether `object`, as found in the hosted cluster, is one the hub applied for `addon`.
pub fn applied_by_hub(addon: Addon, object: &Value) -> bool {
    object["metadata"]["labels"][LABEL_ADDON] == addon.name()
}

/// What became of one add-on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every object applied, at this image.
    Applied {
        /// The image of its workload.
        image: String,
    },
    /// Turned off: what the hub had applied of it is gone.
    Removed,
    /// Applying or removing failed.
    Failed {
        /// What failed, naming the object.
        message: String,
    },
}

/// Where the add-ons stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addons {
    /// kube-apiserver is not available yet (or the API server has no endpoint workers reach).
    Waiting,
    /// Each add-on's outcome.
    Done(BTreeMap<Addon, Outcome>),
}

impl Addons {
    /// Every add-on failed for one reason (the hosted API server out of reach).
    pub fn failed(message: &str) -> Addons {
        let failed = |a| {
            let outcome = Outcome::Failed {
                message: message.to_owned(),
            };
            (a, outcome)
        };
        Addons::Done(Addon::ALL.into_iter().map(failed).collect())
    }

    /// Whether an add-on failed (and is tried again soon).
    pub fn any_failed(&self) -> bool {
        matches!(self, Addons::Done(o) if o.values().any(|o| matches!(o, Outcome::Failed { .. })))
    }
}

/// The `AddonsApplied` condition: the first failure (its reason naming the add-on, its message
/// the object), else what is applied and what is off.
pub fn verdict(addons: &Addons) -> Verdict {
    let v = |status, reason, message: String| {
        Verdict::new(CONDITION_ADDONS_APPLIED, status, reason, message)
    };
    let outcomes = match addons {
        Addons::Waiting => {
            return v(
                "False",
                "WaitingForAPIServer",
                "kube-proxy and CoreDNS are applied once kube-apiserver is available".to_owned(),
            );
        }
        Addons::Done(outcomes) => outcomes,
    };
    if let Some((addon, message)) = outcomes.iter().find_map(|(a, o)| match o {
        Outcome::Failed { message } => Some((a, message)),
        _ => None,
    }) {
        return v(
            "False",
            addon.failed_reason(),
            format!("{}: {message}", addon.title()),
        );
    }
    let parts: Vec<String> = outcomes
        .iter()
        .map(|(a, o)| match o {
            Outcome::Applied { image } => format!("{} applied ({image})", a.title()),
            _ => format!("{} off ({} enabled: false)", a.title(), a.field()),
        })
        .collect();
    v("True", "AsExpected", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(addons: Value) -> HostedClusterSpec {
        serde_json::from_value(json!({"mode": "Kubernetes", "addons": addons})).unwrap()
    }

    fn input(spec: &HostedClusterSpec) -> Input<'_> {
        static ENDPOINT: std::sync::LazyLock<Endpoint> = std::sync::LazyLock::new(|| Endpoint {
            host: "hub.example.com".into(),
            port: 30443,
        });
        Input {
            spec,
            version: Version::parse("v1.35.2").unwrap(),
            registry: "registry.k8s.io",
            endpoint: &ENDPOINT,
            pod_subnet: None,
            dns_ip: "10.96.0.10",
            dns_domain: "cluster.local",
        }
    }

    fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
        objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    #[test]
    fn both_are_on_unless_turned_off() {
        let none = spec(Value::Null);
        assert!(Addon::ALL.iter().all(|a| a.enabled(&none)));
        let off = spec(json!({"coreDNS": {"enabled": false}, "kubeProxy": {}}));
        assert!(Addon::KubeProxy.enabled(&off));
        assert!(!Addon::CoreDns.enabled(&off));
    }

    #[test]
    fn kube_proxy_is_what_kubeadm_installs_at_the_control_planes_version() {
        let s = spec(Value::Null);
        let objects = objects(Addon::KubeProxy, &input(&s));
        for o in &objects {
            assert_eq!(o["metadata"]["labels"][LABEL_ADDON], "kube-proxy", "{o}");
        }
        let ds = find(&objects, "DaemonSet", "kube-proxy");
        let pod = &ds["spec"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["image"],
            "registry.k8s.io/kube-proxy:v1.35.2"
        );
        assert_eq!(pod["serviceAccountName"], "kube-proxy");
        assert_eq!(pod["hostNetwork"], true);
        assert_eq!(
            pod["containers"][0]["command"][1],
            "--config=/var/lib/kube-proxy/config.conf"
        );
        let binding = find(&objects, "ClusterRoleBinding", "kubeadm:node-proxier");
        assert_eq!(binding["roleRef"]["name"], "system:node-proxier");
        let cm = find(&objects, "ConfigMap", "kube-proxy");
        let config: Value =
            serde_yaml_ng::from_str(cm["data"]["config.conf"].as_str().unwrap()).unwrap();
        assert_eq!(config["apiVersion"], "kubeproxy.config.k8s.io/v1alpha1");
        assert_eq!(config["kind"], "KubeProxyConfiguration");
        assert_eq!(
            config["clientConnection"]["kubeconfig"],
            "/var/lib/kube-proxy/kubeconfig.conf"
        );
        assert_eq!(config["clusterCIDR"], "");
        let kubeconfig: Value =
            serde_yaml_ng::from_str(cm["data"]["kubeconfig.conf"].as_str().unwrap()).unwrap();
        assert_eq!(
            kubeconfig["clusters"][0]["cluster"]["server"],
            "https://hub.example.com:30443"
        );
        let reader = find(&objects, "RoleBinding", "kube-proxy");
        assert_eq!(reader["subjects"][0]["name"], BOOTSTRAPPERS);
        // The spec's image wins; a pod network goes into clusterCIDR.
        let s = spec(json!({"kubeProxy": {"image": "mirror.example.com/kube-proxy:v1.35.2"}}));
        let mut i = input(&s);
        i.pod_subnet = Some("10.244.0.0/16");
        let objects = super::objects(Addon::KubeProxy, &i);
        assert_eq!(
            find(&objects, "DaemonSet", "kube-proxy")["spec"]["template"]["spec"]["containers"][0]
                ["image"],
            "mirror.example.com/kube-proxy:v1.35.2"
        );
        assert!(
            find(&objects, "ConfigMap", "kube-proxy")["data"]["config.conf"]
                .as_str()
                .unwrap()
                .contains("clusterCIDR: \"10.244.0.0/16\"")
        );
    }

    #[test]
    fn coredns_serves_at_the_tenth_address_with_kubeadms_corefile() {
        let s = spec(Value::Null);
        let objects = objects(Addon::CoreDns, &input(&s));
        let service = find(&objects, "Service", "kube-dns");
        assert_eq!(service["spec"]["clusterIP"], "10.96.0.10");
        assert_eq!(service["spec"]["selector"]["k8s-app"], "kube-dns");
        let d = find(&objects, "Deployment", "coredns");
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            "registry.k8s.io/coredns/coredns:v1.13.1"
        );
        let corefile = find(&objects, "ConfigMap", "coredns")["data"]["Corefile"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(corefile.contains("kubernetes cluster.local in-addr.arpa ip6.arpa {"));
        assert!(corefile.contains("disable success cluster.local"));
        assert!(corefile.starts_with(".:53 {") && corefile.ends_with("}\n"));
        let role = find(&objects, "ClusterRole", "system:coredns");
        assert_eq!(role["rules"][1]["resources"], json!(["endpointslices"]));
        find(&objects, "ClusterRoleBinding", "system:coredns");
        find(&objects, "ServiceAccount", "coredns");
        // Another registry holds CoreDNS at its top level, as kubeadm expects.
        let mut i = input(&s);
        i.registry = "mirror.example.com";
        assert_eq!(
            image(Addon::CoreDns, &i),
            "mirror.example.com/coredns:v1.13.1"
        );
    }

    #[test]
    fn the_condition_names_the_addon_and_object_that_failed() {
        assert_eq!(verdict(&Addons::Waiting).reason, "WaitingForAPIServer");
        let done = |proxy| {
            Addons::Done(BTreeMap::from([
                (Addon::KubeProxy, proxy),
                (
                    Addon::CoreDns,
                    Outcome::Applied {
                        image: "registry.k8s.io/coredns/coredns:v1.13.1".into(),
                    },
                ),
            ]))
        };
        let v = verdict(&done(Outcome::Removed));
        assert_eq!((v.status, v.reason), ("True", "AsExpected"));
        assert!(
            v.message
                .contains("kube-proxy off (spec.addons.kubeProxy enabled: false)")
                && v.message.contains("CoreDNS applied"),
            "{}",
            v.message
        );
        let v = verdict(&done(Outcome::Failed {
            message: "DaemonSet kube-system/kube-proxy: refused".into(),
        }));
        assert_eq!((v.status, v.reason), ("False", "KubeProxyFailed"));
        assert!(v.message.contains("DaemonSet kube-system/kube-proxy"));
        let found = json!({"metadata": {"labels": {LABEL_ADDON: "coredns"}}});
        assert!(applied_by_hub(Addon::CoreDns, &found));
        assert!(!applied_by_hub(Addon::KubeProxy, &found));
        assert!(!applied_by_hub(Addon::CoreDns, &json!({"metadata": {}})));
    }
}
