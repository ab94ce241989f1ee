//! The component schemas of the built-in kinds, generated once from `k8s-openapi`'s schemars
//! implementations and fixed up to read as upstream's: definition names such as
//! `io.k8s.api.core.v1.ConfigMap`, `x-kubernetes-group-version-kind` on every kind, list kinds,
//! and the patch and list extensions (`x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`,
//! …) that client-side apply computes strategic merge patches from.

use std::collections::HashMap;
#[cfg(test)]
use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use k8s_openapi::api::{authentication, autoscaling, policy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::generate::SchemaSettings;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::registry::builtin::{BUILTINS, SchemaFn};

#[rustfmt::skip]
mod structural_definitions;

/// Where `$ref`s point.
pub const REF_PREFIX: &str = "#/components/schemas/";

pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
pub const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
pub const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
pub const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
pub const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
const JSON_SCHEMA_PROPS: &str =
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";

/// A kind whose schema is generated, with its group/version/kind.
struct Root {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    /// Whether the kind is stored and listed (and so has a list kind).
    served: bool,
    schema: SchemaFn,
}

macro_rules! root {
    ($group:expr, $version:expr, $kind:expr, $ty:ty) => {
        Root {
            group: $group,
            version: $version,
            kind: $kind,
            served: false,
            schema: |generator| generator.subschema_for::<$ty>(),
        }
    };
}

/// The kinds every document refers to beside the served ones.
static REFERRED: &[Root] = &[
    root!("autoscaling", "v1", "Scale", autoscaling::v1::Scale),
    root!(
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        authentication::v1::TokenRequest
    ),
    root!("policy", "v1", "Eviction", policy::v1::Eviction),
    root!("", "v1", "Status", meta::Status),
    root!("", "v1", "DeleteOptions", meta::DeleteOptions),
    root!("", "v1", "APIVersions", meta::APIVersions),
    root!("", "v1", "APIGroupList", meta::APIGroupList),
    root!("", "v1", "APIGroup", meta::APIGroup),
    root!("", "v1", "APIResourceList", meta::APIResourceList),
    root!("", "v1", "Patch", meta::Patch),
];

/// The served built-in kinds (as `registry::builtin` lists them), then the kinds every document
/// refers to.
fn all_roots() -> impl Iterator<Item = Root> {
    let served = BUILTINS.iter().map(|b| Root {
        group: b.group,
        version: b.version,
        kind: b.kind,
        served: b.verbs.contains(&"list"),
        schema: b.schema,
    });
    let referred = REFERRED.iter().map(|r| Root {
        group: r.group,
        version: r.version,
        kind: r.kind,
        served: r.served,
        schema: r.schema,
    });
    served.chain(referred)
}

/// Upstream's `x-kubernetes-*` extensions of every definition's properties (list types, map
/// keys, patch strategies and merge keys) and the definitions it marks atomic, generated from
/// Kubernetes 1.35's OpenAPI definitions by scripts/generate-merge-keys.
const EXTENSIONS: &str = include_str!("extensions.json");

/// The generated extensions, read without building a tree: each definition's properties stay
/// unparsed text until a definition with that name is generated. (Parsed whole, the table's
/// small maps took over a MiB, on every kind's first write, which the allocator kept.)
#[derive(serde::Deserialize)]
struct Extensions<'a> {
    #[serde(borrow)]
    properties: HashMap<&'a str, &'a RawValue>,
    #[serde(borrow)]
    atomic: Vec<&'a str>,
}

/// Sets upstream's extensions on the definitions there are.
fn apply_extensions(schemas: &mut Map<String, Value>) {
    let extensions: Extensions<'_> = match serde_json::from_str(EXTENSIONS) {
        Ok(extensions) => extensions,
        Err(error) => {
            tracing::error!(%error, "the generated OpenAPI extensions do not parse");
            return;
        }
    };
    for (definition, schema) in schemas.iter_mut() {
        let Some(raw) = extensions.properties.get(definition.as_str()) else {
            continue;
        };
        let Some(Value::Object(target)) = schema.get_mut("properties") else {
            continue;
        };
        let properties: Map<String, Value> = match serde_json::from_str(raw.get()) {
            Ok(properties) => properties,
            Err(error) => {
                tracing::error!(%error, definition, "the generated OpenAPI extensions do not parse");
                continue;
            }
        };
        for (property, found) in properties {
            if let (Some(Value::Object(target)), Value::Object(found)) =
                (target.get_mut(&property), found)
            {
                target.extend(found);
            }
        }
    }
    for name in extensions.atomic {
        if let Some(Value::Object(schema)) = schemas.get_mut(name) {
            schema.insert("x-kubernetes-map-type".into(), "atomic".into());
        }
    }
}

