//! OpenAPI v3, as kube-apiserver serves it: the index (`GET /openapi/v3`) and one document per
//! group/version (`GET /openapi/v3/apis/<group>/<version>`); and OpenAPI v2 (`GET /openapi/v2`,
//! [`v2`]), one document derived from them.
//!
//! kubectl and helm read these before every apply: they look for the PATCH operation carrying
//! the object's `x-kubernetes-group-version-kind` and its `fieldValidation` parameter, and the
//! patch media types it lists decide how client-side apply patches (strategic merge patch for
//! built-in kinds only). `kubectl explain` reads `components.schemas`.
//!
//! Built-in schemas come from `k8s-openapi` ([`builtin`]); a custom resource's schema is its
//! CRD's `openAPIV3Schema` for that version. Documents are pure functions of the catalog, built
//! on first request and cached while their catalog is alive; the index hashes what a document
//! is built from, so listing it builds nothing.

use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::registry::{Catalog, ResourceType};

pub mod builtin;
pub mod paths;
pub mod v2;

use builtin::{Definitions, REF_PREFIX};

/// The Kubernetes version the documents describe.
const KUBERNETES_VERSION: &str = "v1.35.0";

/// `GET /openapi/v3`: every served document with its `serverRelativeURL`, whose `hash` changes
/// whenever the document does.
pub fn index(catalog: &Catalog) -> Value {
    let mut paths = Map::new();
    for gv_path in document_paths(catalog) {
        if let Some((hash, _)) = cached(catalog, &gv_path, false) {
            paths.insert(
                gv_path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{gv_path}?hash={hash}")}),
            );
        }
    }
    json!({ "paths": paths })
}

/// `GET /openapi/v3/<gv path>` (`api/v1`, `apis/apps/v1`, `apis`, `apis/apps`): the document,
/// or `None` when nothing is served there. Any `hash` (the router's query, or left on the path)
/// is ignored: the current document is always the answer.
pub fn document(catalog: &Catalog, gv_path: &str) -> Option<Arc<Value>> {
    let gv_path = gv_path.split('?').next().unwrap_or_default();
    cached(catalog, gv_path.trim_matches('/'), true).and_then(|(_, document)| document)
}

/// The schema of a built-in kind with every reference inlined, in the form pruning reads
/// (`properties`, `items`, `additionalProperties`, `x-kubernetes-*` flags), or `None` for a kind
/// this server has no schema for. Descriptions are left out (`kubectl explain` reads the
/// documents). A CRD's `openAPIV3Schema` is free-form (`x-kubernetes-preserve-unknown-fields`).
pub fn builtin_schema(group: &str, version: &str, kind: &str) -> Option<Arc<Value>> {
    Definitions::structural_of_kind(group, version, kind)
}

/// Every document path served, in index order: `api`, `api/v1`, `apis`, then each group and
/// its versions.
fn document_paths(catalog: &Catalog) -> Vec<String> {
    let mut out = vec!["api".to_owned()];
    let groups = catalog.groups();
    for (group, versions) in &groups {
        if group.is_empty() {
            out.extend(versions.iter().map(|v| format!("api/{v}")));
        }
    }
    out.push("apis".to_owned());
    for (group, versions) in &groups {
        if !group.is_empty() {
            out.push(format!("apis/{group}"));
            out.extend(versions.iter().map(|v| format!("apis/{group}/{v}")));
        }
    }
    out
}

/// What a document is built from.
enum Source {
    /// `/api`: the core API versions.
    CoreVersions,
    /// `/apis`: the group list.
    Groups,
    /// `/apis/<group>`: one group.
    Group(String),
    /// One group/version's resources.
    Resources(Vec<Arc<ResourceType>>),
}

