use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;
use crate::registry::Registry;

fn widget_crd(size_type: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "description": "A widget.",
                        "properties": {
                            "spec": {"type": "object", "properties": {
                                "size": {"type": size_type},
                                "owner": {"type": "string", "nullable": true},
                            }},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        },
                    }},
                },
                {
                    "name": "v1beta1", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                },
                {
                    "name": "v1alpha1", "served": false, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                },
            ],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    })
}

fn registry_with_widget(size_type: &str) -> Registry {
    let registry = Registry::new();
    registry.set_crds(&[widget_crd(size_type)]);
    registry
}

/// Every `$ref` names a definition of the document.
fn assert_refs_resolve(doc: &Value) {
    fn walk(v: &Value, definitions: &Map<String, Value>) {
        match v {
            Value::Object(map) => {
                if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                    let name = r
                        .strip_prefix(DEFINITIONS_PREFIX)
                        .unwrap_or_else(|| panic!("{r} does not point into definitions"));
                    assert!(definitions.contains_key(name), "dangling {r}");
                }
                map.values().for_each(|v| walk(v, definitions));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, definitions)),
            _ => {}
        }
    }
    walk(doc, doc["definitions"].as_object().unwrap());
}

/// Every schema holds only what gnostic's v2 `Schema` accepts (else kubectl cannot read the
/// document at all).
fn assert_v2_schema(schema: &Value, at: &str) {
    let map = schema
        .as_object()
        .unwrap_or_else(|| panic!("{at}: not an object"));
    for (key, value) in map {
        let here = format!("{at}.{key}");
        assert!(
            key.starts_with("x-") || schema::V2_KEYS.contains(&key.as_str()),
            "{here}: not a v2 schema keyword"
        );
        match key.as_str() {
            "properties" => value
                .as_object()
                .unwrap()
                .iter()
                .for_each(|(name, s)| assert_v2_schema(s, &format!("{here}.{name}"))),
            "items" => assert_v2_schema(value, &here),
            "additionalProperties" if value.is_object() => assert_v2_schema(value, &here),
            "allOf" => value
                .as_array()
                .unwrap()
                .iter()
                .for_each(|s| assert_v2_schema(s, &here)),
            _ => {}
        }
    }
}

fn assert_v2_operations(doc: &Value) {
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (key, op) in item.as_object().unwrap() {
            if key == "parameters" {
                continue;
            }
            for field in op.as_object().unwrap().keys() {
                assert!(
                    [
                        "description",
                        "operationId",
                        "tags",
                        "consumes",
                        "produces",
                        "schemes",
                        "parameters",
                        "responses"
                    ]
                    .contains(&field.as_str())
                        || field.starts_with("x-"),
                    "{path} {key}: {field} is not a v2 operation field"
                );
            }
            for param in op["parameters"].as_array().into_iter().flatten() {
                if param["in"] == "body" {
                    assert!(param["schema"].is_object(), "{path} {key}: body schema");
                } else {
                    assert!(param["type"].is_string(), "{path} {key}: {param}");
                    assert!(param.get("schema").is_none());
                }
            }
            for (code, response) in op["responses"].as_object().unwrap() {
                assert!(response["description"].is_string(), "{path} {key} {code}");
                assert!(response.get("content").is_none());
            }
        }
    }
}

