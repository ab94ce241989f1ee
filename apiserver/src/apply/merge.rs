//! Merging an applied configuration into a live object, and removing fields from an object.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, PathElement, path_to_string};
use super::{ListType, ListTypes};

/// Merges `config` into `live`: objects merge field by field, set and map lists merge element by
/// element, and anything else (scalars, atomic lists) takes the configured value. A field set to
/// `null` in the configuration is removed.
pub(crate) fn merge(live: &Value, config: &Value, lists: &dyn ListTypes) -> Result<Value, String> {
    merge_value(Some(live), config, &mut Vec::new(), &mut Vec::new(), lists)
}

fn merge_value<'v>(
    live: Option<&'v Value>,
    config: &'v Value,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    lists: &dyn ListTypes,
) -> Result<Value, String> {
    match config {
        Value::Object(fields) => {
            // Only the live fields the configuration leaves alone are copied as they are.
            let mut out = match live {
                Some(Value::Object(existing)) => existing
                    .iter()
                    .filter(|(name, _)| !fields.contains_key(name.as_str()))
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect(),
                _ => Map::new(),
            };
            for (name, value) in fields {
                if value.is_null() {
                    continue;
                }
                path.push(PathElement::Field(name.clone()));
                names.push(name);
                let merged = merge_value(
                    live.and_then(|l| l.get(name.as_str())),
                    value,
                    path,
                    names,
                    lists,
                );
                names.pop();
                path.pop();
                out.insert(name.clone(), merged?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let list_type = lists.list_type(names);
            match (live, &list_type) {
                (_, ListType::Atomic) => Ok(config.clone()),
                (Some(Value::Array(existing)), _) => {
                    merge_list(existing, items, &list_type, path, names, lists)
                }
                _ => merge_list(&[], items, &list_type, path, names, lists),
            }
        }
        _ => Ok(config.clone()),
    }
}

/// Merges two set or map lists. Elements only in `live` keep their place, elements in both are
/// merged, and the configuration's order wins among the elements it names.
fn merge_list<'v>(
    live: &'v [Value],
    config: &'v [Value],
    list_type: &ListType,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    lists: &dyn ListTypes,
) -> Result<Value, String> {
    let element = |item: &Value, index: usize, path: &[PathElement]| {
        PathElement::for_list_item(list_type, item)
            .map_err(|e| format!("{}: element {index}: {e}", path_to_string(path)))
    };
    let mut config_elements = Vec::with_capacity(config.len());
    let mut config_items = BTreeMap::new();
    for (index, item) in config.iter().enumerate() {
        let pe = element(item, index, path)?;
        if config_items.insert(pe.clone(), item).is_some() {
            return Err(format!(
                "{}: duplicate entries for key {pe}",
                path_to_string(path)
            ));
        }
        config_elements.push(pe);
    }
    let mut live_elements = Vec::with_capacity(live.len());
    let mut live_items = BTreeMap::new();
    for (index, item) in live.iter().enumerate() {
        let pe = element(item, index, path)?;
        live_items.entry(pe.clone()).or_insert(item);
        live_elements.push(pe);
    }

    let mut shared: VecDeque<&PathElement> = config_elements
        .iter()
        .filter(|pe| live_items.contains_key(*pe))
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_config: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(live.len().max(config.len()));
    let merge_element = |pe: &PathElement,
                         path: &mut Vec<PathElement>,
                         names: &mut Vec<&'v str>|
     -> Result<Value, String> {
        let config_item = config_items.get(pe).copied().unwrap_or(&Value::Null);
        path.push(pe.clone());
        let merged = merge_value(live_items.get(pe).copied(), config_item, path, names, lists);
        path.pop();
        merged
    };
    let (mut li, mut ci) = (0, 0);
    while li < live_elements.len() || ci < config_elements.len() {
        if li < live_elements.len() && ci < config_elements.len() {
            let pe = &live_elements[li];
            if *pe == config_elements[ci] {
                merged_config.insert(pe);
                out.push(merge_element(pe, path, names)?);
                li += 1;
                ci += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if config_items.contains_key(pe) && next_shared.is_some_and(|s| s != pe) {
                li += 1;
                continue;
            }
        }
        if li < live_elements.len() {
            let pe = &live_elements[li];
            if !config_items.contains_key(pe) {
                out.push(live[li].clone());
                li += 1;
                continue;
            }
            if merged_config.contains(pe) {
                li += 1;
            }
        }
        if ci < config_elements.len() {
            let pe = &config_elements[ci];
            merged_config.insert(pe);
            out.push(merge_element(pe, path, names)?);
            ci += 1;
            if next_shared == Some(pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    Ok(Value::Array(out))
}

/// Removes every path of `set` from `value`. An object or list emptied by the removal is
/// removed too.
pub(crate) fn remove(value: &mut Value, set: &FieldSet, lists: &dyn ListTypes) {
    remove_in(value, set, &mut Vec::new(), lists);
}

fn remove_in(value: &mut Value, set: &FieldSet, names: &mut Vec<String>, lists: &dyn ListTypes) {
    match value {
        Value::Object(fields) => {
            for member in set.members() {
                if let PathElement::Field(name) = member {
                    fields.remove(name);
                }
            }
            for (element, child) in set.children() {
                let PathElement::Field(name) = element else {
                    continue;
                };
                let Some(inner) = fields.get_mut(name) else {
                    continue;
                };
                names.push(name.clone());
                let emptied = remove_emptied(inner, child, names, lists);
                names.pop();
                if emptied {
                    fields.remove(name);
                }
            }
        }
        Value::Array(items) => {
            let names_ref: Vec<&str> = names.iter().map(String::as_str).collect();
            let list_type = lists.list_type(&names_ref);
            if list_type == ListType::Atomic {
                return;
            }
            let mut kept = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                let Ok(pe) = PathElement::for_list_item(&list_type, &item) else {
                    kept.push(item);
                    continue;
                };
                if set.members().any(|m| *m == pe) {
                    continue;
                }
                if let Some(child) = set.child(&pe)
                    && remove_emptied(&mut item, child, names, lists)
                {
                    continue;
                }
                kept.push(item);
            }
            *items = kept;
        }
        _ => {}
    }
}

/// Removes `set` from `value`; true when that left a non-empty object or list empty.
fn remove_emptied(
    value: &mut Value,
    set: &FieldSet,
    names: &mut Vec<String>,
    lists: &dyn ListTypes,
) -> bool {
    let was_empty = is_empty_container(value);
    remove_in(value, set, names, lists);
    !was_empty && is_empty_container(value)
}

fn is_empty_container(value: &Value) -> bool {
    match value {
        Value::Object(fields) => fields.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Lists;
    impl ListTypes for Lists {
        fn list_type(&self, path: &[&str]) -> ListType {
            match path {
                ["containers"] => ListType::Map(vec!["name".to_string()]),
                ["tags"] => ListType::Set,
                _ => ListType::Atomic,
            }
        }
    }

    fn names(list: &Value) -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn merge_keeps_live_fields_and_replaces_atomic_lists() {
        let out = merge(
            &json!({"a": {"x": 1, "y": 2}, "args": ["a", "b"], "gone": 1}),
            &json!({"a": {"y": 3}, "args": ["c"], "gone": null}),
            &Lists,
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"x": 1, "y": 3}, "args": ["c"]}));
    }

    #[test]
    fn merge_map_list_by_key_and_set_list_by_value() {
        let out = merge(
            &json!({"containers": [{"name": "a", "image": "1", "x": true}, {"name": "b"}],
                    "tags": ["p", "q"]}),
            &json!({"containers": [{"name": "c"}, {"name": "a", "image": "2"}],
                    "tags": ["r", "p"]}),
            &Lists,
        )
        .unwrap();
        assert_eq!(names(&out["containers"]), ["c", "a", "b"]);
        assert_eq!(
            out["containers"][1],
            json!({"name": "a", "image": "2", "x": true})
        );
        assert_eq!(out["tags"], json!(["r", "p", "q"]));
    }

    #[test]
    fn merge_keeps_live_order_for_elements_config_does_not_name() {
        let out = merge(
            &json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}),
            &json!({"containers": [{"name": "c"}, {"name": "a"}]}),
            &Lists,
        )
        .unwrap();
        assert_eq!(names(&out["containers"]), ["b", "c", "a"]);
    }

    #[test]
    fn remove_drops_fields_elements_and_emptied_parents() {
        let mut obj = json!({"spec": {"a": 1, "only": {"x": 1}},
            "containers": [{"name": "a", "image": "1"}, {"name": "b"}], "tags": ["p", "q"]});
        let mut set = FieldSet::new();
        let f = |n: &str| PathElement::Field(n.to_string());
        set.insert(&[f("spec"), f("only"), f("x")]);
        set.insert(&[
            f("containers"),
            PathElement::Key(vec![("name".to_string(), json!("b"))]),
        ]);
        set.insert(&[
            f("containers"),
            PathElement::Key(vec![("name".to_string(), json!("a"))]),
            f("image"),
        ]);
        set.insert(&[f("tags"), PathElement::Value(json!("q"))]);
        remove(&mut obj, &set, &Lists);
        assert_eq!(
            obj,
            json!({"spec": {"a": 1}, "containers": [{"name": "a"}], "tags": ["p"]})
        );
    }
}
