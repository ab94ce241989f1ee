//! Rules of the SIG-Multicluster kinds that their CRDs cannot state, because they concern
//! metadata: a ClusterProfile's `multicluster.x-k8s.io/inventory-member-id` label, when present,
//! is not empty (cluster-inventory-api: "When set, the value MUST be non-empty"). As schema
//! validation ratchets, a value an update leaves as stored is not checked again.

use serde_json::Value;

use super::FieldError;

const GROUP: &str = "multicluster.x-k8s.io";
const INVENTORY_MEMBER_ID: &str = "multicluster.x-k8s.io/inventory-member-id";

/// The errors of `object` (a custom resource of `group`'s `kind`), `old` its stored state.
pub fn validate(group: &str, kind: &str, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if group != GROUP || kind != "ClusterProfile" {
        return Vec::new();
    }
    let member_id = |o: &Value| o["metadata"]["labels"].get(INVENTORY_MEMBER_ID).cloned();
    let value = member_id(object);
    if value.is_none() || old.is_some_and(|old| member_id(old) == value) {
        return Vec::new();
    }
    match value.as_ref().and_then(Value::as_str) {
        Some("") => vec![FieldError::invalid(
            format!("metadata.labels[{INVENTORY_MEMBER_ID}]"),
            "",
            "must not be empty: it names the member cluster the profile represents",
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn profile(labels: Value) -> Value {
        json!({"metadata": {"name": "east", "labels": labels}})
    }

    #[test]
    fn the_inventory_member_id_is_not_empty_when_set() {
        let empty = profile(json!({INVENTORY_MEMBER_ID: ""}));
        let errors = validate(GROUP, "ClusterProfile", &empty, None);
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                r#"metadata.labels[multicluster.x-k8s.io/inventory-member-id]: Invalid value: "": must not be empty: it names the member cluster the profile represents"#
            ]
        );
        assert!(validate(GROUP, "ClusterProfile", &profile(json!({})), None).is_empty());
        let set = profile(json!({INVENTORY_MEMBER_ID: "east"}));
        assert!(validate(GROUP, "ClusterProfile", &set, None).is_empty());
        // Another kind, or a value stored before and left as it is: not checked.
        assert!(validate(GROUP, "Work", &empty, None).is_empty());
        assert!(validate(GROUP, "ClusterProfile", &empty, Some(&empty)).is_empty());
        assert_eq!(
            validate(GROUP, "ClusterProfile", &empty, Some(&set)).len(),
            1
        );
    }
}
