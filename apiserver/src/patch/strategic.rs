//! Strategic merge patch (`application/strategic-merge-patch+json`) as kube-apiserver applies it
//! to built-in kinds.
//!
//! Like a JSON merge patch (maps merge recursively, `null` deletes a key), except that lists
//! follow the `patchStrategy` / `patchMergeKey` tags of the Kubernetes types, looked up through
//! [`PatchMeta`]:
//!
//! * lists with strategy `merge` and a merge key merge element by element on that key;
//! * lists of primitives with strategy `merge` (`metadata.finalizers`) are unioned;
//! * every other list is replaced whole.
//!
//! The directives of the patch format are honoured:
//!
//! * `$patch: replace` on a map replaces the map; as an element of a merging list it replaces
//!   the list with the other elements of the patch list;
//! * `$patch: delete` on a map empties it; as an element of a merging list it deletes the element
//!   with the same merge key;
//! * `$retainKeys: [...]` drops the keys of the live map that are not listed;
//! * `$setElementOrder/<list>: [...]` orders the merged list;
//! * `$deleteFromPrimitiveList/<list>: [...]` removes values from a list of primitives.
//!
//! The ordering of merged lists follows apimachinery's `strategicpatch` package: elements named
//! in the patch (or in `$setElementOrder`) keep the patch's order and are interleaved with the
//! elements only the server has, which keep the server's order. Without `$setElementOrder`, new
//! elements therefore come before the server's elements, as upstream.
//!
//! Deliberate differences from upstream, all about values that upstream would store as sent
//! and the typed decoding would then drop or zero: directives and `null`s inside newly added
//! maps and list elements are resolved rather than stored, and `$patch: replace` on a map that
//! the object does not have yet adds the map rather than dropping it.

use serde_json::{Map, Value};

const PATCH_DIRECTIVE: &str = "$patch";
const DELETE: &str = "delete";
const REPLACE: &str = "replace";
const MERGE: &str = "merge";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Go's name for a JSON list, as upstream error messages spell it.
const GO_LIST: &str = "[]interface {}";
/// Go's name for a JSON object, as upstream error messages spell it.
const GO_MAP: &str = "map[string]interface {}";

/// Why a strategic merge patch could not be applied. Messages follow apimachinery's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicError {
    /// The patch (or the object it applies to) is not a JSON object.
    #[error("invalid JSON document")]
    NotAnObject,
    /// A `$patch` directive with a value this position does not accept.
    #[error("unknown patch type: {directive} in map: {map}")]
    UnknownPatchType {
        /// The directive's value as sent.
        directive: String,
        /// The map that carries it.
        map: String,
    },
    /// `$patch: merge` as an element of a list.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// An element of a list that merges on a key does not carry that key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    MissingMergeKey {
        /// The element.
        map: String,
        /// The merge key of the list.
        key: String,
    },
    /// A list of maps with strategy `merge` but no merge key.
    #[error("cannot merge lists without merge key for {path}")]
    NoMergeKey {
        /// Dotted path of the list.
        path: String,
    },
    /// A value has the wrong JSON type for its position.
    #[error("expected a {expected}, but received a {actual}")]
    WrongType {
        /// The type expected, in Go's spelling.
        expected: &'static str,
        /// The type received, in Go's spelling.
        actual: &'static str,
    },
    /// A merging list whose elements are lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// A merging list whose elements (live and patch together) are not all of one JSON type.
    #[error("list element types are not identical: {lists}")]
    MixedElementTypes {
        /// The live and patch lists.
        lists: String,
    },
    /// A `$deleteFromPrimitiveList` key that is not `$deleteFromPrimitiveList/<list>`.
    #[error("invalid patch format of primitive list")]
    BadPrimitiveListFormat,
    /// `$retainKeys` is not a list, or the map sets a key it does not list.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeysFormat,
    /// A `$setElementOrder` key that is not `$setElementOrder/<list>`.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrderFormat,
    /// The patch list names elements in an order that `$setElementOrder` contradicts.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    OrderMismatch {
        /// The patch list.
        patch: String,
        /// The `$setElementOrder` list.
        order: String,
    },
}

impl StrategicError {
    /// True for the malformed directives kube-apiserver answers with 400 BadRequest. The other
    /// errors are patches that cannot apply to this object: answer them with 422 Invalid
    /// (upstream sends 422 for lists of lists and a generic error status for the rest).
    pub fn is_bad_request(&self) -> bool {
        matches!(
            self,
            StrategicError::NotAnObject
                | StrategicError::BadPrimitiveListFormat
                | StrategicError::BadRetainKeysFormat
                | StrategicError::BadSetElementOrderFormat
        )
    }
}

/// How a list field merges, from the Kubernetes types' `patchStrategy` / `patchMergeKey` tags.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Strategy {
    /// The patch list replaces the live list (atomic; the default for untagged lists).
    #[default]
    Replace,
    /// Elements merge: maps by `key`; with no key the list holds primitives, which are unioned.
    Merge {
        /// The `patchMergeKey`, or `None` for a list of primitives.
        key: Option<String>,
    },
}

impl Strategy {
    fn merge_key(&self) -> Option<&str> {
        match self {
            Strategy::Replace => None,
            Strategy::Merge { key } => key.as_deref(),
        }
    }
}

/// The patch metadata of a kind's fields.
///
/// `path` holds the field names from the object's root; list elements are stepped through
/// implicitly, so `["spec", "template", "spec", "containers", "ports"]` is the `ports` list of
/// every container of a Deployment.
pub trait PatchMeta {
    /// How the list at `path` merges.
    fn list_strategy(&self, path: &[&str]) -> Strategy;

    /// Whether the map at `path` (or each map element of the list at `path`) carries the
    /// `retainKeys` strategy. Clients send `$retainKeys` for such maps; the patch is applied
    /// from the directive itself, as upstream does, so this is for callers that describe the
    /// schema (OpenAPI `x-kubernetes-patch-strategy`).
    fn retain_keys(&self, path: &[&str]) -> bool;
}

/// How a field merges, in the static tables below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// A map, or a list without strategy.
    Atomic,
    /// A list of primitives with strategy `merge`.
    Set,
    /// A list of maps with strategy `merge` and this merge key.
    Keyed(&'static str),
}

/// One field of a type that matters to strategic merge patch, with the fields below it.
#[derive(Debug)]
pub(super) struct Field {
    name: &'static str,
    rule: Rule,
    retain_keys: bool,
    fields: &'static [Field],
}

pub(super) const fn nested(name: &'static str, fields: &'static [Field]) -> Field {
    Field {
        name,
        rule: Rule::Atomic,
        retain_keys: false,
        fields,
    }
}

pub(super) const fn keyed(
    name: &'static str,
    key: &'static str,
    fields: &'static [Field],
) -> Field {
    Field {
        name,
        rule: Rule::Keyed(key),
        retain_keys: false,
        fields,
    }
}

