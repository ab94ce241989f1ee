//! OpenAPI v2 (Swagger 2.0), as kube-apiserver serves it at `GET /openapi/v2`: one document for
//! every served resource, built-in and custom.
//!
//! kubectl reads it (in gnostic's protobuf encoding, [`protobuf`]) where OpenAPI v3 is not
//! enough or not found: `kubectl explain --output plaintext-openapiv2`, client-side validation
//! and strategic merge patch lookups of older clients, helm 3's validation.
//!
//! The document is derived from the OpenAPI v3 documents ([`super::document`]), so both always
//! describe the same operations: each v3 operation becomes a v2 one (the request body a `body`
//! parameter, media types `consumes` and `produces`, parameter schemas flattened), and every
//! component schema a definition ([`schema`]). A custom resource's definition is its CRD's schema
//! made fit for v2 as apiextensions-apiserver publishes it ([`schema::custom_resource`]).
//!
//! One document is built per catalog and kept while its catalog's OpenAPI v3 documents are the
//! same (their hashes identify it); its protobuf encoding is made on the first request for it.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use super::builtin::{Definitions, REF_PREFIX};
use super::{KUBERNETES_VERSION, cached, custom_definition_name, document_paths};
use crate::registry::{Catalog, ResourceType};

pub mod protobuf;
pub mod schema;

/// Where `$ref`s point in a v2 document.
pub const DEFINITIONS_PREFIX: &str = "#/definitions/";

/// The v2 document of one catalog, in both encodings.
pub struct Document {
    json: Bytes,
    etag: String,
    protobuf: OnceLock<Result<Bytes, protobuf::Error>>,
}

impl Document {
    fn new(value: &Value) -> Document {
        let json = Bytes::from(serde_json::to_vec(value).unwrap_or_default());
        let etag = Sha512::digest(&json)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        Document {
            json,
            etag,
            protobuf: OnceLock::new(),
        }
    }

    /// The document as JSON.
    pub fn json(&self) -> &Bytes {
        &self.json
    }

    /// Upper-case hex of the SHA-512 of the JSON encoding, as kube-openapi computes its ETag
    /// (for both encodings).
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The document as gnostic's `openapi.v2.Document` protobuf message, encoded on first use.
    pub fn protobuf(&self) -> Result<Bytes, protobuf::Error> {
        self.protobuf
            .get_or_init(|| {
                let value: Value =
                    serde_json::from_slice(&self.json).map_err(protobuf::Error::json)?;
                protobuf::encode(&value).map(Bytes::from)
            })
            .clone()
    }
}

/// What identifies a built document: every OpenAPI v3 document path with its hash.
type Key = Vec<(String, Arc<str>)>;

struct Entry {
    key: Key,
    document: Arc<Document>,
}

/// Documents kept at once (one per distinct set of CRDs in the process); the least recently
/// used goes first.
const CACHE_LIMIT: usize = 4;

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

/// `GET /openapi/v2`: the document of `catalog`, built on first request and kept while the
/// catalog describes the same resources.
pub fn document(catalog: &Catalog) -> Arc<Document> {
    let key: Key = document_paths(catalog)
        .into_iter()
        .filter_map(|path| cached(catalog, &path, false).map(|(hash, _)| (path, hash)))
        .collect();
    {
        let mut entries = lock_cache();
        if let Some(at) = entries.iter().position(|e| e.key == key) {
            let entry = entries.remove(at);
            let document = entry.document.clone();
            entries.push(entry);
            return document;
        }
    }
    // Built outside the lock: two requests may both build; the results are equal.
    let document = Arc::new(Document::new(&build(catalog)));
    let mut entries = lock_cache();
    entries.retain(|e| e.key != key);
    if entries.len() >= CACHE_LIMIT {
        entries.remove(0);
    }
    entries.push(Entry {
        key,
        document: document.clone(),
    });
    document
}

/// The document as JSON: the operations of every v3 document, and their definitions.
pub fn build(catalog: &Catalog) -> Value {
    let custom: Vec<(String, &ResourceType)> = catalog
        .types
        .iter()
        .filter(|r| !has_builtin_definition(r))
        .map(|r| (custom_definition_name(r), r.as_ref()))
        .collect();
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for gv_path in document_paths(catalog) {
        let Some(v3) = super::document(catalog, &gv_path) else {
            continue;
        };
        if let Some(Value::Object(items)) = v3.get("paths") {
            for (path, item) in items {
                paths.insert(path.clone(), path_item(item));
            }
        }
        if let Some(Value::Object(schemas)) = v3.pointer("/components/schemas") {
            for (name, schema) in schemas {
                if definitions.contains_key(name) {
                    continue;
                }
                let definition = match custom.iter().find(|(n, _)| n == name) {
                    Some((_, resource)) => schema::custom_resource(resource),
                    None => schema::builtin(schema),
                };
                definitions.insert(name.clone(), definition);
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {
            "type": "apiKey",
            "name": "authorization",
            "in": "header",
            "description": "Bearer Token authentication",
        }},
        "security": [{"BearerToken": []}],
    })
}

