//! The printer of `node.k8s.io` RuntimeClasses.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, name, name_cell, str_at};
use crate::table::Column;

pub(super) fn runtime_class_columns() -> Vec<Column> {
    vec![
        name(),
        // Upstream describes it with `ObjectMeta`'s doc of a `handler` field, which has none.
        col("Handler", "string", ""),
        age_col(),
    ]
}

pub(super) fn runtime_class(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![name_cell(o), json!(str_at(&o["handler"])), age_cell(o, now)]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn runtime_classes() {
        let gvisor = json!({"metadata": meta("gvisor"), "handler": "runsc"});
        assert_eq!(headers(Printer::RuntimeClass), ["NAME", "HANDLER", "AGE"]);
        assert_eq!(Printer::RuntimeClass.columns()[1].description, "");
        assert_eq!(
            cells(Printer::RuntimeClass, gvisor),
            [json!("gvisor"), json!("runsc"), json!("5m")]
        );
    }
}
