//! Structural-schema operations on custom resources, as apiextensions-apiserver does them:
//! pruning of unknown fields, defaulting, and the list types server-side apply merges by.

use serde_json::Value;

use super::schema::Schema;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

fn property<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| p.get(name))
}

/// The schema for map values not listed in `properties`: `Some(None)` when
/// `additionalProperties` is set without a schema (values are then pruned as unknown).
fn additional(schema: &Value) -> Option<Option<&Value>> {
    match schema.get("additionalProperties") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(Some(v)),
        Some(_) => Some(None),
    }
}

fn items(schema: &Value) -> Option<&Value> {
    schema.get("items").filter(|v| v.is_object())
}

/// Removes the fields of `obj` that `schema` does not specify and returns their paths, sorted,
/// as upstream reports them (`spec.unknownField`, `spec.items[0].extra`); each becomes
/// `unknown field "<path>"` in a strict-decoding error or a warning.
///
/// `apiVersion`, `kind` and `metadata` are kept at the root and inside
/// `x-kubernetes-embedded-resource` objects; `x-kubernetes-preserve-unknown-fields` keeps
/// unspecified fields (specified ones are still pruned inside); values under
/// `additionalProperties` follow its schema.
///
/// `unchanged` names top-level fields an update leaves as stored: they were pruned when they
/// were written and are not walked again (on a status write, everything but the status).
pub fn prune(obj: &mut Value, schema: &Schema, unchanged: &[String]) -> Vec<String> {
    let mut pruned = Vec::new();
    without_fields(obj, unchanged, |obj| {
        prune_node(obj, Some(schema), true, &mut String::new(), &mut pruned);
    });
    pruned.sort();
    pruned
}

/// Runs `f` on `obj` with its top-level `fields` taken out, and puts them back afterwards.
fn without_fields(obj: &mut Value, fields: &[String], f: impl FnOnce(&mut Value)) {
    let Some(map) = obj.as_object_mut().filter(|_| !fields.is_empty()) else {
        f(obj);
        return;
    };
    let taken: Vec<(String, Value)> = fields
        .iter()
        .filter_map(|key| map.remove_entry(key.as_str()))
        .collect();
    f(obj);
    if let Some(map) = obj.as_object_mut() {
        map.extend(taken);
    }
}

/// Appends `.key` (or `key` at the root) to `path` and returns the length to truncate back to.
fn enter_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if len > 0 {
        path.push('.');
    }
    path.push_str(key);
    len
}

/// Appends `[index]` to `path` and returns the length to truncate back to.
fn enter_index(path: &mut String, index: usize) -> usize {
    use std::fmt::Write as _;
    let len = path.len();
    let _ = write!(path, "[{index}]");
    len
}

/// Whether pruning can change anything at or below `x`: only objects and arrays hold fields.
fn holds_fields(x: &Value) -> bool {
    matches!(x, Value::Object(_) | Value::Array(_))
}

