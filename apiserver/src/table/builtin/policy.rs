//! The printer of `policy` PodDisruptionBudgets.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, int_at, name, name_cell};
use crate::table::Column;

pub(super) fn pod_disruption_budget_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Min Available",
            "string",
            "The minimum number of pods that must be available.",
        ),
        col(
            "Max Unavailable",
            "string",
            "The maximum number of pods that may be unavailable.",
        ),
        col(
            "Allowed Disruptions",
            "integer",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        age_col(),
    ]
}

pub(super) fn pod_disruption_budget(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    vec![
        name_cell(o),
        json!(int_or_string(&spec["minAvailable"])),
        json!(int_or_string(&spec["maxUnavailable"])),
        json!(int_at(&o["status"]["disruptionsAllowed"])),
        age_cell(o, now),
    ]
}

/// An `IntOrString` as text (`2`, `50%`); `N/A` when unset.
fn int_or_string(v: &Value) -> String {
    match v {
        Value::Null => "N/A".to_owned(),
        Value::String(s) => s.clone(),
        other => int_at(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn disruption_budgets() {
        let pdb = json!({"metadata": meta("web"), "spec": {"minAvailable": 2,
                "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2}});
        assert_eq!(
            headers(Printer::PodDisruptionBudget),
            [
                "NAME",
                "MIN AVAILABLE",
                "MAX UNAVAILABLE",
                "ALLOWED DISRUPTIONS",
                "AGE"
            ]
        );
        assert_eq!(
            cells(Printer::PodDisruptionBudget, pdb),
            [
                json!("web"),
                json!("2"),
                json!("N/A"),
                json!(1),
                json!("5m")
            ]
        );
        let percent = json!({"metadata": meta("db"), "spec": {"maxUnavailable": "25%"}});
        assert_eq!(
            cells(Printer::PodDisruptionBudget, percent)[1..4],
            [json!("N/A"), json!("25%"), json!(0)]
        );
    }
}
