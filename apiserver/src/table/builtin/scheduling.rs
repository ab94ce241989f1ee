//! The printer of `scheduling.k8s.io` PriorityClasses.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, bool_or, col, int_at, name, name_cell};
use crate::table::Column;

pub(super) fn priority_class_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Value",
            "integer",
            "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
        ),
        col(
            "Global-Default",
            "boolean",
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
        ),
        age_col(),
        // Upstream fills it only when printing wide, which the server always does, yet gives
        // it priority 0: kubectl shows it by default.
        col(
            "PreemptionPolicy",
            "string",
            "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        ),
    ]
}

pub(super) fn priority_class(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name_cell(o),
        json!(int_at(&o["value"])),
        json!(bool_or(&o["globalDefault"], false)),
        age_cell(o, now),
        json!(
            o["preemptionPolicy"]
                .as_str()
                .unwrap_or("PreemptLowerPriority")
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn priority_classes() {
        let critical = json!({"metadata": meta("system-cluster-critical"), "value": 2000000000,
            "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority"});
        assert_eq!(
            headers(Printer::PriorityClass),
            ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
        );
        assert_eq!(
            cells(Printer::PriorityClass, critical),
            [
                json!("system-cluster-critical"),
                json!(2000000000),
                json!(false),
                json!("5m"),
                json!("PreemptLowerPriority")
            ]
        );
        let batch = json!({"metadata": meta("batch"), "value": -10, "globalDefault": true,
            "preemptionPolicy": "Never"});
        assert_eq!(
            cells(Printer::PriorityClass, batch)[1..],
            [json!(-10), json!(true), json!("5m"), json!("Never")]
        );
        let bare = json!({"metadata": meta("bare"), "value": 5});
        assert_eq!(
            cells(Printer::PriorityClass, bare)[2..],
            [json!(false), json!("5m"), json!("PreemptLowerPriority")]
        );
    }
}