/// Every generated component schema, and which definition each kind has.
pub struct Definitions {
    schemas: Map<String, Value>,
    /// (group, version, kind, definition name) of every kind and list kind.
    kinds: Vec<(&'static str, &'static str, String, String)>,
    structural: Mutex<HashMap<String, Arc<Value>>>,
}

static DEFINITIONS: OnceLock<Definitions> = OnceLock::new();

/// Group, version and kind.
type KindKey = (String, String, String);

impl Definitions {
    /// The definitions, generated on first use.
    pub fn get() -> &'static Definitions {
        DEFINITIONS.get_or_init(|| Definitions::generate(all_roots()))
    }

    /// The structural schema of one built-in kind (see [`Definitions::structural`]). Until the
    /// whole set is generated (for an OpenAPI document), only the kind's own definitions are,
    /// and only its structural schema is kept: a server that has served no document holds the
    /// schemas of the kinds it stored, not of all 66.
    pub fn structural_of_kind(group: &str, version: &str, kind: &str) -> Option<Arc<Value>> {
        if let Some(all) = DEFINITIONS.get() {
            let name = all.kind_definition(group, version, kind)?;
            return all.structural(name);
        }
        static KINDS: OnceLock<Mutex<HashMap<KindKey, Arc<Value>>>> = OnceLock::new();
        let cache = KINDS.get_or_init(Default::default);
        let key = (group.to_owned(), version.to_owned(), kind.to_owned());
        if let Some(found) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Some(found);
        }
        let structural = Definitions::committed_structural(group, version, kind).or_else(|| {
            let own = Definitions::generate(
                all_roots().filter(|r| r.group == group && r.version == version && r.kind == kind),
            );
            let name = own.kind_definition(group, version, kind)?.to_owned();
            own.structural(&name)
        })?;
        if let Ok(mut cache) = cache.lock() {
            cache.insert(key, structural.clone());
        }
        Some(structural)
    }

    /// The structural schema of one built-in kind from the definitions committed in
    /// [`structural_definitions`]: only the kind's own definitions are parsed, and neither
    /// schemars nor `k8s-openapi`'s schema code runs. (Generating them for the objects a server
    /// writes at start ran code that then stayed resident in every idle server.) `None` for a
    /// kind they do not have, which is then generated.
    fn committed_structural(group: &str, version: &str, kind: &str) -> Option<Arc<Value>> {
        let (_, _, _, name) = structural_definitions::KINDS
            .iter()
            .find(|(g, v, k, _)| *g == group && *v == version && *k == kind)?;
        let mut schemas = Map::new();
        let mut pending = vec![(*name).to_owned()];
        while let Some(next) = pending.pop() {
            if schemas.contains_key(&next) {
                continue;
            }
            let Ok(found) = structural_definitions::DEFINITIONS
                .binary_search_by(|(definition, _)| (*definition).cmp(next.as_str()))
            else {
                continue;
            };
            let schema: Value = match serde_json::from_str(
                structural_definitions::DEFINITIONS[found].1,
            ) {
                Ok(schema) => schema,
                Err(error) => {
                    tracing::error!(%error, definition = next, "a committed built-in schema does not parse");
                    return None;
                }
            };
            collect_refs(&schema, &mut pending);
            schemas.insert(next, schema);
        }
        let own = Definitions {
            schemas,
            kinds: Vec::new(),
            structural: Mutex::new(HashMap::new()),
        };
        own.structural(name)
    }

    fn generate(roots_to_generate: impl Iterator<Item = Root>) -> Definitions {
        let mut generator = SchemaSettings::openapi3().into_generator();
        let mut kinds = Vec::new();
        let mut roots = Vec::new();
        for root in roots_to_generate {
            let reference = (root.schema)(&mut generator);
            let Some(name) = reference
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(REF_PREFIX))
            else {
                continue;
            };
            kinds.push((
                root.group,
                root.version,
                root.kind.to_owned(),
                name.to_owned(),
            ));
            roots.push((root, name.to_owned()));
        }
        let mut schemas = generator.take_definitions(true);
        for schema in schemas.values_mut() {
            drop_required_metadata(schema);
        }
        fix_special_types(&mut schemas);
        for (root, name) in &roots {
            let gvk = json!([{"group": root.group, "version": root.version, "kind": root.kind}]);
            if let Some(Value::Object(schema)) = schemas.get_mut(name) {
                schema.insert("x-kubernetes-group-version-kind".into(), gvk);
            }
            if root.served {
                let list_kind = format!("{}List", root.kind);
                kinds.push((
                    root.group,
                    root.version,
                    list_kind.clone(),
                    format!("{name}List"),
                ));
                schemas.insert(
                    format!("{name}List"),
                    list_schema(root.group, root.version, &list_kind, root.kind, name),
                );
            }
        }
        apply_extensions(&mut schemas);
        Definitions {
            schemas,
            kinds,
            structural: Mutex::new(HashMap::new()),
        }
    }

    /// The definition name of a built-in kind (or list kind), such as
    /// `io.k8s.api.apps.v1.Deployment`.
    pub fn kind_definition(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kinds
            .iter()
            .find(|(g, v, k, _)| *g == group && *v == version && k == kind)
            .map(|(_, _, _, name)| name.as_str())
    }

    /// One component schema by definition name.
    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.schemas.get(name)
    }

    /// The named definitions and every definition they refer to, transitively.
    pub fn closure<'a>(&self, roots: impl IntoIterator<Item = &'a str>) -> Map<String, Value> {
        let mut out = Map::new();
        let mut pending: Vec<String> = roots.into_iter().map(str::to_owned).collect();
        while let Some(name) = pending.pop() {
            if out.contains_key(&name) {
                continue;
            }
            let Some(schema) = self.schemas.get(&name) else {
                continue;
            };
            collect_refs(schema, &mut pending);
            out.insert(name, schema.clone());
        }
        out
    }

    /// The schema of one definition with every `$ref` inlined, in the form the pruner reads
    /// (`properties`, `items`, `additionalProperties`; no `allOf`). Recursive definitions and
    /// CRD schemas (`JSONSchemaProps`) become objects that keep unknown fields.
    pub fn structural(&self, name: &str) -> Option<Arc<Value>> {
        let mut cache = match self.structural.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(found) = cache.get(name) {
            return Some(found.clone());
        }
        self.schemas.get(name)?;
        let built = Arc::new(Value::Object(self.resolve(name, &mut Vec::new())));
        cache.insert(name.to_owned(), built.clone());
        Some(built)
    }

    fn resolve(&self, name: &str, stack: &mut Vec<String>) -> Map<String, Value> {
        match self.schemas.get(name) {
            Some(schema) if name != JSON_SCHEMA_PROPS && !stack.iter().any(|s| s == name) => {
                stack.push(name.to_owned());
                let out = self.inline(schema, stack);
                stack.pop();
                out
            }
            _ => free_form(),
        }
    }

    /// One schema with its references resolved. Descriptions are left out: pruning does not
    /// read them, and `kubectl explain` reads the documents.
    fn inline(&self, schema: &Value, stack: &mut Vec<String>) -> Map<String, Value> {
        let Value::Object(map) = schema else {
            return Map::new();
        };
        // `allOf: [{$ref}]` with siblings, as `RemoveRefSiblings` writes a described reference.
        let target = ref_name(map).or_else(|| match map.get("allOf") {
            Some(Value::Array(all)) if all.len() == 1 => all[0].as_object().and_then(ref_name),
            _ => None,
        });
        let mut out = match target {
            Some(name) => self.resolve(name, stack),
            None => Map::new(),
        };
        for (key, value) in map {
            let inlined = match key.as_str() {
                "$ref" | "description" => continue,
                "allOf" if target.is_some() => continue,
                "properties" | "patternProperties" => match value {
                    Value::Object(fields) => Value::Object(
                        fields
                            .iter()
                            .map(|(field, s)| (field.clone(), Value::Object(self.inline(s, stack))))
                            .collect(),
                    ),
                    other => other.clone(),
                },
                "items" | "additionalProperties" | "not" if value.is_object() => {
                    Value::Object(self.inline(value, stack))
                }
                "allOf" | "anyOf" | "oneOf" => match value {
                    Value::Array(all) => Value::Array(
                        all.iter()
                            .map(|s| Value::Object(self.inline(s, stack)))
                            .collect(),
                    ),
                    other => other.clone(),
                },
                _ => value.clone(),
            };
            out.insert(key.clone(), inlined);
        }
        out
    }
}