fn source(catalog: &Catalog, gv_path: &str) -> Option<Source> {
    let parts: Vec<&str> = gv_path.split('/').collect();
    match parts.as_slice() {
        ["api"] => Some(Source::CoreVersions),
        ["apis"] => Some(Source::Groups),
        ["api", version] => resources(catalog, "", version),
        ["apis", group] if !group.is_empty() => catalog
            .groups()
            .iter()
            .any(|(g, _)| g == group)
            .then(|| Source::Group((*group).to_owned())),
        ["apis", group, version] if !group.is_empty() => resources(catalog, group, version),
        _ => None,
    }
}

fn resources(catalog: &Catalog, group: &str, version: &str) -> Option<Source> {
    let resources = catalog.resources(group, version);
    (!resources.is_empty()).then_some(Source::Resources(resources))
}

/// What identifies a built document: its path and everything about its resources that the
/// document depends on. A custom resource's schema is identified by its allocation, which the
/// cache entry keeps alive (so the address cannot be reused while the entry exists).
#[derive(Clone, PartialEq, Eq)]
struct Key {
    gv_path: String,
    resources: Vec<ResourceKey>,
}

#[derive(Clone, PartialEq, Eq)]
struct ResourceKey {
    kind: String,
    plural: String,
    namespaced: bool,
    status: bool,
    scale: bool,
    builtin: bool,
    virtual_only: bool,
    schema: usize,
}

