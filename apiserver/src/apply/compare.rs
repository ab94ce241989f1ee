//! The field sets of an object, and the fields that differ between two versions of one.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fieldset::{FieldSet, PathElement, path_to_string};
use super::{ListType, ListTypes};

/// The fields an applied configuration sets: every leaf, every element of a set or map list,
/// every atomic list, and every field set to `null` or `{}`.
pub(crate) fn field_set(config: &Value, lists: &dyn ListTypes) -> Result<FieldSet, String> {
    let mut set = FieldSet::new();
    collect(config, &mut Vec::new(), &mut Vec::new(), lists, &mut set)?;
    Ok(set)
}

fn collect<'v>(
    value: &'v Value,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    lists: &dyn ListTypes,
    set: &mut FieldSet,
) -> Result<(), String> {
    match value {
        Value::Object(fields) => {
            for (name, child) in fields {
                path.push(PathElement::Field(name.clone()));
                names.push(name);
                if child.is_null() || child.as_object().is_some_and(|m| m.is_empty()) {
                    set.insert(path);
                }
                let result = collect(child, path, names, lists, set);
                names.pop();
                path.pop();
                result?;
            }
            Ok(())
        }
        Value::Array(items) => {
            let list_type = lists.list_type(names);
            if list_type == ListType::Atomic {
                set.insert(path);
                return Ok(());
            }
            let mut seen = std::collections::BTreeSet::new();
            for (index, item) in items.iter().enumerate() {
                let element = PathElement::for_list_item(&list_type, item)
                    .map_err(|e| format!("{}: element {index}: {e}", path_to_string(path)))?;
                if !seen.insert(element.clone()) {
                    return Err(format!(
                        "{}: duplicate entries for key {element}",
                        path_to_string(path)
                    ));
                }
                path.push(element);
                let result = collect(item, path, names, lists, set);
                set.insert(path);
                path.pop();
                result?;
            }
            Ok(())
        }
        _ => {
            set.insert(path);
            Ok(())
        }
    }
}

/// The fields added, modified and removed between two versions of an object.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Present only in the new version (objects and lists included, not just leaves).
    pub(crate) added: FieldSet,
    /// Leaves present in both with different values.
    pub(crate) modified: FieldSet,
    /// Present only in the old version.
    pub(crate) removed: FieldSet,
}

impl Comparison {
    /// True when nothing differs.
    pub(crate) fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// The fields added or modified.
    pub(crate) fn changed(&self) -> FieldSet {
        let mut changed = self.added.clone();
        changed.extend(&self.modified);
        changed
    }
}

/// Compares two versions of an object field by field, leaving out `metadata.managedFields`. A
/// list whose elements cannot be keyed (bad or duplicate keys) is compared as one leaf.
pub(crate) fn compare(old: &Value, new: &Value, lists: &dyn ListTypes) -> Comparison {
    let mut out = Comparison::default();
    walk(
        Some(old),
        Some(new),
        &mut Vec::new(),
        &mut Vec::new(),
        lists,
        &mut out,
    );
    out
}

#[derive(PartialEq)]
enum Kind {
    Map,
    List,
    Scalar,
}

fn kind(value: &Value) -> Kind {
    match value {
        Value::Object(_) => Kind::Map,
        Value::Array(_) => Kind::List,
        _ => Kind::Scalar,
    }
}

fn walk<'v>(
    old: Option<&'v Value>,
    new: Option<&'v Value>,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    lists: &dyn ListTypes,
    out: &mut Comparison,
) {
    let Some(node) = new.or(old) else {
        return;
    };
    if let (Some(o), Some(n)) = (old, new)
        && o == n
    {
        // Nothing differs at or below an equal value: no need to walk it (most of an object,
        // on most writes).
        return;
    }
    if let (Some(o), Some(n)) = (old, new)
        && kind(o) != kind(n)
    {
        // The value changed shape: it is modified, and whatever hung below it came or went.
        out.modified.insert(path);
        let mut gone = Comparison::default();
        walk(Some(o), None, path, names, lists, &mut gone);
        gone.removed.remove_member(path);
        out.removed.extend(&gone.removed);
        let mut came = Comparison::default();
        walk(None, Some(n), path, names, lists, &mut came);
        came.added.remove_member(path);
        out.added.extend(&came.added);
        return;
    }
    let descended = match node {
        Value::Object(_) => walk_map(old, new, path, names, lists, out),
        Value::Array(_) => walk_list(old, new, path, names, lists, out),
        _ => false,
    };
    if !descended {
        leaf(old, new, path, out);
        return;
    }
    if old.is_none() {
        out.added.insert(path);
    } else if new.is_none() {
        out.removed.insert(path);
    }
}

fn leaf(old: Option<&Value>, new: Option<&Value>, path: &[PathElement], out: &mut Comparison) {
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(o), Some(n)) if o != n => out.modified.insert(path),
        _ => {}
    }
}