fn ref_name(map: &Map<String, Value>) -> Option<&str> {
    map.get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(REF_PREFIX))
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(name) = ref_name(map) {
                out.push(name.to_owned());
            }
            for v in map.values() {
                collect_refs(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Removes the descriptions that [`Definitions::inline`] leaves out, from the same places: a
/// schema's own, and those of the schemas it holds (properties, items, additional properties,
/// `not`, `allOf`/`anyOf`/`oneOf`), not those inside values such as defaults.
#[cfg(test)]
fn without_descriptions(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    map.remove("description");
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("properties" | "patternProperties", Value::Object(fields)) => {
                fields.values_mut().for_each(without_descriptions);
            }
            ("items" | "additionalProperties" | "not", value) => without_descriptions(value),
            ("allOf" | "anyOf" | "oneOf", Value::Array(all)) => {
                all.iter_mut().for_each(without_descriptions);
            }
            _ => {}
        }
    }
}

/// The command that rewrites `structural_definitions.rs` when the generated schemas change.
#[cfg(test)]
const REGENERATE_COMMAND: &str = "ATOLL_REGENERATE=1 cargo test -p atoll-apiserver --lib committed_structural_definitions_are_current";

/// The text of `structural_definitions.rs`: every kind's definition name, and every definition
/// without its descriptions, sorted by name, one per line.
#[cfg(test)]
fn structural_definitions_source(all: &Definitions) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "//! The built-in definitions in the form structural schemas are made from (generated by\n\
         //! `k8s-openapi`'s schemars implementations and fixed up as `Definitions::generate` does,\n\
         //! without descriptions), so that a server resolves a kind's structural schema without\n\
         //! running schemars. Generated by `{REGENERATE_COMMAND}`; do not edit.\n\n\
         /// (group, version, kind, definition name) of every built-in kind and list kind.\n\
         pub static KINDS: &[(&str, &str, &str, &str)] = &[\n"
    );
    for (group, version, kind, name) in &all.kinds {
        let _ = writeln!(out, "    ({group:?}, {version:?}, {kind:?}, {name:?}),");
    }
    out.push_str("];\n\n/// Every definition as JSON, sorted by name.\npub static DEFINITIONS: &[(&str, &str)] = &[\n");
    let mut names: Vec<&String> = all.schemas.keys().collect();
    names.sort();
    for name in names {
        let mut schema = all.schemas[name.as_str()].clone();
        without_descriptions(&mut schema);
        let text = schema.to_string();
        assert!(!text.contains("\"##"), "{name} cannot be a raw string");
        let _ = writeln!(out, "    ({name:?}, r##\"{text}\"##),");
    }
    out.push_str("];\n");
    out
}

