//! CEL's view of a structural schema, as Kubernetes builds it: the declared type of each node
//! (what `self` is), the value of a node as rules see it, and the escaping of property names
//! that are not CEL identifiers (`foo-bar` is `self.foo__dash__bar`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use atoll_cel::{Key, Map as CelMap, ObjectType, Type, Value as Cel};
use serde_json::Value;

/// The CEL name of property `name`, or `None` when it cannot be one (such properties are left
/// out of the type, as upstream leaves them). Borrowed when nothing needs escaping (most names).
pub(crate) fn escape(name: &str) -> Option<Cow<'_, str>> {
    // CEL's reserved words are reachable as `__<name>__`.
    if atoll_cel::RESERVED_WORDS.contains(&name) {
        return Some(Cow::Owned(format!("__{name}__")));
    }
    let mut chars = name.chars();
    let first = chars.next()?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/');
    if !(first.is_ascii_alphabetic() || matches!(first, '_' | '.' | '-' | '/'))
        || !chars.all(allowed)
    {
        return None;
    }
    if !name.contains("__") && !name.contains(['.', '-', '/']) {
        return Some(Cow::Borrowed(name));
    }
    let mut out = String::with_capacity(name.len() + 16);
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(Cow::Owned(out))
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn type_of(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn is_embedded(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-embedded-resource")
}

fn properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// The schema of the values of a map-shaped object (`additionalProperties: {...}`).
fn additional(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// The declared type of a node; `None` for a node CEL cannot see (no type, and not
/// int-or-string). `resource_root` adds `apiVersion`, `kind` and `metadata` (with only `name`
/// and `generateName`), as for the root of a custom resource and an embedded resource.
pub(crate) fn decl_type(schema: &Value, resource_root: bool) -> Option<Type> {
    if flag(schema, "x-kubernetes-int-or-string") {
        return Some(Type::Dyn);
    }
    match type_of(schema) {
        "array" => {
            let items = schema.get("items")?;
            decl_type(items, is_embedded(items)).map(|t| Type::List(Box::new(t)))
        }
        "object" => {
            if let Some(values) = additional(schema) {
                return decl_type(values, is_embedded(values))
                    .map(|t| Type::Map(Box::new(Type::String), Box::new(t)));
            }
            let mut fields = BTreeMap::new();
            for (name, prop) in properties(schema).into_iter().flatten() {
                if resource_root && is_meta(name) {
                    continue;
                }
                if let (Some(ty), Some(name)) = (decl_type(prop, is_embedded(prop)), escape(name)) {
                    fields.insert(Arc::from(&*name), ty);
                }
            }
            if resource_root {
                fields.insert(Arc::from("apiVersion"), Type::String);
                fields.insert(Arc::from("kind"), Type::String);
                let meta = BTreeMap::from([
                    (Arc::from("name"), Type::String),
                    (Arc::from("generateName"), Type::String),
                ]);
                fields.insert(
                    Arc::from("metadata"),
                    Type::Object(Arc::new(ObjectType {
                        name: "metadata".into(),
                        fields: meta,
                    })),
                );
            }
            Some(Type::Object(Arc::new(ObjectType {
                name: "object".into(),
                fields,
            })))
        }
        "string" => Some(match schema.get("format").and_then(Value::as_str) {
            Some("byte") => Type::Bytes,
            Some("duration") => Type::Duration,
            Some("date" | "date-time") => Type::Timestamp,
            _ => Type::String,
        }),
        "boolean" => Some(Type::Bool),
        "number" => Some(Type::Double),
        "integer" => Some(Type::Int),
        _ => None,
    }
}

/// The declared type of a resource's root as upstream's `SchemaDeclType(schema, true)` builds
/// it for policies: a schema that already declares `apiVersion`, `kind` and `metadata` (with
/// `name` and `generateName`), as published OpenAPI schemas do, is taken as it is, metadata and
/// all; any other is given those three, with only `name` and `generateName` in `metadata`.
pub(crate) fn resource_decl_type(schema: &Value) -> Option<Type> {
    let props = properties(schema);
    let prop = |name: &str| props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
    let meta = prop("metadata");
    let meta_prop = |name: &str| properties(meta).and_then(|p| p.get(name));
    let declares_meta = type_of(prop("kind")) == "string"
        && type_of(prop("apiVersion")) == "string"
        && type_of(meta) == "object"
        && meta_prop("name").is_some_and(|n| type_of(n) == "string")
        && meta_prop("generateName").is_some_and(|n| type_of(n) == "string");
    decl_type(schema, !declares_meta)
}

fn is_meta(name: &str) -> bool {
    matches!(name, "apiVersion" | "kind" | "metadata")
}

/// What converting a value for rules reads of its schema node, settled once when the
/// validator is compiled, so that a write looks nothing up in the schema's JSON and allocates
/// no names of declared properties.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    /// `type: number`: every number is a double.
    number: bool,
    format: Format,
    /// The root of a resource (or an embedded one), which shows only `apiVersion`, `kind`
    /// and `metadata.name` and `metadata.generateName` of its metadata.
    resource_root: bool,
    /// The schema of a list's items.
    items: Option<Box<Shape>>,
    /// The schema of a map's values (`additionalProperties`).
    additional: Option<Box<Shape>>,
    /// Declared properties, by name.
    properties: Option<HashMap<String, Property>>,
    /// Whether properties not declared are kept (no `properties`, and either
    /// `x-kubernetes-preserve-unknown-fields` or no type).
    open: bool,
}

/// A declared property: its CEL name (`None` where CEL cannot spell it) and its shape.
type Property = (Option<Arc<str>>, Shape);

#[derive(Debug, Default)]
enum Format {
    #[default]
    None,
    DateTime,
    Date,
    Duration,
    Byte,
}

/// The shape of a node of no schema (a property of an open object, a list without `items`).
static UNDECLARED: LazyLock<Shape> = LazyLock::new(|| Shape::new(&Value::Null, false));

impl Shape {
    pub(crate) fn new(schema: &Value, resource_root: bool) -> Shape {
        let child = |schema: &Value| Box::new(Shape::new(schema, is_embedded(schema)));
        let properties = properties(schema).map(|declared| {
            declared
                .iter()
                .map(|(name, prop)| {
                    let cel_name = escape(name).map(|n| Arc::from(&*n));
                    let shape = Shape::new(prop, is_embedded(prop));
                    (name.clone(), (cel_name, shape))
                })
                .collect()
        });
        Shape {
            number: type_of(schema) == "number",
            format: match schema.get("format").and_then(Value::as_str) {
                Some("date-time") => Format::DateTime,
                Some("date") => Format::Date,
                Some("duration") => Format::Duration,
                Some("byte") => Format::Byte,
                _ => Format::None,
            },
            resource_root,
            items: schema.get("items").map(child),
            additional: additional(schema).map(child),
            open: properties.is_none()
                && (flag(schema, "x-kubernetes-preserve-unknown-fields")
                    || type_of(schema).is_empty()),
            properties,
        }
    }
}

/// The value of `json` as rules typed by `shape`'s schema see it: declared properties only
/// (escaped), formatted strings as timestamps, durations and bytes, numbers as the schema's
/// type.
pub(crate) fn value_of(json: &Value, shape: &Shape) -> Cel {
    match json {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            if shape.number {
                Cel::Double(n.as_f64().unwrap_or(f64::NAN))
            } else if let Some(i) = n.as_i64() {
                Cel::Int(i)
            } else if let Some(u) = n.as_u64() {
                Cel::Uint(u)
            } else {
                Cel::Double(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => string_value(s, &shape.format),
        Value::Array(items) => {
            let item_shape = shape.items.as_deref().unwrap_or(&UNDECLARED);
            Cel::list(
                items
                    .iter()
                    .map(|item| value_of(item, item_shape))
                    .collect(),
            )
        }
        Value::Object(object) => Cel::Map(Arc::new(object_value(object, shape))),
    }
}

fn object_value(object: &serde_json::Map<String, Value>, shape: &Shape) -> CelMap {
    let mut map = CelMap::default();
    if let Some(values) = &shape.additional {
        for (key, value) in object {
            map.entries.insert(
                Key::String(Arc::from(key.as_str())),
                value_of(value, values),
            );
        }
        return map;
    }
    for (key, value) in object {
        if shape.resource_root && is_meta(key) {
            if let Some(meta) = root_meta(key, value) {
                map.entries
                    .insert(Key::String(Arc::from(key.as_str())), meta);
            }
            continue;
        }
        let (name, converted) = match shape.properties.as_ref().and_then(|p| p.get(key)) {
            Some((name, prop)) => (name.clone(), value_of(value, prop)),
            None if shape.open => (
                escape(key).map(|n| Arc::from(&*n)),
                value_of(value, &UNDECLARED),
            ),
            None => continue,
        };
        if let Some(name) = name {
            map.entries.insert(Key::String(name), converted);
        }
    }
    map
}

/// `apiVersion`, `kind` and `metadata` (its `name` and `generateName`) of a resource root.
fn root_meta(key: &str, value: &Value) -> Option<Cel> {
    if key != "metadata" {
        return value.as_str().map(Cel::string);
    }
    let mut meta = CelMap::default();
    for field in ["name", "generateName"] {
        if let Some(s) = value.get(field).and_then(Value::as_str) {
            meta.entries
                .insert(Key::String(Arc::from(field)), Cel::string(s));
        }
    }
    Some(Cel::Map(Arc::new(meta)))
}

fn string_value(s: &str, format: &Format) -> Cel {
    let formatted = match format {
        Format::DateTime => s.parse::<jiff::Timestamp>().ok().map(Cel::Timestamp),
        Format::Date => s
            .parse::<jiff::civil::Date>()
            .ok()
            .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC).ok())
            .map(|z| Cel::Timestamp(z.timestamp())),
        Format::Duration => atoll_cel::parse_duration(s).ok().map(Cel::Duration),
        Format::Byte => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .ok()
                .map(|b| Cel::Bytes(Arc::from(b)))
        }
        Format::None => None,
    };
    formatted.unwrap_or_else(|| Cel::string(s))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn property_names_escape_as_upstream() {
        assert_eq!(escape("foo").as_deref(), Some("foo"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(
            escape("__x__").as_deref(),
            Some("__underscores__x__underscores__")
        );
        assert_eq!(escape("1x"), None);
        assert_eq!(escape("a b"), None);
        assert_eq!(escape(""), None);
    }

    #[test]
    fn the_root_sees_only_name_and_generate_name_of_its_metadata() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "x-y": {"type": "integer"},
                "when": {"type": "string", "format": "date-time"},
                "any": {"x-kubernetes-int-or-string": true},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}});
        let Some(Type::Object(root)) = decl_type(&schema, true) else {
            panic!("the root is an object");
        };
        let Some(Type::Object(meta)) = root.fields.get("metadata") else {
            panic!("metadata is an object");
        };
        assert_eq!(
            meta.fields.keys().map(|k| &**k).collect::<Vec<_>>(),
            ["generateName", "name"]
        );
        let Some(Type::Object(spec)) = root.fields.get("spec") else {
            panic!("spec is an object");
        };
        assert_eq!(spec.fields.get("x__dash__y"), Some(&Type::Int));
        assert_eq!(spec.fields.get("when"), Some(&Type::Timestamp));
        assert_eq!(spec.fields.get("any"), Some(&Type::Dyn));
        assert_eq!(
            spec.fields.get("labels"),
            Some(&Type::Map(Box::new(Type::String), Box::new(Type::String)))
        );

        let object = json!({"apiVersion": "example.com/v1", "kind": "W",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "y"}},
            "spec": {"x-y": 3, "when": "2026-01-02T03:04:05Z", "undeclared": 1}});
        let Cel::Map(value) = value_of(&object, &Shape::new(&schema, true)) else {
            panic!("an object is a map");
        };
        let Some(Cel::Map(meta)) = value.get(&Key::String(Arc::from("metadata"))) else {
            panic!("metadata is a map");
        };
        assert_eq!(meta.entries.len(), 1);
        let Some(Cel::Map(spec)) = value.get(&Key::String(Arc::from("spec"))) else {
            panic!("spec is a map");
        };
        assert!(matches!(
            spec.get(&Key::String(Arc::from("x__dash__y"))),
            Some(Cel::Int(3))
        ));
        assert!(matches!(
            spec.get(&Key::String(Arc::from("when"))),
            Some(Cel::Timestamp(_))
        ));
        assert!(spec.get(&Key::String(Arc::from("undeclared"))).is_none());
    }

    #[test]
    fn values_convert_as_their_schema_says() {
        let schema = json!({"type": "object", "properties": {
            "ratio": {"type": "number"},
            "count": {"type": "integer"},
            "ttl": {"type": "string", "format": "duration"},
            "blob": {"type": "string", "format": "byte"},
            "a-b": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}},
            "tags": {"type": "object", "additionalProperties": {"type": "number"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "inner": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"metadata": {"type": "object"}, "x": {"type": "integer"}}}}});
        let object = json!({"ratio": 2, "count": 3, "ttl": "1m", "blob": "aGk=", "a-b": "s",
            "items": [{"n": 1, "other": 2}], "tags": {"x-y": 4}, "free": {"k-1": {"z": 1}},
            "inner": {"metadata": {"name": "n", "uid": "u"}, "x": 1}, "undeclared": 1});
        let Cel::Map(root) = value_of(&object, &Shape::new(&schema, false)) else {
            panic!("an object is a map");
        };
        let field = |map: &CelMap, name: &str| map.field(name).cloned();
        assert!(matches!(field(&root, "ratio"), Some(Cel::Double(d)) if d == 2.0));
        assert!(matches!(field(&root, "count"), Some(Cel::Int(3))));
        assert!(matches!(field(&root, "ttl"), Some(Cel::Duration(_))));
        assert!(matches!(field(&root, "blob"), Some(Cel::Bytes(b)) if &*b == b"hi"));
        assert!(matches!(field(&root, "a__dash__b"), Some(Cel::String(_))));
        assert!(field(&root, "undeclared").is_none());
        let Some(Cel::List(items)) = field(&root, "items") else {
            panic!("a list");
        };
        let Cel::Map(item) = &items[0] else {
            panic!("an item is a map");
        };
        assert!(matches!(field(item, "n"), Some(Cel::Double(_))));
        assert!(field(item, "other").is_none());
        let Some(Cel::Map(tags)) = field(&root, "tags") else {
            panic!("a map");
        };
        assert!(matches!(field(&tags, "x-y"), Some(Cel::Double(_))));
        let Some(Cel::Map(free)) = field(&root, "free") else {
            panic!("an open object");
        };
        assert!(matches!(field(&free, "k__dash__1"), Some(Cel::Map(_))));
        let Some(Cel::Map(inner)) = field(&root, "inner") else {
            panic!("an embedded resource");
        };
        let Some(Cel::Map(meta)) = field(&inner, "metadata") else {
            panic!("its metadata");
        };
        assert!(field(&meta, "name").is_some() && field(&meta, "uid").is_none());
    }
}
