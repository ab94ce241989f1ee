//! Sets of field paths, as structured-merge-diff keeps them, and their `FieldsV1` encoding.
//!
//! A path is a list of [`PathElement`]s from the object's root. A [`FieldSet`] is a tree: each node
//! has `members` (paths that end there) and `children` (paths that go on). In `FieldsV1`, a key is
//! `f:<field>`, `k:<json key fields>`, `v:<json value>` or `i:<index>`; `{}` marks a member, and
//! `".": {}` marks a node that is both a member and has children.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use super::ListType;

/// One step of a field path.
#[derive(Debug, Clone)]
pub(crate) enum PathElement {
    /// A field of an object (`f:`).
    Field(String),
    /// An element of a map list, by its key fields sorted by name (`k:`).
    Key(Vec<(String, Value)>),
    /// An element of a set list, by value (`v:`).
    Value(Value),
    /// An element of a list by position (`i:`); only read from stored entries.
    Index(usize),
}

impl PathElement {
    /// The element that names `item` inside a list of type `list_type`.
    pub(crate) fn for_list_item(list_type: &ListType, item: &Value) -> Result<Self, String> {
        match list_type {
            ListType::Atomic => Err("atomic lists have no element paths".to_string()),
            ListType::Set => match item {
                Value::Null => Err("set list may not have a null element".to_string()),
                Value::Object(_) => Err(
                    "associative list without keys has an element that's a map type".to_string(),
                ),
                other => Ok(PathElement::Value(other.clone())),
            },
            ListType::Map(keys) => {
                let Value::Object(fields) = item else {
                    return Err(
                        "associative list with keys may not have non-map elements".to_string()
                    );
                };
                let mut key: Vec<(String, Value)> = keys
                    .iter()
                    .filter_map(|name| fields.get(name).map(|v| (name.clone(), v.clone())))
                    .collect();
                if key.is_empty() {
                    return Err(format!(
                        "associative list with keys has an element that omits all key fields {keys:?}"
                    ));
                }
                key.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(PathElement::Key(key))
            }
        }
    }

