//! Type checking on its own: which kinds a policy is checked against, what `object`, `params`
//! and `variables` are typed as, and the warnings in upstream's words.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;

/// The built-in kinds' real schemas, and one custom resource (`widgets.example.com`, whose
/// schema declares `metadata` as upstream publishes it: all of ObjectMeta).
struct Fake;

fn widget_schema() -> Value {
    json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string"}, "generateName": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "color": {"type": "string"}}}}})
}

impl Schemas for Fake {
    fn kind(&self, group: &str, version: &str, resource: &str) -> Option<String> {
        let kind = match (group, version, resource) {
            ("apps", "v1", "deployments") => "Deployment",
            ("apps", "v1", "daemonsets") => "DaemonSet",
            ("", "v1", "configmaps") => "ConfigMap",
            ("example.com", "v1", "widgets") => "Widget",
            _ => return None,
        };
        Some(kind.to_owned())
    }

    fn schema(&self, gvk: &Gvk) -> Option<Arc<Value>> {
        if gvk.group == "example.com" {
            return (gvk.kind == "Widget").then(|| Arc::new(widget_schema()));
        }
        crate::openapi::builtin_schema(&gvk.group, &gvk.version, &gvk.kind)
    }
}

fn policy(rules: Value, extra: Value) -> Value {
    let mut policy = json!({"metadata": {"name": "p", "generation": 2}, "spec": {
        "matchConstraints": {"resourceRules": rules}}});
    if let (Some(spec), Some(extra)) = (policy["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    policy
}

fn deployments() -> Value {
    json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
        "resources": ["deployments"]}])
}

fn validations(expressions: &[&str]) -> Value {
    json!({"validations": expressions.iter().map(|e| json!({"expression": e})).collect::<Vec<_>>()})
}

fn warnings(policy: &Value) -> Vec<(String, String)> {
    check(policy, &Fake)
        .into_iter()
        .map(|w| (w.field_ref, w.warning))
        .collect()
}

#[test]
fn a_misspelt_field_is_reported_for_the_kind_in_upstreams_words() {
    let policy = policy(
        deployments(),
        validations(&["object.spec.replicas > 1", "object.spec.replicsa > 1"]),
    );
    assert_eq!(
        warnings(&policy),
        [(
            "spec.validations[1].expression".to_owned(),
            "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'\n | object.spec.replicsa > 1\n | ...........^\n"
                .to_owned()
        )]
    );
}

#[test]
fn message_expressions_are_checked_and_sound_policies_have_no_warnings() {
    let sound = policy(
        deployments(),
        json!({"validations": [{"expression": "object.spec.replicas <= 5 && object.metadata.labels['app'] != ''",
            "messageExpression": "'too many: ' + string(object.spec.replicas)"},
            {"expression": "oldObject == null || oldObject.spec.template.spec.containers.all(c, c.image != '')"}]}),
    );
    assert_eq!(warnings(&sound), []);
    let wrong = policy(
        deployments(),
        json!({"validations": [{"expression": "true",
            "messageExpression": "'bad: ' + object.spec.selectr.matchLabels['x']"}]}),
    );
    let found = warnings(&wrong);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "spec.validations[0].messageExpression");
    assert!(
        found[0].1.starts_with(
            "apps/v1, Kind=Deployment: ERROR: <input>:1:22: undefined field 'selectr'"
        ),
        "{}",
        found[0].1
    );
}

#[test]
fn each_kind_named_is_checked_and_reported_in_order() {
    let rules = json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
        "resources": ["deployments", "daemonsets"]}]);
    let replicas = policy(rules.clone(), validations(&["object.spec.replicas > 0"]));
    let found = warnings(&replicas);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].1.starts_with(
            "apps/v1, Kind=DaemonSet: ERROR: <input>:1:12: undefined field 'replicas'"
        )
    );
    let both = policy(rules, validations(&["object.spec.nope"]));
    let found = warnings(&both);
    let expected = "apps/v1, Kind=DaemonSet: ERROR: <input>:1:12: undefined field 'nope'\n | object.spec.nope\n | ...........^\n\napps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'nope'\n | object.spec.nope\n | ...........^\n";
    assert_eq!(found[0].1, expected);
}

