//! Property tests of what a request brings in, before anything is checked: label and field
//! selectors, JSON, merge and strategic merge patches, apply bodies (YAML) and protobuf bodies,
//! server-side apply of any configuration over any live object, jsonpath expressions of printer
//! columns, and CRD schemas with the objects they validate.
//! Each property is that any input gets an answer (a value or an error) and never a panic, and
//! that what a patch makes stays bounded. The case count is `PROPTEST_CASES` (256 by default,
//! what the test command runs); a longer search sets it higher.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::apply::{ListType, ListTypes, Manager};
use crate::patch;
use crate::registry::selector::{FieldSelector, LabelSelector};
use crate::table::jsonpath::JsonPath;

/// JSON values a few levels deep, with the keys and strings Kubernetes objects use.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z0-9/~.$:-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z$/~.]{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON pointers, valid or not.
fn pointer() -> impl Strategy<Value = String> {
    prop_oneof![
        "(/[a-z0-9~-]{0,4}){0,4}",
        "[a-z/~0-9-]{0,10}",
        Just("/-".to_owned()),
    ]
}

/// JSON patch operations, mostly well-formed, some not.
fn operation() -> impl Strategy<Value = Value> {
    let op = prop_oneof!["(add|remove|replace|move|copy|test)", "[a-z]{0,6}",];
    (op, pointer(), pointer(), json_value(), any::<u8>()).prop_map(
        |(op, path, from, value, shape)| {
            let mut operation = json!({"op": op, "path": path});
            if shape & 1 == 1 {
                operation["from"] = json!(from);
            }
            if shape & 2 == 2 {
                operation["value"] = value;
            }
            if shape == 255 {
                operation = value_of_wrong_kind(shape);
            }
            operation
        },
    )
}

/// Well-formed JSON patch operations (what RFC 6902 accepts), on paths short enough to exist
/// in the documents [`json_value`] makes now and then.
fn well_formed_operation() -> impl Strategy<Value = Value> {
    let path = prop_oneof!["(/([a-z$0-5-]|~0|~1){0,2}){0,3}", Just("/-".to_owned())];
    (
        "(add|remove|replace|move|copy|test)",
        path.clone(),
        path,
        json_value(),
    )
        .prop_map(|(op, path, from, value)| match op.as_str() {
            "move" | "copy" => json!({"op": op, "path": path, "from": from}),
            "remove" => json!({"op": op, "path": path}),
            _ => json!({"op": op, "path": path, "value": value}),
        })
}

fn value_of_wrong_kind(seed: u8) -> Value {
    match seed % 3 {
        0 => json!("add"),
        1 => json!([1, 2]),
        _ => Value::Null,
    }
}

/// Lists merged as the pod kinds merge theirs: by key, as sets, or whole.
struct MixedLists;

impl ListTypes for MixedLists {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path.last().map(|last| last.len() % 3) {
            Some(0) => ListType::Map(vec!["a".into()]),
            Some(1) => ListType::Set,
            _ => ListType::Atomic,
        }
    }
}

/// Objects as an apply sees them: metadata and a spec of JSON values, sometimes with the
/// managed fields a previous write recorded, valid or not.
fn object() -> impl Strategy<Value = Value> {
    (json_value(), json_value(), any::<u8>()).prop_map(|(spec, managed, shape)| {
        let mut object = json!({"apiVersion": "example.com/v1", "kind": "Thing",
                                "metadata": {"name": "x"}, "spec": spec});
        if shape & 1 == 1 {
            object["metadata"]["managedFields"] = match managed {
                Value::Array(_) => managed,
                other => json!([{"manager": "m", "operation": "Apply", "apiVersion": "v1",
                                 "fieldsType": "FieldsV1", "fieldsV1": other}]),
            };
        }
        object
    })
}