pub(super) const fn set(name: &'static str) -> Field {
    Field {
        name,
        rule: Rule::Set,
        retain_keys: false,
        fields: NONE,
    }
}

pub(super) const fn retained(field: Field) -> Field {
    Field {
        retain_keys: true,
        ..field
    }
}

const NONE: &[Field] = &[];

/// What a kind that is not built in has: `metadata`'s rules.
const OBJECT: &[Field] = &[nested(
    "metadata",
    &[keyed("ownerReferences", "uid", &[]), set("finalizers")],
)];

/// The patch metadata of the built-in kinds the server stores, generated from upstream's
/// OpenAPI definitions (`super::merge_keys`, by scripts/generate-merge-keys).
#[derive(Debug, Clone, Copy)]
pub struct BuiltinPatchMeta {
    root: &'static [Field],
}

impl BuiltinPatchMeta {
    /// The patch metadata of `kind` at `group`/`version` (`""` for the core group); a kind
    /// that is not built in has only `metadata`'s.
    pub fn for_kind(group: &str, version: &str, kind: &str) -> Self {
        let root = super::merge_keys::root(group, version, kind).unwrap_or(OBJECT);
        BuiltinPatchMeta { root }
    }

    fn field(&self, path: &[&str]) -> Option<&'static Field> {
        let mut fields = self.root;
        let mut found = None;
        for segment in path {
            let field = fields.iter().find(|f| f.name == *segment)?;
            fields = field.fields;
            found = Some(field);
        }
        found
    }
}

impl PatchMeta for BuiltinPatchMeta {
    fn list_strategy(&self, path: &[&str]) -> Strategy {
        match self.field(path).map(|f| f.rule) {
            Some(Rule::Keyed(key)) => Strategy::Merge {
                key: Some(key.to_owned()),
            },
            Some(Rule::Set) => Strategy::Merge { key: None },
            Some(Rule::Atomic) | None => Strategy::Replace,
        }
    }

    fn retain_keys(&self, path: &[&str]) -> bool {
        self.field(path).is_some_and(|f| f.retain_keys)
    }
}

/// Applies the strategic merge `patch` to `target`, with list strategies from `meta`.
///
/// On error `target` is left as it was.
pub fn apply(
    target: &mut Value,
    patch: &Value,
    meta: &dyn PatchMeta,
) -> Result<(), StrategicError> {
    let patch = match patch {
        Value::Object(patch) => patch,
        // Upstream decodes a `null` body into an empty patch.
        Value::Null => return Ok(()),
        _ => return Err(StrategicError::NotAnObject),
    };
    let original = match target {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => return Err(StrategicError::NotAnObject),
    };
    let merged = merge_map(original, patch, &mut Vec::new(), meta)?;
    *target = Value::Object(merged);
    Ok(())
}

/// The path of field names from the object root, borrowed from the patch's keys.
type Path<'p> = Vec<&'p str>;

/// Merges `patch` into `original`, honouring a `$patch` directive on the map.
fn merge_map<'p>(
    original: Map<String, Value>,
    patch: &'p Map<String, Value>,
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<Map<String, Value>, StrategicError> {
    match patch.get(PATCH_DIRECTIVE) {
        None => merge_fields(original, patch, path, meta),
        Some(directive) => match directive.as_str() {
            Some(REPLACE) => merge_fields(Map::new(), patch, path, meta),
            Some(DELETE) => Ok(Map::new()),
            _ => Err(unknown_patch_type(directive, patch)),
        },
    }
}

/// Merges the fields of `patch` into `original`, ignoring a `$patch` directive on the map.
fn merge_fields<'p>(
    mut original: Map<String, Value>,
    patch: &'p Map<String, Value>,
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<Map<String, Value>, StrategicError> {
    apply_retain_keys(&mut original, patch)?;

    // `$setElementOrder/<list>` first, together with the list it orders.
    let mut ordered: Vec<&'p str> = Vec::new();
    for (key, value) in patch {
        if !key.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        let order = value.as_array().ok_or(StrategicError::WrongType {
            expected: GO_LIST,
            actual: go_type(value),
        })?;
        let list_key = directive_target(key, SET_ELEMENT_ORDER)?;
        ordered.push(list_key);
        path.push(list_key);
        let result = merge_ordered_list(
            original.get_mut(list_key),
            patch.get(list_key),
            order,
            path,
            meta,
        );
        path.pop();
        if let Some(list) = result? {
            original.insert(list_key.to_owned(), Value::Array(list));
        }
    }

    for (key, value) in patch {
        if key == PATCH_DIRECTIVE
            || key == RETAIN_KEYS
            || key.starts_with(SET_ELEMENT_ORDER)
            || ordered.contains(&key.as_str())
        {
            continue;
        }
        let (field, delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (directive_target(key, DELETE_FROM_PRIMITIVE_LIST)?, true)
        } else {
            (key.as_str(), false)
        };
        if value.is_null() {
            original.remove(field);
            continue;
        }
        path.push(field);
        let result = merge_field(&mut original, field, value, delete_list, path, meta);
        path.pop();
        result?;
    }
    Ok(original)
}

/// Merges one non-null patch value into `original[field]`; `path` ends with `field`.
fn merge_field<'p>(
    original: &mut Map<String, Value>,
    field: &'p str,
    value: &'p Value,
    delete_list: bool,
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<(), StrategicError> {
    match (original.get_mut(field), value) {
        (Some(Value::Object(live)), Value::Object(patch)) => {
            let taken = std::mem::take(live);
            *live = merge_map(taken, patch, path, meta)?;
        }
        (Some(Value::Array(live)), Value::Array(patch)) => {
            let strategy = meta.list_strategy(path);
            let taken = std::mem::take(live);
            *live = merge_list_field(taken, patch, &strategy, delete_list, path, meta)?;
        }
        // Absent, or of another type: the patch value replaces it (a deletion list never adds).
        _ if delete_list => {}
        _ => match resolve_value(value, path, meta)? {
            Some(resolved) => {
                original.insert(field.to_owned(), resolved);
            }
            None => {
                original.remove(field);
            }
        },
    }
    Ok(())
}

/// `$retainKeys`: checks that the patch sets only listed keys, and drops unlisted live keys.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), StrategicError> {
    let Some(retain) = patch.get(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(StrategicError::BadRetainKeysFormat);
    };
    let listed = |key: &str| retain.iter().any(|k| k.as_str() == Some(key));
    for (key, value) in patch {
        if key == RETAIN_KEYS
            || key == PATCH_DIRECTIVE
            || value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(key) {
            return Err(StrategicError::BadRetainKeysFormat);
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

/// The list a `<prefix>/<list>` directive key names.
fn directive_target<'p>(key: &'p str, prefix: &str) -> Result<&'p str, StrategicError> {
    match key.split_once('/') {
        Some((head, target)) if head == prefix => Ok(target),
        _ if prefix == SET_ELEMENT_ORDER => Err(StrategicError::BadSetElementOrderFormat),
        _ => Err(StrategicError::BadPrimitiveListFormat),
    }
}

