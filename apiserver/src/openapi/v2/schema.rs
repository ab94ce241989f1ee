//! Schemas in OpenAPI v2's form.
//!
//! [`builtin`] turns a v3 component schema into the definition kube-openapi's v2 builder writes
//! for the same Go type: references point into `#/definitions/`, a described reference is a
//! `$ref` with siblings rather than an `allOf` wrapper, int-or-string is `type: string, format:
//! int-or-string`, and what v2 has no word for (`nullable`, `anyOf`, `oneOf`, `not`, …) is left
//! out, so that gnostic (and so kubectl) parses every schema.
//!
//! [`custom_resource`] is a CRD version's schema as apiextensions-apiserver publishes it in v2
//! (`pkg/controller/openapi/builder` with `ToStructuralOpenAPIV2`): only what a structural schema
//! holds, defaults pruned, no junctors; a nullable or `x-kubernetes-preserve-unknown-fields`
//! node loses its `properties` and `items` (and a nullable one its type), because kubectl's v2
//! validation would refuse what they leave out; a root that preserves unknown fields is a bare
//! object.

use serde_json::{Map, Value, json};

use super::{DEFINITIONS_PREFIX, reference};
use crate::openapi::builtin::{OBJECT_META, free_form};
use crate::openapi::{API_VERSION_DESCRIPTION, KIND_DESCRIPTION};
use crate::registry::ResourceType;

/// The keys gnostic accepts in a v2 schema (besides `x-` extensions).
pub(crate) const V2_KEYS: &[&str] = &[
    "$ref",
    "additionalProperties",
    "allOf",
    "default",
    "description",
    "discriminator",
    "enum",
    "example",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "externalDocs",
    "format",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "pattern",
    "properties",
    "readOnly",
    "required",
    "title",
    "type",
    "uniqueItems",
    "xml",
];

/// Keys v2 counts as integers (gnostic reads them as int64).
const INTEGER_KEYS: &[&str] = &[
    "maxItems",
    "maxLength",
    "maxProperties",
    "minItems",
    "minLength",
    "minProperties",
];

/// A v3 schema (a component schema, or one a request or response refers to) in v2's form.
pub fn builtin(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    // `allOf: [{$ref}]` beside a description or default: v2 writes the reference beside them.
    let wrapped = match map.get("allOf") {
        Some(Value::Array(all)) if all.len() == 1 && !map.contains_key("$ref") => all[0]
            .as_object()
            .filter(|only| only.len() == 1)
            .and_then(|only| only.get("$ref"))
            .and_then(Value::as_str),
        _ => None,
    };
    if let Some(r) = wrapped {
        out.insert("$ref".into(), reference(r).into());
    }
    let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    for (key, value) in map {
        let converted = match key.as_str() {
            "allOf" if wrapped.is_some() => continue,
            "$ref" => Value::from(value.as_str().map(reference).unwrap_or_default()),
            "properties" => match value {
                Value::Object(fields) => Value::Object(
                    fields
                        .iter()
                        .map(|(name, s)| (name.clone(), builtin(s)))
                        .collect(),
                ),
                _ => continue,
            },
            "items" => match value {
                Value::Object(_) => builtin(value),
                _ => continue,
            },
            "additionalProperties" => match value {
                Value::Object(_) => builtin(value),
                Value::Bool(_) => value.clone(),
                _ => continue,
            },
            "allOf" => match value {
                Value::Array(all) => Value::Array(all.iter().map(builtin).collect()),
                _ => continue,
            },
            // kube-openapi's v2 int-or-string: a string of format int-or-string.
            "x-kubernetes-int-or-string" if int_or_string => continue,
            k if k.starts_with("x-") => value.clone(),
            k if V2_KEYS.contains(&k) => scalar(k, value),
            _ => continue,
        };
        out.insert(key.clone(), converted);
    }
    if int_or_string && !out.contains_key("type") {
        out.insert("type".into(), "string".into());
        out.insert("format".into(), "int-or-string".into());
    }
    Value::Object(out)
}