/// An object whose content is not described: nothing in it is pruned.
pub fn free_form() -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("type".into(), "object".into());
    map.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    map
}

/// `k8s-openapi` marks `metadata` required because its Rust field is not optional; upstream
/// never requires it.
fn drop_required_metadata(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    let empty = match map.get_mut("required") {
        Some(Value::Array(required)) => {
            required.retain(|r| r != "metadata");
            required.is_empty()
        }
        _ => false,
    };
    if empty {
        map.remove("required");
    }
}

/// Types whose content is free-form JSON.
fn fix_special_types(schemas: &mut Map<String, Value>) {
    for name in [
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    ] {
        if let Some(Value::Object(schema)) = schemas.get_mut(name) {
            schema.insert("type".into(), "object".into());
            schema.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
        }
    }
    // Any JSON value (defaults and examples in CRD schemas).
    if let Some(Value::Object(schema)) =
        schemas.get_mut("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON")
    {
        schema.remove("type");
        schema.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    }
}

fn list_schema(group: &str, version: &str, list_kind: &str, kind: &str, item: &str) -> Value {
    json!({
        "description": format!("{list_kind} is a list of {kind} objects."),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string"
            },
            "items": {
                "description": format!("List of {kind} objects."),
                "type": "array",
                "items": {"$ref": format!("{REF_PREFIX}{item}")}
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string"
            },
            "metadata": {
                "allOf": [{"$ref": format!("{REF_PREFIX}{LIST_META}")}],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
            }
        },
        "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": list_kind}]
    })
}