    /// The `FieldsV1` key for this element.
    fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let body: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{}:{}", json_string(name), value))
                    .collect();
                format!("k:{{{}}}", body.join(","))
            }
            PathElement::Value(value) => format!("v:{value}"),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Reads a `FieldsV1` key; `Ok(None)` for a prefix this version does not know.
    fn decode(key: &str) -> Result<Option<Self>, String> {
        let Some((prefix, rest)) = key.split_once(':') else {
            return Err(format!("invalid path element {key:?}"));
        };
        let element = match prefix {
            "f" => PathElement::Field(rest.to_string()),
            "k" => {
                let parsed: Map<String, Value> = serde_json::from_str(rest)
                    .map_err(|e| format!("invalid key in path element {key:?}: {e}"))?;
                let mut fields: Vec<(String, Value)> = parsed.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                PathElement::Key(fields)
            }
            "v" => PathElement::Value(
                serde_json::from_str(rest)
                    .map_err(|e| format!("invalid value in path element {key:?}: {e}"))?,
            ),
            "i" => PathElement::Index(
                rest.parse()
                    .map_err(|e| format!("invalid index in path element {key:?}: {e}"))?,
            ),
            _ => return Ok(None),
        };
        Ok(Some(element))
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let c = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// The form used in conflict messages: `.field`, `[name="x"]`, `[=value]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={value}"))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={value}]"),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// Formats a whole path for messages, e.g. `.spec.containers[name="nginx"].image`.
pub(crate) fn path_to_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A total order over JSON values: numbers, strings, booleans, arrays, objects, null.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (fx, fy) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            fx.total_cmp(&fy)
                .then_with(|| x.to_string().cmp(&y.to_string()))
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (xi, yi) in x.iter().zip(y) {
                let c = compare_values(xi, yi);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Compare as lists of entries sorted by key.
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(&ys) {
                let c = xk.cmp(yk).then_with(|| compare_values(xv, yv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

fn json_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// A set of field paths, stored as a tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    members: BTreeSet<PathElement>,
    /// Never holds an empty set.
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// An empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// True when the set holds no path.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path; the empty path (the root itself) is never tracked.
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Drops a path (as a member only; paths below it stay).
    pub(crate) fn remove_member(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_member(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// True when `path` itself is in the set.
    #[cfg(test)]
    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// The members directly below this node.
    pub(crate) fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The subtrees below this node.
    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// The subtree under `element`, if any path continues through it.
    pub(crate) fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// True when `element` is a member here or some path continues through it.
    pub(crate) fn touches(&self, element: &PathElement) -> bool {
        self.members.contains(element) || self.children.contains_key(element)
    }

    /// Every path in either set.
    #[cfg(test)]
    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.extend(other);
        out
    }

    /// Adds every path of `other` to this set, copying only what this set lacks.
    pub(crate) fn extend(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            match self.children.get_mut(element) {
                Some(mine) => mine.extend(child),
                None => {
                    self.children.insert(element.clone(), child.clone());
                }
            }
        }
    }

    /// The paths of `self` that are not in `other`.
    #[cfg(test)]
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.subtract(other);
        out
    }

    /// Drops every path of `other` from this set, in place: a write's managed fields are
    /// narrowed on every request, and copying each entry's set to narrow it cost more than
    /// the narrowing.
    /// Whether that dropped anything.
    pub(crate) fn subtract(&mut self, other: &FieldSet) -> bool {
        let mut dropped = false;
        if !other.members.is_empty() {
            let before = self.members.len();
            self.members
                .retain(|member| !other.members.contains(member));
            dropped |= self.members.len() != before;
        }
        if !other.children.is_empty() {
            self.children
                .retain(|element, child| match other.children.get(element) {
                    Some(theirs) => {
                        dropped |= child.subtract(theirs);
                        !child.is_empty()
                    }
                    None => true,
                });
        }
        dropped
    }

    /// The paths in both sets.
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let both = child.intersection(other.children.get(element)?);
                (!both.is_empty()).then(|| (element.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Every path, members of a node before the paths below it, each group in sorted order.
    pub(crate) fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` form of the set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        self.encode(false)
    }

    fn encode(&self, include_self: bool) -> Value {
        let mut out = Map::new();
        if include_self {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        let elements: BTreeSet<&PathElement> =
            self.members.iter().chain(self.children.keys()).collect();
        for element in elements {
            let value = match self.children.get(element) {
                Some(child) => child.encode(self.members.contains(element)),
                None => Value::Object(Map::new()),
            };
            out.insert(element.encode(), value);
        }
        Value::Object(out)
    }

    /// Reads a `FieldsV1` value.
    pub(crate) fn from_fields_v1(fields: &Value) -> Result<FieldSet, String> {
        Ok(Self::decode(fields)?.0)
    }

    /// The set below a node, and whether the node itself is a member (`"."`).
    fn decode(fields: &Value) -> Result<(FieldSet, bool), String> {
        let Value::Object(entries) = fields else {
            return Err("fieldsV1 must be a JSON object".to_string());
        };
        let mut set = FieldSet::new();
        let mut is_member = false;
        for (key, value) in entries {
            if key == "." {
                is_member = true;
                continue;
            }
            let Some(element) = PathElement::decode(key)? else {
                continue;
            };
            let (child, child_is_member) = Self::decode(value)?;
            if child_is_member || child.is_empty() {
                set.members.insert(element.clone());
            }
            if !child.is_empty() {
                set.children.insert(element, child);
            }
        }
        Ok((set, is_member))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    #[test]
    fn fields_v1_round_trips_members_children_and_dot() {
        let encoded = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}}},
                        "f:finalizers": {"v:\"a\"": {}}, "f:args": {"i:0": {}}}
        });
        let set = FieldSet::from_fields_v1(&encoded).unwrap();
        assert!(set.has(&[field("metadata"), field("labels")]));
        assert!(set.has(&[field("metadata"), field("labels"), field("app")]));
        assert!(!set.has(&[field("metadata")]));
        let nginx = PathElement::Key(vec![("name".to_string(), json!("nginx"))]);
        assert!(set.has(&[field("spec"), field("containers"), nginx.clone()]));
        assert!(set.has(&[field("spec"), field("containers"), nginx, field("image")]));
        assert!(set.has(&[
            field("spec"),
            field("finalizers"),
            PathElement::Value(json!("a"))
        ]));
        assert!(set.has(&[field("spec"), field("args"), PathElement::Index(0)]));
        assert_eq!(set.to_fields_v1(), encoded);
    }

    #[test]
    fn paths_print_like_upstream() {
        let path = [
            field("spec"),
            field("containers"),
            PathElement::Key(vec![
                ("name".to_string(), json!("nginx")),
                ("port".to_string(), json!(80)),
            ]),
            field("image"),
        ];
        assert_eq!(
            path_to_string(&path),
            ".spec.containers[name=\"nginx\",port=80].image"
        );
        assert_eq!(
            path_to_string(&[field("f"), PathElement::Value(json!("x"))]),
            ".f[=\"x\"]"
        );
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::new();
        a.insert(&[field("spec"), field("a")]);
        a.insert(&[field("spec"), field("b")]);
        let mut b = FieldSet::new();
        b.insert(&[field("spec"), field("b")]);
        b.insert(&[field("status")]);
        let mut only_a = FieldSet::new();
        only_a.insert(&[field("spec"), field("a")]);
        assert_eq!(a.difference(&b), only_a);
        let mut both = FieldSet::new();
        both.insert(&[field("spec"), field("b")]);
        assert_eq!(a.intersection(&b), both);
        assert_eq!(a.union(&b).paths().len(), 3);
        assert!(a.difference(&a).is_empty());
    }
}
