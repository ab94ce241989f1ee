//! The validation of built-in kinds that users hit most, with kube-apiserver's messages
//! (`pkg/apis/core/validation`, `pkg/apis/apps/validation`, `pkg/apis/batch/validation`): a
//! Service's type, ports and names; every pod spec's containers, images, pull policies, ports,
//! restart and DNS policies (in Pods and in the templates of workloads, Jobs and CronJobs); and
//! a workload's selector against its template's labels. What the schema says (types, required
//! fields) is checked before this.

use std::collections::HashSet;

use serde_json::Value;

use super::FieldError;
use super::meta::dns1123_label_errors;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];
const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// The errors of a built-in object of `group`/`kind` (empty for kinds without such rules).
pub fn validate(group: &str, kind: &str, object: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match (group, kind) {
        ("", "Service") => service(object, &mut errors),
        ("", "Pod") => pod_spec(&object["spec"], "spec", RESTART_ANY, &mut errors),
        ("", "PodTemplate") => pod_spec(
            &object["template"]["spec"],
            "template.spec",
            RESTART_ANY,
            &mut errors,
        ),
        ("", "ReplicationController") => template(object, "spec", RESTART_ALWAYS, &mut errors),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            selector_matches(object, kind == "Deployment", &mut errors);
            template(object, "spec", RESTART_ALWAYS, &mut errors);
        }
        ("batch", "Job") => template(object, "spec", RESTART_JOB, &mut errors),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            errors.extend(crate::admission::policies::spec_errors(object));
        }
        ("batch", "CronJob") => template(
            &object["spec"]["jobTemplate"],
            "spec.jobTemplate.spec",
            RESTART_JOB,
            &mut errors,
        ),
        _ => {}
    }
    errors
}

const RESTART_ANY: &[&str] = &["Always", "OnFailure", "Never"];
const RESTART_ALWAYS: &[&str] = &["Always"];
const RESTART_JOB: &[&str] = &["OnFailure", "Never"];

/// The pod template at `<spec path>.template.spec` of `object` (whose spec is at `spec`).
fn template(object: &Value, spec: &str, restart: &[&str], errors: &mut Vec<FieldError>) {
    let template = &object["spec"]["template"]["spec"];
    if template.is_object() {
        pod_spec(template, &format!("{spec}.template.spec"), restart, errors);
    }
}

fn pod_spec(spec: &Value, path: &str, restart: &[&str], errors: &mut Vec<FieldError>) {
    if !spec.is_object() {
        return;
    }
    let containers = spec["containers"].as_array().map_or(&[][..], Vec::as_slice);
    if containers.is_empty() {
        errors.push(FieldError::required(format!("{path}.containers"), ""));
    }
    let mut names = HashSet::new();
    for list in ["initContainers", "containers"] {
        for (i, container) in spec[list].as_array().into_iter().flatten().enumerate() {
            container_errors(
                container,
                &format!("{path}.{list}[{i}]"),
                &mut names,
                errors,
            );
        }
    }
    if let Some(policy) = spec["restartPolicy"].as_str()
        && !restart.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            format!("{path}.restartPolicy"),
            policy,
            restart,
        ));
    }
    if let Some(policy) = spec["dnsPolicy"].as_str()
        && !DNS_POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            format!("{path}.dnsPolicy"),
            policy,
            DNS_POLICIES,
        ));
    }
}

