//! The HorizontalPodAutoscaler printer. kube-apiserver prints the internal object, so an
//! `autoscaling/v1` one prints as its `v2` self: its metrics back from the annotations `v1`
//! keeps them in (and CPU at 80% when it has none, as upstream's conversion defaults it).

use std::borrow::Cow;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::quantity::quantity_ptr;
use super::{age_cell, age_col, col, int_at, int_or, items, name, name_cell, str_at};
use crate::registry::conversion::convert_body;
use crate::table::Column;

/// At most this many metrics show in the Targets column.
const MAX_METRICS: usize = 2;

pub(super) fn horizontal_pod_autoscaler_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Reference",
            "string",
            "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
        ),
        col(
            "Targets",
            "string",
            "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.",
        ),
        col(
            "MinPods",
            "string",
            "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.",
        ),
        col(
            "MaxPods",
            "string",
            "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
        ),
        col(
            "Replicas",
            "string",
            "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
        ),
        age_col(),
    ]
}

pub(super) fn horizontal_pod_autoscaler(o: &Value, now: Timestamp) -> Vec<Value> {
    let o = as_v2(o);
    let spec = &o["spec"];
    let target = &spec["scaleTargetRef"];
    vec![
        name_cell(&o),
        json!(format!(
            "{}/{}",
            str_at(&target["kind"]),
            str_at(&target["name"])
        )),
        json!(targets(
            items(&spec["metrics"]),
            items(&o["status"]["currentMetrics"])
        )),
        // minReplicas defaults to 1.
        json!(int_or(&spec["minReplicas"], 1).to_string()),
        json!(int_at(&spec["maxReplicas"])),
        json!(int_at(&o["status"]["currentReplicas"])),
        age_cell(&o, now),
    ]
}

/// The object in `autoscaling/v2`'s shape: a `v1` one converted back.
fn as_v2(o: &Value) -> Cow<'_, Value> {
    let v1 = match o["apiVersion"].as_str() {
        Some(api_version) => api_version == "autoscaling/v1",
        None => o["spec"].get("metrics").is_none(),
    };
    if !v1 {
        return Cow::Borrowed(o);
    }
    let mut v2 = o.clone();
    convert_body(
        &mut v2,
        "autoscaling",
        "horizontalpodautoscalers",
        "v1",
        "v2",
    );
    if items(&v2["spec"]["metrics"]).is_empty() && v2["spec"].is_object() {
        v2["spec"]["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]);
    }
    Cow::Owned(v2)
}

/// Upstream's `formatHPAMetrics`: `current/target` of each metric, the status read at the same
/// index as the spec; the first two, then how many more.
fn targets(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let mut list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| metric(spec, statuses.get(i).unwrap_or(&Value::Null)))
        .collect();
    let count = list.len();
    list.truncate(MAX_METRICS);
    let text = list.join(", ");
    if count > MAX_METRICS {
        format!("{text} + {} more...", count - MAX_METRICS)
    } else {
        text
    }
}