impl Key {
    fn new(gv_path: &str, source: &Source) -> (Key, Vec<Arc<Value>>) {
        let mut pins = Vec::new();
        let resources = match source {
            Source::Resources(resources) => resources
                .iter()
                .map(|r| {
                    let schema = match &r.schema {
                        Some(schema) => {
                            pins.push(schema.clone());
                            Arc::as_ptr(schema) as usize
                        }
                        None => 0,
                    };
                    ResourceKey {
                        kind: r.kind.clone(),
                        plural: r.plural.clone(),
                        namespaced: r.namespaced,
                        status: r.status,
                        scale: r.scale.is_some(),
                        builtin: r.builtin,
                        virtual_only: r.virtual_only,
                        schema,
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        (
            Key {
                gv_path: gv_path.to_owned(),
                resources,
            },
            pins,
        )
    }
}

#[derive(Clone)]
struct Entry {
    key: Key,
    hash: Arc<str>,
    /// Built on the first request for it; the index needs only the hash.
    document: Option<Arc<Value>>,
    /// The CRD schemas the key's addresses refer to.
    pins: Vec<Arc<Value>>,
}

impl Entry {
    /// Whether the catalogs this document was built from are gone: only the cache still holds
    /// its schemas. Documents without custom resources never go stale.
    fn stale(&self) -> bool {
        !self.pins.is_empty() && self.pins.iter().all(|p| Arc::strong_count(p) == 1)
    }
}

/// Beyond this many documents, stale ones are dropped first, then the oldest.
const CACHE_LIMIT: usize = 256;

/// Changes whenever the way documents are built changes, so that clients' caches (keyed by
/// the hash) do not serve an older build's documents.
const FORMAT: &str = concat!("atoll-openapi-1/", env!("CARGO_PKG_VERSION"));

fn cache() -> &'static Mutex<Vec<Entry>> {
    static CACHE: OnceLock<Mutex<Vec<Entry>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

fn lock_cache() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    match cache().lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The hash of the document at `gv_path`, and the document itself when `with_document`.
fn cached(
    catalog: &Catalog,
    gv_path: &str,
    with_document: bool,
) -> Option<(Arc<str>, Option<Arc<Value>>)> {
    let source = source(catalog, gv_path)?;
    let (key, pins) = Key::new(gv_path, &source);
    let known = {
        let entries = lock_cache();
        let found = entries.iter().find(|e| e.key == key);
        if let Some(entry) = found
            && (!with_document || entry.document.is_some())
        {
            return Some((entry.hash.clone(), entry.document.clone()));
        }
        found.map(|e| e.hash.clone())
    };
    // Built outside the lock: two requests may both build; the results are equal.
    let hash = known.unwrap_or_else(|| input_hash(gv_path, &source).into());
    let document = with_document.then(|| Arc::new(build(gv_path, &source)));
    let mut entries = lock_cache();
    entries.retain(|e| !e.stale() && e.key != key);
    if entries.len() >= CACHE_LIMIT {
        entries.remove(0);
    }
    entries.push(Entry {
        key,
        hash: hash.clone(),
        document: document.clone(),
        pins,
    });
    Some((hash, document))
}

/// Upper-case hex of a SHA-256 over everything the document is built from: its path, and each
/// resource's names, scope, subresources and schema. The built-in schemas are fixed for a
/// build ([`FORMAT`]).
fn input_hash(gv_path: &str, source: &Source) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(FORMAT.as_bytes());
    field(KUBERNETES_VERSION.as_bytes());
    field(gv_path.as_bytes());
    if let Source::Resources(resources) = source {
        for r in resources {
            for text in [&r.group, &r.version, &r.kind, &r.list_kind, &r.plural] {
                field(text.as_bytes());
            }
            field(&[
                u8::from(r.namespaced),
                u8::from(r.status),
                u8::from(r.scale.is_some()),
                u8::from(r.builtin),
                u8::from(r.virtual_only),
            ]);
            let schema = r
                .schema
                .as_deref()
                .and_then(|s| serde_json::to_vec(s).ok())
                .unwrap_or_default();
            field(&schema);
        }
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

fn build(gv_path: &str, source: &Source) -> Value {
    let definitions = Definitions::get();
    let mut paths = Map::new();
    let mut roots: Vec<String> = Vec::new();
    let mut schemas = Map::new();
    match source {
        Source::CoreVersions => {
            paths.insert(
                "/api/".into(),
                discovery_path("getCoreAPIVersions", "core", builtin::API_VERSIONS),
            );
            roots.push(builtin::API_VERSIONS.into());
        }
        Source::Groups => {
            paths.insert(
                "/apis/".into(),
                discovery_path("getAPIVersions", "apis", builtin::API_GROUP_LIST),
            );
            roots.push(builtin::API_GROUP_LIST.into());
        }
        Source::Group(group) => {
            let id = paths::operation_group(group);
            paths.insert(
                format!("/apis/{group}/"),
                discovery_path(
                    &format!("get{id}APIGroup"),
                    &paths::tag(group),
                    builtin::API_GROUP,
                ),
            );
            roots.push(builtin::API_GROUP.into());
        }
        Source::Resources(resources) => {
            roots.extend([
                builtin::API_RESOURCE_LIST.to_owned(),
                builtin::STATUS.to_owned(),
                builtin::DELETE_OPTIONS.to_owned(),
                builtin::PATCH.to_owned(),
                builtin::OBJECT_META.to_owned(),
                builtin::LIST_META.to_owned(),
            ]);
            if let Some(first) = resources.first() {
                paths.insert(
                    format!("/{gv_path}/"),
                    discovery_path(
                        &format!(
                            "get{}{}APIResources",
                            paths::operation_group(&first.group),
                            paths::capitalize(&first.version)
                        ),
                        &format!("{}_{}", paths::tag(&first.group), first.version),
                        builtin::API_RESOURCE_LIST,
                    ),
                );
            }
            for resource in resources {
                if resource.scale.is_some() {
                    roots.push(builtin::SCALE.to_owned());
                }
                let builtin_name = resource
                    .builtin
                    .then(|| {
                        definitions.kind_definition(
                            &resource.group,
                            &resource.version,
                            &resource.kind,
                        )
                    })
                    .flatten();
                let (kind_name, list_name) = match builtin_name {
                    Some(kind_name) => {
                        let list_name = format!("{kind_name}List");
                        roots.push(kind_name.to_owned());
                        roots.push(list_name.clone());
                        (kind_name.to_owned(), list_name)
                    }
                    None => {
                        let kind_name = custom_definition_name(resource);
                        let list_name = format!("{kind_name}List");
                        schemas.insert(kind_name.clone(), custom_schema(resource));
                        schemas.insert(list_name.clone(), custom_list_schema(resource, &kind_name));
                        (kind_name, list_name)
                    }
                };
                paths::add(
                    &mut paths,
                    resource,
                    &paths::Schemas {
                        kind: &kind_name,
                        list: &list_name,
                    },
                );
            }
        }
    }
    for (name, schema) in definitions.closure(roots.iter().map(String::as_str)) {
        schemas.entry(name).or_insert(schema);
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn discovery_path(operation_id: &str, tag: &str, definition: &str) -> Value {
    let schema = json!({"$ref": format!("{REF_PREFIX}{definition}")});
    json!({"get": {
        "description": "get available resources",
        "operationId": operation_id,
        "tags": [tag],
        "responses": {"200": {"description": "OK", "content": {
            "application/json": {"schema": schema},
            "application/yaml": {"schema": schema},
            "application/vnd.kubernetes.protobuf": {"schema": schema},
        }}},
    }})
}

/// Upstream's name for a custom resource's schema: the group reversed, then version and kind:
/// `com.example.v1.Widget` for `widgets.example.com/v1`.
fn custom_definition_name(resource: &ResourceType) -> String {
    let mut parts: Vec<&str> = resource
        .group
        .split('.')
        .filter(|p| !p.is_empty())
        .collect();
    parts.reverse();
    parts.push(&resource.version);
    parts.push(&resource.kind);
    parts.join(".")
}

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// A custom resource's `openAPIV3Schema`, with `apiVersion`, `kind` and `metadata` as upstream
/// sets them and the kind's group/version/kind. Without a schema, the object is free-form.
fn custom_schema(resource: &ResourceType) -> Value {
    let mut schema = match resource.schema.as_deref() {
        Some(Value::Object(map)) => map.clone(),
        _ => builtin::free_form(),
    };
    schema.entry("type").or_insert_with(|| "object".into());
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            "apiVersion".into(),
            json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
        );
        properties.insert(
            "kind".into(),
            json!({"description": KIND_DESCRIPTION, "type": "string"}),
        );
        properties.insert(
            "metadata".into(),
            json!({
                "allOf": [{"$ref": format!("{REF_PREFIX}{}", builtin::OBJECT_META)}],
                "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            }),
        );
    }
    schema.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": resource.group, "version": resource.version, "kind": resource.kind}]),
    );
    Value::Object(schema)
}

fn custom_list_schema(resource: &ResourceType, kind_name: &str) -> Value {
    json!({
        "description": format!("{} is a list of {}", resource.list_kind, resource.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": API_VERSION_DESCRIPTION, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/api-conventions.md", resource.plural),
                "type": "array",
                "items": {"$ref": format!("{REF_PREFIX}{kind_name}")},
            },
            "kind": {"description": KIND_DESCRIPTION, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": format!("{REF_PREFIX}{}", builtin::LIST_META)}],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            },
        },
        "x-kubernetes-group-version-kind": [
            {"group": resource.group, "version": resource.version, "kind": resource.list_kind}
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn widget_crd(spec_properties: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "description": "A widget.",
                        "properties": {
                            "spec": {"type": "object", "description": "What the widget should be.", "properties": spec_properties},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        },
                    }},
                }],
            },
            "status": {"conditions": [{"type": "Established", "status": "True"}]},
        })
    }

    fn registry_with_widget(spec_properties: Value) -> Registry {
        let registry = Registry::new();
        registry.set_crds(&[widget_crd(spec_properties)]);
        registry
    }

    fn url_hash(index: &Value, gv_path: &str) -> String {
        let url = index["paths"][gv_path]["serverRelativeURL"]
            .as_str()
            .unwrap_or_else(|| panic!("{gv_path} not in the index"));
        assert!(url.starts_with(&format!("/openapi/v3/{gv_path}?hash=")));
        url.rsplit_once("hash=").unwrap().1.to_owned()
    }

    #[test]
    fn index_lists_every_served_group_version() {
        let catalog = Registry::new().catalog();
        let index = index(&catalog);
        for path in [
            "api",
            "api/v1",
            "apis",
            "apis/apps",
            "apis/apps/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/rbac.authorization.k8s.io/v1",
            "apis/coordination.k8s.io/v1",
        ] {
            assert!(!url_hash(&index, path).is_empty());
        }
        for path in index["paths"].as_object().unwrap().keys() {
            assert_refs_resolve(&document(&catalog, path).unwrap());
        }
        assert!(index["paths"].get("apis/example.com/v1").is_none());
        assert!(document(&catalog, "apis/example.com/v1").is_none());
        assert!(document(&catalog, "/apis/apps/v1?hash=0123").is_some());
        assert!(document(&catalog, "apis/apps/v2").is_none());
    }

    #[test]
    fn apps_document_advertises_strategic_merge_patch_and_field_validation() {
        let catalog = Registry::new().catalog();
        let doc = document(&catalog, "apis/apps/v1").unwrap();
        assert_eq!(doc["openapi"], "3.0.0");
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        assert_eq!(patch["x-kubernetes-action"], "patch");
        let params: Vec<(&str, &str)> = patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap(), p["in"].as_str().unwrap()))
            .collect();
        for name in ["dryRun", "fieldManager", "fieldValidation", "force"] {
            assert!(params.contains(&(name, "query")), "{name} missing");
        }
        let content = patch["requestBody"]["content"].as_object().unwrap();
        for media in [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ] {
            assert!(content.contains_key(media), "{media} missing");
        }
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert_eq!(
            schemas["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
        );
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(schemas.contains_key("io.k8s.api.core.v1.PodSpec"));
        assert!(schemas.contains_key("io.k8s.api.autoscaling.v1.Scale"));
        // Only this group's kinds.
        assert!(!schemas.contains_key("io.k8s.api.core.v1.ConfigMap"));
        assert_refs_resolve(&doc);
    }

