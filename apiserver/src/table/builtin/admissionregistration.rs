//! Printers of `admissionregistration.k8s.io`: webhook configurations, and validating admission
//! policies and their bindings.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, items, len, name, name_cell, str_at};
use crate::table::Column;

const PARAM_KIND_DOC: &str =
    "ParamKind specifies the kind of resources used to parameterize this policy";

pub(super) fn webhook_configuration_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Webhooks",
            "integer",
            "Webhooks indicates the number of webhooks registered in this configuration",
        ),
        age_col(),
    ]
}

pub(super) fn webhook_configuration(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![name_cell(o), json!(len(&o["webhooks"])), age_cell(o, now)]
}

pub(super) fn validating_admission_policy_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Validations",
            "integer",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        col("ParamKind", "string", PARAM_KIND_DOC),
        age_col(),
    ]
}

pub(super) fn validating_admission_policy(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let param_kind = &spec["paramKind"];
    let param_kind = if param_kind.is_object() {
        format!(
            "{}/{}",
            str_at(&param_kind["apiVersion"]),
            str_at(&param_kind["kind"])
        )
    } else {
        "<unset>".to_owned()
    };
    vec![
        name_cell(o),
        json!(len(&spec["validations"])),
        json!(param_kind),
        age_cell(o, now),
    ]
}

pub(super) fn validating_admission_policy_binding_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "PolicyName",
            "string",
            "PolicyName indicates the policy definition which the policy binding binded to",
        ),
        col(
            "ParamRef",
            "string",
            "ParamRef indicates the param resource which sets the configration param",
        ),
        age_col(),
    ]
}

/// A binding: its policy and its parameters, by name (`namespace/name`, or `*/name` when the
/// namespace is left to the request) or by selector.
pub(super) fn validating_admission_policy_binding(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let param = &spec["paramRef"];
    let param = if !param.is_object() {
        "<unset>".to_owned()
    } else {
        match (str_at(&param["name"]), str_at(&param["namespace"])) {
            ("", _) if param["selector"].is_object() => go_label_selector(&param["selector"]),
            ("", _) => "<unset>".to_owned(),
            (name, "") => format!("*/{name}"),
            (name, namespace) => format!("{namespace}/{name}"),
        }
    };
    vec![
        name_cell(o),
        json!(str_at(&spec["policyName"])),
        json!(param),
        age_cell(o, now),
    ]
}

/// A `LabelSelector` as Go's generated `String()` writes it, which is what upstream prints:
/// `&LabelSelector{MatchLabels:map[string]string{env: prod,},MatchExpressions:[]LabelSelectorRequirement{},}`.
fn go_label_selector(selector: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = selector["matchLabels"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k, str_at(v))).collect())
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = items(&selector["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = items(&e["values"]).iter().map(str_at).collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                str_at(&e["key"]),
                str_at(&e["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn webhook_configurations() {
        let config = json!({"metadata": meta("policy-agent"), "webhooks": [
            {"name": "a.example.com"}, {"name": "b.example.com"}]});
        assert_eq!(
            headers(Printer::WebhookConfiguration),
            ["NAME", "WEBHOOKS", "AGE"]
        );
        assert_eq!(
            cells(Printer::WebhookConfiguration, config),
            [json!("policy-agent"), json!(2), json!("5m")]
        );
        let empty = json!({"metadata": meta("empty")});
        assert_eq!(cells(Printer::WebhookConfiguration, empty)[1], json!(0));
    }

    #[test]
    fn admission_policies() {
        let policy = json!({"metadata": meta("replica-limit"), "spec": {
            "paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
            "validations": [{"expression": "object.spec.replicas <= params.maxReplicas"}]}});
        assert_eq!(
            headers(Printer::ValidatingAdmissionPolicy),
            ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
        );
        assert_eq!(
            cells(Printer::ValidatingAdmissionPolicy, policy),
            [
                json!("replica-limit"),
                json!(1),
                json!("rules.example.com/v1/ReplicaLimit"),
                json!("5m")
            ]
        );
        let plain = json!({"metadata": meta("p"), "spec": {"validations": []}});
        assert_eq!(
            cells(Printer::ValidatingAdmissionPolicy, plain)[1..3],
            [json!(0), json!("<unset>")]
        );
    }

    #[test]
    fn admission_policy_bindings() {
        let binding = |param_ref| {
            json!({"metadata": meta("replica-limit-test"), "spec": {
                "policyName": "replica-limit", "validationActions": ["Deny"],
                "paramRef": param_ref}})
        };
        assert_eq!(
            headers(Printer::ValidatingAdmissionPolicyBinding),
            ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
        );
        assert_eq!(
            cells(
                Printer::ValidatingAdmissionPolicyBinding,
                binding(json!({"name": "limit-test", "namespace": "default"}))
            ),
            [
                json!("replica-limit-test"),
                json!("replica-limit"),
                json!("default/limit-test"),
                json!("5m")
            ]
        );
        assert_eq!(
            cells(
                Printer::ValidatingAdmissionPolicyBinding,
                binding(json!({"name": "limit-test"}))
            )[2],
            json!("*/limit-test")
        );
        assert_eq!(
            cells(
                Printer::ValidatingAdmissionPolicyBinding,
                binding(
                    json!({"selector": {"matchLabels": {"tier": "b", "env": "test"},
                    "matchExpressions": [{"key": "zone", "operator": "In",
                        "values": ["a", "b"]}]}})
                )
            )[2],
            json!(
                "&LabelSelector{MatchLabels:map[string]string{env: test,tier: b,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:zone,Operator:In,Values:[a b],},},}"
            )
        );
        assert_eq!(
            cells(
                Printer::ValidatingAdmissionPolicyBinding,
                binding(serde_json::Value::Null)
            )[2],
            json!("<unset>")
        );
    }
}