#[test]
fn builtin_document_is_swagger_2_for_every_resource() {
    let catalog = Registry::new().catalog();
    let doc = build(&catalog);
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(
        doc["info"],
        json!({"title": "Kubernetes", "version": "v1.35.0"})
    );
    assert!(doc.get("components").is_none());
    let paths = doc["paths"].as_object().unwrap();
    for t in catalog.types.iter().filter(|t| !t.virtual_only) {
        let prefix = if t.group.is_empty() {
            format!("/api/{}", t.version)
        } else {
            format!("/apis/{}/{}", t.group, t.version)
        };
        let scope = if t.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let item = format!("{prefix}{scope}/{}/{{name}}", t.plural);
        assert!(paths.contains_key(&item), "{item} missing");
        assert_eq!(
            paths[&item]["get"]["x-kubernetes-group-version-kind"]["kind"],
            t.kind.as_str()
        );
    }
    // The operations kubectl reads, in v2's form.
    let item = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
    let patch = &item["patch"];
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(
        patch["consumes"],
        json!([
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json"
        ])
    );
    assert_eq!(
        patch["parameters"][0],
        json!({
            "name": "body", "in": "body", "required": true,
            "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"},
        })
    );
    let names: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in ["dryRun", "fieldManager", "fieldValidation", "force"] {
        assert!(names.contains(&name), "{name} missing");
    }
    let field_validation = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fieldValidation")
        .unwrap();
    assert_eq!(field_validation["in"], "query");
    assert_eq!(field_validation["type"], "string");
    assert_eq!(
        patch["responses"]["200"]["schema"],
        json!({"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"})
    );
    assert_eq!(patch["responses"]["401"]["description"], "Unauthorized");
    assert!(
        patch["produces"]
            .as_array()
            .unwrap()
            .contains(&json!("application/json"))
    );
    assert_eq!(patch["schemes"], json!(["https"]));
    let namespace_param = item["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "namespace")
        .unwrap();
    assert_eq!(namespace_param["in"], "path");
    assert_eq!(namespace_param["required"], true);
    assert_eq!(namespace_param["type"], "string");
    let list = &paths["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"];
    assert_eq!(list["x-kubernetes-action"], "list");
    assert!(
        list["produces"]
            .as_array()
            .unwrap()
            .contains(&json!("application/json;stream=watch"))
    );
    assert_eq!(
        paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["put"]["x-kubernetes-group-version-kind"]
            ["kind"],
        "Scale"
    );
    assert_eq!(
        paths["/apis/apps/v1/namespaces/{namespace}/deployments"]["delete"]["x-kubernetes-action"],
        "deletecollection"
    );

    let definitions = doc["definitions"].as_object().unwrap();
    let deployment = &definitions["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    assert_eq!(
        definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"],
        "int-or-string"
    );
    assert_eq!(
        definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]["x-kubernetes-patch-merge-key"],
        "name"
    );
    for (name, schema) in definitions {
        assert_v2_schema(schema, name);
    }
    assert_v2_operations(&doc);
    assert_refs_resolve(&doc);
    // (`nullable`, `anyOf` and `oneOf` are property names of JSONSchemaProps: the keyword
    // checks above are what tells them apart.)
    let text = doc.to_string();
    for v3_only in ["#/components/", "\"requestBody\""] {
        assert!(!text.contains(v3_only), "{v3_only} in the v2 document");
    }
}

#[test]
fn crd_versions_appear_once_served() {
    let registry = registry_with_widget("integer");
    let doc = build(&registry.catalog());
    let paths = doc["paths"].as_object().unwrap();
    let item = &paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
    assert_eq!(
        item["patch"]["consumes"],
        json!([
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ])
    );
    assert_eq!(
        item["get"]["x-kubernetes-group-version-kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert!(
        paths.contains_key("/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status")
    );
    assert!(paths.contains_key("/apis/example.com/v1beta1/widgets"));
    assert!(
        !paths.keys().any(|p| p.contains("v1alpha1")),
        "unserved version"
    );

    let definitions = doc["definitions"].as_object().unwrap();
    let widget = &definitions["com.example.v1.Widget"];
    assert_eq!(widget["description"], "A widget.");
    // Nullable: no type, as apiextensions-apiserver publishes it in v2.
    assert_eq!(
        widget["properties"]["spec"]["properties"]["owner"],
        json!({})
    );
    assert_eq!(
        widget["properties"]["spec"]["properties"]["size"],
        json!({"type": "integer"})
    );
    assert_eq!(
        widget["properties"]["status"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        widget["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(
        definitions["com.example.v1beta1.Widget"],
        json!({
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1beta1", "kind": "Widget"}],
        })
    );
    let list = &definitions["com.example.v1.WidgetList"];
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/definitions/com.example.v1.Widget"
    );
    assert_eq!(
        list["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
    );
    for (name, schema) in definitions {
        assert_v2_schema(schema, name);
    }
    assert_v2_operations(&doc);
    assert_refs_resolve(&doc);
}

#[test]
fn document_is_built_once_per_catalog_and_again_when_a_crd_changes() {
    let builtin = Registry::new();
    let first = document(&builtin.catalog());
    let again = document(&Registry::new().catalog());
    assert!(Arc::ptr_eq(&first, &again), "the same resources, one build");
    assert_eq!(first.etag().len(), 128);
    assert!(
        first
            .etag()
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    );

    let integer = document(&registry_with_widget("integer").catalog());
    let string = document(&registry_with_widget("string").catalog());
    assert_ne!(integer.etag(), first.etag());
    assert_ne!(integer.etag(), string.etag());
    let parsed: Value = serde_json::from_slice(string.json()).unwrap();
    assert!(parsed["definitions"]["com.example.v1.Widget"].is_object());
    let same = document(&registry_with_widget("string").catalog());
    assert_eq!(same.etag(), string.etag());
    assert!(!string.protobuf().unwrap().is_empty());
}
