//! Server-side apply and field ownership (`metadata.managedFields`), after the semantics of
//! kubernetes-sigs/structured-merge-diff as kube-apiserver uses it.
//!
//! Pure functions over `serde_json::Value`, no I/O. Callers supply how each list merges through
//! [`ListTypes`]. [`apply`] handles `PATCH` with `application/apply-patch+yaml`;
//! [`record_update`] records every other write (create, update, patch) as an `Update` entry.
//!
//! Not tracked, as upstream: `apiVersion`, `kind`, and `metadata.{name, namespace,
//! creationTimestamp, selfLink, uid, clusterName, generation, managedFields, resourceVersion}`.
//! Fields reset by a subresource strategy (such as `status` on the main resource) are the
//! caller's to drop from the configuration before applying.

mod compare;
mod fieldset;
mod merge;

use serde_json::{Map, Value};

use self::fieldset::{FieldSet, PathElement, path_to_string};

/// How a list at some path merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole and owned as one field (`x-kubernetes-list-type: atomic`, the CRD
    /// default).
    Atomic,
    /// A set of scalars, merged and owned by value (`x-kubernetes-list-type: set`).
    Set,
    /// A list of objects merged and owned by the named key fields
    /// (`x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// The list semantics of one kind of object.
pub trait ListTypes {
    /// How the list at `path` merges. `path` holds the field names from the root, without list
    /// indices or keys, e.g. `["spec", "template", "spec", "containers"]`.
    fn list_type(&self, path: &[&str]) -> ListType;
}

/// List semantics where every list is atomic, the default of a CRD schema.
#[derive(Debug, Clone, Copy, Default)]
pub struct AtomicLists;

impl ListTypes for AtomicLists {
    fn list_type(&self, _path: &[&str]) -> ListType {
        ListType::Atomic
    }
}

/// Who writes, as recorded in a managed fields entry.
#[derive(Debug, Clone, Copy)]
pub struct Manager<'a> {
    /// The field manager (the `fieldManager` query parameter, or one derived from the client).
    pub name: &'a str,
    /// The API version of the request, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// The subresource written, e.g. `status`; `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// The time of the write, RFC 3339 in UTC.
    pub time: &'a str,
}

/// A field another manager owns that an apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The owner, printed as upstream does: `"mgr"`, or `"kubectl-edit" using v1` for an
    /// `Update` entry, with ` with subresource "status"` when it wrote a subresource.
    pub manager: String,
    /// The field, e.g. `.spec.replicas` or `.spec.containers[name="nginx"].image`.
    pub field: String,
}

impl Conflict {
    /// The message of this conflict's `FieldManagerConflict` status cause.
    pub fn message(&self) -> String {
        format!("conflict with {}", self.manager)
    }
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Other managers own fields the configuration would change (409 Conflict, unless forced).
    #[error("{}", conflicts_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The configuration cannot be applied (422 Invalid): not an object, `managedFields` set,
    /// or list elements without keys or with duplicate keys.
    #[error("{0}")]
    Invalid(String),
}

