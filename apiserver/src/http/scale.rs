//! The `scale` subresource: answers `autoscaling/v1 Scale` and writes replicas back into the
//! object at the paths its resource declares.

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::patch;
use crate::registry::ResourceType;
use crate::registry::store::{PatchType, Store, WriteOptions};

fn at<'a>(object: &'a Value, path: &str) -> &'a Value {
    let mut v = object;
    for part in path.trim_start_matches('.').split('.') {
        v = &v[part];
    }
    v
}

fn set(object: &mut Value, path: &str, value: Value) {
    let mut v = object;
    for part in path.trim_start_matches('.').split('.') {
        if !v.is_object() {
            *v = json!({});
        }
        v = &mut v[part];
    }
    *v = value;
}

/// The Scale of an object.
pub fn from_object(rt: &ResourceType, object: &Value) -> Result<Value> {
    let paths = rt.scale.as_ref().ok_or(Error::UnknownPath)?;
    let selector = paths.label_selector.as_deref().map(|p| at(object, p));
    let selector = match selector {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(sel)) => sel
            .get("matchLabels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    let mut status = json!({"replicas": at(object, &paths.status_replicas).as_i64().unwrap_or(0)});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    let meta = &object["metadata"];
    let mut metadata = json!({
        "name": meta["name"],
        "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"],
        "creationTimestamp": meta["creationTimestamp"],
    });
    if let Some(ns) = meta.get("namespace") {
        metadata["namespace"] = ns.clone();
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": at(object, &paths.spec_replicas).as_i64().unwrap_or(0)},
        "status": status,
    }))
}

/// PUT of a Scale: the Scale written, and the write's warnings.
pub async fn update(
    store: &Store,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    scale: Value,
    options: &WriteOptions,
) -> Result<(Value, Vec<String>)> {
    let replicas = scale["spec"]["replicas"].as_i64().ok_or_else(|| {
        Error::BadRequest("spec.replicas: Required value: the Scale must give spec.replicas".into())
    })?;
    write(
        store,
        rt,
        ns,
        name,
        replicas,
        scale["metadata"]["resourceVersion"].as_str(),
        options,
    )
    .await
}

/// PATCH of a Scale (merge or JSON patch applied to the Scale, then written back): the Scale
/// written, and the write's warnings.
pub async fn patch(
    store: &Store,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    patch_type: PatchType,
    body: &[u8],
    options: &WriteOptions,
) -> Result<(Value, Vec<String>)> {
    let current = store.get(rt, ns, name).await?;
    let mut scale = from_object(rt, &current)?;
    let doc: Value = match patch_type {
        PatchType::Apply => crate::patch::decode_apply(body)
            .map_err(|e| Error::BadRequest(format!("error decoding YAML: {e}")))?,
        _ => serde_json::from_slice(body)
            .map_err(|e| Error::BadRequest(format!("error decoding patch: {e}")))?,
    };
    match patch_type {
        PatchType::Json => {
            patch::json_patch(&mut scale, &doc).map_err(|e| Error::BadRequest(e.to_string()))?
        }
        _ => patch::merge_patch(&mut scale, doc),
    }
    let replicas = scale["spec"]["replicas"]
        .as_i64()
        .ok_or_else(|| Error::BadRequest("spec.replicas must be an integer".into()))?;
    write(
        store,
        rt,
        ns,
        name,
        replicas,
        scale["metadata"]["resourceVersion"].as_str(),
        options,
    )
    .await
}

async fn write(
    store: &Store,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    replicas: i64,
    resource_version: Option<&str>,
    options: &WriteOptions,
) -> Result<(Value, Vec<String>)> {
    let paths = rt.scale.as_ref().ok_or(Error::UnknownPath)?;
    let mut patch = json!({});
    set(&mut patch, &paths.spec_replicas, json!(replicas));
    if let Some(rv) = resource_version.filter(|rv| !rv.is_empty()) {
        patch["metadata"] = json!({"resourceVersion": rv});
    }
    let body = serde_json::to_vec(&patch).unwrap_or_default();
    let written = store
        .patch(rt, ns, name, None, PatchType::Merge, &body, options)
        .await?;
    Ok((from_object(rt, &written.object)?, written.warnings))
}
