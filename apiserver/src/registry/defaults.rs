//! The defaults kube-apiserver fills in when it decodes built-in kinds (`SetDefaults_*` in
//! k8s.io/kubernetes/pkg/apis), for the kinds atoll stores. Without them `kubectl diff` and helm's
//! three-way patches see differences that a real cluster would not have.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Fills the defaults of a built-in object of `group`/`kind`. `old` is the stored object on an
/// update, so that allocated values (a Service's cluster IP) stay.
pub fn apply(group: &str, kind: &str, object: &mut Value, old: Option<&Value>) {
    strip_empty_metadata(object);
    match (group, kind) {
        ("", "Service") => service(object, old),
        ("", "Pod") => {
            if let Some(spec) = object.get_mut("spec") {
                pod_spec(spec);
            }
        }
        ("apps", "Deployment") => {
            set_default(object, &["spec", "replicas"], json!(1));
            set_default(object, &["spec", "revisionHistoryLimit"], json!(10));
            set_default(object, &["spec", "progressDeadlineSeconds"], json!(600));
            if object["spec"].get("strategy").is_none() {
                object["spec"]["strategy"] = json!({
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                });
            }
            template(object);
        }
        ("apps", "ReplicaSet") => {
            set_default(object, &["spec", "replicas"], json!(1));
            template(object);
        }
        ("apps", "StatefulSet") => {
            set_default(object, &["spec", "replicas"], json!(1));
            set_default(
                object,
                &["spec", "podManagementPolicy"],
                json!("OrderedReady"),
            );
            set_default(object, &["spec", "revisionHistoryLimit"], json!(10));
            if object["spec"].get("updateStrategy").is_none() {
                object["spec"]["updateStrategy"] =
                    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}});
            }
            template(object);
        }
        ("apps", "DaemonSet") => {
            set_default(object, &["spec", "revisionHistoryLimit"], json!(10));
            if object["spec"].get("updateStrategy").is_none() {
                object["spec"]["updateStrategy"] = json!({
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                });
            }
            template(object);
        }
        _ => {}
    }
}

/// Defaults the fields that are part of list keys (`protocol` of ports) in an applied
/// configuration, so that server-side apply matches its list elements to the stored ones, which
/// were defaulted when stored (structured-merge-diff defaults key fields the same way).
pub fn apply_key_defaults(group: &str, kind: &str, config: &mut Value) {
    fn ports(list: Option<&mut Value>) {
        if let Some(ports) = list.and_then(Value::as_array_mut) {
            for port in ports {
                set_default(port, &["protocol"], json!("TCP"));
            }
        }
    }
    fn pod_spec_ports(spec: Option<&mut Value>) {
        let Some(spec) = spec else { return };
        for list in ["containers", "initContainers"] {
            if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
                for container in containers {
                    ports(container.get_mut("ports"));
                }
            }
        }
    }
    match (group, kind) {
        ("", "Service") => ports(config.get_mut("spec").and_then(|s| s.get_mut("ports"))),
        ("", "Pod") => pod_spec_ports(config.get_mut("spec")),
        ("apps", _) => pod_spec_ports(
            config
                .get_mut("spec")
                .and_then(|s| s.get_mut("template"))
                .and_then(|t| t.get_mut("spec")),
        ),
        _ => {}
    }
}

/// Go's `omitempty` drops empty maps and lists from ObjectMeta; a JSON store would keep them.
pub fn strip_empty_metadata(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|key, value| match (key.as_str(), value) {
            (_, Value::Null) => false,
            ("labels" | "annotations", Value::Object(m)) => !m.is_empty(),
            ("finalizers" | "ownerReferences" | "managedFields", Value::Array(a)) => !a.is_empty(),
            _ => true,
        });
    }
}

fn set_default(object: &mut Value, path: &[&str], value: Value) {
    let mut v = object;
    for (i, part) in path.iter().enumerate() {
        if !v.is_object() {
            return;
        }
        if i + 1 == path.len() {
            if v.get(*part).is_none_or(Value::is_null) {
                v[*part] = value;
            }
            return;
        }
        if v.get(*part).is_none() {
            v[*part] = json!({});
        }
        v = &mut v[*part];
    }
}

fn template(object: &mut Value) {
    if let Some(spec) = object
        .get_mut("spec")
        .and_then(|s| s.get_mut("template"))
        .and_then(|t| t.get_mut("spec"))
    {
        pod_spec(spec);
    }
}