/// CRD schemas: the keywords a structural schema uses, with values of the right kind or not.
fn schema() -> impl Strategy<Value = Value> {
    let keyword_value = prop_oneof![
        "(string|integer|number|boolean|object|array|[a-z]{0,4})".prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        r"[a-z^$.*+?()\\\[\]{}|0-9-]{0,12}".prop_map(Value::String),
        prop::collection::vec("[a-z]{0,3}", 0..3).prop_map(|v| json!(v)),
    ];
    let keyword = "(type|format|pattern|enum|minimum|maximum|minLength|maxLength|minItems|maxItems|minProperties|maxProperties|required|multipleOf|exclusiveMinimum|nullable|x-kubernetes-list-type|x-kubernetes-list-map-keys|x-kubernetes-int-or-string|x-kubernetes-preserve-unknown-fields|uniqueItems)";
    let leaf = prop::collection::btree_map(keyword, keyword_value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    leaf.prop_recursive(4, 32, 4, |inner| {
        (
            prop::collection::btree_map("[a-z]{1,3}", inner.clone(), 0..4),
            inner.clone(),
            inner,
            any::<u8>(),
        )
            .prop_map(|(properties, items, additional, shape)| {
                let mut schema = json!({"type": if shape & 1 == 1 { "object" } else { "array" }});
                if shape & 2 == 2 {
                    schema["properties"] = Value::Object(properties.into_iter().collect());
                }
                if shape & 4 == 4 {
                    schema["items"] = items;
                }
                if shape & 8 == 8 {
                    schema["additionalProperties"] = additional;
                }
                if shape & 16 == 16 {
                    schema["allOf"] = json!([schema.clone()]);
                }
                schema
            })
    })
}

/// RFC 6902 as the reference implementation applies it, one operation at a time, with the two
/// behaviours kube-apiserver inherits from evanphx/json-patch v4 (see `crate::patch`): `replace`
/// of a key missing from an object adds it, and `test` of `null` passes for an absent key.
fn evanphx_reference(target: &Value, ops: &json_patch::Patch) -> Result<Value, String> {
    let mut doc = target.clone();
    for op in ops.0.iter() {
        let absent_in_object = |path: &str| {
            let (parent, key) = path.rsplit_once('/')?;
            let key = key.replace("~1", "/").replace("~0", "~");
            let object = doc.pointer(parent)?.as_object()?;
            (!object.contains_key(&key)).then_some(())
        };
        let op = match op {
            json_patch::PatchOperation::Replace(replace)
                if absent_in_object(replace.path.as_str()).is_some() =>
            {
                json_patch::PatchOperation::Add(json_patch::AddOperation {
                    path: replace.path.clone(),
                    value: replace.value.clone(),
                })
            }
            json_patch::PatchOperation::Test(test)
                if test.value.is_null() && absent_in_object(test.path.as_str()).is_some() =>
            {
                continue;
            }
            other => other.clone(),
        };
        json_patch::patch(&mut doc, &[op]).map_err(|e| e.to_string())?;
    }
    Ok(doc)
}

proptest! {
    #[test]
    fn label_selectors_parse_or_fail_and_match_without_panicking(
        input in "[a-z0-9=!,() .-]{0,40}|[a-z]{1,8}( (in|notin) \\([a-z,]{0,12}\\))?",
        labels in prop::collection::btree_map("[a-z]{1,4}", "[a-z0-9]{0,4}", 0..5),
    ) {
        if let Ok(selector) = LabelSelector::parse(&input) {
            let labels: Value = json!(labels);
            let _ = selector.matches(&labels);
        }
    }

    #[test]
    fn field_selectors_parse_or_fail_and_match_without_panicking(
        input in "[a-z.=!,]{0,30}",
        object in json_value(),
    ) {
        if let Ok(selector) = FieldSelector::parse(&input, &["metadata.name", "metadata.namespace", "status.phase"]) {
            let _ = selector.matches(&object);
        }
    }

    #[test]
    fn json_patches_apply_or_fail_and_leave_the_target_whole_on_failure(
        target in json_value(),
        ops in prop::collection::vec(operation(), 0..12),
    ) {
        let mut patched = target.clone();
        match patch::json_patch(&mut patched, &Value::Array(ops)) {
            Ok(()) => {
                // Copies are bounded: what twelve operations make stays far below the limit.
                prop_assert!(serde_json::to_vec(&patched).unwrap().len() <= 64 * 1024 * 1024);
            }
            Err(_) => prop_assert_eq!(patched, target),
        }
    }

    #[test]
    fn json_patches_do_what_rfc_6902_says(
        target in json_value(),
        ops in prop::collection::vec(well_formed_operation(), 0..6),
    ) {
        let ops = Value::Array(ops);
        let reference_ops: json_patch::Patch = serde_json::from_value(ops.clone()).unwrap();
        let mut ours = target.clone();
        let our_result = patch::json_patch(&mut ours, &ops);
        let reference = evanphx_reference(&target, &reference_ops);
        prop_assert_eq!(our_result.is_ok(), reference.is_ok(), "ours {:?}, the reference's {:?}", our_result.err().map(|e| e.to_string()), reference);
        if let Ok(reference) = reference {
            prop_assert_eq!(ours, reference);
        }
    }

    #[test]
    fn merge_patches_apply_without_panicking(target in json_value(), patch_doc in json_value()) {
        // What RFC 7386 makes (the reference implementation).
        let mut reference = target.clone();
        json_patch::merge(&mut reference, &patch_doc);
        // Built apart from the target, as a merge patch of a stored object is.
        prop_assert_eq!(&patch::merged(&target, patch_doc.clone()), &reference);
        let mut patched = target;
        patch::merge_patch(&mut patched, patch_doc.clone());
        prop_assert_eq!(&patched, &reference);
        // Applying the same merge patch again changes nothing (RFC 7386 is idempotent).
        let once = patched.clone();
        patch::merge_patch(&mut patched, patch_doc);
        prop_assert_eq!(patched, once);
    }

    #[test]
    fn strategic_merge_patches_apply_or_fail_without_panicking(
        target in json_value(),
        patch_doc in json_value(),
        kind in prop_oneof![Just(("apps", "v1", "Deployment")), Just(("", "v1", "Pod")), Just(("", "v1", "ConfigMap"))],
    ) {
        let meta = patch::strategic::BuiltinPatchMeta::for_kind(kind.0, kind.1, kind.2);
        let mut patched = target.clone();
        if patch::strategic::apply(&mut patched, &patch_doc, &meta).is_err() {
            prop_assert_eq!(patched, target);
        }
    }

    #[test]
    fn apply_bodies_decode_or_fail_without_panicking(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = patch::decode_apply(&body);
    }

    #[test]
    fn yaml_looking_apply_bodies_decode_or_fail_without_panicking(body in "[a-z:{}\\[\\] ,\\n&*!|>-]{0,120}") {
        let _ = patch::decode_apply(body.as_bytes());
    }

    #[test]
    fn protobuf_bodies_decode_or_fail_without_panicking(
        kind in prop_oneof![Just("ConfigMap"), Just("Secret"), Just("Deployment"), Just("SelfSubjectRulesReview"), Just("Nope")],
        raw in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        // The envelope as clients send it (magic, then runtime.Unknown with typeMeta and raw),
        // around arbitrary bytes.
        let api_version = if kind == "Deployment" { "apps/v1" } else if kind == "SelfSubjectRulesReview" { "authorization.k8s.io/v1" } else { "v1" };
        let mut type_meta = Vec::new();
        for (field, text) in [(1u8, api_version), (2u8, kind)] {
            type_meta.push(field << 3 | 2);
            type_meta.push(text.len() as u8);
            type_meta.extend_from_slice(text.as_bytes());
        }
        let mut unknown = vec![1 << 3 | 2, type_meta.len() as u8];
        unknown.extend_from_slice(&type_meta);
        unknown.push(2 << 3 | 2);
        let mut length = raw.len();
        loop {
            let byte = (length & 0x7f) as u8;
            length >>= 7;
            if length == 0 {
                unknown.push(byte);
                break;
            }
            unknown.push(byte | 0x80);
        }
        unknown.extend_from_slice(&raw);
        let mut body = b"k8s\x00".to_vec();
        body.extend_from_slice(&unknown);
        let _ = crate::protobuf::decode(&body);
        let _ = crate::protobuf::decode(&raw);
    }

    #[test]
    fn server_side_apply_answers_any_configuration_over_any_object(
        live in prop::option::of(object()),
        config in prop_oneof![object(), json_value()],
        force in any::<bool>(),
        manager in "[a-z]{1,3}",
    ) {
        let manager = Manager {
            name: &manager,
            api_version: "example.com/v1",
            subresource: None,
            time: "2026-01-01T00:00:00Z",
        };
        let applied = crate::apply::apply(live.as_ref(), &config, &manager, force, &MixedLists).ok();
        // What the manager applied is now its own: applying it again changes nothing. (An apply
        // that owns nothing records no entry, and the next apply finds the object untracked, as
        // upstream's before-first-apply does.)
        if let Some(applied) = applied.filter(|a| a.pointer("/metadata/managedFields").is_some()) {
            let again = crate::apply::apply(Some(&applied), &config, &manager, false, &MixedLists);
            match again {
                Ok(again) => prop_assert_eq!(again, applied),
                Err(err) => prop_assert!(false, "a repeated apply fails: {}", err.message()),
            }
        }
    }

    #[test]
    fn jsonpath_expressions_parse_or_fail_and_evaluate_without_panicking(
        path in r#"[a-z.\[\]*@?=()'"${}0-9:,!<> -]{0,30}|\.[a-z]{1,4}(\[[0-9*:-]{0,4}\])?(\.[a-z]{1,4}){0,3}"#,
        root in json_value(),
    ) {
        if let Ok(path) = JsonPath::parse(&path) {
            let found = path.find(&root);
            let _ = path.first(&root);
            // What an expression finds is within what it reads.
            prop_assert!(found.len() <= 1 + serde_json::to_string(&root).unwrap().len());
        }
    }

    #[test]
    fn schemas_validate_any_object_without_panicking(
        schema in schema(),
        object in json_value(),
        old in prop::option::of(json_value()),
    ) {
        let _ = crate::validation::schema::validate(&object, old.as_ref(), &schema);
        let mut pruned = object.clone();
        let compiled = crate::validation::schema::Schema::compile(&schema);
        let _ = crate::validation::structural::prune(&mut pruned, &compiled, &[]);
        crate::validation::structural::apply_defaults(&mut pruned, &compiled, &[]);
    }
}
