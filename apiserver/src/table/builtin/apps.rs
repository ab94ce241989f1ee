//! Printers of `apps`: the workload controllers and their ControllerRevisions.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::labels::{format_label_selector, format_labels, selector_string};
use super::{
    CONTAINERS_DOC, IMAGES_DOC, age_cell, age_col, col, containers, int_at, items, name, name_cell,
    replicas, str_at, wide,
};
use crate::table::Column;

pub(super) fn controller_revision_columns() -> Vec<Column> {
    vec![
        name(),
        col("Controller", "string", "Controller of the object"),
        col(
            "Revision",
            "string",
            "revision indicates the revision of the state represented by Data.",
        ),
        age_col(),
    ]
}

/// The revision and the controller that owns it, as `statefulset.apps/web`.
pub(super) fn controller_revision(o: &Value, now: Timestamp) -> Vec<Value> {
    let controller = items(&o["metadata"]["ownerReferences"])
        .iter()
        .find(|r| r["controller"] == true)
        .map_or_else(
            || "<none>".to_owned(),
            |r| {
                let api_version = str_at(&r["apiVersion"]);
                let group = api_version.split_once('/').map_or("", |(group, _)| group);
                let kind = str_at(&r["kind"]);
                let name = str_at(&r["name"]);
                match (kind, group) {
                    ("", "") => name.to_owned(),
                    (kind, "") => format!("{}/{name}", kind.to_lowercase()),
                    (kind, group) => {
                        format!("{}.{}/{name}", kind.to_lowercase(), group.to_lowercase())
                    }
                }
            },
        );
    vec![
        name_cell(o),
        json!(controller),
        json!(int_at(&o["revision"])),
        age_cell(o, now),
    ]
}

pub(super) fn deployment_columns() -> Vec<Column> {
    vec![
        name(),
        col("Ready", "string", "Number of the pod with ready state"),
        col(
            "Up-to-date",
            "string",
            "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
        ),
        col(
            "Available",
            "string",
            "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        age_col(),
        wide("Containers", "string", CONTAINERS_DOC),
        wide("Images", "string", IMAGES_DOC),
        wide(
            "Selector",
            "string",
            "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
        ),
    ]
}

pub(super) fn replica_set_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Desired",
            "integer",
            "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        ),
        col(
            "Current",
            "integer",
            "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        ),
        col(
            "Ready",
            "integer",
            "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
        ),
        age_col(),
        wide("Containers", "string", CONTAINERS_DOC),
        wide("Images", "string", IMAGES_DOC),
        wide(
            "Selector",
            "string",
            "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ]
}

pub(super) fn stateful_set_columns() -> Vec<Column> {
    vec![
        name(),
        col("Ready", "string", "Number of the pod with ready state"),
        age_col(),
        wide("Containers", "string", CONTAINERS_DOC),
        wide("Images", "string", IMAGES_DOC),
    ]
}

pub(super) fn daemon_set_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Desired",
            "integer",
            "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        ),
        col(
            "Current",
            "integer",
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
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
            "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
        ),
        age_col(),
        wide("Containers", "string", CONTAINERS_DOC),
        wide("Images", "string", IMAGES_DOC),
        wide(
            "Selector",
            "string",
            "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ]
}

pub(super) fn deployment(o: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name_cell(o),
        json!(format!(
            "{}/{}",
            int_at(&o["status"]["readyReplicas"]),
            replicas(o)
        )),
        json!(int_at(&o["status"]["updatedReplicas"])),
        json!(int_at(&o["status"]["availableReplicas"])),
        age_cell(o, now),
        json!(names),
        json!(images),
        json!(selector_string(&o["spec"]["selector"]).unwrap_or_else(|| "<invalid>".to_owned())),
    ]
}

pub(super) fn replica_set(o: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name_cell(o),
        json!(replicas(o)),
        json!(int_at(&o["status"]["replicas"])),
        json!(int_at(&o["status"]["readyReplicas"])),
        age_cell(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&o["spec"]["selector"])),
    ]
}

pub(super) fn stateful_set(o: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name_cell(o),
        json!(format!(
            "{}/{}",
            int_at(&o["status"]["readyReplicas"]),
            replicas(o)
        )),
        age_cell(o, now),
        json!(names),
        json!(images),
    ]
}

pub(super) fn daemon_set(o: &Value, now: Timestamp) -> Vec<Value> {
    let status = &o["status"];
    let (names, images) = containers(&o["spec"]["template"]);
    vec![
        name_cell(o),
        json!(int_at(&status["desiredNumberScheduled"])),
        json!(int_at(&status["currentNumberScheduled"])),
        json!(int_at(&status["numberReady"])),
        json!(int_at(&status["updatedNumberScheduled"])),
        json!(int_at(&status["numberAvailable"])),
        json!(format_labels(
            &o["spec"]["template"]["spec"]["nodeSelector"]
        )),
        age_cell(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&o["spec"]["selector"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

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
    fn controller_revisions() {
        let mut revision = json!({"metadata": meta("web-6d4cf56db6"), "revision": 3,
            "data": {"spec": {}}});
        revision["metadata"]["ownerReferences"] = json!([
            {"apiVersion": "v1", "kind": "Pod", "name": "other"},
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]);
        assert_eq!(
            headers(Printer::ControllerRevision),
            ["NAME", "CONTROLLER", "REVISION", "AGE"]
        );
        assert_eq!(
            cells(Printer::ControllerRevision, revision),
            [
                json!("web-6d4cf56db6"),
                json!("statefulset.apps/web"),
                json!(3),
                json!("5m")
            ]
        );
        let orphan = json!({"metadata": meta("o"), "revision": 1});
        assert_eq!(
            cells(Printer::ControllerRevision, orphan)[1],
            json!("<none>")
        );
        let mut core = json!({"metadata": meta("c"), "revision": 1});
        core["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Pod", "name": "p", "controller": true}]);
        assert_eq!(cells(Printer::ControllerRevision, core)[1], json!("pod/p"));
    }
}