/// Merges the list that a `$setElementOrder` directive names, then orders it by the directive.
/// `None` when neither the object nor the patch has the list.
fn merge_ordered_list<'p>(
    live: Option<&mut Value>,
    patch: Option<&'p Value>,
    order: &[Value],
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<Option<Vec<Value>>, StrategicError> {
    let live = match live {
        None => None,
        Some(Value::Array(live)) => Some(live),
        Some(other) => {
            return Err(StrategicError::WrongType {
                expected: GO_LIST,
                actual: go_type(other),
            });
        }
    };
    let patch = match patch {
        None => None,
        Some(Value::Array(patch)) => Some(patch),
        Some(other) => {
            return Err(StrategicError::WrongType {
                expected: GO_LIST,
                actual: go_type(other),
            });
        }
    };
    let strategy = meta.list_strategy(path);
    let key = strategy.merge_key();
    validate_order(patch.map_or(&[][..], Vec::as_slice), order, key)?;
    check_element_types(
        live.as_deref().map_or(&[][..], Vec::as_slice),
        patch.map_or(&[][..], Vec::as_slice),
    )?;
    let server_order = identities(live.as_deref().map_or(&[][..], Vec::as_slice), key);
    let merged = match (live, patch) {
        (None, None) => return Ok(None),
        (Some(live), None) => std::mem::take(live),
        (None, Some(patch)) => resolve_list(patch, path, meta)?,
        (Some(live), Some(patch)) => {
            let taken = std::mem::take(live);
            merge_list_field(taken, patch, &strategy, false, path, meta)?
        }
    };
    order_elements(merged, order, &server_order, key).map(Some)
}

/// Checks that the patch list names its elements in the order `$setElementOrder` gives.
fn validate_order(
    patch: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), StrategicError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut named = Vec::with_capacity(patch.len());
    for element in patch {
        if key.is_some() {
            let map = element.as_object().ok_or(StrategicError::WrongType {
                expected: GO_MAP,
                actual: go_type(element),
            })?;
            if map.get(PATCH_DIRECTIVE).and_then(Value::as_str) == Some(DELETE) {
                continue;
            }
        }
        named.push(element);
    }
    let (mut p, mut o) = (0, 0);
    while p < named.len() && o < order.len() {
        if named[p].get(PATCH_DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if same_element(named[p], &order[o], key)? {
            p += 1;
        }
        o += 1;
    }
    if p < named.len() && o >= order.len() {
        return Err(StrategicError::OrderMismatch {
            patch: render_list(patch),
            order: render_list(order),
        });
    }
    Ok(())
}

/// Whether two elements are the same list entry: equal merge keys, or equal values.
fn same_element(left: &Value, right: &Value, key: Option<&str>) -> Result<bool, StrategicError> {
    let Some(key) = key else {
        return Ok(same_value(left, right));
    };
    Ok(same_value(
        merge_key_value(left, key)?,
        merge_key_value(right, key)?,
    ))
}

/// The merge key of a list element, which must be a map that has it.
fn merge_key_value<'v>(element: &'v Value, key: &str) -> Result<&'v Value, StrategicError> {
    let map = element.as_object().ok_or(StrategicError::WrongType {
        expected: GO_MAP,
        actual: go_type(element),
    })?;
    map.get(key).ok_or_else(|| StrategicError::MissingMergeKey {
        map: render_map(map),
        key: key.to_owned(),
    })
}

/// Merges a list field by its strategy; a deletion list always merges.
fn merge_list_field<'p>(
    live: Vec<Value>,
    patch: &'p [Value],
    strategy: &Strategy,
    delete_list: bool,
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<Vec<Value>, StrategicError> {
    match strategy {
        Strategy::Merge { key } => merge_list(live, patch, key.as_deref(), delete_list, path, meta),
        Strategy::Replace if delete_list => merge_list(live, patch, None, true, path, meta),
        Strategy::Replace => resolve_list(patch, path, meta),
    }
}

/// Merges a list with strategy `merge` (or applies a deletion list).
fn merge_list<'p>(
    mut live: Vec<Value>,
    patch: &'p [Value],
    key: Option<&str>,
    delete_list: bool,
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<Vec<Value>, StrategicError> {
    if live.is_empty() && patch.is_empty() {
        return Ok(live);
    }
    let of_maps = check_element_types(&live, patch)? == Some(ElementType::Object);

    if !of_maps {
        if delete_list {
            live.retain(|element| !patch.iter().any(|p| same_value(element, p)));
            return Ok(live);
        }
        let server_order = identities(&live, key);
        let mut merged: Vec<Value> = Vec::with_capacity(live.len() + patch.len());
        for element in live.into_iter().chain(patch.iter().cloned()) {
            if !merged.iter().any(|m| same_value(m, &element)) {
                merged.push(element);
            }
        }
        return order_elements(merged, patch, &server_order, key);
    }

    let Some(key) = key else {
        return Err(StrategicError::NoMergeKey {
            path: path.join("."),
        });
    };

    // Elements carrying `$patch` first: deletions by key, and `replace` of the whole list.
    let mut replace = false;
    let mut elements: Vec<&'p Value> = Vec::with_capacity(patch.len());
    for element in patch {
        let Some(map) = element.as_object() else {
            continue; // unreachable: check_element_types saw only maps
        };
        let Some(directive) = map.get(PATCH_DIRECTIVE) else {
            elements.push(element);
            continue;
        };
        match directive.as_str() {
            Some(DELETE) => {
                let doomed = map
                    .get(key)
                    .ok_or_else(|| StrategicError::MissingMergeKey {
                        map: render_map(map),
                        key: key.to_owned(),
                    })?;
                live.retain(|element| !has_key_value(element, key, doomed));
            }
            Some(REPLACE) => replace = true,
            Some(MERGE) => return Err(StrategicError::MergeDirectiveInList),
            _ => return Err(unknown_patch_type(directive, map)),
        }
    }
    if replace {
        let mut replaced = Vec::with_capacity(elements.len());
        for element in elements {
            if let Some(map) = element.as_object() {
                replaced.push(Value::Object(merge_fields(Map::new(), map, path, meta)?));
            }
        }
        return Ok(replaced);
    }

    let server_order = identities(&live, Some(key));
    for element in &elements {
        let Some(map) = element.as_object() else {
            continue; // unreachable: check_element_types saw only maps
        };
        let wanted = map
            .get(key)
            .ok_or_else(|| StrategicError::MissingMergeKey {
                map: render_map(map),
                key: key.to_owned(),
            })?;
        match live.iter_mut().find(|e| has_key_value(e, key, wanted)) {
            Some(Value::Object(existing)) => {
                let taken = std::mem::take(existing);
                *existing = merge_fields(taken, map, path, meta)?;
            }
            _ => live.push(Value::Object(merge_fields(Map::new(), map, path, meta)?)),
        }
    }
    let named: Vec<Value> = elements.into_iter().cloned().collect();
    order_elements(live, &named, &server_order, Some(key))
}

