//! Printers of `resource.k8s.io` (dynamic resource allocation). DeviceClasses and
//! ResourceClaimTemplates print only NAME and AGE (in `builtin`).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, deleting, items, name, name_cell, str_at};
use crate::table::Column;

pub(super) fn resource_claim_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "State",
            "string",
            "A summary of the current state (allocated, pending, reserved, etc.).",
        ),
        age_col(),
    ]
}

/// A claim's state: `pending` until allocated, then `allocated` and `reserved` while a pod
/// holds it; `deleted` first once deleted.
pub(super) fn resource_claim(o: &Value, now: Timestamp) -> Vec<Value> {
    let status = &o["status"];
    let mut states = Vec::new();
    if deleting(o) {
        states.push("deleted");
    }
    if status["allocation"].is_null() {
        if !deleting(o) {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !items(&status["reservedFor"]).is_empty() {
            states.push("reserved");
        }
    }
    vec![name_cell(o), json!(states.join(",")), age_cell(o, now)]
}

pub(super) fn resource_slice_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Node",
            "string",
            "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.",
        ),
        col(
            "Driver",
            "string",
            "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.",
        ),
        col(
            "Pool",
            "string",
            "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.",
        ),
        age_col(),
    ]
}

/// A slice; upstream's Node cell is the optional `nodeName` itself, null for slices that are
/// not a single node's (kubectl shows `<none>`).
pub(super) fn resource_slice(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let node = match &spec["nodeName"] {
        Value::String(node) => json!(node),
        _ => Value::Null,
    };
    vec![
        name_cell(o),
        node,
        json!(str_at(&spec["driver"])),
        json!(str_at(&spec["pool"]["name"])),
        age_cell(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::{Value, json};

    #[test]
    fn resource_claims() {
        let reserved = json!({"metadata": meta("gpu"), "spec": {"devices": {"requests": []}},
            "status": {"allocation": {"devices": {"results": []}},
                "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "u"}]}});
        assert_eq!(headers(Printer::ResourceClaim), ["NAME", "STATE", "AGE"]);
        assert_eq!(
            cells(Printer::ResourceClaim, reserved),
            [json!("gpu"), json!("allocated,reserved"), json!("5m")]
        );
        let pending = json!({"metadata": meta("p"), "spec": {}});
        assert_eq!(
            cells(Printer::ResourceClaim, pending.clone())[1],
            json!("pending")
        );
        let mut deleted = pending;
        deleted["metadata"]["deletionTimestamp"] = json!("2025-03-01T11:59:00Z");
        assert_eq!(cells(Printer::ResourceClaim, deleted)[1], json!("deleted"));
        let mut releasing = json!({"metadata": meta("r"), "status": {"allocation": {}}});
        releasing["metadata"]["deletionTimestamp"] = json!("2025-03-01T11:59:00Z");
        assert_eq!(
            cells(Printer::ResourceClaim, releasing)[1],
            json!("deleted,allocated")
        );
    }

    #[test]
    fn resource_slices() {
        let slice = json!({"metadata": meta("node-1-gpu.example.com-x7k2"), "spec": {
            "driver": "gpu.example.com", "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}]}});
        assert_eq!(
            headers(Printer::ResourceSlice),
            ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
        );
        assert_eq!(
            cells(Printer::ResourceSlice, slice),
            [
                json!("node-1-gpu.example.com-x7k2"),
                json!("node-1"),
                json!("gpu.example.com"),
                json!("node-1"),
                json!("5m")
            ]
        );
        let network = json!({"metadata": meta("net"), "spec": {"driver": "net.example.com",
            "allNodes": true, "pool": {"name": "fabric"}}});
        assert_eq!(cells(Printer::ResourceSlice, network)[1], Value::Null);
    }
}
