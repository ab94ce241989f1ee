//! The encoding read back with a decoder written from `OpenAPIv2.proto` alone: every field of the
//! JSON document is found again under its field number, and nothing else is written.

use serde_json::{Map, Value, json};

use super::encode;
use crate::protobuf::wire::{Reader, WireValue};
use crate::registry::Registry;

fn fields(buf: &[u8]) -> Vec<(u32, WireValue<'_>)> {
    let mut reader = Reader::new(buf);
    let mut out = Vec::new();
    while let Some(field) = reader.field().expect("valid protobuf") {
        out.push(field);
    }
    out
}

fn bytes<'a>(value: &WireValue<'a>) -> &'a [u8] {
    match value {
        WireValue::Bytes(b) => b,
        other => panic!(
            "expected a length-delimited field, got {}",
            other.type_name()
        ),
    }
}

fn text(value: &WireValue<'_>) -> Value {
    Value::from(std::str::from_utf8(bytes(value)).expect("UTF-8"))
}

fn boolean(value: &WireValue<'_>) -> Value {
    match value {
        WireValue::Varint(v) => Value::Bool(*v != 0),
        other => panic!("expected a varint, got {}", other.type_name()),
    }
}

fn int(value: &WireValue<'_>) -> Value {
    match value {
        WireValue::Varint(v) => Value::from(*v as i64),
        other => panic!("expected a varint, got {}", other.type_name()),
    }
}

fn double(value: &WireValue<'_>) -> Value {
    match value {
        WireValue::Fixed64(bits) => number(f64::from_bits(*bits)),
        other => panic!("expected a fixed64, got {}", other.type_name()),
    }
}

fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        Value::from(f as i64)
    } else {
        Value::from(f)
    }
}

fn push(out: &mut Map<String, Value>, key: &str, value: Value) {
    match out.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
        Value::Array(items) => items.push(value),
        _ => unreachable!(),
    }
}

/// `Any`: its YAML text (2), parsed.
fn any(buf: &[u8]) -> Value {
    let mut yaml = None;
    for (n, v) in fields(buf) {
        match n {
            2 => yaml = Some(text(&v)),
            other => panic!("Any has no field {other} here"),
        }
    }
    let yaml = yaml.expect("Any.yaml");
    serde_yaml_ng::from_str(yaml.as_str().unwrap()).expect("YAML")
}

/// `NamedAny` into `out`.
fn named_any(buf: &[u8], out: &mut Map<String, Value>) {
    let (mut name, mut value) = (String::new(), Value::Null);
    for (n, v) in fields(buf) {
        match n {
            1 => name = text(&v).as_str().unwrap().to_owned(),
            2 => value = any(bytes(&v)),
            other => panic!("NamedAny has no field {other}"),
        }
    }
    out.insert(name, value);
}

/// A `Named…` message (name 1, value 2) into `out`.
fn named(buf: &[u8], out: &mut Map<String, Value>, value: fn(&[u8]) -> Value) {
    let (mut name, mut decoded) = (String::new(), Value::Null);
    for (n, v) in fields(buf) {
        match n {
            1 => name = text(&v).as_str().unwrap().to_owned(),
            2 => decoded = value(bytes(&v)),
            other => panic!("Named message has no field {other}"),
        }
    }
    out.insert(name, decoded);
}

/// A message holding only repeated `Named…` entries (field 1).
fn named_map(buf: &[u8], value: fn(&[u8]) -> Value) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        assert_eq!(n, 1, "a map message holds only field 1");
        named(bytes(&v), &mut out, value);
    }
    Value::Object(out)
}

fn document(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        match n {
            1 => {
                out.insert("swagger".into(), text(&v));
            }
            2 => {
                out.insert("info".into(), info(bytes(&v)));
            }
            8 => {
                out.insert("paths".into(), paths(bytes(&v)));
            }
            9 => {
                out.insert("definitions".into(), named_map(bytes(&v), schema));
            }
            12 => push(&mut out, "security", security_requirement(bytes(&v))),
            13 => {
                out.insert(
                    "securityDefinitions".into(),
                    named_map(bytes(&v), security_definitions_item),
                );
            }
            other => panic!("unexpected Document field {other}"),
        }
    }
    Value::Object(out)
}