/// Whether `element` is a map whose `key` equals `value`.
fn has_key_value(element: &Value, key: &str, value: &Value) -> bool {
    element
        .as_object()
        .and_then(|map| map.get(key))
        .is_some_and(|v| same_value(v, value))
}

/// The identity of each element for ordering: its merge key, or the element itself.
fn identities(list: &[Value], key: Option<&str>) -> Vec<Option<Value>> {
    list.iter()
        .map(|element| match key {
            Some(key) => element.get(key).cloned(),
            None => Some(element.clone()),
        })
        .collect()
}

/// Orders a merged list as upstream does: elements named in `named` follow its order,
/// elements only the server has follow `server_order`, and the two are interleaved by their
/// positions in `server_order`.
fn order_elements(
    merged: Vec<Value>,
    named: &[Value],
    server_order: &[Option<Value>],
    key: Option<&str>,
) -> Result<Vec<Value>, StrategicError> {
    let identity = |element: &Value| -> Result<Value, StrategicError> {
        match key {
            Some(key) => merge_key_value(element, key).cloned(),
            None => Ok(element.clone()),
        }
    };
    let named_ids = named.iter().map(identity).collect::<Result<Vec<_>, _>>()?;
    let position_in = |ids: &[Value], id: &Value| ids.iter().position(|n| same_value(n, id));
    let server_position = |id: &Value| {
        server_order
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| same_value(s, id)))
    };

    let mut from_patch = Vec::new();
    let mut server_only = Vec::new();
    for element in merged {
        let id = identity(&element)?;
        match position_in(&named_ids, &id) {
            Some(at) => from_patch.push((at, server_position(&id), element)),
            None => server_only.push((server_position(&id), element)),
        }
    }
    from_patch.sort_by_key(|(at, _, _)| *at);
    server_only.sort_by_key(|(at, _)| at.unwrap_or(usize::MAX));

    // Interleave: a server-only element goes first only when both positions are known and
    // it comes first on the server.
    let mut ordered = Vec::with_capacity(from_patch.len() + server_only.len());
    let mut from_patch = from_patch.into_iter().peekable();
    let mut server_only = server_only.into_iter().peekable();
    loop {
        let take_server = match (server_only.peek(), from_patch.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((Some(left), _)), Some((_, Some(right), _))) => left < right,
            (Some(_), Some(_)) => false,
        };
        let next = if take_server {
            server_only.next().map(|(_, element)| element)
        } else {
            from_patch.next().map(|(_, _, element)| element)
        };
        ordered.extend(next);
    }
    Ok(ordered)
}

/// The JSON type of list elements, as far as merging cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementType {
    Null,
    Bool,
    Number,
    String,
    Object,
}

/// Checks that the elements of the live and patch lists share one type that is not a list.
fn check_element_types(
    live: &[Value],
    patch: &[Value],
) -> Result<Option<ElementType>, StrategicError> {
    let mut seen = None;
    for element in live.iter().chain(patch) {
        let this = match element {
            Value::Null => Some(ElementType::Null),
            Value::Bool(_) => Some(ElementType::Bool),
            Value::Number(_) => Some(ElementType::Number),
            Value::String(_) => Some(ElementType::String),
            Value::Object(_) => Some(ElementType::Object),
            Value::Array(_) => None,
        };
        match (seen, this) {
            (None, None) => return Err(StrategicError::ListOfLists),
            (None, Some(this)) => seen = Some(this),
            (Some(first), Some(this)) if first == this => {}
            _ => {
                return Err(StrategicError::MixedElementTypes {
                    lists: format!("[{} {}]", render_list(live), render_list(patch)),
                });
            }
        }
    }
    Ok(seen)
}

/// A patch value for a field the object does not have (or has with another type), with
/// directives resolved and `null`s dropped. `None` when the value is a map deleting itself.
fn resolve_value<'p>(
    value: &'p Value,
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<Option<Value>, StrategicError> {
    match value {
        Value::Object(map) => match map.get(PATCH_DIRECTIVE) {
            None => Ok(Some(Value::Object(merge_fields(
                Map::new(),
                map,
                path,
                meta,
            )?))),
            Some(directive) => match directive.as_str() {
                Some(DELETE) => Ok(None),
                Some(REPLACE) => Ok(Some(Value::Object(merge_fields(
                    Map::new(),
                    map,
                    path,
                    meta,
                )?))),
                _ => Err(unknown_patch_type(directive, map)),
            },
        },
        Value::Array(list) => Ok(Some(Value::Array(resolve_list(list, path, meta)?))),
        other => Ok(Some(other.clone())),
    }
}

/// A patch list taken as the new value: elements carrying `$patch` are dropped, as upstream,
/// and map elements have their directives resolved.
fn resolve_list<'p>(
    list: &'p [Value],
    path: &mut Path<'p>,
    meta: &dyn PatchMeta,
) -> Result<Vec<Value>, StrategicError> {
    let mut resolved = Vec::with_capacity(list.len());
    for element in list {
        match element {
            Value::Object(map) if map.contains_key(PATCH_DIRECTIVE) => {}
            Value::Object(map) => {
                resolved.push(Value::Object(merge_fields(Map::new(), map, path, meta)?));
            }
            Value::Array(inner) => resolved.push(Value::Array(resolve_list(inner, path, meta)?)),
            other => resolved.push(other.clone()),
        }
    }
    Ok(resolved)
}

/// JSON equality, with numbers compared by value (`80` equals `80.0`), as Go's decoding does.
fn same_value(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(l), Value::Number(r)) => {
            if l.is_f64() || r.is_f64() {
                l.as_f64() == r.as_f64()
            } else {
                l == r
            }
        }
        _ => left == right,
    }
}

fn unknown_patch_type(directive: &Value, map: &Map<String, Value>) -> StrategicError {
    StrategicError::UnknownPatchType {
        directive: match directive {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
        map: render_map(map),
    }
}

/// Go's name for the type of a decoded JSON value, as upstream error messages spell it.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => GO_LIST,
        Value::Object(_) => GO_MAP,
    }
}

fn render_map(map: &Map<String, Value>) -> String {
    Value::Object(map.clone()).to_string()
}

