//! The defaults kube-apiserver fills in when it decodes built-in kinds (`SetDefaults_*` in
//! k8s.io/kubernetes/pkg/apis), for the kinds atoll stores. Without them `kubectl diff` and helm's
//! three-way patches see differences that a real cluster would not have.

use serde_json::{Value, json};

/// Fills the defaults of a built-in object of `group`/`kind`. `old` is the stored object on an
/// update, so that allocated values (a Service's cluster IP) stay.
pub fn apply(group: &str, kind: &str, object: &mut Value, old: Option<&Value>) {
    strip_empty_metadata(object);
    match (group, kind) {
        ("", "Service") => service(object, old),
        ("", "Pod") => pod(object, old.is_none()),
        ("", "ReplicationController") => {
            set_default(object, &["spec", "replicas"], json!(1));
            template(object);
            // Selector and labels default to the template's labels.
            let labels = object["spec"]["template"]["metadata"]["labels"].clone();
            if labels.is_object() {
                set_default(object, &["spec", "selector"], labels.clone());
                if object["metadata"].is_object() {
                    set_default(object, &["metadata", "labels"], labels);
                }
            }
        }
        ("", "PersistentVolume") => {
            set_default(
                object,
                &["spec", "persistentVolumeReclaimPolicy"],
                json!("Retain"),
            );
            set_default(object, &["spec", "volumeMode"], json!("Filesystem"));
            if old.is_none() {
                object["status"] = json!({"phase": "Pending"});
            }
        }
        ("", "PersistentVolumeClaim") => {
            set_default(object, &["spec", "volumeMode"], json!("Filesystem"));
            if old.is_none() {
                object["status"] = json!({"phase": "Pending"});
            }
        }
        ("", "PodTemplate") => {
            if let Some(spec) = object.get_mut("template").and_then(|t| t.get_mut("spec")) {
                pod_spec(spec);
            }
        }
        ("", "Endpoints") => {
            for subset in items_mut(object, "subsets") {
                for port in items_mut(subset, "ports") {
                    set_default(port, &["protocol"], json!("TCP"));
                }
            }
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            for port in items_mut(object, "ports") {
                set_default(port, &["protocol"], json!("TCP"));
            }
        }
        ("batch", "Job") => job(object),
        ("batch", "CronJob") => {
            set_default(object, &["spec", "concurrencyPolicy"], json!("Allow"));
            set_default(object, &["spec", "suspend"], json!(false));
            set_default(object, &["spec", "successfulJobsHistoryLimit"], json!(3));
            set_default(object, &["spec", "failedJobsHistoryLimit"], json!(1));
            if let Some(job_spec) = object["spec"]
                .get_mut("jobTemplate")
                .and_then(|t| t.get_mut("spec"))
            {
                job_spec_defaults(job_spec);
            }
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            set_default(object, &["spec", "minReplicas"], json!(1));
            if object["apiVersion"] == "autoscaling/v2"
                && object["spec"].is_object()
                && object["spec"]
                    .get("metrics")
                    .is_none_or(|m| m.as_array().is_some_and(Vec::is_empty))
            {
                object["spec"]["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]);
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            set_default(
                object,
                &["roleRef", "apiGroup"],
                json!("rbac.authorization.k8s.io"),
            );
            for subject in items_mut(object, "subjects") {
                if matches!(subject["kind"].as_str(), Some("User" | "Group")) {
                    set_default(subject, &["apiGroup"], json!("rbac.authorization.k8s.io"));
                }
            }
        }
        ("storage.k8s.io", "StorageClass") => {
            set_default(object, &["reclaimPolicy"], json!("Delete"));
            set_default(object, &["volumeBindingMode"], json!("Immediate"));
        }
        ("storage.k8s.io", "CSIDriver") => {
            set_default(object, &["spec", "attachRequired"], json!(true));
            set_default(object, &["spec", "podInfoOnMount"], json!(false));
            set_default(object, &["spec", "requiresRepublish"], json!(false));
            set_default(object, &["spec", "storageCapacity"], json!(false));
            set_default(
                object,
                &["spec", "fsGroupPolicy"],
                json!("ReadWriteOnceWithFSType"),
            );
            set_default(
                object,
                &["spec", "volumeLifecycleModes"],
                json!(["Persistent"]),
            );
        }
        ("networking.k8s.io", "NetworkPolicy") => network_policy(object),
        ("apiregistration.k8s.io", "APIService") if object["spec"]["service"].is_object() => {
            set_default(object, &["spec", "service", "port"], json!(443));
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            set_default(object, &["preemptionPolicy"], json!("PreemptLowerPriority"));
        }
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => {
            let mutating = kind == "MutatingWebhookConfiguration";
            for webhook in items_mut(object, "webhooks") {
                webhook_defaults(webhook, mutating);
            }
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            set_default(object, &["spec", "failurePolicy"], json!("Fail"));
            if object["spec"]["matchConstraints"].is_object() {
                set_default(
                    object,
                    &["spec", "matchConstraints", "matchPolicy"],
                    json!("Equivalent"),
                );
                set_default(
                    object,
                    &["spec", "matchConstraints", "namespaceSelector"],
                    json!({}),
                );
                set_default(
                    object,
                    &["spec", "matchConstraints", "objectSelector"],
                    json!({}),
                );
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
            set_default(
                object,
                &["spec", "persistentVolumeClaimRetentionPolicy"],
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
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

/// The items of list `key` of `object`, if it is an object with such a list (never adding one).
fn items_mut<'a>(object: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    object
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
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
    for volume in items_mut(spec, "volumes") {
        volume_defaults(volume);
    }
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
                // Requests default to the limits.
                if let Some(limits) = container["resources"]["limits"].as_object().cloned() {
                    for (resource, limit) in limits {
                        set_default(container, &["resources", "requests", &resource], limit);
                    }
                }
                for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                    if let Some(probe) = container.get_mut(probe).filter(|p| p.is_object()) {
                        probe_defaults(probe);
                    }
                }
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

/// A Pod: its spec, what admission adds to every Pod (its service account, priority, the
/// not-ready and unreachable tolerations), and on create its status (`Pending`, and the QoS
/// class its resources give it).
fn pod(object: &mut Value, created: bool) {
    let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    pod_spec(spec);
    set_default(spec, &["enableServiceLinks"], json!(true));
    set_default(spec, &["serviceAccountName"], json!("default"));
    let account = spec["serviceAccountName"].clone();
    set_default(spec, &["serviceAccount"], account);
    set_default(spec, &["priority"], json!(0));
    set_default(spec, &["preemptionPolicy"], json!("PreemptLowerPriority"));
    let tolerations = spec
        .as_object_mut()
        .map(|s| s.entry("tolerations").or_insert_with(|| json!([])));
    if let Some(Value::Array(tolerations)) = tolerations {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = tolerations.iter().any(|t| {
                (t["key"] == key || t.get("key").is_none() && t["operator"] == "Exists")
                    && t["effect"]
                        .as_str()
                        .is_none_or(|e| e.is_empty() || e == "NoExecute")
            });
            if !tolerated {
                tolerations.push(json!({"key": key, "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
    let qos = qos_class(spec);
    if created && object.is_object() {
        object["status"] = json!({"phase": "Pending", "qosClass": qos});
    }
}

/// Upstream's `GetPodQOS`: Guaranteed when every container limits and requests cpu and memory
/// equally, BestEffort when none asks for either, Burstable otherwise.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| spec[*list].as_array().into_iter().flatten())
        .collect();
    let asks = |c: &Value, what: &str| {
        ["cpu", "memory"]
            .iter()
            .any(|r| c["resources"][what].get(*r).is_some())
    };
    if containers
        .iter()
        .all(|c| !asks(c, "requests") && !asks(c, "limits"))
    {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        ["cpu", "memory"].iter().all(|r| {
            let limit = &c["resources"]["limits"][*r];
            !limit.is_null() && c["resources"]["requests"][*r] == *limit
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn probe_defaults(probe: &mut Value) {
    set_default(probe, &["timeoutSeconds"], json!(1));
    set_default(probe, &["periodSeconds"], json!(10));
    set_default(probe, &["successThreshold"], json!(1));
    set_default(probe, &["failureThreshold"], json!(3));
    if probe["httpGet"].is_object() {
        set_default(probe, &["httpGet", "path"], json!("/"));
        set_default(probe, &["httpGet", "scheme"], json!("HTTP"));
    }
}

fn volume_defaults(volume: &mut Value) {
    let Some(map) = volume.as_object() else {
        return;
    };
    if map.keys().all(|k| k == "name") {
        volume["emptyDir"] = json!({});
        return;
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if volume[source].is_object() {
            set_default(volume, &[source, "defaultMode"], json!(420));
        }
    }
    let projected = volume.get_mut("projected");
    for projection in projected.into_iter().flat_map(|p| items_mut(p, "sources")) {
        if projection["serviceAccountToken"].is_object() {
            set_default(
                projection,
                &["serviceAccountToken", "expirationSeconds"],
                json!(3600),
            );
        }
    }
    if volume["hostPath"].is_object() {
        set_default(volume, &["hostPath", "type"], json!(""));
    }
}

/// A Job: its spec's defaults, and the selector and template labels creation generates from
/// its UID (unless it chose its own selector).
fn job(object: &mut Value) {
    let uid = object["metadata"]["uid"].as_str().map(str::to_owned);
    let name = object["metadata"]["name"].as_str().map(str::to_owned);
    let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    job_spec_defaults(spec);
    let manual = spec["manualSelector"].as_bool() == Some(true);
    if let (Some(uid), Some(name), false) = (uid, name, manual)
        && spec.get("selector").is_none_or(Value::is_null)
    {
        spec["selector"] =
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid.clone()}});
        if spec["template"].is_object() {
            for (key, value) in [
                ("batch.kubernetes.io/controller-uid", &uid),
                ("batch.kubernetes.io/job-name", &name),
                ("controller-uid", &uid),
                ("job-name", &name),
            ] {
                set_default(spec, &["template", "metadata", "labels", key], json!(value));
            }
        }
    }
    let labels = object["spec"]["template"]["metadata"]["labels"].clone();
    if labels.is_object() && object["metadata"].is_object() {
        set_default(object, &["metadata", "labels"], labels);
    }
}

fn job_spec_defaults(spec: &mut Value) {
    if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    set_default(spec, &["parallelism"], json!(1));
    let per_index = spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    set_default(
        spec,
        &["backoffLimit"],
        json!(if per_index { i32::MAX } else { 6 }),
    );
    set_default(spec, &["completionMode"], json!("NonIndexed"));
    set_default(spec, &["suspend"], json!(false));
    let replacement = if spec.get("podFailurePolicy").is_some_and(|v| !v.is_null()) {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    set_default(spec, &["podReplacementPolicy"], json!(replacement));
    if let Some(pod) = spec.get_mut("template").and_then(|t| t.get_mut("spec")) {
        pod_spec(pod);
    }
}

fn network_policy(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    if spec.get("policyTypes").is_none_or(Value::is_null) {
        let mut types = vec![json!("Ingress")];
        if spec.get("egress").is_some_and(|e| !e.is_null()) {
            types.push(json!("Egress"));
        }
        spec["policyTypes"] = Value::Array(types);
    }
    for direction in ["ingress", "egress"] {
        for rule in items_mut(spec, direction) {
            for port in items_mut(rule, "ports") {
                set_default(port, &["protocol"], json!("TCP"));
            }
        }
    }
}

fn webhook_defaults(webhook: &mut Value, mutating: bool) {
    if !webhook.is_object() {
        return;
    }
    set_default(webhook, &["failurePolicy"], json!("Fail"));
    set_default(webhook, &["matchPolicy"], json!("Equivalent"));
    set_default(webhook, &["namespaceSelector"], json!({}));
    set_default(webhook, &["objectSelector"], json!({}));
    set_default(webhook, &["timeoutSeconds"], json!(10));
    if mutating {
        set_default(webhook, &["reinvocationPolicy"], json!("Never"));
    }
    for rule in items_mut(webhook, "rules") {
        set_default(rule, &["scope"], json!("*"));
    }
    if webhook["clientConfig"]["service"].is_object() {
        set_default(webhook, &["clientConfig", "service", "port"], json!(443));
    }
}

fn service(object: &mut Value, old: Option<&Value>) {
    set_default(object, &["spec", "type"], json!("ClusterIP"));
    let kind = object["spec"]["type"]
        .as_str()
        .unwrap_or("ClusterIP")
        .to_owned();
    set_default(object, &["spec", "sessionAffinity"], json!("None"));
    if object["spec"]["sessionAffinity"] == "ClientIP" {
        set_default(
            object,
            &[
                "spec",
                "sessionAffinityConfig",
                "clientIP",
                "timeoutSeconds",
            ],
            json!(10800),
        );
    }
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
        set_default(object, &["spec", "externalTrafficPolicy"], json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        set_default(
            object,
            &["spec", "allocateLoadBalancerNodePorts"],
            json!(true),
        );
    }
    if old.is_none() && object.is_object() {
        object["status"] = json!({"loadBalancer": {}});
    }
    if kind != "ExternalName" {
        set_default(object, &["spec", "internalTrafficPolicy"], json!("Cluster"));
        // The cluster IP is allocated when the Service is created (`service_ip`) and kept
        // for its life: an update that leaves it out keeps it.
        if object["spec"]["clusterIP"]
            .as_str()
            .is_none_or(str::is_empty)
            && let Some(kept) = old.and_then(|o| o["spec"]["clusterIP"].as_str())
        {
            object["spec"]["clusterIP"] = json!(kept);
        }
        if object["spec"]["clusterIP"] != "None" {
            if let Some(ip) = object["spec"]["clusterIP"].as_str().map(str::to_owned) {
                set_default(object, &["spec", "clusterIPs"], json!([ip]));
            }
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
    fn services_keep_their_cluster_ip() {
        let mut svc = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"clusterIP": "10.96.0.7", "ports": [{"port": 80}]}});
        apply("", "Service", &mut svc, None);
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.7"]));
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        let mut update = json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"ports": [{"port": 81}]}});
        apply("", "Service", &mut update, Some(&svc));
        assert_eq!(update["spec"]["clusterIP"], "10.96.0.7");
        let mut external = json!({"metadata": {"name": "x"}, "spec": {"type": "ExternalName", "externalName": "example.com"}});
        apply("", "Service", &mut external, None);
        assert!(external["spec"].get("clusterIP").is_none());
    }

    #[test]
    fn pods_are_pending_with_the_qos_class_their_resources_give() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "i", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
             "readinessProbe": {"httpGet": {"port": 80}}}]}});
        apply("", "Pod", &mut pod, None);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "Guaranteed"})
        );
        let container = &pod["spec"]["containers"][0];
        assert_eq!(
            container["resources"]["requests"],
            json!({"cpu": "1", "memory": "1Gi"})
        );
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/");
        assert_eq!(container["readinessProbe"]["periodSeconds"], 10);
        assert_eq!(pod["spec"]["tolerations"].as_array().unwrap().len(), 2);
        let mut burstable = json!({"spec": {"containers": [
            {"name": "a", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}});
        apply("", "Pod", &mut burstable, None);
        assert_eq!(burstable["status"]["qosClass"], "Burstable");
        // An update leaves the status to the status subresource.
        let mut update = json!({"spec": {"containers": [{"name": "a", "image": "i"}]}});
        apply("", "Pod", &mut update, Some(&pod));
        assert!(update.get("status").is_none());
    }

    #[test]
    fn defaults_never_add_what_was_not_there_or_trip_on_bad_shapes() {
        // Lists that are absent stay absent; elements of the wrong type are left alone.
        let mut endpoints = json!({"metadata": {"name": "e"}});
        apply("", "Endpoints", &mut endpoints, None);
        assert_eq!(endpoints, json!({"metadata": {"name": "e"}}));
        let mut binding = json!({"roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": ["alice", {"kind": "User", "name": "bob"}, {"kind": "ServiceAccount", "name": "x"}]});
        apply(
            "rbac.authorization.k8s.io",
            "RoleBinding",
            &mut binding,
            None,
        );
        assert_eq!(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(binding["subjects"][0], "alice");
        assert_eq!(
            binding["subjects"][1]["apiGroup"],
            "rbac.authorization.k8s.io"
        );
        assert!(binding["subjects"][2].get("apiGroup").is_none());
        let mut pod = json!({"spec": {"volumes": ["x", {"name": "v"}, {"name": "s", "secret": {}}],
            "containers": "nope"}});
        apply("", "Pod", &mut pod, None);
        assert_eq!(pod["spec"]["volumes"][1]["emptyDir"], json!({}));
        assert_eq!(pod["spec"]["volumes"][2]["secret"]["defaultMode"], 420);
        let mut job = json!({"spec": "nope"});
        apply("batch", "Job", &mut job, None);
        assert_eq!(job, json!({"spec": "nope"}));
    }

    #[test]
    fn services_and_jobs_get_upstreams_defaults() {
        let mut svc = json!({"metadata": {"name": "x", "namespace": "d"},
            "spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}});
        apply("", "Service", &mut svc, None);
        assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(svc["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(
            svc["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
            10800
        );
        assert_eq!(svc["status"], json!({"loadBalancer": {}}));
        let mut external = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
        apply("", "Service", &mut external, None);
        assert_eq!(external["spec"]["sessionAffinity"], "None");

        let mut job = json!({"metadata": {"name": "j", "uid": "u-1"}, "spec": {"parallelism": 3,
            "podFailurePolicy": {"rules": []}, "template": {"spec": {"containers": []}}}});
        apply("batch", "Job", &mut job, None);
        assert!(job["spec"].get("completions").is_none());
        assert_eq!(job["spec"]["parallelism"], 3);
        assert_eq!(job["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        assert_eq!(job["metadata"]["labels"]["job-name"], "j");
    }
}