fn info(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        let key = match n {
            1 => "title",
            2 => "version",
            3 => "description",
            other => panic!("unexpected Info field {other}"),
        };
        out.insert(key.into(), text(&v));
    }
    Value::Object(out)
}

fn paths(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        match n {
            1 => named_any(bytes(&v), &mut out),
            2 => named(bytes(&v), &mut out, path_item),
            other => panic!("unexpected Paths field {other}"),
        }
    }
    Value::Object(out)
}

fn path_item(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        let method = match n {
            2 => "get",
            3 => "put",
            4 => "post",
            5 => "delete",
            6 => "options",
            7 => "head",
            8 => "patch",
            9 => {
                push(&mut out, "parameters", parameters_item(bytes(&v)));
                continue;
            }
            10 => {
                named_any(bytes(&v), &mut out);
                continue;
            }
            other => panic!("unexpected PathItem field {other}"),
        };
        out.insert(method.into(), operation(bytes(&v)));
    }
    Value::Object(out)
}

fn operation(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        match n {
            1 => push(&mut out, "tags", text(&v)),
            2 => {
                out.insert("summary".into(), text(&v));
            }
            3 => {
                out.insert("description".into(), text(&v));
            }
            5 => {
                out.insert("operationId".into(), text(&v));
            }
            6 => push(&mut out, "produces", text(&v)),
            7 => push(&mut out, "consumes", text(&v)),
            8 => push(&mut out, "parameters", parameters_item(bytes(&v))),
            9 => {
                out.insert("responses".into(), responses(bytes(&v)));
            }
            10 => push(&mut out, "schemes", text(&v)),
            11 => {
                out.insert("deprecated".into(), boolean(&v));
            }
            13 => named_any(bytes(&v), &mut out),
            other => panic!("unexpected Operation field {other}"),
        }
    }
    Value::Object(out)
}

/// `ParametersItem` → `Parameter` → body or non-body.
fn parameters_item(buf: &[u8]) -> Value {
    let [(1, parameter)] = fields(buf)[..] else {
        panic!("a ParametersItem here is one Parameter");
    };
    let [(kind, inner)] = fields(bytes(&parameter))[..] else {
        panic!("a Parameter is one of its oneof");
    };
    match kind {
        1 => body_parameter(bytes(&inner)),
        2 => {
            let [(sub, value)] = fields(bytes(&inner))[..] else {
                panic!("a NonBodyParameter is one of its oneof");
            };
            let decoded = match sub {
                1 | 4 => header_or_path_parameter(bytes(&value)),
                3 => query_parameter(bytes(&value)),
                other => panic!("unexpected NonBodyParameter field {other}"),
            };
            let location = decoded["in"].as_str().unwrap();
            let expected = match sub {
                1 => "header",
                3 => "query",
                _ => "path",
            };
            assert_eq!(location, expected, "parameter in the right oneof member");
            decoded
        }
        other => panic!("unexpected Parameter field {other}"),
    }
}

fn body_parameter(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        let (key, value) = match n {
            1 => ("description", text(&v)),
            2 => ("name", text(&v)),
            3 => ("in", text(&v)),
            4 => ("required", boolean(&v)),
            5 => ("schema", schema(bytes(&v))),
            other => panic!("unexpected BodyParameter field {other}"),
        };
        out.insert(key.into(), value);
    }
    Value::Object(out)
}

fn header_or_path_parameter(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        let (key, value) = match n {
            1 => ("required", boolean(&v)),
            2 => ("in", text(&v)),
            3 => ("description", text(&v)),
            4 => ("name", text(&v)),
            5 => ("type", text(&v)),
            6 => ("format", text(&v)),
            19 => ("uniqueItems", boolean(&v)),
            other => panic!("unexpected PathParameterSubSchema field {other}"),
        };
        out.insert(key.into(), value);
    }
    Value::Object(out)
}

fn query_parameter(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        let (key, value) = match n {
            1 => ("required", boolean(&v)),
            2 => ("in", text(&v)),
            3 => ("description", text(&v)),
            4 => ("name", text(&v)),
            5 => ("allowEmptyValue", boolean(&v)),
            6 => ("type", text(&v)),
            7 => ("format", text(&v)),
            20 => ("uniqueItems", boolean(&v)),
            other => panic!("unexpected QueryParameterSubSchema field {other}"),
        };
        out.insert(key.into(), value);
    }
    Value::Object(out)
}