fn pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set_default(spec, &["restartPolicy"], json!("Always"));
    set_default(spec, &["terminationGracePeriodSeconds"], json!(30));
    set_default(spec, &["dnsPolicy"], json!("ClusterFirst"));
    set_default(spec, &["schedulerName"], json!("default-scheduler"));
    set_default(spec, &["securityContext"], json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for container in containers {
                if !container.is_object() {
                    continue;
                }
                set_default(
                    container,
                    &["terminationMessagePath"],
                    json!("/dev/termination-log"),
                );
                set_default(container, &["terminationMessagePolicy"], json!("File"));
                set_default(container, &["resources"], json!({}));
                let image = container["image"].as_str().unwrap_or_default();
                let tag = image.rsplit('/').next().unwrap_or(image);
                let latest = !tag.contains(':') && !image.contains('@') || tag.ends_with(":latest");
                let policy = if latest { "Always" } else { "IfNotPresent" };
                set_default(container, &["imagePullPolicy"], json!(policy));
                if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
                    for port in ports {
                        set_default(port, &["protocol"], json!("TCP"));
                    }
                }
            }
        }
    }
}

fn service(object: &mut Value, old: Option<&Value>) {
    set_default(object, &["spec", "type"], json!("ClusterIP"));
    let kind = object["spec"]["type"]
        .as_str()
        .unwrap_or("ClusterIP")
        .to_owned();
    if kind != "ExternalName" {
        set_default(object, &["spec", "sessionAffinity"], json!("None"));
        set_default(object, &["spec", "internalTrafficPolicy"], json!("Cluster"));
        // A cluster IP, stable for the Service's life; no traffic is routed to it here.
        let kept = old
            .and_then(|o| o["spec"]["clusterIP"].as_str())
            .map(str::to_owned);
        let ip = object["spec"]["clusterIP"]
            .as_str()
            .filter(|ip| !ip.is_empty())
            .map(str::to_owned)
            .or(kept)
            .unwrap_or_else(|| cluster_ip(object));
        object["spec"]["clusterIP"] = json!(ip);
        if ip != "None" {
            set_default(object, &["spec", "clusterIPs"], json!([ip]));
            set_default(object, &["spec", "ipFamilies"], json!(["IPv4"]));
            set_default(object, &["spec", "ipFamilyPolicy"], json!("SingleStack"));
        }
    }
    if let Some(ports) = object["spec"]
        .get_mut("ports")
        .and_then(Value::as_array_mut)
    {
        for port in ports {
            set_default(port, &["protocol"], json!("TCP"));
            if port.get("targetPort").is_none()
                && let Some(p) = port.get("port").cloned()
            {
                port["targetPort"] = p;
            }
        }
    }
}

/// An address in 10.96.0.0/12 derived from the Service's namespace and name.
fn cluster_ip(object: &Value) -> String {
    let key = format!(
        "{}/{}",
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    );
    let digest = Sha256::digest(key.as_bytes());
    let n = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) & 0x000f_ffff;
    let n = n.max(2);
    format!("10.{}.{}.{}", 96 + (n >> 16), (n >> 8) & 0xff, n & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_defaults_fill_only_what_is_missing() {
        let mut d = json!({"metadata": {"name": "web", "annotations": {}}, "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}});
        apply("apps", "Deployment", &mut d, None);
        assert_eq!(d["spec"]["replicas"], 3);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert!(
            d["metadata"].get("annotations").is_none(),
            "empty maps are dropped"
        );
        let mut latest = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "registry:5000/nginx"}]}}}});
        apply("apps", "Deployment", &mut latest, None);
        assert_eq!(
            latest["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
    }

    #[test]
    fn services_get_a_stable_cluster_ip() {
        let mut svc = json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}});
        apply("", "Service", &mut svc, None);
        let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
        assert!(ip.starts_with("10."));
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        let mut update = json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"ports": [{"port": 81}]}});
        apply("", "Service", &mut update, Some(&svc));
        assert_eq!(update["spec"]["clusterIP"], ip.as_str());
        let mut external = json!({"metadata": {"name": "x"}, "spec": {"type": "ExternalName", "externalName": "example.com"}});
        apply("", "Service", &mut external, None);
        assert!(external["spec"].get("clusterIP").is_none());
    }
}