fn container_errors(
    container: &Value,
    path: &str,
    names: &mut HashSet<String>,
    errors: &mut Vec<FieldError>,
) {
    match container["name"].as_str().filter(|n| !n.is_empty()) {
        None => errors.push(FieldError::required(format!("{path}.name"), "")),
        Some(name) => {
            for message in dns1123_label_errors(name) {
                errors.push(FieldError::invalid(format!("{path}.name"), name, message));
            }
            if !names.insert(name.to_owned()) {
                errors.push(FieldError::duplicate(format!("{path}.name"), name));
            }
        }
    }
    if container["image"].as_str().is_none_or(str::is_empty) {
        errors.push(FieldError::required(format!("{path}.image"), ""));
    }
    if let Some(policy) = container["imagePullPolicy"].as_str()
        && !PULL_POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            format!("{path}.imagePullPolicy"),
            policy,
            PULL_POLICIES,
        ));
    }
    let mut port_names = HashSet::new();
    for (i, port) in container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("{path}.ports[{i}]");
        if let Some(name) = port["name"].as_str().filter(|n| !n.is_empty()) {
            for message in port_name_errors(name) {
                errors.push(FieldError::invalid(format!("{at}.name"), name, message));
            }
            if !port_names.insert(name.to_owned()) {
                errors.push(FieldError::duplicate(format!("{at}.name"), name));
            }
        }
        port_number(
            &port["containerPort"],
            &format!("{at}.containerPort"),
            true,
            errors,
        );
        if port["hostPort"].as_i64().is_some_and(|p| p != 0) {
            port_number(&port["hostPort"], &format!("{at}.hostPort"), true, errors);
        }
        protocol(&port["protocol"], &format!("{at}.protocol"), errors);
    }
}

/// A port number in 1..=65535 (`required`: absent or 0 is an error too).
fn port_number(value: &Value, path: &str, required: bool, errors: &mut Vec<FieldError>) {
    match value.as_i64() {
        Some(p) if (1..=65535).contains(&p) => {}
        Some(p) => errors.push(FieldError::invalid(path, p, PORT_RANGE)),
        None if required && value.is_null() => {
            errors.push(FieldError::invalid(path, 0, PORT_RANGE));
        }
        None => {}
    }
}

fn protocol(value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(p) = value.as_str()
        && !PROTOCOLS.contains(&p)
    {
        errors.push(FieldError::not_supported(path, p, PROTOCOLS));
    }
}

/// Upstream's `IsValidPortName` (an IANA service name).
pub fn port_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters".to_owned());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

fn service(object: &Value, errors: &mut Vec<FieldError>) {
    let spec = &object["spec"];
    let kind = spec["type"].as_str().unwrap_or("ClusterIP");
    if !SERVICE_TYPES.contains(&kind) {
        errors.push(FieldError::not_supported("spec.type", kind, SERVICE_TYPES));
    }
    let headless = spec["clusterIP"] == "None";
    let ports = spec["ports"].as_array().map_or(&[][..], Vec::as_slice);
    if kind == "ExternalName" {
        if spec["externalName"].as_str().is_none_or(str::is_empty) {
            errors.push(FieldError::required("spec.externalName", ""));
        }
    } else if ports.is_empty() && !headless {
        errors.push(FieldError::required("spec.ports", ""));
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        match port["name"].as_str().filter(|n| !n.is_empty()) {
            None if ports.len() > 1 => errors.push(FieldError::required(format!("{at}.name"), "")),
            None => {}
            Some(name) => {
                for message in dns1123_label_errors(name) {
                    errors.push(FieldError::invalid(format!("{at}.name"), name, message));
                }
                if !names.insert(name.to_owned()) {
                    errors.push(FieldError::duplicate(format!("{at}.name"), name));
                }
            }
        }
        port_number(&port["port"], &format!("{at}.port"), true, errors);
        protocol(&port["protocol"], &format!("{at}.protocol"), errors);
        match &port["targetPort"] {
            Value::String(name) => {
                for message in port_name_errors(name) {
                    errors.push(FieldError::invalid(
                        format!("{at}.targetPort"),
                        name.as_str(),
                        message,
                    ));
                }
            }
            number => port_number(number, &format!("{at}.targetPort"), false, errors),
        }
    }
}

