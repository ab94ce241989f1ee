//! The APIService printer of kube-apiserver's aggregator.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, condition, name, name_cell, str_at};
use crate::table::Column;

pub(super) fn api_service_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Service",
            "string",
            "The reference to the service that hosts this API endpoint.",
        ),
        col("Available", "string", "Whether this service is available."),
        age_col(),
    ]
}

/// Where the API is served (`Local`, or the Service's `namespace/name`) and whether it is
/// available, with the reason when it is not.
pub(super) fn api_service(o: &Value, now: Timestamp) -> Vec<Value> {
    let service = &o["spec"]["service"];
    let service = if service.is_object() {
        format!(
            "{}/{}",
            str_at(&service["namespace"]),
            str_at(&service["name"])
        )
    } else {
        "Local".to_owned()
    };
    let available = match condition(&o["status"]["conditions"], "Available") {
        None => "Unknown".to_owned(),
        Some(c) => {
            let status = str_at(&c["status"]);
            match str_at(&c["reason"]) {
                _ if status == "True" => status.to_owned(),
                "" => status.to_owned(),
                reason => format!("{status} ({reason})"),
            }
        }
    };
    vec![
        name_cell(o),
        json!(service),
        json!(available),
        age_cell(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn api_services() {
        let local = json!({"metadata": meta("v1.apps"), "spec": {"group": "apps", "version": "v1",
                "groupPriorityMinimum": 17800, "versionPriority": 15},
            "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(
            headers(Printer::ApiService),
            ["NAME", "SERVICE", "AVAILABLE", "AGE"]
        );
        assert_eq!(
            cells(Printer::ApiService, local),
            [json!("v1.apps"), json!("Local"), json!("True"), json!("5m")]
        );
        let metrics = json!({"metadata": meta("v1beta1.metrics.k8s.io"), "spec": {
                "service": {"namespace": "kube-system", "name": "metrics-server"},
                "group": "metrics.k8s.io", "version": "v1beta1"},
            "status": {"conditions": [{"type": "Available", "status": "False",
                "reason": "MissingEndpoints"}]}});
        assert_eq!(
            cells(Printer::ApiService, metrics)[1..3],
            [
                json!("kube-system/metrics-server"),
                json!("False (MissingEndpoints)")
            ]
        );
        let new = json!({"metadata": meta("v1.example.com"), "spec": {}});
        assert_eq!(cells(Printer::ApiService, new)[2], json!("Unknown"));
    }
}