impl ApplyError {
    /// The `Status` message, worded as kube-apiserver words it.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

fn conflicts_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager, only.field
        );
    }
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for conflict in conflicts {
        match groups.iter_mut().find(|(m, _)| *m == conflict.manager) {
            Some((_, fields)) => fields.push(&conflict.field),
            None => groups.push((&conflict.manager, vec![&conflict.field])),
        }
    }
    let mut lines = Vec::new();
    for (manager, fields) in groups {
        lines.push(format!("conflicts with {manager}:"));
        lines.extend(fields.into_iter().map(|f| format!("- {f}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// The manager upstream records the fields of an untracked object under, before its first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Applies `config` for `manager` on top of `live` (`None` to create) and returns the new object,
/// with `metadata.managedFields` updated.
///
/// The result is `live` merged with `config` per list semantics, minus the fields this manager
/// applied before and omits now (unless another manager owns them). This manager's `Apply` entry
/// then holds exactly the fields of `config`. Fields other managers own and `config` changes are
/// conflicts; with `force` they are taken over instead. Equal values are shared, not conflicts.
///
/// When the object itself does not change, existing entries keep their `time`, so a repeated
/// apply returns `managedFields` identical to the input.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &Manager<'_>,
    force: bool,
    lists: &dyn ListTypes,
) -> Result<Value, ApplyError> {
    check_config(config)?;
    // The live object's managed fields are neither compared nor merged: the entries written
    // at the end replace them.
    let empty = Value::Object(Map::new());
    let live_object = live.unwrap_or(&empty);
    let read = live.map(entries_of).unwrap_or_default();
    let mut entries = read_entries(read);
    if entries.is_empty() && live.is_some() {
        // Upstream gives the fields of an object nobody tracked yet to a stand-in manager.
        let before = Manager {
            name: BEFORE_FIRST_APPLY,
            subresource: None,
            ..*manager
        };
        record(
            &mut entries,
            &Value::Object(Map::new()),
            live_object,
            &before,
            lists,
        );
    }

    let applied = stripped(compare::field_set(config, lists).map_err(ApplyError::Invalid)?);
    let mut merged = merge::merge(live_object, config, lists).map_err(ApplyError::Invalid)?;
    let own = entries.iter().position(|e| e.is_apply_of(manager));

    if let Some(previous) = own.map(|i| &entries[i].set) {
        let mut owned = applied.clone();
        for (i, entry) in entries.iter().enumerate() {
            if Some(i) != own {
                owned.extend(&entry.set);
            }
        }
        let stale = stale_fields(previous, &owned);
        if !stale.is_empty() {
            merge::remove(&mut merged, &stale, lists);
        }
    }

    let comparison = comparison(live_object, &merged, lists);
    let changed = comparison.changed();
    let mut clashes: Vec<(usize, FieldSet)> = entries
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != own)
        .map(|(i, entry)| (i, entry.set.intersection(&changed)))
        .filter(|(_, clash)| !clash.is_empty())
        .collect();
    if !force && !clashes.is_empty() {
        return Err(conflicts(&entries, &mut clashes));
    }
    for (i, clash) in &clashes {
        entries[*i].subtract(clash);
    }
    for (i, entry) in entries.iter_mut().enumerate() {
        if Some(i) != own {
            entry.subtract(&comparison.removed);
        }
    }

    let object_changed = live.is_none() || !comparison.is_same();
    match own {
        Some(i) => {
            let entry = &mut entries[i];
            if entry.set != applied || entry.api_version != manager.api_version {
                entry.set = applied;
                entry.api_version = manager.api_version.to_string();
                entry.read_at = None;
            }
            if object_changed || entry.time.is_none() {
                entry.stamp(manager);
            }
        }
        None => entries.push(Entry::new(manager, Operation::Apply, applied)),
    }
    write_entries(&mut merged, entries, read);
    Ok(merged)
}

/// Refuses an applied configuration that is not an object or carries managed fields.
fn check_config(config: &Value) -> Result<(), ApplyError> {
    if !config.is_object() {
        return Err(ApplyError::Invalid(
            "the applied configuration must be a JSON object".to_string(),
        ));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::Invalid(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    Ok(())
}

/// The conflicts of an apply: each field another entry owns and the apply changes, by entry
/// (`clashes`: entry index and its fields), in upstream's order of managers.
fn conflicts(entries: &[Entry], clashes: &mut [(usize, FieldSet)]) -> ApplyError {
    clashes.sort_by_key(|(i, _)| entries[*i].identifier());
    let conflicts = clashes
        .iter()
        .flat_map(|(i, clash)| {
            let manager = entries[*i].display();
            clash.paths().into_iter().map(move |path| Conflict {
                manager: manager.clone(),
                field: path_to_string(&path),
            })
        })
        .collect();
    ApplyError::Conflicts(conflicts)
}

/// Records a write that is not an apply (create, update, patch) in `new`'s managed fields:
/// the fields that differ between `old` (`None` on create) and `new` now belong to `manager`'s
/// `Update` entry, and to no other entry.
///
/// Managed fields come from `new` when it carries a valid, non-empty list (clients may rewrite
/// them on the main resource), otherwise from `old`. Entries left empty are dropped; `manager`'s
/// entry gets `manager.time` only when the write changed some field.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &Manager<'_>,
    lists: &dyn ListTypes,
) {
    if let Some(old) = old
        && changes_nothing(old, new, manager)
    {
        // Every entry stays as it was, so none is decoded or written again (controllers often
        // write back what they read).
        keep_entries(old, new);
        return;
    }
    // Entries a main-resource write brings are taken out of it, and written back as they came
    // where nothing changes them.
    let supplied: Vec<Value> = match new.pointer_mut(ENTRIES) {
        Some(Value::Array(items)) if manager.subresource.is_none() => std::mem::take(items),
        _ => Vec::new(),
    };
    let (mut entries, read) = match read_entries(&supplied) {
        entries if !entries.is_empty() => (entries, &supplied[..]),
        _ => {
            let read = old.map(entries_of).unwrap_or_default();
            (read_entries(read), read)
        }
    };
    let empty = Value::Object(Map::new());
    record(&mut entries, old.unwrap_or(&empty), new, manager, lists);
    write_entries(new, entries, read);
}

/// Whether a write of `new` over `old` leaves the managed fields as `old` has them: it changes
/// no tracked field and brings no entries of its own (a main-resource write may rewrite them).
fn changes_nothing(old: &Value, new: &Value, manager: &Manager<'_>) -> bool {
    let own_entries = manager.subresource.is_none()
        && match new.pointer(ENTRIES) {
            None => false,
            Some(Value::Array(items)) if items.is_empty() => false,
            supplied => supplied != old.pointer(ENTRIES),
        };
    !own_entries && same_tracked(old, new)
}

/// Whether `a` and `b` differ only in paths never recorded as owned ([`untracked`]).
fn same_tracked(a: &Value, b: &Value) -> bool {
    same_except(a, b, &UNTRACKED_TOP, &UNTRACKED_META)
}

/// Whether two objects are equal but for the top-level fields `skip` and the metadata fields
/// `skip_meta`, without copying either.
pub(crate) fn same_except(a: &Value, b: &Value, skip: &[&str], skip_meta: &[&str]) -> bool {
    same_object_fields(a, b, &[&["metadata"], skip].concat())
        && same_object_fields(&a["metadata"], &b["metadata"], skip_meta)
}

/// Whether two objects are equal but for their top-level fields `skip` (or, when either is not an
/// object, equal).
pub(crate) fn same_object_fields(a: &Value, b: &Value, skip: &[&str]) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let counted =
                |m: &Map<String, Value>| m.keys().filter(|k| !skip.contains(&k.as_str())).count();
            counted(a) == counted(b)
                && a.iter()
                    .filter(|(k, _)| !skip.contains(&k.as_str()))
                    .all(|(k, v)| b.get(k) == Some(v))
        }
        _ => a == b,
    }
}

