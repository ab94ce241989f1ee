//! The printer of `coordination.k8s.io` Leases.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, name, name_cell, str_at};
use crate::table::Column;

pub(super) fn lease_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Holder",
            "string",
            "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        ),
        age_col(),
    ]
}

pub(super) fn lease(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name_cell(o),
        json!(str_at(&o["spec"]["holderIdentity"])),
        age_cell(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, meta};
    use serde_json::json;

    #[test]
    fn leases() {
        let lease = json!({"metadata": meta("l"), "spec": {"holderIdentity": "hub-1"}});
        assert_eq!(cells(Printer::Lease, lease)[1], json!("hub-1"));
    }
}