/// A scalar keyword's value as v2 reads it: integer keywords as integers.
fn scalar(key: &str, value: &Value) -> Value {
    match value {
        Value::Number(n) if INTEGER_KEYS.contains(&key) && !n.is_i64() => {
            n.as_f64().map_or(Value::Null, |f| Value::from(f as i64))
        }
        _ => value.clone(),
    }
}

/// The v2 definition of a custom resource: its CRD's schema for the version made fit for v2,
/// with `apiVersion`, `kind` and `metadata` as upstream sets them, and its group/version/kind.
pub fn custom_resource(resource: &ResourceType) -> Value {
    let crd_schema = match resource.schema.as_deref() {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        _ => Value::Object(free_form()),
    };
    let mut out =
        if crd_schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            // kubectl would refuse every field but apiVersion, kind and metadata if any were listed.
            let mut bare = Map::new();
            bare.insert("type".into(), "object".into());
            bare
        } else {
            let mut structural = structural(&crd_schema);
            to_v2(&mut structural);
            add_embedded_properties(&mut structural);
            let Value::Object(mut map) = structural else {
                return Value::Object(Map::new());
            };
            let properties = map
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(properties) = properties {
                properties.insert("metadata".into(), object_meta());
                properties.insert(
                    "apiVersion".into(),
                    json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
                );
                properties.insert(
                    "kind".into(),
                    json!({"description": KIND_DESCRIPTION, "type": "string"}),
                );
            }
            map
        };
    out.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": resource.group, "version": resource.version, "kind": resource.kind}]),
    );
    Value::Object(out)
}

fn object_meta() -> Value {
    json!({
        "$ref": format!("{DEFINITIONS_PREFIX}{OBJECT_META}"),
        "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    })
}

/// What a structural schema holds (apiextensions-apiserver's `Structural`), defaults aside:
/// anything else in a CRD's schema does not reach its published OpenAPI.
const STRUCTURAL_KEYS: &[&str] = &[
    "description",
    "type",
    "title",
    "nullable",
    "format",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// The structural part of a CRD schema node, recursively.
fn structural(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (key, value) in map {
        let kept = match key.as_str() {
            "properties" => match value {
                Value::Object(fields) => Value::Object(
                    fields
                        .iter()
                        .map(|(name, s)| (name.clone(), structural(s)))
                        .collect(),
                ),
                _ => continue,
            },
            "items" => match value {
                Value::Object(_) => structural(value),
                _ => continue,
            },
            "additionalProperties" => match value {
                Value::Object(_) => structural(value),
                Value::Bool(_) => value.clone(),
                _ => continue,
            },
            k if STRUCTURAL_KEYS.contains(&k) => scalar(k, value),
            _ => continue,
        };
        out.insert(key.clone(), kept);
    }
    Value::Object(out)
}

fn is_true(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key) == Some(&Value::Bool(true))
}

/// apiextensions-apiserver's `ToStructuralOpenAPIV2`, applied to a node, then to its children.
fn to_v2(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        map.remove(junctor);
    }
    if map.remove("nullable") == Some(Value::Bool(true)) {
        map.remove("type");
        map.remove("items");
        map.remove("properties");
    }
    let preserves = is_true(map, "x-kubernetes-preserve-unknown-fields");
    if preserves {
        map.remove("items");
        map.remove("properties");
    }
    if !map.contains_key("items") && map.get("type").and_then(Value::as_str) == Some("array") {
        map.remove("type");
    }
    if preserves && map.get("type").and_then(Value::as_str) == Some("object") {
        map.remove("type");
    }
    // A nullable property is not required; nor is anything when values may be null.
    let nullable_fields: Vec<String> = match map.get("properties") {
        Some(Value::Object(fields)) => fields
            .iter()
            .filter(|(_, s)| s.get("nullable") == Some(&Value::Bool(true)))
            .map(|(name, _)| name.clone())
            .collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|r| !nullable_fields.iter().any(|f| r == f.as_str()));
    }
    if map
        .get("additionalProperties")
        .and_then(|a| a.get("nullable"))
        == Some(&Value::Bool(true))
    {
        map.remove("required");
    }
    if map
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        map.remove("required");
    }
    if let Some(Value::Object(fields)) = map.get_mut("properties") {
        fields.values_mut().for_each(to_v2);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child @ Value::Object(_)) = map.get_mut(key) {
            to_v2(child);
        }
    }
}