    #[test]
    fn core_document_describes_configmaps_for_explain() {
        let catalog = Registry::new().catalog();
        let doc = document(&catalog, "api/v1").unwrap();
        assert!(
            doc["paths"]
                .get("/api/v1/namespaces/{namespace}/configmaps")
                .is_some()
        );
        assert!(doc["paths"].get("/api/v1/namespaces/{name}").is_some());
        let cm = &doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
        assert!(
            cm["description"]
                .as_str()
                .unwrap()
                .contains("configuration data")
        );
        assert_eq!(
            cm["properties"]["data"]["additionalProperties"]["type"],
            "string"
        );
        assert_eq!(
            cm["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
        );
        assert_refs_resolve(&doc);
    }

    #[test]
    fn custom_resource_document_has_no_strategic_merge_patch() {
        let registry = registry_with_widget(json!({"size": {"type": "integer"}}));
        let catalog = registry.catalog();
        let doc = document(&catalog, "apis/example.com/v1").unwrap();
        let item = &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
        for method in ["get", "put", "patch", "delete"] {
            assert!(item.get(method).is_some(), "{method} missing");
        }
        assert!(
            doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"]["post"].is_object()
        );
        assert!(doc["paths"]["/apis/example.com/v1/widgets"]["get"].is_object());
        for patch in [
            &item["patch"],
            &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"]["patch"],
        ] {
            let content = patch["requestBody"]["content"].as_object().unwrap();
            let mut media: Vec<&str> = content.keys().map(String::as_str).collect();
            media.sort();
            assert_eq!(
                media,
                [
                    "application/apply-patch+yaml",
                    "application/json-patch+json",
                    "application/merge-patch+json"
                ]
            );
            assert_eq!(
                patch["x-kubernetes-group-version-kind"],
                json!({"group": "example.com", "version": "v1", "kind": "Widget"})
            );
        }
        let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
        );
        assert_eq!(widget["description"], "A widget.");
        assert_eq!(
            widget["properties"]["spec"]["properties"]["size"]["type"],
            "integer"
        );
        assert_eq!(
            widget["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(doc["components"]["schemas"]["com.example.v1.WidgetList"].is_object());
        assert_refs_resolve(&doc);
    }

    #[test]
    fn hash_changes_with_the_crd_schema() {
        let before = registry_with_widget(json!({"size": {"type": "integer"}}));
        let after = registry_with_widget(json!({"size": {"type": "string"}}));
        let same = registry_with_widget(json!({"size": {"type": "integer"}}));
        let (before, after, same) = (before.catalog(), after.catalog(), same.catalog());
        let path = "apis/example.com/v1";
        let h_before = url_hash(&index(&before), path);
        let h_after = url_hash(&index(&after), path);
        assert_ne!(h_before, h_after);
        assert_eq!(h_before, url_hash(&index(&same), path));
        // Built-in documents do not change with CRDs.
        assert_eq!(
            url_hash(&index(&before), "apis/apps/v1"),
            url_hash(&index(&after), "apis/apps/v1")
        );
        assert_eq!(
            document(&after, path).unwrap()["components"]["schemas"]["com.example.v1.Widget"]["properties"]
                ["spec"]["properties"]["size"]["type"],
            "string"
        );
    }

    #[test]
    fn builtin_configmap_schema_is_structural() {
        let cm = builtin_schema("", "v1", "ConfigMap").unwrap();
        assert_eq!(cm["properties"]["data"]["type"], "object");
        assert_eq!(
            cm["properties"]["data"]["additionalProperties"]["type"],
            "string"
        );
        let metadata = &cm["properties"]["metadata"];
        assert_eq!(metadata["properties"]["name"]["type"], "string");
        assert_eq!(
            metadata["properties"]["labels"]["additionalProperties"]["type"],
            "string"
        );
        assert!(builtin_schema("", "v1", "Widget").is_none());
        assert!(builtin_schema("apps", "v1", "Deployment").is_some());
    }

    #[test]
    fn every_builtin_kind_has_its_upstream_schema() {
        for t in crate::registry::builtin::types() {
            let schema = builtin_schema(&t.group, &t.version, &t.kind)
                .unwrap_or_else(|| panic!("no schema for {}", t.kind));
            assert!(schema["properties"]["metadata"].is_object(), "{}", t.kind);
        }
        let catalog = Registry::new().catalog();
        let doc = document(&catalog, "apis/authorization.k8s.io/v1").unwrap();
        let post = &doc["paths"]["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"]["post"];
        assert_eq!(
            post["requestBody"]["content"]["*/*"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.authorization.v1.SelfSubjectAccessReview"
        );
    }

    #[test]
    fn builtin_schema_prunes_unknown_fields() {
        let schema = builtin_schema("", "v1", "ConfigMap").unwrap();
        let mut object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "bogus": 1},
            "data": {"k": "v"},
            "extra": true,
        });
        let pruned = crate::validation::structural::prune(
            &mut object,
            &crate::validation::schema::Schema::compile(&schema),
            &[],
        );
        assert_eq!(pruned, ["extra"]);
        assert!(object.get("extra").is_none());
        assert_eq!(object["data"]["k"], "v");
    }

    /// Every `$ref` in a document names one of its component schemas.
    fn assert_refs_resolve(doc: &Value) {
        fn walk(v: &Value, schemas: &Map<String, Value>) {
            match v {
                Value::Object(map) => {
                    if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                        let name = r.strip_prefix(REF_PREFIX).expect("component reference");
                        assert!(schemas.contains_key(name), "dangling {r}");
                    }
                    map.values().for_each(|v| walk(v, schemas));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, schemas)),
                _ => {}
            }
        }
        walk(doc, doc["components"]["schemas"].as_object().unwrap());
    }
}