/// Definition names reachable from one, for tests.
#[cfg(test)]
pub fn reachable(name: &str) -> HashSet<String> {
    Definitions::get().closure([name]).keys().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs() -> &'static Definitions {
        Definitions::get()
    }

    #[test]
    fn kinds_carry_upstream_names_and_gvk() {
        let name = defs().kind_definition("apps", "v1", "Deployment").unwrap();
        assert_eq!(name, "io.k8s.api.apps.v1.Deployment");
        let schema = defs().schema(name).unwrap();
        assert_eq!(
            schema["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
        );
        assert!(schema.get("required").is_none(), "metadata is not required");
        let list = defs()
            .kind_definition("apps", "v1", "DeploymentList")
            .unwrap();
        assert_eq!(
            defs().schema(list).unwrap()["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.Deployment"
        );
        assert!(reachable(name).contains(OBJECT_META));
        assert!(reachable(name).contains("io.k8s.api.core.v1.Container"));
    }

    #[test]
    fn strategic_merge_extensions_are_present() {
        let spec = &defs().schema("io.k8s.api.core.v1.PodSpec").unwrap()["properties"];
        assert_eq!(spec["containers"]["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(spec["containers"]["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(spec["containers"]["x-kubernetes-list-type"], "map");
        assert_eq!(
            spec["volumes"]["x-kubernetes-patch-strategy"],
            "merge,retainKeys"
        );
        let container = &defs().schema("io.k8s.api.core.v1.Container").unwrap()["properties"];
        assert_eq!(
            container["ports"]["x-kubernetes-list-map-keys"],
            json!(["containerPort", "protocol"])
        );
        assert_eq!(container["env"]["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(
            container["volumeMounts"]["x-kubernetes-patch-merge-key"],
            "mountPath"
        );
        let meta = &defs().schema(OBJECT_META).unwrap()["properties"];
        assert_eq!(meta["finalizers"]["x-kubernetes-list-type"], "set");
        assert_eq!(
            meta["ownerReferences"]["x-kubernetes-patch-merge-key"],
            "uid"
        );
        let status = &defs()
            .schema("io.k8s.api.apps.v1.DeploymentStatus")
            .unwrap()["properties"];
        assert_eq!(status["conditions"]["x-kubernetes-patch-merge-key"], "type");
        let deployment = &defs().schema("io.k8s.api.apps.v1.DeploymentSpec").unwrap()["properties"];
        assert_eq!(
            deployment["strategy"]["x-kubernetes-patch-strategy"],
            "retainKeys"
        );
        // The kinds added with 1.35's catalog have theirs too.
        let webhooks = &defs()
            .schema("io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration")
            .unwrap()["properties"];
        assert_eq!(webhooks["webhooks"]["x-kubernetes-patch-merge-key"], "name");
        let node_status = &defs().schema("io.k8s.api.core.v1.NodeStatus").unwrap()["properties"];
        assert_eq!(
            node_status["addresses"]["x-kubernetes-patch-merge-key"],
            "type"
        );
        let selector = defs()
            .schema("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
            .unwrap();
        assert_eq!(selector["x-kubernetes-map-type"], "atomic");
        // Every property the generated table names exists in the generated schemas, when its
        // definition does: a rename upstream would leave a rule that sets nothing.
        let extensions: Value = serde_json::from_str(EXTENSIONS).unwrap();
        let mut checked = 0;
        for (definition, properties) in extensions["properties"].as_object().unwrap() {
            let Some(schema) = defs().schema(definition) else {
                continue;
            };
            for property in properties.as_object().unwrap().keys() {
                assert!(
                    schema["properties"].get(property).is_some(),
                    "{definition}.{property}"
                );
                checked += 1;
            }
        }
        assert!(checked > 300, "only {checked} properties matched");
    }

    #[test]
    fn special_types_read_as_upstream() {
        let int_or_string = defs()
            .schema("io.k8s.apimachinery.pkg.util.intstr.IntOrString")
            .unwrap();
        assert_eq!(int_or_string["x-kubernetes-int-or-string"], true);
        let quantity = defs()
            .schema("io.k8s.apimachinery.pkg.api.resource.Quantity")
            .unwrap();
        assert_eq!(quantity["x-kubernetes-int-or-string"], true);
        let time = defs()
            .schema("io.k8s.apimachinery.pkg.apis.meta.v1.Time")
            .unwrap();
        assert_eq!(time["format"], "date-time");
        assert_eq!(time["type"], "string");
    }

    #[test]
    fn a_kind_generated_alone_has_the_structural_schema_of_the_whole_set() {
        let all = Definitions::generate(all_roots());
        for root in all_roots().filter(|r| r.served) {
            let (group, version, kind) = (root.group, root.version, root.kind);
            let alone = Definitions::generate(
                all_roots().filter(|r| r.group == group && r.version == version && r.kind == kind),
            );
            let full = all
                .structural(all.kind_definition(group, version, kind).unwrap())
                .unwrap();
            let own = alone
                .structural(alone.kind_definition(group, version, kind).unwrap())
                .unwrap();
            // Embedded kinds carry their group-version-kind only where they are roots too;
            // validation and pruning do not read it.
            assert_eq!(
                without_gvk(&own),
                without_gvk(&full),
                "{group}/{version} {kind}"
            );
        }
    }

    #[test]
    fn committed_structural_definitions_are_current() {
        let all = Definitions::generate(all_roots());
        let generated = structural_definitions_source(&all);
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/openapi/builtin/structural_definitions.rs"
        );
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        if generated != committed {
            if std::env::var_os("ATOLL_REGENERATE").is_some() {
                std::fs::write(path, generated).unwrap();
            } else {
                panic!("{path} is out of date: run {REGENERATE_COMMAND}");
            }
        }
    }

    #[test]
    fn committed_definitions_give_the_structural_schema_of_the_whole_set() {
        let all = Definitions::generate(all_roots());
        for root in all_roots() {
            let (group, version, kind) = (root.group, root.version, root.kind);
            let full = all
                .structural(all.kind_definition(group, version, kind).unwrap())
                .unwrap();
            let committed = Definitions::committed_structural(group, version, kind)
                .unwrap_or_else(|| panic!("no committed definitions for {group}/{version} {kind}"));
            assert_eq!(committed, full, "{group}/{version} {kind}");
        }
    }

    fn without_gvk(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| *k != "x-kubernetes-group-version-kind")
                    .map(|(k, v)| (k.clone(), without_gvk(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(without_gvk).collect()),
            other => other.clone(),
        }
    }

    #[test]
    fn structural_schemas_inline_every_reference() {
        let pod = defs().structural("io.k8s.api.core.v1.Pod").unwrap();
        let text = pod.to_string();
        assert!(!text.contains("$ref"));
        assert!(!text.contains("allOf"));
        let container = &pod["properties"]["spec"]["properties"]["containers"]["items"];
        assert_eq!(container["properties"]["name"]["type"], "string");
        assert_eq!(
            container["properties"]["ports"]["items"]["properties"]["containerPort"]["type"],
            "integer"
        );
        assert_eq!(
            pod["properties"]["metadata"]["properties"]["labels"]["additionalProperties"]["type"],
            "string"
        );
        // managedFields' field sets are free-form.
        let fields = &pod["properties"]["metadata"]["properties"]["managedFields"]["items"]["properties"]
            ["fieldsV1"];
        assert_eq!(fields["x-kubernetes-preserve-unknown-fields"], true);
    }

    #[test]
    fn crd_schemas_are_free_form_in_structural_form() {
        let crd = defs()
            .structural(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            )
            .unwrap();
        let validation = &crd["properties"]["spec"]["properties"]["versions"]["items"]["properties"]
            ["schema"]["properties"]["openAPIV3Schema"];
        assert_eq!(validation["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(validation["type"], "object");
    }
}
