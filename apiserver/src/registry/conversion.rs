//! Conversion between the versions of a built-in resource whose versions differ in shape. Among
//! the resources served by default only HorizontalPodAutoscaler does (stored as
//! `autoscaling/v2`, served as `v2` and `v1`); as upstream's `autoscaling/v1` conversion does,
//! what `v1` cannot say (metrics other than CPU utilization, behavior, conditions) rides in
//! annotations, so an object read and written back through `v1` loses nothing.

use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Converts `object`'s body from `from` to `to` (versions of `group`'s `plural`) where their
/// shapes differ; `apiVersion` and `kind` are the caller's.
pub fn convert_body(object: &mut Value, group: &str, plural: &str, from: &str, to: &str) {
    if group != "autoscaling" || plural != "horizontalpodautoscalers" || from == to {
        return;
    }
    // Only an object with object metadata has a body to convert (anything else fails
    // validation by its own message).
    if !object.get("metadata").is_some_and(Value::is_object) {
        return;
    }
    match (from, to) {
        ("v2", "v1") => hpa_v2_to_v1(object),
        ("v1", "v2") => hpa_v1_to_v2(object),
        _ => {}
    }
}

/// Whether `metric` is `Resource` cpu with a `Utilization` target (or current value).
fn cpu_utilization(metric: &Value, field: &str) -> Option<Value> {
    let resource = &metric["resource"];
    (metric["type"] == "Resource" && resource["name"] == "cpu")
        .then(|| &resource[field])
        .filter(|t| field == "current" || t["type"] == "Utilization")
        .and_then(|t| t.get("averageUtilization").cloned())
}

fn annotations(object: &mut Value) -> &mut Map<String, Value> {
    if !object["metadata"]["annotations"].is_object() {
        object["metadata"]["annotations"] = json!({});
    }
    match object["metadata"]["annotations"].as_object_mut() {
        Some(map) => map,
        None => unreachable!("annotations were just made an object"),
    }
}

/// Moves `value` (when it says something) into annotation `key` as JSON text.
fn stash(object: &mut Value, key: &str, value: Option<Value>) {
    let value = value.filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()));
    if let Some(value) = value {
        annotations(object).insert(key.into(), json!(value.to_string()));
    }
}

/// Takes annotation `key` out of `object` and parses it.
fn unstash(object: &mut Value, key: &str) -> Option<Value> {
    let text = object["metadata"]["annotations"]
        .as_object_mut()?
        .remove(key)?;
    let parsed = text.as_str().and_then(|t| serde_json::from_str(t).ok());
    if object["metadata"]["annotations"]
        .as_object()
        .is_some_and(Map::is_empty)
        && let Some(meta) = object["metadata"].as_object_mut()
    {
        meta.remove("annotations");
    }
    parsed
}

/// The fields both versions share.
const SPEC_FIELDS: &[&str] = &["scaleTargetRef", "minReplicas", "maxReplicas"];
const STATUS_FIELDS: &[&str] = &[
    "observedGeneration",
    "lastScaleTime",
    "currentReplicas",
    "desiredReplicas",
];

/// The `fields` of `from` that it has.
fn copied(from: &Value, fields: &[&str]) -> Map<String, Value> {
    fields
        .iter()
        .filter_map(|f| from.get(*f).map(|v| ((*f).to_owned(), v.clone())))
        .collect()
}

