//! What policy expressions see: objects as CEL values (maps keyed by field name as in the JSON,
//! unescaped, as upstream's unstructured values are), the `request` (upstream's
//! `AdmissionRequest` fields) and the `namespaceObject` (the Namespace without its managed
//! fields and owners).

use std::collections::BTreeMap;
use std::sync::Arc;

use atoll_cel::{Key, Map, Value as Cel};
use serde_json::{Value, json};

use super::Request;

/// A JSON value as CEL sees it: integers as `int` (or `uint` beyond), other numbers as
/// `double`.
pub fn json(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::Uint(u),
            _ => Cel::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::string(s),
        Value::Array(items) => Cel::list(items.iter().map(json).collect()),
        Value::Object(object) => {
            let mut map = Map::default();
            for (key, value) in object {
                map.entries
                    .insert(Key::String(Arc::from(key.as_str())), json(value));
            }
            Cel::Map(Arc::new(map))
        }
    }
}

/// What of an object (`object`, `oldObject`) policies can see: everything, or only the fields
/// at some paths, each with all below it. Expressions that read an object only through chains
/// of field selections (`object.metadata.labels`, `has(object.data)`) see nothing else of it,
/// so that only those fields are made CEL values: most of a write's object (its managed
/// fields, a Pod's spec under a policy on labels) is never converted.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Fields {
    #[default]
    All,
    /// The fields named, each with what of it is seen.
    Some(BTreeMap<Arc<str>, Fields>),
}

impl Fields {
    /// Nothing (before any expression's paths are added).
    pub fn none() -> Fields {
        Fields::Some(BTreeMap::new())
    }

    /// Adds what one expression sees: its paths, or everything (`None`).
    pub fn add(&mut self, paths: Option<Vec<Vec<Arc<str>>>>) {
        match paths {
            None => *self = Fields::All,
            Some(paths) => {
                for path in paths {
                    self.insert(&path);
                }
            }
        }
    }

    /// Adds what `other` sees.
    pub fn merge(&mut self, other: &Fields) {
        match other {
            Fields::All => *self = Fields::All,
            Fields::Some(fields) => {
                if let Fields::Some(mine) = self {
                    for (name, below) in fields {
                        mine.entry(name.clone())
                            .or_insert_with(Fields::none)
                            .merge(below);
                    }
                }
            }
        }
    }

    fn insert(&mut self, path: &[Arc<str>]) {
        let Fields::Some(fields) = self else {
            return;
        };
        match path.split_first() {
            None => *self = Fields::All,
            Some((first, rest)) => fields
                .entry(first.clone())
                .or_insert_with(Fields::none)
                .insert(rest),
        }
    }
}

/// `value` as CEL sees it, with only the `fields` of it that expressions can see (all of a
/// value that is not a JSON object, where a selection fails whatever it holds).
pub fn json_fields(value: &Value, fields: &Fields) -> Cel {
    match (value, fields) {
        (Value::Object(object), Fields::Some(seen)) => {
            let mut map = Map::default();
            for (name, below) in seen {
                if let Some(value) = object.get(&**name) {
                    map.entries
                        .insert(Key::String(name.clone()), json_fields(value, below));
                }
            }
            Cel::Map(Arc::new(map))
        }
        _ => json(value),
    }
}

/// The `request` variable.
pub fn request(request: &Request<'_>) -> Cel {
    let user = request.user;
    let mut user_info = json!({"username": user.name});
    if !user.uid.is_empty() {
        user_info["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        user_info["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        user_info["extra"] = json!(user.extra);
    }
    let (kind_group, kind_version, kind) = request.kind;
    let kind = json!({"group": kind_group, "version": kind_version, "kind": kind});
    let resource =
        json!({"group": request.group, "version": request.version, "resource": request.resource});
    let options_kind = match request.operation {
        super::Operation::Create => "CreateOptions",
        super::Operation::Update => "UpdateOptions",
        super::Operation::Delete => "DeleteOptions",
    };
    let mut value = json!({
        "uid": request.uid.get_or_init(|| uuid::Uuid::new_v4().to_string()),
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": request.operation.as_str(),
        "userInfo": user_info,
        "dryRun": request.dry_run,
        "options": {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"},
    });
    if !request.subresource.is_empty() {
        value["subResource"] = json!(request.subresource);
        value["requestSubResource"] = json!(request.subresource);
    }
    if !request.name.is_empty() {
        value["name"] = json!(request.name);
    }
    if !request.namespace.is_empty() {
        value["namespace"] = json!(request.namespace);
    }
    json(&value)
}

/// The `namespaceObject` variable: the Namespace's metadata (without managed fields and
/// owners), spec and status.
pub fn namespace_object(namespace: &Value) -> Cel {
    let mut namespace = namespace.clone();
    if let Some(meta) = namespace.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        meta.remove("ownerReferences");
    }
    json(&namespace)
}