/// Walks an object's fields; false when it is to be compared as a leaf (both sides empty).
fn walk_map<'v>(
    old: Option<&'v Value>,
    new: Option<&'v Value>,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    lists: &dyn ListTypes,
    out: &mut Comparison,
) -> bool {
    let old = old.and_then(Value::as_object);
    let new = new.and_then(Value::as_object);
    if old.is_none_or(|m| m.is_empty()) && new.is_none_or(|m| m.is_empty()) {
        return false;
    }
    let mut keys: Vec<&'v String> = old.into_iter().flat_map(|m| m.keys()).collect();
    keys.extend(new.into_iter().flat_map(|m| m.keys()));
    keys.sort();
    keys.dedup();
    for key in keys {
        if names.len() == 1 && names[0] == "metadata" && key == "managedFields" {
            // The bookkeeping itself is never compared.
            continue;
        }
        path.push(PathElement::Field(key.clone()));
        names.push(key);
        walk(
            old.and_then(|m| m.get(key)),
            new.and_then(|m| m.get(key)),
            path,
            names,
            lists,
            out,
        );
        names.pop();
        path.pop();
    }
    true
}

/// Elements of a list grouped by their path element, in order of first appearance.
type Indexed<'v> = BTreeMap<PathElement, Vec<&'v Value>>;

fn index_list<'v>(list_type: &ListType, items: &'v [Value]) -> Option<Indexed<'v>> {
    let mut indexed: Indexed<'v> = BTreeMap::new();
    for item in items {
        let element = PathElement::for_list_item(list_type, item).ok()?;
        indexed.entry(element).or_default().push(item);
    }
    Some(indexed)
}

/// Walks a set or map list's elements; false when it is to be compared as a leaf.
fn walk_list<'v>(
    old: Option<&'v Value>,
    new: Option<&'v Value>,
    path: &mut Vec<PathElement>,
    names: &mut Vec<&'v str>,
    lists: &dyn ListTypes,
    out: &mut Comparison,
) -> bool {
    let old = old.and_then(Value::as_array).map(Vec::as_slice);
    let new = new.and_then(Value::as_array).map(Vec::as_slice);
    if old.is_none_or(<[Value]>::is_empty) && new.is_none_or(<[Value]>::is_empty) {
        return false;
    }
    let list_type = lists.list_type(names);
    if list_type == ListType::Atomic {
        return false;
    }
    let (Some(old_items), Some(new_items)) = (
        index_list(&list_type, old.unwrap_or_default()),
        index_list(&list_type, new.unwrap_or_default()),
    ) else {
        return false;
    };
    let mut elements: Vec<&PathElement> = old_items.keys().chain(new_items.keys()).collect();
    elements.sort();
    elements.dedup();
    for element in elements {
        let before = old_items
            .get(element)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let after = new_items
            .get(element)
            .map(Vec::as_slice)
            .unwrap_or_default();
        path.push(element.clone());
        if before.len() <= 1 && after.len() <= 1 {
            walk(
                before.first().copied(),
                after.first().copied(),
                path,
                names,
                lists,
                out,
            );
        } else if before != after {
            // Duplicated elements are compared as one leaf.
            out.modified.insert(path);
        }
        path.pop();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Containers;
    impl ListTypes for Containers {
        fn list_type(&self, path: &[&str]) -> ListType {
            match path {
                ["spec", "containers"] => ListType::Map(vec!["name".to_string()]),
                ["spec", "tags"] => ListType::Set,
                _ => ListType::Atomic,
            }
        }
    }

    fn paths(set: &FieldSet) -> Vec<String> {
        set.paths().iter().map(|p| path_to_string(p)).collect()
    }

    #[test]
    fn field_set_of_a_config() {
        let set = field_set(
            &json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": null, "y": {},
                "args": ["a"], "tags": ["t"], "containers": [{"name": "c", "image": "i"}]}}),
            &Containers,
        )
        .unwrap();
        assert_eq!(
            paths(&set),
            [
                ".metadata.labels.a",
                ".spec.args",
                ".spec.x",
                ".spec.y",
                ".spec.containers[name=\"c\"]",
                ".spec.containers[name=\"c\"].image",
                ".spec.containers[name=\"c\"].name",
                ".spec.tags[=\"t\"]",
            ]
        );
    }

    #[test]
    fn field_set_rejects_duplicate_keys() {
        let err = field_set(
            &json!({"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}),
            &Containers,
        )
        .unwrap_err();
        assert_eq!(
            err,
            ".spec.containers: duplicate entries for key [name=\"c\"]"
        );
    }

    #[test]
    fn compare_reports_added_modified_removed() {
        let c = compare(
            &json!({"spec": {"a": 1, "b": 2, "containers": [{"name": "c", "image": "1"}]}}),
            &json!({"spec": {"a": 1, "b": 3, "m": {"k": "v"},
                "containers": [{"name": "c", "image": "2"}, {"name": "d"}]}}),
            &Containers,
        );
        assert_eq!(
            paths(&c.added),
            [
                ".spec.m",
                ".spec.containers[name=\"d\"]",
                ".spec.containers[name=\"d\"].name",
                ".spec.m.k",
            ]
        );
        assert_eq!(
            paths(&c.modified),
            [".spec.b", ".spec.containers[name=\"c\"].image"]
        );
        assert!(c.removed.is_empty());
    }

    #[test]
    fn compare_leaves_out_managed_fields_and_equal_subtrees() {
        let old = json!({"metadata": {"name": "a", "managedFields": [{"manager": "x"}]},
            "spec": {"same": {"deep": [1, 2]}, "b": 1}});
        let new = json!({"metadata": {"name": "a", "managedFields": [{"manager": "y"}, {}]},
            "spec": {"same": {"deep": [1, 2]}, "b": 2}});
        let c = compare(&old, &new, &Containers);
        assert!(c.added.is_empty() && c.removed.is_empty());
        assert_eq!(paths(&c.modified), [".spec.b"]);
        assert!(compare(&old, &old, &Containers).is_same());
    }
}