fn hpa_v2_to_v1(object: &mut Value) {
    let spec = object["spec"].take();
    let status = object["status"].take();
    let mut v1_spec = copied(&spec, SPEC_FIELDS);
    let mut others = Vec::new();
    for metric in spec["metrics"].as_array().into_iter().flatten() {
        match cpu_utilization(metric, "target") {
            Some(target) if !v1_spec.contains_key("targetCPUUtilizationPercentage") => {
                v1_spec.insert("targetCPUUtilizationPercentage".into(), target);
            }
            _ => others.push(metric.clone()),
        }
    }
    stash(object, METRICS, Some(Value::Array(others)));
    stash(object, BEHAVIOR, spec.get("behavior").cloned());
    object["spec"] = Value::Object(v1_spec);
    if status.is_object() {
        let mut v1_status = copied(&status, STATUS_FIELDS);
        let mut current = Vec::new();
        for metric in status["currentMetrics"].as_array().into_iter().flatten() {
            match cpu_utilization(metric, "current") {
                Some(value) if !v1_status.contains_key("currentCPUUtilizationPercentage") => {
                    v1_status.insert("currentCPUUtilizationPercentage".into(), value);
                }
                _ => current.push(metric.clone()),
            }
        }
        stash(object, CURRENT_METRICS, Some(Value::Array(current)));
        stash(object, CONDITIONS, status.get("conditions").cloned());
        object["status"] = Value::Object(v1_status);
    } else if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
}

fn hpa_v1_to_v2(object: &mut Value) {
    let spec = object["spec"].take();
    let status = object["status"].take();
    let mut v2_spec = copied(&spec, SPEC_FIELDS);
    let mut metrics = Vec::new();
    if let Some(target) = spec.get("targetCPUUtilizationPercentage") {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": target}}}));
    }
    if let Some(Value::Array(others)) = unstash(object, METRICS) {
        metrics.extend(others);
    }
    if !metrics.is_empty() {
        v2_spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(behavior) = unstash(object, BEHAVIOR) {
        v2_spec.insert("behavior".into(), behavior);
    }
    object["spec"] = Value::Object(v2_spec);
    let current_others = unstash(object, CURRENT_METRICS);
    let conditions = unstash(object, CONDITIONS);
    if status.is_object() {
        let mut v2_status = copied(&status, STATUS_FIELDS);
        let mut current = Vec::new();
        if let Some(value) = status.get("currentCPUUtilizationPercentage") {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": value}}}));
        }
        if let Some(Value::Array(others)) = current_others {
            current.extend(others);
        }
        if !current.is_empty() {
            v2_status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(conditions) = conditions {
            v2_status.insert("conditions".into(), conditions);
        }
        object["status"] = Value::Object(v2_status);
    } else if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}
            },
            "status": {
                "currentReplicas": 3, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]
            }
        })
    }

    #[test]
    fn an_hpa_read_through_v1_says_what_v1_can_and_keeps_the_rest() {
        let mut object = v2();
        convert_body(
            &mut object,
            "autoscaling",
            "horizontalpodautoscalers",
            "v2",
            "v1",
        );
        assert_eq!(object["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(object["spec"]["minReplicas"], 2);
        assert!(object["spec"].get("metrics").is_none());
        assert_eq!(object["status"]["currentCPUUtilizationPercentage"], 40);
        let annotations = &object["metadata"]["annotations"];
        assert!(annotations[METRICS].as_str().unwrap().contains("memory"));
        assert!(
            annotations[BEHAVIOR]
                .as_str()
                .unwrap()
                .contains("scaleDown")
        );
        assert!(
            annotations[CONDITIONS]
                .as_str()
                .unwrap()
                .contains("AbleToScale")
        );
        // Back to v2 (as a write through v1 is stored): nothing lost, no annotations left.
        convert_body(
            &mut object,
            "autoscaling",
            "horizontalpodautoscalers",
            "v1",
            "v2",
        );
        let mut expected = v2();
        expected["status"]["currentMetrics"][0] = json!({"type": "Resource",
            "resource": {"name": "cpu", "current": {"averageUtilization": 40}}});
        assert_eq!(object["spec"], expected["spec"]);
        assert_eq!(object["status"], expected["status"]);
        assert!(object["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_v1_hpa_stored_as_v2() {
        let mut object = json!({
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 50}
        });
        convert_body(
            &mut object,
            "autoscaling",
            "horizontalpodautoscalers",
            "v1",
            "v2",
        );
        assert_eq!(
            object["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}])
        );
        assert!(object.get("status").is_none());
        // Other kinds are left alone.
        let mut other = json!({"spec": {"a": 1}});
        convert_body(&mut other, "apps", "deployments", "v1", "v2");
        assert_eq!(other, json!({"spec": {"a": 1}}));
    }
}