/// Whether the v3 documents describe `resource` with a built-in definition (others get a
/// definition of their own, from their CRD's schema or free-form).
fn has_builtin_definition(resource: &ResourceType) -> bool {
    resource.builtin
        && Definitions::get()
            .kind_definition(&resource.group, &resource.version, &resource.kind)
            .is_some()
}

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

/// A v3 path item in v2's form.
fn path_item(item: &Value) -> Value {
    let mut out = Map::new();
    let Value::Object(item) = item else {
        return Value::Object(out);
    };
    for (key, value) in item {
        if METHODS.contains(&key.as_str()) {
            out.insert(key.clone(), operation(value));
        } else if key == "parameters" {
            out.insert(key.clone(), parameters(value));
        } else if key.starts_with("x-") {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

fn parameters(list: &Value) -> Value {
    Value::Array(
        list.as_array()
            .into_iter()
            .flatten()
            .map(parameter)
            .collect(),
    )
}

/// A v3 parameter in v2's form: its schema's type and constraints on the parameter itself.
fn parameter(param: &Value) -> Value {
    let mut out = Map::new();
    let Value::Object(param) = param else {
        return Value::Object(out);
    };
    for (key, value) in param {
        match key.as_str() {
            "name" | "in" | "description" | "required" | "allowEmptyValue" => {
                out.insert(key.clone(), value.clone());
            }
            "schema" => {
                if let Value::Object(schema) = value {
                    for (k, v) in schema {
                        if PARAMETER_SCHEMA_KEYS.contains(&k.as_str()) {
                            out.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            k if k.starts_with("x-") => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// What a v2 non-body parameter may say about its value.
const PARAMETER_SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "items",
    "collectionFormat",
    "default",
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
    "enum",
    "multipleOf",
];

/// A v3 operation in v2's form, as kube-openapi's v2 builder writes it: the request body is the
/// first parameter (`in: body`), its media types `consumes` (`*/*` without a body), the
/// responses' media types `produces`, every response carries its schema, and 401 is listed.
fn operation(op: &Value) -> Value {
    let mut out = Map::new();
    let Value::Object(op) = op else {
        return Value::Object(out);
    };
    let mut params = Vec::new();
    let mut consumes = vec![Value::from("*/*")];
    if let Some(Value::Object(body)) = op.get("requestBody") {
        let content = body.get("content").and_then(Value::as_object);
        if let Some(content) = content.filter(|c| !c.is_empty()) {
            consumes = content.keys().map(|k| Value::from(k.as_str())).collect();
        }
        let mut param = Map::new();
        param.insert("name".into(), "body".into());
        param.insert("in".into(), "body".into());
        if body.get("required") == Some(&Value::Bool(true)) {
            param.insert("required".into(), true.into());
        }
        let body_schema = content
            .and_then(|c| c.values().find_map(|m| m.get("schema")))
            .map(schema::builtin)
            .unwrap_or_else(|| json!({"type": "object"}));
        param.insert("schema".into(), body_schema);
        params.push(Value::Object(param));
    }
    if let Some(Value::Array(list)) = op.get("parameters") {
        params.extend(list.iter().map(parameter));
    }
    let mut produces: Vec<Value> = Vec::new();
    let mut responses = Map::new();
    if let Some(Value::Object(codes)) = op.get("responses") {
        for (code, response) in codes {
            let mut converted = Map::new();
            let description = response
                .get("description")
                .cloned()
                .unwrap_or_else(|| Value::from(""));
            converted.insert("description".into(), description);
            if let Some(Value::Object(content)) = response.get("content") {
                for media in content.keys() {
                    if !produces.iter().any(|p| p == media.as_str()) {
                        produces.push(media.as_str().into());
                    }
                }
                if let Some(schema) = content.values().find_map(|m| m.get("schema")) {
                    converted.insert("schema".into(), schema::builtin(schema));
                }
            }
            responses.insert(code.clone(), Value::Object(converted));
        }
    }
    responses
        .entry("401")
        .or_insert_with(|| json!({"description": "Unauthorized"}));
    for (key, value) in op {
        match key.as_str() {
            "description" | "summary" | "operationId" | "tags" | "deprecated" => {
                out.insert(key.clone(), value.clone());
            }
            k if k.starts_with("x-") => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    out.insert("consumes".into(), Value::Array(consumes));
    if !produces.is_empty() {
        out.insert("produces".into(), Value::Array(produces));
    }
    out.insert("schemes".into(), json!(["https"]));
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

/// A v3 `$ref` pointing into `definitions`.
fn reference(r: &str) -> String {
    match r.strip_prefix(REF_PREFIX) {
        Some(name) => format!("{DEFINITIONS_PREFIX}{name}"),
        None => r.to_owned(),
    }
}

#[cfg(test)]
mod tests;