/// Where an object keeps its managed fields.
const ENTRIES: &str = "/metadata/managedFields";

/// Gives `new` the managed fields `old` has (or none, as `old`).
fn keep_entries(old: &Value, new: &mut Value) {
    let kept = old.pointer(ENTRIES).cloned();
    let Some(metadata) = new
        .as_object_mut()
        .and_then(|o| o.get_mut("metadata"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    match kept {
        Some(entries) => {
            metadata.insert("managedFields".into(), entries);
        }
        None => {
            metadata.remove("managedFields");
        }
    }
}

/// The update step shared by [`record_update`] and the first apply of an untracked object.
fn record(
    entries: &mut Vec<Entry>,
    old: &Value,
    new: &Value,
    manager: &Manager<'_>,
    lists: &dyn ListTypes,
) {
    let comparison = comparison(old, new, lists);
    let changed = comparison.changed();
    for entry in entries.iter_mut() {
        entry.subtract(&changed);
        entry.subtract(&comparison.removed);
    }
    if !changed.is_empty() {
        match entries.iter_mut().find(|e| e.is_update_of(manager)) {
            Some(entry) => {
                entry.set.extend(&changed);
                entry.stamp(manager);
            }
            None => entries.push(Entry::new(manager, Operation::Update, changed)),
        }
    }
}

/// The fields of `previous` that nothing in `owned` claims, at or below them.
fn stale_fields(previous: &FieldSet, owned: &FieldSet) -> FieldSet {
    fn walk(
        previous: &FieldSet,
        owned: Option<&FieldSet>,
        prefix: &mut Vec<PathElement>,
        out: &mut FieldSet,
    ) {
        let mut dropped = Vec::new();
        for member in previous.members() {
            if !owned.is_some_and(|o| o.touches(member)) {
                prefix.push(member.clone());
                out.insert(prefix);
                prefix.pop();
                dropped.push(member);
            }
        }
        for (element, child) in previous.children() {
            if dropped.contains(&element) {
                continue;
            }
            prefix.push(element.clone());
            walk(child, owned.and_then(|o| o.child(element)), prefix, out);
            prefix.pop();
        }
    }
    let mut out = FieldSet::new();
    walk(previous, Some(owned), &mut Vec::new(), &mut out);
    out
}

/// The paths never recorded as owned, built once.
fn untracked() -> &'static FieldSet {
    static UNTRACKED: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(|| {
        let field = |name: &str| PathElement::Field(name.to_string());
        let mut set = FieldSet::new();
        for top in UNTRACKED_TOP {
            set.insert(&[field(top)]);
        }
        for meta in UNTRACKED_META {
            set.insert(&[field("metadata"), field(meta)]);
        }
        set
    });
    &UNTRACKED
}

/// The top-level fields never recorded as owned (`metadata`'s own fields are, but these).
const UNTRACKED_TOP: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The fields of `metadata` never recorded as owned.
const UNTRACKED_META: [&str; 9] = [
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

fn stripped(mut set: FieldSet) -> FieldSet {
    set.subtract(untracked());
    set
}

/// Compares two objects, leaving out the untracked paths.
fn comparison(old: &Value, new: &Value, lists: &dyn ListTypes) -> compare::Comparison {
    let c = compare::compare(old, new, lists);
    compare::Comparison {
        added: stripped(c.added),
        modified: stripped(c.modified),
        removed: stripped(c.removed),
    }
}

/// The operation of a managed fields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry, decoded.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    /// Empty for the main resource.
    subresource: String,
    time: Option<String>,
    set: FieldSet,
    /// The entry's place in the list it was read from, while nothing in it has changed: it is
    /// then written back as it was read, not encoded again.
    read_at: Option<usize>,
}

impl Entry {
    fn new(manager: &Manager<'_>, operation: Operation, set: FieldSet) -> Self {
        Entry {
            manager: manager.name.to_string(),
            operation,
            api_version: manager.api_version.to_string(),
            subresource: manager.subresource.unwrap_or_default().to_string(),
            time: Some(manager.time.to_string()),
            set,
            read_at: None,
        }
    }

    /// The entry at `index` of a managed fields list.
    fn read(index: usize, value: &Value) -> Result<Self, String> {
        let text = |key: &str| -> Result<Option<String>, String> {
            match value.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("managedFields {key} must be a string")),
            }
        };
        let operation = match text("operation")?.as_deref() {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => return Err(format!("unknown managedFields operation {other:?}")),
        };
        if let Some(kind) = text("fieldsType")?
            && kind != "FieldsV1"
        {
            return Err(format!("unknown managedFields fieldsType {kind:?}"));
        }
        let set = match value.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(fields) => FieldSet::from_fields_v1(fields)?,
        };
        Ok(Entry {
            manager: text("manager")?.unwrap_or_default(),
            operation,
            api_version: text("apiVersion")?.unwrap_or_default(),
            subresource: text("subresource")?.unwrap_or_default(),
            time: text("time")?,
            set,
            read_at: Some(index),
        })
    }

    /// Drops `fields` from the entry's set.
    fn subtract(&mut self, fields: &FieldSet) {
        if self.set.subtract(fields) {
            self.read_at = None;
        }
    }

    /// Records that `manager` wrote the entry's fields now.
    fn stamp(&mut self, manager: &Manager<'_>) {
        self.time = Some(manager.time.to_string());
        self.read_at = None;
    }

    fn same_writer(&self, manager: &Manager<'_>) -> bool {
        self.manager == manager.name && self.subresource == manager.subresource.unwrap_or_default()
    }

    /// Whether this is `manager`'s `Apply` entry (any API version).
    fn is_apply_of(&self, manager: &Manager<'_>) -> bool {
        self.operation == Operation::Apply && self.same_writer(manager)
    }

    /// Whether this is `manager`'s `Update` entry at its API version.
    fn is_update_of(&self, manager: &Manager<'_>) -> bool {
        self.operation == Operation::Update
            && self.same_writer(manager)
            && self.api_version == manager.api_version
    }

    /// Upstream's manager identifier (the entry without fields and time, as JSON), which orders
    /// conflicts.
    fn identifier(&self) -> String {
        let quote = |s: &str| Value::String(s.to_string()).to_string();
        let mut out = format!(
            "{{\"manager\":{},\"operation\":{}",
            quote(&self.manager),
            quote(self.operation.as_str())
        );
        if self.operation == Operation::Update && !self.api_version.is_empty() {
            out.push_str(&format!(",\"apiVersion\":{}", quote(&self.api_version)));
        }
        if !self.subresource.is_empty() {
            out.push_str(&format!(",\"subresource\":{}", quote(&self.subresource)));
        }
        out.push('}');
        out
    }

    /// How a conflict names this entry's manager.
    fn display(&self) -> String {
        let quote = |s: &str| Value::String(s.to_string()).to_string();
        let mut out = quote(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {}", quote(&self.subresource)));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    /// The entry as JSON: as it was read from `read` when nothing in it changed.
    fn to_value(&self, read: &[Value]) -> Value {
        if let Some(value) = self.read_at.and_then(|i| read.get(i)) {
            return value.clone();
        }
        let mut out = Map::new();
        out.insert("manager".into(), Value::String(self.manager.clone()));
        out.insert(
            "operation".into(),
            Value::String(self.operation.as_str().to_string()),
        );
        out.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(time) = &self.time {
            out.insert("time".into(), Value::String(time.clone()));
        }
        out.insert("fieldsType".into(), Value::String("FieldsV1".to_string()));
        out.insert("fieldsV1".into(), self.set.to_fields_v1());
        if !self.subresource.is_empty() {
            out.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(out)
    }
}

/// An object's managed fields list (empty when it has none, or not a list).
fn entries_of(object: &Value) -> &[Value] {
    match object.pointer(ENTRIES) {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

/// Reads a managed fields list; an unreadable list counts as none, as upstream resets it.
fn read_entries(items: &[Value]) -> Vec<Entry> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| Entry::read(i, item))
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_default()
}

/// Stores `entries` in `object`, without empty ones, in upstream's order: `Apply` before
/// `Update`, then by time (to the second), manager, API version and subresource. `read` is the
/// list the entries were read from.
fn write_entries(object: &mut Value, mut entries: Vec<Entry>, read: &[Value]) {
    entries.retain(|e| !e.set.is_empty());
    entries.sort_by(|a, b| {
        let seconds = |e: &Entry| {
            e.time
                .as_deref()
                .map(|t| t.get(..19).unwrap_or(t).to_string())
                .unwrap_or_default()
        };
        a.operation
            .as_str()
            .cmp(b.operation.as_str())
            .then_with(|| seconds(a).cmp(&seconds(b)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    let Value::Object(fields) = object else {
        return;
    };
    if entries.is_empty() {
        if let Some(Value::Object(metadata)) = fields.get_mut("metadata") {
            metadata.remove("managedFields");
        }
        return;
    }
    let metadata = fields
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    if let Value::Object(metadata) = metadata {
        metadata.insert(
            "managedFields".to_string(),
            Value::Array(entries.iter().map(|e| e.to_value(read)).collect()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T1: &str = "2026-01-01T00:00:00Z";
    const T2: &str = "2026-01-01T00:01:00Z";
    const T3: &str = "2026-01-01T00:02:00Z";

    struct PodLists;
    impl ListTypes for PodLists {
        fn list_type(&self, path: &[&str]) -> ListType {
            match path {
                ["spec", "containers"] => ListType::Map(vec!["name".to_string()]),
                ["metadata", "finalizers"] => ListType::Set,
                _ => ListType::Atomic,
            }
        }
    }

    fn applier<'a>(name: &'a str, time: &'a str) -> Manager<'a> {
        Manager {
            name,
            api_version: "example.com/v1",
            subresource: None,
            time,
        }
    }

    fn updater<'a>(name: &'a str, time: &'a str) -> Manager<'a> {
        Manager {
            name,
            api_version: "v1",
            subresource: None,
            time,
        }
    }

    fn widget(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
    }

    /// A widget with `spec` created by an apply of `manager`.
    fn applied_widget(spec: Value, manager: &Manager<'_>) -> Value {
        apply(None, &widget(spec), manager, false, &PodLists).unwrap()
    }

    fn entries(object: &Value) -> &Vec<Value> {
        object["metadata"]["managedFields"].as_array().unwrap()
    }

    fn entry<'o>(object: &'o Value, manager: &str) -> &'o Value {
        entries(object)
            .iter()
            .find(|e| e["manager"] == manager)
            .unwrap_or_else(|| panic!("no entry for {manager} in {object}"))
    }

    fn conflict_message(result: Result<Value, ApplyError>) -> String {
        match result {
            Err(err @ ApplyError::Conflicts(_)) => err.message(),
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    #[test]
    fn apply_creates_an_object_owning_exactly_the_applied_fields() {
        let config = widget(json!({"size": 1, "color": "red"}));
        let out = apply(None, &config, &applier("mgr-a", T1), false, &PodLists).unwrap();
        assert_eq!(out["spec"], json!({"size": 1, "color": "red"}));
        assert_eq!(
            entries(&out),
            &vec![json!({
                "manager": "mgr-a", "operation": "Apply", "apiVersion": "example.com/v1",
                "time": T1, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:color": {}, "f:size": {}}}
            })]
        );
    }

    #[test]
    fn second_apply_changes_a_value_and_the_time() {
        let first = applied_widget(json!({"size": 1}), &applier("m", T1));
        let second = apply(
            Some(&first),
            &widget(json!({"size": 2})),
            &applier("m", T2),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(second["spec"]["size"], 2);
        assert_eq!(entries(&second).len(), 1);
        assert_eq!(entry(&second, "m")["time"], T2);
    }

    #[test]
    fn apply_removes_fields_the_manager_stops_applying() {
        let first = applied_widget(json!({"size": 1, "color": "red"}), &applier("m", T1));
        let second = apply(
            Some(&first),
            &widget(json!({"size": 1})),
            &applier("m", T2),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(second["spec"], json!({"size": 1}));
        assert_eq!(
            entry(&second, "m")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
    }

    #[test]
    fn omitted_field_another_manager_owns_stays() {
        let a = applied_widget(json!({"size": 1, "color": "red"}), &applier("a", T1));
        let b = apply(
            Some(&a),
            &widget(json!({"color": "red"})),
            &applier("b", T2),
            false,
            &PodLists,
        )
        .unwrap();
        let a2 = apply(
            Some(&b),
            &widget(json!({"size": 1})),
            &applier("a", T3),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(a2["spec"], json!({"size": 1, "color": "red"}));
        assert_eq!(
            entry(&a2, "a")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
        assert_eq!(
            entry(&a2, "b")["fieldsV1"],
            json!({"f:spec": {"f:color": {}}})
        );
    }

    #[test]
    fn conflicting_value_with_another_applier_is_refused() {
        let a = applied_widget(json!({"size": 1}), &applier("mgr-a", T1));
        let result = apply(
            Some(&a),
            &widget(json!({"size": 2})),
            &applier("mgr-b", T2),
            false,
            &PodLists,
        );
        assert_eq!(
            conflict_message(result),
            "Apply failed with 1 conflict: conflict with \"mgr-a\": .spec.size"
        );
    }

    #[test]
    fn conflict_with_an_updater_names_its_api_version() {
        let created = applied_widget(json!({"size": 1}), &applier("helm", T1));
        let mut edited = created.clone();
        edited["spec"]["size"] = json!(3);
        record_update(
            Some(&created),
            &mut edited,
            &updater("kubectl-edit", T2),
            &PodLists,
        );
        let result = apply(
            Some(&edited),
            &widget(json!({"size": 1})),
            &applier("helm", T3),
            false,
            &PodLists,
        );
        let Err(ApplyError::Conflicts(conflicts)) = &result else {
            panic!("expected a conflict, got {result:?}");
        };
        assert_eq!(
            conflicts,
            &vec![Conflict {
                manager: "\"kubectl-edit\" using v1".to_string(),
                field: ".spec.size".to_string(),
            }]
        );
        assert_eq!(
            conflicts[0].message(),
            "conflict with \"kubectl-edit\" using v1"
        );
        assert_eq!(
            conflict_message(result),
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: .spec.size"
        );
    }

    #[test]
    fn several_conflicts_are_listed_by_manager() {
        let a = applied_widget(json!({"a": 1, "b": 1}), &applier("m", T1));
        let result = apply(
            Some(&a),
            &widget(json!({"a": 2, "b": 2})),
            &applier("n", T2),
            false,
            &PodLists,
        );
        assert_eq!(
            conflict_message(result),
            "Apply failed with 2 conflicts: conflicts with \"m\":\n- .spec.a\n- .spec.b"
        );
    }

    #[test]
    fn force_takes_ownership_of_conflicting_fields() {
        let a = applied_widget(json!({"size": 1, "color": "red"}), &applier("mgr-a", T1));
        let b = apply(
            Some(&a),
            &widget(json!({"size": 2})),
            &applier("mgr-b", T2),
            true,
            &PodLists,
        )
        .unwrap();
        assert_eq!(b["spec"], json!({"size": 2, "color": "red"}));
        assert_eq!(
            entry(&b, "mgr-a")["fieldsV1"],
            json!({"f:spec": {"f:color": {}}})
        );
        assert_eq!(
            entry(&b, "mgr-b")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
    }

    #[test]
    fn equal_values_are_shared_without_conflict() {
        let a = applied_widget(json!({"size": 1}), &applier("mgr-a", T1));
        let b = apply(
            Some(&a),
            &widget(json!({"size": 1})),
            &applier("mgr-b", T2),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(
            entry(&b, "mgr-a")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
        assert_eq!(
            entry(&b, "mgr-b")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
        // Nothing changed, so the entry already there keeps its time.
        assert_eq!(entry(&b, "mgr-a")["time"], T1);
    }

    #[test]
    fn label_added_by_an_updater_does_not_conflict_with_a_later_apply() {
        let config = widget(json!({"size": 1}));
        let created = apply(None, &config, &applier("helm", T1), false, &PodLists).unwrap();
        let mut labelled = created.clone();
        crate::patch::merge_patch(
            &mut labelled,
            json!({"metadata": {"labels": {"extra": "yes"}}}),
        );
        record_update(
            Some(&created),
            &mut labelled,
            &updater("kubectl-label", T2),
            &PodLists,
        );
        assert_eq!(
            entry(&labelled, "kubectl-label")["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:extra": {}}}})
        );
        let upgraded = apply(
            Some(&labelled),
            &config,
            &applier("helm", T3),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(upgraded, labelled);
    }

    #[test]
    fn containers_merge_by_name_across_managers() {
        let pod = |containers: Value| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": containers}})
        };
        let a = apply(
            None,
            &pod(json!([{"name": "app", "image": "app:1"}])),
            &applier("a", T1),
            false,
            &PodLists,
        )
        .unwrap();
        let b = apply(
            Some(&a),
            &pod(json!([{"name": "sidecar", "image": "proxy:1"}])),
            &applier("b", T2),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(
            b["spec"]["containers"],
            json!([{"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "proxy:1"}])
        );
        assert_eq!(
            entry(&b, "b")["fieldsV1"],
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"sidecar\"}":
                {".": {}, "f:image": {}, "f:name": {}}}}})
        );
        let result = apply(
            Some(&b),
            &pod(json!([{"name": "sidecar", "image": "proxy:2"}])),
            &applier("a", T3),
            false,
            &PodLists,
        );
        assert_eq!(
            conflict_message(result),
            "Apply failed with 1 conflict: conflict with \"b\": .spec.containers[name=\"sidecar\"].image"
        );
        // a stops applying its container: only a's container goes.
        let a2 = apply(
            Some(&b),
            &pod(json!([])),
            &applier("a", T3),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(
            a2["spec"]["containers"],
            json!([{"name": "sidecar", "image": "proxy:1"}])
        );
    }

    #[test]
    fn set_lists_merge_by_value() {
        let with = |finalizers: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "finalizers": finalizers}})
        };
        let a = apply(
            None,
            &with(json!(["a.io/x"])),
            &applier("a", T1),
            false,
            &PodLists,
        )
        .unwrap();
        let b = apply(
            Some(&a),
            &with(json!(["b.io/y"])),
            &applier("b", T2),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(b["metadata"]["finalizers"], json!(["a.io/x", "b.io/y"]));
        assert_eq!(
            entry(&b, "b")["fieldsV1"],
            json!({"f:metadata": {"f:finalizers": {"v:\"b.io/y\"": {}}}})
        );
        let a2 = apply(
            Some(&b),
            &with(json!([])),
            &applier("a", T3),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(a2["metadata"]["finalizers"], json!(["b.io/y"]));
    }

    #[test]
    fn repeated_apply_returns_identical_managed_fields() {
        let config = widget(json!({"size": 1, "color": "red"}));
        let first = apply(None, &config, &applier("m", T1), false, &PodLists).unwrap();
        let mut labelled = first.clone();
        labelled["metadata"]["labels"] = json!({"l": "1"});
        record_update(
            Some(&first),
            &mut labelled,
            &updater("other", T2),
            &PodLists,
        );
        let again = apply(
            Some(&labelled),
            &config,
            &applier("m", T3),
            false,
            &PodLists,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&again["metadata"]["managedFields"]).unwrap(),
            serde_json::to_string(&labelled["metadata"]["managedFields"]).unwrap()
        );
        assert_eq!(again, labelled);
    }

    #[test]
    fn record_update_transfers_ownership_of_changed_fields() {
        let created = applied_widget(json!({"size": 1, "color": "red"}), &applier("a", T1));
        let mut updated = created.clone();
        updated["spec"]["size"] = json!(5);
        record_update(
            Some(&created),
            &mut updated,
            &updater("editor", T2),
            &PodLists,
        );
        assert_eq!(
            entry(&updated, "a")["fieldsV1"],
            json!({"f:spec": {"f:color": {}}})
        );
        assert_eq!(entry(&updated, "a")["time"], T1);
        let editor = entry(&updated, "editor");
        assert_eq!(editor["operation"], "Update");
        assert_eq!(editor["apiVersion"], "v1");
        assert_eq!(editor["time"], T2);
        assert_eq!(editor["fieldsV1"], json!({"f:spec": {"f:size": {}}}));
        // Apply entries sort before Update entries.
        assert_eq!(entries(&updated)[0]["manager"], "a");

        // An unchanged write leaves the managed fields as they were.
        let mut same = updated.clone();
        record_update(Some(&updated), &mut same, &updater("editor", T3), &PodLists);
        assert_eq!(same, updated);
    }

    #[test]
    fn entries_a_write_leaves_alone_are_written_back_as_they_were_read() {
        // An entry as another server may have written it: a time to the microsecond and a
        // field this server does not write.
        let stored_entry = json!({
            "manager": "a", "operation": "Update", "apiVersion": "v1",
            "time": "2026-01-01T00:00:00.123456Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:color": {}, "f:size": {}}}, "extra": "kept"
        });
        let created = json!({
            "apiVersion": "v1", "kind": "Widget",
            "metadata": {"name": "w", "managedFields": [stored_entry.clone()]},
            "spec": {"size": 1, "color": "red"}, "status": {"ready": false}
        });
        // A status write touches none of its fields: the entry stays as read.
        let mut status_written = created.clone();
        status_written["status"]["ready"] = json!(true);
        let status_writer = Manager {
            subresource: Some("status"),
            ..updater("agent", T2)
        };
        record_update(
            Some(&created),
            &mut status_written,
            &status_writer,
            &PodLists,
        );
        assert_eq!(entry(&status_written, "a"), &stored_entry);
        assert_eq!(
            entry(&status_written, "agent")["fieldsV1"],
            json!({"f:status": {"f:ready": {}}})
        );
        // A write that takes one of its fields narrows it, encoded again.
        let mut resized = status_written.clone();
        resized["spec"]["size"] = json!(2);
        record_update(
            Some(&status_written),
            &mut resized,
            &updater("editor", T3),
            &PodLists,
        );
        assert_eq!(
            entry(&resized, "a")["fieldsV1"],
            json!({"f:spec": {"f:color": {}}})
        );
        assert_eq!(entry(&resized, "a").get("extra"), None);
        assert_eq!(entry(&resized, "agent"), entry(&status_written, "agent"));
        // Entries a main-resource write brings are the ones kept, as they came.
        let mut brought = resized.clone();
        brought["metadata"]["managedFields"] = json!([stored_entry.clone()]);
        brought["spec"]["color"] = json!("blue");
        record_update(
            Some(&resized),
            &mut brought,
            &updater("editor", T3),
            &PodLists,
        );
        assert_eq!(
            entry(&brought, "a")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
        assert_eq!(entries(&brought).len(), 2, "{brought}");
    }

    #[test]
    fn record_update_of_a_write_that_changes_nothing_keeps_every_entry() {
        let created = applied_widget(json!({"size": 1}), &applier("a", T1));
        // Only what is never owned differs, and the write brings no entries of its own.
        let mut same = created.clone();
        same["metadata"]["resourceVersion"] = json!("7");
        same["metadata"]["generation"] = json!(2);
        same["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        record_update(Some(&created), &mut same, &updater("editor", T2), &PodLists);
        assert_eq!(
            same["metadata"]["managedFields"],
            created["metadata"]["managedFields"]
        );
        assert_eq!(entries(&same).len(), 1, "no entry for the editor: {same}");

        // The same write bringing entries of its own: they stand.
        let mut rewritten = created.clone();
        rewritten["metadata"]["managedFields"][0]["manager"] = json!("b");
        let brought = rewritten["metadata"]["managedFields"].clone();
        record_update(
            Some(&created),
            &mut rewritten,
            &updater("editor", T2),
            &PodLists,
        );
        assert_eq!(rewritten["metadata"]["managedFields"], brought);

        // A label changed is owned by the writer, even with nothing else changed.
        let mut labelled = created.clone();
        labelled["metadata"]["labels"] = json!({"app": "x"});
        record_update(
            Some(&created),
            &mut labelled,
            &updater("editor", T2),
            &PodLists,
        );
        assert_eq!(
            entry(&labelled, "editor")["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        );
    }

    #[test]
    fn record_update_on_create_owns_every_field() {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "u", "labels": {"app": "x"}},
            "data": {"k": "v"}});
        record_update(None, &mut object, &updater("kubectl-create", T1), &PodLists);
        assert_eq!(
            entries(&object),
            &vec![json!({
                "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                "time": T1, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:k": {}},
                             "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
            })]
        );
    }

    #[test]
    fn removed_fields_leave_their_owners() {
        let created = applied_widget(json!({"size": 1, "color": "red"}), &applier("a", T1));
        let mut updated = created.clone();
        updated["spec"] = json!({"size": 1});
        record_update(
            Some(&created),
            &mut updated,
            &updater("editor", T2),
            &PodLists,
        );
        assert_eq!(
            entry(&updated, "a")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
        assert_eq!(entries(&updated).len(), 1);
    }

    #[test]
    fn status_subresource_entry_is_kept_apart() {
        let created = applied_widget(json!({"size": 1}), &applier("a", T1));
        let status_writer = Manager {
            subresource: Some("status"),
            ..applier("ctrl", T2)
        };
        let mut config = widget(json!(null));
        config.as_object_mut().unwrap().remove("spec");
        config["status"] = json!({"ready": true});
        let out = apply(Some(&created), &config, &status_writer, true, &PodLists).unwrap();
        assert_eq!(out["status"], json!({"ready": true}));
        assert_eq!(entry(&out, "ctrl")["subresource"], "status");
        assert_eq!(
            entry(&out, "a")["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
    }

    #[test]
    fn untracked_object_gets_a_before_first_apply_owner() {
        let live = widget(json!({"size": 1}));
        let result = apply(
            Some(&live),
            &widget(json!({"size": 2})),
            &applier("m", T2),
            false,
            &PodLists,
        );
        assert_eq!(
            conflict_message(result),
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using example.com/v1: .spec.size"
        );
    }

    #[test]
    fn invalid_configurations_are_rejected() {
        let lists = &PodLists;
        let m = applier("m", T1);
        assert!(matches!(
            apply(None, &json!([1]), &m, false, lists),
            Err(ApplyError::Invalid(_))
        ));
        let mut with_fields = widget(json!({}));
        with_fields["metadata"]["managedFields"] = json!([]);
        assert_eq!(
            apply(None, &with_fields, &m, false, lists),
            Err(ApplyError::Invalid(
                "metadata.managedFields must be nil".to_string()
            ))
        );
        let pod = json!({"spec": {"containers": [{"image": "x"}]}});
        let err = apply(None, &pod, &m, false, lists).unwrap_err();
        assert!(
            err.message()
                .starts_with(".spec.containers: element 0: associative list with keys"),
            "{err}"
        );
    }
}