/// A workload's `spec.selector` is required and must select its template's labels.
/// (An empty selector is refused for Deployments, as upstream refuses it.)
fn selector_matches(object: &Value, deployment: bool, errors: &mut Vec<FieldError>) {
    let selector = &object["spec"]["selector"];
    if !selector.is_object() {
        errors.push(FieldError::required("spec.selector", ""));
        return;
    }
    let labels = &object["spec"]["template"]["metadata"]["labels"];
    let matches = crate::registry::selector::matches_label_selector(selector, labels);
    let selects_nothing = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.is_empty())
        && selector["matchExpressions"]
            .as_array()
            .is_none_or(|e| e.is_empty());
    if selects_nothing && deployment {
        errors.push(FieldError::invalid(
            "spec.selector",
            selector.clone(),
            "empty selector is invalid for deployment",
        ));
    } else if !(selects_nothing || matches) {
        errors.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels.clone(),
            "`selector` does not match template `labels`",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(group: &str, kind: &str, object: Value) -> Vec<String> {
        validate(group, kind, &object)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn services_as_kube_apiserver_refuses_them() {
        assert_eq!(
            messages(
                "",
                "Service",
                json!({"spec": {"type": "Internal", "ports": [
                {"name": "web", "port": 0, "protocol": "HTTP"},
                {"name": "web", "port": 80, "targetPort": "Http_Port"},
                {"port": 443, "targetPort": 70000}]}})
            ),
            [
                r#"spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort""#,
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                r#"spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#,
                r#"spec.ports[1].name: Duplicate value: "web""#,
                r#"spec.ports[1].targetPort: Invalid value: "Http_Port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"#,
                "spec.ports[2].name: Required value",
                "spec.ports[2].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ]
        );
        assert_eq!(
            messages("", "Service", json!({"spec": {}})),
            ["spec.ports: Required value"]
        );
        assert!(messages("", "Service", json!({"spec": {"clusterIP": "None"}})).is_empty());
        assert_eq!(
            messages("", "Service", json!({"spec": {"type": "ExternalName"}})),
            ["spec.externalName: Required value"]
        );
    }

    #[test]
    fn pod_specs_wherever_they_are() {
        assert_eq!(
            messages(
                "",
                "Pod",
                json!({"spec": {"restartPolicy": "Sometimes", "containers": [
                {"name": "Web", "image": "nginx", "imagePullPolicy": "Maybe",
                 "ports": [{"containerPort": 70000, "name": "way-too-long-port-name"}]},
                {"name": "side"}, {"name": "side", "image": "x"}]}})
            ),
            [
                r#"spec.containers[0].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
                r#"spec.containers[0].imagePullPolicy: Unsupported value: "Maybe": supported values: "Always", "IfNotPresent", "Never""#,
                r#"spec.containers[0].ports[0].name: Invalid value: "way-too-long-port-name": must be no more than 15 characters"#,
                "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[1].image: Required value",
                r#"spec.containers[2].name: Duplicate value: "side""#,
                r#"spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#,
            ]
        );
        assert_eq!(
            messages("", "Pod", json!({"spec": {"containers": []}})),
            ["spec.containers: Required value"]
        );
        assert_eq!(
            messages(
                "batch",
                "Job",
                json!({"spec": {"template": {"spec": {"restartPolicy": "Always",
                "containers": [{"name": "m", "image": "i"}]}}}})
            ),
            [
                r#"spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never""#
            ]
        );
        assert_eq!(
            messages(
                "batch",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure", "containers": [{"name": "m"}]}}}}}})
            ),
            ["spec.jobTemplate.spec.template.spec.containers[0].image: Required value"]
        );
    }

    #[test]
    fn a_workload_selects_its_template() {
        let deployment = |selector: Value| {
            json!({"spec": {"selector": selector, "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        };
        assert!(
            messages(
                "apps",
                "Deployment",
                deployment(json!({"matchLabels": {"app": "web"}}))
            )
            .is_empty()
        );
        assert!(
            messages(
                "apps",
                "Deployment",
                deployment(json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}))
            )
            .is_empty()
        );
        assert_eq!(
            messages(
                "apps",
                "Deployment",
                deployment(json!({"matchLabels": {"app": "api"}}))
            ),
            [
                r#"spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`"#
            ]
        );
        let mut none = deployment(json!({}));
        none["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(
            messages("apps", "Deployment", none),
            ["spec.selector: Required value"]
        );
    }
}
