use serde_json::{Value, json};

use super::*;

fn widget_schema(spec_rules: Value, spec_properties: Value) -> Value {
    json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": spec_properties,
                 "x-kubernetes-validations": spec_rules}}})
}

fn errors_of(schema: &Value, object: &Value, old: Option<&Value>) -> (Vec<String>, Vec<String>) {
    let validator = compile(schema).expect("the schema has rules");
    let mut warnings = Vec::new();
    let errors = validator
        .validate(object, old, &mut warnings)
        .iter()
        .map(ToString::to_string)
        .collect();
    (errors, warnings)
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

fn replicas_schema(rules: Value) -> Value {
    widget_schema(
        rules,
        json!({"replicas": {"type": "integer"}, "max": {"type": "integer"}, "mode": {"type": "string"}}),
    )
}

#[test]
fn a_failing_rule_names_the_node_its_type_and_the_message() {
    let schema = replicas_schema(json!([
        {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"}
    ]));
    let (errors, _) = errors_of(&schema, &widget(json!({"replicas": 5, "max": 3})), None);
    assert_eq!(
        errors,
        [r#"spec: Invalid value: "object": replicas must not exceed max"#]
    );
    let (errors, _) = errors_of(&schema, &widget(json!({"replicas": 2, "max": 3})), None);
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn without_a_message_the_rule_is_quoted_and_the_root_is_nil() {
    let schema = json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('w-')"}],
        "properties": {"metadata": {"type": "object"}}});
    let (errors, _) = errors_of(&schema, &widget(json!({})), None);
    assert_eq!(
        errors,
        [r#"<nil>: Invalid value: "object": failed rule: self.metadata.name.startsWith('w-')"#]
    );
}

#[test]
fn message_expressions_reasons_and_field_paths_shape_the_error() {
    let schema = replicas_schema(json!([
        {"rule": "self.replicas <= self.max",
         "messageExpression": "'replicas ' + string(self.replicas) + ' is over ' + string(self.max)",
         "fieldPath": ".replicas"},
        {"rule": "self.mode != 'legacy'", "message": "legacy is gone", "reason": "FieldValueForbidden",
         "fieldPath": ".mode"},
        {"rule": "has(self.mode)", "message": "mode is required", "reason": "FieldValueRequired"},
        {"rule": "self.max > 0", "message": "static", "messageExpression": "self.nope.size() > 0 ? 'x' : 'y'"}
    ]));
    let (errors, _) = errors_of(
        &schema,
        &widget(json!({"replicas": 5, "max": 3, "mode": "legacy"})),
        None,
    );
    assert_eq!(
        errors,
        [
            r#"spec.replicas: Invalid value: "object": replicas 5 is over 3"#,
            "spec.mode: Forbidden: legacy is gone",
        ]
    );
    let (errors, _) = errors_of(&schema, &widget(json!({"replicas": 0, "max": 0})), None);
    assert_eq!(
        errors,
        [
            // A rule reading an absent field fails, naming the missing key.
            r#"spec: Invalid value: "object": no such key: mode evaluating rule: legacy is gone"#,
            "spec: Required value: mode is required",
            // The message expression fails at run time: the static message is used.
            r#"spec: Invalid value: "object": static"#,
        ]
    );
}

#[test]
fn transition_rules_run_on_updates_only_and_protect_immutable_fields() {
    let schema = widget_schema(
        json!([]),
        json!({"mode": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "mode is immutable"}]}}),
    );
    let created = widget(json!({"mode": "a"}));
    assert!(errors_of(&schema, &created, None).0.is_empty());
    let (errors, _) = errors_of(&schema, &widget(json!({"mode": "b"})), Some(&created));
    assert_eq!(
        errors,
        [r#"spec.mode: Invalid value: "string": mode is immutable"#]
    );
    assert!(errors_of(&schema, &created, Some(&created)).0.is_empty());
}

#[test]
fn optional_old_self_runs_on_create_with_no_old_value() {
    let schema = widget_schema(
        json!([]),
        json!({"mode": {"type": "string", "x-kubernetes-validations": [{
            "rule": "oldSelf.hasValue() || self == 'initial'", "optionalOldSelf": true,
            "message": "must start as initial"}]}}),
    );
    let (errors, _) = errors_of(&schema, &widget(json!({"mode": "other"})), None);
    assert_eq!(
        errors,
        [r#"spec.mode: Invalid value: "string": must start as initial"#]
    );
    let old = widget(json!({"mode": "initial"}));
    assert!(
        errors_of(&schema, &widget(json!({"mode": "other"})), Some(&old))
            .0
            .is_empty()
    );
}

#[test]
fn an_unchanged_invalid_value_ratchets_to_a_warning() {
    let schema = widget_schema(
        json!([]),
        json!({"name": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.lowerAscii() == self", "message": "must be lowercase"}]},
               "size": {"type": "integer"}}),
    );
    let old = widget(json!({"name": "UPPER", "size": 1}));
    let (errors, warnings) = errors_of(
        &schema,
        &widget(json!({"name": "UPPER", "size": 2})),
        Some(&old),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        warnings,
        [r#"spec.name: Invalid value: "string": must be lowercase"#]
    );
    let (errors, _) = errors_of(
        &schema,
        &widget(json!({"name": "OTHER", "size": 2})),
        Some(&old),
    );
    assert_eq!(
        errors,
        [r#"spec.name: Invalid value: "string": must be lowercase"#]
    );
}

#[test]
fn items_of_map_lists_correlate_by_key() {
    let schema = widget_schema(
        json!([]),
        json!({"ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}}}),
    );
    let old = widget(json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}));
    // Reordered, one new: no error; a changed port: an error at its new index.
    let new = widget(
        json!({"ports": [{"name": "c", "port": 9}, {"name": "b", "port": 2}, {"name": "a", "port": 1}]}),
    );
    assert!(errors_of(&schema, &new, Some(&old)).0.is_empty());
    let new = widget(json!({"ports": [{"name": "b", "port": 3}]}));
    assert_eq!(
        errors_of(&schema, &new, Some(&old)).0,
        [r#"spec.ports[0]: Invalid value: "object": port is immutable"#]
    );
}

#[test]
fn items_of_long_map_lists_correlate_by_key_through_an_index() {
    let schema = widget_schema(
        json!([]),
        json!({"ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "protocol": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}}}),
    );
    let ports = |changed: Option<usize>| -> Value {
        (0..2_000)
            .rev()
            .map(|i| {
                let port = if Some(i) == changed { 1 } else { i };
                // Items without a protocol correlate with old items without one.
                if i % 2 == 0 {
                    json!({"name": format!("p{i}"), "protocol": "TCP", "port": port})
                } else {
                    json!({"name": format!("p{i}"), "port": port})
                }
            })
            .collect()
    };
    let old = widget(json!({"ports": ports(None)}));
    // Reversed order, same ports: no error.
    let mut reversed = ports(None);
    reversed.as_array_mut().unwrap().reverse();
    assert!(
        errors_of(&schema, &widget(json!({"ports": reversed})), Some(&old))
            .0
            .is_empty()
    );
    // One changed port, found at its index in the new list.
    let new = widget(json!({"ports": ports(Some(1_501))}));
    assert_eq!(
        errors_of(&schema, &new, Some(&old)).0,
        [r#"spec.ports[498]: Invalid value: "object": port is immutable"#]
    );
}

#[test]
fn runtime_errors_say_what_failed_and_which_rule() {
    let schema = widget_schema(
        json!([{"rule": "self.items[3] == 'x'"}, {"rule": "self.any > 1"}]),
        json!({"items": {"type": "array", "items": {"type": "string"}},
               "any": {"x-kubernetes-int-or-string": true}}),
    );
    let (errors, _) = errors_of(
        &schema,
        &widget(json!({"items": ["a"], "any": "text"})),
        None,
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].starts_with(r#"spec: Invalid value: "object": index out of bounds: 3 evaluating rule: self.items[3] == 'x'"#),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("call arguments did not match a supported operator, function or macro signature for rule: self.any > 1"),
        "{errors:?}"
    );
}

#[test]
fn a_rule_over_its_call_budget_stops_validation() {
    let schema = widget_schema(
        json!([{"rule": "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c != '')))"},
               {"rule": "false", "message": "never reached"}]),
        json!({"items": {"type": "array", "items": {"type": "string"}}}),
    );
    let items: Vec<String> = (0..200).map(|i| format!("item-{i}")).collect();
    let (errors, _) = errors_of(&schema, &widget(json!({"items": items})), None);
    assert_eq!(
        errors,
        [
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.items.all(a, self.items.all(b, self.items.all(c, a + b + c != '')))"
        ]
    );
}

#[test]
fn crds_with_rules_that_do_not_compile_are_refused_naming_the_rule() {
    let schema = replicas_schema(json!([
        {"rule": "self.replicaz > 0"},
        {"rule": "self.replicas"},
        {"rule": "self.max > 0", "messageExpression": "self.max"},
        {"rule": "self.max > 0", "reason": "Nope"},
        {"rule": "self.max > 0", "fieldPath": ".missing"}
    ]));
    let errors: Vec<String> = crd_errors(&schema, "spec.versions[0].schema.openAPIV3Schema")
        .iter()
        .map(ToString::to_string)
        .collect();
    let at = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(errors.len(), 5, "{errors:#?}");
    assert!(errors[0].starts_with(&format!(
        "{at}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.replicaz > 0\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:5: undefined field 'replicaz'"
    )), "{errors:#?}");
    assert!(
        errors[1].ends_with(": cel expression must evaluate to a bool"),
        "{errors:#?}"
    );
    assert!(
        errors[2].starts_with(&format!("{at}[2].messageExpression: ")),
        "{errors:#?}"
    );
    assert!(
        errors[2].ends_with("must evaluate to a string"),
        "{errors:#?}"
    );
    assert_eq!(
        errors[3],
        format!(
            "{at}[3].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
        )
    );
    assert_eq!(
        errors[4],
        format!("{at}[4].fieldPath: Invalid value: \".missing\": fieldPath must be a valid path")
    );
}

#[test]
fn old_self_where_old_values_cannot_correlate_is_refused() {
    let schema = widget_schema(
        json!([]),
        json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "maxItems": 10,
            "items": {"type": "string", "maxLength": 10,
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}),
    );
    let errors: Vec<String> = crd_errors(&schema, "s")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].ends_with("oldSelf cannot be used on the uncorrelatable portion of the schema within s.properties[spec].properties[tags]"),
        "{errors:?}"
    );
}

#[test]
fn an_unchanged_schema_is_not_compiled_again() {
    let schema = Arc::new(replicas_schema(json!([{"rule": "self.max > 0"}])));
    let first = validator_for("widgets.example.com", "v1", &schema).unwrap();
    let copy = Arc::new((*schema).clone());
    let second = validator_for("widgets.example.com", "v1", &copy).unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    let changed = Arc::new(replicas_schema(json!([{"rule": "self.max > 1"}])));
    let third = validator_for("widgets.example.com", "v1", &changed).unwrap();
    assert!(!Arc::ptr_eq(&first, &third));
}

#[test]
fn a_changed_schema_compiles_only_the_rules_that_changed() {
    let schema = |spec_rule: &str, extra: Value| {
        let mut properties = json!({
            "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
            "max": {"type": "integer"}});
        properties
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Arc::new(widget_schema(json!([{"rule": spec_rule}]), properties))
    };
    // The address of a compiled rule's source tells whether it was compiled again.
    let sources = |v: &Validator| {
        let spec = &v.properties["spec"];
        let replicas = &spec.properties["replicas"];
        let address = |rule: &Rule| rule.program.as_ref().unwrap().source().as_ptr() as usize;
        (address(&spec.rules[0]), address(&replicas.rules[0]))
    };
    let first = validator_for(
        "gadgets.example.com",
        "v1",
        &schema("self.max > 0", json!({})),
    );
    let (spec_rule, replicas_rule) = sources(first.as_deref().unwrap());
    // Another rule on the spec: the spec's rule is new, the one on replicas is kept.
    let second = validator_for(
        "gadgets.example.com",
        "v1",
        &schema("self.max > 1", json!({})),
    );
    let (spec_rule2, replicas_rule2) = sources(second.as_deref().unwrap());
    assert_ne!(spec_rule, spec_rule2);
    assert_eq!(replicas_rule, replicas_rule2);
    // A new property changes the spec's type: its rule is compiled again against it (and
    // may use the property); replicas' type did not change.
    let third = validator_for(
        "gadgets.example.com",
        "v1",
        &schema("self.max > 1", json!({"mode": {"type": "string"}})),
    );
    let (spec_rule3, replicas_rule3) = sources(third.as_deref().unwrap());
    assert_ne!(spec_rule2, spec_rule3);
    assert_eq!(replicas_rule, replicas_rule3);
    // The rules still hold as written.
    let (errors, _) = errors_of(
        &schema("self.max > 1", json!({})),
        &widget(json!({"replicas": -1, "max": 1})),
        None,
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn rules_over_their_estimated_cost_are_refused_until_bounded() {
    let unbounded = widget_schema(
        json!([{"rule": "self.names.all(a, self.names.all(b, a == b || a != b))"}]),
        json!({"names": {"type": "array", "items": {"type": "string"}}}),
    );
    let errors: Vec<String> = crd_errors(&unbounded, "s")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors[0],
        "s.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    );
    assert_eq!(
        errors.last().map(String::as_str),
        Some(
            "s: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        )
    );
    let bounded = widget_schema(
        json!([{"rule": "self.names.all(a, self.names.all(b, a == b || a != b))"}]),
        json!({"names": {"type": "array", "maxItems": 32, "items": {"type": "string", "maxLength": 63}}}),
    );
    assert_eq!(crd_errors(&bounded, "s"), Vec::new());
    // A rule on list items runs once per item: its cost counts that many times.
    let per_item = widget_schema(
        json!([]),
        json!({"names": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}),
    );
    let errors: Vec<String> = crd_errors(&per_item, "s")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        errors[0].starts_with("s.properties[spec].properties[names].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of"),
        "{errors:?}"
    );
}
