//! What a Pod's API offers beyond storage: binding it to a node (`bindings`, `pods/binding`),
//! evicting it (`pods/eviction`), and the subresources a kubelet answers (`log`, `exec`,
//! `attach`, `portforward`, `proxy`), which atoll, running no kubelets, refuses as
//! kube-apiserver refuses them for a pod no node runs.

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::registry::ResourceType;
use crate::registry::store::{DeleteOptions, Store, WriteOptions};

/// The Pod subresources served (beside `status`), as discovery lists them: name, kind, group,
/// version and verbs.
pub const SUBRESOURCES: &[(&str, &str, &str, &str, &[&str])] = &[
    ("attach", "PodAttachOptions", "", "", &["create", "get"]),
    ("binding", "Binding", "", "", &["create"]),
    ("eviction", "Eviction", "policy", "v1", &["create"]),
    ("exec", "PodExecOptions", "", "", &["create", "get"]),
    ("log", "Pod", "", "", &["get"]),
    (
        "portforward",
        "PodPortForwardOptions",
        "",
        "",
        &["create", "get"],
    ),
    (
        "proxy",
        "PodProxyOptions",
        "",
        "",
        &["create", "delete", "get", "patch", "update"],
    ),
];

/// Whether `sub` is a Pod subresource this module answers.
pub fn serves(rt: &ResourceType, sub: &str) -> bool {
    rt.group.is_empty() && rt.plural == "pods" && SUBRESOURCES.iter().any(|s| s.0 == sub)
}

/// `POST .../bindings` (the binding names the pod) or `POST .../pods/<name>/binding`: assigns the
/// pod to the binding's target node, once.
pub async fn bind(
    store: &Store,
    pods: &ResourceType,
    ns: &str,
    name: Option<&str>,
    binding: &Value,
) -> Result<Value> {
    let name = name
        .or_else(|| binding["metadata"]["name"].as_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::BadRequest("the binding names no pod (metadata.name)".into()))?;
    let node = binding["target"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            Error::invalid(
                "Binding",
                pods.target(name),
                vec![crate::validation::FieldError {
                    cause: crate::validation::CauseType::Required,
                    field: "target.name".into(),
                    message: String::new(),
                    value: None,
                }],
            )
        })?;
    let mut pod = store.get(pods, Some(ns), name).await?;
    if let Some(assigned) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Err(Error::Conflict {
            target: pods.target(name),
            reason: format!("pod {name} is already assigned to node {assigned:?}"),
        });
    }
    pod["spec"]["nodeName"] = json!(node);
    let options = WriteOptions {
        field_manager: "atoll-binding".into(),
        ..Default::default()
    };
    // The update carries the resourceVersion read: a concurrent binding gets a conflict.
    store
        .update(pods, Some(ns), name, None, pod, &options)
        .await?;
    Ok(success())
}

/// `POST .../pods/<name>/eviction`: deletes the pod (no PodDisruptionBudget controller runs to
/// say otherwise).
pub async fn evict(store: &Store, pods: &ResourceType, ns: &str, name: &str) -> Result<Value> {
    store
        .delete(pods, Some(ns), name, &DeleteOptions::default())
        .await?;
    Ok(success())
}

/// What a kubelet would answer: a pod no node runs has nowhere to answer from.
pub async fn kubelet(
    store: &Store,
    pods: &ResourceType,
    ns: &str,
    name: &str,
    sub: &str,
) -> Result<Value> {
    let pod = store.get(pods, Some(ns), name).await?;
    match pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        None => Err(Error::BadRequest(format!(
            "pod {name} does not have a host assigned"
        ))),
        Some(node) => Err(Error::ServiceUnavailable(format!(
            "cannot {sub} pod {name}: node {node:?} runs no kubelet atoll can reach (atoll's clusters run no workloads)"
        ))),
    }
}

fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}