fn responses(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        match n {
            1 => named(bytes(&v), &mut out, |value| {
                let [(1, response)] = fields(value)[..] else {
                    panic!("a ResponseValue here is a Response");
                };
                self::response(bytes(&response))
            }),
            2 => named_any(bytes(&v), &mut out),
            other => panic!("unexpected Responses field {other}"),
        }
    }
    Value::Object(out)
}

fn response(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        match n {
            1 => {
                out.insert("description".into(), text(&v));
            }
            2 => {
                let [(1, item)] = fields(bytes(&v))[..] else {
                    panic!("a SchemaItem here is a Schema");
                };
                out.insert("schema".into(), schema(bytes(&item)));
            }
            5 => named_any(bytes(&v), &mut out),
            other => panic!("unexpected Response field {other}"),
        }
    }
    Value::Object(out)
}

fn schema(buf: &[u8]) -> Value {
    let mut out = Map::new();
    for (n, v) in fields(buf) {
        let (key, value) = match n {
            1 => ("$ref", text(&v)),
            2 => ("format", text(&v)),
            3 => ("title", text(&v)),
            4 => ("description", text(&v)),
            5 => ("default", any(bytes(&v))),
            6 => ("multipleOf", double(&v)),
            7 => ("maximum", double(&v)),
            8 => ("exclusiveMaximum", boolean(&v)),
            9 => ("minimum", double(&v)),
            10 => ("exclusiveMinimum", boolean(&v)),
            11 => ("maxLength", int(&v)),
            12 => ("minLength", int(&v)),
            13 => ("pattern", text(&v)),
            14 => ("maxItems", int(&v)),
            15 => ("minItems", int(&v)),
            16 => ("uniqueItems", boolean(&v)),
            17 => ("maxProperties", int(&v)),
            18 => ("minProperties", int(&v)),
            19 => {
                push(&mut out, "required", text(&v));
                continue;
            }
            20 => {
                push(&mut out, "enum", any(bytes(&v)));
                continue;
            }
            21 => {
                let [(which, inner)] = fields(bytes(&v))[..] else {
                    panic!("AdditionalPropertiesItem is one of its oneof");
                };
                let value = match which {
                    1 => schema(bytes(&inner)),
                    2 => boolean(&inner),
                    other => panic!("unexpected AdditionalPropertiesItem field {other}"),
                };
                ("additionalProperties", value)
            }
            22 => {
                let names: Vec<Value> = fields(bytes(&v))
                    .iter()
                    .map(|(n, name)| {
                        assert_eq!(*n, 1);
                        text(name)
                    })
                    .collect();
                let value = match names.as_slice() {
                    [one] => one.clone(),
                    _ => Value::Array(names),
                };
                ("type", value)
            }
            23 => {
                let [(1, item)] = fields(bytes(&v))[..] else {
                    panic!("ItemsItem holds one schema here");
                };
                ("items", schema(bytes(&item)))
            }
            24 => {
                push(&mut out, "allOf", schema(bytes(&v)));
                continue;
            }
            25 => ("properties", named_map(bytes(&v), schema)),
            26 => ("discriminator", text(&v)),
            27 => ("readOnly", boolean(&v)),
            30 => ("example", any(bytes(&v))),
            31 => {
                named_any(bytes(&v), &mut out);
                continue;
            }
            other => panic!("unexpected Schema field {other}"),
        };
        out.insert(key.into(), value);
    }
    Value::Object(out)
}

fn security_requirement(buf: &[u8]) -> Value {
    named_map(buf, |scopes| {
        Value::Array(
            fields(scopes)
                .iter()
                .map(|(n, scope)| {
                    assert_eq!(*n, 1);
                    text(scope)
                })
                .collect(),
        )
    })
}

fn security_definitions_item(buf: &[u8]) -> Value {
    let [(2, key)] = fields(buf)[..] else {
        panic!("Kubernetes declares an ApiKeySecurity");
    };
    let mut out = Map::new();
    for (n, v) in fields(bytes(&key)) {
        let name = match n {
            1 => "type",
            2 => "name",
            3 => "in",
            4 => "description",
            other => panic!("unexpected ApiKeySecurity field {other}"),
        };
        out.insert(name.into(), text(&v));
    }
    Value::Object(out)
}