/// An embedded resource gets `apiVersion`, `kind` and `metadata` (and requires the first two),
/// unless it preserves unknown fields: then v2 lists none, or kubectl would refuse the others.
fn add_embedded_properties(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Object(fields)) = map.get_mut("properties") {
        fields.values_mut().for_each(add_embedded_properties);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child @ Value::Object(_)) = map.get_mut(key) {
            add_embedded_properties(child);
        }
    }
    if is_true(map, "x-kubernetes-preserve-unknown-fields")
        || !is_true(map, "x-kubernetes-embedded-resource")
    {
        return;
    }
    let properties = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            "apiVersion".into(),
            json!({"description": "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources", "type": "string"}),
        );
        properties.insert(
            "kind".into(),
            json!({"description": "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds", "type": "string"}),
        );
        properties.insert("metadata".into(), object_meta());
    }
    let required = map
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(required) = required {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(field.into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn described_references_and_int_or_string_read_as_v2() {
        let v3 = json!({
            "type": "object",
            "properties": {
                "metadata": {
                    "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
                    "description": "Standard object's metadata.",
                    "default": {},
                },
                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "note": {"type": "string", "nullable": true, "writeOnly": true},
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}},
            },
            "x-kubernetes-map-type": "atomic",
        });
        assert_eq!(
            builtin(&v3),
            json!({
                "type": "object",
                "properties": {
                    "metadata": {
                        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                        "description": "Standard object's metadata.",
                        "default": {},
                    },
                    "port": {"type": "string", "format": "int-or-string"},
                    "note": {"type": "string"},
                    "items": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}},
                },
                "x-kubernetes-map-type": "atomic",
            })
        );
    }

    fn crd_resource(schema: Value) -> ResourceType {
        let mut resource = crate::registry::builtin::types()
            .into_iter()
            .find(|t| t.plural == "configmaps")
            .unwrap();
        resource.group = "example.com".into();
        resource.kind = "Widget".into();
        resource.builtin = false;
        resource.schema = Some(std::sync::Arc::new(schema));
        resource
    }

    #[test]
    fn crd_schema_drops_what_v2_cannot_say_as_apiextensions_does() {
        let resource = crd_resource(json!({
            "type": "object",
            "description": "A widget.",
            "required": ["spec"],
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size", "owner"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "default": 3, "example": 4},
                        "owner": {"type": "string", "nullable": true},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}},
                        "list": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 5.0}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
                        "raw": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                    },
                    "x-kubernetes-validations": [{"rule": "self.size > 0"}],
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
        }));
        let widget = custom_resource(&resource);
        let spec = &widget["properties"]["spec"];
        assert_eq!(widget["description"], "A widget.");
        assert_eq!(widget["required"], json!(["spec"]));
        // The nullable owner is no longer required, and has no type.
        assert_eq!(spec["required"], json!(["size"]));
        assert_eq!(spec["properties"]["owner"], json!({}));
        assert_eq!(
            spec["properties"]["size"],
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(
            spec["properties"]["port"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(
            spec["properties"]["free"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(spec["properties"]["list"]["items"]["maxLength"], 5);
        assert_eq!(
            spec["x-kubernetes-validations"],
            json!([{"rule": "self.size > 0"}])
        );
        let template = &spec["properties"]["template"];
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            template["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(spec["properties"]["raw"].get("properties").is_none());
        assert_eq!(
            widget["properties"]["status"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(widget["properties"]["kind"]["type"], "string");
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
        );
        assert!(!widget.to_string().contains("nullable"));
        assert!(!widget.to_string().contains("anyOf"));
        assert!(!widget.to_string().contains("default"));
    }

    #[test]
    fn crd_that_preserves_unknown_fields_is_a_bare_object() {
        let resource = crd_resource(json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object"}},
        }));
        assert_eq!(
            custom_resource(&resource),
            json!({
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
            })
        );
    }
}