#[test]
fn wildcards_subresources_and_unknown_kinds_are_not_checked() {
    let expression = validations(&["object.spec.nope"]);
    for rules in [
        json!([{"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["deployments"]}]),
        json!([{"apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["deployments"]}]),
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*", "deployments/scale"]}]),
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["statefulsets"]}]),
        json!([{"apiGroups": ["example.com"], "apiVersions": ["v2"], "resources": ["widgets"]}]),
    ] {
        assert_eq!(
            warnings(&policy(rules.clone(), expression.clone())),
            [],
            "{rules}"
        );
    }
    // A wildcard resource beside an exact one leaves the exact one checked.
    let mixed =
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*", "deployments"]}]);
    assert_eq!(warnings(&policy(mixed, expression)).len(), 1);
}

#[test]
fn custom_resources_are_checked_against_their_schema() {
    let rules = json!([{"apiGroups": ["example.com"], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["widgets"]}]);
    let sound = policy(
        rules.clone(),
        validations(&["object.spec.size < 10 && object.metadata.labels['x'] == 'y'"]),
    );
    assert_eq!(warnings(&sound), []);
    let wrong = policy(rules, validations(&["object.spec.colour == 'red'"]));
    let found = warnings(&wrong);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].1.starts_with(
            "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'colour'"
        ),
        "{}",
        found[0].1
    );
}

#[test]
fn params_are_typed_from_the_param_kind_and_undeclared_without_one() {
    let with_params = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{"expression": "object.spec.replicas <= int(params.data['max'])"},
            {"expression": "params.dta == null"}]});
    let found = warnings(&policy(deployments(), with_params));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "spec.validations[1].expression");
    assert!(
        found[0].1.contains("undefined field 'dta'"),
        "{}",
        found[0].1
    );

    // A param kind without a schema is dynamic.
    let unknown = json!({"paramKind": {"apiVersion": "example.com/v1", "kind": "Limits"},
        "validations": [{"expression": "params.anything.goes"}]});
    assert_eq!(warnings(&policy(deployments(), unknown)), []);

    // Without a paramKind there are no params.
    let without = validations(&["params == null"]);
    let found = warnings(&policy(deployments(), without));
    assert!(
        found[0].1.contains("undeclared reference to 'params'"),
        "{}",
        found[0].1
    );
}

#[test]
fn variables_have_their_expressions_types() {
    let spec = json!({"variables": [
            {"name": "replicas", "expression": "object.spec.replicas"},
            {"name": "broken", "expression": "object.spec.nope"}],
        "validations": [
            {"expression": "variables.replicas <= 5"},
            {"expression": "variables.replicas == 'three'"},
            {"expression": "variables.broken.anything"},
            {"expression": "variables.missing"}]});
    let found = warnings(&policy(deployments(), spec));
    let fields: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
    // The broken variable is dynamic, and reported nowhere (upstream reports validations only).
    assert_eq!(
        fields,
        [
            "spec.validations[1].expression",
            "spec.validations[3].expression"
        ]
    );
    assert!(
        found[0].1.contains("no matching overload"),
        "{}",
        found[0].1
    );
    assert!(
        found[1].1.contains("undefined field 'missing'"),
        "{}",
        found[1].1
    );
}

#[test]
fn the_status_has_the_generation_and_the_warnings_and_keeps_the_rest() {
    let mut object = policy(deployments(), validations(&["object.spec.nope"]));
    object["status"] = json!({"conditions": [{"type": "X", "status": "True"}]});
    let found = check(&object, &Fake);
    let status = status(&object, &found);
    assert_eq!(status["observedGeneration"], 2);
    assert_eq!(status["conditions"][0]["type"], "X");
    assert_eq!(
        status["typeChecking"]["expressionWarnings"][0]["fieldRef"],
        "spec.validations[0].expression"
    );
    let clean = super::status(&object, &[]);
    assert_eq!(clean["typeChecking"], json!({}));
}