/// How a JSON object's keys are read: as message fields, or as names (of definitions,
/// properties, paths, response codes).
#[derive(Clone, Copy)]
enum Keys {
    Fields,
    Names,
}

/// Numbers compared as values (the encoding writes `double`s).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map_or(value.clone(), number),
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
        }
        other => other.clone(),
    }
}

/// Whether proto3 leaves the value out of the encoding.
fn is_default(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Asserts that `decoded` is `expected`, but for what proto3 leaves out.
fn assert_same(expected: &Value, decoded: &Value, keys: Keys, at: &str) {
    match (expected, decoded) {
        (Value::Object(want), Value::Object(got)) => {
            for key in got.keys() {
                assert!(
                    want.contains_key(key),
                    "{at}/{key}: decoded but not in the JSON"
                );
            }
            for (key, want_value) in want {
                let here = format!("{at}/{key}");
                let Some(got_value) = got.get(key) else {
                    assert!(
                        matches!(keys, Keys::Fields) && is_default(want_value),
                        "{here}: missing from the encoding"
                    );
                    continue;
                };
                match keys {
                    Keys::Names => assert_same(want_value, got_value, Keys::Fields, &here),
                    Keys::Fields => match key.as_str() {
                        "default" | "example" | "enum" => {
                            assert_eq!(canonical(want_value), canonical(got_value), "{here}")
                        }
                        k if k.starts_with("x-") => {
                            assert_eq!(canonical(want_value), canonical(got_value), "{here}")
                        }
                        "properties"
                        | "definitions"
                        | "paths"
                        | "responses"
                        | "securityDefinitions" => {
                            assert_same(want_value, got_value, Keys::Names, &here)
                        }
                        _ => assert_same(want_value, got_value, Keys::Fields, &here),
                    },
                }
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            assert_eq!(want.len(), got.len(), "{at}: length");
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                // Security requirements name their schemes.
                let keys = if at.ends_with("/security") {
                    Keys::Names
                } else {
                    keys
                };
                assert_same(w, g, keys, &format!("{at}/{i}"));
            }
        }
        _ => assert_eq!(canonical(expected), canonical(decoded), "{at}"),
    }
}

#[test]
fn builtin_document_decodes_to_the_json_document() {
    let catalog = Registry::new().catalog();
    let json = super::super::build(&catalog);
    let buf = encode(&json).unwrap();
    let decoded = document(&buf);
    assert_same(&json, &decoded, Keys::Fields, "");
    // Spot checks of what kubectl reads.
    let item = &decoded["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    assert_eq!(item["patch"]["x-kubernetes-action"], "patch");
    assert_eq!(
        item["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        decoded["definitions"]["io.k8s.api.core.v1.ConfigMap"]["properties"]["data"]["additionalProperties"]
            ["type"],
        "string"
    );
}

#[test]
fn custom_resource_extensions_and_values_survive_the_encoding() {
    let registry = Registry::new();
    registry.set_crds(&[json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "properties": {
                                "replicas": {"type": "integer", "minimum": 0, "maximum": 10.5, "multipleOf": 1},
                                "mode": {"type": "string", "enum": ["a", "b", "true"], "maxLength": 8},
                                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 3},
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            },
                            "x-kubernetes-validations": [{"rule": "self.replicas >= 0", "message": "no: \"negative\""}],
                        },
                    },
                }},
            }],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    })]);
    let json = super::super::build(&registry.catalog());
    let decoded = document(&encode(&json).unwrap());
    assert_same(&json, &decoded, Keys::Fields, "");
    let spec = &decoded["definitions"]["com.example.v1.Widget"]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["mode"]["enum"],
        json!(["a", "b", "true"])
    );
    assert_eq!(spec["properties"]["replicas"]["maximum"], 10.5);
    assert_eq!(
        spec["x-kubernetes-validations"],
        json!([{"rule": "self.replicas >= 0", "message": "no: \"negative\""}])
    );
    assert!(decoded["paths"]["/apis/example.com/v1/widgets/{name}/scale"]["put"].is_object());
}

#[test]
fn false_in_a_oneof_is_written() {
    let schema = json!({"type": "object", "additionalProperties": false});
    let doc = json!({"swagger": "2.0", "info": {}, "paths": {}, "definitions": {"a": schema}});
    let decoded = document(&encode(&doc).unwrap());
    assert_eq!(decoded["definitions"]["a"]["additionalProperties"], false);
}