/// Prunes `x` in place. `path` is the path of `x` (built up and truncated back on the way, so
/// that a path is only copied when a field is pruned).
fn prune_node(
    x: &mut Value,
    schema: Option<&Schema>,
    root: bool,
    path: &mut String,
    pruned: &mut Vec<String>,
) {
    if let Some(s) = schema
        && s.preserves_unknown_fields()
    {
        skip_prune(x, s, root, path, pruned);
        return;
    }
    match x {
        Value::Object(map) => {
            let Some(s) = schema else {
                for key in map.keys() {
                    let len = enter_key(path, key);
                    pruned.push(path.clone());
                    path.truncate(len);
                }
                map.clear();
                return;
            };
            let embedded = root || s.is_embedded_resource();
            let additional = s.additional_properties();
            let mut unknown = Vec::new();
            for (key, v) in map.iter_mut() {
                if embedded && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                let known = s.property(key).or(additional.flatten());
                if known.is_some() || additional.is_some() {
                    if holds_fields(v) {
                        let len = enter_key(path, key);
                        prune_node(v, known, false, path, pruned);
                        path.truncate(len);
                    }
                } else {
                    let len = enter_key(path, key);
                    if !META_FIELDS.contains(&key.as_str()) || len > 0 {
                        pruned.push(path.clone());
                    }
                    path.truncate(len);
                    unknown.push(key.clone());
                }
            }
            for key in unknown {
                map.remove(&key);
            }
        }
        Value::Array(list) => {
            // Without an items schema, every object inside the array is unknown.
            let item_schema = schema.and_then(Schema::items);
            for (i, v) in list.iter_mut().enumerate() {
                if holds_fields(v) {
                    let len = enter_index(path, i);
                    prune_node(v, item_schema, false, path, pruned);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Schema, root: bool, path: &mut String, pruned: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            let embedded = root || s.is_embedded_resource();
            let additional = s.additional_properties();
            for (key, v) in map.iter_mut() {
                if (embedded && META_FIELDS.contains(&key.as_str())) || !holds_fields(v) {
                    continue;
                }
                let known = match s.property(key) {
                    Some(prop) => Some(prop),
                    None => match additional {
                        Some(schema) => schema,
                        None => continue,
                    },
                };
                let len = enter_key(path, key);
                prune_node(v, known, false, path, pruned);
                path.truncate(len);
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = s.items() {
                for (i, v) in list.iter_mut().enumerate() {
                    if holds_fields(v) {
                        let len = enter_index(path, i);
                        skip_prune(v, item_schema, false, path, pruned);
                        path.truncate(len);
                    }
                }
            }
        }
        _ => {}
    }
}

/// The text upstream reports for one pruned field: `unknown field "spec.unknownField"` (the body
/// of a `fieldValidation=Warn` warning).
pub fn unknown_field_message(path: &str) -> String {
    format!("unknown field {}", super::render::go_quote(path))
}

/// The message of the 400 `BadRequest` for `fieldValidation=Strict`, or `None` when nothing was
/// pruned: `strict decoding error: unknown field "spec.a", unknown field "spec.b"`.
pub fn strict_decoding_message(pruned: &[String]) -> Option<String> {
    if pruned.is_empty() {
        return None;
    }
    let fields: Vec<String> = pruned.iter().map(|p| unknown_field_message(p)).collect();
    Some(format!("strict decoding error: {}", fields.join(", ")))
}

/// Whether `x` is a `null` the schema does not allow.
fn non_nullable_null(x: &Value, schema: Option<&Schema>) -> bool {
    x.is_null() && schema.is_some_and(|s| !s.is_nullable())
}

/// Applies the schema's defaults to `obj`, as upstream's decoder does: first drops `null`s of
/// non-nullable fields that have no default, then sets every absent (or non-nullable `null`)
/// property that has a `default` to a copy of it, recursively through properties,
/// `additionalProperties` values and array items (defaults inside defaults included). The
/// top-level fields named in `unchanged` are left as stored (see [`prune`]).
pub fn apply_defaults(obj: &mut Value, schema: &Schema, unchanged: &[String]) {
    without_fields(obj, unchanged, |obj| {
        prune_nulls_without_defaults(obj, Some(schema));
        default_node(obj, schema);
    });
}

/// The top-level fields of `new` equal to `old`'s (none on a create), but for `apiVersion`,
/// `kind` and `metadata`, which are small and always checked.
pub fn unchanged_fields(new: &Value, old: Option<&Value>) -> Vec<String> {
    let (Some(new), Some(old)) = (new.as_object(), old.and_then(Value::as_object)) else {
        return Vec::new();
    };
    new.iter()
        .filter(|(key, value)| {
            !META_FIELDS.contains(&key.as_str()) && old.get(key.as_str()) == Some(*value)
        })
        .map(|(key, _)| key.clone())
        .collect()
}

fn field_schema<'a>(schema: Option<&'a Schema>, key: &str) -> Option<&'a Schema> {
    let s = schema?;
    s.property(key)
        .or_else(|| s.additional_properties().flatten())
}

fn prune_nulls_without_defaults(x: &mut Value, schema: Option<&Schema>) {
    // Below a value no schema describes, every schema is missing too, and only a schema makes
    // a null one to drop.
    if schema.is_none() {
        return;
    }
    match x {
        Value::Object(map) => {
            map.retain(|key, v| {
                let sub = field_schema(schema, key);
                !(non_nullable_null(v, sub) && sub.and_then(Schema::default_value).is_none())
            });
            for (key, v) in map.iter_mut() {
                prune_nulls_without_defaults(v, field_schema(schema, key));
            }
        }
        Value::Array(list) => {
            let item_schema = schema.and_then(Schema::items);
            for v in list.iter_mut() {
                prune_nulls_without_defaults(v, item_schema);
            }
        }
        _ => {}
    }
}

fn default_node(x: &mut Value, schema: &Schema) {
    if !schema.has_defaults_below() {
        return;
    }
    match x {
        Value::Object(map) => {
            for (key, prop) in schema.properties() {
                let Some(default) = prop.default_value() else {
                    continue;
                };
                let absent = map
                    .get(key)
                    .is_none_or(|v| non_nullable_null(v, Some(prop)));
                if absent {
                    map.insert(key.clone(), default.clone());
                }
            }
            for (key, v) in map.iter_mut() {
                if let Some(prop) = schema.property(key) {
                    default_node(v, prop);
                } else if let Some(Some(additional)) = schema.additional_properties() {
                    if non_nullable_null(v, Some(additional))
                        && let Some(default) = additional.default_value()
                    {
                        *v = default.clone();
                    }
                    default_node(v, additional);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = schema.items() {
                for v in list.iter_mut() {
                    if non_nullable_null(v, Some(item_schema))
                        && let Some(default) = item_schema.default_value()
                    {
                        *v = default.clone();
                    }
                    default_node(v, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// How server-side apply merges a list (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced as a whole (the default for custom resources).
    Atomic,
    /// Merged as a set of scalars.
    Set,
    /// Merged by the item fields named in `x-kubernetes-list-map-keys`.
    Map(Vec<String>),
}

/// The list type of the array at `path` (field names from the root; array items are stepped
/// through implicitly), or `None` when the schema has no array there.
pub fn list_type(schema: &Value, path: &[&str]) -> Option<ListKind> {
    let mut current = schema;
    for name in path {
        while current.get("type").and_then(Value::as_str) == Some("array") {
            current = items(current)?;
        }
        current = match property(current, name) {
            Some(prop) => prop,
            None => additional(current).flatten()?,
        };
    }
    if current.get("type").and_then(Value::as_str) != Some("array") {
        return None;
    }
    Some(
        match current
            .get("x-kubernetes-list-type")
            .and_then(Value::as_str)
        {
            Some("set") => ListKind::Set,
            Some("map") => ListKind::Map(
                current
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => ListKind::Atomic,
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "string", "default": "m"},
                        "replicas": {"type": "integer"},
                        "items": {"type": "array", "items": {"type": "object", "properties": {
                            "name": {"type": "string"},
                            "weight": {"type": "integer", "default": 1}
                        }}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                        "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                            "properties": {"spec": {"type": "object"}}},
                        "opt": {"type": "string", "nullable": true},
                        "nested": {"type": "object", "default": {}, "properties": {
                            "level": {"type": "string", "default": "info"}
                        }},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name", "protocol"],
                            "items": {"type": "object", "properties": {"name": {"type": "string"}, "protocol": {"type": "string"}}}},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "groups": {"type": "array", "items": {"type": "object", "properties": {
                            "members": {"type": "array", "items": {"type": "string"}}
                        }}}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        })
    }

    #[test]
    fn prune_reports_unknown_fields() {
        let mut obj = json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "anything": 1},
            "extra": true,
            "spec": {
                "unknownField": 1,
                "replicas": 2,
                "items": [{"name": "a", "bogus": 1}],
                "labels": {"a": "b"},
                "free": {"whatever": {"x": 1}, "known": {"a": "x", "b": "y"}},
                "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "other": 1}
            }
        });
        let pruned = prune(&mut obj, &Schema::compile(&schema()), &[]);
        assert_eq!(
            pruned,
            [
                "extra",
                "spec.embedded.other",
                "spec.free.known.b",
                "spec.items[0].bogus",
                "spec.unknownField"
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "anything": 1},
                "spec": {
                    "replicas": 2,
                    "items": [{"name": "a"}],
                    "labels": {"a": "b"},
                    "free": {"whatever": {"x": 1}, "known": {"a": "x"}},
                    "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
                }
            })
        );
    }

    #[test]
    fn strict_and_warning_messages() {
        let mut obj = json!({"spec": {"unknownField": 1, "other": 2}});
        let pruned = prune(&mut obj, &Schema::compile(&schema()), &[]);
        assert_eq!(
            unknown_field_message(&pruned[0]),
            r#"unknown field "spec.other""#
        );
        assert_eq!(
            strict_decoding_message(&pruned).as_deref(),
            Some(
                r#"strict decoding error: unknown field "spec.other", unknown field "spec.unknownField""#
            )
        );
        assert_eq!(strict_decoding_message(&[]), None);
    }

    #[test]
    fn prune_keeps_everything_under_preserve_at_root() {
        let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut obj = json!({"spec": {"a": 1}, "b": [1]});
        assert!(prune(&mut obj, &Schema::compile(&schema), &[]).is_empty());
        assert_eq!(obj, json!({"spec": {"a": 1}, "b": [1]}));
    }

    #[test]
    fn defaults_fill_absent_fields() {
        let mut obj = json!({"spec": {"items": [{"name": "a"}, {"name": "b", "weight": 5}], "replicas": null, "opt": null}});
        apply_defaults(&mut obj, &Schema::compile(&schema()), &[]);
        assert_eq!(
            obj,
            json!({"spec": {
                "size": "m",
                "items": [{"name": "a", "weight": 1}, {"name": "b", "weight": 5}],
                "opt": null,
                "nested": {"level": "info"}
            }})
        );
    }

    #[test]
    fn defaults_replace_non_nullable_nulls() {
        let mut obj = json!({"spec": {"size": null}});
        apply_defaults(&mut obj, &Schema::compile(&schema()), &[]);
        assert_eq!(obj["spec"]["size"], json!("m"));
    }

    #[test]
    fn defaults_and_nulls_deep_below_nodes_without_either_are_reached() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "plain": {"type": "object", "properties": {"a": {"type": "string"}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "deep": {"type": "object", "additionalProperties": {"type": "array", "items": {
                "type": "object",
                "properties": {"x": {"type": "integer", "default": 3}, "y": {"type": "string"}}}}}
        }}}});
        let mut obj = json!({"spec": {
            "plain": {"a": null}, "free": {"k": null}, "deep": {"m": [{"y": null}, {"x": 1}]}
        }});
        apply_defaults(&mut obj, &Schema::compile(&schema), &[]);
        // A null no schema describes stays, as upstream leaves it.
        assert_eq!(
            obj,
            json!({"spec": {"plain": {}, "free": {"k": null}, "deep": {"m": [{"x": 3}, {"x": 1}]}}})
        );
    }

    #[test]
    fn defaults_in_additional_properties() {
        let schema = json!({"type": "object", "properties": {"m": {"type": "object",
            "additionalProperties": {"type": "object", "properties": {"x": {"type": "integer", "default": 7}}}}}});
        let mut obj = json!({"m": {"a": {}, "b": {"x": 1}}});
        apply_defaults(&mut obj, &Schema::compile(&schema), &[]);
        assert_eq!(obj, json!({"m": {"a": {"x": 7}, "b": {"x": 1}}}));
    }

    #[test]
    fn list_types() {
        let s = schema();
        assert_eq!(
            list_type(&s, &["spec", "ports"]),
            Some(ListKind::Map(vec!["name".into(), "protocol".into()]))
        );
        assert_eq!(list_type(&s, &["spec", "tags"]), Some(ListKind::Set));
        assert_eq!(list_type(&s, &["spec", "items"]), Some(ListKind::Atomic));
        assert_eq!(
            list_type(&s, &["spec", "groups", "members"]),
            Some(ListKind::Atomic)
        );
        assert_eq!(list_type(&s, &["spec", "size"]), None);
        assert_eq!(list_type(&s, &["spec", "missing"]), None);
    }

    #[test]
    fn unchanged_top_level_fields_are_not_walked_again() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
            "status": {"type": "object", "properties": {"b": {"type": "string", "default": "x"}}}
        }});
        let old =
            json!({"metadata": {"name": "o"}, "spec": {"a": "1", "stale": true}, "status": {}});
        let mut new = json!({"metadata": {"name": "o"}, "spec": {"a": "1", "stale": true},
            "status": {"extra": 1}});
        let unchanged = unchanged_fields(&new, Some(&old));
        assert_eq!(unchanged, ["spec"]);
        assert_eq!(
            prune(&mut new, &Schema::compile(&schema), &unchanged),
            ["status.extra"]
        );
        apply_defaults(&mut new, &Schema::compile(&schema), &unchanged);
        assert_eq!(new["spec"], json!({"a": "1", "stale": true}));
        assert_eq!(new["status"], json!({"b": "x"}));
        assert!(unchanged_fields(&new, None).is_empty());
    }
}