/// One metric's `current/target`. `<unknown>` stands for a current value not reported yet; a
/// value reported without its field prints Go's `<nil>`, as upstream's does.
fn metric(spec: &Value, status: &Value) -> String {
    const UNKNOWN: &str = "<unknown>";
    match str_at(&spec["type"]) {
        "External" | "Object" => {
            let field = if spec["type"] == "External" {
                "external"
            } else {
                "object"
            };
            let target = &spec[field]["target"];
            let current = &status[field];
            if target["averageValue"].is_null() {
                let current = if current.is_null() {
                    UNKNOWN.to_owned()
                } else {
                    quantity_ptr(&current["current"]["value"])
                };
                format!("{current}/{}", quantity_ptr(&target["value"]))
            } else {
                let average = &current["current"]["averageValue"];
                let current = if average.is_null() {
                    UNKNOWN.to_owned()
                } else {
                    quantity_ptr(average)
                };
                format!("{current}/{} (avg)", quantity_ptr(&target["averageValue"]))
            }
        }
        "Pods" => {
            let current = &status["pods"];
            let current = if current.is_null() {
                UNKNOWN.to_owned()
            } else {
                quantity_ptr(&current["current"]["averageValue"])
            };
            format!(
                "{current}/{}",
                quantity_ptr(&spec["pods"]["target"]["averageValue"])
            )
        }
        "Resource" | "ContainerResource" => {
            let field = if spec["type"] == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let source = &spec[field];
            let target = &source["target"];
            let current = &status[field];
            let (current, target) = if target["averageValue"].is_null() {
                let utilization = &current["current"]["averageUtilization"];
                let current = if current.is_null() || utilization.is_null() {
                    UNKNOWN.to_owned()
                } else {
                    format!("{}%", int_at(utilization))
                };
                let target = match &target["averageUtilization"] {
                    Value::Null => "<auto>".to_owned(),
                    utilization => format!("{}%", int_at(utilization)),
                };
                (current, target)
            } else {
                let current = if current.is_null() {
                    UNKNOWN.to_owned()
                } else {
                    quantity_ptr(&current["current"]["averageValue"])
                };
                (current, quantity_ptr(&target["averageValue"]))
            };
            format!("{}: {current}/{target}", str_at(&source["name"]))
        }
        _ => "<unknown type>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::{Value, json};

    fn cpu(utilization: i64) -> Value {
        json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization}}})
    }

    fn memory(average: &str) -> Value {
        json!({"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": average}}})
    }

    fn hpa(metrics: Value, current: Value) -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": meta("web"),
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10, "metrics": metrics},
            "status": {"currentReplicas": 3, "desiredReplicas": 3, "currentMetrics": current}})
    }

    #[test]
    fn targets_current_over_target() {
        assert_eq!(
            headers(Printer::HorizontalPodAutoscaler),
            [
                "NAME",
                "REFERENCE",
                "TARGETS",
                "MINPODS",
                "MAXPODS",
                "REPLICAS",
                "AGE"
            ]
        );
        let web = hpa(
            json!([cpu(60), memory("500Mi")]),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": 40, "averageValue": "120m"}}}]),
        );
        assert_eq!(
            cells(Printer::HorizontalPodAutoscaler, web),
            [
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: 40%/60%, memory: <unknown>/500Mi"),
                json!("2"),
                json!(10),
                json!(3),
                json!("5m")
            ]
        );

        let many = hpa(
            json!([
                memory("524288Ki"),
                {"type": "Pods", "pods": {"metric": {"name": "qps"},
                    "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "External", "external": {"metric": {"name": "queue"},
                    "target": {"type": "Value", "value": "30"}}}
            ]),
            json!([
                {"type": "Resource", "resource": {"name": "memory",
                    "current": {"averageValue": "262144Ki"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"},
                    "current": {"averageValue": "1500m"}}}
            ]),
        );
        assert_eq!(
            cells(Printer::HorizontalPodAutoscaler, many)[2],
            json!("memory: 256Mi/512Mi, 1500m/1k + 1 more...")
        );

        let others = hpa(
            json!([
                {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "main"},
                    "metric": {"name": "rps"}, "target": {"type": "Value", "value": "10"}}},
                {"type": "ContainerResource", "containerResource": {"name": "cpu",
                    "container": "app", "target": {"type": "Utilization"}}}
            ]),
            json!([{"type": "Object", "object": {"current": {"averageValue": "7"}}}]),
        );
        // A status without the value it is asked for prints Go's `<nil>`.
        assert_eq!(
            cells(Printer::HorizontalPodAutoscaler, others)[2],
            json!("<nil>/10, cpu: <unknown>/<auto>")
        );
        let averaged = hpa(
            json!([{"type": "External", "external": {"metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "30"}}}]),
            json!([{"type": "External", "external": {"current": {"value": "90"}}}]),
        );
        assert_eq!(
            cells(Printer::HorizontalPodAutoscaler, averaged)[2],
            json!("<unknown>/30 (avg)")
        );
        let none = hpa(json!([]), json!([]));
        assert_eq!(
            cells(Printer::HorizontalPodAutoscaler, none)[2],
            json!("<none>")
        );
    }

    #[test]
    fn v1_objects_print_as_their_v2_selves() {
        // What `autoscaling/v1` shows of the stored `v2` object above.
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default",
                "creationTimestamp": "2025-03-01T11:55:00Z",
                "annotations": {"autoscaling.alpha.kubernetes.io/metrics":
                    "[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"target\":{\"type\":\"AverageValue\",\"averageValue\":\"500Mi\"}}}]"}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 60},
            "status": {"currentReplicas": 3, "desiredReplicas": 3,
                "currentCPUUtilizationPercentage": 40}});
        assert_eq!(
            cells(Printer::HorizontalPodAutoscaler, v1),
            [
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: 40%/60%, memory: <unknown>/500Mi"),
                json!("2"),
                json!(10),
                json!(3),
                json!("5m")
            ]
        );
        // Without a target, v1's implicit 80% CPU.
        let bare = json!({"apiVersion": "autoscaling/v1", "metadata": meta("bare"),
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "api"}, "maxReplicas": 4}});
        assert_eq!(
            cells(Printer::HorizontalPodAutoscaler, bare)[2..6],
            [json!("cpu: <unknown>/80%"), json!("1"), json!(4), json!(0)]
        );
    }
}