fn render_list(list: &[Value]) -> String {
    Value::Array(list.to_vec()).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn patched(kind: (&str, &str), mut object: Value, patch: Value) -> Value {
        let meta = BuiltinPatchMeta::for_kind(kind.0, "v1", kind.1);
        apply(&mut object, &patch, &meta).expect("patch applies");
        object
    }

    fn rejected(kind: (&str, &str), object: Value, patch: Value) -> StrategicError {
        let meta = BuiltinPatchMeta::for_kind(kind.0, "v1", kind.1);
        let mut target = object.clone();
        let err = apply(&mut target, &patch, &meta).expect_err("patch is rejected");
        assert_eq!(
            target, object,
            "a rejected patch leaves the object as it was"
        );
        err
    }

    const DEPLOYMENT_KIND: (&str, &str) = ("apps", "Deployment");
    const POD_KIND: (&str, &str) = ("", "Pod");

    fn deployment(containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": containers}
                }
            }
        })
    }

    fn containers_of(object: &Value) -> &Value {
        &object["spec"]["template"]["spec"]["containers"]
    }

    fn no_directives_left(value: &Value) -> bool {
        match value {
            Value::Object(map) => map
                .iter()
                .all(|(k, v)| !k.starts_with('$') && no_directives_left(v)),
            Value::Array(list) => list.iter().all(no_directives_left),
            _ => true,
        }
    }

    #[test]
    fn kubectl_set_image_body_changes_the_image_and_keeps_the_rest() {
        let live = deployment(json!([
            {"name": "nginx", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
        ]));
        let out = patched(
            DEPLOYMENT_KIND,
            live,
            json!({"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],"containers":[{"image":"nginx:2","name":"nginx"}]}}}}),
        );
        assert_eq!(
            containers_of(&out),
            &json!([{"name": "nginx", "image": "nginx:2", "ports": [{"containerPort": 80, "protocol": "TCP"}]}])
        );
        assert_eq!(out["spec"]["replicas"], 1);
        assert!(no_directives_left(&out));
    }

    #[test]
    fn set_image_on_one_of_two_containers_keeps_the_other() {
        let live = deployment(json!([
            {"name": "app", "image": "app:1"},
            {"name": "sidecar", "image": "proxy:1", "args": ["--port=9000"]}
        ]));
        let with_order = patched(
            DEPLOYMENT_KIND,
            live.clone(),
            json!({"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"app"},{"name":"sidecar"}],
                "containers":[{"image":"proxy:2","name":"sidecar"}]}}}}),
        );
        assert_eq!(
            containers_of(&with_order),
            &json!([
                {"name": "app", "image": "app:1"},
                {"name": "sidecar", "image": "proxy:2", "args": ["--port=9000"]}
            ])
        );
        // Without `$setElementOrder` (kube-rs, python) the other container survives too.
        let without_order = patched(
            DEPLOYMENT_KIND,
            live,
            json!({"spec":{"template":{"spec":{"containers":[{"image":"app:2","name":"app"}]}}}}),
        );
        assert_eq!(
            containers_of(&without_order),
            &json!([{"name": "app", "image": "app:2"}, {"name": "sidecar", "image": "proxy:1", "args": ["--port=9000"]}])
        );
    }

    #[test]
    fn kubectl_edit_body_deletes_and_adds_configmap_keys() {
        let live = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"key1":"a","key2":"b"}});
        let out = patched(
            ("", "ConfigMap"),
            live,
            json!({"data":{"key1":null,"keyx":"value1"}}),
        );
        assert_eq!(out["data"], json!({"key2": "b", "keyx": "value1"}));
        assert_eq!(out["metadata"]["name"], "c");
    }

    #[test]
    fn null_deletes_nested_keys_and_is_dropped_from_new_maps() {
        let live = json!({"metadata":{"name":"c","labels":{"a":"1","b":"2"}}});
        let out = patched(
            ("", "ConfigMap"),
            live,
            json!({"metadata":{"labels":{"a":null,"missing":null},"annotations":{"x":"1","y":null}}}),
        );
        assert_eq!(
            out,
            json!({"metadata":{"name":"c","labels":{"b":"2"},"annotations":{"x":"1"}}})
        );
    }

    #[test]
    fn rollout_restart_adds_a_template_annotation() {
        let live = deployment(json!([{"name": "app", "image": "app:1"}]));
        let out = patched(
            DEPLOYMENT_KIND,
            live.clone(),
            json!({"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-01-01T00:00:00Z"}}}}}),
        );
        assert_eq!(
            out["spec"]["template"]["metadata"],
            json!({"labels":{"app":"web"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-01-01T00:00:00Z"}})
        );
        assert_eq!(containers_of(&out), containers_of(&live));
    }

    #[test]
    fn env_merges_by_name_and_patch_delete_removes_one() {
        let live = json!({"spec":{"containers":[{"name":"app","image":"app:1","env":[
            {"name":"A","value":"1"},{"name":"B","value":"2"},{"name":"C","value":"3"}]}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"containers":[{"name":"app","env":[
                {"name":"B","$patch":"delete"},
                {"name":"C","value":"30"},
                {"name":"D","value":"4"}]}]}}),
        );
        let env = &out["spec"]["containers"][0]["env"];
        let mut names: Vec<(&str, &str)> = env
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap(), e["value"].as_str().unwrap()))
            .collect();
        names.sort();
        assert_eq!(names, vec![("A", "1"), ("C", "30"), ("D", "4")]);
        assert_eq!(out["spec"]["containers"][0]["image"], "app:1");
    }

    #[test]
    fn new_elements_without_set_element_order_go_first_as_upstream() {
        let live = json!({"spec":{"containers":[{"name":"app","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"containers":[{"name":"app","env":[{"name":"Z","value":"9"},{"name":"B","value":"20"}]}]}}),
        );
        assert_eq!(
            out["spec"]["containers"][0]["env"],
            json!([{"name":"Z","value":"9"},{"name":"A","value":"1"},{"name":"B","value":"20"}])
        );
        let appended = patched(
            POD_KIND,
            json!({"spec":{"containers":[{"name":"a"},{"name":"b"}]}}),
            json!({"spec":{"containers":[{"name":"c"}]}}),
        );
        assert_eq!(
            appended["spec"]["containers"],
            json!([{"name":"c"},{"name":"a"},{"name":"b"}])
        );
    }

    #[test]
    fn set_element_order_reorders_and_deletes() {
        // Upstream test "delete an item in a list and preserve order".
        let live = json!({"spec":{"containers":[
            {"name":"1","other":"a"},{"name":"2","value":"2","other":"b"},{"name":"3","value":"3"}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"$setElementOrder/containers":[{"name":"2"},{"name":"1"}],
                           "containers":[{"name":"3","$patch":"delete"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"2","value":"2","other":"b"},{"name":"1","other":"a"}])
        );
    }

    #[test]
    fn set_element_order_places_new_elements_between_server_ones() {
        // Upstream test "add multiple items in a list and preserve order".
        let live = json!({"spec":{"containers":[{"name":"1","other":"a"},{"name":"2","value":"2","other":"b"}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"$setElementOrder/containers":[{"name":"1"},{"name":"4"},{"name":"2"},{"name":"3"}],
                           "containers":[{"name":"4","value":"4"},{"name":"3","value":"3"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"1","other":"a"},{"name":"4","value":"4"},{"name":"2","value":"2","other":"b"},{"name":"3","value":"3"}])
        );
    }

    #[test]
    fn set_element_order_that_contradicts_the_patch_is_rejected() {
        let live = json!({"spec":{"containers":[{"name":"1"},{"name":"3"},{"name":"2"}]}});
        let err = rejected(
            POD_KIND,
            live,
            json!({"spec":{"$setElementOrder/containers":[{"name":"1"},{"name":"2"},{"name":"3"}],
                           "containers":[{"name":"3","value":"3"},{"name":"1","value":"1"}]}}),
        );
        assert!(matches!(err, StrategicError::OrderMismatch { .. }));
        assert!(
            err.to_string()
                .contains("doesn't match $setElementOrder list")
        );
        assert!(!err.is_bad_request());
    }

    #[test]
    fn finalizers_are_unioned_and_deleted_from_primitive_list() {
        let live =
            json!({"metadata":{"name":"c","finalizers":["a.example.com/x","b.example.com/y"]}});
        let out = patched(
            ("", "ConfigMap"),
            live.clone(),
            json!({"metadata":{"finalizers":["b.example.com/y","c.example.com/z"]}}),
        );
        assert_eq!(
            out["metadata"]["finalizers"],
            json!(["a.example.com/x", "b.example.com/y", "c.example.com/z"])
        );
        let out = patched(
            ("", "ConfigMap"),
            live,
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a.example.com/x","absent"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b.example.com/y"]));
    }

    #[test]
    fn delete_from_primitive_list_never_adds_the_list() {
        let out = patched(
            ("", "ConfigMap"),
            json!({"metadata":{"name":"c"}}),
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}}),
        );
        assert_eq!(out, json!({"metadata":{"name":"c"}}));
    }

    #[test]
    fn delete_from_primitive_list_with_a_bad_key_is_a_bad_request() {
        let err = rejected(
            ("", "ConfigMap"),
            json!({"metadata":{"finalizers":["x"]}}),
            json!({"metadata":{"$deleteFromPrimitiveListfinalizers":["x"]}}),
        );
        assert_eq!(err, StrategicError::BadPrimitiveListFormat);
        assert!(err.is_bad_request());
    }

    #[test]
    fn namespace_spec_finalizers_are_replaced_not_unioned() {
        let live = json!({"metadata":{"name":"ns","finalizers":["a"]},"spec":{"finalizers":["kubernetes"]}});
        let out = patched(
            ("", "Namespace"),
            live,
            json!({"metadata":{"finalizers":["b"]},"spec":{"finalizers":["other"]}}),
        );
        assert_eq!(out["spec"]["finalizers"], json!(["other"]));
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
    }

    #[test]
    fn volumes_retain_keys_drops_the_old_volume_source() {
        let live = json!({"spec":{"volumes":[
            {"name":"data","emptyDir":{}},
            {"name":"cfg","configMap":{"name":"c1"}}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"$setElementOrder/volumes":[{"name":"data"},{"name":"cfg"}],
                "volumes":[{"$retainKeys":["configMap","name"],"configMap":{"name":"c2"},"name":"data"}]}}),
        );
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name":"data","configMap":{"name":"c2"}},{"name":"cfg","configMap":{"name":"c1"}}])
        );
    }

    #[test]
    fn deployment_strategy_retain_keys_drops_rolling_update() {
        let mut live = deployment(json!([{"name": "app"}]));
        live["spec"]["strategy"] = json!({"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}});
        let out = patched(
            DEPLOYMENT_KIND,
            live,
            json!({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}),
        );
        assert_eq!(out["spec"]["strategy"], json!({"type":"Recreate"}));
    }

    #[test]
    fn retain_keys_must_list_every_key_the_patch_sets() {
        let live = json!({"spec":{"strategy":{"type":"RollingUpdate"}}});
        let err = rejected(
            DEPLOYMENT_KIND,
            live.clone(),
            json!({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate","rollingUpdate":{}}}}),
        );
        assert_eq!(err.to_string(), "invalid patch format of retainKeys");
        assert!(err.is_bad_request());
        let err = rejected(
            DEPLOYMENT_KIND,
            live,
            json!({"spec":{"strategy":{"$retainKeys":"type","type":"Recreate"}}}),
        );
        assert_eq!(err, StrategicError::BadRetainKeysFormat);
    }

    #[test]
    fn client_side_apply_update_changes_replicas_and_one_container_port() {
        let last_applied_old = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":1}}"#;
        let last_applied_new = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":3}}"#;
        let mut live = deployment(json!([
            {"name":"web","image":"nginx:1","ports":[
                {"containerPort":80,"protocol":"TCP"},
                {"containerPort":9090,"name":"metrics","protocol":"TCP"}],
             "env":[{"name":"MODE","value":"prod"}]},
            {"name":"log","image":"fluent:1"}
        ]));
        live["metadata"]["annotations"] =
            json!({"kubectl.kubernetes.io/last-applied-configuration": last_applied_old});
        // The shape kubectl's three-way patch takes for this change.
        let patch = json!({
            "metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration": last_applied_new}},
            "spec":{"replicas":3,"template":{"spec":{
                "$setElementOrder/containers":[{"name":"web"},{"name":"log"}],
                "containers":[{"name":"web",
                    "$setElementOrder/ports":[{"containerPort":8080},{"containerPort":9090}],
                    "ports":[{"containerPort":8080,"protocol":"TCP"},{"$patch":"delete","containerPort":80}]}]}}}
        });
        let out = patched(DEPLOYMENT_KIND, live, patch);
        assert_eq!(out["spec"]["replicas"], 3);
        assert_eq!(
            out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
            last_applied_new
        );
        assert_eq!(
            containers_of(&out),
            &json!([
                {"name":"web","image":"nginx:1","ports":[
                    {"containerPort":8080,"protocol":"TCP"},
                    {"containerPort":9090,"name":"metrics","protocol":"TCP"}],
                 "env":[{"name":"MODE","value":"prod"}]},
                {"name":"log","image":"fluent:1"}
            ])
        );
        assert!(no_directives_left(&out));
    }

    #[test]
    fn helm3_upgrade_patch_updates_labels_image_and_env() {
        let live =
            deployment(json!([{"name":"app","image":"app:1","env":[{"name":"A","value":"1"}]}]));
        let out = patched(
            DEPLOYMENT_KIND,
            live,
            json!({"metadata":{"labels":{"helm.sh/chart":"app-0.2.0"}},
                   "spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],
                     "containers":[{"$setElementOrder/env":[{"name":"A"},{"name":"B"}],
                       "env":[{"name":"B","value":"2"}],"image":"app:2","name":"app"}]}}}}),
        );
        assert_eq!(
            out["metadata"]["labels"],
            json!({"helm.sh/chart":"app-0.2.0"})
        );
        assert_eq!(
            containers_of(&out),
            &json!([{"name":"app","image":"app:2","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}])
        );
    }

    #[test]
    fn patch_replace_on_a_map_replaces_it_whole() {
        let live = deployment(json!([{"name":"app"}]));
        let out = patched(
            DEPLOYMENT_KIND,
            live,
            json!({"spec":{"selector":{"$patch":"replace","matchExpressions":[{"key":"app","operator":"Exists"}]}}}),
        );
        assert_eq!(
            out["spec"]["selector"],
            json!({"matchExpressions":[{"key":"app","operator":"Exists"}]})
        );
    }

    #[test]
    fn patch_replace_inside_a_merging_list_replaces_the_list() {
        let live =
            json!({"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"containers":[{"$patch":"replace"},{"name":"c","image":"c:1"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"c","image":"c:1"}])
        );
    }

    #[test]
    fn patch_delete_on_a_map_empties_it_and_drops_a_new_one() {
        let live = json!({"metadata":{"name":"c","labels":{"a":"1"}}});
        let out = patched(
            ("", "ConfigMap"),
            live,
            json!({"metadata":{"labels":{"$patch":"delete"},"annotations":{"$patch":"delete"}}}),
        );
        assert_eq!(out, json!({"metadata":{"name":"c","labels":{}}}));
    }

    #[test]
    fn invalid_patch_directives_are_rejected() {
        let live = json!({"metadata":{"name":"c","labels":{"a":"1"}}});
        let err = rejected(
            ("", "ConfigMap"),
            live.clone(),
            json!({"metadata":{"labels":{"$patch":"bogus"}}}),
        );
        assert_eq!(
            err.to_string(),
            r#"unknown patch type: bogus in map: {"$patch":"bogus"}"#
        );
        assert!(!err.is_bad_request());
        // Upstream refuses `$patch: merge` both on maps and in lists.
        let err = rejected(
            ("", "ConfigMap"),
            live,
            json!({"metadata":{"$patch":"merge"}}),
        );
        assert!(matches!(err, StrategicError::UnknownPatchType { .. }));
        let err = rejected(
            POD_KIND,
            json!({"spec":{"containers":[{"name":"a"}]}}),
            json!({"spec":{"containers":[{"$patch":"merge"}]}}),
        );
        assert_eq!(err, StrategicError::MergeDirectiveInList);
    }

    #[test]
    fn list_element_without_its_merge_key_is_rejected() {
        let err = rejected(
            POD_KIND,
            json!({"spec":{"containers":[{"name":"a","image":"a:1"}]}}),
            json!({"spec":{"containers":[{"image":"b:1"}]}}),
        );
        assert_eq!(
            err.to_string(),
            r#"map: {"image":"b:1"} does not contain declared merge key: name"#
        );
        let err = rejected(
            POD_KIND,
            json!({"spec":{"containers":[{"name":"a"}]}}),
            json!({"spec":{"containers":[{"$patch":"delete","image":"a"}]}}),
        );
        assert!(matches!(err, StrategicError::MissingMergeKey { .. }));
    }

    #[test]
    fn wrong_types_are_rejected() {
        let live = json!({"spec":{"containers":[{"name":"a"}]}});
        let err = rejected(
            POD_KIND,
            live.clone(),
            json!({"spec":{"$setElementOrder/containers":"a","containers":[{"name":"a"}]}}),
        );
        assert_eq!(
            err.to_string(),
            "expected a []interface {}, but received a string"
        );
        let err = rejected(
            POD_KIND,
            live.clone(),
            json!({"spec":{"$setElementOrder/containers":[{"name":"a"}],"containers":{"name":"a"}}}),
        );
        assert!(matches!(err, StrategicError::WrongType { .. }));
        let err = rejected(POD_KIND, live.clone(), json!({"spec":{"containers":["a"]}}));
        assert!(matches!(err, StrategicError::MixedElementTypes { .. }));
        let err = rejected(
            POD_KIND,
            live.clone(),
            json!({"spec":{"containers":[["a"]]}}),
        );
        assert!(matches!(err, StrategicError::MixedElementTypes { .. }));
        let err = rejected(
            ("", "ConfigMap"),
            json!({"metadata":{"finalizers":[]}}),
            json!({"metadata":{"finalizers":[["a"]]}}),
        );
        assert_eq!(err, StrategicError::ListOfLists);
        let err = rejected(POD_KIND, live.clone(), json!(["not", "a", "map"]));
        assert_eq!(err, StrategicError::NotAnObject);
        assert!(err.is_bad_request());
        let err = rejected(
            POD_KIND,
            live,
            json!({"spec":{"$setElementOrderX/containers":[]}}),
        );
        assert_eq!(err, StrategicError::BadSetElementOrderFormat);
    }

    #[test]
    fn a_field_of_another_type_is_replaced() {
        let out = patched(
            ("", "ConfigMap"),
            json!({"data":"oops","metadata":{"name":"c"}}),
            json!({"data":{"a":"1","b":null}}),
        );
        assert_eq!(out["data"], json!({"a":"1"}));
    }

    #[test]
    fn lists_without_strategy_are_replaced_wholesale() {
        let live = json!({"spec":{
            "tolerations":[{"key":"a","operator":"Exists"},{"key":"b","operator":"Exists"}],
            "containers":[{"name":"app","args":["--a","--b"]}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"tolerations":[{"key":"c","operator":"Exists"}],
                           "containers":[{"name":"app","args":["--c"]}]}}),
        );
        assert_eq!(
            out["spec"]["tolerations"],
            json!([{"key":"c","operator":"Exists"}])
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"app","args":["--c"]}])
        );
        // ServiceAccount imagePullSecrets carries no patch strategy upstream.
        let out = patched(
            ("", "ServiceAccount"),
            json!({"imagePullSecrets":[{"name":"a"}],"secrets":[{"name":"s1"}]}),
            json!({"imagePullSecrets":[{"name":"b"}],"secrets":[{"name":"s2"}]}),
        );
        assert_eq!(out["imagePullSecrets"], json!([{"name":"b"}]));
        assert_eq!(out["secrets"], json!([{"name":"s2"},{"name":"s1"}]));
    }

    #[test]
    fn custom_kinds_merge_only_object_meta_lists() {
        let out = patched(
            ("example.com", "Widget"),
            json!({"metadata":{"finalizers":["a"]},"spec":{"containers":[{"name":"x"}]}}),
            json!({"metadata":{"finalizers":["b"]},"spec":{"containers":[{"name":"y"}]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
        assert_eq!(out["spec"]["containers"], json!([{"name":"y"}]));
    }

    #[test]
    fn service_ports_merge_by_port_and_owner_references_by_uid() {
        let live = json!({
            "metadata":{"ownerReferences":[{"uid":"u1","name":"a","kind":"X","apiVersion":"v1"}]},
            "spec":{"ports":[{"port":80,"targetPort":8080,"protocol":"TCP"},{"port":443,"targetPort":8443,"protocol":"TCP"}]}});
        let out = patched(
            ("", "Service"),
            live,
            json!({"metadata":{"ownerReferences":[{"uid":"u1","name":"renamed"}]},
                   "spec":{"$setElementOrder/ports":[{"port":80},{"port":443}],"ports":[{"port":443,"targetPort":9443}]}}),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port":80,"targetPort":8080,"protocol":"TCP"},{"port":443,"targetPort":9443,"protocol":"TCP"}])
        );
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"uid":"u1","name":"renamed","kind":"X","apiVersion":"v1"}])
        );
    }

    #[test]
    fn status_conditions_merge_by_type() {
        let live = json!({"status":{"conditions":[
            {"type":"Available","status":"False"},{"type":"Progressing","status":"True"}]}});
        let out = patched(
            DEPLOYMENT_KIND,
            live,
            json!({"status":{"conditions":[{"type":"Available","status":"True"}]}}),
        );
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type":"Available","status":"True"},{"type":"Progressing","status":"True"}])
        );
    }

    #[test]
    fn merge_keys_compare_numbers_by_value() {
        let live = json!({"spec":{"containers":[{"name":"a","ports":[{"containerPort":80,"name":"http"}]}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{"containers":[{"name":"a","ports":[{"containerPort":80.0,"hostPort":8080}]}]}}),
        );
        let ports = out["spec"]["containers"][0]["ports"].as_array().unwrap();
        assert_eq!(ports.len(), 1, "{ports:?}");
        assert_eq!(ports[0]["containerPort"].as_f64(), Some(80.0));
        assert_eq!(ports[0]["name"], "http");
        assert_eq!(ports[0]["hostPort"], 8080);
    }

    #[test]
    fn directives_in_new_fields_are_resolved_not_stored() {
        let live = json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]}});
        let out = patched(
            POD_KIND,
            live,
            json!({"spec":{
                "$setElementOrder/initContainers":[{"name":"i2"},{"name":"i1"}],
                "initContainers":[{"name":"i2"},{"name":"i1","env":[{"name":"X","value":null}]}],
                "containers":[{"name":"b","$setElementOrder/ports":[{"containerPort":1}],"ports":[{"containerPort":1}]},
                              {"name":"gone","$patch":"delete"}],
                "affinity":{"$patch":"replace","nodeAffinity":{}}}}),
        );
        assert_eq!(
            out["spec"]["initContainers"],
            json!([{"name":"i2"},{"name":"i1","env":[{"name":"X"}]}])
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name":"b","ports":[{"containerPort":1}]},{"name":"a"}])
        );
        assert_eq!(out["spec"]["affinity"], json!({"nodeAffinity":{}}));
        assert!(no_directives_left(&out));
    }

    #[test]
    fn replace_at_the_root_replaces_the_object() {
        let out = patched(
            ("", "ConfigMap"),
            json!({"metadata":{"name":"c"},"data":{"a":"1"}}),
            json!({"$patch":"replace","metadata":{"name":"c"},"data":{"b":"2"}}),
        );
        assert_eq!(out, json!({"metadata":{"name":"c"},"data":{"b":"2"}}));
    }

    #[test]
    fn builtin_meta_knows_the_upstream_tags() {
        let deploy = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment");
        let merge = |key: &str| Strategy::Merge {
            key: Some(key.to_owned()),
        };
        assert_eq!(
            deploy.list_strategy(&["spec", "template", "spec", "containers", "ports"]),
            merge("containerPort")
        );
        assert_eq!(
            deploy.list_strategy(&["spec", "template", "spec", "initContainers", "volumeMounts"]),
            merge("mountPath")
        );
        assert_eq!(
            deploy.list_strategy(&["spec", "template", "metadata", "finalizers"]),
            Strategy::Merge { key: None }
        );
        assert_eq!(
            deploy.list_strategy(&["status", "conditions"]),
            merge("type")
        );
        assert!(deploy.retain_keys(&["spec", "strategy"]));
        assert!(deploy.retain_keys(&["spec", "template", "spec", "volumes"]));
        assert!(!deploy.retain_keys(&["spec", "template", "spec", "containers"]));

        let pod = BuiltinPatchMeta::for_kind("", "v1", "Pod");
        assert_eq!(
            pod.list_strategy(&["spec", "topologySpreadConstraints"]),
            merge("topologyKey")
        );
        assert_eq!(pod.list_strategy(&["spec", "hostAliases"]), merge("ip"));
        assert_eq!(
            pod.list_strategy(&["spec", "tolerations"]),
            Strategy::Replace
        );
        assert_eq!(
            pod.list_strategy(&["spec", "ephemeralContainers", "volumeDevices"]),
            merge("devicePath")
        );
        assert_eq!(pod.list_strategy(&["status", "podIPs"]), merge("ip"));
        assert!(pod.retain_keys(&["spec", "resourceClaims"]));

        let ns = BuiltinPatchMeta::for_kind("", "v1", "Namespace");
        assert_eq!(ns.list_strategy(&["spec", "finalizers"]), Strategy::Replace);
        assert_eq!(
            ns.list_strategy(&["metadata", "finalizers"]),
            Strategy::Merge { key: None }
        );

        for kind in ["StatefulSet", "DaemonSet", "ReplicaSet"] {
            let meta = BuiltinPatchMeta::for_kind("apps", "v1", kind);
            assert_eq!(
                meta.list_strategy(&["spec", "template", "spec", "containers", "env"]),
                merge("name")
            );
            assert!(!meta.retain_keys(&["spec", "strategy"]));
        }
        assert_eq!(
            BuiltinPatchMeta::for_kind("", "v1", "Service").list_strategy(&["spec", "ports"]),
            merge("port")
        );
    }

    #[test]
    fn every_built_in_kind_has_its_upstream_tags() {
        let merge = |key: &str| Strategy::Merge {
            key: Some(key.to_owned()),
        };
        let job = BuiltinPatchMeta::for_kind("batch", "v1", "Job");
        assert_eq!(
            job.list_strategy(&["spec", "template", "spec", "containers"]),
            merge("name")
        );
        let cron = BuiltinPatchMeta::for_kind("batch", "v1", "CronJob");
        assert_eq!(
            cron.list_strategy(&[
                "spec",
                "jobTemplate",
                "spec",
                "template",
                "spec",
                "containers",
                "env"
            ]),
            merge("name")
        );
        let rc = BuiltinPatchMeta::for_kind("", "v1", "ReplicationController");
        assert!(rc.retain_keys(&["spec", "template", "spec", "volumes"]));
        let webhooks = BuiltinPatchMeta::for_kind(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
        );
        assert_eq!(webhooks.list_strategy(&["webhooks"]), merge("name"));
        let node = BuiltinPatchMeta::for_kind("", "v1", "Node");
        assert_eq!(node.list_strategy(&["status", "addresses"]), merge("type"));
        assert_eq!(node.list_strategy(&["spec", "taints"]), Strategy::Replace);
        // Not built in: metadata's rules only.
        let widget = BuiltinPatchMeta::for_kind("example.com", "v1", "Widget");
        assert_eq!(widget.list_strategy(&["spec", "items"]), Strategy::Replace);
        assert_eq!(
            widget.list_strategy(&["metadata", "ownerReferences"]),
            merge("uid")
        );
    }
}
